/*
 * env.h — the environment switches and diagnostics of the CPU shims,
 * written once (each shim reads its own variables, at each call, so one
 * test binary can vary them).
 */
#ifndef BP_SHIM_ENV_H
#define BP_SHIM_ENV_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* True when the comma-separated list in variable var names what. */
bool shim_env_has(const char *var, const char *what);
/* The integer in variable name (any base strtol reads), else dflt. */
long shim_env_long(const char *name, long dflt);
/* The device count in variable var (default 1), clamped to [0, max]. */
int shim_env_devices(const char *var, int max);
/* Prints "<who>: <message>" on stderr: a plugin bug a shim caught, shown
 * next to the failing test. */
void shim_vreport(const char *who, const char *fmt, va_list ap);

/* One driver result code with its name and description, as the driver's
 * error-name and error-string calls give them. */
typedef struct shim_error {
  int code;
  const char *name, *desc;
} shim_error_t;
/* The entry of table (count entries) for code; NULL when it has none. */
const shim_error_t *shim_error_find(const shim_error_t *table, size_t count,
                                    int code);

/* Defines the shim's shim_report (heap.h) as shim_vreport under who
 * ("cuda-shim", "hip-shim"): one line in each shim. */
#define SHIM_DEFINE_REPORT(who)                                                \
  void shim_report(const char *fmt, ...) {                                     \
    va_list ap;                                                                \
    va_start(ap, fmt);                                                         \
    shim_vreport(who, fmt, ap);                                                \
    va_end(ap);                                                                \
  }

#endif /* BP_SHIM_ENV_H */
