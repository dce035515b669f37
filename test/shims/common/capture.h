/*
 * capture.h — stream capture and graphs of the CPU shims, written once for
 * the CUDA driver shim (test/shims/cuda) and the HIP runtime shim
 * (test/shims/hip), which wrap it under their API names. Both APIs share
 * the error numbers and capture modes used here.
 *
 * A capturing stream records kernel launches, copies and host work into a
 * graph instead of running them; a launch of the instantiated graph runs
 * them in order (the shims' streams are synchronous). The rules of the real
 * drivers that a plugin can break are enforced, so that the plugin tests
 * prove capture safety:
 *  - "potentially unsafe" calls (synchronous allocation, frees, synchronous
 *    copies, context synchronisation, module loading) fail with
 *    STREAM_CAPTURE_UNSUPPORTED on a thread whose own capture is not
 *    relaxed (thread-local and global modes), or in global mode while
 *    another thread captures in global mode; the capture is invalidated;
 *  - work on the legacy / null stream while a blocking stream captures
 *    fails with STREAM_CAPTURE_IMPLICIT and invalidates that capture;
 *  - synchronising a capturing stream fails (UNSUPPORTED, invalidates);
 *  - a non-relaxed capture ends on the thread that began it.
 * A launch's parameters are copied when it is captured, as the driver does.
 */
#ifndef BP_SHIM_CAPTURE_H
#define BP_SHIM_CAPTURE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Error numbers shared by CUresult and hipError_t. */
#define SHIM_ERR_INVALID_VALUE 1
#define SHIM_ERR_INVALID_HANDLE 400
#define SHIM_ERR_ILLEGAL_STATE 401
#define SHIM_ERR_CAPTURE_UNSUPPORTED 900
#define SHIM_ERR_CAPTURE_INVALIDATED 901
#define SHIM_ERR_CAPTURE_IMPLICIT 906
#define SHIM_ERR_CAPTURE_WRONG_THREAD 908
/* Capture modes (CUstreamCaptureMode, hipStreamCaptureMode). */
#define SHIM_MODE_GLOBAL 0
#define SHIM_MODE_THREAD_LOCAL 1
#define SHIM_MODE_RELAXED 2

struct shim_kernel;
typedef struct shim_graph shim_graph_t;

/* Capture state embedded in each shim's stream object. */
typedef struct shim_stream_capture {
  shim_graph_t *graph; /* the graph being built; NULL when not capturing */
  pthread_t owner;
  int mode;
  bool invalidated;
} shim_stream_capture_t;

/* Begins capturing on c (mode as passed to *StreamBeginCapture). */
int shim_capture_begin(shim_stream_capture_t *c, int mode);
/* Ends the capture on c: the graph in *out, or an error (and NULL) when
 * the capture was invalidated. */
int shim_capture_end(shim_stream_capture_t *c, shim_graph_t **out);
/* A stream being destroyed: drops its capture. */
void shim_capture_drop(shim_stream_capture_t *c);
/* 0, or the error a potentially unsafe call named fn gets on this thread
 * (and the captures it invalidates). */
int shim_capture_unsafe(const char *fn);
/* 0, or the error work on the legacy / null stream gets while a stream
 * captures (and that capture is invalidated). */
int shim_capture_legacy(const char *fn);
/* 0, or the error synchronising / querying a capturing stream gets. */
int shim_capture_sync(shim_stream_capture_t *c, const char *fn);
/* Swaps the thread's capture mode. */
int shim_capture_exchange_mode(int *mode);
/* Live graph objects (built and instantiated), for leak checks. */
int64_t shim_graphs_live(void);

/* Recording: each returns true when the work was recorded into c's graph
 * (it must then not run). param_sizes: one size per kernel parameter. */
bool shim_capture_kernel(shim_stream_capture_t *c,
                         const struct shim_kernel *k, const void *launch,
                         void **params, int count,
                         const uint32_t *param_sizes);
bool shim_capture_copy(shim_stream_capture_t *c, uint64_t dst, bool dst_dev,
                       uint64_t src, bool src_dev, size_t n);
bool shim_capture_host(shim_stream_capture_t *c, void (*fn)(void *),
                       const void *data, size_t size);

/* Graphs: validity, instantiate (a deep copy), run, free. */
bool shim_graph_ok(const shim_graph_t *g, const char *fn);
int shim_graph_instantiate(const shim_graph_t *g, shim_graph_t **out);
/* Runs every node in order; returns 0 or SHIM_ERR_INVALID_VALUE (a copy
 * outside the allocations) or illegal_address (a kernel that was). */
int shim_graph_run(const shim_graph_t *g, int illegal_address,
                   int64_t *launches);
void shim_graph_free(shim_graph_t *g, const char *fn);

#endif /* BP_SHIM_CAPTURE_H */
