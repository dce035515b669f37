/*
 * tuning.c — the autotuning cache behind the host services tune_lookup and
 * tune_store: a table of (key, value) strings kept in memory and in a JSON
 * file, one per process (see bp_context_set_tuning_cache for why).
 *
 * The file, written by this file only:
 *   {
 *     "version": 1,
 *     "entries": [
 *       {"plugin": "cpu", "plugin_version": "0.1.0", "device": "cpu",
 *        "driver_version": "...", "op": "gemm", "dtype": "f32",
 *        "bucket": "m1024n1024k1024", "value": "..."},
 *       ...
 *     ]
 *   }
 * Which file: bp_context_set_tuning_cache's path, else BACKPLANE_TUNING_CACHE
 * ("" keeps results in memory only), else $XDG_CACHE_HOME/backplane/
 * tuning.json, else $HOME/.cache/backplane/tuning.json. The path is resolved
 * on every call, so a change takes effect at the next lookup or store.
 *
 * The table and the strict reader live in tuning_table.c.
 *
 * Rules, in the order the code applies them:
 *  1. The file is read with a strict parser for exactly this schema; any
 *     deviation makes the whole file untrusted: it is reported once (warn)
 *     and treated as empty, and the next store replaces it.
 *  2. A file with a higher "version" is reported once and left untouched:
 *     stores then stay in memory, so an older library never clobbers a newer
 *     one's cache.
 *  3. A store updates memory first (so a failed write loses nothing for this
 *     process), then, holding an flock on "<path>.lock", re-reads the file,
 *     merges (the file's entries win for keys this process did not just
 *     store) and writes a temporary file that is renamed over the cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "tuning_table.h"

#define TUNE_FILE_MAX (16u << 20) /* bytes; a bigger file is not ours */

static struct {
  pthread_mutex_t lock;
  char *app_path;        /* from bp_context_set_tuning_cache, NULL: default */
  bool loaded;
  char path[PATH_MAX];   /* what table was loaded from; "": memory only */
  bool warned_read, warned_write, newer_format; /* for path, reset on change */
  tune_table_t table;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- files -----------------------------------------------------------------*/

typedef enum load_result { LOAD_OK, LOAD_ABSENT, LOAD_BAD, LOAD_NEWER } load_result_t;

/* Reads the whole file (at most TUNE_FILE_MAX bytes) into a new buffer. */
static char *slurp(const char *path, size_t *out_len, int *out_errno) {
  char *buf = NULL;
  struct stat st;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  *out_errno = 0;
  if (fd < 0 || fstat(fd, &st) != 0) goto fail;
  if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > TUNE_FILE_MAX) {
    errno = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
    goto fail;
  }
  buf = malloc((size_t)st.st_size + 1);
  if (!buf) goto fail;
  size_t n = 0;
  while (n < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break; /* shorter than fstat said: parse what is there */
    n += (size_t)r;
  }
  close(fd);
  *out_len = n;
  return buf;
fail:
  *out_errno = errno ? errno : EIO;
  free(buf);
  if (fd >= 0) close(fd);
  return NULL;
}

/* Loads path into t, reporting a bad or unreadable file once per path. */
static load_result_t load_file(const char *path, tune_table_t *t) {
  size_t len = 0;
  int err;
  char *text = slurp(path, &len, &err);
  if (!text && err == ENOENT) return LOAD_ABSENT;
  if (!text) {
    if (!cache.warned_read)
      bp__log(BP_LOG_WARN, BP__LOG_LOADER, "tuning cache %s: cannot read it (%s); ignoring it",
              path, strerror(err));
    cache.warned_read = true;
    return LOAD_BAD;
  }
  const char *why = NULL;
  size_t at = 0;
  parse_result_t r = tune_parse(text, len, t, &why, &at);
  free(text);
  if (r != PARSE_OK) tune_table_clear(t); /* never keep half of an untrusted file */
  if (r == PARSE_BAD && !cache.warned_read)
    bp__log(BP_LOG_WARN, BP__LOG_LOADER,
            "tuning cache %s: not a valid cache file (%s at byte %zu); ignoring it, "
            "the next tuning result replaces it", path, why, at);
  if (r == PARSE_NEWER && !cache.warned_read)
    bp__log(BP_LOG_WARN, BP__LOG_LOADER,
            "tuning cache %s: written by a newer backplane; ignoring it and leaving it "
            "untouched (tuning results stay in memory)", path);
  if (r != PARSE_OK) cache.warned_read = true;
  return r == PARSE_OK ? LOAD_OK : r == PARSE_NEWER ? LOAD_NEWER : LOAD_BAD;
}

