/*
 * test_qgemm_amx.c — the int8 GEMM on AMX-INT8 tiles
 * (plugins/cpu/fast/quant/qgemm_amx.c), its driver called directly so that a decline
 * cannot pass unseen, bit-exact against the plugin's scalar reference
 * (ref/ref_quant.c, cpu_ref_qgemm_range) with 1 and 2 threads. The cases
 * sit on the kernel's edges: m, n, k on either side of the tiles (16 rows,
 * 16 columns, 64 bytes of k), of the micro-panel (32 x 32), of the k block,
 * of the column-pair and row blocks (8 x 32), of the A packing limit, k not
 * a multiple of 4, the int32 wrap past k = 2^17; transposed and strided
 * views of a, b and c; rank-3 batches with b shared or batched; i32, f32
 * and requantized i8 outputs with per-tensor, per-row and per-column
 * scales. The same cases run the driver with the AVX512-VNNI micro-kernel
 * (qgemm_vnni.c). Then the run-time choice (cpu_qgemm_path,
 * cpu_fast_qgemm): AMX by default, the paths BP_CPU_QGEMM_ISA names, AVX2
 * under an AVX2 ceiling, each against the same reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu.h"
#include "plugins/cpu/fast/quant/quant.h"
#include "plugins/cpu/ref/ref.h"
#include "test/cpu_fast_devs.h"
#include "test/plugin_tensor.h"
#include "test/skip.h"

/* Layout bits of a case. */
enum {
  A_T = 1,       /* a a transposed view (stored [k, m]) */
  B_T = 2,       /* b a transposed view (stored [n, k]) */
  B_GAPS = 4,    /* b row-major with every other column and row skipped */
  C_T = 8,       /* c a transposed view (stored [n, m]) */
  B_BATCHED = 16 /* b rank 3 (one per batch), else shared */
};

/* Scales of a case. */
enum { S_NONE, S_ROW_COL, S_TENSOR };

typedef struct qcase {
  int64_t batch, m, n, k;
  int layout, scales;
  bp_dtype_t cdt;
  int fill; /* 0 random, 1 all -128 (the wrap) */
} qcase_t;

static uint64_t rng = 1;

static int8_t rand_i8(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (int8_t)(rng >> 56);
}

static bp_plugin_tensor_t tensor(void *base, uint64_t offset, bp_dtype_t dt, int rank,
                                 const int64_t *shape, const int64_t *strides) {
  bp_plugin_tensor_t t = plugin_tensor(base, dt, rank, shape, strides);
  t.offset = offset;
  return t;
}

/* Buffers and argument structs of one case; c_ref receives the reference. */
typedef struct qbufs {
  int8_t *a, *b;
  float *sa, *sb;
  char *c, *c_ref;
  size_t cbytes;
  bp_qgemm_args_t args, ref;
} qbufs_t;

static void fill(int8_t *p, size_t n, int mode) {
  for (size_t i = 0; i < n; i++) p[i] = mode ? (int8_t)-128 : rand_i8();
}

