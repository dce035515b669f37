/*
 * stats.c — layer-stats.so: per device and op, the calls, failures, time
 * and bytes touched (the byte extents of the op's tensors). Printed to
 * stderr when the process exits (or written as JSON to
 * BACKPLANE_STATS_FILE), and available at any time as JSON through
 * bp_context_layer_summary(ctx, "stats", ...), which `bp run --stats`
 * prints. Time is the host's around the plugin call: on a backend that
 * queues work that is the time to enqueue, unless BACKPLANE_LAYER_SYNC=1
 * makes the layer wait for the stream after each op.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/layers/common/layer_common.h"

typedef struct op_counters {
  atomic_uint_fast64_t calls, failed, ns, bytes;
} op_counters_t;

/* One per device name and backend, kept for the whole process so that the
 * figures of a closed device still reach the report at exit. */
typedef struct stat_record {
  char backend[64], device[256];
  op_counters_t op[BP_OP_COUNT];
  struct stat_record *next;
} stat_record_t;

static const bp_host_services_t *host;
static stat_record_t *records;
static pthread_mutex_t records_lock = PTHREAD_MUTEX_INITIALIZER;
static bool sync_each_op;

static stat_record_t *record_for(const lc_instance_t *in) {
  pthread_mutex_lock(&records_lock);
  stat_record_t *r = records, **tail = &records;
  for (; r; tail = &r->next, r = r->next)
    if (!strcmp(r->backend, in->backend) && !strcmp(r->device, in->device_name)) break;
  if (!r && (r = calloc(1, sizeof *r))) {
    snprintf(r->backend, sizeof r->backend, "%s", in->backend);
    snprintf(r->device, sizeof r->device, "%s", in->device_name);
    *tail = r;
  }
  pthread_mutex_unlock(&records_lock);
  return r;
}

static uint64_t op_bytes(bp_op_t op, const void *args) {
  const bp_plugin_tensor_t *t[LC_MAX_TENSORS];
  int n = lc_op_tensors(op, args, t);
  uint64_t sum = 0, lo, hi;
  for (int i = 0; i < n; i++)
    if (lc_tensor_present(t[i])) {
      lc_tensor_extent(t[i], &lo, &hi);
      sum += hi - lo;
    }
  return sum;
}

bp_status_t lc_op_hook(lc_instance_t *in, bp_op_t op, bp_plugin_stream_t *s, const void *args) {
  stat_record_t *r = in->state;
  uint64_t t0 = lc_now_ns();
  bp_status_t st = lc_call_next(in, op, s, args);
  if (st == BP_OK && sync_each_op) st = in->next->stream_synchronize(in->device, s);
  uint64_t dt = lc_now_ns() - t0;
  op_counters_t *c = &r->op[op];
  atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->ns, dt, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->bytes, op_bytes(op, args), memory_order_relaxed);
  if (st != BP_OK) atomic_fetch_add_explicit(&c->failed, 1, memory_order_relaxed);
  return st;
}

static bp_status_t instance_init(lc_instance_t *in) {
  /* Waiting for the stream has no place between graph_begin and graph_end,
   * where the plugin only records: with the wait on, graphs replay op by op. */
  if (sync_each_op) {
    in->desc.graph_begin = NULL;
    in->desc.graph_end = NULL;
    in->desc.graph_launch = NULL;
    in->desc.graph_destroy = NULL;
  }
  return (in->state = record_for(in)) ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}

static const lc_layer_t stats_layer = {.wrap_ops = true, .instance_init = instance_init};

/* ---- reports -------------------------------------------------------------*/

typedef struct text {
  char *out;
  size_t size, len;
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->len < t->size ? t->out + t->len : NULL,
                    t->len < t->size ? t->size - t->len : 0, fmt, ap);
  va_end(ap);
  if (n > 0) t->len += (size_t)n;
}

/* Device and backend names come from plugins: only [ -~] minus quote and
 * backslash go into the JSON as they are. */
static void put_name(text_t *t, const char *s) {
  put(t, "\"");
  for (; *s; s++) put(t, (*s >= ' ' && *s <= '~' && *s != '"' && *s != '\\') ? "%c" : "?", *s);
  put(t, "\"");
}

