/*
 * test_qgemm_u8.c — the int8 GEMM with u8 operands (a and b each i8 or u8,
 * all four pairs) on the "cpu" device's fast paths, called directly so that
 * a decline cannot pass unseen: the cache-blocked driver with AMX tiles
 * (TDPBSSD / TDPBSUD / TDPBUSD / TDPBUUD) and with the AVX512-VNNI
 * micro-kernel (vpdpbusd with its operands in either order, a flipped by
 * 0x80 when a and b have the same signedness), and the AVX2 rows
 * (cpu_fast_qgemm under BP_CPU_QGEMM_ISA=avx2), each bit-exact against the
 * plugin's scalar reference (ref/ref_quant.c), which is itself checked
 * against this file's own sums. Cases: m, n, k on either side of the tiles,
 * micro-panel and k blocks; transposed and strided views; rank-3 batches;
 * the extremes (0 / 255, -128 / 127) and the int32 wrap of u8 x u8 past
 * k = 33025; i32, f32 and requantized i8 c.
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

enum { A_T = 1, B_T = 2, C_T = 4, B_BATCHED = 8 };
enum { FILL_RANDOM, FILL_EXTREME, FILL_MAX };

typedef struct qcase {
  int64_t batch, m, n, k;
  bool a_u8, b_u8;
  int layout, fill;
  bp_dtype_t cdt;
} qcase_t;

static uint64_t rng = 7;

static uint8_t rand_byte(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint8_t)(rng >> 56);
}

/* One byte of an operand: random, one of its dtype's two extremes, or the
 * largest product's factor (255 for u8, -128 for i8). */
static uint8_t fill_byte(bool u8, int fill) {
  if (fill == FILL_MAX) return u8 ? 255 : 0x80;
  if (fill == FILL_EXTREME) return rand_byte() & 1 ? (u8 ? 255 : 127) : (u8 ? 0 : 0x80);
  return rand_byte();
}

static bp_plugin_tensor_t tensor(void *base, uint64_t off, bp_dtype_t dt, int rank,
                                 const int64_t *shape, const int64_t *strides) {
  bp_plugin_tensor_t t = plugin_tensor(base, dt, rank, shape, strides);
  t.offset = off;
  return t;
}

typedef struct qbufs {
  uint8_t *a, *b;
  float *sa, *sb;
  char *c, *c_ref;
  size_t cbytes;
  bp_qgemm_args_t args, ref;
} qbufs_t;

static void make_case(const qcase_t *q, qbufs_t *u) {
  int64_t B = q->batch, m = q->m, n = q->n, k = q->k, off = 5;
  int rank = B > 1 ? 3 : 2, lead = rank - 2, brank = q->layout & B_BATCHED ? 3 : 2;
  size_t abytes = (size_t)(B * m * k + off), bbytes = (size_t)((brank == 3 ? B : 1) * k * n + off);
  u->a = malloc(abytes);
  u->b = malloc(bbytes);
  for (size_t i = 0; i < abytes; i++) u->a[i] = fill_byte(q->a_u8, q->fill);
  for (size_t i = 0; i < bbytes; i++) u->b[i] = fill_byte(q->b_u8, q->fill);
  int64_t ash[3] = {B, m, k}, ast[3] = {m * k, k, 1};
  if (q->layout & A_T) ast[1] = 1, ast[2] = m;
  int64_t bsh[3] = {B, k, n}, bst[3] = {k * n, n, 1};
  if (q->layout & B_T) bst[1] = 1, bst[2] = k;
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
  for (int64_t i = 0; i <= m; i++) u->sa[i] = 0.125f + (float)(i % 5) * 0.25f;
  for (int64_t j = 0; j <= n; j++) u->sb[j] = 0.0005f * (float)(1 + j % 13);
  bp_qgemm_args_t *g = &u->args;
  memset(g, 0, sizeof *g);
  g->struct_size = sizeof *g;
  g->out_scale = 5.0f;
  g->a = tensor(u->a, (uint64_t)off, q->a_u8 ? BP_U8 : BP_I8, rank, ash + (1 - lead),
                ast + (1 - lead));
  g->b = tensor(u->b, (uint64_t)off, q->b_u8 ? BP_U8 : BP_I8, brank, bsh + (3 - brank),
                bst + (3 - brank));
  g->c = tensor(u->c, (uint64_t)off * es, q->cdt, rank, csh + (1 - lead), cst + (1 - lead));
  if (q->cdt != BP_I32) {
    int64_t one = 1;
    g->scale_a = tensor(u->sa, 0, BP_F32, 1, &m, &one);
    g->scale_b = tensor(u->sb, 4, BP_F32, 1, &n, &one);
  }
  u->ref = *g;
  u->ref.c.ptr = (uint64_t)(uintptr_t)u->c_ref;
  assert_true(cpu_ref_qgemm_tasks(&u->ref) == B * m);
  assert_int_equal(cpu_ref_qgemm_range(&u->ref, 0, B * m), BP_OK);
}

