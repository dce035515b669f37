/*
 * fast/gemm/gemm_types.c — what the GEMM driver (fast/gemm/gemm.c) needs per dtype:
 * scalar packing of A and B panels (widening f16 / bf16 to f32), the merge
 * of an edge tile into C, the plain loops used when scratch memory cannot
 * be had, C = beta * C for k == 0, and the portable 4 x 8 micro-kernels.
 */
#include "gemm_driver.h"
#include "plugins/cpu/dtype.h"

/* ---- typed helpers: packing, edge merge, fallbacks ---------------------- */

/* Element conversions: TI is the stored type, TC the compute type. LD_x
 * widens a stored value, ST_x rounds a computed one back (RNE). */
#define LD_id(x) (x)
#define ST_f32(v) ((float)(v))
#define ST_f64(v) ((double)(v))
#define LD_f16(x) cpu_f16_to_float(x)
#define ST_f16(v) cpu_f16_from_double(v)
#define LD_bf16(x) cpu_bf16_to_float(x)
#define ST_bf16(v) cpu_bf16_from_double(v)

/* A panels: dst[p*mr + i] = A[i][p], rows past mb zero so edge tiles need
 * no special kernel. Stores run contiguously; the mr source rows are read
 * as mr sequential streams. The helper is inlined with constant mr so the
 * inner loop unrolls. */
#define DEFINE_PACK_A(TI, TC, sfx, LD)                                         \
  static inline __attribute__((always_inline)) void pack_a_panel_##sfx(       \
      const TI *ai, int64_t sam, int64_t sak, int64_t kb, int mr, TC *dst) {   \
    for (int64_t p = 0; p < kb; p++)                                           \
      for (int i = 0; i < mr; i++)                                             \
        dst[p * mr + i] = LD(ai[i * sam + p * sak]);                           \
  }                                                                            \
  static void pack_a_##sfx(const void *a_, int64_t sam, int64_t sak,           \
                           int64_t mb, int64_t kb, int mr, void *dst_) {       \
    const TI *a = a_;                                                          \
    TC *dst = dst_;                                                            \
    for (int64_t i0 = 0; i0 < mb; i0 += mr, dst += (int64_t)mr * kb) {        \
      int64_t r = mb - i0 < mr ? mb - i0 : mr;                                 \
      const TI *ai = a + i0 * sam;                                             \
      if (r == mr && mr == 12)                                                 \
        pack_a_panel_##sfx(ai, sam, sak, kb, 12, dst);                         \
      else if (r == mr && mr == 6)                                             \
        pack_a_panel_##sfx(ai, sam, sak, kb, 6, dst);                          \
      else                                                                     \
        for (int64_t p = 0; p < kb; p++)                                       \
          for (int64_t i = 0; i < mr; i++)                                     \
            dst[p * mr + i] = i < r ? LD(ai[i * sam + p * sak]) : 0;           \
    }                                                                          \
  }

/* B panels: dst[p*nr + j] = B[p][j], columns past nb zero. */
#define DEFINE_PACK_B(TI, TC, sfx, LD)                                         \
  static void pack_b_##sfx(const void *b_, int64_t sbk, int64_t sbn,           \
                           int64_t kb, int64_t nb, int nr, void *dst_) {       \
    const TI *b = b_;                                                          \
    TC *dst = dst_;                                                            \
    int64_t full = sbn == 1 ? nb / nr * nr : 0;                                \
    /* Row-major B: strips of CPU_FAST_PACK_STRIP rows dealt out to the panels     \
     * (fast/gemm/gemm.h); constant-size copies become vector moves. */             \
    for (int64_t p0 = 0; p0 < kb && full > 0; p0 += CPU_FAST_PACK_STRIP)           \
      for (int64_t j0 = 0; j0 < full; j0 += nr)                                \
        for (int64_t p = p0; p < kb && p < p0 + CPU_FAST_PACK_STRIP; p++) {        \
          TC *d = dst + j0 * kb + p * nr;                                      \
          const TI *src = b + p * sbk + j0;                                    \
          if (sizeof(TI) == sizeof(TC) && nr * sizeof(TC) == 128)              \
            memcpy(d, src, 128);                                               \
          else if (sizeof(TI) == sizeof(TC) && nr * sizeof(TC) == 64)          \
            memcpy(d, src, 64);                                                \
          else                                                                 \
            for (int j = 0; j < nr; j++) d[j] = LD(src[j]);                    \
        }                                                                      \
    dst += full * kb;                                                          \
    for (int64_t j0 = full; j0 < nb; j0 += nr, dst += (int64_t)nr * kb) {     \
      int64_t w = nb - j0 < nr ? nb - j0 : nr;                                 \
      const TI *bj = b + j0 * sbn;                                             \
      if (sbk == 1) {                                                          \
        for (int64_t j = 0; j < w; j++)                                        \
          for (int64_t p = 0; p < kb; p++)                                     \
            dst[p * nr + j] = LD(bj[j * sbn + p]);                             \
      } else {                                                                 \
        for (int64_t p = 0; p < kb; p++)                                       \
          for (int64_t j = 0; j < w; j++)                                      \
            dst[p * nr + j] = LD(bj[p * sbk + j * sbn]);                       \
      }                                                                        \
      for (int64_t p = 0; p < kb && w < nr; p++)                               \
        for (int64_t j = w; j < nr; j++) dst[p * nr + j] = 0;                  \
    }                                                                          \
  }

