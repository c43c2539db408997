/*
 * The two ends of a wsum tile over one key sub-block, shared by wsum.c (f32
 * V) and wsum_t.c (narrow V), whose tiles differ only in how a V row is
 * loaded: the sums start at 0 (the first sub-block) or from the partial
 * sums parked on the stack, and end parked again or, after the last
 * sub-block, in o as o = beta * o + sum (beta * o rounded on its own, as
 * the oracle does: an FMA there would differ from it by an ulp of beta * o,
 * unrelated to the sum). Parking stores the vectors bit for bit, so a lane
 * sums its keys in order across sub-blocks as one pass would. Parking
 * stores and reloads whole vectors, lanes past dv included (part has CG
 * floats a row, and every column block of a group ends within them); only
 * o is touched through the column masks, as avx2's part copies do there.
 * mr and nv are constants at every call. Static inline only (util.h says
 * why).
 */
#ifndef SA_AVX512_WSUM_ENDS_H
#define SA_AVX512_WSUM_ENDS_H

#include <immintrin.h>

#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"

enum {
  SA_WSUM_MR = SA_AVX512_WSUM_MR,
  SA_WSUM_NV = 8, /* the widest tile's vectors: wsum.c's 2 rows x 128 */
  SA_WSUM_CG = SA_AVX512_WSUM_CG,
};

/* The masks of a column block of nv vectors with cn columns left in it (all
 * lanes of a vector cn covers, none past it). */
static inline __attribute__((always_inline)) void
sa_wsum_masks(size_t nv, size_t cn, __mmask16 km[SA_WSUM_NV]) {
  for (size_t c = 0; c < nv; c++)
    km[c] = sa_mask16(cn > 16 * c ? cn - 16 * c : 0);
}

/* Where a tile's sums come from and go: they start at 0 (first) or from
 * the parked partial sums `part` (rows ldpart floats apart: CG for a
 * group's sub-blocks), and end in o with beta (last) or parked again. */
typedef struct sa_wsum_ends {
  int first, last;
  float *part;
  size_t ldpart;
} sa_wsum_ends;

static inline __attribute__((always_inline)) void
sa_wsum_begin(size_t mr, size_t nv, sa_wsum_ends e,
              __m512 acc[SA_WSUM_MR][SA_WSUM_NV]) {
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = e.first ? _mm512_setzero_ps()
                          : _mm512_loadu_ps(e.part + r * e.ldpart + 16 * c);
}

/* Columns 16 c + lanes of km[c] (c < nv) of mr rows of o (ldo apart). */
static inline __attribute__((always_inline)) void
sa_wsum_end(size_t mr, size_t nv, const __mmask16 *km, sa_wsum_ends e,
            const float *beta, float *o, size_t ldo,
            __m512 acc[SA_WSUM_MR][SA_WSUM_NV]) {
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++) {
      if (!e.last) {
        _mm512_storeu_ps(e.part + r * e.ldpart + 16 * c, acc[r][c]);
        continue;
      }
      float *out = o + r * ldo + 16 * c;
      __m512 x = acc[r][c];
      if (beta)
        x = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(beta[r]),
                                        _mm512_maskz_loadu_ps(km[c], out)),
                          x);
      _mm512_mask_storeu_ps(out, km[c], x);
    }
}

#endif /* SA_AVX512_WSUM_ENDS_H */
