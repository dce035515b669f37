/*
 * bench_model_torch.c — bp bench --op model's PyTorch anchor (one
 * `python3 tools/bench_torch_model.py --threads 2` over every case, cases
 * in through a temporary file, JSON lines out) and its --json document.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_model.h"
#include "json_doc.h"

/* The helper next to the build tree, the install tree, or the working
 * directory. */
static bool find_script(char *out, size_t size) {
  char dir[PATH_MAX];
  const char *rel[] = {"/../../tools/bench_torch_model.py",
                       "/../share/backplane/bench_torch_model.py"};
  if (bpt_exe_dir(dir, sizeof dir))
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
      snprintf(out, size, "%s%s", dir, rel[i]);
      if (access(out, R_OK) == 0) return true;
    }
  snprintf(out, size, "tools/bench_torch_model.py");
  return access(out, R_OK) == 0;
}

static bool write_cases(const bench_model_case_t *c, int n, char *path, size_t size) {
  snprintf(path, size, "/tmp/bp-bench-model-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) return false;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    return false;
  }
  for (int i = 0; i < n; i++) {
    model_config_t cfg;
    model_config_default(&cfg, c[i].kind, c[i].dtype, c[i].d_model, c[i].heads, c[i].layers,
                         c[i].batch, c[i].pos + c[i].seq);
    fprintf(f, "%d %s %s %d %lld %lld %lld %lld %lld %lld %lld %lld\n", i,
            c[i].kind == MODEL_GPT2 ? "gpt2" : "llama", c[i].dtype == BP_F32 ? "f32" : "bf16",
            (int)cfg.layers, (long long)cfg.d_model, (long long)cfg.heads, (long long)cfg.kv_heads,
            (long long)cfg.d_ff, (long long)cfg.vocab, (long long)cfg.batch, (long long)c[i].seq,
            (long long)c[i].pos);
  }
  return fclose(f) == 0;
}

static bool read_results(FILE *p, bench_model_case_t *c, int n, char *version, size_t vsize,
                         char *why, size_t wsize) {
  char line[4096];
  if (!fgets(line, sizeof line, p)) {
    snprintf(why, wsize, "the helper printed nothing");
    return false;
  }
  json_object *head = bpt_json_parse(line);
  if (!head || !bpt_json_get_bool(head, "available")) {
    const char *reason = bpt_json_get_str(head, "reason");
    snprintf(why, wsize, "%s", reason ? reason : "the helper's first line is not its header");
    json_object_put(head);
    return false;
  }
  const char *v = bpt_json_get_str(head, "version");
  snprintf(version, vsize, "%s", v ? v : "?");
  json_object_put(head);
  int done = 0;
  while (fgets(line, sizeof line, p)) {
    json_object *rec = bpt_json_parse(line);
    double id = bpt_json_get_num(rec, "id", -1);
    if (id >= 0 && id < n && id == (int)id) {
      c[(int)id].torch_ms = bpt_json_get_num(rec, "ms", -1);
      bpt_progress(++done, n, "PyTorch, the same model");
    }
    json_object_put(rec);
  }
  return true;
}

bool bench_model_torch(bench_model_case_t *cases, int n, bool quick, const char *torch_device, char *version,
                       size_t vsize, char *why, size_t wsize) {
  char script[PATH_MAX], tmp[64], cmd[3 * PATH_MAX];
  version[0] = 0;
  if (!find_script(script, sizeof script)) {
    snprintf(why, wsize, "tools/bench_torch_model.py not found");
    return false;
  }
  if (!write_cases(cases, n, tmp, sizeof tmp)) {
    snprintf(why, wsize, "cannot write a temporary file");
    return false;
  }
  /* Debian's python3-torch lives in /usr/bin/python3's path; a python3
   * earlier in PATH (pyenv, a venv) may not see it. */
  const char *pythons[] = {"python3", "/usr/bin/python3"};
  bool ok = false;
  for (size_t i = 0; i < 2 && !ok; i++) {
    snprintf(cmd, sizeof cmd, "%s '%s' --threads 2 --device %s%s < '%s' 2>/dev/null", pythons[i], script,
             torch_device, quick ? " --quick" : "", tmp);
    bpt_progress(0, n, "PyTorch (starting python)");
    FILE *p = popen(cmd, "r");
    if (!p) continue;
    ok = read_results(p, cases, n, version, vsize, why, wsize);
    pclose(p);
  }
  bpt_progress_done();
  unlink(tmp);
  return ok;
}

