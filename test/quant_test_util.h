/*
 * test/quant_test_util.h — the device, buffer and tensor helpers that the
 * quantized-op tests share (test_qgemm_fp8, test_qgemm_fp8_gpu,
 * test_quant_u8): a device with its stream, a buffer filled
 * from host bytes (or 0xAB where the op must write), a tensor view over
 * it, and a read-back, each failing the cmocka test on any error.
 * Include after <cmocka.h> and core/backplane.h.
 */
#ifndef BP_TEST_QUANT_TEST_UTIL_H
#define BP_TEST_QUANT_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct dev {
  bp_device_t *d;
  bp_stream_t *s;
} dev_t_;

static inline dev_t_ open_dev(bp_context_t *ctx, const char *name, bool no_fallback) {
  dev_t_ v = {0};
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = no_fallback};
  assert_int_equal(bp_device_open(ctx, name, &cfg, &v.d), BP_OK);
  assert_int_equal(bp_stream_create(v.d, &v.s), BP_OK);
  return v;
}

static inline void close_dev(dev_t_ v) {
  bp_stream_destroy(v.s);
  bp_device_close(v.d);
}

/* bytes of device memory holding src, or 0xAB bytes when src is NULL. */
static inline bp_buffer_t *buf(bp_device_t *d, const void *src, uint64_t bytes) {
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(d, bytes, &b), BP_OK);
  void *fill = malloc(bytes);
  if (src)
    memcpy(fill, src, bytes);
  else
    memset(fill, 0xAB, bytes);
  assert_int_equal(bp_buffer_write(b, 0, fill, bytes), BP_OK);
  free(fill);
  return b;
}

static inline bp_tensor_t ten(bp_buffer_t *b, bp_dtype_t dt, int rank, const int64_t *shape,
                              const int64_t *strides) {
  bp_tensor_t t;
  assert_int_equal(bp_tensor_init(b, 0, dt, rank, shape, strides, &t), BP_OK);
  return t;
}

static inline void read_into(bp_buffer_t *b, void *dst, uint64_t bytes) {
  assert_int_equal(bp_buffer_read(b, 0, dst, bytes), BP_OK);
}

#endif /* BP_TEST_QUANT_TEST_UTIL_H */
