/*
 * env.h — the environment switches and diagnostics of the CPU shims,
 * written once (each shim reads its own variables, at each call, so one
 * test binary can vary them).
 */
#ifndef BP_SHIM_ENV_H
#define BP_SHIM_ENV_H

#include <stdarg.h>
#include <stdbool.h>

/* True when the comma-separated list in variable var names what. */
bool shim_env_has(const char *var, const char *what);
/* The integer in variable name (any base strtol reads), else dflt. */
long shim_env_long(const char *name, long dflt);
/* Prints "<who>: <message>" on stderr: a plugin bug a shim caught, shown
 * next to the failing test. */
void shim_vreport(const char *who, const char *fmt, va_list ap);

#endif /* BP_SHIM_ENV_H */
