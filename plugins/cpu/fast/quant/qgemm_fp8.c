/*
 * fast/quant/qgemm_fp8.c — fp8 GEMM (a and b e4m3 / e5m2, any mix) on
 * AMX-BF16 tiles. Every e4m3 and e5m2 value is exactly a bf16 value, so
 * the packers widen the fp8 bytes to bf16 on the way into the tile layouts
 * and TDPBF16PS multiplies them exactly and sums in f32; the epilogue then
 * scales the f32 sums ((float)acc * sa * sb) and rounds once to c's dtype.
 *
 * The blocking, threading and scratch are the int8 GEMM's driver
 * (qgemm_amx.c), which counts in bytes: a bf16 k step is two bytes, so the
 * driver's k is 2k, padded to 64 (32 bf16 per tile row), its B "steps" of
 * 4 bytes per column are bf16 pairs (B[2s][j], B[2s+1][j]), the VNNI layout
 * TDPBF16PS reads, and its A micro-panel rows hold 32 bf16 per chunk.
 *
 * Widening (16 bytes at a time): e5m2 is the top byte of an f16; e4m3's
 * low 7 bits shifted into an f16's exponent and mantissa give the value
 * times 2^-8 (subnormals included: they become f16 normals or subnormals
 * alike), so vcvtph2ps and a multiply by 256 are exact; e4m3's NaN code
 * (S.1111.111) is set apart. The f32 bits' top half is then the bf16.
 *
 * Compiled with AVX-512 and -mamx-tile -mamx-bf16 (fast.mk); called only
 * when CPUID reports AMX-BF16 and tile state was granted (quant.c).
 */
#include <immintrin.h>
#include <string.h>

#include "plugins/cpu/dtype.h"
#include "plugins/cpu/fast/amx_tiles.h"
#include "plugins/cpu/fast/quant/qgemm_amx.h"
#include "plugins/cpu/fp8.h"
#include "plugins/cpu/tensor.h"

#define F8_KB 512 /* k bytes per block (256 bf16): a 32 KiB A sub-panel for the tiles */

/* ---- fp8 -> bf16 ----------------------------------------------------------- */

/* 16 fp8 codes (zero-extended to 16 bits) as f32. */
static inline __m512 fp8x16_to_f32(__m256i x, bool e4m3) {
  if (!e4m3) return _mm512_cvtph_ps(_mm256_slli_epi16(x, 8));
  __m256i mag = _mm256_and_si256(x, _mm256_set1_epi16(0x7F));
  __m256i h = _mm256_or_si256(_mm256_slli_epi16(mag, 7),
                              _mm256_slli_epi16(_mm256_and_si256(x, _mm256_set1_epi16(0x80)), 8));
  __m512 v = _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
  __mmask16 nan = _mm256_cmpeq_epi16_mask(mag, _mm256_set1_epi16(0x7F));
  return _mm512_mask_mov_ps(v, nan, _mm512_set1_ps(NAN));
}

/* 16 fp8 bytes at p (m: the lanes read, the rest zero) as 16 bf16 in the
 * low halves of 32-bit lanes. */
static inline __m512i fp8x16_to_bf16_lanes(const uint8_t *p, __mmask16 m, bool e4m3) {
  __m256i x = _mm256_cvtepu8_epi16(_mm_maskz_loadu_epi8(m, p));
  return _mm512_srli_epi32(_mm512_castps_si512(fp8x16_to_f32(x, e4m3)), 16);
}

/* One fp8 code as bf16 (the element-by-element paths). */
static inline uint16_t fp8_to_bf16(uint8_t v, bool e4m3) {
  float f = (float)cpu_fp8_decode(v, e4m3 ? 3 : 2);
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)(u >> 16);
}

static inline __mmask16 lanes16(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : n > 0 ? (__mmask16)((1u << n) - 1) : 0;
}

/* ---- B: 16-column panels of bf16 pairs ----------------------------------- */

