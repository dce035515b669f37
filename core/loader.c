/*
 * loader.c — plugin discovery and loading.
 *
 * Search order (first of a name wins, later ones are refused as duplicates):
 *   1. the directories in BACKPLANE_PLUGIN_PATH (colon-separated, read with
 *      secure_getenv so setuid programs ignore it),
 *   2. backplane/ beside the library itself (found with dladdr: for an
 *      installed library $libdir/backplane, wherever the tree was moved; in
 *      the build tree $(B)/lib/backplane, which holds only bp-probe),
 *   3. the directory configured at build time (BP_PLUGIN_INSTALL_DIR, from
 *      $(B)/gen/config.h; scanned once when it is the same as 2.),
 *   4. the directory the application passes in bp_context_options_t.
 * In each directory, files named backend-*.so are considered, in name order.
 * Every candidate gets a report saying how far it got and why it stopped;
 * a refused plugin never stops the others from loading.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "isolate.h"
#include "manifest.h"
#include "trust.h"

#define REASON(p, ...) snprintf((p)->report.reason, sizeof (p)->report.reason, __VA_ARGS__)

static bp__plugin_t *new_candidate(bp_context_t *ctx, const char *path) {
  if (ctx->plugin_count == ctx->plugin_capacity) {
    uint32_t ncap = ctx->plugin_capacity ? 2 * ctx->plugin_capacity : 8;
    bp__plugin_t *n = realloc(ctx->plugins, ncap * sizeof *n);
    if (!n) return NULL;
    ctx->plugins = n;
    ctx->plugin_capacity = ncap;
  }
  bp__plugin_t *p = &ctx->plugins[ctx->plugin_count++];
  memset(p, 0, sizeof *p);
  p->report.struct_size = sizeof p->report;
  snprintf(p->report.path, sizeof p->report.path, "%s", path);
  p->report.loader_abi_major = BP_PLUGIN_ABI_MAJOR;
  p->report.loader_abi_minor = BP_PLUGIN_ABI_MINOR;
  p->report.stage = BP_STAGE_OPEN;
  return p;
}

static void refuse(bp__plugin_t *p, bp_status_t status) {
  p->report.status = status;
  p->report.loaded = false;
  if (bp__in_isolated_child) return; /* the parent reports it */
  /* An absent driver is the normal case on most machines: not a warning. */
  bp__log(status == BP_ERR_UNAVAILABLE ? BP_LOG_INFO : BP_LOG_WARN, BP__LOG_LOADER,
          "refusing plugin %s: %s; skipping it", p->report.path, p->report.reason);
}

/* The descriptor symbol's size from the ELF symbol table, so that a symbol
 * smaller than its own struct_size claims is never read past its end. */
static uint32_t symbol_size(void *addr) {
  Dl_info info;
  const ElfW(Sym) *sym = NULL;
  if (!dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
    return sizeof(bp_plugin_descriptor_t);
  return sym->st_size > UINT32_MAX ? UINT32_MAX : (uint32_t)sym->st_size;
}

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__i386__)
#define HOST_MACHINE EM_386
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#elif defined(__riscv)
#define HOST_MACHINE EM_RISCV
#else
#define HOST_MACHINE EM_NONE /* unknown: leave the check to dlopen */
#endif

static const char *machine_name(unsigned m) {
  switch (m) {
  case EM_X86_64: return "x86-64";
  case EM_386: return "i386";
  case EM_AARCH64: return "aarch64";
  case EM_ARM: return "arm";
  case EM_PPC64: return "ppc64";
  case EM_RISCV: return "riscv";
  case EM_S390: return "s390";
  default: return "another architecture";
  }
}

/* Reads the ELF header before dlopen: for an empty file, a text file or a
 * library of another architecture, glibc's dlerror is terse or misleading (an
 * AArch64 library reads "cannot open shared object file: No such file or
 * directory"), and the report should say what is wrong. */
