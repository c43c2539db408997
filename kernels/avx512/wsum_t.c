/*
 * wsum with narrow V, AVX-512: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] *
 * v[j][c], P f32, V f16, bf16 or q8_0 (ldv in that type's units: elements,
 * or 34-byte blocks with dv a multiple of 32).
 *
 * wsum.c's tile with V widened exactly (widen.h) as it is loaded: one step
 * of j widens the 32 values v[j][c0..c0 + 32) (one 64-byte line of f16 /
 * bf16, one q8_0 block) into NV = 2 vectors once and uses them for all MR
 * rows, so the FMAs and their order are the f32 kernel's on the same
 * values. q8_0 is dequantised (int8 * scale, exact) rather than folding the
 * scale into p[i][j]: that would round p * scale, and cost MR multiplies
 * per step instead of two.
 *
 * bf16 V (0.11.2) is widened as even and odd columns (widen.h: a shift and
 * an AND a line, where zero-extension took five operations, two of them
 * lane-crossing), the sums kept and parked in that order and put back in
 * column order once, at the output: each column's sum is unchanged, bit
 * for bit. One Zen 4 core: value sums from L2 (m 4, d 128) 1.06x as fast,
 * bf16 prefill (bf16 Q/K/V, L 2048, d 128) 1.07-1.11x.
 *
 * Decode-shaped calls (m <= STREAM_M) take keys in sub-blocks of 64 keys
 * of f16 / bf16 (4 KB) and 128 of q8_0 (8 KB): twice wsum.c's f32 bytes,
 * since the parked sums cost more beside the narrow rows' fewer bytes
 * (with 2 KB keys of f16, 4 rows gained 4% from memory, one row lost 2%),
 * except for the 4-row tile (3-4 rows: decode of a GQA group of 4), which
 * takes 16 keys of f16 / bf16 and 32 of q8_0 (0.9.3): its two column blocks
 * read each sub-block twice, and a sub-block and 4 KiB ahead of f16 rows
 * (20 KiB) named into a 48 KiB L1 left the first pass's lines evicted
 * before the second; from memory the f16 and bf16 value sums ran 1.24-1.26x
 * as fast (q8_0 1.10x), from cache 7 % slower (more parking),
 * columns in groups of CG, the partial sums parked between sub-blocks bit for
 * bit (wsum_ends.h), all as in wsum.c, which says why. With at most 4 rows the
 * column blocks are as wide as wsum.c's (M2 rows x NV2 vectors, M4 x NV4),
 * whole blocks while they last and the rest 32 columns at a time: a key's
 * widened vectors and its rows' broadcasts then feed 16 FMAs instead of 8 (m =
 * 4). With 17 to LEAD_M rows the first LEAD rows stream V in one pass and
 * the rest reuse it from cache, as wsum.c's. More rows keep one pass of
 * all n keys a column block, the first prefetching whole rows PF keys
 * ahead, as wsum.c's, except q8_0, whose blocks are widened once for all
 * the rows (q8_0_rows, below).
 *
 * How V is named (0.8, as wsum.c): the first row block trickles the
 * cursor (kernels/prefetch.h) through every column block, as many lines a
 * key as the block's 32-value units (one more in the first column block,
 * for a row that straddles a line more), V's rows in address order a
 * sub-block and 4 KiB ahead. Until then only the first column block named
 * a whole row a key, and the later ones nothing: that first pass asked for
 * rows faster than memory delivers and the others left it idle. Measured
 * on Zen 5 (one core, cache from memory, kernels called directly, m = 4,
 * d = 128): the f16 value sums 12.7-13.0 -> 10.8-10.9 ns a key; decode of
 * 32 query heads over 8 KV heads 1.06-1.09x (f16), 1.06x (bf16), level
 * (q8_0, bound by its instructions). The wide blocks, against the 8 x 2
 * tile: q8_0 decode 1.08-1.10x, f16 with 2 rows a KV head 1.18x, with 1
 * 1.10x; from L2 the f16 value sums 7.9 -> 7.0 ns a key.
 *
 * Tails: columns past dv (and past a group) are masked off at every load
 * (f16 / bf16: the 16-bit lanes of the last column block; q8_0 has whole
 * blocks, dv and the groups being multiples of 32) and store; leftover rows
 * run the same tile with fewer rows. beta NULL: o is only written.
 */
#include <immintrin.h>

