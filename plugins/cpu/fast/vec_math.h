/*
 * fast/vec_math.h — vector exp, log, tanh and sigmoid in the ops of
 * fast/vec_isa.h, for fast/vec_kern.h. Each stays within a few ulp of the
 * correctly rounded f32 result over the whole range (checked against the
 * double reference by test/test_cpu_fast_ops.c), handles denormal results
 * and inputs, and propagates NaN; max / min operand order below is chosen
 * so that a NaN input survives (the instructions return the second operand
 * when either is NaN).
 */

/* x log2(e) + this rounds to an integer n + 127 in the low mantissa bits
 * (1.5 * 2^23 + 127), so n comes out with one subtract and 2^n with one
 * shift, without the float-to-int conversion (AVX2). */
#define EXP_MAGIC 12583039.0f

/* (e^r - 1 - r) / r^2 for r in [-ln2/2, ln2/2] after the Cody-Waite
 * reduction x = n ln2 + r; *r_out gets r. A degree-4 polynomial fitted by
 * Remez exchange to e^r's relative error (3.1e-9, 0.05 ulp: one multiply-add
 * fewer than the degree-7 Taylor form it replaced, at the same accuracy). */
static inline V vexp_p(V x, V n, V *r_out) {
  V r = vfnma(n, vset1(0.693145751953125f), x);
  r = vfnma(n, vset1(1.428606765330187e-06f), r);
  V p = vset1(1.381461319e-03f);
  p = vfma(p, r, vset1(8.368709823e-03f));
  p = vfma(p, r, vset1(4.166838736e-02f));
  p = vfma(p, r, vset1(1.666652069e-01f));
  *r_out = r;
  return vfma(p, r, vset1(4.999999345e-01f));
}

/* e^r; the result is that times 2^n. */
static inline V vexp_poly(V x, V n) {
  V r, p = vexp_p(x, n, &r);
  return vfma(vfma(p, r, vset1(1.0f)), r, vset1(1.0f));
}

#ifdef CPU_FAST_VEC_512
/* e^x over the whole range: overflow gives inf, underflow 0 through the
 * denormals (scalef is the exact scale by 2^n). */
static inline V vexp(V x) {
  x = vmin(vset1(89.0f), vmax(vset1(-104.0f), x)); /* NaN stays */
  V n = vround(vmul(x, vset1(1.44269504088896341f)));
  return vscale2(vexp_poly(x, n), n);
}
/* e^x for x <= 88; here the same as vexp. */
static inline V vexp_lo(V x) { return vexp(x); }
/* Softmax terms: AVX-512 has the FMA throughput to keep vexp's accuracy. */
static inline V vexp_soft(V x) { return vexp(x); }
#else

/* e^x over the whole range: overflow gives inf, underflow 0 through the
 * denormals. 2^n is built from its bits when every lane's n is in
 * [-126, 127] (the same value: the scale is exact either way); the exact
 * two-step scale covers the rest. */
static inline V vexp(V x) {
  x = vmin(vset1(89.0f), vmax(vset1(-104.0f), x)); /* NaN stays */
  V t = vfma(x, vset1(1.44269504088896341f), vset1(EXP_MAGIC));
  V n = vsub(t, vset1(EXP_MAGIC)), p = vexp_poly(x, n);
  M out = mor(VCMP(n, vset1(-126.0f), _CMP_LT_OQ),
              VCMP(n, vset1(127.0f), _CMP_GT_OQ));
  if (many(out)) return vscale2(p, n);
  return vmul(p, vcast_f(_mm256_slli_epi32(vcast_i(t), 23)));
}

/* e^x for x <= 88 with a one-multiply scale: the same value as vexp down
 * to 2^-126; below that the result may flush to 0, an absolute error under
 * 1.2e-38. For tanh, where that error is far below an ulp of the output. */
static inline V vexp_lo(V x) {
  x = vmax(vset1(-88.0f), x); /* NaN stays; n >= -127, whose 2^n bits are 0 */
  V t = vfma(x, vset1(1.44269504088896341f), vset1(EXP_MAGIC));
  V p = vexp_poly(x, vsub(t, vset1(EXP_MAGIC)));
  return vmul(p, vcast_f(_mm256_slli_epi32(vcast_i(t), 23)));
}

/* e^x for softmax terms (x = score - max <= 0), where the exp is most of
 * the work and the op's tolerance is a few ulp: x = (8n + j) ln2/8 + r
 * with |r| <= ln2/16, e^x = 2^n * 2^(j/8) * e^r. 2^(j/8) comes from an
 * eight-entry table in one permute, 2^n joins it as an integer add to the
 * exponent, and so short an r needs only a degree-3 polynomial (fitted to
 * e^r's relative error, 2.8e-8): three multiply-adds where the ln2
 * reduction takes five, and six multiply-pipe ops in all instead of
 * eight. vexp_lo's range handling (x >= -88, so n >= -127) and a
 * one-constant reduction (r off by n * 1.9e-9): at most 3.2 ulp for x in
 * [-30, 0] and 5.6 ulp below (where the terms are under 1e-13 of the
 * largest). */
