/*
 * fast/conv/conv2d_pointwise.c — 1x1 stride-1 f32 layers over large dense
 * planes as one GEMM per image with the pixels along the vector:
 * Y[n] (K x HW) = W (K x C) · X[n] (C x HW).
 *
 * The weights are packed once per call into k-major panels of `rows`
 * output channels (pw_rows()), wp[(panel * C + c) * rows + i] (zero past
 * K), or once for all calls when their buffer is constant
 * (fast/prepared.c). The kernel is the GEMM's ukr_cols, which reads the
 * `rows` values of a k step side by side through one pointer (8 x 32 on
 * AVX-512, 6 x 16 on AVX2); x's channel rows are read in
 * place, NR pixels of each, and y's planes are written in place, so
 * nothing is transposed. Where the direct route (AVX-512) and the
 * in-place implicit GEMM (AVX2) broadcast pixels from one stream per
 * channel, this route loads whole lines of each channel row, and an
 * NR-pixel strip of every channel stays in L1 while it meets every panel.
 *
 * Work is split into tasks (image, run of strips) that workers claim from
 * a shared counter. Within a task, each strip runs C in blocks of at most
 * PW_STRIP_BYTES of x, and every panel of the weights in turn over the
 * block; the bias is added to each strip's outputs while they are in L1.
 *
 * Taken for planes of at least pointwise_min_pixels(): below that the
 * other routes measured faster (docs/backend-cpu.md, "conv2d").
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "conv2d.h"
#include "plugins/cpu/fast/prepared.h"
#include "plugins/cpu/tensor.h"

#define PW_ROWS_MAX 8             /* output channels a panel at most */
#define PW_STRIP_BYTES (32 << 10) /* x per strip and k block: L1's share */
#define PW_TASKS_PER_THREAD 8

typedef struct pw_job {
  const cpu_fast_gemm_kernel_t *kr;
  const float *x, *wp, *bias;
  float *y;
  int64_t C, K, HW, rows; /* rows: output channels per panel */
  int64_t sxn, sxc, syn, syk;
  int64_t kc;               /* channels per k block */
  int64_t strips, per_task; /* NR-pixel strips per image, per task */
  int64_t ntasks;
  _Atomic int64_t *next; /* NULL: one caller runs them all */
} pw_job_t;

/* Panel height: the kernel's own MR, at most PW_ROWS_MAX (the AVX-512
 * kernel's 12-row tile measured slower here than its 8-row one). */
static int64_t pw_rows(const cpu_fast_gemm_kernel_t *kr) {
  return kr->mr < PW_ROWS_MAX ? kr->mr : PW_ROWS_MAX;
}

/* Output pixels per image from which the route is taken. */
static int64_t pointwise_min_pixels(const cpu_device_t *dev, const cpu_fast_gemm_kernel_t *kr) {
  if (dev->tune.conv_pointwise_min_pixels > 0) return dev->tune.conv_pointwise_min_pixels;
  return kr == &cpu_fast_sgemm_avx512 ? 2048 : 512;
}

/* y rows [k0, k0 + rows) x pixels [p0, p0 + cols) of image n += bias. */
static void pw_add_bias(const pw_job_t *j, float *yn, int64_t k0, int64_t rows, int64_t p0,
                        int64_t cols) {
  for (int64_t k = k0; k < k0 + rows; k++) {
    float b = j->bias[k], *row = yn + k * j->syk + p0;
    for (int64_t p = 0; p < cols; p++) row[p] += b;
  }
}

/* One strip of NR pixels from p0 of image n, every channel and panel. */
static void pw_strip(const pw_job_t *j, int64_t n, int64_t p0) {
  const cpu_fast_gemm_kernel_t *kr = j->kr;
  int64_t nr = kr->nr, cols = j->HW - p0 < nr ? j->HW - p0 : nr;
  const float *xn = j->x + n * j->sxn + p0;
  float *yn = j->y + n * j->syn;
  for (int64_t c0 = 0; c0 < j->C; c0 += j->kc) {
    int64_t kb = j->C - c0 < j->kc ? j->C - c0 : j->kc;
    for (int64_t k0 = 0; k0 < j->K; k0 += j->rows) {
      int64_t rows = j->K - k0 < j->rows ? j->K - k0 : j->rows;
      kr->ukr_cols(kb, j->wp + (k0 * j->C + c0 * j->rows), j->rows, xn + c0 * j->sxc, j->sxc,
                   yn + k0 * j->syk + p0, j->syk, (int)rows, (int)cols, 1.0f,
                   c0 == 0 ? 0.0f : 1.0f);
      if (j->bias && c0 + kb == j->C) pw_add_bias(j, yn, k0, rows, p0, cols);
    }
  }
}

static void pw_task(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const pw_job_t *j = ctx;
  if (j->next) begin = atomic_fetch_add_explicit(j->next, 1, memory_order_relaxed), end = j->ntasks;
  int64_t per_image = (j->strips + j->per_task - 1) / j->per_task;
  while (begin < end) {
    int64_t n = begin / per_image, s0 = begin % per_image * j->per_task;
    int64_t s1 = s0 + j->per_task < j->strips ? s0 + j->per_task : j->strips;
    for (int64_t s = s0; s < s1; s++) pw_strip(j, n, s * j->kr->nr);
    begin = j->next ? atomic_fetch_add_explicit(j->next, 1, memory_order_relaxed) : begin + 1;
  }
}

