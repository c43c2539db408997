/*
 * wsum_t, AVX2: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c] with V
 * in f16, bf16 or q8_0 (ldv in that type's units) and P, O, the sums in
 * fp32; beta NULL: o is only written.
 *
 * The f32 kernel (wsum.c, whose header gives the reasons for its shape)
 * with one change: the NV = 2 vectors of v[j][c0..c0 + 16) are widened
 * exactly in registers (widen.h) where the f32 kernel loads them, once per
 * j, and used by all MR = 6 rows; the FMAs, their order and every rounding
 * are the f32 kernel's on the oracle's widened values (bf16 keeps even and
 * odd columns apart until the store: bf16_pairs). A q8_0 vector is
 * dequantised (int8 * scale, exact) rather than folding the scale into
 * p[i][j]: that would round p * scale for every row, and costs mr
 * multiplies per j where dequantising costs 2. A 16-column tile never
 * crosses a q8_0 block (dv is a multiple of 32), so one scale serves it.
 *
 * Keys go in sub-blocks (of as many bytes as wsum.c's KB keys of f32: 2 KB
 * keys of f16 / bf16, 4 KB of q8_0), columns in groups of CG, and the
 * first row block names V's lines in address order ahead of the reader,
 * all as in wsum.c (which says why); 4 KiB of narrow rows are more keys ahead
 * than of f32 ones, so the prefetch still runs as far ahead in time.
 *
 * Up to SA_AVX2_WSUM_STREAM_M rows over a long block of keys take
 * wsum_streams.h instead, as wsum.c does, with the same widening.
 *
 * Tails: columns after the 16-wide blocks go through a one-vector tile, then
 * the last cols < 8 (f16 / bf16 only) are copied through the stack on each
 * j, never over-read. Leftover rows run the same tile with fewer rows.
 */
#include <immintrin.h>

#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/avx2/widen.h"
#include "kernels/avx2/wsum_ends.h"
#include "kernels/avx2/wsum_streams.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"

enum {
  MR = SA_AVX2_WSUM_MR,
  NV = SA_AVX2_WSUM_NV,
  KB = SA_AVX2_WSUM_KB,
  CG = SA_AVX2_WSUM_CG,
};

/* A whole 16-column bf16 tile widens its 16 values as even and odd
 * columns (widen.h), keeps its sums so, parked so between sub-blocks, and
 * puts them back in column order for the last store: each column sums
 * the same products in the same order, bit for bit the column-order
 * tile's. V in L2, one Zen 3 core, builds alternated: 0.96x the time at 4
 * rows, 0.98x at 1-2 and 6-64. */
SA_INLINE int bf16_pairs(sa_dtype t, size_t nv, size_t cols) {
  return t == SA_BF16 && nv == 2 && cols == 8;
}

/* acc[r][c] += p[r * ldp] * row[c0 + 8 c ..] for one key (bf16_pairs: the
 * even and the odd columns of 16). */
SA_INLINE void key(sa_dtype t, size_t mr, size_t nv, size_t cols,
                   const float *p, size_t ldp, const char *row, size_t c0,
                   __m256 acc[MR][NV]) {
  const __m256 sc = t == SA_Q8_0 ? sa_q8_scale(row, c0) : _mm256_setzero_ps();
  __m256 b[NV];
  if (bf16_pairs(t, nv, cols))
    sa_widen16_bf16_pairs(sa_elem_at(t, row, c0), &b[0], &b[1]);
  else
    for (size_t c = 0; c < nv; c++) {
      const char *x = sa_elem_at(t, row, c0 + 8 * c);
      b[c] = c + 1 < nv || cols == 8 ? sa_widen8(t, x, sc)
                                     : sa_widen8_part(t, x, cols);
    }
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++) {
    __m256 a = _mm256_broadcast_ss(p + r * ldp);
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
  }
}

/* Columns [c0, c0 + 8 (nv - 1) + cols) of a group, of mr rows over keys
 * [0, n) of a sub-block, V rows ldb bytes apart from v (the group's first
 * unit); pf (if any) names V's rows up to row limit + j at key j. mr and
 * nv are constants at every call, so acc lives in registers; cols is 8
 * except in the last tile, where nv is 1. */
