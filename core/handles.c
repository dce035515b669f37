/*
 * handles.c — what an application holds is a token, never an address.
 *
 * A token names a slot in a table and the slot's generation at the time the
 * object was created. Destroying an object bumps its slot's generation, so
 * every copy of the old token is refused from then on, even after the slot
 * and the object's address are reused: a stale handle can never reach a newer
 * object. Tokens have the top bit set, so a token dereferenced by mistake
 * faults at once instead of reading memory.
 *
 * Lookups are lock-free (the table grows in chunks that never move); adding
 * and removing take one lock. A slot whose generation would wrap is retired.
 *
 * Gates: every object that belongs to a device carries that device's gate.
 * A public call enters the gate of the object it works on and leaves it when
 * it returns; bp_device_close shuts the gate, waits for the calls inside to
 * leave, then tears the device down. A call that arrives after the gate shut
 * is refused. Gates are never freed (they are recycled), so a thread that
 * read a gate just before its device closed touches valid memory, and it
 * re-checks its token after entering.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

#define CHUNK_BITS 10
#define CHUNK_SLOTS (1u << CHUNK_BITS)
#define MAX_CHUNKS (1u << (24 - CHUNK_BITS)) /* 2^24 slots: the index field */
#define TOKEN_TAG (UINT64_C(1) << 63)
#define NO_SLOT UINT32_MAX

typedef struct slot {
  _Atomic uint32_t gen; /* a token is live while its generation equals this */
  _Atomic uint32_t type;
  void *_Atomic obj;
  bp__gate_t *_Atomic gate;
  uint32_t next_free; /* under the lock */
} slot_t;

struct bp__gate {
  atomic_uint inflight;
  atomic_bool closing;
  bp__gate_t *next_free; /* under the lock */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_idle = PTHREAD_COND_INITIALIZER;
static slot_t *_Atomic chunks[MAX_CHUNKS];
static uint32_t slot_count;        /* slots ever handed out, under the lock */
static uint32_t free_head = NO_SLOT; /* under the lock */
static bp__gate_t *free_gates;     /* under the lock */

static uint64_t token_value(const void *token) { return (uint64_t)(uintptr_t)token; }

static slot_t *slot_at(uint32_t index) {
  slot_t *chunk = atomic_load_explicit(&chunks[index >> CHUNK_BITS], memory_order_acquire);
  return chunk ? &chunk[index & (CHUNK_SLOTS - 1)] : NULL;
}

/* Token layout: tag bit 63, type in bits 56-62, generation in 24-55, index
 * in 0-23. */
static void *make_token(uint32_t index, uint32_t gen, bp__handle_type_t type) {
  return (void *)(uintptr_t)(TOKEN_TAG | (uint64_t)type << 56 | (uint64_t)gen << 24 | index);
}

/* The slot a token names when it is live and of type, else NULL. */
static slot_t *live_slot(const void *token, bp__handle_type_t type) {
  uint64_t v = token_value(token);
  if (!(v & TOKEN_TAG) || ((v >> 56) & 0x7f) != (uint64_t)type) return NULL;
  uint32_t index = (uint32_t)(v & 0xffffff), gen = (uint32_t)(v >> 24);
  if (index >= MAX_CHUNKS * CHUNK_SLOTS) return NULL;
  slot_t *s = slot_at(index);
  if (!s || atomic_load_explicit(&s->gen, memory_order_acquire) != gen) return NULL;
  return s;
}

static bool slot_matches(const slot_t *s, const void *token) {
  return atomic_load_explicit(&s->gen, memory_order_acquire) == (uint32_t)(token_value(token) >> 24);
}

/* Under the lock: a free slot's index, growing the table; NO_SLOT when full
 * or out of memory. */
static uint32_t take_slot(void) {
  if (free_head != NO_SLOT) {
    uint32_t i = free_head;
    free_head = slot_at(i)->next_free;
    return i;
  }
  if (slot_count == MAX_CHUNKS * CHUNK_SLOTS) return NO_SLOT;
  uint32_t c = slot_count >> CHUNK_BITS;
  if (!atomic_load_explicit(&chunks[c], memory_order_relaxed)) {
    slot_t *chunk = calloc(CHUNK_SLOTS, sizeof *chunk);
    if (!chunk) return NO_SLOT;
    for (uint32_t i = 0; i < CHUNK_SLOTS; i++) atomic_init(&chunk[i].gen, 1);
    atomic_store_explicit(&chunks[c], chunk, memory_order_release);
  }
  return slot_count++;
}

void *bp__handle_add(void *obj, bp__handle_type_t type, bp__gate_t *gate) {
  pthread_mutex_lock(&lock);
  uint32_t i = take_slot();
  void *token = NULL;
  if (i != NO_SLOT) {
    slot_t *s = slot_at(i);
    atomic_store_explicit(&s->obj, obj, memory_order_relaxed);
    atomic_store_explicit(&s->gate, gate, memory_order_relaxed);
    atomic_store_explicit(&s->type, type, memory_order_relaxed);
    token = make_token(i, atomic_load_explicit(&s->gen, memory_order_relaxed), type);
  }
  pthread_mutex_unlock(&lock);
  return token;
}

/* Under the lock: makes s's tokens stale and frees the slot. */
static void retire(slot_t *s, uint32_t index) {
  uint32_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
  atomic_store_explicit(&s->gen, gen + 1, memory_order_release);
  atomic_store_explicit(&s->obj, NULL, memory_order_relaxed);
  if (gen + 1 == UINT32_MAX) return; /* never reused: its tokens stay stale */
  s->next_free = free_head;
  free_head = index;
}

static bp__handle_type_t token_type(const void *token) {
  return (bp__handle_type_t)((token_value(token) >> 56) & 0x7f);
}

bool bp__handle_remove(const void *token) {
  pthread_mutex_lock(&lock);
  slot_t *s = live_slot(token, token_type(token));
  if (s) retire(s, (uint32_t)(token_value(token) & 0xffffff));
  pthread_mutex_unlock(&lock);
  return s != NULL;
}

void *bp__handle_get(const void *token, bp__handle_type_t type) {
  slot_t *s = live_slot(token, type);
  return s ? atomic_load_explicit(&s->obj, memory_order_relaxed) : NULL;
}

void *bp__handle_get_on(const void *token, bp__handle_type_t type, const bp__gate_t *gate) {
  slot_t *s = live_slot(token, type);
  if (!s || atomic_load_explicit(&s->gate, memory_order_relaxed) != gate) return NULL;
  return atomic_load_explicit(&s->obj, memory_order_relaxed);
}

void bp__handle_set_gate(const void *token, bp__gate_t *gate) {
  pthread_mutex_lock(&lock);
  slot_t *s = live_slot(token, token_type(token));
  if (s) atomic_store_explicit(&s->gate, gate, memory_order_relaxed);
  pthread_mutex_unlock(&lock);
}

static const char *type_name(bp__handle_type_t type) {
  static const char *const names[] = {"?", "context", "device", "buffer", "stream", "event", "graph", "kernel", "communicator"};
  return (unsigned)type <= BP__H_COMM ? names[type] : "?";
}

bp_status_t bp__handle_enter(const void *token, bp__handle_type_t type, const char *fn, const char *what,
                             void **out_obj, bp__gate_t **out_gate) {
  *out_obj = NULL;
  *out_gate = NULL;
  if (!token) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
  slot_t *s = live_slot(token, type);
  if (!s)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is not a live %s (destroyed, freed or foreign)", fn, what,
                    type_name(type));
  void *obj = atomic_load_explicit(&s->obj, memory_order_relaxed);
  bp__gate_t *g = atomic_load_explicit(&s->gate, memory_order_relaxed);
  if (g) {
    atomic_fetch_add(&g->inflight, 1);
    if (atomic_load(&g->closing) || !slot_matches(s, token)) {
      bool closing = atomic_load(&g->closing);
      bp__gate_leave(g);
      if (closing)
        return bp__fail(BP_ERR_UNAVAILABLE, "%s: the device of %s is closing (bp_device_close on another thread)",
                        fn, what);
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: %s is not a live %s (destroyed, freed or foreign)", fn,
                      what, type_name(type));
    }
  }
  *out_obj = obj;
  *out_gate = g;
  return BP_OK;
}

