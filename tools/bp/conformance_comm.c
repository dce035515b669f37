/*
 * conformance_comm.c — bp conformance for comm plugins (comm-*.so,
 * comm-api.h): the plugin is staged alone with the backends in a private
 * directory, loaded through the core, joined on the first device whose
 * memory it takes (cpu, else cuda, else rocm), and its collectives are run
 * against the reference of comm_ref.h in child ranks: the "mpi" plugin
 * under mpirun -np 2 over TCP loopback (its ranks come from the launcher),
 * any other plugin as one rank in this process. Run under mpirun itself
 * (mpirun -np 4 bp conformance comm-mpi.so), every rank checks in place
 * and prints its own lines. Each check is PASS, FAIL, or UNSUPPORTED with
 * the reason (a library that is absent, a check that needs two ranks); the
 * exit status is 1 when any check fails.
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bp.h"
#include "comm_ref.h"
#include "conformance_comm.h"

/* Set in the child ranks: run the checks and print one line per check. */
#define RANK_ENV "BP_CONFORMANCE_COMM_RANK"
#define MAX_CHECKS 16

typedef struct env {
  bp_context_t *ctx;
  bp_device_t *dev;
  bp_stream_t *s;
  bp_comm_t *comm;
  int rank, size;
} env_t;

typedef struct verdict {
  char name[32];
  char state[16]; /* PASS, FAIL, UNSUPPORTED */
  char detail[256];
} verdict_t;

static bool find_cpu(char *out, size_t size) {
  char dir[PATH_MAX];
  if (bpt_exe_dir(dir, sizeof dir)) {
    snprintf(out, size, "%s/../plugins/backend-cpu.so", dir);
    if (access(out, R_OK) == 0) return true;
  }
  snprintf(out, size, "%s/backend-cpu.so", BP_PLUGIN_INSTALL_DIR);
  return access(out, R_OK) == 0;
}

static void unstage(const char *dir) {
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (e->d_name[0] != '.') unlink(path);
  }
  if (d) closedir(d);
  rmdir(dir);
}

/* Links every backend beside the CPU one into dir: a plugin that takes
 * only device memory (NCCL) is checked on a device of that kind. */
static bool link_backends(const char *dir) {
  char cpu[PATH_MAX], real[PATH_MAX], link[PATH_MAX + 256];
  if (!find_cpu(cpu, sizeof cpu) || !realpath(cpu, real)) return false;
  char *slash = strrchr(real, '/');
  *slash = '\0';
  DIR *d = opendir(real);
  bool ok = d != NULL;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (strncmp(e->d_name, "backend-", 8) || !strstr(e->d_name, ".so")) continue;
    char target[PATH_MAX + 256];
    snprintf(target, sizeof target, "%s/%s", real, e->d_name);
    snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
    ok = symlink(target, link) == 0 && ok;
  }
  if (d) closedir(d);
  return ok;
}

/* A private directory holding the plugin (as comm-undertest.so) and the
 * backends; "" in dir when nothing was made. */
static bool stage(const char *plugin, char *dir, size_t size) {
  const char *t = getenv("TMPDIR");
  snprintf(dir, size, "%s/bp-conformance-comm-XXXXXX", t && t[0] == '/' ? t : "/tmp");
  if (!mkdtemp(dir)) {
    dir[0] = '\0';
    return false;
  }
  char real[PATH_MAX], link[PATH_MAX + 32];
  snprintf(link, sizeof link, "%s/comm-undertest.so", dir);
  if (!realpath(plugin, real) || symlink(real, link) != 0) return false;
  return link_backends(dir);
}

static bp_context_t *open_staged(const char *dir) {
  bp_context_options_t o = {.struct_size = sizeof o, .plugin_dir = dir, .only_plugin_dir = true};
  bp_context_t *ctx = NULL;
  return bp_context_create(&o, &ctx) == BP_OK ? ctx : NULL;
}

