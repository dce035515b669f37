/*
 * layer_common.c — the shipped layers' shared part (layer_common.h). Each
 * layer links its own copy, so each has its own device map.
 */
#include "layer_common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/common/bp_half.h"

/* ---- the device map: plugin handle -> instance --------------------------
 * Calls carry only the plugin's device handle, so every wrapped entry looks
 * its instance up here. Lookups take no lock: slots are published with a
 * release store and never move; a closed device's slot is cleared and
 * reused. */
#define LC_MAX_DEVICES 256
static struct {
  _Atomic(const bp_plugin_device_t *) key;
  lc_instance_t *_Atomic inst;
} lc_map[LC_MAX_DEVICES];
static atomic_uint lc_used;
static pthread_mutex_t lc_map_lock = PTHREAD_MUTEX_INITIALIZER;

lc_instance_t *lc_find(const bp_plugin_device_t *d) {
  unsigned n = atomic_load_explicit(&lc_used, memory_order_acquire);
  for (unsigned i = 0; i < n; i++)
    if (atomic_load_explicit(&lc_map[i].key, memory_order_acquire) == d)
      return atomic_load_explicit(&lc_map[i].inst, memory_order_relaxed);
  return NULL;
}

static bool map_add(lc_instance_t *in) {
  pthread_mutex_lock(&lc_map_lock);
  unsigned n = atomic_load(&lc_used), i = 0;
  while (i < n && atomic_load(&lc_map[i].key)) i++;
  bool ok = i < LC_MAX_DEVICES;
  if (ok) {
    atomic_store_explicit(&lc_map[i].inst, in, memory_order_relaxed);
    atomic_store_explicit(&lc_map[i].key, in->device, memory_order_release);
    if (i == n) atomic_store_explicit(&lc_used, n + 1, memory_order_release);
  }
  pthread_mutex_unlock(&lc_map_lock);
  return ok;
}

static void map_remove(const lc_instance_t *in) {
  pthread_mutex_lock(&lc_map_lock);
  unsigned n = atomic_load(&lc_used);
  for (unsigned i = 0; i < n; i++)
    if (atomic_load(&lc_map[i].inst) == in) atomic_store(&lc_map[i].key, NULL);
  pthread_mutex_unlock(&lc_map_lock);
}

/* ---- op wrappers ---------------------------------------------------------*/

