/*
 * plugin_call.c — the one door: the only file in the core that calls a
 * plugin's descriptor entries (plugin lifecycle, devices, memory, streams,
 * events, ops, native graphs, custom kernels). Each wrapper zeroes its
 * out-parameters, checks that an optional entry exists, holds the stream
 * lock so work on one stream stays in order, maps a status the ABI does not
 * define to BP_ERR_INTERNAL, and turns a plugin's failure into one message
 * that names the plugin and carries its own words (logged at debug level).
 * Fallback between devices is decided here (an op the device does not claim,
 * or that its plugin refuses, goes to fallback.c); layers will plug in here.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "layers.h"
#include "schedule.h"
#include "xcopy.h"

/* A status the ABI defines, or BP_ERR_INTERNAL. */
static bp_status_t known_status(bp_status_t st) {
  return st > 0 || st < BP_ERR_BUSY ? BP_ERR_INTERNAL : st;
}

static bp_status_t plugin_failed(bp_status_t st, const bp__device_t *d, const char *what) {
  if (st == BP_OK) return st;
  st = known_status(st);
  bp__log(BP_LOG_DEBUG, BP__LOG_PLUGIN, "%s: plugin '%s' (%s) failed: %s: %s", what, d->entry.backend,
          d->entry.info.name, bp_status_name(st), bp__plugin_error()[0] ? bp__plugin_error() : "no message");
  return bp__fail(st, "%s: plugin '%s' (%s): %s", what, d->entry.backend,
                  d->entry.info.name,
                  bp__plugin_error()[0] ? bp__plugin_error() : bp_status_string(st));
}

static const char *const op_names[BP_OP_COUNT] = {
#define OP_NAME(E, name, args_t, value, capture, tensors) [value] = #name,
    BP_OP_TABLE_ALL(OP_NAME)
#undef OP_NAME
};

const char *bp_op_name(bp_op_t op) {
  return (unsigned)op < BP_OP_COUNT ? op_names[op] : "?";
}

/* The entry point of op in d's descriptor, NULL when absent. */
static const void *op_entry(const bp_plugin_descriptor_t *x, bp_op_t op) {
  switch (op) {
#define OP_ENTRY(E, name, args_t, value, capture, tensors)                      \
  case BP_OP_##E: return (const void *)x->name;
    BP_OP_TABLE_ALL(OP_ENTRY)
#undef OP_ENTRY
  case BP_OP_COUNT: break;
  }
  return NULL;
}

bool bp__plugin_claims(const bp_plugin_descriptor_t *x, const bp_device_info_t *info, bp_op_t op,
                       bp_dtype_t dtype) {
  return op_entry(x, op) && (info->op_dtypes[op] & BP_DTYPE_BIT(dtype));
}

/* Whether a device cannot run op for dtype; *why (may be NULL) then says
 * why: its text, in the words bp__require_op has always used, is written
 * now when format is true, else on demand (bp__refusal_text), so that a
 * fallback that repeats pays no formatting. No thread message is set. */
static bool unclaimed(const bp_plugin_descriptor_t *x, const bp_device_info_t *info, const char *backend,
                      bp_op_t op, bp_dtype_t dtype, const char *opname, bp__refusal_t *why, bool format) {
  bool no_entry = !op_entry(x, op);
  if (!no_entry && (info->op_dtypes[op] & BP_DTYPE_BIT(dtype))) return false;
  if (!why) return true;
  why->reason = no_entry ? BP_FALLBACK_NO_ENTRY : BP_FALLBACK_DTYPE;
  why->dtype = dtype;
  why->status = BP_ERR_UNSUPPORTED;
  why->op = op;
  why->opname = opname;
  why->device = info->name;
  why->backend = backend;
  why->text[0] = '\0';
  if (format) bp__refusal_text(why);
  return true;
}

