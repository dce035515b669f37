/*
 * test_digest_cache.c — manifest digests kept across processes
 * (core/digest_cache.c, docs/plugin-abi.md section 15). Every library call
 * on the plugin runs in a forked child, so each is a fresh process for the
 * digest (the parent never hashes, and has nothing in memory). Whether a
 * child read the plugin is seen with inotify: only hashing opens the file
 * (a manifest check otherwise stats it and reads the manifest), so no
 * IN_OPEN means the stored digest was used.
 */
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>

#include "test_loader_util.h"
#include "skip.h"

static char dc_dir[PATH_MAX], dc_lib[PATH_MAX], dc_cache[PATH_MAX];

static int setup(void **state) {
  tl_setup(state);
  unsetenv("BACKPLANE_PLUGIN_PATH");
  unsetenv("BACKPLANE_LAYERS");
  tl_mkdtemp(dc_dir, sizeof dc_dir);
  char from[PATH_MAX], cmd[4 * PATH_MAX], cache_dir[PATH_MAX];
  snprintf(cache_dir, sizeof cache_dir, "%s/cache", dc_dir);
  assert_int_equal(mkdir(cache_dir, 0700), 0);
  setenv("BACKPLANE_PROBE_CACHE", cache_dir, 1);
  snprintf(dc_cache, sizeof dc_cache, "%s/digest-cache.bin", cache_dir);
  /* The fixture aborts in its constructor: it must never be mapped here. */
  snprintf(from, sizeof from, "%s/test/fixtures/backend-ctorabort.so", tl_build);
  snprintf(dc_lib, sizeof dc_lib, "%s/backend-ctorabort.so", dc_dir);
  tl_copy_file(from, dc_lib, 0755);
  snprintf(cmd, sizeof cmd,
           "'%s/bin/bp-manifest' --name ctorabort --version 1.0 --abi 1.3 '%s' '%s/%s'", tl_build,
           dc_lib, dc_dir, "backend-ctorabort.json");
  assert_int_equal(system(cmd), 0);
  return 0;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Waits until the plugin's ctime is over a second old: the digest cache
 * stores no file changed more recently (the kernel's ctime clock is
 * coarse, see core/digest_cache.c settled). */
static void wait_settled(void) {
  struct stat st;
  assert_int_equal(stat(dc_lib, &st), 0);
  double ctime_s = (double)st.st_ctim.tv_sec + st.st_ctim.tv_nsec / 1e9;
  while (now_s() < ctime_s + 1.2) usleep(50000);
}

static int setup_settled(void **state) {
  setup(state);
  wait_settled();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  tl_rmtree(dc_dir);
  unsetenv("BACKPLANE_PROBE_CACHE");
  return 0;
}

/* The result of checking the plugin against its manifest in a new process. */
typedef struct verdict {
  int status;
  char reason[512];
} verdict_t;

static verdict_t child_verify(void) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    bp_manifest_info_t m;
    verdict_t v = {(int)bp_manifest_verify(dc_lib, &m), ""};
    snprintf(v.reason, sizeof v.reason, "%s", m.reason);
    _exit(write(fds[1], &v, sizeof v) == (ssize_t)sizeof v ? 0 : 1);
  }
  close(fds[1]);
  verdict_t v;
  assert_int_equal(read(fds[0], &v, sizeof v), (ssize_t)sizeof v);
  close(fds[0]);
  int ws;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  return v;
}

/* Opens of the plugin file between watch_plugin and count_opens. */
static int watch_plugin(void) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  assert_true(fd >= 0);
  assert_true(inotify_add_watch(fd, dc_lib, IN_OPEN) >= 0);
  return fd;
}

static int count_opens(int fd) {
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  int opens = 0;
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    for (char *p = buf; p < buf + n;
         p += sizeof(struct inotify_event) + ((struct inotify_event *)p)->len)
      if (((struct inotify_event *)p)->mask & IN_OPEN) opens++;
  close(fd);
  return opens;
}

/* Verifies in a new process, expecting BP_OK; returns how often the
 * plugin file was opened meanwhile. */
static int verify_ok_counting_opens(void) {
  int w = watch_plugin();
  verdict_t v = child_verify();
  if (v.status != BP_OK) fail_msg("verify failed: %d %s", v.status, v.reason);
  return count_opens(w);
}

