/*
 * bench_anchor_blas.c — the CBLAS anchors of bp bench: OpenBLAS (Debian's,
 * and scipy-openblas32, whose symbols carry a scipy_ prefix) and Intel MKL,
 * opened with dlopen. Each says which kernel it selected: OpenBLAS its core
 * name, MKL its conditional-numerical-reproducibility branch (the code path
 * its dispatcher picked) and processor string. OpenBLAS picks its generic
 * Prescott kernels on a CPU it does not know, so when its core is lesser
 * than the CPU and the caller did not choose one, it is reopened with
 * OPENBLAS_CORETYPE set (read by its constructor, hence before dlopen).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "bench_anchor.h"
#include "kernels/common/bp_half.h"

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                         int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *,
                         int, double, double *, int);
/* MKL's cblas_gemm_bf16bf16f32 and cblas_gemm_f16f16f32: 16-bit inputs,
 * f32 output. */
typedef void (*gemm16_fn)(int, int, int, int, int, int, float, const uint16_t *, int,
                          const uint16_t *, int, float, float *, int);

typedef struct blas_api {
  sgemm_fn sgemm;
  dgemm_fn dgemm;
  gemm16_fn bf16, f16;
} blas_api_t;

static void *sym(void *dl, const char *prefix, const char *name) {
  char full[128];
  snprintf(full, sizeof full, "%s%s", prefix, name);
  return dlsym(dl, full);
}

/* ---------------------------------------------------------------------------
 * Which kernels.
 */
static bench_isa_level_t openblas_core_level(const char *core) {
  static const char *const avx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  static const char *const avx2[] = {"Haswell", "Zen"};
  static const char *const avx[] = {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller",
                                    "Excavator"};
  for (size_t i = 0; i < sizeof avx512 / sizeof *avx512; i++)
    if (!strcasecmp(core, avx512[i])) return BENCH_ISA_AVX512;
  for (size_t i = 0; i < sizeof avx2 / sizeof *avx2; i++)
    if (!strcasecmp(core, avx2[i])) return BENCH_ISA_AVX2;
  for (size_t i = 0; i < sizeof avx / sizeof *avx; i++)
    if (!strcasecmp(core, avx[i])) return BENCH_ISA_AVX;
  return BENCH_ISA_SSE;
}

/* The core OpenBLAS knows for a CPU of this level. */
static const char *openblas_core_for(bench_isa_level_t cpu) {
  return cpu == BENCH_ISA_AVX512 ? "SkylakeX"
         : cpu == BENCH_ISA_AVX2 ? "Haswell"
         : cpu == BENCH_ISA_AVX  ? "Sandybridge"
                                 : "Prescott";
}

/* MKL's CBWR branch (mkl_types.h values) as a name and a level. */
static const char *mkl_branch_name(int branch, bench_isa_level_t *level) {
  *level = branch >= 12 ? BENCH_ISA_AVX512 : branch >= 10 ? BENCH_ISA_AVX2 : BENCH_ISA_SSE;
  switch (branch) {
  case 3:
    return "COMPATIBLE";
  case 4:
    return "SSE2";
  case 8:
    return "SSE4_2";
  case 9:
    *level = BENCH_ISA_AVX;
    return "AVX";
  case 10:
    return "AVX2";
  case 12:
    return "AVX512";
  case 14:
    return "AVX512_E1";
  case 15:
    return "AVX10";
  default:
    return branch > 15 ? "newer than AVX10" : "unknown";
  }
}

/* ---------------------------------------------------------------------------
 * Opening.
 */
static bool resolve(bench_lib_t *lib, const char *prefix, blas_api_t *api) {
  *(void **)&api->sgemm = sym(lib->dl, prefix, "cblas_sgemm");
  *(void **)&api->dgemm = sym(lib->dl, prefix, "cblas_dgemm");
  *(void **)&api->bf16 = sym(lib->dl, prefix, "cblas_gemm_bf16bf16f32");
  *(void **)&api->f16 = sym(lib->dl, prefix, "cblas_gemm_f16f16f32");
  if (api->sgemm && api->dgemm) return true;
  snprintf(lib->why, sizeof lib->why, "%s has no %scblas_sgemm/%scblas_dgemm", lib->path, prefix,
           prefix);
  return false;
}

static const char *openblas_core(bench_lib_t *lib, const char *prefix) {
  const char *(*corename)(void);
  *(void **)&corename = sym(lib->dl, prefix, "openblas_get_corename");
  return corename ? corename() : "unknown";
}

static bool load(bench_lib_t *lib) {
  lib->dl = dlopen(lib->path, RTLD_NOW | RTLD_LOCAL);
  if (!lib->dl) {
    const char *e = dlerror();
    snprintf(lib->why, sizeof lib->why, "%s", e ? e : "dlopen failed");
  }
  return lib->dl != NULL;
}

