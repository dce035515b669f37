/*
 * kernels.c — custom kernels (ABI 1.1): PTX text from the application,
 * JIT-compiled by the driver with cuModuleLoadDataEx and launched with
 * cuLaunchKernel, one kernel parameter per argument of the signature.
 *
 * Each kernel owns its module, so destroying it frees the JIT'd code; the
 * built-in modules of module.c are separate and shared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/common/gpu_kernel_args.h"
#include "plugins/cuda/cuda_plugin.h"

typedef struct cuda_kernel {
  CUmodule module;
  CUfunction fn;
  uint32_t arg_count;
  char entry[128]; /* for messages */
} cuda_kernel_t;

#define JIT_LOG_BYTES 4096

/* JIT-compiles the PTX (NUL-terminated) with its error log captured into
 * the message; context current. */
static bp_status_t load_ptx(const char *ptx, const char *entry,
                            CUmodule *out) {
  char *log = calloc(1, JIT_LOG_BYTES);
  if (!log) {
    cuda_host->set_error("cuda: no host memory for the JIT log");
    return BP_ERR_OUT_OF_MEMORY;
  }
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[2] = {log, (void *)(uintptr_t)JIT_LOG_BYTES};
  CUresult r = cuda_drv.cuModuleLoadDataEx(out, ptx, 2, opts, vals);
  bp_status_t st = BP_OK;
  if (r != CUDA_SUCCESS) {
    char what[JIT_LOG_BYTES + 160];
    log[JIT_LOG_BYTES - 1] = 0;
    snprintf(what, sizeof what, "cuModuleLoadDataEx(custom PTX for %s)%s%s",
             entry, log[0] ? ": " : "", log);
    st = cuda_check(r, what);
    /* PTX the JIT rejects is the application's mistake, as a failed
     * OpenCL build is: not an internal error of the backend. */
    if (r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_INVALID_IMAGE)
      st = BP_ERR_INVALID_ARGUMENT;
    *out = NULL;
  }
  free(log);
  return st;
}

bp_status_t cuda_kernel_create(bp_plugin_device_t *device,
                               const bp_kernel_source_t *source,
                               bp_plugin_kernel_t **out_kernel) {
  *out_kernel = NULL;
  cuda_device_t *d = cuda_dev(device);
  if (source->format != BP_KERNEL_PTX) {
    cuda_host->set_error("cuda: kernel format %d is not PTX (the only one "
                         "this backend takes)",
                         (int)source->format);
    return BP_ERR_UNSUPPORTED;
  }
  /* The driver's JIT takes options as CUjit_option values, not a command
   * line; refusing a string beats silently ignoring it. */
  if (source->options && source->options[0]) {
    cuda_host->set_error("cuda: PTX kernels take no compiler options (got "
                         "\"%.100s\"); put directives in the PTX instead",
                         source->options);
    return BP_ERR_UNSUPPORTED;
  }
  if (source->arg_count > BP_GPU_MAX_KERNEL_ARGS) {
    cuda_host->set_error("cuda: %u kernel arguments; at most %d",
                         source->arg_count, BP_GPU_MAX_KERNEL_ARGS);
    return BP_ERR_INVALID_ARGUMENT;
  }
  cuda_kernel_t *k = calloc(1, sizeof *k);
  /* The PTX need not be NUL-terminated; the driver reads a C string. */
  char *ptx = malloc((size_t)source->code_size + 1);
  bp_status_t st = BP_OK;
  bool entered = false;
  if (!k || !ptx) {
    cuda_host->set_error("cuda: no host memory for a %llu-byte PTX kernel",
                         (unsigned long long)source->code_size);
    st = BP_ERR_OUT_OF_MEMORY;
    goto out;
  }
  memcpy(ptx, source->code, (size_t)source->code_size);
  ptx[source->code_size] = 0;
  snprintf(k->entry, sizeof k->entry, "%s", source->entry);
  k->arg_count = source->arg_count;
  if ((st = cuda_ctx_enter(d)) != BP_OK)
    goto out;
  entered = true;
  if ((st = load_ptx(ptx, k->entry, &k->module)) != BP_OK)
    goto out;
  CUresult r = cuda_drv.cuModuleGetFunction(&k->fn, k->module, source->entry);
  if (r != CUDA_SUCCESS) {
    char what[200];
    snprintf(what, sizeof what,
             "cuModuleGetFunction(%.128s): no such .entry in the PTX",
             source->entry);
    st = cuda_check(r, what);
  }
out:
  if (st != BP_OK && k && k->module)
    cuda_drv.cuModuleUnload(k->module);
  if (entered)
    cuda_ctx_leave();
  free(ptx);
  if (st != BP_OK) {
    free(k);
    return st;
  }
  *out_kernel = (bp_plugin_kernel_t *)(void *)k;
  return BP_OK;
}

void cuda_kernel_destroy(bp_plugin_device_t *device,
                         bp_plugin_kernel_t *kernel) {
  cuda_kernel_t *k = (cuda_kernel_t *)(void *)kernel;
  if (!k)
    return;
  /* The core synchronised the device first, so nothing still runs it. */
  if (cuda_ctx_enter(cuda_dev(device)) == BP_OK) {
    cuda_drv.cuModuleUnload(k->module);
    cuda_ctx_leave();
  } else {
    cuda_log(BP_LOG_WARN, "kernel %s: context lost; its module leaks",
             k->entry);
  }
  free(k);
}

bp_status_t cuda_kernel_launch(bp_plugin_device_t *device,
                               bp_plugin_stream_t *stream,
                               bp_plugin_kernel_t *kernel,
                               const bp_launch_args_t *a) {
  cuda_device_t *d = cuda_dev(device);
  cuda_kernel_t *k = (cuda_kernel_t *)(void *)kernel;
  if (a->arg_count != k->arg_count || (a->arg_count && !a->args)) {
    cuda_host->set_error("cuda: kernel %s takes %u arguments; %u given",
                         k->entry, k->arg_count, a->arg_count);
    return BP_ERR_INVALID_ARGUMENT;
  }
  bp_gpu_kernel_params_t p;
  int bad = bp_gpu_kernel_params_build(a, &p);
  if (bad >= 0) {
    cuda_host->set_error("cuda: kernel %s: args[%d] has unknown kind %d",
                         k->entry, bad, (int)a->args[bad].kind);
    return BP_ERR_INVALID_ARGUMENT;
  }
  bp_status_t st = cuda_ctx_enter(d);
  if (st != BP_OK)
    return st;
  st = cuda_allow_smem(d, k->fn, a->shared_bytes, k->entry);
  if (st == BP_OK) {
    char what[160];
    snprintf(what, sizeof what, "cuLaunchKernel(%s)", k->entry);
    st = cuda_check(cuda_drv.cuLaunchKernel(
                        k->fn, a->grid[0], a->grid[1], a->grid[2], a->block[0],
                        a->block[1], a->block[2], a->shared_bytes,
                        cuda_stream_of(stream),
                        a->arg_count ? p.ptrs : NULL, NULL),
                    what);
  }
  cuda_ctx_leave();
  return st;
}
