/* graph.c — capture y = gelu(x * w) once, replay it for three inputs. */
#include <backplane.h>
#include <stdio.h>

int main(void) {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  if (bp_context_create(NULL, &ctx) || bp_device_open(ctx, "cpu", NULL, &dev) || bp_stream_create(dev, &s)) {
    fprintf(stderr, "backplane: %s\n", bp_last_error());
    return 1;
  }
  enum { N = 4 };
  bp_buffer_t *x[3], *w, *y;
  for (int i = 0; i < 3; i++) bp_buffer_alloc(dev, N * sizeof(float), &x[i]);
  bp_buffer_alloc(dev, N * sizeof(float), &w);
  bp_buffer_alloc(dev, N * sizeof(float), &y);
  int64_t n = N;
  bp_tensor_t tx, tw, ty;
  bp_tensor_init(x[0], 0, BP_F32, 1, &n, NULL, &tx);
  bp_tensor_init(w, 0, BP_F32, 1, &n, NULL, &tw);
  bp_tensor_init(y, 0, BP_F32, 1, &n, NULL, &ty);
  bp_fill(s, &tw, 2.0);
  for (int i = 0; i < 3; i++) {
    float v[N] = {(float)i, (float)-i, 0.5f * i, 1};
    bp_buffer_write(x[i], 0, v, sizeof v);
  }
  bp_graph_t *g;
  bp_stream_begin_capture(s);
  bp_binary(s, BP_BINARY_MUL, &tx, &tw, &ty);
  bp_unary(s, BP_UNARY_GELU, &ty, &ty);
  if (bp_stream_end_capture(s, &g) != BP_OK) {
    fprintf(stderr, "capture: %s\n", bp_last_error());
    return 1;
  }
  for (int i = 0; i < 3; i++) {
    if (i > 0) bp_graph_rebind(g, x[i - 1], x[i]);
    bp_graph_launch(g, s);
    float out[N];
    bp_buffer_read(y, 0, out, sizeof out);
    printf("replay %d: %.4f %.4f %.4f %.4f\n", i, out[0], out[1], out[2], out[3]);
  }
  bp_graph_destroy(g);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return 0;
}
