/*
 * score and wsum of the scalar sets over rows given by address (row j of K
 * or V at rows[j], type t), for decode_rows: the same loops as the public
 * kernels, row addresses aside, so decode_rows composes exactly what decode
 * does on the same rows copied into one block.
 */
#ifndef SA_KERNELS_SCALAR_ROWS_H
#define SA_KERNELS_SCALAR_ROWS_H

#include "simdattn.h"

#define SA_DECLARE_SCORE_ROWS(fn)                                              \
  void fn(size_t m, size_t n, size_t d, const float *q, size_t ldq,            \
          const void *const *k, sa_dtype t, float scale, float *s, size_t lds)
#define SA_DECLARE_WSUM_ROWS(fn)                                               \
  void fn(size_t m, size_t n, size_t dv, const float *p, size_t ldp,           \
          const void *const *v, sa_dtype t, const float *beta, float *o,       \
          size_t ldo)

typedef SA_DECLARE_SCORE_ROWS((*sa_score_rows_fn));
typedef SA_DECLARE_WSUM_ROWS((*sa_wsum_rows_fn));

SA_DECLARE_SCORE_ROWS(sa_score_rows__scalar);
SA_DECLARE_SCORE_ROWS(sa_score_rows__scalar_f64);
SA_DECLARE_WSUM_ROWS(sa_wsum_rows__scalar);
SA_DECLARE_WSUM_ROWS(sa_wsum_rows__scalar_f64);

#endif /* SA_KERNELS_SCALAR_ROWS_H */
