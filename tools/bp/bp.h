/*
 * bp.h — shared declarations of the bp command: the subcommand entry points,
 * the helpers every subcommand uses (context creation, option parsing,
 * output, timing, progress) and the op cases that run and bench execute.
 * JSON is read and written through json-c, in json_doc.h.
 */
#ifndef BP_TOOL_H
#define BP_TOOL_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backplane.h"

/* ---------------------------------------------------------------------------
 * Subcommands. Each takes argc/argv starting at the subcommand's name and
 * returns the process exit status. They are listed in main.c's table.
 */
int bp_cmd_devices(int argc, char **argv);
int bp_cmd_run(int argc, char **argv);
int bp_cmd_bench(int argc, char **argv);
int bp_cmd_conformance(int argc, char **argv);
int bp_cmd_tune(int argc, char **argv);
int bp_cmd_graph(int argc, char **argv);
int bp_cmd_trace(int argc, char **argv);
int bp_cmd_comm_bench(int argc, char **argv);

/* Exit statuses shared by every subcommand. */
enum { BPT_EXIT_OK = 0, BPT_EXIT_FAIL = 1, BPT_EXIT_USAGE = 2 };

/* ---------------------------------------------------------------------------
 * Context: options common to every subcommand that opens one.
 */
typedef struct bpt_context_flags {
  bool no_isolate; /* --no-isolate: probe plugins in-process */
} bpt_context_flags_t;

/* Creates a context whose plugin_dir is <dir of the bp executable>/../plugins
 * (so build/bin/bp finds build/plugins with no environment), with isolated
 * probing unless flags say otherwise. Prints the error and returns NULL on
 * failure. */
bp_context_t *bpt_context_open(const bpt_context_flags_t *flags);
/* Writes the directory holding the running executable into out (no slash at
 * the end); false when /proc/self/exe cannot be read. */
bool bpt_exe_dir(char *out, size_t size);

/* Opens the device matching selector (NULL: best) and prints why when it
 * cannot. */
/* Opens a device with automatic fallback off (bpt_device_open) or as the
 * caller says; prints why on failure and returns NULL. */
bp_device_t *bpt_device_open(bp_context_t *ctx, const char *selector);
bp_device_t *bpt_device_open_with(bp_context_t *ctx, const char *selector, bool fallback);
/* The same with the caller's whole config. */
bp_device_t *bpt_device_open_config(bp_context_t *ctx, const char *selector,
                                    const bp_device_config_t *cfg);

/* ---------------------------------------------------------------------------
 * Option parsing: every subcommand parses with getopt_long ("--name VALUE",
 * "--name=VALUE", unique prefixes), through these helpers.
 */
/* Returns getopt_long's next option for subcommand sub (argv[0] is its
 * name), starting afresh when *started is false. Unknown options and
 * missing values are reported as usage errors here and returned as '?'. */
int bpt_getopt(const char *sub, int argc, char **argv, const char *shortopts,
               const struct option *longopts, bool *started);
/* Parses v as a whole decimal number in [min, max] into *out; otherwise
 * prints a usage error naming option opt for sub and returns false. */
bool bpt_parse_count(const char *sub, const char *opt, const char *v,
                     unsigned long long min, unsigned long long max,
                     unsigned long long *out);
/* True when arg is -h or --help. */
bool bpt_is_help(const char *arg);
/* Prints "bp SUB: MSG" and a pointer to --help on stderr; returns
 * BPT_EXIT_USAGE. */
int bpt_usage_error(const char *sub, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------------------
 * Output helpers.
 */
/* "16.0 GiB" style rendering of a byte count. */
void bpt_format_bytes(uint64_t bytes, char *out, size_t size);
/* Prints dev's memory pool statistics on two lines, each after indent. */
void bpt_print_memory_stats(bp_device_t *dev, const char *indent);
/* The device kind as a word ("discrete-gpu", "cpu", ...). */
const char *bpt_kind_name(bp_device_kind_t kind);
/* The loader stage as a word ("open", "probe", "ready", ...). */
const char *bpt_stage_name(bp_plugin_stage_t stage);

/* Monotonic time in seconds. */
double bpt_now(void);

/* Progress on stderr, only when stderr is a terminal: "[i/n] label". */
void bpt_progress(int i, int n, const char *label);
/* Clears the progress line (no-op when not a terminal). */
void bpt_progress_done(void);

#endif /* BP_TOOL_H */
