/*
 * wsum, scalar oracle: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c],
 * with V f32 or of a narrow type (each v value widened exactly by dtype.h;
 * ldv counts the type's units: elements, or q8_0 blocks with dv a multiple
 * of 32). With beta NULL the output is overwritten and never read, so the
 * caller may hand in uninitialised (even NaN-filled) memory on the first
 * step.
 *
 * scalar sums in float; scalar-f64 in double, rescale included, rounding
 * each output once (a long row's sum of P.V then loses nothing to the
 * accumulator).
 */
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/scalar/rows.h"

/* A public kernel: the typed loop for one V type. */
#define ENTRY(declare, name, typed, type)                                      \
  declare(name) { typed(type, m, n, dv, p, ldp, v, ldv, NULL, beta, o, ldo); }

#define SCALAR_WSUM(variant, acc_t)                                            \
  static void wsum_typed##variant(sa_dtype t, size_t m, size_t n, size_t dv,   \
                                  const float *p, size_t ldp, const void *v,   \
                                  size_t ldv, const void *const *rows,         \
                                  const float *beta, float *o, size_t ldo) {   \
    const size_t unit = sa_dtype_unit(t);                                      \
    for (size_t i = 0; i < m; i++) {                                           \
      float *oi = o + i * ldo;                                                 \
      const float *pi = p + i * ldp;                                           \
      for (size_t c = 0; c < dv; c++) {                                        \
        acc_t acc = 0;                                                         \
        for (size_t j = 0; j < n; j++)                                         \
          acc += (acc_t)pi[j] *                                                \
                 sa_load_elem(                                                 \
                     t, rows ? rows[j] : (const char *)v + j * ldv * unit, c); \
        oi[c] = beta ? (float)((acc_t)beta[i] * oi[c] + acc) : (float)acc;     \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  ENTRY(SA_DECLARE_WSUM, sa_wsum__scalar##variant, wsum_typed##variant,        \
        SA_F32)                                                                \
  ENTRY(SA_DECLARE_WSUM_T, sa_wsum_f16__scalar##variant, wsum_typed##variant,  \
        SA_F16)                                                                \
  ENTRY(SA_DECLARE_WSUM_T, sa_wsum_bf16__scalar##variant, wsum_typed##variant, \
        SA_BF16)                                                               \
  ENTRY(SA_DECLARE_WSUM_T, sa_wsum_q8_0__scalar##variant, wsum_typed##variant, \
        SA_Q8_0)                                                               \
  SA_DECLARE_WSUM_ROWS(sa_wsum_rows__scalar##variant) {                        \
    wsum_typed##variant(t, m, n, dv, p, ldp, NULL, 0, v, beta, o, ldo);        \
  }                                                                            \
  /* each row up to its own end: the zeros past it are left out */             \
  SA_DECLARE_WSUM_UPTO(sa_wsum_upto__scalar##variant) {                        \
    for (size_t i = 0; i < m; i++)                                             \
      wsum_typed##variant(SA_F32, 1, ends[i] < n ? ends[i] : n, dv,            \
                          p + i * ldp, ldp, v, ldv, NULL,                      \
                          beta ? beta + i : NULL, o + i * ldo, ldo);           \
  }

SCALAR_WSUM(, float)
SCALAR_WSUM(_f64, double)
