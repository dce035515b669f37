/*
 * isolate.h — probing plugins away from the host process, and the cache of
 * what those probes found (core/isolate.c, core/probe_cache.c, the bp-probe
 * helper in core/probe/). Internal: nothing here is public.
 *
 * With isolation (the default; see docs/runtime.md "Plugin isolation"), the
 * loader never runs a plugin's constructor or probe in the application
 * before a helper process has done so and survived. The helper's answer is a
 * verdict: the full probe result when the plugin works, the refusal (stage,
 * status, reason) when it does not. Verdicts are cached per plugin file
 * identity, so a warm start spawns nothing.
 */
#ifndef BACKPLANE_ISOLATE_H
#define BACKPLANE_ISOLATE_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "internal.h"

/* What probing one plugin file in a helper process found. */
typedef struct bp__verdict {
  bp_status_t status;            /* BP_OK: the plugin loads; else its refusal */
  bp_plugin_stage_t stage;       /* the stage reached (failed at, when refused) */
  char reason[512];              /* "" when status is BP_OK */
  char name[64], version[64];    /* from the descriptor, "" if never read */
  uint16_t abi_major, abi_minor; /* the plugin's, 0 if never read */
  uint32_t device_count;
  bp_device_info_t infos[BP__MAX_DEVICES_PER_PLUGIN];
  bool cacheable;  /* false for the loader's own failures (spawn, memory) */
  bool from_cache; /* set by bp__probe_verdict on a cache hit */
} bp__verdict_t;

/* True when ctx loads plugins with isolation: always, unless the options
 * ask for in-process probing (in_process_probe) or, with isolate_probe
 * false, BACKPLANE_ISOLATE=0 does. Never in the helper itself. */
bool bp__isolation_wanted(const bp_context_options_t *options);

/* Seconds a probe may take: options->probe_timeout_s, else
 * BACKPLANE_PROBE_TIMEOUT (1 to 3600), else 10. */
uint32_t bp__probe_timeout_s(const bp_context_options_t *options);

/* The verdict on the plugin file at path: from the cache when it holds one
 * for this exact file and environment, else by probing it in a helper
 * process (bp-probe, or a forked child when the helper is missing) that is
 * killed after timeout_s; a cacheable verdict is then stored. Fills
 * *out_verdict and never fails: a failure to probe is itself a refusal. */
void bp__probe_verdict(const char *path, uint32_t timeout_s, bp__verdict_t *out_verdict);

/* Probes path in a helper process and fills *out_verdict (isolate.c). */
void bp__probe_isolated(const char *path, uint32_t timeout_s, bp__verdict_t *out_verdict);

/* Waits until a prober process pid writes its completion byte on rd, dies,
 * or timeout_s passes (then kills it), and reaps it; true on timeout
 * (isolate.c; comm_isolate.c probes comm plugins with it too). */
bool bp__isolate_wait(pid_t pid, int rd, uint32_t timeout_s, bool *out_done, int *out_wstatus);

/* The step a prober was in at a stage, for messages: "init", "probe"... */
const char *bp__isolate_stage_name(bp_plugin_stage_t stage);

/* The bp-probe helper's main (isolate.c): `bp-probe --probe PATH`, with the
 * result channel on fd 3 and the shared result area on fd 4. */
int bp__probe_helper_main(int argc, char **argv);

/* ---- the verdict cache (probe_cache.c) --------------------------------- */

/* A plugin file's identity and the environment its probe ran in. */
typedef struct bp__probe_key {
  char real[1024]; /* real path */
  uint64_t dev, ino, size, mtime_ns;
  uint64_t hash; /* of the file's bytes */
  uint64_t env;  /* of the environment and the system's driver setup */
} bp__probe_key_t;

/* Computes path's key; false when the file cannot be read or the cache is
 * off (BACKPLANE_PROBE_CACHE=off), so nothing is looked up or stored. */
bool bp__probe_cache_key(const char *path, bp__probe_key_t *out_key);
/* Copies the cached verdict for key into *out_verdict; false on a miss. A
 * cached timeout counts only when timeout_s is no longer than the one it
 * was measured with. */
bool bp__probe_cache_lookup(const bp__probe_key_t *key, uint32_t timeout_s,
                            bp__verdict_t *out_verdict);
/* Remembers verdict under key, replacing older entries for the same real
 * path, and rewrites the cache file atomically. Failures are logged only. */
void bp__probe_cache_store(const bp__probe_key_t *key, uint32_t timeout_s,
                           const bp__verdict_t *verdict);

#endif /* BACKPLANE_ISOLATE_H */
