/*
 * Peak probe for the scalar set: the ceiling of the code the compiler makes
 * of plain C for the baseline target (x86-64: SSE2; AArch64: Advanced SIMD).
 * The scalar kernel set is built with baseline flags and -ffp-contract=off,
 * and GCC vectorises some of its loops (wsum's o += p*v) into 128-bit
 * multiplies and adds, so a one-lane probe would be beaten by it. This probe
 * runs twelve independent chains of 128-bit a = a*m + c as separate multiply
 * and add (-ffp-contract=off here too): 8 flops per step. GCC's generic
 * vector extension, no intrinsics, no ISA flags.
 */
#include <stdint.h>

#include "kernels/kernels.h"
#include "kernels/unroll.h"

typedef float v4f __attribute__((vector_size(16)));

uint64_t sa_peak_fma__scalar(uint64_t reps, float *sink) {
  const v4f m = {0.999999f, 0.999999f, 0.999999f, 0.999999f};
  const v4f c = {1e-6f, 1e-6f, 1e-6f, 1e-6f};
  v4f a0 = m * 0.1f, a1 = m * 0.2f, a2 = m * 0.3f, a3 = m * 0.4f, a4 = m * 0.5f,
      a5 = m * 0.6f, a6 = m * 0.7f, a7 = m * 0.8f, a8 = m * 0.9f, a9 = m * 1.0f,
      a10 = m * 1.1f, a11 = m * 1.2f;
  for (uint64_t r = 0; r < reps; r++) {
#define STEP(a) a = a * m + c
    SA_STEP_A0_A11(STEP);
#undef STEP
  }
  v4f s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) +
          ((a8 + a9) + (a10 + a11));
  *sink = s[0] + s[1] + s[2] + s[3];
  return reps * 12 * 8;
}
