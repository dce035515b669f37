/*
 * kernels.c — how HIP kernels become code: the built-in modules' embedded
 * HIP sources and the application's custom HIP kernels (ABI 1.1), both
 * compiled by hiprtc for the device's gcnArchName through the on-disk
 * code-object cache. Lookups and launches are plugins/gpu/kernels.c.
 *
 * kernels/hip/<name>.hip is compiled into the plugin as one self-contained
 * string (the generated header $(B)/gen/rocm/rocm_hip_src.h, see embed.sh).
 * The first time a kernel of a module is used on a device, the module is
 * compiled by hiprtc for the device's gcnArchName, not at device open:
 * compiling every module takes seconds and most programs use a few. The
 * code object is kept on disk under $XDG_CACHE_HOME/backplane/rocm (or
 * ~/.cache/backplane/rocm), named by module, architecture, HIP runtime
 * version and a hash of the source and options, so a later process (or
 * device) loads it without compiling; a file that fails to load is
 * recompiled and replaced.
 *
 * A custom kernel's entry must be declared extern "C" so that
 * hipModuleGetFunction finds it by its plain name. Each custom kernel owns
 * its module.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/gpu/gpu.h"
#include "rocm_hip_src.h" /* generated: rocm_hip_<name>[] */

static const char *const module_src[BP_GPU_MOD_COUNT] = {
#define ROCM__MOD_SRC(id, file) rocm_hip_##file,
    BP_GPU_MODULES(ROCM__MOD_SRC)
#undef ROCM__MOD_SRC
};

/* -O3 and no fast math: results are compared with the CPU reference. */
#define HIPRTC_FIXED_OPTIONS "-O3"

/* ---- the cache ------------------------------------------------------------ */

static uint64_t fnv1a(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* The cache directory, created on demand; false when there is none. */
static bool cache_dir(char *out, size_t cap) {
  const char *xdg = gpu_host->getenv("XDG_CACHE_HOME");
  const char *home = gpu_host->getenv("HOME");
  char base[512];
  if (xdg && *xdg)
    snprintf(base, sizeof base, "%s/backplane", xdg);
  else if (home && *home)
    snprintf(base, sizeof base, "%s/.cache/backplane", home);
  else
    return false;
  snprintf(out, cap, "%s/rocm", base);
  /* Intermediate directories: XDG_CACHE_HOME itself may not exist yet. */
  for (char *p = out + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    mkdir(out, 0700);
    *p = '/';
  }
  return mkdir(out, 0700) == 0 || errno == EEXIST;
}

/* The cache file of the source src, compiled as name with the options
 * opts for arch. Architecture names carry ':' (the feature flags); they
 * become '_' in the file name, as does anything but [A-Za-z0-9_.-] in name
 * (an application's kernel name). */
static bool cache_path(const char *name, const char *src, const char *opts, const char *arch,
                       char *out, size_t cap) {
  char dir[600];
  if (!cache_dir(dir, sizeof dir)) return false;
  uint64_t h = 0xcbf29ce484222325ull;
  h = fnv1a(h, src, strlen(src));
  h = fnv1a(h, HIPRTC_FIXED_OPTIONS, sizeof HIPRTC_FIXED_OPTIONS);
  h = fnv1a(h, opts, strlen(opts) + 1);
  h = fnv1a(h, GPU_PLUGIN_VERSION, sizeof GPU_PLUGIN_VERSION);
  char a[64], n[80];
  snprintf(a, sizeof a, "%s", arch);
  snprintf(n, sizeof n, "%s", name);
  for (char *p = a; *p; p++)
    if (*p == ':' || *p == '/') *p = '_';
  for (char *p = n; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '.' || *p == '-'))
      *p = '_';
  snprintf(out, cap, "%s/%s-%s-hip%d-%016llx.hsaco", dir, n, a, rocm_rt.runtime_version,
           (unsigned long long)h);
  return true;
}

