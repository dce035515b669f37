/*
 * fast/conv/conv2d_pad.c — zero-padded copies of image rows, shared by the
 * whole-image padding (conv2d.c) and the per-task slabs of the implicit-GEMM
 * loops (conv2d_igemm.c); it calls neither, so both depend on it one way.
 */
#include <stdint.h>
#include <string.h>
#include <xmmintrin.h>

#include "conv2d.h"

/* Row t of the padded image split by column phase: column c goes to
 * phase c % sw, index c / sw, so strided taps read contiguous runs. */
static void split_phases(const float *row, int64_t sw, int64_t wq, float *d) {
  if (sw == 2)
    for (int64_t q = 0; q < wq; q++) d[q] = row[2 * q], d[wq + q] = row[2 * q + 1];
  else
    for (int64_t q = 0; q < wq; q++)
      for (int64_t f = 0; f < sw; f++) d[f * wq + q] = row[q * sw + f];
}

/* Stride 2, unit-stride rows: padded row t (row[c - pw] for pw <= c < pw +
 * W, else 0) split straight into its two phases, d[q] = t[2q] and d[wq +
 * q] = t[2q + 1]; the pairs inside the row four at a time (SSE2 shuffles),
 * the padding and edges one by one. */
static void split_row2(const float *row, int64_t W, int64_t pw, int64_t wq, float *d) {
  float *e = d, *o = d + wq;
  int64_t q = 0, qi = (pw + 1) / 2, qe = (pw + W) / 2; /* pairs [qi, qe) inside */
  if (qe > wq) qe = wq;
  for (; q < qi && q < wq; q++) {
    int64_t c = 2 * q - pw;
    e[q] = c >= 0 && c < W ? row[c] : 0.0f;
    o[q] = c + 1 >= 0 && c + 1 < W ? row[c + 1] : 0.0f;
  }
  for (; q + 4 <= qe; q += 4) {
    const float *s = row + 2 * q - pw;
    __m128 a = _mm_loadu_ps(s), b = _mm_loadu_ps(s + 4);
    _mm_storeu_ps(e + q, _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm_storeu_ps(o + q, _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  for (; q < wq; q++) {
    int64_t c = 2 * q - pw;
    e[q] = c >= 0 && c < W ? row[c] : 0.0f;
    o[q] = c + 1 >= 0 && c + 1 < W ? row[c + 1] : 0.0f;
  }
}

/* Stride 1, unit-stride rows: row (W floats) into d with pw zeros before
 * and zeros after up to Wp, four floats at a time (SSE2) and no calls:
 * rows are short (56 floats at 56 x 56), where memset and memcpy cost
 * more in the call than in the copy. */
static void copy_row1(const float *row, int64_t W, int64_t pw, int64_t Wp, float *d) {
  const __m128 z = _mm_setzero_ps();
  int64_t w0 = pw < Wp ? pw : Wp, w1 = pw + W < Wp ? pw + W : Wp, c = 0;
  for (; c + 4 <= w0; c += 4) _mm_storeu_ps(d + c, z);
  for (; c < w0; c++) d[c] = 0.0f;
  for (; c + 4 <= w1; c += 4) _mm_storeu_ps(d + c, _mm_loadu_ps(row + c - pw));
  for (; c < w1; c++) d[c] = row[c - pw];
  for (; c + 4 <= Wp; c += 4) _mm_storeu_ps(d + c, z);
  for (; c < Wp; c++) d[c] = 0.0f;
}

void cpu_fast_conv_pad_rows(const pad_job_t *j, const float *xc, int64_t h0, int64_t h1, float *d,
                        const float *ahead) {
  float tmp[CONV_ROW_MAX];
  for (int64_t h = h0; h < h1; h++, d += j->Wp) {
    int64_t ih = h - j->ph;
    if (ih < 0 || ih >= j->H) {
      memset(d, 0, (size_t)j->Wp * sizeof *d);
      continue;
    }
    if (ahead && j->sxw == 1 && j->W > 0) {
      const float *a = ahead + ih * j->sxh;
      for (int64_t c = 0; c < j->W; c += 16) _mm_prefetch((const char *)(a + c), _MM_HINT_T0);
      _mm_prefetch((const char *)(a + j->W - 1), _MM_HINT_T0);
    }
    if (j->sw == 2 && j->sxw == 1) {
      split_row2(xc + ih * j->sxh, j->W, j->pw, j->wq, d);
      continue;
    }
    if (j->sw == 1 && j->sxw == 1) {
      copy_row1(xc + ih * j->sxh, j->W, j->pw, j->Wp, d);
      continue;
    }
    float *o = j->sw > 1 ? tmp : d;
    const float *row = xc + ih * j->sxh;
    int64_t w0 = j->pw < j->Wp ? j->pw : j->Wp;
    int64_t w1 = j->pw + j->W < j->Wp ? j->pw + j->W : j->Wp;
    memset(o, 0, (size_t)w0 * sizeof *o);
    if (j->sxw == 1)
      memcpy(o + w0, row, (size_t)(w1 - w0) * sizeof *o);
    else
      for (int64_t w = w0; w < w1; w++) o[w] = row[(w - j->pw) * j->sxw];
    memset(o + w1, 0, (size_t)(j->Wp - w1) * sizeof *o);
    if (j->sw > 1) split_phases(tmp, j->sw, j->wq, d);
  }
}
