/*
 * isolate.c — probing a plugin in a helper process first.
 *
 * A plugin whose constructor or probe crashes, calls exit, or hangs would
 * take the application down (or freeze it) if loaded in-process. With
 * isolation (the default), the loader starts the bp-probe helper with
 * posix_spawn — a fresh process image with default signal handlers and no
 * inherited descriptors or threads, unlike a fork of a possibly threaded
 * application — and the helper loads, validates, initialises and probes the
 * plugin with the loader's own code. The helper fills a result area shared
 * with the parent (a memfd) as it goes, so the stage it reached is known even
 * when it dies, and signals completion with one byte on a pipe; a helper
 * that does not finish within the timeout is killed. When the helper cannot
 * be found, a forked child does the same (and the report says so).
 *
 * The verdict — the plugin's name, version, ABI, and either every device
 * record or the refusal — is cached by file identity (probe_cache.c), and
 * the loader uses the helper's device records instead of probing again.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "isolate.h"

#ifndef BP_PROBE_HELPER_PATH
#define BP_PROBE_HELPER_PATH BP_PLUGIN_INSTALL_DIR "/bp-probe"
#endif

extern char **environ;

#define AREA_MAGIC 0x52504242u /* "BBPR" */
#define HELPER_RESULT_FD 3
#define HELPER_AREA_FD 4

/* Shared between the loader and the process probing for it. The header lets
 * a helper from another build refuse an area it does not understand. */
typedef struct probe_area {
  uint32_t magic, size;
  char version[32];           /* BP_VERSION_STRING of the loader */
  volatile uint32_t accepted; /* set by the prober before it loads */
  bp__plugin_t plugin;        /* filled by the loader's code as it goes */
} probe_area_t;

bool bp__isolation_wanted(const bp_context_options_t *o) {
  if (bp__in_isolated_child) return false;
  if (o->in_process_probe) return false;
  if (o->isolate_probe) return true;
  const char *env = bp__getenv("BACKPLANE_ISOLATE");
  return !(env && !strcmp(env, "0"));
}

uint32_t bp__probe_timeout_s(const bp_context_options_t *o) {
  if (o->probe_timeout_s) return o->probe_timeout_s;
  const char *env = bp__getenv("BACKPLANE_PROBE_TIMEOUT");
  if (env && *env) {
    char *end;
    unsigned long v = strtoul(env, &end, 10);
    if (!*end && v >= 1 && v <= 3600) return (uint32_t)v;
  }
  return 10;
}

/* ---- the prober: runs in bp-probe or in a forked child ------------------- */

/* Loads path into a's plugin with the loader's code, signals completion on
 * fd and ends the process. Never returns. */
static void probe_here(const char *path, int fd, probe_area_t *a) {
  bp__in_isolated_child = true; /* no registry, no isolation, no refusal logs */
  bp__plugin_t *p = &a->plugin;
  bp_context_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.options.struct_size = sizeof ctx.options;
  memset(p, 0, sizeof *p);
  p->report.struct_size = sizeof p->report;
  p->report.stage = BP_STAGE_OPEN;
  snprintf(p->report.path, sizeof p->report.path, "%s", path);
  ctx.plugins = p;
  ctx.plugin_count = ctx.plugin_capacity = 1;
  a->accepted = 1;
  bp__loader_load_file(&ctx, p, path);
  char done = 1;
  ssize_t w = write(fd, &done, 1);
  (void)w;
  _exit(0);
}

int bp__probe_helper_main(int argc, char **argv) {
  if (argc != 3 || strcmp(argv[1], "--probe") != 0) {
    fprintf(stderr, "bp-probe: backplane's plugin probe helper, started by "
                    "libbackplane, not by hand\n");
    return 2;
  }
  struct stat st;
  if (fstat(HELPER_AREA_FD, &st) != 0 || (size_t)st.st_size < sizeof(probe_area_t)) return 2;
  probe_area_t *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_SHARED, HELPER_AREA_FD, 0);
  if (a == MAP_FAILED) return 2;
  close(HELPER_AREA_FD);
  if (a->magic != AREA_MAGIC || a->size != sizeof *a ||
      strncmp(a->version, BP_VERSION_STRING, sizeof a->version) != 0)
    return 2; /* another build's loader: it falls back to a fork */
  /* What the plugin starts must not inherit the result channel. */
  int fd = fcntl(HELPER_RESULT_FD, F_DUPFD_CLOEXEC, HELPER_RESULT_FD + 2);
  if (fd < 0) return 2;
  close(HELPER_RESULT_FD);
  probe_here(argv[2], fd, a);
  return 0;
}

