/*
 * devices.c — bp devices: the ranked device list, the refused plugins with
 * their reasons, and with --explain every candidate's loading story.
 * Exits 0 even when plugins were refused: a refusal is information.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bp.h"
#include "devices_layers.h"
#include "devices_noload.h"
#include "devices_comm.h"
#include "json_doc.h"

typedef struct devices_opts {
  bool json, explain, verbose, memory, no_load;
  uint64_t pool_initial;
  bpt_context_flags_t ctx;
} devices_opts_t;

static void devices_help(FILE *f) {
  fprintf(f,
          "usage: bp devices [--explain] [--verbose] [--memory [--pool-initial BYTES]]\n"
          "                  [--json] [--no-isolate] [--no-load]\n\n"
          "Lists the ranked devices (rank 0 is the default) and, below, every\n"
          "refused plugin with its path, the stage it failed at and why.\n\n"
          "  --explain     show every candidate plugin: stage reached, plugin and\n"
          "                loader ABI versions, device count, reason\n"
          "  --verbose     add each device's description, vendor, driver version,\n"
          "                estimates and per-op dtype support\n"
          "  --memory      open each device and show its memory pool statistics\n"
          "                (this process's pool: empty unless --pool-initial\n"
          "                reserves memory up front; `bp run --memory` shows the\n"
          "                pool after a workload)\n"
          "  --pool-initial BYTES  with --memory: reserve this much when opening\n"
          "  --json        print everything as one JSON object on stdout\n"
          "  --no-isolate  probe plugins in this process instead of a child\n"
          "  --no-load     list the installed plugins and layers from their\n"
          "                manifests alone: nothing is loaded or probed\n\n"
          "A device is selected elsewhere (--device) by rank ('0'), backend\n"
          "('cpu'), backend:index ('cpu:1') or exact name ('cpu-ref').\n"
          "Exit status: 0, even when plugins were refused; 1 when no context\n"
          "could be created; 2 on a usage error.\n");
}

static int parse(int argc, char **argv, devices_opts_t *o) {
  static const struct option longopts[] = {
      {"help", no_argument, NULL, 'h'},         {"json", no_argument, NULL, 'j'},
      {"explain", no_argument, NULL, 'e'},      {"verbose", no_argument, NULL, 'v'},
      {"no-isolate", no_argument, NULL, 'n'},   {"memory", no_argument, NULL, 'm'},
      {"pool-initial", required_argument, NULL, 'p'}, {"no-load", no_argument, NULL, 'L'},
      {NULL, 0, NULL, 0}};
  bool started = false;
  unsigned long long n;
  for (int c; (c = bpt_getopt("devices", argc, argv, "hv", longopts, &started)) != -1;) {
    switch (c) {
    case 'h': devices_help(stdout); return -1;
    case 'j': o->json = true; break;
    case 'e': o->explain = true; break;
    case 'v': o->verbose = true; break;
    case 'n': o->ctx.no_isolate = true; break;
    case 'm': o->memory = true; break;
    case 'L': o->no_load = true; break;
    case 'p':
      if (!bpt_parse_count("devices", "--pool-initial", optarg, 0, UINT64_MAX, &n))
        return BPT_EXIT_USAGE;
      o->pool_initial = n;
      break;
    default: return BPT_EXIT_USAGE;
    }
  }
  if (optind < argc) return bpt_usage_error("devices", "unexpected argument '%s'", argv[optind]);
  return 0;
}

/* "f32 f16 bf16" for a capability mask; "-" when empty. */
static void dtype_list(uint32_t mask, char *out, size_t size) {
  out[0] = '\0';
  size_t used = 0;
  for (int d = 0; d < BP_DTYPE_COUNT; d++)
    if (mask & BP_DTYPE_BIT(d))
      used += (size_t)snprintf(out + used, used < size ? size - used : 0,
                               "%s%s", used ? " " : "",
                               bp_dtype_name((bp_dtype_t)d));
  if (!out[0]) snprintf(out, size, "-");
}

