/*
 * memory.c — device memory: large VkDeviceMemory blocks, each bound to one
 * VkBuffer with a device address, suballocated first-fit with a sorted,
 * coalesced free list. Two heaps: device-local memory for tensors and
 * host-visible coherent memory for staging and parameter blocks (the same
 * memory type on unified devices such as lavapipe).
 */
#include <stdlib.h>
#include <string.h>

#include "vkb.h"

#define BLOCK_BYTES (64ull << 20)
#define ALIGN 256ull

struct vkb_free_range {
  uint64_t offset, size;
  struct vkb_free_range *next;
};

static uint32_t find_type(const VkPhysicalDeviceMemoryProperties *mp, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < mp->memoryTypeCount; i++)
    if ((mp->memoryTypes[i].propertyFlags & want) == want) return i;
  return UINT32_MAX;
}

bp_status_t vkb_heaps_init(vkb_device_t *d) {
  VkPhysicalDeviceMemoryProperties mp;
  d->g->fn.vkGetPhysicalDeviceMemoryProperties(d->phys, &mp);
  const VkMemoryPropertyFlags hv =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  /* Unified memory (device-local and host-visible) serves both heaps and
   * lets reads and writes skip the staging copy. */
  uint32_t both = find_type(&mp, hv | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  uint32_t dev = find_type(&mp, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  uint32_t host = find_type(&mp, hv);
  if (host == UINT32_MAX)
    return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: no host-visible coherent memory type");
  bool discrete = dev != UINT32_MAX && both == UINT32_MAX;
  d->heap_host.type_index = host;
  d->heap_host.host_visible = true;
  d->heap_dev.type_index = discrete ? dev : (both != UINT32_MAX ? both : host);
  d->heap_dev.host_visible = !discrete;
  return BP_OK;
}

static void block_destroy(vkb_device_t *d, vkb_block_t *b) {
  while (b->free) {
    vkb_free_range_t *r = b->free;
    b->free = r->next;
    free(r);
  }
  if (b->buf) d->fn.vkDestroyBuffer(d->dev, b->buf, NULL);
  if (b->mem) d->fn.vkFreeMemory(d->dev, b->mem, NULL);
  free(b);
}

void vkb_heaps_destroy(vkb_device_t *d) {
  vkb_heap_t *heaps[2] = {&d->heap_dev, &d->heap_host};
  for (int i = 0; i < 2; i++)
    while (heaps[i]->blocks) {
      vkb_block_t *b = heaps[i]->blocks;
      heaps[i]->blocks = b->next;
      block_destroy(d, b);
    }
}

static bp_status_t block_create(vkb_device_t *d, vkb_heap_t *h, uint64_t size, vkb_block_t **out) {
  vkb_block_t *b = calloc(1, sizeof *b);
  vkb_free_range_t *r = calloc(1, sizeof *r);
  bp_status_t st = BP_ERR_OUT_OF_MEMORY;
  if (!b || !r) goto out;
  VkBufferCreateInfo bci = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size,
      .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
               VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT};
  st = vkb_check(d->fn.vkCreateBuffer(d->dev, &bci, NULL, &b->buf), "vkCreateBuffer");
  if (st != BP_OK) goto out;
  VkMemoryRequirements req;
  d->fn.vkGetBufferMemoryRequirements(d->dev, b->buf, &req);
  VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                     .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
  VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                             .pNext = &flags,
                             .allocationSize = req.size,
                             .memoryTypeIndex = h->type_index};
  st = vkb_check(d->fn.vkAllocateMemory(d->dev, &ai, NULL, &b->mem), "vkAllocateMemory");
  if (st != BP_OK) goto out;
  if ((st = vkb_check(d->fn.vkBindBufferMemory(d->dev, b->buf, b->mem, 0), "vkBindBufferMemory")) !=
      BP_OK)
    goto out;
  if (h->host_visible &&
      (st = vkb_check(d->fn.vkMapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, (void **)&b->map),
                      "vkMapMemory")) != BP_OK)
    goto out;
  VkBufferDeviceAddressInfo dai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                   .buffer = b->buf};
  b->addr = d->fn.vkGetBufferDeviceAddress(d->dev, &dai);
  b->size = size;
  r->size = size;
  b->free = r;
  r = NULL;
  *out = b;
out:
  free(r);
  if (st != BP_OK && b) block_destroy(d, b);
  return st;
}

/* First fit inside one block; returns the offset or UINT64_MAX. */
static uint64_t block_take(vkb_block_t *b, uint64_t size) {
  for (vkb_free_range_t **pp = &b->free; *pp; pp = &(*pp)->next) {
    vkb_free_range_t *r = *pp;
    if (r->size < size) continue;
    uint64_t off = r->offset;
    r->offset += size;
    r->size -= size;
    if (r->size == 0) {
      *pp = r->next;
      free(r);
    }
    b->used += size;
    return off;
  }
  return UINT64_MAX;
}

