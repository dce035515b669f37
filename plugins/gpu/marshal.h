/*
 * plugins/gpu/marshal.h — ABI tensors into the kernels' parameter views
 * (kernels/cuda/bp_cuda_args.h), shared by backend-cuda.so and
 * backend-rocm.so, whose kernels read the same parameter blocks.
 *
 * Header-only (static inline): the shared ops_*.c of plugins/gpu use it
 * for both vendors.
 */
#ifndef BACKPLANE_GPU_MARSHAL_H
#define BACKPLANE_GPU_MARSHAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cuda/bp_cuda_args.h"
#include "plugin-api.h"

/* Element size of a dtype. */
static inline int bp_gpu_dtype_size(bp_dtype_t dt) {
  switch (dt) {
  case BP_F16:
  case BP_BF16:
    return 2;
  case BP_F64:
  case BP_I64:
    return 8;
  case BP_U8:
  case BP_I8:
  case BP_FP8_E4M3:
  case BP_FP8_E5M2:
    return 1;
  default:
    return 4;
  }
}

/* Which dtypes each op family runs natively on the CUDA and ROCm backends:
 * what their shared kernels implement (kernels/cuda, included by
 * kernels/hip), the same on every device that claims ops at all. */
static inline void bp_gpu_fill_capabilities(bp_device_info_t *info) {
  const uint32_t f = BP_DTYPES_FLOAT;
  const uint32_t half = BP_DTYPE_BIT(BP_F32) | BP_DTYPE_BIT(BP_F16) | BP_DTYPE_BIT(BP_BF16);
  const uint32_t all = BP_DTYPES_FLOAT | BP_DTYPES_INT;
  uint32_t *t = info->op_dtypes;
  t[BP_OP_GEMM] = f;
  t[BP_OP_GEMV] = f;
  t[BP_OP_CONV2D] = half;
  t[BP_OP_POOL2D] = f;
  t[BP_OP_BATCH_NORM] = f;
  t[BP_OP_LAYER_NORM] = f;
  t[BP_OP_RMS_NORM] = f;
  t[BP_OP_SOFTMAX] = f;
  t[BP_OP_ATTENTION] = half;
  t[BP_OP_ADAM] = f;
  t[BP_OP_UNARY] = f;
  t[BP_OP_BINARY] = f;
  t[BP_OP_REDUCE] = f;
  t[BP_OP_FILL] = all;
  t[BP_OP_COPY] = all;
  t[BP_OP_CAST] = all;
  t[BP_OP_RANDOM] = f;
  /* The GEMM kernels fuse the epilogue into their stores, the attention
   * kernel the masks into its score loop (kernels/cuda/gemm.cu,
   * attention.cu). */
  info->op_features[BP_OP_GEMM] = BP_FEATURE_GEMM_BIAS | BP_FEATURE_GEMM_ACT;
  info->op_features[BP_OP_ATTENTION] = BP_FEATURE_ATTENTION_KV_LENS | BP_FEATURE_ATTENTION_WINDOW |
                                       BP_FEATURE_ATTENTION_BIAS | BP_FEATURE_ATTENTION_ALIBI;
}

/* Copies an ABI tensor into a kernel view (ptr includes the offset). */
static inline void bp_gpu_tensor(const bp_plugin_tensor_t *t, bpk_tensor_t *out) {
  memset(out, 0, sizeof *out);
  out->ptr = t->ptr + t->offset;
  out->dtype = (int32_t)t->dtype;
  out->rank = t->rank;
  for (int i = 0; i < t->rank && i < BPK_MAX_RANK; i++) {
    out->shape[i] = t->shape[i];
    out->strides[i] = t->strides[i];
  }
}

