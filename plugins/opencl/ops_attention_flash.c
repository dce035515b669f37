/*
 * ops_attention_flash.c — scaled dot-product attention on CPU drivers as
 * one flash kernel (kernels/opencl/attention.cl: att_flash): a work-item
 * per 32 query rows of a (batch, head) walks its visible keys eight at a
 * time with an online softmax, so no score matrix is written, no softmax
 * pass reads it back and a causal call never touches the masked half.
 * Q is packed transposed (query-contiguous, the kernel's vector lanes);
 * f32 and f64 keys and values with contiguous rows are read where they
 * are, other dtypes or strides are packed to the compute type first.
 * On a CPU driver a work-item's loops run as written, which is what this
 * kernel relies on; GPUs (a work-group's items in lockstep) keep the
 * GEMM-based path of ops_attention_gemm.c.
 */
#include <math.h>
#include <string.h>

#include "ocl.h"

/* Below these sizes the fused per-row kernel of ops_dnn.c wins. */
#define FLASH_MIN_SQ 16
#define FLASH_MIN_SKV 64
/* att_flash's query rows per work-item (FL_Q). */
#define FLASH_Q 32
/* Scratch (packed Q, the output accumulators, packed K and V) of one
 * chunk of heads. */
#define FLASH_SCRATCH_BYTES (64ll << 20)

typedef struct flash_geom {
  int64_t bh, hq, grp, sq, sqp, skv, d, dv, nblk;
  bool pack_kv; /* K and V packed to the compute type first */
  size_t cs;    /* compute type size */
} flash_geom_t;

static bool has_masks(const bp_attention_args_t *a) {
  return a->struct_size >= sizeof *a;
}

static void flash_geom(const bp_attention_args_t *args, flash_geom_t *g) {
  const bp_plugin_tensor_t *q = &args->q, *k = &args->k, *v = &args->v;
  g->hq = q->shape[1];
  g->bh = q->shape[0] * g->hq;
  g->grp = g->hq / k->shape[1];
  g->sq = q->shape[2], g->skv = k->shape[2], g->d = q->shape[3], g->dv = v->shape[3];
  g->nblk = (g->sq + FLASH_Q - 1) / FLASH_Q;
  g->sqp = g->nblk * FLASH_Q;
  bool direct =
      (q->dtype == BP_F32 || q->dtype == BP_F64) && k->strides[3] == 1 && v->strides[3] == 1;
  g->pack_kv = !direct;
  g->cs = q->dtype == BP_F64 ? 8 : 4;
}

/* Scratch elements of one head: Qt, the accumulators, packed K and V. */
static int64_t per_head(const flash_geom_t *g) {
  int64_t n = g->d * g->sqp + g->dv * g->sqp;
  return g->pack_kv ? n + g->skv * (g->d + g->dv) : n;
}

/* Adds one of att_flash's key / value operands: buffer, offset, the head
 * base, hq, grp and its strides. */
static void kv_args(ocl_args_t *a, const flash_geom_t *g, const bp_plugin_tensor_t *t,
                    cl_mem packed, int64_t bh0, int64_t width) {
  cl_long base = 0, s[4] = {t->strides[0], t->strides[1], t->strides[2], 0};
  cl_int hq = (cl_int)g->hq, grp = (cl_int)g->grp;
  if (packed) {
    base = bh0, hq = 1, grp = 1;
    s[0] = g->skv * width, s[1] = 0, s[2] = width;
    OCL_ARG(a, packed);
    cl_ulong zero = 0;
    OCL_ARG(a, zero);
  } else {
    ocl_arg_buf(a, t->ptr, t->offset);
  }
  OCL_ARG(a, base);
  OCL_ARG(a, hq);
  OCL_ARG(a, grp);
  ocl_arg(a, sizeof(cl_long4), s);
}

