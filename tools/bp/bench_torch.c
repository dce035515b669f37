/*
 * bench_torch.c — the PyTorch anchor of bp bench: runs tools/bench_torch.py
 * once per bench run as a subprocess, cases in through a temporary file,
 * JSON lines out (see the script's header for the protocol).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "json_doc.h"

bool bench_torch_covers(const bpt_case_t *c) {
  return c->dtype == BP_F32 &&
         (c->op == BPT_ATTENTION || c->op == BPT_CONV2D ||
          c->op == BPT_SOFTMAX || c->op == BPT_LAYER_NORM || c->op == BPT_GELU);
}

/* The helper next to the build tree, the install tree, or the working
 * directory. */
static bool find_script(char *out, size_t size) {
  char dir[PATH_MAX];
  const char *rel[] = {"/../../tools/bench_torch.py",
                       "/../share/backplane/bench_torch.py"};
  if (bpt_exe_dir(dir, sizeof dir))
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
      snprintf(out, size, "%s%s", dir, rel[i]);
      if (access(out, R_OK) == 0) return true;
    }
  snprintf(out, size, "tools/bench_torch.py");
  return access(out, R_OK) == 0;
}

/* Writes the covered cases, one per line, to a temporary file. */
static bool write_cases(const bpt_case_t *cases, int n, char *path,
                        size_t size) {
  snprintf(path, size, "/tmp/bp-bench-torch-XXXXXX");
  int fd = mkstemp(path);
  if (fd < 0) return false;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    return false;
  }
  for (int i = 0; i < n; i++) {
    const bpt_case_t *c = &cases[i];
    if (!bench_torch_covers(c)) continue;
    if (c->op == BPT_ATTENTION)
      fprintf(f, "%d attention %lld %lld %lld %lld %d\n", i, (long long)c->batch,
              (long long)c->heads, (long long)c->seq, (long long)c->dim,
              c->causal ? 1 : 0);
    else if (c->op == BPT_CONV2D)
      fprintf(f, "%d conv2d %lld %lld %lld %lld %lld %lld %lld %lld\n", i,
              (long long)c->batch, (long long)c->c, (long long)c->hw,
              (long long)c->k, (long long)c->r, (long long)c->stride,
              (long long)c->pad, (long long)c->groups);
    else
      fprintf(f, "%d %s %lld %lld\n", i, bpt_op_name(c->op), (long long)c->m,
              (long long)c->n);
  }
  return fclose(f) == 0;
}

/* Reads the header and the records, one JSON object a line; false when
 * this interpreter has no torch (why says so). */
static bool read_results(FILE *p, int total, bench_torch_t *out) {
  char line[4096];
  if (!fgets(line, sizeof line, p)) {
    snprintf(out->why, sizeof out->why, "the helper printed nothing");
    return false;
  }
  json_object *head = bpt_json_parse(line);
  if (!head || !bpt_json_get_bool(head, "available")) {
    const char *reason = bpt_json_get_str(head, "reason");
    snprintf(out->why, sizeof out->why, "%s", reason ? reason : "the helper's first line is not its header");
    json_object_put(head);
    return false;
  }
  const char *version = bpt_json_get_str(head, "version");
  snprintf(out->version, sizeof out->version, "%s", version ? version : "");
  json_object_put(head);
  out->available = true;
  int done = 0;
  while (fgets(line, sizeof line, p)) {
    json_object *rec = bpt_json_parse(line);
    double id = bpt_json_get_num(rec, "id", -1);
    if (id >= 0 && id < BENCH_SUITE_MAX && id == (int)id) {
      out->ms[(int)id] = bpt_json_get_num(rec, "ms", -1);
      out->sdpa_ms[(int)id] = bpt_json_get_num(rec, "sdpa_ms", -1);
      bpt_progress(++done, total, "PyTorch anchor");
    }
    json_object_put(rec);
  }
  return true;
}

static bool run_helper(const char *python, const char *script,
                       const char *cases, int total, bool quick,
                       bench_torch_t *out) {
  char cmd[3 * PATH_MAX];
  snprintf(cmd, sizeof cmd, "%s '%s'%s < '%s' 2>/dev/null", python, script,
           quick ? " --quick" : "", cases);
  FILE *p = popen(cmd, "r");
  if (!p) {
    snprintf(out->why, sizeof out->why, "cannot run %s", python);
    return false;
  }
  bool ok = read_results(p, total, out);
  int st = pclose(p);
  if (!ok && !out->why[0])
    snprintf(out->why, sizeof out->why, "%s failed (status %d)", python, st);
  return ok;
}

void bench_torch_measure(const bpt_case_t *cases, int n, bool quick,
                         bench_torch_t *out) {
  memset(out, 0, sizeof *out);
  out->count = n;
  for (int i = 0; i < BENCH_SUITE_MAX; i++) out->ms[i] = out->sdpa_ms[i] = -1;
  int total = 0;
  for (int i = 0; i < n; i++) total += bench_torch_covers(&cases[i]);
  if (total == 0) {
    out->not_needed = true;
    return;
  }
  char script[PATH_MAX], tmp[64];
  if (!find_script(script, sizeof script)) {
    snprintf(out->why, sizeof out->why, "tools/bench_torch.py not found");
    return;
  }
  if (!write_cases(cases, n, tmp, sizeof tmp)) {
    snprintf(out->why, sizeof out->why, "cannot write a temporary file");
    return;
  }
  /* Debian's python3-torch lives in /usr/bin/python3's path; a python3
   * earlier in PATH (pyenv, a venv) may not see it. */
  const char *pythons[] = {"python3", "/usr/bin/python3"};
  for (size_t i = 0; i < 2 && !out->available; i++) {
    bpt_progress(0, total, "PyTorch anchor (starting python)");
    run_helper(pythons[i], script, tmp, total, quick, out);
  }
  bpt_progress_done();
  unlink(tmp);
}
