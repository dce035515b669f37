/*
 * fast/gemm/gemm.c — the f32 / f64 GEMM fast path of the "cpu" device.
 *
 * BLIS-style: C is split into independent parts (batch entries, then ranges
 * of rows or columns) that run on the thread pool; each part loops over k
 * blocks (KC), m blocks (MC, packed A) and n blocks (NC, packed B in L2) and
 * calls a register-tiled micro-kernel chosen at run time (fast/gemm/gemm.h). All
 * strides and transposes are absorbed by the packing routines, so the
 * micro-kernels only ever see contiguous panels (per-dtype packing and
 * merging: fast/gemm/gemm_types.c). One large problem split
 * by rows goes to the team driver instead (fast/gemm/gemm_team.c), where the
 * workers share B's packed panels.
 */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_driver.h"
#include "gemm_epilogue.h"
#include "plugins/cpu/dtype.h"
#include "plugins/cpu/tensor.h"

/* ---- the blocked driver -------------------------------------------------- */

#define GEMM_MT_FLOPS 4e6 /* least work per thread worth a pool dispatch */
/* Least work for the team driver (gemm_team.c), in FLOPs of the AVX-512
 * f32 kernel: below it a row split where each worker packs its own B
 * finishes sooner. The team's shared B blocks cost a wait for every block,
 * which a short call cannot spread, and what they save (packing B once,
 * rows claimed by whichever worker the host is running) only adds up over
 * a long one (docs/performance.md). What counts is the call's length, so
 * a kernel with a narrower tile counts its FLOPs 32 / NR times (NR is two
 * vectors: f64 twice, the AVX2 f32 kernel twice, AVX2 f64 four times).
 * Otherwise a call as long as the AVX-512 team's shortest ran on the
 * AVX2 kernel as two fixed halves, and waited for the slower whenever
 * the host took a core away for a while.
 * A device whose tune sets the row split (the tests, to reach the team
 * with small problems) skips it. */
#define GEMM_TEAM_MIN_FLOPS 4e9

/* Small f32 problems in row-major layouts: no packing at all. The
 * unpacked micro-kernel reads A's rows and B's rows where they are (all of
 * them fit in L1 / L2 at these sizes) and masks the ragged edges, so C is
 * written once, in place. Column-major A is first copied row-major. */
#define GEMM_DIRECT_MAX 224 /* largest m, n, k taken unpacked: past it,
                               * packing's cost is spread over enough tiles
                               * that the packed path wins
                               * (docs/performance.md) */
/* A few rows of C (at most two micro-panels) against a B of more than
 * GEMM_SKINNY_PACKED bytes: reading B in place, a column panel at a time,
 * touches each of its rows in a short run (a new page every k step), while
 * packing reads them front to back. Where B stays in the last-level cache
 * between calls (under half of it), the packed path wins; where it streams
 * from memory, reading it once in place beats reading it and writing a
 * copy. Below GEMM_SKINNY_PACKED bytes B is read in place: one panel
 * reads each B line once; with two panels each line is read twice, which
 * pays unless B's rows are a multiple of 1 KiB apart (a power-of-two
 * width), where they fall into a few L1 / L2 sets and the second read
 * misses. From three panels on, the rereads of B cost more than packing
 * it (docs/performance.md). */
#define GEMM_SKINNY_PACKED ((int64_t)24 << 20)

static bool gemm_skinny(const cpu_fast_gemm_kernel_t *kr, const gemm_view_t *v) {
  if (v->m > 2 * kr->mr) return false;
  int64_t bytes = v->k * v->n * (int64_t)sizeof(float);
  if (bytes > GEMM_SKINNY_PACKED) {
    uint64_t llc;
    cpu_cache_sizes(NULL, NULL, &llc);
    return llc == 0 || (uint64_t)bytes > llc / 2;
  }
  if (v->m <= kr->mr) return true;
  return (v->sbk * (int64_t)sizeof(float)) % 1024 != 0;
}