static void summary_json(text_t *t) {
  put(t, "{\"layer\": \"stats\", \"ops\": [");
  int n = 0;
  pthread_mutex_lock(&records_lock);
  for (stat_record_t *r = records; r; r = r->next)
    for (int op = 0; op < BP_OP_COUNT; op++) {
      op_counters_t *c = &r->op[op];
      uint64_t calls = atomic_load(&c->calls);
      if (!calls) continue;
      put(t, "%s{\"backend\": ", n++ ? ", " : "");
      put_name(t, r->backend);
      put(t, ", \"device\": ");
      put_name(t, r->device);
      put(t, ", \"op\": \"%s\", \"calls\": %llu, \"failed\": %llu, \"ns\": %llu, \"bytes\": %llu}",
          lc_op_name((bp_op_t)op), (unsigned long long)calls,
          (unsigned long long)atomic_load(&c->failed), (unsigned long long)atomic_load(&c->ns),
          (unsigned long long)atomic_load(&c->bytes));
    }
  pthread_mutex_unlock(&records_lock);
  put(t, "]}");
}

static bp_status_t stats_summary(char *out, size_t size, size_t *out_len) {
  text_t t = {out, size, 0};
  summary_json(&t);
  *out_len = t.len;
  return BP_OK;
}

static void print_table(FILE *f) {
  fprintf(f, "backplane stats layer: %-10s %-16s %-11s %10s %8s %12s %14s\n", "backend", "device",
          "op", "calls", "failed", "total ms", "bytes");
  pthread_mutex_lock(&records_lock);
  for (stat_record_t *r = records; r; r = r->next)
    for (int op = 0; op < BP_OP_COUNT; op++) {
      op_counters_t *c = &r->op[op];
      if (!atomic_load(&c->calls)) continue;
      fprintf(f, "backplane stats layer: %-10s %-16.16s %-11s %10llu %8llu %12.3f %14llu\n",
              r->backend, r->device, lc_op_name((bp_op_t)op),
              (unsigned long long)atomic_load(&c->calls),
              (unsigned long long)atomic_load(&c->failed), atomic_load(&c->ns) / 1e6,
              (unsigned long long)atomic_load(&c->bytes));
    }
  pthread_mutex_unlock(&records_lock);
}

/* At exit: the table on stderr, or the JSON into BACKPLANE_STATS_FILE;
 * nothing with BACKPLANE_STATS_AT_EXIT=0 (bp run --stats prints its own). */
static void report_at_exit(void) {
  const char *quiet = lc_getenv(host, "BACKPLANE_STATS_AT_EXIT");
  if (!records || (quiet && !strcmp(quiet, "0"))) return;
  const char *file = lc_getenv(host, "BACKPLANE_STATS_FILE");
  if (!file || !file[0]) {
    print_table(stderr);
    return;
  }
  text_t t = {NULL, 0, 0};
  summary_json(&t);
  if (!(t.out = malloc(t.len + 1))) return;
  t.size = t.len + 1;
  t.len = 0;
  summary_json(&t);
  FILE *f = fopen(file, "w");
  if (f) {
    fprintf(f, "%s\n", t.out);
    fclose(f);
  }
  free(t.out);
}

static bp_status_t stats_init(const bp_host_services_t *h) {
  host = h;
  const char *sync = lc_getenv(host, "BACKPLANE_LAYER_SYNC");
  sync_each_op = sync && !strcmp(sync, "1");
  atexit(report_at_exit);
  return BP_OK;
}

static bp_status_t stats_create(const bp_plugin_descriptor_t *next, const bp_layer_device_t *device,
                                const bp_plugin_descriptor_t **out_desc) {
  return lc_create(&stats_layer, next, device, out_desc);
}

static void stats_destroy(const bp_plugin_descriptor_t *desc) {
  lc_destroy(&stats_layer, desc);
}

BP_PLUGIN_EXPORT const bp_layer_descriptor_t bp_layer_descriptor = {
    .magic = BP_LAYER_MAGIC,
    .abi_major = BP_LAYER_ABI_MAJOR,
    .abi_minor = BP_LAYER_ABI_MINOR,
    .struct_size = sizeof(bp_layer_descriptor_t),
    .name = "stats",
    .version = "0.1.0",
    .description = "per-op calls, failures, time and bytes, per device",
    .init = stats_init,
    .create = stats_create,
    .destroy = stats_destroy,
    .summary = stats_summary,
};
