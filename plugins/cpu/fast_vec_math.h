/*
 * fast_vec_math.h — vector exp, log, tanh and sigmoid in the ops of
 * fast_vec_isa.h, for fast_vec_kern.h. Each stays within a few ulp of the
 * correctly rounded f32 result over the whole range (checked against the
 * double reference by test/test_cpu_fast_ops.c), handles denormal results
 * and inputs, and propagates NaN; max / min operand order below is chosen
 * so that a NaN input survives (the instructions return the second operand
 * when either is NaN).
 */

/* e^x before the final scale: x = n ln2 + r (Cody-Waite), degree-7 Taylor
 * for e^r on [-ln2/2, ln2/2]; the result is that times 2^n. */
static inline V vexp_parts(V x, V *n) {
  *n = vround(vmul(x, vset1(1.44269504088896341f)));
  V r = vfnma(*n, vset1(0.693145751953125f), x);
  r = vfnma(*n, vset1(1.428606765330187e-06f), r);
  V p = vset1(1.0f / 5040);
  p = vfma(p, r, vset1(1.0f / 720));
  p = vfma(p, r, vset1(1.0f / 120));
  p = vfma(p, r, vset1(1.0f / 24));
  p = vfma(p, r, vset1(1.0f / 6));
  p = vfma(p, r, vset1(0.5f));
  p = vfma(p, r, vset1(1.0f));
  return vfma(p, r, vset1(1.0f));
}

/* e^x over the whole range: overflow gives inf, underflow 0 through the
 * denormals (the exact scale by 2^n). */
static inline V vexp(V x) {
  x = vmin(vset1(89.0f), vmax(vset1(-104.0f), x)); /* NaN stays */
  V n, p = vexp_parts(x, &n);
  return vscale2(p, n);
}

/* e^x for x <= 88 with a one-multiply scale: the same value as vexp down
 * to 2^-126; below that (AVX2) the result may flush to 0, an absolute
 * error under 1.2e-38. For softmax terms (x - max <= 0, divided by a sum
 * >= 1) and tanh, where that error is far below an ulp of the output. */
static inline V vexp_lo(V x) {
  x = vmax(vset1(-104.0f), x); /* NaN stays */
  V n, p = vexp_parts(x, &n);
  return vscale2_norm(p, n);
}

#ifdef FAST_VEC_512
static inline V vgetmant_exp(V a, V *e) {
  *e = vgetexp(a);
  return vgetmant(a);
}
#endif

/* ln x: x = m 2^e with m in [sqrt(1/2), sqrt(2)), Cephes' logf polynomial
 * for ln(1 + f); x < 0 gives NaN, 0 gives -inf, inf stays inf. */
static inline V vlog(V x) {
  V e, m = vgetmant_exp(x, &e);
  M big = VCMP(m, vset1(1.41421356237f), _CMP_GT_OQ);
  m = vsel(big, m, vmul(m, vset1(0.5f)));
  e = vsel(big, e, vadd(e, vset1(1.0f)));
  V f = vsub(m, vset1(1.0f)), z = vmul(f, f);
  V p = vset1(7.0376836292e-2f);
  p = vfma(p, f, vset1(-1.1514610310e-1f));
  p = vfma(p, f, vset1(1.1676998740e-1f));
  p = vfma(p, f, vset1(-1.2420140846e-1f));
  p = vfma(p, f, vset1(1.4249322787e-1f));
  p = vfma(p, f, vset1(-1.6668057665e-1f));
  p = vfma(p, f, vset1(2.0000714765e-1f));
  p = vfma(p, f, vset1(-2.4999993993e-1f));
  p = vfma(p, f, vset1(3.3333331174e-1f));
  V y = vmul(vmul(p, z), f);
  y = vfma(e, vset1(-2.12194440e-4f), y);
  y = vfnma(z, vset1(0.5f), y);
  y = vadd(f, y);
  y = vfma(e, vset1(0.693359375f), y);
  y = vsel(VCMP(x, vset1(INFINITY), _CMP_EQ_OQ), y, x);
  y = vsel(VCMP(x, vset1(0.0f), _CMP_EQ_OQ), y, vset1(-INFINITY));
  y = vsel(VCMP(x, vset1(0.0f), _CMP_LT_OQ), y, vset1(NAN));
  return vsel(VCMP(x, x, _CMP_UNORD_Q), y, x);
}

static inline V vabs(V x) { return vxor(x, vand(x, vset1(-0.0f))); }

/* tanh: Cephes' odd polynomial below 0.625, else 1 - 2 / (e^{2|x|} + 1)
 * with x's sign. */
static inline V vtanh(V x) {
  V sign = vand(x, vset1(-0.0f)), a = vxor(x, sign);
  V z = vmul(x, x);
  V p = vset1(-5.70498872745e-3f);
  p = vfma(p, z, vset1(2.06390887954e-2f));
  p = vfma(p, z, vset1(-5.37397155531e-2f));
  p = vfma(p, z, vset1(1.33314422036e-1f));
  p = vfma(p, z, vset1(-3.33332819422e-1f));
  V small = vfma(vmul(p, z), x, x);
  /* e^{2|x|} is capped at e^88: tanh is 1 in f32 long before */
  V e2 = vexp_lo(vmin(vset1(88.0f), vadd(a, a)));
  V big = vsub(vset1(1.0f), vdiv(vset1(2.0f), vadd(e2, vset1(1.0f))));
  big = vor(big, sign);
  return vsel(VCMP(a, vset1(0.625f), _CMP_LT_OQ), big, small);
}

/* 1 / (1 + e^-x), as e^-|x| / (1 + e^-|x|) for x < 0 so that tiny
 * results keep their precision. */
static inline V vsigmoid(V x) {
  V e = vexp(vsub(vset1(0.0f), vabs(x)));
  V s = vdiv(vset1(1.0f), vadd(vset1(1.0f), e));
  return vsel(VCMP(x, vset1(0.0f), _CMP_LT_OQ), s, vmul(e, s));
}

/* x * sigmoid(x). Below -80, e^x heads into the denormals and would lose
 * its precision before the multiply: there it is (x e^{x/2}) e^{x/2} (1 +
 * e^x is 1 to working precision), so only the last product rounds into
 * the denormal range. */
static inline V vsilu(V x) {
  V r = vmul(x, vsigmoid(x));
  V h = vexp(vmul(x, vset1(0.5f)));
  V tail = vmul(vmul(x, h), h);
  return vsel(VCMP(x, vset1(-80.0f), _CMP_LT_OQ), r, tail);
}
