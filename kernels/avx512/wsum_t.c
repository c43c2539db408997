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
 * As in wsum.c the first column block prefetches whole V rows PF ahead
 * (one line per 64 bytes), which the later column blocks find in cache.
 *
 * Tails: columns past dv are masked off at every load (f16 / bf16: the
 * 16-bit lanes of the last column block) and store; leftover rows run the
 * same tile with fewer rows. beta NULL: o is only written.
 */
#include <immintrin.h>

#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"
#include "kernels/avx512/widen.h"
#include "kernels/kernels.h"
#include "kernels/unroll.h"

enum { MR = SA_AVX512_WSUM_MR, NV = SA_AVX512_WSUM_NV, PF = 8 };

#define AI static inline __attribute__((always_inline))

/* Columns c0 .. c0 + cn (cn <= 32) of o for rows 0..mr; pf > 0: also
 * prefetch pf bytes of the V row PF further on. mr a constant. */
AI void tile(sa_dtype t, size_t mr, size_t n, const float *p, size_t ldp,
             const char *v, size_t ldvb, size_t c0, size_t cn,
             const float *beta, float *o, size_t ldo, size_t pf) {
  __m512 acc[MR][NV];
  const __mmask16 km[NV] = {sa_mask16(cn), sa_mask16(cn > 16 ? cn - 16 : 0)};
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < NV; c++)
      acc[r][c] = _mm512_setzero_ps();
  for (size_t j = 0; j < n; j++) {
    const char *ahead = v + (j + PF < n ? j + PF : n - 1) * ldvb;
    for (size_t b = 0; b < pf; b += 64)
      _mm_prefetch(ahead + b, _MM_HINT_T0);
    __m512 b[NV];
    sa_widen32(t, v + j * ldvb, c0, cn, &b[0], &b[1]);
#pragma GCC unroll 8
    for (size_t r = 0; r < mr; r++) {
      __m512 a = _mm512_set1_ps(p[r * ldp + j]);
      for (size_t c = 0; c < NV; c++)
        acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < NV; c++) {
      if (!km[c])
        continue;
      float *out = o + r * ldo + c0 + 16 * c;
      __m512 x = acc[r][c];
      /* beta * o rounded on its own, as the oracle does */
      if (beta)
        x = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(beta[r]),
                                        _mm512_maskz_loadu_ps(km[c], out)),
                          x);
      _mm512_mask_storeu_ps(out, km[c], x);
    }
}

AI void wsum_typed(sa_dtype t, size_t m, size_t n, size_t dv, const float *p,
                   size_t ldp, const void *v, size_t ldv, const float *beta,
                   float *o, size_t ldo) {
  const size_t ldvb = ldv * sa_widen_unit(t);
  const size_t rowb = t == SA_Q8_0 ? dv / 32 * sizeof(sa_block_q8_0) : 2 * dv;
  for (size_t i0 = 0; i0 < m; i0 += MR) {
    const float *pi = p + i0 * ldp;
    const float *bi = beta ? beta + i0 : NULL;
    float *oi = o + i0 * ldo;
    for (size_t c0 = 0; c0 < dv; c0 += 16 * NV) {
      size_t cn = dv - c0 < 16 * NV ? dv - c0 : 16 * NV;
      size_t pf = i0 == 0 && c0 == 0 ? rowb : 0;
#define TILE(r) tile(t, r, n, pi, ldp, v, ldvb, c0, cn, bi, oi, ldo, pf)
      SA_UNROLL_1_8(m - i0 < MR ? m - i0 : MR, TILE);
#undef TILE
    }
  }
}

#define WSUM_T(name, type)                                                     \
  void name(size_t m, size_t n, size_t dv, const float *p, size_t ldp,         \
            const void *v, size_t ldv, const float *beta, float *o,            \
            size_t ldo) {                                                      \
    wsum_typed(type, m, n, dv, p, ldp, v, ldv, beta, o, ldo);                  \
  }

WSUM_T(sa_wsum_f16__avx512, SA_F16)
WSUM_T(sa_wsum_bf16__avx512, SA_BF16)
WSUM_T(sa_wsum_q8_0__avx512, SA_Q8_0)
