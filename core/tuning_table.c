/*
 * tuning_table.c — the autotuning cache's table of (key, value) strings and
 * the strict reader for its JSON file (the schema in tuning.c). Any
 * deviation from the schema fails the whole parse: the caller then treats
 * the file as untrusted.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tuning_table.h"

const char *const tune_field_names[F_COUNT] = {
    "plugin", "plugin_version", "device", "driver_version",
    "op",     "dtype",          "bucket", "value"};

/* ---- the table -------------------------------------------------------------*/

uint64_t tune_key_hash(const char *const *f) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a, fields separated by NUL */
  for (int i = 0; i < F_KEYS; i++)
    for (const char *c = f[i];; c++) {
      h = (h ^ (unsigned char)*c) * 1099511628211ull;
      if (!*c) break;
    }
  return h;
}

tune_entry_t *tune_table_find(tune_table_t *t, const char *const *f, uint64_t h) {
  for (size_t i = 0; i < t->n; i++) {
    tune_entry_t *e = &t->e[i];
    if (e->hash != h) continue;
    int k = 0;
    while (k < F_KEYS && !strcmp(e->f[k], f[k])) k++;
    if (k == F_KEYS) return e;
  }
  return NULL;
}

void tune_table_clear(tune_table_t *t) {
  for (size_t i = 0; i < t->n; i++) free(t->e[i].f[0]);
  free(t->e);
  memset(t, 0, sizeof *t);
}

bool tune_table_upsert(tune_table_t *t, const char *const *f) {
  size_t len[F_COUNT], total = 0;
  for (int i = 0; i < F_COUNT; i++) total += (len[i] = strlen(f[i])) + 1;
  char *block = malloc(total);
  if (!block) return false;
  uint64_t h = tune_key_hash(f);
  tune_entry_t *e = tune_table_find(t, f, h);
  if (!e) {
    if (t->n == t->cap) {
      size_t ncap = t->cap ? 2 * t->cap : 16;
      tune_entry_t *ne = realloc(t->e, ncap * sizeof *ne);
      if (!ne) {
        free(block);
        return false;
      }
      t->e = ne;
      t->cap = ncap;
    }
    e = &t->e[t->n++];
  } else {
    free(e->f[0]);
  }
  e->hash = h;
  for (int i = 0; i < F_COUNT; i++) {
    e->f[i] = memcpy(block, f[i], len[i] + 1);
    block += len[i] + 1;
  }
  return true;
}

/* ---- the strict reader -----------------------------------------------------*/

typedef struct json_in {
  const char *p, *begin, *end;
  const char *err; /* first error, NULL while fine */
} json_in_t;

static bool jfail(json_in_t *in, const char *what) {
  if (!in->err) in->err = what;
  return false;
}

