/*
 * cases.h — the op cases bp run and bp bench execute: a plain description of
 * one op call with its shape, and an instance that owns the device buffers
 * and stream needed to run it.
 */
#ifndef BP_TOOL_CASES_H
#define BP_TOOL_CASES_H

#include <stdbool.h>
#include <stdint.h>

#include "backplane.h"

typedef enum bpt_op {
  BPT_GEMM = 0,  /* batch x (m x k) . (k x n) */
  BPT_ATTENTION, /* b, h, s, d, causal */
  BPT_CONV2D,    /* n, c, hw, k, r, stride, pad, groups */
  BPT_SOFTMAX,   /* rows x cols, along the last axis */
  BPT_LAYER_NORM,/* rows x cols, over the last axis */
  BPT_ADD,       /* y = a + b over numel elements */
  BPT_GELU,      /* rows x cols, exact (erf) GELU */
  BPT_OP_COUNT
} bpt_op_t;

typedef struct bpt_case {
  bpt_op_t op;
  bp_dtype_t dtype;
  /* gemm: batch, m, n, k. attention: batch=b, heads=h, seq=s, dim=d.
   * conv2d: batch=N, c=C, hw=H=W, k=K, r=R=S, stride, pad, groups.
   * softmax / layer_norm / gelu: m = rows, n = cols. add: n = elements. */
  int64_t batch, m, n, k;
  int64_t heads, seq, dim;
  int64_t c, hw, r, stride, pad, groups;
  bool causal;
  bool trans_b; /* gemm: B given as Bᵀ (n x k, row-major), as a linear layer's weights */
} bpt_case_t;

/* One case set up on one device: its buffers and a stream. */
typedef struct bpt_instance {
  bpt_case_t c;
  bp_device_t *device;
  bp_stream_t *stream;
  bp_buffer_t *in[3];
  bp_buffer_t *out;
  int64_t in_numel[3];
  int64_t out_numel;
  int inputs;
  char error[256]; /* why bpt_instance_create failed */
} bpt_instance_t;

/* Op family name: "gemm", "attention", ... */
const char *bpt_op_name(bpt_op_t op);
/* Parses an op family name; false when unknown. */
bool bpt_op_parse(const char *name, bpt_op_t *out_op);
/* Shape label: "1024x1024x1024", "B1 H8 S512 D64 causal", ... */
void bpt_case_label(const bpt_case_t *c, char *out, size_t size);
/* Floating-point operations of one call (0 for memory-bound ops). */
double bpt_case_flops(const bpt_case_t *c);
/* Minimum bytes one call must move to and from memory. */
double bpt_case_bytes(const bpt_case_t *c);
/* The backplane op family the case needs (for bp_device_supports). */
bp_op_t bpt_case_bp_op(const bpt_case_t *c);

/* Allocates buffers for c on device and fills the inputs with uniform
 * random numbers in [-1, 1) from seed (bp_random, or the same Philox-free
 * host generator when the device has no random op for the dtype). On failure
 * prints nothing, frees what it built, returns the status and leaves the
 * message in out->error. */
bp_status_t bpt_instance_create(const bpt_case_t *c, bp_device_t *device,
                                uint64_t seed, bpt_instance_t *out);
/* Frees the instance's buffers and stream. */
void bpt_instance_destroy(bpt_instance_t *inst);
/* Queues one call of the op on the instance's stream (no wait). */
bp_status_t bpt_instance_exec(bpt_instance_t *inst);
/* Copies input i (f32 cases only) to host memory of in_numel[i] floats. */
bp_status_t bpt_instance_read_input(bpt_instance_t *inst, int i, float *dst);
/* Overwrites input i from host memory. */
bp_status_t bpt_instance_write_input(bpt_instance_t *inst, int i,
                                     const float *src);
/* Copies the output to host memory of out_numel floats. */
bp_status_t bpt_instance_read_output(bpt_instance_t *inst, float *dst);

/* Runs warmup calls then reps timed calls, each timed alone between device
 * synchronisations, until at least reps calls and min_seconds have passed
 * (at most max_reps); writes the best time in milliseconds. */
bp_status_t bpt_instance_time(bpt_instance_t *inst, int warmup, int reps,
                              int max_reps, double min_seconds,
                              double *out_best_ms);

#endif /* BP_TOOL_CASES_H */