static json_object *num_or_null(double v, const char *fmt) {
  return v >= 0 ? bpt_json_num(v, fmt) : NULL;
}

static json_object *json_case(const bench_model_case_t *c) {
  json_object *o = json_object_new_object();
  bpt_json_set(o, "model", bpt_json_str(c->kind == MODEL_GPT2 ? "gpt2" : "llama"));
  bpt_json_set(o, "size", bpt_json_str(c->size));
  bpt_json_set(o, "layers", bpt_json_int(c->layers));
  bpt_json_set(o, "d_model", bpt_json_int(c->d_model));
  bpt_json_set(o, "heads", bpt_json_int(c->heads));
  bpt_json_set(o, "kv_heads", bpt_json_int(c->kind == MODEL_LLAMA ? 2 : c->heads));
  bpt_json_set(o, "dtype", bpt_json_str(bp_dtype_name(c->dtype)));
  bpt_json_set(o, "phase", bpt_json_str(c->seq == 1 ? "decode" : "prefill"));
  bpt_json_set(o, "batch", bpt_json_int(c->batch));
  bpt_json_set(o, "seq", bpt_json_int(c->seq));
  bpt_json_set(o, "pos", bpt_json_int(c->pos));
  bpt_json_set(o, "ran", bpt_json_bool(c->ran));
  if (!c->ran) bpt_json_set(o, "error", bpt_json_str(c->why));
  bpt_json_set(o, "ms", c->ran ? bpt_json_num(c->ms, "%.4f") : NULL);
  bpt_json_set(o, "gflops", c->ran ? bpt_json_num(c->gflops, "%.2f") : NULL);
  bool dec = c->ran && c->seq == 1;
  bpt_json_set(o, "weight_gbs", dec ? bpt_json_num(c->weight_gbs, "%.2f") : NULL);
  bpt_json_set(o, "pct_stream", dec ? num_or_null(c->pct_stream, "%.1f") : NULL);
  bpt_json_set(o, "torch_ms", num_or_null(c->torch_ms, "%.4f"));
  bpt_json_set(o, "torch_ratio",
               c->ran && c->torch_ms > 0 ? bpt_json_num(c->torch_ms / c->ms, "%.3f") : NULL);
  bpt_json_set(o, "bf16_vs_f32", num_or_null(c->bf16_vs_f32, "%.3f"));
  bpt_json_set(o, "fallbacks", bpt_json_int(c->fallbacks));
  return o;
}

bool bench_model_json(const char *path, const char *device, const char *torch, double stream_gbs,
                      const bench_model_case_t *c, int n) {
  static const char *const broken[] = {"results", NULL};
  json_object *doc = json_object_new_object(), *results = json_object_new_array();
  bpt_json_set(doc, "bench", bpt_json_str("model"));
  bpt_json_set(doc, "device", bpt_json_str(device));
  bpt_json_set(doc, "stream_gbs", bpt_json_num(stream_gbs, "%.2f"));
  bpt_json_set(doc, "torch", bpt_json_str(torch));
  bpt_json_set(doc, "torch_threads", bpt_json_int(2));
  for (int i = 0; i < n; i++) bpt_json_push(results, json_case(&c[i]));
  bpt_json_set(doc, "results", results);
  return bpt_json_write_path("bench", path, doc, broken);
}
