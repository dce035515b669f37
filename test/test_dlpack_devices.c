/*
 * test_dlpack_devices.c — DLPack export and import on every backend whose
 * memory has a DLPack device: CUDA (kDLCUDA) and ROCm (kDLROCM) through
 * their CPU shims (test/shims), the CPU (kDLCPU); and the refusal on the
 * backends whose memory is opaque handles (OpenCL, Vulkan). The DLPack
 * device comes from the plugin's device info (ABI 1.3), never from its
 * name: a tensor exported on one device imports on that device only, and
 * both sides then see the same memory (no copy).
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

#include "backplane.h"
#include "gpu_test.h"
#include "skip.h"

enum { DL_CPU = 1, DL_CUDA = 2, DL_ROCM = 10 };

/* The leading fields of DLManagedTensorVersioned (DLPack 1.0). */
typedef struct {
  uint32_t major, minor;
  void *ctx;
  void (*deleter)(void *self);
  uint64_t flags;
  void *data;
  int32_t device_type, device_id;
} dl_versioned_t;

/* The leading fields of the older DLManagedTensor: the DLTensor first. */
typedef struct {
  void *data;
  int32_t device_type, device_id;
} dl_legacy_t;

static char cache_home[PATH_MAX];
static bp_context_t *ctx;

/* The shims next to this binary stand in for libcuda.so.1, libamdhip64.so
 * and libhiprtc.so; without a usable shim that backend's cases fail (the
 * shims are built with the tests). */
static int group_setup(void **state) {
  (void)state;
  char dir[PATH_MAX], path[PATH_MAX];
  if (!gpu_test_dir(dir, sizeof dir)) return -1;
  if (!gpu_test_open(dir, "shims/cuda/libcuda.so.1", path, sizeof path)) return -1;
  setenv("BACKPLANE_CUDA_DRIVER", path, 1);
  if (!gpu_test_open(dir, "shims/hip/libamdhip64.so", path, sizeof path)) return -1;
  setenv("BACKPLANE_HIP_RUNTIME", path, 1);
  if (!gpu_test_open(dir, "shims/hip/libhiprtc.so", path, sizeof path)) return -1;
  setenv("BACKPLANE_HIPRTC", path, 1);
  /* The own kernels, not the BLAS shims; a private code-object cache. */
  setenv("BACKPLANE_CUDA_BLAS", "0", 1);
  setenv("BACKPLANE_ROCM_BLAS", "0", 1);
  snprintf(cache_home, sizeof cache_home, "/tmp/bp-test-dlpack-%ld", (long)getpid());
  setenv("XDG_CACHE_HOME", cache_home, 1);
  return bp_context_create(NULL, &ctx) == BP_OK ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  bp_context_destroy(ctx);
  return gpu_test_rmtree(cache_home);
}

static int deleter_calls;
static void (*producer_deleter)(void *self);
/* Stands between the consumer and bp's own deleter, to count the hand-back. */
static void counting_deleter(void *self) {
  deleter_calls++;
  producer_deleter(self);
}

/* Opens the first device of backend, whose info must name dl_type. */
static bp_device_t *open_device(const char *backend, int32_t dl_type, bp_device_entry_t *e) {
  bp_device_t *d = gpu_test_open_device(ctx, backend, NULL);
  assert_int_equal(bp_device_entry(d, e), BP_OK);
  if (dl_type != DL_CPU) assert_int_equal(e->info.dlpack_device_type, dl_type);
  return d;
}

/* 64 floats 0..63 in a new buffer on d. */
static bp_buffer_t *counting_buffer(bp_device_t *d) {
  float h[64];
  for (int i = 0; i < 64; i++) h[i] = (float)i;
  bp_buffer_t *b = NULL;
  assert_int_equal(bp_buffer_alloc(d, sizeof h, &b), BP_OK);
  assert_int_equal(bp_buffer_write(b, 0, h, sizeof h), BP_OK);
  return b;
}