/* Unpacked: small problems (GEMM_DIRECT_MAX), a few rows (gemm_skinny),
 * and a C of at most GEMM_DIRECT_MAX square whatever k is, in k blocks:
 * each element of A and B serves at most MAX / NR and MAX / MR tiles, and
 * packing them cost more than it saved. A wider C reuses each packed
 * element over enough tiles that packing wins again, so the bound stays
 * (docs/performance.md). Also a C of one column panel (n <= NR) however
 * tall: packing would transpose all of A for NR uses of each element,
 * while here A's rows stream past B's panel once (narrower C, with lanes
 * to spare, takes the inner-product route first: gemm_dot.c). */
bool cpu_fast_gemm_direct_fits(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                             const gemm_view_t *v) {
  /* a column-major A without the kernel that reads it in place is copied
   * whole: only for a short k */
  bool a_in_place = v->sak == 1 || kr->ukr_cols;
  return t == &cpu_fast_gemm_type_f32 && kr->ukr_rows && v->scn == 1 && v->sbn == 1 &&
         (v->sak == 1 || v->sam == 1) &&
         ((v->m <= GEMM_DIRECT_MAX && v->n <= GEMM_DIRECT_MAX &&
           (v->k <= GEMM_DIRECT_MAX || a_in_place)) ||
          (v->n <= kr->nr && a_in_place) || gemm_skinny(kr, v));
}

static bool gemm_direct(const cpu_fast_gemm_kernel_t *kr, const gemm_view_t *v,
                        float alpha, float beta) {
  const float *a = (const float *)v->a, *b = (const float *)v->b;
  float *c = (float *)v->c;
  int64_t lda = v->sam;
  cpu_fast_ukr_rows_fn ukr = kr->ukr_rows;
  bool cols_a = v->sak != 1 && kr->ukr_cols;
  if (cols_a) {
    /* column-major A: the kernel broadcasts the MR values of each k step */
    ukr = kr->ukr_cols;
    lda = v->sak;
  } else if (v->sak != 1) {
    /* column-major A: a row-major copy, m x k */
    float *at = cpu_fast_scratch(0, (size_t)(v->m * v->k) * sizeof(float));
    if (!at) return false;
    for (int64_t p = 0; p < v->k; p++)
      for (int64_t i = 0; i < v->m; i++) at[i * v->k + p] = a[p * v->sak + i];
    a = at;
    lda = v->k;
  }
  int mr = kr->mr, nr = kr->nr;
  /* each B panel (KC x NR) stays in L1 while A's rows stream past it */
  for (int64_t pc = 0; pc < v->k; pc += kr->kc) {
    int64_t kb = v->k - pc < kr->kc ? v->k - pc : kr->kc;
    const float *ap = cols_a ? a + pc * lda : a + pc, *bp = b + pc * v->sbk;
    float bet = pc == 0 ? beta : 1.0f;
    for (int64_t jr = 0; jr < v->n; jr += nr) {
      int cols = (int)(v->n - jr < nr ? v->n - jr : nr);
      for (int64_t ir = 0; ir < v->m; ir += mr) {
        int rows = (int)(v->m - ir < mr ? v->m - ir : mr);
        ukr(kb, cols_a ? ap + ir : ap + ir * lda, lda, bp + jr, v->sbk,
            c + ir * v->scm + jr, v->scm, rows, cols, alpha, bet);
      }
    }
  }
  return true;
}

/* The blocked loops: panels of A and B packed by t (the operands' type), C
 * written through ct (C's type: t itself, or f32 when the caller gives an
 * f32 C for a narrow one), with KC x MC x NC blocking. */
