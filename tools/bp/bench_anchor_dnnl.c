/*
 * bench_anchor_dnnl.c — oneDNN 3.x (the CPU build, PyPI onednn-cpu-gomp) as
 * an anchor of bp bench, through its C API opened with dlopen: the matmul
 * primitive for GEMM (f32, bf16, f16, row-major operands) and the
 * convolution primitive for conv2d in two forms: in the layouts oneDNN
 * prefers (format "any": blocked channels; weights reordered once, outside
 * the timing), and the same with the reorders from and back to NCHW that
 * a caller holding NCHW tensors pays. oneDNN reports the ISA it dispatches
 * (dnnl_get_effective_cpu_isa) and each primitive's implementation name.
 *
 * No oneDNN header is needed: the few types and values used are declared
 * here as the oneDNN 3 C API (dnnl_types.h) defines them.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench_anchor.h"
#include "kernels/common/bp_half.h"

typedef int64_t dnnl_dims_t[12];
typedef void *dnnl_handle_t; /* engine, stream, memory, primitive, pd, md */
typedef struct dnnl_version {
  int major, minor, patch;
  const char *hash;
  unsigned cpu_runtime, gpu_runtime;
} dnnl_version_t;
typedef struct dnnl_exec_arg {
  int arg;
  dnnl_handle_t memory;
} dnnl_exec_arg_t;

enum {
  DNNL_CPU_ENGINE = 1,
  DNNL_STREAM_IN_ORDER = 1,
  DNNL_F16 = 1,
  DNNL_BF16 = 2,
  DNNL_F32 = 3,
  DNNL_FORMAT_ANY = 1,
  DNNL_FORWARD_INFERENCE = 96,
  DNNL_CONVOLUTION_DIRECT = 1,
  DNNL_QUERY_IMPL_INFO_STR = 8,
  DNNL_QUERY_SRC_MD = 129,
  DNNL_QUERY_WEIGHTS_MD = 131,
  DNNL_QUERY_DST_MD = 133,
  DNNL_ARG_SRC = 1,
  DNNL_ARG_DST = 17,
  DNNL_ARG_WEIGHTS = 33,
  DNNL_ISA_AVX = 0x3,
  DNNL_ISA_AVX2 = 0x7,
  DNNL_ISA_AVX512_CORE = 0x27,
};
#define DNNL_MEMORY_ALLOCATE ((void *)(size_t)-1)

typedef struct dnnl_api {
  const dnnl_version_t *(*version)(void);
  int (*effective_isa)(void);
  int (*engine_create)(dnnl_handle_t *, int, size_t);
  int (*engine_destroy)(dnnl_handle_t);
  int (*stream_create)(dnnl_handle_t *, dnnl_handle_t, unsigned);
  int (*stream_wait)(dnnl_handle_t);
  int (*stream_destroy)(dnnl_handle_t);
  int (*md_with_strides)(dnnl_handle_t *, int, const dnnl_dims_t, int, const dnnl_dims_t);
  int (*md_with_tag)(dnnl_handle_t *, int, const dnnl_dims_t, int, int);
  int (*md_destroy)(dnnl_handle_t);
  int (*md_equal)(const void *, const void *);
  size_t (*md_size)(const void *);
  int (*matmul_pd)(dnnl_handle_t *, dnnl_handle_t, const void *, const void *, const void *,
                   const void *, const void *);
  int (*conv_pd)(dnnl_handle_t *, dnnl_handle_t, int, int, const void *, const void *, const void *,
                 const void *, const dnnl_dims_t, const dnnl_dims_t, const dnnl_dims_t,
                 const dnnl_dims_t, const void *);
  int (*reorder_pd)(dnnl_handle_t *, const void *, dnnl_handle_t, const void *, dnnl_handle_t,
                    const void *);
  const void *(*query_md)(const void *, int, int);
  int (*query)(const void *, int, int, void *);
  int (*pd_destroy)(dnnl_handle_t);
  int (*primitive_create)(dnnl_handle_t *, const void *);
  int (*primitive_execute)(const void *, dnnl_handle_t, int, const dnnl_exec_arg_t *);
  int (*primitive_destroy)(dnnl_handle_t);
  int (*memory_create)(dnnl_handle_t *, const void *, dnnl_handle_t, void *);
  int (*memory_handle)(const void *, void **);
  int (*memory_destroy)(dnnl_handle_t);
  dnnl_handle_t engine, stream;
} dnnl_api_t;

