/*
 * bench.c — bp bench: each op of the suite on each requested device, best of
 * several runs after a warm-up, printed beside the anchors measured in the
 * same run (OpenBLAS, MKL, oneDNN: bench_anchor.h; PyTorch, a streaming
 * loop, the FMA peak) with the ratio, the best anchor first. An absent
 * anchor is shown with why and what installs it; it is never a failure.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_quant.h"
#include "bench.h"
#include "bench_layers.h"
#include "bench_fallback.h"
#include "bench_anchor.h"
#include "bench_copy.h"
#include "bench_group.h"

#define BENCH_MAX_DEVICES 8
#define BENCH_SEED 7u

typedef struct bench_opts {
  const char *devices[BENCH_MAX_DEVICES];
  int ndevices;
  unsigned op_mask;
  bool quick;
  const char *json;
  const char *anchors; /* --anchors DIR: the anchors' venv */
  const char *isa;     /* --isa LEVEL: every side's instruction-set ceiling */
  bpt_context_flags_t ctx;
} bench_opts_t;

/* A library anchor's best time on one case, kept across devices. */
typedef struct bench_lib_fig {
  const char *name;
  char kernel[160];
  bool comparable;
  double ms; /* < 0: it could not run */
} bench_lib_fig_t;

/* Everything measured once per run, shared by every device. */
typedef struct bench_env {
  bpt_case_t cases[BENCH_SUITE_MAX];
  int ncases;
  bench_timing_t timing;
  bench_machine_t machine;
  bench_libs_t libs;
  int nlib[BENCH_SUITE_MAX]; /* -1: not measured yet */
  bench_lib_fig_t lib[BENCH_SUITE_MAX][BENCH_LIB_CASES_MAX];
  double stream_at[BENCH_SUITE_MAX]; /* the loop over case i's working set */
  bench_torch_t torch;
  bool quick;
} bench_env_t;

static void bench_help(FILE *f) {
  fprintf(f,
          "usage: bp bench [--device SEL ...] [--op OP[,OP...]] [--quick]\n"
          "                [--json FILE] [--anchors DIR] [--isa LEVEL] [--no-isolate]\n\n"
          "Times each op of a fixed suite on each device (best of several runs\n"
          "after a warm-up, bp_device_synchronize around each call) and prints,\n"
          "beside each figure, the anchors measured in the same run, the best\n"
          "(fastest comparable library) first, and the ratio (anchor time / our\n"
          "time: above 1 means faster than the anchor):\n"
          "  gemm        openblas (Debian's libopenblas.so.0), openblas-new\n"
          "              (scipy-openblas32), mkl (cblas_sgemm/dgemm, bf16 and f16\n"
          "              GEMM), onednn (matmul); ours and they alternate over 3\n"
          "              rounds, each keeps its best\n"
          "  attention   PyTorch matmul+softmax+matmul (and F.scaled_dot_product_\n"
          "              attention when present), via tools/bench_torch.py\n"
          "  conv2d      onednn (its blocked layouts), onednn-nchw (with the\n"
          "              reorders from and to NCHW), PyTorch F.conv2d; our\n"
          "              weights in a constant buffer, as oneDNN's are\n"
          "              reordered once\n"
          "  softmax, layer_norm, gelu   PyTorch, and the streaming bandwidth\n"
          "  add         the streaming bandwidth (read+write loop measured now)\n"
          "MKL, oneDNN and the current OpenBLAS come from the venv `make bench`\n"
          "fills (--anchors, else $BP_BENCH_ANCHORS, else bench-venv/ in the build\n"
          "folder). Each library's version and kernel are printed; an OpenBLAS\n"
          "that picks a lesser kernel than the CPU has is reopened with\n"
          "OPENBLAS_CORETYPE (unless the caller set it), and any anchor still on\n"
          "a lesser kernel has its ratios marked 'not comparable'.\n"
          "Compute-bound ops also show %% of the FMA peak (detected ISA x cores x\n"
          "measured clock); memory-bound ops show GB/s and %% of the stream loop\n"
          "over the same working set: 'llc' when it fits in the last-level cache,\n"
          "'bw' when it streams from memory.\n"
          "%%gemm: every op's throughput as a share of the same device's f32 GEMM\n"
          "(1024^3, 512^3 with --quick, measured first on each device); a matrix-\n"
          "vector product (one row or column of C) as a share of the device's\n"
          "copy bandwidth instead ('bw').\n"
          "An absent anchor is shown as absent with why and what installs it\n"
          "(%s, %s, %s); it never fails the run.\n\n"
          "  --device SEL  a device as in 'bp devices' (repeatable; default best)\n"
          "  --device group:A,B  a device group beside its best member on one\n"
          "                large f32 GEMM; only the options below apply with it\n"
          "  --size N, --m M, --n N, --k K  its size (group only; default 2048)\n"
          "  --reps R      best of R runs after a warm-up (group only; default 5)\n"
          "  --split-shared  also split across members on shared hardware and\n"
          "                time each member on its slice (group only)\n"
          "  --op OP       gemm, attention, conv2d, softmax, layer_norm, add, gelu\n"
          "                or all (repeatable or comma-separated; default all);\n"
          "                --op model runs a transformer model on its own\n"
          "                (bp bench --op model --help)\n"
          "  --quick       a small subset that runs in a few seconds\n"
          "  --json FILE   also write one record per case to FILE ('-': stdout)\n"
          "  --anchors DIR the anchors' virtual environment (see above)\n"
          "  --isa LEVEL   avx2, avx or sse: run every side at most at that\n"
          "                instruction set, to measure the kernels a lesser CPU\n"
          "                runs: CPU devices open with isa_max, MKL, oneDNN and\n"
          "                PyTorch get their own ceilings (MKL_ENABLE_INSTRUCTIONS,\n"
          "                ONEDNN_MAX_CPU_ISA, ATEN_CPU_CAPABILITY), OpenBLAS its\n"
          "                core; an anchor on another level is marked not comparable\n"
          "  --no-isolate  probe plugins in this process instead of a child\n"
          "  --copies      instead: copy bandwidth between every pair of devices\n"
          "                beside host memcpy (bp bench --copies --help)\n\n"
          "Progress is shown on stderr when it is a terminal.\n"
          "Exit status: 0 (also when an op is unsupported or an anchor absent),\n"
          "1 when no device could be opened, 2 on a usage error.\n",
          BENCH_INSTALL_OPENBLAS, BENCH_INSTALL_TORCH, BENCH_INSTALL_VENV);
}

