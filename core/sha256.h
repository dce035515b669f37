/*
 * sha256.h — SHA-256 (FIPS 180-4) for plugin manifests (sha256.c): the core
 * hashes a plugin file before dlopen, with no dependency beyond libc. Also
 * compiled into the build's manifest writer. Internal to libbackplane.
 */
#ifndef BACKPLANE_SHA256_H
#define BACKPLANE_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bp__sha256 {
  uint32_t h[8];
  uint64_t bytes;
  unsigned char block[64];
  size_t fill;
} bp__sha256_t;

/* Set by the build's manifest writer (--portable) to check the portable
 * code against the SHA-extension code; the loader never sets it. */
extern bool bp__sha256_portable_only;

void bp__sha256_init(bp__sha256_t *s);
void bp__sha256_update(bp__sha256_t *s, const void *data, size_t len);
/* Writes the digest as 64 lowercase hex digits and a NUL into hex. */
void bp__sha256_final_hex(bp__sha256_t *s, char hex[65]);
/* Hashes the file at path into hex; -1 with errno set when it cannot be
 * read. */
int bp__sha256_file(const char *path, char hex[65]);

#endif /* BACKPLANE_SHA256_H */
