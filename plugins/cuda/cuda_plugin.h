/*
 * cuda_plugin.h — internals shared by the files of backend-cuda.so.
 *
 * The usual plugin file set (docs/plugin-guide.md): descriptor.c
 * (descriptor, init, probe), device.c (open/close on the primary context),
 * memory.c (allocation, copies), stream.c (streams, events), and the ops in
 * ops_*.c, one per kernel family (argument marshalling into the parameter
 * blocks of kernels/cuda/bp_cuda_args.h). CUDA-specific: driver.c (dlopen
 * and dlsym of libcuda.so.1, CUresult -> bp_status_t), module.c (embedded
 * PTX, kernel lookup and launch), kernels.c (custom PTX kernels of the
 * application). Shared with the ROCm backend: plugins/common/gpu_plugin.h
 * (the declarations both plugin headers make, expanded here with cuda_),
 * gpu_marshal.h (tensor views) and gpu_kernel_args.h (custom-kernel
 * parameters); descriptor.c and driver.c bind gpu_descriptor.inc and
 * gpu_loader.inc.
 */
#ifndef BACKPLANE_CUDA_PLUGIN_H
#define BACKPLANE_CUDA_PLUGIN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "kernels/cuda/bp_cuda_args.h"
#include "plugin-api.h"
#include "plugins/common/gpu_blas.h"
#include "plugins/common/gpu_plugin.h"
#include "plugins/common/gpu_marshal.h"
#include "plugins/cuda/cuda_driver.h"

#define CUDA_HIDDEN BP_GPU_HIDDEN
#define CUDA_PLUGIN_NAME "cuda"
#define CUDA_PLUGIN_VERSION "0.1.0"

/* The PTX targets compute_80: older GPUs are listed but claim no ops. */
#define CUDA_MIN_CC_MAJOR 8

/* One opened device. The primary context is retained while it is open. */
typedef struct cuda_device {
  BP_GPU_DEVICE_FIELDS(CUmodule)
  CUdevice dev;
  CUcontext ctx;
  int cc_major, cc_minor;
  int smem_optin;   /* max dynamic shared memory per block, opt-in */
  bool async_alloc; /* cuMemAllocAsync usable on this device */
  bool allow_tf32;
} cuda_device_t;

BP_GPU_DECLARE_STREAM_TYPES(cuda, CUstream, CUevent)

/* ---- driver.c ------------------------------------------------------------ */
/* The process-wide driver table (valid after a successful cuda_driver_load).
 */
CUDA_HIDDEN extern cuda_driver_t cuda_drv;
/* Opens libcuda.so.1 (or $BACKPLANE_CUDA_DRIVER), resolves every entry
 * point and calls cuInit once. BP_ERR_UNAVAILABLE with a reason otherwise.
 * Thread-safe; the result is cached. */
CUDA_HIDDEN bp_status_t cuda_driver_load(void);
/* Closes the driver handle (at shutdown). */
CUDA_HIDDEN void cuda_driver_unload(void);

/* ---- device.c ------------------------------------------------------------ */
/* Makes the device's context current on this thread; pair with
 * cuda_ctx_leave. Returns the status of the push. */
CUDA_HIDDEN bp_status_t cuda_ctx_enter(cuda_device_t *d);
CUDA_HIDDEN void cuda_ctx_leave(void);

/* ---- shared declarations (plugins/common/gpu_plugin.h) ------------------ */
/* driver.c, module.c, kernels.c, device.c, ops_*.c */
BP_GPU_DECLARE_PLUGIN(cuda, cuda_device_t, CUresult)
/* memory.c, stream.c, graph.c, blas.c */
BP_GPU_DECLARE_ENTRY_POINTS(cuda, CUDA_HIDDEN, cuda_device_t)

/* ---- module.c ------------------------------------------------------------ */
/* Looks up kernel name in module m, loading the module on first use. */
CUDA_HIDDEN bp_status_t cuda_kernel_get(cuda_device_t *d, bp_gpu_module_id_t m,
                                        const char *name, CUfunction *out_fn);
/* The driver version (cuDriverGetVersion form) the embedded PTX's ISA
 * version needs, from its ".version" line; 0 when unknown. */
CUDA_HIDDEN int cuda_ptx_required_driver(int *out_isa_major,
                                         int *out_isa_minor);
/* Opts fn in to smem bytes of dynamic shared memory when that is over the
 * 48 KiB default; BP_ERR_UNSUPPORTED over the device's limit (context
 * current). name is for the message. */
CUDA_HIDDEN bp_status_t cuda_allow_smem(cuda_device_t *d, CUfunction fn,
                                        unsigned smem, const char *name);

/* memory.c: pinned host memory (CUDA only). */
CUDA_HIDDEN bp_status_t cuda_host_alloc(bp_plugin_device_t *device, uint64_t size, void **out_ptr);
CUDA_HIDDEN void cuda_host_free(bp_plugin_device_t *device, void *ptr);

#endif /* BACKPLANE_CUDA_PLUGIN_H */
