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

#endif /* SA_AVX2_UTIL_H */
