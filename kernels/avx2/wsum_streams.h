/*
 * wsum for a few rows over a long block of keys, AVX2: V read as four
 * streams, whole rows side by side. wsum.c and wsum_t.c take it for
 * m <= SA_AVX2_WSUM_STREAM_M rows over n >= 4 SA_AVX2_WSUM_STREAM_KEYS
 * keys (sa_wsum_streams_take), and decode.c's value sums for such a chunk,
 * its V rows from a list (the pages they lie in); the many-row tiles stay
 * theirs.
 *
 * Why: a register tile sums a few columns of a row at a time, so a row of
 * V is read in pieces, one stream of them; one core reads memory faster as
 * several streams side by side (the read probe reads four: Zen 3 VM, 512-
 * byte rows, 15-18 GB/s as one stream, 19-22 as four), and the sums of
 * whole rows do not fit registers. Here the sums of mr <= 4 rows live in
 * an L1 buffer (acc, mr x cw floats, cw <= SA_AVX2_WSUM_STREAM_COLS), and
 * a step takes key j of each quarter of the block: per 8 columns the four
 * rows' vectors are loaded (or widened) once, and each row loads its sums,
 * adds the four products in stream order (four FMAs, one chain) and stores
 * them. A store and a load per four FMAs cost less than the tiles' parking
 * and restarts. Zen 3 VM, dv = 128, against the tiles, 4096-key blocks
 * from memory: f32 m = 1, 2, 4 0.52-0.57x, 0.52-0.54x and 0.71-0.81x the
 * time; f16 m = 1 and 4 0.39x and 0.59x; V in L2 (256-1024 keys) f32 m = 1
 * 0.45-0.50x, m = 4 0.65-0.70x (docs/DESIGN.md has the rest). No software
 * prefetch: naming each stream's rows 4-16 ahead was level for f32 at
 * m = 4 and slower everywhere else (f16 m = 4 1.2x, f32 m = 1-3 1.05-1.2x).
 *
 * The order: o[i][c] sums key j of stream 0, 1, 2, 3, then j + 1 of each,
 * then the n % 4 keys past the streams in order, one chain per element;
 * the same for any thread count (it depends on n alone), not the oracle's
 * order, so results differ from it by rounding within wsum's bound. beta
 * as wsum.c: o = beta * o rounded on its own, plus the sum. Streams of n / 4
 * keys: an odd length, which keeps the four rows out of one cache set
 * when n is a power of two, was level from memory and slower in L2 (more
 * keys left past the streams; m = 4, 64 keys 1.12x the tiles' time against
 * 0.98x).
 *
 * Tails: dv past a group of STREAM_COLS columns goes in more groups, each
 * over every key; a group's last cols < 8 columns are loaded through the
 * stack on every step (wsum_ends.h, widen.h), never over-read; acc rows are
 * whole vectors. Static inline only (util.h says why).
 */
#ifndef SA_AVX2_WSUM_STREAMS_H
#define SA_AVX2_WSUM_STREAMS_H

#include <immintrin.h>
#include <stddef.h>

#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/avx2/widen.h"
#include "kernels/avx2/wsum_ends.h"
#include "kernels/unroll.h"
#include "simdattn.h"

enum {
  SA_WS_S = 4, /* streams */
  SA_WS_M = SA_AVX2_WSUM_STREAM_M,
  SA_WS_COLS = SA_AVX2_WSUM_STREAM_COLS,
  SA_WS_PK = 16, /* keys whose probabilities are staged at a time */
};

/* Whether wsum takes the streams for m rows over n keys. */
SA_INLINE int sa_wsum_streams_take(size_t m, size_t n) {
  return m <= SA_WS_M && n >= SA_WS_S * SA_AVX2_WSUM_STREAM_KEYS;
}

/* Row j of V: ldb bytes apart from v, or at list[j]. */
#define SA_WS_ROW(j) (list ? (const char *)list[j] : v + (j)*ldb)

/* Columns [c, c + w) (w <= 8) of a V row of type t at row; sc: for q8_0,
 * the scale of the block holding them. */
