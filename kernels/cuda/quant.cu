// quant.cu — the quantized ops of ABI 1.5 (bp_quant_args.h): quantize and
// dequantize (i8 / u8 with scales, q8_0 / q4_0 blocks), the 8-bit GEMM
// (each operand i8 or u8) over shared-memory tiles (dp4a, and mma.sync
// int8 tensor cores on CUDA), the fp8 GEMM (quant_fp8.cuh), GEMM / GEMV
// with block weights dequantized on the fly, and the casts with i8 / fp8.
//
// Where docs/ops.md asks for the CPU's bits (quantize, dequantize, qgemm's
// scaling, the casts), every float operation is an _rn intrinsic, which the
// compiler never contracts into a fused multiply-add, and the f16 / fp8
// codes come from integer code (kernels/common/bp_qcodec.h). qmatmul sums
// in float with FMAs, within the tolerance docs/ops.md gives.
#include "bp_cuda_common.cuh"
#include "bp_quant_args.h"

#include "../common/bp_qcodec.h"

// saturate(rne(v)) to int8; NaN gives 0.
__device__ __forceinline__ int q_sat_i8(float v) {
  if (v != v) return 0;
  v = rintf(v);
  return v < -128.0f ? -128 : v > 127.0f ? 127 : (int)v;
}

// saturate(rne(v)) to uint8 (0..255); NaN gives 0.
__device__ __forceinline__ int q_sat_u8(float v) {
  if (v != v) return 0;
  v = rintf(v);
  return v < 0.0f ? 0 : v > 255.0f ? 255 : (int)v;
}

__device__ __forceinline__ int q_block_bytes(int dt) {
  return dt == BPK_Q8_0 ? BPK_Q8_0_BYTES : BPK_Q4_0_BYTES;
}

// The f32 value of a block's f16 scale (bytes 0-1, little-endian).
__device__ __forceinline__ float q_block_scale(const uint8_t *blk) {
  return bp_qcodec_f16_to_f32((uint16_t)(blk[0] | (blk[1] << 8)));
}

// Quantized integer l of a block (q8_0: -128..127, q4_0: -8..7).
__device__ __forceinline__ int q_block_int(const uint8_t *blk, int dt, int l) {
  if (dt == BPK_Q8_0) return (int8_t)blk[2 + l];
  return (l < 16 ? (blk[2 + l] & 15) : (blk[2 + l - 16] >> 4)) - 8;
}

// ---- quantize / dequantize -------------------------------------------------

__device__ __forceinline__ int q_sat(float v, int8_t) { return q_sat_i8(v); }
__device__ __forceinline__ int q_sat(float v, uint8_t) { return q_sat_u8(v); }

// The element kernels of i8 and u8 (Q the quantized type): q =
// saturate(rne(f / scale)) to Q's range, f = q * scale.
template <typename Q>
__device__ __forceinline__ void q_quantize_elems(const bpk_quant_args_t &p) {
  BPK_FOR_EACH(i, p.n) {
    const float x = bpk_ld<float>(p.f.ptr, p.f.dtype, bpk_offset(p.f, i));
    const float s = ((const float *)p.scale.ptr)[bpk_offset(p.scale, i)];
    const float v = __fdiv_rn(x, s);
    ((Q *)p.q.ptr)[bpk_offset(p.q, i)] = (Q)q_sat(v, Q());
  }
}

template <typename Q>
__device__ __forceinline__ void q_dequantize_elems(const bpk_quant_args_t &p) {
  BPK_FOR_EACH(i, p.n) {
    const float q = (float)((const Q *)p.q.ptr)[bpk_offset(p.q, i)];
    const float s = ((const float *)p.scale.ptr)[bpk_offset(p.scale, i)];
    bpk_st(p.f.ptr, p.f.dtype, bpk_offset(p.f, i), __fmul_rn(q, s));
  }
}

