/*
 * kernels.c — custom kernels on the CPU: a C function from a shared object,
 * called through libffi once per block with the same argument array a GPU
 * launch takes:
 *
 *     void fn(const bp_cpu_kernel_index_t *index, arg0, arg1, ...);
 *
 * Buffers arrive as pointers (their offset applied), scalars by value. On the
 * "cpu" device the blocks are spread over the thread pool; "cpu-ref" runs
 * them in order on the calling thread.
 */
#include <dlfcn.h>
#include <ffi.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

#define KERNEL_MAX_ARGS 64

struct bp_plugin_kernel {
  void *dl;
  void (*fn)(void);
  ffi_cif cif;
  ffi_type *types[KERNEL_MAX_ARGS + 1];
  uint32_t arg_count;
};

static ffi_type *ffi_type_of(bp_kernel_arg_kind_t k) {
  switch (k) {
  case BP_ARG_BUFFER: return &ffi_type_pointer;
  case BP_ARG_I32: return &ffi_type_sint32;
  case BP_ARG_U32: return &ffi_type_uint32;
  case BP_ARG_I64: return &ffi_type_sint64;
  case BP_ARG_U64: return &ffi_type_uint64;
  case BP_ARG_F32: return &ffi_type_float;
  case BP_ARG_F64: return &ffi_type_double;
  }
  return NULL;
}

bp_status_t cpu_kernel_create(bp_plugin_device_t *device, const bp_kernel_source_t *src,
                              bp_plugin_kernel_t **out_kernel) {
  (void)device;
  *out_kernel = NULL;
  if (src->format != BP_KERNEL_C_SHARED_OBJECT || src->arg_count > KERNEL_MAX_ARGS) {
    cpu_set_error("the CPU takes C functions from shared objects, with at most %d arguments", KERNEL_MAX_ARGS);
    return BP_ERR_UNSUPPORTED;
  }
  char *path = strndup(src->code, src->code_size);
  bp_plugin_kernel_t *k = calloc(1, sizeof *k);
  if (!path || !k) {
    free(path);
    free(k);
    return BP_ERR_OUT_OF_MEMORY;
  }
  k->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  free(path);
  if (!k->dl) {
    cpu_set_error("cannot load kernel library: %s", dlerror());
    free(k);
    return BP_ERR_INVALID_ARGUMENT;
  }
  *(void **)&k->fn = dlsym(k->dl, src->entry);
  if (!k->fn) {
    cpu_set_error("no function '%s' in the kernel library", src->entry);
    dlclose(k->dl);
    free(k);
    return BP_ERR_NOT_FOUND;
  }
  k->arg_count = src->arg_count;
  k->types[0] = &ffi_type_pointer; /* the block index */
  for (uint32_t i = 0; i < src->arg_count; i++) k->types[i + 1] = ffi_type_of(src->signature[i]);
  if (ffi_prep_cif(&k->cif, FFI_DEFAULT_ABI, src->arg_count + 1, &ffi_type_void, k->types) != FFI_OK) {
    cpu_set_error("libffi could not prepare the call");
    dlclose(k->dl);
    free(k);
    return BP_ERR_INTERNAL;
  }
  *out_kernel = k;
  return BP_OK;
}

void cpu_kernel_destroy(bp_plugin_device_t *device, bp_plugin_kernel_t *k) {
  (void)device;
  if (!k) return;
  dlclose(k->dl);
  free(k);
}

typedef struct launch_ctx {
  bp_plugin_kernel_t *k;
  const bp_launch_args_t *a;
  void *scalars[KERNEL_MAX_ARGS]; /* where each argument's value lives */
  void *pointers[KERNEL_MAX_ARGS];
} launch_ctx_t;

static void run_blocks(void *arg, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  launch_ctx_t *c = arg;
  const uint32_t *g = c->a->grid;
  bp_cpu_kernel_index_t idx = {{0, 0, 0}, {g[0], g[1], g[2]}, {c->a->block[0], c->a->block[1], c->a->block[2]}};
  const bp_cpu_kernel_index_t *idx_ptr = &idx;
  void *values[KERNEL_MAX_ARGS + 1];
  values[0] = &idx_ptr;
  for (uint32_t i = 0; i < c->k->arg_count; i++) values[i + 1] = c->scalars[i];
  for (int64_t b = begin; b < end; b++) {
    idx.block[0] = (uint32_t)(b % g[0]);
    idx.block[1] = (uint32_t)((b / g[0]) % g[1]);
    idx.block[2] = (uint32_t)(b / ((int64_t)g[0] * g[1]));
    ffi_call(&c->k->cif, c->k->fn, NULL, values);
  }
}

bp_status_t cpu_kernel_launch(bp_plugin_device_t *device, bp_plugin_stream_t *stream, bp_plugin_kernel_t *k,
                              const bp_launch_args_t *a) {
  (void)stream;
  cpu_device_t *dev = cpu_device(device);
  launch_ctx_t c = {k, a, {0}, {0}};
  for (uint32_t i = 0; i < a->arg_count; i++) {
    const bp_plugin_kernel_arg_t *x = &a->args[i];
    if (x->kind == BP_ARG_BUFFER) {
      c.pointers[i] = (char *)(uintptr_t)x->value.buffer.ptr + x->value.buffer.offset;
      c.scalars[i] = &c.pointers[i];
    } else {
      c.scalars[i] = (void *)&x->value; /* every scalar starts the union */
    }
  }
  int64_t blocks = (int64_t)a->grid[0] * a->grid[1] * a->grid[2];
  if (dev->reference || !dev->pool) run_blocks(&c, 0, blocks, 0);
  else cpu_pool_run(dev->pool, blocks, 1, run_blocks, &c);
  return BP_OK;
}
