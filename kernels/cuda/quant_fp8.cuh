// quant_fp8.cuh — bp_qgemm_fp8, the fp8 GEMM of kernels/cuda/quant.cu
// (included there after the 8-bit GEMM, whose q_stage it shares; compiled
// as HIP with it through kernels/hip/quant.hip).

// ---- fp8 GEMM ------------------------------------------------------------------

// f32 to bf16 bits, round to nearest even (NaN kept quiet).
__device__ __forceinline__ uint16_t q_f32_to_bf16(float v) {
  const uint32_t u = bp_qcodec_f32_bits(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// (float)acc * sa * sb rounded once to c's dtype (f32, f16, bf16).
__device__ __forceinline__ void q_fp8_store(const bpk_qgemm_args_t &p, int64_t off, float acc,
                                            int64_t i, int64_t j) {
  const float sa = p.sa.ptr ? ((const float *)p.sa.ptr)[i * p.sa.stride] : 1.0f;
  const float sb = p.sb.ptr ? ((const float *)p.sb.ptr)[j * p.sb.stride] : 1.0f;
  const float v = __fmul_rn(__fmul_rn(acc, sa), sb);
  if (p.c.dtype == BPK_F32) ((float *)p.c.ptr)[off] = v;
  else if (p.c.dtype == BPK_F16) ((uint16_t *)p.c.ptr)[off] = bp_qcodec_f32_to_f16(v);
  else ((uint16_t *)p.c.ptr)[off] = q_f32_to_bf16(v);
}

// bp_qgemm_fp8: a and b fp8 (e4m3 / e5m2 by p.a.dtype, p.b.dtype; any
// mix). The codes are staged as the 8-bit kernel stages bytes (zero
// padding: +0 in both formats), each decoded exactly through a 256-entry
// table per format in shared memory, the products (exact in f32) summed
// in f32; a widening kernel, runs on every device the PTX does.
extern "C" __global__ void bp_qgemm_fp8(const bpk_qgemm_args_t p) {
  __shared__ int As[BPK_QGEMM_BK / 4][BPK_QGEMM_TILE];
  __shared__ int Bs[BPK_QGEMM_BK / 4][BPK_QGEMM_TILE];
  __shared__ float La[256], Lb[256];
  const int ma = p.a.dtype == BPK_FP8_E4M3 ? 3 : 2, mb = p.b.dtype == BPK_FP8_E4M3 ? 3 : 2;
  for (int e = threadIdx.x; e < 256; e += blockDim.x) {
    La[e] = bp_fp8_decode((uint8_t)e, ma);
    Lb[e] = bp_fp8_decode((uint8_t)e, mb);
  }
  __syncthreads();
  const int64_t M = p.c.shape[1], N = p.c.shape[2], K = p.a.shape[2];
  const int64_t m0 = (int64_t)blockIdx.y * BPK_QGEMM_TILE, n0 = (int64_t)blockIdx.x * BPK_QGEMM_TILE;
  const int tr = threadIdx.x / 16, tc = threadIdx.x % 16;
  for (int64_t z = blockIdx.z; z < p.c.shape[0]; z += gridDim.z) {
    const int8_t *A = (const int8_t *)p.a.ptr + z * p.a.strides[0];
    const int8_t *B = (const int8_t *)p.b.ptr + z * p.b.strides[0];
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
    for (int64_t k0 = 0; k0 < K; k0 += BPK_QGEMM_BK) {
      q_stage(As, A, p.a.strides[1], p.a.strides[2], m0, M, k0, K);
      q_stage(Bs, B, p.b.strides[2], p.b.strides[1], n0, N, k0, K);
      __syncthreads();
      for (int w = 0; w < BPK_QGEMM_BK / 4; w++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
          float a[4], b[4];
#pragma unroll
          for (int i = 0; i < 4; i++) {
            a[i] = La[((unsigned)As[w][tr + 16 * i] >> (8 * q)) & 255u];
            b[i] = Lb[((unsigned)Bs[w][tc + 16 * i] >> (8 * q)) & 255u];
          }
#pragma unroll
          for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) acc[i][j] = __fmaf_rn(a[i], b[j], acc[i][j]);
        }
      __syncthreads();
    }
    for (int i = 0; i < 4; i++) {
      const int64_t m = m0 + tr + 16 * i;
      if (m >= M) break;
      for (int j = 0; j < 4; j++) {
        const int64_t n = n0 + tc + 16 * j;
        if (n >= N) break;
        q_fp8_store(p, z * p.c.strides[0] + m * p.c.strides[1] + n * p.c.strides[2], acc[i][j], m,
                    n);
      }
    }
  }
}