static bool elf_header_ok(bp__plugin_t *p, const char *path) {
  ElfW(Ehdr) eh;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    REASON(p, "cannot open: %s", strerror(errno));
    return false;
  }
  ssize_t n = read(fd, &eh, sizeof eh);
  int err = errno;
  close(fd);
  if (n < 0) {
    REASON(p, "cannot read: %s", strerror(err));
    return false;
  }
  if (n == 0) {
    REASON(p, "empty file, not a shared library");
    return false;
  }
  if ((size_t)n < SELFMAG || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    REASON(p, "not an ELF file (no ELF magic): not a shared library");
    return false;
  }
  if ((size_t)n < sizeof eh) {
    REASON(p, "truncated ELF header (%zd bytes)", n);
    return false;
  }
  if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32)) {
    REASON(p, "wrong architecture: %s ELF file in a %d-bit process",
           eh.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "64-bit",
           (int)(8 * sizeof(void *)));
    return false;
  }
  if (HOST_MACHINE != EM_NONE && eh.e_machine != HOST_MACHINE) {
    REASON(p, "wrong architecture: built for %s (e_machine %u), this process is %s",
           machine_name(eh.e_machine), (unsigned)eh.e_machine,
           machine_name(HOST_MACHINE));
    return false;
  }
  if (eh.e_type != ET_DYN) {
    REASON(p, "not a shared library (ELF type %u)", (unsigned)eh.e_type);
    return false;
  }
  return true;
}

/* The manifest beside the file, before any of the plugin's code runs
 * (manifest.c, rules MANIFEST-n). The helper process was sent here by a
 * parent that already checked. */
static bool manifest_ok(bp__plugin_t *p, const char *path) {
  bool present;
  if (bp__in_isolated_child) return true;
  if (bp__manifest_check(path, &present, p->report.reason, sizeof p->report.reason, NULL) == BP_OK) {
    if (!present)
      bp__log(BP_LOG_INFO, BP__LOG_LOADER, "plugin %s has no manifest: loading it unchecked (rule MANIFEST-8)",
              path);
    return true;
  }
  refuse(p, BP_ERR_INCOMPATIBLE);
  return false;
}

/* The checks every context runs on a file, even one already loaded. */
static bool check_file(bp__plugin_t *p, const char *path) {
  /* Who may have put the file there, and where it really is: trust.c. */
  bp_status_t trust = bp__trust_check_file(path, p->report.reason, sizeof p->report.reason);
  if (trust != BP_OK) {
    refuse(p, trust);
    return false;
  }
  if (!elf_header_ok(p, path)) {
    refuse(p, BP_ERR_INCOMPATIBLE);
    return false;
  }
  return manifest_ok(p, path);
}

static bool open_library(bp__plugin_t *p, const char *path) {
  dlerror();
  p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) {
    const char *e = dlerror();
    REASON(p, "dlopen failed: %s", e ? e : "unknown error");
    refuse(p, BP_ERR_INCOMPATIBLE);
    return false;
  }
  return true;
}

static bool read_descriptor(bp__plugin_t *p) {
  p->report.stage = BP_STAGE_SYMBOL;
  dlerror();
  void *sym = dlsym(p->dl, BP_PLUGIN_DESCRIPTOR_SYMBOL);
  if (!sym) {
    REASON(p, "no '%s' symbol: not a backplane plugin",
           BP_PLUGIN_DESCRIPTOR_SYMBOL);
    refuse(p, BP_ERR_INCOMPATIBLE);
    return false;
  }
  uint32_t avail = symbol_size(sym);
  memset(&p->desc, 0, sizeof p->desc);
  memcpy(&p->desc, sym, avail < 12 ? avail : 12);
  if (avail >= 12) {
    uint32_t n = p->desc.struct_size;
    if (n > avail) n = avail;
    if (n > sizeof p->desc) n = sizeof p->desc; /* newer minor: read ours */
    memcpy(&p->desc, sym, n);
    p->report.plugin_abi_major = p->desc.abi_major;
    p->report.plugin_abi_minor = p->desc.abi_minor;
  }
  bp_status_t st = bp__descriptor_check(&p->desc, avail, p->report.reason,
                                        sizeof p->report.reason,
                                        &p->report.stage);
  if (st != BP_OK) {
    refuse(p, st);
    return false;
  }
  snprintf(p->report.name, sizeof p->report.name, "%s", p->desc.name);
  snprintf(p->report.version, sizeof p->report.version, "%s", p->desc.version);
  return true;
}

