/*
 * The core the kernels run on, as far as the ways they stream K and V
 * depend on it: its L1 data cache's size and its maker. avx512's decode.c
 * (the level its lanes prefetch into) and wsum.c (how decode-shaped value
 * sums walk V); avx2's and avx512's score.c (whether decode's keys come as
 * four streams). Read from CPUID, not from hwloc, so that
 * the kernels stand alone for an engine that calls them without the
 * driver. Plain C: any kernel set's files may include it.
 */
#ifndef SA_CPU_CORE_H
#define SA_CPU_CORE_H

#include <cpuid.h>
#include <stddef.h>

/* Bytes, from CPUID leaf 4 (Intel) or 0x80000005 (AMD), or 0 where neither
 * says. */
static inline size_t sa_core_l1d_bytes(void) {
  unsigned a, b, c, d;
  if (__get_cpuid_max(0, NULL) >= 4)
    for (unsigned i = 0; i < 8 && __get_cpuid_count(4, i, &a, &b, &c, &d);
         i++) {
      if (!(a & 31))
        break;
      if ((a >> 5 & 7) == 1 && (a & 31) != 2)
        return (size_t)((b >> 22) + 1) * ((b >> 12 & 1023) + 1) *
               ((b & 4095) + 1) * ((size_t)c + 1);
    }
  if (__get_cpuid_max(0x80000000, NULL) >= 0x80000005 &&
      __get_cpuid(0x80000005, &a, &b, &c, &d))
    return (size_t)(c >> 24) * 1024;
  return 0;
}

/* Whether the L1D holds 48 KiB or more: the line between the two cores
 * measured (Zen 4, 32 KiB; Zen 5, 48 KiB). Read once per including file
 * (racing first calls store one value). */
static inline int sa_core_l1d_large(void) {
  static int known; /* 0: not read yet, 1: smaller, 2: 48 KiB or more */
  int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (!v) {
    v = sa_core_l1d_bytes() >= 48 * 1024 ? 2 : 1;
    __atomic_store_n(&known, v, __ATOMIC_RELAXED);
  }
  return v == 2;
}

/* Whether the core is Intel's (CPUID leaf 0's vendor string): avx512's
 * decode kernel names its rows into L2 there whatever the L1D's size, and
 * avx512's score takes decode's keys as four streams only there. Read once
 * per including file, as above. */
static inline int sa_core_intel(void) {
  static int known; /* 0: not read yet, 1: another maker, 2: Intel */
  int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (!v) {
    unsigned a, b = 0, c = 0, d = 0;
    v = __get_cpuid(0, &a, &b, &c, &d) && b == 0x756e6547u /* "Genu" */ &&
                d == 0x49656e69u /* "ineI" */ && c == 0x6c65746eu /* "ntel" */
            ? 2
            : 1;
    __atomic_store_n(&known, v, __ATOMIC_RELAXED);
  }
  return v == 2;
}

#endif /* SA_CPU_CORE_H */
