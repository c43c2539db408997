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
 * Decode-shaped calls (m <= STREAM_M, score's dot-product cutoff) walk V
 * one of two ways, chosen by the L1D's size (bit for bit alike: per lane
 * the sum runs over j in order, the partial sums parked on the stack
 * between sub-blocks, wsum_ends.h):
 *  - `sub_blocks` (L1D of 48 KiB or more): keys in sub-blocks of KB = 16
 *    (8 KiB of f32 V at dv = 128), each through every column block before
 *    the next, with the widest tile for the rows (2 x 8 vectors, 4 x 4,
 *    else MR x NV). The first row block names V's lines in address order,
 *    a line per vector it loads and one more a key, a sub-block and 4 KiB
 *    of rows ahead, and touches pages 16 KiB ahead (kernels/prefetch.h).
 *  - `pairs` (smaller L1D): keys in sub-blocks of KL = 256 (128 KiB of f32
 *    V at dv = 128), and in each sub-block the rows two at a time, 2 rows x
 *    8 vectors over a group of CG = 128 columns. The first pair reads V
 *    from memory whole rows at a time in address order and names its lines
 *    4 KiB ahead, one line a vector loaded; the later pairs find the
 *    sub-block in L2.
 *
 * Sub-blocks were the only way until 0.11.1. On a Zen 4 (one core, V from
 * memory, m = 4, d = 128, 4096 keys, kernels called directly, two builds
 * alternated in one process) their value sums took 29-31 ns a key against
 * 20 for V's bytes at the read probe's rate, while score streamed K at its
 * bytes' rate. In pairs: 25-26 ns; score, softmax_online2 and wsum together
 * 1.09x as fast at m = 1, 2 and 4, 1.0-1.14x at 8, 1.02x at 16; decode of
 * 32 query heads over 8 KV heads 1.09-1.10x on one and two threads, over
 * 32 KV heads 1.03-1.09x. Without any software prefetch the pairs ran as
 * fast on Zen 4 (1.11-1.14x against 1.09-1.12x); the cursor stays for the
 * cores whose prefetchers measured slower without it (docs/DESIGN.md,
 * "Streaming K and V from memory"). On the Zen 5 VM (48 KiB L1D) pairs
 * were the slower (0.12.1: decode of 32 query heads over 8 KV heads, 4096
 * keys, f32 from memory, both ways in one library alternated call by call:
 * sub-blocks 0.83-0.94x the time on one thread, 0.88-0.94x on two, batch 8
 * 0.87-0.90x, over 4 KV heads 0.87-0.96x, 2 and 1 query heads a group
 * 0.90-1.06x, 16 level; pairs with pages touched ahead 1.02-1.10x slower
 * still, sub-blocks without the touches 1.00-1.15x slower than with),
 * hence the choice by L1D, as decode.c's prefetch level.
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
#include <stdint.h>

#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"
#include "kernels/avx512/wsum_ends.h"
#include "kernels/cpu_core.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"
#include "kernels/upto.h"

