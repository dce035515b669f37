/*
 * descriptor.c — backend-cpu.so's one exported symbol, and the lifetime
 * entry points: init, shutdown, probe.
 *
 * probe always reports two devices: "cpu" (threaded, vectorised where the
 * CPU allows) and "cpu-ref" (the scalar reference). It reads CPUID, the
 * affinity mask and sysconf only; it starts no threads and allocates
 * nothing, as plugin-api.h requires.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"

bp_host_services_t cpu_host;

static bp_status_t cpu_init(const bp_host_services_t *host) {
  memset(&cpu_host, 0, sizeof cpu_host);
  if (host) {
    /* An older host may pass a shorter struct: copy what it covers. */
    size_t n = host->struct_size < sizeof cpu_host ? host->struct_size
                                                   : sizeof cpu_host;
    memcpy(&cpu_host, host, n);
  }
  cpu_features_get(); /* warm the cache so probe and ops never race on it */
  cpu_topology_get(); /* hwloc's discovery is the slow part: once, here */
  return BP_OK;
}

static void cpu_shutdown(void) { memset(&cpu_host, 0, sizeof cpu_host); }

/* ---- device info ---------------------------------------------------------*/

static void fill_op_dtypes(uint32_t *t) {
  const uint32_t fl = BP_DTYPES_FLOAT, all = BP_DTYPES_FLOAT | BP_DTYPES_INT;
  for (int op = BP_OP_GEMM; op <= BP_OP_ADAM; op++)
    t[op] = fl;
  t[BP_OP_UNARY] = fl;
  t[BP_OP_BINARY] = fl;
  /* The claim is about the input: reductions take float tensors (argmax
   * writes i32 / i64 indices, which the core checks on its own). */
  t[BP_OP_REDUCE] = fl;
  t[BP_OP_FILL] = all;
  /* i8 and fp8 (ABI 1.5) move and convert, nothing more yet */
  t[BP_OP_COPY] = all | BP_DTYPE_BIT(BP_I8) | BP_DTYPES_FP8;
  t[BP_OP_CAST] = all | BP_DTYPE_BIT(BP_I8) | BP_DTYPES_FP8;
  t[BP_OP_RANDOM] = fl;
  /* the model ops of ABI 1.5: gather and arange move or make any dtype */
  t[BP_OP_GATHER] = all;
  t[BP_OP_ARANGE] = all;
  t[BP_OP_BINARY_SCALAR] = fl;
  t[BP_OP_GLU] = fl;
  t[BP_OP_ROPE] = fl;
  /* quantized ops: the claim names the quantized side's dtype */
  t[BP_OP_QUANTIZE] = BP_DTYPE_BIT(BP_I8) | BP_DTYPE_BIT(BP_U8) | BP_DTYPES_BLOCK;
  t[BP_OP_DEQUANTIZE] = BP_DTYPE_BIT(BP_I8) | BP_DTYPE_BIT(BP_U8) | BP_DTYPES_BLOCK;
  /* u8 beside i8: a and b may each be either; fp8 a and b (e4m3 / e5m2,
   * any mix) with f32 sums (docs/plugin-abi.md) */
  t[BP_OP_QGEMM] = BP_DTYPE_BIT(BP_I8) | BP_DTYPE_BIT(BP_U8) | BP_DTYPES_FP8;
  t[BP_OP_QMATMUL] = BP_DTYPES_BLOCK;
}

static uint64_t physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* f32 flops per cycle per core: two FMA pipes of the widest vector. */
static double flops_per_cycle(bp_isa_level_t isa) {
  switch (isa) {
  case BP_ISA_AVX512:
    return 2 * 2 * 16;
  case BP_ISA_AVX2:
    return 2 * 2 * 8;
  default:
    return 2;
  }
}

/* Appends " name" to buf when on. */
static void add_flag(char *buf, size_t cap, bool on, const char *name) {
  size_t len = strlen(buf);
  if (on && len + 1 + strlen(name) < cap)
    snprintf(buf + len, cap - len, "%s%s", len ? " " : "", name);
}

static void describe_isa(char *buf, size_t cap) {
  const cpu_features_t *f = cpu_features_get();
  buf[0] = '\0';
  add_flag(buf, cap, f->avx2, "avx2");
  add_flag(buf, cap, f->fma, "fma");
  add_flag(buf, cap, f->f16c, "f16c");
  add_flag(buf, cap, f->avx512f, "avx512f");
  add_flag(buf, cap, f->avx512bw, "avx512bw");
  add_flag(buf, cap, f->avx512vl, "avx512vl");
  add_flag(buf, cap, f->avx512dq, "avx512dq");
  add_flag(buf, cap, f->avx512_bf16, "avx512_bf16");
  add_flag(buf, cap, f->avx512_fp16, "avx512_fp16");
  add_flag(buf, cap, f->avx512_vnni, "avx512_vnni");
  add_flag(buf, cap, f->amx_tile, "amx_tile");
  add_flag(buf, cap, f->amx_bf16, "amx_bf16");
  add_flag(buf, cap, f->amx_int8, "amx_int8");
  if (!buf[0])
    snprintf(buf, cap, "scalar");
}

