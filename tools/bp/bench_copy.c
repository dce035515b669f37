/*
 * bench_copy.c — bp bench --copies: the bandwidth of bp_buffer_copy between
 * every ordered pair of the chosen devices, beside the host's memcpy
 * bandwidth measured in the same run over buffers of the same size, and the
 * ratio of the two. The copy and memcpy alternate, each keeping its best
 * after a warm-up, so that a busy or quiet stretch of a shared host falls on
 * both sides.
 */
#include <stdlib.h>
#include <string.h>

#include "bench_copy.h"
#include "bp.h"

#define COPY_MAX_DEVICES 8
#define MIB (UINT64_C(1) << 20)

typedef struct copy_opts {
  const char *devices[COPY_MAX_DEVICES];
  int ndevices;
  bool quick;
  bpt_context_flags_t ctx;
} copy_opts_t;

static void copy_help(FILE *f) {
  fprintf(
      f, "usage: bp bench --copies [--device SEL ...] [--quick] [--no-isolate]\n\n"
         "Times bp_buffer_copy between every ordered pair of devices (all devices\n"
         "by default) at 16, 64 and 256 MiB (16 MiB with --quick): the best of\n"
         "several copies after a warm-up, as GB/s, beside the host memcpy\n"
         "bandwidth over buffers of the same size (the two alternate, each\n"
         "keeping its best), and the ratio (copy / memcpy). The path a pair takes (host memory, a\n"
         "mapping, or staged through host memory) is in docs/runtime.md.\n\n"
         "  --device SEL  a device as in 'bp devices' (repeatable)\n"
         "  --quick       16 MiB only, fewer repetitions\n"
         "  --no-isolate  probe plugins in this process instead of a child\n\n"
         "Exit status: 0, 1 when a device cannot be opened or a copy fails,\n"
         "2 on a usage error.\n");
}

static int parse(int argc, char **argv, copy_opts_t *o) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},         {"copies", no_argument, NULL, 'c'},
      {"device", required_argument, NULL, 'd'}, {"quick", no_argument, NULL, 'q'},
      {"no-isolate", no_argument, NULL, 'n'},   {NULL, 0, NULL, 0}};
  bool started = false;
  for (int c; (c = bpt_getopt("bench", argc, argv, "h", longopts, &started)) != -1;) {
    switch (c) {
    case 'h':
      copy_help(stdout);
      return -1;
    case 'c':
      break;
    case 'd':
      if (o->ndevices == COPY_MAX_DEVICES)
        return bpt_usage_error("bench", "at most %d devices", COPY_MAX_DEVICES);
      o->devices[o->ndevices++] = optarg;
      break;
    case 'q':
      o->quick = true;
      break;
    case 'n':
      o->ctx.no_isolate = true;
      break;
    default:
      return BPT_EXIT_USAGE;
    }
  }
  if (optind < argc) return bpt_usage_error("bench", "unexpected argument '%s'", argv[optind]);
  return 0;
}

/* Times one memcpy and one bp_buffer_copy of size bytes, alternately, reps
 * times after a warm-up of each (which also touches every page), keeping
 * each side's best: a busy or quiet stretch of a shared host then falls on
 * both. False when a copy fails (the message is printed). */
static bool time_both(bp_buffer_t *dst, bp_buffer_t *src, uint8_t *h2, const uint8_t *h1,
                      uint64_t size, int reps, double *out_memcpy, double *out_copy) {
  *out_memcpy = *out_copy = 1e30;
  for (int r = -1; r < reps; r++) {
    double t0 = bpt_now();
    memcpy(h2, h1, size);
    double t1 = bpt_now();
    if (bp_buffer_copy(dst, 0, src, 0, size) != BP_OK) {
      fprintf(stderr, "bp bench: bp_buffer_copy: %s\n", bp_last_error());
      return false;
    }
    double t2 = bpt_now();
    if (r < 0) continue; /* the warm-up */
    if (t1 - t0 < *out_memcpy) *out_memcpy = t1 - t0;
    if (t2 - t1 < *out_copy) *out_copy = t2 - t1;
  }
  return true;
}

typedef struct copy_dev {
  bp_device_t *dev;
  char name[64];
} copy_dev_t;

/* One pair at one size: allocates, fills the source, times both sides and
 * prints the row. Returns false when a copy failed. */
