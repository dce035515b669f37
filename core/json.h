/*
 * json.h — the core's one JSON reader (json.c): a small, strict, bounded
 * pull reader for the files the core reads itself (the autotuning cache,
 * plugin manifests). No allocation, no recursion beyond a fixed depth, the
 * first error kept with its offset. Internal to libbackplane.
 */
#ifndef BACKPLANE_JSON_H
#define BACKPLANE_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bp__json {
  const char *p, *begin, *end;
  const char *err; /* first error, NULL while fine */
} bp__json_t;

/* Starts reading len bytes of text. */
void bp__json_init(bp__json_t *in, const char *text, size_t len);
/* Records what (the first error only) and returns false. */
bool bp__json_fail(bp__json_t *in, const char *what);
void bp__json_space(bp__json_t *in);
/* Skips space, then consumes c; false (no error recorded) when c is not next. */
bool bp__json_expect(bp__json_t *in, char c);
/* A string of fewer than cap bytes, unescaped to UTF-8, into out; "\u0000"
 * and control characters are refused. */
bool bp__json_string(bp__json_t *in, char *out, size_t cap);
/* A non-negative integer below 1000000 without leading zeros. */
bool bp__json_integer(bp__json_t *in, long *out);
/* Calls member(in, name, arg) for each member of an object, in order; the
 * member reads the value. Names longer than 63 bytes fail. */
bool bp__json_object(bp__json_t *in, bool (*member)(bp__json_t *, const char *, void *), void *arg);
/* Calls item(in, index, arg) for each element of an array; the item reads it. */
bool bp__json_array(bp__json_t *in, bool (*item)(bp__json_t *, unsigned, void *), void *arg);
/* Reads and discards any one value (an unknown key's), at most a fixed
 * nesting depth deep. */
bool bp__json_skip(bp__json_t *in);
/* True when only space is left. */
bool bp__json_at_end(bp__json_t *in);

#endif /* BACKPLANE_JSON_H */
