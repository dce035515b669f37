/*
 * cache_file.h — what the loader's per-user cache files share (cache_file.c):
 * where they live, their checksum, the owner check on reading and the
 * atomic replacement on writing. The probe-verdict cache (probe_cache.c)
 * and the manifest digest cache (digest_cache.c) are both built on it, so
 * both get the same protections. Internal to libbackplane.
 */
#ifndef BACKPLANE_CACHE_FILE_H
#define BACKPLANE_CACHE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BP__FNV_OFFSET 0xcbf29ce484222325ull
#define BP__FNV_PRIME 0x100000001b3ull

/* FNV-1a of n bytes, continuing from h (BP__FNV_OFFSET to start). */
uint64_t bp__cache_fnv(uint64_t h, const void *data, size_t n);

/* The path of a cache file; false when the caches are off
 * (BACKPLANE_PROBE_CACHE empty or "off") or have no home (a setuid
 * program, no HOME). name NULL: the probe cache itself —
 * BACKPLANE_PROBE_CACHE (a file, or a directory holding probe-cache.bin),
 * else $XDG_CACHE_HOME/backplane/probe-cache.bin, else
 * ~/.cache/backplane/probe-cache.bin. Otherwise the file called name in
 * the probe cache's directory. Leaves room for a temporary suffix. */
bool bp__cache_file_path(const char *name, char *out, size_t size);

/* The whole file at path, in a buffer the caller frees, when it is a
 * regular file (no symlink) of min_bytes to max_bytes that belongs to the
 * effective user and that nobody else may write; NULL otherwise (a file
 * someone else could have written is logged and never trusted). what
 * names the cache in the log. */
unsigned char *bp__cache_file_read(const char *path, const char *what, size_t min_bytes,
                                   size_t max_bytes, size_t *out_len);

/* Replaces path with data atomically (a mode-0600 temporary file in the
 * same directory, then rename), creating the directories above it with
 * mode 0700. False (logged at debug level) when it could not. */
bool bp__cache_file_replace(const char *path, const char *what, const void *data, size_t len);

#endif /* BACKPLANE_CACHE_FILE_H */
