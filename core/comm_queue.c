/*
 * comm_queue.c — collectives queued on streams (docs/scale-out.md, "Calls
 * are asynchronous").
 *
 * A collective call validates its arguments, queues itself on its
 * communicator and on its stream, and returns. Each communicator has one
 * progress thread that runs its calls one at a time, in the order they were
 * made (the order every rank must make them in): the call check with the
 * other ranks, then a wait for the work queued on the stream before the
 * call, then the data movement. Work the application queues on the stream
 * after the collective waits for it: every path that queues work on a
 * stream, or waits for one, takes the stream's lock through
 * bp__stream_lock, which first waits until the stream's collectives are
 * placed. A collective is placed when it is done, except one a comm plugin
 * enqueues on the backend's own stream (NCCL on the CUstream behind the
 * bp stream: comm ABI 1.1's BP_COMM_ENQUEUE, plugin ABI 1.5's
 * stream_native), which is placed once enqueued: the device orders the
 * later work after it, and the host waits no longer. Otherwise the backend
 * cannot be made to wait for the host, so the wait happens on the host, in
 * the call that queues the later work. Failures are known when the call is
 * done: a synchronize, an event record and a stream's destruction wait for
 * that. A device-wide synchronous call (bp_buffer_read,
 * bp_device_synchronize, bp_buffer_free) waits for every collective queued
 * on the device's streams.
 *
 * A failed collective leaves its status and message on its stream; the
 * next bp_stream_synchronize returns them (once), and an event recorded
 * after the collective carries them to bp_event_synchronize.
 *
 * Locks: a stream's lock, then a communicator's lock, then work_lock; the
 * progress thread never holds one while taking another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

/* Guards every stream's host_tickets / host_done / host_status and every
 * device's host_pending; work_done is broadcast when a call finishes. */
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_done = PTHREAD_COND_INITIALIZER;
/* Set on progress threads: their own device-synchronous calls (staging)
 * must not wait for the call they are part of. */
static _Thread_local bool on_progress_thread;

/* Every collective queued on s is on the device's queue (placed), or done. */
static bool stream_placed(bp__stream_t *s) {
  return __atomic_load_n(&s->host_placed, __ATOMIC_ACQUIRE) ==
         __atomic_load_n(&s->host_tickets, __ATOMIC_ACQUIRE);
}

void bp__stream_lock(bp__stream_t *s) {
  pthread_mutex_lock(&s->lock);
  while (!stream_placed(s)) {
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&work_lock);
    while (s->host_placed != s->host_tickets) pthread_cond_wait(&work_done, &work_lock);
    pthread_mutex_unlock(&work_lock);
    pthread_mutex_lock(&s->lock); /* another thread may have queued one meanwhile: check again */
  }
}

void bp__stream_wait_host_done(bp__stream_t *s) {
  pthread_mutex_lock(&work_lock);
  while (s->host_done != s->host_tickets) pthread_cond_wait(&work_done, &work_lock);
  pthread_mutex_unlock(&work_lock);
}

void bp__device_wait_host_work(bp__device_t *d) {
  if (on_progress_thread || !__atomic_load_n(&d->host_pending, __ATOMIC_ACQUIRE)) return;
  pthread_mutex_lock(&work_lock);
  while (d->host_pending) pthread_cond_wait(&work_done, &work_lock);
  pthread_mutex_unlock(&work_lock);
}

bp_status_t bp__stream_take_host_error(bp__stream_t *s) {
  pthread_mutex_lock(&work_lock);
  /* a collective placed on the native queue reports when it is done */
  while (s->host_done != s->host_tickets) pthread_cond_wait(&work_done, &work_lock);
  bp_status_t st = s->host_status;
  char why[sizeof s->host_why];
  memcpy(why, s->host_why, sizeof why);
  s->host_status = BP_OK;
  s->host_why[0] = '\0';
  pthread_mutex_unlock(&work_lock);
  return st == BP_OK ? BP_OK : bp__fail(st, "%s", why);
}

