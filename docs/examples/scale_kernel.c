/* scale_kernel.c — the kernel custom_kernel.c loads: v[i] *= a. */
#include <plugin-api.h>

__attribute__((visibility("default"))) void scale(const bp_cpu_kernel_index_t *idx, float *v, float a, int32_t n) {
  for (uint32_t t = 0; t < idx->block_dim[0]; t++) {
    int64_t i = (int64_t)idx->block[0] * idx->block_dim[0] + t;
    if (i < n) v[i] *= a;
  }
}
