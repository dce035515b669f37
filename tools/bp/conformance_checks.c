/*
 * conformance_checks.c — the stages other than the op grid: descriptor and
 * ABI checks, probe sanity, error handling, memory accounting, concurrency
 * and the performance floor.
 */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bp.h"
#include "plugin-api.h" /* the plugin ABI: descriptors, versions */
#include "conformance.h"

/* ---- ABI and descriptor ----------------------------------------------------*/

static bool printable(const char *s, size_t max) {
  if (!s) return false;
  size_t n = strnlen(s, max);
  if (n == 0 || n == max) return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20) return false;
  return true;
}

void cf_stage_abi(cf_child_t *c) {
  cf_begin(c, "abi", "descriptor symbol and header");
  void *dl = dlopen(c->plugin_path, RTLD_NOW | RTLD_LOCAL);
  const bp_plugin_descriptor_t *d = dl ? dlsym(dl, BP_PLUGIN_DESCRIPTOR_SYMBOL) : NULL;
  if (!d) {
    cf_end(c, CF_FAIL, "%s", dl ? "no bp_plugin_descriptor symbol" : dlerror());
    if (dl) dlclose(dl);
    return;
  }
  bool ok = d->magic == BP_PLUGIN_MAGIC && d->abi_major == BP_PLUGIN_ABI_MAJOR &&
            d->struct_size >= BP_PLUGIN_DESCRIPTOR_MIN_SIZE;
  cf_end(c, ok ? CF_PASS : CF_FAIL, "magic 0x%08x, ABI %u.%u (loader %d.%d), struct_size %u (minimum %zu)",
         d->magic, d->abi_major, d->abi_minor, BP_PLUGIN_ABI_MAJOR, BP_PLUGIN_ABI_MINOR, d->struct_size,
         (size_t)BP_PLUGIN_DESCRIPTOR_MIN_SIZE);
  cf_begin(c, "abi", "strings");
  ok = printable(d->name, 64) && printable(d->version, 64) && (!d->description || printable(d->description, 512));
  cf_end(c, ok ? CF_PASS : CF_FAIL, "name '%s', version '%s'", d->name ? d->name : "(null)",
         d->version ? d->version : "(null)");
  if (ok) cf_check_manifest(c, d);
  dlclose(dl);
  cf_begin(c, "abi", "loaded by the loader");
  uint32_t n = 0;
  bp_context_plugin_count(c->ctx, &n);
  for (uint32_t i = 0; i < n; i++) {
    bp_plugin_report_t r;
    bp_context_plugin_report(c->ctx, i, &r);
    if (strcmp(r.path, c->plugin_path)) continue;
    /* An absent runtime or device is not the plugin's fault: skip, not fail
     * (docs/plugin-guide.md, "Conformance"). */
    if (!r.loaded && r.status == BP_ERR_UNAVAILABLE) {
      cf_end(c, CF_SKIP, "unavailable: %s", r.reason[0] ? r.reason : bp_status_name(r.status));
      return;
    }
    cf_end(c, r.loaded ? CF_PASS : CF_FAIL, "stage %s%s%s", bpt_stage_name(r.stage), r.reason[0] ? ": " : "",
           r.reason);
    return;
  }
  cf_end(c, CF_FAIL, "the loader did not see %s", c->plugin_path);
}

/* ---- probe -----------------------------------------------------------------*/

