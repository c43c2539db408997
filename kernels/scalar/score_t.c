/*
 * score, scalar oracle for narrow K: each k value widened exactly
 * (dtype.h), then the f32 oracle's loop, in its order. ldk counts the
 * type's units: elements, or q8_0 blocks (d a multiple of 32).
 */
#include "dtype.h"
#include "kernels.h"

static void score_typed(sa_dtype t, size_t m, size_t n, size_t d,
                        const float *q, size_t ldq, const void *k, size_t ldk,
                        float scale, float *s, size_t lds) {
  const size_t unit = sa_dtype_unit(t);
  for (size_t i = 0; i < m; i++) {
    const float *qi = q + i * ldq;
    for (size_t j = 0; j < n; j++) {
      const void *kj = (const char *)k + j * ldk * unit;
      float acc = 0.0f;
      for (size_t p = 0; p < d; p++)
        acc += qi[p] * sa_load_elem(t, kj, p);
      s[i * lds + j] = scale * acc;
    }
  }
}

void sa_score_f16__scalar(size_t m, size_t n, size_t d, const float *q,
                          size_t ldq, const void *k, size_t ldk, float scale,
                          float *s, size_t lds) {
  score_typed(SA_F16, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

void sa_score_bf16__scalar(size_t m, size_t n, size_t d, const float *q,
                           size_t ldq, const void *k, size_t ldk, float scale,
                           float *s, size_t lds) {
  score_typed(SA_BF16, m, n, d, q, ldq, k, ldk, scale, s, lds);
}

void sa_score_q8_0__scalar(size_t m, size_t n, size_t d, const float *q,
                           size_t ldq, const void *k, size_t ldk, float scale,
                           float *s, size_t lds) {
  score_typed(SA_Q8_0, m, n, d, q, ldq, k, ldk, scale, s, lds);
}