#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"
#include "kernels/avx512/widen.h"
#include "kernels/avx512/wsum_ends.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"

enum {
  MR = SA_AVX512_WSUM_MR,
  NV = SA_AVX512_WSUM_NV,
  M4 = SA_AVX512_WSUM_M4, /* at most 4 rows: wider column blocks */
  NV4 = SA_AVX512_WSUM_NV4,
  M2 = SA_AVX512_WSUM_M2,
  NV2 = SA_AVX512_WSUM_NV2,
  KB = SA_AVX512_WSUM_KB,
  CG = SA_AVX512_WSUM_CG,
  STREAM_M = SA_AVX512_DOTS_M, /* decode-shaped: sub-blocks and a cursor */
  LEAD_M = SA_AVX512_WSUM_LEAD_M,
  LEAD = SA_AVX512_WSUM_LEAD,
  PF = 8, /* more rows: whole rows this far ahead */
};

#define AI static inline __attribute__((always_inline))

/* acc[r][0..nv) += p[r * ldp] * row[c0 .. c0 + cn) widened, for one key;
 * nv = 2: cn <= 32 (a tail is loaded masked); wider: cn = 16 nv, whole. */
AI void key(sa_dtype t, size_t mr, size_t nv, const float *p, size_t ldp,
            const char *row, size_t c0, size_t cn, __m512 acc[MR][SA_WSUM_NV]) {
  __m512 b[SA_WSUM_NV];
  for (size_t h = 0; h < nv / 2; h++)
    sa_widen32_eo(t, 1, row, c0 + 32 * h, nv == 2 ? cn : 32, &b[2 * h],
                  &b[2 * h + 1]);
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++) {
    __m512 a = _mm512_set1_ps(p[r * ldp]);
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
  }
}

/* Columns c0 .. c0 + cn of a group (key's rule for nv and cn), of mr rows
 * over keys [0, n) of a sub-block, V rows ldvb bytes apart from v (the
 * group's first unit), o at the group's column c0; pf (if any) names nv / 2
 * lines a key (extra: one more), up to row `limit`; else ahead > 0
 * prefetches `ahead` bytes of the row PF keys further on. mr and nv are
 * constants at every call, so acc lives in registers (wsum_ends.h's
 * shape). */
AI void tile(sa_dtype t, size_t mr, size_t nv, size_t n, const float *p,
             size_t ldp, const char *v, size_t ldvb, size_t c0, size_t cn,
             const float *beta, float *o, size_t ldo, sa_wsum_ends e,
             sa_prefetcher *pf, size_t limit, int extra, size_t ahead) {
  __m512 acc[MR][SA_WSUM_NV];
  __mmask16 km[SA_WSUM_NV];
  sa_wsum_masks(nv, cn, km);
  sa_wsum_begin(mr, nv, e, acc);
  /* one loop per way to prefetch, so that the others test nothing */
  if (pf)
    for (size_t j = 0; j < n; j++) {
      for (size_t c = 0; c < nv / 2; c++)
        sa_prefetch_next(pf, limit, 0, 0);
      if (extra)
        sa_prefetch_next(pf, limit, 0, 0);
      key(t, mr, nv, p + j, ldp, v + j * ldvb, c0, cn, acc);
    }
  else if (ahead)
    for (size_t j = 0; j < n; j++) {
      const char *row = v + (j + PF < n ? j + PF : n - 1) * ldvb;
      for (size_t b = 0; b < ahead; b += 64)
        _mm_prefetch(row + b, _MM_HINT_T0);
      key(t, mr, nv, p + j, ldp, v + j * ldvb, c0, cn, acc);
    }
  else
    for (size_t j = 0; j < n; j++)
      key(t, mr, nv, p + j, ldp, v + j * ldvb, c0, cn, acc);
  /* bf16's sums, kept and parked as evens and odds, in column order */
  for (size_t r = 0; t == SA_BF16 && e.last && r < mr; r++)
    for (size_t c = 0; c < nv; c += 2)
      sa_bf16_eo_columns(&acc[r][c], &acc[r][c + 1]);
  sa_wsum_end(mr, nv, km, e, beta, o, ldo, acc);
}

