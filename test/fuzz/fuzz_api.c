/*
 * fuzz_api.c — a libFuzzer harness that decodes its input into a sequence
 * of public backplane calls on the "cpu" and "cpu-ref" devices: buffers
 * (alloc, free, write, read, copy, async copies, constant marks), tensor
 * views with fuzzed shapes, strides and offsets, every op family with
 * fuzzed arguments, streams, events and graphs, with handles that may be
 * NULL, destroyed, or of the other device.
 *
 * Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined. The
 * library promises that no argument can make it crash, leak or touch memory
 * outside a buffer; ASan and UBSan check that. The harness adds two checks
 * of its own: every status is one the library defines, and every failure
 * comes with a message.
 *
 * Input format: a stream of commands, each one opcode byte followed by the
 * bytes its arguments need; a short input reads as zeros. Where one call
 * decodes several arguments, they are read in the compiler's order of
 * evaluation: the format is this binary's, and the seed corpus is a merge
 * of what it found interesting, not a hand-written file.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backplane.h"

#define NBUF 8
#define NTEN 8
#define NSTREAM 4
#define NEVENT 2
#define SMALL_BUFFER 16384u
#define MAX_COMMANDS 64

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader_t;

static uint8_t u8(reader_t *r) {
  if (!r->n) return 0;
  r->n--;
  return *r->p++;
}
static uint16_t u16(reader_t *r) {
  uint16_t lo = u8(r);
  return (uint16_t)(lo | u8(r) << 8);
}
static uint32_t u32(reader_t *r) {
  uint32_t lo = u16(r);
  return lo | (uint32_t)u16(r) << 16;
}
static uint64_t u64(reader_t *r) {
  uint64_t lo = u32(r);
  return lo | (uint64_t)u32(r) << 32;
}

/* Mostly small values, sometimes an edge: 0, negative, huge. */
static int64_t dim(reader_t *r) {
  uint8_t b = u8(r);
  switch (b >> 5) {
  case 0: return b & 3;
  case 7: {
    static const int64_t edge[] = {-1, -7, INT32_MAX, (int64_t)1 << 40, INT64_MAX,
                                   INT64_MIN, 1 << 20, 3};
    return edge[b & 7];
  }
  default: return b & 15;
  }
}
static int64_t stride(reader_t *r) {
  uint8_t b = u8(r);
  if (b >= 0xf8) return b == 0xff ? INT64_MAX : (b == 0xfe ? INT64_MIN : ((int64_t)1 << 40));
  return (int64_t)(b % 40) - 8;
}
static uint64_t offset(reader_t *r) {
  uint8_t b = u8(r);
  if (b == 0xff) return UINT64_MAX - 3;
  if (b == 0xfe) return (uint64_t)1 << 62;
  return (uint64_t)(b & 0x7f) * 4 + (b >> 7) * 2; /* sometimes misaligned */
}
static double real(reader_t *r) {
  static const double vals[] = {0, 1, -1, 0.5, 2, 1e-5, 1e30, -1e30, 3.25, 0.9, 0.999, 1e-8,
                                (double)INFINITY, -(double)INFINITY, (double)NAN, -0.0};
  return vals[u8(r) & 15];
}

typedef struct state {
  bp_buffer_t *buf[NBUF];
  bp_buffer_t *stale_buf; /* a freed buffer, still passed around */
  bp_tensor_t ten[NTEN];
  bp_stream_t *stream[NSTREAM];
  int stream_dev[NSTREAM]; /* index into g_dev */
  bp_stream_t *stale_stream;
  bp_event_t *event[NEVENT];
  bp_graph_t *graph;
  uint8_t host[SMALL_BUFFER + 64];
} state_t;

static bp_context_t *g_ctx;
static bp_device_t *g_dev[2];
/* One stream per device kept capturing: ops whose work would be too large
 * to run (a broadcast input of 2^40 elements, a self-overlapping output
 * view) are issued there, so they are validated and recorded but not run. */
static bp_stream_t *g_capture[2];
#define HEAVY_ELEMENTS ((int64_t)1 << 16)