static char *read_file(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
      (buf = malloc((size_t)n)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *out_size = buf ? (size_t)n : 0;
  return buf;
}

/* Writes atomically (temporary file, then rename), so a concurrent reader
 * sees the whole code object or none. A failure only costs a recompile. */
static void write_file(const char *path, const char *data, size_t n) {
  /* Unique per process and call: two devices of one architecture may
   * store the same module at once. */
  static unsigned serial;
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.%ld-%u.tmp", path, (long)getpid(),
           __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED));
  FILE *f = fopen(tmp, "wb");
  if (!f) return;
  bool ok = fwrite(data, 1, n, f) == n;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    unlink(tmp);
    gpu_log(BP_LOG_WARN, "could not write the code-object cache %s", path);
  }
}

/* ---- hiprtc --------------------------------------------------------------- */

/* Sets the error for a failed compile, with hiprtc's log. A source that
 * does not compile is the caller's mistake when it is the application's
 * (app), the backend's own otherwise. */
static bp_status_t compile_error(hiprtcProgram prog, hiprtcResult r, const char *name,
                                 const char *arch, bool app) {
  size_t n = 0;
  char *log = NULL;
  if (rocm_rt.hiprtcGetProgramLogSize(prog, &n) == HIPRTC_SUCCESS && n > 1 &&
      (log = calloc(1, n + 1)))
    rocm_rt.hiprtcGetProgramLog(prog, log);
  gpu_host->set_error("rocm: hiprtc could not compile %s for %s: %s%s%.1500s", name, arch,
                      rocm_rt.hiprtcGetErrorString(r), log ? ": " : "", log ? log : "");
  free(log);
  if (r == HIPRTC_ERROR_OUT_OF_MEMORY) return BP_ERR_OUT_OF_MEMORY;
  return app ? BP_ERR_INVALID_ARGUMENT : BP_ERR_INTERNAL;
}

#define MAX_USER_OPTIONS 32

/* Compiles src (called name in messages) for arch with the fixed options
 * and the whitespace-separated user options opts; *out_code (malloc'd) is
 * the code object. */
static bp_status_t compile(const char *src, const char *name, const char *opts, bool app,
                           const char *arch, char **out_code, size_t *out_size) {
  *out_code = NULL;
  if (!rocm_rt.hiprtcCompileProgram) {
    gpu_host->set_error("rocm: cannot compile %s: %s", name, rocm_rt.rtc_reason);
    return BP_ERR_UNAVAILABLE;
  }
  char offload[96];
  snprintf(offload, sizeof offload, "--offload-arch=%s", arch);
  /* hiprtc takes an argv: split a copy of opts at whitespace (no quoting,
   * which no hiprtc option needs). */
  char *words = strdup(opts);
  const char *argv[MAX_USER_OPTIONS + 2] = {offload, HIPRTC_FIXED_OPTIONS};
  int argc = 2;
  if (!words) {
    gpu_host->set_error("rocm: no host memory for compiler options");
    return BP_ERR_OUT_OF_MEMORY;
  }
  for (char *save = NULL, *w = strtok_r(words, " \t\n", &save); w;
       w = strtok_r(NULL, " \t\n", &save)) {
    if (argc == MAX_USER_OPTIONS + 2) {
      free(words);
      gpu_host->set_error("rocm: more than %d compiler options for %s", MAX_USER_OPTIONS, name);
      return BP_ERR_INVALID_ARGUMENT;
    }
    argv[argc++] = w;
  }
  hiprtcProgram prog = NULL;
  hiprtcResult r = rocm_rt.hiprtcCreateProgram(&prog, src, name, 0, NULL, NULL);
  if (r != HIPRTC_SUCCESS) {
    free(words);
    gpu_host->set_error("rocm: hiprtcCreateProgram(%s): %s", name, rocm_rt.hiprtcGetErrorString(r));
    return BP_ERR_INTERNAL;
  }
  bp_status_t st = BP_OK;
  size_t n = 0;
  r = rocm_rt.hiprtcCompileProgram(prog, argc, argv);
  if (r == HIPRTC_SUCCESS) r = rocm_rt.hiprtcGetCodeSize(prog, &n);
  if (r != HIPRTC_SUCCESS || n == 0) {
    st = compile_error(prog, r, name, arch, app);
    goto out;
  }
  *out_code = malloc(n);
  if (!*out_code) {
    gpu_host->set_error("rocm: no host memory for a %zu-byte code object", n);
    st = BP_ERR_OUT_OF_MEMORY;
    goto out;
  }
  r = rocm_rt.hiprtcGetCode(prog, *out_code);
  if (r != HIPRTC_SUCCESS) {
    free(*out_code);
    *out_code = NULL;
    st = compile_error(prog, r, name, arch, app);
    goto out;
  }
  *out_size = n;
out:
  rocm_rt.hiprtcDestroyProgram(&prog);
  free(words);
  return st;
}

