/*
 * bench_fallback.c — the cost of automatic fallback (docs/runtime.md,
 * "Fallback") beyond the copies it makes: a one-element op that the device
 * cannot run is timed through fallback (waiting for the origin stream,
 * opening nothing after the first call, pool buffers on the target, the
 * copies, the op, the target stream's wait, the records), and the same op
 * is timed on the target device called directly, each call followed by a
 * synchronize as fallback's are. overhead = fallback - direct - copies,
 * with the copies' time from bp_device_fallback_stats. Both are timed by
 * the wall clock and by the calling thread's CPU clock: fallback works on
 * the calling thread, and on a machine shared with other work the CPU
 * clock is the figure that other processes do not move.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench_fallback.h"
#include "bp.h"

enum { CALLS = 2000, ROUNDS = 5 };

/* A one-element op, as bench_overhead's, in any float dtype. */
typedef struct tiny {
  bp_op_t op;
  bp_dtype_t dtype;
} tiny_t;

static bp_status_t tiny_run(bp_stream_t *s, const tiny_t *k, const bp_tensor_t *t) {
  return k->op == BP_OP_UNARY ? bp_unary(s, BP_UNARY_NEG, t, t) : bp_binary(s, BP_BINARY_ADD, t, t, t);
}

/* The device's record for k, zeroed when there is none. */
static bp_fallback_stat_t record_of(bp_device_t *dev, const tiny_t *k) {
  bp_fallback_stat_t st[16], none;
  memset(&none, 0, sizeof none);
  memset(st, 0, sizeof st);
  st[0].struct_size = sizeof st[0];
  uint32_t n = 0;
  if (bp_device_fallback_stats(dev, st, 16, &n) != BP_OK) return none;
  for (uint32_t i = 0; i < n && i < 16; i++)
    if (st[i].op == k->op && st[i].dtype == k->dtype) return st[i];
  return none;
}

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Per call, µs: wall and thread-CPU time, and the copies' share. */
typedef struct timing {
  double wall, cpu, copy;
} timing_t;

/* Best of ROUNDS (by wall, and by CPU time apart) of the mean per call of
 * CALLS calls, each synchronised; copy: the copies' share per call in the
 * best wall round (from the records; 0 when not falling back). */
static bool time_calls(bp_device_t *dev, bp_stream_t *s, const tiny_t *k, const bp_tensor_t *t, bool fallback,
                       timing_t *out) {
  *out = (timing_t){1e30, 1e30, 0};
  for (int r = 0; r < ROUNDS; r++) {
    bp_fallback_stat_t before = fallback ? record_of(dev, k) : (bp_fallback_stat_t){0};
    double t0 = bpt_now(), c0 = thread_cpu_s();
    for (int i = 0; i < CALLS; i++) {
      if (tiny_run(s, k, t) != BP_OK) return false;
      bp_stream_synchronize(s);
    }
    double us = (bpt_now() - t0) * 1e6 / CALLS, cpu = (thread_cpu_s() - c0) * 1e6 / CALLS;
    if (cpu < out->cpu) out->cpu = cpu;
    if (us >= out->wall) continue;
    out->wall = us;
    if (fallback) out->copy = (record_of(dev, k).copy_ns - before.copy_ns) / 1e3 / CALLS;
  }
  return true;
}

/* Opens a stream and a one-element tensor of k's dtype on dev. */
static bool tiny_setup(bp_device_t *dev, const tiny_t *k, bp_stream_t **s, bp_buffer_t **b, bp_tensor_t *t) {
  int64_t one = 1;
  *s = NULL;
  *b = NULL;
  static const uint8_t zero[8];
  return bp_stream_create(dev, s) == BP_OK && bp_buffer_alloc(dev, sizeof zero, b) == BP_OK &&
         bp_tensor_init(*b, 0, k->dtype, 1, &one, NULL, t) == BP_OK &&
         bp_buffer_write(*b, 0, zero, sizeof zero) == BP_OK;
}

/* The op on the target device called directly, in a context of its own. */
static bool time_direct(const tiny_t *k, const char *target, timing_t *out) {
  bpt_context_flags_t flags = {0};
  bp_context_t *ctx = bpt_context_open(&flags);
  bp_device_t *dev = NULL;
  bp_stream_t *s = NULL;
  bp_buffer_t *b = NULL;
  bp_tensor_t t;
  bool ok = false;
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = true};
  if (ctx && bp_device_open(ctx, target, &cfg, &dev) == BP_OK && tiny_setup(dev, k, &s, &b, &t))
    ok = time_calls(dev, s, k, &t, false, out);
  bp_buffer_free(b);
  bp_stream_destroy(s);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return ok;
}

/* The first tiny op dev does not claim and another device runs for it. */
static bool find_tiny(bp_device_t *dev, tiny_t *out) {
  static const bp_op_t ops[] = {BP_OP_UNARY, BP_OP_BINARY};
  static const bp_dtype_t dts[] = {BP_F32, BP_F64, BP_F16, BP_BF16};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    for (size_t j = 0; j < sizeof dts / sizeof *dts; j++) {
      bool sup = true;
      *out = (tiny_t){ops[i], dts[j]};
      if (bp_device_supports(dev, ops[i], dts[j], &sup) != BP_OK || sup) continue;
      bp_stream_t *s;
      bp_buffer_t *b;
      bp_tensor_t t;
      bool ok = tiny_setup(dev, out, &s, &b, &t) && tiny_run(s, out, &t) == BP_OK;
      bp_buffer_free(b);
      bp_stream_destroy(s);
      if (ok && record_of(dev, out).count > 0) return true;
    }
  return false;
}

void bench_fallback(bp_device_t *dev) {
  tiny_t k;
  bp_device_entry_t e = {0};
  bp_device_entry(dev, &e);
  if (!find_tiny(dev, &k)) {
    printf("fallback   not measured: %s runs every one-element unary and binary op itself, or no\n"
           "           other device does (bp bench --device DEV names one that cannot)\n",
           e.info.name);
    return;
  }
  bp_stream_t *s;
  bp_buffer_t *b;
  bp_tensor_t t;
  timing_t fb, direct;
  bool ok = tiny_setup(dev, &k, &s, &b, &t) && time_calls(dev, s, &k, &t, true, &fb);
  bp_buffer_free(b);
  bp_stream_destroy(s);
  bp_fallback_stat_t rec = record_of(dev, &k);
  if (!ok || !time_direct(&k, rec.target, &direct)) {
    printf("fallback   not measured: %s\n", bp_last_error());
    return;
  }
  printf("fallback   1-element %s %s, %s -> %s, per call: wall %.3f us, cpu %.3f us\n", bp_op_name(k.op),
         bp_dtype_name(k.dtype), e.info.name, rec.target, fb.wall, fb.cpu);
  printf("fallback     the op on %s directly: wall %.3f us, cpu %.3f us; copies %.3f us\n", rec.target, direct.wall,
         direct.cpu, fb.copy);
  printf("fallback     overhead beyond the copies: wall %.3f us, cpu %.3f us (target <= 2 us)\n",
         fb.wall - direct.wall - fb.copy, fb.cpu - direct.cpu - fb.copy);
}
