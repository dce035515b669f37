/*
 * ref.c — the tests' independent reference, in double. See ref.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

const char *const ref_unary_names[BP_UNARY_COUNT] = {
    "neg",  "abs",  "exp",  "log",     "sqrt", "rsqrt", "relu",
    "gelu", "silu", "sigmoid", "tanh", "sin",  "cos", "gelu_tanh"};
const char *const ref_binary_names[BP_BINARY_COUNT] = {
    "add", "sub", "mul", "div", "max", "min", "pow"};
const char *const ref_reduce_names[BP_REDUCE_COUNT] = {
    "sum", "mean", "max", "min", "prod", "var", "argmax"};

void ref_gemm(int64_t m, int64_t n, int64_t k, double alpha, const double *a,
              const double *b, double beta, double *c) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      for (int64_t p = 0; p < k; p++)
        acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = alpha * acc + (beta == 0 ? 0 : beta * c[i * n + j]);
    }
}

void ref_gemv(int64_t m, int64_t n, double alpha, const double *a,
              const double *x, double beta, double *y) {
  for (int64_t i = 0; i < m; i++) {
    double acc = 0;
    for (int64_t j = 0; j < n; j++)
      acc += a[i * n + j] * x[j];
    y[i] = alpha * acc + (beta == 0 ? 0 : beta * y[i]);
  }
}

int64_t ref_out_extent(int64_t n, int64_t k, int64_t p, int64_t s,
                       int64_t d) {
  int64_t span = d * (k - 1) + 1;
  if (n + 2 * p < span)
    return -1;
  return (n + 2 * p - span) / s + 1;
}

void ref_conv2d(const ref_conv_t *p, const double *x, const double *w,
                const double *bias, double *y) {
  int64_t P = ref_out_extent(p->H, p->R, p->ph, p->sh, p->dh);
  int64_t Q = ref_out_extent(p->W, p->S, p->pw, p->sw, p->dw);
  int64_t Cg = p->C / p->groups, Kg = p->K / p->groups;
  for (int64_t n = 0; n < p->N; n++)
    for (int64_t k = 0; k < p->K; k++) {
      int64_t g = k / Kg;
      for (int64_t oh = 0; oh < P; oh++)
        for (int64_t ow = 0; ow < Q; ow++) {
          double acc = bias ? bias[k] : 0;
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t r = 0; r < p->R; r++)
              for (int64_t s = 0; s < p->S; s++) {
                int64_t ih = oh * p->sh - p->ph + r * p->dh;
                int64_t iw = ow * p->sw - p->pw + s * p->dw;
                if (ih < 0 || ih >= p->H || iw < 0 || iw >= p->W)
                  continue;
                int64_t ci = g * Cg + c;
                acc += x[((n * p->C + ci) * p->H + ih) * p->W + iw] *
                       w[((k * Cg + c) * p->R + r) * p->S + s];
              }
          y[((n * p->K + k) * P + oh) * Q + ow] = acc;
        }
    }
}

void ref_pool2d(bool max, int64_t N, int64_t C, int64_t H, int64_t W,
                int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                int64_t pw, bool include_pad, const double *x, double *y) {
  int64_t P = ref_out_extent(H, kh, ph, sh, 1);
  int64_t Q = ref_out_extent(W, kw, pw, sw, 1);
  for (int64_t nc = 0; nc < N * C; nc++)
    for (int64_t oh = 0; oh < P; oh++)
      for (int64_t ow = 0; ow < Q; ow++) {
        double acc = max ? -INFINITY : 0;
        int64_t count = 0;
        for (int64_t r = 0; r < kh; r++)
          for (int64_t s = 0; s < kw; s++) {
            int64_t ih = oh * sh - ph + r, iw = ow * sw - pw + s;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W)
              continue;
            double v = x[(nc * H + ih) * W + iw];
            if (max)
              acc = (v > acc || isnan(v)) ? v : acc;
            else
              acc += v;
            count++;
          }
        if (!max)
          acc /= (double)(include_pad ? kh * kw : count);
        y[(nc * P + oh) * Q + ow] = acc;
      }
}

void ref_batch_norm(int64_t N, int64_t C, int64_t inner, const double *x,
                    const double *mean, const double *var,
                    const double *scale, const double *bias, double eps,
                    double *y) {
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < inner; i++) {
        int64_t o = (n * C + c) * inner + i;
        y[o] = (x[o] - mean[c]) / sqrt(var[c] + eps) * scale[c] + bias[c];
      }
}

void ref_layer_norm(int64_t rows, int64_t n, const double *x,
                    const double *gamma, const double *beta, double eps,
                    double *y) {
  for (int64_t r = 0; r < rows; r++) {
    const double *xr = x + r * n;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; i++)
      mean += xr[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++)
      var += (xr[i] - mean) * (xr[i] - mean);
    var /= (double)n;
    for (int64_t i = 0; i < n; i++)
      y[r * n + i] = (xr[i] - mean) / sqrt(var + eps) * (gamma ? gamma[i] : 1) +
                     (beta ? beta[i] : 0);
  }
}

void ref_rms_norm(int64_t rows, int64_t n, const double *x,
                  const double *gamma, double eps, double *y) {
  for (int64_t r = 0; r < rows; r++) {
    double ms = 0;
    for (int64_t i = 0; i < n; i++)
      ms += x[r * n + i] * x[r * n + i];
    ms /= (double)n;
    for (int64_t i = 0; i < n; i++)
      y[r * n + i] = x[r * n + i] / sqrt(ms + eps) * (gamma ? gamma[i] : 1);
  }
}

void ref_softmax(int rank, const int64_t *shape, int axis, bool use_log,
                 const double *x, double *y) {
  int64_t outer = 1, inner = 1, n = shape[axis];
  for (int i = 0; i < axis; i++)
    outer *= shape[i];
  for (int i = axis + 1; i < rank; i++)
    inner *= shape[i];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      const double *xr = x + o * n * inner + in;
      double *yr = y + o * n * inner + in;
      double mx = -INFINITY;
      bool nan = false;
      for (int64_t i = 0; i < n; i++) {
        nan |= isnan(xr[i * inner]);
        mx = fmax(mx, xr[i * inner]);
      }
      double sum = 0;
      for (int64_t i = 0; i < n; i++)
        sum += exp(xr[i * inner] - mx);
      for (int64_t i = 0; i < n; i++)
        yr[i * inner] = nan ? NAN
                        : use_log ? xr[i * inner] - mx - log(sum)
                              : exp(xr[i * inner] - mx) / sum;
    }
}

void ref_attention(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq,
                   int64_t Skv, int64_t D, int64_t Dv, double scale,
                   bool causal, const double *q, const double *k,
                   const double *v, double *out) {
  double *s = malloc(sizeof(double) * (size_t)(Skv > 0 ? Skv : 1));
  int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < Hq; h++) {
      int64_t hk = h / group;
      const double *K = k + (b * Hkv + hk) * Skv * D;
      const double *V = v + (b * Hkv + hk) * Skv * Dv;
      for (int64_t i = 0; i < Sq; i++) {
        const double *Q = q + ((b * Hq + h) * Sq + i) * D;
        double *O = out + ((b * Hq + h) * Sq + i) * Dv;
        int64_t last = causal ? i + Skv - Sq : Skv - 1; /* keys 0..last */
        if (last > Skv - 1)
          last = Skv - 1;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j <= last; j++) {
          double d = 0;
          for (int64_t t = 0; t < D; t++)
            d += Q[t] * K[j * D + t];
          s[j] = d * scale;
          mx = fmax(mx, s[j]);
        }
        for (int64_t j = 0; j <= last; j++)
          sum += (s[j] = exp(s[j] - mx));
        for (int64_t t = 0; t < Dv; t++) {
          double acc = 0;
          for (int64_t j = 0; j <= last; j++)
            acc += s[j] * V[j * Dv + t];
          O[t] = last < 0 ? 0 : acc / sum; /* fully masked row: zeros */
        }
      }
    }
  free(s);
}

