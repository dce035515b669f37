/*
 * attention_harness.h — what the CPU fused-attention kernel tests share:
 * the case description, [d0, d1, d2, d3] tensors in the layouts the kernels
 * must handle, and the comparison of a kernel's output with the plugin's
 * scalar double reference (plugins/cpu/ref/ref_attention.c). The kernel
 * under test is a parameter (att_harness_t.fn), so each test file names
 * its kernel (the dispatcher at a forced ISA level, or one kernel called
 * directly so that a decline cannot pass unseen) and keeps only its cases.
 */
#ifndef BP_TEST_ATTENTION_HARNESS_H
#define BP_TEST_ATTENTION_HARNESS_H

#include <stdint.h>
#include <time.h>

#include "plugins/cpu/cpu.h"
#include "test/cpu_fast_devs.h"

/* How q, k, v and out sit in memory (att_buf_make). */
enum { LAYOUT_DENSE, LAYOUT_BSHD, LAYOUT_KV_TRANSPOSED, LAYOUT_COUNT };
/* What a case plants in its inputs (att_run_case). */
enum { SPECIAL_NONE, SPECIAL_NAN_Q, SPECIAL_LARGE, SPECIAL_NAN_K, SPECIAL_NAN_V, SPECIAL_NAN_V0 };
/* The masks of ABI 1.5 a case adds (att_case_t.bias, .alibi). */
enum { BIAS_NONE, BIAS_DENSE, BIAS_BROADCAST };
enum { ALIBI_NONE, ALIBI_STANDARD, ALIBI_SLOPES };

typedef struct att_case {
  int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
  int causal, layout, special;
  bp_dtype_t dt;
} att_case_t;

/* The masks of ABI 1.5 a case adds: a sliding window (0: none); kv_lens
 * (per batch b: Skv - 1 - b, then Skv + 2, then 0, cycling); a bias in
 * q's dtype (every element, keys strided, some -inf and one row all -inf;
 * or one key row broadcast by stride 0); ALiBi (standard slopes of Hq + 2
 * heads from head 1, or an f32 slopes tensor). */
typedef struct att_masks {
  int window, kv_lens, bias, alibi;
} att_masks_t;

/* A kernel under test: the fast dispatcher or one kernel of it. */
typedef bp_status_t (*att_fn)(cpu_device_t *dev, const bp_attention_args_t *a);

typedef struct att_harness {
  att_fn fn;         /* the kernel every att_run_* call runs */
  const char *name;  /* in the summary line: "avx2", "avx512" */
  int fails, checks; /* since the last att_reset */
} att_harness_t;

typedef struct att_buf {
  bp_plugin_tensor_t t;
  void *p;
  int64_t n; /* elements of storage */
} att_buf_t;

/* A [d0, d1, d2, d3] tensor of dt, filled uniformly from [lo, hi]: dense,
 * or with dims 1 and 2 swapped in memory ([B, S, H, D]), or with dims 2
 * and 3 swapped (last dim strided). Free p. */
att_buf_t att_buf_make(bp_dtype_t dt, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int layout,
                       double lo, double hi);

/* The element offset of [a, b, c, d] in t. */
int64_t att_at4(const bp_plugin_tensor_t *t, int64_t a, int64_t b, int64_t c, int64_t d);

/* Arguments for out = attention(q, k, v). */
bp_attention_args_t att_args(const att_buf_t *q, const att_buf_t *k, const att_buf_t *v,
                             const att_buf_t *out, int causal, double scale);

void att_reset(att_harness_t *h);

/* Runs c through h->fn on dev and, when it ran, through the reference,
 * counting a check and any mismatch (printed). Returns h->fn's status. */
bp_status_t att_run_case(att_harness_t *h, cpu_device_t *dev, const att_case_t *c);

/* The mask tensors of mk (NULL: none) for case c, set in a; free the
 * three buffers' p. */
void att_masks_make(const att_case_t *c, const att_masks_t *mk, bp_attention_args_t *a,
                    att_buf_t m[3]);

/* att_run_case with the masks m (NULL: none). */
bp_status_t att_run_masked(att_harness_t *h, cpu_device_t *dev, const att_case_t *c,
                           const att_masks_t *m);

/* att_run_case on every device of s; a status other than BP_OK fails. */
void att_run_all(att_harness_t *h, dev_set_t *s, att_case_t c);

/* att_run_all with the masks m. */
void att_run_all_masked(att_harness_t *h, dev_set_t *s, att_case_t c, att_masks_t m);

/* Prints the tally and fails the test on a mismatch, or when nothing was
 * compared (a suite that compared nothing must not pass). */
void att_finish(const att_harness_t *h, const char *what);

/* Causal with Sq > Skv: h->fn must give zeros for the first Sq - Skv rows
 * (checked as zeros, not only as the reference) and finite numbers for the
 * rest (f32, head dim 8). */
void att_expect_masked_rows_zero(const att_harness_t *h, cpu_device_t *dev, int64_t Sq,
                                 int64_t Skv);

/* Seconds on clk (benchmarks: CLOCK_THREAD_CPUTIME_ID for one thread,
 * which other processes disturb much less than the wall clock). */
double att_now(clockid_t clk);

#endif