static int parse_ops(const char *list, unsigned *mask) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  for (char *save, *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    bpt_op_t op;
    if (!strcmp(tok, "all"))
      *mask |= (1u << BPT_OP_COUNT) - 1;
    else if (bpt_op_parse(tok, &op))
      *mask |= 1u << op;
    else
      return bpt_usage_error("bench", "unknown op '%s'", tok);
  }
  return 0;
}

/* --isa LEVEL: the ceiling is set at once, before any anchor loads. */
static int parse_isa(const char *name) {
  bench_isa_level_t level;
  if (!bench_isa_level_parse(name, &level) || level == BENCH_ISA_AVX512)
    return bpt_usage_error("bench", "--isa takes avx2, avx or sse, not '%s'", name);
  bench_isa_cap_set(level);
  return 0;
}

static int parse(int argc, char **argv, bench_opts_t *o) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},       {"device", required_argument, NULL, 'd'},
      {"op", required_argument, NULL, 'o'},   {"json", required_argument, NULL, 'j'},
      {"quick", no_argument, NULL, 'q'},      {"no-isolate", no_argument, NULL, 'n'},
      {"anchors", required_argument, NULL, 'a'}, {"isa", required_argument, NULL, 'i'},
      {NULL, 0, NULL, 0}};
  bool started = false;
  for (int c; (c = bpt_getopt("bench", argc, argv, "h", longopts, &started)) != -1;) {
    switch (c) {
    case 'h': bench_help(stdout); return -1;
    case 'd':
      if (o->ndevices == BENCH_MAX_DEVICES)
        return bpt_usage_error("bench", "at most %d devices", BENCH_MAX_DEVICES);
      o->devices[o->ndevices++] = optarg;
      break;
    case 'o':
      if (parse_ops(optarg, &o->op_mask)) return BPT_EXIT_USAGE;
      break;
    case 'j': o->json = optarg; break;
    case 'q': o->quick = true; break;
    case 'a': o->anchors = optarg; break;
    case 'i': o->isa = optarg; break;
    case 'n': o->ctx.no_isolate = true; break;
    default: return BPT_EXIT_USAGE;
    }
  }
  if (optind < argc) return bpt_usage_error("bench", "unexpected argument '%s'", argv[optind]);
  if (!o->op_mask) o->op_mask = (1u << BPT_OP_COUNT) - 1;
  return o->isa ? parse_isa(o->isa) : 0;
}

