/*
 * test_api_validation.c — every tensor op rejects each class of bad tensor
 * argument before a plugin sees it: NULL, a freed buffer (use after free),
 * a buffer of another device (devices "cpu" and "cpu-ref" are open at
 * once), views reaching outside the buffer, absurd or overflowing shapes
 * and strides, bad rank / dtype, misaligned offsets, mismatched dtypes, an
 * output aliasing an input, NULL / destroyed / foreign streams. Each
 * rejection must give the specific status, a message naming the argument,
 * and leave every buffer byte for byte as it was (sentinel-filled).
 * Op-specific parameters (enums, axes, eps, shapes) and the CBLAS entry
 * points are in test_api_params.c; handles and buffers in
 * test_api_handles.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tc.h"

#define MAXT 6

/* One op under test: its tensor slots (shape, dtype, name), which slot is
 * the output, and a call taking the tensors in slot order. */
typedef struct op_spec {
  const char *name;
  int n, out;
  const char *names[MAXT];
  bp_dtype_t dts[MAXT];
  int ranks[MAXT];
  int64_t shapes[MAXT][4];
  bool optional[MAXT]; /* may be NULL */
  bp_status_t (*run)(bp_stream_t *s, const bp_tensor_t *const *t);
} op_spec_t;

static bp_status_t run_unary(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_unary(s, BP_UNARY_EXP, t[0], t[1]);
}
static bp_status_t run_binary(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_binary(s, BP_BINARY_ADD, t[0], t[1], t[2]);
}
static bp_status_t run_reduce(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_reduce(s, BP_REDUCE_SUM, t[0], 1, t[1]);
}
static bp_status_t run_argmax(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_reduce(s, BP_REDUCE_ARGMAX, t[0], 0, t[1]);
}
static bp_status_t run_softmax(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_softmax(s, t[0], -1, false, t[1]);
}
static bp_status_t run_layer_norm(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_layer_norm(s, t[0], t[1], t[2], 1e-5, t[3]);
}
static bp_status_t run_rms_norm(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_rms_norm(s, t[0], t[1], 1e-5, t[2]);
}
static bp_status_t run_batch_norm(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_batch_norm(s, t[0], t[1], t[2], t[3], t[4], 1e-5, t[5]);
}
static bp_status_t run_conv2d(bp_stream_t *s, const bp_tensor_t *const *t) {
  bp_conv2d_params_t p = {.struct_size = sizeof p, .stride_h = 1, .stride_w = 1, .pad_h = 1,
                         .pad_w = 1, .dilation_h = 1, .dilation_w = 1, .groups = 1};
  return bp_conv2d(s, &p, t[0], t[1], t[2], t[3]);
}
static bp_status_t run_pool2d(bp_stream_t *s, const bp_tensor_t *const *t) {
  bp_pool2d_params_t p = {.struct_size = sizeof p, .kind = BP_POOL_MAX, .kernel_h = 2,
                         .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  return bp_pool2d(s, &p, t[0], t[1]);
}
static bp_status_t run_attention(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_attention(s, t[0], t[1], t[2], 0, true, t[3]);
}
static bp_status_t run_matmul(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_matmul(s, 1, t[0], t[1], 0, t[2]);
}
static bp_status_t run_fill(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_fill(s, t[0], 1.5);
}
static bp_status_t run_copy(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_copy(s, t[0], t[1]);
}
static bp_status_t run_cast(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_cast(s, t[0], t[1]);
}
static bp_status_t run_random(bp_stream_t *s, const bp_tensor_t *const *t) {
  return bp_random(s, BP_RANDOM_NORMAL, 1, 0, 0, 1, t[0]);
}

#define F BP_F32
static const op_spec_t specs[] = {
    {"unary", 2, 1, {"x", "y"}, {F, F}, {2, 2}, {{4, 5}, {4, 5}}, {0}, run_unary},
    {"binary", 3, 2, {"a", "b", "y"}, {F, F, F}, {2, 2, 2}, {{4, 5}, {4, 5}, {4, 5}}, {0}, run_binary},
    {"reduce", 2, 1, {"x", "y"}, {F, F}, {2, 2}, {{4, 5}, {4, 1}}, {0}, run_reduce},
    {"argmax", 2, 1, {"x", "y"}, {F, BP_I64}, {2, 1}, {{4, 5}, {5}}, {0}, run_argmax},
    {"softmax", 2, 1, {"x", "y"}, {F, F}, {2, 2}, {{4, 5}, {4, 5}}, {0}, run_softmax},
    {"layer_norm", 4, 3, {"x", "gamma", "beta", "y"}, {F, F, F, F}, {2, 1, 1, 2},
     {{4, 5}, {5}, {5}, {4, 5}}, {0, 1, 1, 0}, run_layer_norm},
    {"rms_norm", 3, 2, {"x", "gamma", "y"}, {F, F, F}, {2, 1, 2}, {{4, 5}, {5}, {4, 5}},
     {0, 1, 0}, run_rms_norm},
    {"batch_norm", 6, 5, {"x", "mean", "var", "scale", "bias", "y"}, {F, F, F, F, F, F},
     {3, 1, 1, 1, 1, 3}, {{2, 3, 4}, {3}, {3}, {3}, {3}, {2, 3, 4}}, {0}, run_batch_norm},
    {"conv2d", 4, 3, {"x", "w", "bias", "y"}, {F, F, F, F}, {4, 4, 1, 4},
     {{1, 2, 5, 5}, {3, 2, 3, 3}, {3}, {1, 3, 5, 5}}, {0, 0, 1, 0}, run_conv2d},
    {"pool2d", 2, 1, {"x", "y"}, {F, F}, {4, 4}, {{1, 2, 4, 6}, {1, 2, 2, 3}}, {0}, run_pool2d},
    {"attention", 4, 3, {"q", "k", "v", "out"}, {F, F, F, F}, {4, 4, 4, 4},
     {{1, 2, 3, 4}, {1, 1, 5, 4}, {1, 1, 5, 2}, {1, 2, 3, 2}}, {0}, run_attention},
    {"matmul", 3, 2, {"a", "b", "c"}, {F, F, F}, {2, 2, 2}, {{3, 4}, {4, 5}, {3, 5}}, {0}, run_matmul},
    {"fill", 1, 0, {"y"}, {BP_I32}, {2}, {{4, 5}}, {0}, run_fill},
    {"copy", 2, 1, {"x", "y"}, {F, F}, {2, 2}, {{4, 5}, {4, 5}}, {0}, run_copy},
    {"cast", 2, 1, {"x", "y"}, {F, BP_F16}, {2, 2}, {{4, 5}, {4, 5}}, {0}, run_cast},
    {"random", 1, 0, {"y"}, {F}, {2}, {{4, 5}}, {0}, run_random},
};
#undef F

/* The op's tensors on env e (inputs hold 0.5 .. 1, outputs the 0xff
 * sentinel). */
static void make_tensors(tc_env_t *e, const op_spec_t *sp, tc_tensor_t *T) {
  tc_rng_t rng;
  tc_rng_seed(&rng, 81);
  for (int i = 0; i < sp->n; i++) {
    int64_t n = tc_numel(sp->ranks[i], sp->shapes[i]);
    double v[128];
    tc_rng_fill(&rng, sp->dts[i], 0.5, 1, v, n);
    T[i] = tc_tensor(e, sp->dts[i], sp->ranks[i], sp->shapes[i], TC_CONTIG,
                     i == sp->out ? NULL : v);
  }
}

/* Every buffer of the op still holds exactly what was uploaded. */
static void expect_untouched(const op_spec_t *sp, tc_tensor_t *T, const char *what) {
  for (int i = 0; i < sp->n; i++) {
    int64_t ch = tc_bytes_changed(&T[i]);
    if (ch) {
      print_error("FAIL %s: %s: rejected call changed %lld bytes of %s\n", sp->name, what,
                  (long long)ch, sp->names[i]);
      tc_failures++;
    }
  }
}

/* Rejects one variant: status, message naming `needle`, nothing written. */
static void reject(const op_spec_t *sp, tc_env_t *e, tc_tensor_t *T,
                   const bp_tensor_t *const *args, bp_stream_t *s, bp_status_t want,
                   const char *needle, const char *what) {
  bp_status_t st = sp->run(s, args);
  char ctx[160];
  snprintf(ctx, sizeof ctx, "%s: %s", sp->name, what);
  tc_expect_reject(e, st, want, needle, "%s", ctx);
  expect_untouched(sp, T, what);
  for (int i = 0; i < sp->n; i++) /* so one failure does not cascade */
    assert_int_equal(bp_buffer_write(T[i].buf, 0, T[i].shadow, T[i].bytes), BP_OK);
}

/* gaps false: every argument class; true: only the output-aliasing cases
 * the core does not catch yet (kept apart so they are reported as one
 * clearly named failing test). */
static void run_spec(tc_suite_t *su, const op_spec_t *sp, bool gaps) {
  tc_env_t *e = &su->env[0], *other = &su->env[1];
  tc_tensor_t T[MAXT], Tf[MAXT];
  make_tensors(e, sp, T);
  make_tensors(other, sp, Tf); /* same shapes on the other device */
  bp_tensor_t v[MAXT];
  const bp_tensor_t *args[MAXT];
  for (int i = 0; i < sp->n; i++)
    v[i] = T[i].t, args[i] = &v[i];

  /* streams: NULL, destroyed, of the other device */
  if (!gaps)
    reject(sp, e, T, args, NULL, BP_ERR_INVALID_ARGUMENT, "stream", "NULL stream");
  bp_stream_t *dead;
  assert_int_equal(bp_stream_create(e->dev, &dead), BP_OK);
  bp_stream_destroy(dead);
  if (!gaps) {
    reject(sp, e, T, args, dead, BP_ERR_INVALID_ARGUMENT, "stream", "destroyed stream");
    reject(sp, e, T, args, other->s, BP_ERR_INVALID_ARGUMENT, "device", "stream of another device");
  }

  for (int i = 0; i < sp->n && !gaps; i++) {
    const char *nm = sp->names[i];
    char what[128];
    bp_tensor_t saved = v[i];
    size_t es = bp_dtype_size(v[i].dtype);
#define VARIANT(desc, needle, ...)                                              \
  do {                                                                         \
    v[i] = saved;                                                              \
    __VA_ARGS__;                                                               \
    snprintf(what, sizeof what, "%s %s", nm, desc);                            \
    reject(sp, e, T, args, e->s, BP_ERR_INVALID_ARGUMENT, needle, what);       \
  } while (0)
    if (!sp->optional[i]) {
      args[i] = NULL;
      snprintf(what, sizeof what, "%s NULL", nm);
      reject(sp, e, T, args, e->s, BP_ERR_INVALID_ARGUMENT, nm, what);
      args[i] = &v[i];
    }
    bp_buffer_t *freed;
    assert_int_equal(bp_buffer_alloc(e->dev, T[i].bytes, &freed), BP_OK);
    bp_buffer_free(freed);
    VARIANT("freed buffer", nm, v[i].buffer = freed);
    VARIANT("buffer of another device", nm, v[i].buffer = Tf[i].buf);
    VARIANT("NULL buffer", nm, v[i].buffer = NULL);
    VARIANT("offset at the end", nm, v[i].offset = T[i].bytes);
    VARIANT("offset past 2^64", nm, v[i].offset = UINT64_MAX - es + 1);
    int ax = 0; /* an axis of extent > 1, where strides matter */
    while (ax < v[i].rank - 1 && v[i].shape[ax] < 2)
      ax++;
    if (v[i].rank > 0) {
      VARIANT("first dim too long", nm, v[i].shape[0] = saved.shape[0] + 64);
      VARIANT("stride 2^47", nm, v[i].strides[ax] = INT64_C(1) << 47);
      VARIANT("stride 2^62", nm, v[i].strides[ax] = INT64_C(1) << 62);
      VARIANT("stride -2^62", nm, v[i].strides[ax] = -(INT64_C(1) << 62));
      VARIANT("negative stride before the start", nm, v[i].strides[ax] = -1);
      VARIANT("dim 2^62", nm, v[i].shape[ax] = INT64_C(1) << 62);
      VARIANT("dim -1", nm, v[i].shape[ax] = -1);
      VARIANT("dim INT64_MIN", nm, v[i].shape[ax] = INT64_MIN);
    }
    VARIANT("rank 9", nm, v[i].rank = 9);
    VARIANT("rank -1", nm, v[i].rank = -1);
    VARIANT("dtype 42", nm, v[i].dtype = (bp_dtype_t)42);
    VARIANT("dtype -1", nm, v[i].dtype = (bp_dtype_t)-1);
    if (es > 1)
      VARIANT("misaligned offset", nm, v[i].offset = 1);
    /* a dtype the others do not have (smaller, so the view still fits);
     * cast and argmax accept mixed dtypes by design */
    if (sp->n > 1 && sp->run != run_cast && !(sp->run == run_argmax && i == 0))
      VARIANT("mismatched dtype", NULL,
              v[i].dtype = saved.dtype == BP_F16 ? BP_BF16 : BP_F16);
    v[i] = saved;
    /* output aliasing this input: same buffer, shifted by one element */
    if (i != sp->out && sp->dts[i] == sp->dts[sp->out] && sp->ranks[i] == sp->ranks[sp->out]) {
      bp_tensor_t alias = v[sp->out];
      alias.buffer = v[i].buffer;
      alias.offset = v[i].offset + es;
      bool fits = true;
      int64_t need = 1;
      for (int d = 0; d < alias.rank; d++)
        need += (alias.shape[d] - 1) * alias.strides[d];
      fits = (uint64_t)(need * (int64_t)es) + alias.offset <= T[i].bytes;
      if (fits) {
        args[sp->out] = &alias;
        snprintf(what, sizeof what, "%s overlapping %s", sp->names[sp->out], nm);
        reject(sp, e, T, args, e->s, BP_ERR_INVALID_ARGUMENT, "overlap", what);
        args[sp->out] = &v[sp->out];
      }
    }
#undef VARIANT
  }
  /* an output whose elements alias each other: stride 0, or strides that
   * map two indices to one address */
  bp_tensor_t saved = v[sp->out];
  if (saved.rank >= 2 && saved.shape[0] > 1 && saved.shape[1] > 1) {
    v[sp->out].strides[0] = 0;
    if (gaps == (sp->run == run_matmul)) /* bp_matmul misses this one */
      reject(sp, e, T, args, e->s, BP_ERR_INVALID_ARGUMENT, sp->names[sp->out],
             "output stride 0");
    v[sp->out] = saved;
    v[sp->out].strides[0] = 1; /* (0,1) and (1,0) are one element */
    if (gaps)
      reject(sp, e, T, args, e->s, BP_ERR_INVALID_ARGUMENT, sp->names[sp->out],
             "output with self-overlapping strides");
    v[sp->out] = saved;
  }
  /* and the valid call succeeds, so each rejection above was the variant's */
  tc_expect_status(e, sp->run(e->s, args), BP_OK, "%s: the valid call", sp->name);
  for (int i = 0; i < sp->n; i++) {
    tc_tensor_free(&T[i]);
    tc_tensor_free(&Tf[i]);
  }
}

static void test_tensor_args(void **state) {
  tc_suite_t *su = *state;
  assert_true(su->count >= 2);
  TC_BEGIN();
  for (size_t k = 0; k < sizeof specs / sizeof *specs; k++)
    run_spec(su, &specs[k], false);
  TC_END();
}

/* KNOWN CORE GAP (reported to the lead; do not weaken): an output whose
 * strides map two indices to one element ([4,5] with strides [1,1]) is
 * accepted by every op, and bp_matmul also accepts an output with a
 * stride-0 axis (core/ops_blas.c gemm_dispatch never calls
 * bp__check_output). Threads or GPU work items then race on one element. */
static void test_known_core_gap_output_aliasing(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  for (size_t k = 0; k < sizeof specs / sizeof *specs; k++)
    run_spec(su, &specs[k], true);
  TC_END();
}

int main(void) {
  setenv("TC_DEVICES", "cpu,cpu-ref", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tensor_args),
      cmocka_unit_test(test_known_core_gap_output_aliasing),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