/* Number of elements of a view. */
static inline int64_t bp_gpu_numel(const bpk_tensor_t *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

/* Gives every operand the output's shape, right-aligning a shorter operand
 * the NumPy way (missing leading axes broadcast). */
static inline void bp_gpu__align_to_output(bpk_tensor_t *ts, int count) {
  const int rank = ts[0].rank;
  for (int k = 1; k < count; k++) {
    bpk_tensor_t t = ts[k];
    int lead = rank - t.rank;
    for (int i = 0; i < rank; i++) {
      int src = i - lead;
      ts[k].strides[i] = src >= 0 && t.shape[src] != 1 ? t.strides[src] : 0;
      ts[k].shape[i] = ts[0].shape[i];
    }
    ts[k].rank = rank;
  }
}

/* Elementwise views: folds dimensions that are contiguous in every operand
 * (same stride ratio), so most launches index one flat dimension. ts[0] is
 * the output, whose shape all share; count <= 4. */
static inline void bp_gpu_coalesce(bpk_tensor_t *ts, int count) {
  /* count <= 4: the widest op (binary) has three operands. */
  bp_gpu__align_to_output(ts, count);
  int rank = ts[0].rank;
  int64_t shape[BPK_MAX_RANK];
  int64_t strides[4][BPK_MAX_RANK];
  int r = 0;
  for (int i = 0; i < rank; i++) {
    if (ts[0].shape[i] == 1) continue; /* size-1 axes index nothing */
    if (r > 0) {
      /* Compare with the last kept axis through a temporary view. */
      bool merge = true;
      for (int k = 0; k < count; k++)
        if (strides[k][r - 1] != ts[k].strides[i] * ts[0].shape[i]) merge = false;
      if (merge) {
        shape[r - 1] *= ts[0].shape[i];
        for (int k = 0; k < count; k++) strides[k][r - 1] = ts[k].strides[i];
        continue;
      }
    }
    shape[r] = ts[0].shape[i];
    for (int k = 0; k < count; k++) strides[k][r] = ts[k].strides[i];
    r++;
  }
  if (r == 0) { /* a single element, or rank 0 */
    shape[0] = bp_gpu_numel(&ts[0]);
    for (int k = 0; k < count; k++) strides[k][0] = 0;
    r = 1;
  }
  for (int k = 0; k < count; k++) {
    ts[k].rank = r;
    for (int i = 0; i < BPK_MAX_RANK; i++) {
      ts[k].shape[i] = i < r ? shape[i] : 0;
      ts[k].strides[i] = i < r ? strides[k][i] : 0;
    }
  }
}

/* Describes t's axis as rows x len: out gets t with that axis set to 1, and
 * *out_step the axis stride. */
static inline void bp_gpu_rows_view(const bp_plugin_tensor_t *t, int axis, bpk_tensor_t *out,
                                    int64_t *out_step) {
  bp_gpu_tensor(t, out);
  if (axis < 0) axis += t->rank;
  if (t->rank == 0 || axis < 0 || axis >= t->rank) {
    *out_step = 0;
    return;
  }
  *out_step = t->strides[axis];
  out->shape[axis] = 1;
  out->strides[axis] = 0;
}

/* A rank-1 (or absent, rank 0) tensor as a vector operand. */
static inline void bp_gpu_vec(const bp_plugin_tensor_t *t, bpk_vec_t *out) {
  memset(out, 0, sizeof *out);
  if (!t || t->rank == 0 || t->ptr == 0) return; /* absent */
  out->ptr = t->ptr + t->offset;
  out->stride = t->strides[t->rank - 1];
  out->dtype = (int32_t)t->dtype;
}

/* A conv2d's kernel arguments (kernels/cuda/conv.cu). */
static inline void bp_gpu_conv2d_args(const bp_conv2d_args_t *a, bpk_conv2d_args_t *p) {
  memset(p, 0, sizeof *p);
  bp_gpu_tensor(&a->x, &p->x);
  bp_gpu_tensor(&a->w, &p->w);
  bp_gpu_tensor(&a->y, &p->y);
  bp_gpu_vec(&a->bias, &p->bias);
  p->stride_h = a->stride_h;
  p->stride_w = a->stride_w;
  p->pad_h = a->pad_h;
  p->pad_w = a->pad_w;
  p->dilation_h = a->dilation_h;
  p->dilation_w = a->dilation_w;
  p->groups = a->groups > 0 ? a->groups : 1;
}

#endif /* BACKPLANE_GPU_MARSHAL_H */
