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

#endif /* SA_AVX512_UTIL_H */
