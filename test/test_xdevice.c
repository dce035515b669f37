/*
 * test_xdevice.c — data and ordering between devices (docs/runtime.md,
 * "Several devices"):
 *
 *  - the copy matrix: every ordered pair of the devices present (cpu,
 *    cpu-ref, opencl, vulkan, and the CUDA and ROCm shims), odd sizes and
 *    offsets, bp_buffer_copy and bp_buffer_copy_async (on a stream of either
 *    side), byte for byte, with the bytes around the range untouched; one
 *    case per pair, so a pair with an absent device is a reported skip;
 *  - bp_buffer_copy_async on one device (between buffers, within one);
 *  - a copy several staging chunks long between the two shims, whose memory
 *    neither maps nor is host memory (the staged pipeline);
 *  - bad input (ranges, overflow, freed buffers, a stream of a third device,
 *    a capturing stream) refused with nothing written;
 *  - a chain across three streams on three devices, where each link's data
 *    passes through host memory asynchronously, so only the cross-device
 *    event waits keep it in order; an unrecorded event is no wait.
 *
 * The shims are selected the way test_cuda and test_rocm do it: the
 * BACKPLANE_CUDA_DRIVER / BACKPLANE_HIP_RUNTIME / BACKPLANE_HIPRTC variables
 * point at the files built beside this binary.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backplane.h"
#include "skip.h"

enum { DEV_CPU, DEV_CPU_REF, DEV_OPENCL, DEV_VULKAN, DEV_CUDA, DEV_ROCM, NDEV };
static const char *const dev_names[NDEV] = {"cpu", "cpu-ref", "opencl", "vulkan", "cuda", "rocm"};

typedef struct xdev {
  bp_device_t *dev;
  bp_stream_t *s;
  char why[512]; /* why it is absent */
} xdev_t;

static bp_context_t *ctx;
static xdev_t devs[NDEV];
static int missing_required; /* a device BP_REQUIRE_DEVICES names is absent */

#define SENTINEL 0xA5
#define PAD 64

/* Points the GPU plugins at the shims built beside this binary, unless the
 * caller chose other drivers. */
static void select_shims(void) {
  char exe[PATH_MAX], path[PATH_MAX + 64];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return;
  *slash = 0;
  static const char *const vars[][2] = {{"BACKPLANE_CUDA_DRIVER", "shims/cuda/libcuda.so.1"},
                                        {"BACKPLANE_HIP_RUNTIME", "shims/hip/libamdhip64.so"},
                                        {"BACKPLANE_HIPRTC", "shims/hip/libhiprtc.so"}};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", exe, vars[i][1]);
    if (!getenv(vars[i][0]) && access(path, R_OK) == 0) setenv(vars[i][0], path, 1);
  }
}

