/*
 * sha256.c — SHA-256 (FIPS 180-4), portable C. The loader hashes each
 * plugin file whose manifest names a digest before it maps the file, so a
 * tampered or half-copied plugin is refused without running a line of it.
 */
#include "sha256.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n) {
  return x >> n | x << (32 - n);
}

static void compress(uint32_t h[8], const unsigned char *b) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 | (uint32_t)b[4 * i + 2] << 8 |
           b[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 =
        hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = bb;
    bb = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += bb;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_SHA_NI 1

/* The same compression with the SHA extensions (Intel since Goldmont and
 * Ice Lake, AMD since Zen): several times faster, which is what keeps
 * hashing plugins before dlopen cheap. Each group of 4 rounds takes the
 * next 4 message words, computed with sha256msg1/msg2 from the 4 groups
 * before it. */
__attribute__((target("sha,ssse3,sse4.1"))) static void
compress_ni(uint32_t h[8], const unsigned char *b, size_t blocks) {
  const __m128i mask = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
  __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B);  /* EFGH */
  __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);                                       /* ABEF */
  s1 = _mm_blend_epi16(s1, tmp, 0xF0);                                            /* CDGH */
  for (; blocks; blocks--, b += 64) {
    __m128i abef = s0, cdgh = s1, w[4];
    for (int g = 0; g < 16; g++) {
      __m128i m;
      if (g < 4)
        m = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(b + 16 * g)), mask);
      else
        m = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]),
                                               _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4)),
                                 w[(g + 3) & 3]);
      w[g & 3] = m;
      __m128i k = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)&K[4 * g]));
      s1 = _mm_sha256rnds2_epu32(s1, s0, k);
      s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(k, 0x0E));
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
  }
  tmp = _mm_shuffle_epi32(s0, 0x1B);                                  /* FEBA */
  s1 = _mm_shuffle_epi32(s1, 0xB1);                                   /* DCHG */
  _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(tmp, s1, 0xF0)); /* DCBA */
  _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(s1, tmp, 8));    /* HGFE */
}

static bool cpu_has_sha_ni(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1)) return false;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_SHA);
}
#else
#define HAVE_SHA_NI 0
#endif

bool bp__sha256_portable_only;

/* Compresses whole blocks with the fastest code the CPU has. */
static void compress_blocks(uint32_t h[8], const unsigned char *b, size_t blocks) {
#if HAVE_SHA_NI
  static int ni = -1; /* a benign race: every thread computes the same */
  if (ni < 0) ni = cpu_has_sha_ni();
  if (ni && !bp__sha256_portable_only) {
    compress_ni(h, b, blocks);
    return;
  }
#endif
  for (; blocks; blocks--, b += 64) compress(h, b);
}

void bp__sha256_init(bp__sha256_t *s) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof iv);
  s->bytes = 0;
  s->fill = 0;
}

void bp__sha256_update(bp__sha256_t *s, const void *data, size_t len) {
  const unsigned char *p = data;
  s->bytes += len;
  if (s->fill) {
    size_t take = 64 - s->fill < len ? 64 - s->fill : len;
    memcpy(s->block + s->fill, p, take);
    s->fill += take;
    p += take;
    len -= take;
    if (s->fill < 64) return;
    compress_blocks(s->h, s->block, 1);
    s->fill = 0;
  }
  compress_blocks(s->h, p, len / 64);
  p += len / 64 * 64;
  len %= 64;
  memcpy(s->block, p, len);
  s->fill = len;
}

void bp__sha256_final_hex(bp__sha256_t *s, char hex[65]) {
  uint64_t bits = s->bytes * 8;
  unsigned char pad[72] = {0x80};
  size_t padlen = (s->fill < 56 ? 56 : 120) - s->fill;
  for (int i = 0; i < 8; i++) pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
  bp__sha256_update(s, pad, padlen + 8);
  for (int i = 0; i < 8; i++) snprintf(hex + 8 * i, 9, "%08x", s->h[i]);
}

int bp__sha256_file(const char *path, char hex[65]) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  bp__sha256_t s;
  bp__sha256_init(&s);
  unsigned char buf[1 << 16];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) bp__sha256_update(&s, buf, (size_t)n);
  int err = errno;
  close(fd);
  if (n < 0) {
    errno = err;
    return -1;
  }
  bp__sha256_final_hex(&s, hex);
  return 0;
}
