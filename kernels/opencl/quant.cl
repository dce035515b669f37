/*
 * quant.cl — the quantized ops of ABI 1.5 (plugins/opencl/ops_quant.c;
 * formats, rounding and tolerances: docs/ops.md, "Quantized types").
 *
 * Built with one of:
 *  -DQDT=10|11 -DDT=<float dtype>: the block formats (q8_0, q4_0): quantize
 *   and dequantize a block per work-item, and qmatmul (activations of DT,
 *   weights dequantized a block at a time): qmv, the GEMV, one work-group
 *   per QMV_ROWS output columns reducing over k; qmm_tiled, the GEMM, a
 *   work-group per 32 x 32 tile of y with each k block of a and w staged in
 *   local memory.
 *  -DI8Q [-DQU8] -DDT=<float dtype>: i8 (u8 with QU8) quantize /
 *   dequantize with f32 scales.
 *  -DQG -DCDT=<c dtype> [-DAU] [-DBU]: the 8-bit GEMM: qpack copies a and
 *   b (any strides) into zero-padded row panels, k contiguous; qgemm_tiled
 *   sums the byte products into uint32 (wrapping, as the spec says) with
 *   the device's integer dot product (-DBP_IDOT,
 *   cl_khr_integer_dot_product, which has every signedness pair) or
 *   widened int arithmetic; AU / BU read a / b as u8, else i8.
 *  -DQG -DCDT=<c dtype> -DFA=3|2 -DFB=3|2: the fp8 GEMM (mantissa bits:
 *   3 e4m3, 2 e5m2) on the same panels: qgemm_fp8 decodes each code to
 *   f32 (exact) and sums the products in f32 (each exact).
 *  -DQCAST -DSRC=a -DDST=b: casts to or from i8 and the fp8 dtypes.
 *
 * The scaled epilogues are f32 in the order the spec writes them, and the
 * divisions correctly rounded (the host adds
 * -cl-fp32-correctly-rounded-divide-sqrt), so every device gives the CPU
 * reference's bits; FP_CONTRACT OFF keeps the compiler from fusing them.
 */
#pragma OPENCL FP_CONTRACT OFF

#define QB 32 /* weights per block */

/* saturate(rne(v)) to int8; NaN gives 0. */
inline char bp_sat_i8(float v) {
  return isnan(v) ? (char)0 : convert_char_sat_rte(v);
}

/* OCP fp8 (mbits 3: E4M3, 2: E5M2) to float, exactly (plugins/cpu/fp8.h). */
inline float bp_fp8_decode(uchar b, int mbits) {
  int ebits = 7 - mbits, bias = (1 << (ebits - 1)) - 1;
  int e = (b >> mbits) & ((1 << ebits) - 1), m = b & ((1 << mbits) - 1);
  float s = (b & 0x80) ? -1.0f : 1.0f;
  const float qnan = as_float(0x7fc00000u); /* the CPU's NAN: OpenCL's may differ */
  if (mbits == 3 && e == 15 && m == 7) return qnan;
  if (mbits == 2 && e == 31) return m ? qnan : s * INFINITY;
  if (e == 0) return s * ldexp((float)m, 1 - bias - mbits);
  return s * ldexp((float)((1 << mbits) + m), e - bias - mbits);
}


/* ---- the block formats ---------------------------------------------------- */
#ifdef QDT
#if QDT == 10
#define QBYTES 34
#else
#define QBYTES 18
#endif

inline float q_scale(__global const uchar *blk) {
  return vload_half(0, (__global const half *)blk);
}

/* Quantized integer j of a block (q8_0: -128..127, q4_0: -8..7). */
inline int q_int(__global const uchar *blk, int j) {
#if QDT == 10
  return (int)(char)blk[2 + j];
#else
  uchar b = blk[2 + (j & 15)];
  return (int)(j < 16 ? (b & 15) : (b >> 4)) - 8;
#endif
}

