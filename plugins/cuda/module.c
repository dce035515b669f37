/*
 * module.c — the embedded PTX modules and kernel launches.
 *
 * The PTX of kernels/cuda/<name>.ptx is compiled into the plugin as a
 * string (the generated header $(B)/gen/cuda_ptx.h), so the plugin is one
 * file and needs no toolkit. A module is JIT-compiled by the driver for the
 * actual GPU the first time one of its kernels is used on a device, not at
 * device open: JIT of every module takes seconds, most programs use a few.
 */
#include <stdio.h>
#include <string.h>

#include "cuda_ptx.h" /* generated: cuda_ptx_<name>[] */
#include "plugins/cuda/cuda_plugin.h"

static const char *const module_ptx[BP_GPU_MOD_COUNT] = {
#define CUDA__MOD_PTX(id, file) cuda_ptx_##file,
    BP_GPU_MODULES(CUDA__MOD_PTX)
#undef CUDA__MOD_PTX
};

static const char *const module_name[BP_GPU_MOD_COUNT] = {
#define CUDA__MOD_NAME(id, file) #file,
    BP_GPU_MODULES(CUDA__MOD_NAME)
#undef CUDA__MOD_NAME
};

int cuda_ptx_required_driver(int *out_isa_major, int *out_isa_minor) {
  int major = 0, minor = 0;
  const char *v = strstr(module_ptx[0], "\n.version ");
  if (v)
    sscanf(v, "\n.version %d.%d", &major, &minor);
  *out_isa_major = major;
  *out_isa_minor = minor;
  /* PTX ISA 7.x came with CUDA 11.x, 8.x with 12.x, 9.x with 13.x; the
   * minor numbers line up closely enough for a lower bound (the JIT's own
   * error remains the final word). */
  return major >= 7 ? (major + 4) * 1000 + minor * 10 : 0;
}

/* Loads one module with the JIT's error log captured (context current). */
static bp_status_t load_module(bp_gpu_module_id_t m, CUmodule *out) {
  char log[2048] = "";
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  /* The first use of a module may come while a graph is being captured. */
  int mode = cuda_capture_relax();
  CUresult r = cuda_drv.cuModuleLoadDataEx(out, module_ptx[m], 2, opts, vals);
  cuda_capture_restore(mode);
  if (r == CUDA_SUCCESS)
    return BP_OK;
  char what[2200];
  int isa_major, isa_minor;
  int need = cuda_ptx_required_driver(&isa_major, &isa_minor);
  if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    snprintf(what, sizeof what,
             "cuModuleLoadDataEx(%s.ptx): the PTX is ISA %d.%d, which needs "
             "a CUDA %d.%d driver; this one is %d.%d (update the driver, or "
             "rebuild the PTX with an older nvcc: make ptx NVCC=...)",
             module_name[m], isa_major, isa_minor, need / 1000,
             need % 1000 / 10, cuda_drv.version / 1000,
             cuda_drv.version % 1000 / 10);
  else
    snprintf(what, sizeof what, "cuModuleLoadDataEx(%s.ptx)%s%s",
             module_name[m], log[0] ? ": " : "", log);
  return cuda_check(r, what);
}

bp_status_t cuda_kernel_get(cuda_device_t *d, bp_gpu_module_id_t m,
                            const char *name, CUfunction *out_fn) {
  *out_fn = NULL;
  bp_status_t st = BP_OK;
  pthread_mutex_lock(&d->lock);
  if (!d->modules[m])
    st = load_module(m, &d->modules[m]);
  if (st == BP_OK) {
    char what[160];
    snprintf(what, sizeof what, "cuModuleGetFunction(%s.ptx, %s)",
             module_name[m], name);
    st = cuda_check(cuda_drv.cuModuleGetFunction(out_fn, d->modules[m], name),
                    what);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

void cuda_modules_unload(cuda_device_t *d) {
  for (int m = 0; m < BP_GPU_MOD_COUNT; m++) {
    if (d->modules[m])
      cuda_drv.cuModuleUnload(d->modules[m]);
    d->modules[m] = NULL;
  }
}

unsigned cuda_blocks_for(int64_t n, unsigned threads) {
  int64_t b = (n + threads - 1) / threads;
  /* Kernels loop grid-stride, so a cap loses nothing and keeps gridDim.x in
   * range for any n. */
  if (b > 65535LL * 16)
    b = 65535LL * 16;
  return b < 1 ? 1u : (unsigned)b;
}

/* Dynamic shared memory over the 48 KiB default needs an opt-in per
 * function, up to the device's limit. */
bp_status_t cuda_allow_smem(cuda_device_t *d, CUfunction fn, unsigned smem,
                            const char *name) {
  if (smem <= 48 * 1024)
    return BP_OK;
  if ((int)smem > d->smem_optin) {
    cuda_host->set_error("cuda: %s needs %u bytes of shared memory; the "
                         "device allows %d",
                         name, smem, d->smem_optin);
    return BP_ERR_UNSUPPORTED;
  }
  return cuda_check(
      cuda_drv.cuFuncSetAttribute(
          fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem),
      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
}

bp_status_t cuda_launch(cuda_device_t *d, bp_plugin_stream_t *s,
                        bp_gpu_module_id_t m, const char *name,
                        const unsigned grid[3], const unsigned block[3],
                        unsigned smem, void *params) {
  if (!grid[0] || !grid[1] || !grid[2])
    return BP_OK;
  bp_status_t st = cuda_ctx_enter(d);
  if (st != BP_OK)
    return st;
  CUfunction fn;
  st = cuda_kernel_get(d, m, name, &fn);
  if (st == BP_OK)
    st = cuda_allow_smem(d, fn, smem, name);
  if (st == BP_OK) {
    void *args[1] = {params};
    char what[128];
    snprintf(what, sizeof what, "cuLaunchKernel(%s)", name);
    st = cuda_check(cuda_drv.cuLaunchKernel(fn, grid[0], grid[1], grid[2],
                                            block[0], block[1], block[2], smem,
                                            cuda_stream_of(s), args, NULL),
                    what);
  }
  cuda_ctx_leave();
  return st;
}
