/*
 * Read-bandwidth probe, AArch64 Advanced SIMD: 128-bit loads, four per
 * 64-byte line, into four independent accumulators, in the way kernels.h's
 * sa_peak_read_way says (streams side by side, software prefetch by prfm);
 * the bench measures several ways and keeps the fastest. Compiled only for
 * aarch64, called only when the CPU runs the neon set (dispatch/registry.c).
 */
#include <arm_neon.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/peak_read.h"

#define BLOCK(q)                                                               \
  do {                                                                         \
    for (size_t l = 0; l < SA_PEAK_READ_BLOCK; l += 64) {                      \
      const uint64_t *x = (const uint64_t *)((q) + l);                         \
      a0 = vaddq_u64(a0, vld1q_u64(x));                                        \
      a1 = vaddq_u64(a1, vld1q_u64(x + 2));                                    \
      a2 = vaddq_u64(a2, vld1q_u64(x + 4));                                    \
      a3 = vaddq_u64(a3, vld1q_u64(x + 6));                                    \
    }                                                                          \
  } while (0)

uint64_t sa_peak_read__neon(const void *buf, size_t bytes,
                            const sa_peak_read_way *way) {
  uint64x2_t a0 = vdupq_n_u64(0), a1 = a0, a2 = a0, a3 = a0;
  SA_PEAK_READ_LOOP(buf, bytes, way, BLOCK);
  return vaddvq_u64(vaddq_u64(vaddq_u64(a0, a1), vaddq_u64(a2, a3)));
}
