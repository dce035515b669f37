/*
 * bench_anchor_set.c — the set of library anchors bp bench measures against:
 * where each is looked for (the system for Debian's OpenBLAS, the virtual
 * environment `make bench` fills for the others), why one is absent (not
 * installed, or pip could not fetch it: `make bench` leaves pip's reason in
 * the venv as missing-PACKAGE.txt), and the cases each runs.
 */
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_anchor.h"

static bench_isa_level_t isa_cap = BENCH_ISA_AVX512;

static bench_isa_level_t detected_isa_level(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return BENCH_ISA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return BENCH_ISA_AVX2;
  if (__builtin_cpu_supports("avx")) return BENCH_ISA_AVX;
#endif
  return BENCH_ISA_SSE;
}

bench_isa_level_t bench_cpu_isa_level(void) {
  bench_isa_level_t cpu = detected_isa_level();
  return cpu < isa_cap ? cpu : isa_cap;
}

bool bench_isa_capped(void) { return detected_isa_level() > isa_cap; }

bool bench_isa_level_fits(bench_isa_level_t kernel) {
  bench_isa_level_t cpu = bench_cpu_isa_level();
  return kernel >= cpu && (!bench_isa_capped() || kernel == cpu);
}

/* Each library's own switch for its instruction-set ceiling, read when it
 * loads (so set before any anchor is opened or PyTorch started); a value
 * the caller set is left as is. OpenBLAS is forced per core instead
 * (bench_anchor_blas.c). */
static void cap_library_isa(const char *var, const char *const values[4]) {
  if (!getenv(var)) setenv(var, values[isa_cap], 1);
}

void bench_isa_cap_set(bench_isa_level_t cap) {
  static const char *const mkl[] = {"SSE4_2", "AVX", "AVX2", "AVX512"};
  static const char *const dnnl[] = {"SSE41", "AVX", "AVX2", "AVX512_CORE"};
  static const char *const aten[] = {"default", "default", "avx2", "avx512"};
  isa_cap = cap;
  if (!bench_isa_capped()) return;
  cap_library_isa("MKL_ENABLE_INSTRUCTIONS", mkl);
  cap_library_isa("ONEDNN_MAX_CPU_ISA", dnnl);
  cap_library_isa("ATEN_CPU_CAPABILITY", aten);
}

bool bench_isa_level_parse(const char *name, bench_isa_level_t *out) {
  for (int l = BENCH_ISA_SSE; l <= BENCH_ISA_AVX512; l++)
    if (!strcmp(name, bench_isa_level_name((bench_isa_level_t)l))) {
      *out = (bench_isa_level_t)l;
      return true;
    }
  return false;
}

const char *bench_isa_level_name(bench_isa_level_t level) {
  static const char *const names[] = {"sse", "avx", "avx2", "avx512"};
  return names[level];
}

/* ---------------------------------------------------------------------------
 * Where the anchors are.
 */
static void find_venv(bench_libs_t *libs, const char *option) {
  const char *env = getenv(BENCH_ANCHORS_ENV);
  char dir[PATH_MAX];
  if (option) {
    snprintf(libs->venv, sizeof libs->venv, "%s", option);
    snprintf(libs->venv_from, sizeof libs->venv_from, "--anchors");
  } else if (env && *env) {
    snprintf(libs->venv, sizeof libs->venv, "%s", env);
    snprintf(libs->venv_from, sizeof libs->venv_from, "$%s", BENCH_ANCHORS_ENV);
  } else if (bpt_exe_dir(dir, sizeof dir)) {
    /* bp runs from $(B)/bin; make bench installs into $(B)/bench-venv */
    snprintf(libs->venv, sizeof libs->venv, "%s/../bench-venv", dir);
    snprintf(libs->venv_from, sizeof libs->venv_from, "default");
  }
}

/* The first file matching any of the patterns under the venv. */
static bool find_file(const bench_libs_t *libs, const char *const *patterns, char *out,
                      size_t size) {
  for (; *patterns; patterns++) {
    char pat[PATH_MAX];
    glob_t g;
    snprintf(pat, sizeof pat, "%s/%s", libs->venv, *patterns);
    bool hit = glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0;
    if (hit) snprintf(out, size, "%s", g.gl_pathv[0]);
    globfree(&g);
    if (hit) return true;
  }
  return false;
}

/* Why a venv anchor is absent: pip's reason when make bench left one. */
static void why_absent(const bench_libs_t *libs, bench_lib_t *lib, const char *looked_for) {
  char path[PATH_MAX], reason[320] = "";
  snprintf(path, sizeof path, "%s/missing-%s.txt", libs->venv, lib->package);
  FILE *f = libs->venv[0] ? fopen(path, "r") : NULL;
  if (f) {
    if (fgets(reason, sizeof reason, f)) reason[strcspn(reason, "\n")] = '\0';
    fclose(f);
    snprintf(lib->why, sizeof lib->why, "pip could not install %s: %s", lib->package,
             reason[0] ? reason : "(no reason recorded)");
  } else if (!libs->venv[0]) {
    snprintf(lib->why, sizeof lib->why, "no anchors venv; %s installs %s", BENCH_INSTALL_VENV,
             lib->package);
  } else {
    snprintf(lib->why, sizeof lib->why, "%s/%s not found; %s installs %s (PyPI)", libs->venv,
             looked_for, BENCH_INSTALL_VENV, lib->package);
  }
}

