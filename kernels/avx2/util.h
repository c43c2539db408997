/*
 * Helpers shared by the AVX2 kernels. Static inline only: this header is
 * compiled with AVX2 flags and must never give the linker an out-of-line
 * copy that baseline code could end up calling.
 */
#ifndef SA_AVX2_UTIL_H
#define SA_AVX2_UTIL_H

#include <immintrin.h>
#include <stddef.h>

/* Lanes [0, r) of an 8-lane vector (all 8 once r >= 8), as a compare
 * mask for blends; never used to address memory. */
static inline __m256i sa_mask8(size_t r) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(r < 8 ? r : 8)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/*
 * The first r floats at p (r < 8), the other lanes 0, without reading past
 * p[r - 1]; and its store counterpart. Not vmaskmovps: real CPUs skip the
 * lanes left out, but qemu (7.2) reads and writes all eight, so a tail next
 * to a guard page faults under `make test-emulated`. Tails are a few per
 * row, so a copy through the stack costs nothing measurable.
 */
static inline __m256 sa_load8_part(const float *p, size_t r) {
  float buf[8] = {0};
  for (size_t i = 0; i < r && i < 8; i++)
    buf[i] = p[i];
  return _mm256_loadu_ps(buf);
}

static inline void sa_store8_part(float *p, size_t r, __m256 x) {
  float buf[8];
  _mm256_storeu_ps(buf, x);
  for (size_t i = 0; i < r && i < 8; i++)
    p[i] = buf[i];
}

static inline float sa_hsum8(__m256 x) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

static inline float sa_hmax8(__m256 x) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

/* row[0, count) = 0. */
static inline void sa_zero8(float *row, size_t count) {
  size_t j = 0;
  for (; j + 8 <= count; j += 8)
    _mm256_storeu_ps(row + j, _mm256_setzero_ps());
  if (j < count)
    sa_store8_part(row + j, count - j, _mm256_setzero_ps());
}

/* a[0..4): 8 partial sums of 4 keys -> in 128-bit lane L, the sum of a[c]'s
 * lanes 4L..4L+3 in element c. */
static inline __m256 sa_hsum4(const __m256 a[4]) {
  __m256 x01 = _mm256_add_ps(_mm256_unpacklo_ps(a[0], a[1]),
                             _mm256_unpackhi_ps(a[0], a[1]));
  __m256 x23 = _mm256_add_ps(_mm256_unpacklo_ps(a[2], a[3]),
                             _mm256_unpackhi_ps(a[2], a[3]));
  __m256d y01 = _mm256_castps_pd(x01), y23 = _mm256_castps_pd(x23);
  return _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(y01, y23)),
                       _mm256_castpd_ps(_mm256_unpackhi_pd(y01, y23)));
}

/* The first nk (<= 4) floats of x to p; w is x's full width, a constant. */
static inline __attribute__((always_inline)) void
sa_store4(float *p, size_t w, size_t nk, __m128 x) {
  if (nk == 4 && w == 4)
    _mm_storeu_ps(p, x);
  else if (nk == 2 && w == 2)
    _mm_storel_pi((__m64 *)p, x);
  else if (nk == 3 && w == 3) {
    _mm_storel_pi((__m64 *)p, x);
    _mm_store_ss(p + 2, _mm_movehl_ps(x, x));
  } else
    sa_store8_part(p, nk, _mm256_castps128_ps256(x));
}

/*
 * The dot-product tiles' end (score.c, score_t.c, decode.c): acc[r][c]
 * holds 8 partial sums of row r and key c; s[r][0..nk) = scale * their
 * sums for r < mr, nk <= dn. Rows past mr and keys past dn reduce zeros,
 * which the compiler drops; the 128-bit lane swap adds as it goes: lane h
 * of sum holds row g + h's sums. mr and dn are constants at every call.
 */
static inline __attribute__((always_inline)) __m256
sa_dots_pair(__m256 acc[4][4], size_t g, __m256 vs) {
  __m256 y0 = sa_hsum4(acc[g]), y1 = sa_hsum4(acc[g + 1]);
  __m256 sum = _mm256_add_ps(_mm256_permute2f128_ps(y0, y1, 0x20),
                             _mm256_permute2f128_ps(y0, y1, 0x31));
  return _mm256_mul_ps(sum, vs);
}

static inline __attribute__((always_inline)) void
sa_dots_store8(size_t mr, size_t dn, __m256 acc[4][4], float scale, float *s,
               size_t lds, size_t nk) {
  const __m256 vs = _mm256_set1_ps(scale);
  for (size_t g = 0; g < mr; g += 2) {
    __m256 sum = sa_dots_pair(acc, g, vs);
    sa_store4(s + g * lds, dn, nk, _mm256_castps256_ps128(sum));
    if (g + 1 < mr)
      sa_store4(s + (g + 1) * lds, dn, nk, _mm256_extractf128_ps(sum, 1));
  }
}

/* sa_dots_store8 for tiles whose keys are ks floats apart in s (one key
 * of each of dn streams, score.c): s[r][c ks] = scale * the sum of
 * acc[r][c], the same sums in the same order. */
static inline __attribute__((always_inline)) void
sa_dots_scatter8(size_t mr, size_t dn, __m256 acc[4][4], float scale, float *s,
                 size_t lds, size_t ks) {
  const __m256 vs = _mm256_set1_ps(scale);
  for (size_t g = 0; g < mr; g += 2) {
    _Alignas(32) float x[8];
    _mm256_store_ps(x, sa_dots_pair(acc, g, vs));
    for (size_t c = 0; c < dn; c++)
      s[g * lds + c * ks] = x[c];
    if (g + 1 < mr)
      for (size_t c = 0; c < dn; c++)
        s[(g + 1) * lds + c * ks] = x[4 + c];
  }
}

#endif /* SA_AVX2_UTIL_H */
