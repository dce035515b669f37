/*
 * model_args.h — reading the model ops' arguments (ABI 1.5), shared by the
 * reference (ref/) and the fast paths (fast/model/), which link apart.
 */
#ifndef BACKPLANE_CPU_MODEL_ARGS_H
#define BACKPLANE_CPU_MODEL_ARGS_H

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

/* The value a one-element tensor of dt holds for v (the scalar of binary
 * with a scalar is converted to a's dtype first). */
static inline double cpu_scalar_as(bp_dtype_t dt, double v) {
  unsigned char one[8];
  cpu_store(one, dt, 0, v);
  return cpu_load(one, dt, 0);
}

/* Token (b, s)'s RoPE position: positions[b, s], or pos_offset + s. */
static inline int64_t cpu_rope_position(const bp_rope_args_t *a, int64_t b, int64_t s) {
  const bp_plugin_tensor_t *p = &a->positions;
  if (p->rank == 0) return a->pos_offset + s;
  int64_t off = b * p->strides[0] + s * p->strides[1];
  const void *base = cpu_tensor_base(p);
  return p->dtype == BP_I64 ? ((const int64_t *)base)[off] : ((const int32_t *)base)[off];
}

#endif /* BACKPLANE_CPU_MODEL_ARGS_H */
