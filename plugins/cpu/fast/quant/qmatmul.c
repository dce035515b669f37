/*
 * fast/quant/qmatmul.c — the "cpu" device's bp_qmatmul (GEMM / GEMV with
 * q8_0 / q4_0 weights): ggml's Q8_0 x Q4_0 / Q8_0 x Q8_0 scheme. The
 * activation rows (f32, f16 or bf16, any strides) are quantized once per
 * call to int8 blocks of 32 with an f32 scale each (the weights are k / 2
 * or k bytes per output, the activations k per row: the row pass is small
 * beside the weight pass), then register tiles of 4 rows x 4 weight rows
 * run on AVX512-VNNI or AVX2 (qmatmul.h), chosen by CPUID.
 *
 * Threads split the output columns; a task is a chunk of QM8_COLS columns
 * by a block of QM8_ROWS rows, column-major, so the weight rows stream in
 * order and a chunk's weights (a few tens of KB) stay in cache while the
 * row blocks pass over them. Each worker takes tasks from a contiguous
 * run of its own, then helps the others with theirs (qm8_worker). When the output
 * has too few columns to give every worker its share, k splits too: each
 * task sums a range of blocks into a partial row, added in a fixed order
 * at the end.
 *
 * At prompt shapes (CPU_QM8_AMX_ROWS rows or more) AMX-INT8 runs the
 * same scheme with the int8 dots in tiles (qmatmul_amx.c).
 *
 * BP_CPU_QMATMUL_ISA=amx|vnni|avx2|f32|ref forces a path (tests, comparisons):
 * f32 is the older, more accurate path with f32 activations
 * (qmatmul_avx512.c), which needs f32 activations contiguous along k.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/fast/quant/qmatmul.h"
#include "plugins/cpu/quant_blocks.h"

#define QM8_COLS 16 /* output columns per task: 4 register tiles */
#define QM8_ROWS 64 /* activation rows per task: their int8 rows fit in L2 */
#define QM8_TAKE 2  /* tasks a worker takes from the counter at a time */

/* ---- activation rows to int8 blocks ------------------------------------------ */

/* Rounds to nearest even in f32 for |v| < 2^22: adding 1.5 * 2^23 leaves no
 * fraction bits (SSE arithmetic, no excess precision). */
static inline float round_even(float v) {
  const float magic = 12582912.0f;
  return (v + magic) - magic;
}

static void load_block(const void *src, bp_dtype_t dt, int64_t stride, float *x) {
  if (dt == BP_F32) {
    for (int j = 0; j < CPU_QB; j++) x[j] = ((const float *)src)[j * stride];
  } else if (dt == BP_F16) {
    for (int j = 0; j < CPU_QB; j++) x[j] = cpu_f16_to_float(((const uint16_t *)src)[j * stride]);
  } else {
    for (int j = 0; j < CPU_QB; j++) x[j] = cpu_bf16_to_float(((const uint16_t *)src)[j * stride]);
  }
}

/* ggml's quantize_row_q8_0 for one block, the scale kept in f32 (ggml
 * rounds it to f16); rounding to nearest even as ggml's SIMD code does. A
 * block with a NaN or an infinity gets a NaN scale, so its outputs are NaN
 * rather than a silent wrong number. */
static float quantize_values(const float *x, bool biased, uint8_t *q) {
  float amax = 0.0f;
  bool finite = true;
  for (int j = 0; j < CPU_QB; j++) {
    float v = x[j] < 0 ? -x[j] : x[j];
    finite &= v <= 3.402823466e38f;
    amax = v > amax ? v : amax;
  }
  float scale = amax / 127.0f, inv = scale != 0.0f && finite ? 1.0f / scale : 0.0f;
  for (int j = 0; j < CPU_QB; j++) {
    int v = (int)round_even(x[j] * inv);
    q[j] = (uint8_t)(biased ? v + 128 : v);
  }
  return finite ? scale : __builtin_nanf("");
}