const char *bp__refusal_text(bp__refusal_t *why) {
  if (why->text[0] || !why->opname) return why->text;
  if (why->reason == BP_FALLBACK_NO_ENTRY)
    snprintf(why->text, sizeof why->text, "%s: backend '%s' does not implement %s", why->opname, why->backend,
             bp_op_name(why->op));
  else if (why->reason == BP_FALLBACK_FEATURE)
    snprintf(why->text, sizeof why->text, "%s: device '%s' (%s) does not support %s with %s", why->opname,
             why->device, why->backend, bp_op_name(why->op),
             bp__op_feature_name(why->op, why->features & (~why->features + 1)));
  else
    snprintf(why->text, sizeof why->text, "%s: device '%s' (%s) does not support %s for %s", why->opname,
             why->device, why->backend, bp_op_name(why->op), bp_dtype_name(why->dtype));
  return why->text;
}

/* Whether args use an optional part of op (BP_FEATURE_*) that the device
 * does not claim; *why (may be NULL) then says which. */
static bool features_unclaimed(const bp_device_info_t *info, const char *backend, bp_op_t op, const void *args,
                               const size_t off[], bp__refusal_t *why, bool format) {
  uint32_t missing = bp__op_features_used(op, args) & ~info->op_features[op];
  if (!missing) return false;
  if (!why) return true;
  why->reason = BP_FALLBACK_FEATURE;
  why->features = missing;
  why->dtype = ((const bp_plugin_tensor_t *)((const char *)args + off[0]))->dtype;
  why->status = BP_ERR_UNSUPPORTED;
  why->op = op;
  why->opname = bp_op_name(op);
  why->device = info->name;
  why->backend = backend;
  why->text[0] = '\0';
  if (format) bp__refusal_text(why);
  return true;
}

/* The tensor whose dtype a claim of op names: the first, except for the
 * quantized ops whose quantized operand comes later (quantize's y,
 * qmatmul's w). */
static int claim_tensor(bp_op_t op) {
  return op == BP_OP_QUANTIZE ? 2 : op == BP_OP_QMATMUL ? 1 : 0;
}

/* A qgemm's operands (ABI 1.5): u8 (a or b) needs the u8 claim beside the
 * op's i8 one, and fp8 the claims of a's and b's fp8 dtypes: an older
 * plugin's kernels would read either as i8. */
static bool qgemm_operands_unclaimed(const bp_plugin_descriptor_t *x, const bp_device_info_t *info,
                                     const char *backend, const bp_qgemm_args_t *q,
                                     bp__refusal_t *out_why, bool format) {
  const char *name = bp_op_name(BP_OP_QGEMM);
  if (q->a.dtype == BP_FP8_E4M3 || q->a.dtype == BP_FP8_E5M2)
    return unclaimed(x, info, backend, BP_OP_QGEMM, q->a.dtype, name, out_why, format) ||
           unclaimed(x, info, backend, BP_OP_QGEMM, q->b.dtype, name, out_why, format);
  if (q->a.dtype != BP_U8 && q->b.dtype != BP_U8) return false;
  return unclaimed(x, info, backend, BP_OP_QGEMM, BP_I8, name, out_why, format) ||
         unclaimed(x, info, backend, BP_OP_QGEMM, BP_U8, name, out_why, format);
}

/* The dtypes the public entries ask a device to claim for op: the first
 * tensor's (every other float operand shares it; claim_tensor for the
 * quantized ops), a cast's target's too, each parameter's for Adam, and
 * u8 or both fp8 dtypes for a qgemm that has such operands. */
static bool claims_args(const bp_plugin_descriptor_t *x, const bp_device_info_t *info, const char *backend,
                        bp_op_t op, const void *args, bp__refusal_t *out_why, bool format) {
  if (op == BP_OP_ADAM) {
    const bp_adam_args_t *a = args;
    for (uint32_t i = 0; i < a->count; i++)
      if (unclaimed(x, info, backend, op, a->params[i].dtype, bp_op_name(op), out_why, format)) return false;
    return true;
  }
  if (op == BP_OP_QGEMM && qgemm_operands_unclaimed(x, info, backend, args, out_why, format))
    return false;
  size_t off[BP__OP_MAX_TENSORS];
  int k = bp__op_tensor_offsets(op, off);
  if (k == 0) return !unclaimed(x, info, backend, op, BP_F32, bp_op_name(op), out_why, format);
  for (int i = claim_tensor(op); i < k && i < (op == BP_OP_CAST ? 2 : claim_tensor(op) + 1); i++) {
    bp_dtype_t dt = ((const bp_plugin_tensor_t *)((const char *)args + off[i]))->dtype;
    if (unclaimed(x, info, backend, op, dt, bp_op_name(op), out_why, format)) return false;
  }
  return !features_unclaimed(info, backend, op, args, off, out_why, format);
}

