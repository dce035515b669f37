/*
 * tc.c — environment, dtype conversions, device tensors and comparisons
 * shared by the op tests. See tc.h for the tolerances.
 *
 * The dtype conversions here are written independently of the CPU plugin's
 * (plugins/cpu/dtype.h): rounding goes through scaling by a power of two
 * and nearbyint (round half to even in the default FP environment).
 */
#include <ctype.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/common/bp_half.h"
#include "tc.h"

const bp_dtype_t tc_float_dtypes[4] = {BP_F32, BP_F16, BP_BF16, BP_F64};
const char *const tc_layout_names[TC_LAYOUT_COUNT] = {"contig", "strided",
                                                      "permuted"};
int tc_failures;
int tc_checks;

/* ---- environment ----------------------------------------------------------*/

bool tc_env_open(tc_env_t *e, bp_context_t *ctx, const char *selector) {
  memset(e, 0, sizeof *e);
  e->ctx = ctx;
  /* Suites test the device itself: automatic fallback would run an op the
   * device refuses elsewhere and hide the refusal (test_fallback opens its
   * own devices with it on). */
  bp_device_config_t native = {.struct_size = sizeof native, .no_fallback = true};
  bp_status_t st = bp_device_open(ctx, selector, &native, &e->dev);
  if (st != BP_OK) {
    fprintf(stderr, "tc: cannot open device '%s': %s (%s)\n", selector,
            bp_status_name(st), bp_last_error());
    return false;
  }
  bp_device_entry_t entry;
  if (bp_device_entry(e->dev, &entry) == BP_OK)
    snprintf(e->name, sizeof e->name, "%s", entry.info.name);
  st = bp_stream_create(e->dev, &e->s);
  if (st != BP_OK) {
    fprintf(stderr, "tc: cannot create a stream on '%s': %s\n", selector,
            bp_last_error());
    bp_device_close(e->dev);
    e->dev = NULL;
    return false;
  }
  return true;
}

const char *tc_plugin_reason(bp_context_t *ctx, const char *name, char *out, size_t size) {
  uint32_t n = 0;
  bp_context_plugin_count(ctx, &n);
  snprintf(out, size, "backend-%s.so not found on the plugin path", name);
  for (uint32_t i = 0; i < n; i++) {
    bp_plugin_report_t r;
    if (bp_context_plugin_report(ctx, i, &r) != BP_OK || strcmp(r.name, name)) continue;
    if (r.loaded)
      snprintf(out, size, "backend-%s.so loaded, but its device did not open: %s", name, bp_last_error());
    else
      snprintf(out, size, "%s", r.reason);
    break;
  }
  return out;
}

void tc_env_close(tc_env_t *e) {
  bp_stream_destroy(e->s);
  bp_device_close(e->dev);
  e->s = NULL;
  e->dev = NULL;
}

int tc_suite_setup(void **state) {
  tc_suite_t *su = calloc(1, sizeof *su);
  if (!su)
    return -1;
  bp_status_t st = bp_context_create(NULL, &su->ctx);
  if (st != BP_OK) {
    fprintf(stderr, "tc: bp_context_create: %s\n", bp_last_error());
    free(su);
    return -1;
  }
  const char *list = getenv("TC_DEVICES");
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list && *list ? list : "cpu,cpu-ref");
  char *save = NULL;
  for (char *tok = strtok_r(buf, ",", &save); tok && su->count < TC_MAX_DEVICES;
       tok = strtok_r(NULL, ",", &save)) {
    if (!tc_env_open(&su->env[su->count], su->ctx, tok)) {
      tc_suite_teardown((void **)&su);
      return -1;
    }
    su->count++;
  }
  *state = su;
  return 0;
}

int tc_suite_teardown(void **state) {
  tc_suite_t *su = *state;
  if (!su)
    return 0;
  for (int i = 0; i < su->count; i++)
    tc_env_close(&su->env[i]);
  bp_context_destroy(su->ctx);
  free(su);
  *state = NULL;
  return 0;
}

bool tc_supports(const tc_env_t *e, bp_op_t op, bp_dtype_t dt) {
  bool ok = false;
  return bp_device_supports(e->dev, op, dt, &ok) == BP_OK && ok;
}

