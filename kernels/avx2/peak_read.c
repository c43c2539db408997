/*
 * Read-bandwidth probe, AVX2: 256-bit aligned loads, sixteen per 512-byte
 * block, summed into four independent accumulators with vpaddq. With
 * prefetch > 0 it also prefetches that many bytes ahead, every line or each
 * page's first (kernels/kernels.h); the bench measures the three ways and
 * keeps the fastest. Built with the avx2 set's flags; called only when the
 * CPU runs that set (dispatch/registry.c).
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/peak_read.h"

#define LOAD(off) _mm256_load_si256((const __m256i *)(p + i + (off)))
#define LINE(l)                                                                \
  do {                                                                         \
    a0 = _mm256_add_epi64(a0, LOAD(l));                                        \
    a1 = _mm256_add_epi64(a1, LOAD((l) + 32));                                 \
    a2 = _mm256_add_epi64(a2, LOAD((l) + 64));                                 \
    a3 = _mm256_add_epi64(a3, LOAD((l) + 96));                                 \
  } while (0)
#define BLOCK()                                                                \
  do {                                                                         \
    LINE(0);                                                                   \
    LINE(128);                                                                 \
    LINE(256);                                                                 \
    LINE(384);                                                                 \
  } while (0)

uint64_t sa_peak_read__avx2(const void *buf, size_t bytes, size_t prefetch,
                            size_t every) {
  const char *p = buf;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  /* Prefetch only while the target is inside the buffer. */
  size_t i = 0, stop = prefetch && bytes > prefetch ? bytes - prefetch : 0;
  for (; i < stop; i += SA_PEAK_READ_BLOCK) {
    sa_peak_read_prefetch(p + i + prefetch, every);
    BLOCK();
  }
  for (; i < bytes; i += SA_PEAK_READ_BLOCK)
    BLOCK();
  __m256i s =
      _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  uint64_t out[4];
  _mm256_storeu_si256((__m256i *)out, s);
  return out[0] + out[1] + out[2] + out[3];
}
