/*
 * model.cl — the model ops of ABI 1.5 (built per dtype): gather, arange, binary
 * with a scalar operand, gated linear units and rotary position embedding.
 * Shapes and strides travel as long8 like elementwise.cl's; gather moves
 * raw elements (any dtype), the others compute in ACC (f32 for f16/bf16).
 * Built with -DMDT=code for every dtype, and -DDT=code (common.cl's typed
 * helpers, float dtypes only) for the float ones.
 * RoPE's angle and arange's values are computed in double where the device
 * has it: an f32 angle of a late position is off by more than f32 outputs
 * may be.
 */

/* Raw element of MDT's size, for gather (no value is looked at). */
#if MDT == 1 || MDT == 2
#define EL ushort
#elif MDT == 3 || MDT == 5
#define EL ulong
#elif MDT == 6
#define EL uchar
#else
#define EL uint
#endif

#ifdef BP_HAS_F64
#define WIDE double
#else
#define WIDE float
#endif

inline long bp_index_at(__global const uchar *ib, ulong io, int idx64,
                        long off) {
  return idx64 ? BP_PTR(const long, ib, io)[off]
               : (long)BP_PTR(const int, ib, io)[off];
}

/* y[oy] = table[ot + k * axis_stride], k = indices[oi]; zeros outside
 * [0, axis_len). ts is 0 along the index dims of y, is 0 along the others. */