bool tc_unary_claimed(const tc_env_t *e, bp_unary_op_t op) {
  if (op != BP_UNARY_GELU_TANH) return true;
  bp_device_entry_t entry;
  return bp_device_entry(e->dev, &entry) == BP_OK &&
         (entry.info.op_features[BP_OP_UNARY] & BP_FEATURE_UNARY_GELU_TANH);
}

/* ---- dtypes ---------------------------------------------------------------*/

/* Rounds x to a binary float with p significand bits, minimum normal
 * exponent emin and largest finite value maxv, to nearest even. */
static double round_small(double x, int p, int emin, double maxv) {
  if (isnan(x) || isinf(x) || x == 0)
    return x;
  int e = ilogb(x);
  if (e < emin)
    e = emin; /* denormal range: fixed quantum */
  double r = nearbyint(ldexp(x, p - 1 - e));
  double v = ldexp(r, e - (p - 1));
  if (fabs(v) > maxv)
    return copysign(INFINITY, x);
  return v;
}

static double round_int(double x, double lo, double hi) {
  if (isnan(x) || x == 0)
    return 0;
  if (x <= lo)
    return lo;
  if (x >= hi)
    return hi;
  double r = nearbyint(x);
  return r == 0 ? 0.0 : r; /* integers have no -0 */
}

double tc_round(bp_dtype_t dt, double x) {
  switch (dt) {
  case BP_F32: return (double)(float)x;
  case BP_F16: return round_small(x, 11, -14, 65504.0);
  case BP_BF16: return round_small(x, 8, -126, 0x1.fep127);
  case BP_F64: return x;
  case BP_I32: return round_int(x, -2147483648.0, 2147483647.0);
  case BP_I64: return round_int(x, -0x1p63, 0x1p63); /* see tc_store */
  case BP_U8: return round_int(x, 0, 255);
  default: return x;
  }
}

void tc_store(void *p, bp_dtype_t dt, double v) {
  v = tc_round(dt, v);
  switch (dt) {
  case BP_F32: {
    float f = (float)v;
    memcpy(p, &f, 4);
    break;
  }
  case BP_F16: {
    uint16_t h = bp_f64_to_f16(v);
    memcpy(p, &h, 2);
    break;
  }
  case BP_BF16: {
    uint16_t h = bp_f64_to_bf16(v);
    memcpy(p, &h, 2);
    break;
  }
  case BP_F64: memcpy(p, &v, 8); break;
  case BP_I32: {
    int32_t i = (int32_t)v;
    memcpy(p, &i, 4);
    break;
  }
  case BP_I64: {
    int64_t i = v >= 0x1p63 ? INT64_MAX : (int64_t)v;
    memcpy(p, &i, 8);
    break;
  }
  case BP_U8: *(uint8_t *)p = (uint8_t)v; break;
  default: break;
  }
}

double tc_load(const void *p, bp_dtype_t dt) {
  switch (dt) {
  case BP_F32: {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  case BP_F16: {
    uint16_t h;
    memcpy(&h, p, 2);
    return bp_f16_to_f64(h);
  }
  case BP_BF16: {
    uint16_t h;
    memcpy(&h, p, 2);
    return bp_bf16_to_f64(h);
  }
  case BP_F64: {
    double d;
    memcpy(&d, p, 8);
    return d;
  }
  case BP_I32: {
    int32_t i;
    memcpy(&i, p, 4);
    return i;
  }
  case BP_I64: {
    int64_t i;
    memcpy(&i, p, 8);
    return (double)i;
  }
  case BP_U8: return *(const uint8_t *)p;
  default: return 0;
  }
}

double tc_tol(bp_dtype_t dt) {
  switch (dt) {
  case BP_F32: return 1e-5;
  case BP_F16: return 1e-2;
  case BP_BF16: return 2e-2;
  case BP_F64: return 1e-12;
  default: return 0;
  }
}

/* ---- random ----------------------------------------------------------------*/

void tc_rng_seed(tc_rng_t *r, uint64_t seed) {
  r->s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  if (!r->s)
    r->s = 1;
}

double tc_rng_uniform(tc_rng_t *r, double lo, double hi) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  uint64_t x = r->s * 0x2545F4914F6CDD1Dull;
  return lo + (hi - lo) * ((double)(x >> 11) * 0x1p-53);
}

