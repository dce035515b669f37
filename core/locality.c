/*
 * locality.c — which NUMA node, and which CPUs, a PCI device hangs off.
 *
 * A GPU's host memory and the threads that feed it belong on the node its
 * PCI root port is attached to. hwloc knows: its topology with I/O objects
 * holds every PCI device under the CPU-side object it is local to. hwloc
 * (Debian's libhwloc15) is opened with dlopen, never linked, as in the CPU
 * plugin's topology.c, so the library loads on a machine without it; there
 * every device's locality is simply unknown (-1).
 *
 * The topology is loaded once per process, only when some device has a PCI
 * identity ("pci:DDDD:BB:DD.F"), since loading it with I/O objects costs
 * tens of milliseconds.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#if __has_include(<hwloc.h>)
#include <hwloc.h>
#define BP_HAVE_HWLOC_H 1
#endif

#ifdef BP_HAVE_HWLOC_H
/* The few real exports used: hwloc's helpers (hwloc_get_pcidev_by_busid and
 * friends) are inline in its header and would bind at link time. */
typedef struct locality_hwloc {
  unsigned (*get_api_version)(void);
  int (*topology_init)(hwloc_topology_t *);
  int (*set_io_types_filter)(hwloc_topology_t, enum hwloc_type_filter_e);
  int (*topology_load)(hwloc_topology_t);
  unsigned (*get_nbobjs_by_depth)(hwloc_topology_t, int);
  hwloc_obj_t (*get_obj_by_depth)(hwloc_topology_t, int, unsigned);
  int (*bitmap_first)(hwloc_const_bitmap_t);
  int (*bitmap_list_snprintf)(char *, size_t, hwloc_const_bitmap_t);
} locality_hwloc_t;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static locality_hwloc_t api;
static hwloc_topology_t topology; /* kept for the process's life */

static void topology_open(void) {
  void *dl = dlopen("libhwloc.so.15", RTLD_NOW | RTLD_LOCAL);
  if (!dl) return;
#define SYM(field, name) *(void **)(&api.field) = dlsym(dl, name)
  SYM(get_api_version, "hwloc_get_api_version");
  SYM(topology_init, "hwloc_topology_init");
  SYM(set_io_types_filter, "hwloc_topology_set_io_types_filter");
  SYM(topology_load, "hwloc_topology_load");
  SYM(get_nbobjs_by_depth, "hwloc_get_nbobjs_by_depth");
  SYM(get_obj_by_depth, "hwloc_get_obj_by_depth");
  SYM(bitmap_first, "hwloc_bitmap_first");
  SYM(bitmap_list_snprintf, "hwloc_bitmap_list_snprintf");
#undef SYM
  /* The structs read here match only within one hwloc major version. */
  bool ok = api.get_api_version && api.topology_init && api.set_io_types_filter && api.topology_load &&
            api.get_nbobjs_by_depth && api.get_obj_by_depth && api.bitmap_first && api.bitmap_list_snprintf &&
            (api.get_api_version() >> 16) == (HWLOC_API_VERSION >> 16);
  hwloc_topology_t t = NULL;
  if (ok && api.topology_init(&t) == 0 && api.set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL) == 0 &&
      api.topology_load(t) == 0) {
    topology = t;
    return;
  }
  /* A half-made topology and the library stay mapped: hwloc may have
   * registered state, and this runs once per process. */
  bp__log(BP_LOG_INFO, BP__LOG_LOADER, "hwloc could not load the PCI topology; device locality unknown");
}

/* The PCI device object at domain:bus:dev.fn, or NULL. */
static hwloc_obj_t find_pci(unsigned domain, unsigned bus, unsigned dev, unsigned fn) {
  unsigned n = api.get_nbobjs_by_depth(topology, HWLOC_TYPE_DEPTH_PCI_DEVICE);
  for (unsigned i = 0; i < n; i++) {
    hwloc_obj_t o = api.get_obj_by_depth(topology, HWLOC_TYPE_DEPTH_PCI_DEVICE, i);
    if (o && o->attr && o->attr->pcidev.domain == domain && o->attr->pcidev.bus == bus &&
        o->attr->pcidev.dev == dev && o->attr->pcidev.func == fn)
      return o;
  }
  return NULL;
}
#endif

/* Exactly "pci:DDDD:BB:DD.F" in hex digits, the form plugins report. */
static bool pci_identity_valid(const char *id) {
  static const char form[] = "pci:xxxx:xx:xx.x";
  if (!id || strlen(id) != sizeof form - 1) return false;
  for (size_t i = 0; i < sizeof form - 1; i++)
    if (form[i] == 'x' ? !isxdigit((unsigned char)id[i]) : id[i] != form[i]) return false;
  return true;
}

bool bp__pci_locality(const char *identity, int32_t *out_numa_node, char *out_cpus, size_t cpus_size) {
  *out_numa_node = -1;
  if (cpus_size) out_cpus[0] = 0;
  unsigned domain, bus, dev, fn;
  if (!pci_identity_valid(identity) || sscanf(identity, "pci:%4x:%2x:%2x.%1x", &domain, &bus, &dev, &fn) != 4)
    return false;
#ifdef BP_HAVE_HWLOC_H
  pthread_once(&once, topology_open);
  if (!topology) return false;
  hwloc_obj_t o = find_pci(domain, bus, dev, fn);
  /* I/O objects have no cpuset of their own: the first ancestor that does
   * is the CPU-side object (package, NUMA node's parent, machine) the
   * device is local to. */
  while (o && !o->cpuset) o = o->parent;
  if (!o) return false;
  if (o->nodeset) *out_numa_node = api.bitmap_first(o->nodeset);
  if (cpus_size) api.bitmap_list_snprintf(out_cpus, cpus_size, o->cpuset);
  return *out_numa_node >= 0;
#else
  return false;
#endif
}
