/*
 * graph.c — native graphs (ABI 1.2): between graph_begin and graph_end the
 * ops called on a stream are recorded into a command buffer of the graph's
 * own pool instead of the stream's batch, and nothing is submitted. The
 * parameter memory, scratch and texel views those ops allocate go to the
 * graph, not to the stream's batch, so they live as long as the graph. A
 * launch submits the command buffer on the launching stream's queue after
 * what that stream has recorded (its first command is the usual global
 * barrier, which orders it after earlier submissions on the queue), and
 * signals both the stream's timeline and the graph's own, which
 * graph_destroy waits on. An op that needs the host in the middle (a read,
 * a wait) fails with BP_ERR_UNSUPPORTED and the core replays instead.
 */
#include <stdlib.h>
#include <string.h>

#include "vkb.h"

/* Waits until the queues in mask (bit i: queue i) are idle, each under its
 * lock, since a queue's host access must be externally synchronised. */
static void idle_queues(vkb_device_t *d, uint32_t mask) {
  for (uint32_t i = 0; i < d->queue_count; i++) {
    if (!(mask & (1u << i))) continue;
    pthread_mutex_lock(&d->queue_lock[i]);
    d->fn.vkQueueWaitIdle(d->queues[i]);
    pthread_mutex_unlock(&d->queue_lock[i]);
  }
}

/* Seeing the last launch's value on the graph's timeline is not enough
 * before destroying it: lavapipe (Mesa 22.3) signals the timeline before its
 * queue thread has retired the submission that waited on and signalled it,
 * and a semaphore and pool destroyed in that window leave one of the
 * driver's allocations for it behind (a small leak per graph; LeakSanitizer
 * reports it at exit without a module name, the loader having unloaded the
 * driver, so no suppression matches and the process aborts). Idling the
 * queues the graph ran on lets that thread finish first. */
static void graph_free(vkb_device_t *d, vkb_graph_t *g) {
  if (!g) return;
  if (g->launches) {
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &g->done,
                              .pValues = &g->launches};
    bool waited = d->fn.vkWaitSemaphores(d->dev, &wi, UINT64_MAX) == VK_SUCCESS;
    idle_queues(d, waited ? g->queues_used : ~0u); /* never free what may still run */
  }
  for (uint32_t i = 0; i < g->nkeep; i++) vkb_free(d, g->keep[i]);
  for (uint32_t i = 0; i < g->nviews; i++) d->fn.vkDestroyBufferView(d->dev, g->views[i], NULL);
  free(g->keep);
  free(g->views);
  if (g->done) d->fn.vkDestroySemaphore(d->dev, g->done, NULL);
  if (g->pool) /* frees g->cb too */
    d->fn.vkDestroyCommandPool(d->dev, g->pool, NULL);
  free(g);
}

static bp_status_t graph_new(vkb_device_t *d, vkb_graph_t **out) {
  *out = NULL;
  vkb_graph_t *g = calloc(1, sizeof *g);
  if (!g) return BP_ERR_OUT_OF_MEMORY;
  VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                 .queueFamilyIndex = d->queue_family};
  VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                    .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                    .commandBufferCount = 1};
  VkSemaphoreTypeCreateInfo tci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                   .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
  VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &tci};
  /* Launches may overlap (a second one submitted before the first ran). */
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                 .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT};
  bp_status_t st = vkb_check(d->fn.vkCreateCommandPool(d->dev, &pci, NULL, &g->pool),
                             "vkCreateCommandPool (graph)");
  if (st == BP_OK) {
    ai.commandPool = g->pool;
    st = vkb_check(d->fn.vkAllocateCommandBuffers(d->dev, &ai, &g->cb),
                   "vkAllocateCommandBuffers (graph)");
  }
  if (st == BP_OK)
    st = vkb_check(d->fn.vkCreateSemaphore(d->dev, &sci, NULL, &g->done),
                   "vkCreateSemaphore (graph)");
  if (st == BP_OK)
    st = vkb_check(d->fn.vkBeginCommandBuffer(g->cb, &bi), "vkBeginCommandBuffer (graph)");
  if (st != BP_OK) {
    graph_free(d, g);
    return st;
  }
  *out = g;
  return BP_OK;
}

