/* data_parallel.c — data-parallel training of a small MLP across ranks
 * (docs/scale-out.md): each rank holds the same parameters and a shard of
 * the batch, computes its gradients with bp_gemm and elementwise ops, the
 * ranks sum them with bp_comm_all_reduce, and every rank takes the same
 * fused Adam step. Rank 0 then trains a second copy on the whole batch in
 * one process and checks that both end with the same parameters.
 *
 *   mpirun -np 4 ./data_parallel      (or ./data_parallel: one rank)
 *
 * Model: y = tanh(x W1) W2, loss = mean over the batch of (y - t)^2. */
#include <backplane.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { N = 64, D = 8, H = 16, STEPS = 50 };
#define NPARAM (D * H + H) /* W1 [D, H] then W2 [H, 1], in one buffer */

typedef struct model {
  bp_stream_t *s;
  bp_buffer_t *x, *t, *pre, *h, *r, *dh, *ones, *param, *grad, *m, *v;
} model_t;

static float xval(int i, int j) { return sinf(0.37f * (float)i + 0.91f * (float)j); }
static float tval(int i) {
  float acc = 0;
  for (int j = 0; j < D; j++) acc += xval(i, j) * (float)(j % 3 - 1);
  return sinf(acc);
}

static bp_tensor_t vec(bp_buffer_t *b, uint64_t off, int64_t rows, int64_t cols) {
  bp_tensor_t t;
  int64_t shape[2] = {rows, cols};
  bp_tensor_init(b, off, BP_F32, 2, shape, NULL, &t);
  return t;
}

#define TRY(call)                                                                        \
  do {                                                                                   \
    if ((call) != BP_OK) {                                                               \
      fprintf(stderr, "%s: %s\n", #call, bp_last_error());                               \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

/* Buffers for rows [lo, hi) of the batch, parameters at their start. */
static void model_init(model_t *md, bp_device_t *dev, int lo, int hi) {
  int b = hi - lo;
  float *x = malloc(sizeof(float) * (size_t)(b * D)), t[N], p[NPARAM], one = 1, zero[NPARAM] = {0};
  for (int i = 0; i < b; i++) {
    for (int j = 0; j < D; j++) x[i * D + j] = xval(lo + i, j);
    t[i] = tval(lo + i);
  }
  for (int k = 0; k < NPARAM; k++) p[k] = 0.3f * cosf(1.3f * (float)k + 0.7f);
  TRY(bp_stream_create(dev, &md->s));
  bp_buffer_t **bufs[] = {&md->x, &md->t, &md->pre, &md->h, &md->r, &md->dh, &md->ones, &md->param, &md->grad,
                          &md->m, &md->v};
  uint64_t sizes[] = {b * D, b, b * H, b * H, b, b * H, 1, NPARAM, NPARAM, NPARAM, NPARAM};
  for (int i = 0; i < 11; i++) TRY(bp_buffer_alloc(dev, sizes[i] * sizeof(float), bufs[i]));
  TRY(bp_buffer_write(md->x, 0, x, sizeof(float) * (size_t)(b * D)));
  TRY(bp_buffer_write(md->t, 0, t, sizeof(float) * (size_t)b));
  TRY(bp_buffer_write(md->ones, 0, &one, sizeof one));
  TRY(bp_buffer_write(md->param, 0, p, sizeof p));
  TRY(bp_buffer_write(md->m, 0, zero, sizeof zero));
  TRY(bp_buffer_write(md->v, 0, zero, sizeof zero));
  free(x);
}

/* One step on rows [0, b) of md; comm sums the gradients (NULL: alone).
 * Returns this shard's sum of squared errors before the step. */
static double step(model_t *md, bp_comm_t *comm, int b, int64_t n) {
  bp_stream_t *s = md->s;
  const uint64_t w2 = D * H * sizeof(float);
  double scale = 2.0 / N; /* d loss / d y, the whole batch's mean */
  TRY(bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, b, H, D, 1, md->x, 0, D, md->param, 0, H, 0,
              md->pre, 0, H));
  bp_tensor_t pre = vec(md->pre, 0, b, H), h = vec(md->h, 0, b, H), r = vec(md->r, 0, b, 1);
  bp_tensor_t t = vec(md->t, 0, b, 1), dh = vec(md->dh, 0, b, H), ones = vec(md->ones, 0, 1, 1);
  TRY(bp_unary(s, BP_UNARY_TANH, &pre, &h));
  TRY(bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, b, 1, H, 1, md->h, 0, H, md->param, w2, 1, 0,
              md->r, 0, 1));
  TRY(bp_binary(s, BP_BINARY_SUB, &r, &t, &r)); /* r = y - t */
  /* dW2 = scale h^T r; dh = scale r W2^T; dpre = dh (1 - h^2); dW1 = x^T dpre */
  TRY(bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_TRANS, BP_NO_TRANS, H, 1, b, scale, md->h, 0, H, md->r, 0, 1, 0,
              md->grad, w2, 1));
  TRY(bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_TRANS, b, H, 1, scale, md->r, 0, 1, md->param, w2, 1, 0,
              md->dh, 0, H));
  TRY(bp_binary(s, BP_BINARY_MUL, &h, &h, &pre)); /* pre is free: h^2 */
  TRY(bp_binary(s, BP_BINARY_SUB, &ones, &pre, &pre));
  TRY(bp_binary(s, BP_BINARY_MUL, &dh, &pre, &dh));
  TRY(bp_gemm(s, BP_F32, BP_ROW_MAJOR, BP_TRANS, BP_NO_TRANS, D, H, b, 1, md->x, 0, D, md->dh, 0, H, 0, md->grad,
              0, H));
  if (comm) TRY(bp_comm_all_reduce(comm, s, md->grad, 0, md->grad, 0, NPARAM, BP_F32, BP_COMM_SUM));
  bp_tensor_t p[2] = {vec(md->param, 0, D, H), vec(md->param, w2, H, 1)};
  bp_tensor_t g[2] = {vec(md->grad, 0, D, H), vec(md->grad, w2, H, 1)};
  bp_tensor_t m[2] = {vec(md->m, 0, D, H), vec(md->m, w2, H, 1)};
  bp_tensor_t v[2] = {vec(md->v, 0, D, H), vec(md->v, w2, H, 1)};
  bp_adam_params_t ap = {.struct_size = sizeof ap, .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                         .step = n};
  TRY(bp_adam(s, &ap, 2, p, g, m, v));
  float rr[N];
  TRY(bp_stream_synchronize(s));
  TRY(bp_buffer_read(md->r, 0, rr, sizeof(float) * (size_t)b));
  double sse = 0;
  for (int i = 0; i < b; i++) sse += (double)rr[i] * rr[i];
  return sse;
}

