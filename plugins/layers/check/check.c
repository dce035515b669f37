/*
 * check.c — layer-check.so: validates what a plugin computes, for an ops
 * team running a new plugin in shadow mode. For every op (adam excepted):
 *  - nan_inf: the output holds a NaN or an infinity where no input did
 *    (skipped for ops that make them from finite inputs: exp, log, sqrt,
 *    rsqrt, div, pow, a fill with a non-finite value);
 *  - out_of_extent: bytes of the output's allocation within CHECK_GUARD
 *    bytes of the output's extent changed across the op (the guard bytes:
 *    the layer tracks each allocation's size and reads them before and
 *    after);
 *  - mismatch: at the sampling rate BACKPLANE_CHECK_SAMPLE (a fraction,
 *    default 0.01, deterministic: every 1/rate-th op) the op is re-run on
 *    the CPU plugin's cpu-ref device from the same input bytes and the
 *    normalised error sum((y-r)^2)/sum(r^2) is compared with a tolerance
 *    per dtype (BACKPLANE_CHECK_TOLERANCE overrides).
 * Each finding is logged (warn, "check") and counted; the counts, the worst
 * error per op and the first findings are the layer's summary
 * (bp_context_layer_summary(ctx, "check", ...)) and are printed at exit
 * when there was a finding. The layer waits for the stream around every op
 * and turns native graphs off (it reads memory between ops), so it is slow
 * by design.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define CHECK_GUARD 64 /* bytes watched on each side of an output */
#define CHECK_KEEP 32  /* findings kept for the summary */

const bp_host_services_t *check_host;
static double sample_rate = 0.01, tolerance_override = -1;
static atomic_uint_fast64_t ops_seen, ops_sampled, n_nan_inf, n_out_of_extent, n_mismatch;
static pthread_mutex_t findings_lock = PTHREAD_MUTEX_INITIALIZER;
static char findings[CHECK_KEEP][320];
static unsigned findings_kept;
static double max_error[BP_OP_COUNT];

/* The allocations of one device, to know how far guard bytes may reach. */
typedef struct allocs {
  pthread_mutex_t lock;
  uint64_t *ptr, *size;
  size_t n, cap;
} allocs_t;