enum {
  MR = SA_AVX512_WSUM_MR,
  NV = SA_WSUM_NV,        /* vectors of the widest tile */
  M2 = SA_AVX512_WSUM_M2, /* decode-shaped: rows x vectors a pair's tile */
  NV2 = SA_AVX512_WSUM_NV2,
  KL = SA_AVX512_WSUM_KL,
  KB = SA_AVX512_WSUM_KB, /* decode-shaped, the other way: keys a sub-block */
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
             int extra, int pages, size_t ahead) {
  __m512 acc[MR][NV];
  __mmask16 km[NV];
  sa_wsum_masks(nv, cn, km);
  sa_wsum_begin(mr, nv, e, acc);
  /* one loop per way to prefetch, so that the others test nothing */
  if (pf)
    for (size_t j = 0; j < n; j++) {
      for (size_t c = 0; c < nv; c++)
        sa_prefetch_next(pf, limit, 0, pages);
      if (extra)
        sa_prefetch_next(pf, limit, 0, pages);
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
             sa_prefetcher *pf, size_t limit, int extra, int pages,
             size_t ahead) {
#define TILE(r)                                                                \
  tile(r, nv, n, p, ldp, v, ldv, cn, beta, o, ldo, e, pf, limit, extra, pages, \
       ahead)
  SA_UNROLL_1_RB(rb, mr, TILE);
#undef TILE
}

/* Columns [0, cw) (cw <= CG) of mr rows, all n keys a column block, nothing
 * parked; prefetch: the first row block names whole rows PF keys ahead. */
AI void group(size_t rb, size_t nv, size_t mr, size_t n, size_t cw,
              const float *p, size_t ldp, const float *v, size_t ldv,
              const float *beta, float *o, size_t ldo, int prefetch) {
  const sa_wsum_ends e = {1, 1, NULL, 0};
  for (size_t c0 = 0; c0 < cw; c0 += 16 * nv)
    rows(rb, nv, mr, n, p, ldp, v + c0, ldv, cw - c0, beta, o + c0, ldo, e,
         NULL, 0, 0, 0, prefetch && c0 == 0 ? cw : 0);
}

/* Columns [0, cw) (cw <= CG) of mr rows in sub-blocks of KB keys, each
 * through every column block before the next; prefetch: the first row
 * block, whose cursor names a line per vector loaded and one more a key
 * (the group's first column block), up to a sub-block and 4 KiB of rows
 * ahead: the next sub-block's rows while this one is read. The rows before
 * the cursor's first are named in one burst at the start: a 256-key page
 * is a call of its own, and without the burst its first 24 rows (9 %)
 * came from memory unannounced (h32/kv8 batch 8 over 256-key pages, Zen 5
 * VM: 0.81x the time with it; contiguous 4096-key calls 0.97-1.05x). */
AI void sub_group(size_t rb, size_t nv, size_t mr, size_t n, size_t cw,
                  const float *p, size_t ldp, const float *v, size_t ldv,
                  const float *beta, float *o, size_t ldo, int prefetch) {
  _Alignas(64) float part[MR * CG];
  const size_t ahead = KB + sa_prefetch_rows_ahead(cw * sizeof(float), 4096);
  sa_prefetcher cur =
      sa_prefetcher_at(v, ldv * sizeof(float), cw * sizeof(float), n, ahead);
  sa_prefetcher *pf = prefetch ? &cur : NULL;
  if (prefetch)
    sa_prefetch_head(v, ldv * sizeof(float), cw * sizeof(float), n, ahead, 0);
  size_t j0 = 0;
  do { /* n = 0 still writes o = beta * o */
    size_t nb = n - j0 < KB ? n - j0 : KB, limit = j0 + nb + ahead;
    sa_wsum_ends e = {j0 == 0, j0 + nb == n, part, CG};
    const float *pj = p + j0, *vj = v + j0 * ldv;
    sa_prefetcher_raise(&cur, j0 + ahead);
    for (size_t c0 = 0; c0 < cw; c0 += 16 * nv, e.part += 16 * nv)
      rows(rb, nv, mr, nb, pj, ldp, vj + c0, ldv, cw - c0, beta, o + c0, ldo, e,
           pf, limit, c0 == 0, 1, 0);
    j0 += nb;
  } while (j0 < n);
}

/* Rows in blocks of rb, nv vectors a column block (both constants), all n
 * keys a column block or (sub) in sub-blocks of KB keys; the first block
 * prefetches V unless told not to (V in cache). ends (if any): a block's
 * keys stop at its rows' last end (kernels/upto.h). */
AI void wsum(size_t rb, size_t nv, int pf, int sub, size_t m, size_t n,
             size_t dv, const float *p, size_t ldp, const float *v, size_t ldv,
             const float *beta, float *o, size_t ldo, const size_t *ends) {
  const size_t all = n;
  for (size_t i0 = 0; i0 < m; i0 += rb) {
    size_t mr = m - i0 < rb ? m - i0 : rb;
    n = ends ? sa_ends_clip(ends + i0, mr, all) : all;
    for (size_t g0 = 0; g0 < dv; g0 += CG) {
      size_t cw = dv - g0 < CG ? dv - g0 : CG;
      const float *bi = beta ? beta + i0 : NULL;
      if (sub)
        sub_group(rb, nv, mr, n, cw, p + i0 * ldp, ldp, v + g0, ldv, bi,
                  o + i0 * ldo + g0, ldo, pf && i0 == 0);
      else
        group(rb, nv, mr, n, cw, p + i0 * ldp, ldp, v + g0, ldv, bi,
              o + i0 * ldo + g0, ldo, pf && i0 == 0);
    }
  }
}

/* The widest tile for the rows, each in a function of its own: inlined
 * beside the one-pass tile, parking areas and spills made the frame that
 * tile runs in 4 KiB larger, and it ran 5-6% slower (0.8, Zen 5: most
 * likely 4 KiB aliasing between the stack and the tiles' loads). */
#define SUB_BLOCKS(name, rb, nv)                                               \
  static __attribute__((noinline)) void name(                                  \
      size_t m, size_t n, size_t dv, const float *p, size_t ldp,               \
      const float *v, size_t ldv, const float *beta, float *o, size_t ldo) {   \
    wsum(rb, nv, 1, 1, m, n, dv, p, ldp, v, ldv, beta, o, ldo, NULL);          \
  }
SUB_BLOCKS(sub_blocks_4x4, SA_AVX512_WSUM_M4, SA_AVX512_WSUM_NV4)
SUB_BLOCKS(sub_blocks_mr, MR, SA_AVX512_WSUM_NV)
#undef SUB_BLOCKS

/* One or two rows: one row block, which prefetches, with the flag a
 * constant where sub_group is inlined, so the cursor is the tile's own and
 * lives in registers; in wsum's loop over row blocks it lives on the
 * stack, a load and a store a line named, which the 2 x 8 tile, 8 or 16
 * FMAs a line, cannot hide (one row, V in L2: 0.52x the time; MHA decode
 * from memory, Zen 5 VM, in one library alternated call by call: 0.90-0.99x
 * on one thread, 0.92-0.97x on two). The 4 x 4 tile, 0.91x hot that way,
 * ran 1.04-1.10x slower from memory (not understood) and keeps wsum's
 * loop. */
static __attribute__((noinline)) void
sub_blocks_2x8(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
               const float *v, size_t ldv, const float *beta, float *o,
               size_t ldo) {
  for (size_t g0 = 0; g0 < dv; g0 += CG)
    sub_group(M2, NV2, m, n, dv - g0 < CG ? dv - g0 : CG, p, ldp, v + g0, ldv,
              beta, o + g0, ldo, 1);
}

static void sub_blocks(size_t m, size_t n, size_t dv, const float *p,
                       size_t ldp, const float *v, size_t ldv,
                       const float *beta, float *o, size_t ldo) {
  if (m <= M2)
    sub_blocks_2x8(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
  else if (m <= SA_AVX512_WSUM_M4)
    sub_blocks_4x4(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
  else
    sub_blocks_mr(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

/* Which way decode-shaped calls take (sa_wsum_decode_policy, kernels.h). */
static int by_sub_blocks(void) {
  int policy = __atomic_load_n(&sa_wsum_decode_policy, __ATOMIC_RELAXED);
  return policy ? policy > 0 : sa_core_l1d_large();
}

/* Decode-shaped calls: keys in sub-blocks of KL, and in each sub-block the
 * rows two at a time over a group's CG columns (M2 x NV2, as wide as the
 * registers hold), the partial sums parked between sub-blocks (wsum_ends.h,
 * bit for bit). The first pair reads V from memory a whole row at a time in
 * address order, naming one line a vector loaded 4 KiB ahead; the other
 * pairs find the sub-block (128 KiB at dv = 128) in L2. A row straddles
 * one more line than it has vectors when V's rows are not on 64-byte lines:
 * then a line more a key is named. */
static __attribute__((noinline)) void
pairs(size_t m, size_t n, size_t dv, const float *p, size_t ldp, const float *v,
      size_t ldv, const float *beta, float *o, size_t ldo) {
  _Alignas(64) float part[STREAM_M * CG];
  const int extra = (((uintptr_t)v | ldv * sizeof(float)) & 63) != 0;
  for (size_t g0 = 0; g0 < dv; g0 += CG) {
    size_t cw = dv - g0 < CG ? dv - g0 : CG;
    const size_t ahead = sa_prefetch_rows_ahead(cw * sizeof(float), 4096);
    sa_prefetcher cur = sa_prefetcher_at(v + g0, ldv * sizeof(float),
                                         cw * sizeof(float), n, ahead);
    size_t j0 = 0;
    do { /* n = 0 still writes o = beta * o */
      size_t nb = n - j0 < KL ? n - j0 : KL, limit = j0 + nb + ahead;
      sa_prefetcher_raise(&cur, j0 + ahead);
      for (size_t i0 = 0; i0 < m; i0 += M2) {
        const sa_wsum_ends e = {j0 == 0, j0 + nb == n, part + i0 * CG, CG};
        rows(M2, NV2, m - i0 < M2 ? m - i0 : M2, nb, p + i0 * ldp + j0, ldp,
             v + j0 * ldv + g0, ldv, cw, beta ? beta + i0 : NULL,
             o + i0 * ldo + g0, ldo, e, i0 == 0 ? &cur : NULL, limit, extra, 0,
             0);
      }
      j0 += nb;
    } while (j0 < n);
  }
}

/* A few rows over all n keys, as wide as the registers hold, V's lines named
 * in address order 4 KiB ahead: one pass that streams V once, leaving it in
 * cache for the other rows. Nothing is parked, as a column block spans a
 * group. */
static __attribute__((noinline)) void
lead(size_t m, size_t n, size_t dv, const float *p, size_t ldp, const float *v,
     size_t ldv, const float *beta, float *o, size_t ldo) {
  const sa_wsum_ends e = {1, 1, NULL, 0};
  for (size_t g0 = 0; g0 < dv; g0 += CG) {
    size_t cw = dv - g0 < CG ? dv - g0 : CG;
    size_t ahead = sa_prefetch_rows_ahead(cw * sizeof(float), 4096);
    sa_prefetcher pf = sa_prefetcher_at(v + g0, ldv * sizeof(float),
                                        cw * sizeof(float), n, ahead);
    for (size_t c0 = 0; c0 < cw; c0 += 16 * NV2)
      rows(M2, NV2, m, n, p, ldp, v + g0 + c0, ldv, cw - c0, beta, o + g0 + c0,
           ldo, e, c0 == 0 ? &pf : NULL, n, c0 == 0, 1, 0);
  }
}

/* The one pass of more rows, none of them prefetching. */
static __attribute__((noinline)) void
reuse(size_t m, size_t n, size_t dv, const float *p, size_t ldp, const float *v,
      size_t ldv, const float *beta, float *o, size_t ldo) {
  wsum(MR, SA_AVX512_WSUM_NV, 0, 0, m, n, dv, p, ldp, v, ldv, beta, o, ldo,
       NULL);
}

void sa_wsum__avx512(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                     const float *v, size_t ldv, const float *beta, float *o,
                     size_t ldo) {
  if (m <= STREAM_M) {
    if (by_sub_blocks())
      sub_blocks(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
    else
      pairs(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
  } else if (m <= LEAD_M) {
    lead(LEAD, n, dv, p, ldp, v, ldv, beta, o, ldo);
    reuse(m - LEAD, n, dv, p + LEAD * ldp, ldp, v, ldv,
          beta ? beta + LEAD : NULL, o + LEAD * ldo, ldo);
  } else
    wsum(MR, SA_AVX512_WSUM_NV, 1, 0, m, n, dv, p, ldp, v, ldv, beta, o, ldo,
         NULL);
}

/* Rows that see keys [0, ends[i]) (the causal diagonal): with prefill's
 * rows, each row block's keys stop at its last end; fewer rows take wsum's
 * ways over all keys up to the last end, the zeros past a row's end
 * included. */
void sa_wsum_upto__avx512(size_t m, size_t n, size_t dv, const float *p,
                          size_t ldp, const float *v, size_t ldv,
                          const float *beta, float *o, size_t ldo,
                          const size_t *ends) {
  n = sa_ends_clip(ends, m, n);
  if (m <= LEAD_M)
    sa_wsum__avx512(m, n, dv, p, ldp, v, ldv, beta, o, ldo);
  else
    wsum(MR, SA_AVX512_WSUM_NV, 1, 0, m, n, dv, p, ldp, v, ldv, beta, o, ldo,
         ends);
}
