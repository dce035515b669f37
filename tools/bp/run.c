/*
 * run.c — bp run: the fixed workload (a 1024³ f32 GEMM, a causal attention,
 * a 3×3 conv2d) on one device, each timed and checked against the cpu-ref
 * reference device. Exit 1 when any check fails.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bp.h"
#include "cases.h"
#include "json_doc.h"
#include "run_explain.h"
#include "run_stats.h"

#define RUN_REFERENCE "cpu-ref"
#define RUN_SEED 20240501u
/* Max |ours - ref| over max |ref| allowed for f32 results. */
#define RUN_TOLERANCE 1e-4

typedef struct run_opts {
  const char *device;
  bool json, memory, stats, explain;
  bpt_context_flags_t ctx;
} run_opts_t;

typedef struct run_result {
  bpt_case_t c;
  bool supported, pass;
  bp_status_t status; /* first failing call, BP_OK otherwise */
  char message[256];
  double ms, gflops, max_abs, max_norm;
} run_result_t;

static void run_help(FILE *f) {
  fprintf(f,
          "usage: bp run [--device SEL] [--memory] [--stats] [--explain] [--json] [--no-isolate]\n\n"
          "Runs a fixed f32 workload on one device (default: the best) and\n"
          "checks each result against the reference device 'cpu-ref':\n"
          "  gemm       1024x1024x1024\n"
          "  attention  batch 1, 8 heads, 512 tokens, head dim 64, causal\n"
          "  conv2d     1x64x56x56, 64 filters 3x3, stride 1, pad 1\n"
          "Inputs are uniform random in [-1, 1) (bp_random). For each op it\n"
          "prints the best time of 3 after a warm-up, GFLOP/s, the max absolute\n"
          "error and the max normalised error (max |ours - ref| / max |ref|),\n"
          "PASS when that is at most %g.\n\n"
          "  --device SEL  rank ('0'), backend ('cpu'), backend:index ('cpu:1')\n"
          "                or device name ('cpu-ref'); see 'bp devices'\n"
          "  --memory      print the device's memory pool statistics afterwards\n"
          "  --stats       run through the stats layer and print, per device and op,\n"
          "                calls, failures, time and bytes (on stderr with --json)\n"
          "  --explain     list the ops the device could not run itself and where they\n"
          "                ran instead (automatic fallback): op, dtype, reason, device,\n"
          "                calls, bytes copied each way and time (\"fallback\" in --json)\n"
          "  --json        print the results as one JSON object on stdout\n"
          "  --no-isolate  probe plugins in this process instead of a child\n\n"
          "Exit status: 0 when every check passes, 1 when one fails or the\n"
          "device cannot be used, 2 on a usage error.\n",
          RUN_TOLERANCE);
}

static int parse(int argc, char **argv, run_opts_t *o) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},       {"device", required_argument, NULL, 'd'},
      {"json", no_argument, NULL, 'j'},       {"memory", no_argument, NULL, 'm'},
      {"no-isolate", no_argument, NULL, 'n'}, {"stats", no_argument, NULL, 's'},
      {"explain", no_argument, NULL, 'e'},    {NULL, 0, NULL, 0}};
  bool started = false;
  for (int c; (c = bpt_getopt("run", argc, argv, "h", longopts, &started)) != -1;) {
    switch (c) {
    case 'h': run_help(stdout); return -1;
    case 'd': o->device = optarg; break;
    case 'j': o->json = true; break;
    case 'm': o->memory = true; break;
    case 's': o->stats = true; break;
    case 'e': o->explain = true; break;
    case 'n': o->ctx.no_isolate = true; break;
    default: return BPT_EXIT_USAGE;
    }
  }
  if (optind < argc) return bpt_usage_error("run", "unexpected argument '%s'", argv[optind]);
  return 0;
}

static const bpt_case_t run_cases[] = {
    {.op = BPT_GEMM, .dtype = BP_F32, .batch = 1, .m = 1024, .n = 1024, .k = 1024},
    {.op = BPT_ATTENTION, .dtype = BP_F32, .batch = 1, .heads = 8, .seq = 512,
     .dim = 64, .causal = true},
    {.op = BPT_CONV2D, .dtype = BP_F32, .batch = 1, .c = 64, .hw = 56, .k = 64,
     .r = 3, .stride = 1, .pad = 1, .groups = 1},
};
#define RUN_CASES (int)(sizeof run_cases / sizeof run_cases[0])

static void fail_with(run_result_t *r, bp_status_t st, const char *what) {
  r->status = st;
  snprintf(r->message, sizeof r->message, "%s: %s (%s)", what,
           bp_status_string(st), bp_last_error());
}

/* Max absolute and normalised differences; NaN anywhere counts as infinite. */
static void compare(const float *got, const float *ref, int64_t n,
                    run_result_t *r) {
  double max_abs = 0, max_ref = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)ref[i]);
    if (isnan(d)) d = INFINITY;
    if (d > max_abs) max_abs = d;
    if (fabs((double)ref[i]) > max_ref) max_ref = fabs((double)ref[i]);
  }
  r->max_abs = max_abs;
  r->max_norm = max_abs / (max_ref > 0 ? max_ref : 1.0);
  r->pass = r->max_norm <= RUN_TOLERANCE;
}