/* ggml's quantize_row_q8_0_ref / q4_0_ref for one block of v. */
inline void q_encode(const float *v, __global uchar *blk) {
#if QDT == 10
  float amax = 0.0f;
  for (int j = 0; j < QB; j++) amax = fmax(amax, fabs(v[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  vstore_half_rte(d, 0, (__global half *)blk);
  for (int j = 0; j < QB; j++) blk[2 + j] = (uchar)(char)round(v[j] * id);
#else
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < QB; j++)
    if (amax < fabs(v[j])) {
      amax = fabs(v[j]);
      max = v[j];
    }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  vstore_half_rte(d, 0, (__global half *)blk);
  for (int j = 0; j < QB / 2; j++) {
    char v0 = (char)(v[j] * id + 8.5f), v1 = (char)(v[QB / 2 + j] * id + 8.5f);
    uchar q0 = (uchar)min(v0, (char)15), q1 = (uchar)min(v1, (char)15);
    blk[2 + j] = (uchar)(q0 | (q1 << 4));
  }
#endif
}

/* Rows (all dims but the last) of x and y by BP_ROW_ARGS; item (b, r)
 * takes block b of row r. The block side's row offset is in weights, a
 * multiple of 32 (docs/ops.md, "Block tensors"). */
__kernel void quantize_block(__global const uchar *xb, ulong xo, __global uchar *yb, ulong yo,
                             BP_ROW_ARGS) {
  long b = get_global_id(0), r = get_global_id(1);
  if (b * QB >= len || r >= nrows) return;
  BP_ROW_SETUP(r, ox, oy);
  __global const T *x = BP_PTR(const T, xb, xo);
  float v[QB];
  for (int j = 0; j < QB; j++) v[j] = (float)LD(x, ox + (b * QB + j) * sxl);
  q_encode(v, yb + yo + ((oy + b * QB) / QB) * QBYTES);
}

__kernel void dequantize_block(__global const uchar *xb, ulong xo, __global uchar *yb, ulong yo,
                               BP_ROW_ARGS) {
  long b = get_global_id(0), r = get_global_id(1);
  if (b * QB >= len || r >= nrows) return;
  BP_ROW_SETUP(r, ox, oy);
  __global const uchar *blk = xb + xo + ((ox + b * QB) / QB) * QBYTES;
  __global T *y = BP_PTR(T, yb, yo);
  const float d = q_scale(blk);
  for (int j = 0; j < QB; j++) ST(y, oy + (b * QB + j) * syl, (float)q_int(blk, j) * d);
}

/* ---- qmatmul: y[i, j] = sum_l a[i, l] * w[j, l] ---------------------------
 * a [batch, m, k] by strides as (s0 s1 s2), y likewise (ys), w rows of nb
 * blocks, row stride wrs blocks. Each block's 32 products are summed on
 * their own, times the block's scale, then added: the running sum sees one
 * addition per block. */
#define QMV_WG 32
#define QMV_ROWS 8

/* A block's 32 integers as two float16 (exact). */
inline void q_ints16(__global const uchar *blk, float16 *lo, float16 *hi) {
#if QDT == 10
  *lo = convert_float16(as_char16(vload16(0, blk + 2)));
  *hi = convert_float16(as_char16(vload16(0, blk + 18)));
#else
  uchar16 b = vload16(0, blk + 2);
  *lo = convert_float16(convert_int16(b & (uchar)15) - 8);
  *hi = convert_float16(convert_int16(b >> (uchar)4) - 8);
#endif
}

/* 32 activations from element off, step st, as two float16: one vector
 * load each where k is contiguous. */
inline void a_load32(__global const T *a, long off, long st, float16 *lo, float16 *hi) {
  if (st == 1) {
#if DT == 0
    *lo = vload16(0, a + off);
    *hi = vload16(0, a + off + 16);
#elif DT == 1
    *lo = vload_half16(0, a + off);
    *hi = vload_half16(0, a + off + 16);
#else
    *lo = as_float16(convert_uint16(vload16(0, a + off)) << 16);
    *hi = as_float16(convert_uint16(vload16(0, a + off + 16)) << 16);
#endif
    return;
  }
  float v[QB];
  for (int l = 0; l < QB; l++) v[l] = (float)LD(a, off + l * st);
  *lo = vload16(0, v);
  *hi = vload16(0, v + 16);
}

inline float hsum16(float16 v) {
  float8 a = v.lo + v.hi;
  float4 b = a.lo + a.hi;
  float2 c = b.lo + b.hi;
  return c.x + c.y;
}

/* The GEMV: a work-group per QMV_ROWS columns of y; its items split k's
 * blocks, each item reading its activations once for every row, then one
 * barrier and a sum of the items' partials per row. */
__kernel __attribute__((reqd_work_group_size(QMV_WG, 1, 1))) void
qmv(__global const uchar *ab, ulong ao, __global const uchar *wb, ulong wo, __global uchar *yb,
    ulong yo, long m, long n, long nb, long wrs, long4 as, long4 ys) {
  int t = get_local_id(0);
  long j0 = get_group_id(0) * QMV_ROWS, row = get_global_id(1);
  long bi = row / m, i = row % m;
  __global const T *a = BP_PTR(const T, ab, ao) + bi * as.s0 + i * as.s1;
  __global const uchar *w = wb + wo;
  long jr[QMV_ROWS];
  float acc[QMV_ROWS];
  for (int r = 0; r < QMV_ROWS; r++) {
    jr[r] = min(j0 + r, n - 1) * wrs; /* rows past n read row n - 1, unused */
    acc[r] = 0.0f;
  }
  for (long b = t; b < nb; b += QMV_WG) {
    float16 alo, ahi, qlo, qhi;
    a_load32(a, b * QB * as.s2, as.s2, &alo, &ahi);
    for (int r = 0; r < QMV_ROWS; r++) {
      __global const uchar *blk = w + (jr[r] + b) * QBYTES;
      q_ints16(blk, &qlo, &qhi);
      acc[r] += hsum16(fma(alo, qlo, ahi * qhi)) * q_scale(blk);
    }
  }
  __local float red[QMV_ROWS][QMV_WG];
  for (int r = 0; r < QMV_ROWS; r++) red[r][t] = acc[r];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t < QMV_ROWS && j0 + t < n) {
    float s = 0.0f;
    for (int e = 0; e < QMV_WG; e++) s += red[t][e];
    __global T *y = BP_PTR(T, yb, yo);
    ST(y, bi * ys.s0 + i * ys.s1 + (j0 + t) * ys.s2, s);
  }
}

/* A work-group of QMM_T x QMM_T items owns a (QMM_T * QMM_W)^2 tile of y;
 * each item a QMM_W x QMM_W block of it. */
#define QMM_T 8
#define QMM_W 4
#define QMM_TILE (QMM_T * QMM_W)

__kernel __attribute__((reqd_work_group_size(QMM_T, QMM_T, 1))) void
qmm_tiled(__global const uchar *ab, ulong ao, __global const uchar *wb, ulong wo,
          __global uchar *yb, ulong yo, long m, long n, long nb, long wrs, long4 as, long4 ys) {
  int tx = get_local_id(0), ty = get_local_id(1), lid = ty * QMM_T + tx;
  long j0 = get_group_id(0) * QMM_TILE, i0 = get_group_id(1) * QMM_TILE;
  long bi = get_global_id(2);
  __global const T *a = BP_PTR(const T, ab, ao) + bi * as.s0;
  __global const uchar *w = wb + wo;
  __local float at[QMM_TILE][QB + 1], wt[QMM_TILE][QB + 1];
  float acc[QMM_W][QMM_W];
  for (int r = 0; r < QMM_W; r++)
    for (int c = 0; c < QMM_W; c++) acc[r][c] = 0.0f;
  for (long b = 0; b < nb; b++) {
    /* a's tile: QMM_TILE rows x 32, rows past m read as zeros */
    for (int e = lid; e < QMM_TILE * QB; e += QMM_T * QMM_T) {
      int r = e / QB, l = e % QB;
      long i = i0 + r;
      at[r][l] = i < m ? (float)LD(a, i * as.s1 + (b * QB + l) * as.s2) : 0.0f;
    }
    /* w's tile: half a block per item, dequantized */
    for (int e = lid; e < QMM_TILE * 2; e += QMM_T * QMM_T) {
      int r = e / 2, h = (e % 2) * (QB / 2);
      __global const uchar *blk = w + (min(j0 + r, n - 1) * wrs + b) * QBYTES;
      float d = q_scale(blk);
      for (int l = h; l < h + QB / 2; l++) wt[r][l] = (float)q_int(blk, l) * d;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float part[QMM_W][QMM_W];
    for (int r = 0; r < QMM_W; r++)
      for (int c = 0; c < QMM_W; c++) part[r][c] = 0.0f;
    for (int l = 0; l < QB; l++) {
      float av[QMM_W], wv[QMM_W];
      for (int r = 0; r < QMM_W; r++) av[r] = at[ty * QMM_W + r][l];
      for (int c = 0; c < QMM_W; c++) wv[c] = wt[tx * QMM_W + c][l];
      for (int r = 0; r < QMM_W; r++)
        for (int c = 0; c < QMM_W; c++) part[r][c] = fma(av[r], wv[c], part[r][c]);
    }
    for (int r = 0; r < QMM_W; r++)
      for (int c = 0; c < QMM_W; c++) acc[r][c] += part[r][c];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  __global T *y = BP_PTR(T, yb, yo) + bi * ys.s0;
  for (int r = 0; r < QMM_W; r++) {
    long i = i0 + ty * QMM_W + r;
    for (int c = 0; c < QMM_W; c++) {
      long j = j0 + tx * QMM_W + c;
      if (i < m && j < n) ST(y, i * ys.s1 + j * ys.s2, acc[r][c]);
    }
  }
}
#endif /* QDT */

/* ---- i8 / u8 with f32 scales: y = saturate(rne(x / scale)), q * scale -- */
#ifdef I8Q
#ifdef QU8
#define QT uchar
#define QSAT(v) (isnan(v) ? (uchar)0 : convert_uchar_sat_rte(v))
#else
#define QT char
#define QSAT(v) bp_sat_i8(v)
#endif
__kernel void quantize_i8(__global const uchar *xb, ulong xo, __global const uchar *sb, ulong so,
                          __global uchar *yb, ulong yo, int rank, long n, long8 shape8, long8 xs8,
                          long8 ss8, long8 ys8) {
  long shape[8], xs[8], ss[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(xs8, xs);
  BP_UNPACK8(ss8, ss);
  BP_UNPACK8(ys8, ys);
  __global const T *x = BP_PTR(const T, xb, xo);
  __global const float *s = BP_PTR(const float, sb, so);
  __global QT *y = BP_PTR(QT, yb, yo);
  for (long e = get_global_id(0); e < n; e += get_global_size(0)) {
    long ox, os, oy;
    bp_offsets3(e, rank, shape, xs, ss, ys, &ox, &os, &oy);
    float v = (float)LD(x, ox) / s[os];
    y[oy] = QSAT(v);
  }
}

__kernel void dequantize_i8(__global const uchar *xb, ulong xo, __global const uchar *sb, ulong so,
                            __global uchar *yb, ulong yo, int rank, long n, long8 shape8, long8 xs8,
                            long8 ss8, long8 ys8) {
  long shape[8], xs[8], ss[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(xs8, xs);
  BP_UNPACK8(ss8, ss);
  BP_UNPACK8(ys8, ys);
  __global const QT *x = BP_PTR(const QT, xb, xo);
  __global const float *s = BP_PTR(const float, sb, so);
  __global T *y = BP_PTR(T, yb, yo);
  for (long e = get_global_id(0); e < n; e += get_global_size(0)) {
    long ox, os, oy;
    bp_offsets3(e, rank, shape, xs, ss, ys, &ox, &os, &oy);
    ST(y, oy, (float)x[ox] * s[os]);
  }
}
#endif /* I8Q */

/* ---- int8 GEMM ------------------------------------------------------------ */
#ifdef QG
#ifdef BP_IDOT
#pragma OPENCL EXTENSION cl_khr_integer_dot_product : enable
#endif

/* dst[bi][r][p] = src[bi * sb + r * sr + p * sp], zero padded to rp x kp:
 * a's rows (r = i) or b's columns (r = j), k contiguous in both. */
__kernel void qpack(__global const uchar *sbuf, ulong so, long rows, long k, long sb, long sr,
                    long sp, __global char *dst, long rp, long kp) {
  long p = get_global_id(0), r = get_global_id(1), bi = get_global_id(2);
  if (p >= kp || r >= rp) return;
  __global const char *src = BP_PTR(const char, sbuf, so);
  dst[(bi * rp + r) * kp + p] = (r < rows && p < k) ? src[bi * sb + r * sr + p * sp] : (char)0;
}

/* The operands' bytes as the kernel reads them: u8 (AU, BU) or i8. */
#ifdef AU
#define AT16 uchar16
#define AS_AT16 as_uchar16
#else
#define AT16 char16
#define AS_AT16 as_char16
#endif
#ifdef BU
#define BT16 uchar16
#define AS_BT16 as_uchar16
#else
#define BT16 char16
#define AS_BT16 as_char16
#endif

/* The 16 products of a and b summed into four lanes (the dot of two
 * uchar4 is a uint: as_int keeps its bits, the sums wrap alike). */
inline int4 dot16(AT16 a, BT16 b) {
#ifdef BP_IDOT
  return (int4)(as_int(dot(a.s0123, b.s0123)), as_int(dot(a.s4567, b.s4567)),
                as_int(dot(a.s89ab, b.s89ab)), as_int(dot(a.scdef, b.scdef)));
#else
  int16 p = convert_int16(a) * convert_int16(b);
  return p.s0123 + p.s4567 + p.s89ab + p.scdef;
#endif
}

/* acc's value in c's dtype (bp_qgemm_args_t): i32 as is; f32
 * (float)acc * sa * sb; i8 that over out_scale, rounded and saturated. */
inline void qg_store(__global uchar *cb, long oc, uint acc, float sa, float sb, float out_scale) {
#if CDT == 4
  ((__global int *)cb)[oc] = as_int(acc);
#else
  float v = convert_float_rte(as_int(acc)) * sa;
  v = v * sb;
#if CDT == 0
  ((__global float *)cb)[oc] = v;
#else
  ((__global char *)cb)[oc] = bp_sat_i8(v / out_scale);
#endif
#endif
}

#define QG_T 8
#define QG_W 4
#define QG_TILE (QG_T * QG_W)
#define QG_K 16 /* k padding of the panels */

/* Panels pa [batch][mp][kp] and pb [batch][np][kp] (batch strides sab,
 * sbb: 0 when shared). Scales: ss = (has_sa, has_sb) and their strides. */
__kernel __attribute__((reqd_work_group_size(QG_T, QG_T, 1))) void
qgemm_tiled(__global const char *pa, __global const char *pb, long kp, long sab, long sbb,
            __global uchar *cb, ulong co, long m, long n, long csb, long csm, long csn,
            __global const uchar *sab_buf, ulong sao, long sas, __global const uchar *sbb_buf,
            ulong sbo, long sbs, int2 has, float out_scale) {
  long j0 = get_global_id(0) * QG_W, i0 = get_global_id(1) * QG_W, bi = get_global_id(2);
  __global const char *a = pa + bi * sab + i0 * kp;
  __global const char *b = pb + bi * sbb + j0 * kp;
  uint4 acc[QG_W][QG_W];
  for (int r = 0; r < QG_W; r++)
    for (int c = 0; c < QG_W; c++) acc[r][c] = 0;
  for (long p = 0; p < kp; p += QG_K) {
    AT16 av[QG_W];
    BT16 bv[QG_W];
    for (int r = 0; r < QG_W; r++) av[r] = AS_AT16(vload16(0, a + r * kp + p));
    for (int c = 0; c < QG_W; c++) bv[c] = AS_BT16(vload16(0, b + c * kp + p));
    for (int r = 0; r < QG_W; r++)
      for (int c = 0; c < QG_W; c++)
        acc[r][c] += as_uint4(dot16(av[r], bv[c])); /* uint: wraps modulo 2^32 */
  }
  __global const float *sa = BP_PTR(const float, sab_buf, sao);
  __global const float *sbp = BP_PTR(const float, sbb_buf, sbo);
  __global uchar *c = cb + co;
  for (int r = 0; r < QG_W; r++) {
    long i = i0 + r;
    if (i >= m) break;
    float si = has.x ? sa[i * sas] : 1.0f;
    for (int q = 0; q < QG_W; q++) {
      long j = j0 + q;
      if (j >= n) break;
      uint4 v = acc[r][q];
      float sj = has.y ? sbp[j * sbs] : 1.0f;
      qg_store(c, bi * csb + i * csm + j * csn, v.x + v.y + v.z + v.w, si, sj, out_scale);
    }
  }
}
#ifdef FA
/* 16 fp8 codes of one panel row as f32 (mbits 3: e4m3, 2: e5m2); the
 * panels' zero padding decodes to +0. */
inline float16 fp8x16(uchar16 q, int mbits) {
  float v[16];
  uchar b[16];
  vstore16(q, 0, b);
  for (int l = 0; l < 16; l++) v[l] = bp_fp8_decode(b[l], mbits);
  return vload16(0, v);
}

/* The fp8 GEMM on qpack's panels: c = (float)acc * sa * sb rounded once
 * to c's dtype (f32, f16, bf16), acc the f32 sum of the products. */
__kernel __attribute__((reqd_work_group_size(QG_T, QG_T, 1))) void
qgemm_fp8(__global const uchar *pa, __global const uchar *pb, long kp, long sab, long sbb,
          __global uchar *cb, ulong co, long m, long n, long csb, long csm, long csn,
          __global const uchar *sab_buf, ulong sao, long sas, __global const uchar *sbb_buf,
          ulong sbo, long sbs, int2 has, float out_scale) {
  long j0 = get_global_id(0) * QG_W, i0 = get_global_id(1) * QG_W, bi = get_global_id(2);
  __global const uchar *a = pa + bi * sab + i0 * kp;
  __global const uchar *b = pb + bi * sbb + j0 * kp;
  float16 acc[QG_W][QG_W];
  for (int r = 0; r < QG_W; r++)
    for (int c = 0; c < QG_W; c++) acc[r][c] = 0.0f;
  for (long p = 0; p < kp; p += QG_K) {
    float16 av[QG_W], bv[QG_W];
    for (int r = 0; r < QG_W; r++) av[r] = fp8x16(vload16(0, a + r * kp + p), FA);
    for (int c = 0; c < QG_W; c++) bv[c] = fp8x16(vload16(0, b + c * kp + p), FB);
    for (int r = 0; r < QG_W; r++)
      for (int c = 0; c < QG_W; c++) acc[r][c] = fma(av[r], bv[c], acc[r][c]); /* exact products */
  }
  (void)out_scale; /* ignored for fp8 (bp_qgemm_args_t) */
  __global const float *sa = BP_PTR(const float, sab_buf, sao);
  __global const float *sbp = BP_PTR(const float, sbb_buf, sbo);
  __global BP_CAT(T_, CDT) *c = BP_PTR(BP_CAT(T_, CDT), cb, co);
  for (int r = 0; r < QG_W; r++) {
    long i = i0 + r;
    if (i >= m) break;
    float si = has.x ? sa[i * sas] : 1.0f;
    for (int q = 0; q < QG_W; q++) {
      long j = j0 + q;
      if (j >= n) break;
      float sj = has.y ? sbp[j * sbs] : 1.0f;
      float16 t = acc[r][q];
      float8 h8 = t.lo + t.hi;
      float4 h4 = h8.lo + h8.hi;
      float v = (h4.x + h4.y + h4.z + h4.w) * si;
      v = v * sj;
      BP_CAT(ST_, CDT)(c, bi * csb + i * csm + j * csn, v);
    }
  }
}
#endif /* FA */
#endif /* QG */

/* ---- casts to and from i8 and fp8 ---------------------------------------- */
#ifdef QCAST
#ifdef BP_HAS_F64
/* To fp8 with one rounding to nearest even from the double value, the
 * OCP non-saturating overflow rules (plugins/cpu/fp8.h). */
inline uchar bp_fp8_encode(double v, int mbits) {
  int ebits = 7 - mbits, bias = (1 << (ebits - 1)) - 1;
  uchar sign = signbit(v) ? 0x80 : 0;
  uchar nan = mbits == 3 ? 0x7F : 0x7E, inf = 0x7C;
  if (isnan(v)) return sign | nan;
  double a = fabs(v);
  if (mbits == 3 ? a > 464.0 : a >= 61440.0) return sign | (mbits == 3 ? nan : inf);
  int x;
  frexp(a, &x);
  int E = x - 1;
  if (a == 0.0 || E < 1 - bias) E = 1 - bias;
  double q = rint(ldexp(a, mbits - E));
  int code = (E - (1 - bias)) * (1 << mbits) + (int)q;
  return (uchar)(sign | code);
}

/* BP_CAST_SATURATE: what overflows (infinities included) gives the
 * largest finite value with its sign; NaN stays NaN. */
inline uchar bp_fp8_encode_sat(double v, int mbits) {
  uchar code = bp_fp8_encode(v, mbits);
  bool over = !isnan(v) && (mbits == 3 ? (code & 0x7F) == 0x7F : (code & 0x7C) == 0x7C);
  return over ? (uchar)((code & 0x80) | (mbits == 3 ? 0x7E : 0x7B)) : code;
}
#endif

#define T_7 char
#define A_7 int
#define LD_7(p, i) ((int)(p)[i])
#define T_8 uchar
#define A_8 float
#define LD_8(p, i) bp_fp8_decode((p)[i], 3)
#define T_9 uchar
#define A_9 float
#define LD_9(p, i) bp_fp8_decode((p)[i], 2)
#define QC_SAT_4(v) convert_int_sat(v)
#define QC_SAT_5(v) convert_long_sat(v)
#define QC_SAT_6(v) convert_uchar_sat(v)
#define QC_SATR_4(v) convert_int_sat_rte(v)
#define QC_SATR_5(v) convert_long_sat_rte(v)
#define QC_SATR_6(v) convert_uchar_sat_rte(v)

#define SRC_INT (SRC == 4 || SRC == 5 || SRC == 6 || SRC == 7)

__kernel void qcast(__global const uchar *xb, ulong xo, __global uchar *yb, ulong yo, int rank,
                    long n, long8 shape8, long8 xs8, long8 ys8, int sat) {
  long shape[8], xs[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(xs8, xs);
  BP_UNPACK8(ys8, ys);
  __global const BP_CAT(T_, SRC) *x = BP_PTR(const BP_CAT(T_, SRC), xb, xo);
  __global BP_CAT(T_, DST) *y = BP_PTR(BP_CAT(T_, DST), yb, yo);
  for (long e = get_global_id(0); e < n; e += get_global_size(0)) {
    long ox, oy;
    bp_offsets2(e, rank, shape, xs, ys, &ox, &oy);
    /* Sources 7-9 hold values every other type represents exactly in float
     * (or int); targets 8-9 round once from the exact double value. */
#if DST == 8 || DST == 9
    double v = (double)BP_CAT(LD_, SRC)(x, ox);
    y[oy] = sat ? bp_fp8_encode_sat(v, DST == 8 ? 3 : 2) : bp_fp8_encode(v, DST == 8 ? 3 : 2);
#elif DST == 7 && SRC_INT
    y[oy] = convert_char_sat(BP_CAT(LD_, SRC)(x, ox));
#elif DST == 7
    { /* floats: round half to even, saturate, NaN gives 0 */
      BP_CAT(A_, SRC) v = BP_CAT(LD_, SRC)(x, ox);
      y[oy] = isnan(v) ? (char)0 : convert_char_sat_rte(v);
    }
#elif DST == 4 || DST == 5 || DST == 6
#if SRC == 7
    y[oy] = BP_CAT(QC_SAT_, DST)(LD_7(x, ox)); /* i8 to a wider integer */
#else
    { /* fp8 values: NaN gives 0, infinities saturate */
      float v = BP_CAT(LD_, SRC)(x, ox);
      y[oy] = BP_CAT(QC_SATR_, DST)(isnan(v) ? 0.0f : v);
    }
#endif
#elif DST == 1
    { /* exact, but NaN as the CPU's f16 NaN: vstore_half may keep payload */
      float v = (float)BP_CAT(LD_, SRC)(x, ox);
      if (isnan(v))
        ((__global ushort *)y)[oy] = (ushort)0x7e00;
      else
        ST_1(y, oy, v);
    }
#else
    BP_CAT(ST_, DST)(y, oy, (float)BP_CAT(LD_, SRC)(x, ox)); /* exact */
#endif
  }
}
#endif /* QCAST */
