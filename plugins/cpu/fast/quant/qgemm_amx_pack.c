/*
 * fast/quant/qgemm_amx_pack.c — the AMX-INT8 GEMM's packers and epilogue
 * (layouts in qgemm_amx.h). Built with AVX-512 (fast.mk), called only from
 * qgemm_amx.c. Any strides: the contiguous cases (row-major b, a along k,
 * a row-major c) take the vector paths, the rest byte by byte.
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/fast/quant/qgemm_amx.h"
#include "plugins/cpu/quant_blocks.h"

/* ---- B ------------------------------------------------------------------- */

/* Four rows of 16 columns (row-major b) interleaved into one 64-byte step:
 * byte pairs first, then pairs of pairs, gives column j's 4 bytes at 4j. */
static void step_rows(const int8_t *r, int64_t ld, int8_t *dst) {
  __m128i r0 = _mm_loadu_si128((const __m128i *)r), r1 = _mm_loadu_si128((const __m128i *)(r + ld));
  __m128i r2 = _mm_loadu_si128((const __m128i *)(r + 2 * ld));
  __m128i r3 = _mm_loadu_si128((const __m128i *)(r + 3 * ld));
  __m128i t0 = _mm_unpacklo_epi8(r0, r1), t1 = _mm_unpackhi_epi8(r0, r1);
  __m128i t2 = _mm_unpacklo_epi8(r2, r3), t3 = _mm_unpackhi_epi8(r2, r3);
  _mm_storeu_si128((__m128i *)dst, _mm_unpacklo_epi16(t0, t2));
  _mm_storeu_si128((__m128i *)(dst + 16), _mm_unpackhi_epi16(t0, t2));
  _mm_storeu_si128((__m128i *)(dst + 32), _mm_unpacklo_epi16(t1, t3));
  _mm_storeu_si128((__m128i *)(dst + 48), _mm_unpackhi_epi16(t1, t3));
}

/* Steps [s0, kp / 4) of one panel (cols columns from src) element by
 * element, zero past k and cols. */
static void steps_any(const int8_t *src, int64_t sbk, int64_t sbn, int64_t k, int64_t cols,
                      int64_t s0, int64_t steps, int8_t *dst) {
  for (int64_t s = s0; s < steps; s++)
    for (int64_t j = 0; j < 16; j++)
      for (int64_t e = 0; e < 4; e++) {
        int64_t l = 4 * s + e;
        dst[s * 64 + j * 4 + e] = j < cols && l < k ? src[l * sbk + j * sbn] : 0;
      }
}

static void pack_panel(const cpu_qa_job_t *j, int64_t p, int8_t *dst) {
  int64_t j0 = p * 16, cols = j->n - j0 < 16 ? j->n - j0 : 16, steps = j->kp / 4, s = 0;
  if (cols < 0) cols = 0;
  const int8_t *src = j->b + (cols ? j0 * j->sbn : 0);
  if (j->sbn == 1 && cols == 16) {
    for (; 4 * s + 3 < j->k; s++) step_rows(src + 4 * s * j->sbk, j->sbk, dst + s * 64);
  } else if (j->sbk == 1 && cols > 0) {
    /* b^T row-major: each column's 4 bytes of a step are one word */
    for (; 4 * s + 3 < j->k; s++) {
      memset(dst + s * 64, 0, 64);
      for (int64_t c = 0; c < cols; c++) memcpy(dst + s * 64 + 4 * c, src + c * j->sbn + 4 * s, 4);
    }
  }
  steps_any(src, j->sbk, j->sbn, j->k, cols, s, steps, dst);
}

/* Four whole panels of a row-major b at once: each row read once, 64
 * bytes at a time; the unpacks work per 128-bit lane, so lane L of the
 * results belongs to panel p + L, and a 4 x 4 lane transpose gathers each
 * panel's step. */
