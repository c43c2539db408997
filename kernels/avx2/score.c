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
 * rows in pairs x DN = 4 keys of vector accumulators over d (8 registers, 4
 * for the keys, 1 for a row of q), a transposed reduction per pair, and
 * K's lines prefetched in address order a few keys ahead by the first pair
 * (kernels/prefetch.h says why not row by row as the tile reads them: from
 * memory that doubled the rate K arrives at); the later pairs find the 4
 * keys in L1.
 *
 * Why pairs (after 0.12.1). Until then four rows x 3 keys took a GQA
 * group of four: each vector of K loaded once for all four rows, but 12
 * accumulators, 3 keys and a row of q are all 16 ymm registers, and with
 * the cursor's state beside them the tile ran at half the FMA rate: K in
 * L2, n = 512, d = 128, Zen 5 VM, 22.8-23.2 ns a key at m = 4 against
 * 12.4-12.7 in pairs (m = 1 0.5-0.7x, m = 8 0.67x); the first pair names
 * K's lines through a cursor the compiler keeps in registers (a constant
 * pointer at its call, none at the later pairs'), the range where K's rows
 * lie end to end (ld = d), else the row cursor. Decode of 32 query heads
 * over 8 KV heads, 4096 keys, f32 from memory, both ways in one library
 * alternated call by call: 0.80-0.81x the time on one and on two threads;
 * over 32 KV heads (one row) 0.95-1.00x. score_t.c and decode.c keep the
 * four-row tile.
 *
 * Keys as four streams (0.12.2). One or two rows, or up to DOTS_M on a
 * block of K of a MiB or more (decode), take the tile's 4 keys from four
 * quarters of the block, key j of each, instead of 4 neighbours: four
 * places in memory read at once, which the hardware prefetchers follow as
 * four streams. Each score is the same sum in the same order, so the
 * output is bit for bit the same. On a Zen 3 core (f32, d = 128, 4096-key
 * blocks from memory, medians of 60 calls) score took 0.63-0.70x the time
 * at m = 1 and 2, 0.86-0.92x at m = 4, 0.94x at m = 8, and with K in L2
 * 0.97-0.98x at m = 1 and 2 but 1.04-1.06x at m = 4 and 8 (hence the MiB
 * for those); decode of 32 query heads, 4096 keys, one thread: over 32 KV
 * heads 0.83x the time, over 8 0.89x (two threads 0.89x, 0.90x). One
 * sequential stream of K reads about 18 GB/s on that core, four 21-22
 * (its read probe reads four); a cursor per stream beside the tile cost
 * 1.3-1.46x with K in L2, the fixed distance nothing. Not on AMD's cores
 * with a 48 KiB L1D (0.12.6): on a Zen 5 VM, whose one stream reads 35-39
 * GB/s, decode of 32 query heads over 8 KV heads (4096 keys, one thread)
 * took 0.85-0.87x the time without them, over 32 KV heads 0.89x. Intel's cores
 * of that L1D keep them (avx2's decode there was measured with them, 0.12.5).
 *
 * Tails: GEMM: keys past n are packed as zeros and their lanes left out of
 * the store; d longer than KC is summed in chunks through s, scaled once
 * after the last chunk. Dots: missing keys of the last block re-read its
 * first key, left out of the store; streams leave fewer than 2 DN keys to
 * that way. Both: a partial vector (d past its end, keys past n in s) is
 * copied through the stack, never over-read (util.h says why not
 * maskload); leftover rows run the same tile with fewer rows.
 */
#include <immintrin.h>

#include "kernels/avx2/panel.h"
#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/cpu_core.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"
#include "kernels/upto.h"

enum { MR = SA_PANEL_MR, NR = SA_PANEL_NR, KC = SA_AVX2_KC };
enum { DOTS_M = SA_AVX2_DOTS_M, DN = SA_AVX2_DN_WIDE };
enum { STREAM_KEYS = SA_AVX2_STREAM_KEYS, STREAM_BYTES = SA_AVX2_STREAM_BYTES };

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

/* ends (if any): row i needs keys [0, ends[i]) only; a tile of rows none of
 * which needs the panel's keys is skipped, its scores left unwritten. */
static void score_packed(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const float *k, size_t ldk, float scale,
                         float *s, size_t lds, const size_t *ends) {
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
        size_t mr = m - i0 < MR ? m - i0 : MR;
        if (ends && j0 >= sa_ends_most(ends + i0, mr))
          continue;
#define TILE(r)                                                                \
  sa_panel_tile(r, kc, qi, ldq, panel, si, lds, nk, first, last, scale, &pf)
        SA_UNROLL_1_6(mr, TILE);
#undef TILE
      }
      p0 += kc;
    } while (p0 < d);
  }
}

