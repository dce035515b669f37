/*
 * plugin.h — the glue between descriptor.c and the files that implement the
 * descriptor's entry points (device.c, memory.c, stream.c, ops.c), plus the
 * host services every file may use. Private to backend-cpu.so.
 */
#ifndef BACKPLANE_CPU_PLUGIN_H
#define BACKPLANE_CPU_PLUGIN_H

#include "cpu.h"

#define CPU_PLUGIN_NAME "cpu"
#define CPU_PLUGIN_VERSION "0.1.0"

/* Device indices reported by probe. */
enum { CPU_DEVICE_FAST = 0, CPU_DEVICE_REF = 1, CPU_DEVICE_COUNT = 2 };

/* The host services given to init, copied so that fields a smaller (older)
 * host did not provide read as NULL. Valid between init and shutdown. */
CPU_HIDDEN extern bp_host_services_t cpu_host;

/* Sets the calling thread's error message, when the host lets us. */
#define cpu_set_error(...)                                                     \
  do {                                                                         \
    if (cpu_host.set_error)                                                    \
      cpu_host.set_error(__VA_ARGS__);                                         \
  } while (0)

#define cpu_log(level, ...)                                                    \
  do {                                                                         \
    if (cpu_host.log)                                                          \
      cpu_host.log((level), CPU_PLUGIN_NAME, __VA_ARGS__);                     \
  } while (0)

static inline cpu_device_t *cpu_device(bp_plugin_device_t *d) {
  return (cpu_device_t *)(void *)d;
}

/* kernels.c: custom kernels through libffi */
CPU_HIDDEN bp_status_t cpu_kernel_create(bp_plugin_device_t *device, const bp_kernel_source_t *src,
                                         bp_plugin_kernel_t **out_kernel);
CPU_HIDDEN void cpu_kernel_destroy(bp_plugin_device_t *device, bp_plugin_kernel_t *kernel);
CPU_HIDDEN bp_status_t cpu_kernel_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                         bp_plugin_kernel_t *kernel, const bp_launch_args_t *args);

/* device.c */
CPU_HIDDEN bp_status_t cpu_device_open(uint32_t index,
                                       const bp_plugin_device_config_t *config,
                                       bp_plugin_device_t **out_device);
CPU_HIDDEN void cpu_device_close(bp_plugin_device_t *device);
CPU_HIDDEN bp_status_t cpu_device_synchronize(bp_plugin_device_t *device);

/* memory.c */
CPU_HIDDEN bp_status_t cpu_mem_alloc(bp_plugin_device_t *device, uint64_t size,
                                     uint64_t *out_ptr);
CPU_HIDDEN void cpu_mem_free(bp_plugin_device_t *device, uint64_t ptr);
CPU_HIDDEN bp_status_t cpu_mem_write(bp_plugin_device_t *device,
                                     bp_plugin_stream_t *stream, uint64_t dst,
                                     uint64_t dst_offset, const void *src,
                                     uint64_t size);
CPU_HIDDEN bp_status_t cpu_mem_read(bp_plugin_device_t *device,
                                    bp_plugin_stream_t *stream, void *dst,
                                    uint64_t src, uint64_t src_offset,
                                    uint64_t size);
CPU_HIDDEN bp_status_t cpu_mem_copy(bp_plugin_device_t *device,
                                    bp_plugin_stream_t *stream, uint64_t dst,
                                    uint64_t dst_offset, uint64_t src,
                                    uint64_t src_offset, uint64_t size);

/* stream.c */
CPU_HIDDEN bp_status_t cpu_stream_create(bp_plugin_device_t *device,
                                         bp_plugin_stream_t **out_stream);
CPU_HIDDEN void cpu_stream_destroy(bp_plugin_device_t *device,
                                   bp_plugin_stream_t *stream);
CPU_HIDDEN bp_status_t cpu_stream_synchronize(bp_plugin_device_t *device,
                                              bp_plugin_stream_t *stream);
CPU_HIDDEN bp_status_t cpu_event_create(bp_plugin_device_t *device,
                                        bp_plugin_event_t **out_event);
CPU_HIDDEN void cpu_event_destroy(bp_plugin_device_t *device,
                                  bp_plugin_event_t *event);
CPU_HIDDEN bp_status_t cpu_event_record(bp_plugin_device_t *device,
                                        bp_plugin_event_t *event,
                                        bp_plugin_stream_t *stream);
CPU_HIDDEN bp_status_t cpu_stream_wait_event(bp_plugin_device_t *device,
                                             bp_plugin_stream_t *stream,
                                             bp_plugin_event_t *event);
CPU_HIDDEN bp_status_t cpu_event_synchronize(bp_plugin_device_t *device,
                                             bp_plugin_event_t *event);
CPU_HIDDEN bp_status_t cpu_event_elapsed(bp_plugin_device_t *device,
                                         bp_plugin_event_t *start,
                                         bp_plugin_event_t *end,
                                         double *out_ms);

/* ops.c: the ABI entry points, cpu_op_<name>. */
#define CPU__DECLARE_OP(E, name, args_t, ...)                                  \
  CPU_HIDDEN bp_status_t cpu_op_##name(bp_plugin_device_t *device,             \
                                       bp_plugin_stream_t *stream,             \
                                       const args_t *args);
BP_OP_TABLE(CPU__DECLARE_OP)
BP_OP_TABLE_MODEL(CPU__DECLARE_OP)
BP_OP_TABLE_QUANT(CPU__DECLARE_OP)
#undef CPU__DECLARE_OP

#endif /* BACKPLANE_CPU_PLUGIN_H */