void tc_rng_fill(tc_rng_t *r, bp_dtype_t dt, double lo, double hi, double *v,
                 int64_t n) {
  for (int64_t i = 0; i < n; i++)
    v[i] = tc_round(dt, tc_rng_uniform(r, lo, hi));
}

/* ---- tensors -------------------------------------------------------------*/

int64_t tc_numel(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= shape[i];
  return n;
}

/* Element offset (relative to the view's first element) of logical index
 * lin, row-major over the view's shape. */
static int64_t elem_offset(const bp_tensor_t *t, int64_t lin) {
  int64_t off = 0;
  for (int d = t->rank - 1; d >= 0; d--) {
    int64_t i = lin % t->shape[d];
    lin /= t->shape[d];
    off += i * t->strides[d];
  }
  return off;
}

tc_tensor_t tc_tensor_strided(tc_env_t *e, bp_dtype_t dt, int rank,
                              const int64_t *shape, const int64_t *strides,
                              int64_t offset_elems, const double *vals) {
  tc_tensor_t r;
  memset(&r, 0, sizeof r);
  size_t es = bp_dtype_size(dt);
  r.numel = tc_numel(rank, shape);
  int64_t hi = 0;
  for (int i = 0; i < rank; i++)
    if (shape[i] > 0 && strides[i] > 0)
      hi += (shape[i] - 1) * strides[i];
  /* 4 trailing elements catch writes just past the view. */
  r.bytes = (uint64_t)(offset_elems + hi + 1 + 4) * es;
  if (bp_buffer_alloc(e->dev, r.bytes, &r.buf) != BP_OK) {
    print_error("tc_tensor: bp_buffer_alloc(%llu): %s\n",
                (unsigned long long)r.bytes, bp_last_error());
    fail();
  }
  if (bp_tensor_init(r.buf, (uint64_t)offset_elems * es, dt, rank, shape,
                     strides, &r.t) != BP_OK) {
    print_error("tc_tensor: bp_tensor_init: %s\n", bp_last_error());
    fail();
  }
  r.shadow = malloc(r.bytes);
  assert_non_null(r.shadow);
  memset(r.shadow, 0xff, r.bytes);
  if (vals && r.numel > 0) {
    unsigned char *base = r.shadow + r.t.offset;
    for (int64_t i = 0; i < r.numel; i++)
      tc_store(base + elem_offset(&r.t, i) * (int64_t)es, dt, vals[i]);
  }
  assert_int_equal(bp_buffer_write(r.buf, 0, r.shadow, r.bytes), BP_OK);
  return r;
}

tc_tensor_t tc_tensor(tc_env_t *e, bp_dtype_t dt, int rank,
                      const int64_t *shape, tc_layout_t layout,
                      const double *vals) {
  int64_t strides[BP_MAX_RANK], st = 1;
  int64_t off = 0;
  switch (layout) {
  case TC_CONTIG:
    for (int i = rank - 1; i >= 0; i--) {
      strides[i] = st;
      st *= shape[i] > 1 ? shape[i] : 1;
    }
    break;
  case TC_STRIDED:
    st = 2;
    for (int i = rank - 1; i >= 0; i--) {
      strides[i] = st;
      st = st * (shape[i] > 1 ? shape[i] : 1) + 3;
    }
    off = 5;
    break;
  case TC_PERMUTED: {
    /* storage: the reversed shape, contiguous; view: permuted back. */
    int64_t rs[BP_MAX_RANK] = {0};
    int32_t perm[BP_MAX_RANK] = {0};
    for (int i = 0; i < rank; i++) {
      rs[i] = shape[rank - 1 - i];
      perm[i] = rank - 1 - i;
    }
    int64_t cs[BP_MAX_RANK];
    st = 1;
    for (int i = rank - 1; i >= 0; i--) {
      cs[i] = st;
      st *= rs[i] > 1 ? rs[i] : 1;
    }
    bp_tensor_t stor, view;
    memset(&stor, 0, sizeof stor);
    stor.rank = rank;
    stor.dtype = dt;
    for (int i = 0; i < rank; i++) {
      stor.shape[i] = rs[i];
      stor.strides[i] = cs[i];
    }
    assert_int_equal(bp_tensor_permute(&stor, perm, &view), BP_OK);
    for (int i = 0; i < rank; i++)
      assert_int_equal(view.shape[i], shape[i]);
    return tc_tensor_strided(e, dt, rank, shape, view.strides, 3, vals);
  }
  default:
    fail();
  }
  return tc_tensor_strided(e, dt, rank, shape, strides, off, vals);
}