static void write_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void write_table(FILE *f, const tune_table_t *t) {
  fprintf(f, "{\n  \"version\": %d,\n  \"entries\": [", TUNE_FORMAT_VERSION);
  for (size_t i = 0; i < t->n; i++) {
    fputs(i ? ",\n    {" : "\n    {", f);
    for (int k = 0; k < F_COUNT; k++) {
      fprintf(f, "%s\"%s\": ", k ? ", " : "", tune_field_names[k]);
      write_string(f, t->e[i].f[k]);
    }
    fputc('}', f);
  }
  fputs(t->n ? "\n  ]\n}\n" : "]\n}\n", f);
}

/* Creates the directories above path (mode 0700, as XDG asks of caches). */
static void make_parents(const char *path) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *s = strchr(dir + 1, '/'); s; s = strchr(s + 1, '/')) {
    *s = '\0';
    mkdir(dir, 0700); /* EEXIST is the common case; open reports the rest */
    *s = '/';
  }
}

/* Writes t to a temporary file beside path and renames it over path, so a
 * reader sees the old file or the new one, never half of one. */
static bool write_atomic(const char *path, const tune_table_t *t) {
  char tmp[PATH_MAX + 16];
  struct stat st;
  snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) return false;
  /* Keep the mode of the file replaced; a new one is readable by all, like
   * any other cache file. */
  fchmod(fd, stat(path, &st) == 0 ? (st.st_mode & 0777) : 0644);
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(tmp);
    return false;
  }
  write_table(f, t);
  bool ok = fflush(f) == 0 && !ferror(f) && fsync(fd) == 0;
  ok = (fclose(f) == 0) && ok;
  if (ok && rename(tmp, path) == 0) return true;
  int saved = errno;
  unlink(tmp);
  errno = saved;
  return false;
}

static void warn_write(const char *what) {
  if (!cache.warned_write)
    bp__log(BP_LOG_WARN, BP__LOG_LOADER,
            "tuning cache %s: cannot %s (%s); tuning results stay in this process only",
            cache.path, what, strerror(errno));
  cache.warned_write = true;
}

/* Merges what other processes wrote since the load with cache.table (the
 * entry just stored, f, wins over the file; NULL: none) and writes the
 * result. */
static void persist(const char *const *f) {
  char lock_path[PATH_MAX + 8];
  snprintf(lock_path, sizeof lock_path, "%s.lock", cache.path);
  make_parents(cache.path);
  int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0) return warn_write("create its lock file");
  while (flock(lock, LOCK_EX) != 0 && errno == EINTR) {}
  tune_table_t merged = {0};
  load_result_t r = load_file(cache.path, &merged);
  if (r == LOAD_NEWER) {
    cache.newer_format = true;
    goto out;
  }
  bool ok = true;
  for (size_t i = 0; ok && i < cache.table.n; i++) {
    tune_entry_t *e = &cache.table.e[i];
    if (!tune_table_find(&merged, (const char *const *)e->f, e->hash))
      ok = tune_table_upsert(&merged, (const char *const *)e->f);
  }
  if (!ok || (f && !tune_table_upsert(&merged, f))) {
    errno = ENOMEM;
    warn_write("merge it");
    goto out;
  }
  if (!write_atomic(cache.path, &merged)) {
    warn_write("write it");
    goto out;
  }
  tune_table_clear(&cache.table); /* the file's view, now including ours */
  cache.table = merged;
  merged = (tune_table_t){0};
out:
  tune_table_clear(&merged);
  close(lock); /* releases the flock */
}

/* ---- path and state --------------------------------------------------------*/

/* The file the cache should use now; "" for memory only. */
static void resolve_path(char *out, size_t size) {
  const char *env = bp__getenv("BACKPLANE_TUNING_CACHE");
  const char *xdg = bp__getenv("XDG_CACHE_HOME"), *home = bp__getenv("HOME");
  int n;
  if (cache.app_path) n = snprintf(out, size, "%s", cache.app_path);
  else if (env) n = snprintf(out, size, "%s", env);
  /* XDG: a relative $XDG_CACHE_HOME is invalid and must be ignored. */
  else if (xdg && xdg[0] == '/') n = snprintf(out, size, "%s/backplane/tuning.json", xdg);
  else if (home && home[0] == '/') n = snprintf(out, size, "%s/.cache/backplane/tuning.json", home);
  else n = snprintf(out, size, "%s", ""); /* setuid, or no home: memory only */
  if (n < 0 || (size_t)n >= size - 16) out[0] = '\0'; /* room for suffixes */
}

/* Makes cache.table the contents of the file the cache should use now,
 * reloading when the path changed. Called with cache.lock held. */
static void cache_sync_path(void) {
  char path[PATH_MAX];
  resolve_path(path, sizeof path);
  if (cache.loaded && !strcmp(path, cache.path)) return;
  tune_table_clear(&cache.table);
  snprintf(cache.path, sizeof cache.path, "%s", path);
  cache.warned_read = cache.warned_write = cache.newer_format = false;
  cache.loaded = true;
  if (path[0] && load_file(path, &cache.table) == LOAD_NEWER) cache.newer_format = true;
  bp__log(BP_LOG_DEBUG, BP__LOG_LOADER, "tuning cache: %s, %zu entries",
          path[0] ? path : "(memory only)", cache.table.n);
}

