/*
 * ops_common.c — helpers every ops_*.c file uses: kernel argument
 * marshalling, enqueueing (also used by custom kernels, kernels.c), grids,
 * dtype build options, and the layout collapsing that lets elementwise
 * kernels run as flat loops when tensors are contiguous.
 */
#include <stdio.h>
#include <string.h>

#include "ocl.h"

void ocl_arg(ocl_args_t *a, size_t size, const void *value) {
  if (a->err != CL_SUCCESS) return; /* the first failure is the one reported */
  a->err = ocl_api.clSetKernelArg(a->k, a->n++, size, value);
}

void ocl_arg_buf(ocl_args_t *a, uint64_t ptr, uint64_t offset) {
  cl_mem m = ocl_mem(ptr);
  cl_ulong off = offset;
  OCL_ARG(a, m);
  OCL_ARG(a, off);
}

/* BACKPLANE_OPENCL_PROFILE=1: every launch waits for its kernel and logs
 * its name, grid and device time (BACKPLANE_DEBUG=info), to see what an op
 * really launches and where its time goes. Slows everything down. */
static bool profile_on(void) {
  static int on = -1;
  if (on < 0) {
    const char *e =
        ocl_host && ocl_host->getenv ? ocl_host->getenv("BACKPLANE_OPENCL_PROFILE") : NULL;
    on = e && e[0] == '1';
  }
  return on == 1;
}

static void profile_log(cl_kernel k, cl_event ev, cl_uint dims, const size_t *gws,
                        const size_t *lws) {
  char name[64] = "?";
  cl_ulong t0 = 0, t1 = 0;
  ocl_api.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
  if (ocl_api.clWaitForEvents(1, &ev) == CL_SUCCESS) {
    ocl_api.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    ocl_api.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
  }
  ocl_api.clReleaseEvent(ev);
  size_t g[3] = {1, 1, 1}, l[3] = {0, 0, 0};
  for (cl_uint i = 0; i < dims && i < 3; i++) g[i] = gws[i], l[i] = lws ? lws[i] : 0;
  OCL_LOG(BP_LOG_INFO, "profile %s grid %zux%zux%zu group %zux%zux%zu: %.3f ms", name, g[0], g[1],
          g[2], l[0], l[1], l[2], (double)(t1 - t0) * 1e-6);
}

bp_status_t ocl_enqueue(cl_command_queue q, ocl_args_t *a, cl_uint dims, const size_t *gws,
                        const size_t *lws) {
  if (a->err != CL_SUCCESS) return ocl_fail(a->err, "clSetKernelArg");
  for (cl_uint i = 0; i < dims; i++)
    if (gws[i] == 0) return BP_OK; /* empty launch: nothing to do */
  ocl_graph_t *g = ocl_graph_recording(q);
  if (g) { /* recording a native graph: into its command buffer */
    cl_int err = ocl_graph_record_kernel(g, a->k, dims, gws, lws);
    return err == CL_SUCCESS ? BP_OK : ocl_fail(err, "clCommandNDRangeKernelKHR");
  }
  cl_event ev = NULL;
  bool prof = profile_on();
  cl_int err =
      ocl_api.clEnqueueNDRangeKernel(q, a->k, dims, NULL, gws, lws, 0, NULL, prof ? &ev : NULL);
  if (err != CL_SUCCESS) return ocl_fail(err, "clEnqueueNDRangeKernel");
  if (ev) profile_log(a->k, ev, dims, gws, lws);
  /* Some drivers (PoCL among them) start work only on flush; without it an
   * in-order queue on another thread could sit idle until synchronize. */
  ocl_api.clFlush(q);
  return BP_OK;
}

/* Grid for a grid-stride loop over n items: enough groups to fill the
 * device, not so many that launch overhead dominates. */
static void flat_grid(const ocl_device_t *d, int64_t n, size_t *gws, size_t *lws) {
  *lws = 64;
  size_t cap = (size_t)64 * 64 * (d->caps.compute_units ? d->caps.compute_units : 1);
  size_t want = ocl_round_up((size_t)n, *lws);
  *gws = want < cap ? want : cap;
}

bp_status_t ocl_launch_flat(ocl_device_t *d, bp_plugin_stream_t *stream, ocl_args_t *a, int64_t n) {
  size_t gws, lws;
  flat_grid(d, n, &gws, &lws);
  return ocl_enqueue(ocl_queue(d, stream), a, 1, &gws, &lws);
}

