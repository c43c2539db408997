/*
 * Helpers shared by the AVX-512 kernels. Static inline only: this header is
 * compiled with AVX-512 flags and must never give the linker an out-of-line
 * copy that baseline code could end up calling.
 */
#ifndef SA_AVX512_UTIL_H
#define SA_AVX512_UTIL_H

#include <immintrin.h>
#include <stddef.h>

/* Lanes [0, r) of a 16-lane vector; all 16 once r >= 16. Masked loads and
 * stores neither read nor fault on the lanes left out, which is what makes
 * tails safe against a guard page right after the last element. */
static inline __mmask16 sa_mask16(size_t r) {
  return r >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << r) - 1u);
}

/* row[0, count) = 0. */
static inline void sa_zero16(float *row, size_t count) {
  size_t j = 0;
  for (; j + 16 <= count; j += 16)
    _mm512_storeu_ps(row + j, _mm512_setzero_ps());
  if (j < count)
    _mm512_mask_storeu_ps(row + j, sa_mask16(count - j), _mm512_setzero_ps());
}

/* Lane group g (4 floats) of x moved to lanes 0..3; g is a constant at every
 * call, as the shuffle's immediate needs. */
static inline __attribute__((always_inline)) __m512 sa_group4(__m512 x,
                                                              size_t g) {
  switch (g) {
  case 0:
    return x;
  case 1:
    return _mm512_shuffle_f32x4(x, x, 0x01);
  case 2:
    return _mm512_shuffle_f32x4(x, x, 0x02);
  default:
    return _mm512_shuffle_f32x4(x, x, 0x03);
  }
}

/* a[0..4): 16 partial sums of 4 keys -> in 128-bit lane L, the sum of a[c]'s
 * lanes 4L..4L+3 in element c (the decode dots' first reduction step). */
static inline __m512 sa_hsum4(const __m512 a[4]) {
  __m512 x01 = _mm512_add_ps(_mm512_unpacklo_ps(a[0], a[1]),
                             _mm512_unpackhi_ps(a[0], a[1]));
  __m512 x23 = _mm512_add_ps(_mm512_unpacklo_ps(a[2], a[3]),
                             _mm512_unpackhi_ps(a[2], a[3]));
  __m512d y01 = _mm512_castps_pd(x01), y23 = _mm512_castps_pd(x23);
  return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(y01, y23)),
                       _mm512_castpd_ps(_mm512_unpackhi_pd(y01, y23)));
}

/* The end of the decode dots: acc[r][c] holds 16 partial sums of row r with
 * key c; s[r][0..nk) = scale * each full sum, rows [0, mr). A 4 x 4
 * transpose of 128-bit lanes, adding as it goes, leaves row r's four sums
 * in lane group r of one vector. mr is a constant at every call. */
static inline __attribute__((always_inline)) void
sa_dots_store(size_t mr, __m512 acc[4][4], float scale, float *s, size_t lds,
              size_t nk) {
  __m512 y[4];
#pragma GCC unroll 4
  for (size_t r = 0; r < 4; r++) /* rows past mr: zeros the compiler drops */
    y[r] = r < mr ? sa_hsum4(acc[r]) : _mm512_setzero_ps();
  __m512 u01 = _mm512_add_ps(_mm512_shuffle_f32x4(y[0], y[1], 0x44),
                             _mm512_shuffle_f32x4(y[0], y[1], 0xee));
  __m512 u23 = _mm512_add_ps(_mm512_shuffle_f32x4(y[2], y[3], 0x44),
                             _mm512_shuffle_f32x4(y[2], y[3], 0xee));
  __m512 sum = _mm512_add_ps(_mm512_shuffle_f32x4(u01, u23, 0x88),
                             _mm512_shuffle_f32x4(u01, u23, 0xdd));
  sum = _mm512_mul_ps(sum, _mm512_set1_ps(scale));
  __mmask16 kn = sa_mask16(nk);
#pragma GCC unroll 4
  for (size_t r = 0; r < mr; r++)
    _mm512_mask_storeu_ps(s + r * lds, kn, sa_group4(sum, r));
}

#endif /* SA_AVX512_UTIL_H */
