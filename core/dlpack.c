/*
 * dlpack.c — sharing tensors with NumPy, PyTorch and other DLPack users
 * without copies.
 *
 * The DLPack structures are declared here from the published, stable DLPack
 * ABI (the 1.0 "versioned" form and the older unversioned one, which
 * Debian 12's NumPy 1.24 and PyTorch 1.13 speak); Debian's libdlpack-dev 0.6
 * predates the versioned form, so the project does not depend on its header.
 *
 * Export lends a bp tensor: the buffer must outlive every consumer. Import
 * wraps the producer's memory as a bp buffer; bp_buffer_free on it calls the
 * producer's deleter. Only memory the device can address directly is
 * shared: host memory on devices that use host pointers (the CPU backend),
 * and device memory where the plugin names its DLPack device type in the
 * device info (CUDA, ROCm); the core never infers it from a backend's name.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- DLPack ABI (dlpack.h 1.0) ---------------------------------------------*/
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLROCM = 10 } DLDeviceType;
typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4 } DLDataTypeCode;
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape, *strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;
typedef struct { uint32_t major, minor; } DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#define DLPACK_FLAG_BITMASK_READ_ONLY (1ull << 0)

/* ---- dtype mapping -----------------------------------------------------------*/

static const struct { bp_dtype_t bp; DLDataType dl; } dtype_map[] = {
    {BP_F32, {kDLFloat, 32, 1}}, {BP_F16, {kDLFloat, 16, 1}}, {BP_BF16, {kDLBfloat, 16, 1}},
    {BP_F64, {kDLFloat, 64, 1}}, {BP_I32, {kDLInt, 32, 1}},   {BP_I64, {kDLInt, 64, 1}},
    {BP_U8, {kDLUInt, 8, 1}},    {BP_I8, {kDLInt, 8, 1}},
};

static bool dtype_from_dl(DLDataType d, bp_dtype_t *out) {
  for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
    if (dtype_map[i].dl.code == d.code && dtype_map[i].dl.bits == d.bits && d.lanes == 1) {
      *out = dtype_map[i].bp;
      return true;
    }
  return false;
}

/* Which DLPack device a bp device's pointers belong to; false if none. */
static bool dl_device_of(const bp__device_t *d, DLDevice *out) {
  if (d->entry.info.flags & BP_DEVICE_FLAG_HOST_MEMORY) {
    *out = (DLDevice){kDLCPU, 0};
    return true;
  }
  /* The plugin says which DLPack device its pointers are (ABI 1.3). */
  if (d->entry.info.dlpack_device_type > 0) {
    *out = (DLDevice){(DLDeviceType)d->entry.info.dlpack_device_type, (int32_t)d->entry.backend_index};
    return true;
  }
  return false;
}

/* ---- export ------------------------------------------------------------------*/

typedef struct export_ctx {
  int64_t shape[BP_MAX_RANK], strides[BP_MAX_RANK];
  union {
    DLManagedTensor legacy;
    DLManagedTensorVersioned versioned;
  } m;
} export_ctx_t;

static void delete_legacy(DLManagedTensor *self) { free(self->manager_ctx); }
static void delete_versioned(DLManagedTensorVersioned *self) { free(self->manager_ctx); }

bp_status_t bp_tensor_to_dlpack(const bp_tensor_t *t, bool versioned, void **out_managed) {
  bp__clear_error();
  const char *fn = "bp_tensor_to_dlpack";
  if (!out_managed) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: out_managed is NULL", fn);
  *out_managed = NULL;
  if (!t) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: tensor is NULL", fn);
  BP__ENTER(bp__buffer_t, b, t->buffer, BP__H_BUFFER, fn, "tensor.buffer");
  bp_status_t st = bp__tensor_check(t, b->device, fn, "tensor");
  if (st != BP_OK) return st;
  DLDevice dev;
  if (!dl_device_of(b->device, &dev))
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: backend '%s' memory cannot be shared through DLPack", fn,
                    b->device->entry.backend);
  export_ctx_t *c = calloc(1, sizeof *c);
  if (!c) return bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  memcpy(c->shape, t->shape, sizeof c->shape);
  memcpy(c->strides, t->strides, sizeof c->strides);
  /* The offset is folded into data: some consumers (PyTorch 1.x) ignore
   * byte_offset. */
  DLTensor dl = {(void *)(uintptr_t)(b->ptr + b->origin + t->offset), dev, t->rank,
                 dtype_map[0].dl, c->shape, c->strides, 0};
  for (size_t i = 0; i < sizeof dtype_map / sizeof dtype_map[0]; i++)
    if (dtype_map[i].bp == t->dtype) dl.dtype = dtype_map[i].dl;
  if (versioned) {
    c->m.versioned = (DLManagedTensorVersioned){{1, 0}, c, delete_versioned, 0, dl};
    *out_managed = &c->m.versioned;
  } else {
    c->m.legacy = (DLManagedTensor){dl, c, delete_legacy};
    *out_managed = &c->m.legacy;
  }
  return BP_OK;
}

