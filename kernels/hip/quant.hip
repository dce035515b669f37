// quant.hip — the kernels of kernels/cuda/quant.cu, compiled as HIP through
// bp_hip_compat.h (one source for both backends; the int8 dot product is
// plain byte products there, see q_dp4a).
#include "bp_hip_compat.h"
#include "quant.cu"