static void pack_4panels(const cpu_qa_job_t *j, int64_t p) {
  int64_t panel = j->kp * 16, s = 0, ld = j->sbk;
  const int8_t *src = j->b + p * 16;
  int8_t *dst = j->bpack + p * panel;
  for (; 4 * s + 3 < j->k; s++) {
    const int8_t *r = src + 4 * s * ld;
    __m512i r0 = _mm512_loadu_si512(r), r1 = _mm512_loadu_si512(r + ld);
    __m512i r2 = _mm512_loadu_si512(r + 2 * ld), r3 = _mm512_loadu_si512(r + 3 * ld);
    __m512i t0 = _mm512_unpacklo_epi8(r0, r1), t1 = _mm512_unpackhi_epi8(r0, r1);
    __m512i t2 = _mm512_unpacklo_epi8(r2, r3), t3 = _mm512_unpackhi_epi8(r2, r3);
    __m512i v0 = _mm512_unpacklo_epi16(t0, t2), v1 = _mm512_unpackhi_epi16(t0, t2);
    __m512i v2 = _mm512_unpacklo_epi16(t1, t3), v3 = _mm512_unpackhi_epi16(t1, t3);
    __m512i u0 = _mm512_shuffle_i32x4(v0, v1, 0x44), u1 = _mm512_shuffle_i32x4(v0, v1, 0xEE);
    __m512i u2 = _mm512_shuffle_i32x4(v2, v3, 0x44), u3 = _mm512_shuffle_i32x4(v2, v3, 0xEE);
    _mm512_storeu_si512(dst + s * 64, _mm512_shuffle_i32x4(u0, u2, 0x88));
    _mm512_storeu_si512(dst + panel + s * 64, _mm512_shuffle_i32x4(u0, u2, 0xDD));
    _mm512_storeu_si512(dst + 2 * panel + s * 64, _mm512_shuffle_i32x4(u1, u3, 0x88));
    _mm512_storeu_si512(dst + 3 * panel + s * 64, _mm512_shuffle_i32x4(u1, u3, 0xDD));
  }
  for (int64_t q = 0; q < 4; q++)
    steps_any(src + q * 16, ld, 1, j->k, 16, s, j->kp / 4, dst + q * panel);
}

void cpu_qa_pack_b(const cpu_qa_job_t *j, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1;) {
    if (j->sbn == 1 && p + 4 <= p1 && (p + 4) * 16 <= j->n) {
      pack_4panels(j, p);
      p += 4;
    } else {
      pack_panel(j, p, j->bpack + p * j->kp * 16);
      p++;
    }
  }
}

/* ---- A ------------------------------------------------------------------- */

static const int8_t *row_ptr(const cpu_qa_job_t *j, int64_t q) {
  return j->a + (q / j->m) * j->sab + (q % j->m) * j->sam;
}

/* 32 rows adjacent in memory (a column-major a), k strided: four k at a
 * time, the 32 bytes of each interleaved so that every row's four bytes
 * form one dword, scattered to the rows of the micro-panel. The unpacks
 * work per 128-bit lane, so v[x] holds rows 4x .. 4x + 3 and 16 + 4x ..
 * 16 + 4x + 3. Returns the k done (a multiple of 4). */
static int64_t cols_by_4(const int8_t *src, int64_t sak, int64_t k, int8_t *dst) {
  const __m256i rows = _mm256_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19);
  int64_t l = 0;
  for (; l + 3 < k; l += 4) {
    const int8_t *p = src + l * sak;
    __m256i x0 = _mm256_loadu_si256((const __m256i *)p);
    __m256i x1 = _mm256_loadu_si256((const __m256i *)(p + sak));
    __m256i x2 = _mm256_loadu_si256((const __m256i *)(p + 2 * sak));
    __m256i x3 = _mm256_loadu_si256((const __m256i *)(p + 3 * sak));
    __m256i t0 = _mm256_unpacklo_epi8(x0, x1), t1 = _mm256_unpackhi_epi8(x0, x1);
    __m256i t2 = _mm256_unpacklo_epi8(x2, x3), t3 = _mm256_unpackhi_epi8(x2, x3);
    __m256i v[4] = {_mm256_unpacklo_epi16(t0, t2), _mm256_unpackhi_epi16(t0, t2),
                    _mm256_unpacklo_epi16(t1, t3), _mm256_unpackhi_epi16(t1, t3)};
    int8_t *d = dst + (l / CPU_QA_KC) * CPU_QA_APANEL_CHUNK + l % CPU_QA_KC;
    for (int x = 0; x < 4; x++) {
      __m256i off = _mm256_slli_epi32(_mm256_add_epi32(rows, _mm256_set1_epi32(4 * x)), 6);
      _mm256_i32scatter_epi32(d, off, v[x], 1);
    }
  }
  return l;
}

