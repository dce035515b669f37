/*
 * test_hwloc.c — the CPU device's topology (plugins/cpu/topology.c): what
 * hwloc finds when libhwloc.so.15 loads, the sysconf fallback, and that the
 * "cpu" device's description carries the summary. topology.c is linked in
 * directly so its discovery can be compared with what the plugin reports,
 * and threadpool.c to check that workers are pinned to their cores and
 * leave the caller's core to it.
 */
#include <dlfcn.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "skip.h"

#include "backplane.h"
#include "plugins/cpu/cpu.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)

/* The plugin's own test for a usable hwloc, in short. */
static bool hwloc_installed(void) {
  void *dl = dlopen("libhwloc.so.15", RTLD_NOW | RTLD_LOCAL);
  bool ok = dl && dlsym(dl, "hwloc_topology_load");
  if (dl) dlclose(dl);
  return ok;
}

static void check_caches(const cpu_topology_t *t) {
  /* Zero means unknown (a VM may hide a level); a known size is plausible. */
  if (t->l1d) assert_true(t->l1d >= 4 * KiB && t->l1d <= 4 * MiB);
  if (t->l2) assert_true(t->l2 >= 64 * KiB && t->l2 <= 256 * MiB);
  if (t->l3) assert_true(t->l3 >= 256 * KiB && t->l3 <= 4096 * MiB);
  if (t->l1d && t->l2) assert_true(t->l2 >= t->l1d);
}

static void test_hwloc_values_sane(void **state) {
  (void)state;
  if (!hwloc_installed()) TEST_SKIP_CASE("libhwloc not installed (tools/deps.sh installs libhwloc-dev)");
  cpu_topology_t t;
  assert_true(cpu_topology_query(true, &t));
  assert_true(t.from_hwloc);
  assert_true(t.packages >= 1 && t.packages <= 64);
  assert_true(t.cores >= t.packages && t.cores <= 65536);
  assert_true(t.pus >= t.cores && t.pus <= 8 * t.cores);
  assert_true(t.numa_nodes >= 1 && t.numa_nodes <= 1024);
  assert_true(t.l2 > 0); /* every x86 CPU hwloc or CPUID knows has one */
  check_caches(&t);
  /* hwloc counts only the CPUs this process may use, like sysconf's side. */
  cpu_topology_t s;
  cpu_topology_query(false, &s);
  assert_int_equal(t.pus, s.pus);
}

static void test_sysconf_fallback(void **state) {
  (void)state;
  cpu_topology_t t;
  char text[128];
  assert_false(cpu_topology_query(false, &t));
  assert_false(t.from_hwloc);
  assert_true(t.pus >= 1);
  assert_int_equal(t.cores, 0); /* unknown without hwloc: not guessed */
  check_caches(&t);
  cpu_topology_describe(&t, text, sizeof text);
  assert_non_null(strstr(text, "logical CPU"));
}

static void test_cache_sizes(void **state) {
  (void)state;
  uint64_t l1d, l2, l3;
  cpu_cache_sizes(&l1d, &l2, &l3);
  cpu_cache_sizes(NULL, NULL, NULL);
  const cpu_topology_t *t = cpu_topology_get();
  assert_int_equal(l1d, t->l1d);
  assert_int_equal(l2, t->l2);
  assert_int_equal(l3, t->l3);
  assert_true(l2 > 0 || !hwloc_installed());
}

static void test_description_mentions_topology(void **state) {
  (void)state;
  char exe[PATH_MAX], plugins[PATH_MAX + 16], text[128];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  snprintf(plugins, sizeof plugins, "%s/../plugins", exe);
  bp_context_options_t o = {.struct_size = sizeof o, .plugin_dir = plugins};
  bp_context_t *ctx;
  assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
  uint32_t count;
  bp_device_entry_t e = {0};
  assert_int_equal(bp_context_device_count(ctx, &count), BP_OK);
  bool found = false;
  for (uint32_t i = 0; i < count && !found; i++) {
    assert_int_equal(bp_context_device_entry(ctx, i, &e), BP_OK);
    found = !strcmp(e.backend, "cpu") && !strcmp(e.info.name, "cpu");
  }
  bp_context_destroy(ctx);
  assert_true(found);
  cpu_topology_t t;
  cpu_topology_query(true, &t);
  cpu_topology_describe(&t, text, sizeof text);
  if (!strstr(e.info.description, text))
    fail_msg("description \"%s\" lacks \"%s\"", e.info.description, text);
  unsigned cores = 0;
  const char *c = strstr(e.info.description, " core");
  if (hwloc_installed()) {
    assert_non_null(c);
    while (c > e.info.description && c[-1] >= '0' && c[-1] <= '9') c--;
    cores = (unsigned)atoi(c);
    assert_true(cores >= 1 && cores <= e.info.compute_units);
  } else {
    assert_non_null(strstr(e.info.description, "logical CPU"));
  }
}

