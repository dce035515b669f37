/*
 * json_doc.c — bp's JSON through json-c: value constructors that make every
 * string valid UTF-8 and every number valid JSON, the layout writer, and the
 * reading helpers. See json_doc.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json_doc.h"

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 when there is none.
 * Stops at the terminating NUL, which is never a continuation byte. */
static size_t utf8_sequence(const unsigned char *p) {
  unsigned c = p[0], lo = 0x80, hi = 0xBF;
  size_t n;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c == 0xED) n = 3, hi = 0x9F;
  else if (c >= 0xE1 && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F;
  else return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  for (size_t i = 2; i < n; i++)
    if ((p[i] & 0xC0) != 0x80) return 0;
  return n;
}

/* A copy of s with each byte that starts no well-formed sequence replaced
 * by U+FFFD (EF BF BD), the way a UTF-8 decoder reports it. */
static char *utf8_repaired(const char *s) {
  char *out = malloc(3 * strlen(s) + 1), *w = out;
  if (!out) return NULL;
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t n = utf8_sequence(p);
    if (n) {
      memcpy(w, p, n);
      w += n, p += n;
    } else {
      memcpy(w, "\xEF\xBF\xBD", 3);
      w += 3, p++;
    }
  }
  *w = '\0';
  return out;
}

json_object *bpt_json_str(const char *s) {
  if (!s) return NULL;
  const unsigned char *p = (const unsigned char *)s;
  size_t n;
  while (*p && (n = utf8_sequence(p))) p += n;
  if (!*p) return json_object_new_string(s);
  char *fixed = utf8_repaired(s);
  json_object *v = json_object_new_string(fixed ? fixed : "\xEF\xBF\xBD");
  free(fixed);
  return v;
}

json_object *bpt_json_num(double v, const char *fmt) {
  /* JSON has no NaN or infinity: "no figure" is null, which every reader
   * of bp's reports (Python's json, json-c, jq) takes. */
  if (!isfinite(v)) return NULL;
  char text[64];
  snprintf(text, sizeof text, fmt, v);
  return json_object_new_double_s(v, text);
}

json_object *bpt_json_int(int64_t v) { return json_object_new_int64(v); }

json_object *bpt_json_bool(bool v) { return json_object_new_boolean(v); }

void bpt_json_set(json_object *obj, const char *key, json_object *v) {
  json_object_object_add(obj, key, v);
}

void bpt_json_push(json_object *arr, json_object *v) { json_object_array_add(arr, v); }

/* ---------------------------------------------------------------------------
 * The layout writer.
 */
typedef struct layout {
  FILE *f;
  const char *const *broken;
} layout_t;

/* Slashes stay as they are: paths are easier to read and valid either way. */
#define SCALAR_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static bool is_broken(const layout_t *l, const char *key) {
  for (const char *const *k = l->broken; k && *k; k++)
    if (!strcmp(*k, key)) return true;
  return false;
}

static bool is_container(json_object *v) {
  return json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array);
}

static void indent(const layout_t *l, int n) { fprintf(l->f, "%*s", n, ""); }

static void write_key(const layout_t *l, const char *key) {
  json_object *k = json_object_new_string(key);
  fprintf(l->f, "%s: ", json_object_to_json_string_ext(k, SCALAR_FLAGS));
  json_object_put(k);
}

static void write_value(const layout_t *l, json_object *v, int at, bool broken);

/* [ a, b ] one element per line at at + 2, or inline. */
static void write_array(const layout_t *l, json_object *v, int at, bool broken) {
  size_t n = json_object_array_length(v);
  fputc('[', l->f);
  for (size_t i = 0; i < n; i++) {
    if (broken) {
      fputs(i ? ",\n" : "\n", l->f);
      indent(l, at + 2);
    } else if (i)
      fputs(", ", l->f);
    write_value(l, json_object_array_get_idx(v, i), broken ? at + 2 : at, false);
  }
  if (broken) {
    fputc('\n', l->f);
    indent(l, at);
  }
  fputc(']', l->f);
}

/* {"k": v} one member per line at at + 2, or inline; an inline object's
 * broken member starts a line of its own at at + 1. */
static void write_object(const layout_t *l, json_object *v, int at, bool broken) {
  struct json_object_iterator it = json_object_iter_begin(v), end = json_object_iter_end(v);
  fputc('{', l->f);
  for (bool first = true; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
    const char *key = json_object_iter_peek_name(&it);
    json_object *val = json_object_iter_peek_value(&it);
    bool child_broken = is_container(val) && is_broken(l, key);
    int child_at = at;
    if (broken) {
      fputs(first ? "\n" : ",\n", l->f);
      indent(l, child_at = at + 2);
    } else if (child_broken) {
      fputs(first ? "\n" : ",\n", l->f);
      indent(l, child_at = at + 1);
    } else if (!first)
      fputs(", ", l->f);
    write_key(l, key);
    write_value(l, val, child_at, child_broken);
    first = false;
  }
  if (broken) {
    fputc('\n', l->f);
    indent(l, at);
  }
  fputc('}', l->f);
}

static void write_value(const layout_t *l, json_object *v, int at, bool broken) {
  if (json_object_is_type(v, json_type_array))
    write_array(l, v, at, broken);
  else if (json_object_is_type(v, json_type_object))
    write_object(l, v, at, broken);
  else
    fputs(json_object_to_json_string_ext(v, SCALAR_FLAGS), l->f);
}

bool bpt_json_write(FILE *f, json_object *doc, const char *const *broken) {
  layout_t l = {f, broken};
  write_value(&l, doc, 0, is_container(doc));
  fputc('\n', f);
  return !ferror(f);
}

bool bpt_json_write_path(const char *sub, const char *path, json_object *doc,
                         const char *const *broken) {
  bool to_stdout = !strcmp(path, "-");
  FILE *f = to_stdout ? stdout : fopen(path, "w");
  bool ok = f != NULL;
  if (f) {
    ok = bpt_json_write(f, doc, broken);
    ok = (to_stdout ? fflush(f) : fclose(f)) == 0 && ok;
  }
  if (!ok) fprintf(stderr, "bp %s: cannot write %s\n", sub, path);
  json_object_put(doc);
  return ok;
}

/* ---------------------------------------------------------------------------
 * Reading.
 */
json_object *bpt_json_parse(const char *text) { return json_tokener_parse(text); }

double bpt_json_get_num(json_object *obj, const char *key, double fallback) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v)) return fallback;
  if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
    return fallback;
  return json_object_get_double(v);
}

const char *bpt_json_get_str(json_object *obj, const char *key) {
  json_object *v;
  if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
    return NULL;
  return json_object_get_string(v);
}

bool bpt_json_get_bool(json_object *obj, const char *key) {
  json_object *v;
  return json_object_object_get_ex(obj, key, &v) && json_object_is_type(v, json_type_boolean) &&
         json_object_get_boolean(v);
}
