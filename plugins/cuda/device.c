/*
 * device.c — device open/close on the primary context.
 *
 * Every entry point pushes the device's context for its duration and pops
 * it again, so the plugin works from any application thread and leaves the
 * thread's current context (which the application may use through the CUDA
 * runtime) as it found it.
 */
#include <stdlib.h>

#include "plugins/cuda/cuda_plugin.h"

bp_status_t cuda_ctx_enter(cuda_device_t *d) {
  return cuda_check(cuda_drv.cuCtxPushCurrent(d->ctx), "cuCtxPushCurrent");
}

void cuda_ctx_leave(void) {
  CUcontext popped;
  cuda_drv.cuCtxPopCurrent(&popped);
}

/* Reads the attributes ops depend on. */
static void read_attributes(cuda_device_t *d) {
  cuda_drv.cuDeviceGetAttribute(
      &d->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d->dev);
  cuda_drv.cuDeviceGetAttribute(
      &d->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d->dev);
  cuda_drv.cuDeviceGetAttribute(
      &d->smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
      d->dev);
  int pools = 0;
  cuda_drv.cuDeviceGetAttribute(
      &pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d->dev);
  /* The stream-ordered allocator needs both the entry points (driver 11.2)
   * and a device that supports memory pools. */
  d->async_alloc =
      pools && cuda_drv.cuMemAllocAsync && cuda_drv.cuMemFreeAsync;
}

bp_status_t cuda_device_open(uint32_t index,
                             const bp_plugin_device_config_t *cfg,
                             bp_plugin_device_t **out_device) {
  *out_device = NULL;
  bp_status_t st = cuda_driver_load();
  if (st != BP_OK)
    return st;
  cuda_device_t *d = calloc(1, sizeof *d);
  if (!d) {
    cuda_host->set_error("cuda: no host memory for a device");
    return BP_ERR_OUT_OF_MEMORY;
  }
  d->ordinal = (int)index;
  st = cuda_check(cuda_drv.cuDeviceGet(&d->dev, d->ordinal), "cuDeviceGet");
  if (st != BP_OK)
    goto out;
  st = cuda_check(cuda_drv.cuDevicePrimaryCtxRetain(&d->ctx, d->dev),
                  "cuDevicePrimaryCtxRetain");
  if (st != BP_OK)
    goto out;
  read_attributes(d);
  if (cfg && cfg->struct_size >= offsetof(bp_plugin_device_config_t,
                                          allow_reduced_precision) +
                                     sizeof(uint32_t)) {
    d->memory_limit = cfg->memory_limit;
    d->allow_tf32 = cfg->allow_reduced_precision != 0;
  }
  pthread_mutex_init(&d->lock, NULL);
  pthread_rwlock_init(&d->capture_lock, NULL);
  cuda_log(BP_LOG_DEBUG, "device %d open: sm_%d%d, %s allocator", d->ordinal,
           d->cc_major, d->cc_minor, d->async_alloc ? "stream-ordered" : "plain");
out:
  if (st != BP_OK) {
    if (d->ctx)
      cuda_drv.cuDevicePrimaryCtxRelease(d->dev);
    free(d);
    return st;
  }
  *out_device = (bp_plugin_device_t *)(void *)d;
  return BP_OK;
}

void cuda_device_close(bp_plugin_device_t *device) {
  cuda_device_t *d = cuda_dev(device);
  if (!d)
    return;
  if (cuda_ctx_enter(d) == BP_OK) {
    cuda_drv.cuCtxSynchronize();
    cuda_blas_release(d);
    cuda_modules_unload(d);
    cuda_ctx_leave();
  }
  cuda_drv.cuDevicePrimaryCtxRelease(d->dev);
  pthread_mutex_destroy(&d->lock);
  pthread_rwlock_destroy(&d->capture_lock);
  free(d);
}

bp_status_t cuda_device_synchronize(bp_plugin_device_t *device) {
  cuda_device_t *d = cuda_dev(device);
  bp_status_t st = cuda_legacy_begin(d, "device_synchronize");
  if (st != BP_OK)
    return st;
  st = cuda_ctx_enter(d);
  if (st == BP_OK) {
    st = cuda_check(cuda_drv.cuCtxSynchronize(), "cuCtxSynchronize");
    cuda_ctx_leave();
  }
  cuda_legacy_end(d);
  return st;
}