extern "C" __global__ void bp_quantize_i8(const bpk_quant_args_t p) {
  q_quantize_elems<int8_t>(p);
}
extern "C" __global__ void bp_dequantize_i8(const bpk_quant_args_t p) {
  q_dequantize_elems<int8_t>(p);
}
extern "C" __global__ void bp_quantize_u8(const bpk_quant_args_t p) {
  q_quantize_elems<uint8_t>(p);
}
extern "C" __global__ void bp_dequantize_u8(const bpk_quant_args_t p) {
  q_dequantize_elems<uint8_t>(p);
}

// Block b of row `row` of the block tensor, and f's element of its lane.
__device__ __forceinline__ uint8_t *q_block_of(const bpk_quant_args_t &p, int64_t row, int64_t b) {
  const int64_t blk = bpk_offset(p.q, row) / BPK_QBLOCK + b;
  return (uint8_t *)p.q.ptr + blk * q_block_bytes(p.qdtype);
}

// ggml's quantize_row_q8_0_ref, lane l holding weight l: d = amax / 127,
// q = roundf(x * (1 / d)) (half away from zero).
__device__ __forceinline__ void q8_0_quantize(float x, int lane, uint8_t *blk) {
  float amax = fmaxf(0.0f, fabsf(x)); // a NaN weight never wins, as in the reference
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  const float d = __fdiv_rn(amax, 127.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  if (lane == 0) {
    const uint16_t h = bp_qcodec_f32_to_f16(d);
    blk[0] = (uint8_t)h, blk[1] = (uint8_t)(h >> 8);
  }
  blk[2 + lane] = (uint8_t)(int8_t)(int)roundf(__fmul_rn(x, id));
}

// ggml's quantize_row_q4_0_ref: the scale maps the weight of largest
// magnitude (the first on ties; only a positive magnitude counts) to -8;
// lane l < 16 packs weights l (low nibble) and l + 16 (high).
__device__ __forceinline__ void q4_0_quantize(float x, int lane, uint8_t *blk) {
  float a = fabsf(x);
  int at = lane;
  if (!(a > 0.0f)) a = -1.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float a2 = __shfl_xor_sync(0xffffffffu, a, o);
    const int at2 = __shfl_xor_sync(0xffffffffu, at, o);
    if (a2 > a || (a2 == a && at2 < at)) a = a2, at = at2;
  }
  const float xmax = __shfl_sync(0xffffffffu, x, at);
  const float d = __fdiv_rn(a > 0.0f ? xmax : 0.0f, -8.0f);
  const float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
  const float hi = __shfl_sync(0xffffffffu, x, (lane + 16) & 31);
  if (lane == 0) {
    const uint16_t h = bp_qcodec_f32_to_f16(d);
    blk[0] = (uint8_t)h, blk[1] = (uint8_t)(h >> 8);
  }
  if (lane < 16) {
    const int v0 = (int8_t)(int)__fadd_rn(__fmul_rn(x, id), 8.5f);
    const int v1 = (int8_t)(int)__fadd_rn(__fmul_rn(hi, id), 8.5f);
    blk[2 + lane] = (uint8_t)((v0 < 15 ? v0 : 15) | ((v1 < 15 ? v1 : 15) << 4));
  }
}

// One warp per block of 32 weights.
extern "C" __global__ void bp_quantize_block(const bpk_quant_args_t p) {
  const int lane = threadIdx.x % BPK_WARP;
  BPK_FOR_EACH_ROW(i, p.n) {
    const int64_t row = i / p.nb, b = i % p.nb;
    const int64_t fo = bpk_offset(p.f, row) + (b * BPK_QBLOCK + lane) * p.f_step;
    const float x = bpk_ld<float>(p.f.ptr, p.f.dtype, fo);
    uint8_t *blk = q_block_of(p, row, b);
    if (p.qdtype == BPK_Q8_0) q8_0_quantize(x, lane, blk);
    else q4_0_quantize(x, lane, blk);
  }
}

// y = q * d in f32 (ggml's dequantize_row_q{8,4}_0), rounded once to y.
extern "C" __global__ void bp_dequantize_block(const bpk_quant_args_t p) {
  const int lane = threadIdx.x % BPK_WARP;
  BPK_FOR_EACH_ROW(i, p.n) {
    const int64_t row = i / p.nb, b = i % p.nb;
    const uint8_t *blk = q_block_of(p, row, b);
    const float v = __fmul_rn((float)q_block_int(blk, p.qdtype, lane), q_block_scale(blk));
    bpk_st(p.f.ptr, p.f.dtype, bpk_offset(p.f, row) + (b * BPK_QBLOCK + lane) * p.f_step, v);
  }
}

