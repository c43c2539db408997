/*
 * exp(x) on 16 floats without a library call: the "poly" exp of the
 * avx512-polyexp set.
 *
 * Measured against double-precision exp and exp2 on every float of the
 * range (a throw-away harness, not in the tree): exp max 0.9013 ULP on
 * [-104, 89] (0.10's polynomial: 1.0103), within 0.86 of the denormal
 * spacing where results are denormal; exp2 max 0.7996 ULP on [-151, 128]
 * (0.10: 1.0175), within 0.88 of the denormal spacing. SLEEF's u10 states
 * 1 ULP for both. exp(-inf) = exp2(-inf) = 0, exp(0) = exp2(0) = 1
 * exactly, past the top of the range +inf, NaN -> NaN.
 *
 * exp: x = n ln2 + r with |r| <= ln2/2, n = round(x log2e), r = x - n ln2
 * with ln2 split Cody-Waite style into a 9-bit head (n * head is exact for
 * every n reached here) and a tail. exp2: n = round(x), f = x - n, exact.
 * Then the polynomials of kernels/exp_coeffs.h, and 2^n by scalef.
 */
#ifndef SA_AVX512_EXP_POLY_H
#define SA_AVX512_EXP_POLY_H

#include <immintrin.h>

#include "kernels/exp_coeffs.h"

/* 2^n y: scalef rounds once into the denormal range and saturates to
 * +inf, so no exponent-bit special cases are needed. */
static inline __m512 sa_exp16_scale(__m512 y, __m512 n) {
  return _mm512_scalef_ps(y, n);
}

/* 1 + t (c1 + t (c2 + ... + t c6)): Horner, its last step one fma at the
 * result's scale (exp_coeffs.h's SERIES lists give c6 .. c1). */
static inline __m512 sa_exp16_series(__m512 t, float c6, float c5, float c4,
                                     float c3, float c2, float c1) {
  __m512 u = _mm512_set1_ps(c6);
  u = _mm512_fmadd_ps(u, t, _mm512_set1_ps(c5));
  u = _mm512_fmadd_ps(u, t, _mm512_set1_ps(c4));
  u = _mm512_fmadd_ps(u, t, _mm512_set1_ps(c3));
  u = _mm512_fmadd_ps(u, t, _mm512_set1_ps(c2));
  u = _mm512_fmadd_ps(u, t, _mm512_set1_ps(c1));
  return _mm512_fmadd_ps(u, t, _mm512_set1_ps(1.0f));
}

static inline __m512 sa_exp16_poly(__m512 x) {
  /* Past these bounds the result is 0 or +inf anyway; clamping keeps n
   * finite (so -inf does not become -inf - -inf = NaN in r). max/min return
   * their second operand when either is NaN, so a NaN x goes through. */
  x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
  __m512 n = _mm512_roundscale_ps(
      _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  return sa_exp16_scale(sa_exp16_series(r, SA_EXP_SERIES), n);
}

/* 2^x: n = round(x), and f = x - n is exact, so the polynomial runs on f
 * itself: no reduction to round. */
static inline __m512 sa_exp2_16_poly(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-151.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(129.0f), x);
  __m512 n =
      _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 f = _mm512_sub_ps(x, n);
  return sa_exp16_scale(sa_exp16_series(f, SA_EXP2_SERIES), n);
}

#endif /* SA_AVX512_EXP_POLY_H */
