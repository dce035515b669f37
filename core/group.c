/*
 * group.c — opening several devices as one (bp_device_group_open): the
 * member list, the same-hardware rule, the group's device record, and the
 * calls that read a group's members and shares.
 *
 * The same-hardware rule (docs/runtime.md "Device groups"): two members are
 * the same hardware when both run on the host CPU (kind CPU or SOFTWARE:
 * cpu, cpu-ref, PoCL and lavapipe all compute on this machine's cores), or
 * when they report the same non-empty identity (one GPU seen through CUDA
 * and Vulkan). Counting one piece of hardware twice would double its share
 * and make the two halves of a split fight over the same cores.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group.h"

/* The key two members are compared by: "" when unknown (never equal). */
static void hardware_key(const bp_device_info_t *info, char *out, size_t size) {
  if (info->kind == BP_DEVICE_CPU || info->kind == BP_DEVICE_SOFTWARE)
    snprintf(out, size, "the host CPU");
  else
    snprintf(out, size, "%s", info->identity);
}

static bool same_hardware(const bp_device_info_t *a, const bp_device_info_t *b) {
  char ka[80], kb[80];
  hardware_key(a, ka, sizeof ka);
  hardware_key(b, kb, sizeof kb);
  return ka[0] && !strcmp(ka, kb);
}

typedef struct member_list {
  uint32_t count;
  char sel[BP_GROUP_MAX_MEMBERS][128];
} member_list_t;

/* "all": the best device of each piece of hardware (every device when
 * shared hardware is allowed), in rank order. */
static bp_status_t list_all(const bp_context_t *ctx, bool shared, member_list_t *out) {
  for (uint32_t r = 0; r < ctx->device_count && out->count < BP_GROUP_MAX_MEMBERS; r++) {
    bool dup = false;
    for (uint32_t q = 0; q < r && !shared && !dup; q++)
      dup = same_hardware(&ctx->ranked[q].info, &ctx->ranked[r].info);
    if (!dup) snprintf(out->sel[out->count++], sizeof out->sel[0], "%u", r);
  }
  if (out->count < 2)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_device_group_open: \"all\" finds %u piece(s) of hardware among %u device(s); a group needs "
                    "two (allow_shared_hardware groups devices that share hardware)",
                    out->count, ctx->device_count);
  return BP_OK;
}

/* Splits "a,b,c" into selectors; refuses empty entries and bad counts. */
static bp_status_t list_parse(const bp_context_t *ctx, const char *members, bool shared, member_list_t *out) {
  memset(out, 0, sizeof *out);
  if (!members || !members[0])
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_group_open: members is %s", members ? "empty" : "NULL");
  if (!strcmp(members, "all")) return list_all(ctx, shared, out);
  for (const char *p = members;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == 0)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_group_open: members \"%s\" has an empty entry", members);
    if (out->count == BP_GROUP_MAX_MEMBERS)
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_group_open: members \"%s\" names more than %d devices",
                      members, BP_GROUP_MAX_MEMBERS);
    if (len >= sizeof out->sel[0])
      return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_group_open: member \"%.*s...\" is too long", 32, p);
    memcpy(out->sel[out->count], p, len);
    out->sel[out->count++][len] = '\0';
    if (!comma) break;
    p = comma + 1;
  }
  if (out->count < 2)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_device_group_open: members \"%s\" names one device; a group needs at least two", members);
  return BP_OK;
}

static void close_members(bp__group_t *g) {
  for (uint32_t i = 0; i < g->count; i++) bp_device_close(g->m[i].h);
  g->count = 0;
}

