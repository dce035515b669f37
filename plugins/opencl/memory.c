/*
 * memory.c — buffers. A device pointer is the cl_mem handle widened to 64
 * bits; offsets come separately, so no sub-buffers (and their alignment
 * rules) are needed. Transfers with stream NULL first wait for every stream
 * of the device, as the ABI requires, then run blocking on the device queue.
 */
#include "ocl.h"

bp_status_t ocl_mem_alloc(bp_plugin_device_t *device, uint64_t size, uint64_t *out_ptr) {
  ocl_device_t *d = (ocl_device_t *)device;
  *out_ptr = 0;
  cl_int err = CL_SUCCESS;
  /* OpenCL aligns buffers to CL_DEVICE_MEM_BASE_ADDR_ALIGN (>= 1024 bits on
   * conformant devices), which covers the ABI's 64 bytes. */
  cl_mem m = ocl_api.clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, (size_t)size, NULL, &err);
  if (!m) return ocl_fail(err, "clCreateBuffer");
  *out_ptr = (uint64_t)(uintptr_t)m;
  return BP_OK;
}

void ocl_mem_free(bp_plugin_device_t *device, uint64_t ptr) {
  (void)device;
  if (ptr)
    ocl_api.clReleaseMemObject(ocl_mem(ptr)); /* deferred by OpenCL until
                                                  queued users finish */
}

/* Queue and blocking flag for a transfer on stream (NULL: whole device). */
static bp_status_t transfer_queue(ocl_device_t *d, bp_plugin_stream_t *stream,
                                  cl_command_queue *out_q, cl_bool *out_blocking) {
  *out_q = ocl_queue(d, stream);
  *out_blocking = stream ? CL_FALSE : CL_TRUE;
  return stream ? BP_OK : ocl_device_finish(d);
}

bp_status_t ocl_mem_write(bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,
                          uint64_t dst_offset, const void *src, uint64_t size) {
  cl_command_queue q;
  cl_bool blocking;
  bp_status_t st = transfer_queue((ocl_device_t *)device, stream, &q, &blocking);
  if (st != BP_OK || size == 0) return st;
  cl_int err =
      ocl_api.clEnqueueWriteBuffer(q, ocl_mem(dst), blocking, dst_offset, size, src, 0, NULL, NULL);
  return err == CL_SUCCESS ? BP_OK : ocl_fail(err, "clEnqueueWriteBuffer");
}

bp_status_t ocl_mem_read(bp_plugin_device_t *device, bp_plugin_stream_t *stream, void *dst,
                         uint64_t src, uint64_t src_offset, uint64_t size) {
  cl_command_queue q;
  cl_bool blocking;
  bp_status_t st = transfer_queue((ocl_device_t *)device, stream, &q, &blocking);
  if (st != BP_OK || size == 0) return st;
  cl_int err =
      ocl_api.clEnqueueReadBuffer(q, ocl_mem(src), blocking, src_offset, size, dst, 0, NULL, NULL);
  return err == CL_SUCCESS ? BP_OK : ocl_fail(err, "clEnqueueReadBuffer");
}

bp_status_t ocl_mem_copy(bp_plugin_device_t *device, bp_plugin_stream_t *stream, uint64_t dst,
                         uint64_t dst_offset, uint64_t src, uint64_t src_offset, uint64_t size) {
  cl_command_queue q;
  cl_bool blocking;
  bp_status_t st = transfer_queue((ocl_device_t *)device, stream, &q, &blocking);
  if (st != BP_OK || size == 0) return st;
  cl_int err = ocl_api.clEnqueueCopyBuffer(q, ocl_mem(src), ocl_mem(dst), src_offset, dst_offset,
                                           size, 0, NULL, NULL);
  if (err == CL_SUCCESS && blocking) err = ocl_api.clFinish(q);
  return err == CL_SUCCESS ? BP_OK : ocl_fail(err, "clEnqueueCopyBuffer");
}

/* Maps a range for the host, blocking on the device queue (the core has
 * synchronised the device). On a CPU device (PoCL) the mapping is the
 * buffer's own memory, so a copy to or from another device needs no staging;
 * a write-only mapping tells the driver not to fetch what will be
 * overwritten. */
bp_status_t ocl_mem_map(bp_plugin_device_t *device, uint64_t ptr, uint64_t offset, uint64_t size,
                        uint32_t flags, void **out_host) {
  ocl_device_t *d = (ocl_device_t *)device;
  *out_host = NULL;
  cl_map_flags how = 0;
  if (flags & BP_MAP_READ) how |= CL_MAP_READ;
  if (flags & BP_MAP_WRITE) how |= (flags & BP_MAP_READ) ? CL_MAP_WRITE : CL_MAP_WRITE_INVALIDATE_REGION;
  cl_int err = CL_SUCCESS;
  void *host = ocl_api.clEnqueueMapBuffer(d->queue, ocl_mem(ptr), CL_TRUE, how, (size_t)offset, (size_t)size, 0,
                                          NULL, NULL, &err);
  if (!host || err != CL_SUCCESS) return ocl_fail(err != CL_SUCCESS ? err : CL_MAP_FAILURE, "clEnqueueMapBuffer");
  *out_host = host;
  return BP_OK;
}

/* Unmaps and waits, so the device sees the host's writes before any later
 * work runs. */
bp_status_t ocl_mem_unmap(bp_plugin_device_t *device, uint64_t ptr, void *host) {
  ocl_device_t *d = (ocl_device_t *)device;
  cl_int err = ocl_api.clEnqueueUnmapMemObject(d->queue, ocl_mem(ptr), host, 0, NULL, NULL);
  if (err == CL_SUCCESS) err = ocl_api.clFinish(d->queue);
  return err == CL_SUCCESS ? BP_OK : ocl_fail(err, "clEnqueueUnmapMemObject");
}
