/*
 * broken_plugin.c — one source, many small test plugins.
 *
 * Built once per variant with a -DVARIANT_* define (test/loader.mk) into
 * $(B)/test/broken/backend-<name>.so, with -DBROKEN_NAME="<name>". Without a
 * variant define it is a small working plugin whose devices use host memory
 * and implement no op (every op pointer is NULL, "not supported here"); the
 * ranking tests build it with other kinds, scores and memory sizes.
 *
 * Variants, each one fault:
 *   VARIANT_NO_SYMBOL       exports its descriptor under another name
 *   VARIANT_TINY_SYMBOL     exports an 8-byte bp_plugin_descriptor
 *   VARIANT_BAD_MAGIC       magic is not BP_PLUGIN_MAGIC
 *   VARIANT_ABI_NEW         abi_major is the loader's + 1
 *   VARIANT_ABI_OLD         abi_major is the loader's - 1
 *   VARIANT_SIZE_SMALL      struct_size stops before the ops
 *   VARIANT_SIZE_LARGE      a future minor: struct_size and symbol larger
 *                           than the loader knows (must load)
 *   VARIANT_SIZE_LIE        struct_size larger than the exported symbol
 *   VARIANT_NULL_NAME       name is NULL
 *   VARIANT_BAD_NAME        name is not a short [a-z0-9_-] word
 *   VARIANT_NULL_VERSION    version is NULL
 *   VARIANT_NULL_REQUIRED   mem_alloc (required) is NULL
 *   VARIANT_INIT_FAILS      init returns BP_ERR_UNAVAILABLE with a message
 *   VARIANT_PROBE_ERROR     probe returns BP_ERR_UNAVAILABLE with a message
 *   VARIANT_PROBE_NONE      probe succeeds with no device
 *   VARIANT_PROBE_CRASH     probe dereferences NULL (SIGSEGV)
 *   VARIANT_PROBE_HANG      probe never returns
 *   VARIANT_CTOR_EXIT       a constructor calls exit(3)
 *   VARIANT_CTOR_CRASH      a constructor dereferences NULL
 *   VARIANT_NEEDS_DEP       needs libbpbrokendep.so, deleted after linking
 *   VARIANT_DUPLICATE       named "dup" whatever its file is called
 *   VARIANT_CLAIMS_FILL     claims fill for f32 but leaves fill NULL
 *   VARIANT_THREAD          init starts a thread that runs plugin code
 *                           forever; shutdown does not stop it
 *   VARIANT_COUNT_PROBES    a working plugin that counts its probes,
 *                           across processes, in the file $BROKEN_COUNTER
 *                           (each probe appends one byte)
 *   VARIANT_FLAKY           counts the same way, and every second probe
 *                           crashes (every probe without $BROKEN_COUNTER)
 *   VARIANT_ODD_STRINGS     a working plugin whose device strings hold what
 *                           JSON must escape or keep (quote, backslash,
 *                           control bytes, non-ASCII UTF-8) and a byte that
 *                           is not UTF-8 (test/bp_json.mk)
 * With BROKEN_DEP_LIBRARY instead, it builds libbpbrokendep.so.
 *
 * Only BROKEN_* knobs change the working plugin: BROKEN_KIND, BROKEN_SCORE,
 * BROKEN_MEMORY (bytes, of device 0) and BROKEN_DEVICES (how many).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin-api.h"

#ifdef BROKEN_DEP_LIBRARY
/* Built with this define, the file is libbpbrokendep.so instead: the library
 * VARIANT_NEEDS_DEP links against and the build then deletes. */
BP_PLUGIN_EXPORT int broken_dep_answer(void);
int broken_dep_answer(void) { return 42; }
#else

