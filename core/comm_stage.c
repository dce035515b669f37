/*
 * comm_stage.c — what a comm plugin is handed: host pointers into the
 * buffers of a device whose memory is host memory, otherwise host copies
 * (read from the device before the call, written back after it). f16 and
 * bf16 are widened to f32 for the reducing calls of a plugin that does not
 * reduce them itself, so sums of many ranks round once, at the end. The
 * plugin never sees overlapping send and receive ranges except the exact
 * in-place form the ABI allows (send == recv for all_reduce, reduce and
 * broadcast): an in-place all_gather or reduce_scatter gets a copy of its
 * send block.
 */
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"
#include "kernels/common/bp_half.h"

static bool reducing(bp__comm_kind_t k) {
  return k == BP__COMM_ALL_REDUCE || k == BP__COMM_REDUCE_SCATTER || k == BP__COMM_REDUCE;
}

void bp__comm_extent(const bp__comm_t *c, const bp__comm_call_t *call, uint64_t *out_send, uint64_t *out_recv) {
  uint64_t n = call->count, all = call->count * (uint64_t)c->size; /* overflow checked by the caller */
  switch (call->kind) {
  case BP__COMM_ALL_REDUCE: case BP__COMM_BROADCAST: *out_send = n; *out_recv = n; return;
  case BP__COMM_ALL_GATHER: *out_send = n; *out_recv = all; return;
  case BP__COMM_REDUCE_SCATTER: *out_send = all; *out_recv = n; return;
  case BP__COMM_REDUCE: *out_send = n; *out_recv = c->rank == call->peer ? n : 0; return;
  case BP__COMM_SEND: *out_send = n; *out_recv = 0; return;
  case BP__COMM_RECV: *out_send = 0; *out_recv = n; return;
  case BP__COMM_BARRIER: break;
  }
  *out_send = *out_recv = 0;
}

static bool host_memory(const bp__device_t *d) {
  return (d->entry.info.flags & BP_DEVICE_FLAG_HOST_MEMORY) != 0;
}

static void *host_address(const bp__buffer_t *b, uint64_t off) {
  return (void *)(uintptr_t)(b->ptr + b->origin + off);
}

static bool widened(const bp__comm_t *c, const bp__comm_call_t *call) {
  return reducing(call->kind) && (call->dtype == BP_F16 || call->dtype == BP_BF16) &&
         !(c->plugin->info.reduce_dtypes & BP_DTYPE_BIT(call->dtype));
}

static void widen(bp_dtype_t dt, const uint16_t *in, float *out, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) out[i] = dt == BP_F16 ? bp_f16_to_f32(in[i]) : bp_bf16_to_f32(in[i]);
}

static void narrow(bp_dtype_t dt, const float *in, uint16_t *out, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) out[i] = dt == BP_F16 ? bp_f32_to_f16(in[i]) : bp_f32_to_bf16(in[i]);
}

static void *alloc_bytes(uint64_t n, const char *fn) {
  void *p = malloc(n ? n : 1);
  if (!p) bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: no host memory for %llu bytes of staging", fn, (unsigned long long)n);
  return p;
}

/* n elements of the call's dtype from b at off, as the plugin's dtype, in
 * fresh host memory. */
static bp_status_t copy_out(bp__device_t *d, const bp__comm_call_t *call, bp__buffer_t *b, uint64_t off,
                            uint64_t n, bool wide, void **out) {
  size_t es = bp_dtype_size(call->dtype);
  void *raw = host_memory(d) ? host_address(b, off) : alloc_bytes(n * es, call->fn);
  if (!raw) return BP_ERR_OUT_OF_MEMORY;
  bp_status_t st = BP_OK;
  if (!host_memory(d)) st = bp__call_mem_read(d, NULL, raw, b->ptr, b->origin + off, n * es);
  if (st == BP_OK && !host_memory(d) && !wide) {
    *out = raw;
    return BP_OK;
  }
  void *copy = st == BP_OK ? alloc_bytes(n * (wide ? sizeof(float) : es), call->fn) : NULL;
  if (copy && wide) widen(call->dtype, raw, copy, n);
  else if (copy) memcpy(copy, raw, n * es);
  if (!host_memory(d)) free(raw);
  if (!copy) return st == BP_OK ? BP_ERR_OUT_OF_MEMORY : st;
  *out = copy;
  return BP_OK;
}