bool bp__plugin_claims_args(const bp_plugin_descriptor_t *x, const bp_device_info_t *info,
                            const char *backend, bp_op_t op, const void *args, bp__refusal_t *out_why) {
  return claims_args(x, info, backend, op, args, out_why, true);
}

bp_status_t bp__require_op(const bp__device_t *d, bp_op_t op, bp_dtype_t dtype,
                           const char *opname) {
  if (!unclaimed(d->desc, &d->entry.info, d->entry.backend, op, dtype, opname, NULL, false)) return BP_OK;
  /* Another device can run it: bp__call_op decides, at the one door. */
  if (bp__fallback_possible(d, op, dtype)) return BP_OK;
  bp__refusal_t why;
  unclaimed(d->desc, &d->entry.info, d->entry.backend, op, dtype, opname, &why, true);
  return bp__fail(why.status, "%s", why.text);
}

bool bp__device_claims(const bp__device_t *d, bp_op_t op, bp_dtype_t dtype) {
  return bp__plugin_claims(d->desc, &d->entry.info, op, dtype);
}

/* Calls the plugin's op on s; the caller holds s->lock. */
static bp_status_t call_op_locked(bp__stream_t *s, bp_op_t op, const void *args) {
  bp__device_t *d = s->device;
  const bp_plugin_descriptor_t *x = d->desc;
  bp_plugin_device_t *dh = d->handle;
  bp_plugin_stream_t *sh = s->handle;
  bp_status_t st = BP_ERR_UNSUPPORTED;
  bp__plugin_error_reset();
  switch (op) {
#define OP_CALL(E, name, args_t, value, capture, tensors)                       \
  case BP_OP_##E:                                                              \
    st = x->name(dh, sh, (const args_t *)args);                                \
    break;
    BP_OP_TABLE_ALL(OP_CALL)
#undef OP_CALL
  case BP_OP_COUNT: break;
  }
  return plugin_failed(st, d, bp_op_name(op));
}

/* Runs op on s's device, or on another device when s's device cannot: it
 * does not claim the op (bp__require_op let it through because another
 * device does) or its plugin refuses it with BP_ERR_UNSUPPORTED, which the
 * ABI allows only before any work is done. The caller holds s->lock. */
static bp_status_t run_or_fall_back(bp__stream_t *s, bp_op_t op, const void *args) {
  bp__device_t *d = s->device;
  bp__refusal_t why;
  if (!claims_args(d->desc, &d->entry.info, d->entry.backend, op, args, &why, false))
    return d->fallback ? bp__fallback_run(s, op, args, &why)
                       : bp__fail(why.status, "%s", bp__refusal_text(&why));
  bp_status_t st = call_op_locked(s, op, args);
  if (st != BP_ERR_UNSUPPORTED || !d->fallback) return st;
  why.reason = BP_FALLBACK_REFUSED;
  why.dtype = BP_F32;
  size_t off[BP__OP_MAX_TENSORS];
  if (op == BP_OP_ADAM)
    why.dtype = ((const bp_adam_args_t *)args)->params[0].dtype;
  else if (bp__op_tensor_offsets(op, off) > 0)
    why.dtype = ((const bp_plugin_tensor_t *)((const char *)args + off[0]))->dtype;
  why.status = st;
  why.opname = NULL; /* the text is the plugin's message, kept now */
  snprintf(why.text, sizeof why.text, "%s", bp_last_error());
  return bp__fallback_run(s, op, args, &why);
}

bp_status_t bp__call_op(bp__stream_t *s, bp_op_t op, const void *args) {
  bp_status_t st;
  bp__device_t *d = s->device;
  bp__refusal_t why;
  bp__stream_lock(s); /* after the collectives queued on it (comm_queue.c) */
  if (!s->capture)
    st = run_or_fall_back(s, op, args);
  else if (!bp__plugin_claims_args(d->desc, &d->entry.info, d->entry.backend, op, args, &why))
    /* bp__require_op let it through for fallback: the graph scheduler
     * places it on another device (schedule.c) */
    st = bp__schedule_record_elsewhere(s->capture, op, args, &why);
  else /* capturing: record instead of running */
    st = bp__graph_record(s->capture, op, args);
  pthread_mutex_unlock(&s->lock);
  return st;
}

