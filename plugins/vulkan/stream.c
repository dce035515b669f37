/*
 * stream.c — streams and events. A stream owns a command pool and a timeline
 * semaphore; ops are recorded into one command buffer, separated by a global
 * barrier, and submitted in batches, each signalling the next timeline
 * value. Completed batches give back their command buffer and free their
 * staging and parameter memory. Events are a timestamp query plus the
 * (stream, value) pair that says when it was reached.
 */
#include <stdlib.h>
#include <string.h>

#include "vkb.h"

#define BATCH_CMDS 256          /* commands recorded before a submit */
#define CHUNK_BYTES (64u << 10) /* parameter memory per chunk */

static bool grow(void **arr, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return true;
  uint32_t ncap = *cap ? *cap * 2 : 16;
  while (ncap < need) ncap *= 2;
  void *p = realloc(*arr, ncap * elem);
  if (!p) return false;
  *arr = p;
  *cap = ncap;
  return true;
}

bp_status_t vkb_stream_new(vkb_device_t *d, vkb_stream_t **out_stream) {
  *out_stream = NULL;
  vkb_stream_t *s = calloc(1, sizeof *s);
  if (!s) return BP_ERR_OUT_OF_MEMORY;
  s->d = d;
  pthread_mutex_init(&s->lock, NULL);
  VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                 .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                 .queueFamilyIndex = d->queue_family};
  bp_status_t st =
      vkb_check(d->fn.vkCreateCommandPool(d->dev, &pci, NULL, &s->pool), "vkCreateCommandPool");
  VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                   .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
  VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
  if (st == BP_OK)
    st = vkb_check(d->fn.vkCreateSemaphore(d->dev, &sci, NULL, &s->timeline), "vkCreateSemaphore");
  if (st != BP_OK) {
    if (s->pool) d->fn.vkDestroyCommandPool(d->dev, s->pool, NULL);
    free(s);
    return st;
  }
  pthread_mutex_lock(&d->stream_lock);
  s->queue = d->next_queue++ % d->queue_count;
  s->next = d->streams;
  d->streams = s;
  pthread_mutex_unlock(&d->stream_lock);
  *out_stream = s;
  return BP_OK;
}

/* Returns completed batches' command buffers and frees their memory. */
static void retire(vkb_stream_t *s) {
  uint64_t done = 0;
  if (s->ninflight == 0 ||
      s->d->fn.vkGetSemaphoreCounterValue(s->d->dev, s->timeline, &done) != VK_SUCCESS)
    return;
  uint32_t k = 0;
  for (; k < s->ninflight && s->inflight[k].value <= done; k++) {
    vkb_batch_t *b = &s->inflight[k];
    for (uint32_t i = 0; i < b->nrel; i++) vkb_free(s->d, b->rel[i]);
    free(b->rel);
    for (uint32_t i = 0; i < b->nviews; i++)
      s->d->fn.vkDestroyBufferView(s->d->dev, b->views[i], NULL);
    free(b->views);
    if (b->cb && grow((void **)&s->spare, &s->capspare, s->nspare + 1, sizeof *s->spare))
      s->spare[s->nspare++] = b->cb;
  }
  memmove(s->inflight, s->inflight + k, (s->ninflight - k) * sizeof *s->inflight);
  s->ninflight -= k;
}

void vkb_stream_free(vkb_stream_t *s) {
  vkb_device_t *d = s->d;
  pthread_mutex_lock(&s->lock);
  vkb_stream_wait(s);
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_lock(&d->stream_lock);
  for (vkb_stream_t **pp = &d->streams; *pp; pp = &(*pp)->next)
    if (*pp == s) {
      *pp = s->next;
      break;
    }
  pthread_mutex_unlock(&d->stream_lock);
  /* Destroying the pool frees every command buffer it gave out. */
  for (uint32_t i = 0; i < s->nrel; i++) vkb_free(d, s->releases[i]);
  for (uint32_t i = 0; i < s->nviews; i++) d->fn.vkDestroyBufferView(d->dev, s->views[i], NULL);
  vkb_free(d, s->chunk);
  free(s->releases);
  free(s->views);
  free(s->inflight);
  free(s->spare);
  d->fn.vkDestroySemaphore(d->dev, s->timeline, NULL);
  d->fn.vkDestroyCommandPool(d->dev, s->pool, NULL);
  pthread_mutex_destroy(&s->lock);
  if (d->default_stream == s) d->default_stream = NULL;
  free(s);
}

