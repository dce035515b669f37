/*
 * test_group_cache.h — tuning-cache helpers for test_group: the group's
 * shares come from calibration times kept in the cache, so the tests plant
 * known times or read what calibration stored.
 */
#ifndef TEST_GROUP_CACHE_H
#define TEST_GROUP_CACHE_H

#include <stddef.h>

#include "backplane.h"

/* Points the tuning cache (BACKPLANE_TUNING_CACHE) at dir/name, whose path
 * goes to path. */
void gc_use_cache(const char *dir, const char *name, char *path, size_t size);
/* Writes a tuning cache dir/file in which each of the n named devices takes
 * ms for every calibration problem, so the shares are known in advance. */
void gc_plant_times(bp_context_t *ctx, const char *dir, const char *file, const char *const *devices, int n,
                    double ms);
/* The file's text (at most 1 MiB), NULL when it cannot be read; free it. */
char *gc_slurp(const char *path);

#endif