#define DNNL_SYMBOLS(X)                                                                            \
  X(version, "dnnl_version")                                                                       \
  X(effective_isa, "dnnl_get_effective_cpu_isa") X(engine_create, "dnnl_engine_create")            \
      X(engine_destroy, "dnnl_engine_destroy") X(stream_create, "dnnl_stream_create")              \
          X(stream_wait, "dnnl_stream_wait") X(stream_destroy, "dnnl_stream_destroy") X(           \
              md_with_strides, "dnnl_memory_desc_create_with_strides")                             \
              X(md_with_tag, "dnnl_memory_desc_create_with_tag") X(                                \
                  md_destroy, "dnnl_memory_desc_destroy") X(md_equal, "dnnl_memory_desc_equal")    \
                  X(md_size, "dnnl_memory_desc_get_size") X(matmul_pd,                             \
                                                            "dnnl_matmul_primitive_desc_create")   \
                      X(conv_pd, "dnnl_convolution_forward_primitive_desc_create") X(              \
                          reorder_pd, "dnnl_reorder_primitive_desc_create")                        \
                          X(query_md,                                                              \
                            "dnnl_primitive_desc_query_md") X(query, "dnnl_primitive_desc_query")  \
                              X(pd_destroy, "dnnl_primitive_desc_destroy")                         \
                                  X(primitive_create, "dnnl_primitive_create")                     \
                                      X(primitive_execute, "dnnl_primitive_execute")               \
                                          X(primitive_destroy, "dnnl_primitive_destroy")           \
                                              X(memory_create, "dnnl_memory_create")               \
                                                  X(memory_handle, "dnnl_memory_get_data_handle")  \
                                                      X(memory_destroy, "dnnl_memory_destroy")

static const char *isa_name(int isa) {
  switch (isa) {
  case 0x1:
    return "sse41";
  case 0x3:
    return "avx";
  case 0x7:
    return "avx2";
  case 0xf:
    return "avx2_vnni";
  case 0x1f:
    return "avx2_vnni_2";
  case 0x27:
    return "avx512_core";
  case 0x67:
    return "avx512_core_vnni";
  case 0xe7:
    return "avx512_core_bf16";
  case 0x1ef:
    return "avx512_core_fp16";
  case 0xfef:
    return "avx512_core_amx";
  case 0x1fef:
    return "avx512_core_amx_fp16";
  default:
    return "unknown";
  }
}

static bool resolve(bench_lib_t *lib, dnnl_api_t *api) {
#define RESOLVE(field, name)                                                                       \
  if (!(*(void **)&api->field = dlsym(lib->dl, name))) {                                           \
    snprintf(lib->why, sizeof lib->why, "%s has no %s", lib->path, name);                          \
    return false;                                                                                  \
  }
  DNNL_SYMBOLS(RESOLVE)
#undef RESOLVE
  return true;
}

void bench_dnnl_open(bench_lib_t *lib, const char *path) {
  snprintf(lib->path, sizeof lib->path, "%s", path);
  dnnl_api_t *api = calloc(1, sizeof *api);
  lib->api = api;
  lib->dl = api ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!lib->dl) {
    const char *e = api ? dlerror() : "out of memory";
    snprintf(lib->why, sizeof lib->why, "%s", e ? e : "dlopen failed");
    return;
  }
  if (!resolve(lib, api)) return;
  if (api->engine_create(&api->engine, DNNL_CPU_ENGINE, 0) != 0 ||
      api->stream_create(&api->stream, api->engine, DNNL_STREAM_IN_ORDER) != 0) {
    snprintf(lib->why, sizeof lib->why, "%s: no CPU engine", path);
    return;
  }
  const dnnl_version_t *v = api->version();
  snprintf(lib->version, sizeof lib->version, "oneDNN %d.%d.%d (%s)", v->major, v->minor, v->patch,
           v->hash ? v->hash : "");
  int isa = api->effective_isa();
  bench_isa_level_t level = isa >= DNNL_ISA_AVX512_CORE ? BENCH_ISA_AVX512
                            : isa >= DNNL_ISA_AVX2      ? BENCH_ISA_AVX2
                            : isa >= DNNL_ISA_AVX       ? BENCH_ISA_AVX
                                                        : BENCH_ISA_SSE;
  lib->comparable = bench_isa_level_fits(level);
  snprintf(lib->kernel, sizeof lib->kernel, "ISA %s", isa_name(isa));
  lib->present = true;
}

void bench_dnnl_close(bench_lib_t *lib) {
  dnnl_api_t *api = lib->api;
  if (!api) return;
  if (api->stream && api->stream_destroy) api->stream_destroy(api->stream);
  if (api->engine && api->engine_destroy) api->engine_destroy(api->engine);
  api->stream = api->engine = NULL;
}

