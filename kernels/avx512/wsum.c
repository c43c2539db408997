/*
 * wsum, AVX-512: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c].
 *
 * V is already laid out the way a GEMM micro-kernel wants its B panel (c is
 * contiguous), so nothing is packed: one step of j loads NV vectors of
 * v[j][c0..c0 + 16 NV) and broadcasts p[i][j] for MR rows, feeding MR NV
 * FMAs into MR x 16 NV accumulators. Every o[i][c] is one lane summing j in
 * order, as the oracle does. beta is folded into the single store at the end
 * (beta NULL: o is only written, so it may hold NaN on entry).
 *
 * Column blocks walk V down 128 bytes of each row at a time, a pattern the
 * hardware prefetchers do not follow: from memory (decode, where each V row
 * is used by a few rows of p) V came at a third of the bandwidth. So the
 * first column block prefetches whole rows of V PF rows ahead, and the
 * others find them in cache; and with at most 4 rows the blocks are as wide
 * as the registers allow (2 rows x 128 columns, 4 x 64), so V is walked in
 * as few strips as it can be.
 *
 * Tails: the columns past dv are masked off at every load and store of the
 * last column block (a lane outside the mask is neither read nor faulted);
 * leftover rows run the same tile with fewer rows.
 */
#include <immintrin.h>

#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"
#include "kernels/kernels.h"
#include "kernels/unroll.h"

enum { MR = SA_AVX512_WSUM_MR, PF = 8 };

/* pf > 0: also prefetch pf floats of the row PF further on. mr and NV are
 * constants at every call, so acc lives in registers. */
static inline __attribute__((always_inline)) void
tile(size_t mr, size_t NV, size_t n, const float *p, size_t ldp, const float *v,
     size_t ldv, const float *beta, float *o, size_t ldo, const __mmask16 *km,
     size_t pf) {
  __m512 acc[MR][8];
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < NV; c++)
      acc[r][c] = _mm512_setzero_ps();
  for (size_t j = 0; j < n; j++) {
    const float *ahead = v + (j + PF < n ? j + PF : n - 1) * ldv;
    for (size_t c = 0; c < pf; c += 16)
      _mm_prefetch((const char *)(ahead + c), _MM_HINT_T0);
    __m512 b[8];
#pragma GCC unroll 8
    for (size_t c = 0; c < NV; c++)
      b[c] = _mm512_maskz_loadu_ps(km[c], v + j * ldv + 16 * c);
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
      float *out = o + r * ldo + 16 * c;
      __m512 x = acc[r][c];
      /* beta * o rounded on its own, as the oracle does: an FMA here would
       * differ from it by an ulp of beta * o, unrelated to the sum */
      if (beta)
        x = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(beta[r]),
                                        _mm512_maskz_loadu_ps(km[c], out)),
                          x);
      _mm512_mask_storeu_ps(out, km[c], x);
    }
}

/* Rows i0 .. i0 + RB (RB a constant, m - i0 of them at most), columns
 * 16 NV at a time; the first pass prefetches whole V rows. */
#define BLOCK(RB, NV, UNROLL)                                                  \
  do {                                                                         \
    const float *pi = p + i0 * ldp;                                            \
    const float *bi = beta ? beta + i0 : NULL;                                 \
    float *oi = o + i0 * ldo;                                                  \
    for (size_t c0 = 0; c0 < dv; c0 += 16 * NV) {                              \
      __mmask16 km[NV];                                                        \
      for (size_t c = 0; c < NV; c++)                                          \
        km[c] = sa_mask16(dv > c0 + 16 * c ? dv - c0 - 16 * c : 0);            \
      size_t pf = i0 == 0 && c0 == 0 ? dv : 0;                                 \
      UNROLL(m - i0 < RB ? m - i0 : RB, TILE_##NV);                            \
    }                                                                          \
  } while (0)
#define TILE_ON(r, NV)                                                         \
  tile(r, NV, n, pi, ldp, v + c0, ldv, bi, oi + c0, ldo, km, pf)
#define TILE_8(r) TILE_ON(r, 8)
#define TILE_4(r) TILE_ON(r, 4)
#define TILE_2(r) TILE_ON(r, 2)

void sa_wsum__avx512(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                     const float *v, size_t ldv, const float *beta, float *o,
                     size_t ldo) {
  /* Few rows (decode): as many columns per pass as the registers hold, so
   * that V's rows are walked in as few strips as they can be (m <= 2: each
   * row whole, in one pass); the prefetchers follow whole rows and only
   * half follow 128-byte strips. Measured by streaming V from memory (one
   * core of a Xeon, m = 1: 10.0 -> 11.8 GB/s, m = 4: 9.1 -> 9.8 GB/s). */
  if (m <= 2) {
    const size_t i0 = 0;
    BLOCK(2, 8, SA_UNROLL_1_2);
    return;
  }
  if (m <= 4) {
    const size_t i0 = 0;
    BLOCK(4, 4, SA_UNROLL_1_4);
    return;
  }
  for (size_t i0 = 0; i0 < m; i0 += MR)
    BLOCK(MR, 2, SA_UNROLL_1_8);
}
