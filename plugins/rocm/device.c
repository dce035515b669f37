/*
 * device.c — device open/close.
 *
 * HIP keeps one current device per thread and no context stack, so every
 * entry point calls hipSetDevice first: the plugin then works from any
 * application thread. (It leaves that device current; an application that
 * mixes its own HIP calls on another device sets its device again, as HIP
 * programs that use several devices already must.)
 */
#include <stdio.h>
#include <stdlib.h>

#include "plugins/rocm/rocm_plugin.h"

bp_status_t rocm_enter(rocm_device_t *d) {
  return rocm_check(rocm_rt.hipSetDevice(d->ordinal), "hipSetDevice");
}

bp_status_t rocm_device_open(uint32_t index,
                             const bp_plugin_device_config_t *cfg,
                             bp_plugin_device_t **out_device) {
  *out_device = NULL;
  bp_status_t st = rocm_runtime_load();
  if (st != BP_OK)
    return st;
  rocm_device_t *d = calloc(1, sizeof *d);
  if (!d) {
    rocm_host->set_error("rocm: no host memory for a device");
    return BP_ERR_OUT_OF_MEMORY;
  }
  d->ordinal = (int)index;
  st = rocm_enter(d);
  if (st != BP_OK) {
    free(d);
    return st;
  }
  rocm_arch_name(d->ordinal, d->arch, sizeof d->arch);
  rocm_rt.hipDeviceGetAttribute(&d->smem_max,
                                hipDeviceAttributeMaxSharedMemoryPerBlock,
                                d->ordinal);
  if (cfg && cfg->struct_size >= offsetof(bp_plugin_device_config_t,
                                          memory_limit) +
                                     sizeof(uint64_t))
    d->memory_limit = cfg->memory_limit;
  pthread_mutex_init(&d->lock, NULL);
  pthread_rwlock_init(&d->capture_lock, NULL);
  rocm_log(BP_LOG_DEBUG, "device %d open: %s, %d bytes of shared memory",
           d->ordinal, d->arch[0] ? d->arch : "unknown arch", d->smem_max);
  *out_device = (bp_plugin_device_t *)(void *)d;
  return BP_OK;
}

void rocm_device_close(bp_plugin_device_t *device) {
  rocm_device_t *d = rocm_dev(device);
  if (!d)
    return;
  if (rocm_enter(d) == BP_OK) {
    rocm_rt.hipDeviceSynchronize();
    rocm_blas_release(d);
    rocm_modules_unload(d);
  }
  pthread_mutex_destroy(&d->lock);
  pthread_rwlock_destroy(&d->capture_lock);
  free(d);
}

bp_status_t rocm_device_synchronize(bp_plugin_device_t *device) {
  rocm_device_t *d = rocm_dev(device);
  bp_status_t st = rocm_legacy_begin(d, "device_synchronize");
  if (st != BP_OK)
    return st;
  if ((st = rocm_enter(d)) == BP_OK)
    st = rocm_check(rocm_rt.hipDeviceSynchronize(), "hipDeviceSynchronize");
  rocm_legacy_end(d);
  return st;
}
