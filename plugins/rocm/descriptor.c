/*
 * descriptor.c — the descriptor of backend-rocm.so, init/shutdown and
 * probe: the shared code of plugins/common/gpu_descriptor.inc, and what a
 * ROCm device's record says.
 */
#include <stdio.h>
#include <string.h>

#include "plugins/rocm/rocm_plugin.h"

#define GPU(x) rocm_##x
#define GPU_NAME ROCM_PLUGIN_NAME
#define GPU_VERSION ROCM_PLUGIN_VERSION
#define GPU_DESCRIPTION                                                        \
  "AMD GPUs through the HIP runtime (HIP kernels, hiprtc)"
#define GPU_LOAD() rocm_runtime_load()
#define GPU_UNLOAD() rocm_runtime_unload()
#define GPU_EXTRA_ENTRIES /* no pinned host memory (host_alloc) yet */

#include "plugins/common/gpu_descriptor.inc"

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
  if (!rocm_rt.hipDeviceGetUuid ||
      rocm_rt.hipDeviceGetUuid(&u, ordinal) != hipSuccess)
    return;
  char s[17];
  for (int i = 0; i < 16; i++)
    s[i] = u.bytes[i] >= 0x21 && u.bytes[i] < 0x7f ? u.bytes[i] : '0';
  s[16] = 0;
  snprintf(out, cap, "GPU-%s", s);
}

/* Why the device can run no kernel, "" when it can. */
static const char *no_ops_reason(const char *arch) {
  if (!arch[0])
    return "; no ops: gcnArchName unreadable";
  if (!rocm_rt.hiprtcCompileProgram)
    return "; no ops: hiprtc missing";
  return "";
}

/* Unlike cuDeviceGetCount, hipGetDeviceCount fails with hipErrorNoDevice
 * when there is none: that is "unavailable" too, not an error. */
static bp_status_t device_count(int *out_count) {
  hipError_t r = rocm_rt.hipGetDeviceCount(out_count);
  if (r == hipErrorNoDevice || (r == hipSuccess && *out_count == 0)) {
    rocm_host->set_error("rocm: the HIP runtime sees no device");
    return BP_ERR_UNAVAILABLE;
  }
  if (r != hipSuccess)
    return rocm_check(r, "hipGetDeviceCount");
  if (!rocm_rt.hiprtcCompileProgram)
    rocm_log(BP_LOG_WARN, "%s: devices are listed without ops",
             rocm_rt.rtc_reason);
  return BP_OK;
}

/* Fills one record. Free memory is not reported: it needs the device
 * current and a runtime context, which probe must not create. */
static bp_status_t describe(int ordinal, bp_device_info_t *info) {
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  if (rocm_rt.hipDeviceGetName(info->name, sizeof info->name, ordinal) !=
          hipSuccess ||
      !info->name[0])
    snprintf(info->name, sizeof info->name, "AMD GPU %d", ordinal);
  snprintf(info->vendor, sizeof info->vendor, "AMD");
  char rt[32], drv[32];
  format_version(rocm_rt.runtime_version, rt, sizeof rt);
  format_version(rocm_rt.driver_version, drv, sizeof drv);
  snprintf(info->driver_version, sizeof info->driver_version,
           "HIP %s (driver %s)", rt, drv);
  char bus[32] = "";
  bool have_bus =
      rocm_rt.hipDeviceGetPCIBusId(bus, sizeof bus, ordinal) == hipSuccess &&
      bus[0];
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
  describe_common(info, have_bus ? bus : NULL, uuid, cus, 64,
                  attr(hipDeviceAttributeIntegrated, ordinal),
                  attr(hipDeviceAttributeClockRate, ordinal),
                  attr(hipDeviceAttributeMemoryClockRate, ordinal),
                  attr(hipDeviceAttributeMemoryBusWidth, ordinal), why);
  /* Custom HIP source compiles through hiprtc for the device's own
   * architecture, so it needs both, but none of the ops' conditions. */
  if (rocm_rt.hiprtcCompileProgram && arch[0])
    info->kernel_formats = BP_KERNEL_FORMAT_BIT(BP_KERNEL_HIP);
  info->dlpack_device_type = 10; /* kDLROCM: device pointers are hipDeviceptr_t */
  snprintf(info->description, sizeof info->description,
           "%s, %d CUs, %s, hiprtc %s%s", arch[0] ? arch : "gfx?", cus,
           uuid[0] ? uuid : "no uuid",
           rocm_rt.hiprtcCompileProgram ? rocm_rt.rtc_path : "none", why);
  return BP_OK;
}
