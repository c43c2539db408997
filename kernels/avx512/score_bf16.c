/*
 * score with Q and K both bf16, AVX512_BF16: s[i][j] = scale * sum_p q[i][p]
 * * k[j][p] (ldq, ldk in elements). The only file built with
 * -mavx512bf16; its set requires SA_CPU_AVX512BF16.
 *
 * vdpbf16ps multiplies 16 lane pairs of bf16 exactly and adds both products
 * to an fp32 lane: twice the multiply-adds of an FMA per instruction, the
 * point of this kernel for prefill. It treats bf16 denormal inputs as zero
 * and flushes denormal results, whatever MXCSR says; the header documents
 * this for score_bf16.
 *
 * GEMM (m > DOTS_M): a block of NR = 32 keys is packed into a panel whose
 * row pp holds, per key, the pair (k[j][2pp], k[j][2pp + 1]) in one 32-bit
 * lane: a 16 x 16 transpose of 32-bit units, score.c's transpose on pairs.
 * One step of pp is two panel loads and MR broadcasts of the 32-bit q pair
 * feeding 2 MR vdpbf16ps into MR x 32 fp32 accumulators. d longer than KC
 * is summed in chunks through s, scaled after the last.
 *
 * Dots (m <= DOTS_M, decode): as score.c, blocked DM rows x DN keys with vector
 * accumulators over d, 32 values per load, one transposed reduction, a
 * prefetch PF keys ahead.
 *
 * Odd d: the last pair's second element must be a zero on both sides (an
 * Inf or NaN beyond the row, or anything times garbage, would poison the
 * sum): K and dots' Q are loaded with 16-bit masks, which zero it without
 * reading, and the GEMM's last q pair is built from the one element.
 * Tails otherwise as score.c: keys past n are zeros masked off at the
 * store (GEMM) or re-read copies of the block's first key (dots).
 */
#include <immintrin.h>
#include <string.h>

#include "kernels/avx512/panel.h"
#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"
#include "kernels/avx512/widen.h"
#include "kernels/kernels.h"
#include "kernels/unroll.h"

/* KC in values: KC / 2 panel rows */
enum { MR = SA_AVX512_BF16_MR, NR = SA_AVX512_BF16_NR, KC = SA_AVX512_BF16_KC };
/* The pair GEMM overtakes the dots sooner than score.c's (at m = 8 in cache,
 * n = 256, d = 128, Zen 5: 1.25x); up to 8 rows, the GQA groups of decode
 * that stream K from memory, the dots keep reading K at full bandwidth. */
enum { DOTS_M = SA_AVX512_BF16_DOTS_M, DM = 4, DN = 4, PF = 8 };

#define AI static inline __attribute__((always_inline))

AI __m512bh as_bh(__m512i x) { return (__m512bh)x; }

/* 16 keys x 16 pairs (32 values from value p, np of them valid) -> 16
 * panel rows of 16 keys' pairs. Keys at or past nk are 0, not read. */
