/* custom_kernel.c — load a C function from a shared object as a CPU kernel
 * and launch it over a grid. usage: custom_kernel PATH/libscale.so */
#include <backplane.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_kernel_t *k;
  bp_buffer_t *buf;
  const bp_kernel_arg_kind_t sig[3] = {BP_ARG_BUFFER, BP_ARG_F32, BP_ARG_I32};
  if (bp_context_create(NULL, &ctx) || bp_device_open(ctx, "cpu", NULL, &dev) || bp_stream_create(dev, &s) ||
      bp_kernel_create(dev, BP_KERNEL_C_SHARED_OBJECT, argv[1], strlen(argv[1]), "scale", NULL, 3, sig, &k) ||
      bp_buffer_alloc(dev, 100 * sizeof(float), &buf)) {
    fprintf(stderr, "backplane: %s\n", bp_last_error());
    return 1;
  }
  float v[100];
  for (int i = 0; i < 100; i++) v[i] = (float)i;
  bp_buffer_write(buf, 0, v, sizeof v);
  bp_kernel_arg_t args[3] = {{.kind = BP_ARG_BUFFER, .buffer = buf},
                             {.kind = BP_ARG_F32, .value.f32 = 3.0f},
                             {.kind = BP_ARG_I32, .value.i32 = 100}};
  const uint32_t grid[3] = {4, 1, 1}, block[3] = {25, 1, 1};
  if (bp_kernel_launch(s, k, grid, block, 0, 3, args) != BP_OK) {
    fprintf(stderr, "launch: %s\n", bp_last_error());
    return 1;
  }
  bp_buffer_read(buf, 0, v, sizeof v);
  printf("scale kernel: v[99] = %g (want 297)\n", v[99]);
  bp_kernel_destroy(k);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return v[99] == 297.0f ? 0 : 1;
}
