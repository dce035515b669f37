/*
 * test_qgemm_fp8_gpu.c — bp_qgemm with fp8 a and b (e4m3 / e5m2, any mix;
 * f32 sums; c f32 / f16 / bf16) on the GPU backends (OpenCL, Vulkan, CUDA
 * and ROCm; the last two over their CPU shims here), fallback off. Every
 * format pair x c dtype, scales per row / per tensor / none, odd sizes
 * over several tiles, transposed views of a, b and c, batches with b
 * shared and batched, and all 256 codes of each format in a and in b
 * (NaN and infinities propagate as the double sum here gives them); each
 * result within docs/ops.md's tolerance of this file's own double sums,
 * and within twice that of cpu-ref's in the same context. Every GPU
 * device must claim both fp8 dtypes for qgemm.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/backplane.h"
#include "test/quant_test_util.h"
#include "test/gpu_paths.h"

static bool claims(bp_device_t *d, bp_dtype_t dt) {
  bool yes = false;
  return bp_device_supports(d, BP_OP_QGEMM, dt, &yes) == BP_OK && yes;
}

#include "qgemm_fp8_ref.h"

/* Runs the case on v; returns c (stored layout) as read back. */
static char *run(gp_side_t v, const gcase_t *g, const gdata_t *d, bp_dtype_t adt, bp_dtype_t bdt,
                 bp_dtype_t cdt) {
  int64_t asz = g->batch * g->m * g->k, bsz = (g->b_batched ? g->batch : 1) * g->k * g->n;
  size_t es = cdt == BP_F32 ? 4 : 2, cbytes = (size_t)(g->batch * g->m * g->n) * es;
  bp_buffer_t *ba = buf(v.dev, d->a, (uint64_t)asz), *bb = buf(v.dev, d->b, (uint64_t)bsz);
  bp_buffer_t *bsa = buf(v.dev, d->sa, sizeof d->sa), *bsb = buf(v.dev, d->sb, sizeof d->sb);
  bp_buffer_t *bc = buf(v.dev, NULL, cbytes);
  int64_t ash[3] = {g->batch, g->m, g->k},
          ast[3] = {g->m * g->k, g->at ? 1 : g->k, g->at ? g->m : 1};
  int64_t bsh[3] = {g->batch, g->k, g->n},
          bst[3] = {g->k * g->n, g->bt ? 1 : g->n, g->bt ? g->k : 1};
  int64_t csh[3] = {g->batch, g->m, g->n},
          cst[3] = {g->m * g->n, g->ct ? 1 : g->n, g->ct ? g->m : 1};
  const int r = g->batch > 1 ? 3 : 2; /* rank 2 when one batch */
  bp_tensor_t ta = ten(ba, adt, r, ash + 3 - r, ast + 3 - r);
  bp_tensor_t tc = ten(bc, cdt, r, csh + 3 - r, cst + 3 - r);
  bp_tensor_t tb = g->b_batched ? ten(bb, bdt, 3, bsh, bst) : ten(bb, bdt, 2, bsh + 1, bst + 1);
  int64_t one = 1;
  bp_tensor_t tsa =
      g->scales == 2 ? ten(bsa, BP_F32, 1, &g->m, &one) : ten(bsa, BP_F32, 0, NULL, NULL);
  bp_tensor_t tsb =
      g->scales == 2 ? ten(bsb, BP_F32, 1, &g->n, &one) : ten(bsb, BP_F32, 0, NULL, NULL);
  bp_status_t st =
      bp_qgemm(v.s, &ta, &tb, g->scales ? &tsa : NULL, g->scales ? &tsb : NULL, 0.0f, &tc);
  if (st != BP_OK) fail_msg("bp_qgemm: %s", bp_last_error());
  assert_int_equal(bp_stream_synchronize(v.s), BP_OK);
  char *c = malloc(cbytes);
  assert_int_equal(bp_buffer_read(bc, 0, c, cbytes), BP_OK);
  bp_buffer_free(ba), bp_buffer_free(bb), bp_buffer_free(bsa), bp_buffer_free(bsb),
      bp_buffer_free(bc);
  return c;
}

/* The case on the GPU device and cpu-ref, the device against the sums
 * here and against cpu-ref. */
static void check_case(gp_pair_t *p, const gcase_t *g, const gdata_t *d, bp_dtype_t adt,
                       bp_dtype_t bdt, bp_dtype_t cdt) {
  char *c = run(p->gpu, g, d, adt, bdt, cdt), *r = run(p->ref, g, d, adt, bdt, cdt);
  for (int64_t bi = 0; bi < g->batch; bi++)
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t j = 0; j < g->n; j++) {
        double s = 0, t = 0;
        for (int64_t l = 0; l < g->k; l++) {
          double pr =
              fp8_value(d->a[a_off(g, bi, i, l)], adt) * fp8_value(d->b[b_off(g, bi, l, j)], bdt);
          s += pr;
          t += fabs(pr);
        }
        double sa = g->scales == 2 ? d->sa[i] : g->scales ? d->sa[0] : 1;
        double sb = g->scales == 2 ? d->sb[j] : g->scales ? d->sb[0] : 1;
        double x = s * sa * sb, tt = t * fabs(sa * sb);
        int64_t e = c_off(g, bi, i, j);
        double gc = c_value(c, cdt, e), gr = c_value(r, cdt, e);
        bool ok = within(gc, x, tt, g->k, cdt, 1) &&
                  (isnan(x) || isinf(x) || within(gc, gr, tt, g->k, cdt, 2));
        if (!ok)
          fail_msg("%s (%s): %s x %s -> %s [%lld,%lld,%lld] %lldx%lldx%lld: got %.9g ref %.9g "
                   "want %.9g",
                   p->backend, p->path, bp_dtype_name(adt), bp_dtype_name(bdt), bp_dtype_name(cdt),
                   (long long)bi, (long long)i, (long long)j, (long long)g->m, (long long)g->n,
                   (long long)g->k, gc, gr, x);
      }
  free(c), free(r);
}

