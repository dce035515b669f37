/*
 * trace.c — layer-trace.so: every op call, with its op, tensor shapes and
 * dtypes, device, stream, status and timing, written as Chrome / Perfetto
 * trace JSON ("traceEvents", complete events with ph "X", ts and dur in
 * microseconds) that opens in ui.perfetto.dev or chrome://tracing. One
 * track (tid) per stream, named after its device. The file is written when
 * the process exits: BACKPLANE_TRACE_FILE, default backplane-trace.json in
 * the working directory. `bp trace -- COMMAND` sets both up.
 *
 * Timing is the host's around the plugin call (the enqueue, on a backend
 * that queues). BACKPLANE_LAYER_SYNC=1 waits for the stream after each op,
 * so dur covers the work; BACKPLANE_TRACE_DEVICE_TIME=1 also records an
 * event pair around the op where the plugin has events and adds the
 * device's own elapsed time as args.device_us. A native graph's launch is
 * one event named graph_launch; copies (mem_write, mem_read, mem_copy, with
 * args.bytes) and custom kernel launches are events too.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/layers/common/layer_common.h"

static const bp_host_services_t *host;
static bool sync_each_op, device_time;
static uint64_t t_origin;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static char *events; /* the events so far, comma-separated JSON objects */
static size_t events_len, events_cap, event_count;

/* Streams seen, in order: their index + 1 is their track (tid). */
#define TRACE_MAX_STREAMS 4096
static const void *streams[TRACE_MAX_STREAMS];
static unsigned stream_count;

/* Appends to events under trace_lock; drops the text when memory runs out. */
static void append(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void append(const char *fmt, ...) {
  for (int tries = 0; tries < 2; tries++) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = events_cap - events_len;
    int n = vsnprintf(events ? events + events_len : NULL, events ? room : 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < room) {
      events_len += (size_t)n;
      return;
    }
    size_t cap = (events_cap ? 2 * events_cap : 1 << 16) + (size_t)n;
    char *e = realloc(events, cap);
    if (!e) return;
    events = e;
    events_cap = cap;
  }
}

/* A name from a plugin, made safe for a JSON string. */
static void safe_name(const char *s, char *out, size_t size) {
  size_t n = 0;
  for (; *s && n + 1 < size; s++)
    out[n++] = (*s >= ' ' && *s <= '~' && *s != '"' && *s != '\\') ? *s : '?';
  out[n] = '\0';
}

/* Under trace_lock: the track of stream s, naming it on first sight. */
static unsigned track_of(const lc_instance_t *in, const void *s) {
  for (unsigned i = 0; i < stream_count; i++)
    if (streams[i] == s) return i + 1;
  if (stream_count == TRACE_MAX_STREAMS) return 0;
  streams[stream_count++] = s;
  char dev[256];
  safe_name(in->device_name, dev, sizeof dev);
  append(
      "%s{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %u, \"args\": {\"name\": "
      "\"%s stream %u\"}}",
      event_count++ ? ",\n" : "", (int)getpid(), stream_count, dev, stream_count);
  return stream_count;
}

static void shapes_and_dtypes(bp_op_t op, const void *args, char *shapes, char *dtypes,
                              size_t size) {
  const bp_plugin_tensor_t *t[LC_MAX_TENSORS];
  int n = lc_op_tensors(op, args, t);
  size_t a = 0, b = 0;
  shapes[0] = dtypes[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (!lc_tensor_present(t[i])) continue;
    char sh[160];
    lc_shape_text(t[i], sh, sizeof sh);
    a += (size_t)snprintf(shapes + a, a < size ? size - a : 0, "%s\"%s\"", a ? ", " : "", sh);
    b += (size_t)snprintf(dtypes + b, b < size ? size - b : 0, "%s\"%s\"", b ? ", " : "",
                          lc_dtype_name(t[i]->dtype));
    if (a >= size || b >= size) break;
  }
}

static void record(const lc_instance_t *in, bp_op_t op, const void *s, const void *args,
                   uint64_t t0, uint64_t t1, bp_status_t st, double device_us) {
  char shapes[1024], dtypes[256], dev[256], backend[64], extra[64] = "";
  shapes_and_dtypes(op, args, shapes, dtypes,
                    sizeof dtypes < sizeof shapes ? sizeof dtypes : sizeof shapes);
  safe_name(in->device_name, dev, sizeof dev);
  safe_name(in->backend, backend, sizeof backend);
  if (device_us >= 0) snprintf(extra, sizeof extra, ", \"device_us\": %.3f", device_us);
  pthread_mutex_lock(&trace_lock);
  unsigned tid = track_of(in, s);
  append("%s{\"name\": \"%s\", \"cat\": \"op\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, "
         "\"pid\": %d, "
         "\"tid\": %u, \"args\": {\"backend\": \"%s\", \"device\": \"%s\", \"device_index\": %u, "
         "\"stream\": \"%p\", \"shapes\": [%s], \"dtypes\": [%s], \"status\": %d%s}}",
         event_count++ ? ",\n" : "", lc_op_name(op), (t0 - t_origin) / 1e3, (t1 - t0) / 1e3,
         (int)getpid(), tid, backend, dev, in->backend_index, s, shapes, dtypes, (int)st, extra);
  pthread_mutex_unlock(&trace_lock);
}

