/*
 * bench_group.c — bp bench --device group:MEMBERS: a device group beside
 * its best member on one large f32 GEMM.
 *
 * It prints each member's measured speed and share (bp_device_group_info),
 * the best member alone, and the group. Members that share hardware are
 * allowed here (the bench measures what a group does with them): the group
 * then counts the hardware once and the work goes to its fastest member.
 * With --split-shared the group also runs the split as if the members were
 * separate hardware, and each member's slice is timed alone: proportional
 * shares give slices of equal time.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_group.h"
#include "bp.h"

typedef struct group_opts {
  const char *members; /* after "group:" */
  unsigned long long m, n, k, reps;
  bool split_shared;
  bpt_context_flags_t ctx;
} group_opts_t;

bool bench_group_wanted(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--device=group:", 15)) return true;
    if (!strcmp(argv[i], "--device") && i + 1 < argc && !strncmp(argv[i + 1], "group:", 6)) return true;
  }
  return false;
}

static void group_help(FILE *f) {
  fprintf(f, "usage: bp bench --device group:A,B[,...] [--size N | --m M --n N --k K]\n"
             "                [--reps R] [--split-shared] [--no-isolate]\n"
             "\n"
             "Times one f32 GEMM (default 2048 x 2048 x 2048) on the device group of\n"
             "the members A,B,... (bp_device_group_open selectors, or 'all') and on\n"
             "its best member alone, best of R runs (default 5) after a warm-up, and\n"
             "prints each member's measured speed and share, and what the group adds\n"
             "to every call (a 32x32x32 GEMM on both). Members that share\n"
             "hardware are allowed: the group counts the hardware once.\n"
             "  --split-shared  also split across members that share hardware, and\n"
             "                  time each member's slice alone (proportional shares\n"
             "                  give slices of equal time)\n"
             "Exit status: 0 when measured, 1 when the group or a member could not\n"
             "run it, 2 on a usage error.\n");
}

static int group_parse(int argc, char **argv, group_opts_t *o) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},     {"device", required_argument, NULL, 'd'},
      {"size", required_argument, NULL, 's'}, {"m", required_argument, NULL, 'M'},
      {"n", required_argument, NULL, 'N'},  {"k", required_argument, NULL, 'K'},
      {"reps", required_argument, NULL, 'r'}, {"split-shared", no_argument, NULL, 'x'},
      {"no-isolate", no_argument, NULL, 'i'}, {NULL, 0, NULL, 0}};
  *o = (group_opts_t){.m = 2048, .n = 2048, .k = 2048, .reps = 5};
  bool started = false;
  for (int c; (c = bpt_getopt("bench", argc, argv, "h", longopts, &started)) != -1;) {
    bool ok = true;
    switch (c) {
    case 'h': group_help(stdout); return -1;
    case 'd':
      if (strncmp(optarg, "group:", 6) || o->members)
        return bpt_usage_error("bench", "with a group, --device names one group:MEMBERS and nothing else");
      o->members = optarg + 6;
      break;
    case 's':
      ok = bpt_parse_count("bench", "--size", optarg, 1, 1u << 16, &o->m);
      o->n = o->k = o->m;
      break;
    case 'M': ok = bpt_parse_count("bench", "--m", optarg, 1, 1u << 20, &o->m); break;
    case 'N': ok = bpt_parse_count("bench", "--n", optarg, 1, 1u << 20, &o->n); break;
    case 'K': ok = bpt_parse_count("bench", "--k", optarg, 1, 1u << 20, &o->k); break;
    case 'r': ok = bpt_parse_count("bench", "--reps", optarg, 1, 1000, &o->reps); break;
    case 'x': o->split_shared = true; break;
    case 'i': o->ctx.no_isolate = true; break;
    default: return BPT_EXIT_USAGE;
    }
    if (!ok) return BPT_EXIT_USAGE;
  }
  if (optind < argc) return bpt_usage_error("bench", "unexpected argument '%s'", argv[optind]);
  return 0;
}

