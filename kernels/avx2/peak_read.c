/*
 * Read-bandwidth probe, AVX2: 256-bit aligned loads, sixteen per 512-byte
 * block, summed into four independent accumulators with vpaddq, in the way
 * kernels.h's sa_peak_read_way says (streams side by side, software
 * prefetch); the bench measures several ways and keeps the fastest. Built with
 * the avx2 set's flags; called only when the CPU runs that set
 * (dispatch/registry.c).
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/peak_read.h"

#define LOAD(q, off) _mm256_load_si256((const __m256i *)((q) + (off)))
#define LINE(q, l)                                                             \
  do {                                                                         \
    a0 = _mm256_add_epi64(a0, LOAD(q, l));                                     \
    a1 = _mm256_add_epi64(a1, LOAD(q, (l) + 32));                              \
    a2 = _mm256_add_epi64(a2, LOAD(q, (l) + 64));                              \
    a3 = _mm256_add_epi64(a3, LOAD(q, (l) + 96));                              \
  } while (0)
#define BLOCK(q)                                                               \
  do {                                                                         \
    LINE(q, 0);                                                                \
    LINE(q, 128);                                                              \
    LINE(q, 256);                                                              \
    LINE(q, 384);                                                              \
  } while (0)

uint64_t sa_peak_read__avx2(const void *buf, size_t bytes,
                            const sa_peak_read_way *way) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  SA_PEAK_READ_LOOP(buf, bytes, way, BLOCK);
  __m256i s =
      _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  uint64_t out[4];
  _mm256_storeu_si256((__m256i *)out, s);
  return out[0] + out[1] + out[2] + out[3];
}
