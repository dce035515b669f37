/*
 * tuning_table.h — the autotuning cache's in-memory table and its strict
 * JSON reader (tuning_table.c), shared with the file and API side
 * (tuning.c). Internal to libbackplane.
 */
#ifndef BACKPLANE_TUNING_TABLE_H
#define BACKPLANE_TUNING_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TUNE_FORMAT_VERSION 1

enum { F_PLUGIN, F_PLUGIN_VERSION, F_DEVICE, F_DRIVER, F_OP, F_DTYPE, F_BUCKET,
       F_VALUE, F_COUNT, F_KEYS = F_VALUE };

/* The JSON member name of each field. */
extern const char *const tune_field_names[F_COUNT];

typedef struct tune_entry {
  uint64_t hash;      /* of the key fields: most comparisons stop here */
  char *f[F_COUNT];   /* point into one allocation owned by f[0] */
} tune_entry_t;

typedef struct tune_table {
  tune_entry_t *e;
  size_t n, cap;
} tune_table_t;

/* Hash of f's key fields (FNV-1a). */
uint64_t tune_key_hash(const char *const *f);
/* The entry with f's key (hash h), or NULL. */
tune_entry_t *tune_table_find(tune_table_t *t, const char *const *f, uint64_t h);
void tune_table_clear(tune_table_t *t);
/* Adds or replaces the entry for f's key; false when out of memory. */
bool tune_table_upsert(tune_table_t *t, const char *const *f);

typedef enum parse_result { PARSE_OK, PARSE_BAD, PARSE_NEWER } parse_result_t;

/* Parses a cache file's text into t (entries added) with a parser for
 * exactly the cache's schema; on PARSE_BAD *why and *at say where. */
parse_result_t tune_parse(const char *text, size_t len, tune_table_t *t,
                          const char **why, size_t *at);

#endif /* BACKPLANE_TUNING_TABLE_H */
