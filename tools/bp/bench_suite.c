/*
 * bench_suite.c — the fixed shapes of bp bench (issue 4's suite) and its
 * --quick subset, and how long each case is measured.
 */
#include "bench.h"

static int add(bpt_case_t *out, int n, int cap, bpt_case_t c) {
  if (n < cap) out[n] = c;
  return n + 1;
}

static bpt_case_t gemm(bp_dtype_t dt, int64_t batch, int64_t m, int64_t n,
                       int64_t k) {
  return (bpt_case_t){.op = BPT_GEMM, .dtype = dt, .batch = batch, .m = m,
                      .n = n, .k = k};
}

static bpt_case_t attention(int64_t b, int64_t h, int64_t s, int64_t d,
                            bool causal) {
  return (bpt_case_t){.op = BPT_ATTENTION, .dtype = BP_F32, .batch = b,
                      .heads = h, .seq = s, .dim = d, .causal = causal};
}

static bpt_case_t conv(int64_t c, int64_t hw, int64_t k, int64_t r,
                       int64_t stride, int64_t pad, int64_t groups) {
  return (bpt_case_t){.op = BPT_CONV2D, .dtype = BP_F32, .batch = 1, .c = c,
                      .hw = hw, .k = k, .r = r, .stride = stride, .pad = pad,
                      .groups = groups};
}

static bpt_case_t rows(bpt_op_t op, int64_t m, int64_t n) {
  return (bpt_case_t){.op = op, .dtype = BP_F32, .batch = 1, .m = m, .n = n};
}

static int suite_gemm(bool quick, bpt_case_t *o, int n, int cap) {
  if (quick) {
    n = add(o, n, cap, gemm(BP_F32, 1, 256, 256, 256));
    return add(o, n, cap, gemm(BP_F32, 1, 1024, 1024, 1024));
  }
  for (int64_t s = 256; s <= 4096; s *= 2)
    n = add(o, n, cap, gemm(BP_F32, 1, s, s, s));
  n = add(o, n, cap, gemm(BP_F32, 1, 512, 4096, 4096));
  n = add(o, n, cap, gemm(BP_F32, 1, 512, 11008, 4096));
  n = add(o, n, cap, gemm(BP_F32, 32, 512, 512, 64));
  /* skinny: a few tokens, and one (C one row: the matrix-vector path),
   * through a 4096 x 4096 layer */
  n = add(o, n, cap, gemm(BP_F32, 1, 16, 4096, 4096));
  n = add(o, n, cap, gemm(BP_F32, 1, 1, 4096, 4096));
  /* the same with the weights as a linear layer keeps them (out x in, B
   * given as Bᵀ), and a narrow C: a 16-way head over 4096 rows */
  bpt_case_t nt = gemm(BP_F32, 1, 8, 4096, 4096);
  nt.trans_b = true;
  n = add(o, n, cap, nt);
  nt.m = 1;
  n = add(o, n, cap, nt);
  n = add(o, n, cap, gemm(BP_F32, 1, 4096, 16, 4096));
  n = add(o, n, cap, gemm(BP_F64, 1, 1024, 1024, 1024));
  n = add(o, n, cap, gemm(BP_F64, 1, 2048, 2048, 2048));
  n = add(o, n, cap, gemm(BP_BF16, 1, 2048, 2048, 2048));
  /* bf16 decode against weights kept out x in */
  bpt_case_t bnt = gemm(BP_BF16, 1, 1, 4096, 4096);
  bnt.trans_b = true;
  n = add(o, n, cap, bnt);
  return add(o, n, cap, gemm(BP_F16, 1, 2048, 2048, 2048));
}

static int suite_attention(bool quick, bpt_case_t *o, int n, int cap) {
  if (quick) return add(o, n, cap, attention(1, 8, 512, 64, true));
  static const int64_t bh[2][2] = {{1, 8}, {4, 32}};
  for (int i = 0; i < 2; i++)
    for (int64_t s = 512; s <= 2048; s *= 2)
      for (int64_t d = 64; d <= 128; d *= 2)
        for (int causal = 1; causal >= 0; causal--)
          n = add(o, n, cap, attention(bh[i][0], bh[i][1], s, d, causal));
  /* bf16 (f32 softmax and accumulation; AMX tiles where the CPU has them)
   * at the B1 H8 shapes, against the f32 rows above */
  for (int64_t s = 512; s <= 2048; s *= 2)
    for (int64_t d = 64; d <= 128; d *= 2)
      for (int causal = 1; causal >= 0; causal--) {
        bpt_case_t c = attention(1, 8, s, d, causal);
        c.dtype = BP_BF16;
        n = add(o, n, cap, c);
      }
  return n;
}

