/*
 * wsum, AVX-512: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c].
 *
 * V is already laid out the way a GEMM micro-kernel wants its B panel (c is
 * contiguous), so nothing is packed: one step of j loads nv vectors of
 * v[j][c0..c0 + 16 nv) and broadcasts p[i][j] for the block's rows, feeding
 * rows x nv FMAs into rows x 16 nv accumulators. Every o[i][c] is one lane
 * summing j in order, as the oracle does. beta is folded into the single
 * store at the end (beta NULL: o is only written, so it may hold NaN on
 * entry).
 *
 * With at most 4 rows (decode) the column blocks are as wide as the
 * registers allow (2 rows x 8 vectors = 128 columns, 4 x 4 = 64), so V's
 * rows are walked in as few strips as they can be (one Xeon core, V from
 * memory: m = 1 10.0 -> 11.8 GB/s, m = 4 9.1 -> 9.8, against 2 vectors);
 * more rows take MR = 8 rows x NV = 2 vectors (tiles.h).
 *
 * Decode-shaped calls (m <= STREAM_M, score's dot-product cutoff) take
 * keys in sub-blocks of KB = 16 (8 KiB of f32 V at dv = 128; 32 until
 * 0.8's last change, 16 read V from memory 1.10x as fast at m = 4, and
 * decode of 32 query heads over 8 KV heads 1.01-1.02x), each
 * sub-block through every column block before the next, the partial sums
 * parked on the stack between sub-blocks (wsum_ends.h: per lane the sum
 * still runs over j in order, bit for bit as one pass would). Columns go
 * in groups of CG = 128, so a sub-block stays 8 KiB at any dv. The first
 * row block names V's lines in address order (kernels/prefetch.h), a line
 * per key for each vector it loads (and one more from the group's first
 * column block, for a row that straddles one line more than it has
 * vectors), a sub-block and 4 KiB of rows ahead: the next sub-block's rows
 * while this one is read. Later row blocks find the rows in cache and call
 * no cursor. Until 0.8 each column block walked all n keys before the next
 * and the first one prefetched whole rows 8 keys ahead: at the driver's
 * 1024-key decode blocks the rows prefetched for the first column block
 * can be out of L2 before the last block comes back for them. On Zen 5
 * (one core, V from memory, with score.c's cursor) decode of 32 query
 * heads over 8 KV heads, 4096 keys, ran 1.24-1.50x as fast, 32 KV heads
 * 1.07-1.14x (docs/DESIGN.md, "Streaming K and V from memory").
 *
 * With 17 to LEAD_M rows (an MQA group's query heads) V comes from memory
 * and only once: the first LEAD rows read it in one pass as wide as the
 * registers hold, V's lines named in address order (`lead`), and the other
 * rows find it in cache (`reuse`). In the one pass below, the first tile
 * alone read V, 64 bytes a row 512 bytes apart, while the FMAs waited
 * (docs/DESIGN.md, "The MQA row").
 *
 * More rows (prefill, whose V blocks come from L2) keep that one pass and
 * its prefetch: with sub-blocks they ran 6-8% slower on Zen 5 and up to 13%
 * on a Sapphire Rapids Xeon, paying for the parking with nothing to gain.
 *
 * Tails: the columns past dv (and past a group) are masked off at every
 * load and store of V and o (a lane outside the mask is neither read nor
 * faulted); leftover rows run the same tile with fewer rows.
 */
#include <immintrin.h>

#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"
#include "kernels/avx512/wsum_ends.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"

enum {
  MR = SA_AVX512_WSUM_MR,
  NV = SA_WSUM_NV, /* vectors of the widest tile */
  KB = SA_AVX512_WSUM_KB,
  CG = SA_AVX512_WSUM_CG,
  STREAM_M = SA_AVX512_DOTS_M, /* decode-shaped: sub-blocks and a cursor */
  LEAD_M = SA_AVX512_WSUM_LEAD_M,
  LEAD = SA_AVX512_WSUM_LEAD,
  PF = 8, /* more rows: whole rows this far ahead */
};

#define AI static inline __attribute__((always_inline))

/* acc[r][c] += p[r * ldp] * row[16 c ..] (the lanes of km[c]) for one key. */
AI void key(size_t mr, size_t nv, const float *p, size_t ldp, const float *row,
            const __mmask16 *km, __m512 acc[MR][NV]) {
  __m512 b[NV];
  for (size_t c = 0; c < nv; c++)
    b[c] = _mm512_maskz_loadu_ps(km[c], row + 16 * c);
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++) {
    __m512 a = _mm512_set1_ps(p[r * ldp]);
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
  }
}

