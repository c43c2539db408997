/*
 * softmax, softmax_online and softmax_online2 (base 2), NEON with the inline
 * polynomial exp of exp_poly.h (within 1.26 ULP, no library call, no table):
 * the "neon-polyexp" set.
 *
 * softmax: per row, in place: valid prefix -> exp(x - rowmax) / rowsum, the
 * masked rest -> 0, a row with nothing valid -> all zeros.
 * softmax_online: one FlashAttention step; per row new = max(mx, rowmax),
 * s <- exp(s - new), alpha = exp(mx - new), l = l * alpha + rowsum, mx = new;
 * a row still at -inf gets s = 0, alpha = 1, l unchanged.
 *
 * The row loops are shared with the SLEEF variant (softmax_impl.h). Inlining
 * the polynomial lets the compiler interleave four exp evaluations per step,
 * which a call into libsleef cannot.
 */
#include "kernels/kernels.h"
#include "kernels/neon/exp_poly.h"
#include "kernels/neon/softmax_impl.h"

static float32x4_t exp4_poly(float32x4_t x) { return sa_neon_exp_poly(x); }
static float32x4_t exp2_4_poly(float32x4_t x) { return sa_neon_exp2_poly(x); }

void sa_softmax__neon_poly(size_t m, size_t n, float *s, size_t lds,
                           const size_t *len) {
  sa_neon_softmax(m, n, s, lds, len, exp4_poly);
}

void sa_softmax_online__neon_poly(size_t m, size_t n, float *s, size_t lds,
                                  const size_t *len, float *mx, float *l,
                                  float *alpha) {
  sa_neon_softmax_online(m, n, s, lds, len, mx, l, alpha, exp4_poly);
}

void sa_softmax_online2__neon_poly(size_t m, size_t n, float *s, size_t lds,
                                   const size_t *len, float *mx, float *l,
                                   float *alpha) {
  sa_neon_softmax_online(m, n, s, lds, len, mx, l, alpha, exp2_4_poly);
}
