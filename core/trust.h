/*
 * trust.h — the plugin trust policy (trust.c): which files and directories
 * the loader may dlopen from. The rules are numbered TRUST-1 ... TRUST-8 in
 * docs/plugin-abi.md (section 13); every refusal reason cites one.
 * Internal to the core; nothing here is public.
 */
#ifndef BACKPLANE_TRUST_H
#define BACKPLANE_TRUST_H

#include <stdbool.h>
#include <stddef.h>

#include "backplane.h"

/* True when the process runs with secure_getenv semantics (AT_SECURE: a
 * setuid or setgid program, or one with file capabilities). In that mode
 * bp__getenv ignores BACKPLANE_PLUGIN_PATH and every other variable, and
 * plugins and their directories must belong to root (rule TRUST-7).
 * Thread-safe. */
bool bp__trust_secure(void);

/* Checks a plugin directory from the search path before any file in it is
 * considered: its real path (symlinks resolved) and every directory above
 * it, up to /, by rules TRUST-4 to TRUST-8. Returns BP_OK when plugins may
 * be loaded from it; otherwise BP_ERR_INCOMPATIBLE with the reason, citing
 * the rule, written to reason (always NUL-terminated). Thread-safe. */
bp_status_t bp__trust_check_dir(const char *dir, char *reason, size_t reason_size);

/* Checks one candidate plugin file before it is opened: resolves path
 * (realpath, so a symlink is judged by what it points at), then applies
 * rules TRUST-1 to TRUST-8 to the file and to every directory from its real
 * parent up to /. Returns BP_OK when the file may be dlopened; otherwise
 * BP_ERR_INCOMPATIBLE with the reason, citing the rule, in reason.
 * Thread-safe. */
bp_status_t bp__trust_check_file(const char *path, char *reason, size_t reason_size);

#endif /* BACKPLANE_TRUST_H */
