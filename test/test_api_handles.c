/*
 * test_api_handles.c — the non-op API under bad input: status / dtype
 * helpers, contexts, device selection and config, capability queries,
 * buffers (sizes, ranges that overflow, NULL host pointers, foreign and
 * freed buffers, overlapping copies), tensor views, streams and events
 * (destroyed, of another device), and handles that died with their
 * parent. Each rejection must give the specific status and a message
 * naming the argument; rejected copies leave the destination untouched.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tc.h"

#define INV BP_ERR_INVALID_ARGUMENT
#define REJ(call, want, needle) tc_expect_reject(NULL, (call), (want), (needle), "%s", #call)

static void test_status_and_dtypes(void **state) {
  (void)state;
  TC_BEGIN();
  for (int st = 0; st >= -11; st--) {
    assert_non_null(bp_status_string((bp_status_t)st));
    assert_true(strncmp(bp_status_name((bp_status_t)st), "BP_", 3) == 0);
  }
  assert_non_null(bp_status_string((bp_status_t)42));
  assert_non_null(bp_status_name((bp_status_t)-999));
  assert_string_equal(bp_status_name(BP_ERR_UNSUPPORTED), "BP_ERR_UNSUPPORTED");
  assert_int_equal(bp_dtype_size((bp_dtype_t)BP_DTYPE_COUNT), 0);
  assert_int_equal(bp_dtype_size(BP_Q4_0), 18); /* one block */
  assert_int_equal(bp_dtype_size((bp_dtype_t)-1), 0);
  assert_int_equal(bp_dtype_size(BP_BF16), 2);
  assert_string_equal(bp_dtype_name((bp_dtype_t)99), "?");
  assert_string_equal(bp_op_name((bp_op_t)BP_OP_COUNT), "?");
  assert_string_equal(bp_op_name((bp_op_t)-1), "?");
  bp_dtype_t dt = BP_F64;
  REJ(bp_dtype_parse("f128", &dt), INV, "f128");
  REJ(bp_dtype_parse(NULL, &dt), INV, NULL);
  REJ(bp_dtype_parse("f32", NULL), INV, "out_dtype");
  assert_int_equal(bp_dtype_parse("bf16", &dt), BP_OK);
  assert_int_equal(dt, BP_BF16);
  assert_string_equal(bp_last_error(), ""); /* cleared by a successful call */
  TC_END();
}

