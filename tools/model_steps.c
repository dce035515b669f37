/*
 * tools/model_steps.c — one-token decode of tools/model's GPT-2 / Llama
 * model timed step by step after a prefill, as a generation loop runs it:
 * f32 and bf16 alternating in one process, each model prefilled once and
 * then stepped back to back (every step at the same position, the work of
 * `bp bench --op model`'s decode case). Prints the first steps one by one
 * (what `bp bench`'s best of 20 after one warm-up samples) and the best
 * step of several rounds of many steps, per dtype and their ratio; with
 * BACKPLANE_LAYERS=trace, the trace holds every op of every step. Not
 * built by make; with a build folder B:
 *
 *   B=build
 *   gcc -O2 -std=c11 -D_GNU_SOURCE -I. -Icore -o model_steps tools/model_steps.c
 *     $B/obj/tools/model/model.o $B/obj/tools/model/model_forward.o
 *     -L$B/lib -lbackplane -lm -Wl,-rpath,$PWD/$B/lib      (one line)
 *   BACKPLANE_PLUGIN_PATH=$B/plugins ./model_steps gpt2 1 256
 *
 * Arguments: gpt2 | llama, layers, d_model (256: 8 heads, else 16), and
 * optionally steps per round (200) and rounds (5). Batch 2, a 128-token
 * prefill, 129 cache rows (bp bench's model), on the device "cpu".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/model/model.h"

#define FIRST_STEPS 24

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One synchronised decode step's ms, or -1. */
static double step(model_t *m, bp_stream_t *s, const bp_tensor_t *x1) {
  double t0 = now_ms();
  if (model_forward(m, s, x1, 1, 128) != BP_OK || bp_stream_synchronize(s) != BP_OK) return -1;
  return now_ms() - t0;
}

/* Builds the model in dtype dt, prefills 128 tokens, prints the first
 * steps and returns the best step of rounds x steps (after them). */
static double run(bp_device_t *dev, model_kind_t kind, bp_dtype_t dt, int layers, int64_t d,
                  int steps, int rounds) {
  bp_stream_t *s = NULL;
  model_t *m = NULL;
  bp_buffer_t *buf = NULL;
  model_config_t cfg;
  model_config_default(&cfg, kind, dt, d, d == 256 ? 8 : 16, layers, 2, 129);
  int64_t full[3] = {2, 128, d}, one[3] = {2, 1, d};
  bp_tensor_t x, x1;
  double best = -1;
  if (bp_stream_create(dev, &s) != BP_OK || model_create(dev, s, &cfg, &m) != BP_OK ||
      bp_buffer_alloc(dev, (uint64_t)(2 * 128 * d) * 4, &buf) != BP_OK ||
      bp_tensor_init(buf, 0, dt, 3, full, NULL, &x) != BP_OK ||
      bp_tensor_init(buf, 0, dt, 3, one, NULL, &x1) != BP_OK ||
      bp_random(s, BP_RANDOM_NORMAL, 7, 0, 0.0, 1.0, &x) != BP_OK ||
      model_forward(m, s, &x, 128, 0) != BP_OK || bp_stream_synchronize(s) != BP_OK) {
    fprintf(stderr, "model_steps: %s\n", bp_last_error());
    goto out;
  }
  printf("%-4s first steps (ms):", dt == BP_F32 ? "f32" : "bf16");
  for (int i = 0; i < FIRST_STEPS; i++) printf(" %.3f", step(m, s, &x1));
  printf("\n");
  for (int r = 0; r < rounds * steps; r++) {
    double ms = step(m, s, &x1);
    if (ms < 0) goto out;
    if (best < 0 || ms < best) best = ms;
  }
out:
  bp_buffer_free(buf);
  model_destroy(m);
  bp_stream_destroy(s);
  return best;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: model_steps gpt2|llama LAYERS D_MODEL [STEPS [ROUNDS]]\n");
    return 2;
  }
  model_kind_t kind = strcmp(argv[1], "llama") == 0 ? MODEL_LLAMA : MODEL_GPT2;
  int layers = atoi(argv[2]), steps = argc > 4 ? atoi(argv[4]) : 200;
  int rounds = argc > 5 ? atoi(argv[5]) : 5;
  int64_t d = atoll(argv[3]);
  bp_context_t *ctx = NULL;
  bp_device_t *dev = NULL;
  if (bp_context_create(NULL, &ctx) != BP_OK || bp_device_open(ctx, "cpu", NULL, &dev) != BP_OK) {
    fprintf(stderr, "model_steps: %s\n", bp_last_error());
    return 1;
  }
  double f32 = run(dev, kind, BP_F32, layers, d, steps, rounds);
  double bf16 = run(dev, kind, BP_BF16, layers, d, steps, rounds);
  printf("%s %d layer(s) d_model %lld: best step of %d: f32 %.4f ms, bf16 %.4f ms, f32 / bf16 "
         "%.2fx\n",
         argv[1], layers, (long long)d, rounds * steps, f32, bf16, bf16 > 0 ? f32 / bf16 : 0);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return f32 > 0 && bf16 > 0 ? 0 : 1;
}