static bool gemm_loops(const gemm_type_t *t, const gemm_type_t *ct,
                       const cpu_fast_gemm_kernel_t *kr, const gemm_view_t *v,
                       const void *alpha, const void *beta, const void *one,
                       const void *zero, int64_t KC, int64_t MC, int64_t NC) {
  int64_t es = (int64_t)t->esize, cs = (int64_t)ct->in_size;
  int mr = kr->mr, nr = kr->nr;
  KC = cpu_fast_gemm_even_block(v->k, KC, 8);
  MC = cpu_fast_gemm_even_block(v->m, MC, mr);
  NC = cpu_fast_gemm_even_block(v->n, NC, nr);
  int64_t mcap = ((v->m < MC ? v->m : MC) + mr - 1) / mr * mr;
  int64_t ncap = ((v->n < NC ? v->n : NC) + nr - 1) / nr * nr;
  char *ap = cpu_fast_scratch(0, (size_t)(mcap * KC * es));
  char *bp = cpu_fast_scratch(1, (size_t)(ncap * KC * es));
  if (!ap || !bp) return false;
  for (int64_t pc = 0; pc < v->k; pc += KC) {
    int64_t kb = v->k - pc < KC ? v->k - pc : KC;
    const void *bet = pc == 0 ? beta : one;
    for (int64_t ic = 0; ic < v->m; ic += MC) {
      int64_t mb = v->m - ic < MC ? v->m - ic : MC;
      cpu_fast_gemm_pack_a(t, kr, v, ic, pc, mb, kb, ap);
      for (int64_t jc = 0; jc < v->n; jc += NC) {
        int64_t nb = v->n - jc < NC ? v->n - jc : NC;
        cpu_fast_gemm_pack_b(t, kr, v, jc, pc, nb, kb, bp);
        gemm_macro_t mk = {ct, kr, v->c + (ic * v->scm + jc * v->scn) * cs,
                           v->scm, v->scn, alpha, bet, one, zero};
        cpu_fast_gemm_macro(&mk, ap, bp, mb, nb, kb);
      }
    }
  }
  return true;
}

/* f16 / bf16 C with k past one KC block: a narrow C cannot hold partial
 * sums, so each band of rows is computed into an f32 scratch C with the
 * normal blocking (A and B widened while packing), then rounded into C
 * once with alpha and beta. A band holds band_floats floats of C
 * (CPU_FAST_GEMM_BAND_FLOATS unless the device's tune sets it). */
static bool gemm_narrow_bands(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                              const gemm_view_t *v, const void *alpha,
                              const void *beta, const void *one, const void *zero,
                              int64_t band_floats) {
  int64_t band = band_floats / v->n / kr->mr * kr->mr;
  if (band < kr->mr) band = kr->mr;
  if (band > v->m) band = v->m;
  for (int64_t i0 = 0; i0 < v->m; i0 += band) {
    int64_t rows = v->m - i0 < band ? v->m - i0 : band;
    float *cb = cpu_fast_scratch(4, (size_t)(rows * v->n) * sizeof(float));
    if (!cb) return false;
    gemm_view_t sub = *v;
    sub.m = rows;
    sub.a = v->a + i0 * v->sam * (int64_t)t->in_size;
    sub.c = (char *)cb;
    sub.scm = v->n;
    sub.scn = 1;
    if (!gemm_loops(t, &cpu_fast_gemm_type_f32, kr, &sub, one, zero, one, zero, kr->kc,
                    kr->mc, kr->nc))
      return false;
    cpu_fast_gemm_round_c(t, kr, cb, v->n, v->c + i0 * v->scm * (int64_t)t->in_size,
                          v->scm, v->scn, rows, v->n, alpha, beta);
  }
  return true;
}

/* Runs one part of C on the calling thread. Returns false when scratch
 * memory is unavailable (nothing has been written then). */
static bool gemm_block(const gemm_type_t *t, const cpu_fast_gemm_kernel_t *kr,
                       const gemm_view_t *v, const void *alpha,
                       const void *beta, const void *one, const void *zero,
                       int64_t band_floats) {
  if (cpu_fast_gemm_direct_fits(t, kr, v)) {
    float fa, fb;
    memcpy(&fa, alpha, sizeof fa);
    memcpy(&fb, beta, sizeof fb);
    return gemm_direct(kr, v, fa, fb);
  }
  if (!t->wide_c && t->esize == sizeof(float) && v->k > kr->kc &&
      cpu_fast_gemm_narrow_rows_fit(kr, v->n))
    return gemm_narrow_bands(t, kr, v, alpha, beta, one, zero, band_floats);
  int64_t es = (int64_t)t->esize;
  int64_t KC = kr->kc, MC = kr->mc, NC = kr->nc;
  if (!t->wide_c) {
    /* A narrow C cannot hold partial sums: keep all of k in the registers
     * and shrink the m and n blocks to keep the panels near L3 / L2. */
    KC = v->k;
    int64_t mfit = ((int64_t)4 << 20) / (KC * es) / kr->mr * kr->mr;
    int64_t nfit = ((int64_t)1 << 20) / (KC * es) / kr->nr * kr->nr;
    MC = mfit < MC ? (mfit > kr->mr ? mfit : kr->mr) : MC;
    NC = nfit < NC ? (nfit > kr->nr ? nfit : kr->nr) : NC;
  }
  return gemm_loops(t, t, kr, v, alpha, beta, one, zero, KC, MC, NC);
}

