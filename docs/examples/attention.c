/* attention.c — causal grouped-query attention (8 query heads sharing 2 kv
 * heads) on the best device; inputs from the reproducible random stream. */
#include <backplane.h>
#include <math.h>
#include <stdio.h>

int main(void) {
  enum { B = 1, HQ = 8, HKV = 2, S = 128, D = 64 };
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *bq, *bk, *bv, *bo;
  if (bp_context_create(NULL, &ctx) || bp_device_open(ctx, NULL, NULL, &dev) || bp_stream_create(dev, &s)) {
    fprintf(stderr, "backplane: %s\n", bp_last_error());
    return 1;
  }
  bp_buffer_alloc(dev, sizeof(float) * B * HQ * S * D, &bq);
  bp_buffer_alloc(dev, sizeof(float) * B * HKV * S * D, &bk);
  bp_buffer_alloc(dev, sizeof(float) * B * HKV * S * D, &bv);
  bp_buffer_alloc(dev, sizeof(float) * B * HQ * S * D, &bo);
  bp_tensor_t q, k, v, o;
  bp_tensor_init(bq, 0, BP_F32, 4, (const int64_t[]){B, HQ, S, D}, NULL, &q);
  bp_tensor_init(bk, 0, BP_F32, 4, (const int64_t[]){B, HKV, S, D}, NULL, &k);
  bp_tensor_init(bv, 0, BP_F32, 4, (const int64_t[]){B, HKV, S, D}, NULL, &v);
  bp_tensor_init(bo, 0, BP_F32, 4, (const int64_t[]){B, HQ, S, D}, NULL, &o);
  bp_random(s, BP_RANDOM_NORMAL, 1, 0, 0.0, 1.0, &q);
  bp_random(s, BP_RANDOM_NORMAL, 2, 0, 0.0, 1.0, &k);
  bp_random(s, BP_RANDOM_NORMAL, 3, 0, 0.0, 1.0, &v);
  if (bp_attention(s, &q, &k, &v, 0.0, true, &o) != BP_OK) {
    fprintf(stderr, "attention: %s\n", bp_last_error());
    return 1;
  }
  /* The first query sees only the first key, so its output is v[0]. */
  float out0[D], v0[D];
  bp_buffer_read(bo, 0, out0, sizeof out0);
  bp_buffer_read(bv, 0, v0, sizeof v0);
  double err = 0;
  for (int i = 0; i < D; i++) err = fmax(err, fabs(out0[i] - v0[i]));
  printf("attention B%d Hq%d Hkv%d S%d D%d causal: first row error %g\n", B, HQ, HKV, S, D, err);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return err < 1e-5 ? 0 : 1;
}
