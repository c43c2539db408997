/*
 * Streaming-read probe: folds a large buffer with eight independent 64-bit
 * chains (the compiler may widen them to the baseline vectors). One pass
 * over a buffer far larger than the last-level cache gives the single-core
 * read bandwidth the decode shape is bound by.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

uint64_t sa_peak_read(const void *buf, size_t bytes);

uint64_t sa_peak_read(const void *buf, size_t bytes) {
  const unsigned char *p = buf;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
  for (size_t i = 0; i + 64 <= bytes; i += 64) {
    uint64_t w[8];
    memcpy(w, p + i, 64);
    s0 += w[0];
    s1 += w[1];
    s2 += w[2];
    s3 += w[3];
    s4 += w[4];
    s5 += w[5];
    s6 += w[6];
    s7 += w[7];
  }
  return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
}