/* ---- splitting over batch and the pool ----------------------------------- */

typedef struct gemm_job {
  const gemm_type_t *t;
  const cpu_fast_gemm_kernel_t *kr;
  gemm_view_t v;
  int64_t sab, sbb, scb; /* batch strides in elements */
  int64_t pm, pn;        /* parts per batch entry along m and n */
  int64_t band_floats;   /* f32 C per band of a narrow C (gemm_narrow_bands) */
  int64_t ntasks;        /* batch * pm * pn parts, claimed by gemm_claim */
  alignas(64) int64_t next; /* the next part not yet claimed */
  alignas(8) char alpha[8], beta[8], one[8], zero[8];
} gemm_job_t;

/* Part `idx` of [0, len) split in `parts` chunks aligned to `align`. */
static void split_range(int64_t len, int64_t parts, int64_t idx, int64_t align,
                        int64_t *begin, int64_t *count) {
  int64_t chunk = (len + parts - 1) / parts;
  chunk = (chunk + align - 1) / align * align;
  *begin = idx * chunk < len ? idx * chunk : len;
  int64_t end = *begin + chunk < len ? *begin + chunk : len;
  *count = end - *begin;
}

static void gemm_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  const gemm_job_t *j = ctx;
  (void)worker;
  int64_t es = (int64_t)j->t->in_size;
  for (int64_t i = begin; i < end; i++) {
    int64_t b = i / (j->pm * j->pn), r = i % (j->pm * j->pn);
    int64_t m0, mcnt, n0, ncnt;
    split_range(j->v.m, j->pm, r / j->pn, j->kr->mr, &m0, &mcnt);
    split_range(j->v.n, j->pn, r % j->pn, j->kr->nr, &n0, &ncnt);
    if (mcnt == 0 || ncnt == 0) continue;
    gemm_view_t v = j->v;
    v.m = mcnt;
    v.n = ncnt;
    v.a += (b * j->sab + m0 * v.sam) * es;
    v.b += (b * j->sbb + n0 * v.sbn) * es;
    v.c += (b * j->scb + m0 * v.scm + n0 * v.scn) * es;
    if (v.k == 0)
      j->t->scale(&v, j->beta);
    else if (!gemm_block(j->t, j->kr, &v, j->alpha, j->beta, j->one, j->zero,
                           j->band_floats))
      j->t->naive(&v, j->alpha, j->beta);
  }
}

/* One pool task per worker, each claiming parts until none are left: a
 * worker the host holds back takes fewer parts instead of holding up the
 * call with a fixed share. A part is computed the same way whichever
 * worker claims it, so C does not depend on the claiming. */