bp_status_t bp__call_op_unlocked(bp__stream_t *s, bp_op_t op, const void *args) {
  return call_op_locked(s, op, args);
}

bool bp__native_graphs(const bp__device_t *d) {
  const bp_plugin_descriptor_t *x = d->desc;
  if (x->struct_size < offsetof(bp_plugin_descriptor_t, graph_destroy) + sizeof(void *)) return false;
  if (!x->graph_begin || !x->graph_end || !x->graph_launch || !x->graph_destroy) return false;
  const char *env = bp__getenv("BACKPLANE_NATIVE_GRAPHS");
  return !(env && strcmp(env, "0") == 0);
}

bp_status_t bp__call_graph_begin(bp__stream_t *s) {
  bp__plugin_error_reset();
  return plugin_failed(s->device->desc->graph_begin(s->device->handle, s->handle), s->device,
                       "bp_graph_launch: graph_begin");
}

bp_status_t bp__call_graph_end(bp__stream_t *s, bp_plugin_graph_t **out_graph) {
  bp__plugin_error_reset();
  *out_graph = NULL;
  return plugin_failed(s->device->desc->graph_end(s->device->handle, s->handle, out_graph), s->device,
                       "bp_graph_launch: graph_end");
}

bp_status_t bp__call_graph_launch(bp__stream_t *s, bp_plugin_graph_t *g) {
  bp__plugin_error_reset();
  return plugin_failed(s->device->desc->graph_launch(s->device->handle, s->handle, g), s->device,
                       "bp_graph_launch");
}

void bp__call_graph_destroy(bp__device_t *d, bp_plugin_graph_t *g) {
  if (g) d->desc->graph_destroy(d->handle, g);
}

bp_status_t bp__call_mem_alloc(bp__device_t *d, uint64_t size, uint64_t *out_ptr) {
  bp__plugin_error_reset();
  *out_ptr = 0;
  bp_status_t st = d->desc->mem_alloc(d->handle, size, out_ptr);
  if (st == BP_ERR_OUT_OF_MEMORY && !bp__plugin_error()[0])
    return bp__fail(st, "bp_buffer_alloc: device '%s' out of memory: requested %llu bytes",
                    d->entry.info.name, (unsigned long long)size);
  if (st == BP_OK && !*out_ptr)
    return bp__fail(BP_ERR_INTERNAL, "bp_buffer_alloc: plugin '%s' returned success and no memory",
                    d->entry.backend);
  return plugin_failed(st, d, "bp_buffer_alloc");
}

void bp__call_mem_free(bp__device_t *d, uint64_t ptr) { d->desc->mem_free(d->handle, ptr); }

/* Takes s's lock (when there is a stream) and refuses a copy on a stream
 * that is capturing: the capture state is read under that lock. Without a
 * stream the copy is synchronous with the whole device, collectives queued
 * on its streams included. */
static bp_status_t lock_stream(bp__device_t *d, bp__stream_t *s, const char *fn) {
  if (!s) {
    bp__device_wait_host_work(d);
    return BP_OK;
  }
  bp__stream_lock(s);
  if (!s->capture) return BP_OK;
  pthread_mutex_unlock(&s->lock);
  return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: copies cannot be captured into a graph", fn);
}
static void unlock_stream(bp__stream_t *s) { if (s) pthread_mutex_unlock(&s->lock); }

bp_status_t bp__call_mem_write(bp__device_t *d, bp__stream_t *s, uint64_t dst, uint64_t off,
                               const void *src, uint64_t size) {
  bp_status_t st = lock_stream(d, s, s ? "bp_buffer_write_async" : "bp_buffer_write");
  if (st != BP_OK) return st;
  bp__plugin_error_reset();
  st = d->desc->mem_write(d->handle, s ? s->handle : NULL, dst, off, src, size);
  unlock_stream(s);
  return plugin_failed(st, d, "bp_buffer_write");
}