/* Block b's part of its pair record (qmatmul.h): values and scale lanes. */
static void put_pair_block(uint8_t *rec, int half, const uint8_t *q, float d) {
  memcpy(rec + half * 32, q, CPU_QB);
  for (int i = 0; i < 8; i++) memcpy(rec + 64 + half * 32 + 4 * i, &d, 4);
}

/* Block i (0-3) of its quad record (qmatmul.h): the two halves, and per
 * lane the nibbles' correction and the scale. */
static void put_quad_block(uint8_t *rec, int i, const uint8_t *q, float d) {
  memcpy(rec + 16 * i, q, 16);
  memcpy(rec + 64 + 16 * i, q + 16, 16);
  const int8_t *v = (const int8_t *)q;
  for (int l = 0; l < 4; l++) {
    int32_t c = 0;
    for (int e = 0; e < 4; e++) c += v[4 * l + e] + v[16 + 4 * l + e];
    c *= -8;
    memcpy(rec + 128 + 16 * i + 4 * l, &c, 4);
    memcpy(rec + 192 + 16 * i + 4 * l, &d, 4);
  }
}

/* A worker's own run of tasks [next, end), on a cache line of its own. */
typedef struct qm8_share {
  _Alignas(64) int64_t next, end;
} qm8_share_t;

typedef struct qm8_job {
  const bp_qmatmul_args_t *args;
  cpu_qm8_kernel_fn kern;
  cpu_qm8_w_t w;
  cpu_qm8_act_t act;
  int64_t m, rows, n, nb;
  int64_t row_blocks, col_chunks, ksplit, kblocks; /* kblocks: blocks per k part, a multiple of 4 */
  float *partial;                                   /* ksplit x rows x n, when ksplit > 1 */
  bool quad;                                        /* quad records (VNNI, q4_0), else pairs */
  uint8_t *records;                                 /* act.base, written by quantize_rows */
  int64_t ntasks;
  unsigned workers;
  qm8_share_t *shares; /* qm8_worker's counters, one per worker */
} qm8_job_t;

/* Element offset of row `row` (batch * m + i) of a rank 2 / 3 tensor. */
static int64_t row_offset(const bp_plugin_tensor_t *t, int64_t m, int64_t row) {
  int32_t r = t->rank;
  return (r == 3 ? row / m * t->strides[0] : 0) + row % m * t->strides[r - 2];
}

float cpu_qm8_quantize_block(const bp_plugin_tensor_t *A, int64_t m, int64_t row, int64_t b, uint8_t *q) {
  size_t es = cpu_dtype_size(A->dtype);
  int64_t ks = A->strides[A->rank - 1];
  float x[CPU_QB];
  load_block((const char *)cpu_tensor_base(A) + (row_offset(A, m, row) + b * CPU_QB * ks) * (int64_t)es,
             A->dtype, ks, x);
  return quantize_values(x, false, q);
}

static void quantize_rows(void *vctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  qm8_job_t *job = vctx;
  const bp_plugin_tensor_t *A = &job->args->a;
  size_t es = cpu_dtype_size(A->dtype);
  int64_t ks = A->strides[A->rank - 1];
  float x[CPU_QB];
  uint8_t q[CPU_QB];
  for (int64_t row = begin; row < end; row++) {
    const char *src = (const char *)cpu_tensor_base(A) + row_offset(A, job->m, row) * (int64_t)es;
    uint8_t *recs = job->records + row * job->act.row_bytes;
    if (job->quad && A->dtype == BP_F32 && ks == 1) { /* the GEMV's case, vectorised */
      cpu_qm8_vnni_quad_row((const float *)src, job->nb, recs);
      continue;
    }
    for (int64_t b = 0; b < job->nb; b++) {
      load_block(src + b * CPU_QB * ks * (int64_t)es, A->dtype, ks, x);
      float d = quantize_values(x, job->act.biased, q);
      if (job->quad) put_quad_block(recs + b / 4 * CPU_QM8_QUAD, (int)(b % 4), q, d);
      else put_pair_block(recs + b / 2 * CPU_QM8_PAIR, (int)(b % 2), q, d);
    }
    /* the pad blocks of the last record: zero values (+ 128 when biased)
     * and scales, so they add nothing */
    memset(q, job->act.biased ? 128 : 0, CPU_QB);
    for (int64_t b = job->nb; b % (job->quad ? 4 : 2); b++)
      if (job->quad) put_quad_block(recs + b / 4 * CPU_QM8_QUAD, (int)(b % 4), q, 0.0f);
      else put_pair_block(recs + b / 2 * CPU_QM8_PAIR, (int)(b % 2), q, 0.0f);
  }
}

