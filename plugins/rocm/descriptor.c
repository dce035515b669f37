/*
 * descriptor.c — the descriptor of backend-rocm.so, init/shutdown and probe.
 */
#include <stdio.h>
#include <string.h>

#include "plugins/rocm/rocm_plugin.h"

_Static_assert((int)BPK_F32 == (int)BP_F32 && (int)BPK_F16 == (int)BP_F16 &&
                   (int)BPK_BF16 == (int)BP_BF16 &&
                   (int)BPK_F64 == (int)BP_F64 &&
                   (int)BPK_I32 == (int)BP_I32 &&
                   (int)BPK_I64 == (int)BP_I64 && (int)BPK_U8 == (int)BP_U8,
               "kernel dtype codes follow bp_dtype_t");
_Static_assert(BPK_MAX_RANK == BP_MAX_RANK, "kernel rank limit");

static bp_status_t rocm_init(const bp_host_services_t *host) {
  rocm_host = host;
  return BP_OK;
}

static void rocm_shutdown(void) {
  rocm_blas_unload();
  rocm_runtime_unload();
  rocm_host = NULL;
}

static int attr(int which, int ordinal) {
  int v = 0;
  if (rocm_rt.hipDeviceGetAttribute(&v, which, ordinal) != hipSuccess)
    return 0; /* 0 means unknown */
  return v;
}

static void lowercase(char *s) {
  for (; *s; s++)
    if (*s >= 'A' && *s <= 'Z')
      *s = (char)(*s - 'A' + 'a');
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

/* Fills one record. Free memory is not reported: it needs the device
 * current and a runtime context, which probe must not create. */
static void describe(int ordinal, bp_device_info_t *info) {
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
  if (rocm_rt.hipDeviceGetPCIBusId(bus, sizeof bus, ordinal) == hipSuccess &&
      bus[0]) {
    lowercase(bus);
    snprintf(info->identity, sizeof info->identity, "pci:%s", bus);
  }
  char uuid[32];
  format_uuid(ordinal, uuid, sizeof uuid);
  if (!info->identity[0] && uuid[0])
    snprintf(info->identity, sizeof info->identity, "uuid:%s", uuid);
  size_t total = 0;
  rocm_rt.hipDeviceTotalMem(&total, ordinal);
  info->memory_bytes = total;
  int cus = attr(hipDeviceAttributeMultiprocessorCount, ordinal);
  info->compute_units = (uint32_t)cus;
  info->kind = attr(hipDeviceAttributeIntegrated, ordinal)
                   ? BP_DEVICE_INTEGRATED_GPU
                   : BP_DEVICE_DISCRETE_GPU;
  /* 64 FP32 lanes per CU on GCN, CDNA and RDNA alike (packed FP32 and dual
   * issue are not counted: an estimate for ranking, not a promise). */
  double clock_khz = attr(hipDeviceAttributeClockRate, ordinal);
  info->peak_gflops = 2.0 * cus * 64 * clock_khz / 1e6;
  double mem_khz = attr(hipDeviceAttributeMemoryClockRate, ordinal);
  double bus_bits = attr(hipDeviceAttributeMemoryBusWidth, ordinal);
  info->bandwidth_gbs = 2.0 * mem_khz * bus_bits / 8.0 / 1e6;
  info->score_hint = cus;
  char arch[64];
  rocm_arch_name(ordinal, arch, sizeof arch);
  const char *why = no_ops_reason(arch);
  /* A device the kernels cannot run on is still listed, claiming nothing,
   * so `bp devices` shows it and says why. */
  if (!why[0])
    bp_gpu_fill_capabilities(info);
  /* Custom HIP source compiles through hiprtc for the device's own
   * architecture, so it needs both, but none of the ops' conditions. */
  if (rocm_rt.hiprtcCompileProgram && arch[0])
    info->kernel_formats = BP_KERNEL_FORMAT_BIT(BP_KERNEL_HIP);
  snprintf(info->description, sizeof info->description,
           "%s, %d CUs, %s, hiprtc %s%s", arch[0] ? arch : "gfx?", cus,
           uuid[0] ? uuid : "no uuid",
           rocm_rt.hiprtcCompileProgram ? rocm_rt.rtc_path : "none", why);
}

static bp_status_t rocm_probe(bp_device_info_t *out_infos, uint32_t capacity,
                              uint32_t *out_count) {
  *out_count = 0;
  bp_status_t st = rocm_runtime_load();
  if (st != BP_OK)
    return st;
  int count = 0;
  hipError_t r = rocm_rt.hipGetDeviceCount(&count);
  if (r == hipErrorNoDevice || (r == hipSuccess && count == 0)) {
    rocm_host->set_error("rocm: the HIP runtime sees no device");
    return BP_ERR_UNAVAILABLE;
  }
  if (r != hipSuccess)
    return rocm_check(r, "hipGetDeviceCount");
  if (!rocm_rt.hiprtcCompileProgram)
    rocm_log(BP_LOG_WARN, "%s: devices are listed without ops",
             rocm_rt.rtc_reason);
  for (int i = 0; i < count && (uint32_t)i < capacity; i++)
    describe(i, &out_infos[i]);
  *out_count = (uint32_t)count;
  return BP_OK;
}

BP_PLUGIN_EXPORT const bp_plugin_descriptor_t bp_plugin_descriptor = {
    .magic = BP_PLUGIN_MAGIC,
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(bp_plugin_descriptor_t),
    .name = ROCM_PLUGIN_NAME,
    .version = ROCM_PLUGIN_VERSION,
    .description = "AMD GPUs through the HIP runtime (HIP kernels, hiprtc)",
    .init = rocm_init,
    .shutdown = rocm_shutdown,
    .probe = rocm_probe,
    .device_open = rocm_device_open,
    .device_close = rocm_device_close,
    .device_synchronize = rocm_device_synchronize,
    .mem_alloc = rocm_mem_alloc,
    .mem_free = rocm_mem_free,
    .mem_write = rocm_mem_write,
    .mem_read = rocm_mem_read,
    .mem_copy = rocm_mem_copy,
    .stream_create = rocm_stream_create,
    .stream_destroy = rocm_stream_destroy,
    .stream_synchronize = rocm_stream_synchronize,
    .event_create = rocm_event_create,
    .event_destroy = rocm_event_destroy,
    .event_record = rocm_event_record,
    .stream_wait_event = rocm_stream_wait_event,
    .event_synchronize = rocm_event_synchronize,
    .event_elapsed = rocm_event_elapsed,
#define ROCM__OP_ENTRY(name, args_t) .name = rocm_op_##name,
    ROCM_OPS(ROCM__OP_ENTRY)
#undef ROCM__OP_ENTRY
    .kernel_create = rocm_kernel_create,
    .kernel_destroy = rocm_kernel_destroy,
    .kernel_launch = rocm_kernel_launch,
    .graph_begin = rocm_graph_begin,
    .graph_end = rocm_graph_end,
    .graph_launch = rocm_graph_launch,
    .graph_destroy = rocm_graph_destroy,
};
