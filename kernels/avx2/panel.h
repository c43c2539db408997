/*
 * The GEMM half of the AVX2 score kernels, shared by score.c (f32 K) and
 * score_t.c (narrow K, widened while packing): 8 keys x 8 values of d
 * transposed into a Kᵀ panel of SA_PANEL_NR keys a row, and the MR x NR
 * register tile over it. Static inline only, compiled with AVX2 flags.
 */
#ifndef SA_AVX2_PANEL_H
#define SA_AVX2_PANEL_H

#include <immintrin.h>
#include <stddef.h>

#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/prefetch.h"

enum { SA_PANEL_MR = SA_AVX2_MR, SA_PANEL_NR = SA_AVX2_NR };

/* r[a]: values p..p+7 of key a -> dst[p' * SA_PANEL_NR + a] for the 8
 * values p' (8 panel rows of 8 keys). r is used as scratch. */
static inline __attribute__((always_inline)) void
sa_panel_store8x8(__m256 r[8], float *dst) {
  __m256 t[8];
  /* 32-bit interleave, then 64-bit picks within 128-bit lanes, then the
   * 128-bit lanes swapped across register pairs. */
  for (size_t a = 0; a < 8; a += 2) {
    t[a] = _mm256_unpacklo_ps(r[a], r[a + 1]);
    t[a + 1] = _mm256_unpackhi_ps(r[a], r[a + 1]);
  }
  for (size_t g = 0; g < 8; g += 4) {
    r[g] = _mm256_shuffle_ps(t[g], t[g + 2], 0x44);
    r[g + 1] = _mm256_shuffle_ps(t[g], t[g + 2], 0xee);
    r[g + 2] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0x44);
    r[g + 3] = _mm256_shuffle_ps(t[g + 1], t[g + 3], 0xee);
  }
  /* r[4 g + c], 128-bit lane L: keys 4g..4g+3 at value 4L + c */
  for (size_t c = 0; c < 4; c++) {
    _mm256_store_ps(dst + c * SA_PANEL_NR,
                    _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
    _mm256_store_ps(dst + (4 + c) * SA_PANEL_NR,
                    _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
  }
}

/* s[0..mr)[0..nk) (+)= q[0..mr)[0..kc) . panel, naming pf's lines between
 * chunks of p: the next panel's rows (kernels/prefetch.h, sa_spread). mr is a
 * constant at every call, so acc lives in registers. */
static inline __attribute__((always_inline)) void
sa_panel_tile(size_t mr, size_t kc, const float *q, size_t ldq,
              const float *panel, float *s, size_t lds, size_t nk, int first,
              int last, float scale, sa_spread *pf) {
  __m256 acc[SA_PANEL_MR][2];
  const size_t n0 = nk < 8 ? nk : 8, n1 = nk > 8 ? nk - 8 : 0;
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++) {
    if (first) {
      acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    } else if (nk == SA_PANEL_NR) {
      acc[r][0] = _mm256_loadu_ps(s + r * lds);
      acc[r][1] = _mm256_loadu_ps(s + r * lds + 8);
    } else {
      acc[r][0] = sa_load8_part(s + r * lds, n0);
      acc[r][1] = sa_load8_part(s + r * lds + 8, n1);
    }
  }
  for (size_t p0 = 0; p0 < kc; p0 += SA_SPREAD_STEPS) {
    sa_spread_lines(pf);
    size_t pe = kc - p0 < SA_SPREAD_STEPS ? kc : p0 + SA_SPREAD_STEPS;
    for (size_t p = p0; p < pe; p++) {
      __m256 b0 = _mm256_load_ps(panel + p * SA_PANEL_NR);
      __m256 b1 = _mm256_load_ps(panel + p * SA_PANEL_NR + 8);
#pragma GCC unroll 6
      for (size_t r = 0; r < mr; r++) {
        __m256 a = _mm256_broadcast_ss(q + r * ldq + p);
        acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
      }
    }
  }
  const __m256 vs = _mm256_set1_ps(last ? scale : 1.0f);
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++) {
    __m256 x0 = _mm256_mul_ps(acc[r][0], vs), x1 = _mm256_mul_ps(acc[r][1], vs);
    if (nk == SA_PANEL_NR) {
      _mm256_storeu_ps(s + r * lds, x0);
      _mm256_storeu_ps(s + r * lds + 8, x1);
    } else {
      sa_store8_part(s + r * lds, n0, x0);
      sa_store8_part(s + r * lds + 8, n1, x1);
    }
  }
}

#endif /* SA_AVX2_PANEL_H */