static bp_status_t begin(vkb_stream_t *s) {
  vkb_device_t *d = s->d;
  retire(s);
  VkCommandBuffer cb;
  if (s->nspare) {
    cb = s->spare[--s->nspare];
    d->fn.vkResetCommandBuffer(cb, 0);
  } else {
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = s->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    bp_status_t st =
        vkb_check(d->fn.vkAllocateCommandBuffers(d->dev, &ai, &cb), "vkAllocateCommandBuffers");
    if (st != BP_OK) return st;
  }
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  d->fn.vkBeginCommandBuffer(cb, &bi);
  s->cur = cb;
  s->cur_cmds = 0;
  return BP_OK;
}

bp_status_t vkb_stream_cmd(vkb_stream_t *s, VkCommandBuffer *out_cb) {
  VkCommandBuffer cb = s->capture ? s->capture->cb : s->cur;
  if (!cb) {
    bp_status_t st = begin(s);
    if (st != BP_OK) return st;
    cb = s->cur;
  }
  /* One global barrier orders every command after the previous one, which
   * is what in-order stream semantics need; earlier batches are ordered by
   * queue submission order plus this barrier at the start. */
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                         VK_ACCESS_TRANSFER_READ_BIT |
                                         VK_ACCESS_TRANSFER_WRITE_BIT};
  VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  s->d->fn.vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &mb, 0, NULL, 0, NULL);
  *out_cb = cb;
  return BP_OK;
}

bp_status_t vkb_stream_recorded(vkb_stream_t *s) {
  if (s->capture) {
    s->capture->cmds++;
    return BP_OK;
  }
  return ++s->cur_cmds >= BATCH_CMDS ? vkb_stream_flush(s) : BP_OK;
}

/* Submits cb signalling s's timeline at val and, when sem2 is not NULL, sem2
 * at val2. */
static bp_status_t submit(vkb_stream_t *s, VkCommandBuffer cb, uint64_t val, VkSemaphore sem2,
                          uint64_t val2) {
  vkb_device_t *d = s->d;
  VkSemaphore sig[2] = {s->timeline, sem2};
  uint64_t sig_val[2] = {val, val2};
  VkPipelineStageFlags wait_stages[8];
  for (uint32_t i = 0; i < s->nwait; i++) wait_stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkTimelineSemaphoreSubmitInfo tsi = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                       .waitSemaphoreValueCount = s->nwait,
                                       .pWaitSemaphoreValues = s->wait_val,
                                       .signalSemaphoreValueCount = sem2 ? 2u : 1u,
                                       .pSignalSemaphoreValues = sig_val};
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                     .pNext = &tsi,
                     .waitSemaphoreCount = s->nwait,
                     .pWaitSemaphores = s->wait_sem,
                     .pWaitDstStageMask = wait_stages,
                     .commandBufferCount = 1,
                     .pCommandBuffers = &cb,
                     .signalSemaphoreCount = sem2 ? 2u : 1u,
                     .pSignalSemaphores = sig};
  pthread_mutex_lock(&d->queue_lock[s->queue]);
  VkResult r = d->fn.vkQueueSubmit(d->queues[s->queue], 1, &si, VK_NULL_HANDLE);
  pthread_mutex_unlock(&d->queue_lock[s->queue]);
  s->nwait = 0;
  return vkb_check(r, "vkQueueSubmit");
}

bp_status_t vkb_stream_flush(vkb_stream_t *s) {
  if (s->capture)
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: this call waits for or submits work, which a "
                                        "graph being recorded cannot hold");
  if (!s->cur && s->nwait == 0) return BP_OK;
  if (!s->cur) {
    bp_status_t st = begin(s); /* a wait with nothing recorded still counts */
    if (st != BP_OK) return st;
  }
  if (s->chunk) {
    bp_status_t st = vkb_stream_release(s, s->chunk);
    if (st != BP_OK) return st;
    s->chunk = NULL;
  }
  if (!grow((void **)&s->inflight, &s->capinflight, s->ninflight + 1, sizeof *s->inflight))
    return BP_ERR_OUT_OF_MEMORY;
  VkCommandBuffer cb = s->cur;
  s->d->fn.vkEndCommandBuffer(cb);
  s->cur = VK_NULL_HANDLE;
  uint64_t val = s->submitted + 1;
  bp_status_t st = submit(s, cb, val, VK_NULL_HANDLE, 0);
  if (st != BP_OK) return st;
  s->submitted = val;
  s->inflight[s->ninflight++] = (vkb_batch_t){.cb = cb,
                                              .value = val,
                                              .rel = s->releases,
                                              .nrel = s->nrel,
                                              .views = s->views,
                                              .nviews = s->nviews};
  s->releases = NULL;
  s->nrel = s->caprel = 0;
  s->views = NULL;
  s->nviews = s->capviews = 0;
  return BP_OK;
}

