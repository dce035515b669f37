/*
 * comm_call.c — the one door for comm plugins: the only file in the core
 * that calls a comm descriptor's entries (comm-api.h), as plugin_call.c is
 * for backends. Each wrapper zeroes its out-parameters, resets the plugin's
 * message, maps a status the ABI does not define to BP_ERR_INTERNAL and
 * turns a failure into one message naming the call and the plugin, with
 * the plugin's own words. Tracing and layers for communicators belong here.
 */
#include <string.h>

#include "comm_internal.h"

static bp_status_t known_status(bp_status_t st) {
  return st > 0 || st < BP_ERR_BUSY ? BP_ERR_INTERNAL : st;
}

const char *bp__comm_kind_name(bp__comm_kind_t kind) {
  switch (kind) {
  case BP__COMM_ALL_REDUCE: return "all_reduce";
  case BP__COMM_ALL_GATHER: return "all_gather";
  case BP__COMM_REDUCE_SCATTER: return "reduce_scatter";
  case BP__COMM_BROADCAST: return "broadcast";
  case BP__COMM_REDUCE: return "reduce";
  case BP__COMM_SEND: return "send";
  case BP__COMM_RECV: return "recv";
  case BP__COMM_BARRIER: return "barrier";
  }
  return "?";
}

bp_status_t bp__comm_call_init(const bp_comm_descriptor_t *x) {
  bp__plugin_error_reset();
  return known_status(x->init(bp__host_services()));
}

void bp__comm_call_shutdown(const bp_comm_descriptor_t *x) { x->shutdown(); }

bp_status_t bp__comm_call_probe(const bp_comm_descriptor_t *x, bp_comm_info_t *out_info) {
  memset(out_info, 0, sizeof *out_info);
  out_info->struct_size = sizeof *out_info;
  out_info->launched_rank = out_info->launched_size = -1;
  bp__plugin_error_reset();
  bp_status_t st = known_status(x->probe(out_info));
  out_info->library[sizeof out_info->library - 1] = '\0';
  out_info->description[sizeof out_info->description - 1] = '\0';
  return st;
}

static bp_status_t failed(bp_status_t st, const char *plugin, const char *fn, const char *what) {
  st = known_status(st);
  const char *said = bp__plugin_error()[0] ? bp__plugin_error() : bp_status_string(st);
  bp__log(BP_LOG_DEBUG, BP__LOG_PLUGIN, "%s: comm plugin '%s' %s failed: %s: %s", fn, plugin, what,
          bp_status_name(st), said);
  return bp__fail(st, "%s: comm plugin '%s': %s", fn, plugin, said);
}

bp_status_t bp__comm_call_create(const bp__comm_plugin_t *p, const bp_comm_config_t *config,
                                 bp_plugin_comm_t **out_comm, int32_t *out_rank, int32_t *out_size) {
  *out_comm = NULL;
  *out_rank = *out_size = 0;
  bp__plugin_error_reset();
  bp_status_t st = p->desc.comm_create(config, out_comm, out_rank, out_size);
  if (st == BP_OK && !*out_comm) st = BP_ERR_INTERNAL;
  return st == BP_OK ? st : failed(st, p->report.name, "bp_comm_create", "comm_create");
}

void bp__comm_call_destroy(const bp__comm_plugin_t *p, bp_plugin_comm_t *comm) {
  if (comm) p->desc.comm_destroy(comm);
}

static bp_comm_call_fn entry(const bp_comm_descriptor_t *x, bp__comm_kind_t kind) {
  switch (kind) {
  case BP__COMM_ALL_REDUCE: return x->all_reduce;
  case BP__COMM_ALL_GATHER: return x->all_gather;
  case BP__COMM_REDUCE_SCATTER: return x->reduce_scatter;
  case BP__COMM_BROADCAST: return x->broadcast;
  case BP__COMM_REDUCE: return x->reduce;
  case BP__COMM_SEND: return x->send;
  case BP__COMM_RECV: return x->recv;
  case BP__COMM_BARRIER: return x->barrier;
  }
  return NULL;
}

bp_status_t bp__comm_call(bp__comm_t *c, bp__comm_kind_t kind, const bp_comm_args_t *args, const char *fn) {
  bp__plugin_error_reset();
  bp_status_t st = entry(&c->plugin->desc, kind)(c->handle, args);
  return st == BP_OK ? st : failed(st, c->plugin->report.name, fn, bp__comm_kind_name(kind));
}

bool bp__comm_can_enqueue(const bp__comm_t *c) { return c->plugin->desc.complete != NULL; }

bp_status_t bp__comm_call_complete(bp__comm_t *c, const char *fn) {
  bp__plugin_error_reset();
  bp_status_t st = c->plugin->desc.complete(c->handle, c->timeout_ms);
  return st == BP_OK ? st : failed(st, c->plugin->report.name, fn, "complete");
}
