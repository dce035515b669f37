/*
 * plugins/gpu/kernel_args.h — the kernelParams array of a custom-kernel launch,
 * shared by backend-cuda.so (cuLaunchKernel) and backend-rocm.so
 * (hipModuleLaunchKernel), which read it the same way.
 *
 * Header-only (static inline): each vendor's kernels.c includes it.
 *
 * Both drivers take an array of pointers, one per kernel parameter, and
 * copy from each as many bytes as the code object says that parameter has.
 * So every argument gets an 8-byte slot: a buffer becomes its device
 * address with the offset applied (a pointer parameter, 8 bytes); a scalar
 * is stored at the start of its slot (little-endian hosts only, as both
 * drivers are), so a 4-byte parameter reads exactly its value.
 */
#ifndef BACKPLANE_GPU_KERNEL_ARGS_H
#define BACKPLANE_GPU_KERNEL_ARGS_H

#include <stdint.h>
#include <string.h>

#include "plugin-api.h"

/* The core caps a signature at 64 arguments (core/kernel.c). */
#define BP_GPU_MAX_KERNEL_ARGS 64

typedef struct bp_gpu_kernel_params {
  uint64_t slots[BP_GPU_MAX_KERNEL_ARGS];
  void *ptrs[BP_GPU_MAX_KERNEL_ARGS]; /* ptrs[i] = &slots[i] */
} bp_gpu_kernel_params_t;

/* Bytes a parameter of kind k occupies in the kernel's parameter list. */
static inline uint32_t bp_gpu_kernel_arg_size(bp_kernel_arg_kind_t k) {
  switch (k) {
  case BP_ARG_I32:
  case BP_ARG_U32:
  case BP_ARG_F32:
    return 4;
  default: /* buffers (device pointers), 64-bit scalars */
    return 8;
  }
}

/* Fills out from the launch's argument array. Returns the index of the
 * first argument with an unknown kind, or -1 when all are fine; the core
 * has checked kinds against the signature, so that means an ABI mismatch. */
static inline int bp_gpu_kernel_params_build(const bp_launch_args_t *a,
                                             bp_gpu_kernel_params_t *out) {
  memset(out->slots, 0, sizeof out->slots);
  for (uint32_t i = 0; i < a->arg_count && i < BP_GPU_MAX_KERNEL_ARGS; i++) {
    const bp_plugin_kernel_arg_t *x = &a->args[i];
    out->ptrs[i] = &out->slots[i];
    switch (x->kind) {
    case BP_ARG_BUFFER:
      out->slots[i] = x->value.buffer.ptr + x->value.buffer.offset;
      break;
    case BP_ARG_I32:
    case BP_ARG_U32:
    case BP_ARG_F32:
      memcpy(&out->slots[i], &x->value, 4);
      break;
    case BP_ARG_I64:
    case BP_ARG_U64:
    case BP_ARG_F64:
      memcpy(&out->slots[i], &x->value, 8);
      break;
    default:
      return (int)i;
    }
  }
  return -1;
}

#endif /* BACKPLANE_GPU_KERNEL_ARGS_H */
