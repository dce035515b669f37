/*
 * layer_common.h — what the shipped layers (trace, stats, check,
 * passthrough) share, compiled into each layer-<name>.so: the per-device
 * instance, the map from a plugin's device handle to it (layer-api.h rule
 * 3), op wrappers generated from BP_OP_TABLE that call the layer's hook,
 * and tensor helpers (shape text, byte extents, element offsets).
 *
 * A layer defines lc_op_hook (called for every op it wraps) and fills an
 * lc_layer_t; lc_create/lc_destroy do the rest.
 */
#ifndef BP_LAYER_COMMON_H
#define BP_LAYER_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layer-api.h"

#define LC_MAX_TENSORS 8

typedef struct lc_instance {
  bp_plugin_descriptor_t desc;         /* what the layer above calls */
  const bp_plugin_descriptor_t *next;  /* what this layer calls */
  bp_plugin_device_t *device;          /* the plugin's handle */
  char backend[64], device_name[256];
  uint32_t backend_index;
  void *state;                         /* the layer's own, per device */
} lc_instance_t;

/* What a layer wraps; the op hook is the function lc_op_hook below. */
typedef struct lc_layer {
  bool wrap_ops;     /* every op next has goes through lc_op_hook */
  bool wrap_memory;  /* mem_alloc / mem_free go through lc_mem_hook_* */
  /* Called once the instance exists (state may be set); non-OK refuses. */
  bp_status_t (*instance_init)(lc_instance_t *in);
  void (*instance_fini)(lc_instance_t *in);
} lc_layer_t;

/* Defined by each layer: runs op for in, usually around lc_call_next. */
bp_status_t lc_op_hook(lc_instance_t *in, bp_op_t op, bp_plugin_stream_t *s, const void *args);
/* Defined by layers with wrap_memory (others get a weak default). */
bp_status_t lc_mem_alloc_hook(lc_instance_t *in, uint64_t size, uint64_t *out_ptr);
void lc_mem_free_hook(lc_instance_t *in, uint64_t ptr);

/* Builds the instance over next for device (layer-api.h create). */
bp_status_t lc_create(const lc_layer_t *layer, const bp_plugin_descriptor_t *next,
                      const bp_layer_device_t *device, const bp_plugin_descriptor_t **out_desc);
/* Frees the instance behind desc (layer-api.h destroy). */
void lc_destroy(const lc_layer_t *layer, const bp_plugin_descriptor_t *desc);
/* The instance sitting on the plugin device handle d, NULL if none. */
lc_instance_t *lc_find(const bp_plugin_device_t *d);
/* Calls op on the next descriptor. */
bp_status_t lc_call_next(const lc_instance_t *in, bp_op_t op, bp_plugin_stream_t *s, const void *args);

/* ---- ops and tensors ---------------------------------------------------*/
const char *lc_op_name(bp_op_t op);
const char *lc_dtype_name(bp_dtype_t dt);
size_t lc_dtype_size(bp_dtype_t dt);
/* The tensors of op's args (pointers into args), in table order: the last
 * one is the op's output. Returns the count (0 for adam). */
int lc_op_tensors(bp_op_t op, const void *args, const bp_plugin_tensor_t *out[LC_MAX_TENSORS]);
/* Size of op's argument struct. */
size_t lc_op_args_size(bp_op_t op);
/* Whether t is present (rank-0 tensors stand for absent optional ones). */
bool lc_tensor_present(const bp_plugin_tensor_t *t);
int64_t lc_tensor_elements(const bp_plugin_tensor_t *t);
/* The byte range [*lo, *hi) of t's allocation its elements touch. */
void lc_tensor_extent(const bp_plugin_tensor_t *t, uint64_t *lo, uint64_t *hi);
/* "[2,3,4]" into out. */
void lc_shape_text(const bp_plugin_tensor_t *t, char *out, size_t size);
/* Calls fn(i, byte offset from lo) for each element, in row-major order. */
void lc_for_each_element(const bp_plugin_tensor_t *t, uint64_t lo,
                         void (*fn)(int64_t i, uint64_t at, void *arg), void *arg);
/* Element at byte p of dtype dt as a double. */
double lc_load(const void *p, bp_dtype_t dt);

/* Monotonic nanoseconds. */
uint64_t lc_now_ns(void);
/* A getenv that honours the host's secure lookup when it has one. */
const char *lc_getenv(const bp_host_services_t *host, const char *name);

#endif /* BP_LAYER_COMMON_H */
