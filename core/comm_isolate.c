/*
 * comm_isolate.c — probing a comm plugin in a child process first, as
 * isolate.c does for backends (docs/runtime.md, "Plugin isolation";
 * docs/scale-out.md): a comm plugin whose constructor, init or probe
 * crashes, calls exit or hangs is refused with the reason, and the
 * application goes on. With isolation on (the default; the context's
 * options or BACKPLANE_ISOLATE=0 turn it off) a forked child runs the
 * loader's own steps (dlopen, descriptor checks, init, probe) on the file
 * and records how far it got in memory shared with the parent; only a
 * plugin that survived that is loaded in the application. A fork rather
 * than the bp-probe helper: the helper speaks the backend ABI only, and
 * comm plugins load on the first call that needs one, once per process.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm_internal.h"
#include "isolate.h"

/* The child: the loader's steps on path, into the shared record r. */
static void probe_child(bp__comm_plugin_t *r, const char *path, int fd) {
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  bp__in_isolated_child = true; /* the parent reports refusals */
  bp__comm_set_t one = {.plugins = r, .count = 1};
  bp__comm_load_in_process(&one, r, path);
  char done = 1;
  ssize_t w = write(fd, &done, 1);
  (void)w;
  _exit(0);
}

/* Turns how the child ended into p's refusal; true when it survived and
 * p may be loaded in the application. */
static bool judge(bp__comm_plugin_t *p, const bp__comm_plugin_t *r, bool done, bool timed_out,
                  int wstatus, uint32_t timeout_s) {
  bp_plugin_stage_t stage =
      (unsigned)r->report.stage <= BP_STAGE_READY ? r->report.stage : BP_STAGE_OPEN;
  p->report.stage = stage;
  memcpy(p->report.name, r->report.name, sizeof p->report.name); /* as far as the child read them */
  memcpy(p->report.version, r->report.version, sizeof p->report.version);
  p->report.name[sizeof p->report.name - 1] = p->report.version[sizeof p->report.version - 1] =
      '\0';
  if (done && r->report.loaded) return true;
  if (done) { /* refused in the child for an ordinary reason: the same here, without loading it */
    p->report.status = r->report.status < 0 ? r->report.status : BP_ERR_INTERNAL;
    memcpy(p->report.reason, r->report.reason, sizeof p->report.reason);
    p->report.reason[sizeof p->report.reason - 1] = '\0';
  } else if (timed_out) {
    p->report.status = BP_ERR_TIMEOUT;
    snprintf(p->report.reason, sizeof p->report.reason,
             "timed out after %u s in %s (isolated probe)", timeout_s,
             bp__isolate_stage_name(stage));
  } else if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    const char *abbrev = sigabbrev_np(sig);
    p->report.status = BP_ERR_INCOMPATIBLE;
    snprintf(p->report.reason, sizeof p->report.reason,
             "crashed in %s: SIG%s (%s, signal %d) (isolated probe)", bp__isolate_stage_name(stage),
             abbrev ? abbrev : "?", strsignal(sig), sig);
  } else {
    p->report.status = BP_ERR_INCOMPATIBLE;
    snprintf(p->report.reason, sizeof p->report.reason, "called exit(%d) in %s (isolated probe)",
             WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1, bp__isolate_stage_name(stage));
  }
  return false;
}

bool bp__comm_probe_isolated(bp__comm_plugin_t *p, const char *path, uint32_t timeout_s) {
  bp__comm_plugin_t *r =
      mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  int fds[2] = {-1, -1};
  if (r == MAP_FAILED || pipe2(fds, O_CLOEXEC) != 0) {
    snprintf(p->report.reason, sizeof p->report.reason, "isolated probe: %s failed: %s",
             r == MAP_FAILED ? "mmap" : "pipe", strerror(errno));
    p->report.status = BP_ERR_INTERNAL;
    if (r != MAP_FAILED) munmap(r, sizeof *r);
    return false;
  }
  *r = *p;
  fflush(NULL); /* a plugin calling exit in the child must not repeat our output */
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    probe_child(r, path, fds[1]);
  }
  close(fds[1]);
  bool ok = false, done = false;
  if (pid < 0) {
    snprintf(p->report.reason, sizeof p->report.reason, "isolated probe: fork failed: %s",
             strerror(errno));
    p->report.status = BP_ERR_INTERNAL;
  } else {
    int wstatus = 0;
    bool timed_out = bp__isolate_wait(pid, fds[0], timeout_s, &done, &wstatus);
    ok = judge(p, r, done, timed_out, wstatus, timeout_s);
  }
  close(fds[0]);
  munmap(r, sizeof *r);
  return ok;
}
