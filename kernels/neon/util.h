/*
 * Helpers shared by the NEON kernel files. All static inline: nothing here may
 * become an out-of-line symbol that some other object could pick up.
 *
 * Tails: the contract allows no read or write past the last named element (a
 * row may end right at a PROT_NONE page), and AArch64 has no masked loads, so
 * a tail of 1 to 3 floats is moved one lane at a time.
 */
#ifndef SA_NEON_UTIL_H
#define SA_NEON_UTIL_H

#include <arm_neon.h>
#include <stddef.h>

#define SA_NEON_INLINE static inline __attribute__((always_inline))

/* The score kernels' walk over an m x n tile: blocks of 4 rows, then single
 * rows; within each, blocks of 4 keys, then single keys. TILE(mr, nr, i, j)
 * is expanded for each block at row i and key j, mr and nr constants, so
 * the tile body's accumulators stay in registers. */
#define SA_NEON_SCORE_WALK(m, n, TILE)                                         \
  do {                                                                         \
    size_t i_ = 0, j_;                                                         \
    for (; i_ + 4 <= (m); i_ += 4) {                                           \
      for (j_ = 0; j_ + 4 <= (n); j_ += 4)                                     \
        TILE(4, 4, i_, j_);                                                    \
      for (; j_ < (n); j_++)                                                   \
        TILE(4, 1, i_, j_);                                                    \
    }                                                                          \
    for (; i_ < (m); i_++) {                                                   \
      for (j_ = 0; j_ + 4 <= (n); j_ += 4)                                     \
        TILE(1, 4, i_, j_);                                                    \
      for (; j_ < (n); j_++)                                                   \
        TILE(1, 1, i_, j_);                                                    \
    }                                                                          \
  } while (0)

/* The first r floats of p (0 < r < 4) in the low lanes; the others are pad. */
SA_NEON_INLINE float32x4_t sa_neon_load_partial(const float *p, size_t r,
                                                float pad) {
  float32x4_t v = vdupq_n_f32(pad);
  v = vld1q_lane_f32(p, v, 0);
  if (r > 1)
    v = vld1q_lane_f32(p + 1, v, 1);
  if (r > 2)
    v = vld1q_lane_f32(p + 2, v, 2);
  return v;
}

/* Writes only the low r lanes of v (0 < r < 4). */
SA_NEON_INLINE void sa_neon_store_partial(float *p, size_t r, float32x4_t v) {
  vst1q_lane_f32(p, v, 0);
  if (r > 1)
    vst1q_lane_f32(p + 1, v, 1);
  if (r > 2)
    vst1q_lane_f32(p + 2, v, 2);
}

/* All-ones in the lanes below r, for keeping pad lanes out of a reduction. */
SA_NEON_INLINE uint32x4_t sa_neon_lane_mask(size_t r) {
  static const uint32_t iota[4] = {0, 1, 2, 3};
  return vcltq_u32(vld1q_u32(iota), vdupq_n_u32((uint32_t)r));
}

/* Zeroes row[from, to): the masked part of a softmax row. */
SA_NEON_INLINE void sa_neon_zero(float *row, size_t from, size_t to) {
  const float32x4_t z = vdupq_n_f32(0.0f);
  size_t j = from;
  for (; j + 4 <= to; j += 4)
    vst1q_f32(row + j, z);
  for (; j < to; j++)
    row[j] = 0.0f;
}

#endif /* SA_NEON_UTIL_H */
