/*
 * device.c — CUDA devices: what probe says of each (count, record), and
 * binding an opened device to its primary context (plugins/gpu/device.c
 * does the rest of open/close).
 *
 * Every entry point pushes the device's context for its duration and pops
 * it again, so the plugin works from any application thread and leaves the
 * thread's current context (which the application may use through the CUDA
 * runtime) as it found it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

bp_status_t gpu_device_enter(gpu_device_t *d) {
  return gpu_check(cuda_drv.cuCtxPushCurrent(d->ctx), "cuCtxPushCurrent");
}

void gpu_device_leave(void) {
  CUcontext popped;
  cuda_drv.cuCtxPopCurrent(&popped);
}

/* Reads the attributes ops depend on. */
static void read_attributes(gpu_device_t *d) {
  cuda_drv.cuDeviceGetAttribute(&d->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev);
  cuda_drv.cuDeviceGetAttribute(&d->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
  cuda_drv.cuDeviceGetAttribute(&d->smem_optin,
                                CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d->dev);
  int pools = 0;
  cuda_drv.cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d->dev);
  /* The stream-ordered allocator needs both the entry points (driver 11.2)
   * and a device that supports memory pools. */
  d->async_alloc = pools && cuda_drv.cuMemAllocAsync && cuda_drv.cuMemFreeAsync;
}

bp_status_t gpu_device_attach(gpu_device_t *d, const bp_plugin_device_config_t *cfg) {
  bp_status_t st = gpu_check(cuda_drv.cuDeviceGet(&d->dev, d->ordinal), "cuDeviceGet");
  if (st != BP_OK) return st;
  st = gpu_check(cuda_drv.cuDevicePrimaryCtxRetain(&d->ctx, d->dev), "cuDevicePrimaryCtxRetain");
  if (st != BP_OK) return st;
  read_attributes(d);
  if (cfg && cfg->struct_size >=
                 offsetof(bp_plugin_device_config_t, allow_reduced_precision) + sizeof(uint32_t))
    d->allow_tf32 = cfg->allow_reduced_precision != 0;
  gpu_log(BP_LOG_DEBUG, "device %d open: sm_%d%d, %s allocator", d->ordinal, d->cc_major,
          d->cc_minor, d->async_alloc ? "stream-ordered" : "plain");
  return BP_OK;
}

void gpu_device_detach(gpu_device_t *d) {
  cuda_drv.cuDevicePrimaryCtxRelease(d->dev);
}

void gpu_device_identity(gpu_device_t *d, char *dev, size_t dev_size, char *driver,
                         size_t driver_size, const char *blas_version) {
  if (cuda_drv.cuDeviceGetName(dev, (int)dev_size, d->dev) != CUDA_SUCCESS)
    snprintf(dev, dev_size, "cuda device %d", d->ordinal);
  snprintf(driver, driver_size, "driver %d cublas %s", cuda_drv.version, blas_version);
}

/* ---- probe ---------------------------------------------------------------- */

/* FP32 lanes per SM by architecture, for the peak estimate. */
static int fp32_lanes_per_sm(int major, int minor) {
  if (major == 8 && minor == 0) return 64;
  if (major >= 8) return 128;
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
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
           b[14], b[15]);
}

bp_status_t gpu_device_count(int *out_count) {
  CUresult r = cuda_drv.cuDeviceGetCount(out_count);
  if (r != CUDA_SUCCESS) return gpu_check(r, "cuDeviceGetCount");
  if (*out_count == 0) {
    gpu_host->set_error("cuda: the driver sees no device");
    return BP_ERR_UNAVAILABLE;
  }
  return BP_OK;
}

/* Fills one record. Free memory is not reported: it needs a context, and
 * creating one costs hundreds of ms and GPU memory, which probe must not. */
bp_status_t gpu_device_describe(int ordinal, bp_device_info_t *info) {
  CUdevice dev;
  bp_status_t st = gpu_check(cuda_drv.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
  if (st != BP_OK) return st;
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  if (cuda_drv.cuDeviceGetName(info->name, sizeof info->name, dev) != CUDA_SUCCESS)
    snprintf(info->name, sizeof info->name, "CUDA device %d", ordinal);
  snprintf(info->vendor, sizeof info->vendor, "NVIDIA");
  int v = cuda_drv.version;
  snprintf(info->driver_version, sizeof info->driver_version, "CUDA %d.%d (driver API %d)",
           v / 1000, (v % 1000) / 10, v);
  char bus[32] = "";
  bool have_bus = cuda_drv.cuDeviceGetPCIBusId(bus, sizeof bus, dev) == CUDA_SUCCESS;
  char uuid[48] = "";
  CUuuid u;
  if (cuda_drv.cuDeviceGetUuid && cuda_drv.cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS)
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
             "; no ops: the PTX (ISA %d.%d) needs a CUDA %d.%d driver", isa_major, isa_minor,
             need / 1000, need % 1000 / 10);
    why = old_driver;
  }
  gpu_describe_common(info, have_bus ? bus : NULL, uuid, sms, fp32_lanes_per_sm(major, minor),
                      attr(CU_DEVICE_ATTRIBUTE_INTEGRATED, dev),
                      attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev),
                      attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev),
                      attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev), why);
  /* Custom PTX is the application's: it may target any compute capability
   * and ISA, and the driver's JIT is the judge, so every device takes it. */
  info->kernel_formats = BP_KERNEL_FORMAT_BIT(BP_KERNEL_PTX);
  info->dlpack_device_type = 2; /* kDLCUDA: device pointers are CUdeviceptr */
  snprintf(info->description, sizeof info->description, "sm_%d%d, %d SMs, %s%s", major, minor, sms,
           uuid[0] ? uuid : "no uuid", why);
  return BP_OK;
}
