/*
 * score_t, AVX2: s[i][j] = scale * sum_p q[i][p] * k[j][p] with K in f16,
 * bf16 or q8_0 (ldk in that type's units) and Q, s, the sums in fp32.
 *
 * The f32 kernel (score.c, whose header gives the reasons for its shape)
 * with one change: each vector of K is widened exactly in registers
 * (widen.h) where the f32 kernel loads it, so the FMAs, their order and
 * every rounding are the f32 kernel's on the oracle's widened values.
 *
 * Decode (m <= DOTS_M): blocked dot products, DM = 4 rows x DN = 3 keys
 * (4 keys for m <= 2), K rows read as they lie. Each K vector is widened
 * once and used by all the block's rows, so widening is 1-3 uops per 8
 * values against 4 FMAs and hides under the loads, which carry half (f16,
 * bf16) or 17/64 (q8_0) of f32's bytes. The d loop steps a q8_0 block (32
 * values, 34 bytes) or 64 bytes of f16 / bf16 at a time: one scale per key
 * per block. K's rows are prefetched a tile at a time, whole and in
 * address order, 4 KiB of rows ahead (kernels/prefetch.h): more keys ahead
 * than the f32 kernel, since a narrow row is fewer bytes and the prefetch
 * must still run as far ahead in time, and not a line a step as there,
 * since these kernels are nearer bound by their instructions.
 *
 * Prefill (m > DOTS_M): the GEMM on a packed panel, K widened while it is
 * transposed into the panel, so the MR = 6 x NR = 16 FMA loop is the f32
 * kernel's unchanged and widening is O(n d) against O(m n d) FMAs.
 *
 * Tails: as score.c. Dots: missing keys of the last block re-read its first
 * key, left out of the store. GEMM: keys past n are packed as zeros. d past
 * the last full vector (f16 / bf16 only: q8_0 rows are whole blocks) is
 * copied through the stack, never over-read; leftover rows run the same
 * tile with fewer rows.
 */
#include <immintrin.h>

#include "kernels/avx2/panel.h"
#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/avx2/widen.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"

enum { MR = SA_PANEL_MR, NR = SA_PANEL_NR, KC = SA_AVX2_KC };
enum { DOTS_M = SA_AVX2_DOTS_M, DM = SA_AVX2_DM, DN = SA_AVX2_DN };

/* 8 keys x 8 values of d from element p -> 8 panel rows of 8 keys. Keys at
 * or past nk and values at or past np are 0 without touching memory. */
SA_INLINE void pack8x8(sa_dtype t, const char *k, size_t ldb, size_t p,
                       size_t nk, size_t np, float *dst) {
  __m256 r[8];
  for (size_t a = 0; a < 8; a++)
    r[a] = a >= nk ? _mm256_setzero_ps() : sa_widen8_at(t, k + a * ldb, p, np);
  sa_panel_store8x8(r, dst);
}

/* panel[p][0..NR) = k[0..nk)[p0 + p] for p < round_up(kc, 8), zero-padded */
SA_INLINE void pack_panel(sa_dtype t, const char *k, size_t ldb, size_t p0,
                          size_t nk, size_t kc, float *panel) {
  for (size_t p = 0; p < kc; p += 8)
    for (size_t g = 0; g < NR; g += 8)
      pack8x8(t, k + g * ldb, ldb, p0 + p, nk > g ? nk - g : 0, kc - p,
              panel + p * NR + g);
}

