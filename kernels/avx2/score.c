/*
 * score, AVX2: s[i][j] = scale * sum_p q[i][p] * k[j][p].
 *
 * A GEMM micro-kernel rather than blocked dot products: dot products along d
 * need a horizontal reduction per s[i][j], which at d = 128 costs about a
 * quarter of the FMA time. Instead each block of NR = 16 keys is transposed
 * into a panel on the stack (KC values of d at a time), and one step of p is
 * two aligned panel loads and MR = 6 broadcasts of q[i][p] feeding 12 FMAs
 * into 6 x 16 accumulators: 12 of the 16 ymm registers, the rest for the
 * panel and the broadcast. Every s[i][j] is one lane summing p in order, as
 * the oracle does; the panel is reused by every block of rows, so packing is
 * O(n d) work against O(m n d) FMAs.
 *
 * Tails: keys past n are packed as zeros and their lanes left out of the
 * store; a partial vector (d past its end, keys past n in s) is copied
 * through the stack, never over-read (util.h says why not maskload);
 * leftover rows run the same tile with fewer rows. d longer than KC is summed
 * in chunks through s, scaled once after the last chunk.
 */
#include <immintrin.h>

#include "kernels.h"
#include "util.h"

enum { MR = 6, NR = 16, KC = 256 };

/* 8 keys x 8 values of d -> 8 panel rows of 8 keys. Keys at or past nk and
 * values at or past np are read as 0 without touching memory. */
static inline void pack8x8(const float *k, size_t ldk, size_t nk, size_t np,
                           float *dst) {
  __m256 r[8], t[8];
  for (size_t a = 0; a < 8; a++)
    r[a] = a >= nk   ? _mm256_setzero_ps()
           : np >= 8 ? _mm256_loadu_ps(k + a * ldk)
                     : sa_load8_part(k + a * ldk, np);
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
    _mm256_store_ps(dst + c * NR, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
    _mm256_store_ps(dst + (4 + c) * NR,
                    _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
  }
}

/* panel[p][0..NR) = k[0..nk)[p] for p < round_up(kc, 8), zero-padded. */
static void pack_panel(const float *k, size_t ldk, size_t nk, size_t kc,
                       float *panel) {
  for (size_t p = 0; p < kc; p += 8)
    for (size_t g = 0; g < NR; g += 8)
      pack8x8(k + g * ldk + p, ldk, nk > g ? nk - g : 0, kc - p,
              panel + p * NR + g);
}

/* s[0..mr)[0..nk) (+)= q[0..mr)[0..kc) . panel. mr is a constant at every
 * call, so acc lives in registers. */
static inline __attribute__((always_inline)) void
tile(size_t mr, size_t kc, const float *q, size_t ldq, const float *panel,
     float *s, size_t lds, size_t nk, int first, int last, float scale) {
  __m256 acc[MR][2];
  const size_t n0 = nk < 8 ? nk : 8, n1 = nk > 8 ? nk - 8 : 0;
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++) {
    if (first) {
      acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    } else if (nk == NR) {
      acc[r][0] = _mm256_loadu_ps(s + r * lds);
      acc[r][1] = _mm256_loadu_ps(s + r * lds + 8);
    } else {
      acc[r][0] = sa_load8_part(s + r * lds, n0);
      acc[r][1] = sa_load8_part(s + r * lds + 8, n1);
    }
  }
  for (size_t p = 0; p < kc; p++) {
    __m256 b0 = _mm256_load_ps(panel + p * NR);
    __m256 b1 = _mm256_load_ps(panel + p * NR + 8);
#pragma GCC unroll 6
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_broadcast_ss(q + r * ldq + p);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  const __m256 vs = _mm256_set1_ps(last ? scale : 1.0f);
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++) {
    __m256 x0 = _mm256_mul_ps(acc[r][0], vs), x1 = _mm256_mul_ps(acc[r][1], vs);
    if (nk == NR) {
      _mm256_storeu_ps(s + r * lds, x0);
      _mm256_storeu_ps(s + r * lds + 8, x1);
    } else {
      sa_store8_part(s + r * lds, n0, x0);
      sa_store8_part(s + r * lds + 8, n1, x1);
    }
  }
}

void sa_score__avx2(size_t m, size_t n, size_t d, const float *q, size_t ldq,
                    const float *k, size_t ldk, float scale, float *s,
                    size_t lds) {
  _Alignas(32) float panel[KC * NR];
  for (size_t j0 = 0; j0 < n; j0 += NR) {
    size_t nk = n - j0 < NR ? n - j0 : NR;
    size_t p0 = 0;
    do { /* at least once, so that d = 0 still writes s = 0 */
      size_t kc = d - p0 < KC ? d - p0 : KC;
      int first = p0 == 0, last = p0 + kc == d;
      pack_panel(k + j0 * ldk + p0, ldk, nk, kc, panel);
      for (size_t i0 = 0; i0 < m; i0 += MR) {
        const float *qi = q + i0 * ldq + p0;
        float *si = s + i0 * lds + j0;
        switch (m - i0 < MR ? m - i0 : MR) {
        case 6:
          tile(6, kc, qi, ldq, panel, si, lds, nk, first, last, scale);
          break;
        case 5:
          tile(5, kc, qi, ldq, panel, si, lds, nk, first, last, scale);
          break;
        case 4:
          tile(4, kc, qi, ldq, panel, si, lds, nk, first, last, scale);
          break;
        case 3:
          tile(3, kc, qi, ldq, panel, si, lds, nk, first, last, scale);
          break;
        case 2:
          tile(2, kc, qi, ldq, panel, si, lds, nk, first, last, scale);
          break;
        default:
          tile(1, kc, qi, ldq, panel, si, lds, nk, first, last, scale);
          break;
        }
      }
      p0 += kc;
    } while (p0 < d);
  }
}
