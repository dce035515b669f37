/*
 * test_vulkan.h — what test_vulkan.c shares with test_vulkan_ops.c: one
 * logical tensor on both devices, running a call on both, comparing.
 */
#ifndef BP_TEST_VULKAN_H
#define BP_TEST_VULKAN_H

#include "skip.h"
#include "tc.h"

extern bp_context_t *vt_ctx;
extern tc_env_t vt_vk, vt_ref;
extern bool vt_have_vk;

/* Starts a test. main() has already skipped or failed the whole suite when
 * there is no Vulkan device (test/skip.h); this guards a test run alone. */
#define VT_NEED()                                                              \
  do {                                                                         \
    if (!vt_have_vk)                                                           \
      TEST_SKIP_CASE("no Vulkan device");                                      \
    TC_BEGIN();                                                                \
  } while (0)

/* One logical tensor on both devices: [0] Vulkan, [1] cpu-ref. */
typedef struct vt_pair {
  tc_tensor_t t[2];
} vt_pair_t;

vt_pair_t vt_mk(bp_dtype_t dt, int rank, const int64_t *shape,
                tc_layout_t layout, const double *vals);
/* Random values in [lo, hi). */
vt_pair_t vt_rand(uint64_t seed, bp_dtype_t dt, int rank,
                  const int64_t *shape, tc_layout_t layout, double lo,
                  double hi);
void vt_free(vt_pair_t *p);
/* Compares the two devices' y; bit for bit when red < 0. */
void vt_check(vt_pair_t *y, bp_dtype_t dt, double red, const char *what);
/* The float dtypes both devices claim for op (f32 first). */
int vt_float_dtypes(bp_op_t op, bp_dtype_t *out);

/* Runs the statement on both devices: E is the env, I its index. */
#define VT_BOTH(stmt)                                                          \
  do {                                                                         \
    for (int I = 0; I < 2; I++) {                                              \
      tc_env_t *E = I ? &vt_ref : &vt_vk;                                      \
      bp_status_t st_ = (stmt);                                                \
      tc_expect_status(E, st_, BP_OK, "%s", #stmt);                            \
    }                                                                          \
  } while (0)

/* Tests defined in test_vulkan_ops.c. */
void vt_test_reduce(void **state);
void vt_test_softmax_norms(void **state);
void vt_test_attention(void **state);
void vt_test_dnn(void **state);
void vt_test_gemv_adam(void **state);
void vt_test_random(void **state);
void vt_test_streams_events(void **state);
void vt_test_kernels(void **state); /* test_vulkan_kernels.c */
void vt_test_graph(void **state);   /* test_vulkan_graph.c */
#define VT_MORE_TESTS                                                          \
  cmocka_unit_test(vt_test_reduce), cmocka_unit_test(vt_test_softmax_norms),   \
      cmocka_unit_test(vt_test_attention), cmocka_unit_test(vt_test_dnn),      \
      cmocka_unit_test(vt_test_gemv_adam), cmocka_unit_test(vt_test_random),   \
      cmocka_unit_test(vt_test_streams_events),                               \
      cmocka_unit_test(vt_test_kernels), cmocka_unit_test(vt_test_graph)

#endif /* BP_TEST_VULKAN_H */