/* ---------------------------------------------------------------------------
 * A primitive with its memories: up to 3 steps (reorder in, op, reorder
 * out), each executed in order on the library's stream.
 */
typedef struct dnnl_step {
  dnnl_handle_t prim;
  dnnl_exec_arg_t args[3];
  int nargs;
} dnnl_step_t;

typedef struct dnnl_case {
  dnnl_api_t *api;
  dnnl_step_t step[3];
  int nsteps;
  dnnl_handle_t mem[8];
  int nmem;
} dnnl_case_t;

static void dnnl_call(bench_lib_case_t *lc) {
  dnnl_case_t *s = lc->state;
  for (int i = 0; i < s->nsteps; i++)
    s->api->primitive_execute(s->step[i].prim, s->api->stream, s->step[i].nargs, s->step[i].args);
  s->api->stream_wait(s->api->stream);
}

static void dnnl_release(bench_lib_case_t *lc) {
  dnnl_case_t *s = lc->state;
  if (!s) return;
  for (int i = 0; i < s->nsteps; i++) s->api->primitive_destroy(s->step[i].prim);
  for (int i = 0; i < s->nmem; i++) s->api->memory_destroy(s->mem[i]);
  free(s);
  lc->state = NULL;
}

/* n 16-bit values (bf16 or f16) from uniform f32 numbers. */
static void fill_half(uint16_t *p, size_t n, bool bf16) {
  float tmp[256];
  for (size_t i = 0; i < n; i += 256) {
    size_t len = n - i < 256 ? n - i : 256;
    bench_fill_uniform(tmp, len, false);
    for (size_t j = 0; j < len; j++)
      p[i + j] = bf16 ? bp_f32_to_bf16(tmp[j]) : bp_f32_to_f16(tmp[j]);
  }
}

/* A memory of md filled with uniform numbers of the oneDNN type fill, or
 * zeros (fill 0); NULL on error. Inputs get numbers in every type: the AMX
 * and AVX-512 units run faster on zeros than on data, and our side of
 * each case runs on random inputs. */
static dnnl_handle_t new_memory(dnnl_case_t *s, const void *md, int fill) {
  dnnl_handle_t m = NULL;
  if (s->nmem == 8 || s->api->memory_create(&m, md, s->api->engine, DNNL_MEMORY_ALLOCATE))
    return NULL;
  s->mem[s->nmem++] = m;
  void *p = NULL;
  size_t bytes = s->api->md_size(md);
  if (s->api->memory_handle(m, &p) == 0 && p) {
    if (fill == DNNL_F32)
      bench_fill_uniform(p, bytes / 4, false);
    else if (fill == DNNL_BF16 || fill == DNNL_F16)
      fill_half(p, bytes / 2, fill == DNNL_BF16);
    else
      memset(p, 0, bytes);
  }
  return m;
}

/* Adds a step running pd's primitive on the given (arg, memory) pairs, and
 * names the case's kernel after it; destroys pd. */
static bool add_step(dnnl_case_t *s, dnnl_handle_t pd, const dnnl_exec_arg_t *args, int nargs,
                     bench_lib_case_t *lc) {
  const char *impl = NULL;
  if (s->api->query(pd, DNNL_QUERY_IMPL_INFO_STR, 0, &impl) == 0 && impl && lc)
    snprintf(lc->kernel, sizeof lc->kernel, "%s", impl);
  dnnl_step_t *st = &s->step[s->nsteps];
  bool ok = s->api->primitive_create(&st->prim, pd) == 0;
  s->api->pd_destroy(pd);
  if (!ok) return false;
  memcpy(st->args, args, (size_t)nargs * sizeof *args);
  st->nargs = nargs;
  s->nsteps++;
  return true;
}

/* Runs a reorder from one memory to another once (weights). */
static bool reorder_once(dnnl_case_t *s, dnnl_handle_t from, const void *from_md, dnnl_handle_t to,
                         const void *to_md) {
  dnnl_handle_t pd = NULL, prim = NULL;
  if (s->api->reorder_pd(&pd, from_md, s->api->engine, to_md, s->api->engine, NULL)) return false;
  bool ok = s->api->primitive_create(&prim, pd) == 0;
  s->api->pd_destroy(pd);
  if (!ok) return false;
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, from}, {DNNL_ARG_DST, to}};
  s->api->primitive_execute(prim, s->api->stream, 2, args);
  s->api->stream_wait(s->api->stream);
  s->api->primitive_destroy(prim);
  return true;
}

