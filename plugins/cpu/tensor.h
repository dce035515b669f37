/*
 * tensor.h — walking bp_plugin_tensor_t views on the host.
 *
 * Device pointers of this plugin are host addresses, so a tensor's first
 * element is (char *)ptr + offset, and element (i0, ..., ir-1) lies
 * sum(i_d * strides[d]) elements further (strides may be 0 or negative).
 * The iterator walks up to CPU_ITER_MAX tensors of one logical shape in
 * row-major order, keeping each tensor's element offset up to date with
 * an odometer, so the inner loop does no division.
 */
#ifndef BACKPLANE_CPU_TENSOR_H
#define BACKPLANE_CPU_TENSOR_H

#include <stdint.h>
#include <string.h>

#include "plugin-api.h"

#define CPU_ITER_MAX 4

static inline void *cpu_tensor_base(const bp_plugin_tensor_t *t) {
  return (char *)(uintptr_t)t->ptr + t->offset;
}

static inline int64_t cpu_numel(const bp_plugin_tensor_t *t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++)
    n *= t->shape[d];
  return n;
}

/* A rank-3 view of the host memory at p (offset 0): shape (d0, d1, d2),
 * element strides (s0, s1, s2). For the routes that hand a part of their
 * work to another op as a view, and for tests and tools. */
static inline bp_plugin_tensor_t cpu_tensor_view3(const void *p, bp_dtype_t dtype, int64_t d0,
                                                  int64_t d1, int64_t d2, int64_t s0, int64_t s1,
                                                  int64_t s2) {
  bp_plugin_tensor_t t;
  memset(&t, 0, sizeof t);
  t.ptr = (uint64_t)(uintptr_t)p;
  t.dtype = dtype;
  t.rank = 3;
  t.shape[0] = d0, t.shape[1] = d1, t.shape[2] = d2;
  t.strides[0] = s0, t.strides[1] = s1, t.strides[2] = s2;
  return t;
}

/* True for rank 0 with no pointer, the ABI's "optional tensor absent". */
static inline int cpu_tensor_absent(const bp_plugin_tensor_t *t) {
  return t->rank == 0;
}

typedef struct cpu_iter {
  int32_t rank, count;
  int64_t shape[BP_MAX_RANK];
  int64_t strides[CPU_ITER_MAX][BP_MAX_RANK];
  int64_t idx[BP_MAX_RANK];
  int64_t off[CPU_ITER_MAX]; /* element offsets of the current position */
} cpu_iter_t;

/* Starts at row-major linear position `start` of `shape`, for `count`
 * tensors whose strides are given (each over the same shape). */
static inline void cpu_iter_init(cpu_iter_t *it, int32_t rank,
                                 const int64_t *shape, int32_t count,
                                 const bp_plugin_tensor_t *const *ts,
                                 int64_t start) {
  it->rank = rank;
  it->count = count;
  for (int32_t d = rank - 1; d >= 0; d--) {
    it->shape[d] = shape[d];
    it->idx[d] = shape[d] ? start % shape[d] : 0;
    start = shape[d] ? start / shape[d] : 0;
  }
  for (int32_t k = 0; k < count; k++) {
    it->off[k] = 0;
    for (int32_t d = 0; d < rank; d++) {
      it->strides[k][d] = ts[k]->strides[d];
      it->off[k] += it->idx[d] * ts[k]->strides[d];
    }
  }
}

/* Moves to the next position in row-major order. */
static inline void cpu_iter_next(cpu_iter_t *it) {
  for (int32_t d = it->rank - 1; d >= 0; d--) {
    int32_t k;
    if (++it->idx[d] < it->shape[d]) {
      for (k = 0; k < it->count; k++)
        it->off[k] += it->strides[k][d];
      return;
    }
    it->idx[d] = 0;
    for (k = 0; k < it->count; k++)
      it->off[k] -= (it->shape[d] - 1) * it->strides[k][d];
  }
}

/* Element offset of row-major position `lin` in one tensor (no iterator;
 * used where rows are addressed independently, e.g. per-thread chunks). */
static inline int64_t cpu_offset_of(const bp_plugin_tensor_t *t,
                                    const int64_t *shape, int32_t rank,
                                    int64_t lin) {
  int64_t off = 0;
  for (int32_t d = rank - 1; d >= 0; d--) {
    if (shape[d] == 0)
      return 0;
    off += (lin % shape[d]) * t->strides[d];
    lin /= shape[d];
  }
  return off;
}

#endif /* BACKPLANE_CPU_TENSOR_H */
