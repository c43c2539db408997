/*
 * score with narrow K, AVX-512: s[i][j] = scale * sum_p q[i][p] * k[j][p],
 * Q f32, K f16, bf16 or q8_0 (ldk in that type's units: elements, or
 * 34-byte blocks with d a multiple of 32).
 *
 * score.c's two ways, with K widened exactly (widen.h) where it is loaded,
 * so the FMAs and their order are the f32 kernel's on the same values:
 *
 * GEMM (m > DOTS_M, prefill): each block of NR keys is widened while it is
 * transposed into the f32 panel, so the inner loop is score.c's unchanged
 * and the widening is O(n d) work against O(m n d) FMAs.
 *
 * Dots (decode): K rows are read as they lie, 32 values (one 64-byte line
 * of f16 / bf16, one q8_0 block) per key and step, widened once and used by
 * every row of the DM-row block. The narrow row is half (a quarter) of the
 * f32 bytes, so K takes fewer seconds to stream. q8_0 is dequantised
 * (int8 * scale, exact) rather than summed per block and scaled: the scale
 * is then paid once per key and block, not per row. At m = 4, d = 128 the
 * FMAs alone take about as long as a q8_0 block takes to arrive, so q8_0
 * runs near the compute bound, not the memory one.
 *
 * bf16 dots (0.11.2) widen each line as its 16 even and 16 odd values, a
 * shift and an AND (widen.h), against Q's rows copied once per call in
 * that order (evens, then odds, of each 32 values; up to
 * SA_BF16_EO_FLOATS floats, else zero-extension as before): the same
 * products summed in another order, within the same bound. Zero-extension took
 * an extract, two lane-crossing vpmovzxwd and two shifts a line. One Zen 4
 * core, m 4, d 128, keys from L2: 1.06x as fast; with wsum_t's the same,
 * bf16 KV decode (h32/kv8) 1.07-1.09x.
 *
 * K's rows are prefetched a key block at a time, whole and in address
 * order, 4 KiB of rows ahead (kernels/prefetch.h): more keys ahead than
 * score.c, since a narrow row is fewer bytes and the prefetch must still
 * run as far ahead in time, and in one burst per block rather than
 * score.c's line a step, since these kernels are nearer bound by their
 * instructions. That is avx2's score_t since 0.8, chosen from the avx2
 * measurements (docs/DESIGN.md, "Streaming K and V from memory"); until
 * then this kernel prefetched each of its DN rows PF = 16 keys ahead as it
 * read them, hopping between rows. With wsum_t's sub-blocks, on Zen 5
 * (one core, cache from memory): f16 and bf16 KV decode 1.05-1.10x as
 * fast, q8_0 level (0.95-1.00x: bound by its instructions).
 *
 * Tails as score.c: GEMM keys past n are packed as zeros and masked off at
 * the store, d past KC is summed in chunks through s; dots' missing keys
 * re-read the block's first key, left out of the store. d past its end is
 * read masked (f16 / bf16; q8_0 has whole blocks). d = 0 takes the dots
 * too: no value is read and no line named (a row of 0 bytes), s = 0.
 */
#include <immintrin.h>

#include "kernels/avx512/panel.h"
#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"
#include "kernels/avx512/widen.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"

enum { MR = SA_PANEL_MR, NR = SA_PANEL_NR, KC = SA_AVX512_KC };
enum { DOTS_M = SA_AVX512_DOTS_M, DM = SA_AVX512_DM, DN = SA_AVX512_DN };

#define AI static inline __attribute__((always_inline))

/* 16 keys x 16 values of d, widened -> 16 panel rows of 16 keys. Keys at or
 * past nk and values at or past np are 0, not read. */
AI void pack16x16(sa_dtype t, const char *k, size_t ldk, size_t nk, size_t p,
                  size_t np, float *dst) {
  __m512 r[16];
  for (size_t a = 0; a < 16; a++)
    r[a] = a < nk ? sa_widen16(t, k + a * ldk, p, np) : _mm512_setzero_ps();
  sa_panel_store16x16(r, dst);
}

/* panel[p][0..NR) = k[0..nk)[p0 + p] for p < round_up(kc, 16), 0-padded. */
AI void pack_panel(sa_dtype t, const char *k, size_t ldk, size_t nk, size_t p0,
                   size_t kc, float *panel) {
  for (size_t p = 0; p < kc; p += 16)
    for (size_t g = 0; g < NR; g += 16)
      pack16x16(t, k + g * ldk, ldk, nk > g ? nk - g : 0, p0 + p, kc - p,
                panel + p * NR + g);
}

AI void score_packed(sa_dtype t, size_t m, size_t n, size_t d, const float *q,
                     size_t ldq, const void *k, size_t ldk, float scale,
                     float *s, size_t lds) {
  _Alignas(64) float panel[KC * NR];
  const size_t ldkb = ldk * sa_widen_unit(t);
  const size_t chunks =
      (m + MR - 1) / MR * ((d + SA_SPREAD_STEPS - 1) / SA_SPREAD_STEPS);
  for (size_t j0 = 0; j0 < n; j0 += NR) {
    size_t nk = n - j0 < NR ? n - j0 : NR;
    __mmask16 k0 = sa_mask16(nk), k1 = sa_mask16(nk > 16 ? nk - 16 : 0);
    /* the next panel's rows, while this one is used */
    sa_spread pf =
        sa_spread_panel(k, ldkb, sa_widen_offset(t, d), n, j0 + nk, NR, chunks);
    size_t p0 = 0;
    do { /* at least once, so that d = 0 still writes s = 0 */
      size_t kc = d - p0 < KC ? d - p0 : KC;
      int first = p0 == 0, last = p0 + kc == d;
      pack_panel(t, (const char *)k + j0 * ldkb, ldkb, nk, p0, kc, panel);
      for (size_t i0 = 0; i0 < m; i0 += MR) {
        const float *qi = q + i0 * ldq + p0;
        float *si = s + i0 * lds + j0;
#define TILE(r)                                                                \
  sa_panel_tile(r, kc, qi, ldq, panel, si, lds, k0, k1, first, last, scale, &pf)
        SA_UNROLL_1_8(m - i0 < MR ? m - i0 : MR, TILE);
#undef TILE
      }
      p0 += kc;
    } while (p0 < d);
  }
}