/* Whether the call's send and receive byte ranges overlap in one buffer. */
static bool overlapping(const bp__comm_call_t *call, bp__buffer_t *send, bp__buffer_t *recv, uint64_t ns,
                        uint64_t nr) {
  if (!send || send != recv || !ns || !nr) return false;
  size_t es = bp_dtype_size(call->dtype);
  return call->send_offset < call->recv_offset + nr * es && call->recv_offset < call->send_offset + ns * es;
}

/* A plugin that takes the device's own memory gets its pointers as they
 * are: it reduces every dtype itself, and handles NCCL's in-place forms. */
static bp_status_t stage_direct(bp__comm_t *c, const bp__comm_call_t *call, bp__buffer_t *send,
                                bp__buffer_t *recv, uint64_t ns, uint64_t nr, bp__comm_stage_t *st) {
  if (widened(c, call))
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: comm plugin '%s' takes device memory but does not reduce %s",
                    call->fn, c->plugin->report.name, bp_dtype_name(call->dtype));
  st->dtype = call->dtype;
  if (ns) st->send = (void *)(uintptr_t)(send->ptr + send->origin + call->send_offset);
  if (nr) st->recv = (void *)(uintptr_t)(recv->ptr + recv->origin + call->recv_offset);
  return BP_OK;
}

bool bp__comm_stage_is_direct(const bp__comm_t *c, const bp__comm_call_t *call) {
  bool host_ok = c->plugin->info.memory_kinds & BP_COMM_MEMORY_BIT(BP_COMM_MEMORY_HOST);
  return bp__comm_direct(c) && !(widened(c, call) && host_ok);
}

bp_status_t bp__comm_stage_in(bp__comm_t *c, bp__device_t *d, const bp__comm_call_t *call, bp__buffer_t *send,
                              bp__buffer_t *recv, bp__comm_stage_t *st) {
  memset(st, 0, sizeof *st);
  uint64_t ns, nr;
  bp__comm_extent(c, call, &ns, &nr);
  bool wide = widened(c, call);
  st->memory = c->memory;
  /* A plugin handed device memory that does not reduce f16 / bf16 (a
   * CUDA-aware MPI) gets those calls staged and widened on the host. */
  if (bp__comm_stage_is_direct(c, call)) return stage_direct(c, call, send, recv, ns, nr, st);
  st->memory = BP_COMM_MEMORY_HOST;
  st->dtype = wide ? BP_F32 : call->dtype;
  size_t pes = bp_dtype_size(st->dtype);
  bool in_place = send && send == recv && call->send_offset == call->recv_offset && nr &&
                  call->kind != BP__COMM_ALL_GATHER && call->kind != BP__COMM_REDUCE_SCATTER;
  bool direct = host_memory(d) && !wide;
  if (ns) {
    if (direct && (in_place || !overlapping(call, send, recv, ns, nr))) {
      st->send = host_address(send, call->send_offset);
    } else {
      bp_status_t s = copy_out(d, call, send, call->send_offset, ns, wide, &st->send_tmp);
      if (s != BP_OK) return s;
      st->send = st->send_tmp;
    }
  }
  if (!nr) return BP_OK;
  if (in_place) {
    st->recv = st->send;
  } else if (direct) {
    st->recv = host_address(recv, call->recv_offset);
  } else {
    if (!(st->recv_tmp = alloc_bytes(nr * pes, call->fn))) return BP_ERR_OUT_OF_MEMORY;
    st->recv = st->recv_tmp;
  }
  return BP_OK;
}

bp_status_t bp__comm_stage_out(bp__comm_t *c, bp__device_t *d, const bp__comm_call_t *call, bp__buffer_t *recv,
                               const bp__comm_stage_t *st) {
  uint64_t ns, nr;
  bp__comm_extent(c, call, &ns, &nr);
  if (!nr || st->memory != BP_COMM_MEMORY_HOST || (host_memory(d) && !widened(c, call)))
    return BP_OK; /* written in place */
  size_t es = bp_dtype_size(call->dtype);
  void *raw = st->recv;
  if (widened(c, call)) {
    raw = host_memory(d) ? host_address(recv, call->recv_offset) : alloc_bytes(nr * es, call->fn);
    if (!raw) return BP_ERR_OUT_OF_MEMORY;
    narrow(call->dtype, st->recv, raw, nr);
  }
  bp_status_t s = BP_OK;
  if (!host_memory(d)) s = bp__call_mem_write(d, NULL, recv->ptr, recv->origin + call->recv_offset, raw, nr * es);
  if (raw != st->recv && !host_memory(d)) free(raw);
  return s;
}

void bp__comm_stage_free(bp__comm_stage_t *st) {
  free(st->send_tmp);
  free(st->recv_tmp);
  memset(st, 0, sizeof *st);
}
