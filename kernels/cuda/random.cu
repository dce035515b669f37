// random.cu — bp_random: the Philox 4x32-10 stream of docs/ops.md, bit for
// bit. All the arithmetic lives in kernels/common/bp_philox.h, shared with
// every backend; under nvcc it uses __fmul_rn / __fadd_rn, which the
// compiler never contracts into FMAs, so the numbers match the CPU's.
#include "bp_cuda_common.cuh"

#include "../common/bp_philox.h"

enum { DIST_UNIFORM = 0, DIST_NORMAL = 1 };

extern "C" __global__ void bp_random(const bpk_random_args_t p) {
  const float fa = (float)p.a, fb = (float)p.b;
  BPK_FOR_EACH(i, p.n) {
    // i is the row-major index over y's logical shape: the stream position.
    const bp_philox_u32x4 r = bp_philox_element(p.seed, p.offset, (uint64_t)i);
    const int64_t off = bpk_offset(p.y, i);
    if (p.y.dtype == BPK_F64) {
      const double v = p.dist == DIST_NORMAL ? bp_philox_normal_f64(r, p.a, p.b)
                                             : bp_philox_uniform_f64(r, p.a, p.b);
      ((double *)p.y.ptr)[off] = v;
    } else if (p.dist != DIST_NORMAL && (p.y.dtype == BPK_F16 || p.y.dtype == BPK_BF16)) {
      // rounded by the header, kept below b there: stored as bits
      ((uint16_t *)p.y.ptr)[off] = (uint16_t)bp_philox_uniform_16(r, fa, fb, p.y.dtype == BPK_BF16);
    } else {
      const float v = p.dist == DIST_NORMAL ? bp_philox_normal_f32(r, fa, fb)
                                            : bp_philox_uniform_f32(r, fa, fb);
      bpk_st(p.y.ptr, p.y.dtype, off, v); // f16 / bf16: round to nearest even
    }
  }
}