static inline V vexp_soft(V x) {
  x = vmax(vset1(-88.0f), x); /* NaN stays */
  /* t's low mantissa bits hold k = 8n + j (1.5 * 2^23 is a multiple of 8,
   * so the low three bits are j and the rest n, floor-divided) */
  V t = vfma(x, vset1(11.54156017303466796875f), vset1(12582912.0f));
  V r = vfnma(vsub(t, vset1(12582912.0f)), vset1(0.086643397808074951171875f), x);
  V p = vfma(vfma(vfma(vset1(1.666687727e-01f), r, vset1(5.000670552e-01f)), r,
                  vset1(1.0f)), r, vset1(1.0f));
  VI k = vcast_i(t);
  const VI frac = _mm256_setr_epi32(0x3f800000, 0x3f8b95c2, 0x3f9837f0, 0x3fa5fed7,
                                    0x3fb504f3, 0x3fc5672a, 0x3fd744fd, 0x3feac0c7);
  VI scale = _mm256_add_epi32(_mm256_permutevar8x32_epi32(frac, k),
                              _mm256_slli_epi32(_mm256_srli_epi32(k, 3), 23));
  return vmul(p, vcast_f(scale));
}
#endif

#ifdef CPU_FAST_VEC_512
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

/* tanh |x| = m / (m + 2) with m = e^{2|x|} - 1, x's sign put back. m is
 * 2^n (e^r - 1) + (2^n - 1), and e^r - 1 = r + r^2 p rounds once, so small
 * |x| keeps its relative precision without a second polynomial and a
 * blend: within 2.6 ulp of tanh over every f32 (a second polynomial for
 * small |x| is more precise, but costs more than those ulp are worth
 * here; docs/performance.md). 2|x| is capped at 20, where tanh
 * is 1 in f32. */
