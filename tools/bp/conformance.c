/*
 * conformance.c — `bp conformance [PLUGIN.so ...]`: proves a plugin before it
 * ships. Each plugin runs in its own child process with a time limit, so a
 * crash or hang is reported against the case it happened in and the run
 * goes on with the next plugin. See conformance.h for the structure.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bp.h"
#include "conformance.h"
#include "conformance_comm.h"
#include "conformance_report.h"

extern char **environ;

#ifndef BPT_INSTALL_PLUGIN_DIR
#define BPT_INSTALL_PLUGIN_DIR "/usr/local/lib/backplane"
#endif

/* ---- the child --------------------------------------------------------------*/

void cf_begin(cf_child_t *c, const char *stage, const char *name) {
  fprintf(c->out, "B\t%s\t%s\n", stage, name);
  fflush(c->out);
}

void cf_end(cf_child_t *c, cf_result_t r, const char *fmt, ...) {
  char detail[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  for (char *p = detail; *p; p++)
    if (*p == '\n' || *p == '\t') *p = ' ';
  fprintf(c->out, "E\t%d\t%s\n", (int)r, detail);
  fflush(c->out);
}

/* Finds backend-cpu.so for the reference: next to bp, then the path. */
static bool find_reference(char *out, size_t size) {
  char dir[PATH_MAX];
  if (bpt_exe_dir(dir, sizeof dir)) {
    snprintf(out, size, "%s/../plugins/backend-cpu.so", dir);
    if (access(out, R_OK) == 0) return true;
  }
  const char *env = getenv("BACKPLANE_PLUGIN_PATH");
  char *copy = env ? strdup(env) : NULL, *save = NULL;
  for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
    snprintf(out, size, "%s/backend-cpu.so", d);
    if (access(out, R_OK) == 0) {
      free(copy);
      return true;
    }
  }
  free(copy);
  snprintf(out, size, "%s/backend-cpu.so", BPT_INSTALL_PLUGIN_DIR);
  return access(out, R_OK) == 0;
}

/* The directory staging directories go in: $TMPDIR, else /tmp. */
static const char *tmp_root(void) {
  const char *t = getenv("TMPDIR");
  return t && t[0] == '/' ? t : "/tmp";
}

/* Name of the link to the plugin under test inside the staging directory. */
static void staged_name(const char *plugin, char *out, size_t size) {
  char *copy = strdup(plugin);
  const char *base = copy ? basename(copy) : "backend-undertest.so";
  snprintf(out, size, "%s", strncmp(base, "backend-", 8) ? "backend-undertest.so" : base);
  free(copy);
}

/* Removes a staging directory and whatever is in it (links and files only;
 * the parent does this after the child, whatever the child did). */
