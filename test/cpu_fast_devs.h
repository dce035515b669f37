/*
 * cpu_fast_devs.h — the CPU fast-path tests' device set: one cpu_device_t
 * per ISA level the CPU has (AVX2, AVX-512) and thread count (1, 2), each
 * with its own pool, so a test runs every kernel variant it can here.
 */
#ifndef BP_TEST_CPU_FAST_DEVS_H
#define BP_TEST_CPU_FAST_DEVS_H

#include <string.h>

#include "plugins/cpu/cpu.h"

typedef struct dev_set {
  cpu_device_t dev[4];
  int n;
} dev_set_t;

/* The levels from lo to hi that this CPU has, 1 and 2 threads each. */
static inline void devs_open_levels(dev_set_t *s, bp_isa_level_t lo, bp_isa_level_t hi) {
  const cpu_features_t *f = cpu_features_get();
  s->n = 0;
  for (int isa = lo; isa <= (int)hi; isa++) {
    if (isa != BP_ISA_AVX2 && isa != BP_ISA_AVX512) continue;
    if (isa == BP_ISA_AVX2 && !(f->avx2 && f->fma && f->f16c)) continue;
    if (isa == BP_ISA_AVX512 && !f->avx512f) continue;
    for (unsigned t = 1; t <= 2; t++) {
      cpu_device_t *d = &s->dev[s->n++];
      memset(d, 0, sizeof *d);
      d->isa = (bp_isa_level_t)isa;
      d->threads = t;
      d->pool = cpu_pool_create(t);
    }
  }
}

static inline void devs_open(dev_set_t *s) { devs_open_levels(s, BP_ISA_AVX2, BP_ISA_AVX512); }

static inline void devs_close(dev_set_t *s) {
  for (int i = 0; i < s->n; i++) cpu_pool_destroy(s->dev[i].pool);
}

#endif