bp_status_t vkb_graph_begin(bp_plugin_device_t *device, bp_plugin_stream_t *stream) {
  vkb_device_t *d = (vkb_device_t *)device;
  vkb_stream_t *s = vkb_stream_or_default(d, stream);
  pthread_mutex_lock(&s->lock);
  bp_status_t st = BP_OK;
  vkb_graph_t *g = NULL;
  if (s->capture) {
    st = vkb_fail(BP_ERR_INVALID_ARGUMENT, "vulkan: graph_begin: the stream is already recording");
    goto out;
  }
  /* What the stream holds so far runs before, and apart from, the graph. */
  if ((st = vkb_stream_flush(s)) != BP_OK || (st = graph_new(d, &g)) != BP_OK) goto out;
  g->saved_chunk = s->chunk;
  g->saved_chunk_used = s->chunk_used;
  g->saved_rel = s->releases;
  g->saved_nrel = s->nrel;
  g->saved_caprel = s->caprel;
  g->saved_views = s->views;
  g->saved_nviews = s->nviews;
  g->saved_capviews = s->capviews;
  s->chunk = NULL;
  s->chunk_used = 0;
  s->releases = NULL;
  s->nrel = s->caprel = 0;
  s->views = NULL;
  s->nviews = s->capviews = 0;
  s->capture = g;
out:
  pthread_mutex_unlock(&s->lock);
  return st;
}

bp_status_t vkb_graph_end(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          bp_plugin_graph_t **out_graph) {
  vkb_device_t *d = (vkb_device_t *)device;
  vkb_stream_t *s = vkb_stream_or_default(d, stream);
  *out_graph = NULL;
  pthread_mutex_lock(&s->lock);
  vkb_graph_t *g = s->capture;
  if (!g) {
    pthread_mutex_unlock(&s->lock);
    return vkb_fail(BP_ERR_INVALID_ARGUMENT, "vulkan: graph_end: the stream is not recording");
  }
  /* Everything the recorded ops allocated now belongs to the graph. */
  g->keep = s->releases;
  g->nkeep = s->nrel;
  if (s->chunk) {
    vkb_alloc_t **k = realloc(g->keep, (g->nkeep + 1) * sizeof *k);
    if (k) {
      g->keep = k;
      g->keep[g->nkeep++] = s->chunk;
    } else {
      vkb_free(d, s->chunk); /* nothing ran yet: the graph is refused */
      g->failed = BP_ERR_OUT_OF_MEMORY;
    }
  }
  g->views = s->views;
  g->nviews = s->nviews;
  s->chunk = g->saved_chunk;
  s->chunk_used = g->saved_chunk_used;
  s->releases = g->saved_rel;
  s->nrel = g->saved_nrel;
  s->caprel = g->saved_caprel;
  s->views = g->saved_views;
  s->nviews = g->saved_nviews;
  s->capviews = g->saved_capviews;
  s->capture = NULL;
  pthread_mutex_unlock(&s->lock);
  bp_status_t st = g->failed;
  if (st == BP_OK) st = vkb_check(d->fn.vkEndCommandBuffer(g->cb), "vkEndCommandBuffer (graph)");
  if (st != BP_OK) {
    graph_free(d, g);
    return st;
  }
  *out_graph = (bp_plugin_graph_t *)g;
  return BP_OK;
}

bp_status_t vkb_graph_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                             bp_plugin_graph_t *graph) {
  vkb_device_t *d = (vkb_device_t *)device;
  vkb_stream_t *s = vkb_stream_or_default(d, stream);
  vkb_graph_t *g = (vkb_graph_t *)graph;
  if (g->cmds == 0) return BP_OK;
  pthread_mutex_lock(&s->lock);
  bp_status_t st = vkb_stream_submit_graph(s, g->cb, g->done, g->launches + 1);
  if (st == BP_OK) {
    g->launches++;
    g->queues_used |= 1u << s->queue;
  }
  pthread_mutex_unlock(&s->lock);
  return st;
}

void vkb_graph_destroy(bp_plugin_device_t *device, bp_plugin_graph_t *graph) {
  graph_free((vkb_device_t *)device, (vkb_graph_t *)graph);
}