static void test_second_process_uses_stored_digest(void **state) {
  (void)state;
  /* The first process hashes (the watch sees it) and stores the digest. */
  assert_true(verify_ok_counting_opens() > 0);
  struct stat st;
  assert_int_equal(stat(dc_cache, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  /* The second one does not read the plugin at all. */
  assert_int_equal(verify_ok_counting_opens(), 0);
}

/* Flips one byte in the middle of the plugin and restores its mtime: same
 * size, same mtime; only the ctime (which no one can set) changes. */
static void tamper_keeping_mtime(void) {
  struct stat before, after;
  assert_int_equal(stat(dc_lib, &before), 0);
  int fd = open(dc_lib, O_RDWR | O_CLOEXEC);
  assert_true(fd >= 0);
  off_t at = before.st_size / 2;
  unsigned char b;
  assert_int_equal(pread(fd, &b, 1, at), 1);
  b ^= 0x5a;
  assert_int_equal(pwrite(fd, &b, 1, at), 1);
  close(fd);
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  /* The ctime has the kernel clock's granularity: touch again until it
   * differs, as it would after any real delay. */
  for (int i = 0; i < 200; i++) {
    assert_int_equal(utimensat(AT_FDCWD, dc_lib, times, 0), 0);
    assert_int_equal(stat(dc_lib, &after), 0);
    if (after.st_ctim.tv_sec != before.st_ctim.tv_sec ||
        after.st_ctim.tv_nsec != before.st_ctim.tv_nsec)
      break;
    usleep(5000);
  }
  assert_int_equal(after.st_size, before.st_size);
  assert_int_equal(after.st_ino, before.st_ino);
  assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  assert_false(after.st_ctim.tv_sec == before.st_ctim.tv_sec &&
               after.st_ctim.tv_nsec == before.st_ctim.tv_nsec);
}

static void test_tamper_with_mtime_restored_refused(void **state) {
  (void)state;
  assert_true(verify_ok_counting_opens() > 0); /* digest stored */
  tamper_keeping_mtime();
  verdict_t v = child_verify();
  assert_int_equal(v.status, BP_ERR_INCOMPATIBLE);
  assert_non_null(strstr(v.reason, "MANIFEST-7"));
  /* The loader refuses it too, before dlopen: a child that mapped the
   * fixture would abort. */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    bp_context_options_t o = {.struct_size = sizeof o,
                              .plugin_dir = dc_dir,
                              .only_plugin_dir = true,
                              .in_process_probe = true};
    bp_context_t *ctx = NULL;
    assert_int_equal(bp_context_create(&o, &ctx), BP_OK);
    tl_expect_refused(ctx, "backend-ctorabort.so", BP_STAGE_OPEN, BP_ERR_INCOMPATIBLE, "MANIFEST-7",
                      NULL);
    bp_context_destroy(ctx);
    _exit(0);
  }
  int ws;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

/* Replaces the stored digest's first hex digit in the cache file. */
static void corrupt_stored_digest(void) {
  FILE *f = fopen(dc_cache, "r+b");
  assert_non_null(f);
  static char data[1 << 20];
  size_t n = fread(data, 1, sizeof data, f);
  bp_manifest_info_t m;
  char man[PATH_MAX];
  snprintf(man, sizeof man, "%s/backend-ctorabort.json", dc_dir);
  assert_int_equal(bp_manifest_read(man, &m), BP_OK);
  char *at = memmem(data, n, m.sha256, 64);
  assert_non_null(at);
  *at = *at == '0' ? '1' : '0';
  assert_int_equal(fseek(f, 0, SEEK_SET), 0);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static void test_corrupt_cache_ignored(void **state) {
  (void)state;
  assert_true(verify_ok_counting_opens() > 0);
  corrupt_stored_digest();
  /* Not trusted: hashed again, and the (wrong) stored digest not used. */
  assert_true(verify_ok_counting_opens() > 0);
  /* Garbage of any length is a miss as well. */
  FILE *f = fopen(dc_cache, "wb");
  assert_non_null(f);
  fputs("not a digest cache", f);
  assert_int_equal(fclose(f), 0);
  assert_true(verify_ok_counting_opens() > 0);
  assert_int_equal(verify_ok_counting_opens(), 0); /* rewritten, good again */
}

static void test_foreign_or_shared_cache_ignored(void **state) {
  (void)state;
  assert_true(verify_ok_counting_opens() > 0);
  /* Writable by the group: ignored, the plugin is hashed again (and the
   * file replaced by a private one, used from then on). */
  assert_int_equal(chmod(dc_cache, 0620), 0);
  assert_true(verify_ok_counting_opens() > 0);
  assert_int_equal(verify_ok_counting_opens(), 0);
  if (geteuid() != 0) {
    TEST_SKIP_CASE("a cache owned by another user needs root to create");
    return;
  }
  assert_int_equal(chown(dc_cache, 65534, 65534), 0);
  assert_true(verify_ok_counting_opens() > 0);
}

static void test_just_changed_file_not_stored(void **state) {
  (void)state;
  /* Touched now: its ctime could still be shared by a second write. */
  assert_int_equal(utimensat(AT_FDCWD, dc_lib, NULL, 0), 0);
  double start = now_s();
  assert_true(verify_ok_counting_opens() > 0);
  struct stat st;
  bool stored = stat(dc_cache, &st) == 0;
  if (now_s() - start > 0.8) {
    TEST_SKIP_CASE("the machine took too long to verify within the second");
    return;
  }
  assert_false(stored);
  /* Once settled it is stored, and used. */
  wait_settled();
  assert_true(verify_ok_counting_opens() > 0);
  assert_int_equal(verify_ok_counting_opens(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_second_process_uses_stored_digest, setup_settled,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_tamper_with_mtime_restored_refused, setup_settled,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_corrupt_cache_ignored, setup_settled, teardown),
      cmocka_unit_test_setup_teardown(test_foreign_or_shared_cache_ignored, setup_settled,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_just_changed_file_not_stored, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