void bp__gate_leave(bp__gate_t *g) {
  if (!g) return;
  if (atomic_fetch_sub(&g->inflight, 1) == 1 && atomic_load(&g->closing)) {
    pthread_mutex_lock(&lock);
    pthread_cond_broadcast(&gate_idle);
    pthread_mutex_unlock(&lock);
  }
}

void bp__gate_scope_end(bp__gate_t **g) {
  bp__gate_leave(*g);
  *g = NULL;
}

bp__gate_t *bp__gate_new(void) {
  pthread_mutex_lock(&lock);
  bp__gate_t *g = free_gates;
  if (g) free_gates = g->next_free;
  pthread_mutex_unlock(&lock);
  if (!g && !(g = calloc(1, sizeof *g))) return NULL;
  atomic_store(&g->closing, false);
  return g;
}

void *bp__gate_close(const void *token, bp__handle_type_t type) {
  pthread_mutex_lock(&lock);
  slot_t *s = live_slot(token, type);
  bp__gate_t *g = s ? atomic_load_explicit(&s->gate, memory_order_relaxed) : NULL;
  if (!s || !g || atomic_load(&g->closing)) {
    pthread_mutex_unlock(&lock);
    return NULL;
  }
  void *obj = atomic_load_explicit(&s->obj, memory_order_relaxed);
  atomic_store(&g->closing, true);
  retire(s, (uint32_t)(token_value(token) & 0xffffff));
  while (atomic_load(&g->inflight) > 0) pthread_cond_wait(&gate_idle, &lock);
  pthread_mutex_unlock(&lock);
  return obj;
}

void bp__gate_recycle(bp__gate_t *g) {
  if (!g) return;
  pthread_mutex_lock(&lock);
  g->next_free = free_gates;
  free_gates = g;
  pthread_mutex_unlock(&lock);
}
