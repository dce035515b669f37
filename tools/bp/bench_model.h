/*
 * bench_model.h — bp bench --op model: the GPT-2-style and Llama-style
 * model of tools/model/model.h, prefill and decode, beside PyTorch running
 * the same model (tools/bench_torch_model.py).
 */
#ifndef BP_TOOL_BENCH_MODEL_H
#define BP_TOOL_BENCH_MODEL_H

#include <stdbool.h>

#include "tools/model/model.h"

/* Whether the command line asks for the model bench (--op model). */
bool bench_model_wanted(int argc, char **argv);
/* bp bench --op model [--device SEL] [--quick] [--json PATH]: its own
 * options, report and JSON. Returns a BPT_EXIT_* code. */
int bench_model_main(int argc, char **argv);
/* bp bench: bench_model_main for --op model, else bp_cmd_bench. */
int bench_model_or_bench(int argc, char **argv);

/* One case: a model, a dtype and a phase, and what was measured. */
typedef struct bench_model_case {
  const char *size; /* "small", "medium" */
  model_kind_t kind;
  bp_dtype_t dtype;
  int32_t layers;
  int64_t d_model, heads, batch, seq, pos; /* decode: seq 1 at pos */
  bool ran;
  char why[200]; /* why it did not run */
  double ms, gflops;
  double weight_gbs;  /* weight bytes / time (decode) */
  double pct_stream;  /* weight_gbs as % of the streaming loop, < 0: n/a */
  double torch_ms;    /* < 0: not measured */
  double bf16_vs_f32; /* bf16 cases: the f32 case's ms / this ms; < 0 n/a */
  int fallbacks;      /* fallback records the device gained over the case */
} bench_model_case_t;

/* PyTorch over the cases (bench_model_torch.c) on torch_device ("cpu", or
 * "cuda" beside a CUDA or ROCm device): sets torch_ms of each case it
 * measured; returns false (why filled) when torch is absent. version
 * receives torch's version. */
bool bench_model_torch(bench_model_case_t *cases, int n, bool quick, const char *torch_device, char *version,
                       size_t vsize, char *why, size_t wsize);
/* Writes --json (bench_model_torch.c). */
bool bench_model_json(const char *path, const char *device, const char *torch, double stream_gbs,
                      const bench_model_case_t *c, int n);

#endif /* BP_TOOL_BENCH_MODEL_H */
