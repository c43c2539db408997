/*
 * Widening narrow K/V values to fp32 in NEON registers, shared by the narrow
 * score, wsum and conversion files. All static inline (see util.h).
 *
 * Every widening is exact, so a kernel that widens and then runs the f32
 * kernel's FMAs computes with exactly the values the scalar oracle sees:
 * - f16: FCVTL / FCVTL2, base AArch64 (no +fp16 needed). A widening
 *   conversion never rounds, and half-precision inputs of a conversion ignore
 *   FPCR.FZ16, so neither the rounding mode nor flush-to-zero can change it.
 *   It does follow FPCR.AHP (alternative half precision) and FPCR.DN (NaN
 *   payloads); no C code or Linux ABI sets those, and the AAPCS64 requires
 *   them at their defaults across calls.
 * - bf16: the bits are the top half of an f32, so one shift-left-long by 16
 *   (USHLL); the kernels skip quietening a signalling NaN, which arithmetic
 *   quietens anyway (convert.c does quieten).
 * - q8_0: int8 -> int16 -> int32 (SXTL), SCVTF (exact: |q| <= 128), times the
 *   block's scale widened by FCVTL. q * scale has at most 8 + 11 significant
 *   bits and, the scale being at least 2^-24, is a normal f32: exact under
 *   any rounding mode or FZ.
 *
 * Loads never reach past the elements asked for: a tail of 1-3 values is read
 * one lane at a time into a zeroed vector (zero pad adds nothing to a dot
 * product or a weighted sum).
 */
#ifndef SA_NEON_WIDEN_H
#define SA_NEON_WIDEN_H

#include <stdint.h>

#include "kernels/neon/util.h"
#include "simdattn.h"

/* The bf16/f16 bit patterns of a 4-lane vector in u16 lanes -> f32. */
SA_NEON_INLINE float32x4_t sa_neon_f16x4_to_f32(uint16x4_t h) {
  return vcvt_f32_f16(vreinterpret_f16_u16(h));
}
SA_NEON_INLINE float32x4_t sa_neon_bf16x4_to_f32(uint16x4_t h) {
  return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

/* 8 values of a 16-bit type t (SA_F16 or SA_BF16; a constant at every call
 * site, so the branch folds) from one 16-byte load. */
SA_NEON_INLINE void sa_neon_widen8(sa_dtype t, const uint16_t *x,
                                   float32x4_t *lo, float32x4_t *hi) {
  uint16x8_t h = vld1q_u16(x);
  if (t == SA_F16) {
    float16x8_t f = vreinterpretq_f16_u16(h);
    *lo = vcvt_f32_f16(vget_low_f16(f));
    *hi = vcvt_high_f32_f16(f);
  } else {
    *lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
    *hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
  }
}

/* 4 values from one 8-byte load. */
SA_NEON_INLINE float32x4_t sa_neon_widen4(sa_dtype t, const uint16_t *x) {
  uint16x4_t h = vld1_u16(x);
  return t == SA_F16 ? sa_neon_f16x4_to_f32(h) : sa_neon_bf16x4_to_f32(h);
}

/* The first r values (0 < r < 4), zero in the other lanes. */
SA_NEON_INLINE float32x4_t sa_neon_widen_partial(sa_dtype t, const uint16_t *x,
                                                 size_t r) {
  uint16x4_t h = vdup_n_u16(0);
  h = vld1_lane_u16(x, h, 0);
  if (r > 1)
    h = vld1_lane_u16(x + 1, h, 1);
  if (r > 2)
    h = vld1_lane_u16(x + 2, h, 2);
  return t == SA_F16 ? sa_neon_f16x4_to_f32(h) : sa_neon_bf16x4_to_f32(h);
}

/* A q8_0 block's scale in all four lanes (LD1R + FCVTL). */
SA_NEON_INLINE float32x4_t sa_neon_q8_scale(const sa_block_q8_0 *b) {
  return sa_neon_f16x4_to_f32(vld1_dup_u16(&b->scale));
}

/* 8 int8 values times the splatted scale sc: lanes 0-3 and 4-7. */
SA_NEON_INLINE void sa_neon_dequant8(int8x8_t q, float32x4_t sc,
                                     float32x4_t *lo, float32x4_t *hi) {
  int16x8_t w = vmovl_s8(q);
  *lo = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), sc);
  *hi = vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(w)), sc);
}

/* 16 int8 values times sc into dst[0..3]. */
SA_NEON_INLINE void sa_neon_dequant16(const int8_t *q, float32x4_t sc,
                                      float32x4_t *dst) {
  int8x16_t x = vld1q_s8(q);
  sa_neon_dequant8(vget_low_s8(x), sc, &dst[0], &dst[1]);
  int16x8_t w = vmovl_high_s8(x);
  dst[2] = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(w))), sc);
  dst[3] = vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(w)), sc);
}

#endif /* SA_NEON_WIDEN_H */
