/*
 * kernels.c — custom kernels (ABI 1.1): HIP source from the application,
 * compiled by hiprtc for the device's gcnArchName through the same path
 * and on-disk code-object cache as the built-in modules (module.c), and
 * launched with hipModuleLaunchKernel, one kernel parameter per argument
 * of the signature (plugins/common/gpu_kernel_args.h, shared with CUDA).
 *
 * The entry must be declared extern "C" so that hipModuleGetFunction finds
 * it by its plain name. Each kernel owns its module.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/common/gpu_kernel_args.h"
#include "plugins/rocm/rocm_plugin.h"

typedef struct rocm_kernel {
  hipModule_t module;
  hipFunction_t fn;
  uint32_t arg_count;
  char entry[128]; /* for messages */
} rocm_kernel_t;

bp_status_t rocm_kernel_create(bp_plugin_device_t *device,
                               const bp_kernel_source_t *source,
                               bp_plugin_kernel_t **out_kernel) {
  *out_kernel = NULL;
  rocm_device_t *d = rocm_dev(device);
  if (source->format != BP_KERNEL_HIP) {
    rocm_host->set_error("rocm: kernel format %d is not HIP source (the only "
                         "one this backend takes)",
                         (int)source->format);
    return BP_ERR_UNSUPPORTED;
  }
  if (source->arg_count > BP_GPU_MAX_KERNEL_ARGS) {
    rocm_host->set_error("rocm: %u kernel arguments; at most %d",
                         source->arg_count, BP_GPU_MAX_KERNEL_ARGS);
    return BP_ERR_INVALID_ARGUMENT;
  }
  rocm_kernel_t *k = calloc(1, sizeof *k);
  /* The source need not be NUL-terminated; hiprtc reads a C string. */
  char *src = malloc((size_t)source->code_size + 1);
  bp_status_t st = BP_OK;
  if (!k || !src) {
    rocm_host->set_error("rocm: no host memory for a %llu-byte HIP source",
                         (unsigned long long)source->code_size);
    st = BP_ERR_OUT_OF_MEMORY;
    goto out;
  }
  memcpy(src, source->code, (size_t)source->code_size);
  src[source->code_size] = 0;
  snprintf(k->entry, sizeof k->entry, "%s", source->entry);
  k->arg_count = source->arg_count;
  if ((st = rocm_enter(d)) != BP_OK)
    goto out;
  char name[160];
  snprintf(name, sizeof name, "custom-%.120s.hip", k->entry);
  /* The device lock serialises hiprtc and the cache per device, as for
   * the built-in modules. */
  pthread_mutex_lock(&d->lock);
  st = rocm_code_object_load(d, src, name, source->options, true, &k->module);
  pthread_mutex_unlock(&d->lock);
  if (st != BP_OK)
    goto out;
  hipError_t r = rocm_rt.hipModuleGetFunction(&k->fn, k->module, k->entry);
  if (r != hipSuccess) {
    char what[220];
    snprintf(what, sizeof what,
             "hipModuleGetFunction(%.120s): no such kernel in the code "
             "object (is it declared extern \"C\" __global__?)",
             k->entry);
    st = rocm_check(r, what);
  }
out:
  if (st != BP_OK && k && k->module)
    rocm_rt.hipModuleUnload(k->module);
  free(src);
  if (st != BP_OK) {
    free(k);
    return st;
  }
  *out_kernel = (bp_plugin_kernel_t *)(void *)k;
  return BP_OK;
}

void rocm_kernel_destroy(bp_plugin_device_t *device,
                         bp_plugin_kernel_t *kernel) {
  rocm_kernel_t *k = (rocm_kernel_t *)(void *)kernel;
  if (!k)
    return;
  /* The core synchronised the device first, so nothing still runs it. */
  if (rocm_enter(rocm_dev(device)) == BP_OK)
    rocm_rt.hipModuleUnload(k->module);
  else
    rocm_log(BP_LOG_WARN, "kernel %s: device lost; its module leaks",
             k->entry);
  free(k);
}

bp_status_t rocm_kernel_launch(bp_plugin_device_t *device,
                               bp_plugin_stream_t *stream,
                               bp_plugin_kernel_t *kernel,
                               const bp_launch_args_t *a) {
  rocm_device_t *d = rocm_dev(device);
  rocm_kernel_t *k = (rocm_kernel_t *)(void *)kernel;
  if (a->arg_count != k->arg_count || (a->arg_count && !a->args)) {
    rocm_host->set_error("rocm: kernel %s takes %u arguments; %u given",
                         k->entry, k->arg_count, a->arg_count);
    return BP_ERR_INVALID_ARGUMENT;
  }
  if (d->smem_max > 0 && a->shared_bytes > (uint32_t)d->smem_max) {
    rocm_host->set_error("rocm: %s needs %u bytes of shared memory; the "
                         "device allows %d",
                         k->entry, a->shared_bytes, d->smem_max);
    return BP_ERR_UNSUPPORTED;
  }
  bp_gpu_kernel_params_t p;
  int bad = bp_gpu_kernel_params_build(a, &p);
  if (bad >= 0) {
    rocm_host->set_error("rocm: kernel %s: args[%d] has unknown kind %d",
                         k->entry, bad, (int)a->args[bad].kind);
    return BP_ERR_INVALID_ARGUMENT;
  }
  bp_status_t st = rocm_enter(d);
  if (st != BP_OK)
    return st;
  char what[160];
  snprintf(what, sizeof what, "hipModuleLaunchKernel(%s)", k->entry);
  return rocm_check(rocm_rt.hipModuleLaunchKernel(
                        k->fn, a->grid[0], a->grid[1], a->grid[2],
                        a->block[0], a->block[1], a->block[2],
                        a->shared_bytes, rocm_stream_of(stream),
                        a->arg_count ? p.ptrs : NULL, NULL),
                    what);
}
