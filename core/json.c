/*
 * json.c — the core's one JSON reader (json.h), shared by the autotuning
 * cache (tuning_table.c) and plugin manifests (manifest.c). Strict: only
 * RFC 8259 text is accepted, strings are bounded by the caller's buffer,
 * nesting by a fixed depth, and the first error is kept with its offset, so
 * a damaged file is refused with a reason instead of half-read.
 */
#include "json.h"

#include <string.h>

/* Deep enough for any file the core reads; shallow enough that a hostile
 * file cannot exhaust the stack. */
#define JSON_MAX_DEPTH 16

void bp__json_init(bp__json_t *in, const char *text, size_t len) {
  in->p = in->begin = text;
  in->end = text + len;
  in->err = NULL;
}

bool bp__json_fail(bp__json_t *in, const char *what) {
  if (!in->err) in->err = what;
  return false;
}

void bp__json_space(bp__json_t *in) {
  while (in->p < in->end && (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r'))
    in->p++;
}

bool bp__json_expect(bp__json_t *in, char c) {
  bp__json_space(in);
  if (in->p < in->end && *in->p == c) {
    in->p++;
    return true;
  }
  return false;
}

bool bp__json_at_end(bp__json_t *in) {
  bp__json_space(in);
  return in->p == in->end;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool read_hex4(bp__json_t *in, unsigned *out) {
  if (in->end - in->p < 4) return bp__json_fail(in, "truncated \\u escape");
  *out = 0;
  for (int i = 0; i < 4; i++) {
    int v = hexval(*in->p++);
    if (v < 0) return bp__json_fail(in, "bad \\u escape");
    *out = *out << 4 | (unsigned)v;
  }
  return true;
}

/* A \uXXXX escape (and its low surrogate) as a code point; no NUL. */
static bool read_codepoint(bp__json_t *in, unsigned *cp) {
  if (!read_hex4(in, cp)) return false;
  if (*cp >= 0xdc00 && *cp <= 0xdfff) return bp__json_fail(in, "lone low surrogate");
  if (*cp >= 0xd800 && *cp <= 0xdbff) {
    unsigned lo;
    if (in->end - in->p < 2 || in->p[0] != '\\' || in->p[1] != 'u')
      return bp__json_fail(in, "lone high surrogate");
    in->p += 2;
    if (!read_hex4(in, &lo)) return false;
    if (lo < 0xdc00 || lo > 0xdfff) return bp__json_fail(in, "bad surrogate pair");
    *cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
  }
  return *cp ? true : bp__json_fail(in, "\\u0000 in a string");
}

/* Appends the UTF-8 form of cp; false when it does not fit. */
static bool put_utf8(char *out, size_t cap, size_t *n, unsigned cp) {
  size_t k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  static const unsigned char lead[5] = {0, 0, 0xc0, 0xe0, 0xf0};
  if (*n + k >= cap) return false;
  for (size_t i = k - 1; i > 0; i--, cp >>= 6) out[*n + i] = (char)(0x80 | (cp & 0x3f));
  out[*n] = (char)(lead[k] | cp);
  *n += k;
  return true;
}

/* One escape after the backslash. */
static bool read_escape(bp__json_t *in, char *out, size_t cap, size_t *n) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  if (in->p >= in->end) return bp__json_fail(in, "truncated string");
  char c = *in->p++;
  unsigned cp;
  const char *k = strchr(from, c);
  if (c && k)
    cp = (unsigned char)to[k - from];
  else if (c != 'u')
    return bp__json_fail(in, "bad escape");
  else if (!read_codepoint(in, &cp))
    return false;
  return put_utf8(out, cap, n, cp) || bp__json_fail(in, "string too long");
}

bool bp__json_string(bp__json_t *in, char *out, size_t cap) {
  if (!bp__json_expect(in, '"')) return bp__json_fail(in, "expected a string");
  size_t n = 0;
  while (in->p < in->end && *in->p != '"') {
    unsigned char c = (unsigned char)*in->p++;
    if (c < 0x20) return bp__json_fail(in, "control character in a string");
    if (c == '\\') {
      if (!read_escape(in, out, cap, &n)) return false;
    } else if (n + 1 >= cap) {
      return bp__json_fail(in, "string too long");
    } else {
      out[n++] = (char)c;
    }
  }
  if (in->p >= in->end) return bp__json_fail(in, "unterminated string");
  in->p++;
  out[n] = '\0';
  return true;
}

bool bp__json_integer(bp__json_t *in, long *out) {
  bp__json_space(in);
  *out = 0;
  const char *start = in->p;
  while (in->p < in->end && *in->p >= '0' && *in->p <= '9' && *out < 1000000)
    *out = *out * 10 + (*in->p++ - '0');
  if (in->p == start || (in->p - start > 1 && *start == '0') ||
      (in->p < in->end && (*in->p >= '0' && *in->p <= '9')))
    return bp__json_fail(in, "expected a small non-negative integer");
  return true;
}

bool bp__json_object(bp__json_t *in, bool (*member)(bp__json_t *, const char *, void *),
                     void *arg) {
  char name[64];
  if (!bp__json_expect(in, '{')) return bp__json_fail(in, "expected an object");
  if (bp__json_expect(in, '}')) return true;
  do {
    if (!bp__json_string(in, name, sizeof name)) return false;
    if (!bp__json_expect(in, ':')) return bp__json_fail(in, "expected ':'");
    if (!member(in, name, arg)) return false;
  } while (bp__json_expect(in, ','));
  return bp__json_expect(in, '}') || bp__json_fail(in, "expected ',' or '}'");
}

bool bp__json_array(bp__json_t *in, bool (*item)(bp__json_t *, unsigned, void *), void *arg) {
  if (!bp__json_expect(in, '[')) return bp__json_fail(in, "expected an array");
  if (bp__json_expect(in, ']')) return true;
  unsigned i = 0;
  do {
    if (!item(in, i++, arg)) return false;
  } while (bp__json_expect(in, ','));
  return bp__json_expect(in, ']') || bp__json_fail(in, "expected ',' or ']'");
}

/* A number by the JSON grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool skip_number(bp__json_t *in) {
  const char *p = in->p, *e = in->end;
  if (p < e && *p == '-') p++;
  if (p < e && *p == '0')
    p++;
  else if (p < e && *p >= '1' && *p <= '9')
    while (p < e && *p >= '0' && *p <= '9') p++;
  else
    return bp__json_fail(in, "bad number");
  if (p < e && *p == '.') {
    const char *d = ++p;
    while (p < e && *p >= '0' && *p <= '9') p++;
    if (p == d) return bp__json_fail(in, "bad number");
  }
  if (p < e && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < e && (*p == '+' || *p == '-')) p++;
    const char *d = p;
    while (p < e && *p >= '0' && *p <= '9') p++;
    if (p == d) return bp__json_fail(in, "bad number");
  }
  in->p = p;
  return true;
}

static bool skip_literal(bp__json_t *in, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(in->end - in->p) < n || memcmp(in->p, word, n))
    return bp__json_fail(in, "bad literal");
  in->p += n;
  return true;
}

static bool skip_value(bp__json_t *in, int depth);

static bool skip_member(bp__json_t *in, const char *name, void *arg) {
  (void)name;
  return skip_value(in, *(int *)arg);
}

static bool skip_item(bp__json_t *in, unsigned i, void *arg) {
  (void)i;
  return skip_value(in, *(int *)arg);
}

/* Strings are read through a small window: an unknown key's long string is
 * still checked for escapes and control characters, a chunk at a time. */
static bool skip_string(bp__json_t *in) {
  if (!bp__json_expect(in, '"')) return bp__json_fail(in, "expected a string");
  char tmp[8];
  size_t n = 0;
  while (in->p < in->end && *in->p != '"') {
    unsigned char c = (unsigned char)*in->p++;
    if (c < 0x20) return bp__json_fail(in, "control character in a string");
    if (c == '\\' && !read_escape(in, tmp, sizeof tmp, &n)) return false;
    n = 0;
  }
  if (in->p >= in->end) return bp__json_fail(in, "unterminated string");
  in->p++;
  return true;
}

static bool skip_value(bp__json_t *in, int depth) {
  if (depth >= JSON_MAX_DEPTH) return bp__json_fail(in, "nested too deeply");
  int next = depth + 1;
  bp__json_space(in);
  if (in->p >= in->end) return bp__json_fail(in, "expected a value");
  switch (*in->p) {
  case '{':
    return bp__json_object(in, skip_member, &next);
  case '[':
    return bp__json_array(in, skip_item, &next);
  case '"':
    return skip_string(in);
  case 't':
    return skip_literal(in, "true");
  case 'f':
    return skip_literal(in, "false");
  case 'n':
    return skip_literal(in, "null");
  default:
    return skip_number(in);
  }
}

bool bp__json_skip(bp__json_t *in) {
  return skip_value(in, 0);
}
