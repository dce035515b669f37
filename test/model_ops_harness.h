/*
 * model_ops_harness.h — running the model-op tests (test_model_ops*.c) on
 * every device the machine has: cpu, cpu-ref, OpenCL (PoCL), Vulkan
 * (lavapipe), and the CUDA and ROCm plugins over their CPU shims. Each
 * case becomes one cmocka test per device ("gather on cpu"), so a device
 * that claims none of a case's dtypes is a skip with its reason, never a
 * pass. Also the tests' own double-precision reference of the new ops,
 * written from docs/ops.md and sharing nothing with a plugin.
 */
#ifndef BP_TEST_MODEL_OPS_HARNESS_H
#define BP_TEST_MODEL_OPS_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "tc.h"

/* Runs one case on one device for one dtype the device claims. */
typedef void (*mo_case_fn)(tc_env_t *e, bp_dtype_t dt);

typedef struct mo_case {
  const char *name;
  bp_op_t op;      /* the family whose claim decides (BP_OP_COUNT: none) */
  bool all_dtypes; /* every dtype, else the float ones */
  mo_case_fn fn;
} mo_case_t;

/* Registers every case on every device and runs them; main returns it. */
int mo_run(const char *suite, const mo_case_t *cases, int ncases);

/* A device tensor of shape with values uniform in [lo, hi) from seed. */
tc_tensor_t mo_rand(tc_env_t *e, bp_dtype_t dt, int rank, const int64_t *shape, tc_layout_t layout,
                    double lo, double hi, uint64_t seed);

/* ---- reference (double) ------------------------------------------------ */
double mo_gelu_tanh(double x);
double mo_glu(bp_glu_kind_t kind, double g, double u);
/* x, y [B, S, H, D] row-major; pos [B * S] positions. */
void mo_rope(bp_rope_mode_t mode, int64_t rd, double base, const int64_t *shape, const int64_t *pos,
             const double *x, double *y);

#endif /* BP_TEST_MODEL_OPS_HARNESS_H */
