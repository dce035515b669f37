/*
 * fast/gemm/gemm_skinny_lowp.c — GEMM with a few rows of C and B's rows
 * contiguous, in bf16 / f16 (m <= CPU_FAST_SKINNY_LOWP_MAX_M) and f32 (m <=
 * CPU_FAST_SKINNY_F32_MAX_M): one-token decode's projections, x[m, k] ·
 * W[k, n]. Such a call is bound by reading W once, so W is read in place,
 * front to back, each element once: four of its rows at a time are loaded
 * (bf16 widened to f32 by a 16-bit shift, f16 by vcvtph2ps) into AVX-512
 * registers and added into f32 sums of the m rows of C, which stay in L1
 * (SKINNY_ACC_BYTES). The tiles of AMX or the packed f32 path would first
 * copy W, for a single use of each element; the f32 micro-kernel read in
 * place computes all of its MR rows whatever m is, and walks W a column
 * panel at a time (a short run of every row, which streams from memory
 * far below the bandwidth).
 *
 * The pool splits W as gemv.c's axpy does: blocks of columns, or, when
 * there are fewer blocks than workers, whole rows of W (each worker one
 * contiguous run), whose partial sums are added in order afterwards.
 * A (m x k, any strides) is widened to f32 once on the calling thread; C
 * (any strides) gets act(alpha * sum + beta * C + bias) (the ABI 1.5
 * epilogue) in f32 with the elementwise kernels' vector activations, 16
 * columns at a time where C's rows are contiguous, and rounded once; C is
 * unread when beta == 0. Compiled for AVX-512 (plugins/cpu/fast.mk):
 * called only after the CPU checks in the _ok functions.
 */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "gemm.h"
#include "gemm_epi512.h"
#include "gemm_epilogue.h"
#include "gemm_skinny.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

/* Bytes of f32 sums a task keeps (m rows of its columns): they stay in L1. */
#define SKINNY_ACC_BYTES 16384
/* Below ~128 KiB of bf16 W a second thread costs more than it brings. */
#define SKINNY_MT_ELEMS 65536.0
/* Least rows of W per part when the rows are split (below it the parts'
 * sums cost more than the rows they read). */
#define SKINNY_KPART_MIN_ROWS 256

/* 16 (mk: the first lanes) elements of p from element off, as f32. */
static inline __attribute__((always_inline)) __m512 load16(const void *p, int64_t off,
                                                           __mmask16 mk, skinny_kind_t kind) {
  if (kind == SKINNY_F32) return _mm512_maskz_loadu_ps(mk, (const float *)p + off);
  return epi_half_widen16(_mm256_maskz_loadu_epi16(mk, (const uint16_t *)p + off),
                          kind == SKINNY_F16);
}

/* acc[i][c] (w floats a row) = sum over W's rows [p, pend) of a[i][p] *
 * W[p][c0 + c]. Each group of four rows of W is loaded once per 16
 * columns and serves all m rows of A. */
static inline __attribute__((always_inline)) void skinny_sum(const skinny_job_t *j, int64_t c0,
                                                             int64_t w, int64_t p, int64_t pend,
                                                             float *acc, skinny_kind_t kind) {
  int64_t m = j->m, k = j->k, ldb = j->ldb;
  memset(acc, 0, (size_t)(m * w) * sizeof *acc);
  for (; p + 4 <= pend; p += 4) {
    int64_t b0 = p * ldb + c0;
    for (int64_t c = 0; c < w; c += 16) {
      __mmask16 mk = epi_lanes(w - c);
      __m512 v0 = load16(j->b, b0 + c, mk, kind), v1 = load16(j->b, b0 + ldb + c, mk, kind);
      __m512 v2 = load16(j->b, b0 + 2 * ldb + c, mk, kind);
      __m512 v3 = load16(j->b, b0 + 3 * ldb + c, mk, kind);
      const float *ai = j->a + p;
      float *ac = acc + c;
      for (int64_t i = 0; i < m; i++, ai += k, ac += w) {
        __m512 s = _mm512_maskz_loadu_ps(mk, ac);
        s = _mm512_fmadd_ps(_mm512_set1_ps(ai[0]), v0, s);
        s = _mm512_fmadd_ps(_mm512_set1_ps(ai[1]), v1, s);
        s = _mm512_fmadd_ps(_mm512_set1_ps(ai[2]), v2, s);
        s = _mm512_fmadd_ps(_mm512_set1_ps(ai[3]), v3, s);
        _mm512_mask_storeu_ps(ac, mk, s);
      }
    }
  }
  for (; p < pend; p++) {
    for (int64_t c = 0; c < w; c += 16) {
      __mmask16 mk = epi_lanes(w - c);
      __m512 v = load16(j->b, p * ldb + c0 + c, mk, kind);
      for (int64_t i = 0; i < m; i++) {
        float *ac = acc + i * w + c;
        __m512 s = _mm512_maskz_loadu_ps(mk, ac);
        _mm512_mask_storeu_ps(ac, mk, _mm512_fmadd_ps(_mm512_set1_ps(j->a[i * k + p]), v, s));
      }
    }
  }
}

