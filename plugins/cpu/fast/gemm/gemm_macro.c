/*
 * fast/gemm/gemm_macro.c — the steps of the blocked GEMM that both drivers
 * run: packing A's and B's panels and the macro-kernel over one packed
 * block. The per-thread loops (gemm.c) and the team driver (gemm_team.c)
 * call them; neither driver calls into the other's file except gemm.c
 * handing a problem to the team, so the files depend one way.
 */
#include <stdalign.h>

#include "gemm_driver.h"

#define TILE_BYTES (16 * 32 * 8) /* largest MR x NR tile of any kernel */

bool cpu_fast_gemm_wpack_ok(const cpu_fast_gemm_kernel_t *kr) {
  const cpu_features_t *f = cpu_features_get();
  return kr->pack && f->avx2 && f->fma && f->f16c;
}

int64_t cpu_fast_gemm_even_block(int64_t len, int64_t max, int64_t align) {
  if (len <= max) return len;
  int64_t blocks = (len + max - 1) / max;
  int64_t b = ((len + blocks - 1) / blocks + align - 1) / align * align;
  return b < max ? b : max;
}

/* Packs panels with vector code when there is some for the layout: the
 * ISA's own for its dtype, the AVX2 widening packer for f16 / bf16 into
 * the f32 kernels' panels (on any CPU with AVX2, FMA and F16C). False:
 * nothing written, the scalar packing runs. */
static bool vec_pack(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                     const void *src, int64_t si, int64_t sk, int64_t cnt,
                     int64_t kb, int w, void *dst) {
  if (t->wide_c) return kr->pack && kr->pack(src, si, sk, cnt, kb, w, dst);
  return t->esize == sizeof(float) && cpu_fast_gemm_wpack_ok(kr) &&
         cpu_fast_wpack_avx2(t->dtype, src, si, sk, cnt, kb, w, dst);
}

/* cnt rows (A: si = sam, sk = sak) or columns (B: si = sbn, sk = sbk) of
 * an operand into panels of w: vector code first, the type's scalar
 * packer otherwise. */
static void pack_panels(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr, bool is_a,
                        const char *src, int64_t si, int64_t sk, int64_t cnt,
                        int64_t kb, void *dst) {
  int w = is_a ? kr->mr : kr->nr;
  if (vec_pack(t, kr, src, si, sk, cnt, kb, w, dst)) return;
  if (is_a) t->pack_a(src, si, sk, cnt, kb, w, dst);
  else t->pack_b(src, sk, si, kb, cnt, w, dst);
}

void cpu_fast_gemm_pack_a(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                      const gemm_view_t *v, int64_t i0, int64_t p0, int64_t mb,
                      int64_t kb, void *dst) {
  pack_panels(t, kr, true, v->a + (i0 * v->sam + p0 * v->sak) * (int64_t)t->in_size,
              v->sam, v->sak, mb, kb, dst);
}

void cpu_fast_gemm_pack_b(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                      const gemm_view_t *v, int64_t j0, int64_t p0, int64_t nb,
                      int64_t kb, void *dst) {
  pack_panels(t, kr, false, v->b + (p0 * v->sbk + j0 * v->sbn) * (int64_t)t->in_size,
              v->sbn, v->sbk, nb, kb, dst);
}

void cpu_fast_gemm_round_c(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                           const float *sums, int64_t ldf, char *c, int64_t scm,
                           int64_t scn, int64_t rows, int64_t cols, const void *alpha,
                           const void *beta) {
  if (!cpu_fast_gemm_wpack_ok(kr) ||
      !cpu_fast_wmerge_avx2(t->dtype, sums, (int)ldf, c, scm, scn, rows, cols,
                            *(const float *)alpha, *(const float *)beta))
    t->merge(sums, (int)ldf, c, scm, scn, rows, cols, alpha, beta);
}

void cpu_fast_gemm_macro(const gemm_macro_t *mk, const char *ap, const char *bp,
                     int64_t mb, int64_t nb, int64_t kb) {
  const gemm_type_t *ct = mk->ct;
  const cpu_fast_gemm_kernel_t *kr = mk->kr;
  /* the panels hold the compute type, which C's type shares (f32 for an
   * f32 band of a narrow C) */
  int64_t es = (int64_t)ct->esize, cs = (int64_t)ct->in_size;
  int mr = kr->mr, nr = kr->nr;
  alignas(64) char tile[TILE_BYTES];
  bool direct = mk->scn == 1 && ct->wide_c;
  /* f32 edge tiles in place: the unpacked kernel reads the packed panels
   * (A's MR values of a k step side by side, B's rows NR apart) and masks
   * the rows and columns past C's edge, instead of a full tile and the
   * scalar merge */
  bool edges = direct && kr->ukr_cols && ct->esize == sizeof(float);
  /* f16 / bf16 C: the tile is rounded back by vector code when it can be */
  bool wmerge = !ct->wide_c && ct->esize == sizeof(float) && cpu_fast_gemm_wpack_ok(kr);
  for (int64_t ir = 0; ir < mb; ir += mr) {
    const char *apan = ap + ir * kb * es;
    int64_t rows = mb - ir < mr ? mb - ir : mr;
    for (int64_t jr = 0; jr < nb; jr += nr) {
      const char *bpan = bp + jr * kb * es;
      int64_t cols = nb - jr < nr ? nb - jr : nr;
      char *cc = mk->c + (ir * mk->scm + jr * mk->scn) * cs;
      if (direct && rows == mr && cols == nr) {
        kr->ukr(kb, apan, bpan, cc, mk->scm, mk->alpha, mk->beta);
        continue;
      }
      if (edges) {
        kr->ukr_cols(kb, (const float *)apan, mr, (const float *)bpan, nr,
                     (float *)cc, mk->scm, (int)rows, (int)cols,
                     *(const float *)mk->alpha, *(const float *)mk->beta);
        continue;
      }
      if (rows < mr && kr->ukr_part)
        kr->ukr_part(kb, apan, bpan, tile, nr, mk->one, mk->zero, (int)rows);
      else
        kr->ukr(kb, apan, bpan, tile, nr, mk->one, mk->zero);
      if (!wmerge || !cpu_fast_wmerge_avx2(ct->dtype, (const float *)tile, nr, cc,
                                       mk->scm, mk->scn, rows, cols,
                                       *(const float *)mk->alpha,
                                       *(const float *)mk->beta))
        ct->merge(tile, nr, cc, mk->scm, mk->scn, rows, cols, mk->alpha,
                  mk->beta);
    }
  }
}
