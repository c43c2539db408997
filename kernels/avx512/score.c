/*
 * score, AVX-512: s[i][j] = scale * sum_p q[i][p] * k[j][p].
 *
 * Two ways, chosen by m. With many rows, a GEMM micro-kernel: dot products
 * along d need a horizontal reduction per s[i][j], which at d = 128 costs
 * about a quarter of the FMA time. Instead each block of NR = 32 keys is
 * transposed into a panel on the stack (KC values of d at a time), and one
 * step of p is two aligned panel loads and MR broadcasts of q[i][p] feeding
 * 2 MR FMAs into MR x 32 accumulators. Every s[i][j] is one lane summing p in
 * order, as the oracle does; the panel is reused by every block of rows, so
 * packing is O(n d) work against O(m n d) FMAs.
 *
 * With few rows (decode: one query row, or the query heads of one GQA
 * group) packing is the cost: each key is transposed for only m rows of use,
 * and the panel gathers 64 bytes from each of 32 rows at a time, a pattern
 * the hardware prefetchers do not follow, so K comes from memory at a third
 * of its bandwidth. There, blocked dot products read K rows as they lie:
 * DM rows x DN keys of vector accumulators over d, one transposed reduction
 * giving the DM x DN sums in one vector, and K's lines prefetched in
 * address order a few keys ahead (kernels/prefetch.h): one 64-byte line
 * per key per step of 16 values, the rate the tile reads them. The dots
 * are as fast as the GEMM up to m = 24 from cache (measured on Zen 5,
 * n = 256, d = 128); DOTS_M keeps a margin below that.
 *
 * Why the cursor (0.8): until then the tile prefetched each of its DN rows
 * PF = 8 keys ahead as it read them, hopping between rows. On avx2 that
 * pattern streamed K from memory well below the rate of naming the same
 * lines once each, ascending (docs/DESIGN.md, "Streaming K and V from
 * memory"). On Zen 5 (one core, K and V from memory, 32 query heads over
 * 8 KV heads, 4096 keys) the cursor alone made f32 decode 1.15x as fast,
 * and 1.24-1.50x with wsum.c's sub-blocks; on a Sapphire Rapids Xeon the
 * same pair was level (0.98x), its decode already near its read probe.
 *
 * Keys as four streams (0.12.5), as avx2's score since 0.12.2: on a MiB of
 * K or more (decode's key blocks) a tile's DN keys come from the four
 * quarters of the block, key j of each, not DN neighbours; every score is
 * the same sum in the same order, so the output is bit for bit the same.
 * On the project's Intel Xeon VM (Sapphire Rapids class, one core reads
 * about 15 GB/s, bound by how many lines it has in flight) score from
 * memory took 0.86x the time at m = 1, 0.82x at m = 2, 0.75x at m = 4 and
 * 8 (4096 keys, d = 128: 11.7 -> 15.5 GB/s at m = 4, avx2's rate there);
 * with K in L2 the neighbours were faster at m = 1 (the streams 1.09-1.17x
 * the time at 256-1024 keys) and level at 2-8, hence the MiB. On Intel's
 * cores only (0.12.6): on a Zen 5 VM, whose one stream reads 35-39 GB/s of
 * a 41 probe, the same decode ran 1.33-1.39x the time over 8 KV heads and
 * 1.14-1.19x over 32 (one thread; prefetching 16 KiB ahead, into L2, or not at
 * all, each slower still), and no AMD core was measured faster with them.
 *
 * The next panel (0.9.3): while the tiles use one panel, they name the
 * next panel's K rows a few lines between chunks of steps (kernels/prefetch.h,
 * sa_spread), so that packing it does not wait on memory. With K from memory
 * (decode of 32 query heads over one KV head, cross-attention) packing was half
 * of score's time; named in bursts the lines stalled the tiles' loads
 * (docs/DESIGN.md, "The MQA row").
 *
 * Tails: GEMM: keys past n are packed as zeros and their lanes masked off at
 * the store; leftover rows run the same tile with fewer rows; d longer than
 * KC is summed in chunks through s, scaled once after the last chunk. Dots:
 * missing keys of the last block re-read its first key, left out of the
 * store; leftover rows run with fewer rows. Both: d past its end is read
 * with masked loads, which do not fault.
 */
#include <immintrin.h>

#include "kernels/avx512/panel.h"
#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"
#include "kernels/cpu_core.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"
#include "kernels/upto.h"

