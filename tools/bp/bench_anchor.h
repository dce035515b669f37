/*
 * bench_anchor.h — the library anchors of bp bench: Debian's OpenBLAS, a
 * current OpenBLAS (scipy-openblas32), Intel MKL and oneDNN, each opened with
 * dlopen (no header or link-time dependency) from the system or from the
 * private virtual environment `make bench` installs. Each reports its
 * version and the kernel it selected; one whose kernel is lesser than this
 * CPU supports is forced to the right one where the library allows it
 * (OPENBLAS_CORETYPE) and otherwise marked not comparable, so a ratio is
 * never won against a fallback without saying so.
 */
#ifndef BP_TOOL_BENCH_ANCHOR_H
#define BP_TOOL_BENCH_ANCHOR_H

#include <stdbool.h>
#include <stdio.h>

#include "bench.h"

/* The environment variable naming the anchors' virtual environment. */
#define BENCH_ANCHORS_ENV "BP_BENCH_ANCHORS"
/* What installs the venv anchors. */
#define BENCH_INSTALL_VENV "make bench"

typedef enum bench_lib_id {
  BENCH_LIB_OPENBLAS,     /* Debian's libopenblas.so.0 */
  BENCH_LIB_OPENBLAS_NEW, /* scipy-openblas32: a current OpenBLAS, prefixed symbols */
  BENCH_LIB_MKL,          /* libmkl_rt */
  BENCH_LIB_ONEDNN,       /* libdnnl.so.3, the CPU (GNU OpenMP) build */
  BENCH_LIB_COUNT
} bench_lib_id_t;

/* Vector instruction levels, to compare an anchor's kernel with the CPU. */
typedef enum bench_isa_level {
  BENCH_ISA_SSE,
  BENCH_ISA_AVX,
  BENCH_ISA_AVX2,
  BENCH_ISA_AVX512,
} bench_isa_level_t;

/* The best level this CPU and OS run (CPUID and XSAVE state), lowered to
 * the ceiling bp bench --isa set. */
bench_isa_level_t bench_cpu_isa_level(void);
/* "sse", "avx", "avx2", "avx512". */
const char *bench_isa_level_name(bench_isa_level_t level);
bool bench_isa_level_parse(const char *name, bench_isa_level_t *out);
/* bp bench --isa: every side runs at most this level. Sets the anchors'
 * own ceilings (MKL_ENABLE_INSTRUCTIONS, ONEDNN_MAX_CPU_ISA,
 * ATEN_CPU_CAPABILITY) unless the caller set them; call it before any
 * anchor loads. */
void bench_isa_cap_set(bench_isa_level_t cap);
/* True when the ceiling is below what the CPU runs. */
bool bench_isa_capped(void);
/* Whether an anchor's kernel of this level is a fair comparison: at least
 * the CPU's level, and exactly the ceiling's when one is set. */
bool bench_isa_level_fits(bench_isa_level_t kernel);

/* One library: present or why not, its version and selected kernel. */
typedef struct bench_lib {
  bench_lib_id_t id;
  const char *name;    /* "openblas", "openblas-new", "mkl", "onednn" */
  const char *package; /* where it comes from: Debian or PyPI package */
  bool present;
  char path[512];
  char why[512]; /* when absent: why, and what installs it */
  char version[192];
  char kernel[256]; /* the kernel it selected (core, instruction branch, ISA) */
  bool comparable;  /* false: kernel lesser than the CPU's; ratios marked */
  char forced[128]; /* how the bench forced the right kernel, "" if it did not */
  void *dl;
  void *api; /* the entry points, private to the library's file */
} bench_lib_t;

typedef struct bench_libs {
  char venv[512];     /* the anchors' virtual environment, "" when none */
  char venv_from[64]; /* where that came from: option, environment, default */
  bench_lib_t lib[BENCH_LIB_COUNT];
} bench_libs_t;

/* Opens every library anchor. venv is --anchors DIR or NULL: then
 * $BP_BENCH_ANCHORS, then bench-venv/ in the build folder bp runs from.
 * Never fails: an absent library is recorded with the reason. */
void bench_libs_open(bench_libs_t *libs, const char *venv);
void bench_libs_close(bench_libs_t *libs);
/* One line per library: version and kernel, or absent and why. */
void bench_libs_print(const bench_libs_t *libs, FILE *f);

/* One anchor's run of one case, on its own operands filled once. */
typedef struct bench_lib_case {
  const char *name; /* "mkl", "onednn", "onednn-nchw", ... */
  const bench_lib_t *lib;
  char kernel[160]; /* the kernel this call runs */
  bool comparable;
  void (*call)(struct bench_lib_case *lc);
  void (*release)(struct bench_lib_case *lc);
  void *state;
} bench_lib_case_t;

#define BENCH_LIB_CASES_MAX 6

/* Sets up every library anchor that runs case c (at most cap); returns the
 * count. Each must be freed with bench_lib_case_free. */
int bench_lib_cases(bench_libs_t *libs, const bpt_case_t *c, bench_lib_case_t *out, int cap);
/* Best time in ms of the anchor's call after a warm-up call, as t says. */
double bench_lib_case_time(bench_lib_case_t *lc, const bench_timing_t *t);
void bench_lib_case_free(bench_lib_case_t *lc);

/* Per-library internals (bench_anchor_blas.c, bench_anchor_dnnl.c). */
void bench_blas_open(bench_lib_t *lib, const char *path, const char *prefix, bench_isa_level_t cpu);
void bench_dnnl_open(bench_lib_t *lib, const char *path);
void bench_dnnl_close(bench_lib_t *lib);
void bench_lib_unload(bench_lib_t *lib);
int bench_blas_case(bench_lib_t *lib, const bpt_case_t *c, bench_lib_case_t *out);
int bench_dnnl_cases(bench_lib_t *lib, const bpt_case_t *c, bench_lib_case_t *out, int cap);

/* Flops per byte of the least traffic a case needs (each operand read or
 * written once), for the roofline; 0 for memory-bound cases. */
double bench_case_intensity(const bpt_case_t *c);

/* Memory for anchor operands: 2 MiB aligned, on transparent huge pages
 * where the system gives them (as the CPU plugin's large buffers are). */
void *bench_huge_buffer(size_t bytes);
/* Fills n floats (f64: doubles) with uniform numbers in [-1, 1). */
void bench_fill_uniform(void *p, size_t n, bool f64);

#endif /* BP_TOOL_BENCH_ANCHOR_H */
