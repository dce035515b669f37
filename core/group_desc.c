/*
 * group_desc.c — the in-core descriptor behind every device group. The door
 * (plugin_call.c) calls these entries as it calls any plugin's; they reach
 * the members only through the door's bp__call_* wrappers.
 *
 * Group memory is host memory (BP_DEVICE_FLAG_HOST_MEMORY), allocated by
 * the best member whose pointers are host pointers (else by the core). A
 * member whose pointers are host pointers (cpu, cpu-ref) works on it in
 * place, with no copy; any other member gets its slice staged in and out of
 * its own memory (group_stage.c), and cross-device copies and DLPack treat
 * the group as the host. Memory on one member would spare that member the
 * staging but make every other member stage through it twice.
 *
 * Every op and copy on a group completes before its call returns (each
 * member's stream is waited for), so a group stream is always idle: its
 * events record the host time at which they are recorded, and waits have
 * nothing to wait for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "group.h"

static bp__group_t *group(bp_plugin_device_t *dev) { return (bp__group_t *)(void *)dev; }
static bp__group_stream_t *gstream(bp_plugin_stream_t *s) { return (bp__group_stream_t *)(void *)s; }
static void *host(uint64_t ptr, uint64_t off) { return (char *)(uintptr_t)ptr + off; }

/* Hands a member's failure to the door, which prefixes the group's name. */
static bp_status_t pass_error(bp_status_t st) {
  if (st != BP_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", bp_last_error());
    bp__host_services()->set_error("%s", msg);
  }
  return st;
}

static bp_status_t g_device_sync(bp_plugin_device_t *dev) {
  bp__group_t *g = group(dev);
  bp_status_t st = BP_OK;
  for (uint32_t i = 0; i < g->count && st == BP_OK; i++) st = bp__call_device_sync(g->m[i].d);
  return pass_error(st);
}

static void g_device_close(bp_plugin_device_t *dev) { bp__group_free(group(dev)); }

/* The best member whose pointers are host pointers allocates group memory
 * (the CPU plugin backs large blocks with huge pages, which its kernels
 * are tuned for); without one, the core does. */
static bp__device_t *memory_member(const bp__group_t *g) {
  for (uint32_t i = 0; i < g->count; i++)
    if (g->m[i].d->entry.info.flags & BP_DEVICE_FLAG_HOST_MEMORY) return g->m[i].d;
  return NULL;
}

static bp_status_t g_mem_alloc(bp_plugin_device_t *dev, uint64_t size, uint64_t *out_ptr) {
  *out_ptr = 0;
  bp__device_t *owner = memory_member(group(dev));
  if (owner) return pass_error(bp__call_mem_alloc(owner, size, out_ptr));
  if (size > SIZE_MAX - 64) return BP_ERR_OUT_OF_MEMORY;
  void *p = aligned_alloc(64, (size_t)((size + 63) & ~UINT64_C(63)));
  if (!p) return BP_ERR_OUT_OF_MEMORY;
  *out_ptr = (uint64_t)(uintptr_t)p;
  return BP_OK;
}

static void g_mem_free(bp_plugin_device_t *dev, uint64_t ptr) {
  bp__device_t *owner = memory_member(group(dev));
  if (owner) bp__call_mem_free(owner, ptr);
  else free((void *)(uintptr_t)ptr);
}

static bp_status_t g_mem_write(bp_plugin_device_t *dev, bp_plugin_stream_t *s, uint64_t dst, uint64_t off,
                               const void *src, uint64_t size) {
  (void)dev, (void)s;
  memmove(host(dst, off), src, (size_t)size);
  return BP_OK;
}

static bp_status_t g_mem_read(bp_plugin_device_t *dev, bp_plugin_stream_t *s, void *dst, uint64_t src,
                              uint64_t off, uint64_t size) {
  (void)dev, (void)s;
  memmove(dst, host(src, off), (size_t)size);
  return BP_OK;
}

static bp_status_t g_mem_copy(bp_plugin_device_t *dev, bp_plugin_stream_t *s, uint64_t dst, uint64_t doff,
                              uint64_t src, uint64_t soff, uint64_t size) {
  (void)dev, (void)s;
  memmove(host(dst, doff), host(src, soff), (size_t)size);
  return BP_OK;
}

/* ---- streams: one internal stream per member ---------------------------- */