/* q rows r, values p .. p + 32 (r valid) into acc[r][c] against b[c][2]. */
AI void dots_step(size_t mr, const float *q, size_t ldq, size_t p, size_t rem,
                  __m512 b[DN][2], __m512 acc[DM][DN]) {
#pragma GCC unroll 4
  for (size_t r = 0; r < mr; r++) {
    const float *qr = q + r * ldq + p;
    __m512 a0 = rem >= 16 ? _mm512_loadu_ps(qr)
                          : _mm512_maskz_loadu_ps(sa_mask16(rem), qr);
    __m512 a1 = rem >= 32  ? _mm512_loadu_ps(qr + 16)
                : rem > 16 ? _mm512_maskz_loadu_ps(sa_mask16(rem - 16), qr + 16)
                           : _mm512_setzero_ps();
    for (size_t c = 0; c < DN; c++) {
      acc[r][c] = _mm512_fmadd_ps(a0, b[c][0], acc[r][c]);
      acc[r][c] = _mm512_fmadd_ps(a1, b[c][1], acc[r][c]);
    }
  }
}

/* s[0..mr)[0..nk) = scale * q[0..mr) . kr[0..nk), nk <= DN. mr a
 * constant. */
AI void dots(sa_dtype t, size_t mr, size_t d, const float *q, size_t ldq,
             const char *const *kr, float *s, size_t lds, size_t nk,
             float scale, int eo) {
  __m512 acc[DM][DN];
#pragma GCC unroll 4
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < DN; c++)
      acc[r][c] = _mm512_setzero_ps();
  size_t p = 0;
  for (; p + 32 <= d; p += 32) {
    __m512 b[DN][2];
    for (size_t c = 0; c < DN; c++)
      sa_widen32_eo(t, eo, kr[c], p, 32, &b[c][0], &b[c][1]);
    dots_step(mr, q, ldq, p, 32, b, acc);
  }
  if (p < d) {
    __m512 b[DN][2];
    for (size_t c = 0; c < DN; c++)
      sa_widen32_eo(t, eo, kr[c], p, d - p, &b[c][0], &b[c][1]);
    dots_step(mr, q, ldq, p, eo ? 32 : d - p, b, acc);
  }
  sa_dots_store(mr, acc, scale, s, lds, nk);
}

/* Keys in blocks of DN, each block against every row in blocks of DM; the
 * cursor names each block's rows 4 KiB of rows ahead before the block. */
AI void score_dots(sa_dtype t, size_t m, size_t n, size_t d, const float *q,
                   size_t ldq, const void *k, size_t ldk, float scale, float *s,
                   size_t lds) {
  const char *kb = k;
  const size_t ldkb = ldk * sa_widen_unit(t);
  /* bytes a row's d values take (q8_0: d / 32 blocks; d = 0: none) */
  const size_t rowb = sa_widen_offset(t, d);
  const size_t ahead = sa_prefetch_rows_ahead(rowb, 4096);
  sa_prefetcher pf = sa_prefetcher_at(kb, ldkb, rowb, n, ahead);
  _Alignas(64) float qe[SA_BF16_EO_FLOATS];
  const int eo = t == SA_BF16 && sa_bf16_eo_q(m, d, &q, &ldq, qe);
  for (size_t j0 = 0; j0 < n; j0 += DN) {
    size_t nk = n - j0 < DN ? n - j0 : DN;
    const char *kr[DN];
    for (size_t c = 0; c < DN; c++)
      kr[c] = kb + (c < nk ? j0 + c : j0) * ldkb;
    sa_prefetcher_raise(&pf, j0 + ahead);
    sa_prefetch_until(&pf, j0 + DN + ahead, 0);
    for (size_t i0 = 0; i0 < m; i0 += DM) {
      const float *qi = q + i0 * ldq;
      float *si = s + i0 * lds + j0;
#define DOTS(r)                                                                \
  if (eo)                                                                      \
    dots(t, r, d, qi, ldq, kr, si, lds, nk, scale, 1);                         \
  else                                                                         \
    dots(t, r, d, qi, ldq, kr, si, lds, nk, scale, 0)
      SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
    }
  }
}

#define SCORE_T(name, type)                                                    \
  void name(size_t m, size_t n, size_t d, const float *q, size_t ldq,          \
            const void *k, size_t ldk, float scale, float *s, size_t lds) {    \
    if (m <= DOTS_M)                                                           \
      score_dots(type, m, n, d, q, ldq, k, ldk, scale, s, lds);                \
    else                                                                       \
      score_packed(type, m, n, d, q, ldq, k, ldk, scale, s, lds);              \
  }

SCORE_T(sa_score_f16__avx512, SA_F16)
SCORE_T(sa_score_bf16__avx512, SA_BF16)
SCORE_T(sa_score_q8_0__avx512, SA_Q8_0)