void cpu_qa_pack_a(const cpu_qa_job_t *j, int64_t q, int64_t rows, int8_t *dst) {
  int64_t chunks = j->kp / CPU_QA_KC, k = j->k;
  /* u8 for vpdpbusd: a ^ 0x80 = a + 128, padding included (it meets b's
   * zero padding or rows that are never stored) */
  const __m512i flip = _mm512_set1_epi8(j->flip_a ? (char)0x80 : 0);
  if (j->sak == 1) {
    for (int64_t r = 0; r < 32; r++) {
      const int8_t *src = r < rows ? row_ptr(j, q + r) : NULL;
      for (int64_t c = 0; c < chunks; c++) {
        int64_t w = src ? k - c * CPU_QA_KC : 0;
        __mmask64 m = w >= CPU_QA_KC ? ~(__mmask64)0 : w > 0 ? ((__mmask64)1 << w) - 1 : 0;
        __m512i v = m ? _mm512_maskz_loadu_epi8(m, src + c * CPU_QA_KC) : _mm512_setzero_si512();
        _mm512_storeu_si512(dst + c * CPU_QA_APANEL_CHUNK + r * CPU_QA_KC,
                            _mm512_xor_si512(v, flip));
      }
    }
    return;
  }
  /* k strided (a transposed view): l outer, so rows adjacent in memory are
   * read together */
  memset(dst, 0, (size_t)(chunks * CPU_QA_APANEL_CHUNK));
  const int8_t *src[32];
  for (int64_t r = 0; r < rows; r++) src[r] = row_ptr(j, q + r);
  int64_t l = 0;
  if (j->sam == 1 && rows == 32 && q % j->m + 32 <= j->m) l = cols_by_4(src[0], j->sak, k, dst);
  for (; l < k; l++) {
    int8_t *d = dst + (l / CPU_QA_KC) * CPU_QA_APANEL_CHUNK + l % CPU_QA_KC;
    for (int64_t r = 0; r < rows; r++) d[r * CPU_QA_KC] = src[r][l * j->sak];
  }
  for (int64_t o = 0; j->flip_a && o < chunks * CPU_QA_APANEL_CHUNK; o += 64)
    _mm512_storeu_si512(dst + o, _mm512_xor_si512(_mm512_loadu_si512(dst + o), flip));
}

/* ---- epilogue ------------------------------------------------------------ */

static float scale_row(const bp_plugin_tensor_t *s, int64_t i) {
  return s->rank ? ((const float *)cpu_tensor_base(s))[i * s->strides[0]] : 1.0f;
}

/* cpu_sat_i8 on 16 lanes: round to nearest even, clamp, NaN to 0. */
static __m128i sat_i8x16(__m512 v) {
  __mmask16 num = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
  __m512 r = _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvtepi32_epi8(_mm512_maskz_cvtps_epi32(num, r));
}

/* One row of c (contiguous columns) from its sums. */
static void row_contig(const cpu_qa_job_t *j, const int32_t *w, void *c, float sa, int64_t c0,
                       int64_t cols) {
  bp_dtype_t dt = j->args->c.dtype;
  __m512 vsa = _mm512_set1_ps(sa), os = _mm512_set1_ps(j->args->out_scale);
  for (int64_t x = 0; x < cols; x += 16) {
    __mmask16 m = cols - x >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cols - x)) - 1);
    __m512i acc = _mm512_maskz_loadu_epi32(m, w + x);
    if (dt == BP_I32) {
      _mm512_mask_storeu_epi32((int32_t *)c + c0 + x, m, acc);
      continue;
    }
    /* (float)acc * sa * sb, then / out_scale: the reference's order */
    __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), vsa),
                             _mm512_maskz_loadu_ps(m, j->sb + c0 + x));
    if (dt == BP_F32)
      _mm512_mask_storeu_ps((float *)c + c0 + x, m, v);
    else
      _mm_mask_storeu_epi8((int8_t *)c + c0 + x, m, sat_i8x16(_mm512_div_ps(v, os)));
  }
}

/* One row of c with any column stride, element by element. */
static void row_strided(const cpu_qa_job_t *j, const int32_t *w, void *c, int64_t scn, float sa,
                        int64_t c0, int64_t cols) {
  bp_dtype_t dt = j->args->c.dtype;
  for (int64_t x = 0; x < cols; x++) {
    int64_t o = (c0 + x) * scn;
    if (dt == BP_I32) {
      ((int32_t *)c)[o] = w[x];
      continue;
    }
    float v = (float)w[x] * sa * j->sb[c0 + x];
    if (dt == BP_F32)
      ((float *)c)[o] = v;
    else
      ((int8_t *)c)[o] = cpu_sat_i8(v / j->args->out_scale);
  }
}

void cpu_qa_store(const cpu_qa_job_t *j, const int32_t *w, int64_t ld, int64_t q, int64_t rows,
                  int64_t c0, int64_t cols) {
  const bp_plugin_tensor_t *C = &j->args->c;
  int32_t rk = C->rank;
  int64_t scn = C->strides[rk - 1];
  size_t es = C->dtype == BP_I8 ? 1 : 4;
  for (int64_t r = 0; r < rows; r++) {
    int64_t bi = (q + r) / j->m, i = (q + r) % j->m;
    char *c = (char *)cpu_tensor_base(C) +
              (int64_t)es * ((rk == 3 ? bi * C->strides[0] : 0) + i * C->strides[rk - 2]);
    float sa = scale_row(&j->args->scale_a, i);
    if (scn == 1)
      row_contig(j, w + r * ld, c, sa, c0, cols);
    else
      row_strided(j, w + r * ld, c, scn, sa, c0, cols);
  }
}
