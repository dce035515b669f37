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
