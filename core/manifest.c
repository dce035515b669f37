/*
 * manifest.c — reading a plugin's manifest and checking it against the
 * plugin file before dlopen (rules MANIFEST-1 to MANIFEST-8, numbered in
 * docs/plugin-abi.md section 15). The manifest is what lets the loader
 * refuse an incompatible or tampered plugin without running any of its
 * code: nothing here maps the plugin, only its bytes are hashed.
 *
 * Format 1 (one JSON object, at most BP__MANIFEST_MAX_BYTES):
 *   manifest_version  integer, required: 1
 *   name, version     strings, required: the descriptor's name and version
 *   abi_major, abi_minor  integers, required: the ABI the plugin was built for
 *   library           string, required: the plugin's file name
 *   sha256            string, required: 64 hex digits of the file's content
 *   kinds, dlopens    arrays of strings, optional: device kinds it reports,
 *                     libraries it will dlopen
 * Unknown members are skipped (a later format may add some); a known member
 * twice, or of another type, fails the whole file.
 */
#include "manifest.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest_cache.h"
#include "internal.h"
#include "json.h"
#include "layer-api.h"
#include "sha256.h"
#include "trust.h"

bool bp__manifest_path_for(const char *plugin_path, char *out, size_t size) {
  size_t n = strlen(plugin_path);
  if (n < 3 || strcmp(plugin_path + n - 3, ".so")) return false;
  return snprintf(out, size, "%.*s.json", (int)(n - 3), plugin_path) < (int)size;
}

static bp_status_t refuse(bp_manifest_info_t *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bp_status_t refuse(bp_manifest_info_t *m, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->reason, sizeof m->reason, fmt, ap);
  va_end(ap);
  return m->status = BP_ERR_INCOMPATIBLE;
}

/* ---- the parser ------------------------------------------------------------*/

enum {
  K_FORMAT,
  K_NAME,
  K_VERSION,
  K_MAJOR,
  K_MINOR,
  K_LIBRARY,
  K_SHA,
  K_KINDS,
  K_DLOPENS,
  K_COUNT,
  K_REQUIRED = (1u << K_KINDS) - 1
};
static const char *const key_names[K_COUNT] = {"manifest_version", "name",      "version",
                                               "abi_major",        "abi_minor", "library",
                                               "sha256",           "kinds",     "dlopens"};

typedef struct list_state {
  char *out; /* comma-separated */
  size_t size;
} list_state_t;

static bool list_item(bp__json_t *in, unsigned i, void *arg) {
  list_state_t *ls = arg;
  char word[256];
  if (!bp__json_string(in, word, sizeof word)) return false;
  if (!word[0] || strchr(word, ','))
    return bp__json_fail(in, "an empty list entry or one with a comma");
  size_t len = strlen(ls->out);
  if (len + strlen(word) + 2 > ls->size) return bp__json_fail(in, "list too long");
  snprintf(ls->out + len, ls->size - len, "%s%s", i ? "," : "", word);
  return true;
}

static bool read_integer16(bp__json_t *in, uint16_t *out) {
  long v;
  if (!bp__json_integer(in, &v)) return false;
  if (v > 65535) return bp__json_fail(in, "ABI version out of range");
  *out = (uint16_t)v;
  return true;
}

typedef struct parse_state {
  bp_manifest_info_t *m;
  unsigned seen;
} parse_state_t;

static bool sha_valid(const char *s) {
  if (strlen(s) != 64) return false;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return false;
  return true;
}

static bool read_member(bp__json_t *in, int k, bp_manifest_info_t *m) {
  long v;
  list_state_t ls = {k == K_KINDS ? m->kinds : m->dlopens,
                     k == K_KINDS ? sizeof m->kinds : sizeof m->dlopens};
  switch (k) {
  case K_FORMAT:
    if (!bp__json_integer(in, &v)) return false;
    m->format = (uint32_t)v;
    /* A newer format may mean anything after this point: stop reading. */
    return v <= BP__MANIFEST_FORMAT || bp__json_fail(in, "newer format");
  case K_NAME:
    return bp__json_string(in, m->name, sizeof m->name);
  case K_VERSION:
    return bp__json_string(in, m->version, sizeof m->version);
  case K_MAJOR:
    return read_integer16(in, &m->abi_major);
  case K_MINOR:
    return read_integer16(in, &m->abi_minor);
  case K_LIBRARY:
    return bp__json_string(in, m->library, sizeof m->library);
  case K_SHA:
    return bp__json_string(in, m->sha256, sizeof m->sha256 + 1) &&
           (sha_valid(m->sha256) || bp__json_fail(in, "sha256 is not 64 lowercase hex digits"));
  default:
    return bp__json_array(in, list_item, &ls);
  }
}

static bool member(bp__json_t *in, const char *name, void *arg) {
  parse_state_t *ps = arg;
  for (int k = 0; k < K_COUNT; k++) {
    if (strcmp(name, key_names[k])) continue;
    if (ps->seen & (1u << k)) return bp__json_fail(in, "a member appears twice");
    ps->seen |= 1u << k;
    return read_member(in, k, ps->m);
  }
  return bp__json_skip(in); /* unknown: a later format's */
}