/* ---------------------------------------------------------------------------
 * Measuring.
 */
/* CPU devices and software emulation (PoCL, llvmpipe) run on this host's
 * cores: their ceiling is the machine's measured peak and bandwidth. */
static bool is_cpu(const bp_device_entry_t *e) {
  return e->info.kind == BP_DEVICE_CPU || e->info.kind == BP_DEVICE_SOFTWARE;
}

/* The f32-equivalent peak for the case's dtype on the device, 0 if unknown. */
static double device_peak(const bench_env_t *env, const bp_device_entry_t *e,
                          bp_dtype_t dt) {
  double p = is_cpu(e) ? env->machine.peak_f32_gflops : e->info.peak_gflops;
  return dt == BP_F64 ? p / 2 : p;
}

static double device_bandwidth(const bench_env_t *env,
                               const bp_device_entry_t *e) {
  return is_cpu(e) ? env->machine.stream_gbs : e->info.bandwidth_gbs;
}

static bp_status_t time_case(bpt_instance_t *inst, const bench_timing_t *t,
                             double *out_ms) {
  double warm;
  bp_status_t st = bpt_instance_time(inst, 0, 1, 1, 0, &warm);
  if (st != BP_OK) return st;
  if (warm > t->slow_seconds * 1e3)
    return bpt_instance_time(inst, 0, 1, 1, 0, out_ms);
  return bpt_instance_time(inst, t->warmup - 1, t->min_reps, t->max_reps,
                           t->min_seconds, out_ms);
}

/* A library anchor's best time for case i, kept across devices and
 * rounds. OpenBLAS's threads spin for about 2^28 cycles after a call (its
 * THREAD_TIMEOUT), OpenMP's (MKL, oneDNN) for their blocktime, and would
 * take the cores from whatever is timed next; let them park first, as
 * they would between an application's calls. */
static void lib_best(bench_lib_fig_t *fig, bench_lib_case_t *lc, const bench_timing_t *t) {
  double ms = bench_lib_case_time(lc, t);
  usleep(300000);
  if (fig->ms < 0 || ms < fig->ms) fig->ms = ms;
}

/* Sets up case i's library anchors (once: later devices reuse their
 * figures' slots and keep the best). */
static int lib_cases(bench_env_t *env, int i, bench_lib_case_t *lc) {
  int n = bench_lib_cases(&env->libs, &env->cases[i], lc, BENCH_LIB_CASES_MAX);
  bool first = env->nlib[i] < 0;
  env->nlib[i] = n;
  for (int a = 0; a < n && first; a++) {
    bench_lib_fig_t *f = &env->lib[i][a];
    *f = (bench_lib_fig_t){.name = lc[a].name, .comparable = lc[a].comparable, .ms = -1};
    snprintf(f->kernel, sizeof f->kernel, "%s", lc[a].kernel);
  }
  return n;
}

/* Ours, and each library anchor beside it on its own copy of the operands.
 * They alternate over several rounds, each keeping its best: the host's
 * load comes and goes over seconds (other tenants), and timing one after
 * the other let a quiet or a busy stretch fall on one side only. Calls
 * over 100 ms take one timed call per round after the first, which keeps
 * the whole suite's rounds to a few minutes. */
static bp_status_t time_case_rounds(bench_env_t *env, int i, bpt_instance_t *inst,
                                    double *out_ms) {
  bench_timing_t t = env->timing;
  bp_status_t st = time_case(inst, &t, out_ms);
  if (st != BP_OK) return st;
  bench_lib_case_t lc[BENCH_LIB_CASES_MAX];
  int n = lib_cases(env, i, lc);
  int rounds = *out_ms < t.round_ms ? t.rounds : 1;
  if (*out_ms > 100) t.min_reps = 1;
  for (int round = 1; round < rounds && n > 0; round++) {
    for (int a = 0; a < n; a++) lib_best(&env->lib[i][a], &lc[a], &t);
    double again;
    /* one untimed call first, as bench_lib_case_time makes: after the
     * pause above the host runs the first ~10 ms slow */
    st = bpt_instance_time(inst, 1, t.min_reps, t.max_reps, t.min_seconds, &again);
    if (st != BP_OK) break;
    if (again < *out_ms) *out_ms = again;
  }
  for (int a = 0; a < n; a++) {
    if (st == BP_OK) lib_best(&env->lib[i][a], &lc[a], &t);
    bench_lib_case_free(&lc[a]);
  }
  return st;
}