static void print_device_verbose(const bp_device_entry_t *e) {
  const bp_device_info_t *in = &e->info;
  printf("      vendor: %s   driver: %s   score hint: %d\n",
         in->vendor[0] ? in->vendor : "-",
         in->driver_version[0] ? in->driver_version : "-", in->score_hint);
  if (in->description[0]) printf("      %s\n", in->description);
  if (in->peak_gflops > 0 || in->bandwidth_gbs > 0)
    printf("      estimates: %.0f GFLOP/s f32 peak, %.1f GB/s\n",
           in->peak_gflops, in->bandwidth_gbs);
  if (in->flags & BP_DEVICE_FLAG_REFERENCE)
    printf("      reference implementation\n");
  if (!strncmp(in->identity, "pci:", 4))
    printf("      locality: %s\n", e->numa_node >= 0 ? "" : "unknown (no hwloc, or the device is not in its topology)");
  if (e->numa_node >= 0) printf("        NUMA node %d, local CPUs %s\n", e->numa_node, e->local_cpus);
  for (int op = 0; op < BP_OP_COUNT; op++) {
    char list[96];
    dtype_list(in->op_dtypes[op], list, sizeof list);
    printf("      %-11s %s\n", bp_op_name((bp_op_t)op), list);
  }
}

/* Opens the device and prints its pool, with pool_initial reserved. */
static void print_device_memory(bp_context_t *ctx, const bp_device_entry_t *e, uint64_t pool_initial) {
  char sel[16];
  snprintf(sel, sizeof sel, "%u", e->rank);
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .pool_initial_bytes = pool_initial};
  bp_device_t *dev = NULL;
  if (bp_device_open(ctx, sel, &cfg, &dev) != BP_OK) {
    printf("      memory pool: cannot open the device: %s\n", bp_last_error());
    return;
  }
  bpt_print_memory_stats(dev, "      ");
  bp_device_close(dev);
}

/* Width of the device-name column: the longest name, at least 6. */
static int name_width(bp_context_t *ctx, uint32_t n) {
  size_t w = 6;
  for (uint32_t r = 0; r < n; r++) {
    bp_device_entry_t e;
    if (bp_context_device_entry(ctx, r, &e) == BP_OK && strlen(e.info.name) > w)
      w = strlen(e.info.name);
  }
  return (int)w;
}

static void print_devices(bp_context_t *ctx, const devices_opts_t *o) {
  uint32_t n = 0;
  bp_context_device_count(ctx, &n);
  printf("devices (%u):\n", n);
  if (n == 0) {
    printf("  none: no plugin could be loaded (see below)\n");
    return;
  }
  int w = name_width(ctx, n);
  printf("  %-4s %-8s %-*s %-14s %10s %4s  %s\n", "rank", "backend", w,
         "device", "kind", "memory", "CUs", "identity");
  for (uint32_t r = 0; r < n; r++) {
    bp_device_entry_t e;
    if (bp_context_device_entry(ctx, r, &e) != BP_OK) continue;
    char mem[32];
    bpt_format_bytes(e.info.memory_bytes, mem, sizeof mem);
    printf("  %-4u %-8s %-*s %-14s %10s %4u  %s\n", e.rank, e.backend, w,
           e.info.name,
           bpt_kind_name(e.info.kind), mem, e.info.compute_units,
           e.info.identity[0] ? e.info.identity : "-");
    if (o->verbose) print_device_verbose(&e);
    if (o->memory) print_device_memory(ctx, &e, o->pool_initial);
  }
  printf("  (select with --device RANK, BACKEND, BACKEND:INDEX or NAME)\n");
}

static void print_plugin(const bp_plugin_report_t *p, bool explain) {
  if (explain) {
    char abi[32] = "-";
    if (p->plugin_abi_major || p->plugin_abi_minor)
      snprintf(abi, sizeof abi, "%u.%u", p->plugin_abi_major,
               p->plugin_abi_minor);
    printf("  %s\n      %s at stage %s", p->path,
           p->loaded ? "loaded" : "REFUSED", bpt_stage_name(p->stage));
    if (p->name[0]) printf(", name %s %s", p->name, p->version);
    printf("\n      ABI: plugin %s, loader %u.%u; devices: %u\n", abi,
           p->loader_abi_major, p->loader_abi_minor, p->device_count);
    if (!p->loaded)
      printf("      reason: %s: %s\n", bp_status_name(p->status),
             p->reason[0] ? p->reason : "(none given)");
    else if (p->reason[0])
      printf("      note: %s\n", p->reason);
    return;
  }
  printf("  %s\n      stage %s, %s: %s\n", p->path, bpt_stage_name(p->stage),
         bp_status_name(p->status), p->reason[0] ? p->reason : "(no reason)");
}

