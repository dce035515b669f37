/*
 * topology.c — what the "cpu" device is made of: packages, cores, cache sizes
 * and NUMA nodes, for its description and for kernels that size their blocks
 * to the caches.
 *
 * hwloc (Debian's libhwloc15) is opened with dlopen, never linked, so the
 * plugin loads on a machine without it; there the cache sizes come from
 * sysconf (glibc reads CPUID) and the core count is the logical CPUs this
 * process may use. Discovery runs once, at init, and is cached: probe only
 * formats what was found. The CPUs of each core (cpu_core_sets) are what
 * the device's worker threads are pinned to.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"

#if __has_include(<hwloc.h>)
#include <hwloc.h>
#define CPU_HAVE_HWLOC_H 1
#endif

#define CPU_HWLOC_LIBRARY "libhwloc.so.15" /* hwloc 2.x's ABI */

/* Where discovery puts the core sets, when asked (cpu_core_sets). */
typedef struct core_sink {
  cpu_set_t allowed; /* the process's affinity mask */
  cpu_set_t *sets;
  unsigned cap, n;
} core_sink_t;

#ifdef CPU_HAVE_HWLOC_H
/* The few hwloc entry points used, all real exports: hwloc's helpers such as
 * hwloc_get_nbobjs_by_type are inline in its header and would bind at link
 * time, which is exactly what dlopen avoids. */
typedef struct hwloc_api {
  void *dl;
  unsigned (*get_api_version)(void);
  int (*topology_init)(hwloc_topology_t *);
  int (*topology_load)(hwloc_topology_t);
  void (*topology_destroy)(hwloc_topology_t);
  int (*get_type_depth)(hwloc_topology_t, hwloc_obj_type_t);
  unsigned (*get_nbobjs_by_depth)(hwloc_topology_t, int);
  hwloc_obj_t (*get_obj_by_depth)(hwloc_topology_t, int, unsigned);
  int (*bitmap_first)(hwloc_const_bitmap_t);
  int (*bitmap_next)(hwloc_const_bitmap_t, int);
} hwloc_api_t;

static bool hwloc_api_open(hwloc_api_t *h) {
  memset(h, 0, sizeof *h);
  h->dl = dlopen(CPU_HWLOC_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!h->dl) return false;
#define SYM(field, name) *(void **)(&h->field) = dlsym(h->dl, name)
  SYM(get_api_version, "hwloc_get_api_version");
  SYM(topology_init, "hwloc_topology_init");
  SYM(topology_load, "hwloc_topology_load");
  SYM(topology_destroy, "hwloc_topology_destroy");
  SYM(get_type_depth, "hwloc_get_type_depth");
  SYM(get_nbobjs_by_depth, "hwloc_get_nbobjs_by_depth");
  SYM(get_obj_by_depth, "hwloc_get_obj_by_depth");
  SYM(bitmap_first, "hwloc_bitmap_first");
  SYM(bitmap_next, "hwloc_bitmap_next");
#undef SYM
  /* hwloc's own rule: the structs we read match only within one major
   * version (the header's and the library's). */
  bool ok = h->get_api_version && h->topology_init && h->topology_load &&
            h->topology_destroy && h->get_type_depth && h->get_nbobjs_by_depth &&
            h->get_obj_by_depth && h->bitmap_first && h->bitmap_next &&
            (h->get_api_version() >> 16) == (HWLOC_API_VERSION >> 16);
  if (!ok) dlclose(h->dl);
  return ok;
}

static unsigned count_of(const hwloc_api_t *h, hwloc_topology_t t, hwloc_obj_type_t type) {
  int depth = h->get_type_depth(t, type);
  /* NUMA nodes live at a virtual (negative) depth the call accepts; only
   * "none" and "several depths" mean there is nothing to count. */
  if (depth == HWLOC_TYPE_DEPTH_UNKNOWN || depth == HWLOC_TYPE_DEPTH_MULTIPLE) return 0;
  return h->get_nbobjs_by_depth(t, depth);
}

/* Size of the first cache object of type, 0 when there is none. */
static uint64_t cache_of(const hwloc_api_t *h, hwloc_topology_t t, hwloc_obj_type_t type) {
  int depth = h->get_type_depth(t, type);
  if (depth < 0) return 0;
  hwloc_obj_t o = h->get_obj_by_depth(t, depth, 0);
  return o && o->attr ? o->attr->cache.size : 0;
}

