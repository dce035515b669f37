/*
 * test/plugin_tensor.h — a bp_plugin_tensor_t over host memory, for the
 * tests that call the CPU plugin's fast paths directly (no buffer, offset
 * zero): shape and strides in elements, as the plugin ABI has them.
 */
#ifndef BP_TEST_PLUGIN_TENSOR_H
#define BP_TEST_PLUGIN_TENSOR_H

#include <stdint.h>
#include <string.h>

#include "plugin-api.h"

static inline bp_plugin_tensor_t plugin_tensor(void *p, bp_dtype_t dt, int rank,
                                               const int64_t *shape, const int64_t *strides) {
  bp_plugin_tensor_t t;
  memset(&t, 0, sizeof t);
  t.ptr = (uint64_t)(uintptr_t)p;
  t.dtype = dt;
  t.rank = rank;
  for (int d = 0; d < rank; d++) t.shape[d] = shape[d], t.strides[d] = strides[d];
  return t;
}

#endif /* BP_TEST_PLUGIN_TENSOR_H */
