/*
 * probe_cache.c — the verdicts of isolated probes, kept across runs.
 *
 * Probing a plugin in a helper process costs a process start and a dlopen;
 * the verdict (every device record, or the refusal) depends only on the
 * plugin file and on the environment it ran in, so it is kept in a small
 * file and a warm start spawns nothing. A verdict is reused only for the
 * same file — real path, device, inode, size, mtime and a hash of its bytes
 * — and the same environment fingerprint (environment variables, the driver
 * registries and the device nodes; see env_fingerprint). docs/runtime.md
 * "Plugin isolation" is the user's description.
 *
 * The file: BACKPLANE_PROBE_CACHE (a file, or a directory to hold
 * probe-cache.bin; "off" disables the cache), else
 * $XDG_CACHE_HOME/backplane/probe-cache.bin, else
 * ~/.cache/backplane/probe-cache.bin. It is binary, written by this build
 * for this build: a header naming the format, the record sizes and the
 * library version, a checksum over the rest, then the entries, newest
 * first. Anything that does not check out is a miss, never half-trusted. It
 * is replaced atomically (temporary file + rename) and read only when it
 * belongs to the effective user and nobody else may write it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_file.h"
#include "isolate.h"

extern char **environ;

#define CACHE_FORMAT 1
#define CACHE_MAX_ENTRIES 128
#define CACHE_MAX_BYTES (4u << 20)

typedef struct cache_header {
  char magic[8]; /* "BPPROBE\0" */
  uint32_t format, header_size, entry_size, info_size;
  uint32_t pointer_size, abi_major, abi_minor, count;
  char lib_version[32];
  uint64_t checksum; /* of every byte after the header */
} cache_header_t;

typedef struct cache_entry {
  uint64_t dev, ino, size, mtime_ns, hash, env;
  uint32_t timeout_s;
  int32_t status, stage;
  uint16_t abi_major, abi_minor;
  uint32_t device_count;
  char real[1024];
  char name[64], version[64], reason[512];
  /* followed by device_count bp_device_info_t */
} cache_entry_t;

/* ---- hashing ----------------------------------------------------------------*/

/* FNV-1a over 8-byte words in four interleaved lanes, with a shift so high
 * bits reach low ones: not a cryptographic hash (the cache's trust comes
 * from file ownership), but it notices any change to a plugin's bytes, and
 * the lanes keep the multiplier busy (about 5 GB/s, docs/performance.md). */
typedef struct lanes {
  uint64_t h[4];
} lanes_t;

static void lanes_update(lanes_t *l, const unsigned char *b, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; k++) {
      uint64_t w;
      memcpy(&w, b + i + 8 * k, 8);
      l->h[k] = (l->h[k] ^ w) * BP__FNV_PRIME;
      l->h[k] ^= l->h[k] >> 29;
    }
  l->h[0] = bp__cache_fnv(l->h[0], b + i, n - i); /* only the last chunk has a tail */
}

static uint64_t lanes_final(const lanes_t *l) {
  uint64_t h = BP__FNV_OFFSET;
  for (int k = 0; k < 4; k++) h = bp__cache_fnv(h, &l->h[k], sizeof l->h[k]);
  return h;
}