/* A memory-bound op on this host's cores and the streaming loop over the
 * same working set alternate over the rounds (stream, op, stream, ...):
 * each keeps its best, so a fast stretch of the host's memory counts for
 * the loop whenever it comes, and the op is timed in the same stretches.
 * The loop runs over the case's own bytes: a working set that fits in the
 * cache is held to the cache's speed, not to memory's. A working set over
 * the cache also raises the machine's memory figure. */
static bp_status_t time_stream_rounds(bench_env_t *env, int i, bpt_instance_t *inst,
                                      double *ms) {
  const bench_timing_t *t = &env->timing;
  bench_machine_t *m = &env->machine;
  double bytes = bpt_case_bytes(&env->cases[i]);
  bool resident = m->llc_bytes > 0 && bytes <= m->llc_bytes;
  for (int round = 0; round < t->rounds; round++) {
    double now = bench_stream_gbs_at(m->cores, bytes);
    if (now > env->stream_at[i]) env->stream_at[i] = now;
    if (!resident && now > m->stream_gbs) m->stream_gbs = now;
    if (round + 1 == t->rounds) break;
    double again;
    bp_status_t st = bpt_instance_time(inst, 0, t->min_reps, t->max_reps,
                                       t->min_seconds, &again);
    if (st != BP_OK) return st;
    if (again < *ms) *ms = again;
  }
  return BP_OK;
}

static bench_anchor_fig_t *add_anchor(bench_result_t *r, const char *name, double ms,
                                       double figure, const char *note) {
  static bench_anchor_fig_t spare;
  if (r->anchors == BENCH_ANCHORS_MAX) return &spare;
  bench_anchor_fig_t *a = &r->anchor[r->anchors++];
  *a = (bench_anchor_fig_t){.name = name, .ms = ms, .figure = figure, .note = note,
                            .comparable = true};
  a->ratio = ms > 0 && r->ms > 0 ? ms / r->ms : -1;
  return a;
}

/* An anchor timed on the same shape: figure from its time. */
static bench_anchor_fig_t *add_timed_anchor(bench_result_t *r, const char *name,
                                             double ms, const char *note) {
  double work = r->gflops > 0 ? bpt_case_flops(&r->c) : bpt_case_bytes(&r->c);
  return add_anchor(r, name, ms, ms > 0 ? work / (ms * 1e6) : -1, note);
}

/* The library anchors of case i: each one measured, and the absent ones
 * that would have run it, with why. */
static void attach_libs(bench_env_t *env, int i, bench_result_t *r) {
  const bpt_case_t *c = &env->cases[i];
  bool ran[BENCH_LIB_COUNT] = {false};
  for (int a = 0; a < env->nlib[i]; a++) {
    const bench_lib_fig_t *f = &env->lib[i][a];
    bench_anchor_fig_t *fig = add_timed_anchor(r, f->name, f->ms, NULL);
    fig->library = true;
    fig->comparable = f->comparable;
    snprintf(fig->kernel, sizeof fig->kernel, "%s", f->kernel);
    for (int l = 0; l < BENCH_LIB_COUNT; l++)
      if (!strncmp(f->name, env->libs.lib[l].name, strlen(env->libs.lib[l].name)))
        ran[l] = true;
  }
  bool gemm = c->op == BPT_GEMM, blas_type = c->dtype == BP_F32 || c->dtype == BP_F64;
  bool wanted[BENCH_LIB_COUNT] = {gemm && blas_type, gemm && blas_type, gemm,
                                  (gemm || c->op == BPT_CONV2D) && c->dtype != BP_F64};
  for (int l = 0; l < BENCH_LIB_COUNT; l++)
    if (wanted[l] && !ran[l] && !env->libs.lib[l].present)
      add_anchor(r, env->libs.lib[l].name, -1, -1, env->libs.lib[l].why)->library = true;
}