/* ---- the tiles over the pool ------------------------------------------------- */

void cpu_qm8_store_y(const bp_plugin_tensor_t *Y, int64_t m, int64_t row, int64_t j, float v) {
  int64_t off = row_offset(Y, m, row) + j * Y->strides[Y->rank - 1];
  if (Y->dtype == BP_F32) ((float *)cpu_tensor_base(Y))[off] = v;
  else cpu_store(cpu_tensor_base(Y), Y->dtype, off, v);
}

static void qm8_tasks(const qm8_job_t *job, int64_t begin, int64_t end) {
  float out[CPU_QM8_R * CPU_QM8_C];
  for (int64_t t = begin; t < end; t++) {
    int64_t ks = t % job->ksplit, rest = t / job->ksplit;
    int64_t rb = rest % job->row_blocks, cc = rest / job->row_blocks;
    int64_t r_end = (rb + 1) * QM8_ROWS < job->rows ? (rb + 1) * QM8_ROWS : job->rows;
    int64_t j_end = (cc + 1) * QM8_COLS < job->n ? (cc + 1) * QM8_COLS : job->n;
    int64_t b0 = ks * job->kblocks, b1 = b0 + job->kblocks < job->nb ? b0 + job->kblocks : job->nb;
    for (int64_t r0 = rb * QM8_ROWS; r0 < r_end; r0 += CPU_QM8_R)
      for (int64_t j0 = cc * QM8_COLS; j0 < j_end; j0 += CPU_QM8_C) {
        cpu_qm8_part_t p = {r0, j0, b0, b1, (int)(r_end - r0 < CPU_QM8_R ? r_end - r0 : CPU_QM8_R),
                            (int)(j_end - j0 < CPU_QM8_C ? j_end - j0 : CPU_QM8_C)};
        job->kern(&job->w, &job->act, &p, out);
        for (int r = 0; r < p.rows; r++)
          for (int c = 0; c < p.cols; c++) {
            float v = out[r * CPU_QM8_C + c];
            if (job->ksplit > 1) job->partial[(ks * job->rows + r0 + r) * job->n + j0 + c] = v;
            else cpu_qm8_store_y(&job->args->y, job->m, r0 + r, j0 + c, v);
          }
      }
  }
}

/* One pool task per worker. Worker w owns a contiguous run of the tasks
 * (1 / workers of them, in order: for a GEMV, one contiguous stretch of
 * weight rows, a single stream whose next tile the kernel fetches ahead)
 * and takes them QM8_TAKE at a time from its own counter; when its run is
 * done it takes from the others' counters, so a worker slowed by another
 * process on its core (the machine is shared) does less of the call
 * instead of holding everyone up at the end of a static share. */
static bool qm8_take(qm8_job_t *job, qm8_share_t *sh) {
  if (__atomic_load_n(&sh->next, __ATOMIC_RELAXED) >= sh->end) return false;
  int64_t t = __atomic_fetch_add(&sh->next, QM8_TAKE, __ATOMIC_RELAXED);
  if (t >= sh->end) return false;
  qm8_tasks(job, t, t + QM8_TAKE < sh->end ? t + QM8_TAKE : sh->end);
  return true;
}

static void qm8_worker(void *vctx, int64_t begin, int64_t end, unsigned worker) {
  (void)end, (void)worker;
  qm8_job_t *job = vctx;
  for (unsigned i = 0; i < job->workers; i++) {
    qm8_share_t *sh = &job->shares[((unsigned)begin + i) % job->workers];
    while (qm8_take(job, sh)) {
    }
  }
}

/* How many k parts: enough tasks for every worker when the output is
 * narrow (a GEMV with few columns), parts of at least 32 blocks. */