__kernel void gather(__global const uchar *tb, ulong to,
                     __global const uchar *ib, ulong io, __global uchar *yb,
                     ulong yo, int idx64, long axis_len, long axis_stride,
                     int rank, long n, long8 shape8, long8 ys8, long8 ts8,
                     long8 is8) {
  long shape[8], ys[8], ts[8], is[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(ys8, ys);
  BP_UNPACK8(ts8, ts);
  BP_UNPACK8(is8, is);
  __global const EL *t = BP_PTR(const EL, tb, to);
  __global EL *y = BP_PTR(EL, yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long oy, ot, oi;
    bp_offsets3(i, rank, shape, ys, ts, is, &oy, &ot, &oi);
    long k = bp_index_at(ib, io, idx64, oi);
    y[oy] = (k >= 0 && k < axis_len) ? t[ot + k * axis_stride] : (EL)0;
  }
}

/* ---- arange: value v of element i, converted as bp_cast converts ------- */
#define MT BP_CAT(T_, MDT)
#if MDT == 4 || MDT == 5 || MDT == 6
inline void bp_store_wide(__global MT *y, long o, WIDE v) {
#if MDT == 4
  y[o] = isnan(v) ? 0 : v >= (WIDE)2147483647 ? INT_MAX
       : v <= (WIDE)-2147483648.0 ? INT_MIN : (int)rint(v);
#elif MDT == 5
  y[o] = isnan(v) ? 0 : v >= (WIDE)9.2233720368547758e18 ? LONG_MAX
       : v <= (WIDE)-9.2233720368547758e18 ? LONG_MIN : (long)rint(v);
#else
  y[o] = isnan(v) ? 0 : v >= (WIDE)255 ? 255 : v <= (WIDE)0 ? 0
       : (uchar)rint(v);
#endif
}
#elif (MDT == 1 || MDT == 2) && defined(BP_HAS_F64)
/* Through float rounded to odd: one correct rounding to f16 / bf16. */
inline void bp_store_wide(__global T *y, long o, WIDE v) {
  ST(y, o, bp_d2f_odd(v));
}
#else
inline void bp_store_wide(__global T *y, long o, WIDE v) { ST(y, o, v); }
#endif

__kernel void arange(__global uchar *yb, ulong yo, WIDE start, WIDE step,
                     int rank, long n, long8 shape8, long8 ys8) {
  long shape[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(ys8, ys);
  __global MT *y = BP_PTR(MT, yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long oy, unused;
    bp_offsets2(i, rank, shape, ys, ys, &oy, &unused);
    bp_store_wide(y, oy, start + (WIDE)i * step);
  }
}

#ifdef DT /* the float ops */
/* scalar: already a's dtype's value (the host rounded it). */
__kernel void binary_scalar(__global const uchar *ab, ulong ao,
                            __global uchar *yb, ulong yo, int op, int first,
                            ACC scalar, int rank, long n, long8 shape8,
                            long8 as8, long8 ys8) {
  long shape[8], as[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(as8, as);
  BP_UNPACK8(ys8, ys);
  __global const T *a = BP_PTR(const T, ab, ao);
  __global T *y = BP_PTR(T, yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long oa, oy;
    bp_offsets2(i, rank, shape, as, ys, &oa, &oy);
    ACC v = LD(a, oa);
    ST(y, oy, first ? bp_binary(op, scalar, v) : bp_binary(op, v, scalar));
  }
}

/* The gate's activation, bp_glu_kind_t. */
inline ACC bp_glu_act(int kind, ACC x) {
  switch (kind) {
  case 0: return x / ((ACC)1 + exp(-x));
  case 1: return x * (ACC)0.5 * ((ACC)1 + erf(x * (ACC)M_SQRT1_2));
  case 2: return bp_gelu_tanh(x);
  default: return x > (ACC)0 ? x : (isnan(x) ? x : (ACC)0);
  }
}

__kernel void glu(__global const uchar *gb, ulong go, __global const uchar *ub,
                  ulong uo, __global uchar *yb, ulong yo, int kind, int rank,
                  long n, long8 shape8, long8 gs8, long8 us8, long8 ys8) {
  long shape[8], gs[8], us[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(gs8, gs);
  BP_UNPACK8(us8, us);
  BP_UNPACK8(ys8, ys);
  __global const T *g = BP_PTR(const T, gb, go);
  __global const T *u = BP_PTR(const T, ub, uo);
  __global T *y = BP_PTR(T, yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long og, ou, oy;
    bp_offsets3(i, rank, shape, gs, us, ys, &og, &ou, &oy);
    ST(y, oy, bp_glu_act(kind, LD(g, og)) * LD(u, ou));
  }
}

/* The rotation of pair j at position pos: the angle in WIDE (double where
 * the device has it), reduced modulo 2 pi there for the float dtypes so
 * that f32 sin and cos (cheaper than double ones, and as exact as an f32
 * output needs) see a small argument; f64 keeps double sin and cos.
 * l2theta = log2(theta_base), from the host. */
inline void bp_rope_angle(long pos, long j, int rotary_dim, WIDE l2theta, ACC *c, ACC *s) {
  WIDE ang = (WIDE)pos * exp2(-(WIDE)(2 * j) / (WIDE)rotary_dim * l2theta);
#if DT == 3
  *c = cos(ang);
  *s = sin(ang);
#else
  WIDE k = rint(ang * (WIDE)0.15915494309189535);
  float r = (float)((ang - k * (WIDE)6.283185307179586) - k * (WIDE)2.4492935982947064e-16);
  *s = sincos(r, c);
#endif
}

/* One item per rotating pair, or per copied feature past rotary_dim, of
 * each (b, s, h) row: a pair is read whole before it is written, so y may
 * be x. dims: batch, seq, heads, head_dim; pos: positions' two strides. */
__kernel void rope(__global const uchar *xb, ulong xo, __global uchar *yb,
                   ulong yo, __global const uchar *pb, ulong po, int has_pos,
                   int idx64, long2 ps, long pos_offset, int interleaved,
                   int rotary_dim, WIDE l2theta, long4 dims, long4 xs,
                   long4 ys) {
  const long hrd = rotary_dim / 2, per_row = hrd + dims.s3 - rotary_dim;
  const long n = dims.s0 * dims.s1 * dims.s2 * per_row;
  __global const T *x = BP_PTR(const T, xb, xo);
  __global T *y = BP_PTR(T, yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long j = i % per_row, r = i / per_row;
    long h = r % dims.s2, s = (r / dims.s2) % dims.s1,
         b = r / (dims.s2 * dims.s1);
    long bx = b * xs.s0 + s * xs.s1 + h * xs.s2;
    long by = b * ys.s0 + s * ys.s1 + h * ys.s2;
    if (j >= hrd) { /* past the rotary part: copied */
      long d = rotary_dim + (j - hrd);
      ST(y, by + d * ys.s3, LD(x, bx + d * xs.s3));
      continue;
    }
    long pos = has_pos ? bp_index_at(pb, po, idx64, b * ps.s0 + s * ps.s1)
                       : pos_offset + s;
    ACC c, sn;
    bp_rope_angle(pos, j, rotary_dim, l2theta, &c, &sn);
    long d1 = interleaved ? 2 * j : j, d2 = interleaved ? 2 * j + 1 : j + hrd;
    ACC x1 = LD(x, bx + d1 * xs.s3), x2 = LD(x, bx + d2 * xs.s3);
    ST(y, by + d1 * ys.s3, x1 * c - x2 * sn);
    ST(y, by + d2 * ys.s3, x1 * sn + x2 * c);
  }
}
#endif