/* The best anchor: the fastest library that ran a comparable kernel. */
static void pick_best(bench_result_t *r) {
  r->best = -1;
  for (int a = 0; a < r->anchors; a++) {
    const bench_anchor_fig_t *f = &r->anchor[a];
    if (!f->library || !f->comparable || f->ms <= 0) continue;
    if (r->best < 0 || f->ms < r->anchor[r->best].ms) r->best = a;
  }
}

static void attach_anchors(bench_env_t *env, int i, double bw,
                           bench_result_t *r) {
  const bpt_case_t *c = &env->cases[i];
  attach_libs(env, i, r);
  if (bench_torch_covers(c)) {
    add_timed_anchor(r, "torch", env->torch.ms[i],
                     env->torch.available ? NULL : BENCH_INSTALL_TORCH)->library = true;
    if (env->torch.sdpa_ms[i] > 0)
      add_timed_anchor(r, "torch-sdpa", env->torch.sdpa_ms[i], NULL)->library = true;
  }
  if (bpt_case_bytes(c) > 0 && bw > 0) {
    /* The streaming loop as a time for the same bytes: ratio = % of it. */
    add_anchor(r, "stream", bpt_case_bytes(c) / (bw * 1e6), bw, NULL);
  }
}

static void measure_case(bench_env_t *env, bp_device_t *dev,
                         const bp_device_entry_t *e, int i,
                         bench_result_t *r) {
  const bpt_case_t *c = &env->cases[i];
  memset(r, 0, sizeof *r);
  r->c = *c;
  r->pct_peak = r->pct_bw = -1;
  snprintf(r->device, sizeof r->device, "%s", e->info.name);
  bool ok = false;
  bp_device_supports(dev, bpt_case_bp_op(c), c->dtype, &ok);
  if (!ok) {
    snprintf(r->message, sizeof r->message, "unsupported: %s %s",
             bpt_op_name(c->op), bp_dtype_name(c->dtype));
    return;
  }
  bpt_instance_t inst;
  bp_status_t st = bpt_instance_create(c, dev, BENCH_SEED, &inst);
  if (st != BP_OK) {
    snprintf(r->message, sizeof r->message, "%s", inst.error);
    return;
  }
  bool memory_bound = is_cpu(e) && bpt_case_flops(c) <= 0 && bpt_case_bytes(c) > 0;
  st = time_case_rounds(env, i, &inst, &r->ms);
  if (st == BP_OK && memory_bound) st = time_stream_rounds(env, i, &inst, &r->ms);
  if (st != BP_OK)
    snprintf(r->message, sizeof r->message, "failed: %s (%s)",
             bp_status_string(st), bp_last_error());
  bpt_instance_destroy(&inst);
  if (st != BP_OK) return;
  r->ran = true;
  r->intensity = bench_case_intensity(c);
  double peak = device_peak(env, e, c->dtype), bw = device_bandwidth(env, e);
  if (memory_bound && env->stream_at[i] > 0) {
    r->cache_resident = env->machine.llc_bytes > 0 && bpt_case_bytes(c) <= env->machine.llc_bytes;
    bw = env->stream_at[i];
  }
  if (bpt_case_flops(c) > 0) {
    r->gflops = bpt_case_flops(c) / (r->ms * 1e6);
    if (peak > 0) r->pct_peak = 100 * r->gflops / peak;
  } else {
    r->gbs = bpt_case_bytes(c) / (r->ms * 1e6);
    if (bw > 0) r->pct_bw = 100 * r->gbs / bw;
  }
  attach_anchors(env, i, bw, r);
  /* What fusing buys: the same attention as three dispatches here
   * (causal: without the mask, so a lower bound on the gain). */
  if (c->op == BPT_ATTENTION)
    add_timed_anchor(r, "unfused",
                     bench_unfused_attention_ms(dev, c, &env->timing), NULL);
  pick_best(r);
}

/* ---------------------------------------------------------------------------
 * Printing.
 */
static const char *env_or_unset(const char *name) {
  const char *v = getenv(name);
  return v ? v : "(unset)";
}

static bp_isa_level_t device_isa_max(void);