static int group_setup(void **state) {
  (void)state;
  select_shims();
  setenv("BACKPLANE_CUDA_BLAS", "0", 1);
  if (bp_context_create(NULL, &ctx) != BP_OK) return -1;
  for (int i = 0; i < NDEV; i++) {
    xdev_t *x = &devs[i];
    if (bp_device_open(ctx, dev_names[i], NULL, &x->dev) != BP_OK ||
        bp_stream_create(x->dev, &x->s) != BP_OK) {
      snprintf(x->why, sizeof x->why, "%s", bp_last_error());
      if (x->dev) bp_device_close(x->dev);
      x->dev = NULL;
      x->s = NULL;
      /* cpu and cpu-ref always exist; the others fail only when required. */
      if (i <= DEV_CPU_REF || test_device_required(dev_names[i])) {
        printf("FAIL: device %s is required but absent: %s\n", dev_names[i], x->why);
        missing_required = 1;
      }
    }
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  for (int i = 0; i < NDEV; i++)
    if (devs[i].dev) bp_device_close(devs[i].dev);
  bp_context_destroy(ctx);
  return 0;
}

/* Skips the case unless device i is open. */
#define NEED(i)                                                                                    \
  do {                                                                                             \
    if (!devs[i].dev) {                                                                            \
      char reason_[700];                                                                           \
      snprintf(reason_, sizeof reason_, "no %s device (%s)", dev_names[i], devs[i].why);           \
      TEST_SKIP_CASE(reason_);                                                                     \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

static void pattern(uint8_t *p, uint64_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (uint64_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (uint8_t)(x >> 24);
  }
}

static bp_buffer_t *make_buffer(int dev, uint64_t size, const uint8_t *content) {
  bp_buffer_t *b = NULL;
  if (bp_buffer_alloc(devs[dev].dev, size, &b) != BP_OK)
    fail_msg("alloc on %s: %s", dev_names[dev], bp_last_error());
  if (bp_buffer_write(b, 0, content, size) != BP_OK)
    fail_msg("write on %s: %s", dev_names[dev], bp_last_error());
  return b;
}

/* Checks that buffer b (total bytes) holds want[0..size) at off and the
 * sentinel everywhere else; what names the case. */
static void expect_copied(bp_buffer_t *b, uint64_t total, uint64_t off, const uint8_t *want,
                          uint64_t size, const char *what) {
  uint8_t *got = malloc(total);
  assert_non_null(got);
  assert_int_equal(bp_buffer_read(b, 0, got, total), BP_OK);
  for (uint64_t i = 0; i < total; i++) {
    bool inside = i >= off && i < off + size;
    uint8_t expect = inside ? want[i - off] : SENTINEL;
    if (got[i] != expect) {
      unsigned seen = got[i];
      free(got);
      fail_msg("%s: byte %llu (%s the range [%llu, +%llu)) is 0x%02x, expected 0x%02x", what,
               (unsigned long long)i, inside ? "inside" : "outside", (unsigned long long)off,
               (unsigned long long)size, seen, expect);
    }
  }
  free(got);
}

/* How a copy is issued: synchronous, or async on a stream of dst's or src's
 * device. */
enum { BY_SYNC, BY_DST_STREAM, BY_SRC_STREAM, BY_COUNT };
static const char *const by_names[BY_COUNT] = {"bp_buffer_copy", "async on dst's stream",
                                               "async on src's stream"};

/* Copies size bytes from a's src buffer at soff to b's at doff by way `by`,
 * and checks every byte of the destination. */
static void copy_case(int a, int b, uint64_t size, uint64_t soff, uint64_t doff, int by) {
  uint64_t stotal = soff + size + PAD, dtotal = doff + size + PAD;
  uint8_t *src_bytes = malloc(stotal), *dst_bytes = malloc(dtotal);
  assert_non_null(src_bytes);
  assert_non_null(dst_bytes);
  pattern(src_bytes, stotal, (uint32_t)(a * 131 + b * 17 + size + by));
  memset(dst_bytes, SENTINEL, dtotal);
  bp_buffer_t *src = make_buffer(a, stotal, src_bytes), *dst = make_buffer(b, dtotal, dst_bytes);
  bp_status_t st;
  if (by == BY_SYNC)
    st = bp_buffer_copy(dst, doff, src, soff, size);
  else
    st = bp_buffer_copy_async(devs[by == BY_DST_STREAM ? b : a].s, dst, doff, src, soff, size);
  char what[256];
  snprintf(what, sizeof what, "%s -> %s, %llu bytes at %llu -> %llu, %s", dev_names[a],
           dev_names[b], (unsigned long long)size, (unsigned long long)soff,
           (unsigned long long)doff, by_names[by]);
  if (st != BP_OK) fail_msg("%s: %s", what, bp_last_error());
  if (by != BY_SYNC)
    assert_int_equal(bp_stream_synchronize(devs[by == BY_DST_STREAM ? b : a].s), BP_OK);
  expect_copied(dst, dtotal, doff, src_bytes + soff, size, what);
  bp_buffer_free(src);
  bp_buffer_free(dst);
  free(src_bytes);
  free(dst_bytes);
}

typedef struct pair {
  int a, b;
} pair_t;

static void test_copy_pair(void **state) {
  const pair_t *p = *state;
  NEED(p->a);
  NEED(p->b);
  static const uint64_t cases[][3] = {
      /* size, src offset, dst offset */
      {1, 0, 0},
      {3, 1, 5},
      {4, 4, 0},
      {4097, 3, 7},
      {(1u << 20) + 5, 11, 13},
      {(3u << 20) + 7, 64, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int by = 0; by < BY_COUNT; by++)
      copy_case(p->a, p->b, cases[i][0], cases[i][1], cases[i][2], by);
}

/* bp_buffer_copy_async between two buffers of one device, and between two
 * ranges of one buffer, is queued on the device's stream (its mem_copy):
 * checked after a synchronize, on every device present. */
static void test_copy_async_same_device(void **state) {
  (void)state;
  enum { N = 4099 };
  int ran = 0;
  for (int d = 0; d < NDEV; d++) {
    if (!devs[d].dev) {
      print_message("SKIP: no %s device (%s)\n", dev_names[d], devs[d].why);
      continue;
    }
    uint8_t src_bytes[N], fill[N], want[N];
    pattern(src_bytes, N, (uint32_t)d + 99);
    memset(fill, SENTINEL, N);
    bp_buffer_t *src = make_buffer(d, N, src_bytes), *dst = make_buffer(d, N, fill);
    assert_int_equal(bp_buffer_copy_async(devs[d].s, dst, 5, src, 3, 4000), BP_OK);
    assert_int_equal(bp_buffer_copy_async(devs[d].s, src, 2048, src, 0, 1024), BP_OK);
    assert_int_equal(bp_stream_synchronize(devs[d].s), BP_OK);
    expect_copied(dst, N, 5, src_bytes + 3, 4000, dev_names[d]);
    memcpy(want, src_bytes, N);
    memcpy(want + 2048, src_bytes, 1024);
    uint8_t got[N];
    assert_int_equal(bp_buffer_read(src, 0, got, N), BP_OK);
    if (memcmp(got, want, N)) fail_msg("%s: copy within one buffer is wrong", dev_names[d]);
    bp_buffer_free(src);
    bp_buffer_free(dst);
    ran++;
  }
  assert_true(ran >= 2); /* cpu and cpu-ref always */
}

/* Between the two shims nothing is host memory and nothing maps: the copy
 * goes through the staging pipeline, many chunks long. */
static void test_staged_many_chunks(void **state) {
  (void)state;
  NEED(DEV_CUDA);
  NEED(DEV_ROCM);
  copy_case(DEV_CUDA, DEV_ROCM, (17u << 20) + 3, 5, 9, BY_SYNC);
  copy_case(DEV_ROCM, DEV_CUDA, (9u << 20) + 1, 0, 3, BY_DST_STREAM);
}

/* ---- bad input ------------------------------------------------------------ */

static void expect_refused(bp_status_t st, const char *part, const char *what) {
  if (st != BP_ERR_INVALID_ARGUMENT)
    fail_msg("%s: status %d, expected BP_ERR_INVALID_ARGUMENT", what, st);
  if (!strstr(bp_last_error(), part))
    fail_msg("%s: message \"%s\" lacks \"%s\"", what, bp_last_error(), part);
}

static void test_bad_input(void **state) {
  (void)state;
  /* cpu (host memory), opencl or vulkan (mapped) and the shims (staged) are
   * all refused before any of the three paths starts. */
  NEED(DEV_CPU_REF);
  NEED(DEV_CPU);
  int a = DEV_CPU_REF, b = devs[DEV_CUDA].dev ? DEV_CUDA : DEV_CPU, third = DEV_CPU;
  if (b == DEV_CPU)
    third = devs[DEV_OPENCL].dev ? DEV_OPENCL : devs[DEV_VULKAN].dev ? DEV_VULKAN : -1;
  if (third < 0) {
    TEST_SKIP_CASE("a third device for the stream check (no cuda, opencl or vulkan device)");
    return;
  }
  enum { N = 256 };
  uint8_t src_bytes[N], fill[N];
  pattern(src_bytes, N, 7);
  memset(fill, SENTINEL, N);
  bp_buffer_t *src = make_buffer(a, N, src_bytes), *dst = make_buffer(b, N, fill);
  bp_buffer_t *dead = make_buffer(a, N, src_bytes);
  bp_buffer_free(dead);
  bp_stream_t *sa = devs[a].s, *sb = devs[b].s, *s3 = devs[third].s;
  expect_refused(bp_buffer_copy(dst, 200, src, 0, 57), "dst range", "dst range past the end");
  expect_refused(bp_buffer_copy(dst, 0, src, 250, 7), "src range", "src range past the end");
  expect_refused(bp_buffer_copy(dst, UINT64_MAX, src, 0, 2), "dst range", "dst offset overflows");
  expect_refused(bp_buffer_copy(dst, 0, src, 1, UINT64_MAX), "range", "size overflows");
  expect_refused(bp_buffer_copy(dst, 0, dead, 0, 8), "src", "freed src");
  expect_refused(bp_buffer_copy(dead, 0, src, 0, 8), "dst", "freed dst");
  expect_refused(bp_buffer_copy_async(sb, dst, 200, src, 0, 57), "dst range", "async dst range");
  expect_refused(bp_buffer_copy_async(sa, dst, 0, src, 250, 7), "src range", "async src range");
  expect_refused(bp_buffer_copy_async(sb, dst, 0, dead, 0, 8), "src", "async freed src");
  expect_refused(bp_buffer_copy_async(s3, dst, 0, src, 0, 8), "neither",
                 "stream of a third device");
  expect_refused(bp_buffer_copy_async(NULL, dst, 0, src, 0, 8), "stream", "NULL stream");
  expect_refused(bp_buffer_copy_async(sa, src, 0, src, 4, 8), "overlap",
                 "overlapping ranges of one buffer");
  assert_int_equal(bp_stream_begin_capture(sb), BP_OK);
  expect_refused(bp_buffer_copy_async(sb, dst, 0, src, 0, 8), "captured", "capturing stream");
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_end_capture(sb, &g), BP_OK);
  bp_graph_destroy(g);
  /* Nothing was written anywhere. */
  expect_copied(dst, N, 0, NULL, 0, "after refused copies");
  uint8_t got[N];
  assert_int_equal(bp_buffer_read(src, 0, got, N), BP_OK);
  assert_memory_equal(got, src_bytes, N);
  /* A zero-byte copy at the very end is fine, and writes nothing. */
  assert_int_equal(bp_buffer_copy_async(sa, dst, N, src, N, 0), BP_OK);
  expect_copied(dst, N, 0, NULL, 0, "after an empty copy");
  bp_buffer_free(src);
  bp_buffer_free(dst);
}

/* ---- ordering across devices --------------------------------------------- */

#define CHAIN_N (1u << 22) /* floats: enough work that an unordered link races */

static void vec(bp_buffer_t *b, bp_tensor_t *t) {
  int64_t shape[1] = {CHAIN_N};
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, shape, NULL, t), BP_OK);
}

/* The devices of the chain: three present ones, asynchronous first. */
static int chain_devices(int out[3]) {
  static const int order[] = {DEV_OPENCL, DEV_CUDA, DEV_ROCM, DEV_VULKAN, DEV_CPU, DEV_CPU_REF};
  int n = 0;
  for (size_t i = 0; i < sizeof order / sizeof order[0] && n < 3; i++)
    if (devs[order[i]].dev) out[n++] = order[i];
  return n;
}

/* A computes x = 2 (in five ops, so its stream has work queued) and reads x
 * into host memory h1 asynchronously; B waits for A's event, writes h1 into
 * its buffer, doubles it and reads it into h2; C waits for B's event, writes
 * h2, doubles it and is read back: every element must be 8. Each
 * hand-off is an asynchronous host copy, so without the waits B and C would
 * read host memory before A and B filled it. */
static void test_event_chain(void **state) {
  (void)state;
  int d[3];
  if (chain_devices(d) < 3) {
    TEST_SKIP_CASE("fewer than three devices");
    return;
  }
  size_t bytes = (size_t)CHAIN_N * sizeof(float);
  float *h1 = NULL, *h2 = NULL;
  assert_int_equal(bp_host_alloc(devs[d[1]].dev, bytes, (void **)&h1), BP_OK);
  assert_int_equal(bp_host_alloc(devs[d[2]].dev, bytes, (void **)&h2), BP_OK);
  memset(h1, 0, bytes);
  memset(h2, 0, bytes);
  bp_buffer_t *buf[3];
  bp_tensor_t t[3];
  bp_event_t *ev[2];
  for (int i = 0; i < 3; i++) {
    assert_int_equal(bp_buffer_alloc(devs[d[i]].dev, bytes, &buf[i]), BP_OK);
    vec(buf[i], &t[i]);
  }
  for (int i = 0; i < 2; i++) assert_int_equal(bp_event_create(devs[d[i]].dev, &ev[i]), BP_OK);
  bp_stream_t *sa = devs[d[0]].s, *sb = devs[d[1]].s, *sc = devs[d[2]].s;
  /* A */
  assert_int_equal(bp_fill(sa, &t[0], 1.0), BP_OK);
  assert_int_equal(bp_binary(sa, BP_BINARY_ADD, &t[0], &t[0], &t[0]), BP_OK);
  assert_int_equal(bp_binary(sa, BP_BINARY_MUL, &t[0], &t[0], &t[0]), BP_OK);
  assert_int_equal(bp_binary(sa, BP_BINARY_DIV, &t[0], &t[0], &t[0]), BP_OK);
  assert_int_equal(bp_binary(sa, BP_BINARY_ADD, &t[0], &t[0], &t[0]), BP_OK); /* 2 */
  assert_int_equal(bp_buffer_read_async(sa, buf[0], 0, h1, bytes), BP_OK);
  assert_int_equal(bp_event_record(ev[0], sa), BP_OK);
  /* B */
  assert_int_equal(bp_stream_wait_event(sb, ev[0]), BP_OK);
  assert_int_equal(bp_buffer_write_async(sb, buf[1], 0, h1, bytes), BP_OK);
  assert_int_equal(bp_binary(sb, BP_BINARY_ADD, &t[1], &t[1], &t[1]), BP_OK); /* 4 */
  assert_int_equal(bp_buffer_read_async(sb, buf[1], 0, h2, bytes), BP_OK);
  assert_int_equal(bp_event_record(ev[1], sb), BP_OK);
  /* C */
  assert_int_equal(bp_stream_wait_event(sc, ev[1]), BP_OK);
  assert_int_equal(bp_buffer_write_async(sc, buf[2], 0, h2, bytes), BP_OK);
  assert_int_equal(bp_binary(sc, BP_BINARY_ADD, &t[2], &t[2], &t[2]), BP_OK); /* 8 */
  assert_int_equal(bp_stream_synchronize(sc), BP_OK);
  float *out = malloc(bytes);
  assert_non_null(out);
  assert_int_equal(bp_buffer_read(buf[2], 0, out, bytes), BP_OK);
  for (size_t i = 0; i < CHAIN_N; i++)
    if (out[i] != 8.0f)
      fail_msg("%s -> %s -> %s: element %zu is %g, expected 8", dev_names[d[0]], dev_names[d[1]],
               dev_names[d[2]], i, out[i]);
  free(out);
  for (int i = 0; i < 2; i++) bp_event_destroy(ev[i]);
  for (int i = 0; i < 3; i++) bp_buffer_free(buf[i]);
  bp_host_free(devs[d[1]].dev, h1);
  bp_host_free(devs[d[2]].dev, h2);
}

/* The same chain with bp_buffer_copy_async for the hand-offs: B copies A's
 * buffer on B's stream after waiting for A's event, C copies B's. */
static void test_event_chain_copies(void **state) {
  (void)state;
  int d[3];
  if (chain_devices(d) < 3) {
    TEST_SKIP_CASE("fewer than three devices");
    return;
  }
  size_t bytes = (size_t)CHAIN_N * sizeof(float);
  bp_buffer_t *buf[3];
  bp_tensor_t t[3];
  bp_event_t *ev[2];
  for (int i = 0; i < 3; i++) {
    assert_int_equal(bp_buffer_alloc(devs[d[i]].dev, bytes, &buf[i]), BP_OK);
    vec(buf[i], &t[i]);
  }
  for (int i = 0; i < 2; i++) assert_int_equal(bp_event_create(devs[d[i]].dev, &ev[i]), BP_OK);
  bp_stream_t *sa = devs[d[0]].s, *sb = devs[d[1]].s, *sc = devs[d[2]].s;
  assert_int_equal(bp_fill(sa, &t[0], 3.0), BP_OK);
  assert_int_equal(bp_event_record(ev[0], sa), BP_OK);
  assert_int_equal(bp_stream_wait_event(sb, ev[0]), BP_OK);
  assert_int_equal(bp_buffer_copy_async(sb, buf[1], 0, buf[0], 0, bytes), BP_OK);
  assert_int_equal(bp_unary(sb, BP_UNARY_NEG, &t[1], &t[1]), BP_OK); /* -3 */
  assert_int_equal(bp_event_record(ev[1], sb), BP_OK);
  assert_int_equal(bp_stream_wait_event(sc, ev[1]), BP_OK);
  assert_int_equal(bp_buffer_copy_async(sc, buf[2], 0, buf[1], 0, bytes), BP_OK);
  assert_int_equal(bp_binary(sc, BP_BINARY_MUL, &t[2], &t[2], &t[2]), BP_OK); /* 9 */
  assert_int_equal(bp_stream_synchronize(sc), BP_OK);
  float *out = malloc(bytes);
  assert_non_null(out);
  assert_int_equal(bp_buffer_read(buf[2], 0, out, bytes), BP_OK);
  for (size_t i = 0; i < CHAIN_N; i++)
    if (out[i] != 9.0f)
      fail_msg("%s -> %s -> %s: element %zu is %g, expected 9", dev_names[d[0]], dev_names[d[1]],
               dev_names[d[2]], i, out[i]);
  free(out);
  for (int i = 0; i < 2; i++) bp_event_destroy(ev[i]);
  for (int i = 0; i < 3; i++) bp_buffer_free(buf[i]);
}

/* Events keep their rules across devices: an unrecorded event is no wait,
 * elapsed time between two devices' events is refused, and an event is
 * recorded only on its own device's streams. */
static void test_event_rules(void **state) {
  (void)state;
  NEED(DEV_CPU);
  NEED(DEV_CPU_REF);
  int a = DEV_CPU, b = DEV_CPU_REF;
  bp_event_t *ea, *eb;
  assert_int_equal(bp_event_create(devs[a].dev, &ea), BP_OK);
  assert_int_equal(bp_event_create(devs[b].dev, &eb), BP_OK);
  assert_int_equal(bp_stream_wait_event(devs[b].s, ea), BP_OK); /* never recorded */
  assert_int_equal(bp_event_record(ea, devs[a].s), BP_OK);
  assert_int_equal(bp_event_record(eb, devs[b].s), BP_OK);
  assert_int_equal(bp_stream_wait_event(devs[b].s, ea), BP_OK);
  double ms = 1;
  expect_refused(bp_event_elapsed_ms(ea, eb, &ms), "different devices", "elapsed across devices");
  assert_true(ms == 0);
  expect_refused(bp_event_record(ea, devs[b].s), "different devices",
                 "record on another device's stream");
  assert_int_equal(bp_stream_begin_capture(devs[b].s), BP_OK);
  expect_refused(bp_stream_wait_event(devs[b].s, ea), "captured",
                 "cross-device wait while capturing");
  bp_graph_t *g = NULL;
  assert_int_equal(bp_stream_end_capture(devs[b].s, &g), BP_OK);
  bp_graph_destroy(g);
  bp_event_destroy(ea);
  bp_event_destroy(eb);
}

int main(void) {
  static pair_t pairs[NDEV * (NDEV - 1)];
  static char names[NDEV * (NDEV - 1)][64];
  struct CMUnitTest tests[NDEV * (NDEV - 1) + 6];
  size_t n = 0;
  for (int a = 0; a < NDEV; a++)
    for (int b = 0; b < NDEV; b++) {
      if (a == b) continue;
      pairs[n] = (pair_t){a, b};
      snprintf(names[n], sizeof names[n], "copy %s -> %s", dev_names[a], dev_names[b]);
      tests[n] = (struct CMUnitTest){names[n], test_copy_pair, NULL, NULL, &pairs[n]};
      n++;
    }
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_copy_async_same_device);
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_staged_many_chunks);
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bad_input);
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_event_chain);
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_event_chain_copies);
  tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_event_rules);
  int failed = _cmocka_run_group_tests("test_xdevice", tests, n, group_setup, group_teardown);
  return failed || missing_required ? 1 : 0;
}