bp_status_t ocl_launch_rows(ocl_device_t *d, bp_plugin_stream_t *stream, ocl_args_t *a,
                            int64_t nrows, bool per_item) {
  size_t lws = OCL_ROW_WG;
  size_t gws = per_item ? ocl_round_up((size_t)nrows, lws) : (size_t)nrows * lws;
  return ocl_enqueue(ocl_queue(d, stream), a, 1, &gws, &lws);
}

void ocl_arg_scalar(ocl_args_t *a, bp_dtype_t dt, double v) {
  if (dt == BP_F64) {
    cl_double x = v;
    OCL_ARG(a, x);
  } else {
    cl_float x = (cl_float)v;
    OCL_ARG(a, x);
  }
}

size_t ocl_dtype_size(bp_dtype_t dt) {
  /* block dtypes (q8_0, q4_0) have no element size: 0 */
  static const size_t sizes[BP_DTYPE_COUNT] = {4, 2, 2, 8, 4, 8, 1, 1, 1, 1};
  return (unsigned)dt < BP_DTYPE_COUNT ? sizes[dt] : 0;
}

void ocl_dtype_options(const ocl_device_t *d, bp_dtype_t dt, char *out, size_t cap) {
  (void)d;
  snprintf(out, cap, "-cl-std=CL1.2 -DDT=%d", (int)dt);
}

void ocl_layout_make(const bp_plugin_tensor_t *const *t, int nt, const int64_t *shape, int rank,
                     ocl_layout_t *out) {
  memset(out, 0, sizeof *out);
  out->numel = 1;
  for (int d = 0; d < rank; d++) out->numel *= shape[d];
  /* Keep non-unit dims, outermost first. */
  int r = 0;
  for (int d = 0; d < rank; d++) {
    if (shape[d] == 1) continue;
    out->shape[r] = shape[d];
    for (int i = 0; i < nt; i++) out->strides[i][r] = t[i]->strides[d];
    r++;
  }
  /* Merge dim j into its inner neighbour when every tensor steps over the
   * pair as one longer dim. */
  int w = 0;
  for (int j = 0; j < r; j++) {
    bool merge = w > 0;
    for (int i = 0; i < nt && merge; i++)
      merge = out->strides[i][w - 1] == out->strides[i][j] * out->shape[j];
    if (merge) {
      out->shape[w - 1] *= out->shape[j];
      for (int i = 0; i < nt; i++) out->strides[i][w - 1] = out->strides[i][j];
    } else {
      out->shape[w] = out->shape[j];
      for (int i = 0; i < nt; i++) out->strides[i][w] = out->strides[i][j];
      w++;
    }
  }
  if (w == 0) { /* a scalar: one element at offset 0 */
    out->shape[0] = 1;
    w = 1;
  }
  for (int j = w; j < 8; j++) {
    out->shape[j] = 1;
    for (int i = 0; i < nt; i++) out->strides[i][j] = 0;
  }
  out->rank = w;
}

void ocl_rows_make(const bp_plugin_tensor_t *x, const bp_plugin_tensor_t *y, int axis,
                   ocl_layout_t *out) {
  int64_t shape[BP_MAX_RANK];
  for (int d = 0; d < x->rank; d++) shape[d] = d == axis ? 1 : x->shape[d];
  const bp_plugin_tensor_t *ts[2] = {x, y};
  ocl_layout_make(ts, 2, shape, x->rank, out);
}

void ocl_arg_rows(ocl_args_t *a, const ocl_layout_t *l, int64_t len, int64_t sxl, int64_t syl) {
  cl_int rank = l->rank;
  cl_long v[4] = {l->numel, len, sxl, syl};
  OCL_ARG(a, rank);
  OCL_ARG(a, v[0]);
  ocl_arg(a, sizeof(cl_long8), l->shape);
  ocl_arg(a, sizeof(cl_long8), l->strides[0]);
  ocl_arg(a, sizeof(cl_long8), l->strides[1]);
  OCL_ARG(a, v[1]);
  OCL_ARG(a, v[2]);
  OCL_ARG(a, v[3]);
}

void ocl_arg_strides4(ocl_args_t *a, const bp_plugin_tensor_t *t) {
  cl_long s[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4 && i < t->rank; i++) s[i] = t->strides[i];
  ocl_arg(a, sizeof(cl_long4), s);
}