enum { MR = SA_PANEL_MR, NR = SA_PANEL_NR, KC = SA_AVX512_KC };
enum { DOTS_M = SA_AVX512_DOTS_M, DM = SA_AVX512_DM, DN = SA_AVX512_DN };
enum {
  STREAM_KEYS = SA_AVX512_STREAM_KEYS,
  STREAM_BYTES = SA_AVX512_STREAM_BYTES
};

/* 16 keys x 16 values of d -> 16 panel rows of 16 keys. Keys at or past nk
 * and values at or past np are read as 0 without touching memory. */
static inline void pack16x16(const float *k, size_t ldk, size_t nk, size_t np,
                             float *dst) {
  __m512 r[16];
  __mmask16 kd = sa_mask16(np);
  for (size_t a = 0; a < 16; a++)
    r[a] =
        a < nk ? _mm512_maskz_loadu_ps(kd, k + a * ldk) : _mm512_setzero_ps();
  sa_panel_store16x16(r, dst);
}

/* panel[p][0..NR) = k[0..nk)[p] for p < round_up(kc, 16), zero-padded. */
static void pack_panel(const float *k, size_t ldk, size_t nk, size_t kc,
                       float *panel) {
  for (size_t p = 0; p < kc; p += 16)
    for (size_t g = 0; g < NR; g += 16)
      pack16x16(k + g * ldk + p, ldk, nk > g ? nk - g : 0, kc - p,
                panel + p * NR + g);
}

/* ends (if any): row i needs keys [0, ends[i]) only; a tile of rows none of
 * which needs the panel's keys is skipped, its scores left unwritten. */
static void score_packed(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const float *k, size_t ldk, float scale,
                         float *s, size_t lds, const size_t *ends) {
  _Alignas(64) float panel[KC * NR];
  const size_t chunks =
      (m + MR - 1) / MR * ((d + SA_SPREAD_STEPS - 1) / SA_SPREAD_STEPS);
  for (size_t j0 = 0; j0 < n; j0 += NR) {
    size_t nk = n - j0 < NR ? n - j0 : NR;
    __mmask16 k0 = sa_mask16(nk), k1 = sa_mask16(nk > 16 ? nk - 16 : 0);
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
  sa_panel_tile(r, kc, qi, ldq, panel, si, lds, k0, k1, first, last, scale, &pf)
        SA_UNROLL_1_8(mr, TILE);
#undef TILE
      }
      p0 += kc;
    } while (p0 < d);
  }
}

/* s[0..mr)[0..nk ks) = scale * q[0..mr) . kr[0..nk), key c at column c ks,
 * nk <= DN, while rg or pf (if any, sa_dots_next_line) names K's lines, DN a
 * step of 16 values: a line per key per 64 bytes of d, the rate the tile
 * reads them; or, pfo nonzero (with one: the streams), each key's line pfo
 * bytes on. mr is a constant at every call, so acc lives in registers. */
