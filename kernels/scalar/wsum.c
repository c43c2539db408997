/*
 * wsum, scalar oracle: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c].
 * With beta NULL the output is overwritten and never read, so the caller may
 * hand in uninitialised (even NaN-filled) memory on the first step.
 */
#include "kernels.h"

void sa_wsum__scalar(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                     const float *v, size_t ldv, const float *beta, float *o,
                     size_t ldo) {
  for (size_t i = 0; i < m; i++) {
    float *oi = o + i * ldo;
    const float *pi = p + i * ldp;
    for (size_t c = 0; c < dv; c++) {
      float acc = 0.0f;
      for (size_t j = 0; j < n; j++)
        acc += pi[j] * v[j * ldv + c];
      oi[c] = beta ? beta[i] * oi[c] + acc : acc;
    }
  }
}