/* ---- waiting for the prober ------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void reap(pid_t pid, int *out_wstatus) {
  *out_wstatus = 0;
  while (waitpid(pid, out_wstatus, 0) < 0 && errno == EINTR) {
  }
}

/* Waits until the prober signals completion, dies, or timeout_s passes
 * (then kills it), and reaps it. A pidfd, where the kernel has them, also
 * notices a prober that died while a process it started keeps the pipe
 * open. Returns true on timeout. */
bool bp__isolate_wait(pid_t pid, int rd, uint32_t timeout_s, bool *out_done, int *out_wstatus) {
  int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
  double deadline = now_s() + timeout_s;
  bool done = false, ended = false, timed_out = false;
  while (!done && !ended) {
    int left_ms = (int)((deadline - now_s()) * 1000);
    if (left_ms <= 0) {
      timed_out = true;
      break;
    }
    struct pollfd pfd[2] = {{.fd = rd, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
    int pr = poll(pfd, pidfd >= 0 ? 2 : 1, left_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr < 0) break;
    if (pfd[0].revents) {
      char c;
      ssize_t n = read(rd, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n == 1)
        done = true;
      else
        ended = true; /* EOF or error: the prober is gone */
    }
    if (pidfd >= 0 && pfd[1].revents) ended = true;
  }
  if (!done && !timed_out) { /* a byte written just before it ended */
    char c;
    int fl = fcntl(rd, F_GETFL);
    fcntl(rd, F_SETFL, fl | O_NONBLOCK);
    done = read(rd, &c, 1) == 1;
  }
  if (done && pidfd >= 0) { /* it exits right after; do not wait forever */
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
    int left_ms = (int)((deadline - now_s()) * 1000);
    if (poll(&pfd, 1, left_ms > 1000 ? left_ms : 1000) <= 0) kill(pid, SIGKILL);
  }
  if (timed_out) kill(pid, SIGKILL);
  reap(pid, out_wstatus);
  if (pidfd >= 0) close(pidfd);
  *out_done = done;
  return timed_out;
}

/* ---- turning what the prober left into a verdict ------------------------- */

static const char *stage_name(bp_plugin_stage_t stage) {
  switch (stage) {
  case BP_STAGE_OPEN:
    return "loading";
  case BP_STAGE_SYMBOL:
  case BP_STAGE_VERSION:
  case BP_STAGE_VALIDATE:
    return "validating";
  case BP_STAGE_INIT:
    return "init";
  case BP_STAGE_PROBE:
    return "probe";
  default:
    return "loading or probing";
  }
}

const char *bp__isolate_stage_name(bp_plugin_stage_t stage) { return stage_name(stage); }

/* Faults say something about the plugin; other signals (an interrupt from
 * the terminal, the OOM killer) do not, and such verdicts are not cached. */
static bool fault_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGABRT ||
         sig == SIGTRAP || sig == SIGSYS;
}

static void describe_exit(int wstatus, bp_plugin_stage_t stage, const char *how, bp__verdict_t *v) {
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    const char *abbrev = sigabbrev_np(sig);
    snprintf(v->reason, sizeof v->reason, "crashed in %s: SIG%s (%s, signal %d) (%s)",
             stage_name(stage), abbrev ? abbrev : "?", strsignal(sig), sig, how);
    v->cacheable = fault_signal(sig);
  } else if (WIFEXITED(wstatus)) {
    snprintf(v->reason, sizeof v->reason, "called exit(%d) in %s (%s)", WEXITSTATUS(wstatus),
             stage_name(stage), how);
  } else {
    snprintf(v->reason, sizeof v->reason, "isolated probe ended abnormally (%s)", how);
    v->cacheable = false;
  }
}

/* Fills v from what the prober wrote into a. The area was written by a
 * process that may have died half-way: every string is terminated and every
 * count bounded before use. */
static void verdict_from_area(probe_area_t *a, bool done, bool timed_out, int wstatus,
                              uint32_t timeout_s, const char *how, bp__verdict_t *v) {
  bp_plugin_report_t *r = &a->plugin.report;
  r->name[sizeof r->name - 1] = r->version[sizeof r->version - 1] = '\0';
  r->reason[sizeof r->reason - 1] = '\0';
  snprintf(v->name, sizeof v->name, "%s", r->name);
  snprintf(v->version, sizeof v->version, "%s", r->version);
  v->abi_major = r->plugin_abi_major;
  v->abi_minor = r->plugin_abi_minor;
  v->stage = (unsigned)r->stage <= BP_STAGE_READY ? r->stage : BP_STAGE_OPEN;
  v->cacheable = true;
  if (timed_out) {
    v->status = BP_ERR_TIMEOUT;
    snprintf(v->reason, sizeof v->reason, "timed out after %u s in %s (%s)", timeout_s,
             stage_name(v->stage), how);
    return;
  }
  if (!done) {
    v->status = BP_ERR_INCOMPATIBLE;
    describe_exit(wstatus, v->stage, how, v);
    return;
  }
  if (r->loaded) {
    uint32_t n = a->plugin.device_count;
    v->status = BP_OK;
    v->stage = BP_STAGE_READY;
    v->device_count = n < BP__MAX_DEVICES_PER_PLUGIN ? n : BP__MAX_DEVICES_PER_PLUGIN;
    memcpy(v->infos, a->plugin.infos, v->device_count * sizeof v->infos[0]);
    return;
  }
  v->status = r->status < 0 ? r->status : BP_ERR_INTERNAL;
  snprintf(v->reason, sizeof v->reason, "%s", r->reason);
  /* Running out of memory says nothing lasting about the plugin. */
  if (v->status == BP_ERR_OUT_OF_MEMORY || v->status == BP_ERR_INTERNAL) v->cacheable = false;
}