/* ---- import ------------------------------------------------------------------*/

void bp__dlpack_release(void *managed, bool versioned) {
  if (!managed) return;
  if (versioned) {
    DLManagedTensorVersioned *m = managed;
    if (m->deleter) m->deleter(m);
  } else {
    DLManagedTensor *m = managed;
    if (m->deleter) m->deleter(m);
  }
}

/* Byte extent of a DLPack tensor from its data pointer, and the lowest
 * element offset (negative strides reach below byte_offset). */
static bool dl_extent(const DLTensor *t, size_t es, int64_t *lo, uint64_t *bytes) {
  __int128 low = 0, high = 0;
  for (int i = 0; i < t->ndim; i++) {
    if (t->shape[i] < 0) return false;
    if (t->shape[i] == 0) {
      *lo = 0;
      *bytes = 0;
      return true;
    }
    int64_t stride = t->strides ? t->strides[i] : 1;
    if (!t->strides) /* compact row-major */
      for (int j = i + 1; j < t->ndim; j++) stride *= t->shape[j];
    __int128 span = (__int128)(t->shape[i] - 1) * stride;
    if (span < 0) low += span; else high += span;
  }
  __int128 b = (high - low + 1) * (__int128)es;
  if (b > ((__int128)1 << 56)) return false;
  *lo = (int64_t)low;
  *bytes = (uint64_t)b;
  return true;
}

bp_status_t bp_tensor_from_dlpack(bp_device_t *dh, void *managed, bool versioned, bp_tensor_t *out_tensor,
                                  bp_buffer_t **out_buffer) {
  bp__clear_error();
  const char *fn = "bp_tensor_from_dlpack";
  if (!out_tensor || !out_buffer) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: an out-parameter is NULL", fn);
  memset(out_tensor, 0, sizeof *out_tensor);
  *out_buffer = NULL;
  BP__ENTER(bp__device_t, d, dh, BP__H_DEVICE, fn, "device");
  if (!managed) return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: managed tensor is NULL", fn);
  if (versioned && ((DLManagedTensorVersioned *)managed)->version.major != 1)
    return bp__fail(BP_ERR_INCOMPATIBLE, "%s: DLPack major version %u, expected 1", fn,
                    ((DLManagedTensorVersioned *)managed)->version.major);
  const DLTensor *t = versioned ? &((DLManagedTensorVersioned *)managed)->dl_tensor
                                : &((DLManagedTensor *)managed)->dl_tensor;
  DLDevice want;
  bp_dtype_t dt;
  if (!dl_device_of(d, &want) || want.device_type != t->device.device_type || want.device_id != t->device.device_id)
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: the tensor lives on DLPack device %d:%d, not on '%s'", fn,
                    t->device.device_type, t->device.device_id, d->entry.info.name);
  if (!dtype_from_dl(t->dtype, &dt))
    return bp__fail(BP_ERR_UNSUPPORTED, "%s: DLPack dtype code %u bits %u lanes %u has no bp dtype", fn,
                    t->dtype.code, t->dtype.bits, t->dtype.lanes);
  if (t->ndim < 0 || t->ndim > BP_MAX_RANK || (t->ndim && !t->shape))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: rank %d not in [0, %d]", fn, t->ndim, BP_MAX_RANK);
  size_t es = bp_dtype_size(dt);
  int64_t lo;
  uint64_t bytes;
  if (!dl_extent(t, es, &lo, &bytes))
    return bp__fail(BP_ERR_INVALID_ARGUMENT, "%s: shape or strides out of range", fn);
  bp__buffer_t *b = calloc(1, sizeof *b);
  if (!b) return bp__fail(BP_ERR_OUT_OF_MEMORY, "%s: out of memory", fn);
  /* The buffer starts at the lowest byte the tensor reaches. */
  uint64_t base = (uint64_t)(uintptr_t)t->data + t->byte_offset + (uint64_t)(lo * (int64_t)es);
  b->device = d;
  b->ptr = base;
  b->size = bytes ? bytes : 1;
  b->foreign = managed;
  b->foreign_versioned = versioned;
  bp_buffer_t *bh;
  bp_status_t st = bp__buffer_publish(b, &bh);
  if (st != BP_OK) return st;
  out_tensor->buffer = bh;
  out_tensor->offset = (uint64_t)(-lo * (int64_t)es);
  out_tensor->dtype = dt;
  out_tensor->rank = t->ndim;
  for (int i = t->ndim - 1; i >= 0; i--) {
    out_tensor->shape[i] = t->shape[i];
    out_tensor->strides[i] = t->strides ? t->strides[i] : (i == t->ndim - 1 ? 1 : out_tensor->strides[i + 1] * t->shape[i + 1]);
  }
  *out_buffer = bh;
  return BP_OK;
}