static uint64_t mtime_ns(const struct stat *st) {
  return (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec;
}

static uint64_t ctime_ns(const struct stat *st) {
  return (uint64_t)st->st_ctim.tv_sec * 1000000000ull + (uint64_t)st->st_ctim.tv_nsec;
}

/* A process hashes each file once while it stays the same: every context
 * created by a long-running application would otherwise read every plugin
 * again. The change time is part of the key here: no one can set it back. */
static struct {
  pthread_mutex_t lock;
  struct {
    uint64_t dev, ino, size, mtime, ctime, hash;
  } e[32];
  unsigned next;
} memo = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool hash_file(int fd, const struct stat *st, uint64_t *out) {
  uint64_t ct = ctime_ns(st);
  pthread_mutex_lock(&memo.lock);
  for (unsigned i = 0; i < 32; i++)
    if (memo.e[i].ino == (uint64_t)st->st_ino && memo.e[i].dev == (uint64_t)st->st_dev &&
        memo.e[i].size == (uint64_t)st->st_size && memo.e[i].mtime == mtime_ns(st) &&
        memo.e[i].ctime == ct) {
      *out = memo.e[i].hash;
      pthread_mutex_unlock(&memo.lock);
      return true;
    }
  pthread_mutex_unlock(&memo.lock);
  static __thread unsigned char buf[1 << 16];
  lanes_t l = {{BP__FNV_OFFSET, BP__FNV_OFFSET ^ 1, BP__FNV_OFFSET ^ 2, BP__FNV_OFFSET ^ 3}};
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    /* Chunks are multiples of 32 except the last, so the lanes stay aligned. */
    lanes_update(&l, buf, (size_t)n);
  }
  uint64_t h = lanes_final(&l);
  pthread_mutex_lock(&memo.lock);
  unsigned i = memo.next++ % 32;
  memo.e[i].dev = (uint64_t)st->st_dev;
  memo.e[i].ino = (uint64_t)st->st_ino;
  memo.e[i].size = (uint64_t)st->st_size;
  memo.e[i].mtime = mtime_ns(st);
  memo.e[i].ctime = ct;
  memo.e[i].hash = h;
  pthread_mutex_unlock(&memo.lock);
  *out = h;
  return true;
}

/* ---- the environment fingerprint ------------------------------------------ */

/* Variables that differ between shells and sessions but say nothing about
 * drivers, and backplane's own that do not change what probe finds. */
static const char *const ignored_vars[] = {"PWD",
                                           "OLDPWD",
                                           "SHLVL",
                                           "_",
                                           "TERM",
                                           "COLUMNS",
                                           "LINES",
                                           "SSH_CLIENT",
                                           "SSH_CONNECTION",
                                           "SSH_TTY",
                                           "SSH_AUTH_SOCK",
                                           "WINDOWID",
                                           "TMUX",
                                           "TMUX_PANE",
                                           "STY",
                                           "XDG_SESSION_ID",
                                           "INVOCATION_ID",
                                           "JOURNAL_STREAM",
                                           "MAIL",
                                           "PS1",
                                           "PS2",
                                           "PROMPT_COMMAND",
                                           "LS_COLORS",
                                           "HISTFILE",
                                           "HISTSIZE",
                                           "MAKEFLAGS",
                                           "MFLAGS",
                                           "MAKELEVEL",
                                           "MAKE_TERMOUT",
                                           "MAKE_TERMERR",
                                           "GPG_TTY",
                                           "TERM_SESSION_ID",
                                           "XAUTHORITY",
                                           "ICEAUTHORITY",
                                           "XDG_CACHE_HOME",
                                           "BACKPLANE_DEBUG",
                                           "BACKPLANE_PROBE_CACHE",
                                           "BACKPLANE_ISOLATE",
                                           "BACKPLANE_PROBE_HELPER",
                                           "BACKPLANE_PLUGIN_PATH",
                                           "BACKPLANE_BACKENDS",
                                           "BACKPLANE_TUNING_CACHE"};

/* Search paths for libraries and driver manifests: their directories count
 * too, so a driver installed into one of them changes the fingerprint. */
static bool path_list_var(const char *name, size_t len) {
  return (len == 15 && !strncmp(name, "LD_LIBRARY_PATH", len)) ||
         (len == 15 && !strncmp(name, "OCL_ICD_VENDORS", len));
}

/* Libraries and driver manifests: a variable naming one is about drivers.
 * Other files (a log, a counter) may change on every run. */
static bool driver_like(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  return strstr(base, ".so") || (n > 5 && !strcmp(base + n - 5, ".json")) ||
         (n > 4 && !strcmp(base + n - 4, ".icd"));
}

static uint64_t stat_hash(uint64_t h, const char *path, bool dirs_too) {
  struct stat st;
  if (!dirs_too && !driver_like(path)) return h;
  if (stat(path, &st) != 0) return bp__cache_fnv(h, "-", 1);
  if (!S_ISREG(st.st_mode) && !(dirs_too && S_ISDIR(st.st_mode))) return h;
  uint64_t f[3] = {(uint64_t)st.st_ino, (uint64_t)st.st_size, mtime_ns(&st)};
  return bp__cache_fnv(h, f, sizeof f);
}