static void area_init(probe_area_t *a) {
  memset(a, 0, sizeof *a);
  a->magic = AREA_MAGIC;
  a->size = sizeof *a;
  snprintf(a->version, sizeof a->version, "%s", BP_VERSION_STRING);
}

static void fail_verdict(bp__verdict_t *v, const char *what, int err) {
  v->status = BP_ERR_INTERNAL;
  v->stage = BP_STAGE_OPEN;
  v->cacheable = false;
  snprintf(v->reason, sizeof v->reason, "isolated probe: %s failed: %s", what, strerror(err));
}

/* ---- the helper: bp-probe through posix_spawn ---------------------------- */

static bool helper_usable(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || access(path, X_OK) != 0) return false;
  /* The same rule as for plugins: nobody but its owner and root may write it. */
  return !(st.st_mode & S_IWOTH) && !((st.st_mode & S_IWGRP) && st.st_gid != 0);
}

/* Finds bp-probe: BACKPLANE_PROBE_HELPER when set (alone), else
 * backplane/bp-probe beside the library, else the build-time path. tried
 * lists where it looked. */
static bool find_helper(char *out, size_t size, char *tried, size_t tried_size) {
  const char *env = bp__getenv("BACKPLANE_PROBE_HELPER");
  tried[0] = '\0';
  if (env) {
    snprintf(out, size, "%s", env);
    snprintf(tried, tried_size, "%s", env);
    return helper_usable(out);
  }
  char libdir[PATH_MAX];
  if (bp__library_dir(libdir, sizeof libdir)) {
    snprintf(out, size, "%s/backplane/bp-probe", libdir);
    snprintf(tried, tried_size, "%s", out);
    if (helper_usable(out)) return true;
  }
  snprintf(out, size, "%s", BP_PROBE_HELPER_PATH);
  size_t len = strlen(tried);
  snprintf(tried + len, tried_size - len, "%s%s", len ? " or " : "", out);
  return helper_usable(out);
}

/* Probes path through the helper. Returns false, leaving v alone, when the
 * helper could not be started or refused the area (another build): the
 * caller then forks instead. */
static bool spawn_probe(const char *helper, const char *path, uint32_t timeout_s,
                        bp__verdict_t *v) {
  bool ok = false;
  int memfd = -1, hi_area = -1, hi_out = -1, fds[2] = {-1, -1};
  probe_area_t *a = MAP_FAILED;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  bool fa_init = false, attr_init = false;
  if ((memfd = memfd_create("bp-probe", MFD_CLOEXEC)) < 0 || ftruncate(memfd, sizeof *a) != 0 ||
      (a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0)) == MAP_FAILED ||
      pipe2(fds, O_CLOEXEC) != 0) {
    bp__log(BP_LOG_WARN, BP__LOG_LOADER,
            "probe helper: cannot set up its result area: %s; forking instead", strerror(errno));
    goto out;
  }
  area_init(a);
  /* Above the numbers the child will use, so no dup2 overwrites a source. */
  hi_area = fcntl(memfd, F_DUPFD_CLOEXEC, 10);
  hi_out = fcntl(fds[1], F_DUPFD_CLOEXEC, 10);
  if (hi_area < 0 || hi_out < 0) goto out;
  posix_spawn_file_actions_init(&fa);
  fa_init = true;
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, hi_out, HELPER_RESULT_FD);
  posix_spawn_file_actions_adddup2(&fa, hi_area, HELPER_AREA_FD);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  posix_spawn_file_actions_addclosefrom_np(&fa, HELPER_AREA_FD + 1);
