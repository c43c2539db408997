/*
 * score, NEON, narrow K: s[i][j] = scale * sum_p q[i][p] * k[j][p] with q f32
 * and k f16, bf16 or q8_0 (ldk in elements, or 34-byte blocks for q8_0 where
 * d is a multiple of 32). Nothing outside q[i][0..d), k's rows and
 * s[i][0..n) is read or written.
 *
 * The f32 kernel's tile (score.c): 4 query rows x 4 keys, 16 independent
 * accumulators reduced once per tile by pairwise adds. K is the narrow
 * operand and the one that streams from memory in decode, so each K vector is
 * widened once, in registers, right after its load and then feeds the FMAs of
 * all the tile's rows; Q stays f32. The arithmetic is then exactly score.c's
 * on the widened values (widen.h: every widening is exact), never in half
 * precision.
 *
 * f16 / bf16: 8 values per key per step (one 16-byte load, two f32 vectors),
 * so decode reads K in full 128-bit loads at half the bytes of f32; then a
 * step of 4 and a 1-3 value tail loaded lane by lane with zero pad.
 * q8_0: per block, the 4 keys' scales are widened once; each 8-value chunk is
 * sign-extended, converted and multiplied by its key's scale (exact), then
 * used by all rows. Dequantising K (2 multiplies per 8 values per key) costs
 * less than scaling per-block partial sums would (4 rows x 4 keys of extra
 * accumulators, more than the 32 registers).
 *
 * Summation order differs from the scalar oracle (4 partial sums per score,
 * fused multiply-add), within the d*eps*sum|qk| tolerance, as for f32.
 */
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/neon/util.h"
#include "kernels/neon/widen.h"

/* MR rows x NR keys of a 16-bit type t; all three constant at every call
 * site, so the loops unroll and the accumulators live in registers. */
SA_NEON_INLINE void tile_h(sa_dtype t, size_t MR, size_t NR, size_t d,
                           const float *q, size_t ldq, const uint16_t *k,
                           size_t ldk, float scale, float *s, size_t lds) {
  float32x4_t acc[4][4];
  for (size_t r = 0; r < MR; r++)
    for (size_t c = 0; c < NR; c++)
      acc[r][c] = vdupq_n_f32(0.0f);

  size_t p = 0;
  for (; p + 8 <= d; p += 8) {
    float32x4_t klo[4], khi[4];
    for (size_t c = 0; c < NR; c++)
      sa_neon_widen8(t, k + c * ldk + p, &klo[c], &khi[c]);
    for (size_t r = 0; r < MR; r++) {
      float32x4_t qv = vld1q_f32(q + r * ldq + p);
      for (size_t c = 0; c < NR; c++)
        acc[r][c] = vfmaq_f32(acc[r][c], qv, klo[c]);
    }
    for (size_t r = 0; r < MR; r++) {
      float32x4_t qv = vld1q_f32(q + r * ldq + p + 4);
      for (size_t c = 0; c < NR; c++)
        acc[r][c] = vfmaq_f32(acc[r][c], qv, khi[c]);
    }
  }
  if (p + 4 <= d) {
    float32x4_t kv[4];
    for (size_t c = 0; c < NR; c++)
      kv[c] = sa_neon_widen4(t, k + c * ldk + p);
    for (size_t r = 0; r < MR; r++) {
      float32x4_t qv = vld1q_f32(q + r * ldq + p);
      for (size_t c = 0; c < NR; c++)
        acc[r][c] = vfmaq_f32(acc[r][c], qv, kv[c]);
    }
    p += 4;
  }
  if (p < d) {
    size_t rem = d - p;
    float32x4_t kv[4];
    for (size_t c = 0; c < NR; c++)
      kv[c] = sa_neon_widen_partial(t, k + c * ldk + p, rem);
    for (size_t r = 0; r < MR; r++) {
      float32x4_t qv = sa_neon_load_partial(q + r * ldq + p, rem, 0.0f);
      for (size_t c = 0; c < NR; c++)
        acc[r][c] = vfmaq_f32(acc[r][c], qv, kv[c]);
    }
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

/* MR rows x NR keys of q8_0 rows (nb blocks each, ldk blocks apart). With
 * 4x4, GCC keeps 3 accumulators in L1 across the chunk loop (16
 * accumulators, 8 K vectors, 4 scales and the Q loads it hoists exceed the
 * 32 registers); those loads and stores use the load/store pipes while the
 * vector pipes, busy with widening and FMAs, set the pace. */
SA_NEON_INLINE void tile_q8(size_t MR, size_t NR, size_t nb, const float *q,
                            size_t ldq, const sa_block_q8_0 *k, size_t ldk,
                            float scale, float *s, size_t lds) {
  float32x4_t acc[4][4];
  for (size_t r = 0; r < MR; r++)
    for (size_t c = 0; c < NR; c++)
      acc[r][c] = vdupq_n_f32(0.0f);

  for (size_t b = 0; b < nb; b++) {
    const sa_block_q8_0 *blk[4];
    float32x4_t sc[4];
    for (size_t c = 0; c < NR; c++) {
      blk[c] = k + c * ldk + b;
      sc[c] = sa_neon_q8_scale(blk[c]);
    }
    const float *qb = q + b * SA_QK8_0;
    for (size_t h = 0; h < SA_QK8_0; h += 8) {
      float32x4_t klo[4], khi[4];
      for (size_t c = 0; c < NR; c++)
        sa_neon_dequant8(vld1_s8(blk[c]->q + h), sc[c], &klo[c], &khi[c]);
      for (size_t r = 0; r < MR; r++) {
        float32x4_t qv = vld1q_f32(qb + r * ldq + h);
        for (size_t c = 0; c < NR; c++)
          acc[r][c] = vfmaq_f32(acc[r][c], qv, klo[c]);
      }
      for (size_t r = 0; r < MR; r++) {
        float32x4_t qv = vld1q_f32(qb + r * ldq + h + 4);
        for (size_t c = 0; c < NR; c++)
          acc[r][c] = vfmaq_f32(acc[r][c], qv, khi[c]);
      }
    }
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

/* score.c's walk over 4x4, 4x1, 1x4 and 1x1 tiles, for a 16-bit type. */
SA_NEON_INLINE void score_h(sa_dtype t, size_t m, size_t n, size_t d,
                            const float *q, size_t ldq, const uint16_t *k,
                            size_t ldk, float scale, float *s, size_t lds) {
#define TILE(mr, nr, i, j)                                                     \
  tile_h(t, mr, nr, d, q + (i)*ldq, ldq, k + (j)*ldk, ldk, scale,              \
         s + (i)*lds + (j), lds)
  SA_NEON_SCORE_WALK(m, n, TILE);
#undef TILE
}

void sa_score_f16__neon(size_t m, size_t n, size_t d, const float *q,
                        size_t ldq, const void *k, size_t ldk, float scale,
                        float *s, size_t lds) {
  score_h(SA_F16, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

void sa_score_bf16__neon(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const void *k, size_t ldk, float scale,
                         float *s, size_t lds) {
  score_h(SA_BF16, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

void sa_score_q8_0__neon(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const void *k, size_t ldk, float scale,
                         float *s, size_t lds) {
  const sa_block_q8_0 *kb = k;
  const size_t nb = d / SA_QK8_0;
#define TILE(mr, nr, i, j)                                                     \
  tile_q8(mr, nr, nb, q + (i)*ldq, ldq, kb + (j)*ldk, ldk, scale,              \
          s + (i)*lds + (j), lds)
  SA_NEON_SCORE_WALK(m, n, TILE);
#undef TILE
}
