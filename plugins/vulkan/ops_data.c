/*
 * ops_data.c — fill and copy (kernels/glsl/copy.comp, by element width),
 * cast (kernels/glsl/cast.comp, through the elementwise recorder of
 * ops_elementwise.c) and random: the Philox4x32-10 stream of
 * kernels/common/bp_philox.h, bit for bit (kernels/glsl/random.comp).
 */
#include <stdio.h>
#include <string.h>

#include "vkb.h"

/* ---- fill and copy ---------------------------------------------------------*/

/* Matches copy.comp's parameter block. */
typedef struct copy_params {
  uint64_t y, x;
  int32_t n, rank;
  uint32_t lo, hi;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK], sx[BP_MAX_RANK];
} copy_params_t;

static bp_status_t copy_record(vkb_stream_t *s, const bp_plugin_tensor_t *y,
                               const bp_plugin_tensor_t *x, uint64_t bits, const char *op) {
  const bp_plugin_tensor_t *ts[2] = {y, x ? x : y};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, y, ts, 2, op);
  if (st != BP_OK || nd.n == 0) return st;
  copy_params_t p = {.y = vkb_tensor_addr(y),
                     .x = x ? vkb_tensor_addr(x) : 0,
                     .n = nd.n,
                     .rank = nd.rank,
                     .lo = (uint32_t)bits,
                     .hi = (uint32_t)(bits >> 32)};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  memcpy(p.sx, nd.strides[1], sizeof p.sx);
  char name[16];
  snprintf(name, sizeof name, "copy_b%zu", 8 * vkb_dtype_size(y->dtype));
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

bp_status_t vkb_op_fill(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                        const bp_fill_args_t *a){
    VKB_ON_STREAM(dev, stream, s,
                  copy_record(s, &a->y, NULL, vkb_dtype_bits(a->y.dtype, a->value), "fill"))}

bp_status_t
    vkb_op_copy(bp_plugin_device_t *dev, bp_plugin_stream_t *stream, const bp_copy_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, copy_record(s, &a->y, &a->x, 0, "copy"))
}
/* ---- cast ------------------------------------------------------------------*/

static bp_status_t cast_record(vkb_stream_t *s, const bp_copy_args_t *a) {
  char name[32];
  snprintf(name, sizeof name, "cast_%s_%s", vkb_dtype_tag(a->x.dtype), vkb_dtype_tag(a->y.dtype));
  /* cast.comp reads BP_CAST_SATURATE (fp8 targets) as its op */
  int sat = (a->cast_flags & BP_CAST_SATURATE) != 0;
  return vkb_eltwise_record(s, name, sat, &a->y, &a->x, NULL);
}

bp_status_t vkb_op_cast(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                        const bp_copy_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, cast_record(s, a))
}

/* ---- random ----------------------------------------------------------------*/

/* Matches random.comp's parameter block. */
typedef struct random_params {
  uint64_t y, seed, offset;
  uint64_t a_bits, b_bits;
  float fa, fb;
  int32_t n, rank, normal, pad;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK];
} random_params_t;

static bp_status_t random_record(vkb_stream_t *s, const bp_random_args_t *a) {
  const bp_plugin_tensor_t *ts[1] = {&a->y};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, &a->y, ts, 1, "random");
  if (st != BP_OK || nd.n == 0) return st;
  /* (float)a and (float)b are rounded here, once, as the CPU does. */
  random_params_t p = {.y = vkb_tensor_addr(&a->y),
                       .seed = a->seed,
                       .offset = a->offset,
                       .fa = (float)a->a,
                       .fb = (float)a->b,
                       .n = nd.n,
                       .rank = nd.rank,
                       .normal = a->dist == BP_RANDOM_NORMAL};
  memcpy(&p.a_bits, &a->a, 8);
  memcpy(&p.b_bits, &a->b, 8);
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  char name[32];
  snprintf(name, sizeof name, "random_%s", vkb_dtype_tag(a->y.dtype));
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p, vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

bp_status_t vkb_op_random(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_random_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, random_record(s, a))
}
