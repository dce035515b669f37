/*
 * common.c — helpers shared by the bp subcommands: context and device
 * opening, option parsing, human output, timing, progress (JSON: json_doc.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef BP_PLUGIN_INSTALL_DIR
#define BP_PLUGIN_INSTALL_DIR "/usr/local/lib/backplane"
#endif

#include "bp.h"

bool bpt_exe_dir(char *out, size_t size) {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return false;
  path[n] = '\0';
  char *slash = strrchr(path, '/');
  if (!slash) return false;
  *slash = '\0';
  if (strlen(path) + 1 > size) return false;
  memcpy(out, path, strlen(path) + 1);
  return true;
}

/* Whether dir (a real path) is one the core searches anyway: an entry of
 * BACKPLANE_PLUGIN_PATH or the install directory. Passing it again would list
 * every plugin twice, the second time as a refused duplicate. */
static bool searched_anyway(const char *dir) {
  char real[PATH_MAX], list[4096];
  const char *env = secure_getenv("BACKPLANE_PLUGIN_PATH");
  snprintf(list, sizeof list, "%s:%s", env ? env : "", BP_PLUGIN_INSTALL_DIR);
  for (char *save, *tok = strtok_r(list, ":", &save); tok;
       tok = strtok_r(NULL, ":", &save))
    if (realpath(tok, real) && !strcmp(real, dir)) return true;
  return false;
}

bp_context_t *bpt_context_open(const bpt_context_flags_t *flags) {
  char dir[PATH_MAX], plugins[PATH_MAX];
  bp_context_options_t opt = {.struct_size = sizeof opt};
  /* Isolation is the core's default; --no-isolate opts out explicitly. */
  opt.in_process_probe = flags && flags->no_isolate;
  /* build/bin/bp finds build/plugins; an installed bin/bp finds
   * lib/backplane through the core's build-time directory. */
  if (bpt_exe_dir(dir, sizeof dir)) {
    char rel[PATH_MAX + 16];
    snprintf(rel, sizeof rel, "%s/../plugins", dir);
    if (realpath(rel, plugins) && !searched_anyway(plugins))
      opt.plugin_dir = plugins;
  }
  /* Refusals are reported by bp devices; keep the loader's own warnings
   * out of bp's output unless the user asked for them. */
  setenv("BACKPLANE_DEBUG", "error", 0);
  bp_context_t *ctx = NULL;
  bp_status_t st = bp_context_create(&opt, &ctx);
  if (st != BP_OK) {
    fprintf(stderr, "bp: cannot create a context: %s (%s)\n",
            bp_status_string(st), bp_last_error());
    return NULL;
  }
  return ctx;
}

/* Benchmarks and tuning measure the device itself, so by default an op it
 * cannot run is reported, not silently run elsewhere by fallback. */
bp_device_t *bpt_device_open(bp_context_t *ctx, const char *selector) {
  return bpt_device_open_with(ctx, selector, false);
}

bp_device_t *bpt_device_open_with(bp_context_t *ctx, const char *selector, bool fallback) {
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .no_fallback = !fallback};
  return bpt_device_open_config(ctx, selector, &cfg);
}

bp_device_t *bpt_device_open_config(bp_context_t *ctx, const char *selector,
                                    const bp_device_config_t *cfg) {
  bp_device_t *dev = NULL;
  bp_status_t st = bp_device_open(ctx, selector, cfg, &dev);
  if (st != BP_OK) {
    fprintf(stderr, "bp: cannot open device '%s': %s (%s)\n",
            selector ? selector : "(best)", bp_status_string(st),
            bp_last_error());
    fprintf(stderr, "bp: 'bp devices' lists the devices and selectors\n");
    return NULL;
  }
  return dev;
}