/* Adds a timed reorder step between two memories. */
static bool add_reorder(dnnl_case_t *s, dnnl_handle_t from, const void *from_md, dnnl_handle_t to,
                        const void *to_md) {
  dnnl_handle_t pd = NULL;
  if (s->api->reorder_pd(&pd, from_md, s->api->engine, to_md, s->api->engine, NULL)) return false;
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, from}, {DNNL_ARG_DST, to}};
  return add_step(s, pd, args, 2, NULL);
}

static int dnnl_type(bp_dtype_t dt) {
  return dt == BP_F32 ? DNNL_F32 : dt == BP_BF16 ? DNNL_BF16 : dt == BP_F16 ? DNNL_F16 : 0;
}

/* A plain row-major (dense, last dimension fastest) descriptor. */
static dnnl_handle_t plain_md(dnnl_api_t *api, int nd, const int64_t *dims, int type) {
  dnnl_dims_t d = {0}, strides = {0};
  int64_t stride = 1;
  for (int i = nd - 1; i >= 0; i--) {
    d[i] = dims[i];
    strides[i] = stride;
    stride *= dims[i];
  }
  dnnl_handle_t md = NULL;
  return api->md_with_strides(&md, nd, d, type, strides) == 0 ? md : NULL;
}

/* dims (batch,) rows, cols stored with its last two dimensions swapped:
 * B given as Bᵀ. */
static dnnl_handle_t transposed_md(dnnl_api_t *api, int nd, const int64_t *dims, int type) {
  dnnl_dims_t d = {0}, strides = {0};
  memcpy(d, dims, (size_t)nd * sizeof *dims);
  strides[nd - 2] = 1;
  strides[nd - 1] = dims[nd - 2];
  if (nd == 3) strides[0] = dims[1] * dims[2];
  dnnl_handle_t md = NULL;
  return api->md_with_strides(&md, nd, d, type, strides) == 0 ? md : NULL;
}

static dnnl_handle_t any_md(dnnl_api_t *api, int nd, const int64_t *dims, int type) {
  dnnl_dims_t d = {0};
  memcpy(d, dims, (size_t)nd * sizeof *dims);
  dnnl_handle_t md = NULL;
  return api->md_with_tag(&md, nd, d, type, DNNL_FORMAT_ANY) == 0 ? md : NULL;
}

static void free_mds(dnnl_api_t *api, dnnl_handle_t *md, int n) {
  for (int i = 0; i < n; i++)
    if (md[i]) api->md_destroy(md[i]);
}

/* ---------------------------------------------------------------------------
 * matmul: batch x (m x k) . (k x n), row-major (B as Bᵀ for a trans_b case),
 * output in the input type.
 */
static bool build_matmul(dnnl_case_t *s, const bpt_case_t *c, bench_lib_case_t *lc) {
  int type = dnnl_type(c->dtype), nd = c->batch > 1 ? 3 : 2;
  int64_t a[3] = {c->batch, c->m, c->k}, b[3] = {c->batch, c->k, c->n},
          d[3] = {c->batch, c->m, c->n};
  int off = nd == 3 ? 0 : 1;
  dnnl_handle_t md[3] = {plain_md(s->api, nd, a + off, type),
                         c->trans_b ? transposed_md(s->api, nd, b + off, type)
                                    : plain_md(s->api, nd, b + off, type),
                         plain_md(s->api, nd, d + off, type)};
  dnnl_handle_t pd = NULL, ma, mb, mc;
  bool ok = md[0] && md[1] && md[2] &&
            s->api->matmul_pd(&pd, s->api->engine, md[0], md[1], NULL, md[2], NULL) == 0;
  ok = ok && (ma = new_memory(s, md[0], type)) &&
       (mb = new_memory(s, md[1], type)) && (mc = new_memory(s, md[2], 0));
  if (ok) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    ok = add_step(s, pd, args, 3, lc);
  } else if (pd) {
    s->api->pd_destroy(pd);
  }
  free_mds(s->api, md, 3);
  return ok;
}

/* ---------------------------------------------------------------------------
 * conv2d: NCHW in and out, weights (G,) K, C/G, R, R.
 */
typedef struct conv_dims {
  int64_t src[4], dst[4], wei[5];
  int wnd;
  dnnl_dims_t strides, dilates, pad;
} conv_dims_t;

