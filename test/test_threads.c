/*
 * test_threads.c — multi-threaded smoke tests (also run under TSan by
 * `make check-tsan`):
 *  - 8 threads, each with its own stream (on "cpu" or "cpu-ref"), run a
 *    mix of ops on shared read-only inputs into private outputs; every
 *    result must equal, bit for bit, what one thread computed alone;
 *  - 4 threads share one stream;
 *  - threads open and close devices, streams and buffers concurrently on
 *    one shared context, and (known core gap, last) contexts of their own.
 * Threads never call cmocka; they count mismatches and the main thread
 * checks the counts.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tc.h"

#define NTHREADS 8
enum { NOPS = 6 };

/* Shared inputs (read-only once made) on one device. */
typedef struct shared {
  tc_env_t *env;
  tc_tensor_t a, b, x;   /* a [48,40], b [40,24], x [16,64] */
  double *expect[NOPS];  /* single-threaded results */
  int64_t n[NOPS];
} shared_t;

static const int64_t sa[2] = {48, 40}, sb[2] = {40, 24}, sx[2] = {16, 64};
static const int64_t sc[2] = {48, 24}, sr[1] = {16};

/* Runs op k on stream s into a fresh output and returns its values. */
static double *run_op(shared_t *sh, bp_stream_t *s, int k, bp_status_t *st) {
  tc_env_t tmp = *sh->env;
  tmp.s = s;
  tc_tensor_t y;
  switch (k) {
  case 0:
    y = tc_tensor(&tmp, BP_F32, 2, sc, TC_CONTIG, NULL);
    *st = bp_matmul(s, 1.0, &sh->a.t, &sh->b.t, 0.0, &y.t);
    break;
  case 1:
    y = tc_tensor(&tmp, BP_F32, 2, sx, TC_STRIDED, NULL);
    *st = bp_unary(s, BP_UNARY_GELU, &sh->x.t, &y.t);
    break;
  case 2:
    y = tc_tensor(&tmp, BP_F32, 2, sx, TC_CONTIG, NULL);
    *st = bp_softmax(s, &sh->x.t, -1, true, &y.t);
    break;
  case 3:
    y = tc_tensor(&tmp, BP_F32, 1, sr, TC_CONTIG, NULL);
    *st = bp_reduce(s, BP_REDUCE_VAR, &sh->x.t, 1, &y.t);
    break;
  case 4:
    y = tc_tensor(&tmp, BP_F32, 2, sx, TC_CONTIG, NULL);
    *st = bp_layer_norm(s, &sh->x.t, NULL, NULL, 1e-5, &y.t);
    break;
  default:
    y = tc_tensor(&tmp, BP_F32, 2, sx, TC_PERMUTED, NULL);
    *st = bp_random(s, BP_RANDOM_NORMAL, 1234, 5, 0, 1, &y.t);
    break;
  }
  double *v = NULL;
  if (*st == BP_OK && bp_stream_synchronize(s) == BP_OK)
    v = tc_download(&y);
  tc_tensor_free(&y);
  return v;
}

typedef struct worker {
  shared_t *sh;
  bp_stream_t *stream; /* NULL: create one */
  int id, iters;
  int mismatches, errors;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  bp_stream_t *s = w->stream;
  if (!s && bp_stream_create(w->sh->env->dev, &s) != BP_OK) {
    w->errors++;
    return NULL;
  }
  for (int it = 0; it < w->iters; it++) {
    int k = (w->id + it) % NOPS;
    bp_status_t st;
    double *v = run_op(w->sh, s, k, &st);
    if (!v) {
      w->errors++;
      continue;
    }
    if (memcmp(v, w->sh->expect[k], sizeof(double) * (size_t)w->sh->n[k]))
      w->mismatches++;
    free(v);
  }
  if (!w->stream)
    bp_stream_destroy(s);
  return NULL;
}

