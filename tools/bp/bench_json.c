/*
 * bench_json.c — bp bench --json: the machine, the anchors' versions and one
 * record per case and device, built with json-c (json_doc.h).
 */
#include <math.h>

#include "bench.h"
#include "bench_anchor.h"
#include "json_doc.h"

/* A figure, or null when it was not measured (the caller's test says). */
static json_object *figure(bool measured, double v) {
  return bpt_json_num(measured ? v : NAN, "%.6g");
}

static json_object *json_anchor(const bench_anchor_fig_t *a) {
  json_object *o = json_object_new_object();
  bpt_json_set(o, "name", bpt_json_str(a->name));
  bpt_json_set(o, "ms", figure(a->ms > 0, a->ms));
  bpt_json_set(o, "figure", figure(a->ms > 0, a->figure));
  bpt_json_set(o, "ratio", figure(a->ratio > 0, a->ratio));
  if (a->ms < 0 && a->note) bpt_json_set(o, "install", bpt_json_str(a->note));
  bpt_json_set(o, "library", bpt_json_bool(a->library));
  /* false: the library ran a lesser kernel than the CPU has; the ratio is
   * not comparable */
  bpt_json_set(o, "comparable", bpt_json_bool(a->comparable));
  if (a->kernel[0]) bpt_json_set(o, "kernel", bpt_json_str(a->kernel));
  return o;
}

static json_object *json_result(const bench_result_t *r) {
  char shape[96];
  /* "anchor" is the best (fastest comparable library), else the first */
  const bench_anchor_fig_t *a0 = r->best >= 0 ? &r->anchor[r->best]
                                 : r->anchors ? &r->anchor[0] : NULL;
  bool a0_ran = a0 && a0->ms > 0;
  json_object *o = json_object_new_object(), *anchors = json_object_new_array();
  bpt_case_label(&r->c, shape, sizeof shape);
  bpt_json_set(o, "op", bpt_json_str(bpt_op_name(r->c.op)));
  bpt_json_set(o, "device", bpt_json_str(r->device));
  bpt_json_set(o, "shape", bpt_json_str(shape));
  bpt_json_set(o, "dtype", bpt_json_str(bp_dtype_name(r->c.dtype)));
  bpt_json_set(o, "ran", bpt_json_bool(r->ran));
  if (!r->ran) bpt_json_set(o, "message", bpt_json_str(r->message));
  bpt_json_set(o, "ms", figure(r->ran, r->ms));
  bpt_json_set(o, "gflops", figure(r->gflops > 0, r->gflops));
  bpt_json_set(o, "gbs", figure(r->gbs > 0, r->gbs));
  bpt_json_set(o, "pct_peak", figure(r->pct_peak >= 0, r->pct_peak));
  bpt_json_set(o, "pct_bandwidth", figure(r->pct_bw >= 0, r->pct_bw));
  /* of the device's own f32 GEMM, or of its copy bandwidth ("bandwidth") */
  bpt_json_set(o, "pct_gemm", figure(r->pct_gemm >= 0, r->pct_gemm));
  if (r->pct_gemm >= 0) bpt_json_set(o, "pct_gemm_of", bpt_json_str(r->share_bw ? "bandwidth" : "gemm"));
  if (r->gbs > 0) /* of the stream loop over the same bytes: in cache or from memory */
    bpt_json_set(o, "bandwidth_level", bpt_json_str(r->cache_resident ? "llc" : "memory"));
  bpt_json_set(o, "intensity", figure(r->intensity > 0, r->intensity));
  bpt_json_set(o, "best", r->best >= 0 ? bpt_json_str(r->anchor[r->best].name) : NULL);
  bpt_json_set(o, "anchor", a0 ? bpt_json_str(a0->name) : NULL);
  bpt_json_set(o, "anchor_ms", figure(a0_ran, a0_ran ? a0->ms : 0));
  bpt_json_set(o, "anchor_figure", figure(a0_ran, a0_ran ? a0->figure : 0));
  bpt_json_set(o, "ratio", figure(a0 && a0->ratio > 0, a0 ? a0->ratio : 0));
  bpt_json_set(o, "comparable", bpt_json_bool(!a0 || a0->comparable));
  for (int i = 0; i < r->anchors; i++) bpt_json_push(anchors, json_anchor(&r->anchor[i]));
  bpt_json_set(o, "anchors", anchors);
  return o;
}

/* Each library anchor: present with version and kernel, or why not. */
static json_object *json_libs(const bench_libs_t *libs) {
  json_object *arr = json_object_new_array();
  for (int i = 0; i < BENCH_LIB_COUNT; i++) {
    const bench_lib_t *l = &libs->lib[i];
    json_object *o = json_object_new_object();
    bpt_json_set(o, "name", bpt_json_str(l->name));
    bpt_json_set(o, "package", bpt_json_str(l->package));
    bpt_json_set(o, "present", bpt_json_bool(l->present));
    if (l->present) {
      bpt_json_set(o, "version", bpt_json_str(l->version));
      bpt_json_set(o, "kernel", bpt_json_str(l->kernel));
      bpt_json_set(o, "comparable", bpt_json_bool(l->comparable));
      if (l->forced[0]) bpt_json_set(o, "forced", bpt_json_str(l->forced));
    } else {
      bpt_json_set(o, "why", bpt_json_str(l->why));
    }
    bpt_json_push(arr, o);
  }
  return arr;
}

bool bench_json_write(const char *path, const bench_machine_t *m,
                      const struct bench_libs *libs, const char *torch,
                      const bench_result_t *res, int n) {
  static const char *const broken[] = {"results", "libraries", NULL};
  json_object *doc = json_object_new_object(), *machine = json_object_new_object(),
              *results = json_object_new_array();
  bpt_json_set(machine, "cores", bpt_json_int(m->cores));
  bpt_json_set(machine, "isa", bpt_json_str(m->isa));
  if (bench_isa_capped())
    bpt_json_set(machine, "isa_cap", bpt_json_str(bench_isa_level_name(bench_cpu_isa_level())));
  bpt_json_set(machine, "fma_units", bpt_json_int(m->fma_units));
  bpt_json_set(machine, "ghz", bpt_json_num(m->ghz, "%.3f"));
  bpt_json_set(machine, "peak_f32_gflops", bpt_json_num(m->peak_f32_gflops, "%.1f"));
  bpt_json_set(machine, "stream_gbs", bpt_json_num(m->stream_gbs, "%.2f"));
  bpt_json_set(machine, "llc_bytes", bpt_json_num(m->llc_bytes, "%.0f"));
  bpt_json_set(doc, "machine", machine);
  const bench_lib_t *deb = &libs->lib[BENCH_LIB_OPENBLAS];
  bpt_json_set(doc, "openblas", bpt_json_str(deb->present ? deb->version : ""));
  bpt_json_set(doc, "anchors_venv", bpt_json_str(libs->venv));
  bpt_json_set(doc, "libraries", json_libs(libs));
  bpt_json_set(doc, "torch", bpt_json_str(torch));
  for (int i = 0; i < n; i++) bpt_json_push(results, json_result(&res[i]));
  bpt_json_set(doc, "results", results);
  return bpt_json_write_path("bench", path, doc, broken);
}
