// attention.cu — fused scaled dot-product attention, flash-style.
//
// A block owns BPK_ATTN_ROWS query rows of one (batch, query head); each of
// its 8 warps owns 4 rows. Keys and values stream through shared memory
// BPK_ATTN_KEYS at a time and each row keeps a running max, denominator and
// output (online softmax), so the Sq x Skv score matrix never exists in
// memory. Within a key tile lane j scores key j (K rows padded by one float
// so those reads are conflict-free), and the output lanes own head-dim
// columns lane, lane + 32, ... Scores are pre-multiplied by log2(e) so the
// exponentials are exp2f.
//
// GQA: query head h reads kv head h / (Hq / Hkv). Causal masking is
// bottom-right aligned: key j is visible to query i when j <= i + Skv - Sq;
// the masks of ABI 1.5 use the same alignment and are applied in the score
// loop (key range: causal, window, key lengths; additive: bias, ALiBi), so a
// masked call costs no extra pass. A row that sees no key writes zeros.
#include "bp_cuda_common.cuh"

#define RPW 4                              // rows per warp
#define SLOTS (BPK_ATTN_MAX_DIM / 32)      // output columns per lane
#define LOG2E 1.4426950408889634f

// The keys [lo, hi) query position `at` (= i + Skv - Sq) may see.
struct key_range {
  int64_t lo, hi;
};
__device__ __forceinline__ key_range visible_keys(const bpk_attention_args_t &a, int64_t b,
                                                  int64_t at, int64_t Skv) {
  key_range r = {0, Skv};
  if (a.causal || a.window > 0) r.hi = min(r.hi, at + 1);
  if (a.window > 0) r.lo = max((int64_t)0, at - a.window + 1);
  if (a.kv_lens.ptr)
    r.hi = min(r.hi, (int64_t)((const int32_t *)a.kv_lens.ptr)[b * a.kv_lens.stride]);
  return r;
}

// Head h's ALiBi slope (0 without ALiBi): the slopes tensor, or the standard
// geometric slope of head h + offset of alibi_heads (Press et al.): 2^(-8 (h
// + 1) / p) over the largest power of two p <= heads, then every other slope
// of the sequence for 2p.
__device__ __forceinline__ float alibi_slope(const bpk_attention_args_t &a, int64_t h) {
  if (a.alibi_slopes.ptr)
    return bpk_ld<float>(a.alibi_slopes.ptr, a.alibi_slopes.dtype, h * a.alibi_slopes.stride);
  if (a.alibi_heads <= 0) return 0.f;
  int p = 1;
  while (p * 2 <= a.alibi_heads) p *= 2;
  const int hh = (int)h + a.alibi_head_offset;
  return hh < p ? exp2f(-8.f * (float)(hh + 1) / (float)p)
                : exp2f(-4.f * (float)(2 * (hh - p) + 1) / (float)p);
}

__device__ __forceinline__ float ld4(const bpk_tensor_t &t, int64_t b, int64_t h, int64_t s,
                                     int64_t d) {
  return bpk_ld<float>(t.ptr, t.dtype,
                       b * t.strides[0] + h * t.strides[1] + s * t.strides[2] + d * t.strides[3]);
}

