/*
 * tune.c — bp tune: fills the autotuning cache ahead of time. Each device's
 * tunable ops (GEMM and attention) run once over the shapes of bp bench's
 * suite; a plugin that tunes times its variants on the first call of a shape
 * bucket and stores the winner through the host services, so the point here
 * is only that every bucket is reached once. Nothing is measured beyond the
 * time of that first call, which is printed, and each device's speed for
 * device groups (bp_device_group_calibrate), which goes to the cache.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json_doc.h"

#define TUNE_MAX_DEVICES 16
#define TUNE_SEED 11u
#define TUNE_MAX_RESULTS (TUNE_MAX_DEVICES * BENCH_SUITE_MAX)

/* One case on one device, for --json. */
typedef struct tune_result {
  char device[64];
  const char *op, *dtype;
  char shape[96];
  const char *status; /* "tuned", "unsupported", "skipped", "failed" */
  char message[160];
  double ms;
} tune_result_t;

static tune_result_t *tune_results;
static int tune_nresults;
static FILE *tune_out; /* the human report: stdout, or /dev/null under --json - */

typedef struct tune_opts {
  const char *devices[TUNE_MAX_DEVICES];
  int ndevices;
  bool quick;
  const char *cache;
  const char *json;
  bpt_context_flags_t ctx;
} tune_opts_t;

static void tune_help(FILE *f) {
  fprintf(f,
          "usage: bp tune [--device SEL ...] [--quick] [--cache PATH] [--json FILE]\n"
          "               [--no-isolate]\n\n"
          "Fills the autotuning cache ahead of time: runs each device's tunable ops\n"
          "(gemm over square 256..4096 and the transformer shapes, attention over\n"
          "bp bench's shapes) once per shape, so that plugins which tune time their\n"
          "variants now and store the winners, instead of on an application's first\n"
          "call. Entries are keyed by plugin and its version, device, driver version,\n"
          "op, dtype and shape bucket; see docs/runtime.md. Each device's speed for\n"
          "device groups is measured too (when the cache has none), so groups\n"
          "split work from the first op.\n\n"
          "  --device SEL  a device as in 'bp devices' (repeatable; default every\n"
          "                device but the reference ones)\n"
          "  --quick       a few small shapes only\n"
          "  --cache PATH  the cache file (default: BACKPLANE_TUNING_CACHE, else\n"
          "                $XDG_CACHE_HOME/backplane/tuning.json, else\n"
          "                ~/.cache/backplane/tuning.json); written at the end\n"
          "                even when no plugin stored a result\n"
          "  --json FILE   also write every case's outcome to FILE ('-': stdout)\n"
          "  --no-isolate  probe plugins in this process instead of a child\n\n"
          "Progress is shown on stderr when it is a terminal.\n"
          "Exit status: 0 (also when an op is unsupported), 1 when a device could\n"
          "not be opened or an op failed, 2 on a usage error.\n");
}

static int parse(int argc, char **argv, tune_opts_t *o) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},       {"device", required_argument, NULL, 'd'},
      {"cache", required_argument, NULL, 'c'}, {"quick", no_argument, NULL, 'q'},
      {"json", required_argument, NULL, 'j'},
      {"no-isolate", no_argument, NULL, 'n'}, {NULL, 0, NULL, 0}};
  bool started = false;
  for (int c; (c = bpt_getopt("tune", argc, argv, "h", longopts, &started)) != -1;) {
    switch (c) {
    case 'h': tune_help(stdout); return -1;
    case 'd':
      if (o->ndevices == TUNE_MAX_DEVICES)
        return bpt_usage_error("tune", "at most %d devices", TUNE_MAX_DEVICES);
      o->devices[o->ndevices++] = optarg;
      break;
    case 'c':
      if (!optarg[0]) return bpt_usage_error("tune", "--cache needs a path");
      o->cache = optarg;
      break;
    case 'q': o->quick = true; break;
    case 'j':
      if (!optarg[0]) return bpt_usage_error("tune", "--json needs a path ('-': stdout)");
      o->json = optarg;
      break;
    case 'n': o->ctx.no_isolate = true; break;
    default: return BPT_EXIT_USAGE;
    }
  }
  if (optind < argc) return bpt_usage_error("tune", "unexpected argument '%s'", argv[optind]);
  return 0;
}

