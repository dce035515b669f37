/*
 * module.c — the shim's modules and launches.
 *
 * cuModuleLoadDataEx reads the PTX text only for its kernel entries: each
 * ".entry NAME(" and the byte size of each of its ".param"s (the built-in
 * kernels take one ".align A .b8 NAME_param_0[SIZE]" block; custom kernels
 * a list of scalars and pointers). cuModuleGetFunction then pairs the entry
 * with the C implementation of the same name, refusing it when the C
 * parameter block (bp_cuda_args.h as gcc lays it out), or a custom twin's
 * parameter list (custom.c), differs from what the PTX declares. cuLaunchKernel checks the launch geometry against the
 * hardware limits and runs the C kernel at once (streams are synchronous).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/shims/cuda/shim.h"

#define MAX_ENTRIES 64
#define DEFAULT_SMEM (48 * 1024)
#define OPTIN_SMEM (227 * 1024)

struct CUfunc_st {
  char name[64];
  int param_count;
  uint32_t param_sizes[SHIM_MAX_PARAMS]; /* bytes, from the PTX */
  const shim_kernel_t *kernel;
  int max_dynamic_smem;
};

struct CUmod_st {
  uint32_t magic;
  int count;
  struct CUfunc_st fns[MAX_ENTRIES];
};
#define MODULE_MAGIC 0x4d4f444cu

static void jit_log(unsigned n, const int *opts, void **vals, const char *msg) {
  for (unsigned i = 0; i < n; i++)
    if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) {
      size_t cap = 0;
      for (unsigned j = 0; j < n; j++)
        if (opts[j] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
          cap = (size_t)(uintptr_t)vals[j];
      if (cap)
        snprintf((char *)vals[i], cap, "%s", msg);
    }
}

/* The byte size of one ".param" declaration of an entry's list: an
 * ".align A .b8 NAME[SIZE]" block, or a scalar type (".u64", ".f32", ...),
 * possibly with ".ptr .global .align N" qualifiers; 0 when unreadable. */