static uint64_t var_hash(const char *entry) {
  size_t len = strcspn(entry, "=");
  for (size_t i = 0; i < sizeof ignored_vars / sizeof *ignored_vars; i++)
    if (strlen(ignored_vars[i]) == len && !strncmp(entry, ignored_vars[i], len)) return 0;
  uint64_t h = bp__cache_fnv(BP__FNV_OFFSET, entry, strlen(entry));
  const char *value = entry[len] ? entry + len + 1 : "";
  bool list = path_list_var(entry, len);
  if (!list && value[0] != '/') return h;
  /* A variable naming a library or a driver manifest (a driver, a test
   * shim, an ICD file): the file's identity counts, so rebuilding it is
   * noticed. */
  char part[PATH_MAX];
  for (int k = 0; *value && k < 32; k++) {
    size_t n = strcspn(value, ":");
    if (n && n < sizeof part && (list || value[0] == '/')) {
      memcpy(part, value, n);
      part[n] = '\0';
      h = stat_hash(h, part, list);
    }
    value += n;
    if (*value == ':') value++;
  }
  return h;
}

/* What a probe's answer may depend on besides the plugin file: the
 * environment (every variable but ignored_vars, in any order), the boot,
 * the CPUs this process may use, the dynamic linker's cache (a driver
 * package runs ldconfig), the OpenCL and Vulkan driver registries and the
 * device nodes. */
static uint64_t env_fingerprint(void) {
  uint64_t sum = 0, h = BP__FNV_OFFSET;
  for (char **e = environ; e && *e; e++) sum += var_hash(*e);
  h = bp__cache_fnv(h, &sum, sizeof sum);
  char boot[64] = "";
  int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, boot, sizeof boot - 1);
    boot[n > 0 ? n : 0] = '\0';
    close(fd);
  }
  h = bp__cache_fnv(h, boot, strlen(boot));
  cpu_set_t set;
  int cpus[3] = {(int)sysconf(_SC_NPROCESSORS_ONLN),
                 sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1,
                 (int)geteuid()};
  h = bp__cache_fnv(h, cpus, sizeof cpus);
  static const char *const watched[] = {"/etc/ld.so.cache",
                                        "/etc/OpenCL/vendors",
                                        "/usr/share/vulkan/icd.d",
                                        "/etc/vulkan/icd.d",
                                        "/usr/share/vulkan/implicit_layer.d",
                                        "/dev",
                                        "/dev/dri"};
  for (size_t i = 0; i < sizeof watched / sizeof *watched; i++) h = stat_hash(h, watched[i], true);
  return h;
}

/* ---- the file ------------------------------------------------------------------*/

/* The cache file's path; false when the cache is off or has no home. */
static bool cache_path(char *out, size_t size) {
  return bp__cache_file_path(NULL, out, size);
}

static void header_init(cache_header_t *h, uint32_t count) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, "BPPROBE", 8);
  h->format = CACHE_FORMAT;
  h->header_size = sizeof *h;
  h->entry_size = sizeof(cache_entry_t);
  h->info_size = sizeof(bp_device_info_t);
  h->pointer_size = sizeof(void *);
  h->abi_major = BP_PLUGIN_ABI_MAJOR;
  h->abi_minor = BP_PLUGIN_ABI_MINOR;
  h->count = count;
  snprintf(h->lib_version, sizeof h->lib_version, "%s", BP_VERSION_STRING);
}

static bool terminated(const char *s, size_t size) {
  return memchr(s, '\0', size) != NULL;
}

/* Reads the cache file into a buffer whose entries all check out; *out_data
 * is NULL (and the count 0) when there is none to trust. The caller frees
 * it. */
