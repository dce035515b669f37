/*
 * test_vulkan_kernels.c — custom kernels on the Vulkan backend: a GLSL
 * saxpy compiled at run time through libshaderc and a SPIR-V saxpy compiled
 * by glslc at build time (test/fixtures/saxpy.comp), both checked against
 * the host, plus the launch checks (block vs the shader's local size).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_vulkan.h"

#ifdef VT_HAVE_SAXPY_SPV
static const uint32_t saxpy_spv[] = {
#include "saxpy_spv.inc"
};
#endif

/* The convention of docs/backend-vulkan.md: a push-constant block holding
 * the arguments in signature order; a fixed local size of 64. */
static const char saxpy_glsl[] =
    "#version 460\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(buffer_reference, std430, buffer_reference_align = 4) buffer "
    "Floats { float v[]; };\n"
    "layout(push_constant) uniform Args { Floats y; Floats x; float a; "
    "int n; };\n"
    "void main() {\n"
    "  int i = int(gl_GlobalInvocationID.x);\n"
    "  if (i < n) y.v[i] = SCALE * a * x.v[i] + y.v[i];\n"
    "}\n";

enum { N = 1000 };

/* Runs y = scale * a * x + y over N floats (y at a 16-byte offset) with
 * block threads per group, and checks it on the host. */
static void run_saxpy(bp_kernel_t *k, uint32_t block, float scale,
                      const char *what) {
  bp_buffer_t *x = NULL, *y = NULL;
  assert_int_equal(bp_buffer_alloc(vt_vk.dev, N * 4, &x), BP_OK);
  assert_int_equal(bp_buffer_alloc(vt_vk.dev, N * 4 + 16, &y), BP_OK);
  float hx[N], hy[N], out[N];
  for (int i = 0; i < N; i++) {
    hx[i] = (float)i * 0.5f;
    hy[i] = 1.0f - (float)i;
  }
  assert_int_equal(bp_buffer_write(x, 0, hx, sizeof hx), BP_OK);
  assert_int_equal(bp_buffer_write(y, 16, hy, sizeof hy), BP_OK);
  bp_kernel_arg_t args[4] = {
      {.kind = BP_ARG_BUFFER, .buffer = y, .offset = 16},
      {.kind = BP_ARG_BUFFER, .buffer = x},
      {.kind = BP_ARG_F32, .value.f32 = 3.0f},
      {.kind = BP_ARG_I32, .value.i32 = N}};
  uint32_t grid[3] = {(N + block - 1) / block, 1, 1}, blk[3] = {block, 1, 1};
  tc_expect_status(&vt_vk, bp_kernel_launch(vt_vk.s, k, grid, blk, 0, 4, args),
                   BP_OK, "%s launch", what);
  assert_int_equal(bp_buffer_read(y, 16, out, sizeof out), BP_OK);
  for (int i = 0; i < N; i++) {
    float want = scale * 3.0f * hx[i] + hy[i];
    if (fabsf(out[i] - want) > 1e-5f * (1 + fabsf(want))) {
      tc_expect_status(&vt_vk, BP_ERR_INTERNAL, BP_OK, "%s: y[%d] = %g, want %g",
                       what, i, (double)out[i], (double)want);
      break;
    }
  }
  bp_buffer_free(x);
  bp_buffer_free(y);
}

static const bp_kernel_arg_kind_t sig[4] = {BP_ARG_BUFFER, BP_ARG_BUFFER,
                                            BP_ARG_F32, BP_ARG_I32};

void vt_test_kernels(void **state) {
  (void)state;
  VT_NEED();
  bp_device_entry_t e;
  assert_int_equal(bp_device_entry(vt_vk.dev, &e), BP_OK);
  assert_true(e.info.kernel_formats & BP_KERNEL_FORMAT_BIT(BP_KERNEL_SPIRV));
  bp_kernel_t *k = NULL;
  bp_status_t st = bp_kernel_create(vt_vk.dev, BP_KERNEL_GLSL, saxpy_glsl,
                                    strlen(saxpy_glsl), "main", "-DSCALE=2.0",
                                    4, sig, &k);
  if (st == BP_ERR_UNAVAILABLE) {
    print_message("SKIP: GLSL custom kernels: %s\n", bp_last_error());
  } else {
    tc_expect_status(&vt_vk, st, BP_OK, "GLSL create: %s", bp_last_error());
    if (st == BP_OK) {
      run_saxpy(k, 64, 2.0f, "GLSL saxpy");
      /* block must be the shader's local size (64) */
      uint32_t grid[3] = {1, 1, 1}, blk[3] = {128, 1, 1};
      bp_buffer_t *b = NULL;
      assert_int_equal(bp_buffer_alloc(vt_vk.dev, 64, &b), BP_OK);
      bp_kernel_arg_t a2[4] = {{.kind = BP_ARG_BUFFER, .buffer = b},
                               {.kind = BP_ARG_BUFFER, .buffer = b},
                               {.kind = BP_ARG_F32, .value.f32 = 1},
                               {.kind = BP_ARG_I32, .value.i32 = 0}};
      tc_expect_status(&vt_vk,
                       bp_kernel_launch(vt_vk.s, k, grid, blk, 0, 4, a2),
                       BP_ERR_INVALID_ARGUMENT, "block 128 vs local size 64");
      bp_buffer_free(b);
      bp_kernel_destroy(k);
    }
    /* a compile error is an invalid argument with the compiler's message */
    const char *bad = "#version 460\nvoid main() { nope(); }\n";
    k = NULL;
    tc_expect_status(&vt_vk,
                     bp_kernel_create(vt_vk.dev, BP_KERNEL_GLSL, bad,
                                      strlen(bad), "main", NULL, 0, NULL, &k),
                     BP_ERR_INVALID_ARGUMENT, "GLSL with an error");
    assert_null(k);
  }
#ifdef VT_HAVE_SAXPY_SPV
  k = NULL;
  st = bp_kernel_create(vt_vk.dev, BP_KERNEL_SPIRV, saxpy_spv,
                        sizeof saxpy_spv, "main", NULL, 4, sig, &k);
  tc_expect_status(&vt_vk, st, BP_OK, "SPIR-V create: %s", bp_last_error());
  if (st == BP_OK) {
    /* local size from a specialization constant: any block works */
    run_saxpy(k, 64, 1.0f, "SPIR-V saxpy block 64");
    run_saxpy(k, 256, 1.0f, "SPIR-V saxpy block 256");
    bp_kernel_destroy(k);
  }
  k = NULL;
  tc_expect_status(&vt_vk,
                   bp_kernel_create(vt_vk.dev, BP_KERNEL_SPIRV, saxpy_spv,
                                    sizeof saxpy_spv, "nope", NULL, 4, sig,
                                    &k),
                   BP_ERR_INVALID_ARGUMENT, "SPIR-V without that entry");
#else
  print_message("SKIP: SPIR-V custom kernel: built without glslc\n");
#endif
  static const uint32_t junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  k = NULL;
  tc_expect_status(&vt_vk,
                   bp_kernel_create(vt_vk.dev, BP_KERNEL_SPIRV, junk,
                                    sizeof junk, "main", NULL, 0, NULL, &k),
                   BP_ERR_INVALID_ARGUMENT, "not SPIR-V");
  TC_END();
}