/* A GEMM C[m,n] = A[m,k] B[k,n] on one device, its buffers and a stream. */
typedef struct gemm_run {
  bp_device_t *dev;
  bp_stream_t *s;
  bp_buffer_t *a, *b, *c;
  int64_t m, n, k;
} gemm_run_t;

static void gemm_free(gemm_run_t *g) {
  if (g->s) bp_stream_destroy(g->s);
  bp_buffer_free(g->a), bp_buffer_free(g->b), bp_buffer_free(g->c);
}

static bool gemm_setup(gemm_run_t *g, bp_device_t *dev, int64_t m, int64_t n, int64_t k) {
  *g = (gemm_run_t){.dev = dev, .m = m, .n = n, .k = k};
  float *host = malloc(sizeof(float) * (size_t)(m > n ? m : n) * (size_t)k);
  bool ok = host && bp_stream_create(dev, &g->s) == BP_OK &&
            bp_buffer_alloc(dev, (uint64_t)(m * k * 4), &g->a) == BP_OK &&
            bp_buffer_alloc(dev, (uint64_t)(k * n * 4), &g->b) == BP_OK &&
            bp_buffer_alloc(dev, (uint64_t)(m * n * 4), &g->c) == BP_OK;
  for (int64_t i = 0; ok && i < (m > n ? m : n) * k; i++) host[i] = (float)((i % 17) - 8) * 0.03125f;
  ok = ok && bp_buffer_write(g->a, 0, host, (uint64_t)(m * k * 4)) == BP_OK &&
       bp_buffer_write(g->b, 0, host, (uint64_t)(k * n * 4)) == BP_OK;
  free(host);
  if (!ok) fprintf(stderr, "bp bench: GEMM %lldx%lldx%lld cannot be set up: %s\n", (long long)m, (long long)n,
                   (long long)k, bp_last_error());
  return ok;
}

/* One timed GEMM on g, in ms; < 0 on failure (said on stderr). */
static double gemm_once(gemm_run_t *g) {
  double t0 = bpt_now();
  bp_status_t st = bp_gemm(g->s, BP_F32, BP_ROW_MAJOR, BP_NO_TRANS, BP_NO_TRANS, g->m, g->n, g->k, 1.0, g->a, 0,
                           g->k, g->b, 0, g->n, 0.0, g->c, 0, g->n);
  if (st == BP_OK) st = bp_stream_synchronize(g->s);
  if (st == BP_OK) return (bpt_now() - t0) * 1e3;
  fprintf(stderr, "bp bench: GEMM failed: %s\n", bp_last_error());
  return -1;
}

/* Times the n runs in alternation, reps rounds after a warm-up, each
 * keeping its best (ms, < 0 on failure): alternating spreads whatever else
 * the machine is doing over all of them alike. */
static bool gemm_times(gemm_run_t *const *runs, int n, unsigned long long reps, double *best) {
  for (int i = 0; i < n; i++) best[i] = -1;
  for (unsigned long long r = 0; r <= reps; r++)
    for (int i = 0; i < n; i++) {
      double ms = gemm_once(runs[i]);
      if (ms < 0) return false;
      if (r > 0 && (best[i] < 0 || ms < best[i])) best[i] = ms;
    }
  return true;
}

/* Opens a member alone by its backend:index selector. */
static bp_device_t *member_open(bp_context_t *ctx, const bp_device_entry_t *e) {
  char sel[96];
  snprintf(sel, sizeof sel, "%s:%u", e->backend, e->backend_index);
  return bpt_device_open(ctx, sel);
}

/* The member with the largest GEMM share (the fastest): the one to beat. */
static uint32_t best_member(bp_device_t *grp, uint32_t count) {
  uint32_t best = 0;
  double top = -1;
  for (uint32_t i = 0; i < count; i++) {
    bp_device_group_member_t m;
    bp_device_group_info(grp, i, &m);
    if (m.gflops[BP_GROUP_SPLIT_GEMM] > top) top = m.gflops[BP_GROUP_SPLIT_GEMM], best = i;
  }
  return best;
}

