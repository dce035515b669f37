/*
 * env.c — the environment switches shared by both HIP shims.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/shims/common/env.h"
#include "test/shims/hip/shim.h"

SHIM_DEFINE_REPORT("hip-shim")

bool shim_hip_fail(const char *what) {
  return shim_env_has("BP_HIP_SHIM_FAIL", what);
}
