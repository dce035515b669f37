/*
 * attention_harness.c — the shared part of the CPU fused-attention kernel
 * tests (see attention_harness.h): tensors, the reference comparison and
 * the tallies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/ref/ref.h"
#include "test/attention_harness.h"

att_buf_t att_buf_make(bp_dtype_t dt, int64_t d0, int64_t d1, int64_t d2, int64_t d3, int layout,
                       double lo, double hi) {
  att_buf_t b;
  memset(&b, 0, sizeof b);
  int64_t shape[4] = {d0, d1, d2, d3}, st[4];
  int order[4] = {0, 1, 2, 3}; /* outermost to innermost in memory */
  if (layout == LAYOUT_BSHD) order[1] = 2, order[2] = 1;
  if (layout == LAYOUT_KV_TRANSPOSED) order[2] = 3, order[3] = 2;
  int64_t s = 1;
  for (int x = 3; x >= 0; x--) st[order[x]] = s, s *= shape[order[x]];
  b.n = s;
  b.p = malloc(cpu_dtype_size(dt) * (size_t)(s + 1));
  assert_non_null(b.p);
  for (int64_t i = 0; i < s; i++)
    cpu_store(b.p, dt, i, lo + (hi - lo) * (rand() % 10001) / 10000.0);
  b.t.ptr = (uint64_t)(uintptr_t)b.p;
  b.t.dtype = dt;
  b.t.rank = 4;
  for (int x = 0; x < 4; x++) b.t.shape[x] = shape[x], b.t.strides[x] = st[x];
  return b;
}

int64_t att_at4(const bp_plugin_tensor_t *t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * t->strides[0] + b * t->strides[1] + c * t->strides[2] + d * t->strides[3];
}

bp_attention_args_t att_args(const att_buf_t *q, const att_buf_t *k, const att_buf_t *v,
                             const att_buf_t *out, int causal, double scale) {
  bp_attention_args_t a;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  a.causal = causal;
  a.scale = scale;
  a.q = q->t, a.k = k->t, a.v = v->t, a.out = out->t;
  return a;
}

void att_reset(att_harness_t *h) {
  h->fails = h->checks = 0;
}

static void tol_for(bp_dtype_t dt, double *rtol, double *atol) {
  *rtol = dt == BP_F32 ? 1e-4 : dt == BP_F16 ? 4e-3 : 2e-2;
  *atol = dt == BP_F32 ? 2e-5 : dt == BP_F16 ? 4e-3 : 2e-2;
}

/* NaN and inf inputs (SPECIAL_NAN_*) planted in q, k, v. */
static void plant_specials(const att_case_t *c, att_buf_t *q, att_buf_t *k, att_buf_t *v) {
  if (c->special == SPECIAL_NAN_Q && c->Sq > 1 && c->D > 0)
    cpu_store(q->p, c->dt, att_at4(&q->t, 0, 0, c->Sq / 2, c->D - 1), NAN);
  if (c->special == SPECIAL_NAN_K && c->Skv > 0 && c->D > 0)
    cpu_store(k->p, c->dt, att_at4(&k->t, 0, 0, c->Skv - 1, 0), NAN);
  if (c->special == SPECIAL_NAN_V && c->Skv > 2) { /* hidden from most rows */
    cpu_store(v->p, c->dt, att_at4(&v->t, 0, 0, c->Skv - 1, 0), NAN);
    cpu_store(v->p, c->dt, att_at4(&v->t, 0, 0, c->Skv - 2, c->Dv - 1), INFINITY);
  }
  if (c->special == SPECIAL_NAN_V0 && c->Skv > 2) { /* hidden by a window */
    cpu_store(v->p, c->dt, att_at4(&v->t, 0, 0, 0, 0), NAN);
    cpu_store(v->p, c->dt, att_at4(&v->t, 0, 0, 1, c->Dv - 1), INFINITY);
  }
}

