/*
 * ref/ref_elementwise.c — scalar reference unary and binary ops, binary
 * with a scalar operand, and gated linear units.
 *
 * One task per element of y, in row-major order; inputs broadcast by
 * stride 0. Each value is computed in double from libm and rounded once to
 * y's dtype, so add, sub, mul, div and sqrt are correctly rounded for f32,
 * f16 and bf16 (double has more than 2p + 2 bits for each of them).
 */
#include <math.h>

#include "ref.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/model_args.h"
#include "plugins/cpu/tensor.h"

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* 0.5 x (1 + tanh u) as x sigmoid(2u): the same function, without the
 * cancellation of 1 + tanh u on the negative side. */
static double gelu_tanh(double x) {
  double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  return x * sigmoid(2.0 * u);
}

/* NaN-propagating max / min (fmax would drop the NaN). */
static double max_nan(double a, double b) {
  return (a != a || b != b) ? a + b : (a > b ? a : b);
}
static double min_nan(double a, double b) {
  return (a != a || b != b) ? a + b : (a < b ? a : b);
}

static double apply_unary(bp_unary_op_t op, double x) {
  switch (op) {
  case BP_UNARY_NEG:
    return -x;
  case BP_UNARY_ABS:
    return fabs(x);
  case BP_UNARY_EXP:
    return exp(x);
  case BP_UNARY_LOG:
    return log(x);
  case BP_UNARY_SQRT:
    return sqrt(x);
  case BP_UNARY_RSQRT:
    return 1.0 / sqrt(x);
  case BP_UNARY_RELU:
    return x > 0.0 ? x : (x != x ? x : 0.0);
  case BP_UNARY_GELU:
    /* 1 + erf(x / sqrt 2) as erfc(-x / sqrt 2): the same value, without
     * the cancellation that leaves 0 below x = -8 */
    return 0.5 * x * erfc(-x * M_SQRT1_2);
  case BP_UNARY_SILU:
    return x * sigmoid(x);
  case BP_UNARY_SIGMOID:
    return sigmoid(x);
  case BP_UNARY_TANH:
    return tanh(x);
  case BP_UNARY_SIN:
    return sin(x);
  case BP_UNARY_COS:
    return cos(x);
  case BP_UNARY_GELU_TANH:
    return gelu_tanh(x);
  default:
    return NAN;
  }
}

static double apply_binary(bp_binary_op_t op, double a, double b) {
  switch (op) {
  case BP_BINARY_ADD:
    return a + b;
  case BP_BINARY_SUB:
    return a - b;
  case BP_BINARY_MUL:
    return a * b;
  case BP_BINARY_DIV:
    return a / b;
  case BP_BINARY_MAX:
    return max_nan(a, b);
  case BP_BINARY_MIN:
    return min_nan(a, b);
  case BP_BINARY_POW:
    return pow(a, b);
  default:
    return NAN;
  }
}

/* ---- unary --------------------------------------------------------------*/

int64_t cpu_ref_unary_tasks(const bp_unary_args_t *a) {
  if ((unsigned)a->op >= BP_UNARY_COUNT)
    return BP_ERR_INVALID_ARGUMENT;
  return cpu_numel(&a->y);
}

int64_t cpu_ref_unary_grain(const bp_unary_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN;
}

bp_status_t cpu_ref_unary_range(const bp_unary_args_t *a, int64_t begin,
                                int64_t end) {
  const bp_plugin_tensor_t *ts[2] = {&a->x, &a->y};
  const void *px = cpu_tensor_base(&a->x);
  void *py = cpu_tensor_base(&a->y);
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 2, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it)) {
    double x = cpu_load(px, a->x.dtype, it.off[0]);
    cpu_store(py, a->y.dtype, it.off[1], apply_unary(a->op, x));
  }
  return BP_OK;
}

/* ---- binary -------------------------------------------------------------*/