/* The plugin directories the loader looked in, in order, absent ones marked. */
static void print_search_dirs(bp_context_t *ctx) {
  uint32_t n = 0;
  bp_context_search_dir_count(ctx, &n);
  printf("\nplugin directories searched (%u, in order):\n", n);
  if (n == 0) printf("  none\n");
  for (uint32_t i = 0; i < n; i++) {
    char dir[4096];
    bool present = false;
    if (bp_context_search_dir(ctx, i, dir, sizeof dir, &present) == BP_OK)
      printf("  %s%s\n", dir, present ? "" : " (absent)");
  }
}

static void print_plugins(bp_context_t *ctx, const devices_opts_t *o) {
  uint32_t n = 0, refused = 0;
  bp_context_plugin_count(ctx, &n);
  for (uint32_t i = 0; i < n; i++) {
    bp_plugin_report_t p;
    if (bp_context_plugin_report(ctx, i, &p) == BP_OK && !p.loaded) refused++;
  }
  if (o->explain)
    printf("\ncandidate plugins (%u, in search order):\n", n);
  else
    printf("\nrefused plugins (%u):\n", refused);
  if ((o->explain ? n : refused) == 0) printf("  none\n");
  for (uint32_t i = 0; i < n; i++) {
    bp_plugin_report_t p;
    if (bp_context_plugin_report(ctx, i, &p) != BP_OK) continue;
    if (o->explain || !p.loaded) print_plugin(&p, o->explain);
  }
}

static json_object *json_device(const bp_device_entry_t *e) {
  const bp_device_info_t *in = &e->info;
  json_object *d = json_object_new_object(), *ops = json_object_new_object();
  bpt_json_set(d, "rank", bpt_json_int(e->rank));
  bpt_json_set(d, "backend", bpt_json_str(e->backend));
  bpt_json_set(d, "backend_index", bpt_json_int(e->backend_index));
  bpt_json_set(d, "name", bpt_json_str(in->name));
  bpt_json_set(d, "vendor", bpt_json_str(in->vendor));
  bpt_json_set(d, "kind", bpt_json_str(bpt_kind_name(in->kind)));
  bpt_json_set(d, "memory_bytes", bpt_json_int((int64_t)in->memory_bytes));
  bpt_json_set(d, "compute_units", bpt_json_int(in->compute_units));
  bpt_json_set(d, "identity", bpt_json_str(in->identity));
  bpt_json_set(d, "numa_node", bpt_json_int(e->numa_node));
  bpt_json_set(d, "local_cpus", bpt_json_str(e->local_cpus));
  bpt_json_set(d, "driver_version", bpt_json_str(in->driver_version));
  bpt_json_set(d, "description", bpt_json_str(in->description));
  bpt_json_set(d, "score_hint", bpt_json_int(in->score_hint));
  bpt_json_set(d, "reference", bpt_json_bool(in->flags & BP_DEVICE_FLAG_REFERENCE));
  bpt_json_set(d, "peak_gflops", bpt_json_num(in->peak_gflops, "%.6g"));
  bpt_json_set(d, "bandwidth_gbs", bpt_json_num(in->bandwidth_gbs, "%.6g"));
  for (int op = 0; op < BP_OP_COUNT; op++) {
    json_object *dtypes = json_object_new_array();
    for (int t = 0; t < BP_DTYPE_COUNT; t++)
      if (in->op_dtypes[op] & BP_DTYPE_BIT(t))
        bpt_json_push(dtypes, bpt_json_str(bp_dtype_name((bp_dtype_t)t)));
    bpt_json_set(ops, bp_op_name((bp_op_t)op), dtypes);
  }
  bpt_json_set(d, "ops", ops);
  return d;
}

