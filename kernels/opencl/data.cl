/*
 * data.cl — fill, copy (-DES=element size in bytes) and cast (-DSRC=code
 * -DDST=code). Fill and copy move bits, so one program per element size
 * serves every dtype; the host converts fill values.
 * Cast rounds to nearest even, maps NaN to 0 for integers and saturates.
 */
#ifdef ES
#if ES == 1
#define E uchar
#elif ES == 2
#define E ushort
#elif ES == 4
#define E uint
#else
#define E ulong
#endif

__kernel void fill(__global uchar *yb, ulong yo, int rank, long n,
                   long8 shape8, long8 ys8, ulong bits) {
  long shape[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(ys8, ys);
  __global E *y = BP_PTR(E, yb, yo);
  E v = (E)bits;
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long oy, unused;
    bp_offsets2(i, rank, shape, ys, ys, &oy, &unused);
    y[oy] = v;
  }
}

__kernel void copy(__global const uchar *xb, ulong xo, __global uchar *yb,
                   ulong yo, int rank, long n, long8 shape8, long8 xs8,
                   long8 ys8) {
  long shape[8], xs[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(xs8, xs);
  BP_UNPACK8(ys8, ys);
  __global const E *x = BP_PTR(const E, xb, xo);
  __global E *y = BP_PTR(E, yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long ox, oy;
    bp_offsets2(i, rank, shape, xs, ys, &ox, &oy);
    y[oy] = x[ox];
  }
}
#endif /* ES */

#ifdef SRC
#define DST_INT (DST >= 4)
/* Saturating, NaN-to-0, round-to-nearest-even stores into integer types. */
#define SAT_4(v) convert_int_sat_rte(v)
#define SAT_5(v) convert_long_sat_rte(v)
#define SAT_6(v) convert_uchar_sat_rte(v)

__kernel void cast(__global const uchar *xb, ulong xo, __global uchar *yb,
                   ulong yo, int rank, long n, long8 shape8, long8 xs8,
                   long8 ys8) {
  long shape[8], xs[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(xs8, xs);
  BP_UNPACK8(ys8, ys);
  __global const BP_CAT(T_, SRC) *x = BP_PTR(const BP_CAT(T_, SRC), xb, xo);
  __global BP_CAT(T_, DST) *y = BP_PTR(BP_CAT(T_, DST), yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long ox, oy;
    bp_offsets2(i, rank, shape, xs, ys, &ox, &oy);
#if DST_INT
    /* Integers saturate; floats round half to even, NaN gives 0. */
    y[oy] = BP_CAT(SAT_, DST)(BP_CAT(LD_, SRC)(x, ox));
#elif DST == 3 || DST == 0
    /* One correctly rounded conversion straight from the source type. */
    BP_CAT(ST_, DST)(y, oy, BP_CAT(convert_, BP_CAT(T_, DST))(BP_CAT(LD_, SRC)(x, ox)));
#elif SRC == 3
    BP_CAT(ST_, DST)(y, oy, bp_d2f_odd(LD_3(x, ox)));
#elif SRC == 4 || SRC == 5
    BP_CAT(ST_, DST)(y, oy, bp_l2f_odd((long)BP_CAT(LD_, SRC)(x, ox)));
#else
    BP_CAT(ST_, DST)(y, oy, (float)BP_CAT(LD_, SRC)(x, ox)); /* exact */
#endif
  }
}
#endif /* SRC */