int bpt_getopt(const char *sub, int argc, char **argv, const char *shortopts,
               const struct option *longopts, bool *started) {
  if (!*started) {
    optind = 0; /* glibc: a full restart, whatever an earlier pass left */
    opterr = 0;
    *started = true;
  }
  char spec[64];
  snprintf(spec, sizeof spec, ":%s", shortopts); /* ':' reports a missing value */
  int c = getopt_long(argc, argv, spec, longopts, NULL);
  if (c == ':' || c == '?') {
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    char shortname[3] = {'-', (char)optopt, '\0'};
    /* a short option bundled or missing its value: name the letter */
    if (optopt && (arg[0] != '-' || arg[1] != '-')) arg = shortname;
    if (c == ':')
      bpt_usage_error(sub, "option '%s' needs a value", arg);
    else
      bpt_usage_error(sub, "unknown option '%s'", arg);
    return '?';
  }
  return c;
}

bool bpt_parse_count(const char *sub, const char *opt, const char *v,
                     unsigned long long min, unsigned long long max,
                     unsigned long long *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long x = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
  if (!end || *end || errno || x < min || x > max) {
    bpt_usage_error(sub, "%s needs a whole number from %llu to %llu, not '%s'", opt, min, max, v);
    return false;
  }
  *out = x;
  return true;
}

bool bpt_is_help(const char *arg) {
  return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int bpt_usage_error(const char *sub, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "bp %s: ", sub);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'bp %s --help'.\n", sub);
  return BPT_EXIT_USAGE;
}

void bpt_format_bytes(uint64_t bytes, char *out, size_t size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  if (bytes == 0)
    snprintf(out, size, "-");
  else
    snprintf(out, size, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

const char *bpt_kind_name(bp_device_kind_t kind) {
  switch (kind) {
  case BP_DEVICE_DISCRETE_GPU: return "discrete-gpu";
  case BP_DEVICE_INTEGRATED_GPU: return "integrated-gpu";
  case BP_DEVICE_CPU: return "cpu";
  case BP_DEVICE_SOFTWARE: return "software";
  default: return "other";
  }
}

const char *bpt_stage_name(bp_plugin_stage_t stage) {
  static const char *const names[] = {"open", "symbol", "version", "validate",
                                      "init", "probe",  "ready"};
  return (unsigned)stage <= BP_STAGE_READY ? names[stage] : "?";
}

double bpt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int progress_tty = -1;

void bpt_progress(int i, int n, const char *label) {
  if (progress_tty < 0) progress_tty = isatty(STDERR_FILENO);
  if (!progress_tty) return;
  fprintf(stderr, "\r\033[K[%d/%d] %s", i, n, label);
  fflush(stderr);
}

void bpt_progress_done(void) {
  if (progress_tty < 0) progress_tty = isatty(STDERR_FILENO);
  if (!progress_tty) return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
}

void bpt_print_memory_stats(bp_device_t *dev, const char *indent) {
  bp_memory_stats_t m;
  if (bp_device_memory_stats(dev, &m) != BP_OK) {
    printf("%smemory pool: %s\n", indent, bp_last_error());
    return;
  }
  char in_use[32], reserved[32], cached[32], peak[32], largest[32];
  bpt_format_bytes(m.in_use_bytes, in_use, sizeof in_use);
  bpt_format_bytes(m.reserved_bytes, reserved, sizeof reserved);
  bpt_format_bytes(m.cached_bytes, cached, sizeof cached);
  bpt_format_bytes(m.peak_in_use_bytes, peak, sizeof peak);
  bpt_format_bytes(m.largest_free_block, largest, sizeof largest);
  printf("%smemory pool: in use %s, reserved %s in %llu segment(s), cached %s (largest free block %s, "
         "fragmentation %.0f%%)\n",
         indent, in_use, reserved, (unsigned long long)m.segment_count, cached, largest, 100 * m.fragmentation);
  printf("%s             peak in use %s; %llu allocations, %llu frees, %llu served from the cache\n", indent,
         peak, (unsigned long long)m.alloc_count, (unsigned long long)m.free_count,
         (unsigned long long)m.cache_hits);
}
