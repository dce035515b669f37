/*
 * fast/prepared.c — the table of prepared forms of constant tensors
 * (fast/prepared.h): a list under one lock, searched by key. Forms are few
 * (one per constant weight tensor a program uses) and a search is a few
 * comparisons against the packing or transform it saves.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "prepared.h"

/* Bytes of forms kept at most: room for the weights of a mid-sized
 * network's convolutions; past it the least recently used go. */
#define CPU_PREP_BUDGET ((size_t)256 << 20)

struct cpu_prep {
  cpu_prep_key_t key;
  void *data;
  size_t bytes;
  uint64_t aux;
  uint64_t last_use; /* the table's clock when last held */
  unsigned holders;
  bool ready; /* filled: visible to cpu_prep_get */
  cpu_prep_t *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_prep_t *forms;
static size_t held_bytes;
static uint64_t clock_now;

static void unlink_form(cpu_prep_t *p) {
  for (cpu_prep_t **at = &forms; *at; at = &(*at)->next)
    if (*at == p) {
      *at = p->next;
      held_bytes -= p->bytes;
      return;
    }
}

static void drop_alloc(uint64_t alloc);

/* Frees p (unlinked), and with it the forms made from p's own bytes (a
 * form prepared from another, e.g. from bf16 weights widened to f32): their
 * key names p's data as the allocation, which a later form may reuse. */
static void free_form(cpu_prep_t *p) {
  uint64_t data = (uint64_t)(uintptr_t)p->data;
  free(p->data);
  free(p);
  drop_alloc(data);
}

/* Drops the forms nobody holds whose source lies in the allocation at
 * alloc. Under the lock. */
static void drop_alloc(uint64_t alloc) {
  for (cpu_prep_t **at = &forms; *at;) {
    cpu_prep_t *p = *at;
    if (p->key.alloc != alloc || p->holders) {
      at = &p->next;
      continue;
    }
    *at = p->next;
    held_bytes -= p->bytes;
    free_form(p);
    at = &forms; /* the list may have lost other forms meanwhile */
  }
}

/* Frees ready forms nobody holds, least recently used first, until bytes
 * more fit the budget; false when they cannot. Under the lock. */
static bool make_room(size_t bytes) {
  while (held_bytes + bytes > CPU_PREP_BUDGET) {
    cpu_prep_t *oldest = NULL;
    for (cpu_prep_t *p = forms; p; p = p->next)
      if (p->ready && !p->holders && (!oldest || p->last_use < oldest->last_use)) oldest = p;
    if (!oldest) return false;
    unlink_form(oldest);
    free_form(oldest);
  }
  return true;
}

cpu_prep_t *cpu_prep_get(const cpu_prep_key_t *key, size_t bytes, bool *fresh) {
  *fresh = false;
  if (!key->const_id || bytes == 0 || bytes > CPU_PREP_BUDGET) return NULL;
  pthread_mutex_lock(&lock);
  cpu_prep_t *p = forms;
  while (p && memcmp(&p->key, key, sizeof *key) != 0) p = p->next;
  if (p) {
    /* being filled by another call: this one prepares its own */
    if (!p->ready)
      p = NULL;
    else
      p->holders++, p->last_use = ++clock_now;
    pthread_mutex_unlock(&lock);
    return p;
  }
  if (!make_room(bytes) || !(p = calloc(1, sizeof *p)) ||
      posix_memalign(&p->data, 64, bytes) != 0) {
    if (p) free(p);
    pthread_mutex_unlock(&lock);
    return NULL;
  }
  p->key = *key;
  p->bytes = bytes;
  p->holders = 1;
  p->last_use = ++clock_now;
  p->next = forms;
  forms = p;
  held_bytes += bytes;
  pthread_mutex_unlock(&lock);
  *fresh = true;
  return p;
}

void *cpu_prep_data(cpu_prep_t *p) {
  return p->data;
}

uint64_t *cpu_prep_aux(cpu_prep_t *p) {
  return &p->aux;
}

void cpu_prep_release(cpu_prep_t *p, bool keep) {
  pthread_mutex_lock(&lock);
  p->holders--;
  bool drop = !p->ready && !keep;
  if (!p->ready && keep) p->ready = true;
  if (drop) {
    unlink_form(p);
    free_form(p);
  }
  pthread_mutex_unlock(&lock);
}

void cpu_prep_forget_alloc(uint64_t alloc) {
  pthread_mutex_lock(&lock);
  drop_alloc(alloc);
  pthread_mutex_unlock(&lock);
}

size_t cpu_prep_bytes(void) {
  pthread_mutex_lock(&lock);
  size_t n = held_bytes;
  pthread_mutex_unlock(&lock);
  return n;
}

/* The forms die with the plugin (dlclose, or the process's end). */
__attribute__((destructor)) static void drop_all(void) {
  pthread_mutex_lock(&lock);
  while (forms) {
    cpu_prep_t *p = forms;
    forms = p->next;
    free(p->data);
    free(p);
  }
  held_bytes = 0;
  pthread_mutex_unlock(&lock);
}