// ---- int8 GEMM -----------------------------------------------------------------

// Byte t of word w, as an int: signed (i8) or unsigned (u8, U).
template <bool U> __device__ __forceinline__ int q_byte(int w, int t) {
  return U ? (int)(uint8_t)(w >> (8 * t)) : (int)(int8_t)(w >> (8 * t));
}

// c + the four byte products of a and b, each operand's bytes signed (i8)
// or unsigned (u8: AU, BU), wrapping like int32. CUDA's dp4a has the four
// signedness forms.
template <bool AU, bool BU> __device__ __forceinline__ int q_dp4a(int a, int b, int c) {
#if defined(BPK_HIP)
  // The sdot4 builtins differ between AMD architectures; plain products
  // compile everywhere (and to v_dot4 where the compiler finds it).
  unsigned s = (unsigned)c;
#pragma unroll
  for (int t = 0; t < 4; t++) s += (unsigned)(q_byte<AU>(a, t) * q_byte<BU>(b, t));
  return (int)s;
#else
  int d;
  if (!AU && !BU) return __dp4a(a, b, c);
  if (AU && BU) return (int)__dp4a((unsigned)a, (unsigned)b, (unsigned)c);
  if (AU) asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  else asm("dp4a.s32.u32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
  return d;
#endif
}

// Four consecutive k (k .. k + 3) of row o of an operand whose element
// (o, k) is at o * so + k * sk, packed little-endian; zeros past the edges.
__device__ __forceinline__ int q_pack4(const int8_t *base, int64_t so, int64_t sk, int64_t o,
                                       int64_t no, int64_t k, int64_t nk) {
  unsigned w = 0;
  if (o < no)
#pragma unroll
    for (int t = 0; t < 4; t++)
      if (k + t < nk) w |= (unsigned)(uint8_t)base[o * so + (k + t) * sk] << (8 * t);
  return (int)w;
}

// Stages a TILE (outer) x BK (k) slab as words of four k: S[k / 4][o]
// (rows of LD words). Consecutive threads take consecutive words of a row
// when the operand is contiguous along k, consecutive rows otherwise.
template <int LD>
__device__ __forceinline__ void q_stage(int (*S)[LD], const int8_t *base, int64_t so, int64_t sk,
                                        int64_t o0, int64_t no, int64_t k0, int64_t nk) {
  const int words = BPK_QGEMM_BK / 4;
  for (int e = threadIdx.x; e < BPK_QGEMM_TILE * words; e += blockDim.x) {
    int o, w;
    if (sk == 1) o = e / words, w = e % words;
    else w = e / BPK_QGEMM_TILE, o = e % BPK_QGEMM_TILE;
    S[w][o] = q_pack4(base, so, sk, o0 + o, no, k0 + 4 * w, nk);
  }
}

// acc in c's dtype by the rules of bp_qgemm_args_t: float products in
// order, never fused.
__device__ __forceinline__ void q_gemm_store(const bpk_qgemm_args_t &p, int64_t off, int acc,
                                             int64_t i, int64_t j) {
  if (p.c.dtype == BPK_I32) {
    ((int32_t *)p.c.ptr)[off] = acc;
    return;
  }
  const float sa = p.sa.ptr ? ((const float *)p.sa.ptr)[i * p.sa.stride] : 1.0f;
  const float sb = p.sb.ptr ? ((const float *)p.sb.ptr)[j * p.sb.stride] : 1.0f;
  const float v = __fmul_rn(__fmul_rn((float)acc, sa), sb);
  if (p.c.dtype == BPK_F32) ((float *)p.c.ptr)[off] = v;
  else ((int8_t *)p.c.ptr)[off] = (int8_t)q_sat_i8(__fdiv_rn(v, p.out_scale));
}

// 64 x 64 outputs per block of 256 threads, 4 x 4 each; k in steps of 32
// through shared memory, four k per dp4a. The bytes are staged as they
// are; only the dot product knows a u8 operand (AU, BU).
template <bool AU, bool BU> __device__ __forceinline__ void q_gemm_dp4a(const bpk_qgemm_args_t &p) {
  __shared__ int As[BPK_QGEMM_BK / 4][BPK_QGEMM_TILE];
  __shared__ int Bs[BPK_QGEMM_BK / 4][BPK_QGEMM_TILE];
  const int64_t M = p.c.shape[1], N = p.c.shape[2], K = p.a.shape[2];
  const int64_t m0 = (int64_t)blockIdx.y * BPK_QGEMM_TILE, n0 = (int64_t)blockIdx.x * BPK_QGEMM_TILE;
  const int tr = threadIdx.x / 16, tc = threadIdx.x % 16;
  for (int64_t z = blockIdx.z; z < p.c.shape[0]; z += gridDim.z) {
    const int8_t *A = (const int8_t *)p.a.ptr + z * p.a.strides[0];
    const int8_t *B = (const int8_t *)p.b.ptr + z * p.b.strides[0];
    int acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) acc[i][j] = 0;
    for (int64_t k0 = 0; k0 < K; k0 += BPK_QGEMM_BK) {
      q_stage(As, A, p.a.strides[1], p.a.strides[2], m0, M, k0, K);
      q_stage(Bs, B, p.b.strides[2], p.b.strides[1], n0, N, k0, K);
      __syncthreads();
#pragma unroll
      for (int w = 0; w < BPK_QGEMM_BK / 4; w++) {
        int a[4], b[4];
#pragma unroll
        for (int i = 0; i < 4; i++) a[i] = As[w][tr + 16 * i], b[i] = Bs[w][tc + 16 * i];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++) acc[i][j] = q_dp4a<AU, BU>(a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
    for (int i = 0; i < 4; i++) {
      const int64_t m = m0 + tr + 16 * i;
      if (m >= M) break;
      for (int j = 0; j < 4; j++) {
        const int64_t n = n0 + tc + 16 * j;
        if (n >= N) break;
        const int64_t off = z * p.c.strides[0] + m * p.c.strides[1] + n * p.c.strides[2];
        q_gemm_store(p, off, acc[i][j], m, n);
      }
    }
  }
}

// bp_qgemm_<a><b>: the operands' dtypes (bp_qgemm is i8 x i8).
extern "C" __global__ void bp_qgemm(const bpk_qgemm_args_t p) {
  q_gemm_dp4a<false, false>(p);
}
extern "C" __global__ void bp_qgemm_u8i8(const bpk_qgemm_args_t p) {
  q_gemm_dp4a<true, false>(p);
}
extern "C" __global__ void bp_qgemm_i8u8(const bpk_qgemm_args_t p) {
  q_gemm_dp4a<false, true>(p);
}
extern "C" __global__ void bp_qgemm_u8u8(const bpk_qgemm_args_t p) {
  q_gemm_dp4a<true, true>(p);
}
#include "quant_fp8.cuh" // bp_qgemm_fp8: a and b fp8, f32 sums
#if !defined(BPK_HIP)
// d += a . b on the tensor cores: one m16n8k32 product of s8 or u8
// operands (AU, BU) into s32 (wrapping sums, like dp4a). Fragments as the
// PTX ISA lays them out: lane (g = lane / 4, t = lane % 4) holds a's rows
// g and g + 8 at k 4t..4t+3 and 16+4t..16+4t+3, b's column g at the same
// k, and d's rows g, g + 8 at columns 2t, 2t + 1.
template <bool AU, bool BU>
__device__ __forceinline__ void q_mma(int (&d)[4], const int (&a)[4], const int (&b)[2]) {
#define Q_MMA(AT, BT)                                                                              \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32." AT "." BT ".s32 "                        \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                \
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])                                   \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
  if (!AU && !BU) Q_MMA("s8", "s8");
  else if (AU && !BU) Q_MMA("u8", "s8");
  else if (!AU) Q_MMA("s8", "u8");
  else Q_MMA("u8", "u8");
#undef Q_MMA
}

