/*
 * plugins/gpu/device.c — device open/close/synchronize of the CUDA and ROCm
 * backends. What a device is to the driver (CUDA: the primary context,
 * retained while open, pushed around every call; HIP: hipSetDevice, no
 * context stack) is the vendor's device.c: gpu_device_attach and
 * gpu_device_detach, gpu_device_enter and gpu_device_leave.
 */
#include <stdlib.h>

#include "plugins/gpu/gpu.h"

bp_status_t gpu_device_open(uint32_t index, const bp_plugin_device_config_t *cfg,
                            bp_plugin_device_t **out_device) {
  *out_device = NULL;
  bp_status_t st = gpu_driver_load();
  if (st != BP_OK) return st;
  gpu_device_t *d = calloc(1, sizeof *d);
  if (!d) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": no host memory for a device");
    return BP_ERR_OUT_OF_MEMORY;
  }
  d->ordinal = (int)index;
  if (cfg &&
      cfg->struct_size >= offsetof(bp_plugin_device_config_t, memory_limit) + sizeof(uint64_t))
    d->memory_limit = cfg->memory_limit;
  st = gpu_device_attach(d, cfg);
  if (st != BP_OK) {
    free(d); /* attach released what it took */
    return st;
  }
  pthread_mutex_init(&d->lock, NULL);
  pthread_rwlock_init(&d->capture_lock, NULL);
  *out_device = (bp_plugin_device_t *)(void *)d;
  return BP_OK;
}

void gpu_device_close(bp_plugin_device_t *device) {
  gpu_device_t *d = gpu_dev(device);
  if (!d) return;
  if (gpu_device_enter(d) == BP_OK) {
    gpuDeviceSynchronize();
    gpu_blas_release(d);
    gpu_modules_unload(d);
    gpu_device_leave();
  }
  gpu_device_detach(d);
  pthread_mutex_destroy(&d->lock);
  pthread_rwlock_destroy(&d->capture_lock);
  free(d);
}

bp_status_t gpu_device_synchronize(bp_plugin_device_t *device) {
  gpu_device_t *d = gpu_dev(device);
  bp_status_t st = gpu_legacy_begin(d, "device_synchronize");
  if (st != BP_OK) return st;
  st = gpu_device_enter(d);
  if (st == BP_OK) {
    st = gpu_check(gpuDeviceSynchronize(), GPU_DEVICE_SYNCHRONIZE_NAME);
    gpu_device_leave();
  }
  gpu_legacy_end(d);
  return st;
}
