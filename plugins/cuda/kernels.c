/*
 * kernels.c — how CUDA kernels become code: the built-in modules' embedded
 * PTX and the application's custom PTX kernels (ABI 1.1), both
 * JIT-compiled by the driver with cuModuleLoadDataEx; the dynamic
 * shared-memory opt-in. Lookups and launches are plugins/gpu/kernels.c.
 *
 * The PTX of kernels/cuda/<name>.ptx is compiled into the plugin as a
 * string (the generated header $(B)/gen/cuda_ptx.h), so the plugin is one
 * file and needs no toolkit. A module is JIT-compiled for the actual GPU
 * the first time one of its kernels is used on a device, not at device
 * open: JIT of every module takes seconds, most programs use a few. Each
 * custom kernel owns its module, so destroying it frees the JIT'd code;
 * the built-in modules are separate and shared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_ptx.h" /* generated: cuda_ptx_<name>[] */
#include "plugins/gpu/gpu.h"

static const char *const module_ptx[BP_GPU_MOD_COUNT] = {
#define CUDA__MOD_PTX(id, file) cuda_ptx_##file,
    BP_GPU_MODULES(CUDA__MOD_PTX)
#undef CUDA__MOD_PTX
};

int cuda_ptx_required_driver(int *out_isa_major, int *out_isa_minor) {
  int major = 0, minor = 0;
  const char *v = strstr(module_ptx[0], "\n.version ");
  if (v) sscanf(v, "\n.version %d.%d", &major, &minor);
  *out_isa_major = major;
  *out_isa_minor = minor;
  /* PTX ISA 7.x came with CUDA 11.x, 8.x with 12.x, 9.x with 13.x; the
   * minor numbers line up closely enough for a lower bound (the JIT's own
   * error remains the final word). */
  return major >= 7 ? (major + 4) * 1000 + minor * 10 : 0;
}

/* The JIT's error log is captured into the message. */
bp_status_t gpu_module_load(gpu_device_t *d, bp_gpu_module_id_t m, CUmodule *out) {
  (void)d; /* the context is current */
  char log[2048] = "";
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  /* The first use of a module may come while a graph is being captured. */
  int mode = gpu_capture_relax();
  CUresult r = cuda_drv.cuModuleLoadDataEx(out, module_ptx[m], 2, opts, vals);
  gpu_capture_restore(mode);
  if (r == CUDA_SUCCESS) return BP_OK;
  char what[2200];
  int isa_major, isa_minor;
  int need = cuda_ptx_required_driver(&isa_major, &isa_minor);
  if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    snprintf(what, sizeof what,
             "cuModuleLoadDataEx(%s.ptx): the PTX is ISA %d.%d, which needs "
             "a CUDA %d.%d driver; this one is %d.%d (update the driver, or "
             "rebuild the PTX with an older nvcc: make ptx NVCC=...)",
             gpu_module_name[m], isa_major, isa_minor, need / 1000, need % 1000 / 10,
             cuda_drv.version / 1000, cuda_drv.version % 1000 / 10);
  else
    snprintf(what, sizeof what, "cuModuleLoadDataEx(%s.ptx)%s%s", gpu_module_name[m],
             log[0] ? ": " : "", log);
  return gpu_check(r, what);
}

/* Dynamic shared memory over the 48 KiB default needs an opt-in per
 * function, up to the device's limit. */
bp_status_t gpu_allow_smem(gpu_device_t *d, CUfunction fn, unsigned smem, const char *name) {
  if (smem <= 48 * 1024) return BP_OK;
  if ((int)smem > d->smem_optin) {
    gpu_host->set_error("cuda: %s needs %u bytes of shared memory; the "
                        "device allows %d",
                        name, smem, d->smem_optin);
    return BP_ERR_UNSUPPORTED;
  }
  return gpu_check(
      cuda_drv.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem),
      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

/* ---- custom kernels ------------------------------------------------------- */

#define JIT_LOG_BYTES 4096

/* JIT-compiles the PTX (NUL-terminated) with its error log captured into
 * the message; context current. */
static bp_status_t load_ptx(const char *ptx, const char *entry, CUmodule *out) {
  char *log = calloc(1, JIT_LOG_BYTES);
  if (!log) {
    gpu_host->set_error("cuda: no host memory for the JIT log");
    return BP_ERR_OUT_OF_MEMORY;
  }
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)JIT_LOG_BYTES};
  CUresult r = cuda_drv.cuModuleLoadDataEx(out, ptx, 2, opts, vals);
  bp_status_t st = BP_OK;
  if (r != CUDA_SUCCESS) {
    char what[JIT_LOG_BYTES + 160];
    log[JIT_LOG_BYTES - 1] = 0;
    snprintf(what, sizeof what, "cuModuleLoadDataEx(custom PTX for %s)%s%s", entry,
             log[0] ? ": " : "", log);
    st = gpu_check(r, what);
    /* PTX the JIT rejects is the application's mistake, as a failed
     * OpenCL build is: not an internal error of the backend. */
    if (r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_INVALID_IMAGE) st = BP_ERR_INVALID_ARGUMENT;
    *out = NULL;
  }
  free(log);
  return st;
}

bp_status_t gpu_kernel_compile(gpu_device_t *d, const char *ptx, const char *opts,
                               gpu_kernel_t *k) {
  (void)d;
  /* The driver's JIT takes options as CUjit_option values, not a command
   * line; refusing a string beats silently ignoring it. */
  if (opts && opts[0]) {
    gpu_host->set_error("cuda: PTX kernels take no compiler options (got "
                        "\"%.100s\"); put directives in the PTX instead",
                        opts);
    return BP_ERR_UNSUPPORTED;
  }
  bp_status_t st = load_ptx(ptx, k->entry, &k->module);
  if (st != BP_OK) return st;
  CUresult r = cuda_drv.cuModuleGetFunction(&k->fn, k->module, k->entry);
  if (r != CUDA_SUCCESS) {
    char what[200];
    snprintf(what, sizeof what, "cuModuleGetFunction(%.128s): no such .entry in the PTX", k->entry);
    st = gpu_check(r, what);
    cuda_drv.cuModuleUnload(k->module);
    k->module = NULL;
  }
  return st;
}
