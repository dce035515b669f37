/*
 * handles.c — the registry of live handles. Every public object is added on
 * creation and removed before it is freed, so a destroyed or foreign handle
 * is recognised and rejected instead of being dereferenced.
 * An open-addressing hash table with tombstones, under one lock.
 */
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

#define TOMBSTONE ((const void *)(uintptr_t)1)

typedef struct slot {
  const void *key;
  bp__handle_type_t type;
} slot_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t *slots;
static size_t capacity, used; /* used counts live keys and tombstones */

static size_t hash_ptr(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

static slot_t *find(const void *key) {
  if (!capacity) return NULL;
  for (size_t i = hash_ptr(key) & (capacity - 1), n = 0; n < capacity;
       i = (i + 1) & (capacity - 1), n++) {
    if (slots[i].key == key) return &slots[i];
    if (!slots[i].key) return NULL;
  }
  return NULL;
}

static void insert_nogrow(const void *key, bp__handle_type_t type) {
  size_t i = hash_ptr(key) & (capacity - 1);
  while (slots[i].key && slots[i].key != TOMBSTONE) i = (i + 1) & (capacity - 1);
  if (!slots[i].key) used++;
  slots[i].key = key;
  slots[i].type = type;
}

/* Rehashes into a table twice the live size (at least 64), dropping
 * tombstones. Returns false when memory is short; the old table stays. */
static bool grow(void) {
  size_t live = 0;
  for (size_t i = 0; i < capacity; i++)
    if (slots[i].key && slots[i].key != TOMBSTONE) live++;
  size_t ncap = 64;
  while (ncap < 4 * (live + 1)) ncap *= 2;
  slot_t *n = calloc(ncap, sizeof *n);
  if (!n) return false;
  slot_t *old = slots;
  size_t oldcap = capacity;
  slots = n;
  capacity = ncap;
  used = 0;
  for (size_t i = 0; i < oldcap; i++)
    if (old[i].key && old[i].key != TOMBSTONE)
      insert_nogrow(old[i].key, old[i].type);
  free(old);
  return true;
}

void bp__handle_add(const void *handle, bp__handle_type_t type) {
  pthread_mutex_lock(&lock);
  if (2 * (used + 1) > capacity && !grow() && used + 1 >= capacity) {
    /* Out of memory for the registry: the handle still works, it just is
     * not recognised as live, so calls with it fail safely. */
    pthread_mutex_unlock(&lock);
    return;
  }
  insert_nogrow(handle, type);
  pthread_mutex_unlock(&lock);
}

void bp__handle_remove(const void *handle) {
  pthread_mutex_lock(&lock);
  slot_t *s = find(handle);
  if (s) s->key = TOMBSTONE;
  pthread_mutex_unlock(&lock);
}

bool bp__handle_live(const void *handle, bp__handle_type_t type) {
  if (!handle || handle == TOMBSTONE) return false;
  pthread_mutex_lock(&lock);
  slot_t *s = find(handle);
  bool live = s && s->type == type;
  pthread_mutex_unlock(&lock);
  return live;
}