int64_t cpu_ref_binary_tasks(const bp_binary_args_t *a) {
  if ((unsigned)a->op >= BP_BINARY_COUNT)
    return BP_ERR_INVALID_ARGUMENT;
  return cpu_numel(&a->y);
}

int64_t cpu_ref_binary_grain(const bp_binary_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN;
}

bp_status_t cpu_ref_binary_range(const bp_binary_args_t *a, int64_t begin,
                                 int64_t end) {
  const bp_plugin_tensor_t *ts[3] = {&a->a, &a->b, &a->y};
  const void *pa = cpu_tensor_base(&a->a), *pb = cpu_tensor_base(&a->b);
  void *py = cpu_tensor_base(&a->y);
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 3, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it)) {
    double x = cpu_load(pa, a->a.dtype, it.off[0]);
    double y = cpu_load(pb, a->b.dtype, it.off[1]);
    cpu_store(py, a->y.dtype, it.off[2], apply_binary(a->op, x, y));
  }
  return BP_OK;
}

/* ---- binary with a scalar -----------------------------------------------*/

int64_t cpu_ref_binary_scalar_tasks(const bp_binary_scalar_args_t *a) {
  if ((unsigned)a->op >= BP_BINARY_COUNT)
    return BP_ERR_INVALID_ARGUMENT;
  return cpu_numel(&a->y);
}

int64_t cpu_ref_binary_scalar_grain(const bp_binary_scalar_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN;
}

bp_status_t cpu_ref_binary_scalar_range(const bp_binary_scalar_args_t *a,
                                        int64_t begin, int64_t end) {
  const bp_plugin_tensor_t *ts[2] = {&a->a, &a->y};
  const void *pa = cpu_tensor_base(&a->a);
  void *py = cpu_tensor_base(&a->y);
  double s = cpu_scalar_as(a->a.dtype, a->scalar);
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 2, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it)) {
    double x = cpu_load(pa, a->a.dtype, it.off[0]);
    double v = a->scalar_first ? apply_binary(a->op, s, x)
                               : apply_binary(a->op, x, s);
    cpu_store(py, a->y.dtype, it.off[1], v);
  }
  return BP_OK;
}

/* ---- gated linear units -------------------------------------------------*/

static double glu_act(bp_glu_kind_t kind, double g) {
  switch (kind) {
  case BP_GLU_SWIGLU:
    return apply_unary(BP_UNARY_SILU, g);
  case BP_GLU_GEGLU:
    return apply_unary(BP_UNARY_GELU, g);
  case BP_GLU_GEGLU_TANH:
    return gelu_tanh(g);
  case BP_GLU_REGLU:
    return apply_unary(BP_UNARY_RELU, g);
  default:
    return NAN;
  }
}

int64_t cpu_ref_glu_tasks(const bp_glu_args_t *a) {
  if ((unsigned)a->kind >= BP_GLU_COUNT)
    return BP_ERR_INVALID_ARGUMENT;
  return cpu_numel(&a->y);
}

int64_t cpu_ref_glu_grain(const bp_glu_args_t *a) {
  (void)a;
  return CPU_REF_ELEMENT_GRAIN;
}

bp_status_t cpu_ref_glu_range(const bp_glu_args_t *a, int64_t begin,
                              int64_t end) {
  const bp_plugin_tensor_t *ts[3] = {&a->gate, &a->up, &a->y};
  const void *pg = cpu_tensor_base(&a->gate), *pu = cpu_tensor_base(&a->up);
  void *py = cpu_tensor_base(&a->y);
  cpu_iter_t it;
  cpu_iter_init(&it, a->y.rank, a->y.shape, 3, ts, begin);
  for (int64_t i = begin; i < end; i++, cpu_iter_next(&it)) {
    double g = cpu_load(pg, a->gate.dtype, it.off[0]);
    double u = cpu_load(pu, a->up.dtype, it.off[1]);
    cpu_store(py, a->y.dtype, it.off[2], glu_act(a->kind, g) * u);
  }
  return BP_OK;
}