static int64_t k_parts(int64_t rows, int64_t col_chunks, int64_t nb, unsigned workers) {
  if (rows > CPU_QM8_R || col_chunks >= 2 * (int64_t)workers) return 1;
  int64_t want = (2 * (int64_t)workers + col_chunks - 1) / col_chunks, most = nb / 32;
  return want < most ? want : most < 1 ? 1 : most;
}

/* vnni: the VNNI kernel's records (pairs + 128 for q8_0 weights, quads
 * for q4_0), else the AVX2 kernel's (pairs). */
static bp_status_t run_int8(cpu_device_t *dev, const bp_qmatmul_args_t *a, cpu_qm8_kernel_fn kern, bool vnni) {
  const bp_plugin_tensor_t *A = &a->a, *W = &a->w;
  int32_t r = A->rank;
  qm8_job_t job = {.args = a, .kern = kern, .m = A->shape[r - 2], .n = W->shape[0], .nb = W->shape[1] / CPU_QB};
  job.rows = job.m * (r == 3 ? A->shape[0] : 1);
  job.w = (cpu_qm8_w_t){W->dtype, cpu_qblock(W, 0), W->strides[0] / CPU_QB * (int64_t)cpu_qblock_bytes(W->dtype),
                        (int64_t)cpu_qblock_bytes(W->dtype)};
  bool q4 = W->dtype == BP_Q4_0;
  job.quad = vnni && q4;
  job.act = (cpu_qm8_act_t){.row_bytes = job.quad ? (job.nb + 3) / 4 * CPU_QM8_QUAD : (job.nb + 1) / 2 * CPU_QM8_PAIR,
                            .biased = vnni && !q4};
  job.records = malloc((size_t)(job.rows * job.act.row_bytes));
  job.act.base = job.records;
  job.row_blocks = (job.rows + QM8_ROWS - 1) / QM8_ROWS;
  job.col_chunks = (job.n + QM8_COLS - 1) / QM8_COLS;
  unsigned workers = cpu_pool_size(dev->pool);
  job.ksplit = k_parts(job.rows, job.col_chunks, job.nb, workers);
  job.kblocks = (job.nb + job.ksplit - 1) / job.ksplit;
  job.kblocks = (job.kblocks + 3) / 4 * 4; /* whole records of either kind */
  job.ksplit = (job.nb + job.kblocks - 1) / job.kblocks;
  if (job.ksplit > 1) job.partial = malloc((size_t)(job.ksplit * job.rows * job.n) * sizeof(float));
  job.shares = aligned_alloc(64, workers * sizeof *job.shares);
  bp_status_t st = BP_OK;
  if (!job.records || !job.shares || (job.ksplit > 1 && !job.partial)) {
    st = BP_ERR_OUT_OF_MEMORY;
    goto out;
  }
  /* rows of a few thousand elements each: a few rows per task */
  cpu_pool_run(dev->pool, job.rows, 1 + (1 << 14) / (job.nb * CPU_QB), quantize_rows, &job);
  job.ntasks = job.col_chunks * job.row_blocks * job.ksplit;
  job.workers = workers;
  for (unsigned i = 0; i < workers; i++)
    job.shares[i] = (qm8_share_t){job.ntasks * i / workers, job.ntasks * (i + 1) / workers};
  cpu_pool_run(dev->pool, workers, 1, qm8_worker, &job);
  for (int64_t row = 0; job.ksplit > 1 && row < job.rows; row++)
    for (int64_t j = 0; j < job.n; j++) {
      float s = 0.0f;
      for (int64_t ks = 0; ks < job.ksplit; ks++) s += job.partial[(ks * job.rows + row) * job.n + j];
      cpu_qm8_store_y(&a->y, job.m, row, j, s);
    }
out:
  free(job.records), free(job.partial), free(job.shares);
  return st;
}

/* ---- the f32 path (BP_CPU_QMATMUL_ISA=f32) ------------------------------------ */

/* Tasks: (row tile of CPU_QM_ROWS) x (chunk of QM_COLS output columns). */
#define QM_COLS 32

