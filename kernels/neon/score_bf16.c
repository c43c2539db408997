/*
 * score, NEON + BF16 (FEAT_BF16, the only file built with +bf16): Q and K
 * both bf16 (ldq, ldk in elements), s[i][j] = scale * sum_p q[i][p] *
 * k[j][p] in f32. Registered only in the "neon-bf16" set, which requires
 * SA_CPU_BF16 (HWCAP2_BF16), so it never runs on a CPU without BFDOT.
 *
 * Numerics: BFDOT (vbfdotq_f32) adds to each f32 lane the dot product of one
 * bf16 pair from each operand. Without FEAT_EBF16's FPCR.EBF (which nothing
 * here sets) Arm defines it independently of FPCR: the two products are exact
 * (8-bit x 8-bit significands), the pair sum and the accumulation round to
 * odd, denormal inputs and results are flushed to zero and a NaN result is the
 * default NaN. So bf16 denormals count as zero, as the score_bf16 contract
 * (simdattn.h) allows, and each addition errs by under 1 ulp instead of half
 * of one; with half as many accumulation steps as the widening kernel, the
 * error stays within the same order, d * eps * sum|qk|.
 *
 * Loop: score.c's tile, 4 query rows x 4 keys, 16 accumulators reduced once
 * per tile by pairwise adds. Per step of 8 along d it loads 4 Q and 4 K
 * vectors (8 bf16 each) and issues 16 BFDOTs: twice the elements per load
 * and per instruction of the f32 kernel, and no widening at all. The tail
 * (d % 8, including an odd d) is loaded lane by lane into zeroed vectors, so
 * the last pair of an odd d has a zero second element (0 * 0 adds +0, which
 * leaves a sum unchanged even under round to odd). Nothing outside q[i][0..d),
 * k[j][0..d) and s[i][0..n) is touched.
 */
#include "kernels/kernels.h"
#include "kernels/neon/util.h"

/* The first r (0 < r < 8) bf16 of x in the low lanes, zero above. */
SA_NEON_INLINE bfloat16x8_t load_partial8(const uint16_t *x, size_t r) {
  uint16x8_t h = vdupq_n_u16(0);
  h = vld1q_lane_u16(x, h, 0);
  if (r > 1)
    h = vld1q_lane_u16(x + 1, h, 1);
  if (r > 2)
    h = vld1q_lane_u16(x + 2, h, 2);
  if (r > 3)
    h = vld1q_lane_u16(x + 3, h, 3);
  if (r > 4)
    h = vld1q_lane_u16(x + 4, h, 4);
  if (r > 5)
    h = vld1q_lane_u16(x + 5, h, 5);
  if (r > 6)
    h = vld1q_lane_u16(x + 6, h, 6);
  return vreinterpretq_bf16_u16(h);
}

/* MR rows x NR keys, both constants at every call site. */
SA_NEON_INLINE void tile_bfdot(size_t MR, size_t NR, size_t d,
                               const uint16_t *q, size_t ldq, const uint16_t *k,
                               size_t ldk, float scale, float *s, size_t lds) {
  float32x4_t acc[4][4];
  for (size_t r = 0; r < MR; r++)
    for (size_t c = 0; c < NR; c++)
      acc[r][c] = vdupq_n_f32(0.0f);

  size_t p = 0;
  for (; p + 8 <= d; p += 8) {
    bfloat16x8_t qv[4], kv[4];
    for (size_t r = 0; r < MR; r++)
      qv[r] = vreinterpretq_bf16_u16(vld1q_u16(q + r * ldq + p));
    for (size_t c = 0; c < NR; c++)
      kv[c] = vreinterpretq_bf16_u16(vld1q_u16(k + c * ldk + p));
    for (size_t r = 0; r < MR; r++)
      for (size_t c = 0; c < NR; c++)
        acc[r][c] = vbfdotq_f32(acc[r][c], qv[r], kv[c]);
  }
  if (p < d) {
    size_t rem = d - p;
    bfloat16x8_t qv[4], kv[4];
    for (size_t r = 0; r < MR; r++)
      qv[r] = load_partial8(q + r * ldq + p, rem);
    for (size_t c = 0; c < NR; c++)
      kv[c] = load_partial8(k + c * ldk + p, rem);
    for (size_t r = 0; r < MR; r++)
      for (size_t c = 0; c < NR; c++)
        acc[r][c] = vbfdotq_f32(acc[r][c], qv[r], kv[c]);
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

void sa_score_bf16_dp__neon(size_t m, size_t n, size_t d, const void *q,
                            size_t ldq, const void *k, size_t ldk, float scale,
                            float *s, size_t lds) {
  const uint16_t *qh = q, *kh = k;
#define TILE(mr, nr, i, j)                                                     \
  tile_bfdot(mr, nr, d, qh + (i)*ldq, ldq, kh + (j)*ldk, ldk, scale,           \
             s + (i)*lds + (j), lds)
  SA_NEON_SCORE_WALK(m, n, TILE);
#undef TILE
}
