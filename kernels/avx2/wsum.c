/*
 * wsum, AVX2: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c].
 *
 * V is already laid out the way a GEMM micro-kernel wants its B panel (c is
 * contiguous), so nothing is packed: one step of j loads 2 vectors of
 * v[j][c0..c0 + 16) and broadcasts p[i][j] for MR = 6 rows, feeding 12 FMAs
 * into 6 x 16 accumulators (12 of the 16 ymm registers). Every o[i][c] is
 * one lane summing j in order, as the oracle does. beta is folded into the
 * single store at the end (beta NULL: o is only written, so it may hold NaN
 * on entry).
 *
 * Keys go in sub-blocks of KB = 32 (16 KiB of f32 V at dv = 128), each
 * sub-block through every column block before the next, the partial sums
 * parked on the stack between sub-blocks (per lane the sum still runs over
 * j in order, bit for bit as one pass would). Walking one column block down
 * all n keys first, as until 0.8, read each V row 64 bytes at a time, n
 * rows apart: a pattern the hardware prefetchers do not follow, and with
 * n = 1024 the 512 KiB of rows prefetched for the first column block were
 * gone from L2 before the last one came back for them. From memory (decode,
 * m = 4, d = 128, Zen 3) wsum read V at 6.5-7.9 GB/s that way against a
 * read probe of 19; now at 13-14. The first row block also names V's lines
 * in address order (kernels/prefetch.h), a line per key per column block,
 * a sub-block and 4 KiB of rows ahead; later row blocks find the rows in
 * cache. Columns go in groups of CG = 128, so a sub-block stays 16 KiB at
 * any dv.
 *
 * One or two rows (decode's MHA and small groups) take tiles of 8 or 4
 * vectors (64 or 32 columns): in the 2-vector tile each key added one FMA
 * to each of 2 or 4 sums, chains that waited on their own latency, 11 ns
 * a key at m = 1 with V in L2 (Zen 5 VM) where the wide tile takes 6.1
 * (m = 2 11.8 -> 9.9); the same sums in the same order. Decode, both ways
 * in one library alternated call by call, f32 from memory: 32 heads over
 * 32 KV heads 0.95-0.97x the time on one thread, 0.96-0.99x on two; over
 * 16 (two rows) 0.98x and 0.85x.
 *
 * The wide tiles and the 16-column ones get the cursor as a constant pointer
 * in their inlined copies, so the cursor lives in registers (passed as "the
 * cursor or NULL" it lived on the stack, a load and a store a line): V in L2,
 * 3-6 rows 0.85-0.95x the time; decode over 8 KV heads 0.88-1.01x on one thread
 * (docs/DESIGN.md).
 *
 * Up to SA_AVX2_WSUM_STREAM_M rows over a long block of keys (decode's
 * MHA and GQA groups of up to 4) take none of this: wsum_streams.h reads
 * V there as four streams of whole rows, the sums in an L1 buffer, and
 * sums the keys in another order (it says why and what it measured).
 *
 * Tails: columns left after the 16-wide blocks go through a one-vector
 * tile, 8 wide, then once more for the last cols < 8 columns, whose vector
 * of v is copied through the stack on each j, never over-read (util.h says
 * why not maskload). Head sizes are multiples of 8 in practice, so that
 * slow path is for correctness only. Leftover rows run the same tile with
 * fewer rows.
 */
#include <immintrin.h>

#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/avx2/wsum_ends.h"
#include "kernels/avx2/wsum_streams.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"
#include "kernels/upto.h"

enum {
  MR = SA_AVX2_WSUM_MR,
  NV = SA_AVX2_WSUM_NV,
  KB = SA_AVX2_WSUM_KB,
  CG = SA_AVX2_WSUM_CG,
  WNV1 = SA_AVX2_DECODE_NV1, /* one row: vectors a tile */
  WNV2 = SA_AVX2_DECODE_NV2, /* two rows */
};

/* acc[r][c] += p[r * ldp] * row[8 c ..] for one key. */
static inline __attribute__((always_inline)) void
key(size_t mr, size_t nv, size_t cols, const float *p, size_t ldp,
    const float *row, __m256 acc[MR][NV]) {
  __m256 b[NV];
  for (size_t c = 0; c < nv; c++)
    b[c] = sa_wsum_load(row + 8 * c, c + 1 < nv ? 8 : cols);
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++) {
    __m256 a = _mm256_broadcast_ss(p + r * ldp);
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
  }
}

/* Columns [0, 8 (nv - 1) + cols) of mr rows over keys [0, n) of a
 * sub-block; pf (if any) names a line of V per key, up to row `limit`. mr
 * and nv are constants at every call, so acc lives in registers; cols is 8
 * except in the last tile, where nv is 1. */
