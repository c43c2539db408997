/*
 * Read-bandwidth probe, AVX-512F: 512-bit aligned loads, eight per 512-byte
 * block, summed into four independent accumulators with vpaddq (one cycle of
 * latency, so the adds never limit the loads), in the way kernels.h's
 * sa_peak_read_way says (streams side by side, software prefetch); the
 * bench measures several ways and keeps the fastest. Built with the avx512
 * set's flags; called only when the CPU runs that set (dispatch/registry.c).
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/peak_read.h"

#define LOAD(q, off) _mm512_load_si512((const void *)((q) + (off)))
#define BLOCK(q)                                                               \
  do {                                                                         \
    a0 = _mm512_add_epi64(a0, LOAD(q, 0));                                     \
    a1 = _mm512_add_epi64(a1, LOAD(q, 64));                                    \
    a2 = _mm512_add_epi64(a2, LOAD(q, 128));                                   \
    a3 = _mm512_add_epi64(a3, LOAD(q, 192));                                   \
    a0 = _mm512_add_epi64(a0, LOAD(q, 256));                                   \
    a1 = _mm512_add_epi64(a1, LOAD(q, 320));                                   \
    a2 = _mm512_add_epi64(a2, LOAD(q, 384));                                   \
    a3 = _mm512_add_epi64(a3, LOAD(q, 448));                                   \
  } while (0)

uint64_t sa_peak_read__avx512(const void *buf, size_t bytes,
                              const sa_peak_read_way *way) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  SA_PEAK_READ_LOOP(buf, bytes, way, BLOCK);
  __m512i s =
      _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3));
  return (uint64_t)_mm512_reduce_add_epi64(s);
}