/* Reads the whole file (at most the limit) into a buffer the caller frees. */
static bp_status_t slurp(const char *path, bp_manifest_info_t *m, char **out, size_t *out_len) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    int err = errno;
    if (fd >= 0) close(fd);
    return refuse(m, "manifest %s cannot be read: %s (rule MANIFEST-2)", path, strerror(err));
  }
  if (st.st_size > BP__MANIFEST_MAX_BYTES) {
    close(fd);
    return refuse(m, "manifest %s is %lld bytes, over the %d-byte limit (rule MANIFEST-2)", path,
                  (long long)st.st_size, BP__MANIFEST_MAX_BYTES);
  }
  char *buf = malloc(BP__MANIFEST_MAX_BYTES + 1);
  ssize_t n = buf ? read(fd, buf, BP__MANIFEST_MAX_BYTES + 1) : -1;
  int err = errno;
  close(fd);
  if (n < 0 || n > BP__MANIFEST_MAX_BYTES) {
    free(buf);
    return refuse(m, "manifest %s cannot be read: %s (rule MANIFEST-2)", path,
                  n < 0 ? strerror(err) : "it grew past the limit");
  }
  *out = buf;
  *out_len = (size_t)n;
  return BP_OK;
}

static bp_status_t parse(const char *path, const char *text, size_t len, bp_manifest_info_t *m) {
  bp__json_t in;
  bp__json_init(&in, text, len);
  parse_state_t ps = {m, 0};
  bool ok = bp__json_object(&in, member, &ps);
  if (m->format > BP__MANIFEST_FORMAT)
    return refuse(m, "manifest %s has format %u, newer than this loader's %d (rule MANIFEST-4)",
                  path, m->format, BP__MANIFEST_FORMAT);
  if (ok && !bp__json_at_end(&in)) ok = bp__json_fail(&in, "text after the object");
  if (ok && (ps.seen & K_REQUIRED) != K_REQUIRED) {
    for (int k = 0; k < K_KINDS; k++)
      if (!(ps.seen & (1u << k)))
        return refuse(m, "manifest %s lacks \"%s\" (rule MANIFEST-3)", path, key_names[k]);
  }
  if (!ok)
    return refuse(m, "manifest %s is not a valid manifest: %s at byte %zu (rule MANIFEST-3)", path,
                  in.err ? in.err : "malformed", (size_t)(in.p - in.begin));
  if (m->format < 1) return refuse(m, "manifest %s has format 0 (rule MANIFEST-3)", path);
  return BP_OK;
}

bp_status_t bp__manifest_read(const char *path, bp_manifest_info_t *m) {
  memset(m, 0, sizeof *m);
  m->struct_size = sizeof *m;
  snprintf(m->path, sizeof m->path, "%s", path);
  char why[512];
  if (bp__trust_check_file(path, why, sizeof why) != BP_OK)
    return refuse(m, "manifest %s: %s (rule MANIFEST-1)", path, why);
  char *text;
  size_t len = 0;
  if (slurp(path, m, &text, &len) != BP_OK) return m->status;
  bp_status_t st = parse(path, text, len, m);
  free(text);
  return st;
}

/* ---- the check before dlopen ----------------------------------------------*/

/* Digests already computed in this process, by file identity: a second
 * context (or a layer on every device) does not hash the same bytes again.
 * A file rewritten in place changes its mtime or ctime and is hashed anew.
 * Across processes the digest cache (digest_cache.c) does the same. */
typedef struct hash_memo {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
  char hex[65];
} hash_memo_t;
#define HASH_MEMO_SLOTS 64
static hash_memo_t memo[HASH_MEMO_SLOTS];
static unsigned memo_count, memo_next;
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