static void free_case(qbufs_t *u) {
  free(u->a), free(u->b), free(u->sa), free(u->sb), free(u->c), free(u->c_ref);
}

static void check(const qcase_t *q, const qbufs_t *u, const char *who) {
  if (memcmp(u->c, u->c_ref, u->cbytes) == 0) return;
  size_t at = 0;
  while (u->c[at] == u->c_ref[at]) at++;
  print_error("%s: %s x %s batch %lld m %lld n %lld k %lld layout %d fill %d c dtype %d: byte %zu "
              "differs\n",
              who, q->a_u8 ? "u8" : "i8", q->b_u8 ? "u8" : "i8", (long long)q->batch,
              (long long)q->m, (long long)q->n, (long long)q->k, q->layout, q->fill, (int)q->cdt,
              at);
  fail();
}

static bool amx_here(void) {
  const cpu_features_t *f = cpu_features_get();
  return f->amx_int8 && f->avx512f && f->avx512bw && f->avx512vl && cpu_amx_request();
}

static bool vnni_here(void) {
  const cpu_features_t *f = cpu_features_get();
  return f->avx512_vnni && f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq;
}

/* One case through the blocked driver (AMX tiles and / or the VNNI
 * micro-kernel, whichever the CPU has) on 1 and 2 threads, and through the
 * AVX2 rows when b is shared. Returns the number of paths run. */
static int run_case(dev_set_t *s, const qcase_t *q) {
  qbufs_t u;
  make_case(q, &u);
  int ran = 0;
  for (int d = 0; d < s->n; d++) {
    cpu_device_t *dev = &s->dev[d];
    bool one = dev->threads == 1;
    if (dev->isa >= BP_ISA_AVX512 && amx_here()) {
      memset(u.c, 0x5A, u.cbytes);
      assert_int_equal(cpu_qgemm_blocked(dev, &u.args, true), BP_OK);
      check(q, &u, one ? "amx, 1 thread" : "amx, 2 threads");
      ran++;
    }
    if (dev->isa >= BP_ISA_AVX512 && vnni_here()) {
      memset(u.c, 0x5A, u.cbytes);
      assert_int_equal(cpu_qgemm_blocked(dev, &u.args, false), BP_OK);
      check(q, &u, one ? "vnni, 1 thread" : "vnni, 2 threads");
      ran++;
    }
    if (dev->isa == BP_ISA_AVX2 && !(q->layout & B_BATCHED)) {
      setenv("BP_CPU_QGEMM_ISA", "avx2", 1);
      memset(u.c, 0x5A, u.cbytes);
      assert_int_equal(cpu_fast_qgemm(dev, &u.args), BP_OK);
      unsetenv("BP_CPU_QGEMM_ISA");
      check(q, &u, one ? "avx2, 1 thread" : "avx2, 2 threads");
      ran++;
    }
  }
  free_case(&u);
  return ran;
}

static void open_all(dev_set_t *s) {
  devs_open(s);
  if (s->n == 0) TEST_SKIP_CASE("no AVX2 with FMA and F16C on this CPU");
}

/* Every signedness pair and c dtype over sizes around the tiles (16 x 16 x
 * 64), the micro-panel (32 x 32), the k blocks (256 VNNI, 1024 AMX) and the
 * row / column-pair blocks. */
