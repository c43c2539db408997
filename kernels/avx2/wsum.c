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
 * Column blocks walk V down 64 bytes of each row at a time, a pattern the
 * hardware prefetchers do not follow: from memory (decode, where each V row
 * is used by a few rows of p) V came at a third of the bandwidth. So the
 * first column block prefetches whole rows of V PF rows ahead, and the
 * others find them in cache.
 *
 * Tails: columns left after the 16-wide blocks go through a one-vector
 * tile, 8 wide, then once more for the last cols < 8 columns, whose vector
 * of v is copied through the stack on each j, never over-read (util.h says
 * why not maskload). Head sizes are multiples of 8 in practice, so that
 * slow path is for correctness only. Leftover rows run the same tile with
 * fewer rows.
 */
#include <immintrin.h>

#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/kernels.h"
#include "kernels/unroll.h"

enum { MR = SA_AVX2_WSUM_MR, NV = SA_AVX2_WSUM_NV, PF = 8 };

static inline __attribute__((always_inline)) __m256 load(const float *x,
                                                         size_t cols) {
  return cols == 8 ? _mm256_loadu_ps(x) : sa_load8_part(x, cols);
}

static inline __attribute__((always_inline)) void store(float *x, size_t cols,
                                                        __m256 y) {
  if (cols == 8)
    _mm256_storeu_ps(x, y);
  else
    sa_store8_part(x, cols, y);
}

/* Columns [0, 8 (nv - 1) + cols) of mr rows; pf > 0: also prefetch pf
 * floats of the row PF further on. mr and nv are constants at every call, so
 * acc lives in registers; cols is 8 except in the last tile, where nv is 1.
 */
static inline __attribute__((always_inline)) void
tile(size_t mr, size_t nv, size_t cols, size_t n, const float *p, size_t ldp,
     const float *v, size_t ldv, const float *beta, float *o, size_t ldo,
     size_t pf) {
  __m256 acc[MR][NV];
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = _mm256_setzero_ps();
  for (size_t j = 0; j < n; j++) {
    const float *ahead = v + (j + PF < n ? j + PF : n - 1) * ldv;
    for (size_t c = 0; c < pf; c += 16)
      _mm_prefetch((const char *)(ahead + c), _MM_HINT_T0);
    __m256 b[NV];
    for (size_t c = 0; c < nv; c++)
      b[c] = load(v + j * ldv + 8 * c, c + 1 < nv ? 8 : cols);
#pragma GCC unroll 6
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_broadcast_ss(p + r * ldp + j);
      for (size_t c = 0; c < nv; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++) {
      float *out = o + r * ldo + 8 * c;
      size_t w = c + 1 < nv ? 8 : cols;
      __m256 x = acc[r][c];
      /* beta * o rounded on its own, as the oracle does: an FMA here would
       * differ from it by an ulp of beta * o, unrelated to the sum */
      if (beta)
        x = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(beta[r]), load(out, w)),
                          x);
      store(out, w, x);
    }
}

static inline __attribute__((always_inline)) void
rows(size_t mr, size_t nv, size_t cols, size_t n, const float *p, size_t ldp,
     const float *v, size_t ldv, const float *beta, float *o, size_t ldo,
     size_t pf) {
#define TILE(r) tile(r, nv, cols, n, p, ldp, v, ldv, beta, o, ldo, pf)
  SA_UNROLL_1_6(mr, TILE);
#undef TILE
}

void sa_wsum__avx2(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                   const float *v, size_t ldv, const float *beta, float *o,
                   size_t ldo) {
  for (size_t i0 = 0; i0 < m; i0 += MR) {
    size_t mr = m - i0 < MR ? m - i0 : MR;
    const float *pi = p + i0 * ldp;
    const float *bi = beta ? beta + i0 : NULL;
    float *oi = o + i0 * ldo;
    size_t c0 = 0, pf = i0 == 0 ? dv : 0;
    for (; c0 + 8 * NV <= dv; c0 += 8 * NV, pf = 0)
      rows(mr, NV, 8, n, pi, ldp, v + c0, ldv, bi, oi + c0, ldo, pf);
    if (c0 + 8 <= dv) {
      rows(mr, 1, 8, n, pi, ldp, v + c0, ldv, bi, oi + c0, ldo, pf);
      c0 += 8;
      pf = 0;
    }
    if (c0 < dv)
      rows(mr, 1, dv - c0, n, pi, ldp, v + c0, ldv, bi, oi + c0, ldo, pf);
  }
}
