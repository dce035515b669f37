/*
 * digest_cache.h — manifest digests kept across processes (digest_cache.c).
 * A plugin's SHA-256 is checked against its manifest before dlopen
 * (manifest.c); hashing every plugin in every process would make each warm
 * start pay for it. A verified digest is remembered by the file's full
 * identity — real path, device, inode, size, mtime and ctime in
 * nanoseconds — and used only while every part of it still matches: any
 * write to the file changes its ctime, which no one can set back. Internal
 * to libbackplane; docs/plugin-abi.md section 15 is the user's description.
 */
#ifndef BACKPLANE_DIGEST_CACHE_H
#define BACKPLANE_DIGEST_CACHE_H

#include <stdbool.h>
#include <sys/stat.h>

/* Copies into hex the digest stored for the file at real path real whose
 * stat is st; false when none matches every identity field, when the cache
 * is off (BACKPLANE_PROBE_CACHE=off), in a setuid process, or when the
 * cache file does not check out. */
bool bp__digest_cache_lookup(const char *real, const struct stat *st, char hex[65]);

/* Remembers hex as the digest of the file real with stat st, replacing any
 * entry for the same real path; failures are logged only. A file whose
 * ctime is less than a second old is not stored (its identity may not yet
 * tell a second write apart). */
void bp__digest_cache_store(const char *real, const struct stat *st, const char hex[65]);

#endif /* BACKPLANE_DIGEST_CACHE_H */