static void make_shared(shared_t *sh, tc_env_t *e) {
  memset(sh, 0, sizeof *sh);
  sh->env = e;
  tc_rng_t rng;
  tc_rng_seed(&rng, 91);
  double v[48 * 40];
  tc_rng_fill(&rng, BP_F32, -1, 1, v, 48 * 40);
  sh->a = tc_tensor(e, BP_F32, 2, sa, TC_CONTIG, v);
  tc_rng_fill(&rng, BP_F32, -1, 1, v, 40 * 24);
  sh->b = tc_tensor(e, BP_F32, 2, sb, TC_STRIDED, v);
  tc_rng_fill(&rng, BP_F32, -3, 3, v, 16 * 64);
  sh->x = tc_tensor(e, BP_F32, 2, sx, TC_PERMUTED, v);
  for (int k = 0; k < NOPS; k++) {
    bp_status_t st;
    sh->expect[k] = run_op(sh, e->s, k, &st);
    assert_int_equal(st, BP_OK);
    assert_non_null(sh->expect[k]);
    sh->n[k] = k == 0 ? 48 * 24 : k == 3 ? 16 : 16 * 64;
  }
}

static void free_shared(shared_t *sh) {
  tc_tensor_free(&sh->a), tc_tensor_free(&sh->b), tc_tensor_free(&sh->x);
  for (int k = 0; k < NOPS; k++)
    free(sh->expect[k]);
}

static int iterations(void) { return getenv("BP_UNDER_SANITIZER") ? 6 : 24; }

/* 8 threads, own streams; half on each device; inputs on both devices
 * are read concurrently by every thread using that device. */
static void test_streams_per_thread(void **state) {
  tc_suite_t *su = *state;
  shared_t sh[TC_MAX_DEVICES];
  for (int d = 0; d < su->count; d++)
    make_shared(&sh[d], &su->env[d]);
  pthread_t th[NTHREADS];
  worker_t w[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    w[i] = (worker_t){&sh[i % su->count], NULL, i, iterations(), 0, 0};
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  }
  int mism = 0, errs = 0;
  for (int i = 0; i < NTHREADS; i++) {
    pthread_join(th[i], NULL);
    mism += w[i].mismatches;
    errs += w[i].errors;
  }
  for (int d = 0; d < su->count; d++)
    free_shared(&sh[d]);
  if (mism || errs)
    print_error("threads: %d results differ from the single-threaded ones, %d calls failed\n",
                mism, errs);
  assert_int_equal(errs, 0);
  assert_int_equal(mism, 0);
}

/* 4 threads queue work on one stream: calls are serialised, each
 * thread's results still exact. */
static void test_shared_stream(void **state) {
  tc_suite_t *su = *state;
  shared_t sh;
  make_shared(&sh, &su->env[0]);
  pthread_t th[4];
  worker_t w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker_t){&sh, su->env[0].s, i, iterations(), 0, 0};
    assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
  }
  int mism = 0, errs = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    mism += w[i].mismatches;
    errs += w[i].errors;
  }
  free_shared(&sh);
  assert_int_equal(errs, 0);
  assert_int_equal(mism, 0);
}

typedef struct opener {
  bp_context_t *ctx; /* shared context, or NULL: make own */
  int iters, errors;
} opener_t;

static void *opener_main(void *arg) {
  opener_t *o = arg;
  for (int it = 0; it < o->iters; it++) {
    bp_context_t *ctx = o->ctx;
    if (!ctx && bp_context_create(NULL, &ctx) != BP_OK) {
      o->errors++;
      continue;
    }
    bp_device_t *d;
    bp_stream_t *s;
    bp_buffer_t *b;
    if (bp_device_open(ctx, it % 2 ? "cpu" : "cpu-ref", NULL, &d) != BP_OK) {
      o->errors++;
    } else {
      int64_t n = 257;
      bp_tensor_t t;
      float got[257];
      if (bp_stream_create(d, &s) != BP_OK || bp_buffer_alloc(d, sizeof got, &b) != BP_OK ||
          bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t) != BP_OK ||
          bp_fill(s, &t, (double)it) != BP_OK || bp_stream_synchronize(s) != BP_OK ||
          bp_buffer_read(b, 0, got, sizeof got) != BP_OK)
        o->errors++;
      else
        for (int i = 0; i < 257; i++)
          if (got[i] != (float)it) {
            o->errors++;
            break;
          }
      if (it % 3) { /* sometimes leave children for close to release */
        bp_buffer_free(b);
        bp_stream_destroy(s);
      }
      bp_device_close(d);
    }
    if (!o->ctx)
      bp_context_destroy(ctx);
  }
  return NULL;
}

