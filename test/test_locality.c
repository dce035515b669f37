/*
 * test_locality.c — the NUMA node and local CPUs of PCI devices
 * (core/locality.c), linked straight from the core's object and compared
 * with what the kernel says in /sys/bus/pci/devices/<address>/.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "skip.h"

#include "internal.h"

/* locality.c logs through the core; the test has no core around it. */
void bp__log(bp_log_level_t level, bp__log_category_t cat, const char *fmt, ...) {
  (void)level;
  (void)cat;
  (void)fmt;
}

static bool hwloc_installed(void) {
  void *dl = dlopen("libhwloc.so.15", RTLD_NOW | RTLD_LOCAL);
  if (dl) dlclose(dl);
  return dl != NULL;
}

static bool read_line(const char *path, char *out, size_t size) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool ok = fgets(out, (int)size, f) != NULL;
  fclose(f);
  if (ok) out[strcspn(out, "\n")] = 0;
  return ok;
}

static void test_every_pci_device_matches_sysfs(void **state) {
  (void)state;
  if (!hwloc_installed()) TEST_SKIP_CASE("libhwloc not installed (tools/deps.sh installs libhwloc-dev)");
  DIR *dir = opendir("/sys/bus/pci/devices");
  if (!dir) TEST_SKIP_CASE("no PCI bus visible under /sys/bus/pci/devices (some containers)");
  int checked = 0;
  for (struct dirent *de; (de = readdir(dir));) {
    if (de->d_name[0] == '.') continue;
    char id[300], path[600], cpus_sys[256], node_sys[32];
    snprintf(id, sizeof id, "pci:%s", de->d_name);
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", de->d_name);
    if (!read_line(path, cpus_sys, sizeof cpus_sys)) continue;
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", de->d_name);
    if (!read_line(path, node_sys, sizeof node_sys)) continue;
    int32_t node = -7;
    char cpus[64];
    bool found = bp__pci_locality(id, &node, cpus, sizeof cpus);
    assert_true(found);
    assert_true(node >= 0);
    /* sysfs says -1 where the firmware gives no affinity: hwloc then hangs
     * the device under the machine, whose first node is 0. */
    if (atoi(node_sys) >= 0) assert_int_equal(node, atoi(node_sys));
    assert_string_equal(cpus, cpus_sys);
    checked++;
  }
  closedir(dir);
  printf("  %d PCI devices agree with sysfs\n", checked);
}

static void test_unknown_and_malformed_identities(void **state) {
  (void)state;
  const char *bad[] = {"pci:ffff:ff:1f.7", "uuid:6d65736132322e33", "", "pci:0000:00:00", "pci:0000:00:00.0x",
                       "host:cpu"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int32_t node = 5;
    char cpus[64] = "x";
    assert_false(bp__pci_locality(bad[i], &node, cpus, sizeof cpus));
    assert_int_equal(node, -1);
    assert_string_equal(cpus, "");
  }
  int32_t node = 5;
  assert_false(bp__pci_locality(NULL, &node, NULL, 0));
  assert_int_equal(node, -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_pci_device_matches_sysfs),
      cmocka_unit_test(test_unknown_and_malformed_identities),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