SA_INLINE void tile(sa_dtype t, size_t mr, size_t nv, size_t cols, size_t n,
                    const float *p, size_t ldp, const char *v, size_t ldb,
                    size_t c0, const float *beta, float *o, size_t ldo,
                    sa_wsum_ends e, sa_prefetcher *pf, size_t limit) {
  __m256 acc[MR][NV];
  sa_wsum_begin(mr, nv, e, acc);
  /* the loop twice, so that the one without a cursor tests nothing */
  if (pf)
    for (size_t j = 0; j < n; j++) {
      sa_prefetch_until(pf, limit + j, 0);
      key(t, mr, nv, cols, p + j, ldp, v + j * ldb, c0, acc);
    }
  else
    for (size_t j = 0; j < n; j++)
      key(t, mr, nv, cols, p + j, ldp, v + j * ldb, c0, acc);
  if (bf16_pairs(t, nv, cols) && e.last)
    for (size_t r = 0; r < mr; r++)
      sa_pairs_in_order(&acc[r][0], &acc[r][1]);
  sa_wsum_end(mr, nv, cols, e, beta, o, ldo, acc);
}

SA_INLINE void rows(sa_dtype t, size_t mr, size_t nv, size_t cols, size_t n,
                    const float *p, size_t ldp, const char *v, size_t ldb,
                    size_t c0, const float *beta, float *o, size_t ldo,
                    sa_wsum_ends e, sa_prefetcher *pf, size_t limit) {
#define TILE(r)                                                                \
  tile(t, r, nv, cols, n, p, ldp, v, ldb, c0, beta, o, ldo, e, pf, limit)
  SA_UNROLL_1_6(mr, TILE);
#undef TILE
}

/* Columns [0, cw) (cw <= CG) of mr rows over keys [0, n) in sub-blocks, V
 * rows ldb bytes apart from v, the group's first unit (a q8_0 block start:
 * groups start at multiples of CG). */
SA_INLINE void group(sa_dtype t, size_t mr, size_t n, size_t cw, const float *p,
                     size_t ldp, const char *v, size_t ldb, const float *beta,
                     float *o, size_t ldo, int prefetch) {
  _Alignas(32) float part[MR * CG];
  /* bytes the group's cw values take (q8_0: cw / 32 blocks) */
  const size_t rowb =
      t == SA_Q8_0 ? sa_row_bytes(t, cw / 32) : sa_row_bytes(t, cw);
  /* as many keys a sub-block as f32's bytes: the park and reload of the
   * sums and the cursor's calls are then paid as rarely (q8_0 decode, whose
   * widening binds it, lost 5% with 32-key sub-blocks) */
  const size_t kb = t == SA_Q8_0 ? 4 * KB : 2 * KB;
  /* a sub-block and 4 KiB ahead, as wsum.c */
  const size_t ahead = kb + sa_prefetch_rows_ahead(rowb, 4096);
  sa_prefetcher cur = sa_prefetcher_at(v, ldb, rowb, n, ahead);
  size_t j0 = 0;
  do { /* n = 0 still writes o = beta * o */
    size_t nb = n - j0 < kb ? n - j0 : kb, limit = j0 + ahead + 1;
    sa_wsum_ends e = {j0 == 0, j0 + nb == n, part, SA_WSUM_CG};
    const float *pj = p + j0;
    const char *vj = v + j0 * ldb;
    sa_prefetcher_raise(&cur, j0 + ahead);
    /* the first column block names a row per key; the others, nothing */
    sa_prefetcher *pf = prefetch ? &cur : NULL;
    size_t c0 = 0;
    for (; c0 + 8 * NV <= cw; c0 += 8 * NV, e.part += 8 * NV, pf = NULL)
      rows(t, mr, NV, 8, nb, pj, ldp, vj, ldb, c0, beta, o + c0, ldo, e, pf,
           limit);
    if (c0 + 8 <= cw) {
      rows(t, mr, 1, 8, nb, pj, ldp, vj, ldb, c0, beta, o + c0, ldo, e, pf,
           limit);
      pf = NULL;
      c0 += 8;
      e.part += 8;
    }
    if (t != SA_Q8_0 && c0 < cw)
      rows(t, mr, 1, cw - c0, nb, pj, ldp, vj, ldb, c0, beta, o + c0, ldo, e,
           pf, limit);
    j0 += nb;
  } while (j0 < n);
}

/* ---- q8_0 with many rows (prefill): each 32-column block of V (one q8_0
 * block a row) dequantised once per DK keys into an f32 buffer that every
 * row tile then reads, instead of once per row tile (a scale broadcast,
 * and per 8 values a widening, a conversion and a multiply, beside a
 * tile's 12 FMAs: the value sums ran 1.40x f32's at m = 128). Sums parked
 * bit for bit between sub-blocks, keys in order: the output is the
 * one-pass tiles', as avx512's wsum_t.c does the same. */
enum {
  DK = 64,                   /* keys a dequantised sub-block: 8 KiB of f32 */
  RCH = 120,                 /* rows parked at once (20 tiles): 15 KiB */
  DEQ_M = SA_AVX2_WSUM_DEQ_M /* more rows than this take it */
};