SA_INLINE __m256 sa_ws_load(sa_dtype t, const char *row, size_t c, size_t w,
                            __m256 sc) {
  if (t == SA_F32)
    return sa_wsum_load((const float *)row + c, w);
  if (t == SA_Q8_0)
    return sa_widen8(t, sa_elem_at(t, row, c), sc);
  return sa_widen8_at(t, row, c, w);
}

/* The first 8 columns of mr rows of acc (ld floats apart) += the products
 * of key j of each stream (nq keys apart) in stream order, with V's
 * columns [c, c + w) (w <= 8); first: acc starts at 0 (not read). sc: the
 * streams' q8_0 block scales. */
SA_INLINE void sa_ws_cols(sa_dtype t, size_t mr, int first, size_t c, size_t w,
                          const char *row[SA_WS_S], __m256 a[SA_WS_M][SA_WS_S],
                          const __m256 *sc, float *acc, size_t ld) {
  __m256 b[SA_WS_S];
  for (size_t u = 0; u < SA_WS_S; u++)
    b[u] = sa_ws_load(t, row[u], c, w, sc[u]);
  for (size_t r = 0; r < mr; r++) {
    __m256 x =
        first ? _mm256_mul_ps(a[r][0], b[0])
              : _mm256_fmadd_ps(a[r][0], b[0], _mm256_load_ps(acc + r * ld));
    for (size_t u = 1; u < SA_WS_S; u++)
      x = _mm256_fmadd_ps(a[r][u], b[u], x);
    _mm256_store_ps(acc + r * ld, x);
  }
}

/* V's columns [c0, c0 + cw) of mr rows (acc's [0, cw)): acc += key j of
 * each stream for j in [j0, j1); first (j0 = 0): acc starts at 0. mr,
 * first are constants at every call. A q8_0 group is whole blocks (c0 and
 * cw multiples of 32): each stream's scale is fetched once a block (m = 1,
 * against the tiles: 0.51x the time from memory, 0.68x in L2; fetched once
 * a vector, 0.80x and 1.11x). Each stretch of PK steps first copies its
 * probabilities into pk, so that the broadcasts read 16 lines of the stack:
 * read from p, whose rows are often a power of two apart (a score buffer of
 * 4096 keys), the 4 rows x 4 streams fell in one or two cache sets, and
 * m = 4, f16, from memory took 0.85x the tiles' time where it takes 0.71x
 * with them copied. */
SA_INLINE void sa_ws_keys(sa_dtype t, size_t mr, int first, size_t j0,
                          size_t j1, size_t nq, size_t c0, size_t cw,
                          const float *p, size_t ldp, const char *v, size_t ldb,
                          const void *const *list, float *acc, size_t ld) {
  _Alignas(32) float pk[SA_WS_M][SA_WS_S][SA_WS_PK];
  for (size_t jc = j0; jc < j1; jc += SA_WS_PK) {
    const size_t nk = j1 - jc < SA_WS_PK ? j1 - jc : SA_WS_PK;
    for (size_t r = 0; r < mr; r++)
      for (size_t u = 0; u < SA_WS_S; u++) {
        const float *src = p + r * ldp + u * nq + jc;
        if (nk == SA_WS_PK)
          for (size_t k = 0; k < SA_WS_PK; k += 8)
            _mm256_store_ps(&pk[r][u][k], _mm256_loadu_ps(src + k));
        else
          for (size_t k = 0; k < nk; k++)
            pk[r][u][k] = src[k];
      }
    for (size_t k = 0; k < nk; k++) {
      const size_t j = jc + k;
      const char *row[SA_WS_S];
      __m256 a[SA_WS_M][SA_WS_S], sc[SA_WS_S];
      for (size_t u = 0; u < SA_WS_S; u++) {
        row[u] = SA_WS_ROW(u * nq + j);
        sc[u] = _mm256_setzero_ps();
        for (size_t r = 0; r < mr; r++)
          a[r][u] = _mm256_broadcast_ss(&pk[r][u][k]);
      }
      size_t c = 0;
      if (t == SA_Q8_0) {
        for (; c < cw; c += 32) {
          for (size_t u = 0; u < SA_WS_S; u++)
            sc[u] = sa_q8_scale(row[u], c0 + c);
          for (size_t h = 0; h < 32; h += 8)
            sa_ws_cols(t, mr, first, c0 + c + h, 8, row, a, sc, acc + c + h,
                       ld);
        }
        continue;
      }
      for (; c + 8 <= cw; c += 8)
        sa_ws_cols(t, mr, first, c0 + c, 8, row, a, sc, acc + c, ld);
      if (c < cw)
        sa_ws_cols(t, mr, first, c0 + c, cw - c, row, a, sc, acc + c, ld);
    }
  }
}