/* Reopens OpenBLAS with OPENBLAS_CORETYPE set for this CPU when it picked a
 * lesser core on its own (or one above the --isa ceiling); a core the
 * caller chose is kept (and marked). */
static void openblas_choose_core(bench_lib_t *lib, const char *prefix, bench_isa_level_t cpu) {
  char chose[64];
  snprintf(chose, sizeof chose, "%s", openblas_core(lib, prefix));
  if (bench_isa_level_fits(openblas_core_level(chose))) return;
  const char *user = getenv("OPENBLAS_CORETYPE");
  if (user) {
    snprintf(lib->forced, sizeof lib->forced, "OPENBLAS_CORETYPE=%s set by the caller: left as is",
             user);
    return;
  }
  const char *want = openblas_core_for(cpu);
  dlclose(lib->dl);
  setenv("OPENBLAS_CORETYPE", want, 1);
  bool ok = load(lib);
  unsetenv("OPENBLAS_CORETYPE"); /* the next OpenBLAS decides on its own */
  if (ok)
    snprintf(lib->forced, sizeof lib->forced,
             "forced OPENBLAS_CORETYPE=%s (it chose %s on this CPU)", want, chose);
}

static void open_openblas(bench_lib_t *lib, const char *prefix, bench_isa_level_t cpu,
                          blas_api_t *api) {
  openblas_choose_core(lib, prefix, cpu);
  if (!lib->dl || !resolve(lib, prefix, api)) return;
  const char *core = openblas_core(lib, prefix);
  bench_isa_level_t level = openblas_core_level(core);
  lib->comparable = bench_isa_level_fits(level);
  snprintf(lib->kernel, sizeof lib->kernel, "core %s (%s kernels)", core,
           bench_isa_level_name(level));
  char *(*get_config)(void);
  void (*set_threads)(int);
  *(void **)&get_config = sym(lib->dl, prefix, "openblas_get_config");
  *(void **)&set_threads = sym(lib->dl, prefix, "openblas_set_num_threads");
  snprintf(lib->version, sizeof lib->version, "%s",
           get_config ? get_config() : "OpenBLAS (no openblas_get_config)");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (set_threads) set_threads(cores > 0 ? (int)cores : 1);
  lib->present = true;
}

typedef struct mkl_version {
  int major, minor, update, patch;
  char *status, *build, *processor, *platform;
} mkl_version_t;

static void open_mkl(bench_lib_t *lib, blas_api_t *api) {
  if (!resolve(lib, "", api)) return;
  void (*version_string)(char *, int);
  void (*version)(mkl_version_t *);
  int (*auto_branch)(void);
  void (*set_threads)(int);
  *(void **)&version_string = dlsym(lib->dl, "MKL_Get_Version_String");
  *(void **)&version = dlsym(lib->dl, "MKL_Get_Version");
  *(void **)&auto_branch = dlsym(lib->dl, "MKL_CBWR_Get_Auto_Branch");
  *(void **)&set_threads = dlsym(lib->dl, "MKL_Set_Num_Threads");
  if (version_string)
    version_string(lib->version, (int)sizeof lib->version);
  else
    snprintf(lib->version, sizeof lib->version, "MKL (no MKL_Get_Version_String)");
  mkl_version_t v = {0};
  if (version) version(&v);
  bench_isa_level_t level = BENCH_ISA_SSE;
  const char *branch = auto_branch ? mkl_branch_name(auto_branch(), &level) : "unknown";
  lib->comparable = auto_branch && bench_isa_level_fits(level);
  snprintf(lib->kernel, sizeof lib->kernel, "branch %s; %s", branch,
           v.processor ? v.processor : "no processor string");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (set_threads) set_threads(cores > 0 ? (int)cores : 1);
  lib->present = true;
}

void bench_blas_open(bench_lib_t *lib, const char *path, const char *prefix,
                     bench_isa_level_t cpu) {
  snprintf(lib->path, sizeof lib->path, "%s", path);
  blas_api_t *api = calloc(1, sizeof *api);
  if (!api) {
    snprintf(lib->why, sizeof lib->why, "out of memory");
    return;
  }
  lib->api = api;
  if (!load(lib)) return;
  if (lib->id == BENCH_LIB_MKL)
    open_mkl(lib, api);
  else
    open_openblas(lib, prefix, cpu, api);
  if (!lib->present) return;
  /* Loading started its worker threads, which spin a while before they
   * park (OpenBLAS's THREAD_TIMEOUT, OpenMP's blocktime): the first case
   * timed after this would share the cores with them. */
  usleep(300000);
}

