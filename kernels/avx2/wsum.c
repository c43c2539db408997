/*
 * wsum, AVX2: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c].
 *
 * V is already laid out the way a GEMM micro-kernel wants its B panel (c is
 * contiguous), so nothing is packed: one step of j loads 2 vectors of
 * v[j][c0..c0 + 16) and broadcasts p[i][j] for MR = 6 rows, feeding 12 FMAs
 * into 6 x 16 accumulators (12 of the 16 ymm registers). Every o[i][c] is
 * one lane summing j in order, as the oracle does. beta is folded into the
 * single store at the end (beta NULL: o is only written, so it may hold NaN
 * on entry).
 *
 * Tails: the last column block, if narrower than 16, goes through
 * maskload/maskstore (lanes left out are neither read nor faulted); full
 * blocks use plain loads. Leftover rows run the same tile with fewer rows.
 */
#include <immintrin.h>

#include "kernels.h"
#include "util.h"

enum { MR = 6, NV = 2 };

/* mr and masked are constants at every call, so acc lives in registers and
 * full blocks carry no mask. */
static inline __attribute__((always_inline)) void
tile(size_t mr, int masked, size_t n, const float *p, size_t ldp,
     const float *v, size_t ldv, const float *beta, float *o, size_t ldo,
     const __m256i *km) {
  __m256 acc[MR][NV];
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < NV; c++)
      acc[r][c] = _mm256_setzero_ps();
  for (size_t j = 0; j < n; j++) {
    __m256 b[NV];
    for (size_t c = 0; c < NV; c++)
      b[c] = masked ? _mm256_maskload_ps(v + j * ldv + 8 * c, km[c])
                    : _mm256_loadu_ps(v + j * ldv + 8 * c);
#pragma GCC unroll 6
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_broadcast_ss(p + r * ldp + j);
      for (size_t c = 0; c < NV; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < NV; c++) {
      float *out = o + r * ldo + 8 * c;
      __m256 x = acc[r][c];
      /* beta * o rounded on its own, as the oracle does: an FMA here would
       * differ from it by an ulp of beta * o, unrelated to the sum */
      if (beta)
        x = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(beta[r]),
                                        masked ? _mm256_maskload_ps(out, km[c])
                                               : _mm256_loadu_ps(out)),
                          x);
      if (masked)
        _mm256_maskstore_ps(out, km[c], x);
      else
        _mm256_storeu_ps(out, x);
    }
}

static inline __attribute__((always_inline)) void
rows(size_t mr, int masked, size_t n, const float *p, size_t ldp,
     const float *v, size_t ldv, const float *beta, float *o, size_t ldo,
     const __m256i *km) {
  switch (mr) {
  case 6:
    tile(6, masked, n, p, ldp, v, ldv, beta, o, ldo, km);
    break;
  case 5:
    tile(5, masked, n, p, ldp, v, ldv, beta, o, ldo, km);
    break;
  case 4:
    tile(4, masked, n, p, ldp, v, ldv, beta, o, ldo, km);
    break;
  case 3:
    tile(3, masked, n, p, ldp, v, ldv, beta, o, ldo, km);
    break;
  case 2:
    tile(2, masked, n, p, ldp, v, ldv, beta, o, ldo, km);
    break;
  default:
    tile(1, masked, n, p, ldp, v, ldv, beta, o, ldo, km);
    break;
  }
}

void sa_wsum__avx2(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                   const float *v, size_t ldv, const float *beta, float *o,
                   size_t ldo) {
  for (size_t i0 = 0; i0 < m; i0 += MR) {
    size_t mr = m - i0 < MR ? m - i0 : MR;
    const float *pi = p + i0 * ldp;
    const float *bi = beta ? beta + i0 : NULL;
    float *oi = o + i0 * ldo;
    for (size_t c0 = 0; c0 < dv; c0 += 8 * NV) {
      __m256i km[NV];
      for (size_t c = 0; c < NV; c++)
        km[c] = sa_mask8(dv > c0 + 8 * c ? dv - c0 - 8 * c : 0);
      if (dv - c0 >= 8 * NV)
        rows(mr, 0, n, pi, ldp, v + c0, ldv, bi, oi + c0, ldo, km);
      else
        rows(mr, 1, n, pi, ldp, v + c0, ldv, bi, oi + c0, ldo, km);
    }
  }
}