void ref_adam(int64_t n, bool adamw, int64_t step, double lr, double beta1,
              double beta2, double eps, double wd, double *param,
              const double *grad, double *m, double *v) {
  double bc1 = 1 - pow(beta1, (double)step), bc2 = 1 - pow(beta2, (double)step);
  for (int64_t i = 0; i < n; i++) {
    double g = grad[i], p = param[i];
    if (adamw)
      p *= 1 - lr * wd;
    else
      g += wd * p;
    m[i] = beta1 * m[i] + (1 - beta1) * g;
    v[i] = beta2 * v[i] + (1 - beta2) * g * g;
    double mhat = m[i] / bc1, vhat = v[i] / bc2;
    param[i] = p - lr * mhat / (sqrt(vhat) + eps);
  }
}

double ref_unary(bp_unary_op_t op, double x) {
  switch (op) {
  case BP_UNARY_NEG: return -x;
  case BP_UNARY_ABS: return fabs(x);
  case BP_UNARY_EXP: return exp(x);
  case BP_UNARY_LOG: return log(x);
  case BP_UNARY_SQRT: return sqrt(x);
  case BP_UNARY_RSQRT: return 1 / sqrt(x);
  case BP_UNARY_RELU: return isnan(x) ? x : x > 0 ? x : 0;
  case BP_UNARY_GELU: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
  case BP_UNARY_SILU: return x / (1 + exp(-x));
  case BP_UNARY_SIGMOID: return 1 / (1 + exp(-x));
  case BP_UNARY_TANH: return tanh(x);
  case BP_UNARY_SIN: return sin(x);
  case BP_UNARY_COS: return cos(x);
  case BP_UNARY_GELU_TANH:
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  default: return NAN;
  }
}

