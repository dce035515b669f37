/*
 * trace.c — bp trace: runs a program under the trace layer
 * (plugins/layers/trace) and says where its trace went. The program gets
 * "trace" first in BACKPLANE_LAYERS, BACKPLANE_TRACE_FILE, and the
 * directory bp takes its plugins from appended to BACKPLANE_PLUGIN_PATH so
 * that it finds the layer as bp does; the trace is written when the program
 * exits. Exit status: the program's.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bp.h"

typedef struct trace_opts {
  const char *output;
  bool sync, device_time;
} trace_opts_t;

static void trace_help(FILE *f) {
  fprintf(f, "usage: bp trace [--output FILE] [--sync] [--device-time] -- COMMAND [ARGS...]\n\n"
             "Runs COMMAND with the trace layer on every device it opens and writes\n"
             "each op call (op, shapes, dtypes, device, stream, status, timing) as\n"
             "Chrome / Perfetto trace JSON, for ui.perfetto.dev or chrome://tracing.\n\n"
             "  --output FILE   the trace file (default backplane-trace.json)\n"
             "  --sync          wait for the stream after each op, so durations\n"
             "                  cover the work, not only its launch\n"
             "  --device-time   also record the device's own time of each op, where\n"
             "                  the backend has events\n\n"
             "Layers already in BACKPLANE_LAYERS stay, below trace.\n"
             "Exit status: COMMAND's; 2 on a usage error, 1 when it cannot start.\n");
}

/* Options come before "--"; *out_cmd is the index of the command. */
static int parse(int argc, char **argv, trace_opts_t *o, int *out_cmd) {
  int dd = 1;
  while (dd < argc && strcmp(argv[dd], "--")) dd++;
  static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
                                           {"output", required_argument, NULL, 'o'},
                                           {"sync", no_argument, NULL, 's'},
                                           {"device-time", no_argument, NULL, 'd'},
                                           {NULL, 0, NULL, 0}};
  bool started = false;
  for (int c; (c = bpt_getopt("trace", dd, argv, "ho:", longopts, &started)) != -1;) {
    switch (c) {
    case 'h':
      trace_help(stdout);
      return -1;
    case 'o':
      o->output = optarg;
      break;
    case 's':
      o->sync = true;
      break;
    case 'd':
      o->device_time = true;
      break;
    default:
      return BPT_EXIT_USAGE;
    }
  }
  if (optind < dd)
    return bpt_usage_error("trace", "unexpected argument '%s' (the command goes after --)",
                           argv[optind]);
  if (dd + 1 >= argc)
    return bpt_usage_error("trace", "no command: bp trace [OPTIONS] -- COMMAND [ARGS...]");
  *out_cmd = dd + 1;
  return 0;
}

/* The environment the command runs in. */
static void set_environment(const trace_opts_t *o) {
  char list[1024], path[PATH_MAX * 2], exe[PATH_MAX], dir[PATH_MAX + 16], real[PATH_MAX];
  const char *layers = getenv("BACKPLANE_LAYERS");
  snprintf(list, sizeof list, "trace%s%s", layers && layers[0] ? "," : "", layers ? layers : "");
  setenv("BACKPLANE_LAYERS", list, 1);
  setenv("BACKPLANE_TRACE_FILE", o->output ? o->output : "backplane-trace.json", 1);
  if (o->sync) setenv("BACKPLANE_LAYER_SYNC", "1", 1);
  if (o->device_time) setenv("BACKPLANE_TRACE_DEVICE_TIME", "1", 1);
  if (!bpt_exe_dir(exe, sizeof exe)) return;
  snprintf(dir, sizeof dir, "%s/../plugins", exe);
  if (!realpath(dir, real)) return;
  const char *now = getenv("BACKPLANE_PLUGIN_PATH");
  snprintf(path, sizeof path, "%s%s%s", now && now[0] ? now : "", now && now[0] ? ":" : "", real);
  setenv("BACKPLANE_PLUGIN_PATH", path, 1);
}

int bp_cmd_trace(int argc, char **argv) {
  trace_opts_t o = {0};
  int cmd = 0, rc = parse(argc, argv, &o, &cmd);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  set_environment(&o);
  unlink(getenv("BACKPLANE_TRACE_FILE")); /* a trace left from before is not this run's */
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "bp trace: fork: %s\n", strerror(errno));
    return BPT_EXIT_FAIL;
  }
  if (pid == 0) {
    execvp(argv[cmd], argv + cmd);
    fprintf(stderr, "bp trace: cannot run %s: %s\n", argv[cmd], strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const char *file = getenv("BACKPLANE_TRACE_FILE");
  if (access(file, R_OK) == 0)
    fprintf(stderr, "bp trace: trace written to %s\n", file);
  else
    fprintf(
        stderr,
        "bp trace: no trace at %s (the program opened no device, or the trace layer was refused: "
        "BACKPLANE_DEBUG=warn,loader says why)\n",
        file);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : BPT_EXIT_FAIL;
}