static inline __attribute__((always_inline)) void
dots_at(int one, size_t mr, size_t d, const float *q, size_t ldq,
        const float *const *kr, sa_range *rg, sa_prefetcher *pf, size_t pfo,
        size_t limit, float *s, size_t lds, size_t ks, size_t nk, float scale) {
  __m512 acc[DM][DN];
#pragma GCC unroll 4
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < DN; c++)
      acc[r][c] = _mm512_setzero_ps();
  size_t p = 0;
  /* One row of a tile with several (leftover rows), or on the row cursor:
   * each K row read whole before the next, so its lines arrive in address
   * order for the hardware prefetchers, the cursor named as before. 32
   * heads, 4096 keys from memory, one Zen 4 core: 1.03-1.05x as fast
   * (decode.c's dots measure the same way). A one-row call on the range
   * (dots_one) takes its DN keys a step at a time instead: the DN sums are
   * then independent chains, where a row read whole was one chain of
   * d / 16 FMAs a key, bound by their latency. */
  for (size_t c = 0; mr == 1 && !one && c < DN; c++)
    for (p = 0; p + 16 <= d; p += 16) {
      sa_dots_next_line(rg, pf, limit);
      acc[0][c] = _mm512_fmadd_ps(_mm512_loadu_ps(q + p),
                                  _mm512_loadu_ps(kr[c] + p), acc[0][c]);
    }
  for (; (mr > 1 || one) && p + 16 <= d; p += 16) {
    __m512 b[DN];
    for (size_t c = 0; c < DN; c++) {
      if (pfo)
        sa_prefetch_line((const char *)(kr[c] + p) + pfo, 0);
      else
        sa_dots_next_line(rg, pf, limit);
      b[c] = _mm512_loadu_ps(kr[c] + p);
    }
#pragma GCC unroll 4
    for (size_t r = 0; r < mr; r++) {
      __m512 a = _mm512_loadu_ps(q + r * ldq + p);
      for (size_t c = 0; c < DN; c++)
        acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  if (p < d) {
    __mmask16 kd = sa_mask16(d - p);
    __m512 b[DN];
    for (size_t c = 0; c < DN; c++)
      b[c] = _mm512_maskz_loadu_ps(kd, kr[c] + p);
#pragma GCC unroll 4
    for (size_t r = 0; r < mr; r++) {
      __m512 a = _mm512_maskz_loadu_ps(kd, q + r * ldq + p);
      for (size_t c = 0; c < DN; c++)
        acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  if (ks == 1) {
    sa_dots_store(mr, acc, scale, s, lds, nk);
    return;
  }
  _Alignas(64) float t[4 * DN];
  sa_dots_store(mr, acc, scale, t, DN, DN);
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nk; c++)
      s[r * lds + c * ks] = t[r * DN + c];
}

static inline __attribute__((always_inline)) void
dots(int one, size_t mr, size_t d, const float *q, size_t ldq,
     const float *const *kr, sa_range *rg, sa_prefetcher *pf, size_t limit,
     float *s, size_t lds, size_t nk, float scale) {
  dots_at(one, mr, d, q, ldq, kr, rg, pf, 0, limit, s, lds, 1, nk, scale);
}

/* Keys in blocks of DN, each block against every row in blocks of DM; the
 * first row block trickles the cursor (the range where K's rows lie end to
 * end), 4 KiB of rows ahead. */
static inline __attribute__((always_inline)) void
score_dots(int dense, int one, size_t m, size_t n, size_t d, const float *q,
           size_t ldq, const float *k, size_t ldk, float scale, float *s,
           size_t lds) {
  const size_t ahead = sa_prefetch_rows_ahead(d * sizeof(float), 4096);
  sa_prefetcher pf =
      sa_prefetcher_at(k, ldk * sizeof(float), d * sizeof(float), n, ahead);
  sa_range range = sa_range_at(k, d * sizeof(float), n, ahead);
  for (size_t j0 = 0; j0 < n; j0 += DN) {
    size_t nk = n - j0 < DN ? n - j0 : DN;
    const float *kr[DN];
    for (size_t c = 0; c < DN; c++)
      kr[c] = k + (c < nk ? j0 + c : j0) * ldk;
    if (dense)
      sa_range_to(&range, j0 + ahead, j0 + DN + ahead);
    else
      sa_prefetcher_raise(&pf, j0 + ahead);
    for (size_t i0 = 0; i0 < m; i0 += DM) {
      /* later row blocks find these keys in cache */
      sa_range *ri = i0 == 0 && dense ? &range : NULL;
      sa_prefetcher *pi = i0 == 0 && !dense ? &pf : NULL;
      const float *qi = q + i0 * ldq;
      float *si = s + i0 * lds + j0;
#define DOTS(r)                                                                \
  dots(one, r, d, qi, ldq, kr, ri, pi, j0 + DN + ahead, si, lds, nk, scale)
      SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
    }
  }
}

/* K's lines are named by the range (kernels/prefetch.h) where its rows lie
 * end to end and the tile has rows side by side, else by the row cursor.
 * Zen 5 VM, decode of 32 query heads over 8 KV heads, 4096 keys, f32 from
 * memory, both ways in one library alternated call by call: the range
 * 0.94-0.97x the time on one thread, 0.94-0.95x on two, batch 8 0.95x.
 * Each way in a function of its own, so that neither's loop is compiled
 * around the other's state (with both in one function the row cursor's
 * path ran 1.4x slower). */
static __attribute__((noinline)) void
dots_rows(size_t m, size_t n, size_t d, const float *q, size_t ldq,
          const float *k, size_t ldk, float scale, float *s, size_t lds) {
  score_dots(0, 0, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

static __attribute__((noinline)) void
dots_range(size_t m, size_t n, size_t d, const float *q, size_t ldq,
           const float *k, size_t ldk, float scale, float *s, size_t lds) {
  score_dots(1, 0, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

/* One row (MHA decode) on the range, its keys a step at a time. With the
 * row cursor and rows read whole (until 0.12.1) the range had measured
 * 1.10-1.15x the time; this way, K in L2, 0.64x, and decode of 32 heads
 * over 32 KV heads, 4096 keys, f32 from memory, alternated call by call,
 * 0.87-0.98x on one thread and 0.89-0.97x on two (Zen 5 VM). A function of
 * its own, so that the other two compile as they did. */
static __attribute__((noinline)) void dots_one(size_t n, size_t d,
                                               const float *q, const float *k,
                                               float scale, float *s) {
  score_dots(1, 1, 1, n, d, q, d, k, d, scale, s, n);
}

/* Keys [0, DN nq) as DN streams of nq keys, a tile key j of each, the
 * first row block naming each stream's row `ahead` rows on, a line per 16
 * values as the tile reads them (a fixed distance, no cursor beside the
 * tile); nq odd, so that the streams' rows and scores are not a power of
 * two apart (avx2's score.c says what that cost). The keys left, fewer
 * than 2 DN, as the range or row cursor takes them. */
static __attribute__((noinline)) void
dots_streams(size_t m, size_t n, size_t d, const float *q, size_t ldq,
             const float *k, size_t ldk, float scale, float *s, size_t lds) {
  const size_t nq = (n / DN - 1) | 1;
  const size_t ahead = sa_prefetch_rows_ahead(d * sizeof(float), 4096);
  const size_t pfo = ahead * ldk * sizeof(float);
  for (size_t j = 0; j < nq; j++) {
    const float *kr[DN];
    for (size_t c = 0; c < DN; c++)
      kr[c] = k + (c * nq + j) * ldk;
    for (size_t i0 = 0; i0 < m; i0 += DM) {
      const float *qi = q + i0 * ldq;
      float *si = s + i0 * lds + j;
#define DOTS(r, o)                                                             \
  dots_at(1, r, d, qi, ldq, kr, NULL, NULL, o, 0, si, lds, nq, DN, scale)
#define DOTS_PF(r) DOTS(r, pfo)
#define DOTS_0(r) DOTS(r, 0)
      if (i0 == 0 && j + ahead < nq)
        SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS_PF);
      else
        SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS_0);
#undef DOTS_PF
#undef DOTS_0
#undef DOTS
    }
  }
  if (n > DN * nq)
    (ldk == d ? dots_range : dots_rows)(m, n - DN * nq, d, q, ldq,
                                        k + DN * nq * ldk, ldk, scale,
                                        s + DN * nq, lds);
}

/* Whether decode's keys come as four streams on this core (the comment at
 * the top; sa_score_streams_policy, kernels.h). */
static int streams_here(void) {
  int policy = __atomic_load_n(&sa_score_streams_policy, __ATOMIC_RELAXED);
  return policy ? policy > 0 : sa_core_intel();
}

void sa_score__avx512(size_t m, size_t n, size_t d, const float *q, size_t ldq,
                      const float *k, size_t ldk, float scale, float *s,
                      size_t lds) {
  if (m > DOTS_M)
    score_packed(m, n, d, q, ldq, k, ldk, scale, s, lds, NULL);
  else if (n >= DN * STREAM_KEYS && n * d * sizeof(float) >= STREAM_BYTES &&
           streams_here())
    dots_streams(m, n, d, q, ldq, k, ldk, scale, s, lds);
  else if (ldk == d && m == 1)
    dots_one(n, d, q, k, scale, s);
  else if (ldk == d)
    dots_range(m, n, d, q, ldq, k, ldk, scale, s, lds);
  else
    dots_rows(m, n, d, q, ldq, k, ldk, scale, s, lds);
}

/* Rows that see keys [0, ends[i]) (the causal diagonal): the GEMM way skips
 * the tiles past every row of theirs; the dot products, for few rows, take
 * all keys up to the last end, as the contract allows. */
void sa_score_upto__avx512(size_t m, size_t n, size_t d, const float *q,
                           size_t ldq, const float *k, size_t ldk, float scale,
                           float *s, size_t lds, const size_t *ends) {
  n = sa_ends_clip(ends, m, n);
  if (m > DOTS_M)
    score_packed(m, n, d, q, ldq, k, ldk, scale, s, lds, ends);
  else
    sa_score__avx512(m, n, d, q, ldq, k, ldk, scale, s, lds);
}
