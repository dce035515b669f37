/*
 * xcopy_stage.c — the staged copy between two devices that share no memory:
 * the source device's plugin reads a chunk into host memory, the destination
 * device's plugin writes it out. Two staging buffers make a pipeline: while
 * a helper thread writes chunk i to the destination, the calling thread reads
 * chunk i + 1 from the source, so the two halves of the copy overlap; when
 * the helper is not running (a busy host), the calling thread writes the
 * chunks itself rather than wait for it.
 *
 * The staging memory is page-locked where one of the two backends offers it
 * (its host_alloc, as bp_host_alloc uses), so a driver with a copy engine
 * can DMA straight from it; otherwise it is ordinary page-aligned memory.
 * One set of buffers is kept between copies, because touching fresh pages
 * for every copy would cost more than small copies move; it is given back
 * when its device closes (bp__xcopy_release).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "xcopy.h"

/* Bytes per chunk: large enough that the per-call cost of the plugins'
 * synchronous copies vanishes, small enough that both staging buffers stay
 * in the processor's caches while the two threads pass them along. */
#define STAGE_CHUNK (UINT64_C(1) << 20)

typedef struct stage_set {
  bp__device_t *owner; /* the device whose host_alloc gave buf, or NULL */
  void *buf[2];
  bool busy;
} stage_set_t;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static stage_set_t cache; /* the set kept warm between copies */

static void set_free(stage_set_t *s) {
  for (int i = 0; i < 2; i++) {
    if (!s->buf[i]) continue;
    if (s->owner)
      bp__call_host_free(s->owner, s->buf[i]);
    else
      free(s->buf[i]);
    s->buf[i] = NULL;
  }
  s->owner = NULL;
}

static bp_status_t set_alloc(bp__device_t *owner, stage_set_t *s) {
  *s = (stage_set_t){.owner = owner};
  for (int i = 0; i < 2; i++) {
    bp_status_t st = BP_OK;
    if (owner)
      st = bp__call_host_alloc(owner, STAGE_CHUNK, &s->buf[i]);
    else if (!(s->buf[i] = aligned_alloc(4096, STAGE_CHUNK)))
      st = bp__fail(BP_ERR_OUT_OF_MEMORY,
                    "bp_buffer_copy: no host memory for a %llu-byte staging buffer",
                    (unsigned long long)STAGE_CHUNK);
    if (st != BP_OK) {
      set_free(s);
      return st;
    }
  }
  return BP_OK;
}

/* The device whose page-locked memory the copy stages through, or NULL. */
static bp__device_t *pinned_owner(bp__device_t *dst, bp__device_t *src) {
  if (bp__plugin_has_host_memory(src)) return src;
  return bp__plugin_has_host_memory(dst) ? dst : NULL;
}

/* Takes the cached set when it is free and from the right owner, else
 * allocates one; *out_cached says which. */
static bp_status_t stage_take(bp__device_t *owner, stage_set_t *out, bool *out_cached) {
  pthread_mutex_lock(&cache_lock);
  *out_cached = !cache.busy && cache.buf[0] && cache.owner == owner;
  if (*out_cached) {
    cache.busy = true;
    *out = cache;
  }
  pthread_mutex_unlock(&cache_lock);
  return *out_cached ? BP_OK : set_alloc(owner, out);
}

/* Returns a set: the cached one is marked free; a new one replaces an idle
 * cached set (the latest copy's pair of devices is the likeliest next). */
static void stage_give(stage_set_t *s, bool cached) {
  stage_set_t old = {0};
  pthread_mutex_lock(&cache_lock);
  if (cached) {
    cache.busy = false;
  } else if (!cache.busy) {
    old = cache;
    cache = *s;
  } else {
    old = *s;
  }
  /* Freed under the lock, so a closing owner's release cannot interleave. */
  set_free(&old);
  pthread_mutex_unlock(&cache_lock);
}

void bp__xcopy_release(bp__device_t *d) {
  pthread_mutex_lock(&cache_lock);
  /* A busy set belongs to a copy on d, which a closing d has waited for. */
  if (cache.owner == d && !cache.busy) set_free(&cache);
  pthread_mutex_unlock(&cache_lock);
}

/* ---- the pipeline --------------------------------------------------------- */

/* A staging buffer's state. The calling thread reads chunks into free
 * buffers; a read chunk is written out by whichever thread claims it first:
 * the helper thread, or the calling thread itself when both buffers are full
 * and the helper has not started on one (on a busy host the helper may not
 * be scheduled for a while, and the copy must not wait for it). */
typedef enum slot_state { SLOT_FREE, SLOT_READING, SLOT_READ, SLOT_WRITING } slot_state_t;

typedef struct pipeline {
  bp__buffer_t *dst, *src;
  uint64_t doff, soff, size;
  void *buf[2];
  pthread_mutex_t lock;
  pthread_cond_t cond;
  slot_state_t state[2];
  uint64_t at[2], bytes[2]; /* the chunk in each buffer: offset and length */
  bool reading_done;        /* every chunk has been read (or a read failed) */
  bool stop;                /* a step failed: nothing more is written */
  bp_status_t write_status;
  char write_error[512]; /* a failed write's message, from its thread */
} pipeline_t;

static uint64_t chunk_at(const pipeline_t *p, uint64_t done) {
  return p->size - done < STAGE_CHUNK ? p->size - done : STAGE_CHUNK;
}