/* s[0..mr)[0..nk c ks) = scale * q[0..mr) . kr[0..nk), key c at column
 * c ks, mr <= 2, nk <= DN, while rg or pf (if any, sa_dots_next_line) names
 * K's lines, DN every 16 values: a line per key per 64 bytes of d, the rate
 * the tile reads them; or, pfo nonzero, each key's line pfo bytes on. mr is
 * a constant at every call, so acc lives in registers. */
static inline __attribute__((always_inline)) void
dots_at(size_t mr, size_t d, const float *q, size_t ldq, const float *const *kr,
        sa_range *rg, sa_prefetcher *pf, size_t pfo, size_t limit, float *s,
        size_t lds, size_t ks, size_t nk, float scale) {
  __m256 acc[4][4]; /* sa_dots_store8's shape; rows 0 and 1 used */
  for (size_t r = 0; r < 2; r++)
    for (size_t c = 0; c < DN; c++)
      acc[r][c] = _mm256_setzero_ps();
  size_t p = 0;
  for (; p + 8 <= d; p += 8) {
    __m256 b[DN];
    for (size_t c = 0; c < DN; c++) {
      if (p % 16 == 0) {
        if (pfo)
          sa_prefetch_line((const char *)(kr[c] + p) + pfo, 0);
        else
          sa_dots_next_line(rg, pf, limit);
      }
      b[c] = _mm256_loadu_ps(kr[c] + p);
    }
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_loadu_ps(q + r * ldq + p);
      for (size_t c = 0; c < DN; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  if (p < d) {
    __m256 b[DN];
    for (size_t c = 0; c < DN; c++)
      b[c] = sa_load8_part(kr[c] + p, d - p);
    for (size_t r = 0; r < mr; r++) {
      __m256 a = sa_load8_part(q + r * ldq + p, d - p);
      for (size_t c = 0; c < DN; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  if (ks == 1)
    sa_dots_store8(mr, DN, acc, scale, s, lds, nk);
  else
    sa_dots_scatter8(mr, DN, acc, scale, s, lds, ks);
}

static inline __attribute__((always_inline)) void
dots(size_t mr, size_t d, const float *q, size_t ldq, const float *const *kr,
     sa_range *rg, sa_prefetcher *pf, size_t limit, float *s, size_t lds,
     size_t nk, float scale) {
  dots_at(mr, d, q, ldq, kr, rg, pf, 0, limit, s, lds, 1, nk, scale);
}

/* Keys in blocks of DN, each block against every pair of rows; the first
 * pair names K's lines 4 KiB of rows ahead, by the range (dense: K's rows
 * end to end) or the row cursor. Each a constant pointer or NULL where
 * dots is inlined, so the cursor lives in registers. */
static inline __attribute__((always_inline)) void
score_dots(int dense, size_t m, size_t n, size_t d, const float *q, size_t ldq,
           const float *k, size_t ldk, float scale, float *s, size_t lds) {
  const size_t ahead = sa_prefetch_rows_ahead(d * sizeof(float), 4096);
  sa_prefetcher pf =
      sa_prefetcher_at(k, ldk * sizeof(float), d * sizeof(float), n, ahead);
  sa_range range = sa_range_at(k, d * sizeof(float), n, ahead);
  for (size_t j0 = 0; j0 < n; j0 += DN) {
    size_t nk = n - j0 < DN ? n - j0 : DN, limit = j0 + DN + ahead;
    const float *kr[DN];
    for (size_t c = 0; c < DN; c++)
      kr[c] = k + (c < nk ? j0 + c : j0) * ldk;
    if (dense)
      sa_range_to(&range, j0 + ahead, limit);
    else
      sa_prefetcher_raise(&pf, j0 + ahead);
#define DOTS(r)                                                                \
  dots(r, d, q, ldq, kr, dense ? &range : NULL, dense ? NULL : &pf, limit,     \
       s + j0, lds, nk, scale)
    SA_UNROLL_1_2(m < 2 ? m : 2, DOTS);
#undef DOTS
    for (size_t i0 = 2; i0 < m; i0 += 2) {
      const float *qi = q + i0 * ldq;
      float *si = s + i0 * lds + j0;
#define DOTS(r) dots(r, d, qi, ldq, kr, NULL, NULL, 0, si, lds, nk, scale)
      SA_UNROLL_1_2(m - i0 < 2 ? m - i0 : 2, DOTS);
#undef DOTS
    }
  }
}

/* Each way in a function of its own, as avx512's score (whose measurements
 * say why). */
static __attribute__((noinline)) void
dots_rows(size_t m, size_t n, size_t d, const float *q, size_t ldq,
          const float *k, size_t ldk, float scale, float *s, size_t lds) {
  score_dots(0, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

static __attribute__((noinline)) void
dots_range(size_t m, size_t n, size_t d, const float *q, size_t ldq,
           const float *k, size_t ldk, float scale, float *s, size_t lds) {
  score_dots(1, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

/* Keys [0, DN nq) as DN streams of nq keys, a tile key j of each, the
 * first pair naming each stream's row `ahead` rows on, a line per 16
 * values as dots reads them (a fixed distance in every stream: no cursor
 * to keep beside the tile); nq odd, so that the streams' rows (and their
 * scores in s) are not a power of two apart, which put all four in one
 * cache set: at n = 4096, m = 8, 1.14x slower from memory than one
 * stream, 0.94x with nq odd. The keys left (fewer than 2 DN) as
 * score_dots takes them. */
static __attribute__((noinline)) void
dots_streams(size_t m, size_t n, size_t d, const float *q, size_t ldq,
             const float *k, size_t ldk, float scale, float *s, size_t lds) {
  const size_t nq = (n / DN - 1) | 1, rb = d * sizeof(float);
  const size_t ahead = sa_prefetch_rows_ahead(rb, 4096);
  const size_t pfo = ahead * ldk * sizeof(float);
  for (size_t j = 0; j < nq; j++) {
    const float *kr[DN];
    for (size_t c = 0; c < DN; c++)
      kr[c] = k + (c * nq + j) * ldk;
#define DOTS(r, o)                                                             \
  dots_at(r, d, q, ldq, kr, NULL, NULL, o, 0, s + j, lds, nq, DN, scale)
#define DOTS_PF(r) DOTS(r, pfo)
#define DOTS_0(r) DOTS(r, 0)
    if (j + ahead < nq)
      SA_UNROLL_1_2(m < 2 ? m : 2, DOTS_PF);
    else
      SA_UNROLL_1_2(m < 2 ? m : 2, DOTS_0);
#undef DOTS_PF
#undef DOTS_0
#undef DOTS
    for (size_t i0 = 2; i0 < m; i0 += 2) {
      const float *qi = q + i0 * ldq;
      float *si = s + i0 * lds + j;
#define DOTS(r)                                                                \
  dots_at(r, d, qi, ldq, kr, NULL, NULL, 0, 0, si, lds, nq, DN, scale)
      SA_UNROLL_1_2(m - i0 < 2 ? m - i0 : 2, DOTS);
#undef DOTS
    }
  }
  if (n > DN * nq)
    (ldk == d ? dots_range : dots_rows)(m, n - DN * nq, d, q, ldq,
                                        k + DN * nq * ldk, ldk, scale,
                                        s + DN * nq, lds);
}

/* Whether keys come as four streams on this core (the comment at the top;
 * sa_score_streams_policy, kernels.h). */
static int streams_here(void) {
  int policy = __atomic_load_n(&sa_score_streams_policy, __ATOMIC_RELAXED);
  return policy ? policy > 0 : !sa_core_l1d_large() || sa_core_intel();
}

void sa_score__avx2(size_t m, size_t n, size_t d, const float *q, size_t ldq,
                    const float *k, size_t ldk, float scale, float *s,
                    size_t lds) {
  if (m <= DOTS_M && n >= DN * STREAM_KEYS &&
      (m <= SA_AVX2_DOTS_M_WIDE || n * d * sizeof(float) >= STREAM_BYTES) &&
      streams_here())
    dots_streams(m, n, d, q, ldq, k, ldk, scale, s, lds);
  else if (m <= DOTS_M)
    (ldk == d ? dots_range : dots_rows)(m, n, d, q, ldq, k, ldk, scale, s, lds);
  else
    score_packed(m, n, d, q, ldq, k, ldk, scale, s, lds, NULL);
}

/* Rows that see keys [0, ends[i]) (the causal diagonal): the GEMM way skips
 * the tiles past every row of theirs; the dot products, for few rows, take
 * all keys up to the last end, as the contract allows. */
void sa_score_upto__avx2(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const float *k, size_t ldk, float scale,
                         float *s, size_t lds, const size_t *ends) {
  n = sa_ends_clip(ends, m, n);
  if (m <= DOTS_M)
    sa_score__avx2(m, n, d, q, ldq, k, ldk, scale, s, lds);
  else
    score_packed(m, n, d, q, ldq, k, ldk, scale, s, lds, ends);
}
