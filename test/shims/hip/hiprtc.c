/*
 * hiprtc.c — the test-only libhiprtc.so: a "compiler" that finds the
 * kernels of a HIP source and writes the shim's text code object (shim.h).
 *
 * It checks what the plugin hands hiprtc: a self-contained source (no
 * header list: embed.sh inlines them), one --offload-arch=gfx... option, and
 * every built-in kernel taking one parameter block by value; an
 * application's kernel ("kernel NAME (S,S,...)" in the code object) is
 * described by the byte size of each parameter. BP_HIP_SHIM_FAIL=compile
 * makes compilation fail with a log, as a real compile error would.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/shims/hip/shim.h"

struct _hiprtcProgram {
  char *src, *code, *log;
  size_t code_size;
};

static int64_t compiles;

int64_t bp_hiprtc_shim_compiles(void) {
  return __atomic_load_n(&compiles, __ATOMIC_RELAXED);
}

const char *hiprtcGetErrorString(hiprtcResult r) {
  switch (r) {
  case HIPRTC_SUCCESS: return "HIPRTC_SUCCESS";
  case HIPRTC_ERROR_OUT_OF_MEMORY: return "HIPRTC_ERROR_OUT_OF_MEMORY";
  case HIPRTC_ERROR_COMPILATION: return "HIPRTC_ERROR_COMPILATION";
  default: return "HIPRTC_ERROR_INVALID_INPUT";
  }
}

hiprtcResult hiprtcCreateProgram(hiprtcProgram *out, const char *src,
                                 const char *name, int n_headers,
                                 const char *const *headers,
                                 const char *const *include_names) {
  (void)name, (void)headers, (void)include_names;
  if (!out || !src || n_headers != 0)
    return 3; /* HIPRTC_ERROR_INVALID_INPUT */
  *out = calloc(1, sizeof **out);
  if (!*out || !((*out)->src = strdup(src))) {
    free(*out);
    return HIPRTC_ERROR_OUT_OF_MEMORY;
  }
  return HIPRTC_SUCCESS;
}

static const char *skip_space(const char *p) {
  while (isspace((unsigned char)*p))
    p++;
  return p;
}

/* Writes the byte sizes of the parameters in [p, end) as "S,S,...": a
 * pointer is 8 bytes, a scalar as its type says; false for a type the
 * shim does not know. "(void)" and "()" write nothing. */
static bool param_sizes(const char *p, const char *end, FILE *out) {
  int count = 0;
  while (p < end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *stop = comma ? comma : end;
    char decl[160];
    snprintf(decl, sizeof decl, "%.*s", (int)(stop - p), p);
    const char *d = skip_space(decl);
    int size = 0;
    if (!*d || strcmp(d, "void") == 0)
      size = -1; /* an empty list */
    else if (strchr(d, '*'))
      size = 8;
    else if (strstr(d, "long") || strstr(d, "double") || strstr(d, "int64_t") ||
             strstr(d, "size_t"))
      size = 8;
    else if (strstr(d, "float") || strstr(d, "int") || strstr(d, "unsigned"))
      size = 4;
    if (size == 0)
      return false;
    if (size > 0)
      fprintf(out, "%s%d", count++ ? "," : "", size);
    p = comma ? comma + 1 : end;
  }
  return true;
}

/* Appends "kernel NAME TYPE\n" for the __global__ function at p (just past
 * the keyword); false for a malformed declaration. */
static bool one_kernel(const char *p, FILE *out) {
  char word[96] = "", name[96] = "", type[96] = "";
  for (;;) { /* words up to '(': the last is the name */
    p = skip_space(p);
    int n = 0;
    if (sscanf(p, "%95[A-Za-z0-9_]%n", word, &n) != 1)
      return false;
    p = skip_space(p + n);
    if (strcmp(word, "__launch_bounds__") == 0) {
      p = strchr(p, ')');
      if (!p)
        return false;
      p++;
      continue;
    }
    if (*p == '(') {
      snprintf(name, sizeof name, "%s", word);
      break;
    }
  }
  const char *open = p, *close = strchr(p, ')');
  if (!close)
    return false;
  /* A built-in kernel takes one parameter block by value: "const TYPE p"
   * or "TYPE p" with TYPE a bpk_*_args_t. */
  p = skip_space(p + 1);
  if (strncmp(p, "const ", 6) == 0)
    p += 6;
  int n = 0;
  if (sscanf(p, "%95[A-Za-z0-9_]%n", type, &n) == 1 &&
      strncmp(type, "bpk_", 4) == 0) {
    p = skip_space(p + n);
    if (*p == '&' || *p == '*' || memchr(p, ',', (size_t)(close - p)))
      return false; /* by value, alone */
    fprintf(out, "kernel %s %s\n", name, type);
    return true;
  }
  /* Anything else is an application's kernel: its parameter sizes. */
  fprintf(out, "kernel %s (", name);
  bool ok = param_sizes(open + 1, close, out);
  fprintf(out, ")\n");
  return ok;
}

static void set_log(hiprtcProgram p, const char *msg) {
  free(p->log);
  p->log = strdup(msg);
}

hiprtcResult hiprtcCompileProgram(hiprtcProgram p, int n,
                                  const char *const *opts) {
  __atomic_add_fetch(&compiles, 1, __ATOMIC_RELAXED);
  const char *arch = NULL;
  for (int i = 0; i < n; i++)
    if (strncmp(opts[i], "--offload-arch=", 15) == 0)
      arch = opts[i] + 15;
  if (!arch || strncmp(arch, "gfx", 3) != 0) {
    set_log(p, "error: no --offload-arch=gfx... option");
    return 5; /* HIPRTC_ERROR_INVALID_OPTION */
  }
  if (shim_hip_fail("compile")) {
    set_log(p, "CompileSource:1:1: error: injected failure (BP_HIP_SHIM_FAIL)");
    return HIPRTC_ERROR_COMPILATION;
  }
  char *code = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&code, &size);
  if (!out)
    return HIPRTC_ERROR_OUT_OF_MEMORY;
  fprintf(out, "%s%s\n", SHIM_CODE_MAGIC, arch);
  bool ok = true;
  for (const char *q = p->src; ok && (q = strstr(q, "extern \"C\" __global__"));
       q++)
    ok = one_kernel(q + strlen("extern \"C\" __global__"), out);
  fclose(out);
  if (!ok) {
    free(code);
    set_log(p, "error: a kernel's parameter list is not one the shim reads");
    return HIPRTC_ERROR_COMPILATION;
  }
  free(p->code);
  p->code = code;
  p->code_size = size + 1; /* with the NUL, as a code object has no text end */
  set_log(p, "");
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram p, size_t *n) {
  *n = p->log ? strlen(p->log) + 1 : 1;
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcGetProgramLog(hiprtcProgram p, char *log) {
  strcpy(log, p->log ? p->log : "");
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcGetCodeSize(hiprtcProgram p, size_t *n) {
  *n = p->code ? p->code_size : 0;
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcGetCode(hiprtcProgram p, char *code) {
  if (!p->code)
    return 3;
  memcpy(code, p->code, p->code_size);
  return HIPRTC_SUCCESS;
}

hiprtcResult hiprtcDestroyProgram(hiprtcProgram *p) {
  if (!p || !*p)
    return 3;
  free((*p)->src);
  free((*p)->code);
  free((*p)->log);
  free(*p);
  *p = NULL;
  return HIPRTC_SUCCESS;
}
