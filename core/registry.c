/*
 * registry.c — plugins shared by every context of the process.
 *
 * dlopen returns the same copy of a library however often it is opened, so a
 * plugin's globals are shared by every context that loads it. Its init,
 * probe and shutdown therefore run once per process, not once per context:
 * the first context to load a file (by real path) initialises and probes it,
 * later ones reuse that copy and its device records, and the last one to let
 * go shuts it down (the code stays mapped: see bp__registry_release). One
 * lock serialises loading and unloading, so contexts may be created and
 * destroyed from any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static bp__shared_t *registry;

bool bp__in_isolated_child; /* set in the isolated probe's child process */

void bp__registry_lock(void) { pthread_mutex_lock(&registry_lock); }
void bp__registry_unlock(void) { pthread_mutex_unlock(&registry_lock); }

bp__shared_t *bp__registry_find(const char *real) {
  for (bp__shared_t *s = registry; s; s = s->next)
    if (!strcmp(s->real, real)) return s;
  return NULL;
}

bp__shared_t *bp__registry_add(const char *real, bp__plugin_t *p) {
  bp__shared_t *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  snprintf(s->real, sizeof s->real, "%s", real);
  s->dl = p->dl;
  s->desc = p->desc;
  s->device_count = p->device_count;
  memcpy(s->infos, p->infos, sizeof s->infos);
  s->refs = 1;
  s->next = registry;
  registry = s;
  return s;
}

void bp__registry_share(bp__shared_t *s, bp__plugin_t *p) {
  s->refs++;
  p->shared = s;
  p->dl = s->dl;
  p->desc = s->desc;
  p->device_count = s->device_count;
  memcpy(p->infos, s->infos, sizeof p->infos);
  p->initialised = true;
}

void bp__registry_release(bp__shared_t *s) {
  bp__registry_lock();
  if (--s->refs == 0) {
    for (bp__shared_t **pp = &registry; *pp; pp = &(*pp)->next)
      if (*pp == s) {
        *pp = s->next;
        break;
      }
    /* shutdown tells the plugin to stop its threads and release what it
     * holds; the library then stays mapped for the life of the process and
     * is never dlclosed, so a thread that outlives shutdown, or a callback a
     * driver still holds, runs on mapped code instead of crashing the
     * application. A later context dlopens the same mapping and calls init
     * again (docs/plugin-abi.md, "Unloading"). */
    bp__call_plugin_shutdown(&s->desc);
    free(s);
  }
  bp__registry_unlock();
}
