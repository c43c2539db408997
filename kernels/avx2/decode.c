/*
 * decode, AVX2: score, online softmax and weighted sum for m <= 16 rows in
 * one pass over K and V, in chunks of CHUNK keys (the contract is in
 * include/simdattn.h above sa_decode_fn).
 *
 * kernels/avx512/decode.c gives the reasons for the shape: decode is a
 * stream, each K and V byte used by the m rows of one call, so a chunk's
 * scores stay in a tile on the stack (16 x CHUNK floats) instead of going
 * to L2 and back between three kernels.
 *
 * The stream (0.8): a chunk reads its K rows, then its V rows, then the
 * next chunk's K rows, and one cursor names their 64-byte lines in that
 * order, a value-sum sub-block and 4 KiB of rows ahead of the reader (the
 * dot products name a block's worth of rows per block of keys, the value
 * sums a pass's share of a sub-block's rows before each pass). Until 0.8
 * chunks were 32 keys, whose dot products prefetched the chunk's V rows
 * and whose first value-sum pass the next chunk's K: 32 K rows then 32 V
 * rows, two short streams each time, and from memory (m = 4, d = 128,
 * Zen 3) it ran at 1.4-1.5x the three kernels' time on the same rows. With
 * 256-key chunks and the cursor it runs at 1.2x, and on shuffled 16-key
 * pages 1.6x instead of 1.9x (docs/DESIGN.md, "The decode kernel"). The
 * value sums take a chunk in sub-blocks of KB keys (as many bytes of V as
 * 32 f32 keys) through every pass of columns before the next, the partial
 * sums parked on the stack between them bit for bit, as wsum does, so that
 * a V row is read from L1 by the later passes. The cursor names lines
 * into L2 (T1) since 0.11.1: on a Zen 4 core (K and V from memory, d =
 * 128, builds alternated in one process) it ran 1.47-1.52x as fast at
 * m = 1 and 1.96-2.01x at m = 4 on contiguous rows, 1.59-1.73x on 16-key
 * pages shuffled through 512 MiB, as the AVX-512 kernel's (which says
 * more); into L1 dates from the Zen 3 VM, where a plain read of shuffled
 * pages ran alike with T0, T1 or NTA prefetches (docs/DESIGN.md).
 *
 * What 16 ymm registers change:
 *  - dots: score_t.c's tiles, DM = 4 rows x DN = 3 keys (2 x DN_WIDE = 4
 *    for m <= 2), K read as it lies, 8 values a step widened once for every
 *    row of the tile (a q8_0 block's scale once per 32 values), and
 *    util.h's transposed reduction into the score tile. score.c's pairs x
 *    4 keys, faster on Zen 5, ran 1.05-1.07x slower here on Zen 3 (gcc
 *    reloads K for each pair; docs/DESIGN.md, "What the avx2 decode is
 *    bound by on a Zen 3 core"). One or two rows over a chunk of 64 keys
 *    or more take the 4 keys of a tile from the chunk's four quarters, as
 *    score.c's streams (0.12.3; each score the same sum, bit for bit), the
 *    cursor past K: Zen 3 VM, builds alternated, h32 batch 8 on shuffled
 *    16-key pages over 32 KV heads 0.75-0.77x the time, h16 over 8 0.75x;
 *    contiguous rows m = 1 0.95x from memory, 0.73-0.74x with K in cache,
 *    m = 2 0.84-0.90x. Three quarters for 3-4 rows (DN = 3) ran level.
 *  - online step: the set's own softmax_online on the chunk's tile, so its
 *    NaN and -inf rules are those of the composition by construction.
 *  - value sums: passes of RB rows x NV vectors of columns, chosen by m
 *    (tiles.h), each V row of a sub-block loaded (and widened) once per
 *    pass for every row of it (bf16 in passes of an even number of
 *    vectors: 16 values a load as even and odd columns, widen.h; in L2,
 *    Zen 3, 0.86x the time at m = 1, 0.92x at 2, 0.96x at 4, the same
 *    bits). The sums start at 0 and o = alpha * o + sum at the store
 *    after the last sub-block, as wsum's beta. Up to 4 rows over a chunk
 *    of 64 keys or more take wsum_streams.h instead (0.12.3): the chunk's
 *    V rows as four streams of whole rows, the sums in an L1 buffer, and
 *    the cursor skips V's rows (naming each stream's rows 2-16 keys ahead
 *    ran slower, naming the chunk's in one burst too). Zen 3 VM, builds
 *    alternated: h32 batch 8 on 16-key pages shuffled through the pool
 *    0.80-0.81x the time over 8 and over 32 KV heads; contiguous rows from
 *    memory 0.90-0.93x at 1-4 rows.
 * Each phase is one function per element type (and the online step one per
 * exp), called once per chunk: the 4 x 4 type pairs times 2 exps share 8
 * phase bodies instead of instantiating 32 kernels, at the cost of three
 * indirect calls per chunk.
 *
 * Tails: keys of a short last dots block re-read the block's first key and
 * are left out of the score store; d and dv past their last full vector
 * (f32, f16, bf16: q8_0 rows are whole blocks) are copied through the
 * stack, never over-read (util.h says why not maskload); leftover rows run
 * the same tiles with fewer rows. The cursor names only lines of the rows
 * of the call.
 */
