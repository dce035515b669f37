/*
 * module.c — the shim's modules and launches.
 *
 * hipModuleLoadData reads the text code object of hiprtc.c; each kernel's
 * parameter type (as the HIP source declares it) is checked against the C
 * implementation's parameter block: both come from bp_cuda_args.h, so a
 * HIP kernel declared with another block than its CUDA twin is caught
 * here. hipModuleLaunchKernel checks the launch geometry against AMD's
 * limits and runs the C kernel at once (streams are synchronous).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/bp_cuda_args.h"
#include "kernels/cuda/bp_model_args.h"
#include "kernels/cuda/bp_quant_args.h"
#include "test/shims/hip/shim.h"

/* shim_kernel_find and its table: test/shims/cuda/kernels.c, linked in
 * unchanged, declared by the CUDA shim's header. */
#include "test/shims/cuda/shim.h"

#define MAX_ENTRIES 64
#define MAX_SMEM (64 * 1024) /* LDS per workgroup on CDNA and RDNA */

static const struct {
  const char *type;
  size_t size;
} param_types[] = {
#define T(t) {#t, sizeof(t)}
    T(bpk_unary_args_t),   T(bpk_binary_args_t),     T(bpk_fill_args_t),
    T(bpk_copy_args_t),    T(bpk_reduce_args_t),     T(bpk_softmax_args_t),
    T(bpk_norm_args_t),    T(bpk_batch_norm_args_t), T(bpk_pool2d_args_t),
    T(bpk_conv2d_args_t),  T(bpk_gemm_args_t),       T(bpk_gemv_args_t),
    T(bpk_attention_args_t), T(bpk_adam_args_t),     T(bpk_random_args_t),
    T(bpk_gather_args_t),  T(bpk_arange_args_t),     T(bpk_binary_scalar_args_t),
    T(bpk_glu_args_t),     T(bpk_rope_args_t),       T(bpk_quant_args_t),
    T(bpk_qgemm_args_t),   T(bpk_qmatmul_args_t),    T(bpk_conv2d_im2col_args_t),
#undef T
};

struct ihipModuleSymbol_t {
  char name[64];
  int param_count;
  uint32_t param_sizes[SHIM_MAX_PARAMS]; /* as the HIP source declares */
  const shim_kernel_t *kernel;
};

struct ihipModule_t {
  uint32_t magic;
  int count;
  struct ihipModuleSymbol_t fns[MAX_ENTRIES];
};
#define MODULE_MAGIC 0x4d4f444cu

static size_t type_size(const char *type) {
  for (size_t i = 0; i < sizeof param_types / sizeof param_types[0]; i++)
    if (strcmp(param_types[i].type, type) == 0)
      return param_types[i].size;
  return 0;
}

/* Reads "(S,S,...)" into f; false when malformed. */
static bool parse_sizes(const char *t, struct ihipModuleSymbol_t *f) {
  for (t++; *t && *t != ')';) {
    char *end;
    unsigned long v = strtoul(t, &end, 10);
    if (end == t || !v || f->param_count == SHIM_MAX_PARAMS)
      return false;
    f->param_sizes[f->param_count++] = (uint32_t)v;
    t = *end == ',' ? end + 1 : end;
  }
  return *t == ')';
}

/* Parses the "kernel NAME TYPE" (a built-in's parameter block) and
 * "kernel NAME (S,...)" (an application's parameter list) lines; false
 * when one is malformed. */
static bool parse(const char *code, struct ihipModule_t *m) {
  for (const char *p = code; (p = strstr(p, "\nkernel ")); p++) {
    if (m->count == MAX_ENTRIES)
      return false;
    struct ihipModuleSymbol_t *f = &m->fns[m->count];
    char type[256];
    if (sscanf(p, "\nkernel %63s %255s", f->name, type) != 2)
      return false;
    if (type[0] == '(') {
      if (!parse_sizes(type, f))
        return false;
    } else {
      f->param_count = 1;
      f->param_sizes[0] = (uint32_t)type_size(type);
      if (!f->param_sizes[0]) {
        shim_report("kernel %s takes %s, not a parameter block of "
                    "bp_cuda_args.h",
                    f->name, type);
        return false;
      }
    }
    m->count++;
  }
  return m->count > 0;
}