bp_status_t vkb_stream_submit_graph(vkb_stream_t *s, VkCommandBuffer cb, VkSemaphore sem,
                                    uint64_t value) {
  bp_status_t st = vkb_stream_flush(s); /* earlier work goes first */
  if (st != BP_OK) return st;
  /* Launches of one graph signal sem in order even when they come from
   * different streams (queues): each waits for the previous one. */
  if (value > 1) {
    s->wait_sem[0] = sem;
    s->wait_val[0] = value - 1;
    s->nwait = 1;
  }
  if (!grow((void **)&s->inflight, &s->capinflight, s->ninflight + 1, sizeof *s->inflight))
    return BP_ERR_OUT_OF_MEMORY;
  uint64_t val = s->submitted + 1;
  if ((st = submit(s, cb, val, sem, value)) != BP_OK) return st;
  s->submitted = val;
  /* The graph keeps its command buffer and memory; the batch only marks
   * the timeline value. */
  s->inflight[s->ninflight++] = (vkb_batch_t){.value = val};
  return BP_OK;
}

/* Waits until the stream's timeline reaches value. */
static bp_status_t wait_value(vkb_stream_t *s, uint64_t value) {
  VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                            .semaphoreCount = 1,
                            .pSemaphores = &s->timeline,
                            .pValues = &value};
  return vkb_check(s->d->fn.vkWaitSemaphores(s->d->dev, &wi, UINT64_MAX), "vkWaitSemaphores");
}

bp_status_t vkb_stream_wait(vkb_stream_t *s) {
  if (s->capture) return vkb_stream_flush(s); /* refuses, with the reason */
  bp_status_t st = vkb_stream_flush(s);
  if (st == BP_OK && s->submitted) st = wait_value(s, s->submitted);
  retire(s);
  return st;
}

bp_status_t vkb_stream_release(vkb_stream_t *s, vkb_alloc_t *a) {
  if (!grow((void **)&s->releases, &s->caprel, s->nrel + 1, sizeof *s->releases)) {
    /* Without room to defer the free, wait and free now. */
    bp_status_t st = vkb_stream_wait(s);
    vkb_free(s->d, a);
    return st;
  }
  s->releases[s->nrel++] = a;
  return BP_OK;
}

bp_status_t vkb_stream_release_view(vkb_stream_t *s, VkBufferView v) {
  if (!grow((void **)&s->views, &s->capviews, s->nviews + 1, sizeof *s->views)) {
    bp_status_t st = vkb_stream_wait(s);
    s->d->fn.vkDestroyBufferView(s->d->dev, v, NULL);
    return st;
  }
  s->views[s->nviews++] = v;
  return BP_OK;
}

bp_status_t vkb_stream_params(vkb_stream_t *s, const void *data, uint32_t size,
                              VkDeviceAddress *out_addr) {
  uint32_t need = (size + 63u) & ~63u;
  if (!s->chunk || s->chunk_used + need > CHUNK_BYTES) {
    if (s->chunk) {
      bp_status_t st = vkb_stream_release(s, s->chunk);
      s->chunk = NULL;
      if (st != BP_OK) return st;
    }
    bp_status_t st = vkb_alloc(s->d, true, CHUNK_BYTES, &s->chunk);
    if (st != BP_OK) return st;
    s->chunk_used = 0;
  }
  memcpy(s->chunk->map + s->chunk_used, data, size);
  *out_addr = s->chunk->addr + s->chunk_used;
  s->chunk_used += need;
  return BP_OK;
}

vkb_stream_t *vkb_stream_or_default(vkb_device_t *d, bp_plugin_stream_t *s) {
  return s ? (vkb_stream_t *)s : d->default_stream;
}

/* ---- the descriptor's stream and event entry points -------------------- */

bp_status_t vkb_stream_create(bp_plugin_device_t *device, bp_plugin_stream_t **out_stream) {
  return vkb_stream_new((vkb_device_t *)device, (vkb_stream_t **)out_stream);
}

void vkb_stream_destroy(bp_plugin_device_t *device, bp_plugin_stream_t *stream) {
  (void)device;
  if (stream) vkb_stream_free((vkb_stream_t *)stream);
}

bp_status_t vkb_stream_synchronize(bp_plugin_device_t *device, bp_plugin_stream_t *stream) {
  vkb_stream_t *s = vkb_stream_or_default((vkb_device_t *)device, stream);
  pthread_mutex_lock(&s->lock);
  bp_status_t st = vkb_stream_wait(s);
  pthread_mutex_unlock(&s->lock);
  return st;
}

