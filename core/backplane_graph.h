/*
 * backplane_graph.h — captured graphs and their placement across devices,
 * part of the public API (included by backplane.h; include backplane.h).
 */
#ifndef BACKPLANE_GRAPH_H
#define BACKPLANE_GRAPH_H

#include "backplane.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Graphs: record the ops issued on a stream, replay them many times.
 */

/* Starts recording: ops issued on the stream are validated and recorded
 * instead of run, until bp_stream_end_capture. Copies on a capturing stream
 * are rejected. */
BP_API bp_status_t bp_stream_begin_capture(bp_stream_t *stream);
/* Stops recording and returns the graph, which the caller owns. */
BP_API bp_status_t bp_stream_end_capture(bp_stream_t *stream,
                                         bp_graph_t **out_graph);
/* Queues the recorded ops, in order, on stream (same device). */
BP_API bp_status_t bp_graph_launch(bp_graph_t *graph, bp_stream_t *stream);
/* Points every recorded use of buffer `from` at buffer `to` (same device, at
 * least as large), so one graph serves new inputs and outputs. */
BP_API bp_status_t bp_graph_rebind(bp_graph_t *graph, bp_buffer_t *from,
                                   bp_buffer_t *to);
/* Number of recorded ops (0 for an invalid graph). */
BP_API uint32_t bp_graph_size(const bp_graph_t *graph);
/* Whether the last launch ran the backend's native graph (CUDA graph, reused
 * Vulkan command buffer) rather than replaying the ops one by one. */
BP_API bool bp_graph_is_native(const bp_graph_t *graph);
BP_API void bp_graph_destroy(bp_graph_t *graph);

/* Graph scheduler (docs/runtime.md "Graph scheduler"). A graph captured on
 * a device with fallback on may record ops its device cannot run; such a
 * graph is split into runs per device by support and cost, with the copies
 * between them inserted, and bp_graph_launch on it returns once the
 * results are in the application's buffers. A graph whose ops all run on
 * its device is not scheduled and runs as before. */

/* Why a call runs where it does. */
typedef enum bp_graph_place_reason {
  BP_GRAPH_PLACE_HERE = 0,        /* on the graph's device */
  BP_GRAPH_PLACE_UNSUPPORTED = 1, /* the graph's device does not claim it */
  BP_GRAPH_PLACE_REFUSED = 2,     /* the graph's device's plugin refused it when it ran */
  BP_GRAPH_PLACE_COST = 3         /* the graph's device could run it; the cost model chose this one */
} bp_graph_place_reason_t;

/* Where one recorded call runs, and the copies made for it. */
typedef struct bp_graph_placement {
  uint32_t struct_size;   /* sizeof(bp_graph_placement_t) */
  bp_op_t op;
  uint32_t device_rank;   /* in the context's ranking */
  char device[128];       /* that device's name */
  bp_graph_place_reason_t reason;
  char why[512];          /* the refusal's words, or the cost comparison */
  double estimate_ms;     /* the cost model's figure for it there */
  bool measured;          /* estimate_ms came from the tuning cache */
  uint64_t bytes_in;      /* copied so that it can run, per launch */
  uint64_t bytes_out;     /* copied off its device when its run ends */
} bp_graph_placement_t;

/* The whole plan of a graph. */
typedef struct bp_graph_schedule_info {
  uint32_t struct_size;       /* sizeof(bp_graph_schedule_info_t) */
  bool scheduled;             /* some call runs off the graph's device */
  uint32_t calls, runs, devices;
  uint32_t regions;           /* byte ranges of the buffers that the calls touch */
  uint64_t bytes_from_owners; /* into working copies on other devices, per launch */
  uint64_t bytes_between;     /* between runs, per launch */
  uint64_t bytes_to_owners;   /* working copies back to the buffers, per launch */
} bp_graph_schedule_info_t;

/* Copies the placement of recorded call `call` (0-based) into *out (whose
 * struct_size the caller sets). Thread-safe. */
BP_API bp_status_t bp_graph_placement(const bp_graph_t *graph, uint32_t call,
                                      bp_graph_placement_t *out);
/* Copies the graph's plan figures into *out (struct_size set by the
 * caller). Thread-safe. */
BP_API bp_status_t bp_graph_schedule(const bp_graph_t *graph,
                                     bp_graph_schedule_info_t *out);
/* Writes the placement as text, one line per call and a summary (the form
 * docs/runtime.md "Graph scheduler" describes), NUL-terminated and cut to
 * size; *out_len (may be NULL) receives the full length. Thread-safe. */
BP_API bp_status_t bp_graph_explain(const bp_graph_t *graph, char *buf,
                                    size_t size, size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif /* BACKPLANE_GRAPH_H */