static void print_env(const bench_env_t *env) {
  const bench_machine_t *m = &env->machine;
  printf("machine: %d cores x %s (%d f32 lanes, %d FMA unit%s/core) x %.2f GHz"
         " measured = %.1f GFLOP/s f32 peak\n",
         m->cores, m->isa, m->lanes_f32, m->fma_units,
         m->fma_units > 1 ? "s" : "", m->ghz, m->peak_f32_gflops);
  if (bench_isa_capped())
    printf("isa:     at most %s (--isa): CPU devices opened with isa_max %s; MKL, oneDNN"
           " and PyTorch capped by MKL_ENABLE_INSTRUCTIONS=%s, ONEDNN_MAX_CPU_ISA=%s,"
           " ATEN_CPU_CAPABILITY=%s\n",
           bench_isa_level_name(bench_cpu_isa_level()),
           device_isa_max() == BP_ISA_AVX2 ? "avx2" : "scalar", env_or_unset("MKL_ENABLE_INSTRUCTIONS"),
           env_or_unset("ONEDNN_MAX_CPU_ISA"), env_or_unset("ATEN_CPU_CAPABILITY"));
  printf("stream:  %.1f GB/s from memory (read+write loop, %d threads, buffers over"
         " the %.0f MiB last-level cache, measured now)\n",
         m->stream_gbs, m->cores, m->llc_bytes / (1 << 20));
  bench_libs_print(&env->libs, stdout);
  if (env->torch.available)
    printf("torch:   PyTorch %s via tools/bench_torch.py\n", env->torch.version);
  else if (env->torch.not_needed)
    printf("torch:   not used by the selected ops\n");
  else
    printf("torch:   absent (%s); install: %s\n", env->torch.why,
           BENCH_INSTALL_TORCH);
}

static void print_header(const bp_device_entry_t *e, const bench_share_t *share) {
  printf("\ndevice: %s (rank %u, backend %s, %s)\n", e->info.name, e->rank,
         e->backend, bpt_kind_name(e->info.kind));
  bench_share_print(share);
  printf("%-10s %-30s %-4s %9s %16s %6s %7s | %-12s %9s %16s %8s\n", "op", "shape",
         "type", "ms", "ours", "%peak", "%gemm", "best anchor", "ms", "anchor", "ratio");
}

static void format_fig(double v, bool bytes, char *out, size_t size) {
  if (v < 0)
    snprintf(out, size, "-");
  else
    snprintf(out, size, "%.1f %s", v, bytes ? "GB/s" : "GFLOP/s");
}

/* One anchor's line; a ratio against a lesser kernel says so, and the
 * kernel a oneDNN primitive picked (it varies by case) is named. */
static void print_anchor(const bench_anchor_fig_t *a, bool bytes) {
  char fig[32];
  if (a->ms < 0) {
    printf("%-12s absent: %s\n", a->name, a->note ? a->note : "not measured");
    return;
  }
  format_fig(a->figure, bytes, fig, sizeof fig);
  printf("%-12s %9.3f %16s %7.2fx", a->name, a->ms, fig, a->ratio);
  if (!a->comparable) printf("  not comparable: %s", a->kernel);
  else if (!strncmp(a->name, "onednn", 6) && a->kernel[0]) printf("  (%s)", a->kernel);
  printf("\n");
}

static void print_result(const bench_result_t *r) {
  char shape[96], fig[32], pct[16] = "-";
  bool bytes = r->gbs > 0;
  bpt_case_label(&r->c, shape, sizeof shape);
  printf("%-10s %-30s %-4s ", bpt_op_name(r->c.op), shape,
         bp_dtype_name(r->c.dtype));
  if (!r->ran) {
    printf("%s\n", r->message);
    return;
  }
  format_fig(bytes ? r->gbs : r->gflops, bytes, fig, sizeof fig);
  double p = bytes ? r->pct_bw : r->pct_peak;
  /* a working set inside the last-level cache is held to the stream loop
   * over the same bytes (in cache), one over it to memory's */
  if (p >= 0) snprintf(pct, sizeof pct, "%.0f%%%s", p, !bytes ? "" : r->cache_resident ? "llc" : "bw");
  char share[16] = "-";
  if (r->pct_gemm >= 0) snprintf(share, sizeof share, "%.0f%%%s", r->pct_gemm, r->share_bw ? "bw" : "");
  printf("%9.3f %16s %6s %7s | ", r->ms, fig, pct, share);
  if (r->anchors == 0) printf("-\n");
  if (r->anchors > 0 && r->best < 0) printf("%-12s\n", "(none)");
  if (r->best >= 0) print_anchor(&r->anchor[r->best], bytes);
  for (int a = 0; a < r->anchors; a++) {
    if (a == r->best) continue;
    printf("%*s| ", 10 + 1 + 30 + 1 + 4 + 1 + 9 + 1 + 16 + 1 + 6 + 1 + 7 + 1, "");
    print_anchor(&r->anchor[a], bytes);
  }
}

