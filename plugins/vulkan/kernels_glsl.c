/*
 * kernels_glsl.c — GLSL custom kernels compiled to SPIR-V at run time:
 * through libshaderc, opened with dlopen (no link-time dependency), or,
 * where libshaderc cannot be loaded, through the glslc executable. Debian
 * 12's libshaderc1 is such a case: its libshaderc.so.1 leaves glslang and
 * SPIRV-Tools symbols undefined (glslc carries them statically), so dlopen
 * fails on it with "undefined symbol".
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vkb.h"

/* ---- libshaderc through dlopen -------------------------------------------*/

typedef struct shaderc_fns {
  void *lib;
  void *(*compiler_initialize)(void);
  void (*compiler_release)(void *);
  void *(*options_initialize)(void);
  void (*options_release)(void *);
  void (*add_macro)(void *, const char *, size_t, const char *, size_t);
  void (*set_optimization)(void *, int);
  void (*set_target_env)(void *, int, uint32_t);
  void *(*compile_into_spv)(void *, const char *, size_t, int, const char *, const char *, void *);
  size_t (*result_length)(void *);
  const char *(*result_bytes)(void *);
  int (*result_status)(void *);
  const char *(*result_error)(void *);
  void (*result_release)(void *);
} shaderc_fns_t;

/* Values from shaderc/shaderc.h (stable C API since 2016). */
enum {
  SHADERC_COMPUTE_SHADER = 2,
  SHADERC_TARGET_ENV_VULKAN = 0,
  SHADERC_ENV_VULKAN_1_2 = (1u << 22) | (2u << 12),
  SHADERC_OPT_ZERO = 0,
  SHADERC_OPT_PERFORMANCE = 2,
  SHADERC_STATUS_SUCCESS = 0
};

static shaderc_fns_t g_shaderc;
static bool g_shaderc_ok;
static char g_shaderc_why[256];
static pthread_once_t g_shaderc_once = PTHREAD_ONCE_INIT;

/* Opened once and kept for the life of the process: glslang keeps global
 * state that is not safe to tear down while another thread may compile. */
static void shaderc_open(void) {
  shaderc_fns_t *f = &g_shaderc;
  void *sym;
  f->lib = dlopen("libshaderc.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!f->lib) {
    snprintf(g_shaderc_why, sizeof g_shaderc_why, "libshaderc.so.1 could not be loaded (%s)",
             dlerror());
    return;
  }
#define SC_SYM(field, name)                                                                        \
  if (!(sym = dlsym(f->lib, name))) {                                                              \
    snprintf(g_shaderc_why, sizeof g_shaderc_why, "libshaderc.so.1 lacks %s", name);               \
    goto fail;                                                                                     \
  }                                                                                                \
  memcpy(&f->field, &sym, sizeof sym); /* object to function pointer */
  SC_SYM(compiler_initialize, "shaderc_compiler_initialize")
  SC_SYM(compiler_release, "shaderc_compiler_release")
  SC_SYM(options_initialize, "shaderc_compile_options_initialize")
  SC_SYM(options_release, "shaderc_compile_options_release")
  SC_SYM(add_macro, "shaderc_compile_options_add_macro_definition")
  SC_SYM(set_optimization, "shaderc_compile_options_set_optimization_level")
  SC_SYM(set_target_env, "shaderc_compile_options_set_target_env")
  SC_SYM(compile_into_spv, "shaderc_compile_into_spv")
  SC_SYM(result_length, "shaderc_result_get_length")
  SC_SYM(result_bytes, "shaderc_result_get_bytes")
  SC_SYM(result_status, "shaderc_result_get_compilation_status")
  SC_SYM(result_error, "shaderc_result_get_error_message")
  SC_SYM(result_release, "shaderc_result_release")
#undef SC_SYM
  g_shaderc_ok = true;
  return;
fail:
  dlclose(f->lib);
  f->lib = NULL;
}

/* The GLSL options both compilers take: "-DNAME[=VALUE]", "-O", "-O0",
 * space separated. */
static bp_status_t check_options(const char *options) {
  for (const char *p = options; p && *p;) {
    while (*p == ' ' || *p == '\t') p++;
    size_t len = strcspn(p, " \t");
    if (len && !(len > 2 && strncmp(p, "-D", 2) == 0) && !(len == 2 && strncmp(p, "-O", 2) == 0) &&
        !(len == 3 && strncmp(p, "-O0", 3) == 0))
      return vkb_fail(BP_ERR_INVALID_ARGUMENT,
                      "vulkan: kernel_create: option '%.*s' not understood "
                      "(GLSL takes -DNAME[=VALUE], -O, -O0)",
                      (int)len, p);
    p += len;
  }
  return BP_OK;
}

/* Applies checked options to a shaderc options object. */
static void shaderc_options(void *opts, const char *options) {
  g_shaderc.set_optimization(opts, SHADERC_OPT_PERFORMANCE);
  for (const char *p = options; p && *p;) {
    while (*p == ' ' || *p == '\t') p++;
    size_t len = strcspn(p, " \t");
    if (len == 0) break;
    if (len > 2 && strncmp(p, "-D", 2) == 0) {
      const char *eq = memchr(p, '=', len);
      size_t nl = eq ? (size_t)(eq - p) - 2 : len - 2;
      const char *val = eq ? eq + 1 : "";
      g_shaderc.add_macro(opts, p + 2, nl, val, eq ? len - (size_t)(eq + 1 - p) : 0);
    } else if (len == 2 && strncmp(p, "-O", 2) == 0) {
      g_shaderc.set_optimization(opts, SHADERC_OPT_PERFORMANCE);
    } else if (len == 3 && strncmp(p, "-O0", 3) == 0) {
      g_shaderc.set_optimization(opts, SHADERC_OPT_ZERO);
    }
    p += len;
  }
}

