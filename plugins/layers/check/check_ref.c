/*
 * check_ref.c — the check layer's reference: the CPU plugin's cpu-ref
 * device (the scalar reference every backend is tested against), opened by
 * the layer itself. The plugin file is backend-cpu.so beside the layer (or
 * BACKPLANE_CHECK_REFERENCE); in a process where the loader has it loaded
 * already, dlopen returns that same, initialised copy, and the layer only
 * opens a device and a stream of its own on it. Sampled ops are re-run
 * here one at a time, with copies of the tensors' bytes from before the op.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const bp_plugin_descriptor_t *ref;
static bp_plugin_device_t *ref_dev;
static bp_plugin_stream_t *ref_stream;
static char ref_why[512];
static uint32_t ref_op_dtypes[BP_OP_TABLE_SIZE]; /* what cpu-ref claims */
static pthread_once_t ref_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ref_lock = PTHREAD_MUTEX_INITIALIZER;

/* backend-cpu.so in the directory this layer was loaded from. */
static bool default_path(char *out, size_t size) {
  Dl_info info;
  if (!dladdr((void *)default_path, &info) || !info.dli_fname) return false;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash) return false;
  return snprintf(out, size, "%.*s/backend-cpu.so", (int)(slash - info.dli_fname), info.dli_fname) <
         (int)size;
}

/* The index of the device named cpu-ref, or -1. */
static int find_ref_index(void) {
  bp_device_info_t infos[8];
  uint32_t n = 0;
  for (int i = 0; i < 8; i++) {
    memset(&infos[i], 0, sizeof infos[i]);
    infos[i].struct_size = sizeof infos[i];
  }
  if (ref->probe(infos, 8, &n) != BP_OK) return -1;
  for (uint32_t i = 0; i < n && i < 8; i++)
    if (!strcmp(infos[i].name, "cpu-ref")) {
      memcpy(ref_op_dtypes, infos[i].op_dtypes, sizeof ref_op_dtypes);
      return (int)i;
    }
  return -1;
}

static void open_reference(void) {
  char path[PATH_MAX];
  const char *env = lc_getenv(check_host, "BACKPLANE_CHECK_REFERENCE");
  if (env && env[0])
    snprintf(path, sizeof path, "%s", env);
  else if (!default_path(path, sizeof path)) {
    snprintf(ref_why, sizeof ref_why, "cannot tell where the layer was loaded from");
    return;
  }
  void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  bool fresh = !dl;
  if (!dl) dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  const bp_plugin_descriptor_t *d = dl ? dlsym(dl, BP_PLUGIN_DESCRIPTOR_SYMBOL) : NULL;
  if (!d || d->magic != BP_PLUGIN_MAGIC || d->abi_major != BP_PLUGIN_ABI_MAJOR) {
    snprintf(ref_why, sizeof ref_why, "%s is not a usable CPU plugin%s%s", path, dl ? "" : ": ",
             dl ? "" : dlerror());
    return;
  }
  ref = d;
  /* Loaded by nobody yet: it has to be initialised (and then stays). */
  if (fresh && ref->init(check_host) != BP_OK) {
    snprintf(ref_why, sizeof ref_why, "%s: init failed", path);
    ref = NULL;
    return;
  }
  int index = find_ref_index();
  bp_plugin_device_config_t cfg = {.struct_size = sizeof cfg, .threads = 1};
  if (index < 0 || ref->device_open((uint32_t)index, &cfg, &ref_dev) != BP_OK ||
      ref->stream_create(ref_dev, &ref_stream) != BP_OK) {
    snprintf(ref_why, sizeof ref_why, "%s has no cpu-ref device to open", path);
    ref = NULL;
  }
}

const char *check_ref_unavailable(void) {
  pthread_once(&ref_once, open_reference);
  return ref ? "" : ref_why;
}

static bp_status_t call_ref(bp_op_t op, const void *args) {
  switch (op) {
#define REF_CALL(E, name, args_t, value, capture, tensors)                                         \
  case BP_OP_##E:                                                                                  \
    return ref->name ? ref->name(ref_dev, ref_stream, (const args_t *)args) : BP_ERR_UNSUPPORTED;
    BP_OP_TABLE_ALL(REF_CALL)
#undef REF_CALL
  case BP_OP_COUNT:
    break;
  }
  return BP_ERR_UNSUPPORTED;
}

/* Under ref_lock: copies each snapshot into reference memory and points
 * the args copy's tensors at it; then runs and reads the output back. */
static bp_status_t run_locked(bp_op_t op, char *copy, int n, void *const snaps[],
                              const uint64_t los[], const uint64_t his[], void *out,
                              uint64_t ptrs[]) {
  const bp_plugin_tensor_t *t[LC_MAX_TENSORS];
  lc_op_tensors(op, copy, t);
  for (int i = 0; i < n; i++) {
    bp_plugin_tensor_t *ti = (bp_plugin_tensor_t *)t[i];
    if (!lc_tensor_present(ti)) continue;
    uint64_t len = his[i] - los[i];
    bp_status_t st = ref->mem_alloc(ref_dev, len ? len : 1, &ptrs[i]);
    if (st == BP_OK && len) st = ref->mem_write(ref_dev, NULL, ptrs[i], 0, snaps[i], len);
    if (st != BP_OK) return st;
    ti->ptr = ptrs[i];
    ti->offset -= los[i];
  }
  bp_status_t st = call_ref(op, copy);
  if (st == BP_OK) st = ref->stream_synchronize(ref_dev, ref_stream);
  uint64_t len = his[n - 1] - los[n - 1];
  if (st == BP_OK && len) st = ref->mem_read(ref_dev, NULL, out, ptrs[n - 1], 0, len);
  return st;
}

bp_status_t check_ref_run(bp_op_t op, const void *args, int n, void *const snaps[],
                          const uint64_t los[], const uint64_t his[], void *out) {
  if (check_ref_unavailable()[0]) return BP_ERR_UNAVAILABLE;
  const bp_plugin_tensor_t *t[LC_MAX_TENSORS];
  if (lc_op_tensors(op, args, t) != n || !(ref_op_dtypes[op] & BP_DTYPE_BIT(t[0]->dtype)))
    return BP_ERR_UNSUPPORTED; /* the reference does not run this */
  size_t size = lc_op_args_size(op);
  char *copy = malloc(size);
  if (!copy) return BP_ERR_OUT_OF_MEMORY;
  memcpy(copy, args, size);
  uint64_t ptrs[LC_MAX_TENSORS] = {0};
  pthread_mutex_lock(&ref_lock);
  bp_status_t st = run_locked(op, copy, n, snaps, los, his, out, ptrs);
  for (int i = 0; i < n; i++)
    if (ptrs[i]) ref->mem_free(ref_dev, ptrs[i]);
  pthread_mutex_unlock(&ref_lock);
  free(copy);
  return st;
}
