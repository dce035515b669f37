/*
 * gpu.h — the few GPU runtime calls the nccl and rccl comm plugins make,
 * behind one interface: gpu_cuda.c (the CUDA driver, libcuda.so.1) builds
 * comm-nccl.so, gpu_hip.c (the HIP runtime, libamdhip64.so) builds
 * comm-rccl.so with -DBP_COMM_RCCL. Everything else is shared: RCCL keeps
 * NCCL's API.
 */
#ifndef BP_COMM_NCCL_GPU_H
#define BP_COMM_NCCL_GPU_H

#include <stdint.h>

#include "comm-api.h"

#ifdef BP_COMM_RCCL
#define VENDOR_NAME "rccl"
#define VENDOR_LIBRARY "RCCL"
#define VENDOR_SONAME "librccl.so.1"
#define VENDOR_LIBRARY_ENV "BACKPLANE_RCCL_LIBRARY"
#define VENDOR_ID_FILE_ENV "BACKPLANE_RCCL_ID_FILE"
#define VENDOR_MEMORY BP_COMM_MEMORY_ROCM
#define VENDOR_DEVICE "ROCm"
#else
#define VENDOR_NAME "nccl"
#define VENDOR_LIBRARY "NCCL"
#define VENDOR_SONAME "libnccl.so.2"
#define VENDOR_LIBRARY_ENV "BACKPLANE_NCCL_LIBRARY"
#define VENDOR_ID_FILE_ENV "BACKPLANE_NCCL_ID_FILE"
#define VENDOR_MEMORY BP_COMM_MEMORY_CUDA
#define VENDOR_DEVICE "CUDA"
#endif

/* The device side of one communicator. */
typedef struct gpu_side {
  int ordinal;
  void *ctx;        /* CUDA's primary context; unused under HIP */
  void *stream;     /* CUstream / hipStream_t of the plugin's own */
  uint64_t scratch; /* one float on the device: the barrier's all-reduce */
  void *done;       /* an event: the end of a call enqueued on another stream */
} gpu_side_t;

/* Opens the driver or runtime (BACKPLANE_CUDA_DRIVER / BACKPLANE_HIP_RUNTIME
 * first) and resolves its calls; BP_ERR_UNAVAILABLE with the reason
 * through set_error otherwise. Called under the plugin's open lock. */
bp_status_t gpu_open(void);
/* Devices present; 0 when the runtime says none or fails. */
int gpu_device_count(void);
/* Makes g's device current on this thread (and its context), and back. */
void gpu_enter(const gpu_side_t *g);
void gpu_leave(const gpu_side_t *g);
/* Takes device ordinal: its context, a stream, the scratch word. */
bp_status_t gpu_attach(gpu_side_t *g, int ordinal);
void gpu_detach(gpu_side_t *g);
/* 1 while work queued on g's stream is pending, 0 when it has run, a
 * negative runtime error otherwise. With g entered. */
int gpu_query(const gpu_side_t *g);
/* Records g's event on stream (a CUstream / hipStream_t of g's device),
 * and tells whether it has been reached: as gpu_query. With g entered. */
int gpu_event_record(const gpu_side_t *g, void *stream);
int gpu_event_query(const gpu_side_t *g);

#endif /* BP_COMM_NCCL_GPU_H */
