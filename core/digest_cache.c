/*
 * digest_cache.c — the manifest digest cache (digest_cache.h).
 *
 * The file: digest-cache.bin beside the probe-verdict cache (the directory
 * of BACKPLANE_PROBE_CACHE, else $XDG_CACHE_HOME/backplane, else
 * ~/.cache/backplane; "off" disables both). It has the probe cache's
 * protections (cache_file.c): read only when it belongs to the effective
 * user and nobody else may write it, checksummed, replaced atomically,
 * bounded in size; anything that does not check out is read as empty and
 * the plugin is hashed again. In a setuid process it is not used at all:
 * that process must not trust a file its invoking user could write.
 *
 * Layout: a header (magic, format, record sizes, library version, count,
 * checksum of the rest), then count entries, newest first.
 */
#include "digest_cache.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

#include "cache_file.h"
#include "internal.h"

#define DIGEST_FORMAT 1
#define DIGEST_MAX_ENTRIES 128

typedef struct digest_header {
  char magic[8]; /* "BPDIGST\0" */
  uint32_t format, header_size, entry_size, count;
  char lib_version[32];
  uint64_t checksum; /* of every byte after the header */
} digest_header_t;

typedef struct digest_entry {
  uint64_t dev, ino, size, mtime_ns, ctime_ns;
  char sha256[72]; /* 64 hex digits, NUL-padded */
  char real[1024];
} digest_entry_t;

#define DIGEST_MAX_BYTES (sizeof(digest_header_t) + DIGEST_MAX_ENTRIES * sizeof(digest_entry_t))

/* Readers and writers in this process take turns, so two contexts created
 * at once do not drop each other's entries; across processes the last
 * atomic replacement wins, which loses at most an entry (hashed again). */
static pthread_mutex_t digest_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t ns(const struct timespec *t) {
  return (uint64_t)t->tv_sec * 1000000000ull + (uint64_t)t->tv_nsec;
}

static void header_init(digest_header_t *h, uint32_t count) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, "BPDIGST", 8);
  h->format = DIGEST_FORMAT;
  h->header_size = sizeof *h;
  h->entry_size = sizeof(digest_entry_t);
  h->count = count;
  snprintf(h->lib_version, sizeof h->lib_version, "%s", BP_VERSION_STRING);
}

static bool hex_digest(const char *s, size_t size) {
  if (!memchr(s, '\0', size) || strlen(s) != 64) return false;
  for (; *s; s++)
    if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return false;
  return true;
}

/* The cache file's path; false when the cache must not be used. */
static bool digest_path(char *out, size_t size) {
  return !getauxval(AT_SECURE) && bp__cache_file_path("digest-cache.bin", out, size);
}

/* The entries of the cache file at path, every one well formed; NULL (and
 * *out_count 0) when there is none to trust. The caller frees it. */
static digest_entry_t *read_entries(const char *path, uint32_t *out_count) {
  size_t len;
  *out_count = 0;
  unsigned char *buf =
      bp__cache_file_read(path, "digest cache", sizeof(digest_header_t), DIGEST_MAX_BYTES, &len);
  if (!buf) return NULL;
  digest_header_t h, want;
  memcpy(&h, buf, sizeof h);
  header_init(&want, h.count);
  want.checksum = h.checksum;
  size_t body = len - sizeof h;
  if (memcmp(&h, &want, sizeof h) != 0 || h.count > DIGEST_MAX_ENTRIES ||
      body != (size_t)h.count * sizeof(digest_entry_t) ||
      h.checksum != bp__cache_fnv(BP__FNV_OFFSET, buf + sizeof h, body)) {
    free(buf);
    return NULL;
  }
  digest_entry_t *e = malloc(body ? body : 1);
  if (e) memcpy(e, buf + sizeof h, body);
  free(buf);
  for (uint32_t i = 0; e && i < h.count; i++)
    if (!hex_digest(e[i].sha256, sizeof e[i].sha256) ||
        !memchr(e[i].real, '\0', sizeof e[i].real)) {
      free(e);
      return NULL;
    }
  *out_count = e ? h.count : 0;
  return e;
}

static digest_entry_t make_entry(const char *real, const struct stat *st) {
  digest_entry_t e;
  memset(&e, 0, sizeof e); /* padding too: the checksum covers every byte */
  e.dev = (uint64_t)st->st_dev;
  e.ino = (uint64_t)st->st_ino;
  e.size = (uint64_t)st->st_size;
  e.mtime_ns = ns(&st->st_mtim);
  e.ctime_ns = ns(&st->st_ctim);
  snprintf(e.real, sizeof e.real, "%s", real);
  return e;
}

static bool same_identity(const digest_entry_t *a, const digest_entry_t *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns &&
         a->ctime_ns == b->ctime_ns && !strcmp(a->real, b->real);
}

bool bp__digest_cache_lookup(const char *real, const struct stat *st, char hex[65]) {
  char path[PATH_MAX];
  if (strlen(real) >= sizeof((digest_entry_t *)0)->real || !digest_path(path, sizeof path))
    return false;
  digest_entry_t want = make_entry(real, st);
  uint32_t count;
  bool hit = false;
  pthread_mutex_lock(&digest_lock);
  digest_entry_t *e = read_entries(path, &count);
  for (uint32_t i = 0; i < count && !hit; i++)
    if (same_identity(&e[i], &want)) {
      memcpy(hex, e[i].sha256, 65);
      hit = true;
    }
  pthread_mutex_unlock(&digest_lock);
  free(e);
  return hit;
}

/* True when the file's change time is far enough in the past. The kernel
 * stamps ctime from a coarse clock (a tick, or a whole second on some file
 * systems), so a second write in the tick of the one that was hashed — with
 * the size kept and the mtime put back — would leave the identity as it
 * was; this is git's "racy clean" case. A file changed within the last
 * second is therefore hashed again by the next process instead of stored. */
static bool settled(const struct stat *st) {
  struct timespec now;
  if (clock_gettime(CLOCK_REALTIME, &now) != 0) return false;
  return ns(&now) > ns(&st->st_ctim) + 1000000000ull;
}

void bp__digest_cache_store(const char *real, const struct stat *st, const char hex[65]) {
  char path[PATH_MAX];
  if (strlen(real) >= sizeof((digest_entry_t *)0)->real || !settled(st) ||
      !digest_path(path, sizeof path))
    return;
  digest_entry_t fresh = make_entry(real, st);
  memcpy(fresh.sha256, hex, 64);
  pthread_mutex_lock(&digest_lock);
  uint32_t old_count;
  digest_entry_t *old = read_entries(path, &old_count); /* what others wrote since */
  size_t cap = sizeof(digest_header_t) + (old_count + 1) * sizeof fresh;
  unsigned char *out = malloc(cap);
  if (out) {
    /* The new entry first, then the others but an older state of this file. */
    size_t len = sizeof(digest_header_t);
    memcpy(out + len, &fresh, sizeof fresh);
    len += sizeof fresh;
    uint32_t count = 1;
    for (uint32_t i = 0; i < old_count && count < DIGEST_MAX_ENTRIES; i++) {
      if (!strcmp(old[i].real, fresh.real)) continue;
      memcpy(out + len, &old[i], sizeof fresh);
      len += sizeof fresh;
      count++;
    }
    digest_header_t h;
    header_init(&h, count);
    h.checksum = bp__cache_fnv(BP__FNV_OFFSET, out + sizeof h, len - sizeof h);
    memcpy(out, &h, sizeof h);
    bp__cache_file_replace(path, "digest cache", out, len);
  }
  pthread_mutex_unlock(&digest_lock);
  free(out);
  free(old);
}
