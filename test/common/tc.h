/*
 * tc.h — shared helpers for the op, parity, API-validation and thread tests.
 *
 * What it gives a test: an environment (context + one open device + one
 * stream), device tensors with a chosen memory layout built from host
 * values, downloads back to double, and a comparison against the
 * independent reference in ref.c.
 *
 * TOLERANCES (normalised error, per dtype)
 * ----------------------------------------
 * A result y is compared with the reference r (computed in double from the
 * very values the device was given, then rounded to y's dtype) by
 *     nerr = ||y - r||_2 / ||r||_2          (over the finite elements)
 * which must be at most tol(dtype) * sqrt(red), red being the length of the
 * longest reduction behind one output element (1 for elementwise ops, k for
 * gemm, C*R*S/groups for conv2d, Skv for attention, ...):
 *     f32   1e-5        (f32 accumulation; rounding grows ~ sqrt(red))
 *     f16   1e-2        (f16 storage, f32 accumulation: 2^-11 per store)
 *     bf16  2e-2        (bf16 storage, f32 accumulation: 2^-8 per store)
 *     f64   1e-12
 * f16 / bf16 tolerances do not grow with red (the storage rounding
 * dominates). In addition every element must satisfy
 *     |y_i - r_i| <= 8 * tol * sqrt(red) * max(|r_i|, rms(r))
 * so that one badly wrong element cannot hide in a large tensor; NaN must
 * be exactly where the reference has NaN, and +-Inf exactly where the
 * reference has the same infinity. Ops whose result is exact (fill, copy,
 * cast, argmax, max/min, relu, neg, abs, random on matching devices) are
 * compared bit for bit with tc_expect_exact instead.
 *
 * Failures print the device, dtype and case and are counted; a test ends
 * with TC_END(), which fails it when anything mismatched, so one run shows
 * every broken case rather than the first.
 */
#ifndef BP_TEST_COMMON_TC_H
#define BP_TEST_COMMON_TC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backplane.h"

/* ---- environment ----------------------------------------------------------*/

#define TC_MAX_DEVICES 2

typedef struct tc_env {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  char name[128]; /* device name ("cpu", "cpu-ref") */
} tc_env_t;

/* Opens context, device (by selector) and a stream. Returns false (and
 * prints why) when the device cannot be opened. */
bool tc_env_open(tc_env_t *e, bp_context_t *ctx, const char *selector);
/* Why plugin `name` gives no device, from the loader's report (for a
 * "SKIP: " or "FAIL: " line); out is returned. */
const char *tc_plugin_reason(bp_context_t *ctx, const char *name, char *out, size_t size);
void tc_env_close(tc_env_t *e);
/* A suite of one backend checked against cpu-ref: opens the context, the
 * backend's device and cpu-ref. Returns -1 when all are open, else the
 * suite's exit code (a skip, or a failure where the device must exist;
 * test/skip.h) with nothing left open. tc_close_with_ref closes them. Both
 * in tc_ref.c, which a suite using them links beside tc.c. */
int tc_open_with_ref(bp_context_t **ctx, const char *backend, tc_env_t *dev, tc_env_t *ref);
void tc_close_with_ref(bp_context_t *ctx, tc_env_t *dev, tc_env_t *ref);

/* The devices the op suites run on: "cpu" and "cpu-ref" (or the
 * comma-separated list in $TC_DEVICES). Opened by tc_suite_setup, a cmocka
 * group setup; tc_suite_teardown closes them. */
typedef struct tc_suite {
  bp_context_t *ctx;
  int count;
  tc_env_t env[TC_MAX_DEVICES];
} tc_suite_t;
int tc_suite_setup(void **state);
int tc_suite_teardown(void **state);

/* Whether the env's device claims op for dtype. */
bool tc_supports(const tc_env_t *e, bp_op_t op, bp_dtype_t dt);
/* Whether the env's device runs unary op `op`: the ops of ABI 1.4 wherever
 * unary is claimed, gelu_tanh where op_features says so (ABI 1.5). */
bool tc_unary_claimed(const tc_env_t *e, bp_unary_op_t op);

/* The float dtypes, for loops. */
extern const bp_dtype_t tc_float_dtypes[4];

/* ---- dtypes ---------------------------------------------------------------*/

/* x rounded to dtype (RNE; ints: NaN -> 0, saturate), as a double. */
double tc_round(bp_dtype_t dt, double x);
/* Stores / loads one element of dt at p. */
void tc_store(void *p, bp_dtype_t dt, double v);
double tc_load(const void *p, bp_dtype_t dt);
double tc_tol(bp_dtype_t dt);

/* ---- deterministic host random numbers -------------------------------------*/