/* An event with no tensors: a graph launch (cat "graph"), a copy (cat
 * "copy", with its bytes) or a custom kernel launch (cat "kernel"). */
static void record_named(const lc_instance_t *in, const char *name, const char *cat, const void *s,
                         uint64_t t0, uint64_t t1, bp_status_t st, uint64_t bytes) {
  char dev[256], backend[64];
  safe_name(in->device_name, dev, sizeof dev);
  safe_name(in->backend, backend, sizeof backend);
  pthread_mutex_lock(&trace_lock);
  unsigned tid = track_of(in, s);
  append("%s{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, "
         "\"pid\": %d, "
         "\"tid\": %u, \"args\": {\"backend\": \"%s\", \"device\": \"%s\", \"device_index\": %u, "
         "\"stream\": \"%p\", \"status\": %d, \"bytes\": %llu}}",
         event_count++ ? ",\n" : "", name, cat, (t0 - t_origin) / 1e3, (t1 - t0) / 1e3, (int)getpid(),
         tid, backend, dev, in->backend_index, s, (int)st, (unsigned long long)bytes);
  pthread_mutex_unlock(&trace_lock);
}

static bool has_events(const bp_plugin_descriptor_t *x) {
  return x->event_create && x->event_destroy && x->event_record && x->event_synchronize &&
         x->event_elapsed;
}

/* The op between two device events: its time on the device, -1 if the
 * plugin cannot tell. */
static bp_status_t run_timed_on_device(lc_instance_t *in, bp_op_t op, bp_plugin_stream_t *s,
                                       const void *args, double *out_us) {
  const bp_plugin_descriptor_t *x = in->next;
  bp_plugin_event_t *e0 = NULL, *e1 = NULL;
  *out_us = -1;
  if (!has_events(x) || x->event_create(in->device, &e0) != BP_OK ||
      x->event_create(in->device, &e1) != BP_OK || x->event_record(in->device, e0, s) != BP_OK) {
    if (e0) x->event_destroy(in->device, e0);
    if (e1) x->event_destroy(in->device, e1);
    return lc_call_next(in, op, s, args);
  }
  bp_status_t st = lc_call_next(in, op, s, args);
  double ms;
  if (st == BP_OK && x->event_record(in->device, e1, s) == BP_OK &&
      x->event_synchronize(in->device, e1) == BP_OK &&
      x->event_elapsed(in->device, e0, e1, &ms) == BP_OK)
    *out_us = ms * 1e3;
  x->event_destroy(in->device, e0);
  x->event_destroy(in->device, e1);
  return st;
}

bp_status_t lc_op_hook(lc_instance_t *in, bp_op_t op, bp_plugin_stream_t *s, const void *args) {
  double device_us = -1;
  uint64_t t0 = lc_now_ns();
  bp_status_t st = device_time ? run_timed_on_device(in, op, s, args, &device_us)
                               : lc_call_next(in, op, s, args);
  if (st == BP_OK && sync_each_op) st = in->next->stream_synchronize(in->device, s);
  record(in, op, s, args, t0, lc_now_ns(), st, device_us);
  return st;
}

/* A native graph's launch is one event (its ops were traced when it was
 * recorded, with the time it took to record them). */
static bp_status_t trace_graph_launch(bp_plugin_device_t *d, bp_plugin_stream_t *s,
                                      bp_plugin_graph_t *g) {
  lc_instance_t *in = lc_find(d);
  if (!in) return BP_ERR_INTERNAL;
  uint64_t t0 = lc_now_ns();
  bp_status_t st = in->next->graph_launch(d, s, g);
  if (st == BP_OK && sync_each_op) st = in->next->stream_synchronize(d, s);
  record_named(in, "graph_launch", "graph", s, t0, lc_now_ns(), st, 0);
  return st;
}

/* Copies and custom kernels: timed around the plugin call like ops; a
 * copy on no stream (synchronous with the device) goes to a track of its
 * own. */
static bp_status_t trace_mem_write(bp_plugin_device_t *d, bp_plugin_stream_t *s, uint64_t dst,
                                   uint64_t off, const void *src, uint64_t size) {
  lc_instance_t *in = lc_find(d);
  if (!in) return BP_ERR_INTERNAL;
  uint64_t t0 = lc_now_ns();
  bp_status_t st = in->next->mem_write(d, s, dst, off, src, size);
  record_named(in, "mem_write", "copy", s, t0, lc_now_ns(), st, size);
  return st;
}