hipError_t hipModuleLoadData(hipModule_t *out, const void *image) {
  if (!shim_have_device(__func__))
    return hipErrorInvalidDevice;
  *out = NULL;
  hipError_t unsafe = shim_capture_unsafe(__func__);
  if (unsafe)
    return unsafe;
  if (shim_hip_fail("module"))
    return hipErrorInvalidImage;
  const char *code = image;
  if (strncmp(code, SHIM_CODE_MAGIC, strlen(SHIM_CODE_MAGIC)) != 0)
    return hipErrorInvalidImage;
  struct ihipModule_t *m = calloc(1, sizeof *m);
  if (!m)
    return hipErrorOutOfMemory;
  if (!parse(code, m)) {
    free(m);
    return hipErrorInvalidImage;
  }
  m->magic = MODULE_MAGIC;
  __atomic_add_fetch(&shim_hip_stats.modules, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&shim_hip_stats.loads, 1, __ATOMIC_RELAXED);
  *out = m;
  return hipSuccess;
}

hipError_t hipModuleUnload(hipModule_t m) {
  if (!shim_have_device(__func__))
    return hipErrorInvalidDevice;
  hipError_t unsafe = shim_capture_unsafe(__func__);
  if (unsafe)
    return unsafe;
  if (!m || m->magic != MODULE_MAGIC) {
    shim_report("hipModuleUnload of a module not loaded");
    return hipErrorInvalidHandle;
  }
  m->magic = 0;
  free(m);
  __atomic_sub_fetch(&shim_hip_stats.modules, 1, __ATOMIC_RELAXED);
  return hipSuccess;
}

hipError_t hipModuleGetFunction(hipFunction_t *out, hipModule_t m,
                                const char *name) {
  if (!shim_have_device(__func__))
    return hipErrorInvalidDevice;
  if (!m || m->magic != MODULE_MAGIC)
    return hipErrorInvalidHandle;
  for (int i = 0; i < m->count; i++) {
    struct ihipModuleSymbol_t *f = &m->fns[i];
    if (strcmp(f->name, name) != 0)
      continue;
    if (!f->kernel) {
      const shim_kernel_t *k = shim_kernel_find(name);
      if (!k) {
        shim_report("kernel %s is in the code object but has no C "
                    "implementation", name);
        return hipErrorNotFound;
      }
      if (!shim_params_match(k, f->param_count, f->param_sizes,
                             "the HIP source"))
        return hipErrorInvalidImage;
      f->kernel = k;
    }
    *out = f;
    return hipSuccess;
  }
  shim_report("kernel %s is not in the module", name);
  return hipErrorNotFound;
}

/* The limits a real launch is held to. */
static hipError_t check_geometry(const struct ihipModuleSymbol_t *f,
                                 const unsigned g[3], const unsigned b[3],
                                 unsigned smem) {
  const unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
  const unsigned long long gx = (unsigned long long)g[0] * b[0];
  if (!g[0] || !g[1] || !g[2] || threads == 0 || threads > 1024 ||
      gx > 0xffffffffull || g[1] > 65535 || g[2] > 65535) {
    shim_report("%s: launch geometry grid (%u,%u,%u) block (%u,%u,%u) is "
                "invalid", f->name, g[0], g[1], g[2], b[0], b[1], b[2]);
    return hipErrorInvalidValue;
  }
  if (smem > MAX_SMEM) {
    shim_report("%s: %u bytes of dynamic shared memory (at most %d)", f->name,
                smem, MAX_SMEM);
    return hipErrorInvalidValue;
  }
  return hipSuccess;
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy,
                                 unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned smem, hipStream_t s,
                                 void **params, void **extra) {
  if (!shim_have_device(__func__))
    return hipErrorInvalidDevice;
  hipError_t use = (hipError_t)shim_stream_use(s, __func__);
  if (use != hipSuccess)
    return use;
  if (!f || !f->kernel || extra || (f->param_count && !params)) {
    shim_report("hipModuleLaunchKernel: bad function or parameters");
    return hipErrorInvalidValue;
  }
  const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  hipError_t r = check_geometry(f, g, b, smem);
  if (r != hipSuccess)
    return r;
  if (shim_hip_fail("launch"))
    return hipErrorLaunchFailure;
  const shim_launch_t l = {{gx, gy, gz}, {bx, by, bz}, smem};
  if (shim_capture_kernel(shim_stream_capture(s), f->kernel, &l, params,
                          f->param_count, f->param_sizes))
    return hipSuccess; /* recorded: runs at each graph launch */
  __atomic_add_fetch(&shim_hip_stats.launches, 1, __ATOMIC_RELAXED);
  /* A kernel that would touch memory outside the buffers is what a GPU
   * reports as an illegal address. */
  return shim_kernel_run(f->kernel, &l, params) ? hipSuccess
                                                : hipErrorIllegalAddress;
}
