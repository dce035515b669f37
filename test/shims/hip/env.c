/*
 * env.c — the environment switches shared by both HIP shims.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/shims/common/env.h"
#include "test/shims/hip/shim.h"

void shim_report(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  shim_vreport("hip-shim", fmt, ap);
  va_end(ap);
}

bool shim_hip_fail(const char *what) {
  return shim_env_has("BP_HIP_SHIM_FAIL", what);
}
