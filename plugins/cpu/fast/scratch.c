/*
 * fast/scratch.c — per-thread scratch buffers for the fast kernels (packed
 * GEMM panels and the like), kept between calls so large GEMMs do not pay
 * for page faults on every call.
 */
#include <pthread.h>
#include <stdlib.h>

#include "plugins/cpu/fast/gemm/gemm.h"

#define SCRATCH_SLOTS 5

typedef struct scratch {
  void *p[SCRATCH_SLOTS];
  size_t n[SCRATCH_SLOTS];
} scratch_t;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;

static void scratch_free(void *v) {
  scratch_t *s = v;
  for (int i = 0; i < SCRATCH_SLOTS; i++) free(s->p[i]);
  free(s);
}

static void scratch_init(void) {
  scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

/* The plugin may be unloaded while threads it never created live on: drop
 * the key so their exit does not call into unmapped code. */
__attribute__((destructor)) static void scratch_fini(void) {
  if (!scratch_key_ok) return;
  scratch_t *s = pthread_getspecific(scratch_key);
  if (s) scratch_free(s);
  pthread_key_delete(scratch_key);
  scratch_key_ok = 0;
}

void *cpu_fast_scratch(unsigned slot, size_t bytes) {
  pthread_once(&scratch_once, scratch_init);
  if (!scratch_key_ok || slot >= SCRATCH_SLOTS) return NULL;
  scratch_t *s = pthread_getspecific(scratch_key);
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s || pthread_setspecific(scratch_key, s) != 0) {
      free(s);
      return NULL;
    }
  }
  if (s->n[slot] < bytes) {
    free(s->p[slot]);
    size_t rounded = (bytes + 4095) & ~(size_t)4095;
    s->p[slot] = aligned_alloc(64, rounded);
    s->n[slot] = s->p[slot] ? rounded : 0;
  }
  return s->p[slot];
}