SA_INLINE void score_packed(sa_dtype t, size_t m, size_t n, size_t d,
                            const float *q, size_t ldq, const char *k,
                            size_t ldb, float scale, float *s, size_t lds) {
  _Alignas(32) float panel[KC * NR];
  const size_t chunks =
      (m + MR - 1) / MR * ((d + SA_SPREAD_STEPS - 1) / SA_SPREAD_STEPS);
  for (size_t j0 = 0; j0 < n; j0 += NR) {
    size_t nk = n - j0 < NR ? n - j0 : NR;
    /* the next panel's rows, while this one is used */
    sa_spread pf =
        sa_spread_panel(k, ldb, sa_row_bytes(t, t == SA_Q8_0 ? d / 32 : d), n,
                        j0 + nk, NR, chunks);
    size_t p0 = 0;
    do { /* at least once, so that d = 0 still writes s = 0 */
      size_t kc = d - p0 < KC ? d - p0 : KC;
      int first = p0 == 0, last = p0 + kc == d;
      pack_panel(t, k + j0 * ldb, ldb, p0, nk, kc, panel);
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

/* acc[r][c] += q[r][p..p+8) * widened k[c][p..p+8), for r < mr, c < dn;
 * kx[c] is element p's address in key c's row (widen.h's sa_elem_at). */
SA_INLINE void fma_step(sa_dtype t, size_t mr, size_t dn, const float *q,
                        size_t ldq, const char *const *kx, const __m256 *sc,
                        __m256 acc[DM][4]) {
  __m256 b[4];
  for (size_t c = 0; c < dn; c++)
    b[c] = sa_widen8(t, kx[c], sc[c]);
  for (size_t r = 0; r < mr; r++) {
    __m256 a = _mm256_loadu_ps(q + r * ldq);
    for (size_t c = 0; c < dn; c++)
      acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
  }
}

/* Advance element addresses of dn keys by 8 values (within a q8_0 block). */
SA_INLINE void step8(sa_dtype t, size_t dn, const char **kx) {
  for (size_t c = 0; c < dn; c++)
    kx[c] += t == SA_Q8_0 ? 8 : 16;
}

/* s[0..mr)[0..nk) = scale * q[0..mr) . kr[0..nk), nk <= dn. mr and dn are
 * constants at every call, so acc lives in registers. */
SA_INLINE void dots(sa_dtype t, size_t mr, size_t dn, size_t d, const float *q,
                    size_t ldq, const char *const *kr, float *s, size_t lds,
                    size_t nk, float scale) {
  __m256 acc[DM][4], sc[4];
  for (size_t r = 0; r < DM; r++)
    for (size_t c = 0; c < 4; c++)
      acc[r][c] = _mm256_setzero_ps();
  for (size_t c = 0; c < 4; c++)
    sc[c] = _mm256_setzero_ps();
  const char *kx[4];
  size_t p = 0;
  for (; p + 32 <= d; p += 32) {
    /* one address and one scale per key per 32 values: the block's */
    for (size_t c = 0; c < dn; c++) {
      kx[c] = sa_elem_at(t, kr[c], p);
      if (t == SA_Q8_0)
        sc[c] = sa_q8_scale(kr[c], p);
    }
    for (size_t u = 0; u < 32; u += 8, step8(t, dn, kx))
      fma_step(t, mr, dn, q + p + u, ldq, kx, sc, acc);
  }
  for (size_t c = 0; c < dn; c++) {
    kx[c] = sa_elem_at(t, kr[c], p);
  }
  if (t != SA_Q8_0) {
    for (; p + 8 <= d; p += 8, step8(t, dn, kx))
      fma_step(t, mr, dn, q + p, ldq, kx, sc, acc);
    if (p < d) {
      __m256 b[4];
      for (size_t c = 0; c < dn; c++)
        b[c] = sa_widen8_part(t, kx[c], d - p);
      for (size_t r = 0; r < mr; r++) {
        __m256 a = sa_load8_part(q + r * ldq + p, d - p);
        for (size_t c = 0; c < dn; c++)
          acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
      }
    }
  }
  sa_dots_store8(mr, dn, acc, scale, s, lds, nk);
}

/* Keys in blocks of dn, each block against every row in blocks of DM. */
SA_INLINE void score_dots(sa_dtype t, size_t dn, size_t m, size_t n, size_t d,
                          const float *q, size_t ldq, const char *k, size_t ldb,
                          size_t rowb, float scale, float *s, size_t lds) {
  const size_t ahead = sa_prefetch_rows_ahead(rowb, 4096);
  sa_prefetcher pf = sa_prefetcher_at(k, ldb, rowb, n, ahead);
  for (size_t j0 = 0; j0 < n; j0 += dn) {
    size_t nk = n - j0 < dn ? n - j0 : dn;
    const char *kr[4];
    for (size_t c = 0; c < dn; c++)
      kr[c] = k + (c < nk ? j0 + c : j0) * ldb;
    sa_prefetcher_raise(&pf, j0 + ahead);
    sa_prefetch_until(&pf, j0 + dn + ahead, 0);
    for (size_t i0 = 0; i0 < m; i0 += DM) {
      const float *qi = q + i0 * ldq;
      float *si = s + i0 * lds + j0;
#define DOTS(r) dots(t, r, dn, d, qi, ldq, kr, si, lds, nk, scale)
      SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
    }
  }
}

SA_INLINE void score_t(sa_dtype t, size_t m, size_t n, size_t d, const float *q,
                       size_t ldq, const void *k, size_t ldk, float scale,
                       float *s, size_t lds) {
  const char *kb = k;
  size_t ldb = sa_row_bytes(t, ldk);
  /* bytes a row's d values take (q8_0: d / 32 blocks) */
  size_t rowb = t == SA_Q8_0 ? sa_row_bytes(t, d / 32) : sa_row_bytes(t, d);
  if (m > DOTS_M)
    score_packed(t, m, n, d, q, ldq, kb, ldb, scale, s, lds);
  else if (m <= SA_AVX2_DOTS_M_WIDE)
    score_dots(t, SA_AVX2_DN_WIDE, m, n, d, q, ldq, kb, ldb, rowb, scale, s,
               lds);
  else
    score_dots(t, DN, m, n, d, q, ldq, kb, ldb, rowb, scale, s, lds);
}

void sa_score_f16__avx2(size_t m, size_t n, size_t d, const float *q,
                        size_t ldq, const void *k, size_t ldk, float scale,
                        float *s, size_t lds) {
  score_t(SA_F16, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

void sa_score_bf16__avx2(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const void *k, size_t ldk, float scale,
                         float *s, size_t lds) {
  score_t(SA_BF16, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

void sa_score_q8_0__avx2(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const void *k, size_t ldk, float scale,
                         float *s, size_t lds) {
  score_t(SA_Q8_0, m, n, d, q, ldq, k, ldk, scale, s, lds);
}
