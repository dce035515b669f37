/*
 * ref/ref_data.c — scalar reference fill, copy, cast and random.
 *
 * One task per element of y in row-major order. copy moves raw element
 * bytes (so i64 beyond 2^53 and NaN payloads survive); cast goes through
 * double with dtype.h's rounding rules, except i64 sources headed for
 * f32 / f16 / bf16, which are rounded to odd first so the final rounding
 * is the only one that counts. random is kernels/common/bp_philox.h's
 * stream (the header itself keeps the compiler from fusing its
 * multiply-adds, so the bits do not depend on compiler flags).
 */
#include <string.h>

#include "ref.h"
#include "kernels/common/bp_philox.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

static int64_t element_tasks(const bp_plugin_tensor_t *y) {
  return cpu_numel(y);
}

/* ---- fill ---------------------------------------------------------------*/

int64_t cpu_ref_fill_tasks(const bp_fill_args_t *a) {
  return element_tasks(&a->y);
}
int64_t cpu_ref_fill_grain(const bp_fill_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN * 4;
}

bp_status_t cpu_ref_fill_range(const bp_fill_args_t *a, int64_t begin,
                               int64_t end) {
  const bp_plugin_tensor_t *ts[1] = {&a->y};
  size_t es = cpu_dtype_size(a->y.dtype);
  char *py = cpu_tensor_base(&a->y);
  unsigned char one[8];
  cpu_store(one, a->y.dtype, 0, a->value); /* convert once */
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 1, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it))
    memcpy(py + it.off[0] * (int64_t)es, one, es);
  return BP_OK;
}

/* ---- copy ---------------------------------------------------------------*/

int64_t cpu_ref_copy_tasks(const bp_copy_args_t *a) {
  if (a->x.dtype != a->y.dtype)
    return BP_ERR_INVALID_ARGUMENT;
  return element_tasks(&a->y);
}
int64_t cpu_ref_copy_grain(const bp_copy_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN * 4;
}

bp_status_t cpu_ref_copy_range(const bp_copy_args_t *a, int64_t begin,
                               int64_t end) {
  const bp_plugin_tensor_t *ts[2] = {&a->x, &a->y};
  int64_t es = (int64_t)cpu_dtype_size(a->y.dtype);
  const char *px = cpu_tensor_base(&a->x);
  char *py = cpu_tensor_base(&a->y);
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 2, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it))
    memcpy(py + it.off[1] * es, px + it.off[0] * es, (size_t)es);
  return BP_OK;
}

/* ---- cast ---------------------------------------------------------------*/

int64_t cpu_ref_cast_tasks(const bp_copy_args_t *a) {
  return element_tasks(&a->y);
}
int64_t cpu_ref_cast_grain(const bp_copy_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN;
}

static int narrow_float(bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_F16 || dt == BP_BF16;
}

/* BP_CAST_SATURATE (ABI 1.5, read only when struct_size covers it). */
static bool cast_saturates(const bp_copy_args_t *a) {
  return a->struct_size >= offsetof(bp_copy_args_t, cast_flags) + sizeof a->cast_flags &&
         (a->cast_flags & BP_CAST_SATURATE) &&
         (a->y.dtype == BP_FP8_E4M3 || a->y.dtype == BP_FP8_E5M2);
}

static bp_status_t fp8_saturating(const bp_copy_args_t *a, int64_t begin, int64_t end) {
  const bp_plugin_tensor_t *ts[2] = {&a->x, &a->y};
  const void *px = cpu_tensor_base(&a->x);
  uint8_t *py = cpu_tensor_base(&a->y);
  int mbits = a->y.dtype == BP_FP8_E4M3 ? 3 : 2;
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 2, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it)) {
    double v = a->x.dtype == BP_I64 ? (double)((const int64_t *)px)[it.off[0]] : cpu_load(px, a->x.dtype, it.off[0]);
    py[it.off[1]] = cpu_fp8_encode_sat(v, mbits);
  }
  return BP_OK;
}

bp_status_t cpu_ref_cast_range(const bp_copy_args_t *a, int64_t begin,
                               int64_t end) {
  const bp_plugin_tensor_t *ts[2] = {&a->x, &a->y};
  const void *px = cpu_tensor_base(&a->x);
  void *py = cpu_tensor_base(&a->y);
  bp_dtype_t xd = a->x.dtype, yd = a->y.dtype;
  int odd = xd == BP_I64 && narrow_float(yd);
  if (cast_saturates(a))
    return fp8_saturating(a, begin, end);
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 2, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it)) {
    double v = odd ? cpu_i64_to_double_odd(((const int64_t *)px)[it.off[0]])
                   : cpu_load(px, xd, it.off[0]);
    if (xd == BP_I64 && yd == BP_I64) /* never a cast, but stay exact */
      ((int64_t *)py)[it.off[1]] = ((const int64_t *)px)[it.off[0]];
    else
      cpu_store(py, yd, it.off[1], v);
  }
  return BP_OK;
}

/* ---- random -------------------------------------------------------------*/

int64_t cpu_ref_random_tasks(const bp_random_args_t *a) {
  if (!cpu_dtype_is_float(a->y.dtype) ||
      (a->dist != BP_RANDOM_UNIFORM && a->dist != BP_RANDOM_NORMAL))
    return BP_ERR_INVALID_ARGUMENT;
  return element_tasks(&a->y);
}
int64_t cpu_ref_random_grain(const bp_random_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN / 4;
}

/* Element i of the stream as a double holding the exact value to store:
 * f64 is computed in double; narrower types in float, and a float converts
 * to double exactly, so cpu_store rounds it (f16 / bf16) only once. A
 * uniform f16 / bf16 comes already rounded (bp_philox_uniform_16 keeps it
 * below b), so cpu_store's rounding leaves it as it is. */
static double random_value(const bp_random_args_t *a, uint64_t i) {
  bp_philox_u32x4 r = bp_philox_element(a->seed, a->offset, i);
  if (a->y.dtype == BP_F64)
    return a->dist == BP_RANDOM_UNIFORM ? bp_philox_uniform_f64(r, a->a, a->b)
                                        : bp_philox_normal_f64(r, a->a, a->b);
  float fa = (float)a->a, fb = (float)a->b;
  if (a->dist == BP_RANDOM_UNIFORM && a->y.dtype == BP_F16)
    return cpu_f16_to_float((uint16_t)bp_philox_uniform_16(r, fa, fb, 0));
  if (a->dist == BP_RANDOM_UNIFORM && a->y.dtype == BP_BF16)
    return cpu_bf16_to_float((uint16_t)bp_philox_uniform_16(r, fa, fb, 1));
  return a->dist == BP_RANDOM_UNIFORM ? bp_philox_uniform_f32(r, fa, fb)
                                      : bp_philox_normal_f32(r, fa, fb);
}

bp_status_t cpu_ref_random_range(const bp_random_args_t *a, int64_t begin,
                                 int64_t end) {
  const bp_plugin_tensor_t *ts[1] = {&a->y};
  void *py = cpu_tensor_base(&a->y);
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 1, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it))
    cpu_store(py, a->y.dtype, it.off[0], random_value(a, (uint64_t)i));
  return BP_OK;
}
