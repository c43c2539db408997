/*
 * FMA-throughput probe, AArch64 Advanced SIMD: 128-bit fmla on sixteen
 * independent accumulators. 8 flops per FMA. Compiled only for aarch64,
 * called only when the CPU runs the neon set (dispatch/registry.c).
 */
#include <arm_neon.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/unroll.h"

uint64_t sa_peak_fma__neon(uint64_t reps, float *sink) {
  const float32x4_t m = vdupq_n_f32(0.999999f), c = vdupq_n_f32(1e-6f);
  float32x4_t a[16];
  for (int i = 0; i < 16; i++)
    a[i] = vdupq_n_f32(0.1f * (float)(i + 1));
  float32x4_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5],
              a6 = a[6], a7 = a[7], a8 = a[8], a9 = a[9], a10 = a[10],
              a11 = a[11], a12 = a[12], a13 = a[13], a14 = a[14], a15 = a[15];
  for (uint64_t r = 0; r < reps; r++) {
#define STEP(x) x = vfmaq_f32(c, x, m)
    SA_STEP_A0_A15(STEP);
#undef STEP
  }
  float32x4_t s = vaddq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)),
                            vaddq_f32(vaddq_f32(a4, a5), vaddq_f32(a6, a7)));
  s = vaddq_f32(s,
                vaddq_f32(vaddq_f32(vaddq_f32(a8, a9), vaddq_f32(a10, a11)),
                          vaddq_f32(vaddq_f32(a12, a13), vaddq_f32(a14, a15))));
  *sink = vaddvq_f32(s);
  return reps * 16 * 8;
}
