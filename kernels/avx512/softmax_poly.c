/*
 * softmax, softmax_online and softmax_online2 (base 2), AVX-512, with the
 * inline polynomial exp of exp_poly.h (accuracy measured there). Row loops:
 * softmax_impl.h.
 */
#include "kernels/avx512/exp_poly.h"
#include "kernels/avx512/softmax_impl.h"
#include "kernels/kernels.h"

void sa_softmax__avx512_poly(size_t m, size_t n, float *s, size_t lds,
                             const size_t *len) {
  sa_softmax16_rows(m, n, s, lds, len, sa_exp16_poly);
}

void sa_softmax_online__avx512_poly(size_t m, size_t n, float *s, size_t lds,
                                    const size_t *len, float *mx, float *l,
                                    float *alpha) {
  sa_softmax_online16_rows(m, n, s, lds, len, mx, l, alpha, sa_exp16_poly);
}

void sa_softmax_online2__avx512_poly(size_t m, size_t n, float *s, size_t lds,
                                     const size_t *len, float *mx, float *l,
                                     float *alpha) {
  sa_softmax_online16_rows(m, n, s, lds, len, mx, l, alpha, sa_exp2_16_poly);
}
