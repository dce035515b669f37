/*
 * descriptor.c — the descriptor of backend-cuda.so, init/shutdown and
 * probe: the shared code of plugins/common/gpu_descriptor.inc, and what a
 * CUDA device's record says.
 */
#include <stdio.h>
#include <string.h>

#include "plugins/cuda/cuda_plugin.h"

#define GPU(x) cuda_##x
#define GPU_NAME CUDA_PLUGIN_NAME
#define GPU_VERSION CUDA_PLUGIN_VERSION
#define GPU_DESCRIPTION "NVIDIA GPUs through the CUDA driver API (PTX kernels)"
#define GPU_LOAD() cuda_driver_load()
#define GPU_UNLOAD() cuda_driver_unload()
/* Pinned host memory: the HIP path has none (yet). */
#define GPU_EXTRA_ENTRIES                                                      \
  .host_alloc = cuda_host_alloc, .host_free = cuda_host_free,

#include "plugins/common/gpu_descriptor.inc"

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

static bp_status_t device_count(int *out_count) {
  CUresult r = cuda_drv.cuDeviceGetCount(out_count);
  if (r != CUDA_SUCCESS)
    return cuda_check(r, "cuDeviceGetCount");
  if (*out_count == 0) {
    cuda_host->set_error("cuda: the driver sees no device");
    return BP_ERR_UNAVAILABLE;
  }
  return BP_OK;
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
  bool have_bus =
      cuda_drv.cuDeviceGetPCIBusId(bus, sizeof bus, dev) == CUDA_SUCCESS;
  char uuid[48] = "";
  CUuuid u;
  if (cuda_drv.cuDeviceGetUuid &&
      cuda_drv.cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS)
    format_uuid(&u, uuid, sizeof uuid);
  size_t total = 0;
  cuda_drv.cuDeviceTotalMem(&total, dev);
  info->memory_bytes = total;
  int major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  int minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  int sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
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
  describe_common(info, have_bus ? bus : NULL, uuid, sms,
                  fp32_lanes_per_sm(major, minor),
                  attr(CU_DEVICE_ATTRIBUTE_INTEGRATED, dev),
                  attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev),
                  attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev),
                  attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev), why);
  /* Custom PTX is the application's: it may target any compute capability
   * and ISA, and the driver's JIT is the judge, so every device takes it. */
  info->kernel_formats = BP_KERNEL_FORMAT_BIT(BP_KERNEL_PTX);
  info->dlpack_device_type = 2; /* kDLCUDA: device pointers are CUdeviceptr */
  snprintf(info->description, sizeof info->description, "sm_%d%d, %d SMs, %s%s",
           major, minor, sms, uuid[0] ? uuid : "no uuid", why);
  return BP_OK;
}