static inline __attribute__((always_inline)) void
tile(size_t mr, size_t nv, size_t cols, size_t n, const float *p, size_t ldp,
     const float *v, size_t ldv, const float *beta, float *o, size_t ldo,
     sa_wsum_ends e, sa_prefetcher *pf, size_t limit) {
  __m256 acc[MR][NV];
  sa_wsum_begin(mr, nv, e, acc);
  /* the loop twice, so that the one without a cursor tests nothing */
  if (pf)
    for (size_t j = 0; j < n; j++) {
      sa_prefetch_next(pf, limit, 0, 1);
      key(mr, nv, cols, p + j, ldp, v + j * ldv, acc);
    }
  else
    for (size_t j = 0; j < n; j++)
      key(mr, nv, cols, p + j, ldp, v + j * ldv, acc);
  sa_wsum_end(mr, nv, cols, e, beta, o, ldo, acc);
}

static inline __attribute__((always_inline)) void
rows(size_t mr, size_t nv, size_t cols, size_t n, const float *p, size_t ldp,
     const float *v, size_t ldv, const float *beta, float *o, size_t ldo,
     sa_wsum_ends e, sa_prefetcher *pf, size_t limit) {
#define TILE(r) tile(r, nv, cols, n, p, ldp, v, ldv, beta, o, ldo, e, pf, limit)
  SA_UNROLL_1_6(mr, TILE);
#undef TILE
}

/* Vectors of columns a wide tile of mr (1 or 2) rows takes. */
static inline size_t wide_nv(size_t mr) { return mr == 1 ? WNV1 : WNV2; }

/* One or two rows, nv = wide_nv(mr) whole vectors of columns over keys
 * [0, n) of a sub-block: 8 or 4 sums a row, each one FMA a key, where the
 * 2-vector tile kept 2 or 4 chains of one FMA a key waiting on each
 * other's latency. pf (if any) names nv / 2 lines of V a key (a line per
 * 16 columns), up to row `limit`. */
