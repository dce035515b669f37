/*
 * ops.h — helpers shared by the op files: strided index spaces that fit the
 * kernels' int32 arithmetic, grid sizes, dtype names and conversions.
 */
#ifndef BACKPLANE_VKB_OPS_H
#define BACKPLANE_VKB_OPS_H

#include "vkb.h"

/* An index space over `rank` dims walked by linear index, with the strides
 * of up to three tensors. Adjacent dims that are contiguous in every tensor
 * are merged, so a contiguous tensor becomes rank 1 and the kernels' index
 * loop stays short. Layout matches the kernels' parameter blocks. */
typedef struct vkb_nd {
  int32_t n, rank;
  int32_t shape[BP_MAX_RANK];
  int32_t strides[4][BP_MAX_RANK];
} vkb_nd_t;

/* Builds the index space of shape over tensors t[0..count); fails with
 * BP_ERR_UNSUPPORTED when an element count or offset exceeds int32, or a
 * stride is negative. */
bp_status_t vkb_nd_make(vkb_nd_t *nd, const bp_plugin_tensor_t *shape,
                        const bp_plugin_tensor_t *const *t, int count,
                        const char *op);

/* Workgroups for n items, 256 per group, capped: kernels loop over the rest.
 */
uint32_t vkb_groups_1d(vkb_device_t *d, int64_t n, uint32_t per_group);

/* Name used in kernel variants ("f32", "bf16"); NULL when no kernel has it.
 */
const char *vkb_dtype_tag(bp_dtype_t dt);
size_t vkb_dtype_size(bp_dtype_t dt);
/* The bit pattern of value stored as dt (one rounding, to nearest even;
 * integers: NaN 0, saturating). */
uint64_t vkb_dtype_bits(bp_dtype_t dt, double value);

/* Checks that a tensor's element offsets fit int32 for the kernels. */
bool vkb_fits_i32(const bp_plugin_tensor_t *t);

/* Locks the stream (or the default one), runs the recording, unlocks. */
#define VKB_ON_STREAM(dev, stream, s, body)                                    \
  vkb_device_t *d_ = (vkb_device_t *)(dev);                                    \
  vkb_stream_t *s = vkb_stream_or_default(d_, (stream));                       \
  pthread_mutex_lock(&s->lock);                                                \
  bp_status_t st_ = (body);                                                    \
  pthread_mutex_unlock(&s->lock);                                              \
  return st_;

#endif /* BACKPLANE_VKB_OPS_H */