static void conv_dims(const bpt_case_t *c, conv_dims_t *d) {
  int64_t p = (c->hw + 2 * c->pad - c->r) / c->stride + 1, g = c->groups;
  memset(d, 0, sizeof *d);
  memcpy(d->src, (int64_t[4]){c->batch, c->c, c->hw, c->hw}, sizeof d->src);
  memcpy(d->dst, (int64_t[4]){c->batch, c->k, p, p}, sizeof d->dst);
  if (g > 1) {
    memcpy(d->wei, (int64_t[5]){g, c->k / g, c->c / g, c->r, c->r}, sizeof d->wei);
    d->wnd = 5;
  } else {
    memcpy(d->wei, (int64_t[5]){c->k, c->c, c->r, c->r, 0}, sizeof d->wei);
    d->wnd = 4;
  }
  d->strides[0] = d->strides[1] = c->stride;
  d->pad[0] = d->pad[1] = c->pad; /* dilates stay 0: no dilation */
}

/* The convolution in oneDNN's preferred layouts; with nchw, the reorders
 * from and to NCHW are steps of the call. */
static bool build_conv(dnnl_case_t *s, const bpt_case_t *c, bool nchw, bench_lib_case_t *lc) {
  dnnl_api_t *api = s->api;
  int type = dnnl_type(c->dtype);
  conv_dims_t d;
  conv_dims(c, &d);
  dnnl_handle_t md[6] = {any_md(api, 4, d.src, type),       any_md(api, d.wnd, d.wei, type),
                         any_md(api, 4, d.dst, type),       plain_md(api, 4, d.src, type),
                         plain_md(api, d.wnd, d.wei, type), plain_md(api, 4, d.dst, type)};
  dnnl_handle_t pd = NULL;
  bool ok = md[0] && md[1] && md[2] && md[3] && md[4] && md[5] &&
            api->conv_pd(&pd, api->engine, DNNL_FORWARD_INFERENCE, DNNL_CONVOLUTION_DIRECT, md[0],
                         md[1], NULL, md[2], d.strides, d.dilates, d.pad, d.pad, NULL) == 0;
  const void *src_md = ok ? api->query_md(pd, DNNL_QUERY_SRC_MD, 0) : NULL;
  const void *wei_md = ok ? api->query_md(pd, DNNL_QUERY_WEIGHTS_MD, 0) : NULL;
  const void *dst_md = ok ? api->query_md(pd, DNNL_QUERY_DST_MD, 0) : NULL;
  dnnl_handle_t src = NULL, wei = NULL, dst = NULL, src_plain = NULL, wei_plain = NULL,
                dst_plain = NULL;
  ok = ok && src_md && wei_md && dst_md && (src = new_memory(s, src_md, type)) &&
       (wei = new_memory(s, wei_md, 0)) && (dst = new_memory(s, dst_md, 0)) &&
       (wei_plain = new_memory(s, md[4], type)) &&
       reorder_once(s, wei_plain, md[4], wei, wei_md);
  if (ok && nchw) {
    ok = (src_plain = new_memory(s, md[3], type)) &&
         (dst_plain = new_memory(s, md[5], 0)) &&
         (api->md_equal(md[3], src_md) || add_reorder(s, src_plain, md[3], src, src_md));
  }
  if (ok) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    ok = add_step(s, pd, args, 3, lc); /* pd's mds stay valid until here */
    pd = NULL;
  }
  if (ok && nchw && !api->md_equal(md[5], dst_md))
    ok = add_reorder(s, dst, dst_md, dst_plain, md[5]);
  if (pd) api->pd_destroy(pd);
  free_mds(api, md, 6);
  return ok;
}

/* ---------------------------------------------------------------------------
 * The cases.
 */
static int new_case(bench_lib_t *lib, const bpt_case_t *c, const char *name, bool nchw,
                    bench_lib_case_t *out) {
  dnnl_case_t *s = calloc(1, sizeof *s);
  if (!s) return 0;
  s->api = lib->api;
  *out = (bench_lib_case_t){.name = name,
                            .lib = lib,
                            .comparable = lib->comparable,
                            .call = dnnl_call,
                            .release = dnnl_release,
                            .state = s};
  bool ok = c->op == BPT_GEMM ? build_matmul(s, c, out) : build_conv(s, c, nchw, out);
  if (!ok) {
    dnnl_release(out);
    return 0;
  }
  /* A reference implementation is not what the library runs in earnest. */
  if (!strncmp(out->kernel, "ref", 3)) out->comparable = false;
  return 1;
}

int bench_dnnl_cases(bench_lib_t *lib, const bpt_case_t *c, bench_lib_case_t *out, int cap) {
  if (!lib->present || cap < 1 || !dnnl_type(c->dtype)) return 0;
  if (c->op == BPT_GEMM) return new_case(lib, c, "onednn", false, out);
  if (c->op != BPT_CONV2D) return 0;
  int n = new_case(lib, c, "onednn", false, out);
  if (n < cap) n += new_case(lib, c, "onednn-nchw", true, out + n);
  return n;
}
