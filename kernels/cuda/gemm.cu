// gemm.cu — batched GEMM and GEMV.
//
//  bp_gemm_f32 / bp_gemm_f64: SIMT, 128x128 block tile, BK = 8, 256 threads
//    with an 8x8 register tile each; tiles staged in shared memory with
//    float4 loads wherever the layout and alignment allow (either A or B may
//    be contiguous along k or along m/n: transposes are strides here).
//  bp_gemm_f16 / bp_gemm_bf16: tensor cores, mma.sync.m16n8k16 with f32
//    accumulation; 128x128 block tile, BK = 32, 8 warps of 64x32 each.
//  bp_gemv_f / bp_gemv_d: one warp per output row.
// All take bpk_gemm_args_t / bpk_gemv_args_t; batch is grid z (grid-stride
// beyond 65535). When beta == 0 C is never read, so NaN in C cannot leak.
// The GEMM kernels fuse the epilogue (bias, activation) into their stores.
#include "bp_cuda_common.cuh"

#define TILE 128
#define SIMT_BK 8

// Loads a TILE (outer) x SIMT_BK (k) slab of an operand into S[k][outer].
// Element (o, k) is at base[o * so + k * sk]; A has outer = m, B outer = n.
template <typename T>
__device__ __forceinline__ void simt_load(T (*S)[TILE], const T *base,
                                          int64_t so, int64_t sk, int64_t o0,
                                          int64_t no, int64_t k0, int64_t nk,
                                          bool vec) {
  const int tid = threadIdx.x;
  if (sk == 1) { // contiguous along k: 4 consecutive k of one row each
    const int o = tid >> 1, kk = (tid & 1) * 4;
    const int64_t go = o0 + o, gk = k0 + kk;
    const T *p = base + go * so + gk;
    if (vec && so % 4 == 0 && go < no && gk + 3 < nk) {
      const float4 v = *(const float4 *)(const void *)p;
      S[kk][o] = v.x; S[kk + 1][o] = v.y; S[kk + 2][o] = v.z; S[kk + 3][o] = v.w;
    } else {
#pragma unroll
      for (int i = 0; i < 4; i++)
        S[kk + i][o] = (go < no && gk + i < nk) ? p[i] : (T)0;
    }
  } else { // contiguous along the outer axis (or neither): 4 consecutive rows
    const int kk = tid >> 5, o = (tid & 31) * 4;
    const int64_t go = o0 + o, gk = k0 + kk;
    const T *p = base + go * so + gk * sk;
    if (vec && so == 1 && sk % 4 == 0 && gk < nk && go + 3 < no) {
      *(float4 *)(void *)&S[kk][o] = *(const float4 *)(const void *)p;
    } else {
#pragma unroll
      for (int i = 0; i < 4; i++)
        S[kk][o + i] = (go + i < no && gk < nk) ? p[i * so] : (T)0;
    }
  }
}

// float4 moves need 16-byte aligned rows: base aligned, and every stride
// that is not the contiguous one a multiple of 4 elements.
__device__ __forceinline__ bool vec_ok(uint64_t ptr, int64_t s1, int64_t s2,
                                       int64_t sb) {
  return (ptr & 15) == 0 && (s1 == 1 || s1 % 4 == 0) &&
         (s2 == 1 || s2 % 4 == 0) && sb % 4 == 0;
}