static const char *vendor_of(const char *brand) {
  if (strstr(brand, "Intel"))
    return "Intel";
  if (strstr(brand, "AMD"))
    return "AMD";
  return "unknown";
}

static void fill_common(bp_device_info_t *info) {
  const cpu_features_t *f = cpu_features_get();
  memset(info, 0, sizeof *info);
  info->struct_size = sizeof *info;
  info->kind = BP_DEVICE_CPU;
  info->memory_bytes = physical_memory();
  snprintf(info->vendor, sizeof info->vendor, "%s", vendor_of(f->brand));
  snprintf(info->driver_version, sizeof info->driver_version, "backend-cpu %s",
           CPU_PLUGIN_VERSION);
  fill_op_dtypes(info->op_dtypes);
  info->op_features[BP_OP_GEMM] = BP_FEATURE_GEMM_BIAS | BP_FEATURE_GEMM_ACT;
  info->op_features[BP_OP_ATTENTION] =
      BP_FEATURE_ATTENTION_KV_LENS | BP_FEATURE_ATTENTION_WINDOW |
      BP_FEATURE_ATTENTION_BIAS | BP_FEATURE_ATTENTION_ALIBI;
  info->op_features[BP_OP_UNARY] = BP_FEATURE_UNARY_GELU_TANH;
  info->op_features[BP_OP_CAST] = BP_FEATURE_CAST_SATURATE;
  info->kernel_formats = BP_KERNEL_FORMAT_BIT(BP_KERNEL_C_SHARED_OBJECT);
}

static void fill_fast(bp_device_info_t *info) {
  const cpu_features_t *f = cpu_features_get();
  char isa[160], topo[96];
  fill_common(info);
  const cpu_set_t *core_sets;
  unsigned cores = cpu_core_sets(&core_sets);
  if (!cores) cores = cpu_count_online();
  snprintf(info->name, sizeof info->name, "cpu");
  snprintf(info->identity, sizeof info->identity, "host:cpu");
  info->score_hint = 100;
  info->flags = BP_DEVICE_FLAG_HOST_MEMORY;
  info->compute_units = cores;
  /* A rough peak at an assumed 2.5 GHz; ranking only needs the order. */
  info->peak_gflops = flops_per_cycle(cpu_isa_detect()) * cores * 2.5;
  describe_isa(isa, sizeof isa);
  cpu_topology_describe(cpu_topology_get(), topo, sizeof topo);
  snprintf(info->description, sizeof info->description, "%.64s: %s; %s",
           f->brand[0] ? f->brand : "CPU", topo, isa);
}

static void fill_ref(bp_device_info_t *info) {
  fill_common(info);
  snprintf(info->name, sizeof info->name, "cpu-ref");
  snprintf(info->identity, sizeof info->identity, "host:cpu-ref");
  info->score_hint = 0;
  info->flags = BP_DEVICE_FLAG_REFERENCE | BP_DEVICE_FLAG_HOST_MEMORY;
  info->compute_units = 1;
  info->peak_gflops = flops_per_cycle(BP_ISA_SCALAR) * 2.5;
  snprintf(info->description, sizeof info->description, "scalar reference");
}

static bp_status_t cpu_probe(bp_device_info_t *out_infos, uint32_t capacity,
                             uint32_t *out_count) {
  if (!out_count || (capacity && !out_infos))
    return BP_ERR_INVALID_ARGUMENT;
  *out_count = CPU_DEVICE_COUNT;
  if (capacity > CPU_DEVICE_FAST)
    fill_fast(&out_infos[CPU_DEVICE_FAST]);
  if (capacity > CPU_DEVICE_REF)
    fill_ref(&out_infos[CPU_DEVICE_REF]);
  return BP_OK;
}

BP_PLUGIN_EXPORT const bp_plugin_descriptor_t bp_plugin_descriptor = {
    .magic = BP_PLUGIN_MAGIC,
    .abi_major = BP_PLUGIN_ABI_MAJOR,
    .abi_minor = BP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(bp_plugin_descriptor_t),
    .name = CPU_PLUGIN_NAME,
    .version = CPU_PLUGIN_VERSION,
    .description = "CPU backend: threaded SIMD kernels and the scalar "
                   "reference",
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .probe = cpu_probe,
    .device_open = cpu_device_open,
    .device_close = cpu_device_close,
    .device_synchronize = cpu_device_synchronize,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .mem_write = cpu_mem_write,
    .mem_read = cpu_mem_read,
    .mem_copy = cpu_mem_copy,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_synchronize,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .stream_wait_event = cpu_stream_wait_event,
    .event_synchronize = cpu_event_synchronize,
    .event_elapsed = cpu_event_elapsed,
#define CPU__OP_SLOT(E, name, args_t, ...) .name = cpu_op_##name,
    BP_OP_TABLE(CPU__OP_SLOT)
    BP_OP_TABLE_MODEL(CPU__OP_SLOT)
    BP_OP_TABLE_QUANT(CPU__OP_SLOT)
#undef CPU__OP_SLOT
    .kernel_create = cpu_kernel_create,
    .kernel_destroy = cpu_kernel_destroy,
    .kernel_launch = cpu_kernel_launch,
};