typedef struct qm_job {
  const bp_qmatmul_args_t *a;
  int64_t row_tiles, col_chunks;
} qm_job_t;

static void qm_task(void *vctx, int64_t begin, int64_t end, unsigned worker) {
  (void)worker;
  const qm_job_t *job = vctx;
  const bp_qmatmul_args_t *a = job->a;
  const bp_plugin_tensor_t *A = &a->a, *W = &a->w, *Y = &a->y;
  int32_t r = A->rank;
  int64_t m = A->shape[r - 2], rows = m * (r == 3 ? A->shape[0] : 1), n = W->shape[0];
  for (int64_t t = begin; t < end; t++) {
    int64_t rt = t / job->col_chunks, cc = t % job->col_chunks;
    cpu_qm_tile_t tile = {.dtype = W->dtype, .blocks = W->shape[1] / CPU_QB,
                          .block_bytes = (int64_t)cpu_qblock_bytes(W->dtype), .y_stride = Y->strides[r - 1],
                          .w = cpu_qblock(W, 0), .j0 = cc * QM_COLS};
    tile.w_row_bytes = W->strides[0] / CPU_QB * tile.block_bytes;
    tile.j1 = tile.j0 + QM_COLS < n ? tile.j0 + QM_COLS : n;
    for (int64_t q = rt * CPU_QM_ROWS; q < rows && q < (rt + 1) * CPU_QM_ROWS; q++) {
      tile.a[tile.rows] = (const float *)cpu_tensor_base(A) + row_offset(A, m, q);
      tile.y[tile.rows++] = (float *)cpu_tensor_base(Y) + row_offset(Y, m, q);
    }
    cpu_qmatmul_avx512_tile(&tile);
  }
}

static bp_status_t run_f32(cpu_device_t *dev, const bp_qmatmul_args_t *a) {
  int32_t r = a->a.rank;
  int64_t rows = a->a.shape[r - 2] * (r == 3 ? a->a.shape[0] : 1), n = a->w.shape[0];
  qm_job_t job = {a, (rows + CPU_QM_ROWS - 1) / CPU_QM_ROWS, (n + QM_COLS - 1) / QM_COLS};
  cpu_pool_run(dev->pool, job.row_tiles * job.col_chunks, 1, qm_task, &job);
  return BP_OK;
}

bp_status_t cpu_fast_qmatmul(cpu_device_t *dev, const bp_qmatmul_args_t *a) {
  const cpu_features_t *f = cpu_features_get();
  const char *isa = getenv("BP_CPU_QMATMUL_ISA");
  bp_isa_level_t cap = dev->isa == BP_ISA_BEST ? BP_ISA_AVX512 : dev->isa;
  bool avx512 = cap >= BP_ISA_AVX512 && f->avx512f && f->avx512bw && f->avx512vl;
  /* k = 0 (zeros) and the forced reference run the reference */
  if (a->w.shape[1] == 0 || (isa && !strcmp(isa, "ref"))) return BP_ERR_UNIMPLEMENTED;
  if (isa && !strcmp(isa, "f32")) {
    if (!avx512 || a->a.dtype != BP_F32 || a->a.strides[a->a.rank - 1] != 1 || a->y.dtype != BP_F32)
      return BP_ERR_UNIMPLEMENTED;
    return run_f32(dev, a);
  }
  int64_t rows = a->a.shape[a->a.rank - 2] * (a->a.rank == 3 ? a->a.shape[0] : 1);
  bool amx = avx512 && f->amx_int8 && (isa ? !strcmp(isa, "amx") : rows >= CPU_QM8_AMX_ROWS);
  if (amx && cpu_amx_request()) return cpu_qm8_amx(dev, a);
  if (avx512 && f->avx512_vnni && !(isa && !strcmp(isa, "avx2"))) return run_int8(dev, a, cpu_qm8_vnni, true);
  if (cap >= BP_ISA_AVX2 && f->avx2 && f->fma && f->f16c) return run_int8(dev, a, cpu_qm8_avx2, false);
  return BP_ERR_UNIMPLEMENTED;
}