/* Returns a range to the sorted free list, merging with its neighbours. */
static void block_give(vkb_block_t *b, uint64_t off, uint64_t size) {
  vkb_free_range_t **pp = &b->free, *prev = NULL;
  while (*pp && (*pp)->offset < off) {
    prev = *pp;
    pp = &(*pp)->next;
  }
  b->used -= size;
  vkb_free_range_t *next = *pp;
  if (prev && prev->offset + prev->size == off) {
    prev->size += size;
    if (next && prev->offset + prev->size == next->offset) {
      prev->size += next->size;
      prev->next = next->next;
      free(next);
    }
    return;
  }
  if (next && off + size == next->offset) {
    next->offset = off;
    next->size += size;
    return;
  }
  vkb_free_range_t *r = malloc(sizeof *r);
  if (!r) return; /* the range leaks inside the block; never worse than that */
  r->offset = off;
  r->size = size;
  r->next = next;
  *pp = r;
}

bp_status_t vkb_alloc(vkb_device_t *d, bool host, uint64_t size, vkb_alloc_t **out_alloc) {
  *out_alloc = NULL;
  vkb_heap_t *h = host ? &d->heap_host : &d->heap_dev;
  uint64_t need = (size + ALIGN - 1) & ~(ALIGN - 1);
  vkb_alloc_t *a = calloc(1, sizeof *a);
  if (!a) return BP_ERR_OUT_OF_MEMORY;
  bp_status_t st = BP_OK;
  pthread_mutex_lock(&d->mem_lock);
  if (!host && d->memory_limit && d->memory_used + need > d->memory_limit) {
    st = vkb_fail(BP_ERR_OUT_OF_MEMORY, "vulkan: %llu bytes requested, limit %llu, %llu in use",
                  (unsigned long long)size, (unsigned long long)d->memory_limit,
                  (unsigned long long)d->memory_used);
    goto out;
  }
  uint64_t off = UINT64_MAX;
  vkb_block_t *b = h->blocks;
  for (; b && (off = block_take(b, need)) == UINT64_MAX; b = b->next)
    ;
  if (!b) {
    st = block_create(d, h, need > BLOCK_BYTES ? need : BLOCK_BYTES, &b);
    if (st != BP_OK) goto out;
    b->next = h->blocks;
    h->blocks = b;
    off = block_take(b, need);
  }
  a->block = b;
  a->offset = off;
  a->size = need;
  a->addr = b->addr + off;
  a->map = b->map ? b->map + off : NULL;
  a->host = host;
  if (!host) d->memory_used += need;
out:
  pthread_mutex_unlock(&d->mem_lock);
  if (st != BP_OK)
    free(a);
  else
    *out_alloc = a;
  return st;
}

void vkb_free(vkb_device_t *d, vkb_alloc_t *a) {
  if (!a) return;
  pthread_mutex_lock(&d->mem_lock);
  block_give(a->block, a->offset, a->size);
  if (!a->host) d->memory_used -= a->size;
  pthread_mutex_unlock(&d->mem_lock);
  free(a);
}

/* ---- the descriptor's memory entry points ------------------------------ */

bp_status_t vkb_mem_alloc(bp_plugin_device_t *device, uint64_t size, uint64_t *out_ptr) {
  *out_ptr = 0;
  vkb_alloc_t *a;
  bp_status_t st = vkb_alloc((vkb_device_t *)device, false, size, &a);
  if (st == BP_OK) *out_ptr = (uint64_t)(uintptr_t)a;
  return st;
}

void vkb_mem_free(bp_plugin_device_t *device, uint64_t ptr) {
  /* Queued work may still use the range; reuse must wait for it. */
  vkb_device_synchronize(device);
  vkb_free((vkb_device_t *)device, vkb_ptr(ptr));
}

static bp_status_t record_copy(vkb_stream_t *s, vkb_alloc_t *dst, uint64_t doff, vkb_alloc_t *src,
                               uint64_t soff, uint64_t size) {
  VkCommandBuffer cb;
  bp_status_t st = vkb_stream_cmd(s, &cb);
  if (st != BP_OK) return st;
  VkBufferCopy region = {
      .srcOffset = src->offset + soff, .dstOffset = dst->offset + doff, .size = size};
  s->d->fn.vkCmdCopyBuffer(cb, src->block->buf, dst->block->buf, 1, &region);
  return vkb_stream_recorded(s);
}

/* Runs fn on stream s (or the default stream, then waits for the device's
 * streams, when the caller passed no stream). */
static bp_status_t on_stream(vkb_device_t *d, bp_plugin_stream_t *stream,
                             bp_status_t (*fn)(vkb_stream_t *, void *), void *ctx) {
  vkb_stream_t *s = vkb_stream_or_default(d, stream);
  pthread_mutex_lock(&s->lock);
  bp_status_t st = fn(s, ctx);
  pthread_mutex_unlock(&s->lock);
  if (st == BP_OK && !stream) st = vkb_device_synchronize((bp_plugin_device_t *)d);
  return st;
}