/* Reads a whole small file (malloc'd); NULL when unreadable. */
static char *slurp(const char *path, size_t *out_size) {
  *out_size = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n >= 0 && n < (64l << 20) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) == (size_t)n) {
      buf[n] = 0;
      *out_size = (size_t)n;
    } else {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  return buf;
}

/* The fallback: runs glslc ($BACKPLANE_GLSLC, else glslc on PATH) on the
 * source in a private temporary directory. BP_ERR_UNAVAILABLE when there
 * is no glslc either. */
static bp_status_t glslc_compile(const bp_kernel_source_t *src, uint32_t **out_words,
                                 size_t *out_count) {
  const char *env = vkb_host && vkb_host->getenv ? vkb_host->getenv("BACKPLANE_GLSLC") : NULL;
  const char *tmp = vkb_host && vkb_host->getenv ? vkb_host->getenv("TMPDIR") : NULL;
  char dir[512], in[600], outp[600], errp[600], opt[1024];
  char *argv[48];
  int argc = 0;
  bp_status_t st = BP_OK;
  snprintf(dir, sizeof dir, "%s/bp-vulkan-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return vkb_fail(BP_ERR_UNAVAILABLE, "vulkan: GLSL: no temporary directory for glslc (%s)", dir);
  snprintf(in, sizeof in, "%s/kernel.comp", dir);
  snprintf(outp, sizeof outp, "%s/kernel.spv", dir);
  snprintf(errp, sizeof errp, "%s/log.txt", dir);
  FILE *f = fopen(in, "wb");
  bool wrote = f && fwrite(src->code, 1, (size_t)src->code_size, f) == (size_t)src->code_size;
  if (f && fclose(f) != 0) wrote = false;
  if (!wrote) {
    st = vkb_fail(BP_ERR_INTERNAL, "vulkan: GLSL: cannot write %s", in);
    goto out;
  }
  argv[argc++] = (char *)(env && env[0] ? env : "glslc");
  argv[argc++] = "-fshader-stage=compute";
  argv[argc++] = "--target-env=vulkan1.2";
  argv[argc++] = "-O";
  /* options were validated by check_options: -D..., -O, -O0 */
  snprintf(opt, sizeof opt, "%s", src->options ? src->options : "");
  for (char *save = NULL, *t = strtok_r(opt, " \t", &save); t && argc < 42;
       t = strtok_r(NULL, " \t", &save))
    argv[argc++] = t;
  argv[argc++] = "-o";
  argv[argc++] = outp;
  argv[argc++] = in;
  argv[argc] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  extern char **environ;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    st = vkb_fail(BP_ERR_UNAVAILABLE,
                  "vulkan: GLSL kernels need libshaderc or glslc: %s, and "
                  "%s could not be run (%s); install glslc or a working "
                  "libshaderc1, or pass SPIR-V",
                  g_shaderc_why, argv[0], strerror(rc));
    goto out;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    ;
  size_t n = 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    char *log = slurp(errp, &n);
    st = vkb_fail(BP_ERR_INVALID_ARGUMENT, "vulkan: GLSL compile failed: %s",
                  log ? log : "glslc failed");
    free(log);
    goto out;
  }
  char *spv = slurp(outp, &n);
  if (!spv || n < 20 || n % 4) {
    free(spv);
    st = vkb_fail(BP_ERR_INTERNAL, "vulkan: glslc wrote no SPIR-V");
    goto out;
  }
  *out_words = (uint32_t *)(void *)spv;
  *out_count = n / 4;
out:
  remove(in);
  remove(outp);
  remove(errp);
  rmdir(dir);
  return st;
}

bp_status_t vkb_glsl_compile(const bp_kernel_source_t *src, uint32_t **out_words,
                             size_t *out_count) {
  *out_words = NULL;
  *out_count = 0;
  bp_status_t st = check_options(src->options);
  if (st != BP_OK) return st;
  pthread_once(&g_shaderc_once, shaderc_open);
  if (!g_shaderc_ok) {
    return glslc_compile(src, out_words, out_count);
  }
  void *cc = g_shaderc.compiler_initialize();
  void *opts = g_shaderc.options_initialize();
  void *res = NULL;
  if (!cc || !opts) {
    st = vkb_fail(BP_ERR_OUT_OF_MEMORY, "vulkan: shaderc initialise failed");
    goto out;
  }
  g_shaderc.set_target_env(opts, SHADERC_TARGET_ENV_VULKAN, SHADERC_ENV_VULKAN_1_2);
  shaderc_options(opts, src->options);
  res = g_shaderc.compile_into_spv(cc, (const char *)src->code, (size_t)src->code_size,
                                   SHADERC_COMPUTE_SHADER, "kernel.comp", "main", opts);
  if (!res || g_shaderc.result_status(res) != SHADERC_STATUS_SUCCESS) {
    st = vkb_fail(BP_ERR_INVALID_ARGUMENT, "vulkan: GLSL compile failed: %s",
                  res ? g_shaderc.result_error(res) : "no result");
    goto out;
  }
  size_t bytes = g_shaderc.result_length(res);
  if (!(*out_words = malloc(bytes ? bytes : 4))) {
    st = BP_ERR_OUT_OF_MEMORY;
    goto out;
  }
  memcpy(*out_words, g_shaderc.result_bytes(res), bytes);
  *out_count = bytes / 4;
out:
  if (res) g_shaderc.result_release(res);
  if (opts) g_shaderc.options_release(opts);
  if (cc) g_shaderc.compiler_release(cc);
  return st;
}
