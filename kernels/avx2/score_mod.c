/*
 * score_mod, AVX2, 8 columns per step; tanh from SLEEF's AVX2 entry point
 * (u35: within 3.5 ULP, three times the speed of u10:
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
 * score under it cannot survive. The last partial vector of a row, of its
 * add row and of its keep bytes goes through the stack (util.h says why not
 * vmaskmovps), so nothing past column n - 1 is touched.
 */
#include <math.h>
#include <sleef.h>
#include <string.h>

#include "kernels/avx2/util.h"
#include "kernels/kernels.h"
#include "kernels/unroll.h"

enum { CAP = 1, ALIBI = 2, ADD = 4, KEEP = 8 };

#define SA_INLINE static inline __attribute__((always_inline))

SA_INLINE __m256 load(const float *p, size_t r) {
  return r == 8 ? _mm256_loadu_ps(p) : sa_load8_part(p, r);
}

/* Columns [j, j + r) of one row, r <= 8; r is the constant 8 in the main
 * loop, so the stack copies are only in the tail. */
SA_INLINE void step(unsigned f, size_t r, float *row, const float *add,
                    const uint8_t *keep, size_t j, __m256 cap, __m256 slope,
                    __m256 dist) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 x = load(row + j, r);
  if (f & CAP)
    x = _mm256_mul_ps(cap, Sleef_tanhf8_u35avx2(_mm256_div_ps(x, cap)));
  if (f & ALIBI) {
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i col = _mm256_add_epi32(_mm256_set1_epi32((int)j), iota);
    x = _mm256_fmadd_ps(slope, _mm256_add_ps(dist, _mm256_cvtepi32_ps(col)), x);
  }
  __m256 drop = _mm256_setzero_ps();
  if (f & ADD) {
    __m256 a = load(add + j, r);
    drop = _mm256_cmp_ps(a, ninf, _CMP_EQ_OQ);
    x = _mm256_add_ps(x, a);
  }
  if (f & KEEP) {
    __m128i b;
    if (r == 8) {
      b = _mm_loadl_epi64((const __m128i *)(keep + j));
    } else {
      uint8_t buf[16] = {0};
      memcpy(buf, keep + j, r);
      b = _mm_loadu_si128((const __m128i *)buf);
    }
    __m256i w = _mm256_cvtepu8_epi32(b);
    drop = _mm256_or_ps(drop, _mm256_castsi256_ps(_mm256_cmpeq_epi32(
                                  w, _mm256_setzero_si256())));
  }
  if (f & (ADD | KEEP))
    x = _mm256_blendv_ps(x, ninf, drop);
  if (r == 8)
    _mm256_storeu_ps(row + j, x);
  else
    sa_store8_part(row + j, r, x);
}

SA_INLINE void rows(unsigned f, size_t m, size_t n, float *s, size_t lds,
                    const sa_score_mods *mods) {
  const __m256 cap = _mm256_set1_ps(mods->softcap);
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    const float *add = f & ADD ? mods->add + i * mods->ld_add : NULL;
    const uint8_t *keep = f & KEEP ? mods->keep + i * mods->ld_keep : NULL;
    __m256 slope = _mm256_setzero_ps(), dist = slope;
    if (f & ALIBI) {
      slope = _mm256_set1_ps(mods->slope[i]);
      dist = _mm256_set1_ps(mods->dist[i]);
    }
    size_t j = 0, lo = mods->lo ? (mods->lo[i] < n ? mods->lo[i] : n) : 0;
    for (; j + 8 <= lo; j += 8)
      _mm256_storeu_ps(row + j, _mm256_set1_ps(-INFINITY));
    for (; j < lo; j++)
      row[j] = -INFINITY;
    for (j = lo; j + 8 <= n; j += 8)
      step(f, 8, row, add, keep, j, cap, slope, dist);
    if (j < n)
      step(f, n - j, row, add, keep, j, cap, slope, dist);
  }
}

void sa_score_mod__avx2(size_t m, size_t n, float *s, size_t lds,
                        const sa_score_mods *mods) {
  unsigned f = (mods->softcap > 0.0f ? CAP : 0) | (mods->slope ? ALIBI : 0) |
               (mods->add ? ADD : 0) | (mods->keep ? KEEP : 0);
#define ROWS(c) rows(c, m, n, s, lds, mods)
  SA_UNROLL_0_15(f, ROWS);
#undef ROWS
}
