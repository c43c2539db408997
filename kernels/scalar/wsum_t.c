/*
 * wsum, scalar oracle for narrow V: each v value widened exactly
 * (dtype.h), then the f32 oracle's loop, in its order. ldv counts the
 * type's units: elements, or q8_0 blocks (dv a multiple of 32).
 */
#include "dtype.h"
#include "kernels.h"

static void wsum_typed(sa_dtype t, size_t m, size_t n, size_t dv,
                       const float *p, size_t ldp, const void *v, size_t ldv,
                       const float *beta, float *o, size_t ldo) {
  const size_t unit = sa_dtype_unit(t);
  for (size_t i = 0; i < m; i++) {
    float *oi = o + i * ldo;
    const float *pi = p + i * ldp;
    for (size_t c = 0; c < dv; c++) {
      float acc = 0.0f;
      for (size_t j = 0; j < n; j++)
        acc += pi[j] * sa_load_elem(t, (const char *)v + j * ldv * unit, c);
      oi[c] = beta ? beta[i] * oi[c] + acc : acc;
    }
  }
}

void sa_wsum_f16__scalar(size_t m, size_t n, size_t dv, const float *p,
                         size_t ldp, const void *v, size_t ldv,
                         const float *beta, float *o, size_t ldo) {
  wsum_typed(SA_F16, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

void sa_wsum_bf16__scalar(size_t m, size_t n, size_t dv, const float *p,
                          size_t ldp, const void *v, size_t ldv,
                          const float *beta, float *o, size_t ldo) {
  wsum_typed(SA_BF16, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

void sa_wsum_q8_0__scalar(size_t m, size_t n, size_t dv, const float *p,
                          size_t ldp, const void *v, size_t ldv,
                          const float *beta, float *o, size_t ldo) {
  wsum_typed(SA_Q8_0, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}
