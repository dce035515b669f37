/*
 * env.c — the environment switches shared by both HIP shims.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/shims/hip/shim.h"

void shim_report(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hip-shim: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

bool shim_hip_fail(const char *what) {
  const char *f = getenv("BP_HIP_SHIM_FAIL");
  if (!f)
    return false;
  size_t n = strlen(what);
  for (const char *p = f; (p = strstr(p, what)); p += n)
    if ((p == f || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
      return true;
  return false;
}
