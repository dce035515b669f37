/*
 * kernels.c — custom kernels (ABI 1.1): OpenCL C source from the
 * application, built (and binary-cached) like our own programs, launched
 * over grid x block with the core-checked argument array.
 *
 * Conventions (docs/backend-opencl.md): the global size is grid * block and
 * the work-group size is block; a buffer argument at a non-zero byte offset
 * is passed as a sub-buffer starting there (the offset must then be a
 * multiple of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN); shared_bytes > 0
 * adds one trailing __local argument of that many bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

typedef struct ocl_user_kernel {
  cl_program prog;
  cl_kernel k;
  uint32_t nargs;
  char *entry; /* for a graph's own kernel object (ocl_graph_own_kernel) */
} ocl_user_kernel_t;

bp_status_t ocl_kernel_create(bp_plugin_device_t *device, const bp_kernel_source_t *src,
                              bp_plugin_kernel_t **out_kernel) {
  ocl_device_t *d = (ocl_device_t *)device;
  *out_kernel = NULL;
  if (src->format != BP_KERNEL_OPENCL_C) {
    ocl_host->set_error("opencl: only OpenCL C kernels are taken");
    return BP_ERR_UNSUPPORTED;
  }
  /* The text need not be NUL-terminated. */
  char *text = malloc((size_t)src->code_size + 1);
  ocl_user_kernel_t *uk = calloc(1, sizeof *uk);
  bp_status_t st = BP_ERR_OUT_OF_MEMORY;
  if (!text || !uk) goto out;
  memcpy(text, src->code, (size_t)src->code_size);
  text[src->code_size] = 0;
  pthread_mutex_lock(&d->lock);
  st = ocl_program_build_user(d, src->entry, text, src->options ? src->options : "", &uk->prog);
  pthread_mutex_unlock(&d->lock);
  if (st != BP_OK) goto out;
  cl_int err = CL_SUCCESS;
  uk->k = ocl_api.clCreateKernel(uk->prog, src->entry, &err);
  if (!uk->k) {
    ocl_host->set_error("opencl: no kernel '%s' in the source (%s)", src->entry, ocl_err_name(err));
    st = BP_ERR_INVALID_ARGUMENT;
    goto out;
  }
  uk->nargs = src->arg_count;
  uk->entry = strdup(src->entry);
  if (!uk->entry) {
    st = BP_ERR_OUT_OF_MEMORY;
    goto out;
  }
  *out_kernel = (bp_plugin_kernel_t *)uk;
  free(text);
  return BP_OK;
out:
  if (uk && uk->k) ocl_api.clReleaseKernel(uk->k);
  if (uk && uk->prog) ocl_api.clReleaseProgram(uk->prog);
  free(uk);
  free(text);
  return st;
}

void ocl_kernel_destroy(bp_plugin_device_t *device, bp_plugin_kernel_t *kernel) {
  (void)device;
  ocl_user_kernel_t *uk = (ocl_user_kernel_t *)kernel;
  if (!uk) return;
  ocl_api.clReleaseKernel(uk->k);
  ocl_api.clReleaseProgram(uk->prog);
  free(uk->entry);
  free(uk);
}

/* A buffer argument: the cl_mem itself, or a sub-buffer from offset. */
static bp_status_t arg_buffer(ocl_args_t *a, uint64_t ptr, uint64_t offset, cl_mem *out_sub) {
  cl_mem m = ocl_mem(ptr);
  *out_sub = NULL;
  if (offset == 0) {
    OCL_ARG(a, m);
    return BP_OK;
  }
  size_t size = 0;
  cl_int err = ocl_api.clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL);
  cl_buffer_region region = {(size_t)offset, size - (size_t)offset};
  if (err == CL_SUCCESS)
    *out_sub = ocl_api.clCreateSubBuffer(m, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                         &region, &err);
  if (!*out_sub) {
    ocl_host->set_error("opencl: buffer offset %llu is not usable as a "
                        "sub-buffer (%s; offsets must be multiples of the "
                        "device's base address alignment)",
                        (unsigned long long)offset, ocl_err_name(err));
    return err == CL_MISALIGNED_SUB_BUFFER_OFFSET ? BP_ERR_INVALID_ARGUMENT
                                                  : ocl_fail(err, "clCreateSubBuffer");
  }
  OCL_ARG(a, *out_sub);
  return BP_OK;
}

static void arg_scalar(ocl_args_t *a, const bp_plugin_kernel_arg_t *arg) {
  switch (arg->kind) {
  case BP_ARG_I32:
    OCL_ARG(a, arg->value.i32);
    break;
  case BP_ARG_U32:
    OCL_ARG(a, arg->value.u32);
    break;
  case BP_ARG_I64:
    OCL_ARG(a, arg->value.i64);
    break;
  case BP_ARG_U64:
    OCL_ARG(a, arg->value.u64);
    break;
  case BP_ARG_F32:
    OCL_ARG(a, arg->value.f32);
    break;
  default:
    OCL_ARG(a, arg->value.f64);
    break;
  }
}

bp_status_t ocl_kernel_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream,
                              bp_plugin_kernel_t *kernel, const bp_launch_args_t *la) {
  ocl_device_t *d = (ocl_device_t *)device;
  ocl_user_kernel_t *uk = (ocl_user_kernel_t *)kernel;
  cl_mem *subs = calloc(la->arg_count ? la->arg_count : 1, sizeof *subs);
  if (!subs) return BP_ERR_OUT_OF_MEMORY;
  bp_status_t st = BP_OK;
  pthread_mutex_lock(&d->lock); /* the kernel's argument state is shared */
  ocl_args_t a = {uk->k, 0, CL_SUCCESS};
  st = ocl_graph_own_kernel(uk->prog, uk->entry, &a.k);
  for (uint32_t i = 0; i < la->arg_count && st == BP_OK; i++) {
    const bp_plugin_kernel_arg_t *arg = &la->args[i];
    if (arg->kind == BP_ARG_BUFFER)
      st = arg_buffer(&a, arg->value.buffer.ptr, arg->value.buffer.offset, &subs[i]);
    else
      arg_scalar(&a, arg);
  }
  if (st == BP_OK && la->shared_bytes) ocl_arg(&a, la->shared_bytes, NULL); /* a __local argument */
  size_t gws[3], lws[3];
  for (int i = 0; i < 3; i++) {
    lws[i] = la->block[i] ? la->block[i] : 1;
    gws[i] = (size_t)(la->grid[i] ? la->grid[i] : 1) * lws[i];
  }
  cl_command_queue q = ocl_queue(d, stream);
  if (st == BP_OK) st = ocl_enqueue(q, &a, 3, gws, lws);
  pthread_mutex_unlock(&d->lock);
  for (uint32_t i = 0; i < la->arg_count; i++) {
    ocl_graph_keep(q, subs[i]); /* a recorded launch uses the sub-buffer later */
    if (subs[i]) ocl_api.clReleaseMemObject(subs[i]); /* freed once the launch is done */
  }
  free(subs);
  return st;
}
