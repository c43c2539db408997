/*
 * score, scalar oracle: s[i][j] = scale * sum_p q[i][p] * k[j][p], with K
 * f32 or of a narrow type (each k value widened exactly by dtype.h; ldk
 * counts the type's units: elements, or q8_0 blocks with d a multiple of
 * 32).
 *
 * Plain loops in a fixed order, compiled with -ffp-contract=off and no
 * fast-math, so the result is the same on every compiler and CPU: this is
 * what every SIMD set is measured against.
 *
 * One loop, two accumulators. scalar sums in float, in the order a reader
 * expects. scalar-f64 sums the same products in double (a product of two
 * floats is exact there) and rounds each score to float once, so its error
 * does not grow with d or with the size of the partial sums: at logits near
 * 1e3 the float sum loses more than SIMD sets' 8 or 16 partial sums do.
 */
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/scalar/rows.h"

/* A public kernel: the typed loop for one K type. */
#define ENTRY(declare, name, typed, type)                                      \
  declare(name) { typed(type, m, n, d, q, ldq, k, ldk, NULL, scale, s, lds); }

#define SCALAR_SCORE(variant, acc_t)                                           \
  static void score_typed##variant(sa_dtype t, size_t m, size_t n, size_t d,   \
                                   const float *q, size_t ldq, const void *k,  \
                                   size_t ldk, const void *const *rows,        \
                                   float scale, float *s, size_t lds) {        \
    const size_t unit = sa_dtype_unit(t);                                      \
    for (size_t i = 0; i < m; i++) {                                           \
      const float *qi = q + i * ldq;                                           \
      for (size_t j = 0; j < n; j++) {                                         \
        const void *kj = rows ? rows[j] : (const char *)k + j * ldk * unit;    \
        acc_t acc = 0;                                                         \
        for (size_t p = 0; p < d; p++)                                         \
          acc += (acc_t)qi[p] * sa_load_elem(t, kj, p);                        \
        s[i * lds + j] = (float)(scale * acc);                                 \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  ENTRY(SA_DECLARE_SCORE, sa_score__scalar##variant, score_typed##variant,     \
        SA_F32)                                                                \
  ENTRY(SA_DECLARE_SCORE_T, sa_score_f16__scalar##variant,                     \
        score_typed##variant, SA_F16)                                          \
  ENTRY(SA_DECLARE_SCORE_T, sa_score_bf16__scalar##variant,                    \
        score_typed##variant, SA_BF16)                                         \
  ENTRY(SA_DECLARE_SCORE_T, sa_score_q8_0__scalar##variant,                    \
        score_typed##variant, SA_Q8_0)                                         \
  SA_DECLARE_SCORE_ROWS(sa_score_rows__scalar##variant) {                      \
    score_typed##variant(t, m, n, d, q, ldq, NULL, 0, k, scale, s, lds);       \
  }                                                                            \
  /* each row up to its own end */                                             \
  SA_DECLARE_SCORE_UPTO(sa_score_upto__scalar##variant) {                      \
    for (size_t i = 0; i < m; i++)                                             \
      score_typed##variant(SA_F32, 1, ends[i] < n ? ends[i] : n, d,            \
                           q + i * ldq, ldq, k, ldk, NULL, scale, s + i * lds, \
                           lds);                                               \
  }

SCALAR_SCORE(, float)
SCALAR_SCORE(_f64, double)