#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>

#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/avx2/widen.h"
#include "kernels/avx2/wsum_ends.h"
#include "kernels/avx2/wsum_streams.h"
#include "kernels/decode_chunks.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"

enum {
  CHUNK = SA_AVX2_DECODE_CHUNK,
  DM = SA_AVX2_DM,
  DN = SA_AVX2_DN,
  DN_WIDE = SA_AVX2_DN_WIDE,
  RB = SA_AVX2_DECODE_RB,
  KB = SA_AVX2_WSUM_KB,
  CG = SA_AVX2_WSUM_CG,
};

/* A pass starts at a multiple of 8 nv columns, so with nv a power of two a
 * q8_0 block starts at a vector c % 4 == 0 of it (sums). */
#define POW2_TO_8(x) ((x) == 1 || (x) == 2 || (x) == 4 || (x) == 8)
_Static_assert(POW2_TO_8(SA_AVX2_DECODE_NV1) && POW2_TO_8(SA_AVX2_DECODE_NV2) &&
                   POW2_TO_8(SA_AVX2_DECODE_NV4) &&
                   POW2_TO_8(SA_AVX2_DECODE_NV),
               "decode's value-sum passes take 1, 2, 4 or 8 vectors");
#undef POW2_TO_8

/* ---- the stream: the rows a chunk reads, in the order it reads them (its
 * K rows, its V rows, the next chunk's K rows), named to the caches line by
 * line in that order a bounded distance ahead of the reader, as
 * kernels/prefetch.h's cursor does for rows a stride apart. A list, not a
 * stride, because decode_rows' rows are wherever the caller's pages are;
 * one cursor across the three, so that the reader never meets a stream
 * whose first rows nobody named. */
typedef struct stream {
  const void *const *list[3];
  size_t n[3], bytes[3];
  size_t row;             /* position in the stream */
  size_t s, i;            /* that row's list, and its index there */
  const char *line, *end; /* the next line of that row, one past its end */
} stream;

SA_INLINE void stream_seek(stream *st, size_t row) {
  st->row = row;
  st->line = st->end = NULL;
  for (size_t s = 0; s < 3; s++) {
    if (row < st->n[s]) {
      const char *r = (const char *)st->list[s][row];
      st->s = s;
      st->i = row;
      if (st->bytes[s]) {
        st->line = sa_line_of(r);
        st->end = r + st->bytes[s];
      }
      return;
    }
    row -= st->n[s];
  }
}

SA_INLINE void stream_raise(stream *st, size_t row) {
  if (st->row < row)
    stream_seek(st, row);
}

/* Names the rows up to limit. The cursor lives in locals for the loop and
 * the next row of the same list is one index step: until then every row
 * was sought from the stream's start through the struct, and on a Zen 3
 * core (K and V in L2) the decode ran 0.79-0.91x the time at m = 1,
 * 0.89x at m = 2 and 0.87-0.95x at m = 4 this way, 10 % and 5 % fewer
 * instructions, the same from memory. A line a turn: four a turn, fewer
 * instructions still, ran 1.02-1.05x slower from memory (h32/kv8), the
 * prefetches in tighter bursts (docs/DESIGN.md, "What the avx2 decode is
 * bound by on a Zen 3 core"). */
