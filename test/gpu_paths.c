/*
 * gpu_paths.c — the device loop of the GPU-backend op tests (see
 * gpu_paths.h): the shims, the kernel paths' environment, and opening each
 * device beside cpu-ref.
 */
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/gpu_paths.h"
#include "test/skip.h"

const gp_path_t gp_default_path[1] = {{"default", {NULL}}};

const char *const gp_quant_knobs[] = {"BACKPLANE_OPENCL_QUANT_DOT", "BACKPLANE_VK_QUANT_BYTES",
                                      "BACKPLANE_VK_QUANT_DOT",     "BACKPLANE_VK_GEMM_TEXEL",
                                      "BACKPLANE_CUDA_QGEMM",       NULL};

static int shims_set; /* drivers gp_use_shims pointed at the shims */

void gp_use_shims(void) {
  char dir[PATH_MAX], path[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
  if (n <= 0 || getenv("BP_UNDER_SANITIZER")) return;
  dir[n] = 0;
  *strrchr(dir, '/') = 0;
  const char *env[][2] = {{"BACKPLANE_CUDA_DRIVER", "shims/cuda/libcuda.so.1"},
                          {"BACKPLANE_HIP_RUNTIME", "shims/hip/libamdhip64.so"},
                          {"BACKPLANE_HIPRTC", "shims/hip/libhiprtc.so"}};
  const bool real_cuda = getenv("CUDA_OPS_REAL_DRIVER"),
             real_rocm = getenv("ROCM_OPS_REAL_RUNTIME");
  for (size_t i = 0; i < sizeof env / sizeof env[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, env[i][1]);
    if ((i < 1 ? real_cuda : real_rocm) || getenv(env[i][0]) || access(path, R_OK) != 0) continue;
    setenv(env[i][0], path, 1);
    shims_set++;
    /* kept loaded for the whole run: every context opens this instance */
    if (!dlopen(path, RTLD_NOW | RTLD_LOCAL)) fprintf(stderr, "shims: %s\n", dlerror());
  }
}

/* Unsets the plan's knobs, then sets those path pa names (none when NULL). */
static void path_set(const gp_plan_t *plan, const gp_path_t *pa) {
  for (size_t i = 0; plan->knobs && plan->knobs[i]; i++) unsetenv(plan->knobs[i]);
  for (int i = 0; pa && pa->env[i]; i++) {
    char kv[64];
    snprintf(kv, sizeof kv, "%s", pa->env[i]);
    char *eq = strchr(kv, '=');
    *eq = 0;
    setenv(kv, eq + 1, 1);
  }
}

/* The plan's entry for backend, NULL when the plan does not run it. */
static const gp_backend_t *plan_backend(const gp_plan_t *plan, const char *backend) {
  for (size_t i = 0; i < plan->count; i++)
    if (!strcmp(plan->backends[i].name, backend)) return &plan->backends[i];
  return NULL;
}

static bool shim_backend(const char *backend) {
  return !strcmp(backend, "cuda") || !strcmp(backend, "rocm");
}

/* Opens device rank r and cpu-ref (fallback off), runs fn on each of be's
 * paths, closes both. */
static void run_device(bp_context_t *ctx, const gp_plan_t *plan, const bp_device_entry_t *e,
                       const gp_backend_t *be, void (*fn)(gp_pair_t *p)) {
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = true};
  char sel[16];
  snprintf(sel, sizeof sel, "%u", e->rank);
  gp_pair_t p = {.backend = e->backend};
  assert_int_equal(bp_device_open(ctx, sel, &cfg, &p.gpu.dev), BP_OK);
  if (bp_device_open(ctx, "cpu-ref", &cfg, &p.ref.dev) != BP_OK)
    fail_msg("cpu-ref: %s", bp_last_error());
  assert_int_equal(bp_stream_create(p.gpu.dev, &p.gpu.s), BP_OK);
  assert_int_equal(bp_stream_create(p.ref.dev, &p.ref.s), BP_OK);
  for (size_t i = 0; i < be->count; i++) {
    path_set(plan, &be->paths[i]);
    p.path = be->paths[i].name;
    fn(&p);
    printf("  %-6s %s (%s): ok\n", e->backend, e->info.name, p.path);
  }
  path_set(plan, NULL);
  bp_stream_destroy(p.gpu.s), bp_stream_destroy(p.ref.s);
  bp_device_close(p.gpu.dev), bp_device_close(p.ref.dev);
}

/* "OpenCL, Vulkan, CUDA or ROCm": the plan's backends as the docs name them. */
static const char *backend_list(const gp_plan_t *plan, char *out, size_t size) {
  static const char *const shown[][2] = {
      {"opencl", "OpenCL"}, {"vulkan", "Vulkan"}, {"cuda", "CUDA"}, {"rocm", "ROCm"}};
  size_t len = 0;
  out[0] = 0;
  for (size_t i = 0; i < plan->count && len < size; i++) {
    const char *name = plan->backends[i].name;
    for (size_t k = 0; k < sizeof shown / sizeof shown[0]; k++)
      if (!strcmp(name, shown[k][0])) name = shown[k][1];
    const char *sep = !i ? "" : i + 1 < plan->count ? ", " : " or ";
    len += (size_t)snprintf(out + len, size - len, "%s%s", sep, name);
  }
  return out;
}

void gp_on_devices(const gp_plan_t *plan, void (*fn)(gp_pair_t *p)) {
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  uint32_t count = 0, ran = 0, shim_ran = 0;
  bool runs_shim_backend = false;
  for (size_t i = 0; i < plan->count; i++)
    runs_shim_backend |= shim_backend(plan->backends[i].name);
  assert_int_equal(bp_context_device_count(ctx, &count), BP_OK);
  for (uint32_t r = 0; r < count; r++) {
    bp_device_entry_t e;
    assert_int_equal(bp_context_device_entry(ctx, r, &e), BP_OK);
    const gp_backend_t *be = plan_backend(plan, e.backend);
    if (!be) continue;
    run_device(ctx, plan, &e, be, fn);
    ran++;
    shim_ran += shim_backend(e.backend);
  }
  bp_context_destroy(ctx);
  /* the shims beside the test always give a CUDA and a ROCm device: none
   * means a plugin was refused, which must not pass as a skip */
  if (runs_shim_backend && shims_set && !shim_ran)
    fail_msg("the CUDA / HIP shims are set, yet no CUDA or ROCm device came up");
  if (!ran) {
    char list[128], why[192];
    snprintf(why, sizeof why, "no %s device (and no shims beside the test)",
             backend_list(plan, list, sizeof list));
    TEST_SKIP_CASE(why);
  }
}