/* Runs the case on the reference device with the given inputs and writes
 * its output into ref_out. */
static bp_status_t run_reference(const bpt_case_t *c, bp_device_t *ref,
                                 float *const inputs[3], float *ref_out) {
  bpt_instance_t inst;
  bp_status_t st = bpt_instance_create(c, ref, RUN_SEED, &inst);
  if (st != BP_OK) {
    fprintf(stderr, "bp run: reference: %s\n", inst.error);
    return st;
  }
  for (int i = 0; st == BP_OK && i < inst.inputs; i++)
    st = bpt_instance_write_input(&inst, i, inputs[i]);
  if (st == BP_OK) st = bpt_instance_exec(&inst);
  if (st == BP_OK) st = bp_stream_synchronize(inst.stream);
  if (st == BP_OK) st = bpt_instance_read_output(&inst, ref_out);
  bpt_instance_destroy(&inst);
  return st;
}

/* Times the case on dev, then checks its output against ref (NULL when dev
 * is itself the reference). */
static void run_one(const bpt_case_t *c, bp_device_t *dev, bp_device_t *ref,
                    run_result_t *r) {
  bpt_instance_t inst;
  float *inputs[3] = {0}, *got = NULL, *want = NULL;
  bp_status_t st = bpt_instance_create(c, dev, RUN_SEED, &inst);
  if (st != BP_OK) {
    r->status = st;
    snprintf(r->message, sizeof r->message, "%s", inst.error);
    return;
  }
  for (int i = 0; i < inst.inputs; i++)
    inputs[i] = malloc((size_t)inst.in_numel[i] * sizeof(float));
  got = malloc((size_t)inst.out_numel * sizeof(float));
  want = ref ? malloc((size_t)inst.out_numel * sizeof(float)) : got;
  for (int i = 0; st == BP_OK && i < inst.inputs; i++)
    st = inputs[i] ? bpt_instance_read_input(&inst, i, inputs[i])
                   : BP_ERR_OUT_OF_MEMORY;
  if (st == BP_OK && (!got || !want)) st = BP_ERR_OUT_OF_MEMORY;
  if (st == BP_OK) st = bpt_instance_time(&inst, 1, 3, 3, 0.0, &r->ms);
  if (st == BP_OK) st = bpt_instance_read_output(&inst, got);
  if (st != BP_OK) fail_with(r, st, "running");
  int64_t out_numel = inst.out_numel;
  bpt_instance_destroy(&inst);
  if (st == BP_OK && ref) {
    st = run_reference(c, ref, inputs, want);
    if (st != BP_OK) fail_with(r, st, "running the reference");
  }
  if (st == BP_OK) {
    r->gflops = bpt_case_flops(c) / (r->ms * 1e6);
    compare(got, want, out_numel, r);
  }
  for (int i = 0; i < 3; i++) free(inputs[i]);
  if (want != got) free(want);
  free(got);
}

static void run_case(const bpt_case_t *c, bp_device_t *dev, bp_device_t *ref,
                     run_result_t *r) {
  memset(r, 0, sizeof *r);
  r->c = *c;
  bool ok = false;
  bp_device_supports(dev, bpt_case_bp_op(c), c->dtype, &ok);
  r->supported = true;
  /* Not native: the core may still run it on another device (fallback). */
  run_one(c, dev, ref, r);
  if (!ok && r->status == BP_ERR_UNSUPPORTED) {
    r->supported = false;
    snprintf(r->message, sizeof r->message, "%s %s not supported by the device, nor by fallback",
             bpt_op_name(c->op), bp_dtype_name(c->dtype));
  }
}

static void print_row(const run_result_t *r) {
  char shape[96];
  bpt_case_label(&r->c, shape, sizeof shape);
  printf("%-10s %-26s ", bpt_op_name(r->c.op), shape);
  if (!r->supported) {
    printf("SKIP  %s\n", r->message);
  } else if (r->status != BP_OK) {
    printf("FAIL  %s\n", r->message);
  } else {
    printf("%10.3f %9.1f %12.3g %12.3g  %s\n", r->ms, r->gflops, r->max_abs,
           r->max_norm, r->pass ? "PASS" : "FAIL");
  }
}

