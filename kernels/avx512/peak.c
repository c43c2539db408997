/*
 * FMA-throughput probe, AVX-512F: 512-bit vfmadd on sixteen independent
 * accumulators (2 FMA pipes x 4 cycles latency with room to spare). 32 flops
 * per FMA. Built with the avx512 set's flags; called only when the CPU runs
 * that set (dispatch/registry.c).
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/unroll.h"

uint64_t sa_peak_fma__avx512(uint64_t reps, float *sink) {
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
  __m512 a[16];
  for (int i = 0; i < 16; i++)
    a[i] = _mm512_set1_ps(0.1f * (float)(i + 1));
  __m512 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5],
         a6 = a[6], a7 = a[7], a8 = a[8], a9 = a[9], a10 = a[10], a11 = a[11],
         a12 = a[12], a13 = a[13], a14 = a[14], a15 = a[15];
  for (uint64_t r = 0; r < reps; r++) {
#define STEP(x) x = _mm512_fmadd_ps(x, m, c)
    SA_STEP_A0_A15(STEP);
#undef STEP
  }
  __m512 s0 = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
  __m512 s1 = _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7));
  __m512 s2 = _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11));
  __m512 s3 = _mm512_add_ps(_mm512_add_ps(a12, a13), _mm512_add_ps(a14, a15));
  *sink = _mm512_reduce_add_ps(
      _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
  return reps * 16 * 32;
}
