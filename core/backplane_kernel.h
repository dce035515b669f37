/*
 * backplane_kernel.h — custom kernels in the form a device's backend takes,
 * part of the public API (included by backplane.h; include backplane.h).
 */
#ifndef BACKPLANE_KERNEL_H
#define BACKPLANE_KERNEL_H

#include "backplane.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Custom kernels, in the form the device's backend takes (see
 * bp_kernel_format_t in plugin-api.h and docs/custom-kernels.md).
 */

/* One launch argument: a buffer (with a byte offset) or a scalar. */
typedef struct bp_kernel_arg {
  bp_kernel_arg_kind_t kind;
  bp_buffer_t *buffer; /* BP_ARG_BUFFER */
  uint64_t offset;     /* BP_ARG_BUFFER: bytes into the buffer */
  union {
    int32_t i32; uint32_t u32; int64_t i64; uint64_t u64; float f32; double f64;
  } value;
} bp_kernel_arg_t;

/* Compiles or loads a kernel for device. signature lists the kinds of the
 * arg_count arguments every launch must pass. The caller owns the kernel.
 * BP_ERR_UNSUPPORTED when the device takes no kernels of this format. */
BP_API bp_status_t bp_kernel_create(bp_device_t *device,
                                    bp_kernel_format_t format,
                                    const void *code, uint64_t code_size,
                                    const char *entry, const char *options,
                                    uint32_t arg_count,
                                    const bp_kernel_arg_kind_t *signature,
                                    bp_kernel_t **out_kernel);
/* Launches grid[0..2] blocks of block[0..2] invocations on stream; args are
 * checked against the signature (kinds, live buffers of the stream's device,
 * offsets inside them). */
BP_API bp_status_t bp_kernel_launch(bp_stream_t *stream, bp_kernel_t *kernel,
                                    const uint32_t grid[3],
                                    const uint32_t block[3],
                                    uint32_t shared_bytes, uint32_t arg_count,
                                    const bp_kernel_arg_t *args);
BP_API void bp_kernel_destroy(bp_kernel_t *kernel);

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_KERNEL_H */
