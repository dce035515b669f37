/*
 * fast/quant/quant.c — the "cpu" device's entry points of the quantized
 * ops but qmatmul (qmatmul.c). quantize and dequantize are memory-bound
 * row loops: the reference's rows split over the pool
 * (BP_ERR_UNIMPLEMENTED here) already stream them. qgemm runs
 * cache-blocked on AMX-INT8 tiles or AVX512-VNNI when the CPU has them
 * (qgemm_amx.c), else here on AVX2: B packed once per call, rows of A in
 * groups of 4 over the pool, the int32 sums then scaled / requantized by the
 * reference's rules (plugins/cpu/quant_blocks.h). a and b may each be i8
 * or u8 on every path. fp8 a and b run on AMX-BF16 tiles (qgemm_fp8.c)
 * where the CPU has them, else through the f32 GEMM (qgemm_fp8_f32.c).
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/fast/quant/quant.h"
#include "plugins/cpu/quant_blocks.h"

bp_status_t cpu_fast_quantize(cpu_device_t *dev, const bp_quantize_args_t *a) {
  (void)dev;
  (void)a;
  return BP_ERR_UNIMPLEMENTED;
}

bp_status_t cpu_fast_dequantize(cpu_device_t *dev, const bp_quantize_args_t *a) {
  (void)dev;
  (void)a;
  return BP_ERR_UNIMPLEMENTED;
}

/* ---- int8 GEMM ------------------------------------------------------------- */

static bool pack_b(const bp_plugin_tensor_t *b, bool a_u8, cpu_qb_pack_t *p) {
  int64_t k = b->shape[0], n = b->shape[1], panels = (n + 15) / 16;
  p->n = n;
  p->b_u8 = b->dtype == BP_U8;
  p->a_flip = !a_u8;
  p->kp = (k + 3) / 4 * 4;
  p->b = calloc((size_t)(panels * p->kp * 16 + 64), 1);
  p->colsum = calloc((size_t)(panels * 16), sizeof(int32_t));
  if (!p->b || !p->colsum) return false;
  const int8_t *src = cpu_tensor_base(b);
  for (int64_t j = 0; j < n; j++) {
    int8_t *dst = p->b + (j / 16) * p->kp * 16 + (j % 16) * 4;
    int32_t s = 0;
    for (int64_t l = 0; l < k; l++) {
      int8_t v = src[l * b->strides[0] + j * b->strides[1]];
      dst[(l / 4) * 64 + l % 4] = v;
      s += p->b_u8 ? (int32_t)(uint8_t)v : v;
    }
    p->colsum[j] = s;
  }
  return true;
}

typedef void (*qgemm_rows_fn)(const cpu_qb_pack_t *, const uint8_t *const *, int, int32_t *, int64_t);

typedef struct qgemm_job {
  const bp_qgemm_args_t *a;
  const cpu_qb_pack_t *p;
  qgemm_rows_fn rows;
  int status;
} qgemm_job_t;

static float scale_at(const bp_plugin_tensor_t *s, int64_t i) {
  return s->rank ? ((const float *)cpu_tensor_base(s))[i * s->strides[0]] : 1.0f;
}

/* Row `row` (batch * m + i) of c from its int32 sums, by the reference's rules. */
static void store_row(const bp_qgemm_args_t *a, int64_t row, const int32_t *acc) {
  const bp_plugin_tensor_t *C = &a->c;
  int32_t r = C->rank;
  int64_t m = C->shape[r - 2], n = C->shape[r - 1], bi = row / m, i = row % m;
  int64_t off = (r == 3 ? bi * C->strides[0] : 0) + i * C->strides[r - 2], cs = C->strides[r - 1];
  void *c = cpu_tensor_base(C);
  float sa = scale_at(&a->scale_a, i);
  for (int64_t j = 0; j < n; j++) {
    if (C->dtype == BP_I32) {
      ((int32_t *)c)[off + j * cs] = acc[j];
      continue;
    }
    float v = (float)acc[j] * sa * scale_at(&a->scale_b, j);
    if (C->dtype == BP_F32) ((float *)c)[off + j * cs] = v;
    else ((int8_t *)c)[off + j * cs] = cpu_sat_i8(v / a->out_scale);
  }
}