static bool duplicate_of_loaded(bp_context_t *ctx, bp__plugin_t *p) {
  for (bp__plugin_t *q = ctx->plugins; q < p; q++) {
    if (q->report.loaded && !strcmp(q->report.name, p->report.name)) {
      REASON(p, "duplicate of plugin '%s' already loaded from %s",
             p->report.name, q->report.path);
      p->report.stage = BP_STAGE_VALIDATE;
      refuse(p, BP_ERR_INCOMPATIBLE);
      return true;
    }
  }
  return false;
}

static void sanitize_infos(bp__plugin_t *p) {
  for (uint32_t i = 0; i < p->device_count; i++) {
    bp_device_info_t *d = &p->infos[i];
    d->name[sizeof d->name - 1] = '\0';
    d->vendor[sizeof d->vendor - 1] = '\0';
    d->driver_version[sizeof d->driver_version - 1] = '\0';
    d->identity[sizeof d->identity - 1] = '\0';
    d->description[sizeof d->description - 1] = '\0';
    if ((unsigned)d->kind > BP_DEVICE_OTHER) d->kind = BP_DEVICE_OTHER;
    for (int op = 0; op < BP_OP_TABLE_SIZE; op++)
      d->op_dtypes[op] &= (1u << BP_DTYPE_COUNT) - 1;
  }
}

static bool init_plugin(bp__plugin_t *p) {
  p->report.stage = BP_STAGE_INIT;
  bp_status_t st = bp__call_plugin_init(&p->desc);
  if (st != BP_OK) {
    REASON(p, "init failed: %s%s%s", bp_status_string(st),
           bp__plugin_error()[0] ? ": " : "", bp__plugin_error());
    refuse(p, st < 0 ? st : BP_ERR_INTERNAL);
    return false;
  }
  p->initialised = true;
  return true;
}

static bool probe_plugin(bp__plugin_t *p) {
  p->report.stage = BP_STAGE_PROBE;
  uint32_t count = 0;
  bp_status_t st = bp__call_plugin_probe(&p->desc, p->infos, BP__MAX_DEVICES_PER_PLUGIN, &count);
  if (st != BP_OK) {
    REASON(p, "probe: %s", bp__plugin_error()[0] ? bp__plugin_error()
                                                  : bp_status_string(st));
    refuse(p, st < 0 ? st : BP_ERR_INTERNAL);
    return false;
  }
  if (count == 0) {
    REASON(p, "probe found no devices");
    refuse(p, BP_ERR_UNAVAILABLE);
    return false;
  }
  p->device_count =
      count > BP__MAX_DEVICES_PER_PLUGIN ? BP__MAX_DEVICES_PER_PLUGIN : count;
  sanitize_infos(p);
  return true;
}

/* Marks p usable and logs it. */
static void mark_ready(bp__plugin_t *p, const char *path) {
  p->report.stage = BP_STAGE_READY;
  p->report.status = BP_OK;
  p->report.loaded = true;
  p->report.device_count = p->device_count;
  p->report.reason[0] = '\0';
  snprintf(p->report.name, sizeof p->report.name, "%s", p->desc.name);
  snprintf(p->report.version, sizeof p->report.version, "%s", p->desc.version);
  p->report.plugin_abi_major = p->desc.abi_major;
  p->report.plugin_abi_minor = p->desc.abi_minor;
  if (bp__in_isolated_child) return; /* the parent reports it */
  bp__log(BP_LOG_INFO, BP__LOG_LOADER, "loaded plugin '%s' %s from %s: %u device(s)",
          p->report.name, p->report.version, path, p->device_count);
}

/* Another context already loaded this file: share its copy. */
static void load_shared(bp_context_t *ctx, bp__plugin_t *p, const char *path, bp__shared_t *s) {
  if (!check_file(p, path)) return;
  snprintf(p->report.name, sizeof p->report.name, "%s", s->desc.name);
  if (duplicate_of_loaded(ctx, p)) return;
  bp__registry_share(s, p);
  mark_ready(p, path);
}

void bp__loader_load_file(bp_context_t *ctx, bp__plugin_t *p,
                          const char *path) {
  char real[4096];
  bool shareable = !bp__in_isolated_child && realpath(path, real);
  if (shareable) {
    bp__registry_lock();
    bp__shared_t *s = bp__registry_find(real);
    if (s) {
      load_shared(ctx, p, path, s);
      bp__registry_unlock();
      return;
    }
  }
  bp__loader_load_new(ctx, p, path);
  if (shareable) {
    if (p->report.loaded && !(p->shared = bp__registry_add(real, p))) {
      REASON(p, "out of memory recording the plugin");
      refuse(p, BP_ERR_OUT_OF_MEMORY);
      bp__loader_unload(p);
    }
    bp__registry_unlock();
  }
}

