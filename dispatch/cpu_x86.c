/*
 * x86-64 feature detection: CPUID leaves 1 and 7 plus XGETBV.
 *
 * A CPUID bit only says the silicon has the instructions; the OS must also
 * save the wider register state on context switch, or the first ymm/zmm use
 * faults or silently corrupts. XCR0 says which state the OS saves: bits 1-2
 * (SSE, YMM) for AVX, bits 5-7 (opmask, ZMM_Hi256, Hi16_ZMM) for AVX-512.
 *
 * Compiled for baseline x86-64: cpuid and xgetbv are issued through inline
 * asm, so no -mavx or -mxsave flag is needed here.
 */
#if defined(__x86_64__) || defined(_M_X64)

#include <string.h>

#include "dispatch/cpu.h"
#include "simdattn.h"

static void cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
  __asm__ volatile("cpuid"
                   : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                   : "a"(leaf), "c"(sub));
}

static uint64_t xgetbv0(void) {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

uint64_t sa_cpu_detect(void) {
  unsigned r[4];
  cpuid(0, 0, r);
  unsigned max_leaf = r[0];
  /* "AuthenticAMD" in ebx, edx, ecx */
  int vendor_amd =
      r[1] == 0x68747541u && r[3] == 0x69746e65u && r[2] == 0x444d4163u;
  uint64_t f = SA_CPU_SSE2; /* part of x86-64 itself */
  if (max_leaf < 1)
    return f;

  cpuid(1, 0, r);
  unsigned ecx1 = r[2];
  int osxsave = (ecx1 >> 27) & 1;
  uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  int ymm_ok = (xcr0 & 0x6) == 0x6;
  int zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0;

  if (ymm_ok && ((ecx1 >> 28) & 1))
    f |= SA_CPU_AVX;
  if ((f & SA_CPU_AVX) && ((ecx1 >> 12) & 1))
    f |= SA_CPU_FMA;
  if ((f & SA_CPU_AVX) && ((ecx1 >> 29) & 1))
    f |= SA_CPU_F16C;
  if (max_leaf < 7)
    return f;

  cpuid(7, 0, r);
  unsigned ebx7 = r[1], ecx7 = r[2];
  if ((f & SA_CPU_AVX) && ((ebx7 >> 5) & 1))
    f |= SA_CPU_AVX2;
  if (zmm_ok && ((ebx7 >> 16) & 1)) {
    f |= SA_CPU_AVX512F;
    if ((ebx7 >> 30) & 1)
      f |= SA_CPU_AVX512BW;
    if ((ebx7 >> 17) & 1)
      f |= SA_CPU_AVX512DQ;
    if ((ebx7 >> 31) & 1)
      f |= SA_CPU_AVX512VL;
    if ((ecx7 >> 11) & 1)
      f |= SA_CPU_AVX512VNNI;
    cpuid(7, 1, r);
    if ((r[0] >> 5) & 1)
      f |= SA_CPU_AVX512BF16;
  }
  /* vdpbf16ps pays where it gives twice FMA's products (Zen 5: bf16
   * prefill 1.27x f32); on a Sapphire Rapids class Xeon it ran 1.3x
   * slower than widening bf16 and FMA, so only AMD's counts as fast. */
  if ((f & SA_CPU_AVX512BF16) && vendor_amd)
    f |= SA_CPU_FAST_BF16DOT;
  return f;
}

void sa_cpu_model_name(char *buf, size_t size) {
  unsigned r[4];
  char name[49];
  if (size == 0)
    return;
  buf[0] = '\0';
  cpuid(0x80000000u, 0, r);
  if (r[0] < 0x80000004u)
    return;
  for (unsigned i = 0; i < 3; i++) {
    cpuid(0x80000002u + i, 0, r);
    memcpy(name + 16 * i, r, 16);
  }
  name[48] = '\0';
  const char *p = name;
  while (*p == ' ')
    p++;
  size_t n = strlen(p);
  while (n > 0 && p[n - 1] == ' ')
    n--;
  if (n >= size)
    n = size - 1;
  memcpy(buf, p, n);
  buf[n] = '\0';
}

#endif
