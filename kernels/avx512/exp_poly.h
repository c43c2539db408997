/*
 * exp(x) on 16 floats without a library call: the "poly" exp of the
 * avx512-polyexp set.
 *
 * Measured against double-precision exp on every float of the range (a
 * throw-away harness, not in the tree): max error 1.01 ULP on [-88, 0] (the
 * softmax range), 1.01 ULP on [0, 89]; on [-104, -87], where results are
 * denormal, within 0.75 of the denormal spacing. exp(-inf) = 0, exp(0) = 1
 * exactly, exp(x > 88.73) = +inf, NaN -> NaN.
 *
 * exp2 (sa_exp2_16_poly, 0.10) measured the same way: max 1.0175 ULP on
 * [-126, 0], within 0.79 of the denormal spacing on [-151, -126]; exp2(0)
 * = 1 exactly, -inf -> 0, NaN -> NaN.
 *
 * x = n ln2 + r with |r| <= ln2/2: n = round(x log2e); r is x - n ln2 with
 * ln2 split Cody-Waite style into a 9-bit head (n * head is exact for every
 * n reached here) and a tail. exp(r) = 1 + r + r^2 P(r) with Cephes' degree-5
 * minimax P; 2^n is applied with scalef, which rounds once into the denormal
 * range and saturates to +inf, so no exponent-bit special cases are needed.
 */
#ifndef SA_AVX512_EXP_POLY_H
#define SA_AVX512_EXP_POLY_H

#include <immintrin.h>

/* 2^n exp(r) for |r| <= ln2/2 (and a little more), n integral. */
static inline __m512 sa_exp16_poly_r(__m512 r, __m512 n) {
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
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
  return sa_exp16_poly_r(r, n);
}

/* 2^x: n = round(x), and x - n is exact, so one rounding (r = (x - n) ln2,
 * |r| <= ln2/2) replaces the reduction's multiply and two FMAs. */
static inline __m512 sa_exp2_16_poly(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(-151.0f), x);
  x = _mm512_min_ps(_mm512_set1_ps(129.0f), x);
  __m512 n =
      _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r =
      _mm512_mul_ps(_mm512_sub_ps(x, n), _mm512_set1_ps(0.693147180559945309f));
  return sa_exp16_poly_r(r, n);
}

#endif /* SA_AVX512_EXP_POLY_H */