/* The descriptor loaded here must be the one the helper probed: a file
 * replaced between the two is refused rather than given another's devices. */
static bool verdict_matches(bp__plugin_t *p, const bp__verdict_t *v) {
  if (!strcmp(p->desc.name, v->name) && !strcmp(p->desc.version, v->version))
    return true;
  REASON(p, "the file changed while it was being loaded: probed '%s' %s, loaded '%s' %s",
         v->name, v->version, p->desc.name, p->desc.version);
  refuse(p, BP_ERR_INCOMPATIBLE);
  return false;
}

/* Isolation: the plugin's constructor and probe have run in a helper
 * process (or its verdict was cached). The plugin is loaded here only when
 * that verdict says it works, initialised, and given the helper's device
 * records: probe never runs in this process (docs/runtime.md, "Plugin
 * isolation"; device_open needs no probe first, docs/plugin-abi.md). */
static void load_verified(bp_context_t *ctx, bp__plugin_t *p, const char *path) {
  bp__verdict_t *v = malloc(sizeof *v);
  if (!v) {
    REASON(p, "out of memory probing the plugin");
    refuse(p, BP_ERR_OUT_OF_MEMORY);
    return;
  }
  bp__probe_verdict(path, bp__probe_timeout_s(&ctx->options), v);
  snprintf(p->report.name, sizeof p->report.name, "%s", v->name);
  snprintf(p->report.version, sizeof p->report.version, "%s", v->version);
  p->report.plugin_abi_major = v->abi_major;
  p->report.plugin_abi_minor = v->abi_minor;
  if (v->status != BP_OK) {
    p->report.stage = v->stage;
    REASON(p, "%s", v->reason);
    refuse(p, v->status);
  } else if (duplicate_of_loaded(ctx, p)) {
    /* refused before it is mapped */
  } else if (!open_library(p, path) || !read_descriptor(p) || !verdict_matches(p, v) ||
             !init_plugin(p)) {
    bp__loader_unload(p);
  } else {
    p->device_count = v->device_count;
    memcpy(p->infos, v->infos, v->device_count * sizeof p->infos[0]);
    sanitize_infos(p); /* they crossed a process boundary, or a file */
    mark_ready(p, path);
  }
  free(v);
}

/* Loads, checks, initialises and probes a file no context has loaded. */
void bp__loader_load_new(bp_context_t *ctx, bp__plugin_t *p, const char *path) {
  if (!check_file(p, path)) return;
  if (bp__isolation_wanted(&ctx->options)) {
    load_verified(ctx, p, path);
    return;
  }
  if (!open_library(p, path) || !read_descriptor(p) ||
      duplicate_of_loaded(ctx, p) || !init_plugin(p) || !probe_plugin(p)) {
    bp__loader_unload(p);
    return;
  }
  mark_ready(p, path);
}

void bp__loader_unload(bp__plugin_t *p) {
  if (p->shared) { /* the process-wide copy: drop this context's reference */
    bp__registry_release(p->shared);
    p->shared = NULL;
    p->initialised = false;
    p->dl = NULL;
    return;
  }
  /* Never dlclose: a thread the plugin started (in a constructor, or in init
   * and not stopped by shutdown) would run on unmapped code and take the
   * application down. The mapping stays for the life of the process; a later
   * dlopen of the same file reuses it (docs/plugin-abi.md, "Unloading"). */
  if (p->initialised) bp__call_plugin_shutdown(&p->desc);
  p->initialised = false;
  p->dl = NULL;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists the backend-*.so names of dir, sorted. Returns the count, -1 when the
 * directory cannot be read. */
static int list_dir(const char *dir, char ***out_names) {
  *out_names = NULL;
  DIR *d = opendir(dir);
  if (!d) return -1;
  char **names = NULL;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (fnmatch("backend-*.so", e->d_name, 0) != 0) continue;
    if (n == cap) {
      char **nn = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *nn);
      if (!nn) break;
      names = nn;
    }
    if (!(names[n] = strdup(e->d_name))) break;
    n++;
  }
  closedir(d);
  if (n > 1) /* names is NULL for an empty directory: qsort(NULL) is UB */
    qsort(names, (size_t)n, sizeof *names, compare_names);
  *out_names = names;
  return n;
}