static void open_venv_lib(bench_libs_t *libs, bench_lib_t *lib, const char *const *patterns,
                          const char *prefix, bench_isa_level_t cpu) {
  char path[PATH_MAX];
  if (!libs->venv[0] || !find_file(libs, patterns, path, sizeof path)) {
    why_absent(libs, lib, patterns[0]);
    return;
  }
  if (lib->id == BENCH_LIB_ONEDNN)
    bench_dnnl_open(lib, path);
  else
    bench_blas_open(lib, path, prefix, cpu);
}

void bench_libs_open(bench_libs_t *libs, const char *venv) {
  static const char *const mkl[] = {"lib/libmkl_rt.so.[0-9]*", "lib/libmkl_rt.so", NULL};
  static const char *const dnnl[] = {"lib/libdnnl.so.3", NULL};
  static const char *const openblas_new[] = {
      "lib/python3*/site-packages/scipy_openblas32/lib/libscipy_openblas*.so", NULL};
  static const struct {
    const char *name, *package;
  } ids[BENCH_LIB_COUNT] = {{"openblas", "libopenblas0"},
                            {"openblas-new", "scipy-openblas32"},
                            {"mkl", "mkl"},
                            {"onednn", "onednn-cpu-gomp"}};
  memset(libs, 0, sizeof *libs);
  for (int i = 0; i < BENCH_LIB_COUNT; i++)
    libs->lib[i] =
        (bench_lib_t){.id = (bench_lib_id_t)i, .name = ids[i].name, .package = ids[i].package};
  find_venv(libs, venv);
  bench_isa_level_t cpu = bench_cpu_isa_level();
  bench_lib_t *deb = &libs->lib[BENCH_LIB_OPENBLAS];
  bench_blas_open(deb, "libopenblas.so.0", "", cpu);
  if (!deb->present && !deb->why[0])
    snprintf(deb->why, sizeof deb->why, "libopenblas.so.0 not found");
  if (!deb->present) {
    char why[sizeof deb->why];
    snprintf(why, sizeof why, "%s", deb->why);
    snprintf(deb->why, sizeof deb->why, "%s; install: %s", why, BENCH_INSTALL_OPENBLAS);
  }
  open_venv_lib(libs, &libs->lib[BENCH_LIB_OPENBLAS_NEW], openblas_new, "scipy_", cpu);
  open_venv_lib(libs, &libs->lib[BENCH_LIB_MKL], mkl, "", cpu);
  open_venv_lib(libs, &libs->lib[BENCH_LIB_ONEDNN], dnnl, "", cpu);
}

void bench_libs_close(bench_libs_t *libs) {
  for (int i = 0; i < BENCH_LIB_COUNT; i++) bench_lib_unload(&libs->lib[i]);
}

void bench_libs_print(const bench_libs_t *libs, FILE *f) {
  fprintf(f, "anchors: %s (%s)\n", libs->venv[0] ? libs->venv : "no venv",
          libs->venv_from[0] ? libs->venv_from : "none");
  for (int i = 0; i < BENCH_LIB_COUNT; i++) {
    const bench_lib_t *l = &libs->lib[i];
    if (!l->present) {
      fprintf(f, "  %-13s absent: %s\n", l->name, l->why);
      continue;
    }
    fprintf(f, "  %-13s %s\n  %-13s kernel: %s%s%s\n", l->name, l->version, "", l->kernel,
            l->forced[0] ? "; " : "", l->forced);
    if (!l->comparable)
      fprintf(f,
              "  %-13s NOT COMPARABLE: its kernel is not at this CPU's %s%s;"
              " its ratios are marked\n",
              "", bench_isa_level_name(bench_cpu_isa_level()),
              bench_isa_capped() ? " (the --isa ceiling)" : "");
  }
}

/* ---------------------------------------------------------------------------
 * Cases.
 */
int bench_lib_cases(bench_libs_t *libs, const bpt_case_t *c, bench_lib_case_t *out, int cap) {
  int n = 0;
  /* Debian's and the current OpenBLAS run f32 and f64; MKL adds its bf16
   * and f16 GEMMs (f32 output); oneDNN runs matmul and conv2d. */
  for (int i = 0; i < BENCH_LIB_COUNT && n < cap; i++) {
    bench_lib_t *lib = &libs->lib[i];
    bool openblas = i == BENCH_LIB_OPENBLAS || i == BENCH_LIB_OPENBLAS_NEW;
    if (openblas && c->dtype != BP_F32 && c->dtype != BP_F64) continue;
    if (i == BENCH_LIB_ONEDNN)
      n += bench_dnnl_cases(lib, c, out + n, cap - n);
    else
      n += bench_blas_case(lib, c, out + n);
  }
  return n;
}

double bench_lib_case_time(bench_lib_case_t *lc, const bench_timing_t *t) {
  double t0 = bpt_now();
  lc->call(lc); /* warm-up: first-touch, JIT, packing buffers */
  double warm = bpt_now() - t0, total = 0, best = 1e300;
  int reps = warm > t->slow_seconds ? 1 : t->max_reps;
  for (int i = 0; i < reps; i++) {
    if (i >= t->min_reps && total >= t->min_seconds) break;
    t0 = bpt_now();
    lc->call(lc);
    double s = bpt_now() - t0;
    total += s;
    if (s < best) best = s;
  }
  return best * 1e3;
}

void bench_lib_case_free(bench_lib_case_t *lc) {
  if (lc && lc->release) lc->release(lc);
}
