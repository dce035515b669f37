/*
 * test_rocm_hiprtc_check.c — compiles every embedded kernel module of
 * backend-rocm.so (the very strings of $(B)/gen/rocm/rocm_hip_src.h) with a
 * real hiprtc for one architecture, printing hiprtc's log on failure.
 * Driven by test_rocm_hiprtc.sh; needs ROCm's hiprtc, not a GPU.
 * usage: test_rocm_hiprtc_check LIBRARY ARCH
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "plugins/rocm/hip_runtime.h"
#include "rocm_hip_src.h"

#define MODULES(X)                                                             \
  X(elementwise) X(reduce) X(norm) X(gemm) X(conv) X(attention) X(adam)        \
  X(random) X(model) X(quant)

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s LIBRARY ARCH\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
#define RESOLVE(field, sym, ret, params)                                       \
  ret(*field) params;                                                          \
  *(void **)&field = dlsym(h, sym);                                            \
  if (!field) {                                                                \
    fprintf(stderr, "%s lacks %s\n", argv[1], sym);                            \
    return 2;                                                                  \
  }
  HIPRTC_ENTRY_POINTS(RESOLVE)
  char opt[96];
  snprintf(opt, sizeof opt, "--offload-arch=%s", argv[2]);
  const char *opts[] = {opt, "-O3"}; /* as plugins/rocm/kernels.c */
  int failed = 0;
#define COMPILE(name)                                                          \
  {                                                                            \
    hiprtcProgram p = NULL;                                                    \
    hiprtcResult r =                                                           \
        hiprtcCreateProgram(&p, rocm_hip_##name, #name ".hip", 0, NULL, NULL); \
    if (r == HIPRTC_SUCCESS)                                                   \
      r = hiprtcCompileProgram(p, 2, opts);                                    \
    size_t code = 0, n = 0;                                                    \
    hiprtcGetCodeSize(p, &code);                                               \
    printf("%s %-12s %s, %zu-byte code object\n", argv[2], #name,             \
           hiprtcGetErrorString(r), code);                                     \
    if (r != HIPRTC_SUCCESS || code == 0) {                                    \
      failed++;                                                                \
      char *log = NULL;                                                        \
      if (hiprtcGetProgramLogSize(p, &n) == HIPRTC_SUCCESS &&                  \
          (log = calloc(1, n + 1))) {                                          \
        hiprtcGetProgramLog(p, log);                                           \
        printf("%.4000s\n", log);                                              \
      }                                                                        \
      free(log);                                                               \
    }                                                                          \
    hiprtcDestroyProgram(&p);                                                  \
  }
  MODULES(COMPILE)
  (void)hiprtcGetCode;
  /* _exit: ROCm 5.2's runtime can abort in its exit-time destructors on a
   * machine without a GPU, after every compile went well. */
  _exit(failed ? 1 : 0);
}