/* The tile for mr rows, mr <= rb (rb 2, 4 or MR, a constant). */
AI void rows(sa_dtype t, size_t rb, size_t nv, size_t mr, size_t n,
             const float *p, size_t ldp, const char *v, size_t ldvb, size_t c0,
             size_t cn, const float *beta, float *o, size_t ldo, sa_wsum_ends e,
             sa_prefetcher *pf, size_t limit, int extra, size_t ahead) {
#define TILE(r)                                                                \
  tile(t, r, nv, n, p, ldp, v, ldvb, c0, cn, beta, o, ldo, e, pf, limit,       \
       extra, ahead)
  SA_UNROLL_1_RB(rb, mr, TILE);
#undef TILE
}

/* Columns [0, cw) (cw <= CG) of mr rows over keys [0, n), V rows ldvb
 * bytes apart from v, the group's first unit (a q8_0 block start: groups
 * start at multiples of CG), in column blocks of nv vectors while whole
 * ones remain, then of 2 (the tail, masked); prefetch: the first row
 * block, which prefetches V. stream: in sub-blocks, V's rows named in
 * address order; else all n keys a column block, the first one
 * prefetching whole rows PF keys ahead. */
AI void group(sa_dtype t, size_t rb, size_t nv, size_t mr, size_t n, size_t cw,
              const float *p, size_t ldp, const char *v, size_t ldvb,
              const float *beta, float *o, size_t ldo, int prefetch,
              int stream) {
  /* bytes the group's cw values take (q8_0: cw / 32 blocks) */
  const size_t rowb = sa_widen_offset(t, cw);
  if (!stream) { /* one pass of all n keys a column block, nothing parked */
    const sa_wsum_ends e = {1, 1, NULL, 0};
    for (size_t c0 = 0; c0 < cw; c0 += 16 * nv)
      rows(t, rb, nv, mr, n, p, ldp, v, ldvb, c0,
           cw - c0 < 16 * nv ? cw - c0 : 16 * nv, beta, o + c0, ldo, e, NULL, 0,
           0, prefetch && c0 == 0 ? rowb : 0);
    return;
  }
  _Alignas(64) float part[MR * CG];
  /* twice f32's bytes (the header says why; avx2's q8_0 decode, bound by
   * its widening, lost 5% with 32-key sub-blocks), but a quarter of that
   * for the 4-row tile, which reads each sub-block twice (header) */
  const size_t kb = rb == M4       ? (t == SA_Q8_0 ? 2 * KB : KB)
                    : t == SA_Q8_0 ? 8 * KB
                                   : 4 * KB;
  /* a sub-block and 4 KiB ahead, as wsum.c */
  const size_t ahead = kb + sa_prefetch_rows_ahead(rowb, 4096);
  sa_prefetcher cur = sa_prefetcher_at(v, ldvb, rowb, n, ahead);
  sa_prefetcher *pf = prefetch ? &cur : NULL;
  size_t j0 = 0;
  do { /* n = 0 still writes o = beta * o */
    size_t nb = n - j0 < kb ? n - j0 : kb;
    sa_wsum_ends e = {j0 == 0, j0 + nb == n, part, SA_WSUM_CG};
    const float *pj = p + j0;
    const char *vj = v + j0 * ldvb;
    size_t limit = j0 + nb + ahead;
    sa_prefetcher_raise(&cur, j0 + ahead);
    for (size_t c0 = 0; c0 < cw;) {
      /* whole blocks of nv vectors, then the rest 32 columns at a time */
      size_t w = cw - c0 >= 16 * nv ? 16 * nv : 32;
      size_t cn = cw - c0 < w ? cw - c0 : w;
      if (w == 32)
        rows(t, rb, 2, mr, nb, pj, ldp, vj, ldvb, c0, cn, beta, o + c0, ldo, e,
             pf, limit, c0 == 0, 0);
      else
        rows(t, rb, nv, mr, nb, pj, ldp, vj, ldvb, c0, cn, beta, o + c0, ldo, e,
             pf, limit, c0 == 0, 0);
      c0 += w;
      e.part += w;
    }
    j0 += nb;
  } while (j0 < n);
}

/* Rows in blocks of rb, nv vectors a column block (both constants); the
 * first block prefetches V unless told not to (V in cache). */
