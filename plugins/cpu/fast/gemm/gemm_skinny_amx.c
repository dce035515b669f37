/*
 * fast/gemm/gemm_skinny_amx.c — the skinny GEMM (m <= 16 rows of C, B's
 * rows contiguous) in bf16 on AMX tiles: one-token decode of a model whose
 * weights sit in the caches. There the AVX-512 kernel is bound by its
 * instructions, not by bytes: each bf16 of W is widened (a shuffle and a
 * shift) and then costs one FMA lane per row of C, as much work per
 * element as f32 and more instructions, so bf16 ran no faster than f32
 * although it reads half the bytes. TDPBF16PS does the m rows' products
 * of a 32 x 16 block of W in one instruction, even with m = 2 of its 16
 * rows in use; what remains per element of W is bringing it into the VNNI
 * layout (pairs of k rows interleaved), one unpack per 32 bf16.
 *
 * A task owns a column block of SKA_NB columns and sweeps all of k: per
 * 32-row chunk of W it interleaves the rows' pairs with vpunpck{l,h}wd into
 * four B tiles in L1 (double-buffered, so the next chunk's packing overlaps
 * this chunk's tile products), loads A's chunk (m rows x 32, packed once
 * per call) and adds four TDPBF16PS into the four C tiles (m rows x 16
 * f32). The unpacks interleave within 128-bit lanes, so each C tile holds
 * its columns in that lane order; the store puts them back (vpermt2ps) and
 * hands the f32 sums to the skinny kernel's store (the epilogue, one
 * rounding). W is walked a column panel at a time (SKA_NB * 2 bytes of
 * each row), which reads well from the caches only: large W keeps the
 * AVX-512 kernel, which streams W front to back, for fewer than 8 rows of
 * C; from 8 rows that kernel is bound by its FMAs and this one is faster
 * with any W (cpu_fast_skinny_amx_ok).
 *
 * Compiled with -mamx-tile -mamx-bf16 and AVX-512 (fast.mk); called only
 * after cpu_fast_skinny_amx_ok.
 */
#include <immintrin.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_epi512.h"
#include "gemm_skinny.h"
#include "plugins/cpu/fast/amx_tiles.h"

/* Columns of C per task: four 16-column tiles. */
#define SKA_NB 64
/* bf16 per B tile (16 rows of 32) and per chunk (four tiles). */
#define SKA_TILE 512
#define SKA_CHUNK (4 * SKA_TILE)
/* Largest W (bytes) taken: the weights of a small model's layer (up to
 * 720 KiB at d_model 256), which a decode loop finds in the caches. From
 * a W of 1 MiB (d_model 1024) the model no longer fits them and W comes
 * from memory, where the AVX-512 kernel's front-to-back walk beat this
 * kernel's column panels in a decode step even with the rows prefetched. */
#define SKA_MAX_W_BYTES (768.0 * 1024)
/* From this many rows of C a larger W is taken too: the AVX-512 kernel's
 * FMAs grow with m (one per row and element of W) while this kernel's
 * work per element of W does not, so at 8 rows and more it is bound by
 * its instructions even when W comes from memory, and the tiles run the
 * call faster however W is walked. */
#define SKA_BIG_W_MIN_M 8
/* Below this many elements of W one thread does the call: the pool's
 * hand-off costs about what a second core saves. */
#define SKA_MT_ELEMS 131072.0

int cpu_fast_skinny_amx_enabled = -1;

/* BP_CPU_SKINNY_AMX=0 keeps bf16 on the AVX-512 kernel (comparisons), read
 * once; a test sets cpu_fast_skinny_amx_enabled itself. */
static bool ska_enabled(void) {
  int on = __atomic_load_n(&cpu_fast_skinny_amx_enabled, __ATOMIC_RELAXED);
  if (on < 0) {
    const char *v = getenv("BP_CPU_SKINNY_AMX");
    on = !(v && v[0] == '0');
    __atomic_store_n(&cpu_fast_skinny_amx_enabled, on, __ATOMIC_RELAXED);
  }
  return on != 0;
}

bool cpu_fast_skinny_amx_ok(const skinny_job_t *j) {
  if (j->kind != SKINNY_BF16 || j->m > 16 || !ska_enabled()) return false;
  if ((double)j->k * (double)j->n * 2.0 > SKA_MAX_W_BYTES && j->m < SKA_BIG_W_MIN_M) return false;
  const cpu_features_t *f = cpu_features_get();
  return f->amx_bf16 && f->avx512bw && f->avx512vl && cpu_amx_request();
}

