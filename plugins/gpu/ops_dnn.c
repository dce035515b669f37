/*
 * plugins/gpu/ops_dnn.c — conv2d, pool2d, batch norm, layer and RMS norm,
 * softmax, attention and Adam of the CUDA and ROCm backends: marshalling
 * into kernels/cuda/conv.cu, norm.cu, reduce.cu, attention.cu and adam.cu.
 */
#include <math.h>
#include <string.h>

#include "plugins/gpu/gpu.h"

#define GRID_YZ_MAX 65535
static bp_status_t too_big(const char *op, const char *what, int64_t v) {
  gpu_host->set_error(GPU_PLUGIN_NAME ": %s: %s = %lld exceeds the launch grid", op, what,
                      (long long)v);
  return BP_ERR_UNSUPPORTED;
}

bp_status_t gpu_op_conv2d(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_conv2d_args_t *a) {
  bool taken = false;
  bp_status_t st = gpu_conv2d_as_gemm(device, stream, a, &taken);
  if (taken) return st;
  bpk_conv2d_args_t p;
  bp_gpu_conv2d_args(a, &p);
  const int64_t pixels = p.y.shape[0] * p.y.shape[2] * p.y.shape[3];
  const int64_t kg = p.y.shape[1] / p.groups;
  if (pixels == 0 || kg == 0) return BP_OK;
  const int64_t tiles_n = (kg + BPK_CONV_TILE_N - 1) / BPK_CONV_TILE_N;
  const int64_t tiles_m = (pixels + BPK_CONV_TILE_M - 1) / BPK_CONV_TILE_M;
  if (tiles_n > GRID_YZ_MAX) return too_big("conv2d", "output channels per group", kg);
  if (p.groups > GRID_YZ_MAX) return too_big("conv2d", "groups", p.groups);
  if (tiles_m > 0x7fffffffLL) return too_big("conv2d", "output pixels", pixels);
  /* With an empty reduction (C/groups * R * S == 0) the kernel still runs:
   * y = bias (or 0). */
  unsigned grid[3] = {(unsigned)tiles_m, (unsigned)tiles_n, (unsigned)p.groups};
  unsigned block[3] = {BPK_CONV_THREADS, 1, 1};
  return gpu_launch(gpu_dev(device), stream, BP_GPU_MOD_CONV, "bp_conv2d_f", grid, block, 0, &p);
}

bp_status_t gpu_op_pool2d(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                          const bp_pool2d_args_t *a) {
  bpk_pool2d_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_tensor(&a->x, &p.x);
  bp_gpu_tensor(&a->y, &p.y);
  p.n = bp_gpu_numel(&p.y);
  p.kind = (int32_t)a->kind;
  p.kernel_h = a->kernel_h;
  p.kernel_w = a->kernel_w;
  p.stride_h = a->stride_h;
  p.stride_w = a->stride_w;
  p.pad_h = a->pad_h;
  p.pad_w = a->pad_w;
  p.count_include_pad = a->count_include_pad;
  return gpu_launch_flat(device, stream, BP_GPU_MOD_NORM,
                         a->y.dtype == BP_F64 ? "bp_pool2d_d" : "bp_pool2d_f", p.n, &p);
}

bp_status_t gpu_op_batch_norm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              const bp_batch_norm_args_t *a) {
  bpk_batch_norm_args_t p;
  memset(&p, 0, sizeof p);
  /* Not coalesced: the kernel reads the channel off axis 1 of y's shape. */
  bp_gpu_tensor(&a->x, &p.x);
  bp_gpu_tensor(&a->y, &p.y);
  bp_gpu_vec(&a->mean, &p.mean);
  bp_gpu_vec(&a->var, &p.var);
  bp_gpu_vec(&a->scale, &p.scale);
  bp_gpu_vec(&a->bias, &p.bias);
  p.n = bp_gpu_numel(&p.y);
  p.eps = a->eps;
  return gpu_launch_flat(device, stream, BP_GPU_MOD_NORM,
                         a->y.dtype == BP_F64 ? "bp_batch_norm_d" : "bp_batch_norm_f", p.n, &p);
}