#define LC_WRAP(E, name, args_t, value, capture, tensors)                                          \
  static bp_status_t lc_wrap_##name(bp_plugin_device_t *d, bp_plugin_stream_t *s,                  \
                                    const args_t *a) {                                             \
    lc_instance_t *in = lc_find(d);                                                                \
    return in ? lc_op_hook(in, BP_OP_##E, s, a) : BP_ERR_INTERNAL;                                 \
  }
BP_OP_TABLE_ALL(LC_WRAP)
#undef LC_WRAP

bp_status_t lc_call_next(const lc_instance_t *in, bp_op_t op, bp_plugin_stream_t *s,
                         const void *args) {
  const bp_plugin_descriptor_t *x = in->next;
  switch (op) {
#define LC_NEXT(E, name, args_t, value, capture, tensors)                                          \
  case BP_OP_##E:                                                                                  \
    return x->name(in->device, s, (const args_t *)args);
    BP_OP_TABLE_ALL(LC_NEXT)
#undef LC_NEXT
  case BP_OP_COUNT:
    break;
  }
  return BP_ERR_UNSUPPORTED;
}

__attribute__((weak)) bp_status_t lc_mem_alloc_hook(lc_instance_t *in, uint64_t size,
                                                    uint64_t *out_ptr) {
  return in->next->mem_alloc(in->device, size, out_ptr);
}

__attribute__((weak)) void lc_mem_free_hook(lc_instance_t *in, uint64_t ptr) {
  in->next->mem_free(in->device, ptr);
}

static bp_status_t lc_wrap_mem_alloc(bp_plugin_device_t *d, uint64_t size, uint64_t *out_ptr) {
  lc_instance_t *in = lc_find(d);
  return in ? lc_mem_alloc_hook(in, size, out_ptr) : BP_ERR_INTERNAL;
}

static void lc_wrap_mem_free(bp_plugin_device_t *d, uint64_t ptr) {
  lc_instance_t *in = lc_find(d);
  if (in) lc_mem_free_hook(in, ptr);
}

/* Points each op slot next fills at its wrapper; NULL slots stay NULL
 * (layer-api.h rule 2). */
static void wrap_ops(bp_plugin_descriptor_t *x, const bp_plugin_descriptor_t *next) {
#define LC_SET(E, name, args_t, value, capture, tensors)                                           \
  if (next->name) x->name = lc_wrap_##name;
  BP_OP_TABLE_ALL(LC_SET)
#undef LC_SET
}

bp_status_t lc_create(const lc_layer_t *layer, const bp_plugin_descriptor_t *next,
                      const bp_layer_device_t *device, const bp_plugin_descriptor_t **out_desc) {
  *out_desc = NULL;
  lc_instance_t *in = calloc(1, sizeof *in);
  if (!in) return BP_ERR_OUT_OF_MEMORY;
  size_t n = next->struct_size < sizeof in->desc ? next->struct_size : sizeof in->desc;
  memcpy(&in->desc, next, n); /* every entry is next's until wrapped */
  in->desc.struct_size = (uint32_t)n;
  in->next = next;
  in->device = device->device;
  in->backend_index = device->backend_index;
  snprintf(in->backend, sizeof in->backend, "%s", device->backend ? device->backend : "?");
  snprintf(in->device_name, sizeof in->device_name, "%s", device->info ? device->info->name : "?");
  if (layer->wrap_ops) wrap_ops(&in->desc, next);
  if (layer->wrap_memory) {
    in->desc.mem_alloc = lc_wrap_mem_alloc;
    in->desc.mem_free = lc_wrap_mem_free;
  }
  bp_status_t st = layer->instance_init ? layer->instance_init(in) : BP_OK;
  if (st == BP_OK && !map_add(in)) {
    if (layer->instance_fini) layer->instance_fini(in);
    st = BP_ERR_OUT_OF_MEMORY;
  }
  if (st != BP_OK) {
    free(in);
    return st;
  }
  *out_desc = &in->desc;
  return BP_OK;
}

void lc_destroy(const lc_layer_t *layer, const bp_plugin_descriptor_t *desc) {
  lc_instance_t *in = (lc_instance_t *)desc; /* desc is the first member */
  if (!in) return;
  map_remove(in);
  if (layer->instance_fini) layer->instance_fini(in);
  free(in);
}

/* ---- ops and tensors ---------------------------------------------------------*/

static const char *const op_names[BP_OP_COUNT] = {
#define LC_NAME(E, name, args_t, value, capture, tensors) [value] = #name,
    BP_OP_TABLE_ALL(LC_NAME)
#undef LC_NAME
};

const char *lc_op_name(bp_op_t op) {
  return (unsigned)op < BP_OP_COUNT ? op_names[op] : "?";
}

const char *lc_dtype_name(bp_dtype_t dt) {
  static const char *const n[BP_DTYPE_COUNT] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8",
                                                  "i8", "fp8_e4m3", "fp8_e5m2", "q8_0", "q4_0"};
  return (unsigned)dt < BP_DTYPE_COUNT ? n[dt] : "?";
}

size_t lc_dtype_size(bp_dtype_t dt) {
  static const size_t s[BP_DTYPE_COUNT] = {4, 2, 2, 8, 4, 8, 1, 1, 1, 1, 34, 18};
  return (unsigned)dt < BP_DTYPE_COUNT ? s[dt] : 0;
}

/* The op table's tensors column, as pointers (the same machinery as the
 * core's op_fields.c, which a layer cannot reach). */
#define LC_UNPAREN(...) __VA_ARGS__
#define LC_COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, n, ...) n
#define LC_COUNT(...) LC_COUNT_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define LC_EACH_1(F, t, a) F(t, a)
#define LC_EACH_2(F, t, a, ...) F(t, a) LC_EACH_1(F, t, __VA_ARGS__)
#define LC_EACH_3(F, t, a, ...) F(t, a) LC_EACH_2(F, t, __VA_ARGS__)
#define LC_EACH_4(F, t, a, ...) F(t, a) LC_EACH_3(F, t, __VA_ARGS__)
#define LC_EACH_5(F, t, a, ...) F(t, a) LC_EACH_4(F, t, __VA_ARGS__)
#define LC_EACH_6(F, t, a, ...) F(t, a) LC_EACH_5(F, t, __VA_ARGS__)
#define LC_EACH_7(F, t, a, ...) F(t, a) LC_EACH_6(F, t, __VA_ARGS__)
#define LC_EACH_8(F, t, a, ...) F(t, a) LC_EACH_7(F, t, __VA_ARGS__)
#define LC_EACH_N(F, t, k, ...) LC_EACH_##k(F, t, __VA_ARGS__)
#define LC_EACH_K(F, t, k, ...) LC_EACH_N(F, t, k, __VA_ARGS__)
#define LC_EACH(F, t, ...) LC_EACH_K(F, t, LC_COUNT(__VA_ARGS__), __VA_ARGS__)
#define LC_ADD(args_t, field) out[k++] = &((const args_t *)args)->field;
#define LC_FIELDS_VALUE(args_t, list) LC_EACH(LC_ADD, args_t, LC_UNPAREN list)
#define LC_FIELDS_ARRAYS(args_t, list)