static void check_status(bp_status_t st) {
  if (st == BP_OK) return;
  if (st < BP_ERR_BUSY || st > 0) {
    fprintf(stderr, "fuzz: undefined status %d\n", (int)st);
    abort();
  }
  if (!bp_last_error()[0]) {
    fprintf(stderr, "fuzz: status %s without a message\n", bp_status_name(st));
    abort();
  }
}

static bp_buffer_t *pick_buf(state_t *s, reader_t *r) {
  uint8_t b = u8(r);
  if (b == 0xff) return NULL;
  if (b == 0xfe) return s->stale_buf;
  return s->buf[b % NBUF];
}
static bool heavy_tensor(const bp_tensor_t *t) {
  if (t->rank < 0 || t->rank > BP_MAX_RANK) return false;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] <= 0) return false;
    if (t->shape[i] > HEAVY_ELEMENTS || n > HEAVY_ELEMENTS / t->shape[i]) return true;
    n *= t->shape[i];
  }
  return false;
}

/* The stream an op runs on: the chosen one, or its device's capturing
 * stream when some tensor (or the op's own work) is too large to run. */
static bp_stream_t *route(state_t *s, bp_stream_t *q, bool heavy_work) {
  bool heavy = heavy_work;
  for (int i = 0; i < NTEN && !heavy; i++) heavy = heavy_tensor(&s->ten[i]);
  if (!heavy || !q) return q;
  for (int i = 0; i < NSTREAM; i++)
    if (s->stream[i] == q) return g_capture[s->stream_dev[i]];
  return q; /* stale: rejected before any work */
}

static bp_stream_t *pick_stream(state_t *s, reader_t *r) {
  uint8_t b = u8(r);
  if (b == 0xff) return NULL;
  if (b == 0xfe) return s->stale_stream;
  return s->stream[b % NSTREAM];
}

static bool big_work(int64_t a, int64_t b, int64_t c, int64_t d) {
  const int64_t v[4] = {a, b, c, d};
  int64_t n = 1;
  for (int i = 0; i < 4; i++) {
    if (v[i] <= 0) return false;
    if (v[i] > ((int64_t)1 << 24) || n > ((int64_t)1 << 24) / v[i]) return true;
    n *= v[i];
  }
  return false;
}
static const bp_tensor_t *pick_ten(state_t *s, reader_t *r) {
  uint8_t b = u8(r);
  return b == 0xff ? NULL : &s->ten[b % NTEN];
}
static bp_device_t *pick_dev(reader_t *r) { return g_dev[u8(r) & 1]; }

static void make_tensor(state_t *s, reader_t *r) {
  bp_tensor_t *t = &s->ten[u8(r) % NTEN];
  bp_buffer_t *b = pick_buf(s, r);
  uint64_t off = offset(r);
  bp_dtype_t dt = (bp_dtype_t)(u8(r) % (BP_DTYPE_COUNT + 1));
  int32_t rank = (int32_t)(u8(r) % (BP_MAX_RANK + 2));
  if (u8(r) == 0xff) rank = -1;
  int64_t shape[BP_MAX_RANK + 2], strides[BP_MAX_RANK + 2];
  for (int i = 0; i < BP_MAX_RANK + 2; i++) shape[i] = dim(r);
  bool contiguous = u8(r) & 1;
  for (int i = 0; i < BP_MAX_RANK + 2; i++) strides[i] = stride(r);
  check_status(bp_tensor_init(b, off, dt, rank, shape, contiguous ? NULL : strides, t));
}