static void print_members(bp_device_t *grp, uint32_t count) {
  printf("  %-12s %-10s %-8s %12s %8s %10s\n", "member", "backend", "hardware", "GEMM GFLOP/s", "share",
         "slices");
  for (uint32_t i = 0; i < count; i++) {
    bp_device_group_member_t m;
    bp_device_group_info(grp, i, &m);
    printf("  %-12s %-10s %-8u %12.2f %8.4f %10llu\n", m.entry.info.name, m.entry.backend, m.hardware,
           m.gflops[BP_GROUP_SPLIT_GEMM], m.share[BP_GROUP_SPLIT_GEMM], (unsigned long long)m.slices_run);
  }
}

/* Opens the group; the plain one measures its members' speeds, the split
 * one reads what it measured. */
static bp_device_t *group_open(bp_context_t *ctx, const group_opts_t *o, bool split) {
  bp_device_group_options_t go = {.struct_size = sizeof go, .allow_shared_hardware = true,
                                  .split_shared_hardware = split};
  bp_device_t *g = NULL;
  if (bp_device_group_open(ctx, o->members, &go, &g) != BP_OK) {
    fprintf(stderr, "bp bench: cannot open group '%s': %s\n", o->members, bp_last_error());
    return NULL;
  }
  /* The bench measures the speeds afresh (and stores them): the shares
   * then reflect the machine as it is during this run. */
  if (bp_device_group_calibrate(g, !split) != BP_OK) {
    fprintf(stderr, "bp bench: calibrating the group failed: %s\n", bp_last_error());
    bp_device_close(g);
    return NULL;
  }
  return g;
}

/* Times each member alone on the slice of M a split would give it, the
 * members in alternation. */
static bool time_slices(bp_context_t *ctx, bp_device_t *grp, uint32_t count, const group_opts_t *o) {
  bp_device_t *dev[BP_GROUP_MAX_MEMBERS] = {0};
  gemm_run_t run[BP_GROUP_MAX_MEMBERS];
  gemm_run_t *runs[BP_GROUP_MAX_MEMBERS];
  const char *name[BP_GROUP_MAX_MEMBERS];
  double cum = 0, ms[BP_GROUP_MAX_MEMBERS];
  int64_t given = 0;
  int n = 0;
  bool ok = true;
  for (uint32_t i = 0; i < count && ok; i++) {
    static bp_device_group_member_t m[BP_GROUP_MAX_MEMBERS];
    bp_device_group_info(grp, i, &m[i]);
    cum += m[i].share[BP_GROUP_SPLIT_GEMM];
    int64_t upto = i + 1 == count ? (int64_t)o->m : (int64_t)(cum * (double)o->m + 0.5);
    int64_t rows = upto - given;
    given = upto;
    if (rows <= 0) continue;
    name[n] = m[i].entry.info.name;
    ok = (dev[n] = member_open(ctx, &m[i].entry)) && gemm_setup(&run[n], dev[n], rows, (int64_t)o->n, (int64_t)o->k);
    if (dev[n]) {
      runs[n] = &run[n];
      n++;
    }
  }
  ok = ok && gemm_times(runs, n, o->reps, ms);
  printf("  each member alone on its slice of M (equal times: the split is proportional):\n");
  for (int i = 0; i < n; i++) {
    if (ok) printf("    %-12s %6lld rows %10.2f ms\n", name[i], (long long)run[i].m, ms[i]);
    gemm_free(&run[i]);
    bp_device_close(dev[i]);
  }
  return ok;
}

/* Per-call time of a tiny GEMM (32^3) on the best member and on the
 * group, in microseconds, blocks of calls in alternation, each keeping its
 * best block: what the group adds to every call, free of the load that
 * blurs a large GEMM's time on a shared machine. */