static void set(verdict_t *v, const char *name, const char *state, const char *detail) {
  snprintf(v->name, sizeof v->name, "%s", name);
  snprintf(v->state, sizeof v->state, "%s", state);
  snprintf(v->detail, sizeof v->detail, "%s", detail);
}

/* ---- the checks, run on every rank ------------------------------------------ */

typedef enum kind { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, REDUCE, KIND_COUNT } kind_t;
static const char *const kind_names[KIND_COUNT] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                                   "reduce"};

static bp_buffer_t *upload(env_t *e, const void *host, uint64_t bytes) {
  bp_buffer_t *b = NULL;
  if (bp_buffer_alloc(e->dev, bytes ? bytes : 64, &b) != BP_OK) return NULL;
  if (host && bytes && bp_buffer_write(b, 0, host, bytes) != BP_OK) {
    bp_buffer_free(b);
    return NULL;
  }
  return b;
}

/* One call of kind; "" in why when the result matched the reference. */
static void run_one(env_t *e, kind_t k, bp_dtype_t dt, uint64_t n, bp_comm_reduce_op_t op, char *why, size_t size) {
  uint64_t es = bp_dtype_size(dt), all = n * (uint64_t)e->size;
  uint64_t ns = k == REDUCE_SCATTER ? all : n, nr = k == ALL_GATHER ? all : n;
  int root = e->size - 1;
  void *mine = ref_fill(dt, ns, e->rank, op, 0), *want = NULL;
  if (k == ALL_GATHER) want = ref_gather(dt, n, e->size);
  else if (k == BROADCAST) want = ref_fill(dt, n, root, op, 0);
  else if (k == REDUCE_SCATTER) want = ref_reduce(dt, n, e->size, op, (uint64_t)e->rank * n);
  else want = k == REDUCE && e->rank != root ? ref_fill(dt, n, e->rank, op, 0) : ref_reduce(dt, n, e->size, op, 0);
  bp_buffer_t *s = upload(e, mine, ns * es), *r = k == BROADCAST ? s : upload(e, k == REDUCE ? mine : NULL, nr * es);
  bp_status_t st = BP_ERR_OUT_OF_MEMORY;
  if (s && r) switch (k) {
    case ALL_REDUCE: st = bp_comm_all_reduce(e->comm, e->s, s, 0, r, 0, n, dt, op); break;
    case ALL_GATHER: st = bp_comm_all_gather(e->comm, e->s, s, 0, r, 0, n, dt); break;
    case REDUCE_SCATTER: st = bp_comm_reduce_scatter(e->comm, e->s, s, 0, r, 0, n, dt, op); break;
    case BROADCAST: st = bp_comm_broadcast(e->comm, e->s, s, 0, n, dt, root); break;
    case REDUCE: st = bp_comm_reduce(e->comm, e->s, s, 0, r, 0, n, dt, op, root); break;
    case KIND_COUNT: break;
    }
  if (st == BP_OK) st = bp_stream_synchronize(e->s); /* a queued call's failure surfaces here */
  void *got = malloc(nr * es + 1);
  why[0] = '\0';
  if (st != BP_OK) {
    snprintf(why, size, "%s %s count %llu: %s", bp_dtype_name(dt), ref_op_name(op), (unsigned long long)n,
             bp_last_error());
  } else if (!got || (nr && bp_buffer_read(r, 0, got, nr * es) != BP_OK)) {
    snprintf(why, size, "reading the result back: %s", bp_last_error());
  } else {
    uint64_t bad = ref_first_difference(got, want, dt, nr);
    if (bad < nr)
      snprintf(why, size, "%s %s count %llu: element %llu is %g, expected %g", bp_dtype_name(dt), ref_op_name(op),
               (unsigned long long)n, (unsigned long long)bad, ref_get(got, dt, bad), ref_get(want, dt, bad));
  }
  if (r && r != s) bp_buffer_free(r);
  if (s) bp_buffer_free(s);
  free(got);
  free(mine);
  free(want);
}

