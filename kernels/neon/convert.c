/*
 * Conversions, NEON: n values between f32 and f16 / bf16 / q8_0 (q8_0: n a
 * multiple of 32), bit for bit those of dtype.h for every input, whatever the
 * FP environment. src and dst do not overlap; nothing past n values (n / 32
 * blocks) is read or written: the last n % 8 values go through dtype.h's
 * per-value functions.
 *
 * Why each direction is done the way it is:
 * - f16 -> f32: FCVTL / FCVTL2 (widen.h). Exact, so the rounding mode cannot
 *   matter; half-precision inputs of a conversion ignore FZ16, and it quietens
 *   a signalling NaN keeping sign and payload, as dtype.h does. (It does
 *   follow FPCR.AHP and FPCR.DN, which nothing running C code sets; the
 *   integer alternative would cost ~15 instructions per 4 values for them.)
 * - f32 -> f16: integer arithmetic, dtype.h's algorithm lane-wise. FCVTN
 *   would round by FPCR.RMode (any directed mode set by fesetround changes
 *   it), so it cannot give "nearest even whatever the FP environment"; the
 *   integer form costs ~20 instructions per 4 values, which a conversion
 *   that streams memory (kv_append, narrow O) hides. Denormal results use a
 *   per-lane variable shift (USHL) with the same round-half-even add as
 *   normal ones; the shift is clamped to 31 so values below 2^-25 (and f32
 *   denormals and zeros) shift out to 0 instead of overflowing.
 * - bf16 <-> f32: integer by nature (the top 16 bits); quietening and the
 *   round-half-even add are done lane-wise.
 * - q8_0 -> f32: q * scale is exact (widen.h), so FMUL is environment-free.
 * - f32 -> q8_0: ggml's reference quantiser is defined by f32 arithmetic
 *   (amax / 127, 1 / d, x * id, roundf), which dtype.h also uses: the same
 *   IEEE operations here (FMAX over |x|, scalar divides, FMUL, FCVTAS = round
 *   half away from zero then convert) give its bits in any environment the
 *   oracle itself runs in. Its running max is order-dependent when a block
 *   holds a NaN (a NaN resets it), so such a block goes to dtype.h.
 */
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/neon/widen.h"

void sa_f16_to_f32__neon(size_t n, const void *src, void *dst) {
  const uint16_t *s = src;
  float *d = dst;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    float32x4_t lo, hi;
    sa_neon_widen8(SA_F16, s + i, &lo, &hi);
    vst1q_f32(d + i, lo);
    vst1q_f32(d + i + 4, hi);
  }
  for (; i < n; i++)
    d[i] = sa_f16_to_f32(s[i]);
}

void sa_bf16_to_f32__neon(size_t n, const void *src, void *dst) {
  const uint16_t *s = src;
  float *d = dst;
  const uint16x8_t abs_mask = vdupq_n_u16(0x7fff), inf = vdupq_n_u16(0x7f80);
  const uint16x8_t quiet = vdupq_n_u16(0x0040);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint16x8_t h = vld1q_u16(s + i);
    /* a NaN gets its quiet bit, still in 16-bit lanes: 8 at a time */
    uint16x8_t nan = vcgtq_u16(vandq_u16(h, abs_mask), inf);
    h = vorrq_u16(h, vandq_u16(nan, quiet));
    vst1q_f32(d + i, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)));
    vst1q_f32(d + i + 4, vreinterpretq_f32_u32(vshll_high_n_u16(h, 16)));
  }
  for (; i < n; i++)
    d[i] = sa_bf16_to_f32(s[i]);
}

void sa_q8_0_to_f32__neon(size_t n, const void *src, void *dst) {
  const sa_block_q8_0 *s = src;
  float *d = dst;
  for (size_t b = 0; b < n / SA_QK8_0; b++, d += SA_QK8_0) {
    const float32x4_t sc = sa_neon_q8_scale(s + b);
    float32x4_t v[8];
    sa_neon_dequant16(s[b].q, sc, v);
    sa_neon_dequant16(s[b].q + 16, sc, v + 4);
    for (int t = 0; t < 8; t++)
      vst1q_f32(d + 4 * t, v[t]);
  }
}

