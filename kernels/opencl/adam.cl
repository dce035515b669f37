/*
 * adam.cl — one fused Adam / AdamW step over one parameter tensor
 * (-DDT=code), PyTorch's formula: AdamW decays p by lr * wd first, Adam adds
 * wd * p to the gradient; m and v are the biased moments; the update is
 * lr * (m / bc1) / (sqrt(v / bc2) + eps). Math in f32 (f64 for f64).
 * The four tensors share a shape; strides travel as long8 like elementwise.
 */
__kernel void adam(__global uchar *pb, ulong po, __global const uchar *gb,
                   ulong go, __global uchar *mb, ulong mo, __global uchar *vb,
                   ulong vo, int rank, long n, long8 shape8, long8 ps8,
                   long8 gs8, long8 ms8, long8 vs8, ACC lr, ACC beta1,
                   ACC beta2, ACC eps, ACC wd, ACC bc1, ACC bc2, int adamw) {
  long shape[8], ps[8], gs[8], ms[8], vs[8];
  BP_UNPACK8(shape8, shape);
  BP_UNPACK8(ps8, ps);
  BP_UNPACK8(gs8, gs);
  BP_UNPACK8(ms8, ms);
  BP_UNPACK8(vs8, vs);
  __global T *P = BP_PTR(T, pb, po);
  __global const T *G = BP_PTR(const T, gb, go);
  __global T *M = BP_PTR(T, mb, mo);
  __global T *V = BP_PTR(T, vb, vo);
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    long op, og, om, ov, r = i;
    op = og = om = ov = 0;
    for (int d = rank - 1; d >= 0; d--) {
      long k = r % shape[d];
      r /= shape[d];
      op += k * ps[d];
      og += k * gs[d];
      om += k * ms[d];
      ov += k * vs[d];
    }
    ACC p = LD(P, op), g = LD(G, og), m = LD(M, om), v = LD(V, ov);
    if (adamw)
      p -= lr * wd * p;
    else
      g += wd * p;
    m = beta1 * m + ((ACC)1 - beta1) * g;
    v = beta2 * v + ((ACC)1 - beta2) * g * g;
    p -= lr * (m / bc1) / (sqrt(v / bc2) + eps);
    ST(P, op, p);
    ST(M, om, m);
    ST(V, ov, v);
  }
}
