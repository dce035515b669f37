// random.hip — the kernels of kernels/cuda/random.cu, compiled as HIP through
// bp_hip_compat.h (one source for both backends).
#include "bp_hip_compat.h"
#include "random.cu"
