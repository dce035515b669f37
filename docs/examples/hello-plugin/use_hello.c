/* use_hello.c — opens the "hello" plugin's device and fills a buffer. The
 * plugin has no exp: with automatic fallback (on by default) the op runs on
 * the next ranked device that has it, and the device's fallback report says
 * so. */
#include <backplane.h>
#include <math.h>
#include <stdio.h>

int main(void) {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *b;
  if (bp_context_create(NULL, &ctx) || bp_device_open(ctx, "hello", NULL, &dev) || bp_stream_create(dev, &s) ||
      bp_buffer_alloc(dev, 16, &b)) {
    fprintf(stderr, "backplane: %s\n", bp_last_error());
    return 1;
  }
  bp_tensor_t t;
  bp_tensor_init(b, 0, BP_F32, 1, (const int64_t[]){4}, NULL, &t);
  bp_fill(s, &t, 2.0);
  float v[4], e[4];
  bp_buffer_read(b, 0, v, sizeof v);
  bp_status_t st = bp_unary(s, BP_UNARY_EXP, &t, &t);
  bp_buffer_read(b, 0, e, sizeof e);
  bp_fallback_stat_t fb[1] = {{.struct_size = sizeof fb[0]}};
  uint32_t n = 0;
  bp_device_fallback_stats(dev, fb, 1, &n);
  printf("hello fill: %g %g %g %g; exp: %s, %g (ran on %s)\n", v[0], v[1], v[2], v[3], bp_status_name(st), e[3],
         n ? fb[0].target : "hello");
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return v[3] == 2.0f && st == BP_OK && fabsf(e[3] - expf(2.0f)) < 1e-5f && n == 1 ? 0 : 1;
}
