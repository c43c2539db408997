/*
 * FMA-throughput probe, AVX2+FMA: 256-bit vfmadd on twelve independent
 * accumulators (enough for 2 FMA pipes x 4-5 cycles latency). 16 flops per
 * FMA. Built with the avx2 set's flags; called only when the CPU runs that
 * set (dispatch/registry.c).
 */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/unroll.h"

uint64_t sa_peak_fma__avx2(uint64_t reps, float *sink) {
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  __m256 a0 = _mm256_set1_ps(0.1f), a1 = _mm256_set1_ps(0.2f),
         a2 = _mm256_set1_ps(0.3f), a3 = _mm256_set1_ps(0.4f),
         a4 = _mm256_set1_ps(0.5f), a5 = _mm256_set1_ps(0.6f),
         a6 = _mm256_set1_ps(0.7f), a7 = _mm256_set1_ps(0.8f),
         a8 = _mm256_set1_ps(0.9f), a9 = _mm256_set1_ps(1.0f),
         a10 = _mm256_set1_ps(1.1f), a11 = _mm256_set1_ps(1.2f);
  for (uint64_t r = 0; r < reps; r++) {
#define STEP(a) a = _mm256_fmadd_ps(a, m, c)
    SA_STEP_A0_A11(STEP);
#undef STEP
  }
  __m256 s = _mm256_add_ps(
      _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
      _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(
      s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float out[8];
  _mm256_storeu_ps(out, s);
  *sink = out[0] + out[7];
  return reps * 12 * 16;
}
