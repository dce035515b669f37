/*
 * plugins/gpu/descriptor.c — the descriptor of backend-cuda.so and
 * backend-rocm.so, init/shutdown and the probe. What differs is how a
 * device is counted and what its record says (the driver's own queries,
 * version formats and reasons for claiming no ops): gpu_device_count and
 * gpu_device_describe in the vendor's device.c.
 */
#include <stdio.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

_Static_assert((int)BPK_F32 == (int)BP_F32 && (int)BPK_F16 == (int)BP_F16 &&
                   (int)BPK_BF16 == (int)BP_BF16 && (int)BPK_F64 == (int)BP_F64 &&
                   (int)BPK_I32 == (int)BP_I32 && (int)BPK_I64 == (int)BP_I64 &&
                   (int)BPK_U8 == (int)BP_U8,
               "kernel dtype codes follow bp_dtype_t");
_Static_assert(BPK_MAX_RANK == BP_MAX_RANK, "kernel rank limit");

const char *const gpu_module_name[BP_GPU_MOD_COUNT] = {
#define GPU__MOD_NAME(id, file) #file,
    BP_GPU_MODULES(GPU__MOD_NAME)
#undef GPU__MOD_NAME
};

static bp_status_t gpu_init(const bp_host_services_t *host) {
  gpu_host = host;
  return BP_OK;
}

static void gpu_shutdown(void) {
  gpu_blas_unload();
  gpu_driver_unload();
  gpu_host = NULL;
}

/* Peak: 2 flops (an FMA) per FP32 lane per clock; bandwidth: DDR, two
 * transfers per memory clock over the bus width. */
void gpu_describe_common(bp_device_info_t *info, char *bus, const char *uuid, int units,
                         int lanes_per_unit, bool integrated, double clock_khz, double mem_khz,
                         double bus_bits, const char *why) {
  if (bus) {
    for (char *c = bus; *c; c++)
      if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
    snprintf(info->identity, sizeof info->identity, "pci:%s", bus);
  }
  if (!info->identity[0] && uuid[0])
    snprintf(info->identity, sizeof info->identity, "uuid:%s", uuid);
  info->compute_units = (uint32_t)units;
  info->kind = integrated ? BP_DEVICE_INTEGRATED_GPU : BP_DEVICE_DISCRETE_GPU;
  info->peak_gflops = 2.0 * units * lanes_per_unit * clock_khz / 1e6;
  info->bandwidth_gbs = 2.0 * mem_khz * bus_bits / 8.0 / 1e6;
  /* A device the kernels cannot run on is still listed, claiming nothing,
   * so `bp devices` shows it and says why. */
  if (!why[0]) bp_gpu_fill_capabilities(info);
  if (!why[0]) gpu_model_claims(info);
  if (!why[0]) gpu_quant_claims(info);
}

static bp_status_t gpu_probe(bp_device_info_t *out_infos, uint32_t capacity, uint32_t *out_count) {
  *out_count = 0;
  bp_status_t st = gpu_driver_load();
  if (st != BP_OK) return st;
  int count = 0;
  st = gpu_device_count(&count);
  if (st != BP_OK) return st;
  for (int i = 0; i < count && (uint32_t)i < capacity; i++) {
    st = gpu_device_describe(i, &out_infos[i]);
    if (st != BP_OK) return st;
  }
  *out_count = (uint32_t)count;
  return BP_OK;
}

BP_PLUGIN_EXPORT const bp_plugin_descriptor_t bp_plugin_descriptor = {
    .magic = BP_PLUGIN_MAGIC,
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(bp_plugin_descriptor_t),
    .name = GPU_PLUGIN_NAME,
    .version = GPU_PLUGIN_VERSION,
    .description = GPU_PLUGIN_DESCRIPTION,
    .init = gpu_init,
    .shutdown = gpu_shutdown,
    .probe = gpu_probe,
    .device_open = gpu_device_open,
    .device_close = gpu_device_close,
    .device_synchronize = gpu_device_synchronize,
    .mem_alloc = gpu_mem_alloc,
    .mem_free = gpu_mem_free,
    .mem_write = gpu_mem_write,
    .mem_read = gpu_mem_read,
    .mem_copy = gpu_mem_copy,
    .stream_create = gpu_stream_create,
    .stream_destroy = gpu_stream_destroy,
    .stream_synchronize = gpu_stream_synchronize,
    .event_create = gpu_event_create,
    .event_destroy = gpu_event_destroy,
    .event_record = gpu_event_record,
    .stream_wait_event = gpu_stream_wait_event,
    .event_synchronize = gpu_event_synchronize,
    .event_elapsed = gpu_event_elapsed,
    /* ops: one per row of BP_OP_TABLE, in its order */
    .gemm = gpu_op_gemm,
    .gemv = gpu_op_gemv,
    .conv2d = gpu_op_conv2d,
    .pool2d = gpu_op_pool2d,
    .batch_norm = gpu_op_batch_norm,
    .layer_norm = gpu_op_layer_norm,
    .rms_norm = gpu_op_rms_norm,
    .softmax = gpu_op_softmax,
    .attention = gpu_op_attention,
    .adam = gpu_op_adam,
    .unary = gpu_op_unary,
    .binary = gpu_op_binary,
    .reduce = gpu_op_reduce,
    .fill = gpu_op_fill,
    .copy = gpu_op_copy,
    .cast = gpu_op_cast,
    .random = gpu_op_random,
    .kernel_create = gpu_kernel_create,
    .kernel_destroy = gpu_kernel_destroy,
    .kernel_launch = gpu_kernel_launch,
    .graph_begin = gpu_graph_begin,
    .graph_end = gpu_graph_end,
    .graph_launch = gpu_graph_launch,
    .graph_destroy = gpu_graph_destroy,
    GPU_VENDOR_DESCRIPTOR_ENTRIES
    /* ABI 1.5 */
    .gather = gpu_op_gather,
    .arange = gpu_op_arange,
    .binary_scalar = gpu_op_binary_scalar,
    .glu = gpu_op_glu,
    .rope = gpu_op_rope,
    .quantize = gpu_op_quantize,
    .dequantize = gpu_op_dequantize,
    .qgemm = gpu_op_qgemm,
    .qmatmul = gpu_op_qmatmul,
    .stream_native = gpu_stream_native,
};
