/*
 * The ALiBi slopes of Press et al., "Train Short, Test Long" (2022), as their
 * reference code and the models trained with it (BLOOM, MPT) define them:
 * a geometric sequence 2^(-8/n), 2^(-16/n), ... for n a power of two; for
 * other n, the sequence of the power of two below, then the odd-numbered
 * slopes of the sequence for twice that.
 */
#include <math.h>

#include "attention/internal.h"
#include "core/errors.h"

sa_status sa_alibi_slopes(size_t heads, float *slopes) {
  if (!slopes)
    return sa_fail(SA_ERR_NULL_POINTER, "sa_alibi_slopes: slopes is NULL");
  if (heads == 0 || heads > SA_MAX_DIM)
    return sa_fail(SA_ERR_BAD_SHAPE, "heads = %zu is outside [1, 2^31]", heads);
  size_t pow2 = 1;
  while (pow2 * 2 <= heads)
    pow2 *= 2;
  /* in double, then rounded once to float */
  for (size_t h = 0; h < pow2; h++)
    slopes[h] = (float)exp2(-8.0 * (double)(h + 1) / (double)pow2);
  for (size_t h = pow2; h < heads; h++)
    slopes[h] =
        (float)exp2(-8.0 * (double)(2 * (h - pow2) + 1) / (double)(2 * pow2));
  sa_clear_error();
  return SA_OK;
}
