/*
 * trust.c — the plugin trust policy: which files the loader may dlopen.
 *
 * Loading a plugin runs its code with the application's privileges, so a
 * plugin, and every directory on the way to it, must be beyond the reach of
 * anyone but root and the user the process runs as. The rules, numbered in
 * docs/plugin-abi.md section 13 and cited in every refusal:
 *
 *   TRUST-1  the candidate is resolved (realpath) and must be a regular file;
 *            everything below is checked on the resolved path, so a symlink
 *            is judged by where it leads, not by where it sits.
 *   TRUST-2  the file belongs to root or to the effective user.
 *   TRUST-3  the file is not writable by others than its owner and root
 *            (group-writable is allowed only for group root).
 *   TRUST-4  every directory from the file's (and the search directory's)
 *            real parent up to / belongs to root or to the effective user.
 *   TRUST-5  the plugin's own directory (where the file really is, and the
 *            search-path directory it was found in) is not writable by
 *            others, sticky bit or not: in a sticky /tmp anyone can still
 *            plant a backend-*.so symlink to any root-owned library.
 *   TRUST-6  a directory above that is writable by others must be sticky
 *            (like /tmp), so that nobody else can rename or replace what is
 *            under it.
 *   TRUST-7  in a setuid/setgid process (AT_SECURE) the environment is
 *            ignored (bp__getenv is secure_getenv, so BACKPLANE_PLUGIN_PATH
 *            is never read) and files and directories must belong to root;
 *            the effective user is not enough.
 *   TRUST-8  every symlink met while resolving (the file, the search
 *            directory, or any directory on the way) lies in a directory
 *            that passes TRUST-4 to TRUST-6 as a plugin's own directory:
 *            otherwise its owner could re-point it after the checks.
 *
 * The Vulkan and OpenCL loaders apply the same idea to their secure paths.
 */
#include "trust.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

bool bp__trust_secure(void) {
  return getauxval(AT_SECURE) != 0;
}

/* Existing policy, kept as it was: others than the owner and root can write. */
static bool writable_by_others(const struct stat *st) {
  if (st->st_mode & S_IWOTH) return true;
  return (st->st_mode & S_IWGRP) && st->st_gid != 0;
}

static bool owner_trusted(uid_t uid, bool secure) {
  return uid == 0 || (!secure && uid == geteuid());
}

static bp_status_t refuse(char *reason, size_t size, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Writes "<prefix><message>" to reason and returns the refusal status. */
static bp_status_t refuse(char *reason, size_t size, const char *prefix, const char *fmt, ...) {
  int n = snprintf(reason, size, "%s", prefix);
  if (n < 0) n = 0;
  if ((size_t)n < size) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason + n, size - (size_t)n, fmt, ap);
    va_end(ap);
  }
  return BP_ERR_INCOMPATIBLE;
}

/* The ownership rule a refusal cites: TRUST-7 when only secure mode refuses. */
static const char *owner_rule(uid_t uid, bool secure) {
  return secure && uid == geteuid() ? "TRUST-7" : "TRUST-2";
}

/* Checks real (an absolute, resolved directory) and every directory above it
 * up to /: rules TRUST-4, TRUST-5 (real itself), TRUST-6 (those above). */