static bp_dtype_t kind_dtype(skinny_kind_t kind) {
  return kind == SKINNY_F32 ? BP_F32 : kind == SKINNY_F16 ? BP_F16 : BP_BF16;
}

/* C's elements one by one (C's columns strided), in double as the
 * reference. */
static void skinny_store_strided(const skinny_job_t *j, const float *sums, int64_t ld, int64_t c0,
                                 int64_t w) {
  bp_dtype_t dt = kind_dtype(j->kind);
  for (int64_t i = 0; i < j->m; i++)
    for (int64_t c = 0; c < w; c++) {
      int64_t off = i * j->scm + (c0 + c) * j->scn;
      float v = j->alpha * sums[i * ld + c];
      if (j->beta != 0) v += j->beta * (float)cpu_load(j->c, dt, off);
      if (j->bias) v += (float)cpu_load(j->bias, dt, i * j->sbm + (c0 + c) * j->sbn);
      cpu_store(j->c, dt, off, j->act >= 0 ? cpu_fast_gemm_act_value(j->act, v) : v);
    }
}

/* C[i][c0 + c] = round(act(alpha * s + beta * C + bias)), s the sum at
 * sums[i * ld + c]: the epilogue on the f32 value, rounded once. C is not
 * read when beta == 0, so a NaN there does not propagate. */
void cpu_fast_skinny_store(const skinny_job_t *j, const float *sums, int64_t ld, int64_t c0,
                           int64_t w) {
  if (j->scn != 1) {
    skinny_store_strided(j, sums, ld, c0, w);
    return;
  }
  bool f32 = j->kind == SKINNY_F32, f16 = j->kind == SKINNY_F16;
  __m512 va = _mm512_set1_ps(j->alpha), vb = _mm512_set1_ps(j->beta);
  for (int64_t i = 0; i < j->m; i++)
    for (int64_t c = 0; c < w; c += 16) {
      __mmask16 mk = epi_lanes(w - c);
      int64_t off = i * j->scm + c0 + c, boff = i * j->sbm + (c0 + c) * j->sbn;
      __m512 v = _mm512_mul_ps(va, _mm512_maskz_loadu_ps(mk, sums + i * ld + c));
      if (j->beta != 0) v = _mm512_fmadd_ps(vb, load16(j->c, off, mk, j->kind), v);
      if (j->bias)
        v = _mm512_add_ps(v, f32 ? epi_f32_bias16((const float *)j->bias + boff, j->sbn, mk)
                                 : epi_half_bias16((const uint16_t *)j->bias + boff, j->sbn, mk,
                                                   f16));
      if (j->act >= 0) v = epi_act16(v, j->act);
      if (f32)
        _mm512_mask_storeu_ps((float *)j->c + off, mk, v);
      else
        _mm256_mask_storeu_epi16((uint16_t *)j->c + off, mk, epi_half_narrow16(v, f16));
    }
}

/* Task t: column block t / kparts, row range t % kparts of W. */
static inline __attribute__((always_inline)) void skinny_task(const skinny_job_t *j, int64_t t,
                                                              skinny_kind_t kind) {
  float acc[SKINNY_ACC_BYTES / sizeof(float)];
  int64_t blk = t / j->kparts, part = t % j->kparts;
  int64_t c0 = blk * j->cols, w = j->n - c0 < j->cols ? j->n - c0 : j->cols;
  int64_t per = (j->k + j->kparts - 1) / j->kparts;
  int64_t p = part * per < j->k ? part * per : j->k;
  int64_t pend = p + per < j->k ? p + per : j->k;
  skinny_sum(j, c0, w, p, pend, acc, kind);
  if (j->kparts == 1) {
    cpu_fast_skinny_store(j, acc, w, c0, w);
    return;
  }
  for (int64_t i = 0; i < j->m; i++)
    memcpy(j->partial + (part * j->m + i) * j->n + c0, acc + i * w, (size_t)w * sizeof *acc);
}

