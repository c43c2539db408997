/*
 * The softmax and online-softmax row loops, written once for both NEON exp
 * variants. softmax_sleef.c and softmax_poly.c each call these with their own
 * exp; the helpers are always_inline, so the exp pointer is a constant at the
 * call site and each file gets its own fully inlined loop, not an indirect
 * call per vector.
 *
 * Semantics are the scalar oracle's (kernels/scalar/softmax*.c), including
 * its NaN behaviour: its max is `x > m ? x : m`, which never lets a NaN win,
 * and vmaxnmq (IEEE maxNum) does the same; the NaN then makes its own exp and
 * the row sum NaN, exactly as in the oracle.
 */
#ifndef SA_NEON_SOFTMAX_IMPL_H
#define SA_NEON_SOFTMAX_IMPL_H

#include <math.h>

#include "kernels/neon/util.h"

typedef float32x4_t (*sa_neon_exp_fn)(float32x4_t);

/* max(init, row[0..valid)), ignoring NaN in the row like the oracle. Four
 * accumulators because vmaxnm has a latency of several cycles. */
SA_NEON_INLINE float sa_neon_row_max(const float *row, size_t valid,
                                     float init) {
  float32x4_t m0 = vdupq_n_f32(init), m1 = m0, m2 = m0, m3 = m0;
  size_t j = 0;
  for (; j + 16 <= valid; j += 16) {
    m0 = vmaxnmq_f32(m0, vld1q_f32(row + j));
    m1 = vmaxnmq_f32(m1, vld1q_f32(row + j + 4));
    m2 = vmaxnmq_f32(m2, vld1q_f32(row + j + 8));
    m3 = vmaxnmq_f32(m3, vld1q_f32(row + j + 12));
  }
  for (; j + 4 <= valid; j += 4)
    m0 = vmaxnmq_f32(m0, vld1q_f32(row + j));
  m0 = vmaxnmq_f32(vmaxnmq_f32(m0, m1), vmaxnmq_f32(m2, m3));
  float mx = vmaxnmvq_f32(m0);
  for (; j < valid; j++)
    mx = row[j] > mx ? row[j] : mx;
  return mx;
}

/* row[j] <- exp(row[j] - mx) on [0, valid); returns their sum. The tail is
 * loaded lane by lane and its pad lanes are masked out of the sum. */
SA_NEON_INLINE float sa_neon_row_exp_sum(float *row, size_t valid, float mx,
                                         sa_neon_exp_fn exp4) {
  const float32x4_t vmx = vdupq_n_f32(mx);
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  size_t j = 0;
  for (; j + 16 <= valid; j += 16) {
    float32x4_t e0 = exp4(vsubq_f32(vld1q_f32(row + j), vmx));
    float32x4_t e1 = exp4(vsubq_f32(vld1q_f32(row + j + 4), vmx));
    float32x4_t e2 = exp4(vsubq_f32(vld1q_f32(row + j + 8), vmx));
    float32x4_t e3 = exp4(vsubq_f32(vld1q_f32(row + j + 12), vmx));
    vst1q_f32(row + j, e0);
    vst1q_f32(row + j + 4, e1);
    vst1q_f32(row + j + 8, e2);
    vst1q_f32(row + j + 12, e3);
    s0 = vaddq_f32(s0, e0);
    s1 = vaddq_f32(s1, e1);
    s2 = vaddq_f32(s2, e2);
    s3 = vaddq_f32(s3, e3);
  }
  for (; j + 4 <= valid; j += 4) {
    float32x4_t e = exp4(vsubq_f32(vld1q_f32(row + j), vmx));
    vst1q_f32(row + j, e);
    s0 = vaddq_f32(s0, e);
  }
  if (j < valid) {
    size_t r = valid - j;
    float32x4_t e =
        exp4(vsubq_f32(sa_neon_load_partial(row + j, r, 0.0f), vmx));
    sa_neon_store_partial(row + j, r, e);
    uint32x4_t keep = sa_neon_lane_mask(r);
    s1 = vaddq_f32(
        s1, vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(e), keep)));
  }
  return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

/* row[0..valid) *= inv. Multiplying by the reciprocal, as the oracle does. */
SA_NEON_INLINE void sa_neon_row_scale(float *row, size_t valid, float inv) {
  const float32x4_t v = vdupq_n_f32(inv);
  size_t j = 0;
  for (; j + 16 <= valid; j += 16) {
    vst1q_f32(row + j, vmulq_f32(vld1q_f32(row + j), v));
    vst1q_f32(row + j + 4, vmulq_f32(vld1q_f32(row + j + 4), v));
    vst1q_f32(row + j + 8, vmulq_f32(vld1q_f32(row + j + 8), v));
    vst1q_f32(row + j + 12, vmulq_f32(vld1q_f32(row + j + 12), v));
  }
  for (; j + 4 <= valid; j += 4)
    vst1q_f32(row + j, vmulq_f32(vld1q_f32(row + j), v));
  for (; j < valid; j++)
    row[j] *= inv;
}

SA_NEON_INLINE size_t sa_neon_valid(const size_t *len, size_t i, size_t n) {
  return len ? (len[i] < n ? len[i] : n) : n;
}

SA_NEON_INLINE void sa_neon_softmax(size_t m, size_t n, float *s, size_t lds,
                                    const size_t *len, sa_neon_exp_fn exp4) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    size_t valid = sa_neon_valid(len, i, n);
    if (valid == 0) {
      sa_neon_zero(row, 0, n);
      continue;
    }
    float mx = sa_neon_row_max(row + 1, valid - 1, row[0]);
    float sum = sa_neon_row_exp_sum(row, valid, mx, exp4);
    sa_neon_row_scale(row, valid, 1.0f / sum);
    sa_neon_zero(row, valid, n);
  }
}

SA_NEON_INLINE void sa_neon_softmax_online(size_t m, size_t n, float *s,
                                           size_t lds, const size_t *len,
                                           float *mx, float *l, float *alpha,
                                           sa_neon_exp_fn exp4) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    size_t valid = sa_neon_valid(len, i, n);
    /* maxNum would let the row replace a NaN carried in mx[i]; the oracle
     * keeps it. */
    float next = isnan(mx[i]) ? mx[i] : sa_neon_row_max(row, valid, mx[i]);
    if (next == -INFINITY) {
      /* Nothing valid seen yet: exp(-inf - -inf) would be NaN. The max
       * skipped NaN scores: l carries one on (rare path, so a plain loop). */
      for (size_t j = 0; j < valid; j++)
        if (row[j] != row[j])
          l[i] = NAN;
      sa_neon_zero(row, 0, n);
      alpha[i] = 1.0f;
      continue;
    }
    float sum = sa_neon_row_exp_sum(row, valid, next, exp4);
    sa_neon_zero(row, valid, n);
    float a = vgetq_lane_f32(exp4(vdupq_n_f32(mx[i] - next)), 0);
    alpha[i] = a;
    l[i] = l[i] * a + sum;
    mx[i] = next;
  }
}

#endif /* SA_NEON_SOFTMAX_IMPL_H */