typedef struct xfer {
  vkb_alloc_t *dev;
  uint64_t off, size;
  const void *src;
  void *dst;
  vkb_alloc_t *src_alloc;
  uint64_t src_off;
} xfer_t;

static bp_status_t write_fn(vkb_stream_t *s, void *ctx) {
  xfer_t *x = ctx;
  /* The host data is copied into staging now, so the caller's memory may be
   * reused at once; the device copy is ordered on the stream. */
  vkb_alloc_t *stage;
  bp_status_t st = vkb_alloc(s->d, true, x->size, &stage);
  if (st != BP_OK) return st;
  memcpy(stage->map, x->src, x->size);
  st = record_copy(s, x->dev, x->off, stage, 0, x->size);
  if (st == BP_OK)
    st = vkb_stream_release(s, stage);
  else
    vkb_free(s->d, stage);
  return st;
}

bp_status_t vkb_mem_write(bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,
                          uint64_t dst_offset, const void *src, uint64_t size) {
  vkb_device_t *d = (vkb_device_t *)device;
  xfer_t x = {.dev = vkb_ptr(dst), .off = dst_offset, .size = size, .src = src};
  if (size == 0) return BP_OK;
  /* Synchronous write to host-visible memory: wait, then plain memcpy. */
  if (!stream && x.dev->map) {
    bp_status_t st = vkb_device_synchronize(device);
    if (st == BP_OK) memcpy(x.dev->map + dst_offset, src, size);
    return st;
  }
  return on_stream(d, stream, write_fn, &x);
}

static bp_status_t read_fn(vkb_stream_t *s, void *ctx) {
  xfer_t *x = ctx;
  bp_status_t st = BP_OK;
  if (x->dev->map) {
    if ((st = vkb_stream_wait(s)) == BP_OK) memcpy(x->dst, x->dev->map + x->off, x->size);
    return st;
  }
  vkb_alloc_t *stage;
  if ((st = vkb_alloc(s->d, true, x->size, &stage)) != BP_OK) return st;
  st = record_copy(s, stage, 0, x->dev, x->off, x->size);
  if (st == BP_OK) st = vkb_stream_wait(s);
  if (st == BP_OK) memcpy(x->dst, stage->map, x->size);
  vkb_free(s->d, stage);
  return st;
}

/* Reads complete before returning, on a stream too: the copy is ordered
 * after the stream's earlier work, which is what "ordered" promises. */
bp_status_t vkb_mem_read(bp_plugin_device_t *device, bp_plugin_stream_t *stream, void *dst,
                         uint64_t src, uint64_t src_offset, uint64_t size) {
  vkb_device_t *d = (vkb_device_t *)device;
  xfer_t x = {.dev = vkb_ptr(src), .off = src_offset, .size = size, .dst = dst};
  if (size == 0) return BP_OK;
  if (!stream) {
    bp_status_t st = vkb_device_synchronize(device);
    if (st != BP_OK) return st;
  }
  return on_stream(d, stream, read_fn, &x);
}

static bp_status_t copy_fn(vkb_stream_t *s, void *ctx) {
  xfer_t *x = ctx;
  return record_copy(s, x->dev, x->off, x->src_alloc, x->src_off, x->size);
}

bp_status_t vkb_mem_copy(bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,
                         uint64_t dst_offset, uint64_t src, uint64_t src_offset, uint64_t size) {
  xfer_t x = {.dev = vkb_ptr(dst),
              .off = dst_offset,
              .size = size,
              .src_alloc = vkb_ptr(src),
              .src_off = src_offset};
  if (size == 0) return BP_OK;
  return on_stream((vkb_device_t *)device, stream, copy_fn, &x);
}

/* Device memory that is host-visible (unified devices such as lavapipe) is
 * mapped for the whole life of its block: the mapping is handed out as is.
 * It is coherent, so nothing needs flushing, and the core has synchronised
 * the device before asking. */
bp_status_t vkb_mem_map(bp_plugin_device_t *device, uint64_t ptr, uint64_t offset, uint64_t size,
                        uint32_t flags, void **out_host) {
  (void)device, (void)size, (void)flags;
  vkb_alloc_t *a = vkb_ptr(ptr);
  *out_host = NULL;
  if (!a->map) return vkb_fail(BP_ERR_UNSUPPORTED, "vulkan: this device's memory is not host-visible");
  *out_host = a->map + offset;
  return BP_OK;
}

/* Nothing to undo: the block stays mapped, and coherent memory needs no
 * flush before the next submission sees the host's writes. */
bp_status_t vkb_mem_unmap(bp_plugin_device_t *device, uint64_t ptr, void *host) {
  (void)device, (void)ptr, (void)host;
  return BP_OK;
}