static inline __attribute__((always_inline)) void
wide_tile(size_t mr, size_t n, const float *p, size_t ldp, const float *v,
          size_t ldv, const float *beta, float *o, size_t ldo, sa_wsum_ends e,
          sa_prefetcher *pf, size_t limit) {
  const size_t nv = wide_nv(mr);
  __m256 acc[2][WNV1];
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = sa_wsum_start(e, r, c);
  for (size_t j = 0; j < n; j++) {
    for (size_t l = 0; pf && l < nv / 2; l++)
      sa_prefetch_next(pf, limit, 0, 1);
    const float *row = v + j * ldv;
    __m256 b[WNV1];
    for (size_t c = 0; c < nv; c++)
      b[c] = _mm256_loadu_ps(row + 8 * c);
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_broadcast_ss(p + r * ldp + j);
      for (size_t c = 0; c < nv; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++)
      sa_wsum_finish(e, r, c, beta, o + r * ldo + 8 * c, 8, acc[r][c]);
}

/* The wide tiles over columns [0, *c0 + whole blocks), from *c0 on. */
static inline __attribute__((always_inline)) void
wide_blocks(size_t mr, size_t n, size_t cw, const float *p, size_t ldp,
            const float *v, size_t ldv, const float *beta, float *o, size_t ldo,
            sa_wsum_ends *e, sa_prefetcher *pf, size_t limit, size_t *c0) {
  const size_t nv = wide_nv(mr);
  for (; *c0 + 8 * nv <= cw; *c0 += 8 * nv, e->part += 8 * nv) {
    /* mr a constant in each copy */
    if (mr == 1)
      wide_tile(1, n, p, ldp, v + *c0, ldv, beta, o + *c0, ldo, *e, pf, limit);
    else
      wide_tile(2, n, p, ldp, v + *c0, ldv, beta, o + *c0, ldo, *e, pf, limit);
  }
}

/* Columns [0, cw) (cw <= CG) of mr rows over keys [0, n) in sub-blocks. */
static void group(size_t mr, size_t n, size_t cw, const float *p, size_t ldp,
                  const float *v, size_t ldv, const float *beta, float *o,
                  size_t ldo, int prefetch) {
  _Alignas(32) float part[MR * CG];
  /* a sub-block and 4 KiB ahead: the next sub-block's rows are named
   * while this one is read, not the rows being read */
  const size_t ahead = KB + sa_prefetch_rows_ahead(cw * sizeof(float), 4096);
  sa_prefetcher cur =
      sa_prefetcher_at(v, ldv * sizeof(float), cw * sizeof(float), n, ahead);
  if (prefetch)
    sa_prefetch_head(v, ldv * sizeof(float), cw * sizeof(float), n, ahead, 0);
  /* the cursor is called by as many column blocks as a row has lines (and
   * one more for a row straddling one more): a line per key from each of
   * them, and no call at all from the rest */
  const size_t lines = prefetch ? cw * sizeof(float) / 64 + 2 : 0;
  size_t j0 = 0;
  do { /* n = 0 still writes o = beta * o */
    size_t nb = n - j0 < KB ? n - j0 : KB, limit = j0 + nb + ahead;
    sa_wsum_ends e = {j0 == 0, j0 + nb == n, part, SA_WSUM_CG};
    const float *pj = p + j0, *vj = v + j0 * ldv;
    sa_prefetcher_raise(&cur, j0 + ahead);
    size_t c0 = 0, cb = 0;
    if (mr <= 2) {
      /* the cursor a constant pointer in each copy: it lives in registers */
      if (prefetch)
        wide_blocks(mr, nb, cw, pj, ldp, vj, ldv, beta, o, ldo, &e, &cur, limit,
                    &c0);
      else
        wide_blocks(mr, nb, cw, pj, ldp, vj, ldv, beta, o, ldo, &e, NULL, limit,
                    &c0);
      cb = c0 * sizeof(float) / 64;
    }
    /* the blocks that name lines, then the rest: the cursor a constant
     * pointer in each copy of the tile, as above (the tails below find cb
     * below lines exactly when every block before them named lines) */
    for (; cb < lines && c0 + 8 * NV <= cw;
         c0 += 8 * NV, e.part += 8 * NV, cb++)
      rows(mr, NV, 8, nb, pj, ldp, vj + c0, ldv, beta, o + c0, ldo, e, &cur,
           limit);
    for (; c0 + 8 * NV <= cw; c0 += 8 * NV, e.part += 8 * NV)
      rows(mr, NV, 8, nb, pj, ldp, vj + c0, ldv, beta, o + c0, ldo, e, NULL,
           limit);
    if (c0 + 8 <= cw) {
      rows(mr, 1, 8, nb, pj, ldp, vj + c0, ldv, beta, o + c0, ldo, e,
           cb++ < lines ? &cur : NULL, limit);
      c0 += 8;
      e.part += 8;
    }
    if (c0 < cw)
      rows(mr, 1, cw - c0, nb, pj, ldp, vj + c0, ldv, beta, o + c0, ldo, e,
           cb++ < lines ? &cur : NULL, limit);
    j0 += nb;
  } while (j0 < n);
}

/* The register tiles' way: rows in blocks of MR, each block's keys up to
 * its rows' last end (ends NULL: all n). */
static void rows_upto(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                      const float *v, size_t ldv, const float *beta, float *o,
                      size_t ldo, const size_t *ends) {
  for (size_t i0 = 0; i0 < m; i0 += MR) {
    size_t mr = m - i0 < MR ? m - i0 : MR;
    size_t nb = ends ? sa_ends_clip(ends + i0, mr, n) : n;
    for (size_t g0 = 0; g0 < dv; g0 += CG)
      group(mr, nb, dv - g0 < CG ? dv - g0 : CG, p + i0 * ldp, ldp, v + g0, ldv,
            beta ? beta + i0 : NULL, o + i0 * ldo + g0, ldo, i0 == 0);
  }
}

void sa_wsum__avx2(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                   const float *v, size_t ldv, const float *beta, float *o,
                   size_t ldo) {
  if (sa_wsum_streams_take(m, n)) {
    sa_wsum_streams(SA_F32, m, n, dv, p, ldp, (const char *)v,
                    ldv * sizeof(float), NULL, beta, o, ldo);
    return;
  }
  rows_upto(m, n, dv, p, ldp, v, ldv, beta, o, ldo, NULL);
}

/* Rows that see keys [0, ends[i]) (the causal diagonal): each row block's
 * keys stop at its last end. A call the streams would take runs them over
 * all n keys, zeros included: a shorter call could fall to the tiles,
 * whose sums are rounded otherwise. */
void sa_wsum_upto__avx2(size_t m, size_t n, size_t dv, const float *p,
                        size_t ldp, const float *v, size_t ldv,
                        const float *beta, float *o, size_t ldo,
                        const size_t *ends) {
  if (sa_wsum_streams_take(m, n))
    sa_wsum__avx2(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
  else
    rows_upto(m, n, dv, p, ldp, v, ldv, beta, o, ldo, ends);
}