static void test_pairs_edges(void **state) {
  (void)state;
  dev_set_t s;
  open_all(&s);
  static const int64_t mnk[][3] = {{1, 1, 1},      {3, 5, 7},       {16, 16, 64},
                                   {17, 33, 65},   {33, 31, 257},   {64, 64, 1025},
                                   {40, 300, 300}, {257, 40, 1100}, {5, 17, 0}};
  static const bp_dtype_t cdt[3] = {BP_I32, BP_F32, BP_I8};
  int ran = 0;
  for (int pair = 0; pair < 4; pair++)
    for (size_t x = 0; x < sizeof mnk / sizeof mnk[0]; x++)
      for (int c = 0; c < 3; c++) {
        qcase_t q = {1,         mnk[x][0], mnk[x][1],   mnk[x][2], pair & 1,
                     pair >> 1, 0,         FILL_RANDOM, cdt[c]};
        ran += run_case(&s, &q);
      }
  assert_true(ran > 0);
  devs_close(&s);
}

/* Transposed views of a, b and c, and rank-3 batches with b shared or
 * batched, for every pair. */
static void test_pairs_views(void **state) {
  (void)state;
  dev_set_t s;
  open_all(&s);
  static const int layouts[] = {A_T, B_T, C_T, A_T | B_T | C_T, B_BATCHED, B_BATCHED | A_T};
  for (int pair = 0; pair < 4; pair++)
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
      qcase_t q = {layouts[l] & B_BATCHED ? 3 : 2,
                   37,
                   50,
                   130,
                   pair & 1,
                   pair >> 1,
                   layouts[l],
                   FILL_RANDOM,
                   l % 3 == 0   ? BP_I32
                   : l % 3 == 1 ? BP_F32
                                : BP_I8};
      run_case(&s, &q);
    }
  devs_close(&s);
}

/* Only the extremes of each dtype (0 / 255, -128 / 127), every pair and c
 * dtype: where an offset trick with the wrong correction, or a
 * sign-extended u8, shows at once. */
static void test_pairs_extremes(void **state) {
  (void)state;
  dev_set_t s;
  open_all(&s);
  static const bp_dtype_t cdt[3] = {BP_I32, BP_F32, BP_I8};
  for (int pair = 0; pair < 4; pair++)
    for (int c = 0; c < 3; c++) {
      qcase_t q = {1, 45, 70, 300, pair & 1, pair >> 1, c == 1 ? B_T : 0, FILL_EXTREME, cdt[c]};
      run_case(&s, &q);
      q.fill = FILL_MAX;
      run_case(&s, &q);
    }
  devs_close(&s);
}

/* u8 x u8 at 255: the int32 sums wrap past k = 33025 (255^2 k > 2^31), as
 * the reference's do. */
static void test_u8u8_wrap(void **state) {
  (void)state;
  dev_set_t s;
  open_all(&s);
  qcase_t q = {1, 33, 3, 40000, true, true, 0, FILL_MAX, BP_I32};
  run_case(&s, &q);
  qbufs_t u;
  make_case(&q, &u);
  int32_t want = (int32_t)(uint32_t)(40000u * 65025u), got;
  memcpy(&got, u.c_ref + 5 * 4, 4);
  assert_int_equal(got, want);
  free_case(&u);
  devs_close(&s);
}

/* The reference itself against this file's sums, every pair, over the
 * extremes and random bytes, with a transposed b. */
static void test_ref_sums(void **state) {
  (void)state;
  for (int pair = 0; pair < 4; pair++)
    for (int fill = 0; fill < 3; fill++) {
      qcase_t q = {1, 6, 7, 45, pair & 1, pair >> 1, B_T, fill, BP_I32};
      qbufs_t u;
      make_case(&q, &u);
      for (int64_t i = 0; i < q.m; i++)
        for (int64_t j = 0; j < q.n; j++) {
          int64_t want = 0;
          for (int64_t l = 0; l < q.k; l++) {
            uint8_t x = u.a[5 + i * q.k + l], y = u.b[5 + j * q.k + l];
            want += (int64_t)(q.a_u8 ? x : (int8_t)x) * (q.b_u8 ? y : (int8_t)y);
          }
          int32_t got;
          memcpy(&got, u.c_ref + (5 + i * q.n + j) * 4, 4);
          assert_int_equal(got, want);
        }
      free_case(&u);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ref_sums),    cmocka_unit_test(test_pairs_edges),
      cmocka_unit_test(test_pairs_views), cmocka_unit_test(test_pairs_extremes),
      cmocka_unit_test(test_u8u8_wrap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