static void test_context_and_device(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  REJ(bp_context_create(NULL, NULL), INV, "out_context");
  bp_context_options_t opt = {.struct_size = 4};
  bp_context_t *ctx = (bp_context_t *)(uintptr_t)1;
  REJ(bp_context_create(&opt, &ctx), INV, "struct_size");
  assert_null(ctx); /* out-params zeroed on entry */
  uint32_t n = 7;
  REJ(bp_context_device_count(NULL, &n), INV, "context");
  assert_int_equal(n, 0);
  REJ(bp_context_device_count(su->ctx, NULL), INV, "out_count");
  REJ(bp_context_plugin_count(NULL, &n), INV, "context");
  bp_device_entry_t entry;
  assert_int_equal(bp_context_device_count(su->ctx, &n), BP_OK);
  tc_expect_reject(NULL, bp_context_device_entry(su->ctx, n, &entry), INV, "rank", "device entry past the end");
  bp_plugin_report_t rep;
  uint32_t np = 0;
  assert_int_equal(bp_context_plugin_count(su->ctx, &np), BP_OK);
  tc_expect_reject(NULL, bp_context_plugin_report(su->ctx, np, &rep), INV, "index", "plugin report past the end");
  /* device selection and config */
  bp_device_t *d = (bp_device_t *)(uintptr_t)1;
  REJ(bp_device_open(NULL, "cpu", NULL, &d), INV, "context");
  assert_null(d);
  REJ(bp_device_open(su->ctx, "cpu", NULL, NULL), INV, "out_device");
  REJ(bp_device_open(su->ctx, "no-such-device", NULL, &d), BP_ERR_NOT_FOUND, NULL);
  REJ(bp_device_open(su->ctx, "999", NULL, &d), BP_ERR_NOT_FOUND, "rank");
  REJ(bp_device_open(su->ctx, "cpu:x", NULL, &d), INV, "selector");
  REJ(bp_device_open(su->ctx, "cpu:-1", NULL, &d), INV, "selector");
  REJ(bp_device_open(su->ctx, "cpu:7", NULL, &d), BP_ERR_NOT_FOUND, NULL);
  bp_device_config_t cfg = {.struct_size = sizeof cfg, .isa_max = BP_ISA_BEST};
  cfg.struct_size = 3;
  REJ(bp_device_open(su->ctx, "cpu", &cfg, &d), INV, "struct_size");
  cfg.struct_size = sizeof cfg, cfg.isa_max = (bp_isa_level_t)9;
  REJ(bp_device_open(su->ctx, "cpu", &cfg, &d), INV, "isa_max");
  cfg.isa_max = BP_ISA_BEST, cfg.threads = 1u << 30;
  REJ(bp_device_open(su->ctx, "cpu", &cfg, &d), INV, "threads");
  /* capability queries */
  bool sup = true;
  REJ(bp_device_supports(su->env[0].dev, (bp_op_t)BP_OP_COUNT, BP_F32, &sup), INV, "op");
  assert_false(sup);
  REJ(bp_device_supports(su->env[0].dev, BP_OP_GEMM, (bp_dtype_t)BP_DTYPE_COUNT, &sup), INV, "dtype");
  REJ(bp_device_supports(su->env[0].dev, BP_OP_GEMM, BP_F32, NULL), INV, "out_supported");
  REJ(bp_device_supports(NULL, BP_OP_GEMM, BP_F32, &sup), INV, "device");
  /* the CPU device claims every op for f32 (it implements the design's
   * whole table), the quantized ones for their quantized dtype */
  for (int op = 0; op < BP_OP_COUNT; op++)
    for (int k = 0; k < su->count; k++) {
      bp_dtype_t dt = op == BP_OP_QUANTIZE || op == BP_OP_DEQUANTIZE || op == BP_OP_QGEMM ? BP_I8
                      : op == BP_OP_QMATMUL                                          ? BP_Q4_0
                                                                                     : BP_F32;
      assert_int_equal(bp_device_supports(su->env[k].dev, (bp_op_t)op, dt, &sup), BP_OK);
      if (!sup)
        print_error("FAIL %s does not claim %s for f32\n", su->env[k].name, bp_op_name((bp_op_t)op)),
            tc_failures++;
    }
  TC_END();
}

