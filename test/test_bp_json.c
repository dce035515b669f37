/*
 * test_bp_json.c — bp's JSON (tools/bp/json_doc.c, json-c): strings with
 * quotes, backslashes, control bytes, non-ASCII and bytes that are not UTF-8
 * come back intact (or as U+FFFD) from a strict, UTF-8-validating parse;
 * NaN and infinities are null; the layout is bp's. End to end, a plugin
 * whose device name and vendor hold such strings (backend-oddnames.so,
 * test/bp_json.mk) goes through `bp devices --json` and `bp bench --json`.
 */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "json_doc.h"

/* The strings of the oddnames plugin (test/broken/broken_plugin.c,
 * VARIANT_ODD_STRINGS) and what a reader must get back: the byte 0xff,
 * which is not UTF-8, as U+FFFD. */
#define ODD_NAME_SENT "odd \"q\" \\ \t\n\x01\x1f \xc3\xa9\xe6\x9d\xb1\xf0\x9f\x98\x80 \xff!"
#define ODD_NAME_READ "odd \"q\" \\ \t\n\x01\x1f \xc3\xa9\xe6\x9d\xb1\xf0\x9f\x98\x80 \xef\xbf\xbd!"
#define ODD_VENDOR "vendor \\\"/\x7f"

static char test_dir[PATH_MAX]; /* this test's directory: $(B)/test */

/* Parses text as RFC 8259 JSON (json-c strict mode, UTF-8 validated, no
 * trailing characters but white space); fails the test when it is not. */
static json_object *parse_strict(const char *text) {
  json_tokener *tok = json_tokener_new();
  assert_non_null(tok);
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  size_t len = strlen(text);
  json_object *doc = json_tokener_parse_ex(tok, text, (int)len);
  enum json_tokener_error err = json_tokener_get_error(tok);
  size_t used = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (err != json_tokener_success) print_message("not JSON (%s):\n%s\n", json_tokener_error_desc(err), text);
  assert_int_equal(err, json_tokener_success);
  while (used < len && strchr(" \t\r\n", text[used])) used++;
  assert_int_equal(used, len);
  return doc;
}

/* doc written by bpt_json_write into a malloc'd string; frees doc. */
static char *write_doc(json_object *doc, const char *const *broken) {
  char *text = NULL;
  size_t size = 0;
  FILE *f = open_memstream(&text, &size);
  assert_non_null(f);
  assert_true(bpt_json_write(f, doc, broken));
  assert_int_equal(fclose(f), 0);
  json_object_put(doc);
  return text;
}

/* s through {"s": s}, written and parsed back strictly. */
static char *round_trip(const char *s) {
  json_object *doc = json_object_new_object();
  bpt_json_set(doc, "s", bpt_json_str(s));
  char *text = write_doc(doc, NULL);
  json_object *back = parse_strict(text);
  free(text);
  const char *got = bpt_json_get_str(back, "s");
  assert_non_null(got);
  char *copy = strdup(got);
  json_object_put(back);
  return copy;
}

static void test_every_ascii_byte_round_trips(void **state) {
  (void)state;
  char all[128];
  for (int i = 1; i < 128; i++) all[i - 1] = (char)i;
  all[127] = '\0';
  char *got = round_trip(all);
  assert_string_equal(got, all);
  free(got);
}

