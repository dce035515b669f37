/*
 * bench_model.c — bp bench --op model: the GPT-2-style and Llama-style
 * model of tools/model/model.h (one layer, the "block", and two layers) at
 * two sizes, f32 and bf16, prefill and one-token decode from the KV cache,
 * on one device, beside PyTorch running the same model with 2 threads.
 * Decode is held to the weight-streaming bandwidth: a decode step reads
 * every weight once, so weight bytes / time against the streaming loop
 * (bench_stream_gbs) says how close it is to the memory's limit.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_model.h"

#define CASES_MAX 64

typedef struct model_opts {
  const char *device, *json;
  bool quick;
  bpt_context_flags_t ctx;
} model_opts_t;

bool bench_model_wanted(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--op=model")) return true;
    if (!strcmp(argv[i], "--op") && i + 1 < argc && !strcmp(argv[i + 1], "model")) return true;
  }
  return false;
}

static void model_help(FILE *f) {
  fprintf(f,
          "usage: bp bench --op model [--device SEL] [--quick] [--json PATH] [--no-isolate]\n"
          "\n"
          "Times a GPT-2-style and a Llama-style transformer written with backplane\n"
          "ops (one layer and two layers; d_model 256 with 8 heads, and 1024 with 16;\n"
          "Llama with 2 KV heads), f32 and bf16, prefill of 2 x 128 tokens and one\n"
          "decode step over a 128-token KV cache, best of several runs (decode: best\n"
          "step of up to 100 ms of steps after 20 warm-up steps). PyTorch runs\n"
          "the same model in the same run (2 threads) where it is installed\n"
          "(%s); ratio = PyTorch ms / ours (> 1: we are faster).\n"
          "Decode shows weight bytes / time and its %% of the streaming loop.\n"
          "Automatic fallback is on; ops that fell back are counted per case.\n"
          "  --quick   the small size only, fewer runs\n",
          BENCH_INSTALL_TORCH);
}

static int parse(int argc, char **argv, model_opts_t *o) {
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
                                           {"device", required_argument, NULL, 'd'},
                                           {"op", required_argument, NULL, 'o'},
                                           {"json", required_argument, NULL, 'j'},
                                           {"quick", no_argument, NULL, 'q'},
                                           {"no-isolate", no_argument, NULL, 'n'},
                                           {NULL, 0, NULL, 0}};
  bool started = false;
  for (int c; (c = bpt_getopt("bench", argc, argv, "h", longopts, &started)) != -1;) {
    switch (c) {
    case 'h':
      model_help(stdout);
      return -1;
    case 'd':
      o->device = optarg;
      break;
    case 'o':
      if (strcmp(optarg, "model"))
        return bpt_usage_error("bench", "--op model cannot be combined with '%s'", optarg);
      break;
    case 'j':
      o->json = optarg;
      break;
    case 'q':
      o->quick = true;
      break;
    case 'n':
      o->ctx.no_isolate = true;
      break;
    default:
      return BPT_EXIT_USAGE;
    }
  }
  if (optind < argc) return bpt_usage_error("bench", "unexpected argument '%s'", argv[optind]);
  return 0;
}

/* The suite: size x kind x layers x dtype x (prefill, decode). */
static int make_cases(bool quick, bench_model_case_t *out) {
  static const struct {
    const char *name;
    int64_t d, heads;
  } sizes[] = {{"small", 256, 8}, {"medium", 1024, 16}};
  static const bp_dtype_t dtypes[] = {BP_F32, BP_BF16};
  int n = 0;
  for (int s = 0; s < (quick ? 1 : 2); s++)
    for (int k = 0; k < 2; k++)
      for (int32_t layers = 1; layers <= 2; layers++)
        for (int t = 0; t < 2; t++)
          for (int decode = 0; decode < 2; decode++)
            out[n++] = (bench_model_case_t){.size = sizes[s].name,
                                            .kind = (model_kind_t)k,
                                            .dtype = dtypes[t],
                                            .layers = layers,
                                            .d_model = sizes[s].d,
                                            .heads = sizes[s].heads,
                                            .batch = 2,
                                            .seq = decode ? 1 : 128,
                                            .pos = decode ? 128 : 0,
                                            .torch_ms = -1,
                                            .pct_stream = -1,
                                            .bf16_vs_f32 = -1};
  return n;
}

static uint32_t fallback_count(bp_device_t *dev) {
  uint32_t n = 0;
  bp_device_fallback_stats(dev, NULL, 0, &n);
  return n;
}

