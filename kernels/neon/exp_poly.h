/*
 * exp for 4 floats without a library call: the "poly" variant of the NEON
 * softmax kernels.
 *
 * Accuracy against double precision, measured with a throw-away program
 * under qemu-aarch64 (IEEE-exact softfloat, fused multiply-add as on
 * hardware) on every float: exp max 0.9013 ULP over [-87.34, 88.38], exp2
 * max 0.7996 ULP over [-126, 127], the x86 polynomials' figures (the same
 * coefficients and operations; 0.10's polynomial: 1.251 and 1.2495).
 * Results below FLT_MIN (x < -87.33654 for exp, x < -126 for exp2) are
 * flushed to 0, so there the error is below 1.2e-38 absolute; -INFINITY
 * gives 0 and NaN stays NaN. Softmax only ever takes exp of x - max <= 0;
 * above 88.3763 (exp) or 127 (exp2) the argument is clamped there, so the
 * result saturates at about 2.4e38 / 1.7e38 instead of reaching +inf.
 *
 * Method: exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 with
 * |r| <= ln2/2, the reduction Cody-Waite: ln 2 split into a 9-bit head (n *
 * head is exact for |n| <= 2^15) and a tail, each step a fused multiply-add,
 * so r keeps its low bits. exp2: n = round(x), f = x - n, exact. Then the
 * polynomials of kernels/exp_coeffs.h; 2^n is built directly in the
 * exponent field: (n + 127) << 23, valid for n in [-126, 127], which the
 * clamps above guarantee.
 */
#ifndef SA_NEON_EXP_POLY_H
#define SA_NEON_EXP_POLY_H

#include "kernels/exp_coeffs.h"
#include "kernels/neon/util.h"

/* 2^n y for y near 1, n in [-126, 128] (128 gives +inf bits, so y * inf),
 * lanes of `under` flushed to 0. */
SA_NEON_INLINE float32x4_t sa_neon_exp_scale(float32x4_t y, int32x4_t n,
                                             uint32x4_t under) {
  int32x4_t bits = vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23);
  y = vmulq_f32(y, vreinterpretq_f32_s32(bits));
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), under));
}

/* 1 + t (c1 + t (c2 + ... + t c6)): Horner, its last step one fma at the
 * result's scale (exp_coeffs.h's SERIES lists give c6 .. c1). */
SA_NEON_INLINE float32x4_t sa_neon_exp_series(float32x4_t t, float c6, float c5,
                                              float c4, float c3, float c2,
                                              float c1) {
  float32x4_t u = vdupq_n_f32(c6);
  u = vfmaq_f32(vdupq_n_f32(c5), u, t);
  u = vfmaq_f32(vdupq_n_f32(c4), u, t);
  u = vfmaq_f32(vdupq_n_f32(c3), u, t);
  u = vfmaq_f32(vdupq_n_f32(c2), u, t);
  u = vfmaq_f32(vdupq_n_f32(c1), u, t);
  return vfmaq_f32(vdupq_n_f32(1.0f), u, t);
}

SA_NEON_INLINE float32x4_t sa_neon_exp_poly(float32x4_t x) {
  const float32x4_t log2e = vdupq_n_f32(1.44269504088896341f);
  const float32x4_t ln2_hi = vdupq_n_f32(0.693359375f);
  const float32x4_t ln2_lo = vdupq_n_f32(-2.12194440e-4f);
  const float32x4_t hi = vdupq_n_f32(88.3762626647949f);
  const float32x4_t lo = vdupq_n_f32(-87.3365447505531f);

  /* Below lo the result would be subnormal: 0, and so is exp(-inf). */
  uint32x4_t under = vcltq_f32(x, lo);
  /* vminq keeps NaN, so NaN flows through to the result. */
  float32x4_t xc = vmaxq_f32(vminq_f32(x, hi), lo);

  int32x4_t n = vcvtnq_s32_f32(vmulq_f32(xc, log2e));
  float32x4_t nf = vcvtq_f32_s32(n);
  float32x4_t r = vfmsq_f32(xc, nf, ln2_hi);
  r = vfmsq_f32(r, nf, ln2_lo);
  return sa_neon_exp_scale(sa_neon_exp_series(r, SA_EXP_SERIES), n, under);
}

/* 2^x with exp's flush and saturation (x < -126: 0; above 127 clamped
 * there): n = round(x), and f = x - n is exact, so the polynomial runs on
 * f itself: no reduction to round. */
SA_NEON_INLINE float32x4_t sa_neon_exp2_poly(float32x4_t x) {
  const float32x4_t hi = vdupq_n_f32(127.0f);
  const float32x4_t lo = vdupq_n_f32(-126.0f);
  uint32x4_t under = vcltq_f32(x, lo);
  float32x4_t xc = vmaxq_f32(vminq_f32(x, hi), lo);
  int32x4_t n = vcvtnq_s32_f32(xc);
  float32x4_t f = vsubq_f32(xc, vcvtq_f32_s32(n));
  return sa_neon_exp_scale(sa_neon_exp_series(f, SA_EXP2_SERIES), n, under);
}

#endif /* SA_NEON_EXP_POLY_H */