/* ResNet-50's characteristic layers, batch 1, and a MobileNet-style
 * depthwise layer. */
static int suite_conv(bool quick, bpt_case_t *o, int n, int cap) {
  if (quick) return add(o, n, cap, conv(256, 56, 64, 1, 1, 0, 1));
  n = add(o, n, cap, conv(3, 224, 64, 7, 2, 3, 1));
  n = add(o, n, cap, conv(64, 56, 64, 3, 1, 1, 1));
  n = add(o, n, cap, conv(256, 56, 64, 1, 1, 0, 1));
  n = add(o, n, cap, conv(256, 14, 256, 3, 1, 1, 1));
  n = add(o, n, cap, conv(256, 56, 256, 3, 1, 1, 256));
  /* bf16 (f32 accumulation), against oneDNN's bf16 convolution (AMX where
   * the CPU has it) */
  bpt_case_t c = conv(256, 56, 64, 1, 1, 0, 1);
  c.dtype = BP_BF16;
  n = add(o, n, cap, c);
  c = conv(256, 14, 256, 3, 1, 1, 1);
  c.dtype = BP_BF16;
  return add(o, n, cap, c);
}

int bench_suite(unsigned op_mask, bool quick, bpt_case_t *out, int cap) {
  /* 64 MiB of f32 per tensor (16 MiB with --quick). */
  int64_t rows_n = quick ? 4096 : 16384, cols = 1024;
  int n = 0;
  if (op_mask & (1u << BPT_GEMM)) n = suite_gemm(quick, out, n, cap);
  if (op_mask & (1u << BPT_ATTENTION)) n = suite_attention(quick, out, n, cap);
  if (op_mask & (1u << BPT_CONV2D)) n = suite_conv(quick, out, n, cap);
  if (op_mask & (1u << BPT_SOFTMAX))
    n = add(out, n, cap, rows(BPT_SOFTMAX, rows_n, cols));
  if (op_mask & (1u << BPT_LAYER_NORM))
    n = add(out, n, cap, rows(BPT_LAYER_NORM, rows_n, cols));
  if (op_mask & (1u << BPT_ADD))
    n = add(out, n, cap, rows(BPT_ADD, 1, rows_n * cols));
  if (op_mask & (1u << BPT_GELU)) {
    /* a transformer MLP's activation (256 tokens x 1024), then streaming */
    n = add(out, n, cap, rows(BPT_GELU, 256, 1024));
    n = add(out, n, cap, rows(BPT_GELU, rows_n, cols));
  }
  /* bf16 rows ops (widened to the f32 kernels on the CPU) */
  const bpt_op_t half_ops[] = {BPT_SOFTMAX, BPT_LAYER_NORM, BPT_GELU};
  for (size_t i = 0; !quick && i < sizeof half_ops / sizeof *half_ops; i++)
    if (op_mask & (1u << half_ops[i])) {
      bpt_case_t c = rows(half_ops[i], rows_n, cols);
      c.dtype = BP_BF16;
      n = add(out, n, cap, c);
    }
  return n < cap ? n : cap;
}

void bench_timing_for(bool quick, bench_timing_t *out) {
  /* a case of a fraction of a millisecond still runs min_seconds: after a
   * pause (the anchor's turn) this host needs some 10 ms of steady work
   * before calls run at full speed again (measured: 256^3 f32 GEMM back to
   * back takes 0.7-0.9 ms for the first dozen calls, then 0.28 ms), so a
   * cap of 50 calls (10 in --quick) timed the slow start */
  if (quick)
    *out = (bench_timing_t){.warmup = 1, .min_reps = 2, .max_reps = 500,
                            .min_seconds = 0.05, .slow_seconds = 0.5,
                            .rounds = 1, .round_ms = 0};
  else
    *out = (bench_timing_t){.warmup = 1, .min_reps = 3, .max_reps = 2000,
                            .min_seconds = 0.3, .slow_seconds = 2.0,
                            .rounds = 3, .round_ms = 2000};
}