/* The nv vectors of columns from v of mr rows, cn of those columns left
 * before the group's end, over keys [0, n) of a sub-block; pf (if any)
 * names nv lines of V per key (extra: one more), up to row `limit`; else
 * ahead > 0 prefetches `ahead` floats of the row PF keys further on. mr and
 * nv are constants at every call, so acc lives in registers. */
AI void tile(size_t mr, size_t nv, size_t n, const float *p, size_t ldp,
             const float *v, size_t ldv, size_t cn, const float *beta, float *o,
             size_t ldo, sa_wsum_ends e, sa_prefetcher *pf, size_t limit,
             int extra, size_t ahead) {
  __m512 acc[MR][NV];
  __mmask16 km[NV];
  sa_wsum_masks(nv, cn, km);
  sa_wsum_begin(mr, nv, e, acc);
  /* one loop per way to prefetch, so that the others test nothing */
  if (pf)
    for (size_t j = 0; j < n; j++) {
      for (size_t c = 0; c < nv; c++)
        sa_prefetch_next(pf, limit, 0, 1);
      if (extra)
        sa_prefetch_next(pf, limit, 0, 1);
      key(mr, nv, p + j, ldp, v + j * ldv, km, acc);
    }
  else if (ahead)
    for (size_t j = 0; j < n; j++) {
      const float *row = v + (j + PF < n ? j + PF : n - 1) * ldv;
      for (size_t c = 0; c < ahead; c += 16)
        _mm_prefetch((const char *)(row + c), _MM_HINT_T0);
      key(mr, nv, p + j, ldp, v + j * ldv, km, acc);
    }
  else
    for (size_t j = 0; j < n; j++)
      key(mr, nv, p + j, ldp, v + j * ldv, km, acc);
  sa_wsum_end(mr, nv, km, e, beta, o, ldo, acc);
}

/* The tile for mr rows, mr <= rb (rb 2, 4 or MR, a constant). */
AI void rows(size_t rb, size_t nv, size_t mr, size_t n, const float *p,
             size_t ldp, const float *v, size_t ldv, size_t cn,
             const float *beta, float *o, size_t ldo, sa_wsum_ends e,
             sa_prefetcher *pf, size_t limit, int extra, size_t ahead) {
#define TILE(r)                                                                \
  tile(r, nv, n, p, ldp, v, ldv, cn, beta, o, ldo, e, pf, limit, extra, ahead)
  SA_UNROLL_1_RB(rb, mr, TILE);
#undef TILE
}

/* Columns [0, cw) (cw <= CG) of mr rows over keys [0, n), nv vectors a
 * column block; prefetch: the first row block, which prefetches V. stream:
 * in sub-blocks, V's lines named in address order; else all n keys a
 * column block, the first one prefetching whole rows PF keys ahead. */
AI void group(size_t rb, size_t nv, size_t mr, size_t n, size_t cw,
              const float *p, size_t ldp, const float *v, size_t ldv,
              const float *beta, float *o, size_t ldo, int prefetch,
              int stream) {
  if (!stream) { /* one pass of all n keys a column block, nothing parked */
    const sa_wsum_ends e = {1, 1, NULL, 0};
    for (size_t c0 = 0; c0 < cw; c0 += 16 * nv)
      rows(rb, nv, mr, n, p, ldp, v + c0, ldv, cw - c0, beta, o + c0, ldo, e,
           NULL, 0, 0, prefetch && c0 == 0 ? cw : 0);
    return;
  }
  _Alignas(64) float part[MR * CG];
  /* a sub-block and 4 KiB ahead: the next sub-block's rows are named
   * while this one is read, not the rows being read */
  const size_t ahead = KB + sa_prefetch_rows_ahead(cw * sizeof(float), 4096);
  sa_prefetcher cur =
      sa_prefetcher_at(v, ldv * sizeof(float), cw * sizeof(float), n, ahead);
  sa_prefetcher *pf = prefetch ? &cur : NULL;
  size_t j0 = 0;
  do { /* n = 0 still writes o = beta * o */
    size_t nb = n - j0 < KB ? n - j0 : KB, limit = j0 + nb + ahead;
    sa_wsum_ends e = {j0 == 0, j0 + nb == n, part, SA_WSUM_CG};
    const float *pj = p + j0, *vj = v + j0 * ldv;
    sa_prefetcher_raise(&cur, j0 + ahead);
    for (size_t c0 = 0; c0 < cw; c0 += 16 * nv, e.part += 16 * nv)
      rows(rb, nv, mr, nb, pj, ldp, vj + c0, ldv, cw - c0, beta, o + c0, ldo, e,
           pf, limit, c0 == 0, 0);
    j0 += nb;
  } while (j0 < n);
}

