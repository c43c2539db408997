/*
 * Read-bandwidth probe, AArch64 Advanced SIMD: 128-bit loads, four per
 * 64-byte line, into four independent accumulators. With prefetch > 0 it
 * also prefetches that many bytes ahead (prfm), every line or each page's
 * first (kernels/kernels.h); the bench measures the three ways and keeps the
 * fastest. Compiled only for aarch64, called only when the CPU runs the neon
 * set (dispatch/registry.c).
 */
#include <arm_neon.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/peak_read.h"

#define BLOCK()                                                                \
  do {                                                                         \
    for (size_t l = 0; l < SA_PEAK_READ_BLOCK; l += 64) {                      \
      const uint64_t *q = (const uint64_t *)(p + i + l);                       \
      a0 = vaddq_u64(a0, vld1q_u64(q));                                        \
      a1 = vaddq_u64(a1, vld1q_u64(q + 2));                                    \
      a2 = vaddq_u64(a2, vld1q_u64(q + 4));                                    \
      a3 = vaddq_u64(a3, vld1q_u64(q + 6));                                    \
    }                                                                          \
  } while (0)

uint64_t sa_peak_read__neon(const void *buf, size_t bytes, size_t prefetch,
                            size_t every) {
  const char *p = buf;
  uint64x2_t a0 = vdupq_n_u64(0), a1 = a0, a2 = a0, a3 = a0;
  /* Prefetch only while the target is inside the buffer. */
  size_t i = 0, stop = prefetch && bytes > prefetch ? bytes - prefetch : 0;
  for (; i < stop; i += SA_PEAK_READ_BLOCK) {
    sa_peak_read_prefetch(p + i + prefetch, every);
    BLOCK();
  }
  for (; i < bytes; i += SA_PEAK_READ_BLOCK)
    BLOCK();
  return vaddvq_u64(vaddq_u64(vaddq_u64(a0, a1), vaddq_u64(a2, a3)));
}
