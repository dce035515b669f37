/*
 * common.cl — prepended to every backplane OpenCL program.
 *
 * Dtype codes are bp_dtype_t's values. For each code c: T_c is the storage
 * type, A_c the accumulation type (f32 for f16/bf16), LD_c(p, i) loads
 * element i as A_c and ST_c(p, i, v) stores v rounding to nearest even.
 * Half values go through vload_half/vstore_half, which OpenCL 1.2 has
 * without cl_khr_fp16; bf16 is ushort with explicit conversions.
 * A program built with -DDT=c gets the generic T, ACC, LD and ST.
 */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define BP_HAS_F64 1
#endif

#define BP_CAT_(a, b) a##b
#define BP_CAT(a, b) BP_CAT_(a, b)

inline float bp_bf2f(ushort h) { return as_float((uint)h << 16); }
inline ushort bp_f2bf(float f) {
  uint u = as_uint(f);
  if (isnan(f))
    return (ushort)((u >> 16) | 0x40u); /* keep NaN a quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);     /* round to nearest even */
  return (ushort)(u >> 16);
}

/* Round-to-odd narrowing to float: a later round-to-nearest-even to f16 or
 * bf16 (fewer than 22 significand bits) is then correctly rounded, with no
 * double-rounding error. */
inline float bp_odd(float f, bool inexact) {
  return inexact ? as_float(as_uint(f) | 1u) : f;
}
inline float bp_l2f_odd(long v) {
  float f = convert_float_rtz(v);
  return bp_odd(f, (long)f != v);
}
#ifdef BP_HAS_F64
inline float bp_d2f_odd(double d) {
  float f = convert_float_rtz(d);
  return bp_odd(f, !isnan(d) && (double)f != d);
}
#endif

#define T_0 float
#define A_0 float
#define LD_0(p, i) ((p)[i])
#define ST_0(p, i, v) ((p)[i] = (float)(v))
#define T_1 half
#define A_1 float
#define LD_1(p, i) vload_half((i), (p))
#define ST_1(p, i, v) vstore_half_rte((v), (i), (p))
#define T_2 ushort
#define A_2 float
#define LD_2(p, i) bp_bf2f((p)[i])
#define ST_2(p, i, v) ((p)[i] = bp_f2bf((float)(v)))
#define T_3 double
#define A_3 double
#define LD_3(p, i) ((p)[i])
#define ST_3(p, i, v) ((p)[i] = (double)(v))
#define T_4 int
#define A_4 int
#define LD_4(p, i) ((p)[i])
#define ST_4(p, i, v) ((p)[i] = (v))
#define T_5 long
#define A_5 long
#define LD_5(p, i) ((p)[i])
#define ST_5(p, i, v) ((p)[i] = (v))
#define T_6 uchar
#define A_6 int
#define LD_6(p, i) ((int)(p)[i])
#define ST_6(p, i, v) ((p)[i] = (v))

#ifdef DT
#define T BP_CAT(T_, DT)
#define ACC BP_CAT(A_, DT)
#define LD(p, i) BP_CAT(LD_, DT)(p, i)
#define ST(p, i, v) BP_CAT(ST_, DT)(p, i, v)
#endif

/* A typed pointer from a buffer and a byte offset. */
#define BP_PTR(type, base, off) ((__global type *)((base) + (off)))

/* Shape and strides of up to 8 dims travel as long8 (outermost first). */
#define BP_UNPACK8(v, a) vstore8((v), 0, (a))

/* Element offsets of flat index i in two tensors of the same shape. */
inline void bp_offsets2(long i, int rank, const long *shape, const long *sa,
                        const long *sb, long *oa, long *ob) {
  if (rank == 1) {
    *oa = i * sa[0];
    *ob = i * sb[0];
    return;
  }
  long a = 0, b = 0;
  for (int d = rank - 1; d >= 0; d--) {
    long c = i % shape[d];
    i /= shape[d];
    a += c * sa[d];
    b += c * sb[d];
  }
  *oa = a;
  *ob = b;
}

inline void bp_offsets3(long i, int rank, const long *shape, const long *sa,
                        const long *sb, const long *sc, long *oa, long *ob,
                        long *oc) {
  if (rank == 1) {
    *oa = i * sa[0];
    *ob = i * sb[0];
    *oc = i * sc[0];
    return;
  }
  long a = 0, b = 0, c = 0;
  for (int d = rank - 1; d >= 0; d--) {
    long k = i % shape[d];
    i /= shape[d];
    a += k * sa[d];
    b += k * sb[d];
    c += k * sc[d];
  }
  *oa = a;
  *ob = b;
  *oc = c;
}

