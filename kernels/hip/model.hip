// model.hip — the kernels of kernels/cuda/model.cu, compiled as HIP through
// bp_hip_compat.h (one source for both backends).
#include "bp_hip_compat.h"
#include "model.cu"