void att_masks_make(const att_case_t *c, const att_masks_t *mk, bp_attention_args_t *a,
                    att_buf_t m[3]) {
  memset(m, 0, 3 * sizeof *m);
  if (!mk) return;
  a->window = mk->window;
  if (mk->kv_lens) {
    m[0] = att_buf_make(BP_I32, c->B, 1, 1, 1, 0, 0, 0);
    for (int64_t b = 0; b < c->B; b++)
      ((int32_t *)m[0].p)[b] = (int32_t)(b % 3 == 0 ? c->Skv - 1 - b : b % 3 == 1 ? c->Skv + 2 : 0);
    a->kv_lens = m[0].t, a->kv_lens.rank = 1;
  }
  if (mk->bias) {
    bool dense = mk->bias == BIAS_DENSE;
    m[1] = att_buf_make(c->dt, c->B, dense ? c->Hq : 1, dense ? c->Sq : 1, c->Skv,
                        dense ? LAYOUT_KV_TRANSPOSED : LAYOUT_DENSE, -1, 1);
    a->bias = m[1].t;
    if (dense) {
      for (int64_t x = 0; x < m[1].n; x += 7) cpu_store(m[1].p, c->dt, x, -INFINITY);
      for (int64_t j = 0; j < c->Skv && c->Sq > 1; j++) /* row 1 of head 0: all masked */
        cpu_store(m[1].p, c->dt, att_at4(&a->bias, 0, 0, 1, j), -INFINITY);
    } else {
      a->bias.shape[1] = c->Hq, a->bias.shape[2] = c->Sq;
      a->bias.strides[1] = a->bias.strides[2] = 0;
    }
  }
  if (mk->alibi == ALIBI_STANDARD) a->alibi_heads = (int32_t)c->Hq + 2, a->alibi_head_offset = 1;
  if (mk->alibi == ALIBI_SLOPES) {
    m[2] = att_buf_make(BP_F32, c->Hq, 1, 1, 1, 0, 0.05, 0.6);
    a->alibi_slopes = m[2].t, a->alibi_slopes.rank = 1;
  }
}

/* The first element of got that differs from want beyond the tolerance,
 * printed and counted; a NaN or inf must be matched exactly. */
static void compare(att_harness_t *h, const cpu_device_t *dev, const att_case_t *c,
                    const att_masks_t *mk, const att_buf_t *got, const att_buf_t *want,
                    double amp) {
  att_masks_t none = {0};
  if (!mk) mk = &none;
  double rtol, atol;
  tol_for(c->dt, &rtol, &atol);
  /* f32 scores carry a rounding error of about eps * D * amp^2, which
   * the exponential turns into a relative error of the weights */
  atol += 4e-8 * (double)c->D * amp * amp;
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t hd = 0; hd < c->Hq; hd++)
      for (int64_t i = 0; i < c->Sq; i++)
        for (int64_t e = 0; e < c->Dv; e++) {
          int64_t x = att_at4(&got->t, b, hd, i, e);
          double g = cpu_load(got->p, c->dt, x), w = cpu_load(want->p, c->dt, x);
          bool ok = isnan(w)   ? isnan(g)
                    : isinf(w) ? g == w
                               : !isnan(g) && fabs(g - w) <= atol + rtol * fabs(w);
          if (ok) continue;
          printf("MISMATCH %s dt%d isa%d thr%u B%ld Hq%ld Hkv%ld Sq%ld Skv%ld "
                 "D%ld Dv%ld causal%d layout%d special%d window%d kv_lens%d bias%d alibi%d"
                 " at [%ld,%ld,%ld,%ld]: got %.9g want %.9g\n",
                 h->name, c->dt, dev->isa, dev->threads, (long)c->B, (long)c->Hq, (long)c->Hkv,
                 (long)c->Sq, (long)c->Skv, (long)c->D, (long)c->Dv, c->causal, c->layout,
                 c->special, mk->window, mk->kv_lens, mk->bias, mk->alibi, (long)b, (long)hd,
                 (long)i, (long)e, g, w);
          h->fails++;
          return;
        }
}

bp_status_t att_run_case(att_harness_t *h, cpu_device_t *dev, const att_case_t *c) {
  return att_run_masked(h, dev, c, NULL);
}