/* Exports a 4x8 view at element 16 of a buffer on backend, checks the
 * DLPack device, imports it on the same device and checks that both
 * handles see one memory: values written through either are read through
 * the other, and an op on the imported tensor lands in the original. */
static void round_trip(const char *backend, int32_t dl_type) {
  bp_device_entry_t e;
  bp_device_t *d = open_device(backend, dl_type, &e);
  bp_buffer_t *b = counting_buffer(d);
  bp_tensor_t t, imp;
  int64_t shape[2] = {4, 8};
  assert_int_equal(bp_tensor_init(b, 16 * sizeof(float), BP_F32, 2, shape, NULL, &t), BP_OK);
  void *m = NULL;
  assert_int_equal(bp_tensor_to_dlpack(&t, true, &m), BP_OK);
  dl_versioned_t *dl = m;
  assert_int_equal(dl->major, 1);
  assert_int_equal(dl->device_type, dl_type);
  assert_int_equal(dl->device_id, dl_type == DL_CPU ? 0 : (int32_t)e.backend_index);
  producer_deleter = dl->deleter;
  dl->deleter = counting_deleter;
  deleter_calls = 0;

  bp_buffer_t *ib = NULL;
  assert_int_equal(bp_tensor_from_dlpack(d, m, true, &imp, &ib), BP_OK);
  assert_int_equal(imp.rank, 2);
  assert_int_equal(imp.shape[0], 4);
  assert_int_equal(imp.strides[0], 8);
  float got[32], mark[8] = {-1, -2, -3, -4, -5, -6, -7, -8};
  assert_int_equal(bp_buffer_read(ib, imp.offset, got, sizeof got), BP_OK);
  for (int i = 0; i < 32; i++) assert_true(got[i] == (float)(16 + i));
  /* written through the import, seen through the original */
  assert_int_equal(bp_buffer_write(ib, imp.offset, mark, sizeof mark), BP_OK);
  assert_int_equal(bp_buffer_read(b, 16 * sizeof(float), got, sizeof mark), BP_OK);
  assert_memory_equal(got, mark, sizeof mark);
  /* an op on the imported tensor */
  bp_stream_t *s = NULL;
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  assert_int_equal(bp_fill(s, &imp, 7.0), BP_OK);
  assert_int_equal(bp_stream_synchronize(s), BP_OK);
  bp_stream_destroy(s);
  float all[64];
  assert_int_equal(bp_buffer_read(b, 0, all, sizeof all), BP_OK);
  for (int i = 0; i < 64; i++) assert_true(all[i] == (i >= 16 && i < 48 ? 7.0f : (float)i));

  assert_int_equal(deleter_calls, 0);
  bp_buffer_free(ib); /* hands the tensor back through its deleter */
  assert_int_equal(deleter_calls, 1);
  bp_buffer_free(b);
  bp_device_close(d);
}

static void test_cuda_round_trip(void **state) {
  (void)state;
  round_trip("cuda", DL_CUDA);
}

static void test_rocm_round_trip(void **state) {
  (void)state;
  round_trip("rocm", DL_ROCM);
}

static void test_cpu_round_trip(void **state) {
  (void)state;
  round_trip("cpu", DL_CPU);
}

/* The older, unversioned DLManagedTensor carries the same device. */
static void legacy_export(const char *backend, int32_t dl_type) {
  bp_device_entry_t e;
  bp_device_t *d = open_device(backend, dl_type, &e);
  bp_buffer_t *b = counting_buffer(d);
  bp_tensor_t t, imp;
  int64_t n = 64;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t), BP_OK);
  void *m = NULL;
  assert_int_equal(bp_tensor_to_dlpack(&t, false, &m), BP_OK);
  assert_int_equal(((dl_legacy_t *)m)->device_type, dl_type);
  bp_buffer_t *ib = NULL;
  assert_int_equal(bp_tensor_from_dlpack(d, m, false, &imp, &ib), BP_OK);
  float last;
  assert_int_equal(bp_buffer_read(ib, imp.offset + 63 * sizeof(float), &last, sizeof last), BP_OK);
  assert_true(last == 63.0f);
  bp_buffer_free(ib);
  bp_buffer_free(b);
  bp_device_close(d);
}