static uint32_t read_cache(const char *path, unsigned char **out_data, size_t *out_len) {
  *out_data = NULL;
  *out_len = 0;
  size_t len;
  unsigned char *buf =
      bp__cache_file_read(path, "probe cache", sizeof(cache_header_t), CACHE_MAX_BYTES, &len);
  uint32_t count = 0;
  if (!buf) return 0;
  cache_header_t h, want;
  memcpy(&h, buf, sizeof h);
  header_init(&want, h.count);
  want.checksum = h.checksum;
  if (memcmp(&h, &want, sizeof h) != 0 || h.count > CACHE_MAX_ENTRIES ||
      h.checksum != bp__cache_fnv(BP__FNV_OFFSET, buf + sizeof h, len - sizeof h))
    goto out;
  /* Walk the entries: each must fit and be well formed. */
  size_t off = sizeof h;
  for (uint32_t i = 0; i < h.count; i++) {
    cache_entry_t e;
    if (len - off < sizeof e) goto out;
    memcpy(&e, buf + off, sizeof e);
    if (e.device_count > BP__MAX_DEVICES_PER_PLUGIN ||
        len - off - sizeof e < (size_t)e.device_count * sizeof(bp_device_info_t) || e.status > 0 ||
        (unsigned)e.stage > BP_STAGE_READY || (e.status == BP_OK) != (e.device_count > 0) ||
        !terminated(e.real, sizeof e.real) || !terminated(e.name, sizeof e.name) ||
        !terminated(e.version, sizeof e.version) || !terminated(e.reason, sizeof e.reason))
      goto out;
    off += sizeof e + (size_t)e.device_count * sizeof(bp_device_info_t);
  }
  if (off != len) goto out;
  count = h.count;
  *out_data = buf;
  *out_len = len;
  buf = NULL;
out:
  free(buf);
  return count;
}

/* The file as last read or written by this process, reused while its
 * identity is unchanged: a process creating many contexts reads it once. */
static struct {
  pthread_mutex_t lock;
  char path[PATH_MAX];
  uint64_t dev, ino, size, mtime, ctime; /* ctime: a chmod or chown too */
  unsigned char *data;
  size_t len;
  uint32_t count;
} file_memo = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void memo_set(const char *path, unsigned char *data, size_t len, uint32_t count) {
  struct stat st;
  free(file_memo.data);
  file_memo.data = NULL;
  file_memo.len = file_memo.count = 0;
  file_memo.path[0] = '\0';
  if (!data || stat(path, &st) != 0) {
    free(data);
    return;
  }
  snprintf(file_memo.path, sizeof file_memo.path, "%s", path);
  file_memo.dev = (uint64_t)st.st_dev;
  file_memo.ino = (uint64_t)st.st_ino;
  file_memo.size = (uint64_t)st.st_size;
  file_memo.mtime = mtime_ns(&st);
  file_memo.ctime = ctime_ns(&st);
  file_memo.data = data;
  file_memo.len = len;
  file_memo.count = count;
}

/* Makes file_memo hold the trusted contents of path (none: count 0).
 * Called with file_memo.lock held. */
static void memo_sync(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    memo_set(path, NULL, 0, 0);
    return;
  }
  if (file_memo.data && !strcmp(file_memo.path, path) && file_memo.dev == (uint64_t)st.st_dev &&
      file_memo.ino == (uint64_t)st.st_ino && file_memo.size == (uint64_t)st.st_size &&
      file_memo.mtime == mtime_ns(&st) && file_memo.ctime == ctime_ns(&st))
    return;
  unsigned char *data;
  size_t len;
  uint32_t count = read_cache(path, &data, &len);
  memo_set(path, data, len, count);
}

static size_t entry_bytes(const cache_entry_t *e) {
  return sizeof *e + (size_t)e->device_count * sizeof(bp_device_info_t);
}

static bool same_file(const cache_entry_t *e, const bp__probe_key_t *k) {
  return e->dev == k->dev && e->ino == k->ino && e->size == k->size && e->mtime_ns == k->mtime_ns &&
         e->hash == k->hash;
}

/* ---- the interface ------------------------------------------------------------ */

