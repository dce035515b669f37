/*
 * reduce_local.c — the element-wise reductions of the ring collectives
 * (ring.c): what MPI_Op would do to two buffers, for the dtypes the plugin
 * claims (f32, f64, i32, i64, u8) and sum, prod, max, min (AVG is a sum,
 * divided by the caller). Integer sums and products wrap, as MPI's do; the
 * arithmetic is done in the unsigned type so that wrapping is defined.
 * Operands are restrict-qualified so that the compiler vectorises the
 * loops; callers never pass overlapping ranges.
 */
#include "mpi_lib.h"

/* Each loop is built for AVX-512, AVX2 and the baseline, the one the CPU
 * runs picked at load time (an ifunc): the plugin is built for the
 * baseline, and these loops are where the ring spends its own time. */
#define WIDE __attribute__((target_clones("avx512f", "avx2", "default")))

/* NAME: d = x op y, over three distinct ranges; NAME_acc: d = d op x. */
#define ARITH(T, U, NAME, EXPR)                                                                    \
  WIDE static void NAME(T *restrict d, const T *restrict x, const T *restrict y, uint64_t n) {     \
    for (uint64_t i = 0; i < n; i++) {                                                             \
      T u = x[i], v = y[i];                                                                        \
      d[i] = (EXPR);                                                                               \
    }                                                                                              \
  }                                                                                                \
  WIDE static void NAME##_acc(T *restrict d, const T *restrict x, const T *restrict unused,        \
                              uint64_t n) {                                                        \
    (void)unused;                                                                                  \
    for (uint64_t i = 0; i < n; i++) {                                                             \
      T u = d[i], v = x[i];                                                                        \
      d[i] = (EXPR);                                                                               \
    }                                                                                              \
  }

/* One family per dtype: name prefix, element type, its unsigned twin. */
#define REDUCERS(P, T, U)                                                                          \
  ARITH(T, U, P##_sum, (T)((U)u + (U)v))                                                           \
  ARITH(T, U, P##_prod, (T)((U)u * (U)v))                                                          \
  ARITH(T, U, P##_max, u > v ? u : v)                                                              \
  ARITH(T, U, P##_min, u < v ? u : v)
#define FLOAT_REDUCERS(P, T)                                                                       \
  ARITH(T, T, P##_sum, u + v)                                                                      \
  ARITH(T, T, P##_prod, u *v)                                                                      \
  ARITH(T, T, P##_max, u > v ? u : v)                                                              \
  ARITH(T, T, P##_min, u < v ? u : v)

FLOAT_REDUCERS(f32, float)
FLOAT_REDUCERS(f64, double)
REDUCERS(i32, int32_t, uint32_t)
REDUCERS(i64, int64_t, uint64_t)
REDUCERS(u8, uint8_t, uint8_t)

#define PICK(P, T)                                                                                 \
  do {                                                                                             \
    void (*f[8])(T *restrict, const T *restrict, const T *restrict, uint64_t) = {                  \
        P##_sum, P##_prod, P##_max, P##_min, P##_sum_acc, P##_prod_acc, P##_max_acc, P##_min_acc}; \
    f[y ? k : k + 4](d, x, y, n);                                                                  \
  } while (0)

/* y NULL: d = d op x (the accumulating form). */
bool mpi_reduce_local(void *d, const void *x, const void *y, uint64_t n, bp_dtype_t dt,
                      bp_comm_reduce_op_t op) {
  int k = op == BP_COMM_SUM || op == BP_COMM_AVG ? 0
          : op == BP_COMM_PROD                   ? 1
          : op == BP_COMM_MAX                    ? 2
          : op == BP_COMM_MIN                    ? 3
                                                 : -1;
  if (k < 0) return false;
  switch (dt) {
  case BP_F32:
    PICK(f32, float);
    return true;
  case BP_F64:
    PICK(f64, double);
    return true;
  case BP_I32:
    PICK(i32, int32_t);
    return true;
  case BP_I64:
    PICK(i64, int64_t);
    return true;
  case BP_U8:
    PICK(u8, uint8_t);
    return true;
  default:
    return false;
  }
}