double ref_binary(bp_binary_op_t op, double a, double b) {
  switch (op) {
  case BP_BINARY_ADD: return a + b;
  case BP_BINARY_SUB: return a - b;
  case BP_BINARY_MUL: return a * b;
  case BP_BINARY_DIV: return a / b;
  case BP_BINARY_MAX: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
  case BP_BINARY_MIN: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
  case BP_BINARY_POW: return pow(a, b);
  default: return NAN;
  }
}

void ref_reduce(bp_reduce_op_t op, int rank, const int64_t *shape, int axis,
                const double *x, double *y) {
  int64_t outer = 1, inner = 1, n = shape[axis];
  for (int i = 0; i < axis; i++)
    outer *= shape[i];
  for (int i = axis + 1; i < rank; i++)
    inner *= shape[i];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t in = 0; in < inner; in++) {
      const double *xr = x + o * n * inner + in;
      double acc;
      switch (op) {
      case BP_REDUCE_SUM:
      case BP_REDUCE_MEAN:
        acc = 0;
        for (int64_t i = 0; i < n; i++)
          acc += xr[i * inner];
        if (op == BP_REDUCE_MEAN)
          acc /= (double)n;
        break;
      case BP_REDUCE_PROD:
        acc = 1;
        for (int64_t i = 0; i < n; i++)
          acc *= xr[i * inner];
        break;
      case BP_REDUCE_MAX:
      case BP_REDUCE_MIN:
        acc = xr[0];
        for (int64_t i = 1; i < n; i++) {
          double t = xr[i * inner];
          if (isnan(t) || isnan(acc))
            acc = NAN;
          else if (op == BP_REDUCE_MAX ? t > acc : t < acc)
            acc = t;
        }
        break;
      case BP_REDUCE_VAR: {
        double mean = 0, ss = 0;
        for (int64_t i = 0; i < n; i++)
          mean += xr[i * inner];
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++)
          ss += (xr[i * inner] - mean) * (xr[i * inner] - mean);
        acc = ss / (double)n;
        break;
      }
      case BP_REDUCE_ARGMAX: {
        int64_t best = 0;
        for (int64_t i = 1; i < n; i++)
          if (xr[i * inner] > xr[best * inner])
            best = i;
        acc = (double)best;
        break;
      }
      default: acc = NAN;
      }
      y[o * inner + in] = acc;
    }
}

static uint32_t mulhi32(uint32_t a, uint32_t b, uint32_t *lo) {
  uint64_t p = (uint64_t)a * b;
  *lo = (uint32_t)p;
  return (uint32_t)(p >> 32);
}

void ref_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                       uint32_t out[4]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    if (round) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t lo0, lo1;
    uint32_t hi0 = mulhi32(0xD2511F53u, c[0], &lo0);
    uint32_t hi1 = mulhi32(0xCD9E8D57u, c[2], &lo1);
    uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
  }
  memcpy(out, c, sizeof c);
}