SA_INLINE void stream_until(stream *st, size_t limit) {
  if (!st->line || st->row >= limit)
    return;
  const char *line = st->line, *end = st->end;
  size_t row = st->row, s = st->s, i = st->i;
  for (;;) {
    for (const char *x = line; x < end; x += 64)
      _mm_prefetch(x, _MM_HINT_T1);
    row++;
    if (++i < st->n[s]) { /* list s has bytes: its row had a line */
      const char *r = (const char *)st->list[s][i];
      line = sa_line_of(r);
      end = r + st->bytes[s];
    } else {
      stream_seek(st, row);
      if (!st->line)
        return;
      line = st->line, end = st->end, s = st->s, i = st->i;
    }
    if (row >= limit)
      break;
  }
  st->row = row, st->s = s, st->i = i, st->line = line, st->end = end;
}

/* Values p .. p + 8 of a row of type t, widened; sc: the q8_0 block's scale
 * (sa_q8_scale), ignored for other types. */
SA_INLINE __m256 load8(sa_dtype t, const char *row, size_t p, __m256 sc) {
  if (t == SA_F32)
    return _mm256_loadu_ps((const float *)row + p);
  return sa_widen8(t, sa_elem_at(t, row, p), sc);
}

/* The same for the np < 8 values left at a row's end, other lanes 0
 * (f32, f16, bf16 only). */
SA_INLINE __m256 load8_part(sa_dtype t, const char *row, size_t p, size_t np) {
  if (t == SA_F32)
    return sa_load8_part((const float *)row + p, np);
  return sa_widen8_part(t, sa_elem_at(t, row, p), np);
}

/* ---- dots: s[0..mr)[0..nk) = scale * q[0..mr) . kr[0..nk), nk <= dn */

/* acc[r][c] += q[r][p .. p + 8) * k[c][p .. p + 8) for r < mr, c < dn. */
SA_INLINE void fma_step(sa_dtype t, size_t mr, size_t dn, const float *q,
                        size_t ldq, const char *const *kr, size_t p,
                        const __m256 *sc, __m256 acc[4][4]) {
  __m256 b[4];
  for (size_t c = 0; c < dn; c++)
    b[c] = load8(t, kr[c], p, sc[c]);
  for (size_t r = 0; r < mr; r++) {
    __m256 a = _mm256_loadu_ps(q + r * ldq + p);
    for (size_t c = 0; c < dn; c++)
      acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
  }
}

/* mr and dn are constants at every call, so acc lives in registers. */
SA_INLINE void dots(sa_dtype t, size_t mr, size_t dn, size_t d, const float *q,
                    size_t ldq, const char *const *kr, float *s, size_t nk,
                    float scale, size_t ks) {
  __m256 acc[4][4], sc[4];
  for (size_t r = 0; r < 4; r++)
    for (size_t c = 0; c < 4; c++)
      acc[r][c] = _mm256_setzero_ps();
  for (size_t c = 0; c < 4; c++)
    sc[c] = _mm256_setzero_ps();
  size_t p = 0;
  for (; p + 32 <= d; p += 32) {
    if (t == SA_Q8_0)
      for (size_t c = 0; c < dn; c++)
        sc[c] = sa_q8_scale(kr[c], p);
    for (size_t u = 0; u < 32; u += 8)
      fma_step(t, mr, dn, q, ldq, kr, p + u, sc, acc);
  }
  if (t != SA_Q8_0) {
    for (; p + 8 <= d; p += 8)
      fma_step(t, mr, dn, q, ldq, kr, p, sc, acc);
    if (p < d) {
      __m256 b[4];
      for (size_t c = 0; c < dn; c++)
        b[c] = load8_part(t, kr[c], p, d - p);
      for (size_t r = 0; r < mr; r++) {
        __m256 a = sa_load8_part(q + r * ldq + p, d - p);
        for (size_t c = 0; c < dn; c++)
          acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
      }
    }
  }
  if (ks)
    sa_dots_scatter8(mr, dn, acc, scale, s, CHUNK, ks);
  else
    sa_dots_store8(mr, dn, acc, scale, s, CHUNK, nk);
}

/* The chunk's scores s[i][0..nc) for every row in blocks of dn keys, K
 * rows at k[j]; the stream is named `ahead` rows past each block. */
