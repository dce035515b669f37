/*
 * fast/conv/conv2d_widen.c — bf16 conv2d on a CPU without AMX tiles (an
 * AVX2 or AVX-512 machine without AMX-BF16, or a device held below
 * AVX-512 by isa_max): x and w are widened to dense f32 copies (exact),
 * the f32 routes of conv2d.c run into a dense f32 y, and that is rounded
 * to bf16 (nearest even) into the caller's y, whatever its strides. The
 * sums run in f32, as on the AMX tiles; the reference (double sums) is
 * the only other way, and it is hundreds of times slower.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/conv/conv2d.h"
#include "plugins/cpu/fast/prepared.h"
#include "plugins/cpu/tensor.h"

/* t's shape as a dense f32 tensor over buf. */
static bp_plugin_tensor_t dense_f32(const bp_plugin_tensor_t *t, float *buf) {
  bp_plugin_tensor_t d = *t;
  d.ptr = (uint64_t)(uintptr_t)buf;
  d.offset = 0;
  d.dtype = BP_F32;
  d.strides[d.rank - 1] = 1;
  for (int k = d.rank - 2; k >= 0; k--) d.strides[k] = d.strides[k + 1] * d.shape[k + 1];
  return d;
}

/* y = x with the dtype conversion (bf16 <-> f32, 4-D): the vector cast
 * rows where their layouts allow, else element by element. */
static void convert(cpu_device_t *dev, const bp_plugin_tensor_t *y, const bp_plugin_tensor_t *x) {
  bp_copy_args_t c;
  memset(&c, 0, sizeof c);
  c.struct_size = sizeof c;
  c.x = *x, c.y = *y;
  if (cpu_fast_cast(dev, &c) != BP_OK) cpu_fast_conv_copy_elements(y, x);
}

bp_status_t cpu_fast_conv2d_widened(cpu_device_t *dev, const bp_conv2d_args_t *a) {
  int64_t nx = cpu_numel(&a->x), nw = cpu_numel(&a->w), ny = cpu_numel(&a->y);
  /* constant weights are widened once and kept (fast/prepared.h); the f32
   * routes may then keep their own forms of that copy, keyed on its
   * address, which lives as long as the copy does */
  bool fresh = false;
  cpu_prep_t *wide = cpu_fast_conv_prepared(a, 'F', NULL, 0, (size_t)nw * sizeof(float), &fresh);
  /* each copy on a 64-byte boundary, as the device's buffers are: the
   * pointwise route takes only planes on whole lines */
  int64_t xs = (nx + 15) / 16 * 16, ys = (ny + 15) / 16 * 16;
  void *mem = NULL;
  if (posix_memalign(&mem, 64, (size_t)(xs + ys + (wide ? 0 : nw)) * sizeof(float)) != 0) {
    if (wide) cpu_prep_release(wide, false);
    return BP_ERR_UNIMPLEMENTED;
  }
  float *buf = mem;
  bp_conv2d_args_t f = *a;
  f.x = dense_f32(&a->x, buf);
  f.y = dense_f32(&a->y, buf + xs);
  f.w = dense_f32(&a->w, wide ? cpu_prep_data(wide) : buf + xs + ys);
  /* a copy in this call's memory is nothing a later call may key on */
  if (!wide) f.w_const_id = 0;
  convert(dev, &f.x, &a->x);
  if (!wide || fresh) convert(dev, &f.w, &a->w);
  /* into the f32 y first, so a decline leaves the caller's y untouched */
  bp_status_t st = cpu_fast_conv2d(dev, &f);
  if (st == BP_OK) convert(dev, &a->y, &f.y);
  if (wide) cpu_prep_release(wide, true);
  free(buf);
  return st;
}
