/*
 * shim.h — internals of the test-only libcuda.so.1 (test/shims/cuda).
 *
 * The shim is a CPU stand-in for NVIDIA's driver, built only for the tests
 * of backend-cuda.so and never installed. It implements exactly the entry
 * points of plugins/cuda/cuda_driver.h, under the very symbol names the
 * plugin resolves (each declared from that header's X-macro, so a signature
 * that drifts from the plugin's fails to compile). It checks the plugin's
 * host logic — context discipline, handle lifetimes, pointer ranges, launch
 * geometry, parameter-block sizes against the PTX — and runs each kernel as
 * a plain C loop nest with the kernel's semantics. It does not run, and so
 * cannot check, the PTX kernels themselves.
 */
#ifndef BP_CUDA_SHIM_H
#define BP_CUDA_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cuda/bp_cuda_args.h"
#include "plugins/cuda/cuda_driver.h"
#include "test/shims/common/capture.h"
#include "test/shims/common/env.h"
#include "test/shims/common/heap.h"
#include "test/shims/common/streams.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_INVALID_CONTEXT 201

/* Every entry point, declared from the plugin's own list under the symbol
 * the plugin resolves: the definitions must match these types. */
#define SHIM_DECLARE(field, sym, params)                                       \
  SHIM_EXPORT CUresult field params __asm__(sym);
CUDA_DRIVER_ENTRY_POINTS(SHIM_DECLARE)
CUDA_DRIVER_OPTIONAL_ENTRY_POINTS(SHIM_DECLARE)
#undef SHIM_DECLARE

/* shim_report ("cuda-shim: ..." on stderr), shim_mem_valid and
 * shim_mem_find: test/shims/common/heap.h. */

/* True when BP_CUDA_SHIM_FAIL (comma-separated) contains what: "init",
 * "alloc", "launch", "module", "memcpy", "event". */
bool shim_fail(const char *what);

/* A C kernel: runs a whole launch's work. Returns false (after reporting)
 * when it found a bad pointer. */
typedef bool (*shim_kernel_fn)(const void *params);
/* A custom-kernel twin (custom.c): sees the launch geometry and the
 * kernelParams array, one pointer per parameter, as the driver would. */
typedef struct shim_launch {
  unsigned grid[3], block[3], smem;
} shim_launch_t;
typedef bool (*shim_custom_fn)(const shim_launch_t *launch, void **params);
#define SHIM_MAX_PARAMS 64
typedef struct shim_kernel {
  const char *name;
  size_t param_size; /* sizeof the parameter block: must equal the PTX's */
  shim_kernel_fn fn; /* NULL for a custom kernel */
  /* custom kernels only: the byte size of each parameter, in order */
  int param_count;
  const unsigned char *param_sizes;
  shim_custom_fn custom;
} shim_kernel_t;

/* The kernel table (kernels.c), then the custom twins (custom.c); NULL
 * when name has no C implementation. */
const shim_kernel_t *shim_kernel_find(const char *name);
const shim_kernel_t *shim_custom_find(const char *name);
/* True when a code object's parameter list (count parameters of sizes[i]
 * bytes) is what the C kernel k reads; reports the difference otherwise.
 * from names the code object's origin for the message ("the PTX"). */
bool shim_params_match(const shim_kernel_t *k, int count,
                       const uint32_t *sizes, const char *from);
/* Runs k (table or custom) for one launch; false on a bad access. */
bool shim_kernel_run(const shim_kernel_t *k, const shim_launch_t *launch,
                     void **params);

/* True when cuInit ran and this thread has a current context; reports
 * otherwise. */
bool shim_have_ctx(const char *fn);

/* Streams (CUstream points to a shim_stream_t, 0 is the legacy stream)
 * and events: test/shims/common/streams.h. */

/* Test hook for the cuBLAS shim: runs fn on a copy of data (size bytes) in
 * stream order on s, or records it into s's capture. */
SHIM_EXPORT CUresult bp_cuda_shim_enqueue(CUstream s, void (*fn)(void *),
                                          const void *data, size_t size);

/* Test hook for the cuBLAS shim: shim_mem_valid, exported. */
SHIM_EXPORT bool bp_cuda_shim_mem_valid(uint64_t p, uint64_t bytes);

/* Test hook: counts of live objects, for leak checks. */
typedef struct bp_cuda_shim_stats {
  int64_t allocations, bytes_in_use;
  int64_t streams, events, modules;
  int64_t primary_ctx_refs; /* over all devices */
  int64_t launches;         /* cumulative */
  int ctx_depth;            /* this thread's context stack depth */
  int64_t host_blocks;      /* live cuMemHostAlloc blocks */
  int64_t graphs;           /* live CUgraph and CUgraphExec objects */
  int64_t graph_launches;   /* cumulative cuGraphLaunch calls */
} bp_cuda_shim_stats_t;
SHIM_EXPORT void bp_cuda_shim_stats(bp_cuda_shim_stats_t *out);
/* The live counters behind it (update with __atomic builtins). */
extern bp_cuda_shim_stats_t shim_stats;

#endif /* BP_CUDA_SHIM_H */
