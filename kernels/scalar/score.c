/*
 * score, scalar oracle: s[i][j] = scale * sum_p q[i][p] * k[j][p].
 *
 * Plain loops in a fixed order, compiled with -ffp-contract=off and no
 * fast-math, so the result is the same on every compiler and CPU: this is
 * what every SIMD set is measured against.
 */
#include "kernels.h"

void sa_score__scalar(size_t m, size_t n, size_t d, const float *q, size_t ldq,
                      const float *k, size_t ldk, float scale, float *s,
                      size_t lds) {
  for (size_t i = 0; i < m; i++) {
    const float *qi = q + i * ldq;
    for (size_t j = 0; j < n; j++) {
      const float *kj = k + j * ldk;
      float acc = 0.0f;
      for (size_t p = 0; p < d; p++)
        acc += qi[p] * kj[p];
      s[i * lds + j] = scale * acc;
    }
  }
}