static bp_status_t gemm_call(state_t *s, reader_t *r, bool batched) {
  bp_stream_t *st = pick_stream(s, r);
  bp_dtype_t dt = (bp_dtype_t)(u8(r) % (BP_DTYPE_COUNT + 1));
  bp_layout_t lay = (u8(r) & 1) ? BP_ROW_MAJOR : BP_COL_MAJOR;
  bp_transpose_t ta = (u8(r) & 1) ? BP_NO_TRANS : BP_TRANS;
  bp_transpose_t tb = (u8(r) & 1) ? BP_NO_TRANS : BP_TRANS;
  int64_t m = dim(r), n = dim(r), k = dim(r);
  double alpha = real(r), beta = real(r);
  bp_buffer_t *a = pick_buf(s, r), *b = pick_buf(s, r), *c = pick_buf(s, r);
  uint64_t ao = offset(r), bo = offset(r), co = offset(r);
  int64_t lda = dim(r), ldb = dim(r), ldc = dim(r);
  if (!batched) {
    st = route(s, st, big_work(m, n, k, 1));
    return bp_gemm(st, dt, lay, ta, tb, m, n, k, alpha, a, ao, lda, b, bo, ldb, beta, c, co, ldc);
  }
  int64_t sa = stride(r), sb = stride(r), sc = stride(r), batch = dim(r);
  st = route(s, st, big_work(m, n, k, batch));
  return bp_gemm_strided_batched(st, dt, lay, ta, tb, m, n, k, alpha, a, ao, lda, sa, b, bo,
                                 ldb, sb, beta, c, co, ldc, sc, batch);
}