extern "C" __global__ void __launch_bounds__(BPK_ATTN_THREADS)
    bp_attention_f(const bpk_attention_args_t a) {
  extern __shared__ float smem[];
  const int64_t Hq = a.q.shape[1], Sq = a.q.shape[2], Hkv = a.k.shape[1], Skv = a.k.shape[2];
  const int D = (int)a.q.shape[3], Dv = (int)a.v.shape[3];
  float *Qs = smem, *Ks = Qs + BPK_ATTN_ROWS * D, *Vs = Ks + BPK_ATTN_KEYS * (D + 1);
  const int64_t b = blockIdx.y / Hq, h = blockIdx.y % Hq, hk = h / (Hq / Hkv);
  const int64_t q0 = (int64_t)blockIdx.x * BPK_ATTN_ROWS;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const float qscale = a.scale * LOG2E;
  const float slope2 = alibi_slope(a, h) * LOG2E; // in the scores' log2 units

  for (int e = tid; e < BPK_ATTN_ROWS * D; e += blockDim.x) {
    const int64_t qi = q0 + e / D;
    Qs[e] = qi < Sq ? ld4(a.q, b, h, qi, e % D) * qscale : 0.f;
  }
  float m[RPW], l[RPW], o[RPW][SLOTS];
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    m[i] = -INFINITY; l[i] = 0.f;
#pragma unroll
    for (int s = 0; s < SLOTS; s++) o[i][s] = 0.f;
  }
  // Keys outside every row's range in this block are skipped: from the
  // first row's lowest key to the last row's highest.
  const int64_t kv_begin = visible_keys(a, b, q0 + Skv - Sq, Skv).lo;
  const int64_t kv_end = visible_keys(a, b, q0 + BPK_ATTN_ROWS - 1 + Skv - Sq, Skv).hi;

  for (int64_t k0 = kv_begin; k0 < kv_end; k0 += BPK_ATTN_KEYS) {
    __syncthreads(); // the previous tile is consumed (and Qs is written)
    for (int e = tid; e < BPK_ATTN_KEYS * D; e += blockDim.x) {
      const int64_t kj = k0 + e / D;
      Ks[(e / D) * (D + 1) + e % D] = kj < Skv ? ld4(a.k, b, hk, kj, e % D) : 0.f;
    }
    for (int e = tid; e < BPK_ATTN_KEYS * Dv; e += blockDim.x) {
      const int64_t kj = k0 + e / Dv;
      Vs[e] = kj < Skv ? ld4(a.v, b, hk, kj, e % Dv) : 0.f;
    }
    __syncthreads();

    float s[RPW] = {};
    for (int d = 0; d < D; d++) {
      const float kv = Ks[lane * (D + 1) + d];
#pragma unroll
      for (int i = 0; i < RPW; i++) s[i] = fmaf(Qs[(warp * RPW + i) * D + d], kv, s[i]);
    }
    const int64_t kj = k0 + lane;
    float p[RPW];
#pragma unroll
    for (int i = 0; i < RPW; i++) {
      const int64_t qi = q0 + warp * RPW + i, at = qi + Skv - Sq;
      const key_range r = visible_keys(a, b, at, Skv);
      const bool ok = kj >= r.lo && kj < r.hi && qi < Sq;
      float sc = ok ? s[i] : -INFINITY;
      if (ok && a.bias.ptr)
        sc += LOG2E * bpk_ld<float>(a.bias.ptr, a.bias.dtype,
                                    b * a.bias.strides[0] + h * a.bias.strides[1] +
                                        qi * a.bias.strides[2] + kj * a.bias.strides[3]);
      if (ok && slope2 != 0.f) sc -= slope2 * (float)(at > kj ? at - kj : kj - at);
      const float mnew = fmaxf(m[i], bpk_warp_max(sc));
      // Until a row has seen a key its max is -inf: nothing to rescale.
      const float corr = mnew == -INFINITY ? 1.f : exp2f(m[i] - mnew);
      p[i] = mnew == -INFINITY ? 0.f : exp2f(sc - mnew);
      l[i] = l[i] * corr + bpk_warp_sum(p[i]);
      m[i] = mnew;
#pragma unroll
      for (int t = 0; t < SLOTS; t++) o[i][t] *= corr;
    }
    for (int j = 0; j < BPK_ATTN_KEYS; j++) {
      float pj[RPW];
#pragma unroll
      for (int i = 0; i < RPW; i++) pj[i] = __shfl_sync(0xffffffffu, p[i], j);
#pragma unroll
      for (int t = 0; t < SLOTS; t++) {
        const int d = lane + 32 * t;
        if (d < Dv) {
          const float v = Vs[j * Dv + d];
#pragma unroll
          for (int i = 0; i < RPW; i++) o[i][t] = fmaf(pj[i], v, o[i][t]);
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < RPW; i++) {
    const int64_t qi = q0 + warp * RPW + i;
    if (qi >= Sq) continue;
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
#pragma unroll
    for (int t = 0; t < SLOTS; t++) {
      const int d = lane + 32 * t;
      if (d < Dv) {
        const int64_t off = b * a.out.strides[0] + h * a.out.strides[1] +
                            qi * a.out.strides[2] + (int64_t)d * a.out.strides[3];
        bpk_st(a.out.ptr, a.out.dtype, off, o[i][t] * inv);
      }
    }
  }
}

#if !defined(BPK_HIP)
// ---- tensor cores: bp_attention_mma_{h,bf}{64,128} ------------------------
//
// Flash-attention-2 on mma.sync m16n8k16 (f16 / bf16 in, f32 accumulate) for
// f16 or bf16 q, k, v and out with D = Dv = 64 or 128, no ABI 1.5 masks, the
// last dim contiguous and every row 16-byte aligned (ops_dnn.c checks all of
// this and sends the rest to bp_attention_f). A block of 4 warps owns
// BPK_ATTN_MMA_ROWS query rows, 32 per warp (two m16 tiles, so each K or V
// fragment read from shared memory feeds two mma). Q's tile and key tiles of
// BPK_ATTN_MMA_KEYS(D) rows of K and V go through shared memory by cp.async
// (rows padded by 8 elements, so the 8 row addresses of one ldmatrix fall in
// distinct banks); V's load overlaps S = Q K^T and the next K's load
// overlaps P V. Causal: key tiles past the block's last row are never
// loaded, and only tiles that cross a row's limit (or Skv) are masked. Query
// tiles run last first, the longest rows of a causal call. The S fragments get the
// online softmax in registers (a row lives in the 4 lanes of a quad) and,
// rounded to 16 bits, are the A fragments of P V as they stand: the C
// layout of m16n8 (row g: columns 2t, 2t+1; row g+8: the same) is the A
// layout of m16n8k16 for the two 8-key halves. Fragment layouts as the PTX
// ISA gives them (g = lane / 4, t = lane % 4).
#define MMA_PAD 8

template <typename T> struct mma_t;
template <> struct mma_t<__half> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
  }
  // d += a . b, m16n8k16, f16 inputs.
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
template <> struct mma_t<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&h);
  }
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
// Four 8x8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
// 16 bytes global -> shared; ok == false fills the 16 bytes with zeros and
// reads nothing (src-size 0).
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
               "r"(ok ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Rows [r0, r0 + ROWS) of head (b, h) of t (rows past `rows` as zeros) into
// a padded shared tile, 16 bytes per cp.async.
template <typename T, int D, int ROWS>
__device__ __forceinline__ void mma_load_tile(T (*dst)[D + MMA_PAD], const bpk_tensor_t &t,
                                              int64_t b, int64_t h, int64_t r0, int64_t rows) {
  constexpr int CHUNKS = D / 8; // 16-byte chunks per row
  const T *base = reinterpret_cast<const T *>(t.ptr);
#pragma unroll
  for (int c = threadIdx.x; c < ROWS * CHUNKS; c += BPK_ATTN_MMA_THREADS) {
    const int r = c / CHUNKS, col = (c % CHUNKS) * 8;
    const bool ok = r0 + r < rows;
    const T *src = ok ? base + b * t.strides[0] + h * t.strides[1] + (r0 + r) * t.strides[2] + col
                      : base;
    cp_async16(&dst[r][col], src, ok);
  }
}

template <typename T, int D>
__device__ __forceinline__ void attention_mma(const bpk_attention_args_t &a) {
  constexpr int BM = BPK_ATTN_MMA_ROWS, BN = BPK_ATTN_MMA_KEYS(D);
  constexpr int MT = BM / 64; // m16 tiles per warp
  constexpr int KS = D / 16;  // k-steps of S = Q K^T
  constexpr int ON = D / 8;   // n-blocks of O
  constexpr int SN = BN / 8;  // n-blocks of S
  typedef T row_t[D + MMA_PAD];
  extern __shared__ __align__(16) unsigned char mma_smem[];
  row_t *Qs = reinterpret_cast<row_t *>(mma_smem), *Ks = Qs + BM, *Vs = Ks + BN;

  const int64_t Hq = a.q.shape[1], Sq = a.q.shape[2], Hkv = a.k.shape[1], Skv = a.k.shape[2];
  const int64_t b = blockIdx.y / Hq, h = blockIdx.y % Hq, hk = h / (Hq / Hkv);
  const int64_t q0 = (int64_t)(gridDim.x - 1 - blockIdx.x) * BM;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t4 = lane & 3;
  const int64_t shift = Skv - Sq; // query i sees key j <= i + shift (causal)
  const float sl2 = a.scale * LOG2E;

  // Keys this block needs: all of them, or (causal) up to its last row's.
  int64_t kv_end = Skv;
  if (a.causal) kv_end = min(kv_end, q0 + BM + shift); // q0 + BM - 1 + shift + 1
  const int tiles = kv_end > 0 ? (int)((kv_end + BN - 1) / BN) : 0;

  mma_load_tile<T, D, BM>(Qs, a.q, b, h, q0, Sq);
  if (tiles > 0) mma_load_tile<T, D, BN>(Ks, a.k, b, hk, 0, Skv);
  cp_async_commit();

  float o[MT][ON][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int n = 0; n < ON; n++) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.f;
  float m[MT][2], l[MT][2]; // rows g and g + 8 of each m16 tile
#pragma unroll
  for (int mt = 0; mt < MT; mt++) m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.f;
  const int64_t row0 = q0 + warp * (16 * MT) + g; // this lane's first row
  const int qrow = warp * (16 * MT) + (lane & 7) + ((lane >> 3) & 1) * 8, qcol = (lane >> 4) * 8;

  for (int tile = 0; tile < tiles; tile++) {
    const int64_t k0 = (int64_t)tile * BN;
    __syncthreads(); // Vs is free: the last tile's P V is done
    mma_load_tile<T, D, BN>(Vs, a.v, b, hk, k0, Skv);
    cp_async_commit();
    cp_async_wait<1>(); // this tile's K (and, the first time, Q)
    __syncthreads();

    float s[MT][SN][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int n = 0; n < SN; n++) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.f;
#pragma unroll
    for (int k = 0; k < KS; k++) {
      uint32_t qa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) ldsm_x4(qa[mt], &Qs[qrow + mt * 16][k * 16 + qcol]);
#pragma unroll
      for (int n = 0; n < SN; n += 2) {
        uint32_t kb[4]; // b fragments of n-blocks n and n + 1 at k-step k
        ldsm_x4(kb, &Ks[n * 8 + (lane & 7) + (lane >> 4) * 8][k * 16 + ((lane >> 3) & 1) * 8]);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma_t<T>::mma(s[mt][n], qa[mt], kb[0], kb[1]);
          mma_t<T>::mma(s[mt][n + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }
    // Scale to log2 units; mask keys past Skv and (causal) past the row's.
    const bool edge = k0 + BN > Skv || (a.causal && k0 + BN - 1 > q0 + shift);
    float corr[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      // Last key column (relative to k0) rows g and g + 8 may see, in [-1, BN - 1].
      int last[2];
#pragma unroll
      for (int r = 0; r < 2; r++) {
        int64_t hi = Skv - 1;
        if (a.causal) hi = min(hi, row0 + mt * 16 + r * 8 + shift);
        last[r] = (int)max((int64_t)-1, min((int64_t)(BN - 1), hi - k0));
      }
#pragma unroll
      for (int n = 0; n < SN; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const bool ok = !edge || n * 8 + 2 * t4 + (e & 1) <= last[e >> 1];
          s[mt][n][e] = ok ? s[mt][n][e] * sl2 : -INFINITY;
        }
      // Online softmax, rows g (e = 0, 1) and g + 8 (e = 2, 3).
#pragma unroll
      for (int r = 0; r < 2; r++) {
        float mx = m[mt][r];
#pragma unroll
        for (int n = 0; n < SN; n++) mx = fmaxf(mx, fmaxf(s[mt][n][2 * r], s[mt][n][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        // A row with no key seen yet has max -inf: its p are 0, nothing to rescale.
        const float base = mx == -INFINITY ? 0.f : mx;
        corr[mt][r] = exp2f(m[mt][r] - base); // exp2(-inf) = 0 while l and o are still 0
        m[mt][r] = mx;
        float sum = 0.f;
#pragma unroll
        for (int n = 0; n < SN; n++) {
          s[mt][n][2 * r] = exp2f(s[mt][n][2 * r] - base);
          s[mt][n][2 * r + 1] = exp2f(s[mt][n][2 * r + 1] - base);
          sum += s[mt][n][2 * r] + s[mt][n][2 * r + 1];
        }
        l[mt][r] = l[mt][r] * corr[mt][r] + sum; // this lane's columns; the quad sums at the end
      }
#pragma unroll
      for (int n = 0; n < ON; n++) {
        o[mt][n][0] *= corr[mt][0]; o[mt][n][1] *= corr[mt][0];
        o[mt][n][2] *= corr[mt][1]; o[mt][n][3] *= corr[mt][1];
      }
    }

    __syncthreads(); // every warp is done with Ks
    if (tile + 1 < tiles) {
      mma_load_tile<T, D, BN>(Ks, a.k, b, hk, k0 + BN, Skv);
      cp_async_commit();
      cp_async_wait<1>(); // this tile's V
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      // P's A fragments for keys 16kk..16kk+15: S n-blocks 2kk and 2kk + 1.
      uint32_t pa[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        pa[mt][0] = mma_t<T>::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = mma_t<T>::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = mma_t<T>::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = mma_t<T>::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int n = 0; n < ON; n += 2) {
        uint32_t vb[4]; // b fragments of O n-blocks n and n + 1
        ldsm_x4_trans(vb, &Vs[kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8][n * 8 + (lane >> 4) * 8]);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma_t<T>::mma(o[mt][n], pa[mt], vb[0], vb[1]);
          mma_t<T>::mma(o[mt][n + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }
  cp_async_wait<0>(); // with no key tile, Q's load is still in flight

  T *out = reinterpret_cast<T *>(a.out.ptr);
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int r = 0; r < 2; r++) {
      float sum = l[mt][r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      const float inv = sum > 0.f ? 1.f / sum : 0.f; // a row that sees no key: zeros
      const int64_t row = row0 + mt * 16 + r * 8;
      if (row >= Sq) continue;
      T *orow = out + b * a.out.strides[0] + h * a.out.strides[1] + row * a.out.strides[2];
#pragma unroll
      for (int n = 0; n < ON; n++)
        *reinterpret_cast<uint32_t *>(orow + n * 8 + 2 * t4) =
            mma_t<T>::pack(o[mt][n][2 * r] * inv, o[mt][n][2 * r + 1] * inv);
    }
}

// One entry point per dtype and head dim (written out, not by a macro: the
// HIP test shim reads kernel signatures from the source text).
extern "C" __global__ void __launch_bounds__(BPK_ATTN_MMA_THREADS, 2)
    bp_attention_mma_h64(const bpk_attention_args_t a) {
  attention_mma<__half, 64>(a);
}
extern "C" __global__ void __launch_bounds__(BPK_ATTN_MMA_THREADS, 2)
    bp_attention_mma_h128(const bpk_attention_args_t a) {
  attention_mma<__half, 128>(a);
}
extern "C" __global__ void __launch_bounds__(BPK_ATTN_MMA_THREADS, 2)
    bp_attention_mma_bf64(const bpk_attention_args_t a) {
  attention_mma<__nv_bfloat16, 64>(a);
}
extern "C" __global__ void __launch_bounds__(BPK_ATTN_MMA_THREADS, 2)
    bp_attention_mma_bf128(const bpk_attention_args_t a) {
  attention_mma<__nv_bfloat16, 128>(a);
}
#endif // !BPK_HIP
