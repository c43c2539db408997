/*
 * score_mod, AVX-512, 16 columns per step; tanh from SLEEF's AVX-512F entry
 * point (u35: within 3.5 ULP, three times the speed of u10:
 * about 30 cycles per vector instead of 100 on Zen 5, which made softcap
 * cost 40% of a d = 128 prefill), called by name for the reason softmax_sleef.c
 * gives.
 *
 * Bit-exact with the oracle (kernels/scalar/score_mod.c) except for tanh: the
 * cap divides rather than multiplying by its reciprocal, and the ALiBi
 * distance dist[i] + j is a float add of j converted from an integer lane
 * (as (float)j is: exactly, below 2^24) that then enters one FMA, so every
 * set rounds it the same way.
 *
 * Which steps run is the same for every element of the tile, so it is decided
 * once per call: rows() is instantiated for all 16 combinations and its loop
 * tests nothing. Columns before lo[i] end at -inf whatever the other steps
 * do, so they are filled and never computed: a sliding window's left edge
 * costs a store. A masked key's -inf is blended in, never added, so a NaN
 * score under it cannot survive. Tails use masked loads and stores (util.h),
 * the keep bytes a masked byte load, so nothing past column n - 1 of a row is
 * touched.
 */
#include <math.h>
#include <sleef.h>

#include "kernels/avx512/util.h"
#include "kernels/kernels.h"
#include "kernels/unroll.h"

enum { CAP = 1, ALIBI = 2, ADD = 4, KEEP = 8 };

#define SA_INLINE static inline __attribute__((always_inline))

/* Columns [j, j + r) of one row, r <= 16; r is the constant 16 in the main
 * loop, so the masked forms are only in the tail. */
SA_INLINE void step(unsigned f, size_t r, float *row, const float *add,
                    const uint8_t *keep, size_t j, __m512 cap, __m512 slope,
                    __m512 dist) {
  const __mmask16 k = sa_mask16(r);
  const __m512 ninf = _mm512_set1_ps(-INFINITY);
  __m512 x =
      r == 16 ? _mm512_loadu_ps(row + j) : _mm512_maskz_loadu_ps(k, row + j);
  if (f & CAP)
    x = _mm512_mul_ps(cap, Sleef_tanhf16_u35avx512f(_mm512_div_ps(x, cap)));
  if (f & ALIBI) {
    const __m512i iota =
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m512i col = _mm512_add_epi32(_mm512_set1_epi32((int)j), iota);
    x = _mm512_fmadd_ps(slope, _mm512_add_ps(dist, _mm512_cvtepi32_ps(col)), x);
  }
  __mmask16 live = 0xffff;
  if (f & ADD) {
    __m512 a =
        r == 16 ? _mm512_loadu_ps(add + j) : _mm512_maskz_loadu_ps(k, add + j);
    live = _mm512_cmp_ps_mask(a, ninf, _CMP_NEQ_UQ);
    x = _mm512_add_ps(x, a);
  }
  if (f & KEEP) {
    __m128i b = r == 16 ? _mm_loadu_si128((const __m128i *)(keep + j))
                        : _mm_maskz_loadu_epi8(k, keep + j);
    live &= _mm_test_epi8_mask(b, b);
  }
  if (f & (ADD | KEEP))
    x = _mm512_mask_mov_ps(ninf, live, x);
  if (r == 16)
    _mm512_storeu_ps(row + j, x);
  else
    _mm512_mask_storeu_ps(row + j, k, x);
}

SA_INLINE void rows(unsigned f, size_t m, size_t n, float *s, size_t lds,
                    const sa_score_mods *mods) {
  const __m512 cap = _mm512_set1_ps(mods->softcap);
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    const float *add = f & ADD ? mods->add + i * mods->ld_add : NULL;
    const uint8_t *keep = f & KEEP ? mods->keep + i * mods->ld_keep : NULL;
    __m512 slope = _mm512_setzero_ps(), dist = slope;
    if (f & ALIBI) {
      slope = _mm512_set1_ps(mods->slope[i]);
      dist = _mm512_set1_ps(mods->dist[i]);
    }
    size_t j = 0, lo = mods->lo ? (mods->lo[i] < n ? mods->lo[i] : n) : 0;
    for (; j + 16 <= lo; j += 16)
      _mm512_storeu_ps(row + j, _mm512_set1_ps(-INFINITY));
    if (j < lo)
      _mm512_mask_storeu_ps(row + j, sa_mask16(lo - j),
                            _mm512_set1_ps(-INFINITY));
    for (j = lo; j + 16 <= n; j += 16)
      step(f, 16, row, add, keep, j, cap, slope, dist);
    if (j < n)
      step(f, n - j, row, add, keep, j, cap, slope, dist);
  }
}

void sa_score_mod__avx512(size_t m, size_t n, float *s, size_t lds,
                          const sa_score_mods *mods) {
  unsigned f = (mods->softcap > 0.0f ? CAP : 0) | (mods->slope ? ALIBI : 0) |
               (mods->add ? ADD : 0) | (mods->keep ? KEEP : 0);
#define ROWS(c) rows(c, m, n, s, lds, mods)
  SA_UNROLL_0_15(f, ROWS);
#undef ROWS
}
