/*
 * conformance_report.c — collecting conformance results and writing them as
 * a table, TAP, JUnit XML and JSON.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bp.h"
#include "conformance_report.h"
#include "json_doc.h"

static const char *const result_names[CF_RESULT_COUNT] = {
    "pass", "FAIL", "unsupported", "skip", "warn", "xfail", "XPASS", "CRASH"};

void cf_report_init(cf_report_t *r) { memset(r, 0, sizeof *r); }

void cf_report_free(cf_report_t *r) {
  for (int i = 0; i < r->n; i++) {
    cf_record_t *x = &r->rec[i];
    free(x->plugin), free(x->device), free(x->stage), free(x->name), free(x->detail);
  }
  for (int i = 0; i < r->nxfail; i++) free(r->xfail[i]);
  free(r->rec);
  free(r->xfail);
  memset(r, 0, sizeof *r);
}

bool cf_report_load_xfail(cf_report_t *r, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n#")] = '\0';
    size_t len = strlen(line);
    while (len && line[len - 1] == ' ') line[--len] = '\0';
    if (!len) continue;
    char **n = realloc(r->xfail, (size_t)(r->nxfail + 1) * sizeof *n);
    if (!n) break;
    r->xfail = n;
    r->xfail[r->nxfail++] = strdup(line);
  }
  fclose(f);
  return true;
}

static bool listed(const cf_report_t *r, const char *device, const char *name) {
  char key[600];
  const char *slash = strchr(device, '/');
  snprintf(key, sizeof key, "%.*s/%s", slash ? (int)(slash - device) : (int)strlen(device), device, name);
  for (int i = 0; i < r->nxfail; i++)
    if (!strncmp(key, r->xfail[i], strlen(r->xfail[i]))) return true;
  return false;
}

void cf_report_add(cf_report_t *r, const char *plugin, const char *device, const char *stage, const char *name,
                   cf_result_t result, const char *detail, double seconds) {
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 256;
    cf_record_t *n = realloc(r->rec, (size_t)cap * sizeof *n);
    if (!n) return;
    r->rec = n;
    r->cap = cap;
  }
  if (listed(r, device, name)) {
    if (result == CF_FAIL || result == CF_CRASH) result = CF_XFAIL;
    else if (result == CF_PASS) result = CF_XPASS;
  }
  r->rec[r->n++] = (cf_record_t){strdup(plugin), strdup(device), strdup(stage), strdup(name), strdup(detail),
                                 result, seconds};
}

int cf_report_failures(const cf_report_t *r) {
  int n = 0;
  for (int i = 0; i < r->n; i++) n += r->rec[i].result == CF_FAIL || r->rec[i].result == CF_CRASH;
  return n;
}

void cf_report_table(const cf_report_t *r, FILE *f) {
  const char *device = "";
  int counts[CF_RESULT_COUNT] = {0};
  bool tty = isatty(fileno(f));
  for (int i = 0; i < r->n; i++) {
    const cf_record_t *x = &r->rec[i];
    if (strcmp(device, x->device)) {
      device = x->device;
      fprintf(f, "\n== %s  (%s)\n%-12s %-44s %-11s %s\n", x->device, x->plugin, "stage", "case", "result", "detail");
    }
    counts[x->result]++;
    bool bad = x->result == CF_FAIL || x->result == CF_CRASH || x->result == CF_XPASS;
    fprintf(f, "%-12s %-44.44s %s%-11s%s %s\n", x->stage, x->name, tty && bad ? "\033[31m" : "",
            result_names[x->result], tty && bad ? "\033[0m" : "", x->detail);
  }
  fprintf(f, "\nconformance:");
  for (int k = 0; k < CF_RESULT_COUNT; k++)
    if (counts[k]) fprintf(f, " %d %s", counts[k], result_names[k]);
  fprintf(f, "\n%s\n", cf_report_failures(r) ? "RESULT: FAIL" : "RESULT: PASS");
}

void cf_report_tap(const cf_report_t *r, FILE *f) {
  fprintf(f, "TAP version 13\n1..%d\n", r->n);
  for (int i = 0; i < r->n; i++) {
    const cf_record_t *x = &r->rec[i];
    bool ok = x->result != CF_FAIL && x->result != CF_CRASH;
    fprintf(f, "%s %d - %s %s: %s", ok ? "ok" : "not ok", i + 1, x->device, x->stage, x->name);
    if (x->result == CF_UNSUPPORTED || x->result == CF_SKIP) fprintf(f, " # SKIP %s", x->detail);
    else if (x->result == CF_XFAIL) fprintf(f, " # TODO expected failure: %s", x->detail);
    else fprintf(f, " # %s", x->detail);
    fputc('\n', f);
  }
}

static void xml_escape(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    default: fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
    }
  }
}

/* Counts of records [from, to) for JUnit: tests, failures (FAIL), errors
 * (CRASH), skipped (unsupported and skip). */
typedef struct junit_counts { int tests, failures, errors, skipped; } junit_counts_t;

