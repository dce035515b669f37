// wgreduce.glsl — workgroup-wide combination through shared memory, for
// kernels with local_size_x = WG (a power of two).
shared float red_v[WG];
shared int red_i[WG];

// op: 0 sum, 1 max (NaN-propagating), 2 min (NaN-propagating), 3 product
float bp_combine(int op, float a, float b) {
  if (op == 0) return a + b;
  if (op == 3) return a * b;
  if (isnan(a) || isnan(b)) return BP_NAN;
  return op == 1 ? max(a, b) : min(a, b);
}

// Combines every invocation's v; all invocations get the result.
float wg_reduce(int op, float v) {
  int t = int(gl_LocalInvocationID.x);
  red_v[t] = v;
  barrier();
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red_v[t] = bp_combine(op, red_v[t], red_v[t + s]);
    barrier();
  }
  float r = red_v[0];
  barrier();
  return r;
}