static uint32_t param_size(const char *p, const char *end) {
  const char *bracket = memchr(p, '[', (size_t)(end - p));
  if (bracket)
    return (uint32_t)strtoul(bracket + 1, NULL, 10);
  static const struct {
    const char *type;
    uint32_t size;
  } types[] = {{".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8},
               {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4},
               {".u16", 2}, {".s16", 2}, {".b16", 2}, {".f16", 2},
               {".u8", 1},  {".s8", 1},  {".b8", 1}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    const char *t = strstr(p, types[i].type);
    size_t n = strlen(types[i].type);
    if (t && t < end && (t[n] == ' ' || t[n] == '\t'))
      return types[i].size;
  }
  return 0;
}

/* Parses every ".entry NAME(...)" of the PTX with the size of each of its
 * parameters; false when one is malformed. */
static bool parse_entries(const char *ptx, struct CUmod_st *m) {
  for (const char *p = ptx; (p = strstr(p, ".entry ")); p++) {
    if (m->count == MAX_ENTRIES)
      return false;
    struct CUfunc_st *f = &m->fns[m->count];
    if (sscanf(p, ".entry %63[A-Za-z0-9_](", f->name) != 1)
      return false;
    const char *open = strchr(p, '('), *close = strchr(p, ')');
    if (!open || !close || close < open)
      return false;
    for (const char *q = open; (q = strstr(q, ".param ")) && q < close;) {
      const char *next = strstr(q + 1, ".param ");
      const char *end = next && next < close ? next : close;
      if (f->param_count == SHIM_MAX_PARAMS)
        return false;
      uint32_t size = param_size(q + strlen(".param"), end);
      if (!size)
        return false;
      f->param_sizes[f->param_count++] = size;
      q = end;
    }
    m->count++;
  }
  return m->count > 0;
}

CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned n,
                            int *opts, void **vals) {
  if (!shim_have_ctx(__func__))
    return SHIM_INVALID_CONTEXT;
  const char *ptx = image;
  CUresult unsafe = shim_capture_unsafe(__func__);
  if (unsafe)
    return unsafe;
  if (shim_fail("module")) {
    jit_log(n, opts, vals, "ptxas fatal: injected failure (BP_CUDA_SHIM_FAIL)");
    return CUDA_ERROR_INVALID_PTX;
  }
  if (!strstr(ptx, ".version ") || !strstr(ptx, ".target ")) {
    jit_log(n, opts, vals, "not PTX text");
    return CUDA_ERROR_INVALID_IMAGE;
  }
  struct CUmod_st *m = calloc(1, sizeof *m);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (!parse_entries(ptx, m)) {
    free(m);
    jit_log(n, opts, vals, "malformed .entry (one parameter block expected)");
    return CUDA_ERROR_INVALID_PTX;
  }
  m->magic = MODULE_MAGIC;
  __atomic_add_fetch(&shim_stats.modules, 1, __ATOMIC_RELAXED);
  *out = m;
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule m) {
  if (!shim_have_ctx(__func__))
    return SHIM_INVALID_CONTEXT;
  CUresult unsafe = shim_capture_unsafe(__func__);
  if (unsafe)
    return unsafe;
  if (!m || m->magic != MODULE_MAGIC) {
    shim_report("cuModuleUnload of a module not loaded");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  m->magic = 0;
  free(m);
  __atomic_sub_fetch(&shim_stats.modules, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
  if (!shim_have_ctx(__func__))
    return SHIM_INVALID_CONTEXT;
  if (!m || m->magic != MODULE_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  for (int i = 0; i < m->count; i++) {
    struct CUfunc_st *f = &m->fns[i];
    if (strcmp(f->name, name) != 0)
      continue;
    if (!f->kernel) {
      const shim_kernel_t *k = shim_kernel_find(name);
      if (!k) {
        shim_report("kernel %s is in the PTX but has no C implementation",
                    name);
        return CUDA_ERROR_NOT_FOUND;
      }
      if (!shim_params_match(k, f->param_count, f->param_sizes, "the PTX"))
        return CUDA_ERROR_INVALID_IMAGE;
      f->kernel = k;
    }
    *out = f;
    return CUDA_SUCCESS;
  }
  shim_report("kernel %s is not in the module's PTX", name);
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuFuncSetAttribute(CUfunction f, int attr, int value) {
  if (!shim_have_ctx(__func__))
    return SHIM_INVALID_CONTEXT;
  if (!f || attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
      value < 0 || value > OPTIN_SMEM)
    return CUDA_ERROR_INVALID_VALUE;
  f->max_dynamic_smem = value;
  return CUDA_SUCCESS;
}

/* The limits a real launch is held to. */
static CUresult check_geometry(const struct CUfunc_st *f, const unsigned g[3],
                               const unsigned b[3], unsigned smem) {
  const unsigned long long threads = (unsigned long long)b[0] * b[1] * b[2];
  if (!g[0] || !g[1] || !g[2] || threads == 0 || threads > 1024 ||
      b[2] > 64 || g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535) {
    shim_report("%s: launch geometry grid (%u,%u,%u) block (%u,%u,%u) is "
                "invalid",
                f->name, g[0], g[1], g[2], b[0], b[1], b[2]);
    return CUDA_ERROR_INVALID_VALUE;
  }
  int allowed = f->max_dynamic_smem > DEFAULT_SMEM ? f->max_dynamic_smem
                                                   : DEFAULT_SMEM;
  if ((int)smem > allowed) {
    shim_report("%s: %u bytes of dynamic shared memory without the opt-in "
                "(allowed %d)",
                f->name, smem, allowed);
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        CUstream s, void **params, void **extra) {
  if (!shim_have_ctx(__func__))
    return SHIM_INVALID_CONTEXT;
  CUresult use = (CUresult)shim_stream_use(s, __func__);
  if (use != CUDA_SUCCESS)
    return use;
  if (!f || !f->kernel || extra || (f->param_count && !params)) {
    shim_report("cuLaunchKernel: bad function or parameters");
    return CUDA_ERROR_INVALID_VALUE;
  }
  const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
  CUresult r = check_geometry(f, g, b, smem);
  if (r != CUDA_SUCCESS)
    return r;
  if (shim_fail("launch"))
    return CUDA_ERROR_LAUNCH_FAILED;
  const shim_launch_t l = {{gx, gy, gz}, {bx, by, bz}, smem};
  if (shim_capture_kernel(shim_stream_capture(s), f->kernel, &l, params,
                          f->param_count, f->param_sizes))
    return CUDA_SUCCESS; /* recorded: runs at each graph launch */
  __atomic_add_fetch(&shim_stats.launches, 1, __ATOMIC_RELAXED);
  /* A kernel that would touch memory outside the buffers is what a GPU
   * reports as an illegal address. */
  return shim_kernel_run(f->kernel, &l, params) ? CUDA_SUCCESS
                                                : CUDA_ERROR_ILLEGAL_ADDRESS;
}