static void f8_pack_panel(const cpu_qa_job_t *j, int64_t p, uint16_t *dst) {
  int64_t j0 = p * 16, cols = j->n - j0 < 16 ? j->n - j0 : 16, steps = j->kp / 4, s = 0;
  if (cols < 0) cols = 0;
  bool e4m3 = j->args->b.dtype == BP_FP8_E4M3;
  const uint8_t *src = (const uint8_t *)j->b + (cols ? j0 * j->sbn : 0);
  if (j->sbn == 1 && cols > 0) {
    /* row-major b: rows 2s and 2s + 1 widened, then paired per column */
    __mmask16 m = lanes16(cols);
    for (; 2 * s + 1 < j->k; s++) {
      __m512i lo = fp8x16_to_bf16_lanes(src + 2 * s * j->sbk, m, e4m3);
      __m512i hi = fp8x16_to_bf16_lanes(src + (2 * s + 1) * j->sbk, m, e4m3);
      _mm512_storeu_si512(dst + s * 32, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
  }
  for (; s < steps; s++)
    for (int64_t c = 0; c < 16; c++)
      for (int64_t e = 0; e < 2; e++) {
        int64_t l = 2 * s + e;
        dst[s * 32 + c * 2 + e] =
            c < cols && l < j->k ? fp8_to_bf16(src[l * j->sbk + c * j->sbn], e4m3) : 0;
      }
}

static void f8_pack_b(const cpu_qa_job_t *j, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; p++) f8_pack_panel(j, p, (uint16_t *)(j->bpack + p * j->kp * 16));
}

/* ---- A: 32-row micro-panels, 32 bf16 per row and chunk ------------------- */

static void f8_pack_a(const cpu_qa_job_t *j, int64_t q, int64_t rows, int8_t *dst8) {
  int64_t chunks = j->kp / CPU_QA_KC, k = j->k;
  bool e4m3 = j->args->a.dtype == BP_FP8_E4M3;
  uint16_t *dst = (uint16_t *)dst8;
  for (int64_t r = 0; r < 32; r++) {
    const uint8_t *src = NULL;
    if (r < rows) {
      int64_t qr = q + r;
      src = (const uint8_t *)j->a + (qr / j->m) * j->sab + (qr % j->m) * j->sam;
    }
    for (int64_t c = 0; c < chunks; c++) {
      uint16_t *d = dst + c * (CPU_QA_APANEL_CHUNK / 2) + r * 32;
      int64_t l0 = c * 32, w = src ? (k - l0 < 32 ? k - l0 : 32) : 0;
      if (j->sak == 1 && w > 0) {
        __m512i lo = fp8x16_to_bf16_lanes(src + l0, lanes16(w), e4m3);
        __m512i hi = fp8x16_to_bf16_lanes(src + l0 + 16, lanes16(w - 16), e4m3);
        _mm256_storeu_si256((__m256i *)d, _mm512_cvtepi32_epi16(lo));
        _mm256_storeu_si256((__m256i *)(d + 16), _mm512_cvtepi32_epi16(hi));
        continue;
      }
      for (int64_t l = 0; l < 32; l++) d[l] = l < w ? fp8_to_bf16(src[(l0 + l) * j->sak], e4m3) : 0;
    }
  }
}

/* ---- the tiles --------------------------------------------------------------- */

/* out = (first ? 0 : w) + the micro-panel ap x the panel pair b0 / b1 over
 * `chunks` chunks of 32 bf16: the f32 sums in the int32 slots (raw bits). */
static void f8_ukr(int64_t chunks, const int8_t *ap, const int8_t *b0, const int8_t *b1,
                   const int32_t *w, int64_t ld, bool first, int32_t *out, int64_t ldo) {
  cpu_amx_acc_start(w, ld, first);
  for (int64_t c = 0; c < chunks; c++) {
    cpu_amx_bf16_2x2(ap, ap + 1024, CPU_QA_KC, b0, b1, CPU_QA_KC);
    ap += CPU_QA_APANEL_CHUNK;
    b0 += 1024;
    b1 += 1024;
  }
  cpu_amx_acc_store(out, ldo);
}

/* ---- epilogue: c = round((float)acc * sa * sb) ---------------------------------- */

/* f32 -> bf16, nearest even; NaN stays a (quiet) NaN. */
static inline __m256i f32_to_bf16x16(__m512 v) {
  __m512i u = _mm512_castps_si512(v);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
  __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  r = _mm512_mask_mov_epi32(r, nan,
                            _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
  return _mm512_cvtepi32_epi16(r);
}

static void f8_row_contig(const cpu_qa_job_t *j, const float *w, char *c, float sa, int64_t c0,
                          int64_t cols) {
  bp_dtype_t dt = j->args->c.dtype;
  __m512 vsa = _mm512_set1_ps(sa);
  for (int64_t x = 0; x < cols; x += 16) {
    __mmask16 m = lanes16(cols - x);
    __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + x), vsa),
                             _mm512_maskz_loadu_ps(m, j->sb + c0 + x));
    if (dt == BP_F32)
      _mm512_mask_storeu_ps((float *)c + c0 + x, m, v);
    else if (dt == BP_F16)
      _mm256_mask_storeu_epi16((uint16_t *)c + c0 + x, m,
                               _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    else
      _mm256_mask_storeu_epi16((uint16_t *)c + c0 + x, m, f32_to_bf16x16(v));
  }
}