SA_INLINE void chunk_dots(sa_dtype t, size_t dn, size_t m, size_t nc, size_t d,
                          const float *q, size_t ldq, const void *const *k,
                          float scale, float *s, stream *st, size_t ahead) {
  size_t j0 = 0;
  if (dn == DN_WIDE && nc >= DN_WIDE * SA_AVX2_STREAM_KEYS) {
    /* as score.c's streams: DN_WIDE quarters of the chunk, key j of each
     * a tile, the cursor past K (the hardware follows four streams) */
    const size_t nq = nc / dn;
    stream_raise(st, nc);
    for (size_t j = 0; j < nq; j++) {
      const char *kr[4];
      for (size_t c = 0; c < dn; c++)
        kr[c] = k[c * nq + j];
      for (size_t i0 = 0; i0 < m; i0 += DM) {
#define DOTS(r)                                                                \
  dots(t, r, dn, d, q + i0 * ldq, ldq, kr, s + i0 * CHUNK + j, dn, scale, nq)
        SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
      }
    }
    j0 = dn * nq;
  }
  for (; j0 < nc; j0 += dn) {
    size_t nk = nc - j0 < dn ? nc - j0 : dn;
    const char *kr[4];
    for (size_t c = 0; c < dn; c++)
      kr[c] = k[c < nk ? j0 + c : j0];
    stream_raise(st, j0 + ahead);
    stream_until(st, j0 + dn + ahead);
    for (size_t i0 = 0; i0 < m; i0 += DM) {
#define DOTS(r)                                                                \
  dots(t, r, dn, d, q + i0 * ldq, ldq, kr, s + i0 * CHUNK + j0, nk, scale, 0)
      SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
    }
  }
}

/* ---- value sums, keys in sub-blocks through every pass of columns, the
 * partial sums parked in part (rows CG floats apart) between sub-blocks
 * (wsum_ends.h, as wsum does). */

/* o[r][c0 ..) = alpha[r] * o + sum_j p[r][j] * v[j][c0 ..] for r < mr over
 * nv vectors of columns, cn of them valid (full: cn is 8 nv, and the column
 * checks fold away), keys [0, nb) of a sub-block: the sums start at 0 or
 * from e.part, and end parked there or (the last sub-block) in o. Nothing
 * is named inside the loop over keys: a cursor step per key cost 20-30%
 * from cache, a burst per pass (row_passes) nothing measurable. mr, nv
 * and full are constants at every call. */