/* One function per kind, so that each inlines its own loads. */
#define SKINNY_TASKS(name, kind)                                                                   \
  static void name(void *ctx, int64_t begin, int64_t end, unsigned worker) {                       \
    (void)worker;                                                                                  \
    for (int64_t t = begin; t < end; t++) skinny_task(ctx, t, kind);                               \
  }
SKINNY_TASKS(skinny_tasks_bf16, SKINNY_BF16)
SKINNY_TASKS(skinny_tasks_f16, SKINNY_F16)
SKINNY_TASKS(skinny_tasks_f32, SKINNY_F32)

/* Adds the kparts partial sums, in part order, into part 0, then stores C. */
static void skinny_reduce(const skinny_job_t *j) {
  int64_t len = j->m * j->n;
  for (int64_t q = 1; q < j->kparts; q++) {
    const float *src = j->partial + q * len;
    for (int64_t e = 0; e < len; e++) j->partial[e] += src[e];
  }
  cpu_fast_skinny_store(j, j->partial, j->n, 0, j->n);
}

/* Splits W between the pool's workers (gemv.c's axpy split) and runs. */
static void skinny_run(cpu_device_t *dev, skinny_job_t *j) {
  bool mt = dev->pool && (double)j->k * (double)j->n >= SKINNY_MT_ELEMS;
  int64_t workers = mt ? (int64_t)cpu_pool_size(dev->pool) : 1;
  int64_t most = SKINNY_ACC_BYTES / 4 / j->m / 16 * 16;
  int64_t blocks = (j->n + most - 1) / most;
  j->kparts = 1;
  if (blocks < workers && j->k >= workers * SKINNY_KPART_MIN_ROWS &&
      (j->partial = cpu_fast_scratch(4, (size_t)(workers * j->m * j->n) * sizeof(float)))) {
    j->kparts = workers;
    j->cols = (j->n + blocks - 1) / blocks;
  } else {
    /* column blocks narrow enough that every worker gets one, whole
     * vectors of 16 */
    int64_t cols = ((j->n + workers - 1) / workers + 15) / 16 * 16;
    j->cols = cols < most ? (cols > 16 ? cols : 16) : most;
    blocks = (j->n + j->cols - 1) / j->cols;
  }
  int64_t tasks = blocks * j->kparts;
  cpu_pool_fn fn = j->kind == SKINNY_F32   ? skinny_tasks_f32
                   : j->kind == SKINNY_F16 ? skinny_tasks_f16
                                           : skinny_tasks_bf16;
  if (mt && tasks > 1)
    cpu_pool_run(dev->pool, tasks, 1, fn, j);
  else
    fn(j, 0, tasks, 0);
  if (j->kparts > 1) skinny_reduce(j);
}

/* The checks both entry points share: shapes, strides, the epilogue and
 * the CPU; max_m rows of C at most. */
static bool skinny_fits(const cpu_device_t *dev, const bp_gemm_args_t *a, int64_t max_m) {
  bp_dtype_t dt = a->a.dtype;
  if (a->b.dtype != dt || a->c.dtype != dt) return false;
  if (a->a.rank != 3 || a->b.rank != 3 || a->c.rank != 3) return false;
  int64_t m = a->c.shape[1], n = a->c.shape[2], k = a->a.shape[2];
  if (m < 1 || m > max_m || k < 1 || n < 1) return false;
  if (n > 1 && a->b.strides[2] != 1) return false;
  if (a->bias.rank != 0 && (a->bias.rank != 3 || a->bias.dtype != dt)) return false;
  if ((a->flags & BP_GEMM_FLAG_ACTIVATION) && !cpu_fast_gemm_act_known(a->activation)) return false;
  if (dev->isa != BP_ISA_BEST && dev->isa < BP_ISA_AVX512) return false;
  const cpu_features_t *f = cpu_features_get();
  return f->avx512f && f->avx512bw && f->avx512vl && f->fma;
}

bool cpu_fast_gemm_skinny_lowp_ok(const cpu_device_t *dev, const bp_gemm_args_t *a) {
  bp_dtype_t dt = a->a.dtype;
  return (dt == BP_BF16 || dt == BP_F16) && skinny_fits(dev, a, CPU_FAST_SKINNY_LOWP_MAX_M);
}

