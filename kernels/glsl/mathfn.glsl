// mathfn.glsl — the scalar math of the elementwise kernels (eltwise.comp)
// and the model kernels (glu.comp, scalar.comp): accurate erf, log and tanh
// where CPU drivers' built-ins fall short, C's pow, and the unary and binary
// op switches (bp_unary_op_t / bp_binary_op_t codes).

// erf with |error| < 1.2e-7 (Numerical Recipes erfc, Chebyshev fit).
float bp_erf(float x) {
  float z = abs(x), t = 1.0 / (1.0 + 0.5 * z);
  float r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 +
            t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 +
            t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 +
            t * 0.17087277)))))))));
  return x >= 0.0 ? 1.0 - r : r - 1.0;
}

// log that is right for denormal x too: CPU drivers (lavapipe) run with
// denormals flushed, so log(1e-40) would come out as log(0) or
// log(FLT_MIN). A denormal is mant * 2^-149 with mant an exact integer.
float bp_log(float x) {
  uint b = floatBitsToUint(x);
  if ((b & 0x7f800000u) == 0u && (b & 0x7fffffu) != 0u)
    return log(float(b & 0x7fffffu)) - 103.27892990343184; // 149 ln 2
  return log(x);
}

// tanh keeping its relative accuracy near zero, where a driver's tanh
// computed as (e^2x - 1) / (e^2x + 1) cancels (lavapipe's does; the figures
// are in docs/performance.md): below 2^-12, x itself (x^3 / 3 is under half
// an ulp, and no arithmetic means a denormal survives a flushing driver);
// below 0.625 Cephes' tanhf polynomial; beyond, 1 - 2 / (e^2|x| + 1) with
// x's sign (the result is over 0.55: no cancellation), 1 past 9.
float bp_tanh(float x) {
  float a = abs(x);
  if (isnan(x) || a < 2.44140625e-4) return x;
  if (a < 0.625) {
    float z = x * x;
    float q = (((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z +
               1.33314422036e-1) * z - 3.33332819422e-1;
    return x + x * z * q;
  }
  float r = a > 9.0 ? 1.0 : 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
  return x < 0.0 ? -r : r;
}

// tanh-approximate GELU: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
float bp_gelu_tanh(float x) {
  return 0.5 * x * (1.0 + bp_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

float bp_unary(int op, float x) {
  switch (op) {
  case 0: return -x;
  case 1: return abs(x);
  case 2: return exp(x);
  case 3: return x < 0.0 ? BP_NAN : bp_log(x);
  case 4: return x < 0.0 ? BP_NAN : sqrt(x);
  case 5: return x < 0.0 ? BP_NAN : inversesqrt(x);
  case 6: return isnan(x) ? x : max(x, 0.0);
  case 7: return x * 0.5 * (1.0 + bp_erf(x * 0.70710678118654752));
  case 8: return x / (1.0 + exp(-x));
  case 9: return 1.0 / (1.0 + exp(-x));
  case 10: return bp_tanh(x);
  case 11: return sin(x);
  case 13: return bp_gelu_tanh(x);
  default: return cos(x);
  }
}

// C's powf (C99 Annex F) for the cases GLSL's pow leaves undefined
// (x < 0, x == 0) or gets wrong as exp2(y log2 |x|): (-1)^+-inf is 1
// (inf * 0 is NaN there), and (-inf)^y with y not an integer is +inf or +0,
// as (+inf)^y (a NaN only for finite x < 0).
float bp_pow(float x, float y) {
  if (y == 0.0) return 1.0;
  if (x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return BP_NAN;
  if (x == -1.0 && isinf(y)) return 1.0;
  float m = pow(abs(x), y);
  if (abs(x) == 0.0) m = y < 0.0 ? BP_INF : 0.0;
  if (x < 0.0 || (x == 0.0 && floatBitsToUint(x) != 0u)) {
    if (floor(y) != y) return x == 0.0 || isinf(x) ? m : BP_NAN;
    bool odd = abs(y) < 16777216.0 && mod(y, 2.0) == 1.0;
    return odd ? -m : m;
  }
  return m;
}

float bp_binary(int op, float a, float b) {
  switch (op) {
  case 0: return a + b;
  case 1: return a - b;
  case 2: return a * b;
  case 3: return a / b;
  case 4: return isnan(a) || isnan(b) ? BP_NAN : max(a, b);
  case 5: return isnan(a) || isnan(b) ? BP_NAN : min(a, b);
  default: return bp_pow(a, b);
  }
}