#endif
  posix_spawnattr_init(&attr);
  attr_init = true;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char *argv[] = {"bp-probe", "--probe", (char *)path, NULL};
  pid_t pid;
  fflush(NULL); /* output the plugin's exit handlers add comes after ours */
  int rc = posix_spawn(&pid, helper, &fa, &attr, argv, environ);
  close(hi_out);
  hi_out = -1;
  close(fds[1]);
  fds[1] = -1;
  if (rc != 0) {
    bp__log(BP_LOG_WARN, BP__LOG_LOADER, "probe helper %s: cannot start it: %s; forking instead",
            helper, strerror(rc));
    goto out;
  }
  bool done;
  int wstatus;
  bool timed_out = bp__isolate_wait(pid, fds[0], timeout_s, &done, &wstatus);
  if (!a->accepted && !timed_out) {
    bp__log(BP_LOG_WARN, BP__LOG_LOADER,
            "probe helper %s did not take the probe (another build of backplane?); "
            "forking instead",
            helper);
    goto out;
  }
  verdict_from_area(a, done, timed_out, wstatus, timeout_s, "isolated probe", v);
  ok = true;
out:
  if (fa_init) posix_spawn_file_actions_destroy(&fa);
  if (attr_init) posix_spawnattr_destroy(&attr);
  if (a != MAP_FAILED) munmap(a, sizeof *a);
  int open_fds[] = {memfd, hi_area, hi_out, fds[0], fds[1]};
  for (size_t i = 0; i < sizeof open_fds / sizeof open_fds[0]; i++)
    if (open_fds[i] >= 0) close(open_fds[i]);
  return ok;
}

/* ---- the fallback: a forked child ----------------------------------------- */

/* Probes path in a forked child, for when bp-probe is missing. A fork copies
 * the application as it is (its other threads are gone, their locks may be
 * held), which is why the helper is preferred. */
static void fork_probe(const char *path, uint32_t timeout_s, const char *why, bp__verdict_t *v) {
  int fds[2];
  probe_area_t *a =
      mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (a == MAP_FAILED) {
    fail_verdict(v, "mmap", errno);
    return;
  }
  area_init(a);
  if (pipe2(fds, O_CLOEXEC) != 0) {
    fail_verdict(v, "pipe", errno);
    munmap(a, sizeof *a);
    return;
  }
  fflush(NULL); /* a plugin calling exit in the child must not repeat output */
  pid_t pid = fork();
  if (pid < 0) {
    fail_verdict(v, "fork", errno);
    close(fds[0]);
    close(fds[1]);
    munmap(a, sizeof *a);
    return;
  }
  if (pid == 0) {
    /* The application's own handlers for fatal signals (a crash reporter, a
     * test framework that longjmps back into its runner) must not run here:
     * the child would go on as a copy of the application. */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    close(fds[0]);
    probe_here(path, fds[1], a);
  }
  close(fds[1]);
  bool done;
  int wstatus;
  bool timed_out = bp__isolate_wait(pid, fds[0], timeout_s, &done, &wstatus);
  close(fds[0]);
  char how[256];
  snprintf(how, sizeof how, "isolated probe in a forked child: %s", why);
  verdict_from_area(a, done, timed_out, wstatus, timeout_s, how, v);
  munmap(a, sizeof *a);
}

void bp__probe_isolated(const char *path, uint32_t timeout_s, bp__verdict_t *v) {
  static atomic_bool warned;
  char helper[PATH_MAX], tried[2 * PATH_MAX + 8], why[256];
  memset(v, 0, sizeof *v);
  if (find_helper(helper, sizeof helper, tried, sizeof tried)) {
    if (spawn_probe(helper, path, timeout_s, v)) return;
    snprintf(why, sizeof why, "bp-probe at %.200s did not start", helper);
  } else {
    snprintf(why, sizeof why, "bp-probe helper not found");
    if (!atomic_exchange(&warned, true))
      bp__log(BP_LOG_WARN, BP__LOG_LOADER,
              "probe helper bp-probe not found (looked at %s); probing plugins in "
              "forked children instead",
              tried);
  }
  fork_probe(path, timeout_s, why, v);
}

/* ---- the entry point: cache, then helper ------------------------------------ */

void bp__probe_verdict(const char *path, uint32_t timeout_s, bp__verdict_t *v) {
  bp__probe_key_t key;
  bool keyed = bp__probe_cache_key(path, &key);
  if (keyed && bp__probe_cache_lookup(&key, timeout_s, v)) {
    v->from_cache = true;
    bp__log(BP_LOG_DEBUG, BP__LOG_LOADER, "probe verdict for %s from the cache: %s%s%s", path,
            v->status == BP_OK ? "loads" : bp_status_name(v->status),
            v->status == BP_OK ? "" : ": ", v->reason);
    return;
  }
  double t0 = now_s();
  bp__probe_isolated(path, timeout_s, v);
  bp__log(BP_LOG_DEBUG, BP__LOG_LOADER,
          "probe verdict for %s from an isolated probe (%.1f ms): %s%s%s", path,
          (now_s() - t0) * 1e3, v->status == BP_OK ? "loads" : bp_status_name(v->status),
          v->status == BP_OK ? "" : ": ", v->reason);
  if (keyed && v->cacheable) bp__probe_cache_store(&key, timeout_s, v);
}
