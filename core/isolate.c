/*
 * isolate.c — probing a plugin in a child process first.
 *
 * A plugin whose constructor or probe crashes, calls exit, or hangs would
 * take the application down (or freeze it) if loaded in-process. With
 * isolate_probe, the loader forks, loads and probes the plugin in the child,
 * and reads back a small result over a pipe. Only when the child reports
 * success does the parent load the plugin itself.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

typedef struct child_result {
  int32_t status;
  int32_t stage;
  char reason[512];
} child_result_t;

/* Runs in the child: the same steps as the in-process load, reporting the
 * first failure. p lives in memory shared with the parent, so the stage the
 * child reached is known even when it dies. Never returns. */
static void child_probe(const char *path, int fd, bp__plugin_t *p) {
  /* The application's own handlers for fatal signals (a crash reporter, a
   * test framework that longjmps back into its runner) must not run here:
   * the child would go on as a copy of the application. Restore the
   * defaults so a fault ends the child and the parent sees the signal. */
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE,
                              SIGABRT, SIGTRAP, SIGSYS};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
    signal(fatal[i], SIG_DFL);
  sigset_t all;
  sigemptyset(&all);
  sigprocmask(SIG_SETMASK, &all, NULL);
  child_result_t r = {0};
  bp__in_isolated_child = true; /* no registry, no duplicate log lines */
  bp_context_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.options.struct_size = sizeof ctx.options;
  p->report.stage = BP_STAGE_OPEN;
  snprintf(p->report.path, sizeof p->report.path, "%s", path);
  ctx.plugins = p;
  ctx.plugin_count = ctx.plugin_capacity = 1;
  bp__loader_load_file(&ctx, p, path);
  r.status = p->report.loaded ? BP_OK : p->report.status;
  r.stage = p->report.stage;
  snprintf(r.reason, sizeof r.reason, "%s", p->report.reason);
  ssize_t w = write(fd, &r, sizeof r);
  (void)w;
  _exit(0);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Reads the child's result, waiting at most timeout_s. Returns bytes read,
 * 0 on EOF without data, -1 on timeout. */
static ssize_t read_with_timeout(int fd, child_result_t *r, uint32_t timeout_s) {
  size_t got = 0;
  double deadline = now_s() + timeout_s;
  while (got < sizeof *r) {
    int left_ms = (int)((deadline - now_s()) * 1000);
    if (left_ms <= 0) return -1;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int pr = poll(&pfd, 1, left_ms);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) return -1;
    ssize_t n = read(fd, (char *)r + got, sizeof *r - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  return (ssize_t)got;
}

static const char *stage_name(bp_plugin_stage_t stage) {
  switch (stage) {
  case BP_STAGE_OPEN: return "loading";
  case BP_STAGE_SYMBOL:
  case BP_STAGE_VERSION:
  case BP_STAGE_VALIDATE: return "validating";
  case BP_STAGE_INIT: return "init";
  case BP_STAGE_PROBE: return "probe";
  default: return "loading or probing";
  }
}

static void describe_exit(int wstatus, bp_plugin_stage_t stage, char *reason,
                          size_t size) {
  if (WIFSIGNALED(wstatus)) {
    const char *abbrev = sigabbrev_np(WTERMSIG(wstatus));
    snprintf(reason, size, "crashed in %s: SIG%s (%s, signal %d) (isolated probe)",
             stage_name(stage), abbrev ? abbrev : "?",
             strsignal(WTERMSIG(wstatus)), WTERMSIG(wstatus));
    return;
  }
  if (WIFEXITED(wstatus))
    snprintf(reason, size, "called exit(%d) in %s (isolated probe)",
             WEXITSTATUS(wstatus), stage_name(stage));
  else
    snprintf(reason, size, "isolated probe ended abnormally");
}

bp_status_t bp__isolated_probe(const char *path, uint32_t timeout_s,
                               char *reason, size_t reason_size,
                               bp_plugin_stage_t *out_stage) {
  int fds[2];
  *out_stage = BP_STAGE_OPEN;
  bp__plugin_t *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    snprintf(reason, reason_size, "isolated probe: mmap failed: %s",
             strerror(errno));
    return BP_ERR_INTERNAL;
  }
  if (pipe2(fds, O_CLOEXEC) != 0) {
    snprintf(reason, reason_size, "isolated probe: pipe failed: %s",
             strerror(errno));
    munmap(shared, sizeof *shared);
    return BP_ERR_INTERNAL;
  }
  fflush(NULL); /* a plugin calling exit in the child must not repeat output */
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(reason, reason_size, "isolated probe: fork failed: %s",
             strerror(errno));
    close(fds[0]);
    close(fds[1]);
    munmap(shared, sizeof *shared);
    return BP_ERR_INTERNAL;
  }
  if (pid == 0) {
    close(fds[0]);
    child_probe(path, fds[1], shared);
  }
  close(fds[1]);
  child_result_t r;
  memset(&r, 0, sizeof r);
  ssize_t got = read_with_timeout(fds[0], &r, timeout_s);
  close(fds[0]);
  int wstatus = 0;
  bp_status_t st = BP_OK;
  if (got < 0) {
    kill(pid, SIGKILL);
    while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    *out_stage = shared->report.stage;
    snprintf(reason, reason_size, "timed out after %u s in %s (isolated probe)",
             timeout_s, stage_name(*out_stage));
    munmap(shared, sizeof *shared);
    return BP_ERR_TIMEOUT;
  }
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if ((size_t)got < sizeof r) {
    *out_stage = shared->report.stage;
    describe_exit(wstatus, *out_stage, reason, reason_size);
    munmap(shared, sizeof *shared);
    return BP_ERR_INCOMPATIBLE;
  }
  munmap(shared, sizeof *shared);
  r.reason[sizeof r.reason - 1] = '\0';
  if (r.status != BP_OK) {
    snprintf(reason, reason_size, "%s", r.reason);
    *out_stage = (bp_plugin_stage_t)r.stage;
    st = (bp_status_t)r.status;
  }
  return st;
}