/* One case as a record of --json; the figures are null when it did not run. */
static json_object *json_case(const run_result_t *r) {
  char shape[96];
  bool ran = r->supported && !r->status;
  json_object *o = json_object_new_object();
  bpt_case_label(&r->c, shape, sizeof shape);
  bpt_json_set(o, "op", bpt_json_str(bpt_op_name(r->c.op)));
  bpt_json_set(o, "shape", bpt_json_str(shape));
  bpt_json_set(o, "dtype", bpt_json_str(bp_dtype_name(r->c.dtype)));
  bpt_json_set(o, "supported", bpt_json_bool(r->supported));
  bpt_json_set(o, "status", bpt_json_str(bp_status_name(r->status)));
  bpt_json_set(o, "ms", bpt_json_num(ran ? r->ms : NAN, "%.6g"));
  bpt_json_set(o, "gflops", bpt_json_num(ran ? r->gflops : NAN, "%.6g"));
  bpt_json_set(o, "max_abs_err", bpt_json_num(ran ? r->max_abs : NAN, "%.6g"));
  bpt_json_set(o, "max_norm_err", bpt_json_num(ran ? r->max_norm : NAN, "%.6g"));
  bpt_json_set(o, "result", bpt_json_str(!r->supported ? "SKIP" : (r->pass ? "PASS" : "FAIL")));
  bpt_json_set(o, "message", bpt_json_str(r->message));
  return o;
}

static void print_json(const bp_device_entry_t *e, bool self_ref,
                       const run_result_t *res, int n, bool pass, json_object *fallback) {
  static const char *const broken[] = {"ops", NULL};
  json_object *doc = json_object_new_object(), *dev = json_object_new_object(),
              *ops = json_object_new_array();
  bpt_json_set(dev, "rank", bpt_json_int(e->rank));
  bpt_json_set(dev, "backend", bpt_json_str(e->backend));
  bpt_json_set(dev, "name", bpt_json_str(e->info.name));
  bpt_json_set(dev, "kind", bpt_json_str(bpt_kind_name(e->info.kind)));
  bpt_json_set(doc, "device", dev);
  bpt_json_set(doc, "reference", bpt_json_str(RUN_REFERENCE));
  if (self_ref) bpt_json_set(doc, "reference_is_device", bpt_json_bool(true));
  bpt_json_set(doc, "tolerance", bpt_json_num(RUN_TOLERANCE, "%g"));
  for (int i = 0; i < n; i++) bpt_json_push(ops, json_case(&res[i]));
  bpt_json_set(doc, "ops", ops);
  bpt_json_set(doc, "pass", bpt_json_bool(pass));
  if (fallback) bpt_json_set(doc, "fallback", fallback);
  bpt_json_write_path("run", "-", doc, broken);
}

static void print_header(const bp_device_entry_t *e, bool self_ref) {
  printf("device:    %s (rank %u, backend %s, %s)\n", e->info.name, e->rank,
         e->backend, bpt_kind_name(e->info.kind));
  printf("reference: %s%s\n", RUN_REFERENCE,
         self_ref ? " (the device itself: results are the reference)" : "");
  printf("tolerance: max normalised error <= %g (f32)\n\n", RUN_TOLERANCE);
  printf("%-10s %-26s %10s %9s %12s %12s  %s\n", "op", "shape", "time ms",
         "GFLOP/s", "max abs err", "max norm err", "check");
}

/* Runs every case; returns whether all that ran passed. */
static bool run_all(bp_device_t *dev, bp_device_t *ref, bool json,
                    run_result_t *res) {
  bool pass = true;
  for (int i = 0; i < RUN_CASES; i++) {
    bpt_progress(i + 1, RUN_CASES, bpt_op_name(run_cases[i].op));
    run_case(&run_cases[i], dev, ref, &res[i]);
    bpt_progress_done();
    if (res[i].supported && (res[i].status != BP_OK || !res[i].pass))
      pass = false;
    if (!json) print_row(&res[i]);
  }
  return pass;
}

int bp_cmd_run(int argc, char **argv) {
  run_opts_t o = {0};
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  if (o.stats) bpt_enable_stats_layer();
  bp_context_t *ctx = bpt_context_open(&o.ctx);
  if (!ctx) return BPT_EXIT_FAIL;
  /* bp run shows what an application sees: fallback on, --explain lists it. */
  bp_device_t *dev = bpt_device_open_with(ctx, o.device, true), *ref = NULL;
  bp_device_entry_t e = {0};
  bool self_ref = false, pass = false;
  run_result_t res[RUN_CASES];
  if (!dev) goto out;
  bp_device_entry(dev, &e);
  self_ref = !strcmp(e.info.name, RUN_REFERENCE);
  if (!self_ref && !(ref = bpt_device_open(ctx, RUN_REFERENCE))) goto out;
  if (!o.json) print_header(&e, self_ref);
  pass = run_all(dev, ref, o.json, res);
  if (o.json)
    print_json(&e, self_ref, res, RUN_CASES, pass, o.explain ? bpt_json_fallback(dev) : NULL);
  else
    printf("\nresult: %s\n", pass ? "PASS" : "FAIL");
  if (o.explain && !o.json) bpt_print_fallback(dev, stdout);
  if (o.memory && !o.json) bpt_print_memory_stats(dev, "");
  if (o.stats) bpt_print_run_stats(ctx, o.json ? stderr : stdout);
out:
  bp_device_close(ref);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return pass ? BPT_EXIT_OK : BPT_EXIT_FAIL;
}