static void model_free(model_t *md) {
  bp_buffer_t *bufs[] = {md->x, md->t, md->pre, md->h, md->r, md->dh, md->ones, md->param, md->grad, md->m, md->v};
  for (int i = 0; i < 11; i++) bp_buffer_free(bufs[i]);
  bp_stream_destroy(md->s);
}

int main(void) {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_comm_t *comm;
  TRY(bp_context_create(NULL, &ctx));
  TRY(bp_device_open(ctx, "cpu", NULL, &dev));
  TRY(bp_comm_create(dev, NULL, &comm));
  int32_t rank, size;
  bp_comm_rank(comm, &rank);
  bp_comm_size(comm, &size);
  if (N % size) {
    fprintf(stderr, "the batch of %d does not split over %d ranks\n", N, size);
    return 1;
  }
  int lo = rank * (N / size), hi = lo + N / size;
  model_t dp, whole;
  model_init(&dp, dev, lo, hi);
  float loss_buf[1];
  bp_buffer_t *loss;
  TRY(bp_buffer_alloc(dev, sizeof(float), &loss));
  double first = 0, last = 0;
  for (int n = 1; n <= STEPS; n++) {
    loss_buf[0] = (float)step(&dp, comm, hi - lo, n);
    TRY(bp_buffer_write(loss, 0, loss_buf, sizeof loss_buf));
    TRY(bp_comm_all_reduce(comm, dp.s, loss, 0, loss, 0, 1, BP_F32, BP_COMM_SUM));
    TRY(bp_buffer_read(loss, 0, loss_buf, sizeof loss_buf));
    if (n == 1) first = loss_buf[0] / N;
    last = loss_buf[0] / N;
  }
  int status = 0;
  if (rank == 0) { /* the same training in one process, on the whole batch */
    model_init(&whole, dev, 0, N);
    for (int n = 1; n <= STEPS; n++) step(&whole, NULL, N, n);
    float a[NPARAM], b[NPARAM];
    TRY(bp_buffer_read(dp.param, 0, a, sizeof a));
    TRY(bp_buffer_read(whole.param, 0, b, sizeof b));
    double worst = 0;
    for (int k = 0; k < NPARAM; k++) worst = fmax(worst, fabs((double)a[k] - b[k]));
    printf("data_parallel: %d ranks, loss %.5f -> %.5f after %d steps; parameters differ from one process "
           "on the whole batch by at most %.2g\n", size, first, last, STEPS, worst);
    status = worst <= 1e-4 && last < first ? 0 : 1;
    model_free(&whole);
  }
  bp_buffer_free(loss);
  model_free(&dp);
  bp_comm_destroy(comm);
  bp_device_close(dev);
  bp_context_destroy(ctx);
  return status;
}
