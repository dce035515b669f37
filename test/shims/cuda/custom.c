/*
 * custom.c — C twins of the custom test kernels (test/fixtures/
 * cuda_custom.cu, and its HIP twin in test/test_rocm.c), for the
 * custom-kernel path of both shims.
 *
 * Unlike the built-in kernels, which take one parameter block, these take
 * the application's parameter list, one kernelParams pointer each: the
 * shim checks the count and byte size of every parameter against the code
 * object, so a plugin that marshals an argument at the wrong width or
 * position is caught. Each twin checks the whole range it touches against
 * the live allocations before touching it.
 */
#include <string.h>

#include "test/shims/cuda/shim.h"

static uint64_t u64_at(void *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint32_t u32_at(void *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Launches that repeat the 1-D work along y and z repeat it on a GPU too. */
static uint64_t repeats(const shim_launch_t *l) {
  return (uint64_t)l->grid[1] * l->grid[2] * l->block[1] * l->block[2];
}

/* bp_test_saxpy(float *y, const float *x, float a, int n) */
static bool k_saxpy(const shim_launch_t *l, void **p) {
  float *y = (float *)(uintptr_t)u64_at(p[0]);
  const float *x = (const float *)(uintptr_t)u64_at(p[1]);
  float a;
  memcpy(&a, p[2], 4);
  int32_t n = (int32_t)u32_at(p[3]);
  int64_t m = (int64_t)l->grid[0] * l->block[0];
  if (n < m)
    m = n;
  if (m <= 0)
    return true;
  if (!shim_mem_valid((uint64_t)(uintptr_t)y, (uint64_t)m * 4, "bp_test_saxpy y") ||
      !shim_mem_valid((uint64_t)(uintptr_t)x, (uint64_t)m * 4, "bp_test_saxpy x"))
    return false;
  for (uint64_t r = 0; r < repeats(l); r++)
    for (int64_t i = 0; i < m; i++)
      y[i] = a * x[i] + y[i];
  return true;
}

/* bp_test_args(long long *out, int, unsigned, long long, unsigned long
 * long, float, double): each scalar's bits back as a 64-bit word. */
static bool k_args(const shim_launch_t *l, void **p) {
  (void)l;
  uint64_t out = u64_at(p[0]);
  if (!shim_mem_valid(out, 6 * 8, "bp_test_args out"))
    return false;
  int64_t w[6];
  w[0] = (int32_t)u32_at(p[1]);
  w[1] = u32_at(p[2]);
  w[2] = (int64_t)u64_at(p[3]);
  w[3] = (int64_t)u64_at(p[4]);
  w[4] = (int32_t)u32_at(p[5]);
  w[5] = (int64_t)u64_at(p[6]);
  memcpy((void *)(uintptr_t)out, w, sizeof w);
  return true;
}

/* bp_test_reverse(float *y, const float *x): needs blockDim.x floats of
 * dynamic shared memory, which a real GPU would fault without. */
static bool k_reverse(const shim_launch_t *l, void **p) {
  uint64_t y = u64_at(p[0]), x = u64_at(p[1]);
  uint64_t bd = l->block[0], n = (uint64_t)l->grid[0] * bd;
  if (l->smem < bd * 4) {
    shim_report("bp_test_reverse: %u bytes of dynamic shared memory; the "
                "block of %llu threads needs %llu",
                l->smem, (unsigned long long)bd, (unsigned long long)(bd * 4));
    return false;
  }
  if (!shim_mem_valid(y, n * 4, "bp_test_reverse y") ||
      !shim_mem_valid(x, n * 4, "bp_test_reverse x"))
    return false;
  float *yf = (float *)(uintptr_t)y;
  const float *xf = (const float *)(uintptr_t)x;
  for (uint64_t b = 0; b < l->grid[0]; b++)
    for (uint64_t t = 0; t < bd; t++)
      yf[b * bd + t] = xf[b * bd + bd - 1 - t];
  return true;
}

static const unsigned char saxpy_sizes[] = {8, 8, 4, 4};
static const unsigned char args_sizes[] = {8, 4, 4, 8, 8, 4, 8};
static const unsigned char reverse_sizes[] = {8, 8};

static const shim_kernel_t custom[] = {
#define C(name, sizes, fn)                                                     \
  {#name, 0, NULL, (int)sizeof sizes, sizes, fn}
    C(bp_test_saxpy, saxpy_sizes, k_saxpy),
    C(bp_test_args, args_sizes, k_args),
    C(bp_test_reverse, reverse_sizes, k_reverse),
#undef C
};

const shim_kernel_t *shim_custom_find(const char *name) {
  for (size_t i = 0; i < sizeof custom / sizeof custom[0]; i++)
    if (strcmp(custom[i].name, name) == 0)
      return &custom[i];
  return NULL;
}

bool shim_params_match(const shim_kernel_t *k, int count,
                       const uint32_t *sizes, const char *from) {
  if (k->fn) { /* a built-in kernel: one parameter block */
    if (count == 1 && sizes[0] == k->param_size)
      return true;
    shim_report("kernel %s: parameter block is %zu bytes in C but %s has %d "
                "parameter(s), the first %u bytes: bp_cuda_args.h and %s "
                "disagree",
                k->name, k->param_size, from, count, count ? sizes[0] : 0,
                from);
    return false;
  }
  if (count != k->param_count) {
    shim_report("kernel %s: %s declares %d parameters, the C twin reads %d",
                k->name, from, count, k->param_count);
    return false;
  }
  for (int i = 0; i < count; i++)
    if (sizes[i] != k->param_sizes[i]) {
      shim_report("kernel %s: parameter %d is %u bytes in %s, %u in the C "
                  "twin",
                  k->name, i, sizes[i], from, k->param_sizes[i]);
      return false;
    }
  return true;
}

bool shim_kernel_run(const shim_kernel_t *k, const shim_launch_t *launch,
                     void **params) {
  if (k->fn)
    return k->fn(params[0]);
  for (int i = 0; i < k->param_count; i++)
    if (!params[i]) {
      shim_report("kernel %s: kernelParams[%d] is NULL", k->name, i);
      return false;
    }
  return k->custom(launch, params);
}