/* Gathers the key's fields into f; false (with a log line) when malformed. */
static bool key_fields(const bp_tune_key_t *key, const char **f, const char *fn) {
  if (!key || key->struct_size < sizeof *key) {
    bp__log(BP_LOG_WARN, BP__LOG_PLUGIN, "%s: key is %s; ignoring the call", fn,
            key ? "smaller than bp_tune_key_t" : "NULL");
    return false;
  }
  const char *v[F_KEYS] = {key->plugin, key->plugin_version, key->device,
                           key->driver_version, key->op, key->dtype, key->bucket};
  for (int i = 0; i < F_KEYS; i++) {
    if (!v[i] || strnlen(v[i], BP_TUNE_FIELD_MAX) >= BP_TUNE_FIELD_MAX) {
      bp__log(BP_LOG_WARN, BP__LOG_PLUGIN, "%s: key field %s is %s; ignoring the call", fn,
              tune_field_names[i], v[i] ? "too long" : "NULL");
      return false;
    }
    f[i] = v[i];
  }
  return true;
}

bool bp__tune_lookup(const bp_tune_key_t *key, char *out_value, size_t size) {
  const char *f[F_COUNT];
  if (out_value && size) out_value[0] = '\0';
  if (!out_value || !size || !key_fields(key, f, "tune_lookup")) return false;
  pthread_mutex_lock(&cache.lock);
  cache_sync_path();
  tune_entry_t *e = tune_table_find(&cache.table, f, tune_key_hash(f));
  bool hit = e && strlen(e->f[F_VALUE]) < size;
  if (hit) memcpy(out_value, e->f[F_VALUE], strlen(e->f[F_VALUE]) + 1);
  pthread_mutex_unlock(&cache.lock);
  return hit;
}

void bp__tune_store(const bp_tune_key_t *key, const char *value) {
  const char *f[F_COUNT];
  if (!key_fields(key, f, "tune_store")) return;
  if (!value || strnlen(value, BP_TUNE_VALUE_MAX) >= BP_TUNE_VALUE_MAX) {
    bp__log(BP_LOG_WARN, BP__LOG_PLUGIN, "tune_store: value is %s; ignoring the call",
            value ? "too long" : "NULL");
    return;
  }
  f[F_VALUE] = value;
  pthread_mutex_lock(&cache.lock);
  cache_sync_path();
  if (!tune_table_upsert(&cache.table, f))
    bp__log(BP_LOG_WARN, BP__LOG_LOADER, "tuning cache: out of memory; result not kept");
  else if (cache.path[0] && !cache.newer_format)
    persist(f);
  pthread_mutex_unlock(&cache.lock);
}

bp_status_t bp_context_set_tuning_cache(bp_context_t *h, const char *path) {
  bp__clear_error();
  bp_context_t *context;
  bp_status_t st = bp__context_get(h, "bp_context_set_tuning_cache", &context);
  if (st != BP_OK) return st;
  if (path && (!path[0] || strnlen(path, PATH_MAX) >= PATH_MAX - 16))
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_context_set_tuning_cache: path is %s", path[0] ? "too long" : "empty");
  char *copy = path ? strdup(path) : NULL;
  if (path && !copy)
    return bp__fail(BP_ERR_OUT_OF_MEMORY, "bp_context_set_tuning_cache: out of memory");
  pthread_mutex_lock(&cache.lock);
  free(cache.app_path);
  cache.app_path = copy;
  pthread_mutex_unlock(&cache.lock);
  return BP_OK;
}

bp_status_t bp_context_flush_tuning_cache(bp_context_t *h) {
  bp__clear_error();
  bp_context_t *context;
  bp_status_t st = bp__context_get(h, "bp_context_flush_tuning_cache", &context);
  if (st != BP_OK) return st;
  pthread_mutex_lock(&cache.lock);
  cache_sync_path();
  bool was_warned = cache.warned_write;
  cache.warned_write = false;
  if (cache.path[0] && !cache.newer_format) persist(NULL);
  bool failed = cache.warned_write;
  cache.warned_write = cache.warned_write || was_warned;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", cache.path);
  bool newer = cache.newer_format;
  pthread_mutex_unlock(&cache.lock);
  if (!path[0])
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_context_flush_tuning_cache: the cache is in memory only "
                    "(BACKPLANE_TUNING_CACHE is empty, or no home directory)");
  if (newer)
    return bp__fail(BP_ERR_INVALID_ARGUMENT,
                    "bp_context_flush_tuning_cache: %s has a newer format; left untouched", path);
  if (failed)
    return bp__fail(BP_ERR_INTERNAL, "bp_context_flush_tuning_cache: could not write %s", path);
  return BP_OK;
}
