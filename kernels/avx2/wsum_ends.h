/*
 * The two ends of a wsum tile over one key sub-block, shared by wsum.c (f32
 * V) and wsum_t.c (narrow V), whose tiles differ only in how a V row is
 * loaded, and by decode.c's value sums (alpha in beta's place, over its
 * own register tiles: the per-vector sa_wsum_start and sa_wsum_finish).
 * The sums start at 0 (the first sub-block) or from the partial
 * sums parked on the stack, and end parked again or, after the last
 * sub-block, in o as o = beta * o + sum (beta * o rounded on its own, as
 * the oracle does: an FMA there would differ from it by an ulp of beta * o,
 * unrelated to the sum). Parking stores the vectors bit for bit, so a lane
 * sums its keys in order across sub-blocks as one pass would. mr and nv are
 * constants at every call. Static inline only (util.h says why).
 */
#ifndef SA_AVX2_WSUM_ENDS_H
#define SA_AVX2_WSUM_ENDS_H

#include <immintrin.h>

#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"

enum {
  SA_WSUM_MR = SA_AVX2_WSUM_MR,
  SA_WSUM_NV = SA_AVX2_WSUM_NV,
  SA_WSUM_CG = SA_AVX2_WSUM_CG,
};

/* Where a tile's sums come from and go: they start at 0 (first) or from
 * the parked partial sums `part` (rows ldpart floats apart: CG for a
 * group's sub-blocks), and end in o with beta (last) or parked again. */
typedef struct sa_wsum_ends {
  int first, last;
  float *part;
  size_t ldpart;
} sa_wsum_ends;

/* The first cols (8, or fewer at a row's end) floats at x. */
static inline __attribute__((always_inline)) __m256 sa_wsum_load(const float *x,
                                                                 size_t cols) {
  return cols == 8 ? _mm256_loadu_ps(x) : sa_load8_part(x, cols);
}

static inline __attribute__((always_inline)) void
sa_wsum_store(float *x, size_t cols, __m256 y) {
  if (cols == 8)
    _mm256_storeu_ps(x, y);
  else
    sa_store8_part(x, cols, y);
}

/* Row r's vector c of a tile's sums as the sub-block starts. */
static inline __attribute__((always_inline)) __m256
sa_wsum_start(sa_wsum_ends e, size_t r, size_t c) {
  return e.first ? _mm256_setzero_ps()
                 : _mm256_loadu_ps(e.part + r * e.ldpart + 8 * c);
}

/* Row r's vector c, x, as the sub-block ends: parked, or (the last) the
 * first w floats of out = beta[r] * out + x (beta NULL: out = x). */
static inline __attribute__((always_inline)) void
sa_wsum_finish(sa_wsum_ends e, size_t r, size_t c, const float *beta,
               float *out, size_t w, __m256 x) {
  if (!e.last) {
    _mm256_storeu_ps(e.part + r * e.ldpart + 8 * c, x);
    return;
  }
  if (beta)
    x = _mm256_add_ps(
        _mm256_mul_ps(_mm256_set1_ps(beta[r]), sa_wsum_load(out, w)), x);
  sa_wsum_store(out, w, x);
}

static inline __attribute__((always_inline)) void
sa_wsum_begin(size_t mr, size_t nv, sa_wsum_ends e,
              __m256 acc[SA_WSUM_MR][SA_WSUM_NV]) {
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = sa_wsum_start(e, r, c);
}

/* Columns [0, 8 (nv - 1) + cols) of mr rows of o (ldo apart). */
static inline __attribute__((always_inline)) void
sa_wsum_end(size_t mr, size_t nv, size_t cols, sa_wsum_ends e,
            const float *beta, float *o, size_t ldo,
            __m256 acc[SA_WSUM_MR][SA_WSUM_NV]) {
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++)
      sa_wsum_finish(e, r, c, beta, o + r * ldo + 8 * c, c + 1 < nv ? 8 : cols,
                     acc[r][c]);
}

#endif /* SA_AVX2_WSUM_ENDS_H */