AI void pack16x16(const uint16_t *k, size_t ldk, size_t nk, size_t np,
                  uint32_t *dst) {
  __m512 r[16], w[16];
  for (size_t a = 0; a < 16; a++)
    r[a] = a < nk ? _mm512_castsi512_ps(sa_load_h32(k + a * ldk, np))
                  : _mm512_setzero_ps();
  for (size_t a = 0; a < 16; a += 2) {
    w[a] = _mm512_unpacklo_ps(r[a], r[a + 1]);
    w[a + 1] = _mm512_unpackhi_ps(r[a], r[a + 1]);
  }
  for (size_t g = 0; g < 16; g += 4) {
    __m512d t0 = _mm512_castps_pd(w[g]), t1 = _mm512_castps_pd(w[g + 1]);
    __m512d t2 = _mm512_castps_pd(w[g + 2]), t3 = _mm512_castps_pd(w[g + 3]);
    r[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    r[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    r[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    r[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  float *out = (float *)dst;
  for (size_t c = 0; c < 4; c++) {
    __m512 w0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44);
    __m512 w1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xee);
    __m512 w2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
    __m512 w3 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xee);
    _mm512_store_ps(out + (0 + c) * NR, _mm512_shuffle_f32x4(w0, w2, 0x88));
    _mm512_store_ps(out + (4 + c) * NR, _mm512_shuffle_f32x4(w0, w2, 0xdd));
    _mm512_store_ps(out + (8 + c) * NR, _mm512_shuffle_f32x4(w1, w3, 0x88));
    _mm512_store_ps(out + (12 + c) * NR, _mm512_shuffle_f32x4(w1, w3, 0xdd));
  }
}

/* panel[pp][0..NR) = pairs of k[0..nk) for values [0, kc), 0-padded. */
static void pack_panel(const uint16_t *k, size_t ldk, size_t nk, size_t kc,
                       uint32_t *panel) {
  for (size_t p = 0; p < kc; p += 32)
    for (size_t g = 0; g < NR; g += 16)
      pack16x16(k + g * ldk + p, ldk, nk > g ? nk - g : 0, kc - p,
                panel + p / 2 * NR + g);
}

/* The q pair (q[2pp], q[2pp + 1]) as one 32-bit lane in all 16. */
AI __m512bh q_pair(const uint16_t *q, size_t pp) {
  uint32_t u;
  memcpy(&u, q + 2 * pp, sizeof u);
  return as_bh(_mm512_set1_epi32((int)u));
}

/* s[0..mr)[0..NR) (+)= q[0..mr)[0..kc) . panel, lanes outside k0/k1 left
 * alone. mr a constant, so acc lives in registers. */
AI void tile(size_t mr, size_t kc, const uint16_t *q, size_t ldq,
             const uint32_t *panel, float *s, size_t lds, __mmask16 k0,
             __mmask16 k1, int first, int last, float scale, sa_spread *pf) {
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++) {
    acc[r][0] =
        first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(k0, s + r * lds);
    acc[r][1] = first ? _mm512_setzero_ps()
                      : _mm512_maskz_loadu_ps(k1, s + r * lds + 16);
  }
  const size_t full = kc / 2;
  for (size_t p0 = 0; p0 < full; p0 += SA_SPREAD_STEPS) {
    sa_spread_lines(pf);
    size_t pe = full - p0 < SA_SPREAD_STEPS ? full : p0 + SA_SPREAD_STEPS;
    for (size_t pp = p0; pp < pe; pp++) {
      __m512bh b0 = as_bh(_mm512_load_si512(panel + pp * NR));
      __m512bh b1 = as_bh(_mm512_load_si512(panel + pp * NR + 16));
#pragma GCC unroll 8
      for (size_t r = 0; r < mr; r++) {
        __m512bh a = q_pair(q + r * ldq, pp);
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
      }
    }
  }
  if (kc & 1) { /* the last value alone: its pair's other half is 0 */
    __m512bh b0 = as_bh(_mm512_load_si512(panel + full * NR));
    __m512bh b1 = as_bh(_mm512_load_si512(panel + full * NR + 16));
#pragma GCC unroll 8
    for (size_t r = 0; r < mr; r++) {
      __m512bh a = as_bh(_mm512_set1_epi32(q[r * ldq + kc - 1]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], a, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], a, b1);
    }
  }
  const __m512 vs = _mm512_set1_ps(last ? scale : 1.0f);
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++) {
    _mm512_mask_storeu_ps(s + r * lds, k0, _mm512_mul_ps(acc[r][0], vs));
    _mm512_mask_storeu_ps(s + r * lds + 16, k1, _mm512_mul_ps(acc[r][1], vs));
  }
}

