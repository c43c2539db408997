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
#include "kernels/prefetch.h"

static inline __attribute__((always_inline)) void
sa_peak_read_prefetch(const char *t, size_t every, int l2) {
  if (every <= 64) {
    for (size_t l = 0; l < SA_PEAK_READ_BLOCK; l += 64)
      sa_prefetch_line(t + l, l2);
    return;
  }
  /* one test a block, not one a line: the loop is that tight */
  const char *x = (const char *)(((uintptr_t)t + SA_PEAK_READ_BLOCK - 1) &
                                 ~(uintptr_t)(every - 1));
  if (x >= t)
    sa_prefetch_line(x, l2);
}

/* The probes' loop, one body for every ISA (kernels.h has the way's
 * rules): BLOCK(q) reads the SA_PEAK_READ_BLOCK bytes at q into the
 * kernel's accumulators. A stream is prefetched only while every target
 * lies inside it. */
#define SA_PEAK_READ_LOOP(buf, bytes, way, BLOCK)                              \
  do {                                                                         \
    const char *base_ = (const char *)(buf);                                   \
    const size_t ns_ = (way)->streams ? (way)->streams : 1;                    \
    const size_t per_ = (bytes) / ns_, ahead_ = (way)->ahead;                  \
    const size_t far_ = (way)->far, reach_ = far_ > ahead_ ? far_ : ahead_;    \
    size_t i_ = 0, stop_ = ahead_ && per_ > reach_ ? per_ - reach_ : 0;        \
    for (; i_ < stop_; i_ += SA_PEAK_READ_BLOCK)                               \
      for (size_t s_ = 0; s_ < ns_; s_++) {                                    \
        const char *q_ = base_ + s_ * per_ + i_;                               \
        sa_peak_read_prefetch(q_ + ahead_, (way)->every, (way)->l2);           \
        if (far_)                                                              \
          sa_peak_read_prefetch(q_ + far_, 4096, 0);                           \
        BLOCK(q_);                                                             \
      }                                                                        \
    for (; i_ < per_; i_ += SA_PEAK_READ_BLOCK)                                \
      for (size_t s_ = 0; s_ < ns_; s_++)                                      \
        BLOCK(base_ + s_ * per_ + i_);                                         \
  } while (0)

#endif /* SA_KERNELS_PEAK_READ_H */
