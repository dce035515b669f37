/*
 * bench_share.c — the "% of GEMM" column of bp bench: each op's throughput
 * as a share of the same device's own yardsticks, measured on that device
 * in the same run. Compute-bound ops are held to the device's f32 GEMM
 * (the square case below, the op every backend tunes first); the
 * matrix-vector product (a GEMM with one row or one column of C) moves
 * each element of the matrix once and does two flops on it, so it is held
 * to the device's copy bandwidth instead (a device-to-device bp_buffer_copy,
 * read + write bytes, as the stream loop counts them).
 */
#include <string.h>

#include "bench.h"

/* The reference GEMM's size, and the copy's bytes. */
#define SHARE_GEMM_N 1024
#define SHARE_GEMM_N_QUICK 512
#define SHARE_COPY_BYTES (64u << 20)
#define SHARE_COPY_BYTES_QUICK (16u << 20)

static double gemm_gflops(bp_device_t *dev, int64_t n, const bench_timing_t *t) {
  bpt_case_t c = {.op = BPT_GEMM, .dtype = BP_F32, .batch = 1, .m = n, .n = n, .k = n};
  bpt_instance_t inst;
  if (bpt_instance_create(&c, dev, 7u, &inst) != BP_OK) return -1;
  double ms = -1;
  bp_status_t st =
      bpt_instance_time(&inst, t->warmup, t->min_reps, t->max_reps, t->min_seconds, &ms);
  bpt_instance_destroy(&inst);
  return st == BP_OK && ms > 0 ? bpt_case_flops(&c) / (ms * 1e6) : -1;
}

/* Read + write GB/s of one device-to-device copy: the best of several. */
static double copy_gbs(bp_device_t *dev, uint64_t bytes) {
  bp_buffer_t *a = NULL, *b = NULL;
  double best = -1;
  if (bp_buffer_alloc(dev, bytes, &a) == BP_OK && bp_buffer_alloc(dev, bytes, &b) == BP_OK &&
      bp_buffer_copy(b, 0, a, 0, bytes) == BP_OK) { /* the warm-up touches every page */
    for (int rep = 0; rep < 5; rep++) {
      double t0 = bpt_now();
      if (bp_buffer_copy(b, 0, a, 0, bytes) != BP_OK || bp_device_synchronize(dev) != BP_OK) break;
      double s = bpt_now() - t0;
      if (s > 0 && (best < 0 || 2.0 * bytes / (s * 1e9) > best)) best = 2.0 * bytes / (s * 1e9);
    }
  }
  if (b) bp_buffer_free(b);
  if (a) bp_buffer_free(a);
  return best;
}

void bench_share_measure(bp_device_t *dev, bool quick, const bench_timing_t *t,
                         bench_share_t *out) {
  memset(out, 0, sizeof *out);
  out->gemm_n = quick ? SHARE_GEMM_N_QUICK : SHARE_GEMM_N;
  out->gemm_gflops = gemm_gflops(dev, out->gemm_n, t);
  out->copy_gbs = copy_gbs(dev, quick ? SHARE_COPY_BYTES_QUICK : SHARE_COPY_BYTES);
}

/* A GEMM with one row or one column of C: matrix-vector, bandwidth-bound. */
static bool is_matvec(const bpt_case_t *c) {
  return c->op == BPT_GEMM && (c->m == 1 || c->n == 1);
}

void bench_share_apply(const bench_share_t *s, bench_result_t *r) {
  r->pct_gemm = -1;
  r->share_bw = false;
  if (!r->ran || r->ms <= 0) return;
  const bpt_case_t *c = &r->c;
  if (is_matvec(c)) {
    double es = (double)bp_dtype_size(c->dtype);
    double bytes =
        ((double)c->m * c->k + (double)c->k * c->n + (double)c->m * c->n) * es * (double)c->batch;
    r->share_bw = true;
    if (s->copy_gbs > 0) r->pct_gemm = 100 * bytes / (r->ms * 1e6) / s->copy_gbs;
  } else if (r->gflops > 0 && s->gemm_gflops > 0) {
    r->pct_gemm = 100 * r->gflops / s->gemm_gflops;
  }
}

void bench_share_print(const bench_share_t *s) {
  printf("%% of GEMM: against this device's f32 GEMM %lld^3, %.1f GFLOP/s; matrix-vector"
         " products (%%bw) against its copy bandwidth, %.1f GB/s (read + write)\n",
         (long long)s->gemm_n, s->gemm_gflops, s->copy_gbs);
}
