/*
 * backend-hello.c — the smallest complete backplane plugin, built out of tree
 * against the installed plugin-api.h:
 *
 *   cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags backplane) \
 *      -o backend-hello.so backend-hello.c
 *
 * One device, "hello", whose memory is host memory, that implements one op:
 * fill for f32. Everything else is reported unsupported by the loader.
 */
#include <plugin-api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const bp_host_services_t *host;

static bp_status_t hello_init(const bp_host_services_t *h) {
  host = h;
  return BP_OK;
}
static void hello_shutdown(void) { host = NULL; }

static bp_status_t hello_probe(bp_device_info_t *infos, uint32_t capacity, uint32_t *out_count) {
  *out_count = 1;
  if (capacity == 0) return BP_OK;
  bp_device_info_t *d = &infos[0];
  snprintf(d->name, sizeof d->name, "hello");
  snprintf(d->vendor, sizeof d->vendor, "example");
  d->kind = BP_DEVICE_SOFTWARE;
  d->memory_bytes = 1u << 30;
  d->compute_units = 1;
  d->flags = BP_DEVICE_FLAG_HOST_MEMORY;
  d->op_dtypes[BP_OP_FILL] = BP_DTYPE_BIT(BP_F32);
  return BP_OK;
}

/* A device and a stream need no state here: any non-NULL handle will do. */
static int the_device, the_stream;

static bp_status_t hello_open(uint32_t index, const bp_plugin_device_config_t *c, bp_plugin_device_t **out) {
  (void)c;
  *out = index == 0 ? (bp_plugin_device_t *)&the_device : NULL;
  return *out ? BP_OK : BP_ERR_NOT_FOUND;
}
static void hello_close(bp_plugin_device_t *d) { (void)d; }
static bp_status_t hello_sync(bp_plugin_device_t *d) { (void)d; return BP_OK; }

static bp_status_t hello_alloc(bp_plugin_device_t *d, uint64_t size, uint64_t *out_ptr) {
  (void)d;
  void *p = aligned_alloc(64, (size + 63) / 64 * 64);
  if (!p) {
    host->set_error("cannot allocate %llu bytes", (unsigned long long)size);
    return BP_ERR_OUT_OF_MEMORY;
  }
  *out_ptr = (uint64_t)(uintptr_t)p;
  return BP_OK;
}
static void hello_free(bp_plugin_device_t *d, uint64_t p) { (void)d; free((void *)(uintptr_t)p); }

static bp_status_t hello_write(bp_plugin_device_t *d, bp_plugin_stream_t *s, uint64_t dst, uint64_t off,
                               const void *src, uint64_t size) {
  (void)d, (void)s;
  memcpy((char *)(uintptr_t)dst + off, src, size);
  return BP_OK;
}
static bp_status_t hello_read(bp_plugin_device_t *d, bp_plugin_stream_t *s, void *dst, uint64_t src, uint64_t off,
                              uint64_t size) {
  (void)d, (void)s;
  memcpy(dst, (char *)(uintptr_t)src + off, size);
  return BP_OK;
}
static bp_status_t hello_copy(bp_plugin_device_t *d, bp_plugin_stream_t *s, uint64_t dst, uint64_t doff,
                              uint64_t src, uint64_t soff, uint64_t size) {
  (void)d, (void)s;
  memmove((char *)(uintptr_t)dst + doff, (char *)(uintptr_t)src + soff, size);
  return BP_OK;
}

static bp_status_t hello_stream_create(bp_plugin_device_t *d, bp_plugin_stream_t **out) {
  (void)d;
  *out = (bp_plugin_stream_t *)&the_stream;
  return BP_OK;
}
static void hello_stream_destroy(bp_plugin_device_t *d, bp_plugin_stream_t *s) { (void)d, (void)s; }
static bp_status_t hello_stream_sync(bp_plugin_device_t *d, bp_plugin_stream_t *s) { (void)d, (void)s; return BP_OK; }

/* fill: walk y's shape with its strides (the core checked every bound). */
static bp_status_t hello_fill(bp_plugin_device_t *d, bp_plugin_stream_t *s, const bp_fill_args_t *a) {
  (void)d, (void)s;
  const bp_plugin_tensor_t *y = &a->y;
  float *base = (float *)((char *)(uintptr_t)y->ptr + y->offset);
  int64_t n = 1, idx[BP_MAX_RANK] = {0};
  for (int i = 0; i < y->rank; i++) n *= y->shape[i];
  for (int64_t e = 0; e < n; e++) {
    int64_t off = 0;
    for (int i = 0; i < y->rank; i++) off += idx[i] * y->strides[i];
    base[off] = (float)a->value;
    for (int i = y->rank - 1; i >= 0 && ++idx[i] == y->shape[i]; i--) idx[i] = 0;
  }
  return BP_OK;
}

BP_PLUGIN_EXPORT const bp_plugin_descriptor_t bp_plugin_descriptor = {
    .magic = BP_PLUGIN_MAGIC, .abi_major = BP_PLUGIN_ABI_MAJOR, .abi_minor = BP_PLUGIN_ABI_MINOR,
    .struct_size = sizeof(bp_plugin_descriptor_t), .name = "hello", .version = "1.0",
    .description = "the smallest plugin: f32 fill on host memory",
    .init = hello_init, .shutdown = hello_shutdown, .probe = hello_probe,
    .device_open = hello_open, .device_close = hello_close, .device_synchronize = hello_sync,
    .mem_alloc = hello_alloc, .mem_free = hello_free, .mem_write = hello_write, .mem_read = hello_read,
    .mem_copy = hello_copy, .stream_create = hello_stream_create, .stream_destroy = hello_stream_destroy,
    .stream_synchronize = hello_stream_sync, .fill = hello_fill,
};