static void make_case(const qcase_t *q, qbufs_t *u) {
  int64_t B = q->batch, m = q->m, n = q->n, k = q->k;
  int rank = B > 1 ? 3 : 2, lead = rank - 2;
  int64_t off = 3; /* every view starts past a few bytes */
  size_t abytes = (size_t)(B * m * k + off), gap = q->layout & B_GAPS ? 2 : 1;
  size_t bper = (size_t)(k * n) * gap * gap, bcount = q->layout & B_BATCHED ? (size_t)B : 1;
  u->a = malloc(abytes);
  u->b = malloc(bper * bcount + (size_t)off);
  fill(u->a, abytes, q->fill);
  fill(u->b, bper * bcount + (size_t)off, q->fill);
  if (!q->fill) { /* a row of a and a column of b at the extreme */
    for (int64_t l = 0; l < k && m > 1; l++) u->a[off + (q->layout & A_T ? l * m : l)] = -128;
  }
  int64_t ash[3] = {B, m, k}, ast[3] = {m * k, k, 1};
  if (q->layout & A_T) ast[1] = 1, ast[2] = m;
  int64_t bsh[3] = {B, k, n},
          bst[3] = {(int64_t)bper, n * (int64_t)gap * (int64_t)gap, (int64_t)gap};
  if (q->layout & B_T) bst[1] = 1, bst[2] = k;
  int brank = q->layout & B_BATCHED ? 3 : 2, blead = brank - 2;
  int64_t csh[3] = {B, m, n}, cst[3] = {m * n, n, 1};
  if (q->layout & C_T) cst[1] = 1, cst[2] = m;
  size_t es = q->cdt == BP_I8 ? 1 : 4;
  u->cbytes = (size_t)(B * m * n + off) * es;
  u->c = malloc(u->cbytes);
  u->c_ref = malloc(u->cbytes);
  memset(u->c, 0x5A, u->cbytes);
  memset(u->c_ref, 0x5A, u->cbytes);
  u->sa = malloc((size_t)(m + 1) * 4);
  u->sb = malloc((size_t)(n + 1) * 4);
  for (int64_t i = 0; i <= m; i++) u->sa[i] = 0.25f + (float)(i % 7) * 0.375f;
  for (int64_t j = 0; j <= n; j++) u->sb[j] = 0.001f * (float)(1 + j % 11);
  memset(&u->args, 0, sizeof u->args);
  bp_qgemm_args_t *g = &u->args;
  g->struct_size = sizeof *g;
  g->out_scale = 3.0f;
  g->a = tensor(u->a, (uint64_t)off, BP_I8, rank, ash + (1 - lead), ast + (1 - lead));
  g->b = tensor(u->b, (uint64_t)off, BP_I8, brank, bsh + (1 - blead), bst + (1 - blead));
  g->c = tensor(u->c, (uint64_t)off * es, q->cdt, rank, csh + (1 - lead), cst + (1 - lead));
  if (q->cdt != BP_I32 && q->scales != S_NONE) {
    int64_t one = 1, zero = 0;
    g->scale_a = tensor(u->sa, 0, BP_F32, 1, &m, q->scales == S_TENSOR ? &zero : &one);
    g->scale_b = tensor(u->sb, 4, BP_F32, 1, &n, q->scales == S_TENSOR ? &zero : &one);
  }
  u->ref = *g;
  u->ref.c.ptr = (uint64_t)(uintptr_t)u->c_ref;
  int64_t rows = B * m;
  assert_int_equal(cpu_ref_qgemm_range(&u->ref, 0, rows), BP_OK);
}

static void free_case(qbufs_t *u) {
  free(u->a), free(u->b), free(u->sa), free(u->sb), free(u->c), free(u->c_ref);
}

/* The fast result's bytes (gaps included) against the reference's. */
static void check(const qcase_t *q, const qbufs_t *u, const char *who) {
  if (memcmp(u->c, u->c_ref, u->cbytes) == 0) return;
  size_t at = 0;
  while (u->c[at] == u->c_ref[at]) at++;
  print_error(
      "%s: batch %lld m %lld n %lld k %lld layout %d scales %d c dtype %d: byte %zu differs\n", who,
      (long long)q->batch, (long long)q->m, (long long)q->n, (long long)q->k, q->layout, q->scales,
      (int)q->cdt, at);
  fail();
}

static bool amx_here(void) {
  const cpu_features_t *f = cpu_features_get();
  return f->amx_int8 && f->avx512f && f->avx512bw && f->avx512vl && cpu_amx_request();
}

#define AMX_OR_SKIP()                                                                              \
  do {                                                                                             \
    if (!amx_here()) TEST_SKIP_CASE("no AMX-INT8 with AVX-512, or no tile permission");            \
  } while (0)

/* One case on every device of the set, straight into the blocked driver:
 * on AMX tiles, and with the VNNI micro-kernel when the CPU has VNNI. */