AI void wsum_typed(sa_dtype t, size_t rb, size_t nv, int stream, int pf,
                   size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                   const void *v, size_t ldv, const float *beta, float *o,
                   size_t ldo) {
  const size_t ldvb = ldv * sa_widen_unit(t);
  for (size_t i0 = 0; i0 < m; i0 += rb) {
    size_t mr = m - i0 < rb ? m - i0 : rb;
    for (size_t g0 = 0; g0 < dv; g0 += CG)
      group(t, rb, nv, mr, n, dv - g0 < CG ? dv - g0 : CG, p + i0 * ldp, ldp,
            (const char *)v + sa_widen_offset(t, g0), ldvb,
            beta ? beta + i0 : NULL, o + i0 * ldo + g0, ldo, pf && i0 == 0,
            stream);
  }
}

/* wsum.c's lead pass: the first rows over all n keys, 2 rows x 8 vectors,
 * V's lines named in address order 4 KiB ahead, nothing parked. */
AI void lead(sa_dtype t, size_t m, size_t n, size_t dv, const float *p,
             size_t ldp, const void *v, size_t ldv, const float *beta, float *o,
             size_t ldo) {
  const size_t ldvb = ldv * sa_widen_unit(t);
  const sa_wsum_ends e = {1, 1, NULL, 0};
  for (size_t g0 = 0; g0 < dv; g0 += CG) {
    size_t cw = dv - g0 < CG ? dv - g0 : CG, rowb = sa_widen_offset(t, cw);
    const char *vg = (const char *)v + sa_widen_offset(t, g0);
    sa_prefetcher pf =
        sa_prefetcher_at(vg, ldvb, rowb, n, sa_prefetch_rows_ahead(rowb, 4096));
    for (size_t c0 = 0; c0 < cw;) {
      /* whole blocks of NV2 vectors, then the rest 32 columns at a time */
      size_t w = cw - c0 >= 16 * NV2 ? 16 * NV2 : 32;
      size_t cn = cw - c0 < w ? cw - c0 : w;
      sa_prefetcher *pc = c0 == 0 ? &pf : NULL;
      if (w == 32)
        rows(t, M2, 2, m, n, p, ldp, vg, ldvb, c0, cn, beta, o + g0 + c0, ldo,
             e, pc, n, c0 == 0, 0);
      else
        rows(t, M2, NV2, m, n, p, ldp, vg, ldvb, c0, cn, beta, o + g0 + c0, ldo,
             e, pc, n, c0 == 0, 0);
      c0 += w;
    }
  }
}

/* ---- q8_0 with many rows (prefill): each 32-column block of V (one q8_0
 * block a row) dequantised once per DK keys into an f32 buffer that every
 * row tile then reads, instead of once per row tile: a key's scale
 * broadcast and two multiplies took 8 operations beside a tile's 16 FMAs,
 * the multiplies on the FMA pipes, and the value sums ran 1.16x f32's at
 * m = 128 (f16 and bf16, one widening op per 16 values, run level with
 * f32). The tiles' sums are parked between the buffer's sub-blocks bit
 * for bit, so each lane adds its keys in order as the one-pass tile does,
 * and the output is that tile's. */
enum {
  DK = 64,  /* keys a dequantised sub-block: 8 KiB of f32 */
  RCH = 128 /* rows parked at once: 16 KiB */
};

/* Keys [0, nb) of buf (32 floats a key) for mr rows of p, the sums
 * starting and ending as e says (part: 32 floats a row). */