/* Runs case c once on dev and reports the outcome; false when it failed. */
static bool tune_case(bp_device_t *dev, const char *devname, const bpt_case_t *c) {
  tune_result_t scratch, *r = tune_nresults < TUNE_MAX_RESULTS && tune_results
                                  ? &tune_results[tune_nresults++] : &scratch;
  memset(r, 0, sizeof *r);
  snprintf(r->device, sizeof r->device, "%s", devname);
  r->op = bpt_op_name(c->op);
  r->dtype = bp_dtype_name(c->dtype);
  bpt_case_label(c, r->shape, sizeof r->shape);
  fprintf(tune_out, "  %-10s %-30s %-4s ", r->op, r->shape, r->dtype);
  bool ok = false;
  bp_device_supports(dev, bpt_case_bp_op(c), c->dtype, &ok);
  if (!ok) {
    r->status = "unsupported";
    fprintf(tune_out, "unsupported\n");
    return true;
  }
  bpt_instance_t inst;
  bp_status_t st = bpt_instance_create(c, dev, TUNE_SEED, &inst);
  if (st != BP_OK) {
    r->status = "skipped";
    snprintf(r->message, sizeof r->message, "%s", inst.error);
    fprintf(tune_out, "skipped: %s\n", inst.error); /* too big for the device, mostly */
    return true;
  }
  double ms = 0;
  st = bpt_instance_time(&inst, 0, 1, 1, 0, &ms);
  bpt_instance_destroy(&inst);
  if (st != BP_OK) {
    r->status = "failed";
    snprintf(r->message, sizeof r->message, "%s (%s)", bp_status_string(st), bp_last_error());
    fprintf(tune_out, "failed: %s\n", r->message);
    return false;
  }
  r->status = "tuned";
  r->ms = ms;
  fprintf(tune_out, "%10.2f ms\n", ms);
  return true;
}

/* Every case on the device opened with selector; false on any failure. */
static bool tune_device(bp_context_t *ctx, const char *selector, const bpt_case_t *cases,
                        int ncases) {
  bp_device_t *dev = bpt_device_open(ctx, selector);
  if (!dev) return false;
  bp_device_entry_t e;
  bp_device_entry(dev, &e);
  fprintf(tune_out, "device: %s (rank %u, backend %s, driver %s)\n", e.info.name, e.rank, e.backend,
         e.info.driver_version[0] ? e.info.driver_version : "-");
  bool ok = true;
  for (int i = 0; i < ncases; i++) {
    char label[128], shape[96];
    bpt_case_label(&cases[i], shape, sizeof shape);
    snprintf(label, sizeof label, "%s %s %s", e.info.name, bpt_op_name(cases[i].op), shape);
    bpt_progress(i + 1, ncases, label);
    bool case_ok = tune_case(dev, e.info.name, &cases[i]);
    bpt_progress_done();
    ok = case_ok && ok;
  }
  /* Device groups split work by each member's measured speed: measure this
   * device's now, so a group it joins later finds them in the cache. */
  if (bp_device_group_calibrate(dev, false) == BP_OK) {
    fprintf(tune_out, "  device-group speeds (gemm, attention, conv2d): in the tuning cache\n");
  } else {
    fprintf(tune_out, "  device-group speeds: failed: %s\n", bp_last_error());
    ok = false;
  }
  bp_device_close(dev);
  return ok;
}

/* The selectors to run: those given, else every non-reference device by
 * rank. sel_buf holds the rank strings. */
static int default_selectors(bp_context_t *ctx, const char **out, char (*sel_buf)[16]) {
  uint32_t count = 0;
  int n = 0;
  bp_context_device_count(ctx, &count);
  for (uint32_t r = 0; r < count && n < TUNE_MAX_DEVICES; r++) {
    bp_device_entry_t e;
    if (bp_context_device_entry(ctx, r, &e) != BP_OK) continue;
    if (e.info.flags & BP_DEVICE_FLAG_REFERENCE) continue; /* nothing to tune */
    snprintf(sel_buf[n], sizeof sel_buf[n], "%u", r);
    out[n] = sel_buf[n];
    n++;
  }
  return n;
}

