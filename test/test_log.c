/*
 * test_log.c — the log API: bp_log_set_handler receives the library's lines
 * with their level and category, bp_log_set_level filters them, NULL
 * restores stderr, and an unknown BACKPLANE_DEBUG word warns exactly once.
 * main sets BACKPLANE_DEBUG=debug,loader,bogus before the first log call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backplane.h"

typedef struct seen {
  int lines, debug_loader, warn_unknown, above_level;
  bp_log_level_t max_level;
  char last_category[64];
} seen_t;

static void handler(bp_log_level_t level, const char *category,
                    const char *message, void *user_data) {
  seen_t *s = user_data;
  s->lines++;
  if (level > s->max_level) s->above_level++;
  snprintf(s->last_category, sizeof s->last_category, "%s", category);
  if (level == BP_LOG_DEBUG && !strcmp(category, "loader") &&
      strstr(message, "/nonexistent-bp-log-test"))
    s->debug_loader++;
  if (level == BP_LOG_WARN && strstr(message, "unknown word 'bogus'") &&
      strstr(message, "debug") && strstr(message, "loader"))
    s->warn_unknown++;
  assert_null(strchr(message, '\n'));
}

/* One context over a directory that does not exist: the loader logs at
 * debug level that it skips it. */
static void create_context(void) {
  bp_context_options_t o = {.struct_size = sizeof o};
  o.plugin_dir = "/nonexistent-bp-log-test";
  o.only_plugin_dir = true;
  bp_context_t *ctx = NULL;
  assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
  bp_context_destroy(ctx);
}

static seen_t seen;

static void test_handler_gets_lines_and_one_warning(void **state) {
  (void)state;
  memset(&seen, 0, sizeof seen);
  seen.max_level = BP_LOG_DEBUG;
  bp_log_set_handler(handler, &seen);
  create_context();
  assert_true(seen.debug_loader >= 1);
  assert_int_equal(seen.warn_unknown, 1);
  assert_int_equal(bp_log_get_level(), BP_LOG_DEBUG);
  create_context();
  assert_int_equal(seen.warn_unknown, 1); /* once per process */
  bp_log_set_handler(NULL, NULL);
}

static void test_level_filters(void **state) {
  (void)state;
  memset(&seen, 0, sizeof seen);
  seen.max_level = BP_LOG_WARN;
  bp_log_set_handler(handler, &seen);
  bp_log_set_level(BP_LOG_WARN);
  assert_int_equal(bp_log_get_level(), BP_LOG_WARN);
  create_context();
  assert_int_equal(seen.debug_loader, 0);
  assert_int_equal(seen.above_level, 0);
  bp_log_set_level(BP_LOG_DEBUG);
  create_context();
  assert_true(seen.debug_loader >= 1);
  bp_log_set_handler(NULL, NULL);
}

static void test_null_restores_stderr(void **state) {
  (void)state;
  memset(&seen, 0, sizeof seen);
  seen.max_level = BP_LOG_DEBUG;
  bp_log_set_handler(handler, &seen);
  bp_log_set_handler(NULL, NULL);
  bp_log_set_level(BP_LOG_DEBUG); /* the lines go to stderr again */
  create_context();
  assert_int_equal(seen.lines, 0);
  bp_log_set_level(BP_LOG_WARN);
}

int main(void) {
  setenv("BACKPLANE_DEBUG", "debug,loader,bogus", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_handler_gets_lines_and_one_warning),
      cmocka_unit_test(test_level_filters),
      cmocka_unit_test(test_null_restores_stderr),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
