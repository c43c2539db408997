/*
 * softmax, softmax_online and softmax_online2 (base 2), NEON with SLEEF's
 * Advanced SIMD expf (Sleef_expf4_u10advsimd, within 1 ULP): the "neon" set.
 *
 * softmax: per row, in place: valid prefix -> exp(x - rowmax) / rowsum, the
 * masked rest -> 0, a row with nothing valid -> all zeros.
 * softmax_online: one FlashAttention step; per row new = max(mx, rowmax),
 * s <- exp(s - new), alpha = exp(mx - new), l = l * alpha + rowsum, mx = new;
 * a row still at -inf gets s = 0, alpha = 1, l unchanged.
 *
 * The row loops (16 floats per step with four independent sum and max
 * chains, lane-by-lane tails with no over-read) are in softmax_impl.h, shared
 * with the polynomial variant; only the exp differs. SLEEF's ISA-specific
 * entry point is called directly rather than through its dispatcher, so this
 * file decides which code runs (the registry already checked the CPU).
 */
#include <sleef.h>

#include "kernels/kernels.h"
#include "kernels/neon/softmax_impl.h"

static float32x4_t exp4_sleef(float32x4_t x) {
  return Sleef_expf4_u10advsimd(x);
}
static float32x4_t exp2_4_sleef(float32x4_t x) {
  return Sleef_exp2f4_u10advsimd(x);
}

void sa_softmax__neon_sleef(size_t m, size_t n, float *s, size_t lds,
                            const size_t *len) {
  sa_neon_softmax(m, n, s, lds, len, exp4_sleef);
}

void sa_softmax_online__neon_sleef(size_t m, size_t n, float *s, size_t lds,
                                   const size_t *len, float *mx, float *l,
                                   float *alpha) {
  sa_neon_softmax_online(m, n, s, lds, len, mx, l, alpha, exp4_sleef);
}

void sa_softmax_online2__neon_sleef(size_t m, size_t n, float *s, size_t lds,
                                    const size_t *len, float *mx, float *l,
                                    float *alpha) {
  sa_neon_softmax_online(m, n, s, lds, len, mx, l, alpha, exp2_4_sleef);
}
