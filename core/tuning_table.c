/*
 * tuning_table.c — the autotuning cache's table of (key, value) strings and
 * the strict reader for its JSON file (the schema in tuning.c), on the
 * core's one JSON reader (json.c). Any
 * deviation from the schema fails the whole parse: the caller then treats
 * the file as untrusted.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "json.h"
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

typedef struct entry_fields {
  char buf[F_COUNT][BP_TUNE_VALUE_MAX];
  unsigned seen; /* bit per field */
} entry_fields_t;

static bool entry_member(bp__json_t *in, const char *name, void *arg) {
  entry_fields_t *ef = arg;
  for (int i = 0; i < F_COUNT; i++) {
    if (strcmp(name, tune_field_names[i])) continue;
    if (ef->seen & (1u << i)) return bp__json_fail(in, "duplicate member in an entry");
    ef->seen |= 1u << i;
    return bp__json_string(in, ef->buf[i], i == F_VALUE ? BP_TUNE_VALUE_MAX : BP_TUNE_FIELD_MAX);
  }
  return bp__json_fail(in, "unknown member in an entry");
}

static bool jentries(bp__json_t *in, tune_table_t *t) {
  if (!bp__json_expect(in, '[')) return bp__json_fail(in, "\"entries\" is not an array");
  if (bp__json_expect(in, ']')) return true;
  entry_fields_t *ef = malloc(sizeof *ef);
  if (!ef) return bp__json_fail(in, "out of memory");
  bool ok;
  do {
    ef->seen = 0;
    const char *f[F_COUNT];
    ok = bp__json_object(in, entry_member, ef);
    if (ok && ef->seen != (1u << F_COUNT) - 1) ok = bp__json_fail(in, "entry lacks a member");
    for (int i = 0; ok && i < F_COUNT; i++) f[i] = ef->buf[i];
    if (ok && !tune_table_upsert(t, f)) ok = bp__json_fail(in, "out of memory");
  } while (ok && bp__json_expect(in, ','));
  free(ef);
  return ok && (bp__json_expect(in, ']') || bp__json_fail(in, "expected ',' or ']'"));
}

typedef struct top_state {
  tune_table_t *t;
  long version; /* -1 until read */
  bool entries;
} top_state_t;

static bool top_member(bp__json_t *in, const char *name, void *arg) {
  top_state_t *st = arg;
  if (!strcmp(name, "version")) {
    if (st->version >= 0) return bp__json_fail(in, "duplicate \"version\"");
    if (!bp__json_integer(in, &st->version)) return false;
    /* A newer format may change everything after this: stop here. */
    return st->version == TUNE_FORMAT_VERSION || bp__json_fail(in, "newer");
  }
  if (!strcmp(name, "entries")) {
    if (st->entries) return bp__json_fail(in, "duplicate \"entries\"");
    st->entries = true;
    return jentries(in, st->t);
  }
  return bp__json_fail(in, "unknown top-level member");
}

parse_result_t tune_parse(const char *text, size_t len, tune_table_t *t,
                          const char **why, size_t *at) {
  bp__json_t in;
  bp__json_init(&in, text, len);
  top_state_t st = {.t = t, .version = -1};
  bool ok = bp__json_object(&in, top_member, &st);
  if (ok && (st.version < 0 || !st.entries)) ok = bp__json_fail(&in, "missing \"version\" or \"entries\"");
  bp__json_space(&in);
  if (ok && in.p != in.end) ok = bp__json_fail(&in, "text after the object");
  if (ok) return PARSE_OK;
  if (st.version > TUNE_FORMAT_VERSION) return PARSE_NEWER;
  *why = in.err ? in.err : "malformed";
  *at = (size_t)(in.p - in.begin);
  return PARSE_BAD;
}
