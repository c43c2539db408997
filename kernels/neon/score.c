/*
 * score, NEON: s[i][j] = scale * sum_p q[i][p] * k[j][p]   (i < m, j < n, p <
 * d)
 *
 * Both Q and K are row-major with d contiguous, so a score is a dot product of
 * two contiguous rows. The tile is 4 query rows x 4 keys: per step of 4 along
 * d it loads 4 q vectors and 4 k vectors and issues 16 FMAs into 16
 * independent accumulators (8 loads per 16 FMAs instead of 2 per 1, and 16
 * chains deep enough to hide the FMA latency). Each accumulator is reduced
 * only once, at the end of the tile, and for a 4-key tile two levels of
 * pairwise adds turn the 4 accumulators of a row into the 4 scores in lane
 * order, stored with one vector store.
 *
 * Tails: the last 1-3 elements of d are loaded lane by lane with zero pad
 * (0 * 0 adds nothing), leftover keys use 4x1 tiles and leftover rows 1x4 and
 * 1x1 tiles. Nothing outside q[i][0..d), k[j][0..d), s[i][0..n) is touched.
 * Summation order differs from the scalar oracle (4 partial sums, fused
 * multiply-add), which is within the d*eps*sum|qk| tolerance.
 */
#include "kernels/kernels.h"
#include "kernels/neon/tiles.h"
#include "kernels/neon/util.h"
#include "kernels/upto.h"

/* MR rows x NR keys, both compile-time constants at every call site, so the
 * loops unroll and the accumulators live in registers. */
SA_NEON_INLINE void score_tile(size_t MR, size_t NR, size_t d, const float *q,
                               size_t ldq, const float *k, size_t ldk,
                               float scale, float *s, size_t lds) {
  float32x4_t acc[4][4];
  for (size_t r = 0; r < MR; r++)
    for (size_t c = 0; c < NR; c++)
      acc[r][c] = vdupq_n_f32(0.0f);

  size_t p = 0;
  for (; p + 4 <= d; p += 4) {
    float32x4_t qv[4], kv[4];
    for (size_t r = 0; r < MR; r++)
      qv[r] = vld1q_f32(q + r * ldq + p);
    for (size_t c = 0; c < NR; c++)
      kv[c] = vld1q_f32(k + c * ldk + p);
    for (size_t r = 0; r < MR; r++)
      for (size_t c = 0; c < NR; c++)
        acc[r][c] = vfmaq_f32(acc[r][c], qv[r], kv[c]);
  }
  if (p < d) {
    size_t rem = d - p;
    float32x4_t qv[4], kv[4];
    for (size_t r = 0; r < MR; r++)
      qv[r] = sa_neon_load_partial(q + r * ldq + p, rem, 0.0f);
    for (size_t c = 0; c < NR; c++)
      kv[c] = sa_neon_load_partial(k + c * ldk + p, rem, 0.0f);
    for (size_t r = 0; r < MR; r++)
      for (size_t c = 0; c < NR; c++)
        acc[r][c] = vfmaq_f32(acc[r][c], qv[r], kv[c]);
  }

  const float32x4_t vscale = vdupq_n_f32(scale);
  for (size_t r = 0; r < MR; r++) {
    if (NR == 4) {
      float32x4_t sums = vpaddq_f32(vpaddq_f32(acc[r][0], acc[r][1]),
                                    vpaddq_f32(acc[r][2], acc[r][3]));
      vst1q_f32(s + r * lds, vmulq_f32(sums, vscale));
    } else {
      for (size_t c = 0; c < NR; c++)
        s[r * lds + c] = scale * vaddvq_f32(acc[r][c]);
    }
  }
}

void sa_score__neon(size_t m, size_t n, size_t d, const float *q, size_t ldq,
                    const float *k, size_t ldk, float scale, float *s,
                    size_t lds) {
#define TILE(mr, nr, i, j)                                                     \
  score_tile(mr, nr, d, q + (i)*ldq, ldq, k + (j)*ldk, ldk, scale,             \
             s + (i)*lds + (j), lds)
  SA_NEON_SCORE_WALK(m, n, TILE);
#undef TILE
}

/* Rows that see keys [0, ends[i]) (the causal diagonal): each block of
 * rows up to its last end. Every score is its own tile's dot product, so
 * the walk's split of keys changes none of them. */
void sa_score_upto__neon(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const float *k, size_t ldk, float scale,
                         float *s, size_t lds, const size_t *ends) {
  for (size_t i = 0; i < m; i += SA_NEON_MR) {
    size_t mr = m - i < SA_NEON_MR ? m - i : SA_NEON_MR;
    sa_score__neon(mr, sa_ends_clip(ends + i, mr, n), d, q + i * ldq, ldq, k,
                   ldk, scale, s + i * lds, lds);
  }
}