static void test_utf8_kept_and_repaired(void **state) {
  (void)state;
  static const struct {
    const char *sent, *read;
  } cases[] = {
      {ODD_NAME_SENT, ODD_NAME_READ},
      {"\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf4\x8f\xbf\xbf", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf4\x8f\xbf\xbf"},
      {"a\xc0\x80z", "a\xef\xbf\xbd\xef\xbf\xbdz"},                         /* overlong NUL */
      {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},             /* a surrogate */
      {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"}, /* > U+10FFFF */
      {"cut \xe6\x9d", "cut \xef\xbf\xbd\xef\xbf\xbd"},                     /* truncated */
      {"\xfe\xff", "\xef\xbf\xbd\xef\xbf\xbd"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *got = round_trip(cases[i].sent);
    assert_string_equal(got, cases[i].read);
    free(got);
  }
}

static void test_numbers(void **state) {
  (void)state;
  json_object *doc = json_object_new_object();
  bpt_json_set(doc, "nan", bpt_json_num(NAN, "%.6g"));
  bpt_json_set(doc, "inf", bpt_json_num(INFINITY, "%.6g"));
  bpt_json_set(doc, "ninf", bpt_json_num(-INFINITY, "%.3f"));
  bpt_json_set(doc, "g", bpt_json_num(1e-30, "%.6g"));
  bpt_json_set(doc, "f", bpt_json_num(2.5, "%.3f"));
  bpt_json_set(doc, "big", bpt_json_int(INT64_MAX));
  bpt_json_set(doc, "neg", bpt_json_int(-1));
  bpt_json_set(doc, "none", bpt_json_str(NULL));
  char *text = write_doc(doc, NULL);
  assert_string_equal(text, "{\n  \"nan\": null,\n  \"inf\": null,\n  \"ninf\": null,\n  \"g\": 1e-30,\n"
                            "  \"f\": 2.500,\n  \"big\": 9223372036854775807,\n  \"neg\": -1,\n"
                            "  \"none\": null\n}\n");
  json_object *back = parse_strict(text);
  free(text);
  assert_true(bpt_json_get_num(back, "nan", -7) == -7); /* null is not a number */
  assert_true(bpt_json_get_num(back, "g", 0) == 1e-30);
  assert_true(bpt_json_get_num(back, "f", 0) == 2.5);
  assert_true(bpt_json_get_num(back, "absent", 3) == 3);
  json_object_put(back);
}

/* The root and the listed keys one member per line; an inline object's
 * listed member on a line of its own (the layout of bp conformance). */
static void test_layout(void **state) {
  (void)state;
  static const char *const broken[] = {"rows", "inner", NULL};
  json_object *doc = json_object_new_object(), *rows = json_object_new_array();
  for (int i = 0; i < 2; i++) {
    json_object *row = json_object_new_object(), *inner = json_object_new_array();
    bpt_json_set(row, "i", bpt_json_int(i));
    bpt_json_push(inner, bpt_json_bool(i));
    bpt_json_set(row, "inner", inner);
    bpt_json_set(row, "flat", json_object_new_array());
    bpt_json_push(rows, row);
  }
  bpt_json_set(doc, "path", bpt_json_str("/a/b"));
  bpt_json_set(doc, "rows", rows);
  bpt_json_set(doc, "empty", json_object_new_array());
  bpt_json_set(doc, "rows2", json_object_new_array());
  char *text = write_doc(doc, broken);
  assert_string_equal(text, "{\n"
                            "  \"path\": \"/a/b\",\n"
                            "  \"rows\": [\n"
                            "    {\"i\": 0,\n"
                            "     \"inner\": [\n"
                            "       false\n"
                            "     ], \"flat\": []},\n"
                            "    {\"i\": 1,\n"
                            "     \"inner\": [\n"
                            "       true\n"
                            "     ], \"flat\": []}\n"
                            "  ],\n"
                            "  \"empty\": [],\n"
                            "  \"rows2\": []\n"
                            "}\n");
  json_object_put(parse_strict(text));
  free(text);
}

/* ---------------------------------------------------------------------------
 * End to end: bp with the oddnames plugin.
 */
/* Runs "BACKPLANE_PLUGIN_PATH=<test dir>/jsonodd bp ARGS" and returns its
 * stdout (malloc'd); the exit status in *status. */
static char *run_bp(const char *args, int *status) {
  char cmd[3 * PATH_MAX + 512];
  snprintf(cmd, sizeof cmd, "BACKPLANE_PLUGIN_PATH='%s/jsonodd' '%s/../bin/bp' %s 2>/dev/null", test_dir,
           test_dir, args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char *text = NULL;
  size_t size = 0;
  FILE *out = open_memstream(&text, &size);
  assert_non_null(out);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) fwrite(buf, 1, n, out);
  assert_int_equal(fclose(out), 0);
  int st = pclose(p);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return text;
}

/* The member key of obj, which must be there (NULL: its value is null). */
static json_object *member(json_object *obj, const char *key) {
  json_object *v = NULL;
  bool present = json_object_object_get_ex(obj, key, &v);
  if (!present) print_message("no member '%s'\n", key);
  assert_true(present);
  return v;
}

static void test_devices_json_odd_names(void **state) {
  (void)state;
  int status;
  char *text = run_bp("devices --json", &status);
  assert_int_equal(status, 0);
  json_object *doc = parse_strict(text);
  free(text);
  json_object *devices = member(doc, "devices"), *odd = NULL;
  for (size_t i = 0; i < json_object_array_length(devices); i++) {
    json_object *d = json_object_array_get_idx(devices, i);
    if (!strcmp(bpt_json_get_str(d, "backend"), "oddnames")) odd = d;
  }
  assert_non_null(odd);
  assert_string_equal(bpt_json_get_str(odd, "name"), ODD_NAME_READ);
  assert_string_equal(bpt_json_get_str(odd, "vendor"), ODD_VENDOR);
  assert_true(json_object_is_type(member(odd, "ops"), json_type_object));
  assert_true(json_object_array_length(member(doc, "plugins")) >= 2);
  json_object_put(doc);
}

static void test_bench_json_odd_names(void **state) {
  (void)state;
  int status;
  /* The plugin runs no op: each case is a record with ran false, its
   * figures null, and the device's name. */
  char *text = run_bp("bench --quick --op add --device oddnames --json -", &status);
  assert_int_equal(status, 0);
  json_object *doc = parse_strict(text);
  free(text);
  json_object *results = member(doc, "results");
  assert_true(json_object_array_length(results) > 0);
  for (size_t i = 0; i < json_object_array_length(results); i++) {
    json_object *r = json_object_array_get_idx(results, i);
    assert_string_equal(bpt_json_get_str(r, "device"), ODD_NAME_READ);
    assert_false(bpt_json_get_bool(r, "ran"));
    assert_true(json_object_is_type(member(r, "ms"), json_type_null));
    assert_non_null(bpt_json_get_str(r, "message"));
  }
  assert_true(json_object_is_type(member(member(doc, "machine"), "ghz"), json_type_double));
  json_object_put(doc);
}

int main(int argc, char **argv) {
  (void)argc;
  if (!realpath(argv[0], test_dir)) return 1;
  *strrchr(test_dir, '/') = '\0';
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_ascii_byte_round_trips),
      cmocka_unit_test(test_utf8_kept_and_repaired),
      cmocka_unit_test(test_numbers),
      cmocka_unit_test(test_layout),
      cmocka_unit_test(test_devices_json_odd_names),
      cmocka_unit_test(test_bench_json_odd_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