static void run_amx(dev_set_t *s, const qcase_t *q) {
  qbufs_t u;
  make_case(q, &u);
  bool vnni = cpu_features_get()->avx512_vnni && cpu_features_get()->avx512dq;
  for (int kern = 0; kern < (vnni ? 2 : 1); kern++)
    for (int d = 0; d < s->n; d++) {
      memset(u.c, 0x5A, u.cbytes);
      assert_int_equal(cpu_qgemm_blocked(&s->dev[d], &u.args, kern == 0), BP_OK);
      bool one = s->dev[d].threads == 1;
      check(q, &u,
            kern == 0 ? (one ? "amx, 1 thread" : "amx, 2 threads")
                      : (one ? "vnni, 1 thread" : "vnni, 2 threads"));
    }
  free_case(&u);
}

static void open_avx512(dev_set_t *s) {
  devs_open_levels(s, BP_ISA_AVX512, BP_ISA_AVX512);
  assert_true(s->n > 0);
}

/* m, n, k around the tiles, the micro-panel, the k block (1024 bytes) and
 * the blocks of 8 micro-panels / 8 column pairs; every c dtype. */
static void test_amx_edges(void **state) {
  (void)state;
  AMX_OR_SKIP();
  dev_set_t s;
  open_avx512(&s);
  static const int64_t mnk[][3] = {
      {1, 1, 1},      {1, 1, 0},       {5, 9, 67},      {15, 17, 3},    {16, 16, 64},
      {17, 33, 65},   {31, 47, 130},   {33, 31, 127},   {32, 32, 1024}, {64, 64, 1025},
      {65, 95, 1023}, {40, 300, 1100}, {257, 40, 2100}, {20, 600, 400}, {270, 270, 333},
  };
  static const bp_dtype_t cdt[3] = {BP_I32, BP_F32, BP_I8};
  for (size_t x = 0; x < sizeof mnk / sizeof mnk[0]; x++)
    for (int c = 0; c < 3; c++) {
      qcase_t q = {1,      mnk[x][0], mnk[x][1], mnk[x][2], 0, (int)(x % 2) ? S_ROW_COL : S_TENSOR,
                   cdt[c], 0};
      run_amx(&s, &q);
    }
  devs_close(&s);
}

/* Transposed and strided views of a, b and c. */
static void test_amx_views(void **state) {
  (void)state;
  AMX_OR_SKIP();
  dev_set_t s;
  open_avx512(&s);
  static const int layouts[] = {A_T, B_T, B_GAPS, C_T, A_T | B_T | C_T, A_T | B_GAPS};
  static const int64_t mnk[][3] = {{7, 13, 29}, {37, 50, 130}, {100, 70, 1090}};
  for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
    for (size_t x = 0; x < 3; x++) {
      qcase_t q = {1,
                   mnk[x][0],
                   mnk[x][1],
                   mnk[x][2],
                   layouts[l],
                   S_ROW_COL,
                   l % 3 == 0   ? BP_I32
                   : l % 3 == 1 ? BP_F32
                                : BP_I8,
                   0};
      run_amx(&s, &q);
    }
  devs_close(&s);
}

/* Rank-3 batches, b shared or one per batch; rows of a micro-panel that
 * straddle two batches. */
static void test_amx_batches(void **state) {
  (void)state;
  AMX_OR_SKIP();
  dev_set_t s;
  open_avx512(&s);
  static const int64_t bmnk[][4] = {{2, 37, 50, 130}, {3, 5, 17, 64}, {4, 70, 33, 1030}};
  for (size_t x = 0; x < 3; x++)
    for (int batched = 0; batched <= 1; batched++)
      for (int c = 0; c < 3; c++) {
        qcase_t q = {bmnk[x][0],
                     bmnk[x][1],
                     bmnk[x][2],
                     bmnk[x][3],
                     (batched ? B_BATCHED : 0) | (x == 2 ? B_T : 0),
                     S_ROW_COL,
                     c == 0   ? BP_I32
                     : c == 1 ? BP_F32
                              : BP_I8,
                     0};
        run_amx(&s, &q);
      }
  devs_close(&s);
}