static void finding(const lc_instance_t *in, atomic_uint_fast64_t *counter, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void finding(const lc_instance_t *in, atomic_uint_fast64_t *counter, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  atomic_fetch_add(counter, 1);
  if (check_host && check_host->log)
    check_host->log(BP_LOG_WARN, "check", "%s on '%s' (%s): %s", "check", in->device_name,
                    in->backend, what);
  pthread_mutex_lock(&findings_lock);
  if (findings_kept < CHECK_KEEP)
    snprintf(findings[findings_kept++], sizeof findings[0], "%s (%s): %s", in->device_name,
             in->backend, what);
  pthread_mutex_unlock(&findings_lock);
}

/* ---- allocations -----------------------------------------------------------*/

bp_status_t lc_mem_alloc_hook(lc_instance_t *in, uint64_t size, uint64_t *out_ptr) {
  bp_status_t st = in->next->mem_alloc(in->device, size, out_ptr);
  allocs_t *a = in->state;
  if (st != BP_OK) return st;
  pthread_mutex_lock(&a->lock);
  if (a->n == a->cap) {
    size_t cap = a->cap ? 2 * a->cap : 64;
    uint64_t *p = realloc(a->ptr, cap * sizeof *p),
             *s = p ? realloc(a->size, cap * sizeof *s) : NULL;
    if (p) a->ptr = p;
    if (s) a->size = s, a->cap = cap;
  }
  if (a->n < a->cap) {
    a->ptr[a->n] = *out_ptr;
    a->size[a->n++] = size;
  }
  pthread_mutex_unlock(&a->lock);
  return st;
}

void lc_mem_free_hook(lc_instance_t *in, uint64_t ptr) {
  allocs_t *a = in->state;
  pthread_mutex_lock(&a->lock);
  for (size_t i = 0; i < a->n; i++)
    if (a->ptr[i] == ptr) {
      a->ptr[i] = a->ptr[--a->n];
      a->size[i] = a->size[a->n];
      break;
    }
  pthread_mutex_unlock(&a->lock);
  in->next->mem_free(in->device, ptr);
}

static uint64_t alloc_size(const lc_instance_t *in, uint64_t ptr) {
  allocs_t *a = in->state;
  uint64_t size = 0;
  pthread_mutex_lock(&a->lock);
  for (size_t i = 0; i < a->n; i++)
    if (a->ptr[i] == ptr) size = a->size[i];
  pthread_mutex_unlock(&a->lock);
  return size;
}

/* ---- one op ----------------------------------------------------------------*/

typedef struct op_view {
  int n;
  const bp_plugin_tensor_t *t[LC_MAX_TENSORS];
  uint64_t lo[LC_MAX_TENSORS], hi[LC_MAX_TENSORS];
  void *before[LC_MAX_TENSORS]; /* each tensor's bytes before the op */
  uint64_t guard_lo[2], guard_hi[2];
  void *guard[2];
} op_view_t;

static bool makes_nonfinite(bp_op_t op, const void *args) {
  if (op == BP_OP_UNARY) {
    bp_unary_op_t u = ((const bp_unary_args_t *)args)->op;
    return u == BP_UNARY_EXP || u == BP_UNARY_LOG || u == BP_UNARY_SQRT || u == BP_UNARY_RSQRT;
  }
  if (op == BP_OP_BINARY) {
    bp_binary_op_t b = ((const bp_binary_args_t *)args)->op;
    return b == BP_BINARY_DIV || b == BP_BINARY_POW;
  }
  return op == BP_OP_FILL && !isfinite(((const bp_fill_args_t *)args)->value);
}

static void free_view(op_view_t *v) {
  for (int i = 0; i < v->n; i++) free(v->before[i]);
  free(v->guard[0]);
  free(v->guard[1]);
}

/* Reads every tensor and the output's guard bytes before the op. */
static bool read_before(const lc_instance_t *in, op_view_t *v) {
  for (int i = 0; i < v->n; i++) {
    if (!lc_tensor_present(v->t[i])) continue;
    lc_tensor_extent(v->t[i], &v->lo[i], &v->hi[i]);
    if (!(v->before[i] = check_read(in, v->t[i]->ptr, v->lo[i], v->hi[i]))) return false;
  }
  const bp_plugin_tensor_t *y = v->t[v->n - 1];
  uint64_t size = alloc_size(in, y->ptr), lo = v->lo[v->n - 1], hi = v->hi[v->n - 1];
  if (!size || hi > size) return true; /* imported memory: no guards */
  v->guard_lo[0] = lo > CHECK_GUARD ? lo - CHECK_GUARD : 0;
  v->guard_hi[0] = lo;
  v->guard_lo[1] = hi;
  v->guard_hi[1] = size - hi > CHECK_GUARD ? hi + CHECK_GUARD : size;
  for (int g = 0; g < 2; g++)
    if (v->guard_hi[g] > v->guard_lo[g] &&
        !(v->guard[g] = check_read(in, y->ptr, v->guard_lo[g], v->guard_hi[g])))
      return false;
  return true;
}

static double tolerance_for(bp_dtype_t dt) {
  if (tolerance_override >= 0) return tolerance_override;
  switch (dt) {
  case BP_F64:
    return 1e-10;
  case BP_F32:
    return 1e-6;
  case BP_F16:
    return 1e-4;
  case BP_BF16:
    return 1e-3;
  default:
    return 0;
  }
}

static void compare_with_reference(const lc_instance_t *in, bp_op_t op, const void *args,
                                   op_view_t *v, const void *after, bool report) {
  const bp_plugin_tensor_t *y = v->t[v->n - 1];
  void *ref = malloc(v->hi[v->n - 1] - v->lo[v->n - 1] + 1);
  if (!ref) return;
  /* Where the output was not written, the reference keeps the before bytes. */
  memcpy(ref, v->before[v->n - 1], v->hi[v->n - 1] - v->lo[v->n - 1]);
  if (check_ref_run(op, args, v->n, v->before, v->lo, v->hi, ref) == BP_OK) {
    atomic_fetch_add(&ops_sampled, 1);
    double e = check_nmse(y, after, ref, v->lo[v->n - 1]);
    pthread_mutex_lock(&findings_lock);
    if (e > max_error[op] || isnan(e)) max_error[op] = e;
    pthread_mutex_unlock(&findings_lock);
    if (report && !(e <= tolerance_for(y->dtype)))
      finding(in, &n_mismatch,
              "mismatch: %s %s: normalised error %.3g against cpu-ref (tolerance %.3g)",
              lc_op_name(op), lc_dtype_name(y->dtype), e, tolerance_for(y->dtype));
  }
  free(ref);
}

static bool sampled_now(void) {
  uint64_t k = atomic_fetch_add(&ops_seen, 1);
  return (uint64_t)((double)(k + 1) * sample_rate) > (uint64_t)((double)k * sample_rate);
}

static void check_after(const lc_instance_t *in, bp_op_t op, const void *args, op_view_t *v,
                        bool inputs_bad) {
  const bp_plugin_tensor_t *y = v->t[v->n - 1];
  uint64_t lo = v->lo[v->n - 1];
  void *after = check_read(in, y->ptr, lo, v->hi[v->n - 1]);
  if (!after) return;
  bool nan_inf = !inputs_bad && !makes_nonfinite(op, args) && check_has_nonfinite(y, after, lo);
  if (nan_inf)
    finding(in, &n_nan_inf, "nan_inf: %s %s: the output holds NaN or Inf where no input did",
            lc_op_name(op), lc_dtype_name(y->dtype));
  for (int g = 0; g < 2; g++) {
    if (!v->guard[g]) continue;
    void *now = check_read(in, y->ptr, v->guard_lo[g], v->guard_hi[g]);
    if (now && memcmp(now, v->guard[g], v->guard_hi[g] - v->guard_lo[g]))
      finding(in, &n_out_of_extent,
              "out_of_extent: %s: bytes [%llu, %llu) of the output's allocation changed, "
              "outside its extent [%llu, %llu)",
              lc_op_name(op), (unsigned long long)v->guard_lo[g],
              (unsigned long long)v->guard_hi[g], (unsigned long long)lo,
              (unsigned long long)v->hi[v->n - 1]);
    free(now);
  }
  /* An output already reported as NaN is not reported again as a mismatch. */
  if (sampled_now()) compare_with_reference(in, op, args, v, after, !nan_inf);
  free(after);
}

bp_status_t lc_op_hook(lc_instance_t *in, bp_op_t op, bp_plugin_stream_t *s, const void *args) {
  op_view_t v;
  memset(&v, 0, sizeof v);
  v.n = lc_op_tensors(op, args, v.t);
  const bp_plugin_descriptor_t *x = in->next;
  if (v.n == 0 || x->stream_synchronize(in->device, s) != BP_OK || !read_before(in, &v)) {
    free_view(&v); /* adam, or memory the layer cannot read: run unchecked */
    return lc_call_next(in, op, s, args);
  }
  bool inputs_bad = false;
  for (int i = 0; i < v.n; i++)
    if (v.before[i] && check_has_nonfinite(v.t[i], v.before[i], v.lo[i]) &&
        (i < v.n - 1 || op == BP_OP_GEMM))
      inputs_bad = true; /* gemm's c is an input too (beta) */
  bp_status_t st = lc_call_next(in, op, s, args);
  if (st == BP_OK) st = x->stream_synchronize(in->device, s);
  if (st == BP_OK) check_after(in, op, args, &v, inputs_bad);
  free_view(&v);
  return st;
}

/* ---- the layer ---------------------------------------------------------------*/

static bp_status_t instance_init(lc_instance_t *in) {
  allocs_t *a = calloc(1, sizeof *a);
  if (!a) return BP_ERR_OUT_OF_MEMORY;
  pthread_mutex_init(&a->lock, NULL);
  in->state = a;
  /* Native graphs record ops without running them; this layer reads memory
   * between ops, so the core replays graphs op by op instead. */
  in->desc.graph_begin = NULL;
  in->desc.graph_end = NULL;
  in->desc.graph_launch = NULL;
  in->desc.graph_destroy = NULL;
  return BP_OK;
}

static void instance_fini(lc_instance_t *in) {
  allocs_t *a = in->state;
  if (!a) return;
  pthread_mutex_destroy(&a->lock);
  free(a->ptr);
  free(a->size);
  free(a);
}

static const lc_layer_t check_layer = {.wrap_ops = true,
                                       .wrap_memory = true,
                                       .instance_init = instance_init,
                                       .instance_fini = instance_fini};

static size_t summary_text(char *out, size_t size) {
  size_t n = 0;
#define PUT(...)                                                                                   \
  n += (size_t)snprintf(n < size ? out + n : NULL, n < size ? size - n : 0, __VA_ARGS__)
  PUT("{\"layer\": \"check\", \"ops\": %llu, \"sampled\": %llu, \"sample_rate\": %g, \"nan_inf\": "
      "%llu, "
      "\"out_of_extent\": %llu, \"mismatch\": %llu, \"reference\": \"%s\", \"max_error\": {",
      (unsigned long long)atomic_load(&ops_seen), (unsigned long long)atomic_load(&ops_sampled),
      sample_rate, (unsigned long long)atomic_load(&n_nan_inf),
      (unsigned long long)atomic_load(&n_out_of_extent),
      (unsigned long long)atomic_load(&n_mismatch), ops_sampled ? "cpu-ref" : "");
  pthread_mutex_lock(&findings_lock);
  int k = 0;
  for (int op = 0; op < BP_OP_COUNT; op++)
    if (max_error[op] > 0)
      PUT("%s\"%s\": %.3g", k++ ? ", " : "", lc_op_name((bp_op_t)op), max_error[op]);
  PUT("}, \"findings\": [");
  for (unsigned i = 0; i < findings_kept; i++) {
    PUT("%s\"", i ? ", " : "");
    for (const char *c = findings[i]; *c; c++)
      PUT("%c", (*c >= ' ' && *c <= '~' && *c != '"' && *c != '\\') ? *c : '?');
    PUT("\"");
  }
  pthread_mutex_unlock(&findings_lock);
  PUT("]}");
#undef PUT
  return n;
}

static bp_status_t check_summary(char *out, size_t size, size_t *out_len) {
  *out_len = summary_text(out, size);
  return BP_OK;
}

/* At exit, when something was found: one line per kind on stderr. */
static void report_at_exit(void) {
  uint64_t total =
      atomic_load(&n_nan_inf) + atomic_load(&n_out_of_extent) + atomic_load(&n_mismatch);
  const char *quiet = lc_getenv(check_host, "BACKPLANE_CHECK_AT_EXIT");
  if (!total || (quiet && !strcmp(quiet, "0"))) return;
  fprintf(stderr,
          "backplane check layer: %llu ops checked, %llu re-run on cpu-ref: %llu nan_inf, %llu "
          "out_of_extent, %llu mismatch\n",
          (unsigned long long)atomic_load(&ops_seen), (unsigned long long)atomic_load(&ops_sampled),
          (unsigned long long)atomic_load(&n_nan_inf),
          (unsigned long long)atomic_load(&n_out_of_extent),
          (unsigned long long)atomic_load(&n_mismatch));
}

static double env_number(const char *name, double fallback, double lo, double hi) {
  const char *v = lc_getenv(check_host, name);
  char *end;
  double d = v ? strtod(v, &end) : fallback;
  if (v && (end == v || *end || !(d >= lo && d <= hi))) {
    if (check_host && check_host->log)
      check_host->log(BP_LOG_WARN, "check", "%s=%s is not a number in [%g, %g]; using %g", name, v,
                      lo, hi, fallback);
    return fallback;
  }
  return d;
}

static bp_status_t check_init(const bp_host_services_t *h) {
  check_host = h;
  sample_rate = env_number("BACKPLANE_CHECK_SAMPLE", 0.01, 0, 1);
  tolerance_override = env_number("BACKPLANE_CHECK_TOLERANCE", -1, 0, 1e300);
  atexit(report_at_exit);
  return BP_OK;
}

static bp_status_t check_create(const bp_plugin_descriptor_t *next, const bp_layer_device_t *device,
                                const bp_plugin_descriptor_t **out_desc) {
  return lc_create(&check_layer, next, device, out_desc);
}

static void check_destroy(const bp_plugin_descriptor_t *desc) {
  lc_destroy(&check_layer, desc);
}

BP_PLUGIN_EXPORT const bp_layer_descriptor_t bp_layer_descriptor = {
    .magic = BP_LAYER_MAGIC,
    .abi_major = BP_LAYER_ABI_MAJOR,
    .abi_minor = BP_LAYER_ABI_MINOR,
    .struct_size = sizeof(bp_layer_descriptor_t),
    .name = "check",
    .version = "0.1.0",
    .description = "NaN/Inf, out-of-extent writes, and sampled re-runs on cpu-ref",
    .init = check_init,
    .create = check_create,
    .destroy = check_destroy,
    .summary = check_summary,
};