/* The per-core CPU sets partition the process's affinity mask: disjoint,
 * together exactly the allowed CPUs, and one per core hwloc counts when
 * every CPU is allowed. */
static void test_core_sets_partition_affinity(void **state) {
  (void)state;
  cpu_set_t allowed, all;
  assert_int_equal(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  const cpu_set_t *sets;
  unsigned n = cpu_core_sets(&sets);
  assert_true(n >= 1);
  CPU_ZERO(&all);
  for (unsigned i = 0; i < n; i++) {
    cpu_set_t both;
    CPU_AND(&both, &all, &sets[i]);
    assert_int_equal(CPU_COUNT(&both), 0); /* disjoint */
    assert_true(CPU_COUNT(&sets[i]) >= 1);
    CPU_OR(&all, &all, &sets[i]);
  }
  assert_true(CPU_EQUAL(&all, &allowed));
  cpu_topology_t t;
  if (cpu_topology_query(true, &t) && CPU_COUNT(&allowed) == (int)t.pus)
    assert_int_equal(n, t.cores);
}

/* Pinned workers run on their core's CPUs, worker i on set i (wrapping);
 * the calling thread (worker 0) keeps its affinity. */
static void test_pool_workers_pinned(void **state) {
  (void)state;
  const cpu_set_t *sets;
  unsigned n = cpu_core_sets(&sets);
  cpu_set_t before, after, got;
  assert_int_equal(sched_getaffinity(0, sizeof before, &before), 0);
  cpu_pool_t *p = cpu_pool_create(n + 1);
  assert_non_null(p);
  assert_int_equal(cpu_pool_pin(p, sets, n), n);
  for (unsigned i = 1; i <= n; i++) {
    assert_true(cpu_pool_worker_affinity(p, i, &got));
    assert_true(CPU_EQUAL(&got, &sets[i % n]));
  }
  assert_false(cpu_pool_worker_affinity(p, 0, &got));
  assert_int_equal(sched_getaffinity(0, sizeof after, &after), 0);
  assert_true(CPU_EQUAL(&before, &after));
  cpu_pool_destroy(p);
}

/* Where each worker of a run ran (sched_getcpu at its chunk). */
static void record_cpu(void *ctx, int64_t begin, int64_t end, unsigned worker) {
  (void)begin, (void)end;
  ((int *)ctx)[worker] = sched_getcpu();
}

/* A caller that runs on a pinned worker's core does not share it with that
 * worker: the run moves the worker to the core left for the caller (the
 * caller's own affinity stays as the application set it). */
static void test_pool_worker_leaves_caller_core(void **state) {
  (void)state;
  const cpu_set_t *sets;
  unsigned n = cpu_core_sets(&sets);
  if (n < 2) TEST_SKIP_CASE("fewer than two cores allowed: no worker to move");
  cpu_set_t before, got;
  assert_int_equal(sched_getaffinity(0, sizeof before, &before), 0);
  cpu_pool_t *p = cpu_pool_create(n);
  assert_non_null(p);
  assert_int_equal(cpu_pool_pin(p, sets, n), n - 1);
  /* the application puts its thread on worker 1's core */
  assert_int_equal(sched_setaffinity(0, sizeof sets[1], &sets[1]), 0);
  int where[64];
  for (unsigned i = 0; i < n && i < 64; i++) where[i] = -1;
  cpu_pool_run(p, n, 1, record_cpu, where);
  assert_true(cpu_pool_worker_affinity(p, 1, &got));
  assert_true(CPU_EQUAL(&got, &sets[0]));
  assert_true(where[1] >= 0 && CPU_ISSET((unsigned)where[1], &sets[0]));
  for (unsigned i = 2; i < n; i++) { /* the other workers stay */
    assert_true(cpu_pool_worker_affinity(p, i, &got));
    assert_true(CPU_EQUAL(&got, &sets[i]));
  }
  assert_int_equal(sched_getaffinity(0, sizeof got, &got), 0);
  assert_true(CPU_EQUAL(&got, &sets[1]));
  /* back on core 0, the caller finds worker 1 there now: it moves to 1 */
  assert_int_equal(sched_setaffinity(0, sizeof sets[0], &sets[0]), 0);
  cpu_pool_run(p, n, 1, record_cpu, where);
  assert_true(cpu_pool_worker_affinity(p, 1, &got));
  assert_true(CPU_EQUAL(&got, &sets[1]));
  assert_true(where[1] >= 0 && CPU_ISSET((unsigned)where[1], &sets[1]));
  assert_int_equal(sched_setaffinity(0, sizeof before, &before), 0);
  cpu_pool_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hwloc_values_sane),
      cmocka_unit_test(test_sysconf_fallback),
      cmocka_unit_test(test_cache_sizes),
      cmocka_unit_test(test_description_mentions_topology),
      cmocka_unit_test(test_core_sets_partition_affinity),
      cmocka_unit_test(test_pool_workers_pinned),
      cmocka_unit_test(test_pool_worker_leaves_caller_core),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