/* Runs one command; returns false at the end of the input. */
static bool command(state_t *s, reader_t *r) {
  if (!r->n) return false;
  uint8_t op = u8(r);
  bp_status_t st = BP_OK;
  switch (op % 36) {
  case 0: { /* alloc, small or absurd */
    int i = u8(r) % NBUF;
    bp_device_t *d = pick_dev(r);
    uint8_t kind = u8(r);
    uint64_t size = kind == 0xff ? UINT64_MAX - (u8(r) & 7)
                    : kind == 0xfe ? (uint64_t)1 << (44 + (u8(r) & 15))
                                   : (uint64_t)(u16(r) % (SMALL_BUFFER + 1));
    if (s->buf[i]) break;
    st = bp_buffer_alloc(d, size, &s->buf[i]);
    break;
  }
  case 1: { /* free; the handle lives on as a stale one */
    int i = u8(r) % NBUF;
    if (!s->buf[i]) break;
    bp_buffer_free(s->buf[i]);
    s->stale_buf = s->buf[i];
    s->buf[i] = NULL;
    break;
  }
  case 2: {
    bp_buffer_t *b = pick_buf(s, r);
    uint64_t off = offset(r), size = u16(r) % (SMALL_BUFFER + 64);
    st = bp_buffer_write(b, off, s->host, size);
    break;
  }
  case 3: {
    bp_buffer_t *b = pick_buf(s, r);
    uint64_t off = offset(r), size = u16(r) % (SMALL_BUFFER + 64);
    st = bp_buffer_read(b, off, s->host, size);
    break;
  }
  case 4: {
    bp_buffer_t *d = pick_buf(s, r), *src = pick_buf(s, r);
    uint64_t doff = offset(r), soff = offset(r), size = u16(r);
    st = bp_buffer_copy(d, doff, src, soff, size);
    break;
  }
  case 5: {
    bp_stream_t *q = pick_stream(s, r);
    bp_buffer_t *b = pick_buf(s, r);
    uint64_t off = offset(r), size = u16(r) % (SMALL_BUFFER + 64);
    st = (u8(r) & 1) ? bp_buffer_write_async(q, b, off, s->host, size)
                     : bp_buffer_read_async(q, b, off, s->host, size);
    break;
  }
  case 6: make_tensor(s, r); break;
  case 7: {
    const bp_tensor_t *t = pick_ten(s, r);
    bp_tensor_t *out = &s->ten[u8(r) % NTEN];
    bp_tensor_t tmp;
    int32_t perm[BP_MAX_RANK];
    for (int i = 0; i < BP_MAX_RANK; i++) perm[i] = (int32_t)(u8(r) % 10) - 1;
    if (u8(r) & 1)
      st = bp_tensor_permute(t, perm, &tmp);
    else
      st = bp_tensor_transpose(t, perm[0], perm[1], &tmp);
    if (st == BP_OK) *out = tmp;
    (void)bp_tensor_numel(t);
    break;
  }
  case 8: { /* stream create / destroy / sync */
    int i = u8(r) % NSTREAM;
    uint8_t what = u8(r) % 3;
    int di = u8(r) & 1;
    if (what == 0 && !s->stream[i]) {
      st = bp_stream_create(g_dev[di], &s->stream[i]);
      s->stream_dev[i] = di;
    } else if (what == 1 && s->stream[i]) {
      bp_stream_destroy(s->stream[i]);
      s->stale_stream = s->stream[i];
      s->stream[i] = NULL;
    } else {
      st = bp_stream_synchronize(s->stream[i]);
    }
    break;
  }
  case 9: st = gemm_call(s, r, false); break;
  case 10: st = gemm_call(s, r, true); break;
  case 11: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    double alpha = real(r), beta = real(r);
    const bp_tensor_t *a = pick_ten(s, r), *b = pick_ten(s, r), *c = pick_ten(s, r);
    st = bp_matmul(q, alpha, a, b, beta, c);
    break;
  }
  case 12: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    bp_dtype_t dt = (bp_dtype_t)(u8(r) % (BP_DTYPE_COUNT + 1));
    bp_layout_t lay = (u8(r) & 1) ? BP_ROW_MAJOR : BP_COL_MAJOR;
    bp_transpose_t t = (u8(r) & 1) ? BP_NO_TRANS : BP_TRANS;
    int64_t m = dim(r), n = dim(r), lda = dim(r), incx = stride(r), incy = stride(r);
    bp_buffer_t *a = pick_buf(s, r), *x = pick_buf(s, r), *y = pick_buf(s, r);
    st = bp_gemv(q, dt, lay, t, m, n, real(r), a, offset(r), lda, x, offset(r), incx, real(r),
                 y, offset(r), incy);
    break;
  }
  case 13: {
    bp_conv2d_params_t p = {sizeof p, (int32_t)dim(r), (int32_t)dim(r), (int32_t)dim(r),
                            (int32_t)dim(r), (int32_t)dim(r), (int32_t)dim(r),
                            (int32_t)dim(r)};
    if (u8(r) == 0xff) p.struct_size = u8(r);
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    st = bp_conv2d(q, (u8(r) == 0xff) ? NULL : &p, pick_ten(s, r), pick_ten(s, r),
                   pick_ten(s, r), pick_ten(s, r));
    break;
  }
  case 14: {
    bp_pool2d_params_t p = {sizeof p, (bp_pool_kind_t)(u8(r) % 3), (int32_t)dim(r),
                            (int32_t)dim(r), (int32_t)dim(r), (int32_t)dim(r),
                            (int32_t)dim(r), (int32_t)dim(r), u8(r) & 1};
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    st = bp_pool2d(q, &p, pick_ten(s, r), pick_ten(s, r));
    break;
  }
  case 15: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    const bp_tensor_t *x = pick_ten(s, r), *m = pick_ten(s, r), *v = pick_ten(s, r),
                      *sc = pick_ten(s, r), *b = pick_ten(s, r), *y = pick_ten(s, r);
    st = bp_batch_norm(q, x, m, v, sc, b, real(r), y);
    break;
  }
  case 16: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    const bp_tensor_t *x = pick_ten(s, r), *g = pick_ten(s, r), *b = pick_ten(s, r),
                      *y = pick_ten(s, r);
    st = (u8(r) & 1) ? bp_layer_norm(q, x, g, b, real(r), y) : bp_rms_norm(q, x, g, real(r), y);
    break;
  }
  case 17: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    const bp_tensor_t *x = pick_ten(s, r), *y = pick_ten(s, r);
    int32_t axis = (int32_t)(int8_t)u8(r);
    st = bp_softmax(q, x, axis, u8(r) & 1, y);
    break;
  }
  case 18: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    const bp_tensor_t *qq = pick_ten(s, r), *k = pick_ten(s, r), *v = pick_ten(s, r),
                      *o = pick_ten(s, r);
    st = bp_attention(q, qq, k, v, real(r), u8(r) & 1, o);
    break;
  }
  case 19: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    bp_adam_params_t p = {sizeof p, real(r), real(r), real(r), real(r), real(r),
                          dim(r), u8(r) & 1};
    uint32_t count = u8(r) % 4;
    bp_tensor_t ts[4][3];
    for (uint32_t i = 0; i < 3; i++)
      for (int j = 0; j < 4; j++) ts[j][i] = s->ten[u8(r) % NTEN];
    bool null_array = u8(r) == 0xff;
    st = bp_adam(q, &p, count, null_array ? NULL : ts[0], ts[1], ts[2], ts[3]);
    break;
  }
  case 20: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    bp_unary_op_t o = (bp_unary_op_t)(u8(r) % (BP_UNARY_COUNT + 1));
    st = bp_unary(q, o, pick_ten(s, r), pick_ten(s, r));
    break;
  }
  case 21: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    bp_binary_op_t o = (bp_binary_op_t)(u8(r) % (BP_BINARY_COUNT + 1));
    const bp_tensor_t *a = pick_ten(s, r), *b = pick_ten(s, r), *y = pick_ten(s, r);
    st = bp_binary(q, o, a, b, y);
    break;
  }
  case 22: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    bp_reduce_op_t o = (bp_reduce_op_t)(u8(r) % (BP_REDUCE_COUNT + 1));
    const bp_tensor_t *x = pick_ten(s, r), *y = pick_ten(s, r);
    st = bp_reduce(q, o, x, (int32_t)(int8_t)u8(r), y);
    break;
  }
  case 23: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    const bp_tensor_t *y = pick_ten(s, r);
    st = bp_fill(q, y, real(r));
    break;
  }
  case 24: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    const bp_tensor_t *x = pick_ten(s, r), *y = pick_ten(s, r);
    st = (u8(r) & 1) ? bp_copy(q, x, y) : bp_cast(q, x, y);
    break;
  }
  case 25: {
    bp_stream_t *q = route(s, pick_stream(s, r), false);
    bp_random_dist_t d = (bp_random_dist_t)(u8(r) % 3);
    uint64_t seed = u64(r), off = u64(r);
    double a = real(r), b = real(r);
    st = bp_random(q, d, seed, off, a, b, pick_ten(s, r));
    break;
  }
  case 26: { /* events */
    int i = u8(r) % NEVENT;
    uint8_t what = u8(r) % 5;
    bp_device_t *d = pick_dev(r);
    bp_stream_t *q = pick_stream(s, r);
    if (what == 0 && !s->event[i]) {
      st = bp_event_create(d, &s->event[i]);
    } else if (what == 1 && s->event[i]) {
      bp_event_destroy(s->event[i]);
      s->event[i] = NULL;
    } else if (what == 2) {
      st = bp_event_record(s->event[i], q);
    } else if (what == 3) {
      st = bp_stream_wait_event(q, s->event[i]);
    } else {
      double ms = 0;
      st = bp_event_synchronize(s->event[i]);
      check_status(st);
      st = bp_event_elapsed_ms(s->event[i], s->event[(i + 1) % NEVENT], &ms);
    }
    break;
  }
  case 27: { /* graphs: capture, launch, rebind, destroy */
    bp_stream_t *q = pick_stream(s, r);
    uint8_t what = u8(r) % 4;
    if (what == 0) {
      st = bp_stream_begin_capture(q);
    } else if (what == 1) {
      bp_graph_t *g = NULL;
      st = bp_stream_end_capture(q, &g);
      if (st == BP_OK) {
        bp_graph_destroy(s->graph);
        s->graph = g;
      }
    } else if (what == 2) {
      st = bp_graph_launch(s->graph, q);
      (void)bp_graph_size(s->graph);
    } else {
      st = bp_graph_rebind(s->graph, pick_buf(s, r), pick_buf(s, r));
    }
    break;
  }
  case 28: {
    bp_memory_stats_t ms;
    bp_device_t *d = pick_dev(r);
    st = (u8(r) & 1) ? bp_device_memory_stats(d, &ms) : bp_device_empty_cache(d);
    break;
  }
  case 29: st = bp_device_synchronize(pick_dev(r)); break;
  case 30: { /* size; constant marks (writes into a marked buffer are refused) */
    uint64_t size = 0;
    bool is_const = false;
    uint8_t which = u8(r);
    bp_buffer_t *b = pick_buf(s, r);
    st = which % 3 == 0   ? bp_buffer_size(b, &size)
         : which % 3 == 1 ? bp_buffer_set_constant(b, (which >> 2) & 1)
                          : bp_buffer_is_constant(b, &is_const);
    break;
  }
  default: /* the cheap, common ones again, so sequences stay short */
    switch (op % 4) {
    case 0: make_tensor(s, r); break;
    case 1: {
      bp_stream_t *q = route(s, pick_stream(s, r), false);
      const bp_tensor_t *y = pick_ten(s, r);
      st = bp_fill(q, y, real(r));
      break;
    }
    case 2: {
      bp_stream_t *q = route(s, pick_stream(s, r), false);
      const bp_tensor_t *a = pick_ten(s, r), *b = pick_ten(s, r), *y = pick_ten(s, r);
      st = bp_binary(q, (bp_binary_op_t)(u8(r) % BP_BINARY_COUNT), a, b, y);
      break;
    }
    default: {
      bp_stream_t *q = route(s, pick_stream(s, r), false);
      const bp_tensor_t *x = pick_ten(s, r), *y = pick_ten(s, r);
      st = bp_unary(q, (bp_unary_op_t)(u8(r) % BP_UNARY_COUNT), x, y);
      break;
    }
    }
  }
  check_status(st);
  return true;
}