/* The first use of a module may come while a graph is being captured. */
static hipError_t load_data(hipModule_t *out, const void *code) {
  int mode = gpu_capture_relax();
  hipError_t r = rocm_rt.hipModuleLoadData(out, code);
  gpu_capture_restore(mode);
  return r;
}

bp_status_t rocm_code_object_load(gpu_device_t *d, const char *src, const char *name,
                                  const char *opts, bool app, hipModule_t *out) {
  *out = NULL;
  if (!opts) opts = "";
  if (!d->arch[0]) {
    gpu_host->set_error("rocm: device %d has no readable gcnArchName", d->ordinal);
    return BP_ERR_UNSUPPORTED;
  }
  char path[1024];
  bool cached = cache_path(name, src, opts, d->arch, path, sizeof path);
  size_t n = 0;
  char *code = cached ? read_file(path, &n) : NULL;
  if (code && load_data(out, code) == hipSuccess) {
    gpu_log(BP_LOG_DEBUG, "%s for %s from the cache %s", name, d->arch, path);
    free(code);
    return BP_OK;
  }
  if (code) gpu_log(BP_LOG_WARN, "cached %s does not load; recompiling", path);
  free(code);
  bp_status_t st = compile(src, name, opts, app, d->arch, &code, &n);
  if (st != BP_OK) return st;
  char what[160];
  snprintf(what, sizeof what, "hipModuleLoadData(%s for %s)", name, d->arch);
  st = gpu_check(load_data(out, code), what);
  if (st == BP_OK && cached) write_file(path, code, n);
  free(code);
  return st;
}

bp_status_t gpu_module_load(gpu_device_t *d, bp_gpu_module_id_t m, hipModule_t *out) {
  char name[64];
  snprintf(name, sizeof name, "%s.hip", gpu_module_name[m]);
  return rocm_code_object_load(d, module_src[m], name, NULL, false, out);
}

/* HIP needs no opt-in: the device's limit is the only check. */
bp_status_t gpu_allow_smem(gpu_device_t *d, hipFunction_t fn, unsigned smem, const char *name) {
  (void)fn;
  if (d->smem_max > 0 && smem > (unsigned)d->smem_max) {
    gpu_host->set_error("rocm: %s needs %u bytes of shared memory; the "
                        "device allows %d",
                        name, smem, d->smem_max);
    return BP_ERR_UNSUPPORTED;
  }
  return BP_OK;
}

/* ---- custom kernels ------------------------------------------------------- */

bp_status_t gpu_kernel_compile(gpu_device_t *d, const char *src, const char *opts,
                               gpu_kernel_t *k) {
  char name[160];
  snprintf(name, sizeof name, "custom-%.120s.hip", k->entry);
  /* The device lock serialises hiprtc and the cache per device, as for
   * the built-in modules. */
  pthread_mutex_lock(&d->lock);
  bp_status_t st = rocm_code_object_load(d, src, name, opts, true, &k->module);
  pthread_mutex_unlock(&d->lock);
  if (st != BP_OK) return st;
  hipError_t r = rocm_rt.hipModuleGetFunction(&k->fn, k->module, k->entry);
  if (r != hipSuccess) {
    char what[220];
    snprintf(what, sizeof what,
             "hipModuleGetFunction(%.120s): no such kernel in the code "
             "object (is it declared extern \"C\" __global__?)",
             k->entry);
    st = gpu_check(r, what);
    rocm_rt.hipModuleUnload(k->module);
    k->module = NULL;
  }
  return st;
}