bp_status_t bp__call_mem_read(bp__device_t *d, bp__stream_t *s, void *dst, uint64_t src,
                              uint64_t off, uint64_t size) {
  bp_status_t st = lock_stream(d, s, s ? "bp_buffer_read_async" : "bp_buffer_read");
  if (st != BP_OK) return st;
  bp__plugin_error_reset();
  st = d->desc->mem_read(d->handle, s ? s->handle : NULL, dst, src, off, size);
  unlock_stream(s);
  return plugin_failed(st, d, "bp_buffer_read");
}

bp_status_t bp__call_mem_copy(bp__device_t *d, bp__stream_t *s, uint64_t dst, uint64_t doff,
                              uint64_t src, uint64_t soff, uint64_t size) {
  bp_status_t st = lock_stream(d, s, s ? "bp_buffer_copy_async" : "bp_buffer_copy");
  if (st != BP_OK) return st;
  bp__plugin_error_reset();
  st = d->desc->mem_copy(d->handle, s ? s->handle : NULL, dst, doff, src, soff, size);
  unlock_stream(s);
  return plugin_failed(st, d, "bp_buffer_copy");
}

bp_status_t bp__call_device_sync(bp__device_t *d) {
  bp__device_wait_host_work(d);
  bp__plugin_error_reset();
  return plugin_failed(d->desc->device_synchronize(d->handle), d, "bp_device_synchronize");
}

bp_status_t bp__call_stream_create(bp__device_t *d, bp_plugin_stream_t **out) {
  bp__plugin_error_reset();
  *out = NULL;
  bp_status_t st = d->desc->stream_create(d->handle, out);
  if (st == BP_OK && !*out) st = BP_ERR_INTERNAL;
  return plugin_failed(st, d, "bp_stream_create");
}

void bp__call_stream_destroy(bp__device_t *d, bp_plugin_stream_t *s) {
  d->desc->stream_destroy(d->handle, s);
}

bp_status_t bp__call_stream_sync(bp__device_t *d, bp_plugin_stream_t *s) {
  bp__plugin_error_reset();
  return plugin_failed(d->desc->stream_synchronize(d->handle, s), d, "bp_stream_synchronize");
}

bool bp__plugin_has_stream_native(const bp__device_t *d) {
  const bp_plugin_descriptor_t *x = d->desc;
  return x->struct_size >= offsetof(bp_plugin_descriptor_t, stream_native) + sizeof(void *) && x->stream_native;
}

void *bp__call_stream_native(bp__device_t *d, bp_plugin_stream_t *s) {
  const bp_plugin_descriptor_t *x = d->desc;
  void *native = NULL;
  if (!bp__plugin_has_stream_native(d) || !s) return NULL;
  bp__plugin_error_reset();
  return x->stream_native(d->handle, s, &native) == BP_OK ? native : NULL;
}

/* ---- the plugin itself (loader.c, registry.c) ------------------------------ */

bp_status_t bp__call_plugin_init(const bp_plugin_descriptor_t *x) {
  bp__plugin_error_reset();
  return known_status(x->init(bp__host_services()));
}

bp_status_t bp__call_plugin_probe(const bp_plugin_descriptor_t *x, bp_device_info_t *infos, uint32_t capacity,
                                  uint32_t *out_count) {
  *out_count = 0;
  for (uint32_t i = 0; i < capacity; i++) {
    memset(&infos[i], 0, sizeof infos[i]);
    infos[i].struct_size = sizeof infos[i];
  }
  bp__plugin_error_reset();
  bp_status_t st = known_status(x->probe(infos, capacity, out_count));
  if (st != BP_OK) *out_count = 0;
  return st;
}

void bp__call_plugin_shutdown(const bp_plugin_descriptor_t *x) { x->shutdown(); }

/* ---- devices (device.c) ------------------------------------------------------ */

bp_status_t bp__call_device_open(bp__device_t *d, const bp_plugin_device_config_t *config) {
  d->handle = NULL;
  bp__plugin_error_reset();
  bp_status_t st = d->desc->device_open(d->entry.backend_index, config, &d->handle);
  if (st == BP_OK && !d->handle) st = BP_ERR_INTERNAL; /* success and no device */
  if (st != BP_OK) d->handle = NULL;
  return plugin_failed(st, d, "bp_device_open");
}

