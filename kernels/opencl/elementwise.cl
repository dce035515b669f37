/*
 * elementwise.cl — unary and binary ops over strided tensors (-DDT=code).
 * The op is a kernel argument, not a build option, so one program per dtype
 * serves every op (PoCL compiles slowly; fewer programs start faster).
 * Broadcasting is stride 0. Op codes are bp_unary_op_t / bp_binary_op_t;
 * bp_gelu_tanh and bp_binary are common.cl's (model.cl uses them too).
 */
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

__kernel void unary(__global const uchar *xb, ulong xo, __global uchar *yb,
                    ulong yo, int op, int rank, long n, long8 shape8,
                    long8 xs8, long8 ys8) {
  long shape[8], xs[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(xs8, xs);
  BP_UNPACK8(ys8, ys);
  __global const T *x = BP_PTR(const T, xb, xo);
  __global T *y = BP_PTR(T, yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long ox, oy;
    bp_offsets2(i, rank, shape, xs, ys, &ox, &oy);
    ST(y, oy, bp_unary(op, LD(x, ox)));
  }
}

__kernel void binary(__global const uchar *ab, ulong ao,
                     __global const uchar *bb, ulong bo, __global uchar *yb,
                     ulong yo, int op, int rank, long n, long8 shape8,
                     long8 as8, long8 bs8, long8 ys8) {
  long shape[8], as[8], bs[8], ys[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(as8, as);
  BP_UNPACK8(bs8, bs);
  BP_UNPACK8(ys8, ys);
  __global const T *a = BP_PTR(const T, ab, ao);
  __global const T *b = BP_PTR(const T, bb, bo);
  __global T *y = BP_PTR(T, yb, yo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long oa, ob, oy;
    bp_offsets3(i, rank, shape, as, bs, ys, &oa, &ob, &oy);
    ST(y, oy, bp_binary(op, LD(a, oa), LD(b, ob)));
  }
}