SA_INLINE void sums(sa_dtype t, size_t mr, size_t nv, int full, size_t nb,
                    const float *p, const void *const *v, size_t c0, size_t cn,
                    sa_wsum_ends e, const float *alpha, float *o, size_t ldo) {
  __m256 acc[8][8];
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
#pragma GCC unroll 8
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = sa_wsum_start(e, r, c);
  /* bf16, whole passes of 16-column pairs: even and odd columns, as
   * wsum_t.c's tiles, back in order at the last store */
  const int pairs = t == SA_BF16 && full && nv % 2 == 0;
  for (size_t j = 0; j < nb; j++) {
    const char *row = v[j];
    __m256 b[8], sc = _mm256_setzero_ps();
    if (pairs)
#pragma GCC unroll 8
      for (size_t c = 0; c < nv; c += 2)
        sa_widen16_bf16_pairs(sa_elem_at(t, row, c0 + 8 * c), &b[c], &b[c + 1]);
    else
#pragma GCC unroll 8
      for (size_t c = 0; c < nv; c++) {
        size_t at = c0 + 8 * c;
        if (full || 8 * c + 8 <= cn) {
          /* one scale per q8_0 block (32 columns, 4 vectors) */
          if (t == SA_Q8_0 && (c % 4 == 0))
            sc = sa_q8_scale(row, at);
          b[c] = load8(t, row, at, sc);
        } else if (8 * c < cn) {
          b[c] = load8_part(t, row, at, cn - 8 * c);
        } else {
          b[c] = _mm256_setzero_ps();
        }
      }
#pragma GCC unroll 8
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_broadcast_ss(p + r * CHUNK + j);
#pragma GCC unroll 8
      for (size_t c = 0; c < nv; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  if (pairs && e.last)
#pragma GCC unroll 8
    for (size_t r = 0; r < mr; r++)
#pragma GCC unroll 8
      for (size_t c = 0; c < nv; c += 2)
        sa_pairs_in_order(&acc[r][c], &acc[r][c + 1]);
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
#pragma GCC unroll 8
    for (size_t c = 0; c < nv; c++) {
      /* columns of this vector in o: vectors past cn are parked, never
       * stored */
      size_t w = full || 8 * c + 8 <= cn ? 8 : 8 * c < cn ? cn - 8 * c : 0;
      if (!e.last || w)
        sa_wsum_finish(e, r, c, alpha, o + r * ldo + c0 + 8 * c, w, acc[r][c]);
    }
}

/* Columns [g0, g0 + cw) of rows 0..mr in passes of nv vectors, the last
 * one partial when cw is not a multiple of 8 nv; pf: before each pass, name
 * the stream's rows up to its share of [from, to). */
SA_INLINE void row_passes(sa_dtype t, size_t mr, size_t nv, size_t nb,
                          size_t g0, size_t cw, const float *p,
                          const void *const *v, sa_wsum_ends e,
                          const float *alpha, float *o, size_t ldo, stream *st,
                          int pf, size_t from, size_t to) {
  const size_t np = (cw + 8 * nv - 1) / (8 * nv);
  size_t c0 = g0, end = g0 + cw, i = 0;
  for (; c0 + 8 * nv <= end; c0 += 8 * nv, e.part += 8 * nv) {
    if (pf)
      stream_until(st, from + (to - from) * ++i / np);
    sums(t, mr, nv, 1, nb, p, v, c0, 8 * nv, e, alpha, o, ldo);
  }
  if (c0 < end) {
    if (pf)
      stream_until(st, to);
    sums(t, mr, nv, 0, nb, p, v, c0, end - c0, e, alpha, o, ldo);
  }
}

/* Every row and column of the chunk: one row block for m <= 4 (as many
 * columns a pass as the registers hold beside the rows), blocks of RB rows
 * one vector wide above; keys in sub-blocks of kb, columns in groups of
 * CG. The first row block names the stream `ahead` rows past the V row
 * being read (stream row nc + j). */
SA_INLINE void chunk_sums(sa_dtype t, size_t kb, size_t m, size_t nc, size_t dv,
                          const float *p, const void *const *v,
                          const float *alpha, float *o, size_t ldo, stream *st,
                          size_t ahead) {
  if (sa_wsum_streams_take(m, nc)) {
    /* V's rows left to the hardware: the cursor skips them */
    stream_raise(st, 2 * nc);
    sa_wsum_streams(t, m, nc, dv, p, CHUNK, NULL, 0, v, alpha, o, ldo);
    stream_until(st, 2 * nc + ahead);
    return;
  }
  _Alignas(32) float part[SA_DECODE_ROWS * CG];
  for (size_t g0 = 0; g0 < dv; g0 += CG) {
    size_t cw = dv - g0 < CG ? dv - g0 : CG;
    for (size_t j0 = 0; j0 < nc; j0 += kb) {
      size_t nb = nc - j0 < kb ? nc - j0 : kb;
      size_t from = nc + j0 + ahead, to = from + nb;
      sa_wsum_ends e = {j0 == 0, j0 + nb == nc, part, SA_WSUM_CG};
      if (g0 == 0) /* later groups name nothing */
        stream_raise(st, from);
#define PASSES(r, nv, i0, pf)                                                  \
  row_passes(t, r, nv, nb, g0, cw, p + (i0)*CHUNK + j0, v + j0, e,             \
             alpha + (i0), o + (i0)*ldo, ldo, st, (pf) && g0 == 0, from, to)
      if (m == 1)
        PASSES(1, SA_AVX2_DECODE_NV1, 0, 1);
      else if (m == 2)
        PASSES(2, SA_AVX2_DECODE_NV2, 0, 1);
      else if (m == 3)
        PASSES(3, SA_AVX2_DECODE_NV4, 0, 1);
      else if (m == 4)
        PASSES(4, SA_AVX2_DECODE_NV4, 0, 1);
      else
        for (size_t i0 = 0; i0 < m; i0 += RB) {
          e.part = part + i0 * CG;
#define BLOCK(r) PASSES(r, SA_AVX2_DECODE_NV, i0, i0 == 0)
          SA_UNROLL_1_8(m - i0 < RB ? m - i0 : RB, BLOCK);
#undef BLOCK
        }
#undef PASSES
    }
  }
}

/* ---- one phase function per type, and the chunk loop */

/* Keys a value-sum sub-block: 16 KiB of V at dv = 128, whatever its type. */
static size_t sub_block(sa_dtype t) {
  return t == SA_Q8_0 ? 4 * KB : t == SA_F32 ? KB : 2 * KB;
}

typedef void (*dots_fn)(size_t m, size_t nc, size_t d, const float *q,
                        size_t ldq, const void *const *k, float scale, float *s,
                        stream *st, size_t ahead);
typedef void (*sums_fn)(size_t m, size_t nc, size_t dv, const float *p,
                        const void *const *v, const float *alpha, float *o,
                        size_t ldo, stream *st, size_t ahead);

#define PHASES(T, name)                                                        \
  static void dots_##name(size_t m, size_t nc, size_t d, const float *q,       \
                          size_t ldq, const void *const *k, float scale,       \
                          float *s, stream *st, size_t ahead) {                \
    if (m <= SA_AVX2_DOTS_M_WIDE)                                              \
      chunk_dots(T, DN_WIDE, m, nc, d, q, ldq, k, scale, s, st, ahead);        \
    else                                                                       \
      chunk_dots(T, DN, m, nc, d, q, ldq, k, scale, s, st, ahead);             \
  }                                                                            \
  static void sums_##name(size_t m, size_t nc, size_t dv, const float *p,      \
                          const void *const *v, const float *alpha, float *o,  \
                          size_t ldo, stream *st, size_t ahead) {              \
    chunk_sums(T, sub_block(T), m, nc, dv, p, v, alpha, o, ldo, st, ahead);    \
  }