bp_status_t att_run_masked(att_harness_t *h, cpu_device_t *dev, const att_case_t *c,
                           const att_masks_t *mk) {
  double amp = c->special == SPECIAL_LARGE ? 24.0 : 2.0;
  /* k and v transposed in memory: the kernel widens them per key block */
  int kvl = c->layout, ql = c->layout == LAYOUT_KV_TRANSPOSED ? 0 : c->layout;
  att_buf_t q = att_buf_make(c->dt, c->B, c->Hq, c->Sq, c->D, ql, -amp, amp);
  att_buf_t k = att_buf_make(c->dt, c->B, c->Hkv, c->Skv, c->D, kvl, -amp, amp);
  att_buf_t v = att_buf_make(c->dt, c->B, c->Hkv, c->Skv, c->Dv, kvl, -2, 2);
  att_buf_t o = att_buf_make(c->dt, c->B, c->Hq, c->Sq, c->Dv, ql, 0, 0);
  att_buf_t r = att_buf_make(c->dt, c->B, c->Hq, c->Sq, c->Dv, ql, 0, 0);
  for (int64_t i = 0; i < o.n; i++) cpu_store(o.p, c->dt, i, NAN); /* unwritten shows */
  plant_specials(c, &q, &k, &v);
  double scale = c->special == SPECIAL_LARGE ? 1.0 : c->D > 0 ? 1.0 / sqrt((double)c->D) : 1.0;
  bp_attention_args_t a = att_args(&q, &k, &v, &o, c->causal, scale);
  att_buf_t masks[3];
  att_masks_make(c, mk, &a, masks);
  bp_status_t st = h->fn(dev, &a);
  h->checks++;
  if (st == BP_OK) {
    a.out = r.t;
    int64_t tasks = cpu_ref_attention_tasks(&a);
    assert_true(tasks >= 0);
    assert_int_equal(cpu_ref_attention_range(&a, 0, tasks), BP_OK);
    compare(h, dev, c, mk, &o, &r, amp);
  }
  free(q.p), free(k.p), free(v.p), free(o.p), free(r.p);
  for (int x = 0; x < 3; x++) free(masks[x].p);
  return st;
}

void att_run_all(att_harness_t *h, dev_set_t *s, att_case_t c) {
  for (int i = 0; i < s->n; i++) {
    if (att_run_case(h, &s->dev[i], &c) == BP_OK) continue;
    printf("%s: status != BP_OK for dt%d Sq%ld Skv%ld D%ld\n", h->name, c.dt, (long)c.Sq,
           (long)c.Skv, (long)c.D);
    h->fails++;
  }
}

void att_run_all_masked(att_harness_t *h, dev_set_t *s, att_case_t c, att_masks_t m) {
  for (int i = 0; i < s->n; i++) {
    if (att_run_masked(h, &s->dev[i], &c, &m) == BP_OK) continue;
    printf("%s: status != BP_OK for dt%d Sq%ld Skv%ld D%ld window%d kv_lens%d bias%d alibi%d\n",
           h->name, c.dt, (long)c.Sq, (long)c.Skv, (long)c.D, m.window, m.kv_lens, m.bias, m.alibi);
    h->fails++;
  }
}

void att_finish(const att_harness_t *h, const char *what) {
  printf("attention %s %s: %d cases, %d failures\n", h->name, what, h->checks, h->fails);
  assert_int_equal(h->fails, 0);
  assert_true(h->checks > 0);
}

void att_expect_masked_rows_zero(const att_harness_t *h, cpu_device_t *dev, int64_t Sq,
                                 int64_t Skv) {
  att_buf_t q = att_buf_make(BP_F32, 1, 1, Sq, 8, 0, -1, 1);
  att_buf_t k = att_buf_make(BP_F32, 1, 1, Skv, 8, 0, -1, 1);
  att_buf_t v = att_buf_make(BP_F32, 1, 1, Skv, 8, 0, -1, 1);
  att_buf_t o = att_buf_make(BP_F32, 1, 1, Sq, 8, 0, 0, 0);
  for (int64_t x = 0; x < o.n; x++) ((float *)o.p)[x] = NAN;
  bp_attention_args_t a = att_args(&q, &k, &v, &o, 1, 0.5);
  assert_int_equal(h->fn(dev, &a), BP_OK);
  for (int64_t x = 0; x < Sq * 8; x++) {
    float y = ((float *)o.p)[x];
    if (x < (Sq - Skv) * 8)
      assert_true(y == 0.0f);
    else
      assert_false(isnan(y));
  }
  free(q.p), free(k.p), free(v.p), free(o.p);
}

double att_now(clockid_t clk) {
  struct timespec t;
  clock_gettime(clk, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