int lc_op_tensors(bp_op_t op, const void *args, const bp_plugin_tensor_t *out[LC_MAX_TENSORS]) {
  int k = 0;
  switch (op) {
#define LC_FIELDS(E, name, args_t, value, capture, tensors)                                        \
  case BP_OP_##E:                                                                                  \
    LC_FIELDS_##capture(args_t, tensors) break;
    BP_OP_TABLE_ALL(LC_FIELDS)
#undef LC_FIELDS
  case BP_OP_COUNT:
    break;
  }
  return k;
}

size_t lc_op_args_size(bp_op_t op) {
  switch (op) {
#define LC_SIZE(E, name, args_t, value, capture, tensors)                                          \
  case BP_OP_##E:                                                                                  \
    return sizeof(args_t);
    BP_OP_TABLE_ALL(LC_SIZE)
#undef LC_SIZE
  case BP_OP_COUNT:
    break;
  }
  return 0;
}

bool lc_tensor_present(const bp_plugin_tensor_t *t) {
  return t->rank > 0 || t->ptr != 0;
}

int64_t lc_tensor_elements(const bp_plugin_tensor_t *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank && i < BP_MAX_RANK; i++) n *= t->shape[i];
  return n;
}

void lc_tensor_extent(const bp_plugin_tensor_t *t, uint64_t *lo, uint64_t *hi) {
  int64_t mn = 0, mx = 0;
  size_t es = lc_dtype_size(t->dtype);
  if (lc_tensor_elements(t) == 0) {
    *lo = *hi = t->offset;
    return;
  }
  for (int i = 0; i < t->rank && i < BP_MAX_RANK; i++) {
    int64_t span = (t->shape[i] - 1) * t->strides[i];
    if (span < 0)
      mn += span;
    else
      mx += span;
  }
  *lo = (uint64_t)((int64_t)t->offset + mn * (int64_t)es);
  *hi = (uint64_t)((int64_t)t->offset + (mx + 1) * (int64_t)es);
}

void lc_shape_text(const bp_plugin_tensor_t *t, char *out, size_t size) {
  size_t n = (size_t)snprintf(out, size, "[");
  for (int i = 0; i < t->rank && i < BP_MAX_RANK && n < size; i++)
    n += (size_t)snprintf(out + n, size - n, "%s%lld", i ? "," : "", (long long)t->shape[i]);
  if (n < size) snprintf(out + n, size - n, "]");
}

void lc_for_each_element(const bp_plugin_tensor_t *t, uint64_t lo,
                         void (*fn)(int64_t i, uint64_t at, void *arg), void *arg) {
  int64_t total = lc_tensor_elements(t), idx[BP_MAX_RANK] = {0};
  size_t es = lc_dtype_size(t->dtype);
  int r = t->rank < BP_MAX_RANK ? t->rank : BP_MAX_RANK;
  for (int64_t i = 0; i < total; i++) {
    int64_t e = 0;
    for (int k = 0; k < r; k++) e += idx[k] * t->strides[k];
    fn(i, (uint64_t)((int64_t)t->offset - (int64_t)lo + e * (int64_t)es), arg);
    for (int k = r - 1; k >= 0; k--) { /* row-major increment */
      if (++idx[k] < t->shape[k]) break;
      idx[k] = 0;
    }
  }
}

double lc_load(const void *p, bp_dtype_t dt) {
  switch (dt) {
  case BP_F32: {
    float v;
    memcpy(&v, p, 4);
    return v;
  }
  case BP_F64: {
    double v;
    memcpy(&v, p, 8);
    return v;
  }
  case BP_F16: {
    uint16_t v;
    memcpy(&v, p, 2);
    return bp_f16_to_f32(v);
  }
  case BP_BF16: {
    uint16_t v;
    memcpy(&v, p, 2);
    return bp_bf16_to_f32(v);
  }
  case BP_I32: {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  case BP_I64: {
    int64_t v;
    memcpy(&v, p, 8);
    return (double)v;
  }
  case BP_U8:
    return *(const uint8_t *)p;
  case BP_I8:
    return *(const int8_t *)p;
  case BP_FP8_E4M3: /* the layers take float tensors: never these */
  case BP_FP8_E5M2:
  case BP_Q8_0:
  case BP_Q4_0:
  case BP_DTYPE_COUNT:
    break;
  }
  return 0;
}

uint64_t lc_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *lc_getenv(const bp_host_services_t *host, const char *name) {
  return host && host->getenv ? host->getenv(name) : NULL;
}