static bool bench_pair(const copy_dev_t *a, const copy_dev_t *b, uint64_t size, int reps,
                       uint8_t *h1, uint8_t *h2) {
  bp_buffer_t *src = NULL, *dst = NULL;
  bool ok = false;
  if (bp_buffer_alloc(a->dev, size, &src) != BP_OK ||
      bp_buffer_alloc(b->dev, size, &dst) != BP_OK || bp_buffer_write(src, 0, h1, size) != BP_OK) {
    printf("  %-10s -> %-10s %4llu MiB   not measured: %s\n", a->name, b->name,
           (unsigned long long)(size / MIB), bp_last_error());
    ok = true; /* a device too small for the size is not a failed copy */
    goto out;
  }
  double mc, cp;
  if (!time_both(dst, src, h2, h1, size, reps, &mc, &cp)) goto out;
  double mc_gbs = (double)size / mc / 1e9, cp_gbs = (double)size / cp / 1e9;
  printf("  %-10s -> %-10s %4llu MiB %9.2f GB/s %9.2f GB/s %7.2f\n", a->name, b->name,
         (unsigned long long)(size / MIB), cp_gbs, mc_gbs, cp_gbs / mc_gbs);
  fflush(stdout);
  ok = true;
out:
  bp_buffer_free(src);
  bp_buffer_free(dst);
  return ok;
}

/* Opens the chosen devices, or every device of the context. */
static int open_devices(bp_context_t *ctx, const copy_opts_t *o, copy_dev_t *out) {
  uint32_t count = 0;
  if (!o->ndevices) bp_context_device_count(ctx, &count);
  int n = o->ndevices ? o->ndevices : (int)count;
  if (n > COPY_MAX_DEVICES) n = COPY_MAX_DEVICES;
  for (int i = 0; i < n; i++) {
    char sel[16];
    snprintf(sel, sizeof sel, "%d", i);
    if (!(out[i].dev = bpt_device_open(ctx, o->ndevices ? o->devices[i] : sel))) return -1;
    /* The device's name when it is short ("cpu-ref"), else its backend's. */
    bp_device_entry_t e;
    if (bp_device_entry(out[i].dev, &e) != BP_OK) continue;
    snprintf(out[i].name, sizeof out[i].name, "%s",
             strlen(e.info.name) <= 10 ? e.info.name : e.backend);
  }
  return n;
}

int bench_copy_main(int argc, char **argv) {
  copy_opts_t o = {0};
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  bp_context_t *ctx = bpt_context_open(&o.ctx);
  if (!ctx) return BPT_EXIT_FAIL;
  copy_dev_t devs[COPY_MAX_DEVICES] = {0};
  static const uint64_t sizes[] = {16 * MIB, 64 * MIB, 256 * MIB};
  int nsizes = o.quick ? 1 : 3, reps = o.quick ? 3 : 7;
  uint8_t *h1 = malloc(sizes[nsizes - 1]), *h2 = malloc(sizes[nsizes - 1]);
  rc = BPT_EXIT_FAIL;
  int n = open_devices(ctx, &o, devs);
  if (n < 0 || !h1 || !h2) goto out;
  if (n < 2) {
    fprintf(stderr, "bp bench --copies: needs two devices, found %d\n", n);
    goto out;
  }
  for (uint64_t i = 0; i < sizes[nsizes - 1]; i++) h1[i] = (uint8_t)(i * 7 + 1);
  memset(h2, 0, sizes[nsizes - 1]);
  printf("copy bandwidth (bp_buffer_copy) beside host memcpy, alternating, best of %d each:\n",
         reps);
  printf("  %-10s    %-10s %8s %14s %14s %7s\n", "from", "to", "size", "copy", "memcpy", "ratio");
  rc = BPT_EXIT_OK;
  for (int s = 0; s < nsizes; s++)
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++)
        if (a != b && !bench_pair(&devs[a], &devs[b], sizes[s], reps, h1, h2)) rc = BPT_EXIT_FAIL;
out:
  for (int i = 0; i < COPY_MAX_DEVICES; i++)
    if (devs[i].dev) bp_device_close(devs[i].dev);
  bp_context_destroy(ctx);
  free(h1);
  free(h2);
  return rc;
}
