/*
 * bench.h — internals of bp bench: the suite, the anchors measured beside
 * our figures (OpenBLAS, PyTorch, a streaming loop, the FMA peak), and one
 * result record per case.
 */
#ifndef BP_TOOL_BENCH_H
#define BP_TOOL_BENCH_H

#include <stdbool.h>

#include "bp.h"
#include "cases.h"

/* ---------------------------------------------------------------------------
 * The suite.
 */
/* Fills at most cap cases of the suite for the ops whose bit is set in
 * op_mask (1 << bpt_op_t), the small subset when quick. Returns the count. */
int bench_suite(unsigned op_mask, bool quick, bpt_case_t *out, int cap);
#define BENCH_SUITE_MAX 96

/* How long to measure: warm-up calls, then at least min_reps timed calls and
 * min_seconds, at most max_reps. */
typedef struct bench_timing {
  int warmup, min_reps, max_reps;
  double min_seconds;
  double slow_seconds; /* a warm-up call slower than this: one timed call */
  int rounds; /* ours and an in-process anchor (OpenBLAS) alternate this many
               * times for a case faster than round_ms; each keeps its best */
  double round_ms;
} bench_timing_t;
void bench_timing_for(bool quick, bench_timing_t *out);

/* ---------------------------------------------------------------------------
 * Anchors.
 */
#define BENCH_INSTALL_OPENBLAS "apt-get install libopenblas0"
#define BENCH_INSTALL_TORCH "apt-get install python3-torch"

/* The machine: FMA peak from detected ISA x cores x measured clock. */
typedef struct bench_machine {
  const char *isa;  /* "avx512", "avx2+fma", "scalar" */
  int lanes_f32;    /* f32 lanes per vector */
  int fma_units;    /* per core, measured */
  int cores;
  double ghz;       /* measured */
  double peak_f32_gflops;
  double stream_gbs; /* streaming read+write bandwidth, measured */
} bench_machine_t;
/* Detects the ISA, measures the clock and FMA throughput and the streaming
 * bandwidth over buffers of stream_bytes each. */
void bench_machine_measure(bench_machine_t *m, bool quick);
/* The streaming read+write bandwidth now, in GB/s (best of a cached-store
 * and a non-temporal-store loop), for memory-bound cases to be held to. */
double bench_stream_gbs(int threads, bool quick);

/* OpenBLAS through dlopen("libopenblas.so.0"). */
typedef struct bench_openblas bench_openblas_t;
/* Opens OpenBLAS; NULL when absent (reason in why). */
bench_openblas_t *bench_openblas_open(char *why, size_t why_size);
void bench_openblas_close(bench_openblas_t *ob);
/* "OpenBLAS 0.3.21 ..." configuration string. */
const char *bench_openblas_config(bench_openblas_t *ob);
/* The GEMM case c's matrices for OpenBLAS (f32 via sgemm, f64 via dgemm,
 * f16/bf16 via sgemm of the same shape), filled once and kept for every
 * round; NULL when it cannot run. */
typedef struct bench_openblas_case bench_openblas_case_t;
bench_openblas_case_t *bench_openblas_case(bench_openblas_t *ob, const bpt_case_t *c);
/* Best time in ms of the case after a warm-up call. */
double bench_openblas_time(bench_openblas_case_t *oc, const bench_timing_t *t);
void bench_openblas_case_free(bench_openblas_case_t *oc);

/* PyTorch through `python3 tools/bench_torch.py`: every torch-anchored case
 * of the suite measured in one subprocess. */
typedef struct bench_torch {
  bool available;
  bool not_needed; /* no case of the suite uses it */
  char version[64];
  char why[256];   /* reason when absent */
  int count;
  double ms[BENCH_SUITE_MAX];      /* < 0: not measured */
  double sdpa_ms[BENCH_SUITE_MAX]; /* F.scaled_dot_product_attention */
} bench_torch_t;
/* Whether PyTorch is an anchor for the case. */
bool bench_torch_covers(const bpt_case_t *c);
/* Runs the helper over the cases it covers. */
void bench_torch_measure(const bpt_case_t *cases, int n, bool quick,
                         bench_torch_t *out);

/* ---------------------------------------------------------------------------
 * Results.
 */
typedef struct bench_anchor_fig {
  const char *name; /* "openblas", "torch", "torch-sdpa", "stream", "peak" */
  double ms;        /* < 0 when absent */
  double figure;    /* GFLOP/s or GB/s */
  double ratio;     /* anchor ms / our ms: > 1 means we are faster */
  const char *note; /* install command when absent */
} bench_anchor_fig_t;

typedef struct bench_result {
  bpt_case_t c;
  char device[128];
  bool ran;
  char message[256]; /* why it did not run */
  double ms, gflops, gbs;
  double pct_peak, pct_bw; /* < 0 when not meaningful */
  int anchors;
  bench_anchor_fig_t anchor[3];
} bench_result_t;

/* Writes --json: the machine, the OpenBLAS and PyTorch versions ("" when
 * absent) and the n results, to path ("-": stdout); false when it cannot
 * (said on stderr) (bench_json.c). */
bool bench_json_write(const char *path, const bench_machine_t *m, const char *openblas,
                      const char *torch, const bench_result_t *res, int n);
/* Prints the per-call overhead of a tiny op, direct and from a graph
 * (bench_overhead.c). */
void bench_overhead(bp_device_t *dev);
/* Time of the same f32 attention as matmul + softmax + matmul on dev (no
 * causal mask), in ms; -1 when not measured (bench_unfused.c). */
double bench_unfused_attention_ms(bp_device_t *dev, const bpt_case_t *c,
                                  const bench_timing_t *t);

#endif /* BP_TOOL_BENCH_H */