/* 16 columns (h: which half of the block) of mr rows over keys [0, nb) of
 * buf (32 floats a key), the sums starting and ending as e says (part: 32
 * floats a row, at the half's first column). */
SA_INLINE void deq_tile(size_t mr, size_t h, size_t nb, const float *p,
                        size_t ldp, const float *buf, sa_wsum_ends e,
                        const float *beta, float *o, size_t ldo) {
  __m256 acc[MR][NV];
  sa_wsum_begin(mr, NV, e, acc);
  for (size_t j = 0; j < nb; j++) {
    __m256 b0 = _mm256_load_ps(buf + 32 * j + 16 * h);
    __m256 b1 = _mm256_load_ps(buf + 32 * j + 16 * h + 8);
#pragma GCC unroll 6
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_broadcast_ss(p + r * ldp + j);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  sa_wsum_end(mr, NV, 8, e, beta, o + 16 * h, ldo, acc);
}

static __attribute__((noinline)) void
q8_0_rows(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
          const void *v, size_t ldv, const float *beta, float *o, size_t ldo) {
  _Alignas(32) float buf[DK * 32];
  _Alignas(32) float part[RCH * 32];
  const size_t ldb = sa_row_bytes(SA_Q8_0, ldv);
  for (size_t i0 = 0; i0 < m; i0 += RCH) {
    size_t mc = m - i0 < RCH ? m - i0 : RCH;
    for (size_t c0 = 0; c0 < dv; c0 += 32) {
      size_t j0 = 0;
      do { /* n = 0 still writes o = beta * o */
        size_t nb = n - j0 < DK ? n - j0 : DK;
        for (size_t j = 0; j < nb; j++) {
          const char *row = (const char *)v + (j0 + j) * ldb;
          if (j0 + j + 8 < n)
            _mm_prefetch(sa_elem_at(SA_Q8_0, row + 8 * ldb, c0), _MM_HINT_T0);
          __m256 sc = sa_q8_scale(row, c0);
          for (size_t c = 0; c < 4; c++)
            _mm256_store_ps(
                buf + 32 * j + 8 * c,
                sa_widen8(SA_Q8_0, sa_elem_at(SA_Q8_0, row, c0 + 8 * c), sc));
        }
        for (size_t r0 = 0; r0 < mc; r0 += MR)
          for (size_t h = 0; h < 2; h++) {
            size_t i = i0 + r0;
            const sa_wsum_ends e = {j0 == 0, j0 + nb == n,
                                    part + 32 * r0 + 16 * h, 32};
#define TILE(r)                                                                \
  deq_tile(r, h, nb, p + i * ldp + j0, ldp, buf, e, beta ? beta + i : NULL,    \
           o + i * ldo + c0, ldo)
            SA_UNROLL_1_6(mc - r0 < MR ? mc - r0 : MR, TILE);
#undef TILE
          }
        j0 += nb;
      } while (j0 < n);
    }
  }
}

SA_INLINE void wsum_t(sa_dtype t, size_t m, size_t n, size_t dv, const float *p,
                      size_t ldp, const void *v, size_t ldv, const float *beta,
                      float *o, size_t ldo) {
  const size_t ldb = sa_row_bytes(t, ldv);
  if (sa_wsum_streams_take(m, n)) {
    sa_wsum_streams(t, m, n, dv, p, ldp, v, ldb, NULL, beta, o, ldo);
    return;
  }
  for (size_t i0 = 0; i0 < m; i0 += MR) {
    size_t mr = m - i0 < MR ? m - i0 : MR;
    for (size_t g0 = 0; g0 < dv; g0 += CG)
      group(t, mr, n, dv - g0 < CG ? dv - g0 : CG, p + i0 * ldp, ldp,
            sa_unit_at(t, v, g0), ldb, beta ? beta + i0 : NULL,
            o + i0 * ldo + g0, ldo, i0 == 0);
  }
}

void sa_wsum_f16__avx2(size_t m, size_t n, size_t dv, const float *p,
                       size_t ldp, const void *v, size_t ldv, const float *beta,
                       float *o, size_t ldo) {
  wsum_t(SA_F16, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

void sa_wsum_bf16__avx2(size_t m, size_t n, size_t dv, const float *p,
                        size_t ldp, const void *v, size_t ldv,
                        const float *beta, float *o, size_t ldo) {
  wsum_t(SA_BF16, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

void sa_wsum_q8_0__avx2(size_t m, size_t n, size_t dv, const float *p,
                        size_t ldp, const void *v, size_t ldv,
                        const float *beta, float *o, size_t ldo) {
  if (m > DEQ_M)
    q8_0_rows(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
  else
    wsum_t(SA_Q8_0, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}