typedef struct vkb_event {
  VkQueryPool query;
  vkb_stream_t *stream; /* where it was last recorded, NULL if never */
  uint64_t value;       /* the timeline value that reaches it */
} vkb_event_t;

bp_status_t vkb_event_create(bp_plugin_device_t *device, bp_plugin_event_t **out_event) {
  vkb_device_t *d = (vkb_device_t *)device;
  *out_event = NULL;
  vkb_event_t *e = calloc(1, sizeof *e);
  if (!e) return BP_ERR_OUT_OF_MEMORY;
  VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                              .queryType = VK_QUERY_TYPE_TIMESTAMP,
                              .queryCount = 1};
  bp_status_t st =
      vkb_check(d->fn.vkCreateQueryPool(d->dev, &qi, NULL, &e->query), "vkCreateQueryPool");
  if (st != BP_OK) {
    free(e);
    return st;
  }
  *out_event = (bp_plugin_event_t *)e;
  return BP_OK;
}

void vkb_event_destroy(bp_plugin_device_t *device, bp_plugin_event_t *event) {
  vkb_device_t *d = (vkb_device_t *)device;
  vkb_event_t *e = (vkb_event_t *)event;
  if (!e) return;
  if (e->stream) vkb_device_synchronize(device); /* the query may still be written */
  d->fn.vkDestroyQueryPool(d->dev, e->query, NULL);
  free(e);
}

/* Records a timestamp and submits, so the event has a definite value that
 * other streams and the host can wait for. */
bp_status_t vkb_event_record(bp_plugin_device_t *device, bp_plugin_event_t *event,
                             bp_plugin_stream_t *stream) {
  vkb_device_t *d = (vkb_device_t *)device;
  vkb_event_t *e = (vkb_event_t *)event;
  vkb_stream_t *s = vkb_stream_or_default(d, stream);
  pthread_mutex_lock(&s->lock);
  VkCommandBuffer cb;
  bp_status_t st = vkb_stream_cmd(s, &cb);
  if (st == BP_OK) {
    d->fn.vkCmdResetQueryPool(cb, e->query, 0, 1);
    d->fn.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, e->query, 0);
    st = vkb_stream_flush(s);
  }
  if (st == BP_OK) {
    e->stream = s;
    e->value = s->submitted;
  }
  pthread_mutex_unlock(&s->lock);
  return st;
}

bp_status_t vkb_stream_wait_event(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                                  bp_plugin_event_t *event) {
  vkb_event_t *e = (vkb_event_t *)event;
  vkb_stream_t *s = vkb_stream_or_default((vkb_device_t *)device, stream);
  if (!e->stream || e->stream == s)
    return BP_OK; /* never recorded, or already ordered by the stream */
  pthread_mutex_lock(&s->lock);
  bp_status_t st = BP_OK;
  if (s->nwait == 8) st = vkb_stream_flush(s);
  if (st == BP_OK) {
    /* The wait applies to the next submission, which also holds anything
     * recorded before this call: stricter than needed, never wrong. */
    s->wait_sem[s->nwait] = e->stream->timeline;
    s->wait_val[s->nwait++] = e->value;
  }
  pthread_mutex_unlock(&s->lock);
  return st;
}

bp_status_t vkb_event_synchronize(bp_plugin_device_t *device, bp_plugin_event_t *event) {
  (void)device;
  vkb_event_t *e = (vkb_event_t *)event;
  return e->stream ? wait_value(e->stream, e->value) : BP_OK;
}

bp_status_t vkb_event_elapsed(bp_plugin_device_t *device, bp_plugin_event_t *start,
                              bp_plugin_event_t *end, double *out_ms) {
  vkb_device_t *d = (vkb_device_t *)device;
  vkb_event_t *ev[2] = {(vkb_event_t *)start, (vkb_event_t *)end};
  uint64_t t[2];
  *out_ms = 0;
  for (int i = 0; i < 2; i++) {
    if (!ev[i]->stream)
      return vkb_fail(BP_ERR_INVALID_ARGUMENT, "vulkan: event_elapsed: event never recorded");
    bp_status_t st = wait_value(ev[i]->stream, ev[i]->value);
    if (st == BP_OK)
      st = vkb_check(d->fn.vkGetQueryPoolResults(d->dev, ev[i]->query, 0, 1, sizeof t[i], &t[i],
                                                 sizeof t[i],
                                                 VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                     "vkGetQueryPoolResults");
    if (st != BP_OK) return st;
  }
  *out_ms = (double)(int64_t)(t[1] - t[0]) * d->timestamp_period / 1e6;
  return BP_OK;
}
