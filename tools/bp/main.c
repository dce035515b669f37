/*
 * main.c — the bp command: dispatches to one subcommand per file through the
 * table below, and answers the global --help and --version.
 *
 * Adding a subcommand is one line in bp_subcommands (and its declaration in
 * bp.h): e.g. { "conformance", bp_cmd_conformance, "..." } once
 * tools/bp/conformance.c defines int bp_cmd_conformance(int, char **).
 */
#include <stdio.h>
#include <string.h>

#include "bp.h"
#include "bench_model.h" /* bench --op model, else bp_cmd_bench */
#include "plugin-api.h" /* the plugin ABI: descriptors, versions */

typedef struct bp_subcommand {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
  const char *summary;
} bp_subcommand_t;

static const bp_subcommand_t bp_subcommands[] = {
    {"devices", bp_cmd_devices, "list ranked devices and refused plugins"},
    {"run", bp_cmd_run, "run a verified workload (GEMM, attention, conv2d)"},
    {"bench", bench_model_or_bench, "benchmark ops and a model against OpenBLAS, PyTorch, peak"},
    {"conformance", bp_cmd_conformance, "prove a plugin: ops vs cpu-ref, errors, leaks, threads"},
    {"tune", bp_cmd_tune, "autotune kernels and fill the cache"},
    {"graph", bp_cmd_graph, "capture a demo graph, show where its calls run (--explain)"},
    {"trace", bp_cmd_trace, "run a program under the trace layer (Perfetto JSON)"},
    {"comm-bench", bp_cmd_comm_bench, "all-reduce bandwidth beside raw MPI (under mpirun)"},
};
#define BP_SUBCOMMAND_COUNT (sizeof bp_subcommands / sizeof bp_subcommands[0])

static void print_help(FILE *f) {
  fprintf(f, "usage: bp [--help] [--version] COMMAND [ARGS]\n\n"
             "backplane's command-line tool.\n\ncommands:\n");
  for (size_t i = 0; i < BP_SUBCOMMAND_COUNT; i++)
    fprintf(f, "  %-12s %s\n", bp_subcommands[i].name,
            bp_subcommands[i].summary);
  fprintf(f,
          "\n'bp COMMAND --help' describes a command; man bp(1) has them all.\n"
          "\nenvironment:\n"
          "  BACKPLANE_PLUGIN_PATH  colon-separated plugin directories, searched first\n"
          "  BACKPLANE_BACKENDS     order or exclude backends: cuda,vulkan,-opencl\n"
          "  BACKPLANE_DEBUG        log levels and categories: warn,loader\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_help(stderr);
    return BPT_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (bpt_is_help(cmd) || !strcmp(cmd, "help")) {
    print_help(stdout);
    return BPT_EXIT_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
    printf("bp (backplane) %s, plugin ABI %d.%d\n", bp_version(),
           BP_PLUGIN_ABI_MAJOR, BP_PLUGIN_ABI_MINOR);
    return BPT_EXIT_OK;
  }
  for (size_t i = 0; i < BP_SUBCOMMAND_COUNT; i++)
    if (!strcmp(cmd, bp_subcommands[i].name))
      return bp_subcommands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "bp: unknown command '%s'\nTry 'bp --help'.\n", cmd);
  return BPT_EXIT_USAGE;
}