void tc_tensor_free(tc_tensor_t *t) {
  bp_buffer_free(t->buf);
  free(t->shadow);
  memset(t, 0, sizeof *t);
}

static double *gather(const tc_tensor_t *t, const unsigned char *bytes) {
  size_t es = bp_dtype_size(t->t.dtype);
  double *v = malloc(sizeof(double) * (size_t)(t->numel > 0 ? t->numel : 1));
  assert_non_null(v);
  for (int64_t i = 0; i < t->numel; i++)
    v[i] = tc_load(bytes + t->t.offset + elem_offset(&t->t, i) * (int64_t)es,
                   t->t.dtype);
  return v;
}

double *tc_download(const tc_tensor_t *t) {
  unsigned char *bytes = malloc(t->bytes);
  assert_non_null(bytes);
  bp_status_t st = bp_buffer_read(t->buf, 0, bytes, t->bytes);
  if (st != BP_OK) {
    print_error("tc_download: %s\n", bp_last_error());
    fail();
  }
  double *v = gather(t, bytes);
  free(bytes);
  return v;
}

double *tc_values(const tc_tensor_t *t) { return gather(t, t->shadow); }

static int64_t changed(const tc_tensor_t *t, bool outside_only) {
  unsigned char *bytes = malloc(t->bytes), *inview = calloc(1, t->bytes);
  assert_non_null(bytes);
  assert_non_null(inview);
  assert_int_equal(bp_buffer_read(t->buf, 0, bytes, t->bytes), BP_OK);
  size_t es = bp_dtype_size(t->t.dtype);
  if (outside_only)
    for (int64_t i = 0; i < t->numel; i++)
      memset(inview + t->t.offset + elem_offset(&t->t, i) * (int64_t)es, 1,
             es);
  int64_t n = 0;
  for (uint64_t i = 0; i < t->bytes; i++)
    n += !inview[i] && bytes[i] != t->shadow[i];
  free(bytes);
  free(inview);
  return n;
}

int64_t tc_outside_changed(const tc_tensor_t *t) { return changed(t, true); }
int64_t tc_bytes_changed(const tc_tensor_t *t) { return changed(t, false); }

/* ---- comparisons -----------------------------------------------------------*/

static void vreport(const tc_env_t *e, bp_dtype_t dt, const char *fmt,
                    va_list ap, const char *detail) {
  char what[512];
  vsnprintf(what, sizeof what, fmt, ap);
  print_error("FAIL [%s %s] %s: %s\n", e ? e->name : "-", bp_dtype_name(dt),
              what, detail);
  tc_failures++;
}