static void check_kind(env_t *e, kind_t k, bool quick, verdict_t *v) {
  const uint64_t counts[] = {0, 1, 7, 1027};
  bool reduces = k == ALL_REDUCE || k == REDUCE_SCATTER || k == REDUCE;
  char why[512] = "";
  int cases = 0;
  for (int dt = 0; dt < BP_DTYPE_COUNT && !why[0]; dt++)
    for (int c = 0; c < (quick ? 3 : 4) && !why[0] && (BP_DTYPE_BIT(dt) & BP_COMM_DTYPES); c++)
      for (int op = 0; op < (reduces ? BP_COMM_REDUCE_COUNT : 1) && !why[0]; op++, cases++)
        run_one(e, k, (bp_dtype_t)dt, counts[c], (bp_comm_reduce_op_t)op, why, sizeof why);
  char detail[64];
  snprintf(detail, sizeof detail, "%d cases, %d ranks", cases, e->size);
  set(v, kind_names[k], why[0] ? "FAIL" : "PASS", why[0] ? why : detail);
}

static void check_send_recv(env_t *e, verdict_t *v) {
  if (e->size < 2) {
    set(v, "send_recv", "UNSUPPORTED", "needs two ranks");
    return;
  }
  int peer = e->rank ^ 1;
  float mine[5], got[5] = {0};
  for (int i = 0; i < 5; i++) mine[i] = (float)(e->rank * 10 + i);
  bp_buffer_t *b = upload(e, mine, sizeof mine), *in = upload(e, got, sizeof got);
  bp_status_t st = b && in ? BP_OK : BP_ERR_OUT_OF_MEMORY;
  for (int turn = 0; turn < 2 && peer < e->size && st == BP_OK; turn++)
    st = (e->rank % 2) == turn ? bp_comm_send(e->comm, e->s, b, 0, 5, BP_F32, peer)
                               : bp_comm_recv(e->comm, e->s, in, 0, 5, BP_F32, peer);
  if (st == BP_OK) st = bp_stream_synchronize(e->s);
  bool ok = st == BP_OK && bp_buffer_read(in, 0, got, sizeof got) == BP_OK;
  for (int i = 0; ok && peer < e->size && i < 5; i++) ok = got[i] == (float)(peer * 10 + i);
  set(v, "send_recv", ok ? "PASS" : "FAIL",
      ok ? "pairs swap 5 floats" : st != BP_OK ? bp_last_error() : "the received values are not the peer's");
  bp_buffer_free(b);
  bp_buffer_free(in);
}

/* A rank that calls with another count makes the call fail on every rank,
 * and the communicator still works after. */
static void check_mismatch(env_t *e, verdict_t *v) {
  if (e->size < 2) {
    set(v, "mismatch", "UNSUPPORTED", "needs two ranks");
    return;
  }
  float x[8] = {1, 1, 1, 1, 1, 1, 1, 1}, got[8];
  bp_buffer_t *b = upload(e, x, sizeof x);
  bp_status_t st = bp_comm_all_reduce(e->comm, e->s, b, 0, b, 0, e->rank ? 8 : 7, BP_F32, BP_COMM_SUM);
  if (st == BP_OK) st = bp_stream_synchronize(e->s); /* where a queued call's mismatch surfaces */
  bool caught = st == BP_ERR_INVALID_ARGUMENT;
  bp_status_t after = bp_comm_all_reduce(e->comm, e->s, b, 0, b, 0, 8, BP_F32, BP_COMM_SUM);
  if (after == BP_OK) after = bp_stream_synchronize(e->s);
  bool ok = caught && after == BP_OK && bp_buffer_read(b, 0, got, sizeof got) == BP_OK && got[7] == (float)e->size;
  set(v, "mismatch", ok ? "PASS" : "FAIL",
      ok ? "count 7 against 8 fails on every rank" : caught ? "the communicator did not survive" : bp_last_error());
  bp_buffer_free(b);
}