/* A buffer in state, or -1; under the lock. */
static int find_slot(const pipeline_t *p, slot_state_t state) {
  return p->state[0] == state ? 0 : p->state[1] == state ? 1 : -1;
}

/* Writes the chunk in buffer i, claimed (SLOT_WRITING) by the caller, and
 * frees the buffer; called and returns with the lock held. */
static void write_slot(pipeline_t *p, int i) {
  pthread_mutex_unlock(&p->lock);
  bp_status_t st = bp__call_mem_write(p->dst->device, NULL, p->dst->ptr,
                                      p->dst->origin + p->doff + p->at[i], p->buf[i], p->bytes[i]);
  char why[512] = "";
  /* The message is this thread's own; keep it for the caller. */
  if (st != BP_OK) snprintf(why, sizeof why, "%s", bp_last_error());
  pthread_mutex_lock(&p->lock);
  p->state[i] = SLOT_FREE;
  if (st != BP_OK && !p->stop) {
    p->stop = true;
    p->write_status = st;
    snprintf(p->write_error, sizeof p->write_error, "%s", why);
  }
  pthread_cond_broadcast(&p->cond);
}

/* The helper thread: writes read chunks out until the reading is done and
 * nothing is left, or a step failed. */
static void *writer_main(void *arg) {
  pipeline_t *p = arg;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    int i = find_slot(p, SLOT_READ);
    if (p->stop || (i < 0 && p->reading_done)) break;
    if (i < 0) {
      pthread_cond_wait(&p->cond, &p->lock);
      continue;
    }
    p->state[i] = SLOT_WRITING;
    write_slot(p, i);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* The calling thread: reads every chunk into a free buffer, writing a read
 * one out itself when none is free and the helper is busy elsewhere. */
static bp_status_t reader_run(pipeline_t *p) {
  bp_status_t st = BP_OK;
  pthread_mutex_lock(&p->lock);
  for (uint64_t done = 0; done < p->size && !p->stop;) {
    int i = find_slot(p, SLOT_FREE);
    if (i < 0) {
      int ready = find_slot(p, SLOT_READ);
      if (ready >= 0) {
        p->state[ready] = SLOT_WRITING;
        write_slot(p, ready);
      } else {
        pthread_cond_wait(&p->cond, &p->lock);
      }
      continue;
    }
    uint64_t n = chunk_at(p, done);
    p->state[i] = SLOT_READING;
    pthread_mutex_unlock(&p->lock);
    st = bp__call_mem_read(p->src->device, NULL, p->buf[i], p->src->ptr,
                           p->src->origin + p->soff + done, n);
    pthread_mutex_lock(&p->lock);
    if (st != BP_OK) {
      p->state[i] = SLOT_FREE;
      p->stop = true;
      break;
    }
    p->at[i] = done;
    p->bytes[i] = n;
    p->state[i] = SLOT_READ;
    pthread_cond_broadcast(&p->cond);
    done += n;
  }
  p->reading_done = true;
  pthread_cond_broadcast(&p->cond);
  /* What is left to write, the calling thread helps with too. */
  for (int i; !p->stop && (i = find_slot(p, SLOT_READ)) >= 0;) {
    p->state[i] = SLOT_WRITING;
    write_slot(p, i);
  }
  pthread_mutex_unlock(&p->lock);
  return st;
}

/* One chunk or no helper thread: read, then write, chunk by chunk. */
static bp_status_t run_serial(pipeline_t *p) {
  bp_status_t st = BP_OK;
  for (uint64_t done = 0; done < p->size && st == BP_OK;) {
    uint64_t n = chunk_at(p, done);
    st = bp__call_mem_read(p->src->device, NULL, p->buf[0], p->src->ptr,
                           p->src->origin + p->soff + done, n);
    if (st == BP_OK)
      st = bp__call_mem_write(p->dst->device, NULL, p->dst->ptr, p->dst->origin + p->doff + done,
                              p->buf[0], n);
    done += n;
  }
  return st;
}

static bp_status_t run_pipelined(pipeline_t *p) {
  pthread_t writer;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  bp_status_t st;
  if (pthread_create(&writer, NULL, writer_main, p) != 0) {
    st = run_serial(p); /* no thread to spare: still correct, only slower */
  } else {
    st = reader_run(p);
    pthread_join(writer, NULL);
    if (st == BP_OK && p->write_status != BP_OK)
      st = bp__fail(p->write_status, "%s", p->write_error);
  }
  pthread_cond_destroy(&p->cond);
  pthread_mutex_destroy(&p->lock);
  return st;
}

bp_status_t bp__copy_staged(bp__buffer_t *dst, uint64_t doff, bp__buffer_t *src, uint64_t soff,
                            uint64_t size) {
  stage_set_t set;
  bool cached;
  bp_status_t st = stage_take(pinned_owner(dst->device, src->device), &set, &cached);
  if (st != BP_OK) return st;
  pipeline_t p = {.dst = dst,
                  .src = src,
                  .doff = doff,
                  .soff = soff,
                  .size = size,
                  .buf = {set.buf[0], set.buf[1]}};
  st = size <= STAGE_CHUNK ? run_serial(&p) : run_pipelined(&p);
  stage_give(&set, cached);
  return st;
}