/* A (m x k f32 widened from bf16: exact) as bf16 in chunks of 32 k:
 * dst[c][i][kk] = A[i][32c + kk], zero past k. */
static void ska_pack_a(const skinny_job_t *j, int64_t kchunks, uint16_t *dst) {
  for (int64_t c = 0; c < kchunks; c++)
    for (int64_t i = 0; i < j->m; i++, dst += 32) {
      int64_t k0 = c * 32, w = j->k - k0 < 32 ? j->k - k0 : 32;
      const float *s = j->a + i * j->k + k0;
      for (int h = 0; h < 2; h++) { /* the top halves of the f32 bits: exact */
        __m512i u = _mm512_maskz_loadu_epi32(epi_lanes(w - 16 * h), s + 16 * h);
        _mm256_storeu_si256((__m256i *)(dst + 16 * h),
                            _mm512_cvtepi32_epi16(_mm512_srli_epi32(u, 16)));
      }
    }
}

/* Chunk kc of W's column block from c0 into four B tiles: tile 2h + s
 * holds, for the half h (32 columns), the pairs (W[2r][col], W[2r+1][col])
 * of the lane-order columns that vpunpck{l,h}wd (s = 0, 1) gives. Rows
 * past k read as zeros (A is zero there too, but W's bytes there are not
 * W's: a NaN would leak through 0 * NaN). */
static inline void ska_pack_b(const skinny_job_t *j, int64_t kc, int64_t c0, const __mmask32 *mk,
                              uint16_t *bb) {
  const uint16_t *w = (const uint16_t *)j->b + kc * 32 * j->ldb + c0;
  int64_t ld = j->ldb, rows = j->k - kc * 32 < 32 ? j->k - kc * 32 : 32;
  if (rows == 32 && mk[1] == (__mmask32)0xffffffffu) { /* the common case: whole */
    for (int64_t r = 0; r < 16; r++, w += 2 * ld, bb += 32)
      for (int h = 0; h < 2; h++) {
        __m512i r0 = _mm512_loadu_si512(w + 32 * h), r1 = _mm512_loadu_si512(w + ld + 32 * h);
        _mm512_store_si512(bb + (2 * h) * SKA_TILE, _mm512_unpacklo_epi16(r0, r1));
        _mm512_store_si512(bb + (2 * h + 1) * SKA_TILE, _mm512_unpackhi_epi16(r0, r1));
      }
    return;
  }
  for (int64_t r = 0; r < 16; r++, w += 2 * ld, bb += 32)
    for (int h = 0; h < 2; h++) {
      __m512i r0 = _mm512_setzero_si512(), r1 = r0;
      if (2 * r < rows) r0 = _mm512_maskz_loadu_epi16(mk[h], w + 32 * h);
      if (2 * r + 1 < rows) r1 = _mm512_maskz_loadu_epi16(mk[h], w + ld + 32 * h);
      _mm512_store_si512(bb + (2 * h) * SKA_TILE, _mm512_unpacklo_epi16(r0, r1));
      _mm512_store_si512(bb + (2 * h + 1) * SKA_TILE, _mm512_unpackhi_epi16(r0, r1));
    }
}

/* Asks for chunk kc's 128 bytes of each of its 32 rows of W: the panel
 * walk touches a short run of many rows, which the hardware prefetchers
 * do not follow when W comes from memory. */
static inline void ska_prefetch(const skinny_job_t *j, int64_t kc, int64_t c0) {
  const char *w = (const char *)((const uint16_t *)j->b + kc * 32 * j->ldb + c0);
  int64_t rows = j->k - kc * 32 < 32 ? j->k - kc * 32 : 32, ld = j->ldb * 2;
  for (int64_t r = 0; r < rows; r++, w += ld) {
    _mm_prefetch(w, _MM_HINT_T0);
    _mm_prefetch(w + 64, _MM_HINT_T0);
  }
}

/* The C tiles (lane order, m rows of 64 bytes at t) into sums[m][64] in
 * column order: per half, columns 0-15 are lanes 0-3 of the lo tile, 0-3
 * of the hi tile, 4-7 of lo, 4-7 of hi; 16-31 the same from lanes 8-15. */
