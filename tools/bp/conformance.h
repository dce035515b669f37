/*
 * conformance.h — the pieces of `bp conformance`.
 *
 * The parent (conformance.c) lists the plugins to test and runs each in its
 * own child process with a time limit. The child opens a context holding the
 * plugin under test and the CPU plugin (whose "cpu-ref" device is the
 * reference), runs the stages (conformance_checks.c, conformance_ops.c) and
 * streams one line per case back over a pipe, announcing each case before it
 * starts so that a crash or hang can be pinned on it.
 */
#ifndef BP_CONFORMANCE_H
#define BP_CONFORMANCE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backplane.h"

typedef enum cf_result {
  CF_PASS = 0,
  CF_FAIL,
  CF_UNSUPPORTED, /* the device does not claim it: not a failure */
  CF_SKIP,        /* could not be run here (no device, no reference) */
  CF_WARN,        /* below the performance floor: reported, not failed */
  CF_XFAIL,       /* failed, and listed in the expected-failure file */
  CF_XPASS,       /* passed, but listed as expected to fail */
  CF_CRASH,       /* the child died or timed out in this case */
  CF_RESULT_COUNT
} cf_result_t;

/* The child's side: where results go. */
typedef struct cf_child {
  FILE *out;           /* the pipe to the parent */
  bp_context_t *ctx;
  bp_device_t *dev;    /* the device under test */
  bp_device_t *ref;    /* cpu-ref */
  bp_stream_t *dev_s, *ref_s;
  bp_device_entry_t entry;
  const char *plugin_path;
  bool quick;
} cf_child_t;

/* Announces a case (written before running it). */
void cf_begin(cf_child_t *c, const char *stage, const char *name);
/* Records the result of the case last announced. */
void cf_end(cf_child_t *c, cf_result_t r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Stages. Each announces and records its own cases. */
void cf_stage_abi(cf_child_t *c);
/* The manifest beside the plugin passes the loader's rules and matches the
 * descriptor d (conformance_manifest.c). */
struct bp_plugin_descriptor;
void cf_check_manifest(cf_child_t *c, const struct bp_plugin_descriptor *d);
void cf_stage_probe(cf_child_t *c);
void cf_stage_ops(cf_child_t *c);
void cf_stage_errors(cf_child_t *c);
void cf_stage_memory(cf_child_t *c);
void cf_stage_concurrency(cf_child_t *c);
void cf_stage_performance(cf_child_t *c);
void cf_stage_graphs(cf_child_t *c);

/* Runs the first case of the op grid for op in dtype dt on the device under
 * test (conformance_ops.c) and returns its status; the output is not read.
 * BP_ERR_INTERNAL when the grid has no case for op. */
bp_status_t cf_try_op(cf_child_t *c, bp_op_t op, bp_dtype_t dt);
/* Whether the op stage tries op in dtype dt: every dtype for fill, copy and
 * cast, the float dtypes for the rest. */
bool cf_dtype_in_grid(bp_op_t op, bp_dtype_t dt);

/* ---- helpers shared by the stages (conformance_data.c) --------------------*/

/* Buffers a case allocates on one device, freed together. */
typedef struct cf_run {
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *bufs[24];
  int nbufs;
  bool failed; /* an allocation or upload failed; message in err */
  char err[256];
} cf_run_t;

typedef enum cf_fill {
  CF_FILL_NORMAL = 0,  /* standard normal */
  CF_FILL_POSITIVE,    /* in [0.5, 2.5) */
  CF_FILL_SPECIAL,     /* normal with NaN, ±Inf, -0.0 and denormals mixed in */
  CF_FILL_SMALL_INT,   /* small integers, exact in every dtype */
  CF_FILL_NAN          /* every element NaN: must be overwritten, never read */
} cf_fill_t;

typedef enum cf_layout {
  CF_CONTIGUOUS = 0,
  CF_STRIDED,    /* every axis strided by a gap: non-contiguous */
  CF_TRANSPOSED  /* the last two axes stored swapped, presented as a view */
} cf_layout_t;

void cf_run_init(cf_run_t *r, bp_device_t *dev, bp_stream_t *s);
void cf_run_free(cf_run_t *r);
/* A tensor of shape with data drawn from (seed, fill): the same values on
 * every device, whatever the layout. */
bp_tensor_t cf_tensor(cf_run_t *r, bp_dtype_t dt, int rank, const int64_t *shape,
                      cf_layout_t layout, cf_fill_t fill, uint64_t seed);
/* Reads t (logical row-major order) as doubles; *n gets the count. The caller
 * frees the result. NULL when reading failed. */
double *cf_read(cf_run_t *r, const bp_tensor_t *t, int64_t *n);

/* Compares got with ref: NaN must meet NaN, ±Inf must meet the same Inf,
 * the rest by error normalised by the reference's largest finite magnitude.
 * Returns true when within tol; detail describes the worst element. */
bool cf_compare(const double *got, const double *ref, int64_t n, double tol,
                char *detail, size_t size);
/* Tolerance for a dtype and a reduction length. */
double cf_tolerance(bp_dtype_t dt, int64_t reduction);

#endif /* BP_CONFORMANCE_H */
