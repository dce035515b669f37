/*
 * plugins/gpu/kernels.c — kernel launches of the CUDA and ROCm backends:
 * the built-in modules' kernels (looked up by name, the module loaded on
 * first use: gpu_module_load in the vendor's kernels.c turns the embedded
 * PTX or HIP source into code) and the application's custom kernels (ABI
 * 1.1), one kernel parameter per argument of the signature
 * (plugins/gpu/kernel_args.h). Turning a custom kernel's text into code
 * is the vendor's (gpu_kernel_compile: PTX JIT; hiprtc and its cache).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/gpu/gpu.h"
#include "plugins/gpu/kernel_args.h"

/* Looks up kernel name in module m, loading the module on first use. */
static bp_status_t kernel_get(gpu_device_t *d, bp_gpu_module_id_t m, const char *name,
                              gpuFunction_t *out_fn) {
  *out_fn = NULL;
  bp_status_t st = BP_OK;
  pthread_mutex_lock(&d->lock);
  if (!d->modules[m]) st = gpu_module_load(d, m, &d->modules[m]);
  if (st == BP_OK) {
    char what[160];
    snprintf(what, sizeof what, GPU_API "ModuleGetFunction(%s" GPU_MODULE_EXT ", %s)",
             gpu_module_name[m], name);
    st = gpu_check(gpuModuleGetFunction(out_fn, d->modules[m], name), what);
  }
  pthread_mutex_unlock(&d->lock);
  return st;
}

void gpu_modules_unload(gpu_device_t *d) {
  for (int m = 0; m < BP_GPU_MOD_COUNT; m++) {
    if (d->modules[m]) gpuModuleUnload(d->modules[m]);
    d->modules[m] = NULL;
  }
}

bp_status_t gpu_launch(gpu_device_t *d, bp_plugin_stream_t *s, bp_gpu_module_id_t m,
                       const char *name, const unsigned grid[3], const unsigned block[3],
                       unsigned smem, void *params) {
  if (!grid[0] || !grid[1] || !grid[2]) return BP_OK;
  bp_status_t st = gpu_device_enter(d);
  if (st != BP_OK) return st;
  gpuFunction_t fn;
  st = kernel_get(d, m, name, &fn);
  if (st == BP_OK) st = gpu_allow_smem(d, fn, smem, name);
  if (st == BP_OK) {
    /* One by-value parameter block. */
    void *args[1] = {params};
    char what[128];
    snprintf(what, sizeof what, GPU_LAUNCH_NAME "(%s)", name);
    st = gpu_check(gpuModuleLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1],
                                         block[2], smem, gpu_stream_of(s), args),
                   what);
  }
  gpu_device_leave();
  return st;
}

bp_status_t gpu_kernel_create(bp_plugin_device_t *device, const bp_kernel_source_t *source,
                              bp_plugin_kernel_t **out_kernel) {
  *out_kernel = NULL;
  gpu_device_t *d = gpu_dev(device);
  if (source->format != GPU_KERNEL_FORMAT) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": kernel format %d is not " GPU_KERNEL_FORMAT_NAME
                                        " (the only one this backend "
                                        "takes)",
                        (int)source->format);
    return BP_ERR_UNSUPPORTED;
  }
  if (source->arg_count > BP_GPU_MAX_KERNEL_ARGS) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": %u kernel arguments; at most %d", source->arg_count,
                        BP_GPU_MAX_KERNEL_ARGS);
    return BP_ERR_INVALID_ARGUMENT;
  }
  gpu_kernel_t *k = calloc(1, sizeof *k);
  /* The text need not be NUL-terminated; the JIT and hiprtc read a C
   * string. */
  char *text = malloc((size_t)source->code_size + 1);
  bp_status_t st = BP_OK;
  if (!k || !text) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": no host memory for a %llu-byte " GPU_KERNEL_FORMAT_NAME
                                        " kernel",
                        (unsigned long long)source->code_size);
    st = BP_ERR_OUT_OF_MEMORY;
    goto out;
  }
  memcpy(text, source->code, (size_t)source->code_size);
  text[source->code_size] = 0;
  snprintf(k->entry, sizeof k->entry, "%s", source->entry);
  k->arg_count = source->arg_count;
  if ((st = gpu_device_enter(d)) != BP_OK) goto out;
  st = gpu_kernel_compile(d, text, source->options, k);
  gpu_device_leave();
out:
  free(text);
  if (st != BP_OK) {
    free(k);
    return st;
  }
  *out_kernel = (bp_plugin_kernel_t *)(void *)k;
  return BP_OK;
}

void gpu_kernel_destroy(bp_plugin_device_t *device, bp_plugin_kernel_t *kernel) {
  gpu_kernel_t *k = (gpu_kernel_t *)(void *)kernel;
  if (!k) return;
  /* The core synchronised the device first, so nothing still runs it. */
  if (gpu_device_enter(gpu_dev(device)) == BP_OK) {
    gpuModuleUnload(k->module);
    gpu_device_leave();
  } else {
    gpu_log(BP_LOG_WARN, "kernel %s: device lost; its module leaks", k->entry);
  }
  free(k);
}

bp_status_t gpu_kernel_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              bp_plugin_kernel_t *kernel, const bp_launch_args_t *a) {
  gpu_device_t *d = gpu_dev(device);
  gpu_kernel_t *k = (gpu_kernel_t *)(void *)kernel;
  if (a->arg_count != k->arg_count || (a->arg_count && !a->args)) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": kernel %s takes %u arguments; %u "
                                        "given",
                        k->entry, k->arg_count, a->arg_count);
    return BP_ERR_INVALID_ARGUMENT;
  }
  bp_gpu_kernel_params_t p;
  int bad = bp_gpu_kernel_params_build(a, &p);
  if (bad >= 0) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": kernel %s: args[%d] has unknown "
                                        "kind %d",
                        k->entry, bad, (int)a->args[bad].kind);
    return BP_ERR_INVALID_ARGUMENT;
  }
  bp_status_t st = gpu_device_enter(d);
  if (st != BP_OK) return st;
  st = gpu_allow_smem(d, k->fn, a->shared_bytes, k->entry);
  if (st == BP_OK) {
    char what[160];
    snprintf(what, sizeof what, GPU_LAUNCH_NAME "(%s)", k->entry);
    st = gpu_check(gpuModuleLaunchKernel(k->fn, a->grid[0], a->grid[1], a->grid[2], a->block[0],
                                         a->block[1], a->block[2], a->shared_bytes,
                                         gpu_stream_of(stream), a->arg_count ? p.ptrs : NULL),
                   what);
  }
  gpu_device_leave();
  return st;
}
