/*
 * ops_random.c — bp_random: the Philox4x32-10 stream of
 * kernels/common/bp_philox.h, bit for bit (kernels/glsl/random.comp).
 */
#include <stdio.h>
#include <string.h>

#include "ops.h"

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
  if (st != BP_OK || nd.n == 0)
    return st;
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
  return vkb_dispatch(s, name, NULL, 0, &p, sizeof p,
                      vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

bp_status_t vkb_op_random(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_random_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, random_record(s, a))
}