/* Writes a finished tile (alpha, beta not yet applied) into C. */
#define DEFINE_MERGE(TI, TC, sfx, LD, ST)                                      \
  static void merge_##sfx(const void *tile_, int nr, void *c_, int64_t scm,    \
                          int64_t scn, int64_t mb, int64_t nb,                 \
                          const void *alpha_, const void *beta_) {             \
    const TC *tile = tile_, alpha = *(const TC *)alpha_,                       \
             beta = *(const TC *)beta_;                                        \
    TI *c = c_;                                                                \
    for (int64_t i = 0; i < mb; i++)                                           \
      for (int64_t j = 0; j < nb; j++) {                                       \
        TI *cij = c + i * scm + j * scn;                                       \
        TC v = alpha * tile[i * nr + j];                                       \
        *cij = ST(beta == 0 ? v : v + beta * LD(*cij));                        \
      }                                                                        \
  }

/* Used only when scratch memory cannot be had: slow but always right. */
#define DEFINE_NAIVE(TI, TC, sfx, LD, ST)                                      \
  static void naive_##sfx(const gemm_view_t *v, const void *alpha_,            \
                          const void *beta_) {                                 \
    const TI *a = (const TI *)v->a, *b = (const TI *)v->b;                     \
    TI *c = (TI *)v->c;                                                        \
    TC alpha = *(const TC *)alpha_, beta = *(const TC *)beta_;                 \
    for (int64_t i = 0; i < v->m; i++)                                         \
      for (int64_t j = 0; j < v->n; j++) {                                     \
        TC s = 0;                                                              \
        for (int64_t p = 0; p < v->k; p++)                                     \
          s += LD(a[i * v->sam + p * v->sak]) * LD(b[p * v->sbk + j * v->sbn]); \
        TI *cij = c + i * v->scm + j * v->scn;                                 \
        *cij = ST(beta == 0 ? alpha * s : alpha * s + beta * LD(*cij));        \
      }                                                                        \
  }

/* k == 0: C = beta * C, and beta == 0 clears C without reading it. */
#define DEFINE_SCALE(TI, TC, sfx, LD, ST)                                      \
  static void scale_##sfx(const gemm_view_t *v, const void *beta_) {           \
    TI *c = (TI *)v->c;                                                        \
    TC beta = *(const TC *)beta_;                                              \
    for (int64_t i = 0; i < v->m; i++)                                         \
      for (int64_t j = 0; j < v->n; j++) {                                     \
        TI *cij = c + i * v->scm + j * v->scn;                                 \
        *cij = ST(beta == 0 ? 0 : beta * LD(*cij));                            \
      }                                                                        \
  }

#define DEFINE_GEMM_TYPE(DT, TI, TC, sfx, LD, ST)                              \
  DEFINE_PACK_A(TI, TC, sfx, LD)                                               \
  DEFINE_PACK_B(TI, TC, sfx, LD)                                               \
  DEFINE_MERGE(TI, TC, sfx, LD, ST)                                            \
  DEFINE_NAIVE(TI, TC, sfx, LD, ST)                                            \
  DEFINE_SCALE(TI, TC, sfx, LD, ST)                                            \
  const gemm_type_t cpu_fast_gemm_type_##sfx = {                                 \
      DT, sizeof(TI), sizeof(TC), sizeof(TI) == sizeof(TC),                    \
      pack_a_##sfx, pack_b_##sfx, merge_##sfx,                                 \
      naive_##sfx,  scale_##sfx};

DEFINE_GEMM_TYPE(BP_F32, float, float, f32, LD_id, ST_f32)
DEFINE_GEMM_TYPE(BP_F64, double, double, f64, LD_id, ST_f64)
/* f16 and bf16 without a native kernel: widened to f32 while packing. */
DEFINE_GEMM_TYPE(BP_F16, uint16_t, float, f16, LD_f16, ST_f16)
DEFINE_GEMM_TYPE(BP_BF16, uint16_t, float, bf16, LD_bf16, ST_bf16)

/* Portable micro-kernel, 4 x 8: plain C the compiler keeps in registers. */
#define C_MR 4
#define C_NR 8
#define DEFINE_UKR_C(T, sfx)                                                   \
  static void ukr_c_##sfx(int64_t k, const void *ap_, const void *bp_,         \
                          void *c_, int64_t ldc, const void *alpha_,           \
                          const void *beta_) {                                 \
    const T *ap = ap_, *bp = bp_, alpha = *(const T *)alpha_,                  \
            beta = *(const T *)beta_;                                          \
    T *c = c_, acc[C_MR][C_NR] = {{0}};                                        \
    for (int64_t p = 0; p < k; p++, ap += C_MR, bp += C_NR)                    \
      for (int i = 0; i < C_MR; i++)                                           \
        for (int j = 0; j < C_NR; j++) acc[i][j] += ap[i] * bp[j];             \
    for (int i = 0; i < C_MR; i++)                                             \
      for (int j = 0; j < C_NR; j++) {                                         \
        T v = alpha * acc[i][j];                                               \
        c[i * ldc + j] = beta == 0 ? v : v + beta * c[i * ldc + j];            \
      }                                                                        \
  }
DEFINE_UKR_C(float, f32)
DEFINE_UKR_C(double, f64)

/* Blocking for the portable kernels (no cache tuning: kept everywhere). */
const cpu_fast_gemm_kernel_t cpu_fast_gemm_portable_f32 = {
    ukr_c_f32, C_MR, C_NR, 256, 1024, 512, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, 0, NULL, NULL, NULL, NULL};
const cpu_fast_gemm_kernel_t cpu_fast_gemm_portable_f64 = {
    ukr_c_f64, C_MR, C_NR, 256, 1024, 512, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, 0, NULL, NULL, NULL, NULL};