bool bp__probe_cache_key(const char *path, bp__probe_key_t *k) {
  char cpath[PATH_MAX];
  memset(k, 0, sizeof *k);
  if (!cache_path(cpath, sizeof cpath)) return false;
  char real[PATH_MAX];
  if (!realpath(path, real) || strlen(real) >= sizeof k->real) return false;
  int fd = open(real, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && hash_file(fd, &st, &k->hash);
  close(fd);
  if (!ok) return false;
  snprintf(k->real, sizeof k->real, "%s", real);
  k->dev = (uint64_t)st.st_dev;
  k->ino = (uint64_t)st.st_ino;
  k->size = (uint64_t)st.st_size;
  k->mtime_ns = mtime_ns(&st);
  k->env = env_fingerprint();
  return true;
}

bool bp__probe_cache_lookup(const bp__probe_key_t *k, uint32_t timeout_s, bp__verdict_t *v) {
  char path[PATH_MAX];
  if (!cache_path(path, sizeof path)) return false;
  pthread_mutex_lock(&file_memo.lock);
  memo_sync(path);
  const unsigned char *data = file_memo.data;
  uint32_t count = file_memo.count;
  bool hit = false;
  size_t off = sizeof(cache_header_t);
  for (uint32_t i = 0; i < count && !hit; i++) {
    cache_entry_t e;
    memcpy(&e, data + off, sizeof e);
    if (same_file(&e, k) && e.env == k->env && !strcmp(e.real, k->real) &&
        !(e.status == BP_ERR_TIMEOUT && timeout_s > e.timeout_s)) {
      memset(v, 0, sizeof *v);
      v->status = e.status;
      v->stage = (bp_plugin_stage_t)e.stage;
      v->abi_major = e.abi_major;
      v->abi_minor = e.abi_minor;
      v->device_count = e.device_count;
      snprintf(v->name, sizeof v->name, "%s", e.name);
      snprintf(v->version, sizeof v->version, "%s", e.version);
      snprintf(v->reason, sizeof v->reason, "%s", e.reason);
      memcpy(v->infos, data + off + sizeof e, e.device_count * sizeof(bp_device_info_t));
      v->cacheable = true;
      hit = true;
    }
    off += entry_bytes(&e);
  }
  pthread_mutex_unlock(&file_memo.lock);
  return hit;
}

void bp__probe_cache_store(const bp__probe_key_t *k, uint32_t timeout_s, const bp__verdict_t *v) {
  char path[PATH_MAX];
  if (!cache_path(path, sizeof path)) return;
  pthread_mutex_lock(&file_memo.lock);
  memo_sync(path); /* what other processes wrote since is kept */
  const unsigned char *old = file_memo.data;
  size_t old_len = file_memo.len;
  uint32_t old_count = file_memo.count;
  unsigned char *out = NULL;
  cache_entry_t e;
  memset(&e, 0, sizeof e);
  e.dev = k->dev;
  e.ino = k->ino;
  e.size = k->size;
  e.mtime_ns = k->mtime_ns;
  e.hash = k->hash;
  e.env = k->env;
  e.timeout_s = timeout_s;
  e.status = v->status;
  e.stage = v->stage;
  e.abi_major = v->abi_major;
  e.abi_minor = v->abi_minor;
  e.device_count = v->status == BP_OK ? v->device_count : 0;
  snprintf(e.real, sizeof e.real, "%s", k->real);
  snprintf(e.name, sizeof e.name, "%s", v->name);
  snprintf(e.version, sizeof e.version, "%s", v->version);
  snprintf(e.reason, sizeof e.reason, "%s", v->reason);
  if ((e.status == BP_OK) != (e.device_count > 0)) goto out; /* not storable */
  /* The new entry first, then the old ones that still matter: not an older
   * state of this file, not the one this replaces, within the bounds. */
  size_t cap = sizeof(cache_header_t) + entry_bytes(&e) + (old ? old_len : 0);
  if (!(out = malloc(cap))) goto out;
  size_t len = sizeof(cache_header_t);
  memcpy(out + len, &e, sizeof e);
  memcpy(out + len + sizeof e, v->infos, e.device_count * sizeof(bp_device_info_t));
  len += entry_bytes(&e);
  uint32_t count = 1;
  size_t off = sizeof(cache_header_t);
  for (uint32_t i = 0; i < old_count; i++) {
    cache_entry_t o;
    memcpy(&o, old + off, sizeof o);
    size_t n = entry_bytes(&o);
    bool stale = !strcmp(o.real, e.real) && (!same_file(&o, k) || o.env == e.env);
    if (!stale && count < CACHE_MAX_ENTRIES && len + n <= CACHE_MAX_BYTES) {
      memcpy(out + len, old + off, n);
      len += n;
      count++;
    }
    off += n;
  }
  cache_header_t h;
  header_init(&h, count);
  h.checksum = bp__cache_fnv(BP__FNV_OFFSET, out + sizeof h, len - sizeof h);
  memcpy(out, &h, sizeof h);
  if (bp__cache_file_replace(path, "probe cache", out, len)) {
    memo_set(path, out, len, count);
    out = NULL;
  }
out:
  free(out);
  pthread_mutex_unlock(&file_memo.lock);
}