/* xorshift64*, seeded per test so failures reproduce. */
typedef struct tc_rng {
  uint64_t s;
} tc_rng_t;
void tc_rng_seed(tc_rng_t *r, uint64_t seed);
double tc_rng_uniform(tc_rng_t *r, double lo, double hi);
/* n values uniform in [lo, hi), each rounded to dt. */
void tc_rng_fill(tc_rng_t *r, bp_dtype_t dt, double lo, double hi, double *v,
                 int64_t n);

/* ---- device tensors --------------------------------------------------------*/

typedef enum tc_layout {
  TC_CONTIG = 0, /* row-major, offset 0 */
  TC_STRIDED,    /* non-unit inner stride, padded rows, byte offset */
  TC_PERMUTED,   /* stored with axes reversed (column-major) + offset; the
                    view is made with bp_tensor_permute */
  TC_LAYOUT_COUNT
} tc_layout_t;
extern const char *const tc_layout_names[TC_LAYOUT_COUNT];

typedef struct tc_tensor {
  bp_buffer_t *buf;
  bp_tensor_t t;          /* the view handed to ops */
  uint64_t bytes;         /* buffer size */
  unsigned char *shadow;  /* the buffer's bytes as last uploaded */
  int64_t numel;
} tc_tensor_t;

/* Makes a tensor of shape over a new buffer laid out as layout. vals holds
 * numel values in logical row-major order (rounded to dt on upload), or is
 * NULL. Every byte of the buffer outside the view (and inside it when vals
 * is NULL) is 0xff: NaN for every float dtype, so an op that reads padding
 * or an output it must not read shows NaN. Aborts the test on failure. */
tc_tensor_t tc_tensor(tc_env_t *e, bp_dtype_t dt, int rank,
                      const int64_t *shape, tc_layout_t layout,
                      const double *vals);
/* The same with explicit strides (elements, may be 0) and element offset. */
tc_tensor_t tc_tensor_strided(tc_env_t *e, bp_dtype_t dt, int rank,
                              const int64_t *shape, const int64_t *strides,
                              int64_t offset_elems, const double *vals);
void tc_tensor_free(tc_tensor_t *t);
/* Reads the view back as numel doubles (row-major); returns a malloc'd
 * array the caller frees. */
double *tc_download(const tc_tensor_t *t);
/* The values the device holds for the view as uploaded (from the shadow),
 * malloc'd: what a reference must use as the op's input. */
double *tc_values(const tc_tensor_t *t);
/* Number of bytes of the buffer outside the view that differ from the
 * shadow (an op wrote outside its output). */
int64_t tc_outside_changed(const tc_tensor_t *t);
/* Number of bytes of the whole buffer that differ from the shadow. */
int64_t tc_bytes_changed(const tc_tensor_t *t);

/* ---- comparisons -----------------------------------------------------------*/

extern int tc_failures;
/* tc_expect_* calls since TC_BEGIN: a test that checked nothing fails. */
extern int tc_checks;
/* Compares y with ref (n values) as described at the top; ref is rounded
 * to dt first. red is the reduction length. Prints and counts a failure;
 * returns true when close. what is printf-formatted context. */
bool tc_expect_close(const tc_env_t *e, bp_dtype_t dt, const double *y,
                     const double *ref, int64_t n, double red,
                     const char *what, ...)
    __attribute__((format(printf, 7, 8)));
/* Bit-exact comparison after rounding ref to dt (NaN matches NaN; -0.0
 * must match -0.0). */
bool tc_expect_exact(const tc_env_t *e, bp_dtype_t dt, const double *y,
                     const double *ref, int64_t n, const char *what, ...)
    __attribute__((format(printf, 6, 7)));
/* Counts a failure when st != want, printing bp_last_error(). */
bool tc_expect_status(const tc_env_t *e, bp_status_t st, bp_status_t want,
                      const char *what, ...)
    __attribute__((format(printf, 4, 5)));
/* Checks a rejected call: status want, a non-empty bp_last_error() that
 * names needle (a word; NULL: any message), printing and counting a
 * failure otherwise. */
bool tc_expect_reject(const tc_env_t *e, bp_status_t st, bp_status_t want,
                      const char *needle, const char *what, ...)
    __attribute__((format(printf, 5, 6)));
/* Fails the current test when any tc_expect_* failed since TC_BEGIN, or
 * when none was called (a test must not pass by checking nothing). */
#define TC_BEGIN() (tc_failures = tc_checks = 0)
#define TC_END()                                                               \
  do {                                                                         \
    assert_int_equal(tc_failures, 0);                                          \
    assert_true(tc_checks > 0);                                                \
  } while (0)

/* Linear index into x (rank rx, shape xs) of output element lin of shape
 * ys under NumPy broadcasting. */
int64_t tc_bcast_index(int ry, const int64_t *ys, int64_t lin, int rx,
                       const int64_t *xs);

/* Product of shape. */
int64_t tc_numel(int rank, const int64_t *shape);

#endif /* BP_TEST_COMMON_TC_H */