// bp_qgemm on int8 tensor cores (sm_80+, every device the PTX runs on):
// the same 64 x 64 tiles and shared-memory words, where word w of row o
// holds k 4w..4w+3, so a fragment register is one word. Eight warps of 16
// x 32 outputs (four m16n8 products per k step); rows padded by four words
// so that the fragment loads hit 32 banks.
template <bool AU, bool BU> __device__ __forceinline__ void q_gemm_mma(const bpk_qgemm_args_t &p) {
  __shared__ int As[BPK_QGEMM_BK / 4][BPK_QGEMM_TILE + 4];
  __shared__ int Bs[BPK_QGEMM_BK / 4][BPK_QGEMM_TILE + 4];
  const int64_t M = p.c.shape[1], N = p.c.shape[2], K = p.a.shape[2];
  const int64_t m0 = (int64_t)blockIdx.y * BPK_QGEMM_TILE, n0 = (int64_t)blockIdx.x * BPK_QGEMM_TILE;
  const int warp = threadIdx.x / BPK_WARP, g = (threadIdx.x % BPK_WARP) / 4, t = threadIdx.x % 4;
  const int wm = (warp % 4) * 16, wn = (warp / 4) * 32;
  for (int64_t z = blockIdx.z; z < p.c.shape[0]; z += gridDim.z) {
    const int8_t *A = (const int8_t *)p.a.ptr + z * p.a.strides[0];
    const int8_t *B = (const int8_t *)p.b.ptr + z * p.b.strides[0];
    int acc[4][4];
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int r = 0; r < 4; r++) acc[j][r] = 0;
    for (int64_t k0 = 0; k0 < K; k0 += BPK_QGEMM_BK) {
      q_stage(As, A, p.a.strides[1], p.a.strides[2], m0, M, k0, K);
      q_stage(Bs, B, p.b.strides[2], p.b.strides[1], n0, N, k0, K);
      __syncthreads();
      const int a[4] = {As[t][wm + g], As[t][wm + g + 8], As[4 + t][wm + g], As[4 + t][wm + g + 8]};
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const int b[2] = {Bs[t][wn + 8 * j + g], Bs[4 + t][wn + 8 * j + g]};
        q_mma<AU, BU>(acc[j], a, b);
      }
      __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int r = 0; r < 4; r++) {
        const int64_t m = m0 + wm + g + (r >= 2 ? 8 : 0), n = n0 + wn + 8 * j + 2 * t + (r & 1);
        if (m < M && n < N)
          q_gemm_store(p, z * p.c.strides[0] + m * p.c.strides[1] + n * p.c.strides[2], acc[j][r], m, n);
      }
  }
}