void bp__event_note_host_error(bp__event_t *e, bp__stream_t *s) {
  pthread_mutex_lock(&work_lock);
  /* The event carries the failures of the collectives before it, so it
   * waits for those placed on the native queue to be done. */
  while (s->host_done != s->host_tickets) pthread_cond_wait(&work_done, &work_lock);
  e->host_status = s->host_status;
  memcpy(e->host_why, s->host_why, sizeof e->host_why);
  pthread_mutex_unlock(&work_lock);
}

void bp__comm_enqueue(bp__comm_t *c, bp__comm_job_t *job) {
  pthread_mutex_lock(&work_lock);
  if (job->stream) {
    job->ticket = job->stream->host_tickets;
    __atomic_store_n(&job->stream->host_tickets, job->ticket + 1, __ATOMIC_RELEASE);
  }
  if (job->device) __atomic_add_fetch(&job->device->host_pending, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock(&work_lock);
  pthread_mutex_lock(&c->lock);
  if (c->tail)
    c->tail->next = job;
  else
    c->head = job;
  c->tail = job;
  pthread_cond_signal(&c->wake);
  pthread_mutex_unlock(&c->lock);
}

/* Waits until the collectives queued on the job's stream before it (by any
 * communicator) are done. */
static void wait_turn(const bp__comm_job_t *job) {
  pthread_mutex_lock(&work_lock);
  while (job->stream->host_done != job->ticket) pthread_cond_wait(&work_done, &work_lock);
  pthread_mutex_unlock(&work_lock);
}

static void finish(bp__comm_job_t *job, bp_status_t st) {
  pthread_mutex_lock(&work_lock);
  bp__stream_t *s = job->stream;
  if (s && st != BP_OK && s->host_status == BP_OK) {
    s->host_status = st;
    snprintf(s->host_why, sizeof s->host_why, "%s", bp_last_error());
  }
  if (s) __atomic_store_n(&s->host_done, s->host_done + 1, __ATOMIC_RELEASE);
  if (s && s->host_placed < s->host_done) __atomic_store_n(&s->host_placed, s->host_done, __ATOMIC_RELEASE);
  if (job->device) __atomic_sub_fetch(&job->device->host_pending, 1, __ATOMIC_ACQ_REL);
  pthread_cond_broadcast(&work_done);
  pthread_mutex_unlock(&work_lock);
}

void bp__comm_placed(bp__comm_job_t *job) {
  pthread_mutex_lock(&work_lock);
  /* the calls before it on the stream are done (wait_turn), so placed
   * counts them and this one */
  __atomic_store_n(&job->stream->host_placed, job->ticket + 1, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&work_done);
  pthread_mutex_unlock(&work_lock);
}

static bp__comm_job_t *next_job(bp__comm_t *c) {
  pthread_mutex_lock(&c->lock);
  while (!c->head && !c->stopping) pthread_cond_wait(&c->wake, &c->lock);
  bp__comm_job_t *job = c->head;
  if (job && !(c->head = job->next)) c->tail = NULL;
  pthread_mutex_unlock(&c->lock);
  return job;
}

static void *progress_main(void *arg) {
  bp__comm_t *c = arg;
  on_progress_thread = true;
  for (bp__comm_job_t *job; (job = next_job(c));) {
    bp__clear_error();
    if (job->stream) wait_turn(job);
    finish(job, bp__comm_run_job(c, job));
    free(job);
  }
  return NULL;
}

bp_status_t bp__comm_progress_start(bp__comm_t *c) {
  pthread_cond_init(&c->wake, NULL);
  int err = pthread_create(&c->progress, NULL, progress_main, c);
  if (err) {
    pthread_cond_destroy(&c->wake);
    return bp__fail(BP_ERR_OUT_OF_MEMORY,
                    "bp_comm_create: cannot start the communicator's progress thread "
                    "(%s)",
                    strerror(err));
  }
  c->progress_started = true;
  return BP_OK;
}

void bp__comm_progress_stop(bp__comm_t *c) {
  if (c->progress_started) {
    pthread_mutex_lock(&c->lock);
    c->stopping = true;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    pthread_join(c->progress, NULL); /* after the calls still queued */
    c->progress_started = false;
    pthread_cond_destroy(&c->wake);
  }
}