static bp_status_t check_dirs(const char *real, const char *prefix, char *reason, size_t size) {
  bool secure = bp__trust_secure();
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", real);
  for (bool own_dir = true;; own_dir = false) {
    struct stat st;
    if (stat(dir, &st) != 0)
      return refuse(reason, size, prefix, "cannot stat directory %s: %s (rule TRUST-4)", dir,
                    strerror(errno));
    if (!owner_trusted(st.st_uid, secure))
      return refuse(reason, size, prefix, "directory %s is owned by uid %u, not root%s (rule %s)",
                    dir, (unsigned)st.st_uid,
                    secure ? " (setuid/setgid process)" : " nor the effective user",
                    secure && st.st_uid == geteuid() ? "TRUST-7" : "TRUST-4");
    if (writable_by_others(&st)) {
      if (own_dir)
        return refuse(reason, size, prefix,
                      "directory %s is writable by others than its owner and root "
                      "(mode %03o) (rule TRUST-5)",
                      dir, (unsigned)(st.st_mode & 0777));
      if (!(st.st_mode & S_ISVTX))
        return refuse(reason, size, prefix,
                      "directory %s is writable by others than its owner and root "
                      "and not sticky (mode %04o) (rule TRUST-6)",
                      dir, (unsigned)(st.st_mode & 07777));
    }
    if (!strcmp(dir, "/")) return BP_OK;
    char *slash = strrchr(dir, '/');
    if (!slash) return BP_OK; /* realpath gives absolute paths; defensive */
    if (slash == dir)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
}

/* Rule TRUST-8: follows path a component at a time, as the kernel resolves
 * it, and checks the directory holding each symlink met on the way (as a
 * plugin's own directory), so that nobody else can re-point a link between
 * these checks and dlopen. Missing components and loops are left to
 * realpath, whose error the caller reports. */
static bp_status_t check_links(const char *path, char *reason, size_t size) {
  char cur[PATH_MAX], rest[2 * PATH_MAX], next[2 * PATH_MAX], target[PATH_MAX];
  if (path[0] == '/')
    snprintf(cur, sizeof cur, "/");
  else if (!getcwd(cur, sizeof cur))
    return BP_OK;
  if (snprintf(rest, sizeof rest, "%s", path) >= (int)sizeof rest) return BP_OK;
  for (int hops = 0;;) {
    const char *comp = rest;
    while (*comp == '/') comp++;
    if (!*comp) return BP_OK;
    const char *after = strchr(comp, '/');
    if (!after) after = comp + strlen(comp);
    size_t len = (size_t)(after - comp);
    char cand[PATH_MAX];
    if (len == 1 && comp[0] == '.') {
      /* nothing to do */
    } else if (len == 2 && comp[0] == '.' && comp[1] == '.') {
      char *slash = strrchr(cur, '/'); /* cur holds no symlink: ".." is lexical */
      if (slash == cur)
        cur[1] = '\0';
      else if (slash)
        *slash = '\0';
    } else {
      if (snprintf(cand, sizeof cand, "%s%s%.*s", cur, strcmp(cur, "/") ? "/" : "", (int)len,
                   comp) >= (int)sizeof cand)
        return BP_OK;
      struct stat st;
      if (lstat(cand, &st) != 0) return BP_OK;
      if (S_ISLNK(st.st_mode)) {
        char why[512];
        if (++hops > 40) return BP_OK;
        if (check_dirs(cur, "", why, sizeof why) != BP_OK)
          return refuse(reason, size, "",
                        "symlink %s lies where others could re-point it (rule TRUST-8): %s", cand,
                        why);
        ssize_t n = readlink(cand, target, sizeof target - 1);
        if (n <= 0) return BP_OK;
        target[n] = '\0';
        if (snprintf(next, sizeof next, "%s%s", target, after) >= (int)sizeof next) return BP_OK;
        if (target[0] == '/') snprintf(cur, sizeof cur, "/");
        memcpy(rest, next, strlen(next) + 1);
        continue;
      }
      memcpy(cur, cand, strlen(cand) + 1);
    }
    memmove(rest, after, strlen(after) + 1);
  }
}

bp_status_t bp__trust_check_dir(const char *dir, char *reason, size_t reason_size) {
  char real[PATH_MAX], prefix[PATH_MAX + 64] = "";
  if (reason_size) reason[0] = '\0';
  if (check_links(dir, reason, reason_size) != BP_OK) return BP_ERR_INCOMPATIBLE;
  if (!realpath(dir, real))
    return refuse(reason, reason_size, "",
                  "plugin directory %s cannot be resolved: %s (rule TRUST-1)", dir,
                  strerror(errno));
  if (strcmp(dir, real)) snprintf(prefix, sizeof prefix, "plugin directory resolves to %s: ", real);
  return check_dirs(real, prefix, reason, reason_size);
}

bp_status_t bp__trust_check_file(const char *path, char *reason, size_t reason_size) {
  char real[PATH_MAX], prefix[PATH_MAX + 64] = "";
  if (reason_size) reason[0] = '\0';
  bool secure = bp__trust_secure();
  if (check_links(path, reason, reason_size) != BP_OK) return BP_ERR_INCOMPATIBLE;
  /* "cannot stat" as before: a dangling symlink or a loop ends here. */
  if (!realpath(path, real))
    return refuse(reason, reason_size, "", "cannot stat: %s (rule TRUST-1)", strerror(errno));
  if (strcmp(path, real)) snprintf(prefix, sizeof prefix, "resolves to %s: ", real);
  struct stat st;
  if (stat(real, &st) != 0)
    return refuse(reason, reason_size, prefix, "cannot stat: %s (rule TRUST-1)", strerror(errno));
  if (!S_ISREG(st.st_mode))
    return refuse(reason, reason_size, prefix, "not a regular file (rule TRUST-1)");
  if (!owner_trusted(st.st_uid, secure))
    return refuse(reason, reason_size, prefix, "file is owned by uid %u, not root%s (rule %s)",
                  (unsigned)st.st_uid,
                  secure ? " (setuid/setgid process)" : " nor the effective user",
                  owner_rule(st.st_uid, secure));
  if (writable_by_others(&st))
    return refuse(reason, reason_size, prefix,
                  "file is writable by others than its owner and root (mode %03o) "
                  "(rule TRUST-3)",
                  (unsigned)(st.st_mode & 0777));
  char *slash = strrchr(real, '/');
  if (!slash) return BP_OK;
  if (slash == real)
    slash[1] = '\0';
  else
    *slash = '\0';
  return check_dirs(real, prefix, reason, reason_size);
}