static json_object *json_plugin(const bp_plugin_report_t *p) {
  char abi[32];
  json_object *o = json_object_new_object();
  bpt_json_set(o, "path", bpt_json_str(p->path));
  bpt_json_set(o, "name", bpt_json_str(p->name));
  bpt_json_set(o, "version", bpt_json_str(p->version));
  bpt_json_set(o, "loaded", bpt_json_bool(p->loaded));
  bpt_json_set(o, "stage", bpt_json_str(bpt_stage_name(p->stage)));
  bpt_json_set(o, "status", bpt_json_str(bp_status_name(p->status)));
  bpt_json_set(o, "reason", bpt_json_str(p->reason));
  snprintf(abi, sizeof abi, "%u.%u", p->plugin_abi_major, p->plugin_abi_minor);
  bpt_json_set(o, "plugin_abi", bpt_json_str(abi));
  snprintf(abi, sizeof abi, "%u.%u", p->loader_abi_major, p->loader_abi_minor);
  bpt_json_set(o, "loader_abi", bpt_json_str(abi));
  bpt_json_set(o, "device_count", bpt_json_int(p->device_count));
  return o;
}

static json_object *json_search_dirs(bp_context_t *ctx) {
  json_object *dirs = json_object_new_array();
  uint32_t ns = 0;
  bp_context_search_dir_count(ctx, &ns);
  for (uint32_t i = 0; i < ns; i++) {
    char path[4096];
    bool present = false;
    if (bp_context_search_dir(ctx, i, path, sizeof path, &present) != BP_OK) continue;
    json_object *dir = json_object_new_object();
    bpt_json_set(dir, "path", bpt_json_str(path));
    bpt_json_set(dir, "present", bpt_json_bool(present));
    bpt_json_push(dirs, dir);
  }
  return dirs;
}

static bool print_json(bp_context_t *ctx) {
  static const char *const broken[] = {"devices", "plugins", "search_dirs", NULL};
  json_object *doc = json_object_new_object(), *devices = json_object_new_array(),
              *plugins = json_object_new_array();
  uint32_t nd = 0, np = 0;
  bp_context_device_count(ctx, &nd);
  bp_context_plugin_count(ctx, &np);
  for (uint32_t r = 0; r < nd; r++) {
    bp_device_entry_t e;
    if (bp_context_device_entry(ctx, r, &e) == BP_OK) bpt_json_push(devices, json_device(&e));
  }
  for (uint32_t i = 0; i < np; i++) {
    bp_plugin_report_t p;
    if (bp_context_plugin_report(ctx, i, &p) == BP_OK) bpt_json_push(plugins, json_plugin(&p));
  }
  bpt_json_set(doc, "version", bpt_json_str(bp_version()));
  bpt_json_set(doc, "devices", devices);
  bpt_json_set(doc, "plugins", plugins);
  bpt_json_set(doc, "search_dirs", json_search_dirs(ctx));
  bpt_json_set(doc, "comm_plugins", bpt_json_comm_plugins(ctx));
  bpt_json_set(doc, "layers", bpt_json_layers(ctx));
  return bpt_json_write_path("devices", "-", doc, broken);
}

int bp_cmd_devices(int argc, char **argv) {
  devices_opts_t o = {0};
  int rc = parse(argc, argv, &o);
  if (rc) return rc < 0 ? BPT_EXIT_OK : rc;
  if (o.no_load) return bpt_devices_no_load(o.json);
  bp_context_t *ctx = bpt_context_open(&o.ctx);
  if (!ctx) return BPT_EXIT_FAIL;
  int exit_status = BPT_EXIT_OK;
  if (o.json) {
    if (!print_json(ctx)) exit_status = BPT_EXIT_FAIL;
  } else {
    print_devices(ctx, &o);
    print_plugins(ctx, &o);
    bpt_print_comm_plugins(ctx, o.explain);
    bpt_print_layers(ctx);
    print_search_dirs(ctx);
  }
  bp_context_destroy(ctx);
  return exit_status;
}
