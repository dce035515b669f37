/*
 * ops_elementwise.c — unary and binary ops (kernels/glsl/eltwise.comp), and
 * the strided elementwise recorder that cast (ops_data.c) shares. On CPU
 * implementations rank-1 f32 runs read their operands through r32f texel
 * views (eltwise_f32_tex).
 */
#include <stdio.h>
#include <string.h>

#include "vkb.h"

/* Matches eltwise.comp's and cast.comp's parameter block. */
typedef struct eltwise_params {
  uint64_t y, a, b;
  int32_t n, rank, op, binary;
  int32_t shape[BP_MAX_RANK], sy[BP_MAX_RANK], sa[BP_MAX_RANK], sb[BP_MAX_RANK];
} eltwise_params_t;

/* A texel view of t's buffer from the 16-byte boundary at or below element
 * 0, covering count elements; *out_shift is element 0's index in it. */
static bp_status_t texel_view(vkb_stream_t *s, const bp_plugin_tensor_t *t, int64_t count,
                              VkBufferView *out_view, int32_t *out_shift) {
  vkb_alloc_t *al = vkb_ptr(t->ptr);
  uint64_t byte = al->offset + t->offset, base = byte & ~(uint64_t)15;
  *out_shift = (int32_t)((byte - base) / 4);
  VkBufferViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                               .buffer = al->block->buf,
                               .format = VK_FORMAT_R32_SFLOAT,
                               .offset = base,
                               .range = (byte - base) + (uint64_t)count * 4};
  return vkb_check(s->d->fn.vkCreateBufferView(s->d->dev, &vi, NULL, out_view),
                   "vkCreateBufferView");
}

/* f32 eltwise of rank 1 (contiguous or broadcast scalar operands) through
 * r32f texel views, on devices where the texel kernels run (lavapipe);
 * BP_ERR_UNSUPPORTED, nothing recorded, otherwise. */
static bp_status_t eltwise_texel(vkb_stream_t *s, eltwise_params_t *p, const vkb_nd_t *nd,
                                 const bp_plugin_tensor_t *y, const bp_plugin_tensor_t *a,
                                 const bp_plugin_tensor_t *b, const uint32_t *spec) {
  /* Below 1024 elements the per-lane loads cost less than creating the
   * three views. */
  if (y->dtype != BP_F32 || nd->rank != 1 || nd->n < 1024 || nd->strides[0][0] != 1 ||
      nd->strides[1][0] > 1 || (b && nd->strides[2][0] > 1) ||
      (uint64_t)nd->n + 4 > s->d->caps.max_texels || !vkb_texel_wanted(s->d) ||
      !vkb_kernel_present("eltwise_f32_tex"))
    return BP_ERR_UNSUPPORTED;
  const bp_plugin_tensor_t *t[3] = {y, a, b ? b : a};
  int32_t shift[3];
  VkBufferView v[3] = {VK_NULL_HANDLE, VK_NULL_HANDLE, VK_NULL_HANDLE};
  bp_status_t st = BP_OK;
  for (int i = 0; i < 3 && st == BP_OK; i++)
    st = texel_view(s, t[i], nd->strides[i][0] ? nd->n : 1, &v[i], &shift[i]);
  if (st == BP_OK) {
    p->sy[1] = shift[0], p->sa[1] = shift[1], p->sb[1] = shift[2];
    st = vkb_dispatch_views(s, "eltwise_f32_tex", spec, 2, p, sizeof *p, v, 3,
                            vkb_groups_1d(s->d, nd->n, 256), 1, 1);
  }
  for (int i = 0; i < 3; i++) /* after recording: see vkb_texel_release */
    if (v[i]) vkb_stream_release_view(s, v[i]);
  return st;
}

bp_status_t vkb_eltwise_record(vkb_stream_t *s, const char *kernel, int op,
                               const bp_plugin_tensor_t *y, const bp_plugin_tensor_t *a,
                               const bp_plugin_tensor_t *b) {
  const bp_plugin_tensor_t *ts[3] = {y, a, b ? b : a};
  vkb_nd_t nd;
  bp_status_t st = vkb_nd_make(&nd, y, ts, 3, kernel);
  if (st != BP_OK || nd.n == 0) return st;
  eltwise_params_t p = {.y = vkb_tensor_addr(y),
                        .a = vkb_tensor_addr(a),
                        .b = b ? vkb_tensor_addr(b) : 0,
                        .n = nd.n,
                        .rank = nd.rank,
                        .op = op,
                        .binary = b != NULL};
  memcpy(p.shape, nd.shape, sizeof p.shape);
  memcpy(p.sy, nd.strides[0], sizeof p.sy);
  memcpy(p.sa, nd.strides[1], sizeof p.sa);
  memcpy(p.sb, nd.strides[2], sizeof p.sb);
  /* eltwise: op and arity as specialization constants, so the driver
   * compiles only that op (eltwise.comp says why); cast has none. */
  uint32_t spec[2] = {(uint32_t)op, b != NULL};
  bool specialise = strncmp(kernel, "eltwise_", 8) == 0;
  if (specialise) {
    st = eltwise_texel(s, &p, &nd, y, a, b, spec);
    if (st != BP_ERR_UNSUPPORTED) return st;
  }
  return vkb_dispatch(s, kernel, specialise ? spec : NULL, specialise ? 2 : 0, &p, sizeof p,
                      vkb_groups_1d(s->d, nd.n, 256), 1, 1);
}

static bp_status_t unary_record(vkb_stream_t *s, const bp_unary_args_t *a) {
  char name[32];
  snprintf(name, sizeof name, "eltwise_%s", vkb_dtype_tag(a->y.dtype));
  return vkb_eltwise_record(s, name, (int)a->op, &a->y, &a->x, NULL);
}

bp_status_t vkb_op_unary(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                         const bp_unary_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, unary_record(s, a))
}

static bp_status_t binary_record(vkb_stream_t *s, const bp_binary_args_t *a) {
  char name[32];
  snprintf(name, sizeof name, "eltwise_%s", vkb_dtype_tag(a->y.dtype));
  return vkb_eltwise_record(s, name, (int)a->op, &a->y, &a->a, &a->b);
}

bp_status_t vkb_op_binary(bp_plugin_device_t *dev, bp_plugin_stream_t *stream,
                          const bp_binary_args_t *a) {
  VKB_ON_STREAM(dev, stream, s, binary_record(s, a))
}