extern "C" __global__ void bp_qgemm_mma(const bpk_qgemm_args_t p) {
  q_gemm_mma<false, false>(p);
}
extern "C" __global__ void bp_qgemm_mma_u8i8(const bpk_qgemm_args_t p) {
  q_gemm_mma<true, false>(p);
}
extern "C" __global__ void bp_qgemm_mma_i8u8(const bpk_qgemm_args_t p) {
  q_gemm_mma<false, true>(p);
}
extern "C" __global__ void bp_qgemm_mma_u8u8(const bpk_qgemm_args_t p) {
  q_gemm_mma<true, true>(p);
}
#endif

// ---- GEMM / GEMV with block-quantized weights ------------------------------------

// Weight l of block b of w's row j, dequantized (q * d in f32).
__device__ __forceinline__ float q_weight(const bpk_qmatmul_args_t &p, int64_t j, int64_t b,
                                          int l) {
  const int bytes = q_block_bytes(p.w_dtype);
  const uint8_t *blk = (const uint8_t *)p.w_ptr + (j * p.w_row_blocks + b) * bytes;
  return __fmul_rn((float)q_block_int(blk, p.w_dtype, l), q_block_scale(blk));
}

// ---- the GEMV ----------------------------------------------------------------
//
// One warp per BPK_QMM_GEMV_OUTS outputs of one row of a (consecutive j), lane l
// taking blocks l, l + 32, ... of those weight rows: consecutive lanes read
// consecutive blocks (the warp a contiguous span of each row), each lane a
// whole block, whose 32 activations it reuses for every output. A block
// is read as 16-bit words (blocks are 2-byte aligned when w_ptr is) and its
// integers turned into floats by the exponent trick; the block's sum is
// scaled once, y = sum_b d_b * (sum_l x_l q_l).