static void score_packed(size_t m, size_t n, size_t d, const uint16_t *q,
                         size_t ldq, const uint16_t *k, size_t ldk, float scale,
                         float *s, size_t lds) {
  _Alignas(64) uint32_t panel[KC / 2 * NR];
  /* chunks of SA_SPREAD_STEPS pairs of d */
  const size_t chunks = (m + MR - 1) / MR *
                        ((d + 2 * SA_SPREAD_STEPS - 1) / (2 * SA_SPREAD_STEPS));
  for (size_t j0 = 0; j0 < n; j0 += NR) {
    size_t nk = n - j0 < NR ? n - j0 : NR;
    __mmask16 k0 = sa_mask16(nk), k1 = sa_mask16(nk > 16 ? nk - 16 : 0);
    /* the next panel's rows, while this one is used */
    sa_spread pf = sa_spread_panel(k, ldk * sizeof *k, d * sizeof *k, n,
                                   j0 + nk, NR, chunks);
    size_t p0 = 0;
    do { /* at least once, so that d = 0 still writes s = 0 */
      size_t kc = d - p0 < KC ? d - p0 : KC;
      int first = p0 == 0, last = p0 + kc == d;
      pack_panel(k + j0 * ldk + p0, ldk, nk, kc, panel);
      for (size_t i0 = 0; i0 < m; i0 += MR) {
        const uint16_t *qi = q + i0 * ldq + p0;
        float *si = s + i0 * lds + j0;
#define TILE(r)                                                                \
  tile(r, kc, qi, ldq, panel, si, lds, k0, k1, first, last, scale, &pf)
        SA_UNROLL_1_8(m - i0 < MR ? m - i0 : MR, TILE);
#undef TILE
      }
      p0 += kc;
    } while (p0 < d);
  }
}

/* s[0..mr)[0..nk) = scale * q[0..mr) . kr[0..nk), nk <= DN, prefetching
 * the rows pk[] (keys PF further on). mr a constant. */
AI void dots(size_t mr, size_t d, const uint16_t *q, size_t ldq,
             const uint16_t *const *kr, const uint16_t *const *pk, float *s,
             size_t lds, size_t nk, float scale) {
  __m512 acc[DM][DN];
#pragma GCC unroll 4
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < DN; c++)
      acc[r][c] = _mm512_setzero_ps();
  size_t p = 0;
  for (; p + 32 <= d; p += 32) {
    __m512bh b[DN];
    for (size_t c = 0; c < DN; c++) {
      _mm_prefetch((const char *)(pk[c] + p), _MM_HINT_T0);
      b[c] = as_bh(_mm512_loadu_si512(kr[c] + p));
    }
#pragma GCC unroll 4
    for (size_t r = 0; r < mr; r++) {
      __m512bh a = as_bh(_mm512_loadu_si512(q + r * ldq + p));
      for (size_t c = 0; c < DN; c++)
        acc[r][c] = _mm512_dpbf16_ps(acc[r][c], a, b[c]);
    }
  }
  if (p < d) {
    __m512bh b[DN];
    for (size_t c = 0; c < DN; c++)
      b[c] = as_bh(sa_load_h32(kr[c] + p, d - p));
#pragma GCC unroll 4
    for (size_t r = 0; r < mr; r++) {
      __m512bh a = as_bh(sa_load_h32(q + r * ldq + p, d - p));
      for (size_t c = 0; c < DN; c++)
        acc[r][c] = _mm512_dpbf16_ps(acc[r][c], a, b[c]);
    }
  }
  sa_dots_store(mr, acc, scale, s, lds, nk);
}

static void score_dots(size_t m, size_t n, size_t d, const uint16_t *q,
                       size_t ldq, const uint16_t *k, size_t ldk, float scale,
                       float *s, size_t lds) {
  for (size_t j0 = 0; j0 < n; j0 += DN) {
    size_t nk = n - j0 < DN ? n - j0 : DN;
    const uint16_t *kr[DN], *pk[DN];
    for (size_t c = 0; c < DN; c++) {
      size_t ahead = j0 + c + PF < n ? j0 + c + PF : n - 1;
      kr[c] = k + (c < nk ? j0 + c : j0) * ldk;
      pk[c] = k + ahead * ldk;
    }
    for (size_t i0 = 0; i0 < m; i0 += DM) {
      const uint16_t *qi = q + i0 * ldq;
      float *si = s + i0 * lds + j0;
      const uint16_t *const *pi = i0 == 0 ? pk : kr;
#define DOTS(r) dots(r, d, qi, ldq, kr, pi, si, lds, nk, scale)
      SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
    }
  }
}

void sa_score_bf16_dp__avx512(size_t m, size_t n, size_t d, const void *q,
                              size_t ldq, const void *k, size_t ldk,
                              float scale, float *s, size_t lds) {
  if (m <= DOTS_M)
    score_dots(m, n, d, q, ldq, k, ldk, scale, s, lds);
  else
    score_packed(m, n, d, q, ldq, k, ldk, scale, s, lds);
}