bp__stream_t *bp__group_member_stream(bp__device_t *d) {
  bp__stream_t *s = calloc(1, sizeof *s);
  if (!s) {
    bp__fail(BP_ERR_OUT_OF_MEMORY, "group: out of memory for a member stream");
    return NULL;
  }
  if (bp__call_stream_create(d, &s->handle) != BP_OK) {
    free(s);
    return NULL;
  }
  s->device = d;
  pthread_mutex_init(&s->lock, NULL);
  return s;
}

void bp__group_member_stream_destroy(bp__stream_t *s) {
  if (!s) return;
  bp__call_stream_sync(s->device, s->handle);
  bp__call_stream_destroy(s->device, s->handle);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static void g_stream_destroy(bp_plugin_device_t *dev, bp_plugin_stream_t *sh) {
  (void)dev;
  bp__group_stream_t *gs = gstream(sh);
  for (uint32_t i = 0; i < gs->count; i++) bp__group_member_stream_destroy(gs->s[i]);
  free(gs);
}

static bp_status_t g_stream_create(bp_plugin_device_t *dev, bp_plugin_stream_t **out) {
  bp__group_t *g = group(dev);
  *out = NULL;
  bp__group_stream_t *gs = calloc(1, sizeof *gs);
  if (!gs) return BP_ERR_OUT_OF_MEMORY;
  for (; gs->count < g->count; gs->count++) {
    gs->s[gs->count] = bp__group_member_stream(g->m[gs->count].d);
    if (!gs->s[gs->count]) {
      bp_status_t st = pass_error(BP_ERR_INTERNAL);
      g_stream_destroy(dev, (bp_plugin_stream_t *)(void *)gs);
      return st;
    }
  }
  *out = (bp_plugin_stream_t *)(void *)gs;
  return BP_OK;
}

static bp_status_t g_stream_sync(bp_plugin_device_t *dev, bp_plugin_stream_t *sh) {
  (void)dev;
  bp__group_stream_t *gs = gstream(sh);
  bp_status_t st = BP_OK;
  for (uint32_t i = 0; i < gs->count && st == BP_OK; i++) st = bp__call_stream_sync(gs->s[i]->device, gs->s[i]->handle);
  return pass_error(st);
}

/* ---- events: host timestamps (every call has finished when it returns) -- */

typedef struct group_event {
  struct timespec when;
} group_event_t;

static bp_status_t g_event_create(bp_plugin_device_t *dev, bp_plugin_event_t **out) {
  (void)dev;
  *out = calloc(1, sizeof(group_event_t));
  return *out ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}
static void g_event_destroy(bp_plugin_device_t *dev, bp_plugin_event_t *e) {
  (void)dev;
  free(e);
}
static bp_status_t g_event_record(bp_plugin_device_t *dev, bp_plugin_event_t *e, bp_plugin_stream_t *s) {
  (void)dev, (void)s;
  clock_gettime(CLOCK_MONOTONIC, &((group_event_t *)(void *)e)->when);
  return BP_OK;
}
static bp_status_t g_stream_wait_event(bp_plugin_device_t *dev, bp_plugin_stream_t *s, bp_plugin_event_t *e) {
  (void)dev, (void)s, (void)e;
  return BP_OK;
}
static bp_status_t g_event_sync(bp_plugin_device_t *dev, bp_plugin_event_t *e) {
  (void)dev, (void)e;
  return BP_OK;
}
static bp_status_t g_event_elapsed(bp_plugin_device_t *dev, bp_plugin_event_t *a, bp_plugin_event_t *b,
                                   double *out_ms) {
  (void)dev;
  const struct timespec *x = &((group_event_t *)(void *)a)->when, *y = &((group_event_t *)(void *)b)->when;
  *out_ms = (double)(y->tv_sec - x->tv_sec) * 1e3 + (double)(y->tv_nsec - x->tv_nsec) / 1e6;
  return BP_OK;
}

/* ---- ops ------------------------------------------------------------------ */

bp_status_t bp__group_run_whole(bp__group_t *g, bp__group_stream_t *gs, bp_op_t op, const void *args) {
  char first[1024] = "";
  bp_status_t first_st = BP_OK;
  for (uint32_t i = 0; i < g->count; i++) {
    if (!bp__group_member_can(g->m[i].d, op, args)) continue;
    bp_status_t st = bp__group_run_on(gs->s[i], op, args);
    if (st == BP_OK) atomic_fetch_add(&g->m[i].ops_run, 1);
    /* A member that refuses before doing work (a shape limit) passes the
     * op to the next one. */
    if (st != BP_ERR_UNSUPPORTED) return st;
    if (first_st == BP_OK) {
      first_st = st;
      snprintf(first, sizeof first, "%s", bp_last_error());
    }
  }
  if (first_st != BP_OK) return bp__fail(first_st, "%s", first);
  return bp__fail(BP_ERR_UNSUPPORTED, "no member of the group runs %s for these dtypes", bp_op_name(op));
}

static bp_status_t group_op(bp_plugin_device_t *dev, bp_plugin_stream_t *sh, bp_op_t op, const void *args) {
  bp__group_t *g = group(dev);
  bp__group_stream_t *gs = gstream(sh);
  bp_status_t st;
  switch (op) {
  case BP_OP_GEMM: st = bp__group_gemm(g, gs, args); break;
  case BP_OP_ATTENTION: st = bp__group_attention(g, gs, args); break;
  case BP_OP_CONV2D: st = bp__group_conv2d(g, gs, args); break;
  default: st = bp__group_run_whole(g, gs, op, args); break;
  }
  return pass_error(st);
}

#define GROUP_OP(E, name, args_t, value, capture, tensors)                                         \
  static bp_status_t g_##name(bp_plugin_device_t *dev, bp_plugin_stream_t *s, const args_t *args) { \
    return group_op(dev, s, BP_OP_##E, args);                                                       \
  }
BP_OP_TABLE_ALL(GROUP_OP)
#undef GROUP_OP

void bp__group_op_dtypes(const bp__group_t *g, uint32_t *out) {
  for (uint32_t i = 0; i < g->count; i++) {
    const bp__device_t *d = g->m[i].d;
    bool host_mem = (d->entry.info.flags & BP_DEVICE_FLAG_HOST_MEMORY) != 0;
    for (int op = 0; op < BP_OP_COUNT; op++) {
      /* Adam's tensor arrays are not staged: only host-memory members. */
      if (op == BP_OP_ADAM && !host_mem) continue;
      for (int dt = 0; dt < 32; dt++) {
        if (!(d->entry.info.op_dtypes[op] & (1u << dt))) continue;
        if (bp__require_op(d, (bp_op_t)op, (bp_dtype_t)dt, "group") == BP_OK) out[op] |= 1u << dt;
      }
    }
  }
  bp__clear_error();
}

/* The optional argument parts (ABI 1.5) every member runs: a slice may
 * land on any of them. */
void bp__group_op_features(const bp__group_t *g, uint32_t *out) {
  for (int op = 0; op < BP_OP_COUNT; op++) {
    uint32_t all = g->count ? ~0u : 0u;
    for (uint32_t i = 0; i < g->count; i++) all &= g->m[i].d->entry.info.op_features[op];
    out[op] = all;
  }
}

static bp__plugin_t group_plugin = {
    .report = {.struct_size = sizeof(bp_plugin_report_t), .name = "group", .loaded = true},
    .desc =
        {
            .magic = BP_PLUGIN_MAGIC,
            .abi_major = BP_PLUGIN_ABI_MAJOR,
            .abi_minor = BP_PLUGIN_ABI_MINOR,
            .struct_size = sizeof(bp_plugin_descriptor_t),
            .name = "group",
            .version = BP_VERSION_STRING,
            .description = "device group: several devices as one (core/group*.c)",
            /* init, shutdown, probe and device_open stay NULL: a group is
             * never loaded, probed or opened through the loader. */
            .device_close = g_device_close,
            .device_synchronize = g_device_sync,
            .mem_alloc = g_mem_alloc,
            .mem_free = g_mem_free,
            .mem_write = g_mem_write,
            .mem_read = g_mem_read,
            .mem_copy = g_mem_copy,
            .stream_create = g_stream_create,
            .stream_destroy = g_stream_destroy,
            .stream_synchronize = g_stream_sync,
            .event_create = g_event_create,
            .event_destroy = g_event_destroy,
            .event_record = g_event_record,
            .stream_wait_event = g_stream_wait_event,
            .event_synchronize = g_event_sync,
            .event_elapsed = g_event_elapsed,
#define GROUP_SLOT(E, name, args_t, value, capture, tensors) .name = g_##name,
            BP_OP_TABLE_ALL(GROUP_SLOT)
#undef GROUP_SLOT
        },
    .initialised = true,
};

const bp__plugin_t *bp__group_plugin(void) { return &group_plugin; }

bp__group_t *bp__group_of(const bp__device_t *d) {
  return d && d->desc == &group_plugin.desc ? (bp__group_t *)(void *)d->handle : NULL;
}