// The float value c - bias of a byte c of a word: 2^23 + c as float bits,
// less 2^23 + bias (both exact).
__device__ __forceinline__ float q_byte_float(uint32_t word, int t, float bias) {
  return __int_as_float((int)__byte_perm(word, 0x4B000000u, 0x7440u + (uint32_t)t)) -
         (8388608.0f + bias);
}

// Block b's f16 scale and its integer bytes as 32-bit words (q4_0: 4 words
// of packed nibbles, q8_0: 8 words of signed bytes).
__device__ __forceinline__ float q_load_block(const uint8_t *blk, bool even, int words,
                                              uint32_t (&q)[8]) {
  uint16_t d;
  if (even) {
    const uint16_t *h = (const uint16_t *)blk;
    d = h[0];
#pragma unroll
    for (int w = 0; w < 8; w++)
      if (w < words) q[w] = (uint32_t)h[1 + 2 * w] | ((uint32_t)h[2 + 2 * w] << 16);
  } else { // an odd w_ptr: bytes
    d = (uint16_t)(blk[0] | (blk[1] << 8));
#pragma unroll
    for (int w = 0; w < 8; w++)
      if (w < words)
        q[w] = (uint32_t)blk[2 + 4 * w] | ((uint32_t)blk[3 + 4 * w] << 8) |
               ((uint32_t)blk[4 + 4 * w] << 16) | ((uint32_t)blk[5 + 4 * w] << 24);
  }
#if defined(BPK_HIP)
  return bp_qcodec_f16_to_f32(d);
#else
  return __half2float(__ushort_as_half(d)); // exact, as the codec's
#endif
}

// sum_l x_l q_l over one block; x in weight order.
__device__ __forceinline__ float q_block_dot(const float (&x)[BPK_QBLOCK], const uint32_t (&q)[8],
                                             int dt) {
  float s = 0.0f;
  if (dt == BPK_Q8_0) {
#pragma unroll
    for (int w = 0; w < 8; w++) {
      const uint32_t u = q[w] ^ 0x80808080u; // two's complement byte + 128
#pragma unroll
      for (int t = 0; t < 4; t++) s = fmaf(x[4 * w + t], q_byte_float(u, t, 128.0f), s);
    }
  } else { // q4_0: weight l < 16 the low nibble of byte l, l >= 16 the high one of l - 16
#pragma unroll
    for (int w = 0; w < 4; w++) {
      const uint32_t lo = q[w] & 0x0F0F0F0Fu, hi = (q[w] >> 4) & 0x0F0F0F0Fu;
#pragma unroll
      for (int t = 0; t < 4; t++) {
        s = fmaf(x[4 * w + t], q_byte_float(lo, t, 8.0f), s);
        s = fmaf(x[16 + 4 * w + t], q_byte_float(hi, t, 8.0f), s);
      }
    }
  }
  return s;
}

// The 32 activations of block b of a's row (offset ao): float4 loads where
// the row is contiguous f32 and 16-byte aligned (vec), else one by one.
__device__ __forceinline__ void q_load_x(const bpk_qmatmul_args_t &p, int64_t ao, int64_t b,
                                         bool vec, float (&x)[BPK_QBLOCK]) {
  if (vec) {
    const float4 *v = (const float4 *)((const float *)p.a.ptr + ao) + b * (BPK_QBLOCK / 4);
#pragma unroll
    for (int t = 0; t < BPK_QBLOCK / 4; t++) {
      const float4 f = v[t];
      x[4 * t] = f.x;
      x[4 * t + 1] = f.y;
      x[4 * t + 2] = f.z;
      x[4 * t + 3] = f.w;
    }
  } else {
#pragma unroll
    for (int l = 0; l < BPK_QBLOCK; l++)
      x[l] = bpk_ld<float>(p.a.ptr, p.a.dtype, ao + (b * BPK_QBLOCK + l) * p.a.strides[2]);
  }
}