/* True when dir (by real path) was already scanned in this context: the
 * same directory reached twice (a relative and an absolute spelling, or the
 * install directory also on BACKPLANE_PLUGIN_PATH) is scanned once. */
static bool already_scanned(bp_context_t *ctx, const char *dir) {
  char real[PATH_MAX];
  if (!realpath(dir, real)) return false;
  for (uint32_t i = 0; i < ctx->scanned_count; i++)
    if (!strcmp(ctx->scanned[i], real)) return true;
  char **n = realloc(ctx->scanned, (ctx->scanned_count + 1) * sizeof *n);
  if (!n) return false;
  ctx->scanned = n;
  if ((n[ctx->scanned_count] = strdup(real))) ctx->scanned_count++;
  return false;
}

/* Records dir, as spelled, in the context's list of searched directories
 * (bp_context_search_dir), once. */
static void note_searched(bp_context_t *ctx, const char *dir, bool present) {
  for (uint32_t i = 0; i < ctx->searched_count; i++)
    if (!strcmp(ctx->searched[i], dir)) return;
  char **n = realloc(ctx->searched, (ctx->searched_count + 1) * sizeof *n);
  if (!n) return;
  ctx->searched = n;
  bool *p = realloc(ctx->searched_present, (ctx->searched_count + 1) * sizeof *p);
  if (!p) return;
  ctx->searched_present = p;
  if (!(n[ctx->searched_count] = strdup(dir))) return;
  p[ctx->searched_count++] = present;
}

static void scan_dir(bp_context_t *ctx, const char *dir) {
  struct stat st;
  bool present = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
  note_searched(ctx, dir, present);
  if (!present) {
    bp__log(BP_LOG_DEBUG, BP__LOG_LOADER, "plugin directory %s: absent, skipping",
            dir);
    return;
  }
  if (already_scanned(ctx, dir)) {
    bp__log(BP_LOG_DEBUG, BP__LOG_LOADER, "plugin directory %s: already scanned", dir);
    return;
  }
  char **names;
  int n = list_dir(dir, &names);
  char dir_reason[sizeof ctx->plugins->report.reason];
  bool dir_unsafe = bp__trust_check_dir(dir, dir_reason, sizeof dir_reason) != BP_OK;
  for (int i = 0; i < n; i++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    bp__plugin_t *p = new_candidate(ctx, path);
    if (p && dir_unsafe) {
      REASON(p, "%s", dir_reason);
      refuse(p, BP_ERR_INCOMPATIBLE);
    } else if (p) {
      bp__loader_load_file(ctx, p, path);
    }
    free(names[i]);
  }
  free(names);
}

static void scan_path_list(bp_context_t *ctx, const char *list) {
  char *copy = strdup(list);
  if (!copy) return;
  char *save = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir;
       dir = strtok_r(NULL, ":", &save))
    if (dir[0]) scan_dir(ctx, dir);
  free(copy);
}

bool bp__library_dir(char *out, size_t size) {
  Dl_info info;
  char real[PATH_MAX];
  if (!dladdr((void *)bp__library_dir, &info) || !info.dli_fname ||
      !realpath(info.dli_fname, real))
    return false;
  char *slash = strrchr(real, '/');
  if (!slash) return false;
  *slash = '\0';
  snprintf(out, size, "%s", real[0] ? real : "/");
  return true;
}

bp_status_t bp__loader_scan(bp_context_t *ctx) {
  if (!ctx->options.only_plugin_dir) {
    const char *env = bp__getenv("BACKPLANE_PLUGIN_PATH");
    if (env) scan_path_list(ctx, env);
    char libdir[PATH_MAX], beside[PATH_MAX + 16];
    if (bp__library_dir(libdir, sizeof libdir)) {
      snprintf(beside, sizeof beside, "%s/backplane", libdir);
      scan_dir(ctx, beside);
    }
    scan_dir(ctx, BP_PLUGIN_INSTALL_DIR);
  }
  if (ctx->options.plugin_dir) scan_dir(ctx, ctx->options.plugin_dir);
  return BP_OK;
}
