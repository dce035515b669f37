/*
 * bench_layers.c — the cost of a layer: the same one-element op as the
 * overhead line (bench_overhead.c), on the same device opened in two
 * contexts of this function's own, one without layers and one with the
 * empty pass-through layer (plugins/layers/passthrough: one lookup and one
 * call per op). Runs alternate between the two, best of several, so that
 * drift on a shared machine hits both alike; the difference per call is
 * the layer's cost (target <= 0.1 us per layer).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_layers.h"
#include "bp.h"

enum { LAYER_CALLS = 2000, LAYER_ROUNDS = 401 };

typedef struct timed_device {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *b;
  bp_tensor_t t;
} timed_device_t;

/* Opens selector in a context whose layers are exactly `layers`. */
static bool open_timed(const char *selector, const char *layers, timed_device_t *td) {
  char exe[PATH_MAX], dir[PATH_MAX + 16], real[PATH_MAX];
  bp_context_options_t o = {.struct_size = sizeof o, .layers = layers};
  if (bpt_exe_dir(exe, sizeof exe)) {
    snprintf(dir, sizeof dir, "%s/../plugins", exe);
    if (realpath(dir, real)) o.plugin_dir = real;
  }
  int64_t one = 1;
  return bp_context_create(&o, &td->ctx) == BP_OK &&
         bp_device_open(td->ctx, selector, NULL, &td->dev) == BP_OK &&
         bp_stream_create(td->dev, &td->s) == BP_OK &&
         bp_buffer_alloc(td->dev, 4, &td->b) == BP_OK &&
         bp_tensor_init(td->b, 0, BP_F32, 1, &one, NULL, &td->t) == BP_OK &&
         bp_fill(td->s, &td->t, 1.0) == BP_OK;
}

static void close_timed(timed_device_t *td) {
  bp_buffer_free(td->b);
  bp_stream_destroy(td->s);
  bp_device_close(td->dev);
  bp_context_destroy(td->ctx);
}

/* Mean µs per call of LAYER_CALLS one-element ops. */
static double one_round(timed_device_t *td) {
  double t0 = bpt_now();
  for (int i = 0; i < LAYER_CALLS; i++) bp_unary(td->s, BP_UNARY_NEG, &td->t, &td->t);
  bp_stream_synchronize(td->s);
  return (bpt_now() - t0) * 1e6 / LAYER_CALLS;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Whether the context really stacked the pass-through layer. */
static bool layer_loaded(bp_context_t *ctx, char *why, size_t size) {
  bp_layer_report_t r;
  if (bp_context_layer_report(ctx, 0, &r) != BP_OK)
    return snprintf(why, size, "%s", bp_last_error()), false;
  if (!r.loaded) snprintf(why, size, "%s", r.reason);
  return r.loaded;
}

void bench_layers(bp_device_t *dev) {
  bp_device_entry_t e;
  char sel[96], why[512] = "";
  bp_device_entry(dev, &e);
  snprintf(sel, sizeof sel, "%s:%u", e.backend, e.backend_index);
  timed_device_t none = {0}, one = {0};
  bool sup = false;
  if (bp_device_supports(dev, BP_OP_UNARY, BP_F32, &sup) != BP_OK || !sup) {
    printf("layers     not measured: no f32 unary on this device\n");
    return;
  }
  if (!open_timed(sel, "", &none) || !open_timed(sel, "passthrough", &one) ||
      !layer_loaded(one.ctx, why, sizeof why)) {
    printf("layers     not measured: %s\n", why[0] ? why : bp_last_error());
  } else {
    double best0 = 1e30, best1 = 1e30, diff[LAYER_ROUNDS];
    for (int r = 0; r < LAYER_ROUNDS; r++) {
      double a = one_round(&none), b = one_round(&one);
      if (a < best0) best0 = a;
      if (b < best1) best1 = b;
      diff[r] = b - a;
    }
    qsort(diff, LAYER_ROUNDS, sizeof diff[0], by_value);
    printf("layers     same op, no layer                  %8.3f us/call\n", best0);
    printf("layers     same op, pass-through layer        %8.3f us/call: %+.3f us per layer "
           "(median of %d paired "
           "rounds; target <= 0.1 us)\n",
           best1, diff[LAYER_ROUNDS / 2], LAYER_ROUNDS);
  }
  close_timed(&one);
  close_timed(&none);
}
