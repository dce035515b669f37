/*
 * ref.h — the tests' own reference implementation of every op, written
 * from the semantics in plugin-api.h / backplane.h, in double, over
 * contiguous row-major host arrays. Deliberately naive: one loop nest per
 * formula, no blocking, no shared code with any plugin.
 */
#ifndef BP_TEST_COMMON_REF_H
#define BP_TEST_COMMON_REF_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin-api.h"

/* c[m,n] = alpha * a[m,k] . b[k,n] + beta * c; c is not read when beta is 0.
 */
void ref_gemm(int64_t m, int64_t n, int64_t k, double alpha, const double *a,
              const double *b, double beta, double *c);

/* y[m] = alpha * a[m,n] . x[n] + beta * y; y not read when beta is 0. */
void ref_gemv(int64_t m, int64_t n, double alpha, const double *a,
              const double *x, double beta, double *y);

/* Output extent of a window (kernel k, dilation d) over n with padding p
 * and stride s. */
int64_t ref_out_extent(int64_t n, int64_t k, int64_t p, int64_t s, int64_t d);

typedef struct ref_conv {
  int64_t N, C, H, W, K, R, S;
  int64_t sh, sw, ph, pw, dh, dw, groups;
} ref_conv_t;
/* x [N,C,H,W], w [K,C/groups,R,S], bias [K] or NULL, y [N,K,P,Q]. */
void ref_conv2d(const ref_conv_t *p, const double *x, const double *w,
                const double *bias, double *y);

/* Max (padding is -inf) or average (padding excluded from the divisor
 * unless include_pad) pooling; x [N,C,H,W] -> y [N,C,P,Q]. */
void ref_pool2d(bool max, int64_t N, int64_t C, int64_t H, int64_t W,
                int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                int64_t pw, bool include_pad, const double *x, double *y);

/* x, y [N, C, inner]; mean, var, scale, bias [C]. */
void ref_batch_norm(int64_t N, int64_t C, int64_t inner, const double *x,
                    const double *mean, const double *var,
                    const double *scale, const double *bias, double eps,
                    double *y);
/* Over the last axis of rows x n; gamma / beta may be NULL. */
void ref_layer_norm(int64_t rows, int64_t n, const double *x,
                    const double *gamma, const double *beta, double eps,
                    double *y);
void ref_rms_norm(int64_t rows, int64_t n, const double *x,
                  const double *gamma, double eps, double *y);

/* Softmax or log-softmax of x along axis. */
void ref_softmax(int rank, const int64_t *shape, int axis, bool use_log,
                 const double *x, double *y);

/* q [B,Hq,Sq,D], k [B,Hkv,Skv,D], v [B,Hkv,Skv,Dv], out [B,Hq,Sq,Dv]. */
void ref_attention(int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq,
                   int64_t Skv, int64_t D, int64_t Dv, double scale,
                   bool causal, const double *q, const double *k,
                   const double *v, double *out);

/* One Adam / AdamW step over n elements (PyTorch's formula), in place. */
void ref_adam(int64_t n, bool adamw, int64_t step, double lr, double beta1,
              double beta2, double eps, double wd, double *param,
              const double *grad, double *m, double *v);

double ref_unary(bp_unary_op_t op, double x);
double ref_binary(bp_binary_op_t op, double a, double b);

/* Reduces x along axis; y holds numel / shape[axis] values (row-major over
 * the remaining axes). argmax gives the first index of the maximum. */
void ref_reduce(bp_reduce_op_t op, int rank, const int64_t *shape, int axis,
                const double *x, double *y);

/* Philox4x32-10 (Salmon et al.): ctr, key -> out. */
void ref_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                       uint32_t out[4]);

extern const char *const ref_unary_names[BP_UNARY_COUNT];
extern const char *const ref_binary_names[BP_BINARY_COUNT];
extern const char *const ref_reduce_names[BP_REDUCE_COUNT];

#endif /* BP_TEST_COMMON_REF_H */
