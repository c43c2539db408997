/*
 * Read-bandwidth probe for the scalar set: the baseline target's widest
 * loads (x86-64: SSE2; AArch64: Advanced SIMD) through GCC's generic 16-byte
 * vectors, as the compiler makes of plain C, into four independent
 * accumulators. With prefetch > 0 it also prefetches that many bytes ahead
 * (__builtin_prefetch), every line or each page's first (kernels/kernels.h);
 * the bench measures the three ways and keeps the fastest. No intrinsics, no
 * ISA flags.
 */
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/peak_read.h"

typedef uint64_t v2u __attribute__((vector_size(16)));

static inline v2u load(const char *p) {
  v2u v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* One 512-byte block: 32 loads, eight per accumulator. */
static inline void block(const char *p, v2u *a) {
  for (int l = 0; l < SA_PEAK_READ_BLOCK; l += 64) {
    a[0] += load(p + l);
    a[1] += load(p + l + 16);
    a[2] += load(p + l + 32);
    a[3] += load(p + l + 48);
  }
}

uint64_t sa_peak_read__scalar(const void *buf, size_t bytes, size_t prefetch,
                              size_t every) {
  const char *p = buf;
  v2u a[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  /* Prefetch only while the target is inside the buffer. */
  size_t i = 0, stop = prefetch && bytes > prefetch ? bytes - prefetch : 0;
  for (; i < stop; i += SA_PEAK_READ_BLOCK) {
    sa_peak_read_prefetch(p + i + prefetch, every);
    block(p + i, a);
  }
  for (; i < bytes; i += SA_PEAK_READ_BLOCK)
    block(p + i, a);
  v2u s = (a[0] + a[1]) + (a[2] + a[3]);
  return s[0] + s[1];
}