static int join_openers(pthread_t *th, opener_t *o, int n) {
  int errs = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    errs += o[i].errors;
  }
  return errs;
}

/* 8 threads open and close devices, streams and buffers of one shared
 * context. */
static void test_concurrent_open_close(void **state) {
  tc_suite_t *su = *state;
  pthread_t th[NTHREADS];
  opener_t o[NTHREADS];
  int n = getenv("BP_UNDER_SANITIZER") ? 3 : 10;
  for (int i = 0; i < NTHREADS; i++) {
    o[i] = (opener_t){su->ctx, n, 0};
    assert_int_equal(pthread_create(&th[i], NULL, opener_main, &o[i]), 0);
  }
  assert_int_equal(join_openers(th, o, NTHREADS), 0);
  uint32_t count = 0; /* the shared context still works */
  assert_int_equal(bp_context_device_count(su->ctx, &count), BP_OK);
  assert_true(count >= 2);
}

/* KNOWN CORE GAP (reported to the lead; do not weaken). Plugins are
 * dlopen'ed once per process, but every context calls init / probe and,
 * when destroyed, shutdown on them, with no process-wide lock or
 * reference count (core/loader.c bp__loader_load_file / unload). So
 * (1) destroying a second context shuts the plugin down under a device
 * the first context still has open (Vulkan: SIGSEGV at the next op), and
 * (2) threads creating / destroying their own contexts at once crash in
 * the Vulkan and OpenCL plugins' probe. This test may therefore die with
 * SIGSEGV when those plugins are present; it runs last for that reason. */
static void test_known_core_gap_contexts_per_thread(void **state) {
  (void)state;
  /* (1) every device of a context keeps working after another context
   * is created and destroyed */
  bp_context_t *a, *b;
  assert_int_equal(bp_context_create(NULL, &a), BP_OK);
  uint32_t count = 0;
  assert_int_equal(bp_context_device_count(a, &count), BP_OK);
  tc_env_t envs[16];
  uint32_t opened = 0;
  for (uint32_t r = 0; r < count && opened < 16; r++) {
    char sel[16];
    snprintf(sel, sizeof sel, "%u", r);
    if (tc_env_open(&envs[opened], a, sel))
      opened++;
  }
  assert_int_equal(bp_context_create(NULL, &b), BP_OK);
  bp_context_destroy(b);
  int bad = 0;
  for (uint32_t i = 0; i < opened; i++) {
    int64_t n = 33;
    tc_tensor_t t = tc_tensor(&envs[i], BP_F32, 1, &n, TC_CONTIG, NULL);
    bp_status_t st = bp_fill(envs[i].s, &t.t, 4.0);
    double *v = st == BP_OK ? tc_download(&t) : NULL;
    if (!v || v[0] != 4.0 || v[32] != 4.0) {
      print_error("FAIL device %s broken after another context's destroy\n", envs[i].name);
      bad++;
    }
    free(v);
    tc_tensor_free(&t);
  }
  for (uint32_t i = 0; i < opened; i++)
    tc_env_close(&envs[i]);
  bp_context_destroy(a);
  assert_int_equal(bad, 0);
  /* (2) threads with their own contexts */
  pthread_t th[4];
  opener_t o[4];
  for (int i = 0; i < 4; i++) {
    o[i] = (opener_t){NULL, getenv("BP_UNDER_SANITIZER") ? 2 : 5, 0};
    assert_int_equal(pthread_create(&th[i], NULL, opener_main, &o[i]), 0);
  }
  assert_int_equal(join_openers(th, o, 4), 0);
}

int main(void) {
  setenv("TC_DEVICES", "cpu,cpu-ref", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_streams_per_thread),
      cmocka_unit_test(test_shared_stream),
      cmocka_unit_test(test_concurrent_open_close),
      cmocka_unit_test(test_known_core_gap_contexts_per_thread),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
