/*
 * descriptor.c — the one exported symbol of backend-vulkan.so, the plugin's
 * lifetime (init, shutdown) and probe; the device records come from
 * device.c.
 */
#include "vkb.h"
#include "vkb_model.h"
#include "vkb_quant.h"

static bp_status_t vkb_init(const bp_host_services_t *host) {
  vkb_host = host;
  return BP_OK;
}

static void vkb_shutdown(void) {
  vkb_global_release();
  vkb_host = NULL;
}

/* Devices are the physical devices with a compute queue, in the loader's
 * order, as device_open numbers them (device.c). */
static bp_status_t vkb_probe(bp_device_info_t *out_infos, uint32_t capacity, uint32_t *out_count) {
  *out_count = 0;
  vkb_global_t *g;
  bp_status_t st = vkb_global_get(&g);
  if (st != BP_OK) return st;
  uint32_t n = vkb_device_count(g);
  for (uint32_t i = 0; i < n && i < capacity; i++) vkb_device_describe(g, i, &out_infos[i]);
  *out_count = n;
  return BP_OK;
}

BP_PLUGIN_EXPORT const bp_plugin_descriptor_t bp_plugin_descriptor = {
    .magic = BP_PLUGIN_MAGIC,
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(bp_plugin_descriptor_t),
    .name = "vulkan",
    .version = "0.1.0",
    .description = "Vulkan compute through libvulkan.so.1 (GLSL kernels "
                   "embedded as SPIR-V)",
    .init = vkb_init,
    .shutdown = vkb_shutdown,
    .probe = vkb_probe,
    .device_open = vkb_device_open,
    .device_close = vkb_device_close,
    .device_synchronize = vkb_device_synchronize,
    .mem_alloc = vkb_mem_alloc,
    .mem_free = vkb_mem_free,
    .mem_write = vkb_mem_write,
    .mem_read = vkb_mem_read,
    .mem_copy = vkb_mem_copy,
    .stream_create = vkb_stream_create,
    .stream_destroy = vkb_stream_destroy,
    .stream_synchronize = vkb_stream_synchronize,
    .event_create = vkb_event_create,
    .event_destroy = vkb_event_destroy,
    .event_record = vkb_event_record,
    .stream_wait_event = vkb_stream_wait_event,
    .event_synchronize = vkb_event_synchronize,
    .event_elapsed = vkb_event_elapsed,
    /* Ops whose kernels are not written yet stay NULL: "unsupported". */
    .gemm = vkb_op_gemm,
    .gemv = vkb_op_gemv,
    .conv2d = vkb_op_conv2d,
    .pool2d = vkb_op_pool2d,
    .batch_norm = vkb_op_batch_norm,
    .layer_norm = vkb_op_layer_norm,
    .rms_norm = vkb_op_rms_norm,
    .softmax = vkb_op_softmax,
    .attention = vkb_op_attention,
    .adam = vkb_op_adam,
    .reduce = vkb_op_reduce,
    .unary = vkb_op_unary,
    .binary = vkb_op_binary,
    .fill = vkb_op_fill,
    .copy = vkb_op_copy,
    .cast = vkb_op_cast,
    .random = vkb_op_random,
    .kernel_create = vkb_kernel_create,
    .kernel_destroy = vkb_kernel_destroy,
    .kernel_launch = vkb_kernel_launch,
    /* fields below: ABI 1.2 */
    .graph_begin = vkb_graph_begin,
    .graph_end = vkb_graph_end,
    .graph_launch = vkb_graph_launch,
    .graph_destroy = vkb_graph_destroy,
    /* fields below: ABI 1.4 */
    .mem_map = vkb_mem_map,
    .mem_unmap = vkb_mem_unmap,
    /* fields below: ABI 1.5 */
    .gather = vkb_op_gather,
    .arange = vkb_op_arange,
    .binary_scalar = vkb_op_binary_scalar,
    .glu = vkb_op_glu,
    .rope = vkb_op_rope,
    .quantize = vkb_op_quantize,
    .dequantize = vkb_op_dequantize,
    .qgemm = vkb_op_qgemm,
    .qmatmul = vkb_op_qmatmul,
};