/* The last pass over acc: the keys past the streams, [j0, n), added in
 * order, and o = beta * o + acc (beta NULL: o = acc). */
SA_INLINE void sa_ws_last(sa_dtype t, size_t mr, size_t j0, size_t n, size_t c0,
                          size_t cw, const float *p, size_t ldp, const char *v,
                          size_t ldb, const void *const *list,
                          const float *beta, float *o, size_t ldo,
                          const float *acc, size_t ld) {
  const sa_wsum_ends e = {0, 1, NULL, 0};
  for (size_t c = 0; c < cw; c += 8) {
    const size_t w = cw - c < 8 ? cw - c : 8;
    for (size_t r = 0; r < mr; r++) {
      __m256 x = _mm256_load_ps(acc + r * ld + c);
      for (size_t j = j0; j < n; j++)
        x = _mm256_fmadd_ps(
            _mm256_broadcast_ss(p + r * ldp + j),
            t == SA_Q8_0
                ? sa_widen8_at(t, SA_WS_ROW(j), c0 + c, w)
                : sa_ws_load(t, SA_WS_ROW(j), c0 + c, w, _mm256_setzero_ps()),
            x);
      sa_wsum_finish(e, r, 0, beta, o + r * ldo + c, w, x);
    }
  }
}

/* mr rows, columns [c0, c0 + cw) of a group, over keys [0, n). */
SA_INLINE void sa_ws_group(sa_dtype t, size_t mr, size_t n, size_t c0,
                           size_t cw, const float *p, size_t ldp, const char *v,
                           size_t ldb, const void *const *list,
                           const float *beta, float *o, size_t ldo,
                           float *acc) {
  const size_t ld = (cw + 7) & ~(size_t)7;
  const size_t nq = n / SA_WS_S;
  sa_ws_keys(t, mr, 1, 0, 1, nq, c0, cw, p, ldp, v, ldb, list, acc, ld);
  sa_ws_keys(t, mr, 0, 1, nq, nq, c0, cw, p, ldp, v, ldb, list, acc, ld);
  sa_ws_last(t, mr, SA_WS_S * nq, n, c0, cw, p, ldp, v, ldb, list, beta, o, ldo,
             acc, ld);
}

/* wsum (wsum_t for t other than SA_F32) of m <= SA_WS_M rows over n keys,
 * sa_wsum_streams_take(m, n); V's rows ldb bytes apart from v, or (list
 * not NULL: decode.c's value sums) at list[j]. */
SA_INLINE void sa_wsum_streams(sa_dtype t, size_t m, size_t n, size_t dv,
                               const float *p, size_t ldp, const char *v,
                               size_t ldb, const void *const *list,
                               const float *beta, float *o, size_t ldo) {
  _Alignas(32) float acc[SA_WS_M * SA_WS_COLS];
  for (size_t c0 = 0; c0 < dv; c0 += SA_WS_COLS) {
    const size_t cw = dv - c0 < SA_WS_COLS ? dv - c0 : SA_WS_COLS;
#define GROUP(mr)                                                              \
  sa_ws_group(t, mr, n, c0, cw, p, ldp, v, ldb, list, beta, o + c0, ldo, acc)
    SA_UNROLL_1_4(m, GROUP);
#undef GROUP
  }
}

#endif /* SA_AVX2_WSUM_STREAMS_H */