void bp__call_device_close(bp__device_t *d) {
  d->desc->device_close(d->handle);
  d->handle = NULL;
}

/* ---- pinned host memory (host_memory.c) -------------------------------------- */

bool bp__plugin_has_host_memory(const bp__device_t *d) {
  const bp_plugin_descriptor_t *x = d->desc;
  return x->struct_size >= offsetof(bp_plugin_descriptor_t, host_free) + sizeof(void *) && x->host_alloc &&
         x->host_free;
}

bp_status_t bp__call_host_alloc(bp__device_t *d, uint64_t size, void **out_ptr) {
  *out_ptr = NULL;
  bp__plugin_error_reset();
  bp_status_t st = d->desc->host_alloc(d->handle, size, out_ptr);
  if (st == BP_OK && !*out_ptr) st = BP_ERR_INTERNAL;
  if (st != BP_OK) *out_ptr = NULL;
  return plugin_failed(st, d, "bp_host_alloc");
}

void bp__call_host_free(bp__device_t *d, void *ptr) { d->desc->host_free(d->handle, ptr); }

/* ---- host mapping of device memory (xcopy.c, ABI 1.4) ------------------------ */

bool bp__plugin_has_mem_map(const bp__device_t *d) {
  const bp_plugin_descriptor_t *x = d->desc;
  return x->struct_size >= offsetof(bp_plugin_descriptor_t, mem_unmap) + sizeof(void *) && x->mem_map &&
         x->mem_unmap;
}

bp_status_t bp__call_mem_map(bp__device_t *d, uint64_t ptr, uint64_t off, uint64_t size, uint32_t flags,
                             void **out_host) {
  *out_host = NULL;
  bp__plugin_error_reset();
  bp_status_t st = known_status(d->desc->mem_map(d->handle, ptr, off, size, flags, out_host));
  if (st == BP_OK && !*out_host) st = BP_ERR_INTERNAL; /* success and no pointer */
  if (st == BP_OK) return st;
  *out_host = NULL;
  /* Unmappable memory is an answer, not a failure: the caller stages. */
  if (st == BP_ERR_UNSUPPORTED) {
    bp__log(BP_LOG_DEBUG, BP__LOG_MEMORY, "mem_map: device '%s' cannot map this memory (%s); staging instead",
            d->entry.info.name, bp__plugin_error()[0] ? bp__plugin_error() : "no message");
    return st;
  }
  return plugin_failed(st, d, "bp_buffer_copy: mem_map");
}

bp_status_t bp__call_mem_unmap(bp__device_t *d, uint64_t ptr, void *host) {
  bp__plugin_error_reset();
  return plugin_failed(d->desc->mem_unmap(d->handle, ptr, host), d, "bp_buffer_copy: mem_unmap");
}

/* ---- events (stream.c) ----------------------------------------------------------- */

bool bp__plugin_has_events(const bp__device_t *d) {
  const bp_plugin_descriptor_t *x = d->desc;
  return x->event_create && x->event_destroy && x->event_record && x->stream_wait_event &&
         x->event_synchronize && x->event_elapsed;
}

bp_status_t bp__call_event_create(bp__device_t *d, bp_plugin_event_t **out_event) {
  *out_event = NULL;
  bp__plugin_error_reset();
  bp_status_t st = d->desc->event_create(d->handle, out_event);
  if (st == BP_OK && !*out_event) st = BP_ERR_INTERNAL;
  if (st != BP_OK) *out_event = NULL;
  return plugin_failed(st, d, "bp_event_create");
}

void bp__call_event_destroy(bp__device_t *d, bp_plugin_event_t *e) { d->desc->event_destroy(d->handle, e); }

bp_status_t bp__call_event_record(bp__stream_t *s, bp_plugin_event_t *e) {
  bp__stream_lock(s);
  bp__plugin_error_reset();
  bp_status_t st = s->device->desc->event_record(s->device->handle, e, s->handle);
  pthread_mutex_unlock(&s->lock);
  return plugin_failed(st, s->device, "bp_event_record");
}