/* Core sets (see cpu_core_sets) from a loaded topology's core objects:
 * each core's PUs that `allowed` has; cores with none are left out. */
static unsigned core_sets_of(const hwloc_api_t *h, hwloc_topology_t t,
                             const cpu_set_t *allowed, cpu_set_t *sets, unsigned cap) {
  int depth = h->get_type_depth(t, HWLOC_OBJ_CORE);
  unsigned cores = depth >= 0 ? h->get_nbobjs_by_depth(t, depth) : 0, n = 0;
  for (unsigned c = 0; c < cores && n < cap; c++) {
    hwloc_obj_t o = h->get_obj_by_depth(t, depth, c);
    if (!o || !o->cpuset) continue;
    CPU_ZERO(&sets[n]);
    for (int b = h->bitmap_first(o->cpuset); b >= 0 && b < CPU_SETSIZE;
         b = h->bitmap_next(o->cpuset, b))
      if (CPU_ISSET(b, allowed)) CPU_SET(b, &sets[n]);
    if (CPU_COUNT(&sets[n])) n++;
  }
  return n;
}

/* Counts and caches into out and, when sink is given, the core sets: one
 * topology load for both. */
static bool query_hwloc(cpu_topology_t *out, core_sink_t *sink) {
  hwloc_api_t h;
  hwloc_topology_t t;
  bool ok = false;
  if (!hwloc_api_open(&h)) return false;
  if (h.topology_init(&t) != 0) goto out;
  if (h.topology_load(t) == 0) {
    if (sink) sink->n = core_sets_of(&h, t, &sink->allowed, sink->sets, sink->cap);
    out->packages = count_of(&h, t, HWLOC_OBJ_PACKAGE);
    out->cores = count_of(&h, t, HWLOC_OBJ_CORE);
    out->pus = count_of(&h, t, HWLOC_OBJ_PU);
    out->numa_nodes = count_of(&h, t, HWLOC_OBJ_NUMANODE);
    out->l1d = cache_of(&h, t, HWLOC_OBJ_L1CACHE);
    out->l2 = cache_of(&h, t, HWLOC_OBJ_L2CACHE);
    out->l3 = cache_of(&h, t, HWLOC_OBJ_L3CACHE);
    out->from_hwloc = true;
    ok = out->cores > 0;
  }
  h.topology_destroy(t);
out:
  dlclose(h.dl);
  return ok;
}
#else
static bool query_hwloc(cpu_topology_t *out, core_sink_t *sink) {
  (void)out, (void)sink;
  return false; /* built without hwloc.h: sysconf only */
}
#endif

/* Parses a sysfs CPU list ("0-3,8,10-11") into set; false if unreadable. */
static bool read_cpu_list(const char *path, cpu_set_t *set) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char buf[4096];
  bool ok = fgets(buf, sizeof buf, f) != NULL;
  fclose(f);
  CPU_ZERO(set);
  for (char *p = buf; ok && *p && *p != '\n';) {
    char *end;
    long a = strtol(p, &end, 10), b = a;
    if (end == p) return false;
    if (*end == '-') b = strtol(end + 1, &end, 10);
    for (long c = a; c <= b && c < CPU_SETSIZE; c++) CPU_SET((int)c, set);
    p = *end == ',' ? end + 1 : end;
  }
  return ok && CPU_COUNT(set) > 0;
}

/* Core sets from sysfs: each allowed CPU's core siblings, once per core;
 * one set per allowed CPU when sysfs says nothing. */
static unsigned core_sets_sysfs(const cpu_set_t *allowed, cpu_set_t *sets, unsigned cap) {
  unsigned n = 0;
  cpu_set_t seen;
  CPU_ZERO(&seen);
  for (int c = 0; c < CPU_SETSIZE && n < cap; c++) {
    if (!CPU_ISSET(c, allowed) || CPU_ISSET(c, &seen)) continue;
    char path[96];
    cpu_set_t core;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/core_cpus_list", c);
    if (!read_cpu_list(path, &core)) {
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
      if (!read_cpu_list(path, &core)) {
        CPU_ZERO(&core);
        CPU_SET(c, &core);
      }
    }
    CPU_AND(&sets[n], &core, allowed);
    CPU_OR(&seen, &seen, &core);
    if (CPU_COUNT(&sets[n])) n++;
  }
  return n;
}

static uint64_t sysconf_bytes(int name) {
  long v = sysconf(name);
  return v > 0 ? (uint64_t)v : 0;
}