static void test_legacy_capsules(void **state) {
  (void)state;
  legacy_export("cuda", DL_CUDA);
  legacy_export("rocm", DL_ROCM);
}

/* A tensor imports only on the device its DLPack device names: not on
 * another backend, not on another device id, and nothing is created. */
static void test_import_elsewhere_refused(void **state) {
  (void)state;
  bp_device_entry_t ec, er, eh;
  bp_device_t *cuda = open_device("cuda", DL_CUDA, &ec), *rocm = open_device("rocm", DL_ROCM, &er),
              *cpu = open_device("cpu", DL_CPU, &eh);
  bp_device_t *from[3] = {cuda, rocm, cpu};
  for (int i = 0; i < 3; i++) {
    bp_buffer_t *b = counting_buffer(from[i]);
    bp_tensor_t t, imp;
    int64_t n = 64;
    assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t), BP_OK);
    void *m = NULL;
    assert_int_equal(bp_tensor_to_dlpack(&t, true, &m), BP_OK);
    for (int j = 0; j < 3; j++) {
      if (j == i) continue;
      bp_buffer_t *ib = (bp_buffer_t *)(uintptr_t)1; /* must be cleared */
      assert_int_equal(bp_tensor_from_dlpack(from[j], m, true, &imp, &ib), BP_ERR_UNSUPPORTED);
      assert_null(ib);
      gpu_test_expect_message("the tensor lives on DLPack device");
    }
    if (i < 2) { /* another device id of the same backend */
      dl_versioned_t *dl = m;
      dl->device_id += 1;
      bp_buffer_t *ib = NULL;
      assert_int_equal(bp_tensor_from_dlpack(from[i], m, true, &imp, &ib), BP_ERR_UNSUPPORTED);
      dl->device_id -= 1;
    }
    ((dl_versioned_t *)m)->deleter(m);
    bp_buffer_free(b);
  }
  bp_device_close(cpu);
  bp_device_close(rocm);
  bp_device_close(cuda);
}

/* OpenCL and Vulkan buffers are handles (cl_mem, VkBuffer), not addresses
 * DLPack can describe: export is refused with the backend's name, and the
 * buffer stays usable. */
static void opaque_refused(const char *backend) {
  bp_device_entry_t e;
  if (!gpu_test_entry(ctx, backend, 0, &e)) {
    char why[96];
    snprintf(why, sizeof why, "no %s device here", backend);
    TEST_SKIP_CASE(why);
  }
  bp_device_t *d = gpu_test_open_device(ctx, backend, NULL);
  assert_int_equal(e.info.dlpack_device_type, 0);
  bp_buffer_t *b = counting_buffer(d);
  bp_tensor_t t;
  int64_t n = 64;
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 1, &n, NULL, &t), BP_OK);
  void *m = (void *)(uintptr_t)1; /* must be cleared */
  assert_int_equal(bp_tensor_to_dlpack(&t, true, &m), BP_ERR_UNSUPPORTED);
  assert_null(m);
  gpu_test_expect_message("cannot be shared through DLPack");
  float last;
  assert_int_equal(bp_buffer_read(b, 63 * sizeof(float), &last, sizeof last), BP_OK);
  assert_true(last == 63.0f);
  bp_buffer_free(b);
  bp_device_close(d);
}

static void test_opencl_refused(void **state) {
  (void)state;
  opaque_refused("opencl");
}

static void test_vulkan_refused(void **state) {
  (void)state;
  opaque_refused("vulkan");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuda_round_trip),
      cmocka_unit_test(test_rocm_round_trip),
      cmocka_unit_test(test_cpu_round_trip),
      cmocka_unit_test(test_legacy_capsules),
      cmocka_unit_test(test_import_elsewhere_refused),
      cmocka_unit_test(test_opencl_refused),
      cmocka_unit_test(test_vulkan_refused),
  };
  return cmocka_run_group_tests_name("dlpack_devices", tests, group_setup, group_teardown);
}