static int run_checks(env_t *e, bool quick, verdict_t *v) {
  int n = 0;
  for (int k = 0; k < KIND_COUNT; k++) check_kind(e, (kind_t)k, quick, &v[n++]);
  check_send_recv(e, &v[n++]);
  check_mismatch(e, &v[n++]);
  bp_status_t st = bp_comm_barrier(e->comm, e->s);
  if (st == BP_OK) st = bp_stream_synchronize(e->s);
  set(&v[n++], "barrier", st == BP_OK ? "PASS" : "FAIL", st == BP_OK ? "every rank entered it" : bp_last_error());
  return n;
}

/* ---- one rank: stage, load, join, check --------------------------------------- */

/* Opens the first device whose memory the plugin takes (cpu, then cuda,
 * then rocm), a stream on it, and the communicator. */
static bool join(env_t *e) {
  static const char *const selectors[] = {"cpu", "cuda", "rocm"};
  bp_comm_options_t o = {.struct_size = sizeof o, .timeout_ms = 20000};
  char why[512] = "no device could be opened";
  for (size_t i = 0; i < sizeof selectors / sizeof selectors[0]; i++) {
    if (bp_device_open(e->ctx, selectors[i], NULL, &e->dev) != BP_OK) continue;
    bp_status_t st = bp_stream_create(e->dev, &e->s);
    if (st == BP_OK && (st = bp_comm_create(e->dev, &o, &e->comm)) == BP_OK) return true;
    snprintf(why, sizeof why, "%s", bp_last_error());
    bp_stream_destroy(e->s);
    bp_device_close(e->dev);
    e->s = NULL;
    e->dev = NULL;
    if (st != BP_ERR_UNSUPPORTED) break; /* the plugin took this memory and failed */
  }
  printf("rank ?: check join FAIL %s\n", why);
  return false;
}

/* Runs every check as one rank; prints "check NAME STATE detail" lines
 * (prefixed "rank R") for the parent. Returns the exit status. */
static int rank_main(const char *plugin, bool quick) {
  char dir[PATH_MAX];
  env_t e = {0};
  verdict_t v[MAX_CHECKS];
  int n = 0, rc = BPT_EXIT_FAIL;
  if (!stage(plugin, dir, sizeof dir) || !(e.ctx = open_staged(dir))) {
    printf("rank ?: check join FAIL %s\n", bp_last_error());
  } else if (join(&e)) {
    bp_comm_rank(e.comm, &e.rank);
    bp_comm_size(e.comm, &e.size);
    n = run_checks(&e, quick, v);
    rc = BPT_EXIT_OK;
    for (int i = 0; i < n; i++) {
      printf("rank %d: check %s %s %s\n", e.rank, v[i].name, v[i].state, v[i].detail);
      if (!strcmp(v[i].state, "FAIL")) rc = BPT_EXIT_FAIL;
    }
  }
  fflush(stdout);
  bp_comm_destroy(e.comm);
  bp_stream_destroy(e.s);
  bp_device_close(e.dev);
  bp_context_destroy(e.ctx);
  if (dir[0]) unstage(dir);
  return rc;
}

/* ---- the parent: load, launch the ranks, report --------------------------------- */

/* The plugin's report when staged alone; false when it could not be read. */
static bool load_report(const char *plugin, bp_comm_plugin_report_t *out) {
  char dir[PATH_MAX];
  bool ok = false;
  bp_context_t *ctx = NULL;
  uint32_t n = 0;
  if (stage(plugin, dir, sizeof dir) && (ctx = open_staged(dir)) && bp_context_comm_plugin_count(ctx, &n) == BP_OK &&
      n == 1)
    ok = bp_context_comm_plugin_report(ctx, 0, out) == BP_OK;
  bp_context_destroy(ctx);
  if (dir[0]) unstage(dir);
  return ok;
}

/* The command that starts the check ranks: mpirun for the MPI plugin
 * (unless this process already is a rank), else this bp as one rank. */