/* An input [batch, seq, d] of normals in the case's dtype. */
static bp_status_t make_input(bp_device_t *dev, bp_stream_t *s, const bench_model_case_t *c,
                              bp_buffer_t **buf, bp_tensor_t *t) {
  int64_t shape[3] = {c->batch, c->seq, c->d_model};
  size_t esz = c->dtype == BP_F32 ? 4 : 2;
  bp_status_t st = bp_buffer_alloc(dev, (uint64_t)(c->batch * c->seq * c->d_model) * esz, buf);
  if (st == BP_OK) st = bp_tensor_init(*buf, 0, c->dtype, 3, shape, NULL, t);
  if (st == BP_OK) st = bp_random(s, BP_RANDOM_NORMAL, 7, 0, 0.0, 1.0, t);
  return st;
}

/* Decode's ms: the best step of a run as long as a generation loop's,
 * after DECODE_WARMUP steps. The first steps after a prefill ran about
 * twice as slow as the steady state on the Xeon (tools/model_steps.c),
 * and a step of a small model is tens of microseconds, so one warm-up
 * and 20 steps (about a millisecond in all) timed mostly that start;
 * PyTorch's anchor samples for at least half a second. */
#define DECODE_WARMUP 20
static double time_decode(model_t *m, bp_stream_t *s, const bp_tensor_t *x, int64_t pos,
                          bool quick) {
  double first = model_time_forward(m, s, x, 1, pos, DECODE_WARMUP, 1);
  if (first <= 0) return first;
  double budget_ms = quick ? 30.0 : 100.0;
  int reps = (int)(budget_ms / first);
  reps = reps < 20 ? 20 : reps > 400 ? 400 : reps;
  double best = model_time_forward(m, s, x, 1, pos, 0, reps);
  return best > 0 && best < first ? best : first;
}

/* Times the case on model m (whose cache a prefill has filled for decode). */
static void time_case(bp_device_t *dev, bp_stream_t *s, model_t *m, bench_model_case_t *c,
                      bool quick, double stream_gbs) {
  bp_buffer_t *buf = NULL;
  bp_tensor_t x;
  uint32_t before = fallback_count(dev);
  bp_status_t st = make_input(dev, s, c, &buf, &x);
  int reps = quick ? 2 : 5;
  if (st != BP_OK)
    c->ms = -1;
  else if (c->seq == 1)
    c->ms = time_decode(m, s, &x, c->pos, quick);
  else
    c->ms = model_time_forward(m, s, &x, c->seq, c->pos, 1, reps);
  bp_buffer_free(buf);
  if (c->ms <= 0) {
    snprintf(c->why, sizeof c->why, "%s", bp_last_error());
    return;
  }
  c->ran = true;
  c->fallbacks = (int)(fallback_count(dev) - before);
  c->gflops = model_forward_flops(m, c->seq, c->pos) / (c->ms * 1e6);
  if (c->seq == 1) {
    c->weight_gbs = model_weight_bytes(m) / (c->ms * 1e6);
    if (stream_gbs > 0) c->pct_stream = 100.0 * c->weight_gbs / stream_gbs;
  }
}

/* Builds the model of cases c[0] (prefill) and c[1] (decode), prefill
 * first: its forward fills the cache the decode reads. */
static void run_pair(bp_device_t *dev, bench_model_case_t *c, bool quick, double stream_gbs) {
  bp_stream_t *s = NULL;
  model_t *m = NULL;
  model_config_t cfg;
  model_config_default(&cfg, c->kind, c->dtype, c->d_model, c->heads, c->layers, c->batch,
                       c[0].seq + c[1].seq);
  bp_status_t st = bp_stream_create(dev, &s);
  if (st == BP_OK) st = model_create(dev, s, &cfg, &m);
  if (st != BP_OK) {
    for (int i = 0; i < 2; i++) snprintf(c[i].why, sizeof c[i].why, "%s", bp_last_error());
  } else {
    for (int i = 0; i < 2; i++) time_case(dev, s, m, &c[i], quick, stream_gbs);
  }
  model_destroy(m);
  bp_stream_destroy(s);
}

/* bf16 cases: how much faster than the same case in f32. */
static void compare_dtypes(bench_model_case_t *c, int n) {
  for (int i = 0; i < n; i++) {
    if (c[i].dtype != BP_BF16 || !c[i].ran) continue;
    for (int j = 0; j < n; j++)
      if (c[j].dtype == BP_F32 && c[j].ran && c[j].kind == c[i].kind &&
          c[j].layers == c[i].layers && c[j].d_model == c[i].d_model && c[j].seq == c[i].seq)
        c[i].bf16_vs_f32 = c[j].ms / c[i].ms;
  }
}