static junit_counts_t junit_count(const cf_report_t *r, int from, int to) {
  junit_counts_t c = {0};
  for (int i = from; i < to; i++) {
    cf_result_t k = r->rec[i].result;
    c.tests++;
    c.failures += k == CF_FAIL;
    c.errors += k == CF_CRASH;
    c.skipped += k == CF_UNSUPPORTED || k == CF_SKIP;
  }
  return c;
}

/* One past the last record of the run of records sharing rec[i]'s field. */
static int group_end(const cf_report_t *r, int i, bool by_plugin) {
  int j = i + 1;
  while (j < r->n && !strcmp(by_plugin ? r->rec[j].plugin : r->rec[j].device,
                             by_plugin ? r->rec[i].plugin : r->rec[i].device))
    j++;
  return j;
}

void cf_report_junit(const cf_report_t *r, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    return;
  }
  junit_counts_t all = junit_count(r, 0, r->n);
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"bp conformance\" tests=\"%d\" "
             "failures=\"%d\" errors=\"%d\" skipped=\"%d\">\n",
          all.tests, all.failures, all.errors, all.skipped);
  for (int i = 0, end; i < r->n; i = end) {
    end = group_end(r, i, false);
    junit_counts_t c = junit_count(r, i, end);
    fputs("  <testsuite name=\"", f);
    xml_escape(f, r->rec[i].device);
    fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\">\n", c.tests, c.failures,
            c.errors, c.skipped);
    for (int k = i; k < end; k++) {
      const cf_record_t *x = &r->rec[k];
      fputs("    <testcase classname=\"", f);
      xml_escape(f, x->stage);
      fputs("\" name=\"", f);
      xml_escape(f, x->name);
      fprintf(f, "\" time=\"%.3f\">", x->seconds);
      const char *tag = x->result == CF_FAIL ? "failure" : x->result == CF_CRASH ? "error"
                        : x->result == CF_UNSUPPORTED || x->result == CF_SKIP ? "skipped" : NULL;
      if (tag) {
        fprintf(f, "<%s message=\"", tag);
        xml_escape(f, x->detail);
        fprintf(f, "\"/>");
      } else {
        fputs("<system-out>", f);
        xml_escape(f, x->detail);
        fputs("</system-out>", f);
      }
      fputs("</testcase>\n", f);
    }
    fputs("  </testsuite>\n", f);
  }
  fputs("</testsuites>\n", f);
  fclose(f);
}

/* {"total": n, "failures": f, "<result>": count, ...} over records [from, to). */
static json_object *json_totals(const cf_report_t *r, int from, int to) {
  int counts[CF_RESULT_COUNT] = {0}, failures = 0;
  for (int i = from; i < to; i++) {
    counts[r->rec[i].result]++;
    failures += r->rec[i].result == CF_FAIL || r->rec[i].result == CF_CRASH;
  }
  json_object *o = json_object_new_object();
  bpt_json_set(o, "total", bpt_json_int(to - from));
  bpt_json_set(o, "failures", bpt_json_int(failures));
  for (int k = 0; k < CF_RESULT_COUNT; k++) bpt_json_set(o, result_names[k], bpt_json_int(counts[k]));
  return o;
}

static json_object *json_check(const cf_record_t *x) {
  json_object *o = json_object_new_object();
  bpt_json_set(o, "plugin", bpt_json_str(x->plugin));
  bpt_json_set(o, "device", bpt_json_str(x->device));
  bpt_json_set(o, "stage", bpt_json_str(x->stage));
  bpt_json_set(o, "case", bpt_json_str(x->name));
  bpt_json_set(o, "result", bpt_json_str(result_names[x->result]));
  bpt_json_set(o, "seconds", bpt_json_num(x->seconds, "%.3f"));
  bpt_json_set(o, "detail", bpt_json_str(x->detail));
  return o;
}

void cf_report_json(const cf_report_t *r, const char *path) {
  static const char *const broken[] = {"plugins", "checks", NULL};
  json_object *doc = json_object_new_object(), *plugins = json_object_new_array();
  bpt_json_set(doc, "result", bpt_json_str(cf_report_failures(r) ? "FAIL" : "PASS"));
  bpt_json_set(doc, "totals", json_totals(r, 0, r->n));
  for (int i = 0, end; i < r->n; i = end) {
    end = group_end(r, i, true);
    json_object *plugin = json_object_new_object(), *checks = json_object_new_array();
    bpt_json_set(plugin, "plugin", bpt_json_str(r->rec[i].plugin));
    bpt_json_set(plugin, "totals", json_totals(r, i, end));
    for (int k = i; k < end; k++) bpt_json_push(checks, json_check(&r->rec[k]));
    bpt_json_set(plugin, "checks", checks);
    bpt_json_push(plugins, plugin);
  }
  bpt_json_set(doc, "plugins", plugins);
  bpt_json_write_path("conformance", path, doc, broken);
}