static void remove_plugin_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      char path[PATH_MAX + 256];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      unlink(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

/* A private plugin directory with the plugin under test and the reference.
 * dir is set (possibly to a directory already made) even on failure, so the
 * caller can remove it; dir[0] is '\0' when nothing was made. */
static bool make_plugin_dir(const char *plugin, char *dir, size_t size) {
  snprintf(dir, size, "%s/bp-conformance-XXXXXX", tmp_root());
  if (!mkdtemp(dir)) {
    dir[0] = '\0';
    return false;
  }
  char real[PATH_MAX], link[PATH_MAX + 64], ref[PATH_MAX], name[256];
  if (!realpath(plugin, real)) return false;
  staged_name(plugin, name, sizeof name);
  snprintf(link, sizeof link, "%s/%s", dir, name);
  if (symlink(real, link) != 0) return false;
  if (strcmp(name, "backend-cpu.so") && find_reference(ref, sizeof ref) && realpath(ref, real)) {
    snprintf(link, sizeof link, "%s/backend-cpu.so", dir);
    if (symlink(real, link) != 0) return false;
  }
  return true;
}

static void run_device_stages(cf_child_t *c) {
  cf_stage_probe(c);
  if (c->entry.info.flags & BP_DEVICE_FLAG_REFERENCE) {
    cf_begin(c, "ops", "all ops");
    cf_end(c, CF_SKIP, "this is the reference device; test/ checks it against an independent reference");
  } else if (!c->ref) {
    cf_begin(c, "ops", "all ops");
    /* Nothing verified is not a pass: a run whose every op went unchecked
     * must not end in RESULT: PASS. */
    cf_end(c, CF_FAIL, "not verified: no cpu-ref device to compare against (backend-cpu.so not found, "
                       "or its devices hidden by BACKPLANE_BACKENDS)");
  } else {
    cf_stage_ops(c);
  }
  cf_stage_errors(c);
  cf_stage_memory(c);
  cf_stage_concurrency(c);
  cf_stage_graphs(c);
  cf_stage_performance(c);
}

/* Runs in the child, a fresh `bp` process: every stage for every device of
 * the plugin staged (by the parent) in dir. */
static int child_main(const char *plugin, const char *dir, bool quick, FILE *out) {
  cf_child_t c;
  memset(&c, 0, sizeof c);
  c.out = out;
  c.quick = quick;
  char name[256], link_path[PATH_MAX + 256];
  staged_name(plugin, name, sizeof name);
  snprintf(link_path, sizeof link_path, "%s/%s", dir, name);
  c.plugin_path = link_path;
  bp_context_options_t o = {.struct_size = sizeof o, .plugin_dir = dir, .only_plugin_dir = true};
  if (bp_context_create(&o, &c.ctx) != BP_OK) {
    cf_begin(&c, "abi", "context");
    cf_end(&c, CF_FAIL, "%s", bp_last_error());
    return 1;
  }
  cf_stage_abi(&c);
  bp_device_open(c.ctx, "cpu-ref", NULL, &c.ref);
  if (c.ref) bp_stream_create(c.ref, &c.ref_s);
  uint32_t n = 0;
  bp_context_device_count(c.ctx, &n);
  bp_plugin_report_t rep;
  memset(&rep, 0, sizeof rep);
  uint32_t np = 0;
  bp_context_plugin_count(c.ctx, &np);
  for (uint32_t i = 0; i < np; i++) {
    bp_context_plugin_report(c.ctx, i, &rep);
    if (!strcmp(rep.path, link_path)) break;
  }
  for (uint32_t r = 0; rep.loaded && r < n; r++) {
    bp_device_entry_t e;
    bp_context_device_entry(c.ctx, r, &e);
    if (strcmp(e.backend, rep.name)) continue;
    char sel[96];
    snprintf(sel, sizeof sel, "%s:%u", e.backend, e.backend_index);
    fprintf(out, "D\t%s\t%s\n", e.backend, e.info.name);
    c.entry = e;
    /* The plugin alone answers: an op it refuses must not pass on another
     * device through automatic fallback. */
    bp_device_config_t native = {.struct_size = sizeof native, .no_fallback = true};
    if (bp_device_open(c.ctx, sel, &native, &c.dev) != BP_OK || bp_stream_create(c.dev, &c.dev_s) != BP_OK) {
      cf_begin(&c, "probe", "device open");
      cf_end(&c, CF_FAIL, "%s", bp_last_error());
    } else {
      run_device_stages(&c);
    }
    bp_stream_destroy(c.dev_s);
    bp_device_close(c.dev);
    c.dev = NULL;
    c.dev_s = NULL;
  }
  bp_stream_destroy(c.ref_s);
  bp_device_close(c.ref);
  bp_context_destroy(c.ctx);
  return 0;
}

/* ---- the parent -----------------------------------------------------------*/

typedef struct cf_options {
  bool quick, tap;
  int case_timeout_s;
  const char *junit, *json, *xfail;
  int child_fd;          /* internal: >= 0 in a child, the pipe to write to */
  const char *stage_dir; /* internal: the child's staging directory */
} cf_options_t;

/* The progress line for the check just begun (bpt_progress shows it only
 * when stderr is a terminal), cut to the terminal's width so that \r
 * rewrites it in place. */
static void check_progress(int i, int n, const char *plugin, const char *device, const char *stage,
                           const char *name, int done) {
  struct winsize ws;
  int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
  const char *base = strrchr(plugin, '/');
  char label[512];
  snprintf(label, sizeof label, "%s%s%s: %s: %s (%d done)", base ? base + 1 : plugin, device[0] ? " " : "",
           device, stage, name, done);
  int room = cols - 16; /* "[i/n] " and a margin */
  if (room > 8 && (int)strlen(label) > room) snprintf(label + room - 3, 4, "...");
  bpt_progress(i, n, label);
}

/* Reads the child's lines until it exits or stalls for case_timeout_s. The
 * child leads its own process group, so a hang is killed with whatever it
 * started. Progress (plugin i of n) goes to a terminal, check by check. */
static void collect(cf_report_t *rep, const char *plugin, int fd, pid_t pid, int timeout_s, int i, int n) {
  FILE *in = fdopen(fd, "r");
  char line[2048], stage[64] = "", name[256] = "", device[256] = "";
  bool open_case = false, timed_out = false;
  int done = 0;
  double started = bpt_now();
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int pr = poll(&p, 1, timeout_s * 1000);
    if (pr == 0) {
      timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    if (pr < 0 && errno == EINTR) continue;
    if (!fgets(line, sizeof line, in)) break;
    line[strcspn(line, "\n")] = '\0';
    char *f1 = strchr(line, '\t'), *f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
    if (!f1 || !f2) continue;
    *f1++ = '\0';
    *f2++ = '\0';
    if (line[0] == 'D') {
      snprintf(device, sizeof device, "%s/%s", f1, f2);
    } else if (line[0] == 'B') {
      snprintf(stage, sizeof stage, "%s", f1);
      snprintf(name, sizeof name, "%s", f2);
      open_case = true;
      started = bpt_now();
      check_progress(i, n, plugin, device, stage, name, done);
    } else if (line[0] == 'E' && open_case) {
      cf_report_add(rep, plugin, device[0] ? device : plugin, stage, name, (cf_result_t)atoi(f1), f2,
                    bpt_now() - started);
      open_case = false;
      done++;
    }
  }
  fclose(in);
  int ws = 0;
  waitpid(pid, &ws, 0);
  char why[300];
  if (timed_out)
    snprintf(why, sizeof why, "timed out after %d s in %s", timeout_s, open_case ? name : "start-up");
  else if (WIFSIGNALED(ws))
    snprintf(why, sizeof why, "crashed in %s: %s", open_case ? name : "start-up", strsignal(WTERMSIG(ws)));
  else if (open_case || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
    snprintf(why, sizeof why, "exited with status %d in %s", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1,
             open_case ? name : "start-up");
  else
    return;
  cf_report_add(rep, plugin, device[0] ? device : plugin, open_case ? stage : "abi",
                open_case ? name : "child process", CF_CRASH, why, bpt_now() - started);
}

/* Tests one plugin in a fresh process: `bp conformance --child-fd N
 * --stage-dir DIR PLUGIN`, started by posix_spawn from /proc/self/exe. Not a
 * fork: the parent has loaded every runtime (PoCL, the Vulkan loader) and
 * their threads, and a forked child inherits their locks held mid-call. The
 * staging directory is made here and removed here, whatever the child did. */
static void test_plugin(cf_report_t *rep, const char *plugin, const cf_options_t *o, int i, int n) {
  char dir[PATH_MAX];
  int fds[2] = {-1, -1};
  if (!make_plugin_dir(plugin, dir, sizeof dir)) {
    char why[PATH_MAX + 64];
    snprintf(why, sizeof why, "cannot stage it in %s: %s", dir[0] ? dir : tmp_root(), strerror(errno));
    cf_report_add(rep, plugin, plugin, "abi", "open", CF_FAIL, why, 0);
    goto out;
  }
  if (pipe2(fds, O_CLOEXEC) != 0) {
    cf_report_add(rep, plugin, plugin, "abi", "child process", CF_FAIL, strerror(errno), 0);
    goto out;
  }
  fcntl(fds[1], F_SETFD, 0); /* the write end, and only it, reaches the child */
  char fd_arg[16];
  snprintf(fd_arg, sizeof fd_arg, "%d", fds[1]);
  char *argv[10];
  int k = 0;
  argv[k++] = "bp", argv[k++] = "conformance", argv[k++] = "--child-fd", argv[k++] = fd_arg;
  argv[k++] = "--stage-dir", argv[k++] = dir;
  if (o->quick) argv[k++] = "--quick";
  argv[k++] = (char *)plugin, argv[k] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO); /* keep --tap output clean */
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);
  fflush(NULL);
  pid_t pid = -1;
  int err = posix_spawn(&pid, "/proc/self/exe", &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  close(fds[1]);
  if (err != 0) {
    cf_report_add(rep, plugin, plugin, "abi", "child process", CF_FAIL, strerror(err), 0);
    close(fds[0]);
  } else {
    collect(rep, plugin, fds[0], pid, o->case_timeout_s, i, n); /* closes fds[0] */
  }
out:
  if (dir[0]) remove_plugin_dir(dir);
}

/* With no paths: every candidate the loader saw; refused ones fail here. */
static int list_plugins(char ***out) {
  bpt_context_flags_t flags = {false};
  bp_context_t *ctx = bpt_context_open(&flags);
  uint32_t n = 0;
  if (ctx) bp_context_plugin_count(ctx, &n);
  char **paths = calloc(n + 1, sizeof *paths);
  int count = 0;
  for (uint32_t i = 0; paths && i < n; i++) {
    bp_plugin_report_t r;
    bp_context_plugin_report(ctx, i, &r);
    paths[count++] = strdup(r.path);
  }
  bp_context_destroy(ctx);
  *out = paths;
  return count;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: bp conformance [options] [PLUGIN.so ...]\n"
          "Tests each plugin (every one found when none is named) in its own process:\n"
          "ABI and descriptor, probe, every op and dtype it claims against cpu-ref,\n"
          "error handling, memory accounting, concurrency and a performance floor.\n\n"
          "  --quick           fewer and smaller cases\n"
          "  --timeout S       seconds a single case may take (default 60)\n"
          "  --xfail FILE      expected failures, one 'backend/case-prefix' per line\n"
          "  --tap             TAP on stdout instead of the table\n"
          "  --junit FILE      also write JUnit XML\n"
          "  --json FILE       also write JSON\n"
          "A plugin whose runtime or device is absent (init or probe answered\n"
          "BP_ERR_UNAVAILABLE, or no device) is reported as skipped, \"unavailable: <reason>\".\n"
          "With cpu-ref out of reach a device's ops are not verified, and that fails.\n"
          "Progress, check by check, is shown on stderr when it is a terminal.\n"
          "Exit status: 0 when every plugin passed or was unavailable, 1 when a case\n"
          "failed or crashed, 2 on usage errors.\n");
}

