/*
 * tune.c — bp tune: fills the autotuning cache ahead of time. Each device's
 * tunable ops (GEMM and attention) run once over the shapes of bp bench's
 * suite; a plugin that tunes times its variants on the first call of a shape
 * bucket and stores the winner through the host services, so the point here
 * is only that every bucket is reached once. Nothing is measured beyond the
 * time of that first call, which is printed.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define TUNE_MAX_DEVICES 16
#define TUNE_SEED 11u

typedef struct tune_opts {
  const char *devices[TUNE_MAX_DEVICES];
  int ndevices;
  bool quick;
  const char *cache;
  bpt_context_flags_t ctx;
} tune_opts_t;

static void tune_help(FILE *f) {
  fprintf(f,
          "usage: bp tune [--device SEL ...] [--quick] [--cache PATH] [--no-isolate]\n\n"
          "Fills the autotuning cache ahead of time: runs each device's tunable ops\n"
          "(gemm over square 256..4096 and the transformer shapes, attention over\n"
          "bp bench's shapes) once per shape, so that plugins which tune time their\n"
          "variants now and store the winners, instead of on an application's first\n"
          "call. Entries are keyed by plugin and its version, device, driver version,\n"
          "op, dtype and shape bucket; see docs/runtime.md.\n\n"
          "  --device SEL  a device as in 'bp devices' (repeatable; default every\n"
          "                device but the reference ones)\n"
          "  --quick       a few small shapes only\n"
          "  --cache PATH  the cache file (default: BACKPLANE_TUNING_CACHE, else\n"
          "                $XDG_CACHE_HOME/backplane/tuning.json, else\n"
          "                ~/.cache/backplane/tuning.json)\n"
          "  --no-isolate  probe plugins in this process instead of a child\n\n"
          "Progress is shown on stderr when it is a terminal.\n"
          "Exit status: 0 (also when an op is unsupported), 1 when a device could\n"
          "not be opened or an op failed, 2 on a usage error.\n");
}

static int parse(int argc, char **argv, tune_opts_t *o) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},       {"device", required_argument, NULL, 'd'},
      {"cache", required_argument, NULL, 'c'}, {"quick", no_argument, NULL, 'q'},
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
    case 'n': o->ctx.no_isolate = true; break;
    default: return BPT_EXIT_USAGE;
    }
  }
  if (optind < argc) return bpt_usage_error("tune", "unexpected argument '%s'", argv[optind]);
  return 0;
}

/* Runs case c once on dev and prints the outcome; false when it failed. */
static bool tune_case(bp_device_t *dev, const bpt_case_t *c) {
  char label[96];
  bpt_case_label(c, label, sizeof label);
  printf("  %-10s %-30s %-4s ", bpt_op_name(c->op), label, bp_dtype_name(c->dtype));
  bool ok = false;
  bp_device_supports(dev, bpt_case_bp_op(c), c->dtype, &ok);
  if (!ok) {
    printf("unsupported\n");
    return true;
  }
  bpt_instance_t inst;
  bp_status_t st = bpt_instance_create(c, dev, TUNE_SEED, &inst);
  if (st != BP_OK) {
    printf("skipped: %s\n", inst.error); /* too big for the device, mostly */
    return true;
  }
  double ms = 0;
  st = bpt_instance_time(&inst, 0, 1, 1, 0, &ms);
  bpt_instance_destroy(&inst);
  if (st != BP_OK) {
    printf("failed: %s (%s)\n", bp_status_string(st), bp_last_error());
    return false;
  }
  printf("%10.2f ms\n", ms);
  return true;
}

/* Every case on the device opened with selector; false on any failure. */
static bool tune_device(bp_context_t *ctx, const char *selector, const bpt_case_t *cases,
                        int ncases) {
  bp_device_t *dev = bpt_device_open(ctx, selector);
  if (!dev) return false;
  bp_device_entry_t e;
  bp_device_entry(dev, &e);
  printf("device: %s (rank %u, backend %s, driver %s)\n", e.info.name, e.rank, e.backend,
         e.info.driver_version[0] ? e.info.driver_version : "-");
  bool ok = true;
  for (int i = 0; i < ncases; i++) {
    char label[128], shape[96];
    bpt_case_label(&cases[i], shape, sizeof shape);
    snprintf(label, sizeof label, "%s %s %s", e.info.name, bpt_op_name(cases[i].op), shape);
    bpt_progress(i + 1, ncases, label);
    bool case_ok = tune_case(dev, &cases[i]);
    bpt_progress_done();
    ok = case_ok && ok;
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
  bool ok = nsel > 0;
  if (!nsel) fprintf(stderr, "bp tune: no device to tune ('bp devices' lists them)\n");
  for (int d = 0; d < nsel; d++) {
    if (d) printf("\n");
    ok = tune_device(ctx, sel[d], cases, ncases) && ok;
  }
  printf("\ntuning cache: %s\n", o.cache ? o.cache : "the default file (bp tune --help says which)");
  bp_context_destroy(ctx);
  return ok ? BPT_EXIT_OK : BPT_EXIT_FAIL;
}