bool cpu_fast_gemm_skinny_f32_ok(const cpu_device_t *dev, const bp_gemm_args_t *a) {
  return a->a.dtype == BP_F32 && skinny_fits(dev, a, CPU_FAST_SKINNY_F32_MAX_M);
}

/* A of batch entry bt as f32, row-major m x k, in af. */
static void widen_a(const bp_gemm_args_t *a, int64_t bt, float *af) {
  bp_dtype_t dt = a->a.dtype;
  int64_t m = a->c.shape[1], k = a->a.shape[2];
  const int64_t *sa = a->a.strides;
  const char *base = cpu_tensor_base(&a->a);
  if (dt == BP_F32) {
    const float *ab = (const float *)base + bt * sa[0];
    for (int64_t i = 0; i < m; i++) {
      if (sa[2] == 1) {
        memcpy(af + i * k, ab + i * sa[1], (size_t)k * sizeof *af);
        continue;
      }
      for (int64_t p = 0; p < k; p++) af[i * k + p] = ab[i * sa[1] + p * sa[2]];
    }
    return;
  }
  const uint16_t *ab = (const uint16_t *)base + bt * sa[0];
  bool f16 = dt == BP_F16;
  for (int64_t i = 0; i < m; i++) {
    if (sa[2] == 1) { /* a row of the decode step's activations: 16 at a time */
      for (int64_t p = 0; p < k; p += 16) {
        __mmask16 mk = epi_lanes(k - p);
        _mm512_mask_storeu_ps(af + i * k + p, mk,
                              epi_half_widen16(_mm256_maskz_loadu_epi16(mk, ab + i * sa[1] + p), f16));
      }
      continue;
    }
    for (int64_t p = 0; p < k; p++) af[i * k + p] = (float)cpu_load(ab, dt, i * sa[1] + p * sa[2]);
  }
}

static bp_status_t skinny_gemm(cpu_device_t *dev, const bp_gemm_args_t *a) {
  bp_dtype_t dt = a->a.dtype;
  int64_t batch = a->c.shape[0], m = a->c.shape[1], n = a->c.shape[2];
  int64_t k = a->a.shape[2];
  ptrdiff_t esz = dt == BP_F32 ? 4 : 2; /* signed: batch strides may be negative */
  float *af = cpu_fast_scratch(0, (size_t)(m * k) * sizeof(float));
  if (!af) return BP_ERR_UNIMPLEMENTED;
  const char *bbase = cpu_tensor_base(&a->b), *bias = a->bias.rank ? cpu_tensor_base(&a->bias) : NULL;
  char *cbase = cpu_tensor_base(&a->c);
  int act = (a->flags & BP_GEMM_FLAG_ACTIVATION) ? a->activation : -1;
  for (int64_t bt = 0; bt < batch; bt++) {
    widen_a(a, bt, af);
    skinny_job_t j = {.kind = dt == BP_F32 ? SKINNY_F32 : dt == BP_F16 ? SKINNY_F16 : SKINNY_BF16,
                      .m = m,
                      .k = k,
                      .n = n,
                      .a = af,
                      .b = bbase + (ptrdiff_t)(bt * a->b.strides[0]) * esz,
                      .ldb = a->b.strides[1],
                      .c = cbase + (ptrdiff_t)(bt * a->c.strides[0]) * esz,
                      .scm = a->c.strides[1],
                      .scn = a->c.strides[2],
                      .alpha = (float)a->alpha,
                      .beta = (float)a->beta,
                      .bias = bias ? bias + (ptrdiff_t)(bt * a->bias.strides[0]) * esz : NULL,
                      .sbm = a->bias.strides[1],
                      .sbn = a->bias.strides[2],
                      .act = act};
    if (!cpu_fast_skinny_amx_ok(&j) || !cpu_fast_skinny_amx_run(dev, &j)) skinny_run(dev, &j);
  }
  return BP_OK;
}

bp_status_t cpu_fast_gemm_skinny_lowp(cpu_device_t *dev, const bp_gemm_args_t *a) {
  if (!cpu_fast_gemm_skinny_lowp_ok(dev, a) || a->alpha == 0) return BP_ERR_UNIMPLEMENTED;
  return skinny_gemm(dev, a);
}

bp_status_t cpu_fast_gemm_skinny_f32(cpu_device_t *dev, const bp_gemm_args_t *a) {
  if (!cpu_fast_gemm_skinny_f32_ok(dev, a) || a->alpha == 0) return BP_ERR_UNIMPLEMENTED;
  return skinny_gemm(dev, a);
}
