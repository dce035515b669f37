/*
 * descriptor.c — the one exported symbol, the plugin's lifetime (init,
 * shutdown) and probe; the device records it returns and the capability
 * table come from device.c.
 */
#include "ocl.h"
#include "ocl_model.h"
#include "ocl_quant.h"

static bp_status_t ocl_init(const bp_host_services_t *host) {
  ocl_host = host;
  return BP_OK; /* the driver is opened lazily, at probe */
}

static void ocl_shutdown(void) {
  ocl_api_unload();
}

/* Devices are numbered across platforms in the ICD loader's order, as
 * device_open numbers them (device.c). */
static bp_status_t ocl_probe(bp_device_info_t *out_infos, uint32_t capacity, uint32_t *out_count) {
  *out_count = 0;
  bp_status_t st = ocl_api_load();
  if (st != BP_OK) return st;
  cl_platform_id plats[OCL_MAX_DEVICES];
  cl_device_id ids[OCL_MAX_DEVICES];
  uint32_t n = 0;
  if ((st = ocl_enumerate(plats, ids, OCL_MAX_DEVICES, &n)) != BP_OK) return st;
  if (n > OCL_MAX_DEVICES) n = OCL_MAX_DEVICES;
  if (n == 0) {
    ocl_host->set_error("OpenCL ICD loader found but it lists no device "
                        "(no ICD under /etc/OpenCL/vendors; Debian's "
                        "pocl-opencl-icd gives a CPU one)");
    return BP_ERR_UNAVAILABLE;
  }
  for (uint32_t i = 0; i < n && i < capacity && out_infos; i++)
    ocl_device_describe(plats[i], ids[i], &out_infos[i]);
  *out_count = n;
  return BP_OK;
}

BP_PLUGIN_EXPORT const bp_plugin_descriptor_t bp_plugin_descriptor = {
    .magic = BP_PLUGIN_MAGIC,
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(bp_plugin_descriptor_t),
    .name = OCL_NAME,
    .version = OCL_VERSION,
    .description = "OpenCL 1.2 devices through the ICD loader (libOpenCL.so.1)",
    .init = ocl_init,
    .shutdown = ocl_shutdown,
    .probe = ocl_probe,
    .device_open = ocl_device_open,
    .device_close = ocl_device_close,
    .device_synchronize = ocl_device_synchronize,
    .mem_alloc = ocl_mem_alloc,
    .mem_free = ocl_mem_free,
    .mem_write = ocl_mem_write,
    .mem_read = ocl_mem_read,
    .mem_copy = ocl_mem_copy,
    .stream_create = ocl_stream_create,
    .stream_destroy = ocl_stream_destroy,
    .stream_synchronize = ocl_stream_synchronize,
    .event_create = ocl_event_create,
    .event_destroy = ocl_event_destroy,
    .event_record = ocl_event_record,
    .stream_wait_event = ocl_stream_wait_event,
    .event_synchronize = ocl_event_synchronize,
    .event_elapsed = ocl_event_elapsed,
#define OCL__SET(E, op, args_t, ...) .op = ocl_op_##op,
    BP_OP_TABLE(OCL__SET)
#undef OCL__SET
        /* ABI 1.1 */
        .kernel_create = ocl_kernel_create,
    .kernel_destroy = ocl_kernel_destroy,
    .kernel_launch = ocl_kernel_launch,
    /* ABI 1.2 */
    .graph_begin = ocl_graph_begin,
    .graph_end = ocl_graph_end,
    .graph_launch = ocl_graph_launch,
    .graph_destroy = ocl_graph_destroy,
    /* ABI 1.4 */
    .mem_map = ocl_mem_map,
    .mem_unmap = ocl_mem_unmap,
/* ABI 1.5 */
#define OCL__SET_MODEL(E, op, args_t, ...) .op = ocl_op_##op,
    BP_OP_TABLE_MODEL(OCL__SET_MODEL)
#undef OCL__SET_MODEL
#define OCL__SET_QUANT(E, op, args_t, ...) .op = ocl_op_##op,
    BP_OP_TABLE_QUANT(OCL__SET_QUANT)
#undef OCL__SET_QUANT
};