static bool same_file(const hash_memo_t *h, const struct stat *st) {
  return h->dev == st->st_dev && h->ino == st->st_ino && h->size == st->st_size &&
         h->mtime.tv_sec == st->st_mtim.tv_sec && h->mtime.tv_nsec == st->st_mtim.tv_nsec &&
         h->ctime.tv_sec == st->st_ctim.tv_sec && h->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static bool memo_find(const struct stat *st, char hex[65]) {
  bool hit = false;
  pthread_mutex_lock(&memo_lock);
  for (unsigned i = 0; i < memo_count && !hit; i++)
    if (same_file(&memo[i], st)) {
      memcpy(hex, memo[i].hex, 65);
      hit = true;
    }
  pthread_mutex_unlock(&memo_lock);
  return hit;
}

static void memo_add(const struct stat *st, const char hex[65]) {
  pthread_mutex_lock(&memo_lock);
  hash_memo_t *h = &memo[memo_next];
  memo_next = (memo_next + 1) % HASH_MEMO_SLOTS;
  if (memo_count < HASH_MEMO_SLOTS) memo_count++;
  *h = (hash_memo_t){st->st_dev, st->st_ino, st->st_size, st->st_mtim, st->st_ctim, ""};
  memcpy(h->hex, hex, 65);
  pthread_mutex_unlock(&memo_lock);
}

static int file_digest(const char *path, char hex[65]) {
  struct stat before, after;
  char real[PATH_MAX];
  if (stat(path, &before) != 0) return -1;
  if (memo_find(&before, hex)) return 0;
  bool keyed = realpath(path, real) != NULL;
  if (keyed && bp__digest_cache_lookup(real, &before, hex)) {
    bp__log(BP_LOG_DEBUG, BP__LOG_LOADER, "manifest: digest of %s from the digest cache", real);
    memo_add(&before, hex);
    return 0;
  }
  bp__log(BP_LOG_DEBUG, BP__LOG_LOADER, "manifest: hashing %s", path);
  if (bp__sha256_file(path, hex) != 0 || stat(path, &after) != 0) return -1;
  if (!same_file(&(hash_memo_t){before.st_dev, before.st_ino, before.st_size, before.st_mtim,
                                before.st_ctim, ""},
                 &after))
    return 0; /* changed while hashing: use the digest, remember nothing */
  memo_add(&after, hex);
  if (keyed) bp__digest_cache_store(real, &after, hex);
  return 0;
}

/* The file's own name and the name it implies ("cpu" for backend-cpu.so,
 * "trace" for layer-trace.so); false for any other spelling. */
static bool implied_name(const char *path, const char **out_base, char *name, size_t size,
                         bool *out_layer) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  *out_base = base;
  size_t n = strlen(base);
  *out_layer = !strncmp(base, "layer-", 6);
  size_t skip = *out_layer ? 6 : !strncmp(base, "backend-", 8) ? 8 : 0;
  if (!skip || n < skip + 4 || strcmp(base + n - 3, ".so")) return false;
  snprintf(name, size, "%.*s", (int)(n - skip - 3), base + skip);
  return true;
}

static bp_status_t match_file(const char *plugin_path, bp_manifest_info_t *m) {
  const char *base;
  char name[256];
  bool layer;
  if (!implied_name(plugin_path, &base, name, sizeof name, &layer)) name[0] = '\0';
  if (strcmp(m->library, base))
    return refuse(m, "manifest %s describes library '%s', not %s (rule MANIFEST-5)", m->path,
                  m->library, base);
  if (name[0] && strcmp(m->name, name))
    return refuse(m, "manifest %s names '%s' but the file is %s (rule MANIFEST-5)", m->path,
                  m->name, base);
  unsigned major = layer ? BP_LAYER_ABI_MAJOR : BP_PLUGIN_ABI_MAJOR;
  if (m->abi_major != major)
    return refuse(m,
                  "manifest %s: %s built for ABI %u.%u, this loader speaks %u.x (rule MANIFEST-6)",
                  m->path, layer ? "layer" : "plugin", m->abi_major, m->abi_minor, major);
  char hex[65];
  if (file_digest(plugin_path, hex) != 0)
    return refuse(m, "cannot hash %s: %s (rule MANIFEST-7)", plugin_path, strerror(errno));
  if (strcmp(hex, m->sha256))
    return refuse(m,
                  "%s does not match its manifest: sha256 %.16s..., manifest says %.16s... "
                  "(rule MANIFEST-7)",
                  base, hex, m->sha256);
  return BP_OK;
}

/* The manifest beside plugin_path, else (a symlink, as `bp conformance`
 * and some packages stage plugins) beside the file it resolves to; its
 * plugin file goes to lib. False when there is none. */
static bool find_manifest(const char *plugin_path, char *path, char *lib, size_t size) {
  struct stat st;
  snprintf(lib, size, "%s", plugin_path);
  if (bp__manifest_path_for(lib, path, size) && !(lstat(path, &st) != 0 && errno == ENOENT))
    return true;
  char real[PATH_MAX];
  if (!realpath(plugin_path, real) || !strcmp(real, plugin_path)) return false;
  snprintf(lib, size, "%s", real);
  return bp__manifest_path_for(lib, path, size) && !(lstat(path, &st) != 0 && errno == ENOENT);
}

bp_status_t bp__manifest_check(const char *plugin_path, bool *out_present, char *reason,
                               size_t reason_size, bp_manifest_info_t *out) {
  bp_manifest_info_t local, *m = out ? out : &local;
  char path[PATH_MAX], lib[PATH_MAX];
  *out_present = false;
  if (reason_size) reason[0] = '\0';
  memset(m, 0, sizeof *m);
  m->struct_size = sizeof *m;
  if (!find_manifest(plugin_path, path, lib, sizeof path)) {
    snprintf(m->reason, sizeof m->reason, "no manifest beside %s (rule MANIFEST-8)", plugin_path);
    return BP_OK;
  }
  *out_present = true;
  bp_status_t s = bp__manifest_read(path, m);
  if (s == BP_OK) s = match_file(lib, m);
  snprintf(m->plugin_path, sizeof m->plugin_path, "%s", lib);
  if (s != BP_OK) snprintf(reason, reason_size, "%s", m->reason);
  return s;
}
