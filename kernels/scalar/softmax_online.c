/*
 * softmax_online, scalar oracle: one FlashAttention step on a tile of raw
 * scores. Per row: new = max(mx, rowmax of the valid prefix);
 * s <- exp(s - new) (0 past the prefix); alpha = exp(mx - new);
 * l = l * alpha + rowsum; mx = new.
 *
 * While a row has seen nothing valid its max stays -inf, and exp(-inf - -inf)
 * would be NaN: such a row gets s = 0, alpha = 1 and keeps l, so that the
 * caller's rescale of its accumulator is a no-op. Its max skipped any NaN
 * score, so l becomes NaN then: a NaN seen before the first finite score
 * must still poison the row, as it does in the three-pass softmax.
 *
 * scalar computes in float; scalar-f64 computes exp, the row sum and the
 * update of l in double and rounds each stored value once. Both take exp of
 * the float difference, as softmax.c says why; softmax_online2 is the same
 * step with exp2 (libm's exp2f states 0.502 ULP as expf does, and measured
 * 0.5016 on every float of [-126, 0]).
 */
#include <math.h>

#include "kernels/kernels.h"

#define SCALAR_SOFTMAX_ONLINE(name, acc_t, exp_fn)                             \
  SA_DECLARE_SOFTMAX_ONLINE(name) {                                            \
    for (size_t i = 0; i < m; i++) {                                           \
      float *row = s + i * lds;                                                \
      size_t valid = len ? (len[i] < n ? len[i] : n) : n;                      \
      float next = mx[i];                                                      \
      for (size_t j = 0; j < valid; j++)                                       \
        next = row[j] > next ? row[j] : next;                                  \
      if (next == -INFINITY) {                                                 \
        for (size_t j = 0; j < valid; j++)                                     \
          if (row[j] != row[j])                                                \
            l[i] = NAN;                                                        \
        for (size_t j = 0; j < n; j++)                                         \
          row[j] = 0.0f;                                                       \
        alpha[i] = 1.0f;                                                       \
        continue;                                                              \
      }                                                                        \
      acc_t sum = 0;                                                           \
      for (size_t j = 0; j < valid; j++) {                                     \
        acc_t e = exp_fn((acc_t)(row[j] - next));                              \
        row[j] = (float)e;                                                     \
        sum += e;                                                              \
      }                                                                        \
      for (size_t j = valid; j < n; j++)                                       \
        row[j] = 0.0f;                                                         \
      acc_t a = exp_fn((acc_t)(mx[i] - next));                                 \
      alpha[i] = (float)a;                                                     \
      l[i] = (float)(l[i] * a + sum);                                          \
      mx[i] = next;                                                            \
    }                                                                          \
  }

SCALAR_SOFTMAX_ONLINE(sa_softmax_online__scalar, float, expf)
SCALAR_SOFTMAX_ONLINE(sa_softmax_online__scalar_f64, double, exp)
/* softmax_online2: the same step in base 2, for scores in log2 units */
SCALAR_SOFTMAX_ONLINE(sa_softmax_online2__scalar, float, exp2f)
SCALAR_SOFTMAX_ONLINE(sa_softmax_online2__scalar_f64, double, exp2)