static bool overhead_us(bp_device_t *best, bp_device_t *grp, unsigned long long reps, double *out) {
  enum { CALLS = 200 };
  gemm_run_t run[2];
  bool ok = gemm_setup(&run[0], best, 32, 32, 32) && gemm_setup(&run[1], grp, 32, 32, 32);
  out[0] = out[1] = -1;
  for (unsigned long long r = 0; ok && r <= reps; r++)
    for (int i = 0; i < 2 && ok; i++) {
      double t0 = bpt_now();
      for (int c = 0; c < CALLS && ok; c++) ok = gemm_once(&run[i]) >= 0;
      double us = (bpt_now() - t0) * 1e6 / CALLS;
      if (r > 0 && (out[i] < 0 || us < out[i])) out[i] = us;
    }
  gemm_free(&run[0]);
  gemm_free(&run[1]);
  return ok;
}

static void print_time(const char *what, double ms, double gflop, double best_ms) {
  printf("  %-26s %10.2f ms %8.1f GFLOP/s", what, ms, gflop / ms * 1e3);
  if (best_ms > 0) printf("  %.3fx the best member", best_ms / ms);
  printf("\n");
}

int bench_group_main(int argc, char **argv) {
  group_opts_t o;
  int rc = group_parse(argc, argv, &o);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  bp_context_t *ctx = bpt_context_open(&o.ctx);
  if (!ctx) return BPT_EXIT_FAIL;
  rc = BPT_EXIT_FAIL;
  bp_device_t *grp = group_open(ctx, &o, false), *split = NULL, *best = NULL;
  gemm_run_t run[3];
  gemm_run_t *runs[3] = {&run[0], &run[1], &run[2]};
  int nrun = 0;
  double ms[3], gflop = 2.0 * (double)o.m * (double)o.n * (double)o.k / 1e9;
  uint32_t count = 0;
  if (!grp || bp_device_group_size(grp, &count) != BP_OK) goto out;
  if (o.split_shared && !(split = group_open(ctx, &o, true))) goto out;
  bp_device_group_member_t bm;
  bp_device_group_info(grp, best_member(grp, count), &bm);
  if (!(best = member_open(ctx, &bm.entry))) goto out;
  bp_device_t *on[3] = {best, grp, split};
  for (; nrun < (split ? 3 : 2); nrun++)
    if (!gemm_setup(&run[nrun], on[nrun], (int64_t)o.m, (int64_t)o.n, (int64_t)o.k)) {
      nrun++;
      goto out;
    }
  if (!gemm_times(runs, nrun, o.reps, ms)) goto out;
  bp_device_entry_t ge;
  bp_device_entry(grp, &ge);
  printf("group: %s, f32 GEMM %llux%llux%llu (%.1f GFLOP), best of %llu, alternating\n", ge.info.name, o.m, o.n,
         o.k, gflop, o.reps);
  print_members(grp, count);
  char what[160];
  snprintf(what, sizeof what, "best member alone (%s):", bm.entry.info.name);
  print_time(what, ms[0], gflop, 0);
  print_time("group:", ms[1], gflop, ms[0]);
  double us[2];
  if (!overhead_us(best, grp, o.reps, us)) goto out;
  printf("  per call, 32x32x32 GEMM: best member %.1f us, group %.1f us (+%.1f us)\n", us[0], us[1], us[1] - us[0]);
  if (split) {
    printf("group split as if the members were separate hardware (--split-shared):\n");
    print_members(split, count);
    print_time("group:", ms[2], gflop, ms[0]);
    if (!time_slices(ctx, split, count, &o)) goto out;
  }
  rc = BPT_EXIT_OK;
out:
  for (int i = 0; i < nrun; i++) gemm_free(&run[i]);
  bp_device_close(best);
  bp_device_close(split);
  bp_device_close(grp);
  bp_context_destroy(ctx);
  return rc;
}