#if defined(BP_GPU_CUDA)
/* The tensor-core kernel's layout: the last dim contiguous and every row
 * 16-byte aligned (its cp.async loads and 4-byte stores). */
static bool mma_layout(const bpk_tensor_t *t) {
  return t->strides[3] == 1 && t->ptr % 16 == 0 && t->strides[0] % 8 == 0 &&
         t->strides[1] % 8 == 0 && t->strides[2] % 8 == 0;
}
#endif

/* bp_attention_mma_{h,bf}{64,128} (CUDA): f16 or bf16 everywhere, D = Dv =
 * 64 or 128, none of the masks of ABI 1.5, views in mma_layout. Everything
 * else, HIP, and BACKPLANE_CUDA_ATTENTION=fma run bp_attention_f. */
static const char *attention_mma_kernel(const bpk_attention_args_t *p) {
#if defined(BP_GPU_CUDA)
  const char *env = gpu_env("BACKPLANE_CUDA_ATTENTION");
  if (env && strcmp(env, "fma") == 0) return NULL;
  const int32_t dt = p->q.dtype;
  if (dt != BPK_F16 && dt != BPK_BF16) return NULL;
  if (p->k.dtype != dt || p->v.dtype != dt || p->out.dtype != dt) return NULL;
  const int64_t D = p->q.shape[3];
  if ((D != 64 && D != 128) || p->k.shape[3] != D || p->v.shape[3] != D) return NULL;
  if (p->bias.ptr || p->kv_lens.ptr || p->alibi_slopes.ptr || p->window || p->alibi_heads)
    return NULL;
  if (!mma_layout(&p->q) || !mma_layout(&p->k) || !mma_layout(&p->v) || !mma_layout(&p->out))
    return NULL;
  if (dt == BPK_F16) return D == 64 ? "bp_attention_mma_h64" : "bp_attention_mma_h128";
  return D == 64 ? "bp_attention_mma_bf64" : "bp_attention_mma_bf128";
#else
  (void)p;
  return NULL;
#endif
}

bp_status_t gpu_op_attention(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                             const bp_attention_args_t *a) {
  bpk_attention_args_t p;
  memset(&p, 0, sizeof p);
  bp_gpu_tensor(&a->q, &p.q);
  bp_gpu_tensor(&a->k, &p.k);
  bp_gpu_tensor(&a->v, &p.v);
  bp_gpu_tensor(&a->out, &p.out);
  p.scale = (float)a->scale;
  p.causal = a->causal != 0;
  /* the masks of ABI 1.5 (rank 0: absent) */
  if (a->bias.rank) bp_gpu_tensor(&a->bias, &p.bias);
  bp_gpu_vec(&a->kv_lens, &p.kv_lens);
  bp_gpu_vec(&a->alibi_slopes, &p.alibi_slopes);
  p.window = a->window > 0 ? a->window : 0;
  p.alibi_heads = a->alibi_heads > 0 ? a->alibi_heads : 0;
  p.alibi_head_offset = a->alibi_head_offset;
  const int64_t B = p.q.shape[0], Hq = p.q.shape[1], Sq = p.q.shape[2];
  const int64_t D = p.q.shape[3], Dv = p.v.shape[3];
  if (B == 0 || Hq == 0 || Sq == 0 || Dv == 0) return BP_OK;
  if (D > BPK_ATTN_MAX_DIM || Dv > BPK_ATTN_MAX_DIM) {
    gpu_host->set_error(GPU_PLUGIN_NAME ": attention: head dims %lld / %lld; this "
                                        "kernel handles at most %d",
                        (long long)D, (long long)Dv, BPK_ATTN_MAX_DIM);
    return BP_ERR_UNSUPPORTED;
  }
  if (B * Hq > GRID_YZ_MAX) return too_big("attention", "batch * heads", B * Hq);
  const char *mma = attention_mma_kernel(&p);
  if (mma) {
    unsigned grid[3] = {(unsigned)((Sq + BPK_ATTN_MMA_ROWS - 1) / BPK_ATTN_MMA_ROWS),
                        (unsigned)(B * Hq), 1};
    unsigned block[3] = {BPK_ATTN_MMA_THREADS, 1, 1};
    return gpu_launch(gpu_dev(device), stream, BP_GPU_MOD_ATTENTION, mma, grid, block,
                      BPK_ATTN_MMA_SMEM((unsigned)D), &p);
  }
  unsigned grid[3] = {(unsigned)((Sq + BPK_ATTN_ROWS - 1) / BPK_ATTN_ROWS), (unsigned)(B * Hq), 1};
  unsigned block[3] = {BPK_ATTN_THREADS, 1, 1};
  return gpu_launch(gpu_dev(device), stream, BP_GPU_MOD_ATTENTION, "bp_attention_f", grid, block,
                    BPK_ATTN_SMEM((unsigned)D, (unsigned)Dv), &p);
}