static void f8_store(const cpu_qa_job_t *j, const int32_t *wi, int64_t ld, int64_t q, int64_t rows,
                     int64_t c0, int64_t cols) {
  const bp_plugin_tensor_t *C = &j->args->c, *SA = &j->args->scale_a;
  const float *w = (const float *)(const void *)wi;
  int32_t rk = C->rank;
  int64_t scn = C->strides[rk - 1];
  int64_t es = C->dtype == BP_F32 ? 4 : 2;
  for (int64_t r = 0; r < rows; r++) {
    int64_t bi = (q + r) / j->m, i = (q + r) % j->m;
    int64_t off = (rk == 3 ? bi * C->strides[0] : 0) + i * C->strides[rk - 2];
    float sa = SA->rank ? ((const float *)cpu_tensor_base(SA))[i * SA->strides[0]] : 1.0f;
    if (scn == 1) {
      f8_row_contig(j, w + r * ld, (char *)cpu_tensor_base(C) + es * off, sa, c0, cols);
      continue;
    }
    for (int64_t x = 0; x < cols; x++)
      cpu_store(cpu_tensor_base(C), C->dtype, off + (c0 + x) * scn,
                w[r * ld + x] * sa * j->sb[c0 + x]);
  }
}

/* ---- entry ---------------------------------------------------------------------- */

bp_status_t cpu_qgemm_fp8_amx(cpu_device_t *dev, const bp_qgemm_args_t *a) {
  const bp_plugin_tensor_t *A = &a->a, *B = &a->b, *C = &a->c;
  int32_t r = A->rank, rb = B->rank;
  int64_t batch = r == 3 ? A->shape[0] : 1, m = A->shape[r - 2], k = A->shape[r - 1];
  int64_t n = C->shape[r - 1];
  if (batch == 0 || m == 0 || n == 0) return BP_OK;
  cpu_qa_job_t j = {.ukr = f8_ukr,
                    .pack_b = f8_pack_b,
                    .pack_a = f8_pack_a,
                    .store = f8_store,
                    .tiles = true,
                    .kb = F8_KB,
                    .args = a,
                    .a = cpu_tensor_base(A),
                    .m = m,
                    .n = n,
                    .k = k,
                    .kp = k ? (2 * k + CPU_QA_KC - 1) / CPU_QA_KC * CPU_QA_KC : CPU_QA_KC,
                    .sab = r == 3 ? A->strides[0] : 0,
                    .sam = A->strides[r - 2],
                    .sak = A->strides[r - 1],
                    .sbk = B->strides[rb - 2],
                    .sbn = B->strides[rb - 1],
                    .panels = (n + 31) / 32 * 2};
  return cpu_qa_run_job(dev, &j);
}
