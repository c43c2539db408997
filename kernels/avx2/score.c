/*
 * score, AVX2: s[i][j] = scale * sum_p q[i][p] * k[j][p].
 *
 * Two ways, chosen by m. With many rows, a GEMM micro-kernel: dot products
 * along d need a horizontal reduction per s[i][j], which at d = 128 costs
 * about a quarter of the FMA time. Instead each block of NR = 16 keys is
 * transposed into a panel on the stack (KC values of d at a time), and one
 * step of p is two aligned panel loads and MR = 6 broadcasts of q[i][p]
 * feeding 12 FMAs into 6 x 16 accumulators: 12 of the 16 ymm registers, the
 * rest for the panel and the broadcast. Every s[i][j] is one lane summing p
 * in order, as the oracle does; the panel is reused by every block of rows,
 * so packing is O(n d) work against O(m n d) FMAs.
 *
 * With few rows (decode: one query row, or the query heads of one GQA
 * group) packing is the cost: each key is transposed for only m rows of use,
 * and the panel gathers 32 bytes from each of 16 rows at a time, a pattern
 * the hardware prefetchers do not follow, so K comes from memory at a third
 * of its bandwidth. There, blocked dot products read K rows as they lie:
 * DM = 4 rows x DN = 3 keys of vector accumulators over d (12 registers, 3
 * for the keys, 1 for a row of q), a transposed reduction per pair of rows,
 * and K's lines prefetched in address order a few keys ahead
 * (kernels/prefetch.h says why not row by row as the tile reads them:
 * from memory that doubled the rate K arrives at). Four rows, not two, because
 * decode stacks the four query heads of a GQA group: each vector of K is then
 * loaded once for all four rows instead of once per pair, and decode runs about
 * a fifth faster (Zen 5, d = 128, n = 256 per call; 4 x 2 gained less). With
 * one or two rows, 4 keys fill the registers better. K comes at twice the rate
 * of the packed path from memory up to m = 16, and from cache the dots keep
 * up with the GEMM up to DOTS_M rows (measured on Zen 5, n = 256, d = 128).
 *
 * Tails: GEMM: keys past n are packed as zeros and their lanes left out of
 * the store; d longer than KC is summed in chunks through s, scaled once
 * after the last chunk. Dots: missing keys of the last block re-read its
 * first key, left out of the store. Both: a partial vector (d past its end,
 * keys past n in s) is copied through the stack, never over-read (util.h
 * says why not maskload); leftover rows run the same tile with fewer rows.
 */
#include <immintrin.h>

#include "kernels/avx2/panel.h"
#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"

enum { MR = SA_PANEL_MR, NR = SA_PANEL_NR, KC = SA_AVX2_KC };
enum { DOTS_M = SA_AVX2_DOTS_M, DM = SA_AVX2_DM, DN = SA_AVX2_DN };

/* 8 keys x 8 values of d -> 8 panel rows of 8 keys. Keys at or past nk and
 * values at or past np are read as 0 without touching memory. */
static inline void pack8x8(const float *k, size_t ldk, size_t nk, size_t np,
                           float *dst) {
  __m256 r[8];
  for (size_t a = 0; a < 8; a++)
    r[a] = a >= nk   ? _mm256_setzero_ps()
           : np >= 8 ? _mm256_loadu_ps(k + a * ldk)
                     : sa_load8_part(k + a * ldk, np);
  sa_panel_store8x8(r, dst);
}

/* panel[p][0..NR) = k[0..nk)[p] for p < round_up(kc, 8), zero-padded. */
static void pack_panel(const float *k, size_t ldk, size_t nk, size_t kc,
                       float *panel) {
  for (size_t p = 0; p < kc; p += 8)
    for (size_t g = 0; g < NR; g += 8)
      pack8x8(k + g * ldk + p, ldk, nk > g ? nk - g : 0, kc - p,
              panel + p * NR + g);
}

