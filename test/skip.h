/*
 * skip.h — test/run.sh's skip convention for compiled tests (README,
 * "Tests"). Include after <cmocka.h>.
 *
 *  - A suite that cannot run at all prints "SKIP: <reason>" and exits 77:
 *    `return test_skip_suite("...");` from main.
 *  - A case that cannot run here says why and calls cmocka's skip():
 *    TEST_SKIP_CASE("no AVX-512F on this CPU"). run.sh lists the reason
 *    beside the suite's result, so no skip is silent.
 *  - A suite that needs a device calls test_no_device() when there is none:
 *    it fails when BP_REQUIRE_DEVICES (set by test/run.sh from the driver
 *    packages tools/deps.sh installs) names the backend, and skips
 *    otherwise.
 */
#ifndef BP_TEST_SKIP_H
#define BP_TEST_SKIP_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exit status of a test that could not run (automake's convention). */
#define BP_TEST_SKIP 77

/* Skips the current cmocka case, printing "SKIP: reason" for run.sh. */
#define TEST_SKIP_CASE(reason)                                                 \
  do {                                                                         \
    print_message("SKIP: %s\n", (reason));                                     \
    skip();                                                                    \
  } while (0)

/* Prints "SKIP: reason" and returns BP_TEST_SKIP, for main to return. */
static inline int test_skip_suite(const char *reason) {
  printf("SKIP: %s\n", reason);
  fflush(stdout);
  return BP_TEST_SKIP;
}

/* Whether backend is named in the comma-separated BP_REQUIRE_DEVICES. */
static inline bool test_device_required(const char *backend) {
  const char *list = getenv("BP_REQUIRE_DEVICES");
  size_t n = strlen(backend);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && !strncmp(p, backend, n)) return true;
    p = end ? end + 1 : p + len;
  }
  return false;
}

/* What main returns when the suite's backend shows no device: a failure
 * (1) when the backend is required, a skip (77) otherwise. */
static inline int test_no_device(const char *backend, const char *why) {
  char reason[768];
  snprintf(reason, sizeof reason, "no %s device (%s)", backend, why && *why ? why : "no reason given");
  if (test_device_required(backend)) {
    printf("FAIL: %s, although BP_REQUIRE_DEVICES=%s says its driver package is installed "
           "(unset it, or drop '%s' from it, to skip instead)\n",
           reason, getenv("BP_REQUIRE_DEVICES"), backend);
    fflush(stdout);
    return 1;
  }
  return test_skip_suite(reason);
}

#endif /* BP_TEST_SKIP_H */