static bp_status_t flash_launch(ocl_device_t *d, cl_command_queue q, const char *opts,
                                const bp_attention_args_t *args, const flash_geom_t *g, int64_t bh0,
                                int64_t nb, cl_mem qt, cl_mem acc, cl_mem kp, cl_mem vp) {
  ocl_args_t a = {0};
  bp_status_t st = ocl_kernel_get(d, OCL_FAM_ATTENTION, opts, "att_flash", &a.k);
  if (st != BP_OK) return st;
  cl_long v[6] = {g->sqp, g->d, g->dv, g->sq, g->skv, bh0};
  cl_int causal = args->causal != 0, hq = (cl_int)g->hq;
  OCL_ARG(&a, qt);
  for (int i = 0; i < 5; i++) OCL_ARG(&a, v[i]);
  double scale = args->scale != 0 ? args->scale : 1.0 / sqrt((double)g->d);
  ocl_arg_scalar(&a, args->q.dtype, scale);
  OCL_ARG(&a, causal);
  OCL_ARG(&a, v[5]);
  OCL_ARG(&a, hq);
  kv_args(&a, g, &args->k, kp, bh0, g->d);
  kv_args(&a, g, &args->v, vp, bh0, g->dv);
  ocl_arg_buf(&a, args->out.ptr, args->out.offset);
  ocl_arg_strides4(&a, &args->out);
  OCL_ARG(&a, acc);
  ocl_arg_att_mask(&a, args);
  /* one item per group: a CPU driver's threads take whole groups */
  size_t lws[2] = {1, 1};
  size_t gws[2] = {(size_t)g->nblk, (size_t)nb};
  return ocl_enqueue(q, &a, 2, gws, lws);
}

/* One chunk of heads bh0 .. bh0 + nb - 1: pack, then the flash kernel. */
static bp_status_t flash_chunk(ocl_device_t *d, cl_command_queue q, const char *opts,
                               const bp_attention_args_t *args, const flash_geom_t *g, int64_t bh0,
                               int64_t nb, cl_mem *buf) {
  const bp_plugin_tensor_t *lens = has_masks(args) && args->kv_lens.rank ? &args->kv_lens : NULL;
  /* Qt[bi][c][i]: queries along x, one panel as wide as the padded rows */
  bp_status_t st = ocl_att_pack(d, q, opts, &args->q, 2, 3, 1, g->hq, bh0, nb, g->d, g->sq, buf[0],
                                g->d, g->sqp, g->sqp, NULL, 0);
  if (st == BP_OK && g->pack_kv) /* rows [key][c]: x along the head dim */
    st = ocl_att_pack(d, q, opts, &args->k, 3, 2, g->grp, g->hq, bh0, nb, g->skv, g->d, buf[2],
                      g->skv, g->d, g->d, lens, 2);
  if (st == BP_OK && g->pack_kv)
    st = ocl_att_pack(d, q, opts, &args->v, 3, 2, g->grp, g->hq, bh0, nb, g->skv, g->dv, buf[3],
                      g->skv, g->dv, g->dv, lens, 2);
  if (st == BP_OK) st = flash_launch(d, q, opts, args, g, bh0, nb, buf[0], buf[1], buf[2], buf[3]);
  return st;
}

bp_status_t ocl_attention_flash(ocl_device_t *d, cl_command_queue q,
                                const bp_attention_args_t *args) {
  /* BACKPLANE_OPENCL_ATTENTION=gemm: the GEMM-based path here too (tests
   * keep it covered on a CPU driver; comparisons) */
  const char *force = ocl_host->getenv ? ocl_host->getenv("BACKPLANE_OPENCL_ATTENTION") : NULL;
  if (!(d->caps.type & CL_DEVICE_TYPE_CPU) || (force && strcmp(force, "gemm") == 0))
    return BP_ERR_UNSUPPORTED;
  if (args->q.shape[2] < FLASH_MIN_SQ || args->k.shape[2] < FLASH_MIN_SKV)
    return BP_ERR_UNSUPPORTED;
  flash_geom_t g;
  flash_geom(args, &g);
  int64_t nb = FLASH_SCRATCH_BYTES / (per_head(&g) * (int64_t)g.cs);
  nb = nb < 1 ? 1 : nb > g.bh ? g.bh : nb;
  char opts[64];
  ocl_dtype_options(d, args->q.dtype, opts, sizeof opts);
  bp_status_t st = BP_OK;
  size_t cs = g.cs;
  int64_t sizes[4] = {g.d * g.sqp, g.dv * g.sqp, g.pack_kv ? g.skv * g.d : 0,
                      g.pack_kv ? g.skv * g.dv : 0};
  cl_mem buf[4] = {NULL, NULL, NULL, NULL};
  for (int i = 0; i < 4 && st == BP_OK; i++)
    if (sizes[i]) buf[i] = ocl_scratch(d, q, (size_t)(nb * sizes[i]) * cs, &st);
  for (int64_t bh0 = 0; bh0 < g.bh && st == BP_OK; bh0 += nb)
    st = flash_chunk(d, q, opts, args, &g, bh0, g.bh - bh0 < nb ? g.bh - bh0 : nb, buf);
  /* OpenCL keeps the buffers alive until the queued kernels finish. */
  for (int i = 0; i < 4; i++)
    if (buf[i]) ocl_api.clReleaseMemObject(buf[i]);
  return st;
}