bool tc_expect_close(const tc_env_t *e, bp_dtype_t dt, const double *y,
                     const double *ref, int64_t n, double red,
                     const char *what, ...) {
  tc_checks++;
  double tol = tc_tol(dt);
  if (dt == BP_F32 || dt == BP_F64)
    tol *= sqrt(red > 1 ? red : 1);
  double sd = 0, sr = 0;
  int64_t bad = -1;
  char detail[256] = "";
  for (int64_t i = 0; i < n && bad < 0; i++) {
    double r = tc_round(dt, ref[i]);
    if (isnan(r) ? !isnan(y[i])
                 : isinf(r) ? y[i] != r : !isfinite(y[i])) {
      bad = i;
      snprintf(detail, sizeof detail,
               "element %lld is %g, reference %g (non-finite mismatch)",
               (long long)i, y[i], r);
    } else if (isfinite(r)) {
      sd += (y[i] - r) * (y[i] - r);
      sr += r * r;
    }
  }
  int64_t finite = 0;
  for (int64_t i = 0; i < n; i++)
    finite += isfinite(ref[i]) != 0;
  double rms = finite ? sqrt(sr / (double)finite) : 0;
  double nerr = sr > 0 ? sqrt(sd / sr) : sqrt(sd);
  if (bad < 0 && nerr > tol)
    snprintf(detail, sizeof detail, "normalised error %.3g > %.3g", nerr, tol),
        bad = 0;
  for (int64_t i = 0; i < n && bad < 0; i++) {
    double r = tc_round(dt, ref[i]);
    if (!isfinite(r))
      continue;
    double lim = 8 * tol * fmax(fabs(r), rms);
    if (fabs(y[i] - r) > lim && fabs(y[i] - r) > 1e-300) {
      bad = i;
      snprintf(detail, sizeof detail,
               "element %lld is %.9g, reference %.9g (limit %.3g; nerr %.3g)",
               (long long)i, y[i], r, lim, nerr);
    }
  }
  if (bad < 0)
    return true;
  va_list ap;
  va_start(ap, what);
  vreport(e, dt, what, ap, detail);
  va_end(ap);
  return false;
}

bool tc_expect_exact(const tc_env_t *e, bp_dtype_t dt, const double *y,
                     const double *ref, int64_t n, const char *what, ...) {
  tc_checks++;
  for (int64_t i = 0; i < n; i++) {
    double r = tc_round(dt, ref[i]);
    bool ok = isnan(r) ? isnan(y[i])
                       : (y[i] == r && signbit(y[i]) == signbit(r));
    if (!ok) {
      char detail[256];
      snprintf(detail, sizeof detail, "element %lld is %.17g, expected %.17g",
               (long long)i, y[i], r);
      va_list ap;
      va_start(ap, what);
      vreport(e, dt, what, ap, detail);
      va_end(ap);
      return false;
    }
  }
  return true;
}

bool tc_expect_status(const tc_env_t *e, bp_status_t st, bp_status_t want,
                      const char *what, ...) {
  tc_checks++;
  if (st == want)
    return true;
  char detail[1400];
  snprintf(detail, sizeof detail, "status %s, expected %s (%s)",
           bp_status_name(st), bp_status_name(want), bp_last_error());
  va_list ap;
  va_start(ap, what);
  vreport(e, BP_F32, what, ap, detail);
  va_end(ap);
  return false;
}

int64_t tc_bcast_index(int ry, const int64_t *ys, int64_t lin, int rx,
                       const int64_t *xs) {
  int64_t xi = 0, mul = 1;
  for (int d = ry - 1; d >= 0; d--) {
    int64_t i = lin % ys[d];
    lin /= ys[d];
    int dx = d - (ry - rx);
    if (dx < 0)
      continue;
    if (xs[dx] != 1)
      xi += i * mul;
    mul *= xs[dx];
  }
  return xi;
}

/* needle occurs in msg starting at a word boundary; short needles ("x",
 * "y", "a") must also end at one. */
static bool mentions(const char *msg, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = strstr(msg, needle); p; p = strstr(p + 1, needle)) {
    bool start = p == msg || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
    bool end = n > 2 || !(isalnum((unsigned char)p[n]) || p[n] == '_');
    if (start && end)
      return true;
  }
  return false;
}

bool tc_expect_reject(const tc_env_t *e, bp_status_t st, bp_status_t want,
                      const char *needle, const char *what, ...) {
  tc_checks++;
  const char *msg = bp_last_error();
  char detail[1400] = "";
  if (st != want)
    snprintf(detail, sizeof detail, "status %s, expected %s (message: %s)",
             bp_status_name(st), bp_status_name(want), msg);
  else if (!msg[0])
    snprintf(detail, sizeof detail, "%s with an empty bp_last_error()",
             bp_status_name(st));
  else if (needle && !mentions(msg, needle))
    snprintf(detail, sizeof detail, "message does not name '%s': %s", needle,
             msg);
  if (!detail[0])
    return true;
  va_list ap;
  va_start(ap, what);
  vreport(e, BP_F32, what, ap, detail);
  va_end(ap);
  return false;
}
