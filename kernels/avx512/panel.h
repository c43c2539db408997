/*
 * The GEMM half of the AVX-512 score kernels, shared by score.c (f32 K) and
 * score_t.c (narrow K, widened while packing): 16 keys x 16 values of d
 * transposed into a Kᵀ panel of SA_PANEL_NR keys a row, and the MR x NR
 * register tile over it. Static inline only, compiled with AVX-512 flags.
 */
#ifndef SA_AVX512_PANEL_H
#define SA_AVX512_PANEL_H

#include <immintrin.h>
#include <stddef.h>

#include "kernels/avx512/tiles.h"
#include "kernels/prefetch.h"

enum { SA_PANEL_MR = SA_AVX512_MR, SA_PANEL_NR = SA_AVX512_NR };

/* r[a]: values p..p+15 of key a -> dst[p' * SA_PANEL_NR + a] for the 16
 * values p' (16 panel rows of 16 keys). r is used as scratch. */
static inline __attribute__((always_inline)) void
sa_panel_store16x16(__m512 r[16], float *dst) {
  __m512 t[16];
  /* 32-bit, then 64-bit interleaves within 128-bit lanes, then a 4 x 4
   * transpose of the 128-bit lanes themselves. */
  for (size_t a = 0; a < 16; a += 2) {
    t[a] = _mm512_unpacklo_ps(r[a], r[a + 1]);
    t[a + 1] = _mm512_unpackhi_ps(r[a], r[a + 1]);
  }
  for (size_t g = 0; g < 16; g += 4) {
    __m512d t0 = _mm512_castps_pd(t[g]), t1 = _mm512_castps_pd(t[g + 1]);
    __m512d t2 = _mm512_castps_pd(t[g + 2]), t3 = _mm512_castps_pd(t[g + 3]);
    r[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    r[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    r[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    r[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  /* r[4 g + c], 128-bit lane L: keys 4g..4g+3 at value 4L + c */
  for (size_t c = 0; c < 4; c++) {
    __m512 w0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44);
    __m512 w1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xee);
    __m512 w2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
    __m512 w3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xee);
    _mm512_store_ps(dst + (0 + c) * SA_PANEL_NR,
                    _mm512_shuffle_f32x4(w0, w2, 0x88));
    _mm512_store_ps(dst + (4 + c) * SA_PANEL_NR,
                    _mm512_shuffle_f32x4(w0, w2, 0xdd));
    _mm512_store_ps(dst + (8 + c) * SA_PANEL_NR,
                    _mm512_shuffle_f32x4(w1, w3, 0x88));
    _mm512_store_ps(dst + (12 + c) * SA_PANEL_NR,
                    _mm512_shuffle_f32x4(w1, w3, 0xdd));
  }
}

/* s[0..mr)[0..SA_PANEL_NR) (+)= q[0..mr)[0..kc) . panel, lanes outside k0/k1
 * left alone, naming pf's lines between chunks of p: the next
 * panel's rows (kernels/prefetch.h, sa_spread). mr is a constant at every
 * call, so acc lives in registers. */
static inline __attribute__((always_inline)) void
sa_panel_tile(size_t mr, size_t kc, const float *q, size_t ldq,
              const float *panel, float *s, size_t lds, __mmask16 k0,
              __mmask16 k1, int first, int last, float scale, sa_spread *pf) {
  __m512 acc[SA_PANEL_MR][2];
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++) {
    acc[r][0] =
        first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k0, s + r * lds);
    acc[r][1] = first ? _mm512_setzero_ps()
                      : _mm512_maskz_loadu_ps(k1, s + r * lds + 16);
  }
  for (size_t p0 = 0; p0 < kc; p0 += SA_SPREAD_STEPS) {
    sa_spread_lines(pf);
    size_t pe = kc - p0 < SA_SPREAD_STEPS ? kc : p0 + SA_SPREAD_STEPS;
    for (size_t p = p0; p < pe; p++) {
      __m512 b0 = _mm512_load_ps(panel + p * SA_PANEL_NR);
      __m512 b1 = _mm512_load_ps(panel + p * SA_PANEL_NR + 16);
#pragma GCC unroll 8
      for (size_t r = 0; r < mr; r++) {
        __m512 a = _mm512_set1_ps(q[r * ldq + p]);
        acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
      }
    }
  }
  const __m512 vs = _mm512_set1_ps(last ? scale : 1.0f);
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++) {
    _mm512_mask_storeu_ps(s + r * lds, k0, _mm512_mul_ps(acc[r][0], vs));
    _mm512_mask_storeu_ps(s + r * lds + 16, k1, _mm512_mul_ps(acc[r][1], vs));
  }
}

#endif /* SA_AVX512_PANEL_H */
