/*
 * softmax, softmax_online and softmax_online2 (base 2), AVX2, exp from SLEEF's
 * AVX2 entry point (u10: within 1 ULP). Called by name rather than through
 * SLEEF's dispatcher, whose CPUID check ignores whether the OS saves YMM state;
 * ours was made in dispatch/ before this set could be chosen. Row loops:
 * softmax_impl.h.
 */
#include <sleef.h>

#include "kernels/avx2/softmax_impl.h"
#include "kernels/kernels.h"

/* SLEEF declares its entry points const (a GNU attribute that clang counts
 * as part of the function type): a plain function to pass by pointer. */
static __m256 exp8_sleef(__m256 x) { return Sleef_expf8_u10avx2(x); }
static __m256 exp2_8_sleef(__m256 x) { return Sleef_exp2f8_u10avx2(x); }

void sa_softmax__avx2_sleef(size_t m, size_t n, float *s, size_t lds,
                            const size_t *len) {
  sa_softmax8_rows(m, n, s, lds, len, exp8_sleef);
}

void sa_softmax_online__avx2_sleef(size_t m, size_t n, float *s, size_t lds,
                                   const size_t *len, float *mx, float *l,
                                   float *alpha) {
  sa_softmax_online8_rows(m, n, s, lds, len, mx, l, alpha, exp8_sleef);
}

void sa_softmax_online2__avx2_sleef(size_t m, size_t n, float *s, size_t lds,
                                    const size_t *len, float *mx, float *l,
                                    float *alpha) {
  sa_softmax_online8_rows(m, n, s, lds, len, mx, l, alpha, exp2_8_sleef);
}
