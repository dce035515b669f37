// adam.cu — one fused Adam / AdamW step over a parameter tensor, with
// PyTorch's formula (torch.optim.Adam / AdamW, non-amsgrad, non-foreach):
//   g  = grad (+ weight_decay * param for Adam)
//   param *= 1 - lr * weight_decay                  (AdamW)
//   m  = beta1 * m + (1 - beta1) * g
//   v  = beta2 * v + (1 - beta2) * g * g
//   param -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
// bc1 = 1 - beta1^step and bc2 = 1 - beta2^step come from the host.
#include "bp_cuda_common.cuh"

template <typename T> __device__ void adam(const bpk_adam_args_t &a) {
  const T lr = (T)a.lr, b1 = (T)a.beta1, b2 = (T)a.beta2, eps = (T)a.eps;
  const T wd = (T)a.weight_decay;
  const T step_size = lr / (T)a.bias_correction1;
  const T bc2_sqrt = sqrt((T)a.bias_correction2);
  BPK_FOR_EACH(i, a.n) {
    const int64_t po = bpk_offset(a.p, i), go = bpk_offset(a.g, i);
    const int64_t mo = bpk_offset(a.m, i), vo = bpk_offset(a.v, i);
    T p = bpk_ld<T>(a.p.ptr, a.p.dtype, po);
    T g = bpk_ld<T>(a.g.ptr, a.g.dtype, go);
    T m = bpk_ld<T>(a.m.ptr, a.m.dtype, mo);
    T v = bpk_ld<T>(a.v.ptr, a.v.dtype, vo);
    if (a.adamw) p *= (T)1 - lr * wd;
    else if (wd != (T)0) g += wd * p;
    m = b1 * m + ((T)1 - b1) * g;
    v = b2 * v + ((T)1 - b2) * g * g;
    p -= step_size * m / (sqrt(v) / bc2_sqrt + eps);
    bpk_st(a.p.ptr, a.p.dtype, po, p);
    bpk_st(a.m.ptr, a.m.dtype, mo, m);
    bpk_st(a.v.ptr, a.v.dtype, vo, v);
  }
}

extern "C" __global__ void bp_adam_f(const bpk_adam_args_t a) { adam<float>(a); }
extern "C" __global__ void bp_adam_d(const bpk_adam_args_t a) { adam<double>(a); }