void bp__group_free(bp__group_t *g) {
  if (!g) return;
  close_members(g);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

/* Opens every selector; on a failure closes what it opened. */
static bp_status_t open_members(bp_context_t *ctxh, const member_list_t *l, const bp_device_config_t *config,
                                bp__group_t *g) {
  for (uint32_t i = 0; i < l->count; i++) {
    bp_device_t *h = NULL;
    bp_status_t st = bp_device_open(ctxh, l->sel[i], config, &h);
    if (st != BP_OK) {
      char why[768];
      snprintf(why, sizeof why, "%s", bp_last_error());
      close_members(g);
      return bp__fail(st, "bp_device_group_open: member \"%s\": %s; nothing opened", l->sel[i], why);
    }
    g->m[g->count].h = h;
    g->m[g->count++].d = bp__handle_get(h, BP__H_DEVICE);
  }
  return BP_OK;
}

static int by_rank(const void *a, const void *b) {
  const bp__group_member_t *x = a, *y = b;
  return (x->d->entry.rank > y->d->entry.rank) - (x->d->entry.rank < y->d->entry.rank);
}

/* Marks each member with the first member on the same hardware; refuses
 * a shared one unless allowed. */
static bp_status_t check_hardware(bp__group_t *g, bool allow) {
  for (uint32_t i = 0; i < g->count; i++) {
    g->m[i].hardware = i;
    for (uint32_t j = 0; j < i; j++) {
      const bp_device_info_t *a = &g->m[j].d->entry.info, *b = &g->m[i].d->entry.info;
      if (!same_hardware(a, b)) continue;
      g->m[i].hardware = g->m[j].hardware;
      if (allow) break;
      char key[80];
      hardware_key(a, key, sizeof key);
      return bp__fail(BP_ERR_INVALID_ARGUMENT,
                      "bp_device_group_open: members '%s' (%s) and '%s' (%s) are the same hardware (%s%s); a group "
                      "would count it twice. Set allow_shared_hardware to group them anyway",
                      a->name, g->m[j].d->entry.backend, b->name, g->m[i].d->entry.backend,
                      a->kind == BP_DEVICE_CPU || a->kind == BP_DEVICE_SOFTWARE ? "both run on " : "identity ",
                      key);
    }
  }
  return BP_OK;
}

/* The group's ranked entry: its name lists the members. */
static void make_entry(const bp__group_t *g, bp_device_entry_t *e) {
  const bp_device_entry_t *best = &g->m[0].d->entry;
  memset(e, 0, sizeof *e);
  e->struct_size = sizeof *e;
  e->rank = best->rank;
  snprintf(e->backend, sizeof e->backend, "group");
  e->numa_node = -1;
  bp_device_info_t *i = &e->info;
  i->struct_size = sizeof *i;
  size_t len = (size_t)snprintf(i->name, sizeof i->name, "group:");
  size_t dl = 0;
  for (uint32_t k = 0; k < g->count; k++) {
    const bp_device_info_t *mi = &g->m[k].d->entry.info;
    if (len < sizeof i->name) len += (size_t)snprintf(i->name + len, sizeof i->name - len, "%s%s", k ? "," : "", mi->name);
    if (dl < sizeof i->description)
      dl += (size_t)snprintf(i->description + dl, sizeof i->description - dl, "%s%s (%s)", k ? ", " : "device group: ",
                             mi->name, g->m[k].d->entry.backend);
    i->compute_units += mi->compute_units;
    i->peak_gflops += mi->peak_gflops;
    i->bandwidth_gbs = i->bandwidth_gbs > mi->bandwidth_gbs ? i->bandwidth_gbs : mi->bandwidth_gbs;
  }
  snprintf(i->vendor, sizeof i->vendor, "backplane");
  snprintf(i->driver_version, sizeof i->driver_version, "group %s", BP_VERSION_STRING);
  i->kind = best->info.kind;
  i->score_hint = best->info.score_hint;
  /* Group buffers are host memory (see group_desc.c). */
  i->flags = BP_DEVICE_FLAG_HOST_MEMORY;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  i->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : best->info.memory_bytes;
  bp__group_op_dtypes(g, i->op_dtypes);
  bp__group_op_features(g, i->op_features);
}

static bp_status_t check_options(const bp_device_group_options_t *o) {
  if (o && o->struct_size < sizeof *o)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_group_open: opts->struct_size %u < %zu", o->struct_size,
                    sizeof *o);
  if (o && o->split_shared_hardware && !o->allow_shared_hardware)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_device_group_open: split_shared_hardware needs allow_shared_hardware");
  return BP_OK;
}

/* Builds the members of a group from the list and options. */
static bp_status_t group_build(bp_context_t *ctxh, bp_context_t *ctx, const char *members,
                               const bp_device_group_options_t *o, bp__group_t **out) {
  *out = NULL;
  bool shared = o && o->allow_shared_hardware;
  member_list_t list;
  bp_status_t st = list_parse(ctx, members, shared, &list);
  if (st != BP_OK) return st;
  bp__group_t *g = calloc(1, sizeof *g);
  if (!g) return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_device_group_open: out of memory");
  pthread_mutex_init(&g->lock, NULL);
  g->split_shared = o && o->split_shared_hardware;
  g->min_split_flops = o && o->min_split_flops ? o->min_split_flops : BP__GROUP_MIN_SPLIT_FLOPS;
  st = open_members(ctxh, &list, o ? o->member_config : NULL, g);
  if (st == BP_OK) {
    qsort(g->m, g->count, sizeof g->m[0], by_rank);
    st = check_hardware(g, shared);
  }
  if (st != BP_OK) {
    bp__group_free(g);
    return st;
  }
  for (int f = 0; f < BP_GROUP_SPLIT_COUNT; f++) bp__group_calibrate(g, (bp_group_split_t)f, BP__GROUP_CACHED);
  bp__clear_error();
  *out = g;
  return BP_OK;
}

