/* test_opencl_util.h — tensor descriptor helpers for the OpenCL tests. */
#ifndef BP_TEST_OPENCL_UTIL_H
#define BP_TEST_OPENCL_UTIL_H
#include <string.h>

#include "plugin-api.h"

static inline bp_plugin_tensor_t tensor1(uint64_t p, uint64_t off,
                                         bp_dtype_t dt, int64_t n, int64_t s) {
  bp_plugin_tensor_t t;
  memset(&t, 0, sizeof t);
  t.ptr = p, t.offset = off, t.dtype = dt, t.rank = 1;
  t.shape[0] = n, t.strides[0] = s;
  return t;
}

static inline bp_plugin_tensor_t tensor2(uint64_t p, uint64_t off,
                                         bp_dtype_t dt, int64_t m, int64_t n,
                                         int64_t sm, int64_t sn) {
  bp_plugin_tensor_t t = tensor1(p, off, dt, m, sm);
  t.rank = 2;
  t.shape[1] = n, t.strides[1] = sn;
  return t;
}

static inline bp_plugin_tensor_t tensor3(uint64_t p, uint64_t off,
                                         bp_dtype_t dt, int64_t b, int64_t m,
                                         int64_t n, int64_t sb, int64_t sm,
                                         int64_t sn) {
  bp_plugin_tensor_t t = tensor2(p, off, dt, b, m, sb, sm);
  t.rank = 3;
  t.shape[2] = n, t.strides[2] = sn;
  return t;
}
#endif