AI void deq_tile(size_t mr, size_t nb, const float *p, size_t ldp,
                 const float *buf, sa_wsum_ends e, const float *beta, float *o,
                 size_t ldo) {
  __m512 acc[MR][SA_WSUM_NV];
  __mmask16 km[SA_WSUM_NV];
  sa_wsum_masks(2, 32, km);
  sa_wsum_begin(mr, 2, e, acc);
  for (size_t j = 0; j < nb; j++) {
    __m512 b0 = _mm512_load_ps(buf + 32 * j);
    __m512 b1 = _mm512_load_ps(buf + 32 * j + 16);
#pragma GCC unroll 8
    for (size_t r = 0; r < mr; r++) {
      __m512 a = _mm512_set1_ps(p[r * ldp + j]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
  sa_wsum_end(mr, 2, km, e, beta, o, ldo, acc);
}

static __attribute__((noinline)) void
q8_0_rows(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
          const void *v, size_t ldv, const float *beta, float *o, size_t ldo) {
  _Alignas(64) float buf[DK * 32];
  _Alignas(64) float part[RCH * 32];
  const size_t ldvb = ldv * sizeof(sa_block_q8_0);
  for (size_t i0 = 0; i0 < m; i0 += RCH) {
    size_t mc = m - i0 < RCH ? m - i0 : RCH;
    for (size_t c0 = 0; c0 < dv; c0 += 32) {
      const char *vc = (const char *)v + c0 / 32 * sizeof(sa_block_q8_0);
      size_t j0 = 0;
      do { /* n = 0 still writes o = beta * o */
        size_t nb = n - j0 < DK ? n - j0 : DK;
        for (size_t j = 0; j < nb; j++) {
          __m512 lo, hi;
          if (j0 + j + PF < n)
            _mm_prefetch(vc + (j0 + j + PF) * ldvb, _MM_HINT_T0);
          sa_widen32(SA_Q8_0, vc + (j0 + j) * ldvb, 0, 32, &lo, &hi);
          _mm512_store_ps(buf + 32 * j, lo);
          _mm512_store_ps(buf + 32 * j + 16, hi);
        }
        for (size_t r0 = 0; r0 < mc; r0 += MR) {
          size_t i = i0 + r0;
          const sa_wsum_ends e = {j0 == 0, j0 + nb == n, part + 32 * r0, 32};
#define TILE(r)                                                                \
  deq_tile(r, nb, p + i * ldp + j0, ldp, buf, e, beta ? beta + i : NULL,       \
           o + i * ldo + c0, ldo)
          SA_UNROLL_1_8(mc - r0 < MR ? mc - r0 : MR, TILE);
#undef TILE
        }
        j0 += nb;
      } while (j0 < n);
    }
  }
}

/* The streamed tiles in functions of their own, as in wsum.c (which says
 * why); with at most 4 rows the column blocks are as wide as the registers
 * hold, as wsum.c's. */
#define WSUM_T(name, type)                                                     \
  static __attribute__((noinline)) void name##_streamed(                       \
      size_t m, size_t n, size_t dv, const float *p, size_t ldp,               \
      const void *v, size_t ldv, const float *beta, float *o, size_t ldo) {    \
    if (m <= M2)                                                               \
      wsum_typed(type, M2, NV2, 1, 1, m, n, dv, p, ldp, v, ldv, beta, o, ldo); \
    else if (m <= M4)                                                          \
      wsum_typed(type, M4, NV4, 1, 1, m, n, dv, p, ldp, v, ldv, beta, o, ldo); \
    else                                                                       \
      wsum_typed(type, MR, NV, 1, 1, m, n, dv, p, ldp, v, ldv, beta, o, ldo);  \
  }                                                                            \
  static __attribute__((noinline)) void name##_lead(                           \
      size_t m, size_t n, size_t dv, const float *p, size_t ldp,               \
      const void *v, size_t ldv, const float *beta, float *o, size_t ldo) {    \
    lead(type, m, n, dv, p, ldp, v, ldv, beta, o, ldo);                        \
  }                                                                            \
  static __attribute__((noinline)) void name##_reuse(                          \
      size_t m, size_t n, size_t dv, const float *p, size_t ldp,               \
      const void *v, size_t ldv, const float *beta, float *o, size_t ldo) {    \
    wsum_typed(type, MR, NV, 0, 0, m, n, dv, p, ldp, v, ldv, beta, o, ldo);    \
  }                                                                            \
  void name(size_t m, size_t n, size_t dv, const float *p, size_t ldp,         \
            const void *v, size_t ldv, const float *beta, float *o,            \
            size_t ldo) {                                                      \
    if (m <= STREAM_M)                                                         \
      name##_streamed(m, n, dv, p, ldp, v, ldv, beta, o, ldo);                 \
    else if (m <= LEAD_M) {                                                    \
      name##_lead(LEAD, n, dv, p, ldp, v, ldv, beta, o, ldo);                  \
      name##_reuse(m - LEAD, n, dv, p + LEAD * ldp, ldp, v, ldv,               \
                   beta ? beta + LEAD : NULL, o + LEAD * ldo, ldo);            \
    } else if (type == SA_Q8_0)                                                \
      q8_0_rows(m, n, dv, p, ldp, v, ldv, beta, o, ldo);                       \
    else                                                                       \
      wsum_typed(type, MR, NV, 0, 1, m, n, dv, p, ldp, v, ldv, beta, o, ldo);  \
  }

WSUM_T(sa_wsum_f16__avx512, SA_F16)
WSUM_T(sa_wsum_bf16__avx512, SA_BF16)
WSUM_T(sa_wsum_q8_0__avx512, SA_Q8_0)