int bp_cmd_conformance(int argc, char **argv) {
  cf_options_t o = {false, false, 60, NULL, NULL, NULL, -1, NULL};
  char **paths = calloc((size_t)argc + 1, sizeof *paths);
  int npaths = 0;
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},          {"quick", no_argument, NULL, 'q'},
      {"tap", no_argument, NULL, 't'},           {"timeout", required_argument, NULL, 'T'},
      {"xfail", required_argument, NULL, 'x'},   {"junit", required_argument, NULL, 'J'},
      {"json", required_argument, NULL, 'j'},
      {"child-fd", required_argument, NULL, 'C'},  /* internal: see test_plugin */
      {"stage-dir", required_argument, NULL, 'S'}, /* internal */
      {NULL, 0, NULL, 0}};
  bool started = false;
  unsigned long long n;
  for (int c; (c = bpt_getopt("conformance", argc, argv, "h", longopts, &started)) != -1;) {
    bool ok = true;
    switch (c) {
    case 'h': usage(stdout); free(paths); return BPT_EXIT_OK;
    case 'q': o.quick = true; break;
    case 't': o.tap = true; break;
    case 'T':
      ok = bpt_parse_count("conformance", "--timeout", optarg, 1, 86400, &n);
      if (ok) o.case_timeout_s = (int)n;
      break;
    case 'x': o.xfail = optarg; break;
    case 'J': o.junit = optarg; break;
    case 'j': o.json = optarg; break;
    case 'C':
      ok = bpt_parse_count("conformance", "--child-fd", optarg, 0, INT_MAX, &n);
      if (ok) o.child_fd = (int)n;
      break;
    case 'S': o.stage_dir = optarg; break;
    default: ok = false; break;
    }
    if (!ok) {
      free(paths);
      return BPT_EXIT_USAGE;
    }
  }
  for (int i = optind; i < argc; i++) paths[npaths++] = argv[i];
  int ncomm = 0; /* comm plugins are checked by conformance_comm.c */
  for (int i = 0; i < npaths; i++) ncomm += bpt_is_comm_plugin(paths[i]);
  if (ncomm) {
    int rc = ncomm == npaths ? bpt_conformance_comm(npaths, paths, o.quick)
                             : bpt_usage_error("conformance", "check comm plugins (comm-*.so) and backends in separate runs");
    free(paths);
    return rc;
  }
  if (o.child_fd >= 0) {
    FILE *out = npaths == 1 && o.stage_dir ? fdopen(o.child_fd, "w") : NULL;
    if (!out) {
      free(paths);
      return bpt_usage_error("conformance", "--child-fd is internal: it takes --stage-dir and one plugin");
    }
    fcntl(o.child_fd, F_SETFD, FD_CLOEXEC); /* helpers the loader starts must not hold the pipe open */
    int rc = child_main(paths[0], o.stage_dir, o.quick, out);
    fclose(out);
    free(paths);
    return rc;
  }
  char **found = NULL;
  if (npaths == 0) npaths = list_plugins(&found);
  cf_report_t rep;
  cf_report_init(&rep);
  if (o.xfail && !cf_report_load_xfail(&rep, o.xfail)) {
    fprintf(stderr, "bp conformance: cannot read %s: %s\n", o.xfail, strerror(errno));
    return BPT_EXIT_USAGE;
  }
  for (int i = 0; i < npaths; i++) {
    const char *p = found ? found[i] : paths[i];
    bpt_progress(i + 1, npaths, p);
    test_plugin(&rep, p, &o, i + 1, npaths);
  }
  bpt_progress_done();
  if (o.tap) cf_report_tap(&rep, stdout); else cf_report_table(&rep, stdout);
  if (o.junit) cf_report_junit(&rep, o.junit);
  if (o.json) cf_report_json(&rep, o.json);
  int failed = cf_report_failures(&rep);
  cf_report_free(&rep);
  for (int i = 0; found && i < npaths; i++) free(found[i]);
  free(found);
  free(paths);
  return failed ? BPT_EXIT_FAIL : BPT_EXIT_OK;
}