void cf_stage_probe(cf_child_t *c) {
  const bp_device_info_t *i = &c->entry.info;
  cf_begin(c, "probe", "device info");
  bool ok = i->name[0] && (unsigned)i->kind <= BP_DEVICE_OTHER;
  cf_end(c, ok ? CF_PASS : CF_FAIL, "'%s' (%s), %s, %u compute units, %llu MiB", i->name, c->entry.backend,
         bpt_kind_name(i->kind), i->compute_units, (unsigned long long)(i->memory_bytes >> 20));
  cf_begin(c, "probe", "capability table");
  int claimed = 0;
  bool consistent = true;
  for (int op = 0; op < BP_OP_COUNT; op++) {
    if (i->op_dtypes[op]) claimed++;
    /* integer maths is not part of the other ops; gather moves elements and
     * arange writes values by the cast rules, of any dtype */
    bool any_dtype = op == BP_OP_FILL || op == BP_OP_COPY || op == BP_OP_CAST || op == BP_OP_GATHER ||
                     op == BP_OP_ARANGE;
    /* u8 is a quantized dtype of quantize, dequantize and qgemm (ABI 1.5) */
    bool u8_quant = op == BP_OP_QUANTIZE || op == BP_OP_DEQUANTIZE || op == BP_OP_QGEMM;
    uint32_t ints = BP_DTYPES_INT & ~(u8_quant ? BP_DTYPE_BIT(BP_U8) : 0u);
    if (!any_dtype && (i->op_dtypes[op] & ints)) consistent = false;
  }
  for (int op = BP_OP_COUNT; op < BP_OP_TABLE_SIZE; op++)
    if (i->op_dtypes[op]) consistent = false;
  cf_end(c, consistent && claimed ? CF_PASS : CF_FAIL, "%d of %d op families claimed%s", claimed, BP_OP_COUNT,
         consistent ? "" : "; claims integer dtypes or unknown ops");
  /* A claim the descriptor has no function for is refused by the core at
   * every call: the table promises what the plugin does not have. */
  cf_begin(c, "probe", "every claimed op is implemented");
  int pairs = 0, missing = 0;
  char first[160] = "";
  for (int op = 0; op < BP_OP_COUNT; op++)
    for (int dt = 0; dt < BP_DTYPE_COUNT; dt++) {
      if (!(i->op_dtypes[op] & BP_DTYPE_BIT(dt))) continue;
      bool sup = false;
      bp_device_supports(c->dev, (bp_op_t)op, (bp_dtype_t)dt, &sup);
      pairs++;
      if (!sup && !missing++)
        snprintf(first, sizeof first, "; first: %s %s", bp_op_name((bp_op_t)op), bp_dtype_name((bp_dtype_t)dt));
    }
  cf_end(c, missing ? CF_FAIL : CF_PASS, "%d claimed op/dtype pairs, %d without an implementation%s", pairs,
         missing, first);
}

/* ---- error handling ----------------------------------------------------------*/

void cf_stage_errors(cf_child_t *c) {
  cf_begin(c, "errors", "huge allocation fails cleanly");
  bp_buffer_t *b = NULL;
  bp_status_t st = bp_buffer_alloc(c->dev, UINT64_C(1) << 52, &b);
  cf_end(c, st == BP_ERR_OUT_OF_MEMORY && !b ? CF_PASS : CF_FAIL, "%s: %s", bp_status_name(st), bp_last_error());
  if (b) bp_buffer_free(b);
  /* Every op and dtype the device does not support is called with valid
   * arguments (the op grid's first case) and must be refused with
   * BP_ERR_UNSUPPORTED: not run, not another error. */
  cf_begin(c, "errors", "unclaimed op/dtype refused as unsupported");
  int checked = 0, wrong = 0;
  char first[200] = "";
  for (int op = 0; op < BP_OP_COUNT; op++) {
    for (int dt = 0; dt < BP_DTYPE_COUNT; dt++) {
      if (!cf_dtype_in_grid((bp_op_t)op, (bp_dtype_t)dt)) continue;
      bool sup = true;
      bp_device_supports(c->dev, (bp_op_t)op, (bp_dtype_t)dt, &sup);
      if (sup) continue;
      bp_status_t got = cf_try_op(c, (bp_op_t)op, (bp_dtype_t)dt);
      checked++;
      if (got != BP_ERR_UNSUPPORTED && !wrong++)
        snprintf(first, sizeof first, "%s %s gave %s", bp_op_name((bp_op_t)op), bp_dtype_name((bp_dtype_t)dt),
                 bp_status_name(got));
    }
  }
  if (!checked)
    cf_end(c, CF_SKIP, "the device supports every op and dtype: nothing to refuse");
  else
    cf_end(c, wrong ? CF_FAIL : CF_PASS, "%d unsupported op/dtype pairs called, %d not refused%s%s", checked, wrong,
           wrong ? "; first: " : "", first);
}

/* ---- memory accounting ----------------------------------------------------------*/

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

void cf_stage_memory(cf_child_t *c) {
  cf_begin(c, "memory", "1000 alloc/write/free cycles");
  char chunk[4096];
  memset(chunk, 0x5a, sizeof chunk);
  long before = 0;
  int failures = 0;
  for (int i = 0; i < 1100; i++) {
    if (i == 100) before = rss_kib(); /* after warm-up: caches have filled */
    bp_buffer_t *b = NULL;
    uint64_t size = 4096u + (uint64_t)(i % 7) * 65536u;
    if (bp_buffer_alloc(c->dev, size, &b) != BP_OK || bp_buffer_write(b, 0, chunk, sizeof chunk) != BP_OK)
      failures++;
    bp_buffer_free(b);
  }
  long growth = rss_kib() - before;
  cf_end(c, failures == 0 && growth < 8192 ? CF_PASS : CF_FAIL, "%d failures, resident memory grew %ld KiB",
         failures, growth);
}

/* ---- concurrency -----------------------------------------------------------------*/

typedef struct conc_job {
  bp_device_t *dev;
  float result[64 * 64];
  bp_status_t st;
} conc_job_t;

