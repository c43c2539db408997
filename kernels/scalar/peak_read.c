/*
 * Read-bandwidth probe for the scalar set: the baseline target's widest
 * loads (x86-64: SSE2; AArch64: Advanced SIMD) through GCC's generic 16-byte
 * vectors, as the compiler makes of plain C, into four independent
 * accumulators, in the way kernels.h's sa_peak_read_way says (streams side
 * by side, software prefetch by __builtin_prefetch); the bench measures
 * several ways and keeps the fastest. No intrinsics, no ISA flags.
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

uint64_t sa_peak_read__scalar(const void *buf, size_t bytes,
                              const sa_peak_read_way *way) {
  v2u a[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
#define BLOCK(q) block(q, a)
  SA_PEAK_READ_LOOP(buf, bytes, way, BLOCK);
#undef BLOCK
  v2u s = (a[0] + a[1]) + (a[2] + a[3]);
  return s[0] + s[1];
}
