/*
 * The read probes' software prefetch (kernels/<isa>/peak_read.c), one body
 * for every ISA: the block [t, t + SA_PEAK_READ_BLOCK) ahead of the reader,
 * every line of it (every <= 64) or only the line at a multiple of `every`
 * bytes inside it, if there is one (kernels/kernels.h says why both).
 *
 * Plain C with a compiler builtin (a hint, which never faults): any kernel
 * folder includes it whatever its ISA flags.
 */
#ifndef SA_KERNELS_PEAK_READ_H
#define SA_KERNELS_PEAK_READ_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

static inline __attribute__((always_inline)) void
sa_peak_read_prefetch(const char *t, size_t every) {
  if (every <= 64) {
    for (size_t l = 0; l < SA_PEAK_READ_BLOCK; l += 64)
      __builtin_prefetch(t + l, 0, 3);
    return;
  }
  /* one test a block, not one a line: the loop is that tight */
  const char *x = (const char *)(((uintptr_t)t + SA_PEAK_READ_BLOCK - 1) &
                                 ~(uintptr_t)(every - 1));
  if (x >= t)
    __builtin_prefetch(x, 0, 3);
}

#endif /* SA_KERNELS_PEAK_READ_H */