#ifndef BROKEN_NAME
#define BROKEN_NAME "broken"
#endif
#ifdef VARIANT_DUPLICATE
#undef BROKEN_NAME
#define BROKEN_NAME "dup"
#endif
#ifndef BROKEN_KIND
#define BROKEN_KIND BP_DEVICE_SOFTWARE
#endif
#ifndef BROKEN_SCORE
#define BROKEN_SCORE 0
#endif
#ifndef BROKEN_MEMORY
#define BROKEN_MEMORY (1ull << 30)
#endif
#ifndef BROKEN_DEVICES
#define BROKEN_DEVICES 1
#endif
#ifdef VARIANT_ODD_STRINGS
/* test_bp_json expects these bytes back, with \xff as U+FFFD. */
#define BROKEN_DEVICE_NAME "odd \"q\" \\ \t\n\x01\x1f \xc3\xa9\xe6\x9d\xb1\xf0\x9f\x98\x80 \xff!"
#define BROKEN_VENDOR "vendor \\\"/\x7f"
#else
#define BROKEN_DEVICE_NAME BROKEN_NAME
#define BROKEN_VENDOR "backplane tests"
#endif

static const bp_host_services_t *host;

#if defined(VARIANT_CTOR_EXIT) || defined(VARIANT_CTOR_CRASH)
__attribute__((constructor)) static void broken_constructor(void) {
#ifdef VARIANT_CTOR_EXIT
  exit(3);
#else
  volatile int *volatile p = NULL;
  *p = 1;
#endif
}
#endif

#ifdef VARIANT_NEEDS_DEP
/* Defined in libbpbrokendep.so, which the build deletes after linking. */
extern int broken_dep_answer(void);
#endif

#ifdef VARIANT_THREAD
/* Runs plugin code forever: if the loader unmapped the library, the next
 * iteration would fault. */
static volatile unsigned long thread_ticks;
static void *b_thread(void *arg) {
  (void)arg;
  for (;;) {
    thread_ticks++;
    usleep(200);
  }
  return NULL;
}
#endif

#if defined(VARIANT_FLAKY) || defined(VARIANT_COUNT_PROBES)
/* Counts this probe in $BROKEN_COUNTER (appending a byte, atomic across
 * processes) and says whether it is an even-numbered one. */
static bool flaky_even_probe(void) {
  const char *path = getenv("BROKEN_COUNTER");
  if (!path) return true;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return true;
  struct stat st;
  bool even = write(fd, "p", 1) == 1 && fstat(fd, &st) == 0 && st.st_size % 2 == 0;
  close(fd);
  return even;
}
#endif

static bp_status_t b_init(const bp_host_services_t *h) {
  host = h;
#ifdef VARIANT_THREAD
  pthread_t t;
  if (pthread_create(&t, NULL, b_thread, NULL) != 0) return BP_ERR_INTERNAL;
  pthread_detach(t);
#endif
#ifdef VARIANT_INIT_FAILS
  if (h && h->set_error) h->set_error("broken plugin refuses to initialise");
  return BP_ERR_UNAVAILABLE;
#else
  return BP_OK;
#endif
}

static void b_shutdown(void) { host = NULL; }

static bp_status_t b_probe(bp_device_info_t *infos, uint32_t capacity,
                           uint32_t *out_count) {
  *out_count = 0;
#if defined(VARIANT_PROBE_ERROR)
  (void)infos;
  (void)capacity;
  if (host && host->set_error) host->set_error("libbroken-driver.so.1 not found");
  return BP_ERR_UNAVAILABLE;
#elif defined(VARIANT_PROBE_CRASH)
  (void)infos;
  (void)capacity;
  volatile int *volatile p = NULL;
  *p = 1;
  return BP_ERR_INTERNAL;
#elif defined(VARIANT_PROBE_HANG)
  (void)infos;
  (void)capacity;
  for (;;) pause();
  return BP_ERR_INTERNAL;
#elif defined(VARIANT_PROBE_NONE)
  (void)infos;
  (void)capacity;
  return BP_OK;
#else
#ifdef VARIANT_NEEDS_DEP
  if (broken_dep_answer() != 42) return BP_ERR_INTERNAL;
#endif
#if defined(VARIANT_FLAKY)
  if (flaky_even_probe()) {
    volatile int *volatile p = NULL;
    *p = 1;
  }
#elif defined(VARIANT_COUNT_PROBES)
  (void)flaky_even_probe();
#endif
  uint32_t n = BROKEN_DEVICES < capacity ? BROKEN_DEVICES : capacity;
  for (uint32_t i = 0; i < n; i++) {
    bp_device_info_t *d = &infos[i];
    uint32_t size = d->struct_size;
    memset(d, 0, sizeof *d);
    d->struct_size = size;
    strcpy(d->name, BROKEN_DEVICE_NAME);
    if (i > 0) d->name[strlen(d->name)] = (char)('0' + i % 10);
    strcpy(d->vendor, BROKEN_VENDOR);
    strcpy(d->driver_version, "0");
    d->kind = BROKEN_KIND;
    d->score_hint = BROKEN_SCORE;
    d->memory_bytes = (uint64_t)BROKEN_MEMORY >> i;
    d->compute_units = 1;
    d->flags = BP_DEVICE_FLAG_HOST_MEMORY;
#ifdef VARIANT_CLAIMS_FILL
    d->op_dtypes[BP_OP_FILL] = BP_DTYPE_BIT(BP_F32);
#endif
  }
  *out_count = BROKEN_DEVICES;
  return BP_OK;
#endif
}

