/*
 * exp(x) on 8 floats without a library call: the "poly" exp of the
 * avx2-polyexp set.
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
 * Then the polynomials of kernels/exp_coeffs.h. 2^n is built from exponent
 * bits in two halves, 2^(n/2) and 2^(n - n/2), each a normal float for
 * every n in [-151, 129]: the first product is exact and the second rounds
 * once, so denormal results and the overflow to +inf come out right
 * without special cases.
 */
#ifndef SA_AVX2_EXP_POLY_H
#define SA_AVX2_EXP_POLY_H

#include <immintrin.h>

#include "kernels/exp_coeffs.h"

/* 2^n y for y near 1, n integral in [-151, 129]. */
static inline __m256 sa_exp8_scale(__m256 y, __m256 n) {
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  __m256 s1 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  __m256 s2 =
      _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
}

/* 1 + t (c1 + t (c2 + ... + t c6)): Horner, its last step one fma at the
 * result's scale (exp_coeffs.h's SERIES lists give c6 .. c1). */
static inline __m256 sa_exp8_series(__m256 t, float c6, float c5, float c4,
                                    float c3, float c2, float c1) {
  __m256 u = _mm256_set1_ps(c6);
  u = _mm256_fmadd_ps(u, t, _mm256_set1_ps(c5));
  u = _mm256_fmadd_ps(u, t, _mm256_set1_ps(c4));
  u = _mm256_fmadd_ps(u, t, _mm256_set1_ps(c3));
  u = _mm256_fmadd_ps(u, t, _mm256_set1_ps(c2));
  u = _mm256_fmadd_ps(u, t, _mm256_set1_ps(c1));
  return _mm256_fmadd_ps(u, t, _mm256_set1_ps(1.0f));
}

static inline __m256 sa_exp8_poly(__m256 x) {
  /* Past these bounds the result is 0 or +inf anyway; clamping keeps n in
   * range (and -inf from becoming -inf - -inf = NaN in r). max/min return
   * their second operand when either is NaN, so a NaN x goes through. */
  x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x);
  x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
  __m256 n =
      _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  return sa_exp8_scale(sa_exp8_series(r, SA_EXP_SERIES), n);
}

/* 2^x: n = round(x), and f = x - n is exact, so the polynomial runs on f
 * itself: no reduction to round. */
static inline __m256 sa_exp2_8_poly(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-151.0f), x);
  x = _mm256_min_ps(_mm256_set1_ps(129.0f), x);
  __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 f = _mm256_sub_ps(x, n);
  return sa_exp8_scale(sa_exp8_series(f, SA_EXP2_SERIES), n);
}

#endif /* SA_AVX2_EXP_POLY_H */