PHASES(SA_F32, f32)
PHASES(SA_F16, f16)
PHASES(SA_BF16, bf16)
PHASES(SA_Q8_0, q8_0)
#undef PHASES

static dots_fn dots_for(sa_dtype t) {
  return t == SA_F16    ? dots_f16
         : t == SA_BF16 ? dots_bf16
         : t == SA_Q8_0 ? dots_q8_0
                        : dots_f32;
}

static sums_fn sums_for(sa_dtype t) {
  return t == SA_F16    ? sums_f16
         : t == SA_BF16 ? sums_bf16
         : t == SA_Q8_0 ? sums_q8_0
                        : sums_f32;
}

static void decode(size_t m, size_t n, size_t d, size_t dv, const float *q,
                   size_t ldq, sa_decode_src k, sa_dtype kt, sa_decode_src v,
                   sa_dtype vt, float scale, float *mx, float *l, float *o,
                   size_t ldo, sa_softmax_online_fn online) {
  _Alignas(32) float s[SA_DECODE_ROWS * CHUNK];
  float alpha[SA_DECODE_ROWS];
  const void *kbuf[2][CHUNK], *vbuf[CHUNK];
  const size_t krow = sa_decode_row_bytes(kt, d);
  const size_t vrow = sa_decode_row_bytes(vt, dv);
  const size_t row = krow > vrow ? krow : vrow;
  /* a value-sum sub-block and 4 KiB of rows ahead of the reader */
  const size_t ahead = sub_block(vt) + sa_prefetch_rows_ahead(row, 4096);
  const dots_fn dots_kt = dots_for(kt);
  const sums_fn sums_vt = sums_for(vt);
  const void *const *kr =
      sa_decode_rows_at(&k, 0, n < CHUNK ? n : CHUNK, kbuf[0]);
  size_t pos = 0;
  for (size_t j0 = 0, b = 0; j0 < n; j0 += CHUNK, b ^= 1) {
    size_t nc = n - j0 < CHUNK ? n - j0 : CHUNK;
    size_t rest = n - j0 - nc, nk = rest < CHUNK ? rest : CHUNK;
    const void *const *vr = sa_decode_rows_at(&v, j0, nc, vbuf);
    const void *const *kn = sa_decode_rows_at(&k, j0 + nc, nk, kbuf[b ^ 1]);
    stream st = {{kr, vr, kn}, {nc, nc, nk}, {krow, vrow, krow}, 0, 0, 0, 0, 0};
    stream_seek(&st, pos);
    /* the rows up to `ahead` that nothing named before: the call's first,
     * and the V rows of a last chunk shorter than `ahead`, which the
     * previous chunk's stream did not reach (a full chunk's are named
     * already, and this names nothing) */
    stream_until(&st, ahead);
    dots_kt(m, nc, d, q, ldq, kr, scale, s, &st, ahead);
    online(m, nc, s, CHUNK, NULL, mx, l, alpha);
    sums_vt(m, nc, dv, s, vr, alpha, o, ldo, &st, ahead);
    pos = st.row > 2 * nc ? st.row - 2 * nc : 0;
    kr = kn;
  }
}

SA_DECODE_ENTRIES(avx2_sleef, decode, sa_softmax_online__avx2_sleef)
SA_DECODE_ENTRIES(avx2_poly, decode, sa_softmax_online__avx2_poly)
