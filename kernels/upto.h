/*
 * The rows' ends of score_upto and wsum_upto (include/simdattn.h): row i
 * of a call needs keys [0, ends[i]) only, as on the causal diagonal. A
 * kernel skips a register tile only when every row of it ends before the
 * tile's keys, so what it computes is what score or wsum would, less work
 * that nothing reads (scores) or that adds exact zeros (sums). Plain C,
 * static inline, for every set.
 */
#ifndef SA_KERNELS_UPTO_H
#define SA_KERNELS_UPTO_H

#include <stddef.h>

/* The largest of ends[0..mr). */
static inline size_t sa_ends_most(const size_t *ends, size_t mr) {
  size_t most = 0;
  for (size_t i = 0; i < mr; i++)
    most = ends[i] > most ? ends[i] : most;
  return most;
}

/* n cut to the largest end: no row needs the keys past it. */
static inline size_t sa_ends_clip(const size_t *ends, size_t m, size_t n) {
  size_t most = sa_ends_most(ends, m);
  return most < n ? most : n;
}

#endif /* SA_KERNELS_UPTO_H */