static void print_case(const bench_model_case_t *c) {
  char torch[48] = "-", vs[16] = "-", bw[32] = "-";
  if (c->torch_ms > 0)
    snprintf(torch, sizeof torch, "%9.3f %6.2fx", c->torch_ms, c->ran ? c->torch_ms / c->ms : 0);
  if (c->bf16_vs_f32 > 0) snprintf(vs, sizeof vs, "%.2fx", c->bf16_vs_f32);
  if (c->seq == 1 && c->ran)
    snprintf(bw, sizeof bw, "%6.1f GB/s %3.0f%%", c->weight_gbs, c->pct_stream);
  printf("%-6s %-6s %-7s %-4s %-7s ", c->kind == MODEL_GPT2 ? "gpt2" : "llama", c->size,
         c->layers == 1 ? "block" : "2 layer", bp_dtype_name(c->dtype),
         c->seq == 1 ? "decode" : "prefill");
  if (!c->ran) {
    printf("not run: %s\n", c->why);
    return;
  }
  printf("%9.3f %8.1f  %-19s %-17s %-7s %s\n", c->ms, c->gflops, bw, torch, vs,
         c->fallbacks ? "fallback" : "");
}

static void print_report(const char *device, const char *torch, const char *why, double stream_gbs,
                         const bench_model_case_t *c, int n) {
  printf("model bench on %s; best of several runs; the host may be shared, so\n"
         "repeat runs and keep the best\n",
         device);
  printf("stream:  %.1f GB/s (read+write loop over buffers beyond the caches, all cores)\n",
         stream_gbs);
  if (torch[0])
    printf("pytorch: %s, 2 threads, the same model (ratio = PyTorch ms / ours)\n", torch);
  else
    printf("pytorch: absent (%s): %s\n", why, BENCH_INSTALL_TORCH);
  printf("batch 2; prefill 128 tokens; decode 1 token over a 128-token cache\n\n");
  printf("%-6s %-6s %-7s %-4s %-7s %9s %8s  %-19s %-17s %-7s\n", "model", "size", "layers", "type",
         "phase", "ms", "GFLOP/s", "weights (decode)", "pytorch ms ratio", "vs f32");
  for (int i = 0; i < n; i++) print_case(&c[i]);
}

int bench_model_or_bench(int argc, char **argv) {
  return bench_model_wanted(argc, argv) ? bench_model_main(argc, argv) : bp_cmd_bench(argc, argv);
}

int bench_model_main(int argc, char **argv) {
  model_opts_t o = {0};
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  bp_context_t *ctx = bpt_context_open(&o.ctx);
  if (!ctx) return BPT_EXIT_FAIL;
  bp_device_t *dev = bpt_device_open_with(ctx, o.device, true);
  if (!dev) {
    bp_context_destroy(ctx);
    return BPT_EXIT_FAIL;
  }
  bp_device_entry_t e;
  bp_device_entry(dev, &e);
  static bench_model_case_t cases[CASES_MAX];
  int n = make_cases(o.quick, cases);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  double stream_gbs = bench_stream_gbs(cores > 0 ? (int)cores : 1, o.quick);
  for (int i = 0; i < n; i += 2) {
    char label[96];
    snprintf(label, sizeof label, "model %s %s", cases[i].kind == MODEL_GPT2 ? "gpt2" : "llama",
             cases[i].size);
    bpt_progress(i + 1, n, label);
    run_pair(dev, &cases[i], o.quick, stream_gbs);
  }
  bpt_progress_done();
  compare_dtypes(cases, n);
  char version[64] = "", why[256] = "";
  /* PyTorch runs where the device is: its "cuda" is also ROCm's */
  bool gpu = e.info.dlpack_device_type == 2 || e.info.dlpack_device_type == 10;
  bench_model_torch(cases, n, o.quick, gpu ? "cuda" : "cpu", version, sizeof version, why, sizeof why);
  bool to_stdout = o.json && !strcmp(o.json, "-");
  if (!to_stdout) print_report(e.info.name, version, why, stream_gbs, cases, n);
  rc = BPT_EXIT_OK;
  if (o.json && !bench_model_json(o.json, e.info.name, version, stream_gbs, cases, n))
    rc = BPT_EXIT_FAIL;
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return rc;
}