/* ---- work-group reductions (BP_WG items, a __local scratch of BP_WG) ----
 * Every item of the group must call these (they contain barriers). */
#define BP_WG 64
#ifdef DT
inline ACC bp_wg_sum(ACC v, __local ACC *s) {
  int t = get_local_id(0);
  s[t] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = BP_WG / 2; w > 0; w >>= 1) {
    if (t < w)
      s[t] += s[t + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  ACC r = s[0];
  barrier(CLK_LOCAL_MEM_FENCE); /* s is reused by the next call */
  return r;
}

/* max that propagates NaN (a + b is NaN when either is). */
inline ACC bp_max_nan(ACC a, ACC b) {
  return (isnan(a) || isnan(b)) ? a + b : fmax(a, b);
}
inline ACC bp_min_nan(ACC a, ACC b) {
  return (isnan(a) || isnan(b)) ? a + b : fmin(a, b);
}

/* The activation and binary math that elementwise.cl's unary/binary,
 * model.cl's binary_scalar/glu and gemm.cl's epilogue must agree on,
 * written once. */
/* Tanh-approximate GELU, 0.5 x (1 + tanh(u)), as x / (1 + e^(-2u)): the
 * same function without 1 + tanh(u)'s cancellation for negative x, and
 * NaN at -inf as the formula gives (PoCL's tanh(-inf) is not -1). */
inline ACC bp_gelu_tanh(ACC x) {
  ACC u = (ACC)0.7978845608028654 * (x + (ACC)0.044715 * x * x * x);
  return x / ((ACC)1 + exp((ACC)-2 * u));
}

/* bp_unary_op_t's codes: elementwise.cl's unary and gemm.cl's epilogue
 * (float dtypes only: the math builtins take no integer arguments). */
#if DT <= 3
inline ACC bp_unary(int op, ACC x) {
  switch (op) {
  case 0: return -x;
  case 1: return fabs(x);
  case 2: return exp(x);
  case 3: return log(x);
  case 4: return sqrt(x);
  case 5: return rsqrt(x);
  case 6: return x > (ACC)0 ? x : (isnan(x) ? x : (ACC)0);
  case 7: return x * (ACC)0.5 * ((ACC)1 + erf(x * (ACC)M_SQRT1_2));
  case 8: return x / ((ACC)1 + exp(-x));
  case 9: return (ACC)1 / ((ACC)1 + exp(-x));
  case 10: return tanh(x);
  case 11: return sin(x);
  case 12: return cos(x);
  case 13: return bp_gelu_tanh(x);
  default: return x;
  }
}
#endif

/* bp_binary_op_t's codes. */
inline ACC bp_binary(int op, ACC a, ACC b) {
  switch (op) {
  case 0: return a + b;
  case 1: return a - b;
  case 2: return a * b;
  case 3: return a / b;
  case 4: return (isnan(a) || isnan(b)) ? a + b : fmax(a, b);
  case 5: return (isnan(a) || isnan(b)) ? a + b : fmin(a, b);
  case 6: return pow(a, b);
  default: return a;
  }
}

inline ACC bp_wg_max(ACC v, __local ACC *s) {
  int t = get_local_id(0);
  s[t] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = BP_WG / 2; w > 0; w >>= 1) {
    if (t < w)
      s[t] = bp_max_nan(s[t], s[t + w]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  ACC r = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}
#endif

/* Row kernels (reduce, softmax, norms) walk nrows lines: row r starts at
 * the offsets bp_offsets2 gives over the collapsed shape of the other
 * dims; element j of a line is j * line stride further. */
#define BP_ROW_ARGS                                                            \
  int rank, long nrows, long8 shape8, long8 xs8, long8 ys8, long len,          \
      long sxl, long syl
#define BP_ROW_SETUP(row, ox, oy)                                              \
  long shape[8], xs[8], ys[8];                                                 \
  BP_UNPACK8(shape8, shape);                                                   \
  BP_UNPACK8(xs8, xs);                                                         \
  BP_UNPACK8(ys8, ys);                                                         \
  long ox, oy;                                                                 \
  bp_offsets2((row), rank, shape, xs, ys, &ox, &oy)