/* Panels of `rows` output channels of w (K x C, any strides) into dst. */
static void pw_pack(const cpu_fast_gemm_kernel_t *kr, const bp_plugin_tensor_t *w, int64_t rows,
                    float *dst) {
  const float *src = cpu_tensor_base(w);
  int64_t K = w->shape[0], C = w->shape[1], sk = w->strides[0], sc = w->strides[1];
  for (int64_t k0 = 0; k0 < K; k0 += rows) {
    int64_t cnt = K - k0 < rows ? K - k0 : rows;
    float *d = dst + k0 * C;
    if (kr->pack(src + k0 * sk, sk, sc, cnt, C, (int)rows, d)) continue;
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < rows; i++)
        d[c * rows + i] = i < cnt ? src[(k0 + i) * sk + c * sc] : 0;
  }
}

/* Whether t (NCHW f32) starts on a 64-byte boundary and its images and
 * planes lie whole multiples of 16 floats apart, so every strip's loads
 * and stores are whole lines: misaligned planes cost this route more than
 * the other routes lose on the layer (docs/backend-cpu.md, "conv2d"). */
static bool pw_lines(const bp_plugin_tensor_t *t) {
  return (uintptr_t)cpu_tensor_base(t) % 64 == 0 && (t->shape[0] <= 1 || t->strides[0] % 16 == 0) &&
         (t->shape[1] <= 1 || t->strides[1] % 16 == 0);
}

/* Whether the layer is one this route takes: 1x1, stride 1, no padding,
 * one group, x's and y's planes dense and on whole lines, large enough
 * planes. */
static bool pw_applies(const cpu_device_t *dev, const bp_conv2d_args_t *a,
                       const cpu_fast_gemm_kernel_t *kr) {
  const bp_plugin_tensor_t *x = &a->x, *w = &a->w, *y = &a->y;
  int64_t H = x->shape[2], W = x->shape[3];
  bool unit = w->shape[2] == 1 && w->shape[3] == 1 && a->stride_h == 1 && a->stride_w == 1 &&
              a->pad_h == 0 && a->pad_w == 0 && a->groups == 1;
  bool dense = (x->strides[3] == 1 || W == 1) && (x->strides[2] == W || H == 1) &&
               (y->strides[3] == 1 || W == 1) && (y->strides[2] == W || H == 1);
  return unit && dense && pw_lines(x) && pw_lines(y) && kr->ukr_cols && kr->pack &&
         H * W >= pointwise_min_pixels(dev, kr);
}

bp_status_t cpu_fast_conv2d_pointwise(cpu_device_t *dev, const bp_conv2d_args_t *a,
                                      const cpu_fast_gemm_kernel_t *kr, const float *bias) {
  if (!pw_applies(dev, a, kr)) return BP_ERR_UNIMPLEMENTED;
  const bp_plugin_tensor_t *x = &a->x, *y = &a->y;
  pw_job_t j;
  memset(&j, 0, sizeof j);
  j.kr = kr, j.bias = bias, j.rows = pw_rows(kr);
  j.x = cpu_tensor_base(x), j.y = cpu_tensor_base(y);
  j.C = x->shape[1], j.K = y->shape[1], j.HW = x->shape[2] * x->shape[3];
  j.sxn = x->strides[0], j.sxc = x->strides[1], j.syn = y->strides[0], j.syk = y->strides[1];
  if (j.C == 0) return BP_ERR_UNIMPLEMENTED; /* y = bias: the other routes */
  /* k blocks as even as PW_STRIP_BYTES allows */
  int64_t kmax = PW_STRIP_BYTES / (kr->nr * (int64_t)sizeof(float)),
          blocks = (j.C + kmax - 1) / kmax;
  j.kc = (j.C + blocks - 1) / blocks;
  size_t wbytes = (size_t)((j.K + j.rows - 1) / j.rows * j.rows * j.C) * sizeof(float);
  bool fresh = false;
  cpu_prep_t *prep = cpu_fast_conv_prepared(a, '1', kr, 0, wbytes, &fresh);
  float *wp = prep ? cpu_prep_data(prep) : cpu_fast_scratch(2, wbytes);
  if (!wp) return BP_ERR_UNIMPLEMENTED;
  if (!prep || fresh) pw_pack(kr, &a->w, j.rows, wp);
  j.wp = wp;
  unsigned threads = dev->pool ? cpu_pool_size(dev->pool) : 1;
  int64_t N = x->shape[0];
  j.strips = (j.HW + kr->nr - 1) / kr->nr;
  int64_t want = (int64_t)threads * PW_TASKS_PER_THREAD;
  j.per_task = N * j.strips >= want ? N * j.strips / want : 1;
  j.ntasks = N * ((j.strips + j.per_task - 1) / j.per_task);
  double flops = 2.0 * (double)j.K * (double)j.C * (double)j.HW * (double)N;
  if (flops < 2e6 || threads < 2 || j.ntasks < 2) {
    pw_task(&j, 0, j.ntasks, 0);
  } else {
    _Atomic int64_t next = 0;
    j.next = &next;
    cpu_pool_run(dev->pool, threads, 1, pw_task, &j);
  }
  if (prep) cpu_prep_release(prep, true);
  return BP_OK;
}