static void rank_command(const bp_comm_plugin_report_t *r, const char *plugin, bool quick, char *out, size_t size) {
  char self[PATH_MAX] = "bp";
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len > 0) self[len] = '\0';
  bool mpi = !strcmp(r->name, "mpi") && r->launched_size <= 0 && system("command -v mpirun >/dev/null 2>&1") == 0;
  snprintf(out, size, "%s%s '%s' conformance%s '%s' 2>&1",
           mpi ? "mpirun --oversubscribe --bind-to none -np 2 --mca btl tcp,self --mca btl_tcp_if_include lo " : "",
           mpi && geteuid() == 0 ? "--allow-run-as-root" : "", self, quick ? " --quick" : "", plugin);
}

static bool merge(verdict_t *v, int *n, const char *line) {
  char name[32], state[16];
  int off = 0;
  if (sscanf(line, "rank %*[^:]: check %31s %15s %n", name, state, &off) < 2) return false;
  int i = 0;
  while (i < *n && strcmp(v[i].name, name)) i++;
  if (i == *n) {
    if (*n == MAX_CHECKS) return true;
    set(&v[(*n)++], name, state, line + off);
  } else if (!strcmp(state, "FAIL") && strcmp(v[i].state, "FAIL")) {
    set(&v[i], name, state, line + off); /* a failure on any rank fails the check */
  }
  char *nl = strchr(v[i].detail, '\n');
  if (nl) *nl = '\0';
  return true;
}

static int check_plugin(const char *plugin, bool quick) {
  bp_comm_plugin_report_t r;
  printf("comm plugin %s\n", plugin);
  if (!load_report(plugin, &r)) {
    printf("  FAIL         load: could not stage or read the plugin\n");
    return 1;
  }
  if (!r.loaded) {
    bool absent = r.status == BP_ERR_UNAVAILABLE;
    printf("  %-12s load: %s at stage %s: %s\n", absent ? "UNSUPPORTED" : "FAIL", bp_status_name(r.status),
           bpt_stage_name(r.stage), r.reason);
    return absent ? 0 : 1;
  }
  printf("  PASS         load: '%s' %s, %s\n", r.name, r.version, r.library);
  char cmd[2 * PATH_MAX + 256], line[1024];
  rank_command(&r, plugin, quick, cmd, sizeof cmd);
  setenv(RANK_ENV, "1", 1);
  FILE *p = popen(cmd, "r");
  unsetenv(RANK_ENV);
  verdict_t v[MAX_CHECKS];
  int n = 0, fails = 0;
  while (p && fgets(line, sizeof line, p)) merge(v, &n, line);
  int status = p ? pclose(p) : -1;
  if (n == 0) {
    printf("  FAIL         ranks: no check ran (%s exited with %d)\n", cmd, status);
    return 1;
  }
  for (int i = 0; i < n; i++) {
    printf("  %-12s %s: %s\n", v[i].state, v[i].name, v[i].detail);
    fails += !strcmp(v[i].state, "FAIL");
  }
  printf("  result: %s\n", fails ? "FAIL" : "PASS");
  return fails ? 1 : 0;
}

bool bpt_is_comm_plugin(const char *path) {
  char *copy = strdup(path);
  bool is = copy && !strncmp(basename(copy), "comm-", 5);
  free(copy);
  return is;
}

int bpt_conformance_comm(int n, char **paths, bool quick) {
  if (getenv(RANK_ENV)) return n == 1 ? rank_main(paths[0], quick) : BPT_EXIT_USAGE;
  /* Under a launcher already: every rank checks, rank 0 reports. */
  if (getenv("OMPI_COMM_WORLD_SIZE") && n == 1) {
    setenv(RANK_ENV, "1", 1);
    return rank_main(paths[0], quick);
  }
  int fails = 0;
  for (int i = 0; i < n; i++) fails += check_plugin(paths[i], quick);
  return fails ? BPT_EXIT_FAIL : BPT_EXIT_OK;
}
