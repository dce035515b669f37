/* gemm.c — a 256x256x256 f32 GEMM on the best device, checked against a
 * plain loop on the host. */
#include <backplane.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256

int main(void) {
  static float a[N * N], b[N * N], c[N * N];
  for (int i = 0; i < N * N; i++) a[i] = (float)(i % 7) - 3, b[i] = (float)(i % 5) - 2;
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *da, *db, *dc;
  if (bp_context_create(NULL, &ctx) || bp_device_open(ctx, NULL, NULL, &dev) || bp_stream_create(dev, &s) ||
      bp_buffer_alloc(dev, sizeof a, &da) || bp_buffer_alloc(dev, sizeof b, &db) ||
      bp_buffer_alloc(dev, sizeof c, &dc)) {
    fprintf(stderr, "backplane: %s\n", bp_last_error());
    return 1;
  }
  bp_buffer_write(da, 0, a, sizeof a);
  bp_buffer_write(db, 0, b, sizeof b);
  if (bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, N, N, N, 1.0, da, 0, N, db, 0, N, 0.0, dc, 0,
              N) != BP_OK) {
    fprintf(stderr, "gemm: %s\n", bp_last_error());
    return 1;
  }
  bp_buffer_read(dc, 0, c, sizeof c);
  double worst = 0;
  for (int i = 0; i < N; i += 17)
    for (int j = 0; j < N; j += 13) {
      double ref = 0;
      for (int k = 0; k < N; k++) ref += (double)a[i * N + k] * b[k * N + j];
      worst = fmax(worst, fabs(ref - c[i * N + j]));
    }
  bp_device_entry_t e;
  bp_device_entry(dev, &e);
  printf("gemm %dx%dx%d on %s: max error %g\n", N, N, N, e.info.name, worst);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return worst < 1e-3 ? 0 : 1;
}
