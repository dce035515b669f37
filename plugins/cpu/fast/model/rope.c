/*
 * fast/model/rope.c — rotary position embedding on the vector row kernel
 * (fast/vec.h rope_row). Work is split by token (b, s): each token's
 * cosines and sines are computed once, in double as the reference does,
 * rounded to f32 and shared by all its heads; each head's row is widened
 * to f32 when f16 / bf16, rotated, and narrowed. The inverse frequencies
 * are computed once per call. Covered: f32, f16, bf16
 * with unit feature stride and head_dim up to ROPE_MAX_DIM; the rest runs
 * the reference.
 */
#include <math.h>
#include <string.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/vec.h"
#include "plugins/cpu/model_args.h"
#include "plugins/cpu/tensor.h"

#define ROPE_MAX_DIM 1024

typedef struct rope_job {
  const cpu_fast_vec_kernels_t *vk;
  const bp_rope_args_t *a;
  double freq[ROPE_MAX_DIM / 2]; /* theta_base^(-2i / rotary_dim), once per call */
} rope_job_t;

/* Token (b, s)'s tables in rope_row's form. */
static void rope_tables(const rope_job_t *j, int64_t b, int64_t s, float *c, float *sn) {
  const bp_rope_args_t *a = j->a;
  double pos = (double)cpu_rope_position(a, b, s);
  int64_t half = a->rotary_dim / 2;
  for (int64_t i = 0; i < half; i++) {
    double ang = pos * j->freq[i];
    float cv = (float)cos(ang), sv = (float)sin(ang);
    if (a->mode == BP_ROPE_HALF) {
      c[i] = cv;
      sn[i] = sv;
    } else {
      c[2 * i] = c[2 * i + 1] = cv;
      sn[2 * i] = -sv;
      sn[2 * i + 1] = sv;
    }
  }
}

/* One head's row: rotated features, then the rest copied. */
static void rope_head(const rope_job_t *j, const char *x, char *y, const float *c, const float *sn,
                      float *buf) {
  const bp_rope_args_t *a = j->a;
  int64_t D = a->x.shape[3], rd = a->rotary_dim;
  bp_dtype_t dt = a->x.dtype;
  if (dt == BP_F32) {
    j->vk->rope_row((const float *)(const void *)x, (float *)(void *)y, c, sn, rd,
                    a->mode == BP_ROPE_INTERLEAVED);
    if (x != y && D > rd) memcpy(y + rd * 4, x + rd * 4, (size_t)(D - rd) * 4);
    return;
  }
  const float *px = cpu_fast_widen(j->vk, dt, x, rd, buf);
  j->vk->rope_row(px, buf, c, sn, rd, a->mode == BP_ROPE_INTERLEAVED);
  cpu_fast_narrow(j->vk, dt, buf, y, rd);
  if (x != y && D > rd) memcpy(y + rd * 2, x + rd * 2, (size_t)(D - rd) * 2);
}

static void rope_tokens(void *ctx, int64_t t0, int64_t t1) {
  const rope_job_t *j = ctx;
  const bp_rope_args_t *a = j->a;
  float c[ROPE_MAX_DIM], sn[ROPE_MAX_DIM], buf[ROPE_MAX_DIM];
  int64_t S = a->x.shape[1], H = a->x.shape[2];
  size_t es = cpu_dtype_size(a->x.dtype);
  const char *px = cpu_tensor_base(&a->x);
  char *py = cpu_tensor_base(&a->y);
  for (int64_t t = t0; t < t1; t++) {
    int64_t b = t / S, s = t % S;
    rope_tables(j, b, s, c, sn);
    for (int64_t h = 0; h < H; h++) {
      int64_t xo = b * a->x.strides[0] + s * a->x.strides[1] + h * a->x.strides[2];
      int64_t yo = b * a->y.strides[0] + s * a->y.strides[1] + h * a->y.strides[2];
      rope_head(j, px + xo * (int64_t)es, py + yo * (int64_t)es, c, sn, buf);
    }
  }
}

bp_status_t cpu_fast_rope(cpu_device_t *dev, const bp_rope_args_t *a) {
  rope_job_t j = {cpu_fast_vec_pick(dev), a, {0}};
  if (!j.vk || !cpu_fast_float_dtype(a->x.dtype) || a->y.dtype != a->x.dtype ||
      a->x.shape[3] > ROPE_MAX_DIM || a->x.strides[3] != 1 || a->y.strides[3] != 1)
    return BP_ERR_UNIMPLEMENTED;
  /* the core lets y overlap x only as the identical view (in place),
   * which rope_row allows */
  for (int64_t i = 0; i < a->rotary_dim / 2; i++)
    j.freq[i] = pow(a->theta_base, -2.0 * (double)i / a->rotary_dim);
  int64_t tokens = a->x.shape[0] * a->x.shape[1];
  cpu_fast_row_ranges_run(dev, tokens, a->x.shape[2] * a->x.shape[3], rope_tokens, &j);
  return BP_OK;
}