/* Four f32 bit patterns -> f16 bits, nearest even, as sa_f32_to_f16. */
SA_NEON_INLINE uint16x4_t f32_to_f16x4(uint32x4_t u) {
  const uint32x4_t one = vdupq_n_u32(1);
  const uint32x4_t abs = vandq_u32(u, vdupq_n_u32(0x7fffffffu));
  const uint32x4_t sign = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(0x8000u));

  /* normal: rebias, round the 13 dropped bits (a carry into the exponent is
   * the right answer) */
  uint32x4_t r = vsubq_u32(abs, vdupq_n_u32((127u - 15u) << 23));
  r = vaddq_u32(
      r, vaddq_u32(vdupq_n_u32(0x0fffu), vandq_u32(vshrq_n_u32(r, 13), one)));
  const uint32x4_t nrm = vshrq_n_u32(r, 13);

  /* denormal: the significand with its implicit bit, shifted right by
   * 126 - exponent (14..24 where it matters), rounded half to even */
  const int32x4_t e = vreinterpretq_s32_u32(vshrq_n_u32(abs, 23));
  const int32x4_t sh =
      vminq_s32(vsubq_s32(vdupq_n_s32(126), e), vdupq_n_s32(31));
  const int32x4_t nsh = vnegq_s32(sh);
  const uint32x4_t man =
      vorrq_u32(vandq_u32(abs, vdupq_n_u32(0x7fffffu)), vdupq_n_u32(0x800000u));
  const uint32x4_t odd = vandq_u32(vshlq_u32(man, nsh), one);
  const uint32x4_t half_m1 =
      vsubq_u32(vshlq_u32(one, vsubq_s32(sh, vdupq_n_s32(1))), one);
  const uint32x4_t den =
      vshlq_u32(vaddq_u32(vaddq_u32(man, half_m1), odd), nsh);

  const uint32x4_t nan_bits =
      vorrq_u32(vdupq_n_u32(0x7e00u),
                vandq_u32(vshrq_n_u32(abs, 13), vdupq_n_u32(0x3ffu)));
  uint32x4_t res =
      vbslq_u32(vcltq_u32(abs, vdupq_n_u32(0x38800000u)), den, nrm);
  res = vbslq_u32(vcgeq_u32(abs, vdupq_n_u32(0x477ff000u)),
                  vdupq_n_u32(0x7c00u), res);
  res = vbslq_u32(vcgtq_u32(abs, vdupq_n_u32(0x7f800000u)), nan_bits, res);
  return vmovn_u32(vorrq_u32(res, sign));
}

void sa_f32_to_f16__neon(size_t n, const void *src, void *dst) {
  const float *s = src;
  uint16_t *d = dst;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint16x4_t lo = f32_to_f16x4(vreinterpretq_u32_f32(vld1q_f32(s + i)));
    uint16x4_t hi = f32_to_f16x4(vreinterpretq_u32_f32(vld1q_f32(s + i + 4)));
    vst1q_u16(d + i, vcombine_u16(lo, hi));
  }
  for (; i < n; i++)
    d[i] = sa_f32_to_f16(s[i]);
}

/* Four f32 -> bf16, nearest even; a NaN keeps its top bits and gets quiet. */
SA_NEON_INLINE uint16x4_t f32_to_bf16x4(float32x4_t x) {
  const uint32x4_t u = vreinterpretq_u32_f32(x);
  const uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffffu)),
                                   vdupq_n_u32(0x7f800000u));
  uint32x4_t r = vaddq_u32(u, vdupq_n_u32(0x7fffu));
  r = vaddq_u32(r, vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1)));
  r = vbslq_u32(nan, vorrq_u32(u, vdupq_n_u32(0x00400000u)), r);
  return vshrn_n_u32(r, 16);
}

void sa_f32_to_bf16__neon(size_t n, const void *src, void *dst) {
  const float *s = src;
  uint16_t *d = dst;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    vst1q_u16(d + i, vcombine_u16(f32_to_bf16x4(vld1q_f32(s + i)),
                                  f32_to_bf16x4(vld1q_f32(s + i + 4))));
  for (; i < n; i++)
    d[i] = sa_f32_to_bf16(s[i]);
}

void sa_f32_to_q8_0__neon(size_t n, const void *src, void *dst) {
  const float *s = src;
  sa_block_q8_0 *d = dst;
  const uint32x4_t inf = vdupq_n_u32(0x7f800000u);
  for (size_t b = 0; b < n / SA_QK8_0; b++, s += SA_QK8_0) {
    float32x4_t x[8], a[8];
    uint32x4_t nan = vdupq_n_u32(0);
    for (int t = 0; t < 8; t++) {
      x[t] = vld1q_f32(s + 4 * t);
      a[t] = vabsq_f32(x[t]);
      nan = vorrq_u32(nan, vcgtq_u32(vreinterpretq_u32_f32(a[t]), inf));
    }
    if (vmaxvq_u32(nan)) {
      sa_quantize_q8_0(s, d + b);
      continue;
    }
    float32x4_t m =
        vmaxq_f32(vmaxq_f32(vmaxq_f32(a[0], a[1]), vmaxq_f32(a[2], a[3])),
                  vmaxq_f32(vmaxq_f32(a[4], a[5]), vmaxq_f32(a[6], a[7])));
    const float amax = vmaxvq_f32(m);
    const float scale = amax / 127.0f;
    const float id = scale != 0.0f ? 1.0f / scale : 0.0f;
    const float32x4_t vid = vdupq_n_f32(id);
    int16x4_t h[8];
    for (int t = 0; t < 8; t++)
      h[t] = vmovn_s32(vcvtaq_s32_f32(vmulq_f32(x[t], vid)));
    int8x16_t q0 = vcombine_s8(vmovn_s16(vcombine_s16(h[0], h[1])),
                               vmovn_s16(vcombine_s16(h[2], h[3])));
    int8x16_t q1 = vcombine_s8(vmovn_s16(vcombine_s16(h[4], h[5])),
                               vmovn_s16(vcombine_s16(h[6], h[7])));
    const uint16_t sbits = sa_f32_to_f16(scale);
    memcpy(&d[b].scale, &sbits, sizeof sbits);
    vst1q_s8(d[b].q, q0);
    vst1q_s8(d[b].q + 16, q1);
  }
}