extern "C" __global__ void bp_qmatmul_gemv(const bpk_qmatmul_args_t p) {
  const int lane = threadIdx.x % BPK_WARP;
  const int64_t M = p.y.shape[1], nb = p.k / BPK_QBLOCK;
  const int64_t groups = (p.n + BPK_QMM_GEMV_OUTS - 1) / BPK_QMM_GEMV_OUTS, outs = p.y.shape[0] * M * groups;
  const int bytes = q_block_bytes(p.w_dtype), words = p.w_dtype == BPK_Q8_0 ? 8 : 4;
  const bool even = (p.w_ptr & 1) == 0;
  BPK_FOR_EACH_ROW(o, outs) {
    const int64_t j0 = (o % groups) * BPK_QMM_GEMV_OUTS, r = o / groups, z = r / M, i = r % M;
    const int64_t ao = z * p.a.strides[0] + i * p.a.strides[1];
    const bool vec = p.a.dtype == BPK_F32 && p.a.strides[2] == 1 &&
                     ((p.a.ptr + (uint64_t)ao * 4) & 15) == 0;
    float acc[BPK_QMM_GEMV_OUTS];
#pragma unroll
    for (int u = 0; u < BPK_QMM_GEMV_OUTS; u++) acc[u] = 0.0f;
    for (int64_t b = lane; b < nb; b += BPK_WARP) {
      float x[BPK_QBLOCK];
      q_load_x(p, ao, b, vec, x);
#pragma unroll
      for (int u = 0; u < BPK_QMM_GEMV_OUTS; u++) {
        if (j0 + u >= p.n) break;
        const uint8_t *blk = (const uint8_t *)p.w_ptr + ((j0 + u) * p.w_row_blocks + b) * bytes;
        uint32_t q[8];
        const float d = q_load_block(blk, even, words, q);
        acc[u] = fmaf(d, q_block_dot(x, q, p.w_dtype), acc[u]);
      }
    }
#pragma unroll
    for (int u = 0; u < BPK_QMM_GEMV_OUTS; u++) {
      const float v = bpk_warp_sum(acc[u]);
      if (lane == 0 && j0 + u < p.n)
        bpk_st(p.y.ptr, p.y.dtype, z * p.y.strides[0] + i * p.y.strides[1] + (j0 + u) * p.y.strides[2], v);
    }
  }
}

// 64 x 64 outputs per block of 256 threads, 4 x 4 each; one weight block
// of k per step: 64 rows of a and 64 dequantized weight rows staged in
// shared memory as float.
extern "C" __global__ void bp_qmatmul_gemm(const bpk_qmatmul_args_t p) {
  __shared__ float As[BPK_QBLOCK][BPK_QMM_TILE + 1];
  __shared__ float Ws[BPK_QBLOCK][BPK_QMM_TILE + 1];
  const int64_t M = p.y.shape[1], N = p.n, nb = p.k / BPK_QBLOCK;
  const int64_t m0 = (int64_t)blockIdx.y * BPK_QMM_TILE, n0 = (int64_t)blockIdx.x * BPK_QMM_TILE;
  const int tr = threadIdx.x / 16, tc = threadIdx.x % 16;
  for (int64_t z = blockIdx.z; z < p.y.shape[0]; z += gridDim.z) {
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
      for (int e = threadIdx.x; e < BPK_QMM_TILE * BPK_QBLOCK; e += blockDim.x) {
        const int o = e / BPK_QBLOCK, l = e % BPK_QBLOCK; // consecutive threads along k
        const int64_t m = m0 + o, n = n0 + o, kk = b * BPK_QBLOCK + l;
        As[l][o] = m < M ? bpk_ld<float>(p.a.ptr, p.a.dtype,
                                         z * p.a.strides[0] + m * p.a.strides[1] + kk * p.a.strides[2])
                         : 0.0f;
        Ws[l][o] = n < N ? q_weight(p, n, b, l) : 0.0f;
      }
      __syncthreads();
#pragma unroll 8
      for (int l = 0; l < BPK_QBLOCK; l++) {
        float a[4], w[4];
#pragma unroll
        for (int i = 0; i < 4; i++) a[i] = As[l][tr + 16 * i], w[i] = Ws[l][tc + 16 * i];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], w[j], acc[i][j]);
      }
      __syncthreads();
    }
    for (int i = 0; i < 4; i++) {
      const int64_t m = m0 + tr + 16 * i;
      if (m >= M) break;
      for (int j = 0; j < 4; j++) {
        const int64_t n = n0 + tc + 16 * j;
        if (n >= N) break;
        bpk_st(p.y.ptr, p.y.dtype, z * p.y.strides[0] + m * p.y.strides[1] + n * p.y.strides[2],
               acc[i][j]);
      }
    }
  }
}

