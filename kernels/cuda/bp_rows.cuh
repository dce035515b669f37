// bp_rows.cuh — the block-per-row form of softmax and layer / RMS norm:
// one block per row stages the row in shared memory (dynamic, len
// elements of the compute type), so global memory sees one coalesced read
// and one write per element and the further passes read shared memory.
// Short rows (where a warp per row re-reads from L1 and a block would sit
// mostly idle) and rows past BPK_ROW_SMEM bytes take the kernels' warp per
// row loops. The host (gpu_launch_row_blocks, plugins/gpu/ops_reduce.c)
// makes the same choice from the same numbers, to size the launch; both
// loops grid-stride, so either is correct for any grid.
#pragma once
#include "bp_cuda_common.cuh"
#include "bp_rows_args.h"

extern __shared__ __align__(16) unsigned char bpk_row_smem[];

template <typename T> __device__ __forceinline__ bool bpk_row_in_block(int64_t len) {
  return len >= BPK_ROW_BLOCK_MIN && len * (int64_t)sizeof(T) <= BPK_ROW_SMEM;
}

// The warps' partial results meet in sh (one slot per warp; blockDim.x a
// multiple of 32, at most 1024). Every thread returns the same value: each
// warp combines the slots in the same order. The first barrier keeps a
// reduction from overwriting slots a previous one is still reading, and
// orders the row's shared-memory writes before any later pass reads them.
template <typename T> __device__ __forceinline__ T bpk_block_sum(T v, T *sh) {
  const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  v = bpk_warp_sum(v);
  __syncthreads();
  if (lane == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  return bpk_warp_sum(lane < nw ? sh[lane] : (T)0);
}

// NaN-propagating; id is the identity (-inf, or 0 for magnitudes).
template <typename T> __device__ __forceinline__ T bpk_block_max(T v, T id, T *sh) {
  const int lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  v = bpk_warp_max(v);
  __syncthreads();
  if (lane == 0) sh[threadIdx.x >> 5] = v;
  __syncthreads();
  return bpk_warp_max(lane < nw ? sh[lane] : id);
}