static void test_buffers(void **state) {
  tc_suite_t *su = *state;
  tc_env_t *e = &su->env[0], *o = &su->env[1];
  TC_BEGIN();
  bp_buffer_t *b = (bp_buffer_t *)(uintptr_t)1, *c, *f, *dead;
  REJ(bp_buffer_alloc(e->dev, 0, &b), INV, "size");
  assert_null(b);
  REJ(bp_buffer_alloc(NULL, 16, &b), INV, "device");
  REJ(bp_buffer_alloc(e->dev, 16, NULL), INV, "out_buffer");
  REJ(bp_buffer_alloc(e->dev, UINT64_MAX, &b), BP_ERR_OUT_OF_MEMORY, "requested");
  assert_int_equal(bp_buffer_alloc(e->dev, 64, &b), BP_OK);
  assert_int_equal(bp_buffer_alloc(e->dev, 64, &c), BP_OK);
  assert_int_equal(bp_buffer_alloc(o->dev, 64, &f), BP_OK);
  assert_int_equal(bp_buffer_alloc(e->dev, 64, &dead), BP_OK);
  bp_buffer_free(dead);
  bp_buffer_free(dead); /* double free is detected, not a crash */
  unsigned char pat[64], got[64], host[128];
  for (int i = 0; i < 64; i++)
    pat[i] = (unsigned char)(0xa5 ^ i);
  assert_int_equal(bp_buffer_write(b, 0, pat, 64), BP_OK);
  assert_int_equal(bp_buffer_write(c, 0, pat, 64), BP_OK);
  uint64_t sz = 9;
  REJ(bp_buffer_size(dead, &sz), INV, "buffer");
  assert_int_equal(sz, 0);
  REJ(bp_buffer_size(b, NULL), INV, "out_size");
  bool is_const = true;
  REJ(bp_buffer_set_constant(dead, true), INV, "buffer");
  REJ(bp_buffer_is_constant(dead, &is_const), INV, "buffer");
  assert_false(is_const);
  REJ(bp_buffer_is_constant(b, NULL), INV, "out_constant");
  REJ(bp_buffer_write(b, 60, host, 8), INV, "range");
  REJ(bp_buffer_write(b, 65, host, 0), INV, "range");
  REJ(bp_buffer_write(b, UINT64_MAX, host, 2), INV, "range");
  REJ(bp_buffer_write(b, 8, host, UINT64_MAX - 4), INV, "range");
  REJ(bp_buffer_write(b, 0, NULL, 8), INV, "host");
  REJ(bp_buffer_write(dead, 0, host, 8), INV, "buffer");
  REJ(bp_buffer_write(NULL, 0, host, 8), INV, "buffer");
  REJ(bp_buffer_read(b, 1, host, 64), INV, "range");
  REJ(bp_buffer_read(b, 0, NULL, 1), INV, "host");
  REJ(bp_buffer_read(dead, 0, host, 1), INV, "buffer");
  /* Across devices a copy works (the copy matrix is in test_xdevice). */
  assert_int_equal(bp_buffer_write(f, 0, pat + 8, 8), BP_OK);
  assert_int_equal(bp_buffer_copy(c, 8, f, 0, 8), BP_OK);
  assert_int_equal(bp_buffer_read(c, 8, host, 8), BP_OK);
  assert_memory_equal(host, pat + 8, 8);
  REJ(bp_buffer_copy(c, 0, dead, 0, 8), INV, "src");
  REJ(bp_buffer_copy(dead, 0, c, 0, 8), INV, "dst");
  REJ(bp_buffer_copy(c, 60, b, 0, 8), INV, "dst");
  REJ(bp_buffer_copy(c, 0, b, UINT64_MAX - 2, 8), INV, "src");
  REJ(bp_buffer_copy(c, 0, c, 4, 8), INV, "overlap");
  REJ(bp_buffer_write_async(o->s, b, 0, host, 8), INV, "device");
  REJ(bp_buffer_read_async(e->s, f, 0, host, 8), INV, "device");
  REJ(bp_buffer_read_async(NULL, b, 0, host, 8), INV, "stream");
  REJ(bp_buffer_write_async(e->s, b, 0, host, 65), INV, "range");
  assert_int_equal(bp_buffer_read(b, 0, got, 64), BP_OK);
  assert_memory_equal(got, pat, 64); /* every rejected write wrote nothing */
  assert_int_equal(bp_buffer_read(c, 0, got, 64), BP_OK);
  assert_memory_equal(got, pat, 64);
  bp_buffer_free(b);
  bp_buffer_free(c);
  bp_buffer_free(f);
  bp_buffer_free(NULL); /* no-op */
  TC_END();
}

static void test_tensor_views(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  bp_buffer_t *b;
  assert_int_equal(bp_buffer_alloc(su->env[0].dev, 256, &b), BP_OK);
  bp_tensor_t t, u;
  const int64_t shape[3] = {2, 3, 4}, neg[2] = {2, -3}, huge[1] = {INT64_C(1) << 60};
  REJ(bp_tensor_init(b, 0, BP_F32, 3, shape, NULL, NULL), INV, "out_tensor");
  REJ(bp_tensor_init(b, 0, (bp_dtype_t)BP_DTYPE_COUNT, 3, shape, NULL, &t), INV, "dtype");
  REJ(bp_tensor_init(b, 0, BP_F32, 9, shape, NULL, &t), INV, "rank");
  REJ(bp_tensor_init(b, 0, BP_F32, -1, shape, NULL, &t), INV, "rank");
  REJ(bp_tensor_init(b, 0, BP_F32, 2, NULL, NULL, &t), INV, "shape");
  REJ(bp_tensor_init(b, 0, BP_F32, 2, neg, NULL, &t), INV, "shape");
  REJ(bp_tensor_init(b, 0, BP_F32, 1, huge, NULL, &t), INV, "shape");
  assert_int_equal(bp_tensor_init(b, 0, BP_F32, 3, shape, NULL, &t), BP_OK);
  assert_int_equal(bp_tensor_numel(&t), 24);
  assert_int_equal(bp_tensor_numel(NULL), 0);
  const int32_t dup[3] = {0, 0, 1}, out[3] = {0, 1, 3}, ok[3] = {2, 0, 1};
  REJ(bp_tensor_permute(&t, dup, &u), INV, "perm");
  REJ(bp_tensor_permute(&t, out, &u), INV, "perm");
  REJ(bp_tensor_permute(&t, NULL, &u), INV, "perm");
  REJ(bp_tensor_permute(NULL, ok, &u), INV, "tensor");
  REJ(bp_tensor_transpose(&t, 0, 3, &u), INV, "axes");
  REJ(bp_tensor_transpose(&t, -1, 0, &u), INV, "axes");
  assert_int_equal(bp_tensor_permute(&t, ok, &u), BP_OK);
  assert_int_equal(u.shape[0], 4);
  assert_int_equal(u.strides[0], 1);
  assert_int_equal(u.strides[2], 4);
  bp_buffer_free(b);
  TC_END();
}