/* A device is a heap token; memory is host memory; streams are tokens and
 * every call completes before it returns. */
static bp_status_t b_device_open(uint32_t index,
                                 const bp_plugin_device_config_t *config,
                                 bp_plugin_device_t **out_device) {
  (void)config;
  *out_device = NULL;
  if (index >= BROKEN_DEVICES) return BP_ERR_INVALID_ARGUMENT;
  *out_device = malloc(16);
  return *out_device ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}

static void b_device_close(bp_plugin_device_t *d) { free(d); }

static bp_status_t b_device_sync(bp_plugin_device_t *d) {
  (void)d;
  return BP_OK;
}

__attribute__((unused)) /* VARIANT_NULL_REQUIRED leaves it out */
static bp_status_t b_mem_alloc(bp_plugin_device_t *d, uint64_t size,
                               uint64_t *out_ptr) {
  (void)d;
  *out_ptr = 0;
  void *p = aligned_alloc(64, (size + 63) & ~(uint64_t)63);
  if (!p) return BP_ERR_OUT_OF_MEMORY;
  *out_ptr = (uint64_t)(uintptr_t)p;
  return BP_OK;
}

static void b_mem_free(bp_plugin_device_t *d, uint64_t ptr) {
  (void)d;
  free((void *)(uintptr_t)ptr);
}

static bp_status_t b_mem_write(bp_plugin_device_t *d, bp_plugin_stream_t *s,
                               uint64_t dst, uint64_t off, const void *src,
                               uint64_t size) {
  (void)d;
  (void)s;
  memcpy((char *)(uintptr_t)dst + off, src, size);
  return BP_OK;
}

static bp_status_t b_mem_read(bp_plugin_device_t *d, bp_plugin_stream_t *s,
                              void *dst, uint64_t src, uint64_t off,
                              uint64_t size) {
  (void)d;
  (void)s;
  memcpy(dst, (const char *)(uintptr_t)src + off, size);
  return BP_OK;
}

static bp_status_t b_mem_copy(bp_plugin_device_t *d, bp_plugin_stream_t *s,
                              uint64_t dst, uint64_t doff, uint64_t src,
                              uint64_t soff, uint64_t size) {
  (void)d;
  (void)s;
  memmove((char *)(uintptr_t)dst + doff, (const char *)(uintptr_t)src + soff,
          size);
  return BP_OK;
}

static bp_status_t b_stream_create(bp_plugin_device_t *d,
                                   bp_plugin_stream_t **out) {
  (void)d;
  *out = malloc(16);
  return *out ? BP_OK : BP_ERR_OUT_OF_MEMORY;
}

static void b_stream_destroy(bp_plugin_device_t *d, bp_plugin_stream_t *s) {
  (void)d;
  free(s);
}

static bp_status_t b_stream_sync(bp_plugin_device_t *d,
                                 bp_plugin_stream_t *s) {
  (void)d;
  (void)s;
  return BP_OK;
}