/* All -128: the int32 sums wrap past k = 2^17 as the reference's do; 260
 * rows of 140000 bytes also pass the A packing limit. */
static void test_amx_wrap(void **state) {
  (void)state;
  AMX_OR_SKIP();
  dev_set_t s;
  open_avx512(&s);
  qcase_t q = {1, 260, 3, 140000, 0, S_NONE, BP_I32, 1};
  run_amx(&s, &q);
  qbufs_t u;
  make_case(&q, &u);
  int32_t want = (int32_t)(uint32_t)(140000u * 16384u), got;
  memcpy(&got, u.c_ref + 3 * 4, 4);
  assert_int_equal(got, want); /* the reference itself wraps */
  free_case(&u);
  devs_close(&s);
}

/* cpu_fast_qgemm under BP_CPU_QGEMM_ISA, against the reference: path NULL
 * is the default choice. */
static void run_chosen(cpu_device_t *dev, const char *path, const qcase_t *q, bp_status_t want) {
  if (path)
    setenv("BP_CPU_QGEMM_ISA", path, 1);
  else
    unsetenv("BP_CPU_QGEMM_ISA");
  qbufs_t u;
  make_case(q, &u);
  assert_int_equal(cpu_fast_qgemm(dev, &u.args), want);
  if (want == BP_OK) check(q, &u, path ? path : "default");
  free_case(&u);
  unsetenv("BP_CPU_QGEMM_ISA");
}

/* The default is AMX here; each named path is exact (the blocked driver
 * takes a batched b, the AVX2 rows do not); "ref" declines. */
static void test_chosen_path(void **state) {
  (void)state;
  AMX_OR_SKIP();
  dev_set_t s;
  open_avx512(&s);
  const cpu_features_t *f = cpu_features_get();
  qcase_t batched = {2, 37, 50, 130, B_BATCHED, S_ROW_COL, BP_F32, 0};
  qcase_t shared = {2, 37, 50, 130, B_T, S_ROW_COL, BP_I8, 0};
  for (int d = 0; d < s.n; d++) {
    unsetenv("BP_CPU_QGEMM_ISA");
    assert_int_equal(cpu_qgemm_path(&s.dev[d]), CPU_QGEMM_AMX);
    run_chosen(&s.dev[d], NULL, &batched, BP_OK);
    run_chosen(&s.dev[d], "amx", &batched, BP_OK);
    run_chosen(&s.dev[d], "ref", &shared, BP_ERR_UNIMPLEMENTED);
    if (f->avx512_vnni) {
      setenv("BP_CPU_QGEMM_ISA", "vnni", 1);
      assert_int_equal(cpu_qgemm_path(&s.dev[d]), CPU_QGEMM_VNNI);
      run_chosen(&s.dev[d], "vnni", &batched, BP_OK);
      run_chosen(&s.dev[d], "vnni", &shared, BP_OK);
    }
    if (f->avx2) {
      run_chosen(&s.dev[d], "avx2", &batched, BP_ERR_UNIMPLEMENTED);
      run_chosen(&s.dev[d], "avx2", &shared, BP_OK);
    }
  }
  devs_close(&s);
}

/* An ISA ceiling below AVX-512 leaves AVX2 (or the reference). */
static void test_ceiling(void **state) {
  (void)state;
  dev_set_t s;
  devs_open_levels(&s, BP_ISA_AVX2, BP_ISA_AVX2);
  if (s.n == 0) TEST_SKIP_CASE("no AVX2 with FMA and F16C");
  unsetenv("BP_CPU_QGEMM_ISA");
  for (int d = 0; d < s.n; d++) assert_int_equal(cpu_qgemm_path(&s.dev[d]), CPU_QGEMM_AVX2);
  devs_close(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_amx_edges),   cmocka_unit_test(test_amx_views),
      cmocka_unit_test(test_amx_batches), cmocka_unit_test(test_amx_wrap),
      cmocka_unit_test(test_chosen_path), cmocka_unit_test(test_ceiling),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
