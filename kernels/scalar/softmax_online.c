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
 */
#include <math.h>

#include "kernels.h"

void sa_softmax_online__scalar(size_t m, size_t n, float *s, size_t lds,
                               const size_t *len, float *mx, float *l,
                               float *alpha) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    size_t valid = len ? (len[i] < n ? len[i] : n) : n;
    float next = mx[i];
    for (size_t j = 0; j < valid; j++)
      next = row[j] > next ? row[j] : next;
    if (next == -INFINITY) {
      for (size_t j = 0; j < valid; j++)
        if (row[j] != row[j])
          l[i] = NAN;
      for (size_t j = 0; j < n; j++)
        row[j] = 0.0f;
      alpha[i] = 1.0f;
      continue;
    }
    float sum = 0.0f;
    for (size_t j = 0; j < valid; j++) {
      row[j] = expf(row[j] - next);
      sum += row[j];
    }
    for (size_t j = valid; j < n; j++)
      row[j] = 0.0f;
    alpha[i] = expf(mx[i] - next);
    l[i] = l[i] * alpha[i] + sum;
    mx[i] = next;
  }
}