/* Releases everything one input made, so inputs are independent. A stream
 * left capturing is ended first. */
static void restart_capture(void) {
  for (int d = 0; d < 2; d++) {
    bp_graph_t *g = NULL;
    if (bp_stream_end_capture(g_capture[d], &g) == BP_OK) bp_graph_destroy(g);
    if (bp_stream_begin_capture(g_capture[d]) != BP_OK) abort();
  }
}

static void release(state_t *s) {
  restart_capture(); /* drops the recorded uses of this input's buffers */
  for (int i = 0; i < NSTREAM; i++) {
    if (!s->stream[i]) continue;
    bp_graph_t *g = NULL;
    if (bp_stream_end_capture(s->stream[i], &g) == BP_OK) bp_graph_destroy(g);
    bp_stream_synchronize(s->stream[i]);
    bp_stream_destroy(s->stream[i]);
  }
  bp_graph_destroy(s->graph);
  for (int i = 0; i < NEVENT; i++) bp_event_destroy(s->event[i]);
  for (int i = 0; i < NBUF; i++) bp_buffer_free(s->buf[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/* An absurd allocation must come back as BP_ERR_OUT_OF_MEMORY, as malloc's
 * NULL does outside ASan, not end the run. */
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* The CPU plugin of this build: $(B)/plugins next to $(B)/test. */
  char exe[PATH_MAX], dir[PATH_MAX + 16];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) abort();
  exe[n] = '\0';
  for (int i = 0; i < 2; i++) *strrchr(exe, '/') = '\0';
  snprintf(dir, sizeof dir, "%s/plugins", exe);
  bp_context_options_t o;
  memset(&o, 0, sizeof o);
  o.struct_size = sizeof o;
  o.plugin_dir = dir;
  o.only_plugin_dir = true;
  bp_device_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.struct_size = sizeof cfg;
  cfg.threads = 2;
  if (bp_context_create(&o, &g_ctx) != BP_OK ||
      bp_device_open(g_ctx, "cpu", &cfg, &g_dev[0]) != BP_OK ||
      bp_device_open(g_ctx, "cpu-ref", &cfg, &g_dev[1]) != BP_OK ||
      bp_stream_create(g_dev[0], &g_capture[0]) != BP_OK ||
      bp_stream_create(g_dev[1], &g_capture[1]) != BP_OK ||
      bp_stream_begin_capture(g_capture[0]) != BP_OK ||
      bp_stream_begin_capture(g_capture[1]) != BP_OK) {
    fprintf(stderr, "fuzz: cannot open cpu and cpu-ref from %s: %s\n", dir, bp_last_error());
    abort();
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static state_t s;
  memset(&s, 0, sizeof s);
  for (size_t i = 0; i < sizeof s.host; i++) s.host[i] = (uint8_t)(i * 37);
  reader_t r = {data, size};
  for (int i = 0; i < MAX_COMMANDS && command(&s, &r); i++) {
  }
  release(&s);
  return 0;
}
