/*
 * gpu_paths.h — the device loop of the tests that check ops on the GPU
 * backends against cpu-ref (test_qgemm_u8_gpu, test_qgemm_fp8_gpu,
 * test_quant_gpu): every device of the backends a test names, opened with
 * fallback off beside cpu-ref in the same context, run on each kernel path
 * its backend has (paths are chosen by environment knobs). The CUDA and
 * ROCm plugins run over the CPU shims built beside the test
 * (gp_use_shims). Include after <cmocka.h>; not thread-safe (the paths
 * set the process environment).
 */
#ifndef BP_TEST_GPU_PATHS_H
#define BP_TEST_GPU_PATHS_H

#include <stddef.h>

#include "core/backplane.h"

/* One device and a stream on it. */
typedef struct gp_side {
  bp_device_t *dev;
  bp_stream_t *s;
} gp_side_t;

/* The device under test and cpu-ref, both open with fallback off; backend
 * names the device's backend ("cuda"), path the kernel path running. Both
 * borrowed from gp_on_devices for one call of its fn. */
typedef struct gp_pair {
  gp_side_t gpu, ref;
  const char *backend, *path;
} gp_pair_t;

/* A kernel path: its name and the environment that selects it (NAME=VALUE
 * strings, NULL-terminated; the plan's knobs not named are unset). */
typedef struct gp_path {
  const char *name;
  const char *env[4];
} gp_path_t;

/* A backend a test runs ("opencl", "vulkan", "cuda", "rocm") and its
 * kernel paths. */
typedef struct gp_backend {
  const char *name;
  const gp_path_t *paths;
  size_t count;
} gp_backend_t;
#define GP_BACKEND(name, paths)                                                                    \
  { name, paths, sizeof paths / sizeof paths[0] }

/* What a test runs: its backends (devices of the others are passed over)
 * and the knobs its paths choose among, a NULL-terminated list of
 * variable names (NULL: none), unset before each path and after the last,
 * so every path runs as its list alone says. */
typedef struct gp_plan {
  const gp_backend_t *backends;
  size_t count;
  const char *const *knobs;
} gp_plan_t;

/* The single path of a backend with one kernel path: no knob set. */
extern const gp_path_t gp_default_path[1];
/* The knobs of the quantized ops' kernel paths: OpenCL's integer dot
 * product, Vulkan's 8-bit storage, dot product and texel panels, CUDA's
 * qgemm kernel (docs/backend-*.md); NULL-terminated. */
extern const char *const gp_quant_knobs[];

/* Points the CUDA and ROCm plugins at the CPU shims built beside the test
 * (shims/ next to the executable), unless the caller chose drivers, asks
 * for the real ones (CUDA_OPS_REAL_DRIVER, ROCM_OPS_REAL_RUNTIME:
 * tools/gpu-check.sh) or runs under a sanitizer (BP_UNDER_SANITIZER). The
 * shims stay loaded for the whole run. Call once from main, before any
 * context is created. */
void gp_use_shims(void);

/* Runs fn on every path of every device of the plan's backends, each
 * beside cpu-ref, and prints a line per path that passed. Fails the cmocka
 * case when gp_use_shims set a shim and the plan names cuda or rocm, yet
 * no such device came up (a refused plugin must not pass as a skip);
 * skips the case when no device ran at all. */
void gp_on_devices(const gp_plan_t *plan, void (*fn)(gp_pair_t *p));

#endif /* BP_TEST_GPU_PATHS_H */