static bp_status_t trace_mem_read(bp_plugin_device_t *d, bp_plugin_stream_t *s, void *dst,
                                  uint64_t src, uint64_t off, uint64_t size) {
  lc_instance_t *in = lc_find(d);
  if (!in) return BP_ERR_INTERNAL;
  uint64_t t0 = lc_now_ns();
  bp_status_t st = in->next->mem_read(d, s, dst, src, off, size);
  record_named(in, "mem_read", "copy", s, t0, lc_now_ns(), st, size);
  return st;
}

static bp_status_t trace_mem_copy(bp_plugin_device_t *d, bp_plugin_stream_t *s, uint64_t dst,
                                  uint64_t doff, uint64_t src, uint64_t soff, uint64_t size) {
  lc_instance_t *in = lc_find(d);
  if (!in) return BP_ERR_INTERNAL;
  uint64_t t0 = lc_now_ns();
  bp_status_t st = in->next->mem_copy(d, s, dst, doff, src, soff, size);
  record_named(in, "mem_copy", "copy", s, t0, lc_now_ns(), st, size);
  return st;
}

static bp_status_t trace_kernel_launch(bp_plugin_device_t *d, bp_plugin_stream_t *s,
                                       bp_plugin_kernel_t *k, const bp_launch_args_t *args) {
  lc_instance_t *in = lc_find(d);
  if (!in) return BP_ERR_INTERNAL;
  uint64_t t0 = lc_now_ns();
  bp_status_t st = in->next->kernel_launch(d, s, k, args);
  if (st == BP_OK && sync_each_op) st = in->next->stream_synchronize(d, s);
  record_named(in, "kernel_launch", "kernel", s, t0, lc_now_ns(), st, 0);
  return st;
}

static bp_status_t instance_init(lc_instance_t *in) {
  in->desc.mem_write = trace_mem_write; /* required entries: always there */
  in->desc.mem_read = trace_mem_read;
  in->desc.mem_copy = trace_mem_copy;
  if (in->desc.kernel_launch) in->desc.kernel_launch = trace_kernel_launch;
  if (sync_each_op) { /* no waiting while a native graph records: replay */
    in->desc.graph_begin = NULL;
    in->desc.graph_end = NULL;
    in->desc.graph_launch = NULL;
    in->desc.graph_destroy = NULL;
  }
  if (in->desc.graph_launch) in->desc.graph_launch = trace_graph_launch;
  return BP_OK;
}

static const lc_layer_t trace_layer = {.wrap_ops = true, .instance_init = instance_init};

static const char *trace_path(void) {
  const char *p = lc_getenv(host, "BACKPLANE_TRACE_FILE");
  return p && p[0] ? p : "backplane-trace.json";
}

static void write_trace(void) {
  pthread_mutex_lock(&trace_lock);
  FILE *f = fopen(trace_path(), "w");
  if (f) {
    fprintf(
        f,
        "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"producer\": \"backplane layer-trace\"},\n"
        "\"traceEvents\": [\n%s\n]}\n",
        events ? events : "");
    if (fclose(f) != 0 && host && host->log)
      host->log(BP_LOG_WARN, "trace", "could not write the trace to %s", trace_path());
  } else if (host && host->log) {
    host->log(BP_LOG_WARN, "trace", "could not open %s for the trace", trace_path());
  }
  pthread_mutex_unlock(&trace_lock);
}

static bp_status_t trace_summary(char *out, size_t size, size_t *out_len) {
  char path[512];
  safe_name(trace_path(), path, sizeof path);
  pthread_mutex_lock(&trace_lock);
  int n = snprintf(out, size, "{\"layer\": \"trace\", \"file\": \"%s\", \"events\": %zu}", path,
                   event_count);
  pthread_mutex_unlock(&trace_lock);
  *out_len = n > 0 ? (size_t)n : 0;
  return BP_OK;
}

static bool env_on(const char *name) {
  const char *v = lc_getenv(host, name);
  return v && !strcmp(v, "1");
}

static bp_status_t trace_init(const bp_host_services_t *h) {
  host = h;
  sync_each_op = env_on("BACKPLANE_LAYER_SYNC");
  device_time = env_on("BACKPLANE_TRACE_DEVICE_TIME");
  t_origin = lc_now_ns();
  atexit(write_trace);
  return BP_OK;
}

static bp_status_t trace_create(const bp_plugin_descriptor_t *next, const bp_layer_device_t *device,
                                const bp_plugin_descriptor_t **out_desc) {
  return lc_create(&trace_layer, next, device, out_desc);
}

static void trace_destroy(const bp_plugin_descriptor_t *desc) {
  lc_destroy(&trace_layer, desc);
}

BP_PLUGIN_EXPORT const bp_layer_descriptor_t bp_layer_descriptor = {
    .magic = BP_LAYER_MAGIC,
    .abi_major = BP_LAYER_ABI_MAJOR,
    .abi_minor = BP_LAYER_ABI_MINOR,
    .struct_size = sizeof(bp_layer_descriptor_t),
    .name = "trace",
    .version = "0.1.0",
    .description = "every op call as Chrome / Perfetto trace JSON",
    .init = trace_init,
    .create = trace_create,
    .destroy = trace_destroy,
    .summary = trace_summary,
};
