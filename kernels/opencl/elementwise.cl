/*
 * elementwise.cl — unary and binary ops over strided tensors (-DDT=code).
 * The op is a kernel argument, not a build option, so one program per dtype
 * serves every op (PoCL compiles slowly; fewer programs start faster).
 * Broadcasting is stride 0. Op codes are bp_unary_op_t / bp_binary_op_t;
 * bp_unary, bp_gelu_tanh and bp_binary are common.cl's (model.cl and
 * gemm.cl's epilogue use them too).
 */
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