bp_status_t gpu_op_adam(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_adam_args_t *a) {
  bpk_adam_args_t p;
  memset(&p, 0, sizeof p);
  p.lr = a->lr;
  p.beta1 = a->beta1;
  p.beta2 = a->beta2;
  p.eps = a->eps;
  p.weight_decay = a->weight_decay;
  p.adamw = a->adamw != 0;
  p.bias_correction1 = 1.0 - pow(a->beta1, (double)a->step);
  p.bias_correction2 = 1.0 - pow(a->beta2, (double)a->step);
  /* One launch per tensor, all on the same stream, so they stay ordered
   * after the work that produced the gradients. */
  for (uint32_t i = 0; i < a->count; i++) {
    bpk_tensor_t ts[4];
    bp_gpu_tensor(&a->params[i], &ts[0]);
    bp_gpu_tensor(&a->grads[i], &ts[1]);
    bp_gpu_tensor(&a->exp_avg[i], &ts[2]);
    bp_gpu_tensor(&a->exp_avg_sq[i], &ts[3]);
    bp_gpu_coalesce(ts, 4);
    p.p = ts[0];
    p.g = ts[1];
    p.m = ts[2];
    p.v = ts[3];
    p.n = bp_gpu_numel(&p.p);
    bp_status_t st =
        gpu_launch_flat(device, stream, BP_GPU_MOD_ADAM,
                        a->params[i].dtype == BP_F64 ? "bp_adam_d" : "bp_adam_f", p.n, &p);
    if (st != BP_OK) return st;
  }
  return BP_OK;
}

/* ---- by rows: softmax, layer and RMS norm (views of ops_reduce.c) ------- */

bp_status_t gpu_op_softmax(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                           const bp_softmax_args_t *a) {
  bpk_softmax_args_t p;
  memset(&p, 0, sizeof p);
  gpu_rows_of(&a->x, &a->y, a->axis, &p.r);
  p.log = a->log != 0;
  return gpu_launch_rows(device, stream, BP_GPU_MOD_REDUCE,
                         a->y.dtype == BP_F64 ? "bp_softmax_d" : "bp_softmax_f", p.r.rows, &p);
}

static bp_status_t norm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                        const bp_norm_args_t *a, bool rms) {
  bpk_norm_args_t p;
  memset(&p, 0, sizeof p);
  gpu_rows_of(&a->x, &a->y, a->x.rank - 1, &p.r);
  bp_gpu_vec(&a->gamma, &p.gamma);
  if (!rms) bp_gpu_vec(&a->beta, &p.beta);
  p.eps = a->eps;
  p.rms = rms;
  return gpu_launch_rows(device, stream, BP_GPU_MOD_NORM,
                         a->y.dtype == BP_F64 ? "bp_norm_d" : "bp_norm_f", p.r.rows, &p);
}

bp_status_t gpu_op_layer_norm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              const bp_norm_args_t *a) {
  return norm(device, stream, a, false);
}

bp_status_t gpu_op_rms_norm(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                            const bp_norm_args_t *a) {
  return norm(device, stream, a, true);
}
