/*
 * fast/gemm/gemm_epilogue.c — the GEMM epilogue of ABI 1.5 on the "cpu"
 * device: the fast GEMM runs without it, then the bias is added and the
 * activation applied over C in place, within the same call, with the fast
 * elementwise kernels (threaded and vectorised) where they take the view
 * and a strided loop where they do not. The plugin claims
 * BP_FEATURE_GEMM_BIAS / _ACT, so the core sends one call instead of three.
 * Activations other than the usual ones are declined before any work, and
 * the reference runs the whole op. bf16 / f16 GEMMs on AMX do not come
 * here: their merge applies the epilogue (fast/gemm/gemm_amx.c).
 */
#include <math.h>

#include "gemm_epilogue.h"
#include "gemm.h"

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

static double sigmoid(double x) {
  return 1.0 / (1.0 + exp(-x));
}

/* The activations taken here, as the reference computes them. */
bool cpu_fast_gemm_act_known(int op) {
  return op == BP_UNARY_RELU || op == BP_UNARY_GELU || op == BP_UNARY_SILU ||
         op == BP_UNARY_SIGMOID || op == BP_UNARY_TANH;
}

double cpu_fast_gemm_act_value(int op, double x) {
  switch (op) {
  case BP_UNARY_RELU:
    return x > 0.0 ? x : (x != x ? x : 0.0);
  case BP_UNARY_GELU:
    return 0.5 * x * erfc(-x * M_SQRT1_2);
  case BP_UNARY_SILU:
    return x * sigmoid(x);
  case BP_UNARY_SIGMOID:
    return sigmoid(x);
  default:
    return tanh(x);
  }
}

/* c = act(c + bias) element by element, for views the vector kernels
 * decline; bias (NULL: none) has c's shape by strides. */
static void epilogue_loop(const bp_plugin_tensor_t *c, const bp_plugin_tensor_t *bias, int act) {
  void *pc = cpu_tensor_base(c);
  const void *pb = bias ? cpu_tensor_base(bias) : NULL;
  for (int64_t b = 0; b < c->shape[0]; b++)
    for (int64_t i = 0; i < c->shape[1]; i++)
      for (int64_t j = 0; j < c->shape[2]; j++) {
        int64_t off = b * c->strides[0] + i * c->strides[1] + j * c->strides[2];
        double v = cpu_load(pc, c->dtype, off);
        if (pb)
          v += cpu_load(pb, bias->dtype,
                        b * bias->strides[0] + i * bias->strides[1] + j * bias->strides[2]);
        cpu_store(pc, c->dtype, off, act >= 0 ? cpu_fast_gemm_act_value(act, v) : v);
      }
}

/* c += bias, then c = act(c). */
static bp_status_t apply_epilogue(cpu_device_t *dev, const bp_gemm_args_t *a) {
  int act = (a->flags & BP_GEMM_FLAG_ACTIVATION) ? a->activation : -1;
  bp_status_t st = BP_OK;
  if (a->bias.rank) {
    bp_binary_args_t b = {.struct_size = sizeof b, .op = BP_BINARY_ADD};
    b.a = b.y = a->c;
    b.b = a->bias;
    st = cpu_fast_binary(dev, &b);
    if (st == BP_ERR_UNIMPLEMENTED) {
      epilogue_loop(&a->c, &a->bias, act);
      return BP_OK;
    }
  }
  if (st == BP_OK && act >= 0) {
    bp_unary_args_t u = {.struct_size = sizeof u, .op = (bp_unary_op_t)act};
    u.x = u.y = a->c;
    st = cpu_fast_unary(dev, &u);
    if (st == BP_ERR_UNIMPLEMENTED) {
      epilogue_loop(&a->c, NULL, act);
      st = BP_OK;
    }
  }
  return st;
}

bp_status_t cpu_fast_gemm_epilogue(cpu_device_t *dev, const bp_gemm_args_t *a) {
  if ((a->flags & BP_GEMM_FLAG_ACTIVATION) && !cpu_fast_gemm_act_known(a->activation))
    return BP_ERR_UNIMPLEMENTED;
  /* a few rows: the skinny kernel applies the epilogue to each value
   * before writing it, once (fast/gemm/gemm_skinny_lowp.c) */
  if (a->alpha != 0 && cpu_fast_gemm_skinny_lowp_ok(dev, a))
    return cpu_fast_gemm_skinny_lowp(dev, a);
  if (a->alpha != 0 && cpu_fast_gemm_skinny_f32_ok(dev, a))
    return cpu_fast_gemm_skinny_f32(dev, a);
  if (a->bias.rank && a->bias.rank != 3) return BP_ERR_UNIMPLEMENTED;
  bp_gemm_args_t plain = *a;
  plain.flags &= ~BP_GEMM_FLAG_ACTIVATION;
  plain.activation = 0;
  plain.bias.rank = 0;
  bp_status_t st = cpu_fast_gemm(dev, &plain);
  if (st != BP_OK) return st;
  return apply_epilogue(dev, a);
}
