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
  double stream_gbs; /* streaming read+write bandwidth from memory, measured */
  double llc_bytes;  /* last-level cache, 0 when unknown */
} bench_machine_t;
/* Detects the ISA, measures the clock and FMA throughput and the streaming
 * bandwidth over buffers of stream_bytes each. */
void bench_machine_measure(bench_machine_t *m, bool quick);
/* The streaming read+write bandwidth now, in GB/s (best of a cached-store
 * and a non-temporal-store loop), for memory-bound cases to be held to. */
double bench_stream_gbs(int threads, bool quick);
/* The bytes of each of the streaming loop's buffers (twice the last-level
 * cache, 64 MiB to 1 GiB): a working set this large comes from memory. */
size_t bench_dram_bytes(void);
/* The same loop over a working set of that many bytes (read + write), to
 * hold a memory-bound case to the level of the memory hierarchy its own
 * working set lives in. */
double bench_stream_gbs_at(int threads, double working_set);

/* The library anchors (OpenBLAS, MKL, oneDNN): bench_anchor.h. */

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
  const char *name; /* "openblas", "mkl", "onednn", "torch", "stream", ... */
  double ms;        /* < 0 when absent */
  double figure;    /* GFLOP/s or GB/s */
  double ratio;     /* anchor ms / our ms: > 1 means we are faster */
  const char *note; /* install command when absent */
  bool library;     /* another library's code (not a loop of ours, not ours
                     * unfused): a candidate for the best anchor */
  bool comparable;  /* false: the library ran a lesser kernel than the CPU
                     * supports, so the ratio is marked not comparable */
  char kernel[160]; /* the kernel it ran, where the library says */
} bench_anchor_fig_t;

#define BENCH_ANCHORS_MAX 10

typedef struct bench_result {
  bpt_case_t c;
  char device[128];
  bool ran;
  char message[256]; /* why it did not run */
  double ms, gflops, gbs;
  double pct_peak, pct_bw; /* < 0 when not meaningful */
  int anchors;
  bench_anchor_fig_t anchor[BENCH_ANCHORS_MAX];
  int best;            /* the fastest comparable library anchor, -1: none */
  bool cache_resident; /* memory-bound: the working set fits in the LLC, so
                        * pct_bw is of the stream loop over the same bytes */
  double intensity;    /* flops per byte of the minimum traffic, 0 unknown */
  double pct_gemm;     /* % of the device's own GEMM (or copy bandwidth when
                        * share_bw), < 0 unknown (bench_share.c) */
  bool share_bw;
} bench_result_t;

/* The "% of GEMM" column (bench_share.c): the device's f32 GEMM and copy
 * bandwidth, measured on it in the same run, and each result's share. */
typedef struct bench_share {
  int64_t gemm_n;
  double gemm_gflops, copy_gbs; /* < 0: could not be measured */
} bench_share_t;
void bench_share_measure(bp_device_t *dev, bool quick, const bench_timing_t *t,
                         bench_share_t *out);
void bench_share_apply(const bench_share_t *s, bench_result_t *r);
void bench_share_print(const bench_share_t *s);

/* Writes --json: the machine, the library anchors (bench_anchor.h), the
 * PyTorch version ("" when absent) and the n results, to path ("-": stdout); false when it cannot
 * (said on stderr) (bench_json.c). */
struct bench_libs;
bool bench_json_write(const char *path, const bench_machine_t *m,
                      const struct bench_libs *libs, const char *torch,
                      const bench_result_t *res, int n);
/* Prints the per-call overhead of a tiny op, direct and from a graph
 * (bench_overhead.c). */
void bench_overhead(bp_device_t *dev);
/* Time of the same f32 attention as matmul + softmax + matmul on dev (no
 * causal mask), in ms; -1 when not measured (bench_unfused.c). */
double bench_unfused_attention_ms(bp_device_t *dev, const bpt_case_t *c,
                                  const bench_timing_t *t);

#endif /* BP_TOOL_BENCH_H */
