/*
 * model_ops_harness.c — see model_ops_harness.h.
 */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "model_ops_harness.h"
#include "skip.h"

static bp_context_t *ctx;

typedef struct mo_test {
  uint32_t rank;
  const mo_case_t *c;
  char name[128];
  char device[64];
} mo_test_t;

static const bp_dtype_t every_dtype[BP_DTYPE_COUNT] = {BP_F32, BP_F16, BP_BF16, BP_F64,
                                                       BP_I32, BP_I64, BP_U8};

tc_tensor_t mo_rand(tc_env_t *e, bp_dtype_t dt, int rank, const int64_t *shape, tc_layout_t layout,
                    double lo, double hi, uint64_t seed) {
  tc_rng_t rng;
  tc_rng_seed(&rng, seed);
  int64_t n = tc_numel(rank, shape);
  double *v = malloc(sizeof(double) * (size_t)(n + 1));
  tc_rng_fill(&rng, dt, lo, hi, v, n);
  tc_tensor_t t = tc_tensor(e, dt, rank, shape, layout, v);
  free(v);
  return t;
}

/* One case on one device: every dtype it claims; a skip when none. */
static void run_case(void **state) {
  mo_test_t *t = *state;
  char sel[16];
  snprintf(sel, sizeof sel, "%u", t->rank);
  tc_env_t e;
  if (!tc_env_open(&e, ctx, sel)) fail_msg("device %s is listed but does not open", t->device);
  TC_BEGIN();
  int ran = 0;
  char missing[256] = "";
  for (int i = 0; i < (t->c->all_dtypes ? BP_DTYPE_COUNT : 4); i++) {
    bp_dtype_t dt = every_dtype[i];
    if (t->c->op != BP_OP_COUNT && !tc_supports(&e, t->c->op, dt)) {
      size_t len = strlen(missing);
      snprintf(missing + len, sizeof missing - len, "%s%s", len ? " " : "", bp_dtype_name(dt));
      continue;
    }
    t->c->fn(&e, dt);
    ran++;
  }
  tc_env_close(&e);
  if (missing[0]) printf("  %s: not claimed for %s\n", t->name, missing);
  if (!ran) {
    char why[256];
    snprintf(why, sizeof why, "%s: device %s does not claim %s", t->name, t->device,
             bp_op_name(t->c->op));
    TEST_SKIP_CASE(why);
  }
  TC_END();
}

/* Points the CUDA and ROCm plugins at the CPU shims built beside the test
 * (as test_model does), unless the caller chose drivers. */
static void use_shims(void) {
  char dir[PATH_MAX], path[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  if (n <= 0 || getenv("BP_UNDER_SANITIZER")) return;
  dir[n] = 0;
  *strrchr(dir, '/') = 0;
  const char *env[][2] = {{"BACKPLANE_CUDA_DRIVER", "shims/cuda/libcuda.so.1"},
                          {"BACKPLANE_CUBLAS", "shims/cublas/libcublas.so.13"},
                          {"BACKPLANE_HIP_RUNTIME", "shims/hip/libamdhip64.so"},
                          {"BACKPLANE_HIPRTC", "shims/hip/libhiprtc.so"},
                          {"BACKPLANE_ROCBLAS", "shims/rocblas/librocblas.so.4"}};
  for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, env[i][1]);
    if (getenv(env[i][0]) || access(path, R_OK) != 0) continue;
    setenv(env[i][0], path, 1);
    /* kept loaded: the plugins open this same instance */
    if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) fprintf(stderr, "model ops: %s\n", dlerror());
  }
}

int mo_run(const char *suite, const mo_case_t *cases, int ncases) {
  use_shims();
  if (bp_context_create(NULL, &ctx) != BP_OK) return test_skip_suite("no context");
  uint32_t count = 0;
  bp_context_device_count(ctx, &count);
  size_t total = (size_t)count * (size_t)ncases;
  mo_test_t *ts = calloc(total + 1, sizeof *ts);
  struct CMUnitTest *tests = calloc(total + 1, sizeof *tests);
  size_t k = 0;
  for (uint32_t r = 0; r < count; r++) {
    bp_device_entry_t entry;
    if (bp_context_device_entry(ctx, r, &entry) != BP_OK) continue;
    printf("device %u: %s (%s)\n", r, entry.info.name, entry.backend);
    for (int c = 0; c < ncases; c++, k++) {
      ts[k].rank = r;
      ts[k].c = &cases[c];
      snprintf(ts[k].device, sizeof ts[k].device, "%s", entry.info.name);
      snprintf(ts[k].name, sizeof ts[k].name, "%s on %s", cases[c].name, entry.info.name);
      tests[k].name = ts[k].name;
      tests[k].test_func = run_case;
      tests[k].initial_state = &ts[k];
    }
  }
  int rc = _cmocka_run_group_tests(suite, tests, k, NULL, NULL);
  free(tests);
  free(ts);
  bp_context_destroy(ctx);
  return rc;
}

/* ---- reference -------------------------------------------------------- */

double mo_gelu_tanh(double x) {
  return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

double mo_glu(bp_glu_kind_t kind, double g, double u) {
  double a;
  switch (kind) {
  case BP_GLU_SWIGLU:
    a = g / (1 + exp(-g));
    break;
  case BP_GLU_GEGLU:
    a = 0.5 * g * (1 + erf(g / sqrt(2.0)));
    break;
  case BP_GLU_GEGLU_TANH:
    a = mo_gelu_tanh(g);
    break;
  default:
    a = g > 0 ? g : 0;
    break;
  }
  return a * u;
}

void mo_rope(bp_rope_mode_t mode, int64_t rd, double base, const int64_t *shape, const int64_t *pos,
             const double *x, double *y) {
  int64_t B = shape[0], S = shape[1], H = shape[2], D = shape[3];
  for (int64_t b = 0; b < B; b++)
    for (int64_t s = 0; s < S; s++)
      for (int64_t h = 0; h < H; h++) {
        const double *xr = x + ((b * S + s) * H + h) * D;
        double *yr = y + ((b * S + s) * H + h) * D;
        for (int64_t f = rd; f < D; f++) yr[f] = xr[f];
        for (int64_t i = 0; i < rd / 2; i++) {
          int64_t f0 = mode == BP_ROPE_HALF ? i : 2 * i;
          int64_t f1 = mode == BP_ROPE_HALF ? i + rd / 2 : 2 * i + 1;
          double ang = (double)pos[b * S + s] / pow(base, (double)(2 * i) / (double)rd);
          yr[f0] = xr[f0] * cos(ang) - xr[f1] * sin(ang);
          yr[f1] = xr[f1] * cos(ang) + xr[f0] * sin(ang);
        }
      }
}
