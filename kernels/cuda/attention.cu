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
// a row that sees no key writes zeros.
#include "bp_cuda_common.cuh"

#define RPW 4                              // rows per warp
#define SLOTS (BPK_ATTN_MAX_DIM / 32)      // output columns per lane

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
  const float qscale = a.scale * 1.4426950408889634f;

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
  // Keys past the last one any row of this block may see are skipped.
  int64_t kv_end = Skv;
  if (a.causal) kv_end = min(Skv, q0 + BPK_ATTN_ROWS + Skv - Sq);

  for (int64_t k0 = 0; k0 < kv_end; k0 += BPK_ATTN_KEYS) {
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
      const int64_t qi = q0 + warp * RPW + i;
      const bool ok = kj < Skv && qi < Sq && (!a.causal || kj <= qi + Skv - Sq);
      const float sc = ok ? s[i] : -INFINITY;
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
