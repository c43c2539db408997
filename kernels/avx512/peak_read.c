/*
 * Read-bandwidth probe, AVX-512F: 512-bit aligned loads, eight per 512-byte
 * block, summed into four independent accumulators with vpaddq (one cycle of
 * latency, so the adds never limit the loads). With prefetch > 0 it also
 * prefetches that many bytes ahead, every line or each page's first
 * (kernels/kernels.h); the bench measures the three ways and keeps the
 * fastest. Built with the avx512 set's flags; called only when the CPU runs
 * that set (dispatch/registry.c).
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/peak_read.h"

#define LOAD(off) _mm512_load_si512((const void *)(p + i + (off)))
#define BLOCK()                                                                \
  do {                                                                         \
    a0 = _mm512_add_epi64(a0, LOAD(0));                                        \
    a1 = _mm512_add_epi64(a1, LOAD(64));                                       \
    a2 = _mm512_add_epi64(a2, LOAD(128));                                      \
    a3 = _mm512_add_epi64(a3, LOAD(192));                                      \
    a0 = _mm512_add_epi64(a0, LOAD(256));                                      \
    a1 = _mm512_add_epi64(a1, LOAD(320));                                      \
    a2 = _mm512_add_epi64(a2, LOAD(384));                                      \
    a3 = _mm512_add_epi64(a3, LOAD(448));                                      \
  } while (0)

uint64_t sa_peak_read__avx512(const void *buf, size_t bytes, size_t prefetch,
                              size_t every) {
  const char *p = buf;
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  /* Prefetch only while the target is inside the buffer. */
  size_t i = 0, stop = prefetch && bytes > prefetch ? bytes - prefetch : 0;
  for (; i < stop; i += SA_PEAK_READ_BLOCK) {
    sa_peak_read_prefetch(p + i + prefetch, every);
    BLOCK();
  }
  for (; i < bytes; i += SA_PEAK_READ_BLOCK)
    BLOCK();
  __m512i s =
      _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
  return (uint64_t)_mm512_reduce_add_epi64(s);
}