/* A 64x64x64 GEMM on its own stream, repeated; the result must match a
 * single-threaded run bit for bit. */
static void *conc_worker(void *arg) {
  conc_job_t *j = arg;
  bp_stream_t *s = NULL;
  bp_buffer_t *a = NULL, *c = NULL;
  float host[64 * 64];
  for (int i = 0; i < 64 * 64; i++) host[i] = (float)((i * 37) % 17) * 0.125f - 1.0f;
  j->st = bp_stream_create(j->dev, &s);
  if (j->st == BP_OK) j->st = bp_buffer_alloc(j->dev, sizeof host, &a);
  if (j->st == BP_OK) j->st = bp_buffer_alloc(j->dev, sizeof host, &c);
  if (j->st == BP_OK) j->st = bp_buffer_write(a, 0, host, sizeof host);
  for (int r = 0; r < 20 && j->st == BP_OK; r++)
    j->st = bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_TRANS, 64, 64, 64, 1.0, a, 0, 64, a, 0, 64, 0.0,
                    c, 0, 64);
  if (j->st == BP_OK) j->st = bp_stream_synchronize(s);
  if (j->st == BP_OK) j->st = bp_buffer_read(c, 0, j->result, sizeof j->result);
  bp_buffer_free(a);
  bp_buffer_free(c);
  bp_stream_destroy(s);
  return NULL;
}

void cf_stage_concurrency(cf_child_t *c) {
  cf_begin(c, "concurrency", "4 threads x own stream, gemm");
  bool sup = false;
  bp_device_supports(c->dev, BP_OP_GEMM, BP_F32, &sup);
  if (!sup) {
    cf_end(c, CF_UNSUPPORTED, "device has no f32 gemm");
    return;
  }
  static conc_job_t one, jobs[4];
  one.dev = c->dev;
  conc_worker(&one);
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    jobs[i].dev = c->dev;
    pthread_create(&th[i], NULL, conc_worker, &jobs[i]);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  int bad = 0;
  for (int i = 0; i < 4; i++)
    if (jobs[i].st != BP_OK || memcmp(jobs[i].result, one.result, sizeof one.result)) bad++;
  cf_end(c, one.st == BP_OK && !bad ? CF_PASS : CF_FAIL, "%d of 4 threads differ from the single-threaded run", bad);
}

/* ---- performance floor --------------------------------------------------------------*/

void cf_stage_performance(cf_child_t *c) {
  cf_begin(c, "performance", "f32 gemm vs the device's own peak estimate");
  bool sup = false;
  bp_device_supports(c->dev, BP_OP_GEMM, BP_F32, &sup);
  double peak = c->entry.info.peak_gflops;
  if (!sup || peak <= 0 || (c->entry.info.flags & BP_DEVICE_FLAG_REFERENCE)) {
    cf_end(c, CF_SKIP, "%s", !sup ? "no f32 gemm" : peak <= 0 ? "no peak estimate" : "reference device");
    return;
  }
  int64_t n = c->entry.info.kind == BP_DEVICE_SOFTWARE || c->quick ? 256 : 1024;
  bp_buffer_t *a = NULL, *cc = NULL;
  bp_status_t st = bp_buffer_alloc(c->dev, (uint64_t)(n * n * 4), &a);
  if (st == BP_OK) st = bp_buffer_alloc(c->dev, (uint64_t)(n * n * 4), &cc);
  if (st == BP_OK) st = bp_fill(c->dev_s, &(bp_tensor_t){a, 0, BP_F32, 1, {n * n}, {1}}, 0.5);
  double best = 1e30;
  for (int r = 0; r < 4 && st == BP_OK; r++) {
    double t0 = bpt_now();
    st = bp_gemm(c->dev_s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, n, n, n, 1.0, a, 0, n, a, 0, n, 0.0,
                 cc, 0, n);
    if (st == BP_OK) st = bp_stream_synchronize(c->dev_s);
    double dt = bpt_now() - t0;
    if (r > 0 && dt < best) best = dt;
  }
  bp_buffer_free(a);
  bp_buffer_free(cc);
  if (st != BP_OK) {
    cf_end(c, CF_FAIL, "%s", bp_last_error());
    return;
  }
  double gflops = 2.0 * n * n * n / best * 1e-9, frac = gflops / peak;
  const double floor_frac = 0.25; /* the stated floor: a quarter of peak */
  cf_end(c, frac >= floor_frac ? CF_PASS : CF_WARN, "%.1f GFLOP/s at %lld^3 = %.0f%% of the %.0f GFLOP/s estimate (floor %.0f%%)",
         gflops, (long long)n, 100 * frac, peak, 100 * floor_frac);
}
