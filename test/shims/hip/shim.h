/*
 * shim.h — internals of the test-only libamdhip64.so and libhiprtc.so
 * (test/shims/hip).
 *
 * The shims are CPU stand-ins for AMD's HIP runtime and hiprtc, built only
 * for the tests of backend-rocm.so and never installed. They implement
 * exactly the entry points of plugins/rocm/hip_runtime.h, under the symbol
 * names the plugin resolves (declared from that header's X-macros, so a
 * signature that drifts from the plugin's fails to compile). They check the
 * plugin's host logic — hipSetDevice discipline, handle lifetimes, pointer
 * ranges, launch geometry, parameter-block types — and run each kernel as
 * the C stand-in of the CUDA shim (test/shims/cuda/kernels.c, linked in
 * unchanged: the HIP and CUDA kernels share names and parameter blocks).
 * They do not run, and so cannot check, the HIP kernels themselves.
 *
 * hiprtc's "code object" is text: "BPHIPCO1 <arch>\n" and one line
 * "kernel <name> <parameter type>" per extern "C" __global__ function found
 * in the source. hipModuleLoadData maps each name to its C implementation.
 */
#ifndef BP_HIP_SHIM_H
#define BP_HIP_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugins/rocm/hip_runtime.h"
#include "test/shims/common/capture.h"
#include "test/shims/common/heap.h"
#include "test/shims/common/streams.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_CODE_MAGIC "BPHIPCO1 "

#define SHIM_DECLARE(field, sym, ret, params)                                  \
  SHIM_EXPORT ret field params __asm__(sym);
HIP_RUNTIME_ENTRY_POINTS(SHIM_DECLARE)
HIP_RUNTIME_OPTIONAL_ENTRY_POINTS(SHIM_DECLARE)
HIPRTC_ENTRY_POINTS(SHIM_DECLARE)
#undef SHIM_DECLARE

/* The names test/shims/cuda/kernels.c calls (shim_report, shim_mem_valid,
 * shim_mem_find): test/shims/common/heap.h. */

/* True when BP_HIP_SHIM_FAIL (comma-separated) contains what: "init",
 * "alloc", "launch", "module", "memcpy", "event", "compile". */
bool shim_hip_fail(const char *what);

/* True when hipInit ran and this thread has set a device; reports
 * otherwise. */
bool shim_have_device(const char *fn);

/* Streams (hipStream_t points to a shim_stream_t, 0 is the null stream)
 * and events: test/shims/common/streams.h. */

/* Test hook for the rocBLAS shim: runs fn on a copy of data (size bytes) in
 * stream order on s, or records it into s's capture. */
SHIM_EXPORT hipError_t bp_hip_shim_enqueue(hipStream_t s, void (*fn)(void *),
                                           const void *data, size_t size);

/* Test hook for the rocBLAS shim: shim_mem_valid, exported. */
SHIM_EXPORT bool bp_hip_shim_mem_valid(uint64_t p, uint64_t bytes);

/* Test hook: counts of live objects, for leak checks. */
typedef struct bp_hip_shim_stats {
  int64_t allocations, bytes_in_use;
  int64_t streams, events, modules;
  int64_t launches; /* cumulative */
  int64_t loads;    /* cumulative hipModuleLoadData calls that succeeded */
  int64_t graphs;           /* live hipGraph_t and hipGraphExec_t objects */
  int64_t graph_launches;   /* cumulative hipGraphLaunch calls */
} bp_hip_shim_stats_t;
SHIM_EXPORT void bp_hip_shim_stats(bp_hip_shim_stats_t *out);
extern bp_hip_shim_stats_t shim_hip_stats;

/* libhiprtc.so's hook: cumulative compiles (successful or not). */
SHIM_EXPORT int64_t bp_hiprtc_shim_compiles(void);

#endif /* BP_HIP_SHIM_H */