static void test_streams_events_lifetimes(void **state) {
  tc_suite_t *su = *state;
  TC_BEGIN();
  bp_stream_t *s = (bp_stream_t *)(uintptr_t)1;
  REJ(bp_stream_create(NULL, &s), INV, "device");
  assert_null(s);
  REJ(bp_stream_create(su->env[0].dev, NULL), INV, "out_stream");
  assert_int_equal(bp_stream_create(su->env[0].dev, &s), BP_OK);
  bp_stream_destroy(s);
  REJ(bp_stream_synchronize(s), INV, "stream");
  bp_stream_destroy(s); /* destroyed twice: detected */
  bp_event_t *ev, *ev2;
  assert_int_equal(bp_event_create(su->env[0].dev, &ev), BP_OK);
  assert_int_equal(bp_event_create(su->env[1].dev, &ev2), BP_OK);
  REJ(bp_event_record(ev, su->env[1].s), INV, "devices");
  /* A stream may wait for another device's event (test_xdevice); one never
   * recorded is no wait. */
  assert_int_equal(bp_stream_wait_event(su->env[1].s, ev), BP_OK);
  REJ(bp_event_record(NULL, su->env[0].s), INV, "event");
  double ms = 1;
  REJ(bp_event_elapsed_ms(ev, ev, &ms), INV, "recorded");
  REJ(bp_event_elapsed_ms(ev, ev2, &ms), INV, "devices");
  REJ(bp_event_elapsed_ms(ev, ev, NULL), INV, "out_ms");
  bp_event_destroy(ev);
  bp_event_destroy(ev2);
  REJ(bp_event_synchronize(ev), INV, "event");
  /* children die with their device, devices with their context */
  bp_context_t *ctx;
  bp_device_t *d;
  bp_buffer_t *b;
  assert_int_equal(bp_context_create(NULL, &ctx), BP_OK);
  assert_int_equal(bp_device_open(ctx, "cpu-ref", NULL, &d), BP_OK);
  assert_int_equal(bp_buffer_alloc(d, 32, &b), BP_OK);
  assert_int_equal(bp_stream_create(d, &s), BP_OK);
  bp_device_close(d);
  unsigned char host[32];
  REJ(bp_buffer_read(b, 0, host, 8), INV, "buffer");
  REJ(bp_stream_synchronize(s), INV, "stream");
  REJ(bp_buffer_alloc(d, 32, &b), INV, "device");
  bp_device_close(d); /* closed twice: detected */
  assert_int_equal(bp_device_open(ctx, "cpu-ref", NULL, &d), BP_OK);
  bp_context_destroy(ctx);
  REJ(bp_device_synchronize(d), INV, "device");
  uint32_t n;
  REJ(bp_context_device_count(ctx, &n), INV, "context");
  REJ(bp_device_open(ctx, "cpu", NULL, &d), INV, "context");
  TC_END();
}

/* The runtime entry points (pool statistics, tuning cache, DLPack,
 * graphs, custom kernels) against NULL, destroyed and foreign handles. */