template <typename T, bool VEC> __device__ void gemm_simt(const bpk_gemm_args_t &p) {
  __shared__ __align__(16) T As[SIMT_BK][TILE];
  __shared__ __align__(16) T Bs[SIMT_BK][TILE];
  const int64_t M = p.c.shape[1], N = p.c.shape[2], K = p.a.shape[2];
  const int64_t m0 = (int64_t)blockIdx.y * TILE, n0 = (int64_t)blockIdx.x * TILE;
  const int tr = threadIdx.x / 16, tc = threadIdx.x % 16;
  const bool va = VEC && vec_ok(p.a.ptr, p.a.strides[1], p.a.strides[2], p.a.strides[0]);
  const bool vb = VEC && vec_ok(p.b.ptr, p.b.strides[1], p.b.strides[2], p.b.strides[0]);
  for (int64_t bz = blockIdx.z; bz < p.c.shape[0]; bz += gridDim.z) {
    const T *A = (const T *)p.a.ptr + bz * p.a.strides[0];
    const T *B = (const T *)p.b.ptr + bz * p.b.strides[0];
    T acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
      for (int j = 0; j < 8; j++) acc[i][j] = 0;
    for (int64_t k0 = 0; k0 < K; k0 += SIMT_BK) {
      simt_load<T>(As, A, p.a.strides[1], p.a.strides[2], m0, M, k0, K, va);
      simt_load<T>(Bs, B, p.b.strides[2], p.b.strides[1], n0, N, k0, K, vb);
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < SIMT_BK; kk++) {
        T a[8], b[8];
#pragma unroll
        for (int i = 0; i < 8; i++) { a[i] = As[kk][tr * 8 + i]; b[i] = Bs[kk][tc * 8 + i]; }
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
          for (int j = 0; j < 8; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
    T *C = (T *)p.c.ptr + bz * p.c.strides[0];
    for (int i = 0; i < 8; i++) {
      const int64_t m = m0 + tr * 8 + i;
      if (m >= M) break;
      for (int j = 0; j < 8; j++) {
        const int64_t n = n0 + tc * 8 + j;
        if (n >= N) break;
        T *cp = C + m * p.c.strides[1] + n * p.c.strides[2];
        T v = (T)p.alpha * acc[i][j];
        if (p.beta != 0) v += (T)p.beta * *cp;
        *cp = bpk_gemm_epilogue<T>(p, bz, m, n, v);
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(256) bp_gemm_f32(const bpk_gemm_args_t p) {
  gemm_simt<float, true>(p);
}
extern "C" __global__ void __launch_bounds__(256) bp_gemm_f64(const bpk_gemm_args_t p) {
  gemm_simt<double, false>(p);
}

// ---- tensor cores ---------------------------------------------------------

#define MMA_BK 32
#define MMA_PITCH (MMA_BK + 8) // halves; +8 makes fragment reads conflict-free

// Loads a TILE (outer) x MMA_BK (k) slab into S[outer][k] (k contiguous, as
// the mma fragments want for both A and B). Raw 16-bit values: f16 and bf16
// move the same way, and 0 bits are +0 in both.
__device__ __forceinline__ void mma_load(uint16_t (*S)[MMA_PITCH],
                                         const uint16_t *base, int64_t so,
                                         int64_t sk, int64_t o0, int64_t no,
                                         int64_t k0, int64_t nk, bool aligned) {
  const int tid = threadIdx.x;
  if (sk == 1) { // 8 consecutive k (16 bytes) per move
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const int e = tid + 256 * r, o = e >> 2, kk = (e & 3) * 8;
      const int64_t go = o0 + o, gk = k0 + kk;
      const uint16_t *p = base + go * so + gk;
      if (aligned && so % 8 == 0 && go < no && gk + 7 < nk) {
        *(uint4 *)(void *)&S[o][kk] = *(const uint4 *)(const void *)p;
      } else {
#pragma unroll
        for (int i = 0; i < 8; i++) S[o][kk + i] = (go < no && gk + i < nk) ? p[i] : 0;
      }
    }
  } else if (so == 1) { // 8 consecutive rows per move, scattered across k
#pragma unroll
    for (int r = 0; r < 2; r++) {
      const int e = tid + 256 * r, kk = e >> 4, o = (e & 15) * 8;
      const int64_t go = o0 + o, gk = k0 + kk;
      const uint16_t *p = base + go + gk * sk;
      if (aligned && sk % 8 == 0 && gk < nk && go + 7 < no) {
        uint4 v = *(const uint4 *)(const void *)p;
        const uint16_t *h = (const uint16_t *)&v;
#pragma unroll
        for (int i = 0; i < 8; i++) S[o + i][kk] = h[i];
      } else {
#pragma unroll
        for (int i = 0; i < 8; i++) S[o + i][kk] = (gk < nk && go + i < no) ? p[i] : 0;
      }
    }
  } else { // arbitrary strides
    for (int e = tid; e < TILE * MMA_BK; e += 256) {
      const int o = e % TILE, kk = e / TILE;
      const int64_t go = o0 + o, gk = k0 + kk;
      S[o][kk] = (go < no && gk < nk) ? base[go * so + gk * sk] : 0;
    }
  }
}

template <bool BF16>
__device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  if (BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ uint32_t ld32(const uint16_t *p) {
  return *(const uint32_t *)(const void *)p;
}

// One k16 step of a warp's 64x32 tile: 4 x 4 mma.m16n8k16.
template <bool BF16>
__device__ __forceinline__ void mma_step(float acc[4][4][4], uint16_t (*As)[MMA_PITCH],
                                         uint16_t (*Bs)[MMA_PITCH], int wm, int wn,
                                         int ks) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  uint32_t af[4][4], bf[4][2];
#pragma unroll
  for (int mi = 0; mi < 4; mi++) {
    const int r = wm * 64 + mi * 16 + g;
    af[mi][0] = ld32(&As[r][ks + 2 * t]);
    af[mi][1] = ld32(&As[r + 8][ks + 2 * t]);
    af[mi][2] = ld32(&As[r][ks + 2 * t + 8]);
    af[mi][3] = ld32(&As[r + 8][ks + 2 * t + 8]);
  }
#pragma unroll
  for (int ni = 0; ni < 4; ni++) {
    const int c = wn * 32 + ni * 8 + g;
    bf[ni][0] = ld32(&Bs[c][ks + 2 * t]);
    bf[ni][1] = ld32(&Bs[c][ks + 2 * t + 8]);
  }
#pragma unroll
  for (int mi = 0; mi < 4; mi++)
#pragma unroll
    for (int ni = 0; ni < 4; ni++) mma16816<BF16>(acc[mi][ni], af[mi], bf[ni]);
}

template <bool BF16>
__device__ __forceinline__ void mma_store(const bpk_gemm_args_t &p, uint16_t *C, int64_t bz,
                                          int64_t m, int64_t n, float v) {
  if (m >= p.c.shape[1] || n >= p.c.shape[2]) return;
  uint16_t *cp = C + m * p.c.strides[1] + n * p.c.strides[2];
  float r = (float)p.alpha * v;
  if (BF16) {
    if (p.beta != 0) r += (float)p.beta * __bfloat162float(*(__nv_bfloat16 *)cp);
    *(__nv_bfloat16 *)cp = __float2bfloat16_rn(bpk_gemm_epilogue<float>(p, bz, m, n, r));
  } else {
    if (p.beta != 0) r += (float)p.beta * __half2float(*(__half *)cp);
    *(__half *)cp = __float2half_rn(bpk_gemm_epilogue<float>(p, bz, m, n, r));
  }
}

template <bool BF16> __device__ void gemm_mma(const bpk_gemm_args_t &p) {
  __shared__ __align__(16) uint16_t As[TILE][MMA_PITCH];
  __shared__ __align__(16) uint16_t Bs[TILE][MMA_PITCH];
  const int64_t M = p.c.shape[1], N = p.c.shape[2], K = p.a.shape[2];
  const int64_t m0 = (int64_t)blockIdx.y * TILE, n0 = (int64_t)blockIdx.x * TILE;
  const int warp = threadIdx.x >> 5, wm = warp >> 2, wn = warp & 3;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const bool al_a = (p.a.ptr & 15) == 0 && p.a.strides[0] % 8 == 0;
  const bool al_b = (p.b.ptr & 15) == 0 && p.b.strides[0] % 8 == 0;
  for (int64_t bz = blockIdx.z; bz < p.c.shape[0]; bz += gridDim.z) {
    const uint16_t *A = (const uint16_t *)p.a.ptr + bz * p.a.strides[0];
    const uint16_t *B = (const uint16_t *)p.b.ptr + bz * p.b.strides[0];
    float acc[4][4][4] = {};
    for (int64_t k0 = 0; k0 < K; k0 += MMA_BK) {
      mma_load(As, A, p.a.strides[1], p.a.strides[2], m0, M, k0, K, al_a);
      mma_load(Bs, B, p.b.strides[2], p.b.strides[1], n0, N, k0, K, al_b);
      __syncthreads();
      mma_step<BF16>(acc, As, Bs, wm, wn, 0);
      mma_step<BF16>(acc, As, Bs, wm, wn, 16);
      __syncthreads();
    }
    uint16_t *C = (uint16_t *)p.c.ptr + bz * p.c.strides[0];
#pragma unroll
    for (int mi = 0; mi < 4; mi++)
#pragma unroll
      for (int ni = 0; ni < 4; ni++) {
        const int64_t m = m0 + wm * 64 + mi * 16 + g, n = n0 + wn * 32 + ni * 8 + 2 * t;
        mma_store<BF16>(p, C, bz, m, n, acc[mi][ni][0]);
        mma_store<BF16>(p, C, bz, m, n + 1, acc[mi][ni][1]);
        mma_store<BF16>(p, C, bz, m + 8, n, acc[mi][ni][2]);
        mma_store<BF16>(p, C, bz, m + 8, n + 1, acc[mi][ni][3]);
      }
  }
}

extern "C" __global__ void __launch_bounds__(256) bp_gemm_f16(const bpk_gemm_args_t p) {
  gemm_mma<false>(p);
}
extern "C" __global__ void __launch_bounds__(256) bp_gemm_bf16(const bpk_gemm_args_t p) {
  gemm_mma<true>(p);
}

// ---- the GEMV and the epilogue pass (shared with kernels/hip/gemm.hip) ----
#include "gemm_passes.cuh"