static json_object *json_result(const tune_result_t *r) {
  json_object *o = json_object_new_object();
  bpt_json_set(o, "device", bpt_json_str(r->device));
  bpt_json_set(o, "op", bpt_json_str(r->op));
  bpt_json_set(o, "shape", bpt_json_str(r->shape));
  bpt_json_set(o, "dtype", bpt_json_str(r->dtype));
  bpt_json_set(o, "status", bpt_json_str(r->status));
  bpt_json_set(o, "ms", bpt_json_num(strcmp(r->status, "tuned") ? NAN : r->ms, "%.6g"));
  if (r->message[0]) bpt_json_set(o, "message", bpt_json_str(r->message));
  return o;
}

static bool write_json(const char *path, const char *cache, bool cache_written, bool ok) {
  static const char *const broken[] = {"results", NULL};
  json_object *doc = json_object_new_object(), *results = json_object_new_array();
  bpt_json_set(doc, "cache", bpt_json_str(cache));
  bpt_json_set(doc, "cache_written", bpt_json_bool(cache_written));
  bpt_json_set(doc, "ok", bpt_json_bool(ok));
  for (int i = 0; i < tune_nresults; i++) bpt_json_push(results, json_result(&tune_results[i]));
  bpt_json_set(doc, "results", results);
  return bpt_json_write_path("tune", path, doc, broken);
}

int bp_cmd_tune(int argc, char **argv) {
  tune_opts_t o = {0};
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  bp_context_t *ctx = bpt_context_open(&o.ctx);
  if (!ctx) return BPT_EXIT_FAIL;
  if (o.cache && bp_context_set_tuning_cache(ctx, o.cache) != BP_OK) {
    fprintf(stderr, "bp tune: --cache %s: %s\n", o.cache, bp_last_error());
    bp_context_destroy(ctx);
    return BPT_EXIT_USAGE;
  }
  static bpt_case_t cases[BENCH_SUITE_MAX];
  int ncases = bench_suite((1u << BPT_GEMM) | (1u << BPT_ATTENTION), o.quick, cases,
                           BENCH_SUITE_MAX);
  char sel_buf[TUNE_MAX_DEVICES][16];
  const char **sel = o.devices;
  int nsel = o.ndevices;
  const char *all[TUNE_MAX_DEVICES];
  if (!nsel) {
    nsel = default_selectors(ctx, all, sel_buf);
    sel = all;
  }
  bool to_stdout = o.json && !strcmp(o.json, "-");
  tune_out = to_stdout ? fopen("/dev/null", "w") : stdout;
  if (!tune_out) tune_out = stdout;
  tune_nresults = 0;
  tune_results = o.json ? calloc(TUNE_MAX_RESULTS, sizeof *tune_results) : NULL;
  bool ok = nsel > 0;
  if (!nsel) fprintf(stderr, "bp tune: no device to tune ('bp devices' lists them)\n");
  for (int d = 0; d < nsel; d++) {
    if (d) fprintf(tune_out, "\n");
    ok = tune_device(ctx, sel[d], cases, ncases) && ok;
  }
  /* A plugin stores only what it tunes (the CPU ones tune nothing), so the
   * file is written here, also to say where it is and that it can be. */
  bool cache_written = bp_context_flush_tuning_cache(ctx) == BP_OK;
  if (cache_written)
    fprintf(tune_out, "\ntuning cache: %s\n", o.cache ? o.cache : "the default file (bp tune --help says which)");
  else if (o.cache || !strstr(bp_last_error(), "memory only")) {
    fprintf(stderr, "bp tune: tuning cache not written: %s\n", bp_last_error());
    ok = false;
  } else
    fprintf(tune_out, "\ntuning cache: in memory only (BACKPLANE_TUNING_CACHE is empty)\n");
  if (o.json && !write_json(o.json, o.cache, cache_written, ok)) ok = false;
  if (tune_out != stdout) fclose(tune_out);
  free(tune_results);
  tune_results = NULL;
  bp_context_destroy(ctx);
  return ok ? BPT_EXIT_OK : BPT_EXIT_FAIL;
}