static void query_sysconf(cpu_topology_t *out) {
  cpu_set_t set;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  out->pus = sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set)
             : online > 0                               ? (unsigned)online
                                                        : 1;
  out->l1d = sysconf_bytes(_SC_LEVEL1_DCACHE_SIZE);
  out->l2 = sysconf_bytes(_SC_LEVEL2_CACHE_SIZE);
  out->l3 = sysconf_bytes(_SC_LEVEL3_CACHE_SIZE);
}

static bool query(bool use_hwloc, cpu_topology_t *out, core_sink_t *sink) {
  memset(out, 0, sizeof *out);
  if (use_hwloc && query_hwloc(out, sink)) {
    /* A VM may hide the caches from hwloc's sysfs view; CPUID still knows. */
    cpu_topology_t sc;
    query_sysconf(&sc);
    out->l1d = out->l1d ? out->l1d : sc.l1d;
    out->l2 = out->l2 ? out->l2 : sc.l2;
    out->l3 = out->l3 ? out->l3 : sc.l3;
    return true;
  }
  memset(out, 0, sizeof *out);
  query_sysconf(out);
  return false;
}

bool cpu_topology_query(bool use_hwloc, cpu_topology_t *out) {
  return query(use_hwloc, out, NULL);
}

#define CPU_MAX_CORE_SETS 1024
static cpu_topology_t topology;
static cpu_set_t core_sets[CPU_MAX_CORE_SETS];
static unsigned n_core_sets;
static pthread_once_t topology_once = PTHREAD_ONCE_INIT;

/* The topology and the core sets, from one hwloc load (sysfs for the sets
 * when hwloc gave none). */
static void topology_discover(void) {
  core_sink_t sink = {.sets = core_sets, .cap = CPU_MAX_CORE_SETS};
  bool affinity = sched_getaffinity(0, sizeof sink.allowed, &sink.allowed) == 0;
  query(true, &topology, affinity ? &sink : NULL);
  n_core_sets = sink.n;
  if (affinity && !n_core_sets)
    n_core_sets = core_sets_sysfs(&sink.allowed, core_sets, CPU_MAX_CORE_SETS);
}

unsigned cpu_core_sets(const cpu_set_t **out) {
  pthread_once(&topology_once, topology_discover);
  *out = core_sets;
  return n_core_sets;
}

const cpu_topology_t *cpu_topology_get(void) {
  pthread_once(&topology_once, topology_discover);
  return &topology;
}

void cpu_cache_sizes(uint64_t *out_l1d, uint64_t *out_l2, uint64_t *out_l3) {
  const cpu_topology_t *t = cpu_topology_get();
  if (out_l1d) *out_l1d = t->l1d;
  if (out_l2) *out_l2 = t->l2;
  if (out_l3) *out_l3 = t->l3;
}

/* "32 KiB", "1.25 MiB", "32 MiB". */
static void format_size(uint64_t bytes, char *out, size_t cap) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, u++;
  if (v == (double)(uint64_t)v) snprintf(out, cap, "%llu %s", (unsigned long long)v, unit[u]);
  else snprintf(out, cap, "%.2g %s", v, unit[u]);
}

/* Appends text, after ", " unless it is the first item. */
static void append(char *buf, size_t cap, const char *text) {
  size_t len = strlen(buf);
  snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", text);
}

static void append_count(char *buf, size_t cap, unsigned n, const char *noun) {
  char text[64];
  snprintf(text, sizeof text, "%u %s%s", n, noun, n == 1 ? "" : "s");
  append(buf, cap, text);
}

void cpu_topology_describe(const cpu_topology_t *t, char *buf, size_t cap) {
  static const char *const names[3] = {"L1d", "L2", "L3"};
  const uint64_t sizes[3] = {t->l1d, t->l2, t->l3};
  char size[32], text[48];
  if (!cap) return;
  buf[0] = '\0';
  if (t->packages) append_count(buf, cap, t->packages, "package");
  if (t->from_hwloc) append_count(buf, cap, t->cores, "core");
  else append_count(buf, cap, t->pus, "logical CPU");
  for (int i = 0; i < 3; i++) {
    if (!sizes[i]) continue;
    format_size(sizes[i], size, sizeof size);
    snprintf(text, sizeof text, "%s %s", names[i], size);
    append(buf, cap, text);
  }
  if (t->numa_nodes) append_count(buf, cap, t->numa_nodes, "NUMA node");
}
