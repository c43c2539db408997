/*
 * softmax, scalar oracle: in place over the valid prefix of each row,
 * exp(x - rowmax) / rowsum; columns past the prefix become 0, and a row with
 * no valid column becomes all zeros rather than 0/0.
 */
#include <math.h>

#include "kernels.h"

void sa_softmax__scalar(size_t m, size_t n, float *s, size_t lds,
                        const size_t *len) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    size_t valid = len ? (len[i] < n ? len[i] : n) : n;
    if (valid == 0) {
      for (size_t j = 0; j < n; j++)
        row[j] = 0.0f;
      continue;
    }
    float mx = row[0];
    for (size_t j = 1; j < valid; j++)
      mx = row[j] > mx ? row[j] : mx;
    float sum = 0.0f;
    for (size_t j = 0; j < valid; j++) {
      row[j] = expf(row[j] - mx);
      sum += row[j];
    }
    float inv = 1.0f / sum;
    for (size_t j = 0; j < valid; j++)
      row[j] *= inv;
    for (size_t j = valid; j < n; j++)
      row[j] = 0.0f;
  }
}