// ---- casts with an i8 or fp8 side ---------------------------------------------

// The cast rules: NaN 0, halves to even, saturating at the bounds.
__device__ __forceinline__ int64_t q_sat(double v, double lo, double hi, int64_t lo_i,
                                         int64_t hi_i) {
  if (v != v) return 0;
  v = rint(v);
  return v <= lo ? lo_i : v >= hi ? hi_i : (int64_t)v;
}

// Any non-block dtype but i64 (which the caller reads apart), exactly.
__device__ __forceinline__ double q_load(uint64_t base, int dt, int64_t off) {
  switch (dt) {
  case BPK_I8: return (double)((const int8_t *)base)[off];
  case BPK_FP8_E4M3: return (double)bp_fp8_decode(((const uint8_t *)base)[off], 3);
  case BPK_FP8_E5M2: return (double)bp_fp8_decode(((const uint8_t *)base)[off], 2);
  default: return bpk_ld<double>(base, dt, off);
  }
}

// v into any non-block dtype, rounded once (integers by the cast rules).
__device__ __forceinline__ void q_store(uint64_t base, int dt, int64_t off, double v) {
  switch (dt) {
  case BPK_I8: ((int8_t *)base)[off] = (int8_t)q_sat(v, -128.0, 127.0, -128, 127); break;
  case BPK_U8: ((uint8_t *)base)[off] = (uint8_t)q_sat(v, 0.0, 255.0, 0, 255); break;
  case BPK_I32:
    ((int32_t *)base)[off] = (int32_t)q_sat(v, -2147483648.0, 2147483647.0, INT32_MIN, INT32_MAX);
    break;
  case BPK_I64: // 2^63 is the first double out of range
    ((int64_t *)base)[off] = q_sat(v, -9223372036854775808.0, 9223372036854775808.0, INT64_MIN, INT64_MAX);
    break;
  case BPK_FP8_E4M3: ((uint8_t *)base)[off] = bp_fp8_encode(v, 3); break;
  case BPK_FP8_E5M2: ((uint8_t *)base)[off] = bp_fp8_encode(v, 2); break;
  default: bpk_st(base, dt, off, v); break; // floats: one rounding from the exact double
  }
}

// bp_cast where x or y is i8 / fp8 (elementwise.cu's bp_cast does the rest).
// An i64 source reaches the fp8 codes through the nearest double, as the
// CPU reference converts it; to i8 it saturates exactly.
extern "C" __global__ void bp_cast_q(const bpk_copy_args_t p) {
  BPK_FOR_EACH(i, p.n) {
    const int64_t xo = bpk_offset(p.x, i), yo = bpk_offset(p.y, i);
    if (p.x.dtype == BPK_I64) {
      const int64_t v = ((const int64_t *)p.x.ptr)[xo];
      if (p.y.dtype == BPK_I8) ((int8_t *)p.y.ptr)[yo] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
      else q_store(p.y.ptr, p.y.dtype, yo, __ll2double_rn(v));
      continue;
    }
    q_store(p.y.ptr, p.y.dtype, yo, q_load(p.x.ptr, p.x.dtype, xo));
  }
}