static inline V vtanh(V x) {
  V sign = vand(x, vset1(-0.0f)), a = vxor(x, sign);
  V y = vmin(vset1(20.0f), vadd(a, a)); /* NaN stays */
#ifdef CPU_FAST_VEC_512
  V n = vround(vmul(y, vset1(1.44269504088896341f)));
  V s2 = vscale2(vset1(1.0f), n);
#else
  V t = vfma(y, vset1(1.44269504088896341f), vset1(EXP_MAGIC));
  V n = vsub(t, vset1(EXP_MAGIC));
  V s2 = vcast_f(_mm256_slli_epi32(vcast_i(t), 23));
#endif
  V r, p = vexp_p(y, n, &r);
  V m = vfma(s2, vfma(vmul(r, r), p, r), vsub(s2, vset1(1.0f)));
  return vor(vdiv(m, vadd(m, vset1(2.0f))), sign);
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

/* Exact GELU, x Phi(x) = x (1 + erf(x / sqrt 2)) / 2, without the erf's
 * cancellation on the negative side. With s = x^2 / 2 (t^2 for t = x /
 * sqrt 2, exact as s + lo through an FMA):
 *  - s < 0.36: x / 2 + s Q(s), Q(s) = erf(t) / (t sqrt 2) a degree-6
 *    polynomial;
 *  - else: relu(x) - K(z) (1 - lo) e^-s, where K = (|x| / 2) erfc(t) e^{t^2}
 *    is a degree-11 polynomial in z = 1 / (1 + 0.4 |x|) (it tends to
 *    1 / sqrt(2 pi), so its relative error does not grow with |x|), and the
 *    e^-s rounds last, so a denormal result rounds once.
 * Both fitted in double by weighted least squares to the relative error
 * (below 2e-10); the f32 evaluation is within 4 ulp of the correctly
 * rounded result (test/test_cpu_fast_ops.c sweeps it). Inf gives inf,
 * -inf NaN (-inf * 0 as the formula is written, as the reference), NaN
 * stays. */
static inline V vgelu_small(V s, V h) {
  V p = vset1(7.297345421e-05f);
  p = vfma(p, s, vset1(-5.985320694e-04f));
  p = vfma(p, s, vset1(3.692469319e-03f));
  p = vfma(p, s, vset1(-1.899707042e-02f));
  p = vfma(p, s, vset1(7.978844520e-02f));
  p = vfma(p, s, vset1(-2.659615200e-01f));
  p = vfma(p, s, vset1(7.978845608e-01f));
  return vfma(s, p, h);
}
static inline V vgelu_k(V z) {
  V k = vset1(-1.504847309e-01f);
  k = vfma(k, z, vset1(7.034056990e-01f));
  k = vfma(k, z, vset1(-1.279722656e+00f));
  k = vfma(k, z, vset1(1.004504166e+00f));
  k = vfma(k, z, vset1(-1.600350080e-01f));
  k = vfma(k, z, vset1(-6.470056376e-02f));
  k = vfma(k, z, vset1(-8.416142700e-02f));
  k = vfma(k, z, vset1(-1.799012019e-01f));
  k = vfma(k, z, vset1(-1.235692946e-01f));
  k = vfma(k, z, vset1(-6.435121315e-02f));
  k = vfma(k, z, vset1(3.677961427e-05f));
  return vfma(k, z, vset1(3.989411654e-01f));
}
static inline V vgelu(V x) {
  V h = vmul(x, vset1(0.5f)), s = vmul(h, x);
  /* past |x| = 16 (s = 128) e^-s is 0 in f32: clamped, s and its low
   * part stay finite for any x (NaN stays) */
  V xc = vmin(vset1(16.0f), vmax(vset1(-16.0f), x)), hc = vmul(xc, vset1(0.5f));
  V sc = vmul(hc, xc), nlo = vfnma(hc, xc, sc); /* -lo: sc + lo = xc^2 / 2 */
  V z = vdiv(vset1(1.0f), vfma(vset1(0.4000000060f), vabs(xc), vset1(1.0f)));
  V k = vgelu_k(z);
  k = vfma(k, nlo, k);
  /* past s = 104 the result is below half the least denormal */
  V e = vexp(vsub(vset1(0.0f), vmin(vset1(104.0f), sc)));
  V big = vfnma(k, e, vmax(vset1(0.0f), x));
  big = vsel(VCMP(x, vset1(-INFINITY), _CMP_EQ_OQ), big, vset1(NAN));
  return vsel(VCMP(s, vset1(0.36f), _CMP_LT_OQ), big, vgelu_small(s, h));
}

/* Tanh-approximate GELU, x (1 + tanh u) / 2 with u = sqrt(2 / pi) (x +
 * 0.044715 x^3), written as x sigmoid(2u) (the same function), so the
 * negative side keeps its relative precision instead of cancelling in
 * 1 + tanh u. There sigmoid(2u) is about e^{2u}, whose relative error is
 * 2u's absolute one: 2u is carried as hi + lo (error-free products through
 * FMA, the constants split in two floats), sigmoid runs on hi, and lo
 * corrects it to first order (sigmoid' = s (1 - s)). */
#define GELU_TANH_C 1.5957691216057308 /* 2 sqrt(2 / pi) */
#define GELU_TANH_K 0.044715
static inline V vgelu_tanh(V x) {
  const V chi = vset1((float)GELU_TANH_C), clo = vset1((float)(GELU_TANH_C - (double)(float)GELU_TANH_C));
  const V khi = vset1((float)GELU_TANH_K), klo = vset1((float)(GELU_TANH_K - (double)(float)GELU_TANH_K));
  V x2 = vmul(x, x), x2lo = vfma(x, x, vsub(vset1(0.0f), x2));
  V t = vmul(khi, x2), tlo = vfma(khi, x2, vsub(vset1(0.0f), t));
  V in = vadd(vset1(1.0f), t), bb = vsub(in, vset1(1.0f)); /* 1 + t, TwoSum */
  V inlo = vadd(vsub(vset1(1.0f), vsub(in, bb)), vsub(t, bb));
  inlo = vadd(inlo, vfma(klo, x2, vfma(khi, x2lo, tlo)));
  V p = vmul(x, chi), plo = vfma(x, clo, vfma(x, chi, vsub(vset1(0.0f), p)));
  V hi = vmul(p, in);
  V lo = vfma(p, inlo, vfma(plo, in, vfma(p, in, vsub(vset1(0.0f), hi))));
  lo = vsel(VCMP(lo, lo, _CMP_UNORD_Q), lo, vset1(0.0f)); /* inf - inf at |x| = inf */
  V sg = vsigmoid(hi);
  V r = vmul(x, vfma(vmul(sg, vsub(vset1(1.0f), sg)), lo, sg));
  /* below 2u = -80 the result heads into the denormals: there it is
   * x (1 + lo) e^{hi/2} e^{hi/2}, so only the last product rounds there */
  V h = vexp(vmul(hi, vset1(0.5f)));
  V tail = vmul(vmul(vfma(x, lo, x), h), h);
  return vsel(VCMP(hi, vset1(-80.0f), _CMP_LT_OQ), r, tail);
}