static void score_packed(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const float *k, size_t ldk, float scale,
                         float *s, size_t lds) {
  _Alignas(32) float panel[KC * NR];
  const size_t chunks =
      (m + MR - 1) / MR * ((d + SA_SPREAD_STEPS - 1) / SA_SPREAD_STEPS);
  for (size_t j0 = 0; j0 < n; j0 += NR) {
    size_t nk = n - j0 < NR ? n - j0 : NR;
    /* the next panel's rows, while this one is used */
    sa_spread pf = sa_spread_panel(k, ldk * sizeof(float), d * sizeof(float), n,
                                   j0 + nk, NR, chunks);
    size_t p0 = 0;
    do { /* at least once, so that d = 0 still writes s = 0 */
      size_t kc = d - p0 < KC ? d - p0 : KC;
      int first = p0 == 0, last = p0 + kc == d;
      pack_panel(k + j0 * ldk + p0, ldk, nk, kc, panel);
      for (size_t i0 = 0; i0 < m; i0 += MR) {
        const float *qi = q + i0 * ldq + p0;
        float *si = s + i0 * lds + j0;
#define TILE(r)                                                                \
  sa_panel_tile(r, kc, qi, ldq, panel, si, lds, nk, first, last, scale, &pf)
        SA_UNROLL_1_6(m - i0 < MR ? m - i0 : MR, TILE);
#undef TILE
      }
      p0 += kc;
    } while (p0 < d);
  }
}

/* s[0..mr)[0..nk) = scale * q[0..mr) . kr[0..nk), nk <= dn, while pf (if
 * any) names K's lines up to row `limit`, dn every 16 values: a row's worth
 * per key and 64 bytes of d, the rate the tile reads them. mr and dn are
 * constants at every call, so acc lives in registers. */
static inline __attribute__((always_inline)) void
dots(size_t mr, size_t dn, size_t d, const float *q, size_t ldq,
     const float *const *kr, sa_prefetcher *pf, size_t limit, float *s,
     size_t lds, size_t nk, float scale) {
  __m256 acc[DM][4];
  for (size_t r = 0; r < DM; r++)
    for (size_t c = 0; c < 4; c++)
      acc[r][c] = _mm256_setzero_ps();
  size_t p = 0;
  for (; p + 8 <= d; p += 8) {
    __m256 b[4];
    for (size_t c = 0; c < dn; c++) {
      if (pf && p % 16 == 0)
        sa_prefetch_next(pf, limit, 0, 1);
      b[c] = _mm256_loadu_ps(kr[c] + p);
    }
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_loadu_ps(q + r * ldq + p);
      for (size_t c = 0; c < dn; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  if (p < d) {
    __m256 b[4];
    for (size_t c = 0; c < dn; c++)
      b[c] = sa_load8_part(kr[c] + p, d - p);
    for (size_t r = 0; r < mr; r++) {
      __m256 a = sa_load8_part(q + r * ldq + p, d - p);
      for (size_t c = 0; c < dn; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  sa_dots_store8(mr, dn, acc, scale, s, lds, nk);
}

/* Keys in blocks of dn, each block against every row in blocks of DM. */
static inline __attribute__((always_inline)) void
score_dots(size_t dn, size_t m, size_t n, size_t d, const float *q, size_t ldq,
           const float *k, size_t ldk, float scale, float *s, size_t lds) {
  const size_t ahead = sa_prefetch_rows_ahead(d * sizeof(float), 4096);
  sa_prefetcher pf =
      sa_prefetcher_at(k, ldk * sizeof(float), d * sizeof(float), n, ahead);
  for (size_t j0 = 0; j0 < n; j0 += dn) {
    size_t nk = n - j0 < dn ? n - j0 : dn;
    const float *kr[4];
    for (size_t c = 0; c < dn; c++)
      kr[c] = k + (c < nk ? j0 + c : j0) * ldk;
    sa_prefetcher_raise(&pf, j0 + ahead);
    for (size_t i0 = 0; i0 < m; i0 += DM) {
      /* later row blocks find these keys in cache */
      sa_prefetcher *pi = i0 == 0 ? &pf : NULL;
      const float *qi = q + i0 * ldq;
      float *si = s + i0 * lds + j0;
#define DOTS(r)                                                                \
  dots(r, dn, d, qi, ldq, kr, pi, j0 + dn + ahead, si, lds, nk, scale)
      SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
    }
  }
}

void sa_score__avx2(size_t m, size_t n, size_t d, const float *q, size_t ldq,
                    const float *k, size_t ldk, float scale, float *s,
                    size_t lds) {
  if (m <= SA_AVX2_DOTS_M_WIDE)
    score_dots(SA_AVX2_DN_WIDE, m, n, d, q, ldq, k, ldk, scale, s, lds);
  else if (m <= DOTS_M)
    score_dots(DN, m, n, d, q, ldq, k, ldk, scale, s, lds);
  else
    score_packed(m, n, d, q, ldq, k, ldk, scale, s, lds);
}