/* Tasks are groups of 4 rows of c. */
static void qgemm_task(void *vctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  qgemm_job_t *job = vctx;
  const bp_qgemm_args_t *a = job->a;
  const bp_plugin_tensor_t *A = &a->a;
  int32_t r = A->rank;
  int64_t m = A->shape[r - 2], k = A->shape[r - 1], rows = m * (r == 3 ? A->shape[0] : 1);
  int64_t kp = job->p->kp, n = job->p->n;
  uint8_t *abuf = calloc((size_t)(4 * kp), 1);
  int32_t *acc = malloc((size_t)(4 * ((n + 15) / 16 * 16)) * sizeof(int32_t));
  if (!abuf || !acc) {
    __atomic_store_n(&job->status, BP_ERR_OUT_OF_MEMORY, __ATOMIC_RELAXED);
    free(abuf), free(acc);
    return;
  }
  const int8_t *pa = cpu_tensor_base(A);
  /* an i8 a goes in as a + 128 (u8), a u8 one as it is */
  uint8_t shift = job->p->a_flip ? 128 : 0;
  for (int64_t t = begin; t < end; t++) {
    int nr = (int)(rows - 4 * t < 4 ? rows - 4 * t : 4);
    const uint8_t *arows[4];
    for (int q = 0; q < nr; q++) {
      int64_t row = 4 * t + q, bi = row / m, i = row % m;
      const int8_t *src = pa + (r == 3 ? bi * A->strides[0] : 0) + i * A->strides[r - 2];
      for (int64_t l = 0; l < k; l++) abuf[q * kp + l] = (uint8_t)((uint8_t)src[l * A->strides[r - 1]] + shift);
      arows[q] = abuf + q * kp;
    }
    job->rows(job->p, arows, nr, acc, (n + 15) / 16 * 16);
    for (int q = 0; q < nr; q++) store_row(a, 4 * t + q, acc + q * ((n + 15) / 16 * 16));
  }
  free(abuf), free(acc);
}

/* AVX-512 F, BW, VL and DQ on the CPU and within the device's ceiling. */
static bool avx512_ok(const cpu_device_t *dev, const cpu_features_t *f) {
  return (dev->isa == BP_ISA_BEST || dev->isa >= BP_ISA_AVX512) && f->avx512f && f->avx512bw &&
         f->avx512vl && f->avx512dq;
}

cpu_qgemm_path_t cpu_qgemm_path(const cpu_device_t *dev) {
  const cpu_features_t *f = cpu_features_get();
  const char *want = getenv("BP_CPU_QGEMM_ISA");
  bool any = !want || !*want;
  bool a512 = avx512_ok(dev, f);
  if ((any || !strcmp(want, "amx")) && a512 && f->amx_int8 && cpu_amx_request())
    return CPU_QGEMM_AMX;
  if ((any || !strcmp(want, "vnni")) && a512 && f->avx512_vnni) return CPU_QGEMM_VNNI;
  if ((any || !strcmp(want, "avx2")) && dev->isa != BP_ISA_SCALAR && f->avx2) return CPU_QGEMM_AVX2;
  return CPU_QGEMM_REF;
}

/* fp8 a and b: AMX-BF16 tiles, else decoded to f32 for the f32 GEMM on
 * AVX-512 / AVX2 (BP_CPU_QGEMM_ISA=amx names the first, vnni or avx2 the
 * second, ref the reference, which also runs what neither takes). */
static bp_status_t qgemm_fp8(cpu_device_t *dev, const bp_qgemm_args_t *a) {
  const cpu_features_t *f = cpu_features_get();
  const char *want = getenv("BP_CPU_QGEMM_ISA");
  bool any = !want || !*want;
  if ((any || !strcmp(want, "amx")) && avx512_ok(dev, f) && f->amx_bf16 && cpu_amx_request())
    return cpu_qgemm_fp8_amx(dev, a);
  if ((any || !strcmp(want, "vnni") || !strcmp(want, "avx2")) && dev->isa != BP_ISA_SCALAR && f->avx2)
    return cpu_qgemm_fp8_f32(dev, a);
  return BP_ERR_UNIMPLEMENTED;
}

bp_status_t cpu_fast_qgemm(cpu_device_t *dev, const bp_qgemm_args_t *a) {
  if (a->a.dtype == BP_FP8_E4M3 || a->a.dtype == BP_FP8_E5M2) return qgemm_fp8(dev, a);
  cpu_qgemm_path_t path = cpu_qgemm_path(dev);
  if (path == CPU_QGEMM_AMX || path == CPU_QGEMM_VNNI)
    return cpu_qgemm_blocked(dev, a, path == CPU_QGEMM_AMX);
  qgemm_rows_fn kern = path == CPU_QGEMM_AVX2 ? cpu_qgemm_avx2_rows : NULL;
  /* a per-batch b would pack per batch: the reference runs it */
  if (!kern || a->b.rank != 2) return BP_ERR_UNIMPLEMENTED;
  cpu_qb_pack_t p = {0};
  bp_status_t st = BP_OK;
  if (!pack_b(&a->b, a->a.dtype == BP_U8, &p)) {
    st = BP_ERR_OUT_OF_MEMORY;
  } else {
    const bp_plugin_tensor_t *A = &a->a;
    int64_t rows = A->shape[A->rank - 2] * (A->rank == 3 ? A->shape[0] : 1);
    qgemm_job_t job = {a, &p, kern, BP_OK};
    int64_t work = 4 * p.kp * p.n;
    cpu_pool_run(dev->pool, (rows + 3) / 4, work >= (1 << 20) ? 1 : (1 << 20) / (work ? work : 1),
                 qgemm_task, &job);
    st = (bp_status_t)job.status;
  }
  free(p.b);
  free(p.colsum);
  return st;
}