static void test_runtime_bad_handles(void **state) {
  tc_suite_t *su = *state;
  tc_env_t *e = &su->env[0], *o = &su->env[1];
  TC_BEGIN();
  bp_memory_stats_t ms;
  REJ(bp_device_memory_stats(NULL, &ms), INV, "device");
  REJ(bp_device_memory_stats(e->dev, NULL), INV, "out_stats");
  REJ(bp_device_empty_cache(NULL), INV, "device");
  REJ(bp_context_set_tuning_cache(NULL, "/tmp/x.json"), INV, "context");
  void *managed = (void *)(uintptr_t)1;
  REJ(bp_tensor_to_dlpack(NULL, true, &managed), INV, "tensor");
  assert_null(managed);
  bp_tensor_t t;
  bp_buffer_t *b = (bp_buffer_t *)(uintptr_t)1;
  REJ(bp_tensor_from_dlpack(e->dev, NULL, true, &t, &b), INV, "managed");
  assert_null(b);
  REJ(bp_tensor_from_dlpack(NULL, &t, true, &t, &b), INV, "device");
  /* graphs */
  REJ(bp_stream_begin_capture(NULL), INV, "stream");
  bp_graph_t *g = (bp_graph_t *)(uintptr_t)1;
  REJ(bp_stream_end_capture(e->s, &g), INV, "captur");
  assert_null(g);
  bp_stream_t *cap;
  assert_int_equal(bp_stream_create(e->dev, &cap), BP_OK);
  assert_int_equal(bp_stream_begin_capture(cap), BP_OK);
  REJ(bp_stream_begin_capture(cap), INV, "captur");
  int64_t n = 16;
  bp_buffer_t *buf;
  assert_int_equal(bp_buffer_alloc(e->dev, 64, &buf), BP_OK);
  float host[16] = {0};
  REJ(bp_buffer_write_async(cap, buf, 0, host, sizeof host), INV, "captur");
  assert_int_equal(bp_tensor_init(buf, 0, BP_F32, 1, &n, NULL, &t), BP_OK);
  assert_int_equal(bp_fill(cap, &t, 2.0), BP_OK); /* recorded, not run */
  REJ(bp_stream_end_capture(cap, NULL), INV, "out_graph");
  assert_int_equal(bp_stream_end_capture(cap, &g), BP_OK);
  REJ(bp_graph_launch(g, o->s), INV, "device");
  REJ(bp_graph_launch(NULL, e->s), INV, "graph");
  REJ(bp_graph_launch(g, NULL), INV, "stream");
  bp_buffer_t *small, *foreign;
  assert_int_equal(bp_buffer_alloc(e->dev, 8, &small), BP_OK);
  assert_int_equal(bp_buffer_alloc(o->dev, 64, &foreign), BP_OK);
  REJ(bp_graph_rebind(g, buf, small), INV, NULL);
  REJ(bp_graph_rebind(g, buf, foreign), INV, "device");
  bp_graph_destroy(g);
  REJ(bp_graph_launch(g, e->s), INV, "graph");
  bp_graph_destroy(g); /* destroyed twice: detected */
  bp_stream_destroy(cap);
  bp_buffer_free(buf), bp_buffer_free(small), bp_buffer_free(foreign);
  /* kernels */
  bp_kernel_t *k = (bp_kernel_t *)(uintptr_t)1;
  REJ(bp_kernel_create(NULL, (bp_kernel_format_t)0, "x", 1, "f", NULL, 0, NULL, &k), INV, "device");
  assert_null(k);
  REJ(bp_kernel_create(e->dev, (bp_kernel_format_t)0, NULL, 1, "f", NULL, 0, NULL, &k), INV, "code");
  const uint32_t grid[3] = {1, 1, 1};
  REJ(bp_kernel_launch(e->s, NULL, grid, grid, 0, 0, NULL), INV, "kernel");
  bp_kernel_destroy(NULL);
  TC_END();
}

int main(void) {
  setenv("TC_DEVICES", "cpu,cpu-ref", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_and_dtypes),
      cmocka_unit_test(test_context_and_device),
      cmocka_unit_test(test_buffers),
      cmocka_unit_test(test_tensor_views),
      cmocka_unit_test(test_streams_events_lifetimes),
      cmocka_unit_test(test_runtime_bad_handles),
  };
  return cmocka_run_group_tests(tests, tc_suite_setup, tc_suite_teardown);
}