void bench_lib_unload(bench_lib_t *lib) {
  /* MKL and oneDNN keep OpenMP thread pools that do not survive being
   * unloaded under them; the process ends soon after anyway. */
  bool closable = lib->id == BENCH_LIB_OPENBLAS || lib->id == BENCH_LIB_OPENBLAS_NEW;
  if (lib->id == BENCH_LIB_ONEDNN) bench_dnnl_close(lib); /* its engine, stream */
  if (lib->dl && closable) dlclose(lib->dl);
  free(lib->api);
  lib->dl = lib->api = NULL;
}

/* ---------------------------------------------------------------------------
 * GEMM cases: every matrix of the batch, row-major, no transposes.
 */
typedef struct blas_case {
  const blas_api_t *api;
  bpt_case_t c;
  void *a, *b, *cc;
} blas_case_t;

static void blas_call(bench_lib_case_t *lc) {
  blas_case_t *s = lc->state;
  const bpt_case_t *c = &s->c;
  int m = (int)c->m, n = (int)c->n, k = (int)c->k;
  int tb = c->trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, ldb = c->trans_b ? k : n;
  for (int64_t i = 0; i < c->batch; i++) {
    size_t oa = (size_t)(i * m * k), ob = (size_t)(i * k * n), oc = (size_t)(i * m * n);
    switch (c->dtype) {
    case BP_F64:
      s->api->dgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, tb, m, n, k, 1.0, (double *)s->a + oa, k,
                    (double *)s->b + ob, ldb, 0.0, (double *)s->cc + oc, n);
      break;
    case BP_BF16:
    case BP_F16:
      (c->dtype == BP_BF16 ? s->api->bf16 : s->api->f16)(
          CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, tb, m, n, k, 1.0f, (uint16_t *)s->a + oa, k,
          (uint16_t *)s->b + ob, ldb, 0.0f, (float *)s->cc + oc, n);
      break;
    default:
      s->api->sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, tb, m, n, k, 1.0f, (float *)s->a + oa, k,
                    (float *)s->b + ob, ldb, 0.0f, (float *)s->cc + oc, n);
    }
  }
}

static void blas_release(bench_lib_case_t *lc) {
  blas_case_t *s = lc->state;
  if (!s) return;
  free(s->a);
  free(s->b);
  free(s->cc);
  free(s);
  lc->state = NULL;
}

/* Fills n 16-bit values from uniform f32 numbers. */
static void fill_half(uint16_t *p, size_t n, bool bf16) {
  float tmp[256];
  for (size_t i = 0; i < n; i += 256) {
    size_t len = n - i < 256 ? n - i : 256;
    bench_fill_uniform(tmp, len, false);
    for (size_t j = 0; j < len; j++)
      p[i + j] = bf16 ? bp_f32_to_bf16(tmp[j]) : bp_f32_to_f16(tmp[j]);
  }
}

static bool blas_runs(const blas_api_t *api, bp_dtype_t dt) {
  return dt == BP_F32 || dt == BP_F64 || (dt == BP_BF16 && api->bf16) || (dt == BP_F16 && api->f16);
}

int bench_blas_case(bench_lib_t *lib, const bpt_case_t *c, bench_lib_case_t *out) {
  const blas_api_t *api = lib->api;
  if (!lib->present || c->op != BPT_GEMM || !blas_runs(api, c->dtype)) return 0;
  blas_case_t *s = calloc(1, sizeof *s);
  if (!s) return 0;
  *s = (blas_case_t){.api = api, .c = *c};
  bool wide = c->dtype == BP_F64, half = c->dtype == BP_BF16 || c->dtype == BP_F16;
  size_t in_es = wide ? 8 : half ? 2 : 4, out_es = wide ? 8 : 4;
  size_t na = (size_t)(c->batch * c->m * c->k), nb = (size_t)(c->batch * c->k * c->n);
  s->a = bench_huge_buffer(na * in_es);
  s->b = bench_huge_buffer(nb * in_es);
  s->cc = bench_huge_buffer((size_t)(c->batch * c->m * c->n) * out_es);
  *out = (bench_lib_case_t){.name = lib->name,
                            .lib = lib,
                            .comparable = lib->comparable,
                            .call = blas_call,
                            .release = blas_release,
                            .state = s};
  snprintf(out->kernel, sizeof out->kernel, "%s", lib->kernel);
  if (!s->a || !s->b || !s->cc) {
    blas_release(out);
    return 0;
  }
  if (half) {
    fill_half(s->a, na, c->dtype == BP_BF16);
    fill_half(s->b, nb, c->dtype == BP_BF16);
  } else {
    bench_fill_uniform(s->a, na, wide);
    bench_fill_uniform(s->b, nb, wide);
  }
  return 1;
}