static const bp_dtype_t fmts[2] = {BP_FP8_E4M3, BP_FP8_E5M2};
static const bp_dtype_t cdts[3] = {BP_F32, BP_F16, BP_BF16};

static void fill(gdata_t *d, const gcase_t *g, bp_dtype_t adt, bp_dtype_t bdt) {
  int64_t asz = g->batch * g->m * g->k, bsz = (g->b_batched ? g->batch : 1) * g->k * g->n;
  d->a = malloc((size_t)asz), d->b = malloc((size_t)bsz);
  for (int64_t i = 0; i < asz; i++) d->a[i] = rand_code(adt);
  for (int64_t i = 0; i < bsz; i++) d->b[i] = rand_code(bdt);
  /* e5m2 x e5m2 sums reach 1e12: small scales keep an f16 c mostly finite */
  float base = adt == BP_FP8_E5M2 && bdt == BP_FP8_E5M2 ? 1.0f / 65536 : 0.125f;
  for (int i = 0; i < 512; i++) {
    d->sa[i] = base * (0.5f + 0.125f * (float)(i % 7));
    d->sb[i] = 0.25f + 0.0625f * (float)(i % 5);
  }
}

/* ---- the cases ---------------------------------------------------------------- */

static bool claims_fp8(const gp_pair_t *p) {
  bool e4 = claims(p->gpu.dev, BP_FP8_E4M3), e5 = claims(p->gpu.dev, BP_FP8_E5M2);
  if (!e4 || !e5) fail_msg("%s does not claim fp8_e4m3 and fp8_e5m2 for qgemm", p->backend);
  return true;
}

static void pairs_on(gp_pair_t *p) {
  if (!claims_fp8(p)) return;
  static const gcase_t cases[] = {
      {2, 37, 45, 70, true, false, false, false, 2},
      {2, 33, 40, 100, false, false, false, false, 1},
      {1, 70, 66, 150, false, true, true, false, 2},
      {3, 5, 3, 1, true, false, true, true, 0},
      {1, 1, 1, 1, false, false, false, false, 0},
      {1, 40, 36, 33, false, true, false, true, 2},
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
    for (int f = 0; f < 4; f++)
      for (int cd = 0; cd < 3; cd++) {
        gdata_t d;
        fill(&d, &cases[ci], fmts[f & 1], fmts[f >> 1]);
        check_case(p, &cases[ci], &d, fmts[f & 1], fmts[f >> 1], cdts[cd]);
        free(d.a), free(d.b);
      }
}

/* All 256 codes in a [16, 16], then in b (stored transposed): NaN codes
 * give NaN, infinities infinities (or NaN against a zero), the rest within
 * the bound. */
static void codes_on(gp_pair_t *p) {
  if (!claims_fp8(p)) return;
  for (int side = 0; side < 2; side++)
    for (int f = 0; f < 4; f++) {
      bp_dtype_t adt = fmts[f & 1], bdt = fmts[f >> 1];
      gcase_t g = {1, 16, 16, 16, false, false, side == 1, false, 2};
      gdata_t d;
      fill(&d, &g, adt, bdt);
      for (int r = 0; r < 16; r++)
        for (int l = 0; l < 16; l++)
          (side == 0 ? d.a : d.b)[r * 16 + l] = (uint8_t)(l * 16 + (r + l) % 16);
      if (side == 0)
        d.b[7 * 16 + 5] = 0;
      else
        d.a[5 * 16 + 7] = 0;
      for (int cd = 0; cd < 3; cd++) check_case(p, &g, &d, adt, bdt, cdts[cd]);
      free(d.a), free(d.b);
    }
}

/* ---- the devices and their kernel paths --------------------------------------------- */

static const gp_path_t vk_paths[] = {{"default", {NULL}},
                                     {"buffers", {"BACKPLANE_VK_GEMM_TEXEL=0", NULL}}};
static const gp_backend_t backends[] = {
    GP_BACKEND("opencl", gp_default_path), GP_BACKEND("vulkan", vk_paths),
    GP_BACKEND("cuda", gp_default_path), GP_BACKEND("rocm", gp_default_path)};
static const gp_plan_t plan = {backends, sizeof backends / sizeof backends[0], gp_quant_knobs};

static void test_qgemm_fp8_pairs(void **st) {
  (void)st, gp_on_devices(&plan, pairs_on);
}
static void test_qgemm_fp8_codes(void **st) {
  (void)st, gp_on_devices(&plan, codes_on);
}

int main(void) {
  gp_use_shims();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qgemm_fp8_pairs),
      cmocka_unit_test(test_qgemm_fp8_codes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
