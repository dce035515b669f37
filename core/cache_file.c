/*
 * cache_file.c — the per-user cache files' common ground (cache_file.h):
 * their location, checksum, owner check and atomic replacement. A cache
 * file is a hint that saves work, never an authority: one that does not
 * check out is read as empty, and one another user could have written is
 * not read at all.
 */
#include "cache_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

uint64_t bp__cache_fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * BP__FNV_PRIME;
  return h;
}

static bool probe_cache_path(char *out, size_t size) {
  const char *env = bp__getenv("BACKPLANE_PROBE_CACHE");
  const char *xdg = bp__getenv("XDG_CACHE_HOME"), *home = bp__getenv("HOME");
  struct stat st;
  int n;
  if (env) {
    if (!env[0] || !strcmp(env, "off")) return false;
    if (stat(env, &st) == 0 && S_ISDIR(st.st_mode))
      n = snprintf(out, size, "%s/probe-cache.bin", env);
    else
      n = snprintf(out, size, "%s", env);
  } else if (xdg && xdg[0] == '/') { /* a relative one must be ignored */
    n = snprintf(out, size, "%s/backplane/probe-cache.bin", xdg);
  } else if (home && home[0] == '/') {
    n = snprintf(out, size, "%s/.cache/backplane/probe-cache.bin", home);
  } else {
    return false; /* a setuid program, or no home */
  }
  return n > 0 && (size_t)n < size - 16; /* room for the temporary suffix */
}

bool bp__cache_file_path(const char *name, char *out, size_t size) {
  char probe[PATH_MAX];
  if (!probe_cache_path(probe, sizeof probe)) return false;
  if (!name) return snprintf(out, size, "%s", probe) < (int)size - 16;
  const char *slash = strrchr(probe, '/');
  int dir_len = slash ? (int)(slash - probe) + 1 : 0;
  int n = snprintf(out, size, "%.*s%s", dir_len, probe, name);
  return n > 0 && (size_t)n < size - 16;
}

unsigned char *bp__cache_file_read(const char *path, const char *what, size_t min_bytes,
                                   size_t max_bytes, size_t *out_len) {
  *out_len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return NULL;
  struct stat st;
  unsigned char *buf = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size < min_bytes ||
      (size_t)st.st_size > max_bytes)
    goto fail;
  if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
    bp__log(BP_LOG_WARN, BP__LOG_LOADER,
            "%s %s: owned by uid %u or writable by others (mode %03o); ignoring it", what, path,
            (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
    goto fail;
  }
  size_t len = (size_t)st.st_size, got = 0;
  if (!(buf = malloc(len ? len : 1))) goto fail;
  while (got < len) {
    ssize_t n = read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) goto fail;
    got += (size_t)n;
  }
  close(fd);
  *out_len = len;
  return buf;
fail:
  free(buf);
  close(fd);
  return NULL;
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

static bool write_all(int fd, const void *data, size_t len) {
  const unsigned char *b = data;
  while (len) {
    ssize_t n = write(fd, b, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    b += n;
    len -= (size_t)n;
  }
  return true;
}

bool bp__cache_file_replace(const char *path, const char *what, const void *data, size_t len) {
  char tmp[PATH_MAX + 16];
  make_parents(path);
  snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0) {
    bp__log(BP_LOG_DEBUG, BP__LOG_LOADER, "%s %s: cannot write: %s", what, path, strerror(errno));
    return false;
  }
  fchmod(fd, 0600);
  bool ok = write_all(fd, data, len);
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    bp__log(BP_LOG_DEBUG, BP__LOG_LOADER, "%s %s: cannot write: %s", what, path, strerror(errno));
    unlink(tmp);
    return false;
  }
  return true;
}