/* Rows in blocks of rb, nv vectors a column block (both constants); the
 * first block prefetches V unless told not to (V in cache). */
AI void wsum(size_t rb, size_t nv, int stream, int pf, size_t m, size_t n,
             size_t dv, const float *p, size_t ldp, const float *v, size_t ldv,
             const float *beta, float *o, size_t ldo) {
  for (size_t i0 = 0; i0 < m; i0 += rb) {
    size_t mr = m - i0 < rb ? m - i0 : rb;
    for (size_t g0 = 0; g0 < dv; g0 += CG)
      group(rb, nv, mr, n, dv - g0 < CG ? dv - g0 : CG, p + i0 * ldp, ldp,
            v + g0, ldv, beta ? beta + i0 : NULL, o + i0 * ldo + g0, ldo,
            pf && i0 == 0, stream);
  }
}

/* The streamed tiles each in a function of its own: inlined beside the
 * one-pass tile, their parking area and spills made the frame that tile
 * runs in 4 KiB larger, and the one-pass tile, the same code, ran 5-6%
 * slower (decode, 32 query heads over 1 KV head, 32768 keys, Zen 5; both
 * score and wsum lost, so most likely 4 KiB aliasing between the
 * stack and the tiles' loads). */
#define STREAMED(name, rb, nv)                                                 \
  static __attribute__((noinline)) void name(                                  \
      size_t m, size_t n, size_t dv, const float *p, size_t ldp,               \
      const float *v, size_t ldv, const float *beta, float *o, size_t ldo) {   \
    wsum(rb, nv, 1, 1, m, n, dv, p, ldp, v, ldv, beta, o, ldo);                \
  }
STREAMED(streamed_2x8, SA_AVX512_WSUM_M2, SA_AVX512_WSUM_NV2)
STREAMED(streamed_4x4, SA_AVX512_WSUM_M4, SA_AVX512_WSUM_NV4)
STREAMED(streamed_mr, MR, SA_AVX512_WSUM_NV)
#undef STREAMED

/* A few rows over all n keys, as wide as the registers hold, V's lines named
 * in address order 4 KiB ahead: one pass that streams V once, leaving it in
 * cache for the other rows. Nothing is parked, as a column block spans a
 * group. */
static __attribute__((noinline)) void
lead(size_t m, size_t n, size_t dv, const float *p, size_t ldp, const float *v,
     size_t ldv, const float *beta, float *o, size_t ldo) {
  enum { RB = SA_AVX512_WSUM_M2, NB = SA_AVX512_WSUM_NV2 };
  const sa_wsum_ends e = {1, 1, NULL, 0};
  for (size_t g0 = 0; g0 < dv; g0 += CG) {
    size_t cw = dv - g0 < CG ? dv - g0 : CG;
    size_t ahead = sa_prefetch_rows_ahead(cw * sizeof(float), 4096);
    sa_prefetcher pf = sa_prefetcher_at(v + g0, ldv * sizeof(float),
                                        cw * sizeof(float), n, ahead);
    for (size_t c0 = 0; c0 < cw; c0 += 16 * NB)
      rows(RB, NB, m, n, p, ldp, v + g0 + c0, ldv, cw - c0, beta, o + g0 + c0,
           ldo, e, c0 == 0 ? &pf : NULL, n, c0 == 0, 0);
  }
}

/* The one pass of more rows, none of them prefetching. */
static __attribute__((noinline)) void
reuse(size_t m, size_t n, size_t dv, const float *p, size_t ldp, const float *v,
      size_t ldv, const float *beta, float *o, size_t ldo) {
  wsum(MR, SA_AVX512_WSUM_NV, 0, 0, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

void sa_wsum__avx512(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                     const float *v, size_t ldv, const float *beta, float *o,
                     size_t ldo) {
  if (m <= SA_AVX512_WSUM_M2)
    streamed_2x8(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
  else if (m <= SA_AVX512_WSUM_M4)
    streamed_4x4(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
  else if (m <= STREAM_M)
    streamed_mr(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
  else if (m <= LEAD_M) {
    lead(LEAD, n, dv, p, ldp, v, ldv, beta, o, ldo);
    reuse(m - LEAD, n, dv, p + LEAD * ldp, ldp, v, ldv,
          beta ? beta + LEAD : NULL, o + LEAD * ldo, ldo);
  } else
    wsum(MR, SA_AVX512_WSUM_NV, 0, 1, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}