static void gemm_claim(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  gemm_job_t *j = ctx;
  (void)begin, (void)end;
  for (int64_t i; (i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->ntasks;)
    gemm_task(j, i, i + 1, worker);
}

/* The largest of `parts` parts of len cut as split_range cuts it, in
 * parts of the whole (1: even). */
static double split_share(int64_t len, int64_t parts, int64_t align) {
  int64_t chunk = ((len + parts - 1) / parts + align - 1) / align * align;
  return (double)(chunk < len ? chunk : len) / (double)len;
}

/* Whether a C no wider than tall (in tiles) splits more evenly by columns:
 * 512 rows cut into two parts of whole MR = 12 panels give 264 and 248
 * rows, and the call waits for the larger, while 512 columns make two
 * parts of eight NR = 32 panels. Each part then packs all of A instead of
 * all of B, which is no more when C is no taller than wide. */
static bool cols_even_out(int64_t m, int64_t n, int64_t parts, int mr, int nr) {
  return m <= n && split_share(n, parts, nr) < split_share(m, parts, mr);
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

void cpu_fast_gemm_block_for(cpu_fast_gemm_kernel_t *kr, uint64_t l1d, uint64_t l2) {
  if (!kr->tuned_l1_kib || !kr->tuned_l2_kib || !l1d || !l2) return;
  int64_t kc0 = kr->kc, nc0 = kr->nc;
  /* the KC x NR micro-panel's bytes follow L1 */
  int64_t kc = (int64_t)((double)kc0 * (double)l1d / (kr->tuned_l1_kib * 1024.0));
  kc = clamp64(kc, kc0 / 4, kc0 * 4) / 16 * 16;
  kc = kc < 64 ? 64 : kc;
  /* the KC x NC block's bytes follow L2, whatever KC became */
  double bytes = (double)kc0 * (double)nc0 * (double)l2 / (kr->tuned_l2_kib * 1024.0);
  int64_t nc = clamp64((int64_t)(bytes / (double)kc), nc0 / 4, nc0 * 4) / kr->nr * kr->nr;
  kr->kc = (int)kc;
  kr->nc = (int)(nc < kr->nr ? kr->nr : nc);
}

/* Picks the micro-kernel for dtype under the device's ISA ceiling, its
 * k and n blocks fitted to this CPU's caches. */
static cpu_fast_gemm_kernel_t pick_kernel(const cpu_device_t *dev, bool f64) {
  const cpu_features_t *f = cpu_features_get();
  bp_isa_level_t isa = dev->isa == BP_ISA_BEST ? BP_ISA_AVX512 : dev->isa;
  cpu_fast_gemm_kernel_t kr = f64 ? cpu_fast_gemm_portable_f64 : cpu_fast_gemm_portable_f32;
  if (isa >= BP_ISA_AVX512 && f->avx512f && f->avx512vl)
    kr = f64 ? cpu_fast_dgemm_avx512 : cpu_fast_sgemm_avx512;
  else if (isa >= BP_ISA_AVX2 && f->avx2 && f->fma)
    kr = f64 ? cpu_fast_dgemm_avx2 : cpu_fast_sgemm_avx2;
  uint64_t l1d, l2;
  cpu_cache_sizes(&l1d, &l2, NULL);
  cpu_fast_gemm_block_for(&kr, l1d, l2);
  return kr;
}

/* C of one column (A's rows contiguous: dots) or one row (B's rows
 * contiguous: a sum of B's rows); false when neither fits. */
static bool gemm_vector(cpu_device_t *dev, const gemm_view_t *v, bool f64,
                        double alpha, double beta) {
  if (v->n == 1 && v->sak == 1) {
    cpu_fast_gemv_dot(dev, f64, v->m, v->k, v->a, v->sam, v->b, v->sbk, v->c,
                  v->scm, alpha, beta);
    return true;
  }
  if (v->m == 1 && v->sbn == 1) {
    cpu_fast_gemv_axpy(dev, f64, v->k, v->n, v->a, v->sak, v->b, v->sbk, v->c,
                   v->scn, alpha, beta);
    return true;
  }
  /* the same two forms with the other operand as the matrix: one row of
   * C against B given as Bᵀ (a linear layer's weights, out x in) is dots
   * over B's columns; one column against a column-major A sums A's
   * columns */
  if (v->m == 1 && v->sbk == 1) {
    cpu_fast_gemv_dot(dev, f64, v->n, v->k, v->b, v->sbn, v->a, v->sak, v->c, v->scn, alpha,
                      beta);
    return true;
  }
  if (v->n == 1 && v->sam == 1) {
    cpu_fast_gemv_axpy(dev, f64, v->k, v->m, v->b, v->sbk, v->a, v->sak, v->c, v->scm, alpha,
                       beta);
    return true;
  }
  return false;
}

static int64_t iabs64(int64_t x) { return x < 0 ? -x : x; }

/* True when the 2-D view with these dims/strides maps no two elements onto
 * one address (a dimension of size 1 never matters). */
static bool distinct_2d(int64_t d0, int64_t s0, int64_t d1, int64_t s1) {
  if (d0 <= 1 || d1 <= 1) return (d0 <= 1 || s0 != 0) && (d1 <= 1 || s1 != 0);
  int64_t a0 = iabs64(s0), a1 = iabs64(s1);
  if (a0 == 0 || a1 == 0) return false;
  return a0 < a1 ? a0 * d0 <= a1 : a1 * d1 <= a0;
}

static void store_scalar(char *dst, bool f64, double v) {
  if (f64)
    memcpy(dst, &v, sizeof v);
  else {
    float f = (float)v;
    memcpy(dst, &f, sizeof f);
  }
}

bp_status_t cpu_fast_gemm(cpu_device_t *dev, const bp_gemm_args_t *a) {
  bp_dtype_t dt = a->a.dtype;
  /* bf16 / f16 on AMX take the epilogue in the merge (below); the rest
   * run the GEMM, then the epilogue over C */
  bool lowp = dt == BP_BF16 || dt == BP_F16;
  if (cpu_gemm_has_epilogue(a) && !(lowp && cpu_fast_gemm_amx_epilogue_ok(a)))
    return cpu_fast_gemm_epilogue(dev, a);
  if (a->b.dtype != dt || a->c.dtype != dt || a->a.rank != 3 ||
      a->b.rank != 3 || a->c.rank != 3)
    return BP_ERR_UNIMPLEMENTED;
  const gemm_type_t *type = dt == BP_F32    ? &cpu_fast_gemm_type_f32
                            : dt == BP_F64  ? &cpu_fast_gemm_type_f64
                            : dt == BP_F16  ? &cpu_fast_gemm_type_f16
                            : dt == BP_BF16 ? &cpu_fast_gemm_type_bf16
                                            : NULL;
  if (!type) return BP_ERR_UNIMPLEMENTED;
  /* alpha == 0 has BLAS meaning (A and B unread): leave it to the reference
   * so both devices agree on NaN handling. */
  if (a->alpha == 0) return BP_ERR_UNIMPLEMENTED;
  int64_t batch = a->c.shape[0], m = a->c.shape[1], n = a->c.shape[2];
  int64_t k = a->a.shape[2];
  if (batch == 0 || m == 0 || n == 0) return BP_OK;
  const int64_t *sc = a->c.strides;
  if (!distinct_2d(m, sc[1], n, sc[2]) || (batch > 1 && sc[0] == 0))
    return BP_ERR_UNIMPLEMENTED;
  /* a few rows of f32 (one-token decode): W read once, front to back;
   * one row of C with B's rows contiguous is the axpy matrix-vector
   * product below (eight rows of B a pass, no epilogue to apply) */
  bool axpy_row = batch == 1 && m == 1 && a->b.strides[2] == 1 && sc[2] == 1;
  if (dt == BP_F32 && !axpy_row && cpu_fast_gemm_skinny_f32_ok(dev, a) &&
      cpu_fast_gemm_skinny_f32(dev, a) == BP_OK)
    return BP_OK;
  if (dt == BP_BF16 || dt == BP_F16) {
    /* A native kernel (AMX) first; widening to f32 while packing else. */
    bp_status_t st = cpu_fast_gemm_lowp(dev, a);
    if (st != BP_ERR_UNIMPLEMENTED) return st;
  }
  if (cpu_gemm_has_epilogue(a)) return cpu_fast_gemm_epilogue(dev, a);

  bool f64 = dt == BP_F64;
  gemm_job_t j;
  memset(&j, 0, sizeof j);
  j.t = type;
  j.band_floats = dev->tune.gemm_band_floats > 0 ? dev->tune.gemm_band_floats
                                                 : CPU_FAST_GEMM_BAND_FLOATS;
  cpu_fast_gemm_kernel_t kr = pick_kernel(dev, f64);
  j.kr = &kr;
  j.v = (gemm_view_t){m,
                      n,
                      k,
                      cpu_tensor_base(&a->a),
                      cpu_tensor_base(&a->b),
                      cpu_tensor_base(&a->c),
                      a->a.strides[1],
                      a->a.strides[2],
                      a->b.strides[1],
                      a->b.strides[2],
                      sc[1],
                      sc[2]};
  j.sab = a->a.strides[0];
  j.sbb = a->b.strides[0];
  j.scb = sc[0];
  /* Column-major C: compute C^T = B^T A^T so vectors run along C's
   * contiguous dimension. */
  if (j.v.scn != 1 && j.v.scm == 1) {
    gemm_view_t v = j.v;
    j.v = (gemm_view_t){v.n,   v.m,   v.k,   v.b,   v.a,   v.c,
                        v.sbn, v.sbk, v.sak, v.sam, v.scn, v.scm};
    int64_t t = j.sab;
    j.sab = j.sbb;
    j.sbb = t;
  }
  store_scalar(j.alpha, f64, a->alpha);
  store_scalar(j.beta, f64, a->beta);
  store_scalar(j.one, f64, 1.0);
  store_scalar(j.zero, f64, 0.0);

  /* C one row or one column: a matrix-vector product, bound by reading
   * the matrix once; packing it first would double that */
  if (batch == 1 && type->wide_c && gemm_vector(dev, &j.v, f64, a->alpha, a->beta))
    return BP_OK;
  /* a narrow side of C: inner products along k, nothing of A packed
   * (bf16 / f16 where no native kernel took them above) */
  if (cpu_fast_gemm_dot_fits(type, &kr, &j.v) &&
      cpu_fast_gemm_dot(dev, type, &kr, &j.v, batch, j.sab, j.sbb, j.scb, j.alpha, j.beta,
                        j.one))
    return BP_OK;

  /* Threads only pay off when every thread gets ~4 MFLOP or more (tens of
   * microseconds against the pool's wake-up and a second packing of B):
   * below that the whole call runs on the calling thread. Split batch
   * first, then the longer of m and n so every part still fills whole
   * micro-tiles. */
  unsigned threads = dev->pool ? cpu_pool_size(dev->pool) : 1;
  double flops = 2.0 * (double)m * (double)n * (double)k * (double)batch;
  /* unpacked problems repeat no packing per thread: split them sooner */
  double mt_flops = cpu_fast_gemm_direct_fits(type, &kr, &j.v) ? GEMM_MT_FLOPS / 2
                                                      : GEMM_MT_FLOPS;
  bool mt = threads > 1 && flops >= mt_flops * (double)threads;
  int64_t parts = 1;
  if (mt && batch < (int64_t)threads)
    parts = ((int64_t)threads + batch - 1) / batch;
  /* By rows when C is tall or has rows enough (the team below then shares
   * each packed B block); few rows against many columns by columns, each
   * part packing its own columns of B (CPU_FAST_GEMM_ROW_SPLIT_PANELS). */
  int64_t row_split = dev->tune.gemm_row_split_panels > 0
                          ? dev->tune.gemm_row_split_panels
                          : CPU_FAST_GEMM_ROW_SPLIT_PANELS;
  /* One long problem split by rows: the workers share its B panels (and
   * claim rows in chunks, which evens out the parts) */
  bool team = flops * 32.0 / kr.nr >= GEMM_TEAM_MIN_FLOPS ||
              dev->tune.gemm_row_split_panels > 0;
  j.pm = j.pn = 1;
  if (j.v.m >= parts * kr.mr * row_split ||
      (j.v.m / kr.mr >= j.v.n / kr.nr &&
       (team || !cols_even_out(j.v.m, j.v.n, parts, kr.mr, kr.nr))))
    j.pm = parts;
  else
    j.pn = parts;
  if (mt && team && batch == 1 && j.pm > 1 && !cpu_fast_gemm_direct_fits(type, &kr, &j.v) &&
      cpu_fast_gemm_team(dev, type, &kr, &j.v, j.alpha, j.beta, j.one, j.zero,
                         dev->tune.gemm_band_floats > 0 ? dev->tune.gemm_band_floats
                                                        : CPU_FAST_GEMM_TEAM_C_FLOATS))
    return BP_OK;
  int64_t ntasks = batch * j.pm * j.pn;
  j.ntasks = ntasks;
  /* more parts than workers (batch entries): claimed as workers come
   * free; as many as workers: one each */
  if (mt && ntasks > (int64_t)threads)
    cpu_pool_run(dev->pool, threads, 1, gemm_claim, &j);
  else if (mt && ntasks > 1)
    cpu_pool_run(dev->pool, ntasks, 1, gemm_task, &j);
  else
    gemm_task(&j, 0, ntasks, 0);
  return BP_OK;
}
