/*
 * env.c — see env.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/shims/common/env.h"

bool shim_env_has(const char *var, const char *what) {
  const char *f = getenv(var);
  if (!f)
    return false;
  size_t n = strlen(what);
  for (const char *p = f; (p = strstr(p, what)); p += n)
    if ((p == f || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
      return true;
  return false;
}

long shim_env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 0) : dflt;
}

void shim_vreport(const char *who, const char *fmt, va_list ap) {
  fprintf(stderr, "%s: ", who);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
}

int shim_env_devices(const char *var, int max) {
  long n = shim_env_long(var, 1);
  return n < 0 ? 0 : n > max ? max : (int)n;
}

const shim_error_t *shim_error_find(const shim_error_t *table, size_t count,
                                    int code) {
  for (size_t i = 0; i < count; i++)
    if (table[i].code == code)
      return &table[i];
  return NULL;
}
