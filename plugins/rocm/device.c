/*
 * device.c — ROCm devices: what probe says of each (count, record), and
 * making a device current (plugins/gpu/device.c does open/close).
 *
 * HIP keeps one current device per thread and no context stack, so every
 * entry point calls hipSetDevice first: the plugin then works from any
 * application thread. (It leaves that device current; an application that
 * mixes its own HIP calls on another device sets its device again, as HIP
 * programs that use several devices already must.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

bp_status_t gpu_device_enter(gpu_device_t *d) {
  return gpu_check(rocm_rt.hipSetDevice(d->ordinal), "hipSetDevice");
}

/* HIP keeps the device current: nothing to undo. */
void gpu_device_leave(void) {}

bp_status_t gpu_device_attach(gpu_device_t *d, const bp_plugin_device_config_t *cfg) {
  (void)cfg;
  bp_status_t st = gpu_device_enter(d);
  if (st != BP_OK) return st;
  rocm_arch_name(d->ordinal, d->arch, sizeof d->arch);
  rocm_rt.hipDeviceGetAttribute(&d->smem_max, hipDeviceAttributeMaxSharedMemoryPerBlock,
                                d->ordinal);
  gpu_log(BP_LOG_DEBUG, "device %d open: %s, %d bytes of shared memory", d->ordinal,
          d->arch[0] ? d->arch : "unknown arch", d->smem_max);
  return BP_OK;
}

/* Nothing is held per device. */
void gpu_device_detach(gpu_device_t *d) {
  (void)d;
}

void gpu_device_identity(gpu_device_t *d, char *dev, size_t dev_size, char *driver,
                         size_t driver_size, const char *blas_version) {
  if (rocm_rt.hipDeviceGetName(dev, (int)dev_size, d->ordinal) != hipSuccess)
    snprintf(dev, dev_size, "rocm device %d", d->ordinal);
  snprintf(driver, driver_size, "%s hip %d rocblas %s", d->arch, rocm_rt.runtime_version,
           blas_version);
}

/* ---- probe ---------------------------------------------------------------- */

static int attr(int which, int ordinal) {
  int v = 0;
  if (rocm_rt.hipDeviceGetAttribute(&v, which, ordinal) != hipSuccess)
    return 0; /* 0 means unknown */
  return v;
}

/* hipRuntimeGetVersion / hipDriverGetVersion: major * 10^7 + minor * 10^5 +
 * patch (ROCm 6.2.41133 is 60241133). */
static void format_version(int v, char *out, size_t cap) {
  snprintf(out, cap, "%d.%d.%d", v / 10000000, v / 100000 % 100, v % 100000);
}

/* The UUID as rocm-smi prints it: 16 characters; AMD's bytes are ASCII. */
static void format_uuid(int ordinal, char *out, size_t cap) {
  out[0] = 0;
  hipUUID u;
  memset(&u, 0, sizeof u);
  if (!rocm_rt.hipDeviceGetUuid || rocm_rt.hipDeviceGetUuid(&u, ordinal) != hipSuccess) return;
  char s[17];
  for (int i = 0; i < 16; i++) s[i] = u.bytes[i] >= 0x21 && u.bytes[i] < 0x7f ? u.bytes[i] : '0';
  s[16] = 0;
  snprintf(out, cap, "GPU-%s", s);
}

/* Why the device can run no kernel, "" when it can. */
static const char *no_ops_reason(const char *arch) {
  if (!arch[0]) return "; no ops: gcnArchName unreadable";
  if (!rocm_rt.hiprtcCompileProgram) return "; no ops: hiprtc missing";
  return "";
}

/* Unlike cuDeviceGetCount, hipGetDeviceCount fails with hipErrorNoDevice
 * when there is none: that is "unavailable" too, not an error. */
bp_status_t gpu_device_count(int *out_count) {
  hipError_t r = rocm_rt.hipGetDeviceCount(out_count);
  if (r == hipErrorNoDevice || (r == hipSuccess && *out_count == 0)) {
    gpu_host->set_error("rocm: the HIP runtime sees no device");
    return BP_ERR_UNAVAILABLE;
  }
  if (r != hipSuccess) return gpu_check(r, "hipGetDeviceCount");
  if (!rocm_rt.hiprtcCompileProgram)
    gpu_log(BP_LOG_WARN, "%s: devices are listed without ops", rocm_rt.rtc_reason);
  return BP_OK;
}

/* Fills one record. Free memory is not reported: it needs the device
 * current and a runtime context, which probe must not create. */
bp_status_t gpu_device_describe(int ordinal, bp_device_info_t *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  if (rocm_rt.hipDeviceGetName(info->name, sizeof info->name, ordinal) != hipSuccess ||
      !info->name[0])
    snprintf(info->name, sizeof info->name, "AMD GPU %d", ordinal);
  snprintf(info->vendor, sizeof info->vendor, "AMD");
  char rt[32], drv[32];
  format_version(rocm_rt.runtime_version, rt, sizeof rt);
  format_version(rocm_rt.driver_version, drv, sizeof drv);
  snprintf(info->driver_version, sizeof info->driver_version, "HIP %s (driver %s)", rt, drv);
  char bus[32] = "";
  bool have_bus = rocm_rt.hipDeviceGetPCIBusId(bus, sizeof bus, ordinal) == hipSuccess && bus[0];
  char uuid[32];
  format_uuid(ordinal, uuid, sizeof uuid);
  size_t total = 0;
  rocm_rt.hipDeviceTotalMem(&total, ordinal);
  info->memory_bytes = total;
  int cus = attr(hipDeviceAttributeMultiprocessorCount, ordinal);
  info->score_hint = cus;
  char arch[64];
  rocm_arch_name(ordinal, arch, sizeof arch);
  const char *why = no_ops_reason(arch);
  /* 64 FP32 lanes per CU on GCN, CDNA and RDNA alike (packed FP32 and dual
   * issue are not counted: an estimate for ranking, not a promise). */
  gpu_describe_common(
      info, have_bus ? bus : NULL, uuid, cus, 64, attr(hipDeviceAttributeIntegrated, ordinal),
      attr(hipDeviceAttributeClockRate, ordinal), attr(hipDeviceAttributeMemoryClockRate, ordinal),
      attr(hipDeviceAttributeMemoryBusWidth, ordinal), why);
  /* Custom HIP source compiles through hiprtc for the device's own
   * architecture, so it needs both, but none of the ops' conditions. */
  if (rocm_rt.hiprtcCompileProgram && arch[0])
    info->kernel_formats = BP_KERNEL_FORMAT_BIT(BP_KERNEL_HIP);
  info->dlpack_device_type = 10; /* kDLROCM: device pointers are hipDeviceptr_t */
  snprintf(info->description, sizeof info->description, "%s, %d CUs, %s, hiprtc %s%s",
           arch[0] ? arch : "gfx?", cus, uuid[0] ? uuid : "no uuid",
           rocm_rt.hiprtcCompileProgram ? rocm_rt.rtc_path : "none", why);
  return BP_OK;
}