static void ska_unpermute(const float *t, int64_t m, float *sums) {
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
  for (int64_t i = 0; i < m; i++)
    for (int h = 0; h < 2; h++) {
      __m512 lo = _mm512_load_ps(t + (2 * h) * 16 * 16 + i * 16);
      __m512 hi = _mm512_load_ps(t + (2 * h + 1) * 16 * 16 + i * 16);
      _mm512_storeu_ps(sums + i * SKA_NB + 32 * h, _mm512_permutex2var_ps(lo, first, hi));
      _mm512_storeu_ps(sums + i * SKA_NB + 32 * h + 16, _mm512_permutex2var_ps(lo, second, hi));
    }
}

/* The column block from c0 (w <= SKA_NB columns) over all of k. Tiles
 * 0-3: C (m rows x 16 f32), 4: A's chunk, 5-7: B tiles taking turns. */
static void ska_block(const skinny_job_t *j, const uint16_t *apk, int64_t c0, int64_t w) {
  alignas(64) uint16_t bb[2][SKA_CHUNK];
  alignas(64) float t[4 * 16 * 16];
  float sums[16 * SKA_NB];
  int64_t kchunks = (j->k + 31) / 32, m = j->m;
  __mmask32 mk[2];
  for (int h = 0; h < 2; h++) {
    int64_t left = w - 32 * h;
    mk[h] = left <= 0 ? 0 : left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1);
  }
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  /* each chunk is packed one chunk ahead of its tile products, so that
   * the tile loads read lines whose stores have long retired */
  ska_pack_b(j, 0, c0, mk, bb[0]);
  for (int64_t kc = 0; kc < kchunks; kc++) {
    const uint16_t *b = bb[kc & 1];
    if (kc + 2 < kchunks) ska_prefetch(j, kc + 2, c0);
    if (kc + 1 < kchunks) ska_pack_b(j, kc + 1, c0, mk, bb[(kc + 1) & 1]);
    _tile_loadd(4, apk + kc * m * 32, 64);
    _tile_loadd(5, b, 64);
    _tile_dpbf16ps(0, 4, 5);
    _tile_loadd(6, b + SKA_TILE, 64);
    _tile_dpbf16ps(1, 4, 6);
    if (mk[1]) {
      _tile_loadd(7, b + 2 * SKA_TILE, 64);
      _tile_dpbf16ps(2, 4, 7);
      _tile_loadd(5, b + 3 * SKA_TILE, 64);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  _tile_stored(0, t, 64);
  _tile_stored(1, t + 256, 64);
  _tile_stored(2, t + 512, 64);
  _tile_stored(3, t + 768, 64);
  ska_unpermute(t, m, sums);
  cpu_fast_skinny_store(j, sums, SKA_NB, c0, w);
}

typedef struct ska_ctx {
  const skinny_job_t *j;
  const uint16_t *apk;
} ska_ctx_t;

static void ska_tasks(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  const ska_ctx_t *x = ctx;
  const skinny_job_t *j = x->j;
  (void)worker;
  uint8_t rows[8] = {
      (uint8_t)j->m, (uint8_t)j->m, (uint8_t)j->m, (uint8_t)j->m, (uint8_t)j->m, 16, 16, 16};
  uint16_t colsb[8] = {64, 64, 64, 64, 64, 64, 64, 64};
  cpu_amx_configure(rows, colsb);
  for (int64_t t = begin; t < end; t++) {
    int64_t c0 = t * SKA_NB;
    ska_block(j, x->apk, c0, j->n - c0 < SKA_NB ? j->n - c0 : SKA_NB);
  }
  _tile_release();
}

bool cpu_fast_skinny_amx_run(cpu_device_t *dev, const skinny_job_t *j) {
  int64_t kchunks = (j->k + 31) / 32;
  uint16_t *apk = cpu_fast_scratch(1, (size_t)(kchunks * j->m * 32) * sizeof *apk);
  if (!apk) return false;
  ska_pack_a(j, kchunks, apk);
  ska_ctx_t x = {j, apk};
  int64_t blocks = (j->n + SKA_NB - 1) / SKA_NB;
  bool mt = dev->pool && blocks > 1 && (double)j->k * (double)j->n >= SKA_MT_ELEMS;
  if (mt)
    cpu_pool_run(dev->pool, blocks, 1, ska_tasks, &x);
  else
    ska_tasks(&x, 0, blocks, 0);
  return true;
}