bp_status_t bp__call_stream_wait_event(bp__stream_t *s, bp_plugin_event_t *e) {
  bp__stream_lock(s);
  bp__plugin_error_reset();
  bp_status_t st = s->device->desc->stream_wait_event(s->device->handle, s->handle, e);
  pthread_mutex_unlock(&s->lock);
  return plugin_failed(st, s->device, "bp_stream_wait_event");
}

bp_status_t bp__call_event_synchronize(bp__device_t *d, bp_plugin_event_t *e) {
  bp__plugin_error_reset();
  return plugin_failed(d->desc->event_synchronize(d->handle, e), d, "bp_event_synchronize");
}

bp_status_t bp__call_event_elapsed(bp__device_t *d, bp_plugin_event_t *start, bp_plugin_event_t *end,
                                   double *out_ms) {
  *out_ms = 0;
  bp__plugin_error_reset();
  bp_status_t st = d->desc->event_elapsed(d->handle, start, end, out_ms);
  if (st != BP_OK) *out_ms = 0;
  return plugin_failed(st, d, "bp_event_elapsed_ms");
}

/* ---- custom kernels (kernel.c) ---------------------------------------------------- */

bool bp__plugin_has_kernels(const bp__device_t *d) {
  const bp_plugin_descriptor_t *x = d->desc;
  return x->struct_size >= offsetof(bp_plugin_descriptor_t, kernel_launch) + sizeof(void *) &&
         x->kernel_create && x->kernel_destroy && x->kernel_launch;
}

bp_status_t bp__call_kernel_create(bp__device_t *d, const bp_kernel_source_t *src, bp_plugin_kernel_t **out) {
  *out = NULL;
  bp__plugin_error_reset();
  bp_status_t st = d->desc->kernel_create(d->handle, src, out);
  if (st == BP_OK && !*out) st = BP_ERR_INTERNAL;
  if (st != BP_OK) *out = NULL;
  return plugin_failed(st, d, "bp_kernel_create");
}

void bp__call_kernel_destroy(bp__device_t *d, bp_plugin_kernel_t *k) { d->desc->kernel_destroy(d->handle, k); }

bp_status_t bp__call_kernel_launch(bp__stream_t *s, bp_plugin_kernel_t *k, const bp_launch_args_t *args) {
  bp__stream_lock(s);
  /* The capture state is read under the lock that guards it. */
  if (s->capture) {
    pthread_mutex_unlock(&s->lock);
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "bp_kernel_launch: custom kernels cannot be captured yet");
  }
  bp__plugin_error_reset();
  bp_status_t st = s->device->desc->kernel_launch(s->device->handle, s->handle, k, args);
  pthread_mutex_unlock(&s->lock);
  return plugin_failed(st, s->device, "bp_kernel_launch");
}

/* ---- layers (layer-api.h): loading and stacking are layers.c's ------------ */

bp_status_t bp__call_layer_init(const bp_layer_descriptor_t *l) {
  bp__plugin_error_reset();
  return known_status(l->init(bp__host_services()));
}

bp_status_t bp__call_layer_create(const bp_layer_descriptor_t *l, const bp_plugin_descriptor_t *next,
                                  const bp_layer_device_t *device, const bp_plugin_descriptor_t **out_desc) {
  *out_desc = NULL;
  bp__plugin_error_reset();
  bp_status_t st = known_status(l->create(next, device, out_desc));
  if (st == BP_OK && !*out_desc) st = BP_ERR_INTERNAL; /* success and no descriptor */
  if (st != BP_OK) *out_desc = NULL;
  return st;
}

void bp__call_layer_destroy(const bp_layer_descriptor_t *l, const bp_plugin_descriptor_t *desc) {
  l->destroy(desc);
}

bp_status_t bp__call_layer_summary(const bp_layer_descriptor_t *l, char *out, size_t size, size_t *out_len) {
  *out_len = 0;
  if (l->struct_size < offsetof(bp_layer_descriptor_t, summary) + sizeof(void *) || !l->summary)
    return BP_ERR_UNSUPPORTED;
  bp__plugin_error_reset();
  out[0] = '\0';
  bp_status_t st = known_status(l->summary(out, size, out_len));
  out[size - 1] = '\0';
  return st;
}
