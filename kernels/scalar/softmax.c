/*
 * softmax, scalar oracle: in place over the valid prefix of each row,
 * exp(x - rowmax) / rowsum; columns past the prefix become 0, and a row with
 * no valid column becomes all zeros rather than 0/0.
 *
 * scalar computes expf and the row sum in float; scalar-f64 computes exp and
 * the sum in double, so a long row's sum loses nothing to the accumulator,
 * and each weight is rounded to float when stored and once more when scaled.
 * Both take exp of x - rowmax rounded to float, as every set does: that
 * rounding is no larger than the score's own (u |x| at most), and a weight
 * it moves by a relative u |x - rowmax| is one of size exp(x - rowmax).
 */
#include <math.h>

#include "kernels/kernels.h"

#define SCALAR_SOFTMAX(name, acc_t, exp_fn)                                    \
  SA_DECLARE_SOFTMAX(name) {                                                   \
    for (size_t i = 0; i < m; i++) {                                           \
      float *row = s + i * lds;                                                \
      size_t valid = len ? (len[i] < n ? len[i] : n) : n;                      \
      if (valid == 0) {                                                        \
        for (size_t j = 0; j < n; j++)                                         \
          row[j] = 0.0f;                                                       \
        continue;                                                              \
      }                                                                        \
      float mx = row[0];                                                       \
      for (size_t j = 1; j < valid; j++)                                       \
        mx = row[j] > mx ? row[j] : mx;                                        \
      acc_t sum = 0;                                                           \
      for (size_t j = 0; j < valid; j++) {                                     \
        acc_t e = exp_fn((acc_t)(row[j] - mx));                                \
        row[j] = (float)e;                                                     \
        sum += e;                                                              \
      }                                                                        \
      acc_t inv = 1 / sum;                                                     \
      for (size_t j = 0; j < valid; j++)                                       \
        row[j] = (float)(row[j] * inv);                                        \
      for (size_t j = valid; j < n; j++)                                       \
        row[j] = 0.0f;                                                         \
    }                                                                          \
  }

SCALAR_SOFTMAX(sa_softmax__scalar, float, expf)
SCALAR_SOFTMAX(sa_softmax__scalar_f64, double, exp)