bp_status_t bp_device_group_open(bp_context_t *ctxh, const char *members, const bp_device_group_options_t *opts,
                                 bp_device_t **out_device) {
  bp__clear_error();
  if (!out_device) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_group_open: out_device is NULL");
  *out_device = NULL;
  bp_context_t *ctx;
  bp_status_t st = bp__context_get(ctxh, "bp_device_group_open", &ctx);
  if (st == BP_OK) st = check_options(opts);
  if (st != BP_OK) return st;
  bp__group_t *g;
  st = group_build(ctxh, ctx, members, opts, &g);
  if (st != BP_OK) return st;
  bp__device_t *d = calloc(1, sizeof *d);
  if (!d) {
    bp__group_free(g);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_device_group_open: out of memory");
  }
  d->context = ctx;
  d->plugin = bp__group_plugin();
  d->desc = &d->plugin->desc;
  d->handle = (bp_plugin_device_t *)(void *)g;
  make_entry(g, &d->entry);
  d->allow_reduced_precision = opts && opts->member_config && opts->member_config->allow_reduced_precision;
  pthread_mutex_init(&d->lock, NULL);
  d->pool = bp__pool_create(0);
  d->gate = bp__gate_new();
  d->h = d->pool && d->gate ? bp__handle_add(d, BP__H_DEVICE, d->gate) : NULL;
  if (!d->h) {
    if (d->pool) bp__pool_destroy(d, d->pool);
    bp__gate_recycle(d->gate);
    pthread_mutex_destroy(&d->lock);
    free(d);
    bp__group_free(g);
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_device_group_open: out of memory or handles");
  }
  pthread_mutex_lock(&ctx->lock);
  d->next = ctx->open_devices;
  ctx->open_devices = d;
  pthread_mutex_unlock(&ctx->lock);
  bp__log(BP_LOG_INFO, BP__LOG_API, "bp_device_group_open: opened %s", d->entry.info.name);
  *out_device = d->h;
  return BP_OK;
}

/* ---- reading a group ------------------------------------------------------ */

static bp_status_t group_get(bp__device_t *d, const char *fn, bp__group_t **out) {
  *out = bp__group_of(d);
  if (!*out) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: device '%s' is not a device group", fn, d->entry.info.name);
  return BP_OK;
}

bp_status_t bp_device_group_size(const bp_device_t *h, uint32_t *out_count) {
  bp__clear_error();
  if (!out_count) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_group_size: out_count is NULL");
  *out_count = 0;
  BP__ENTER(bp__device_t, d, h, BP__H_DEVICE, "bp_device_group_size", "group");
  bp__group_t *g;
  bp_status_t st = group_get(d, "bp_device_group_size", &g);
  if (st == BP_OK) *out_count = g->count;
  return st;
}

bp_status_t bp_device_group_info(const bp_device_t *h, uint32_t index, bp_device_group_member_t *out) {
  bp__clear_error();
  if (!out) return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_group_info: out_member is NULL");
  memset(out, 0, sizeof *out);
  BP__ENTER(bp__device_t, d, h, BP__H_DEVICE, "bp_device_group_info", "group");
  bp__group_t *g;
  bp_status_t st = group_get(d, "bp_device_group_info", &g);
  if (st != BP_OK) return st;
  if (index >= g->count)
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_device_group_info: index %u out of range (%u members)", index,
                    g->count);
  const bp__group_member_t *m = &g->m[index];
  out->struct_size = sizeof *out;
  out->entry = m->d->entry;
  out->hardware = m->hardware;
  pthread_mutex_lock(&g->lock);
  for (int f = 0; f < BP_GROUP_SPLIT_COUNT; f++) {
    double share[BP_GROUP_MAX_MEMBERS];
    bp__group_shares_known(g, (bp_group_split_t)f, share);
    out->gflops[f] = m->gflops[f];
    out->share[f] = share[index];
  }
  pthread_mutex_unlock(&g->lock);
  out->ops_run = atomic_load(&m->ops_run);
  out->slices_run = atomic_load(&m->slices_run);
  return BP_OK;
}

bp_status_t bp_device_group_calibrate(bp_device_t *h, bool remeasure) {
  bp__clear_error();
  BP__ENTER(bp__device_t, d, h, BP__H_DEVICE, "bp_device_group_calibrate", "device");
  bp__group_measure_t mode = remeasure ? BP__GROUP_REMEASURE : BP__GROUP_MEASURE;
  bp__group_t *g = bp__group_of(d);
  if (!g) return bp__group_calibrate_device(d, mode); /* for the groups to come */
  bp_status_t st = BP_OK;
  for (int f = 0; st == BP_OK && f < BP_GROUP_SPLIT_COUNT; f++) st = bp__group_calibrate(g, (bp_group_split_t)f, mode);
  return st;
}
