/*
 * exp for 4 floats without a library call: the "poly" variant of the NEON
 * softmax kernels.
 *
 * Accuracy against double-precision exp, measured with a throw-away program
 * under qemu-aarch64 (IEEE-exact softfloat, fused multiply-add as on
 * hardware): max 1.251 ULP (at x = 15.6335), over every float in [0, 88];
 * max 1.235 ULP over every 64th float in [-87.3365, 0].
 * Results below FLT_MIN (x < -87.33654, about ln FLT_MIN) are flushed to 0, so
 * on [-88, -87.33654) the error is below 1.2e-38 absolute; -INFINITY gives 0
 * and NaN stays NaN. Softmax only ever takes exp of x - max <= 0; above
 * 88.3763 the argument is clamped there, so the result saturates at about
 * 2.4e38 instead of reaching +inf.
 *
 * exp2 (sa_neon_exp2_poly, 0.10), the same way: max 1.2495 ULP (at x =
 * -0.3786) over every 64th float in [-126, 0]; below -126 flushed to 0.
 *
 * Method: exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 with
 * |r| <= ln2/2. The reduction is Cody-Waite: ln 2 split into a 9-bit head
 * (n * head is exact for |n| <= 2^15) and a tail, each step a fused
 * multiply-add, so r keeps its low bits. exp(r) is 1 + r + r^2 P(r) with P of
 * degree 5 (the Cephes expf coefficients, fitted on [-ln2/2, ln2/2]).
 * 2^n is built directly in the exponent field: (n + 127) << 23, valid for
 * n in [-126, 127], which the clamps above guarantee.
 */
#ifndef SA_NEON_EXP_POLY_H
#define SA_NEON_EXP_POLY_H

#include "kernels/neon/util.h"

/* 2^n exp(r) for |r| <= ln2/2 (and a little more), n in [-126, 128]
 * (128 gives +inf bits, so y * inf), lanes of `under` flushed to 0. */
SA_NEON_INLINE float32x4_t sa_neon_exp_poly_r(float32x4_t r, int32x4_t n,
                                              uint32x4_t under) {
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  float32x4_t r2 = vmulq_f32(r, r);
  float32x4_t y = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, r2);

  int32x4_t bits = vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23);
  y = vmulq_f32(y, vreinterpretq_f32_s32(bits));
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), under));
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
  return sa_neon_exp_poly_r(r, n, under);
}

/* 2^x with exp's flush and saturation (x < -126: 0; above 127 clamped there):
 * n = round(x), and x - n is exact, so one rounding (r = (x - n) ln2)
 * replaces the reduction's multiply and two FMAs. */
SA_NEON_INLINE float32x4_t sa_neon_exp2_poly(float32x4_t x) {
  const float32x4_t hi = vdupq_n_f32(127.0f);
  const float32x4_t lo = vdupq_n_f32(-126.0f);
  uint32x4_t under = vcltq_f32(x, lo);
  float32x4_t xc = vmaxq_f32(vminq_f32(x, hi), lo);
  int32x4_t n = vcvtnq_s32_f32(xc);
  float32x4_t r = vmulq_f32(vsubq_f32(xc, vcvtq_f32_s32(n)),
                            vdupq_n_f32(0.693147180559945309f));
  return sa_neon_exp_poly_r(r, n, under);
}

#endif /* SA_NEON_EXP_POLY_H */
