/*
 * device.c — opening, closing and synchronising the two CPU devices.
 *
 * "cpu" (index 0) owns a thread pool sized by the config (default: one
 * worker per core this process may run on, from the topology: SMT
 * siblings share a core's FMA units and L2, so a second worker per core
 * only splits them), its workers pinned one per core unless
 * BACKPLANE_CPU_AFFINITY=0, and an ISA level capped by config->isa_max;
 * "cpu-ref" (index 1) is single-threaded and scalar whatever the config
 * says, because it is the reference other backends are compared with.
 * Work runs synchronously inside each call, so there is never anything to
 * wait for in synchronize.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

/* Reads the config fields the caller's struct_size covers; the rest keep
 * their defaults (rule 3 of plugin-api.h). */
static void read_config(const bp_plugin_device_config_t *cfg,
                        bp_plugin_device_config_t *out) {
  *out = (bp_plugin_device_config_t){sizeof *out, 0, BP_ISA_BEST, 0, 0};
  if (!cfg)
    return;
#define CPU__HAS(field)                                                        \
  (cfg->struct_size >=                                                         \
   offsetof(bp_plugin_device_config_t, field) + sizeof cfg->field)
  if (CPU__HAS(threads))
    out->threads = cfg->threads;
  if (CPU__HAS(isa_max))
    out->isa_max = cfg->isa_max;
  if (CPU__HAS(memory_limit))
    out->memory_limit = cfg->memory_limit;
  if (CPU__HAS(allow_reduced_precision))
    out->allow_reduced_precision = cfg->allow_reduced_precision;
#undef CPU__HAS
}

static bp_isa_level_t capped_isa(bp_isa_level_t cap) {
  bp_isa_level_t isa = cpu_isa_detect();
  if (cap != BP_ISA_BEST && cap < isa)
    isa = cap;
  return isa;
}

/* One worker per allowed core; every allowed CPU when the cores are unknown. */
static unsigned default_threads(void) {
  const cpu_set_t *sets;
  unsigned n = cpu_core_sets(&sets);
  return n ? n : cpu_count_online();
}

/* Workers stay on their cores (a GEMM block sized for a core's L2 stays
 * with it) unless BACKPLANE_CPU_AFFINITY=0, e.g. where other processes
 * hold some cores and the scheduler should be free to move ours. */
static void pin_workers(cpu_pool_t *pool) {
  const char *v = cpu_host.getenv ? cpu_host.getenv("BACKPLANE_CPU_AFFINITY") : NULL;
  if (v && strcmp(v, "0") == 0) return;
  const cpu_set_t *sets;
  unsigned n = cpu_core_sets(&sets);
  if (n > 1) cpu_pool_pin(pool, sets, n);
}

bp_status_t cpu_device_open(uint32_t index,
                            const bp_plugin_device_config_t *config,
                            bp_plugin_device_t **out_device) {
  if (!out_device)
    return BP_ERR_INVALID_ARGUMENT;
  *out_device = NULL;
  if (index >= CPU_DEVICE_COUNT) {
    cpu_set_error("cpu: no device %u (the plugin has %d)", index,
                  CPU_DEVICE_COUNT);
    return BP_ERR_NOT_FOUND;
  }
  bp_plugin_device_config_t cfg;
  read_config(config, &cfg);
  if ((unsigned)cfg.isa_max > BP_ISA_AVX512) {
    cpu_set_error("cpu: isa_max %d is not a bp_isa_level_t", (int)cfg.isa_max);
    return BP_ERR_INVALID_ARGUMENT;
  }
  cpu_device_t *dev = calloc(1, sizeof *dev);
  if (!dev)
    return BP_ERR_OUT_OF_MEMORY;
  dev->reference = index == CPU_DEVICE_REF;
  dev->memory_limit = cfg.memory_limit;
  dev->allow_reduced_precision = cfg.allow_reduced_precision != 0;
  dev->isa = dev->reference ? BP_ISA_SCALAR : capped_isa(cfg.isa_max);
  dev->threads = dev->reference ? 1
                 : cfg.threads  ? cfg.threads
                                : default_threads();
  if (dev->threads > 1) {
    dev->pool = cpu_pool_create(dev->threads);
    if (!dev->pool) {
      cpu_set_error("cpu: cannot start %u worker threads", dev->threads);
      free(dev);
      return BP_ERR_OUT_OF_MEMORY;
    }
    pin_workers(dev->pool);
  }
  *out_device = (bp_plugin_device_t *)(void *)dev;
  return BP_OK;
}

void cpu_device_close(bp_plugin_device_t *device) {
  cpu_device_t *dev = cpu_device(device);
  if (!dev)
    return;
  cpu_pool_destroy(dev->pool); /* joins the workers; no work is in flight */
  free(dev);
}

bp_status_t cpu_device_synchronize(bp_plugin_device_t *device) {
  (void)device; /* every op completed before its call returned */
  return BP_OK;
}
