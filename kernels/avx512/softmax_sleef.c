/*
 * softmax, softmax_online and softmax_online2 (base 2), AVX-512, exp from
 * SLEEF's AVX-512F entry point (u10: within 1 ULP). Called by name rather than
 * through SLEEF's dispatcher, whose CPUID check ignores whether the OS saves
 * ZMM state; ours was made in dispatch/ before this set could be chosen. Row
 * loops: softmax_impl.h.
 */
#include <sleef.h>

#include "kernels/avx512/softmax_impl.h"
#include "kernels/kernels.h"

/* SLEEF declares its entry points const (a GNU attribute that clang counts
 * as part of the function type): a plain function to pass by pointer. */
static __m512 exp16_sleef(__m512 x) { return Sleef_expf16_u10avx512f(x); }
static __m512 exp2_16_sleef(__m512 x) { return Sleef_exp2f16_u10avx512f(x); }

void sa_softmax__avx512_sleef(size_t m, size_t n, float *s, size_t lds,
                              const size_t *len) {
  sa_softmax16_rows(m, n, s, lds, len, exp16_sleef);
}

void sa_softmax_online__avx512_sleef(size_t m, size_t n, float *s, size_t lds,
                                     const size_t *len, float *mx, float *l,
                                     float *alpha) {
  sa_softmax_online16_rows(m, n, s, lds, len, mx, l, alpha, exp16_sleef);
}

void sa_softmax_online2__avx512_sleef(size_t m, size_t n, float *s, size_t lds,
                                      const size_t *len, float *mx, float *l,
                                      float *alpha) {
  sa_softmax_online16_rows(m, n, s, lds, len, mx, l, alpha, exp2_16_sleef);
}