#if defined(VARIANT_BAD_MAGIC)
#define BROKEN_MAGIC 0xdeadbeefu
#else
#define BROKEN_MAGIC BP_PLUGIN_MAGIC
#endif
#if defined(VARIANT_ABI_NEW)
#define BROKEN_ABI_MAJOR (BP_PLUGIN_ABI_MAJOR + 1)
#elif defined(VARIANT_ABI_OLD)
#define BROKEN_ABI_MAJOR (BP_PLUGIN_ABI_MAJOR - 1)
#else
#define BROKEN_ABI_MAJOR BP_PLUGIN_ABI_MAJOR
#endif

/* A descriptor from a future minor version: the ABI 1.0 fields, then some
 * the loader does not know about. */
typedef struct future_descriptor {
  bp_plugin_descriptor_t base;
  void (*future_fn[8])(void);
} future_descriptor_t;

#if defined(VARIANT_SIZE_SMALL)
#define BROKEN_SIZE ((uint32_t)offsetof(bp_plugin_descriptor_t, gemm))
#elif defined(VARIANT_SIZE_LARGE)
#define BROKEN_SIZE ((uint32_t)sizeof(future_descriptor_t))
#elif defined(VARIANT_SIZE_LIE)
#define BROKEN_SIZE ((uint32_t)sizeof(bp_plugin_descriptor_t) + 256u)
#else
#define BROKEN_SIZE ((uint32_t)sizeof(bp_plugin_descriptor_t))
#endif

#if defined(VARIANT_NULL_NAME)
#define BROKEN_DESC_NAME NULL
#elif defined(VARIANT_BAD_NAME)
#define BROKEN_DESC_NAME "Not A Name!"
#else
#define BROKEN_DESC_NAME BROKEN_NAME
#endif

#define BROKEN_DESCRIPTOR_INIT                                                 \
  {                                                                            \
    .magic = BROKEN_MAGIC, .abi_major = BROKEN_ABI_MAJOR,                      \
    .abi_minor = BP_PLUGIN_ABI_MINOR, .struct_size = BROKEN_SIZE,              \
    .name = BROKEN_DESC_NAME, .version = BROKEN_VERSION,                       \
    .description = "backplane broken-plugin test variant", .init = b_init,    \
    .shutdown = b_shutdown, .probe = b_probe, .device_open = b_device_open,    \
    .device_close = b_device_close, .device_synchronize = b_device_sync,       \
    .mem_alloc = BROKEN_MEM_ALLOC, .mem_free = b_mem_free,                     \
    .mem_write = b_mem_write, .mem_read = b_mem_read,                          \
    .mem_copy = b_mem_copy, .stream_create = b_stream_create,                  \
    .stream_destroy = b_stream_destroy, .stream_synchronize = b_stream_sync,   \
  }

#ifdef VARIANT_NULL_VERSION
#define BROKEN_VERSION NULL
#else
#define BROKEN_VERSION "0.0.1"
#endif
#ifdef VARIANT_NULL_REQUIRED
#define BROKEN_MEM_ALLOC NULL
#else
#define BROKEN_MEM_ALLOC b_mem_alloc
#endif

#if defined(VARIANT_NO_SYMBOL)
BP_PLUGIN_EXPORT const bp_plugin_descriptor_t bp_plugin_descriptr =
    BROKEN_DESCRIPTOR_INIT;
#elif defined(VARIANT_TINY_SYMBOL)
BP_PLUGIN_EXPORT const uint32_t bp_plugin_descriptor[2] = {BP_PLUGIN_MAGIC, 1};
/* Keeps the functions referenced so the variant builds without warnings. */
__attribute__((used)) static const bp_plugin_descriptor_t unused_descriptor =
    BROKEN_DESCRIPTOR_INIT;
#elif defined(VARIANT_SIZE_LARGE)
BP_PLUGIN_EXPORT const future_descriptor_t bp_plugin_descriptor = {
    .base = BROKEN_DESCRIPTOR_INIT};
#else
BP_PLUGIN_EXPORT const bp_plugin_descriptor_t bp_plugin_descriptor =
    BROKEN_DESCRIPTOR_INIT;
#endif
#endif /* BROKEN_DEP_LIBRARY */