/* ---------------------------------------------------------------------------
 * The run.
 */
static void env_measure(bench_env_t *env, const bench_opts_t *o) {
  env->quick = o->quick;
  env->ncases = bench_suite(o->op_mask, o->quick, env->cases, BENCH_SUITE_MAX);
  bench_timing_for(o->quick, &env->timing);
  bpt_progress(0, 1, "measuring clock, FMA peak and bandwidth");
  bench_machine_measure(&env->machine, o->quick);
  bench_libs_open(&env->libs, o->anchors);
  for (int i = 0; i < BENCH_SUITE_MAX; i++) env->nlib[i] = -1;
  bench_torch_measure(env->cases, env->ncases, o->quick, &env->torch);
  bpt_progress_done();
}

static void bench_device(bench_env_t *env, bp_device_t *dev, bool print,
                         bench_result_t *res) {
  bp_device_entry_t e;
  bp_device_entry(dev, &e);
  bench_share_t share;
  bench_share_measure(dev, env->quick, &env->timing, &share);
  if (print) print_header(&e, &share);
  for (int i = 0; i < env->ncases; i++) {
    char label[128], shape[96];
    bpt_case_label(&env->cases[i], shape, sizeof shape);
    snprintf(label, sizeof label, "%s %s", bpt_op_name(env->cases[i].op), shape);
    bpt_progress(i + 1, env->ncases, label);
    measure_case(env, dev, &e, i, &res[i]);
    bench_share_apply(&share, &res[i]);
    bpt_progress_done();
    if (print) print_result(&res[i]);
    fflush(stdout);
  }
  if (print) bench_overhead(dev);
  if (print) bench_layers(dev);
  if (print) bench_fallback(dev);
}

/* A CPU device runs AVX-512, AVX2 + FMA or scalar kernels: a ceiling
 * below AVX2 leaves it scalar. Other devices ignore isa_max. */
static bp_isa_level_t device_isa_max(void) {
  if (!bench_isa_capped()) return BP_ISA_BEST;
  return bench_cpu_isa_level() >= BENCH_ISA_AVX2 ? BP_ISA_AVX2 : BP_ISA_SCALAR;
}

int bp_cmd_bench(int argc, char **argv) {
  for (int i = 1; i < argc; i++) /* copy bandwidth: its own options */
    if (!strcmp(argv[i], "--copies")) return bench_copy_main(argc, argv);
  if (bench_group_wanted(argc, argv)) return bench_group_main(argc, argv); /* its own report */
  if (bench_quant_wanted(argc, argv)) return bench_quant_main(argc, argv); /* its own report */
  bench_opts_t o = {0};
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  bp_context_t *ctx = bpt_context_open(&o.ctx);
  if (!ctx) return BPT_EXIT_FAIL;
  bp_device_t *devs[BENCH_MAX_DEVICES] = {0};
  int ndev = o.ndevices ? o.ndevices : 1;
  bench_env_t *env = calloc(1, sizeof *env);
  bench_result_t *res = NULL;
  rc = BPT_EXIT_FAIL;
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = true,
                            .isa_max = device_isa_max()};
  for (int d = 0; d < ndev; d++)
    if (!(devs[d] = bpt_device_open_config(ctx, o.ndevices ? o.devices[d] : NULL, &cfg)))
      goto out;
  if (!env) goto out;
  env_measure(env, &o);
  res = calloc((size_t)(ndev * env->ncases) + 1, sizeof *res);
  if (!res) goto out;
  bool to_stdout = o.json && !strcmp(o.json, "-");
  if (!to_stdout) print_env(env);
  for (int d = 0; d < ndev; d++)
    bench_device(env, devs[d], !to_stdout, res + d * env->ncases);
  rc = BPT_EXIT_OK;
  if (o.json &&
      !bench_json_write(o.json, &env->machine, &env->libs,
                        env->torch.available ? env->torch.version : "", res, ndev * env->ncases))
    rc = BPT_EXIT_FAIL;
out:
  if (env) bench_libs_close(&env->libs);
  free(res);
  free(env);
  for (int d = 0; d < ndev; d++) bp_device_close(devs[d]);
  bp_context_destroy(ctx);
  return rc;
}