static void jspace(json_in_t *in) {
  while (in->p < in->end && (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r'))
    in->p++;
}

/* Skips space, then consumes c. */
static bool jexpect(json_in_t *in, char c) {
  jspace(in);
  if (in->p < in->end && *in->p == c) {
    in->p++;
    return true;
  }
  return false;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool read_hex4(json_in_t *in, unsigned *out) {
  if (in->end - in->p < 4) return jfail(in, "truncated \\u escape");
  *out = 0;
  for (int i = 0; i < 4; i++) {
    int v = hexval(*in->p++);
    if (v < 0) return jfail(in, "bad \\u escape");
    *out = *out << 4 | (unsigned)v;
  }
  return true;
}

/* A \uXXXX escape (and its low surrogate) as a code point; no NUL. */
static bool read_codepoint(json_in_t *in, unsigned *cp) {
  if (!read_hex4(in, cp)) return false;
  if (*cp >= 0xdc00 && *cp <= 0xdfff) return jfail(in, "lone low surrogate");
  if (*cp >= 0xd800 && *cp <= 0xdbff) {
    unsigned lo;
    if (in->end - in->p < 2 || in->p[0] != '\\' || in->p[1] != 'u')
      return jfail(in, "lone high surrogate");
    in->p += 2;
    if (!read_hex4(in, &lo)) return false;
    if (lo < 0xdc00 || lo > 0xdfff) return jfail(in, "bad surrogate pair");
    *cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
  }
  return *cp ? true : jfail(in, "\\u0000 in a string");
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
static bool read_escape(json_in_t *in, char *out, size_t cap, size_t *n) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  if (in->p >= in->end) return jfail(in, "truncated string");
  char c = *in->p++;
  unsigned cp;
  const char *k = strchr(from, c);
  if (c && k) cp = (unsigned char)to[k - from];
  else if (c != 'u') return jfail(in, "bad escape");
  else if (!read_codepoint(in, &cp)) return false;
  return put_utf8(out, cap, n, cp) || jfail(in, "string too long");
}

/* A string of fewer than cap bytes into out. */
static bool jstring(json_in_t *in, char *out, size_t cap) {
  if (!jexpect(in, '"')) return jfail(in, "expected a string");
  size_t n = 0;
  while (in->p < in->end && *in->p != '"') {
    unsigned char c = (unsigned char)*in->p++;
    if (c < 0x20) return jfail(in, "control character in a string");
    if (c == '\\') {
      if (!read_escape(in, out, cap, &n)) return false;
    } else if (n + 1 >= cap) {
      return jfail(in, "string too long");
    } else {
      out[n++] = (char)c;
    }
  }
  if (in->p >= in->end) return jfail(in, "unterminated string");
  in->p++;
  out[n] = '\0';
  return true;
}

/* A small non-negative integer (the format version). */
static bool jinteger(json_in_t *in, long *out) {
  jspace(in);
  *out = 0;
  const char *start = in->p;
  while (in->p < in->end && *in->p >= '0' && *in->p <= '9' && *out < 1000000)
    *out = *out * 10 + (*in->p++ - '0');
  if (in->p == start || (in->p - start > 1 && *start == '0'))
    return jfail(in, "expected a version number");
  return true;
}

/* Calls member(in, name, arg) for each member of an object. */
static bool jobject(json_in_t *in, bool (*member)(json_in_t *, const char *, void *),
                    void *arg) {
  char name[64];
  if (!jexpect(in, '{')) return jfail(in, "expected an object");
  if (jexpect(in, '}')) return true;
  do {
    if (!jstring(in, name, sizeof name)) return false;
    if (!jexpect(in, ':')) return jfail(in, "expected ':'");
    if (!member(in, name, arg)) return false;
  } while (jexpect(in, ','));
  return jexpect(in, '}') || jfail(in, "expected ',' or '}'");
}

typedef struct entry_fields {
  char buf[F_COUNT][BP_TUNE_VALUE_MAX];
  unsigned seen; /* bit per field */
} entry_fields_t;

static bool entry_member(json_in_t *in, const char *name, void *arg) {
  entry_fields_t *ef = arg;
  for (int i = 0; i < F_COUNT; i++) {
    if (strcmp(name, tune_field_names[i])) continue;
    if (ef->seen & (1u << i)) return jfail(in, "duplicate member in an entry");
    ef->seen |= 1u << i;
    return jstring(in, ef->buf[i], i == F_VALUE ? BP_TUNE_VALUE_MAX : BP_TUNE_FIELD_MAX);
  }
  return jfail(in, "unknown member in an entry");
}

static bool jentries(json_in_t *in, tune_table_t *t) {
  if (!jexpect(in, '[')) return jfail(in, "\"entries\" is not an array");
  if (jexpect(in, ']')) return true;
  entry_fields_t *ef = malloc(sizeof *ef);
  if (!ef) return jfail(in, "out of memory");
  bool ok;
  do {
    ef->seen = 0;
    const char *f[F_COUNT];
    ok = jobject(in, entry_member, ef);
    if (ok && ef->seen != (1u << F_COUNT) - 1) ok = jfail(in, "entry lacks a member");
    for (int i = 0; ok && i < F_COUNT; i++) f[i] = ef->buf[i];
    if (ok && !tune_table_upsert(t, f)) ok = jfail(in, "out of memory");
  } while (ok && jexpect(in, ','));
  free(ef);
  return ok && (jexpect(in, ']') || jfail(in, "expected ',' or ']'"));
}

typedef struct top_state {
  tune_table_t *t;
  long version; /* -1 until read */
  bool entries;
} top_state_t;

static bool top_member(json_in_t *in, const char *name, void *arg) {
  top_state_t *st = arg;
  if (!strcmp(name, "version")) {
    if (st->version >= 0) return jfail(in, "duplicate \"version\"");
    if (!jinteger(in, &st->version)) return false;
    /* A newer format may change everything after this: stop here. */
    return st->version == TUNE_FORMAT_VERSION || jfail(in, "newer");
  }
  if (!strcmp(name, "entries")) {
    if (st->entries) return jfail(in, "duplicate \"entries\"");
    st->entries = true;
    return jentries(in, st->t);
  }
  return jfail(in, "unknown top-level member");
}

parse_result_t tune_parse(const char *text, size_t len, tune_table_t *t,
                          const char **why, size_t *at) {
  json_in_t in = {.p = text, .begin = text, .end = text + len};
  top_state_t st = {.t = t, .version = -1};
  bool ok = jobject(&in, top_member, &st);
  if (ok && (st.version < 0 || !st.entries)) ok = jfail(&in, "missing \"version\" or \"entries\"");
  jspace(&in);
  if (ok && in.p != in.end) ok = jfail(&in, "text after the object");
  if (ok) return PARSE_OK;
  if (st.version > TUNE_FORMAT_VERSION) return PARSE_NEWER;
  *why = in.err ? in.err : "malformed";
  *at = (size_t)(in.p - in.begin);
  return PARSE_BAD;
}
