/*
 * plugin.c — the descriptor of backend-cuda.so, init/shutdown and probe.
 */
#include <stdio.h>
#include <string.h>

#include "plugins/cuda/cuda_plugin.h"

_Static_assert((int)BPK_F32 == (int)BP_F32 && (int)BPK_F16 == (int)BP_F16 &&
                   (int)BPK_BF16 == (int)BP_BF16 &&
                   (int)BPK_F64 == (int)BP_F64 &&
                   (int)BPK_I32 == (int)BP_I32 &&
                   (int)BPK_I64 == (int)BP_I64 && (int)BPK_U8 == (int)BP_U8,
               "kernel dtype codes follow bp_dtype_t");
_Static_assert(BPK_MAX_RANK == BP_MAX_RANK, "kernel rank limit");

static bp_status_t cuda_init(const bp_host_services_t *host) {
  cuda_host = host;
  return BP_OK;
}

static void cuda_shutdown(void) {
  cuda_blas_unload();
  cuda_driver_unload();
  cuda_host = NULL;
}

/* FP32 lanes per SM by architecture, for the peak estimate. */
static int fp32_lanes_per_sm(int major, int minor) {
  if (major == 8 && minor == 0)
    return 64;
  if (major >= 8)
    return 128;
  return 64;
}

static int attr(int which, CUdevice dev) {
  int v = 0;
  if (cuda_drv.cuDeviceGetAttribute(&v, which, dev) != CUDA_SUCCESS)
    return 0; /* deprecated attributes may be refused; 0 means unknown */
  return v;
}

static void format_uuid(const CUuuid *u, char *out, size_t cap) {
  const unsigned char *b = (const unsigned char *)u->bytes;
  snprintf(out, cap,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
           "%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
           b[11], b[12], b[13], b[14], b[15]);
}

static void lowercase(char *s) {
  for (; *s; s++)
    if (*s >= 'A' && *s <= 'Z')
      *s = (char)(*s - 'A' + 'a');
}

/* Fills one record. Free memory is not reported: it needs a context, and
 * creating one costs hundreds of ms and GPU memory, which probe must not. */
static bp_status_t describe(int ordinal, bp_device_info_t *info) {
  CUdevice dev;
  bp_status_t st = cuda_check(cuda_drv.cuDeviceGet(&dev, ordinal),
                              "cuDeviceGet");
  if (st != BP_OK)
    return st;
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  if (cuda_drv.cuDeviceGetName(info->name, sizeof info->name, dev) !=
      CUDA_SUCCESS)
    snprintf(info->name, sizeof info->name, "CUDA device %d", ordinal);
  snprintf(info->vendor, sizeof info->vendor, "NVIDIA");
  int v = cuda_drv.version;
  snprintf(info->driver_version, sizeof info->driver_version,
           "CUDA %d.%d (driver API %d)", v / 1000, (v % 1000) / 10, v);
  char bus[32] = "";
  if (cuda_drv.cuDeviceGetPCIBusId(bus, sizeof bus, dev) == CUDA_SUCCESS) {
    lowercase(bus);
    snprintf(info->identity, sizeof info->identity, "pci:%s", bus);
  }
  char uuid[48] = "";
  CUuuid u;
  if (cuda_drv.cuDeviceGetUuid &&
      cuda_drv.cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS)
    format_uuid(&u, uuid, sizeof uuid);
  if (!info->identity[0] && uuid[0])
    snprintf(info->identity, sizeof info->identity, "uuid:%s", uuid);
  size_t total = 0;
  cuda_drv.cuDeviceTotalMem(&total, dev);
  info->memory_bytes = total;
  int major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  int minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  int sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  info->compute_units = (uint32_t)sms;
  info->kind = attr(CU_DEVICE_ATTRIBUTE_INTEGRATED, dev)
                   ? BP_DEVICE_INTEGRATED_GPU
                   : BP_DEVICE_DISCRETE_GPU;
  double clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev);
  info->peak_gflops =
      2.0 * sms * fp32_lanes_per_sm(major, minor) * clock_khz / 1e6;
  double mem_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev);
  double bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev);
  info->bandwidth_gbs = 2.0 * mem_khz * bus_bits / 8.0 / 1e6;
  info->score_hint = major * 1000 + sms;
  int isa_major, isa_minor;
  int need = cuda_ptx_required_driver(&isa_major, &isa_minor);
  const char *why = "";
  char old_driver[96];
  if (major < CUDA_MIN_CC_MAJOR) {
    why = "; compute capability below 8.0: no ops (the PTX targets sm_80)";
  } else if (cuda_drv.version < need) {
    snprintf(old_driver, sizeof old_driver,
             "; no ops: the PTX (ISA %d.%d) needs a CUDA %d.%d driver",
             isa_major, isa_minor, need / 1000, need % 1000 / 10);
    why = old_driver;
  }
  /* A device the kernels cannot run on is still listed, claiming nothing,
   * so `bp devices` shows it and says why. */
  if (!why[0])
    bp_gpu_fill_capabilities(info);
  /* Custom PTX is the application's: it may target any compute capability
   * and ISA, and the driver's JIT is the judge, so every device takes it. */
  info->kernel_formats = BP_KERNEL_FORMAT_BIT(BP_KERNEL_PTX);
  snprintf(info->description, sizeof info->description, "sm_%d%d, %d SMs, %s%s",
           major, minor, sms, uuid[0] ? uuid : "no uuid", why);
  return BP_OK;
}

static bp_status_t cuda_probe(bp_device_info_t *out_infos, uint32_t capacity,
                              uint32_t *out_count) {
  *out_count = 0;
  bp_status_t st = cuda_driver_load();
  if (st != BP_OK)
    return st;
  int count = 0;
  CUresult r = cuda_drv.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return cuda_check(r, "cuDeviceGetCount");
  if (count == 0) {
    cuda_host->set_error("cuda: the driver sees no device");
    return BP_ERR_UNAVAILABLE;
  }
  for (int i = 0; i < count && (uint32_t)i < capacity; i++) {
    st = describe(i, &out_infos[i]);
    if (st != BP_OK)
      return st;
  }
  *out_count = (uint32_t)count;
  return BP_OK;
}

BP_PLUGIN_EXPORT const bp_plugin_descriptor_t bp_plugin_descriptor = {
    .magic = BP_PLUGIN_MAGIC,
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(bp_plugin_descriptor_t),
    .name = CUDA_PLUGIN_NAME,
    .version = CUDA_PLUGIN_VERSION,
    .description = "NVIDIA GPUs through the CUDA driver API (PTX kernels)",
    .init = cuda_init,
    .shutdown = cuda_shutdown,
    .probe = cuda_probe,
    .device_open = cuda_device_open,
    .device_close = cuda_device_close,
    .device_synchronize = cuda_device_synchronize,
    .mem_alloc = cuda_mem_alloc,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .mem_free = cuda_mem_free,
    .mem_write = cuda_mem_write,
    .mem_read = cuda_mem_read,
    .mem_copy = cuda_mem_copy,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .stream_wait_event = cuda_stream_wait_event,
    .event_synchronize = cuda_event_synchronize,
    .event_elapsed = cuda_event_elapsed,
#define CUDA__OP_ENTRY(name, args_t) .name = cuda_op_##name,
    CUDA_OPS(CUDA__OP_ENTRY)
#undef CUDA__OP_ENTRY
    .kernel_create = cuda_kernel_create,
    .kernel_destroy = cuda_kernel_destroy,
    .kernel_launch = cuda_kernel_launch,
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
};
