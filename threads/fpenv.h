/*
 * Internal: the floating-point control state a call runs under.
 *
 * Rounding mode and flush-to-zero / denormals-are-zero live in a per-thread
 * register (MXCSR on x86-64, FPCR on AArch64) that new threads inherit from
 * their creator at creation time, not later. Workers copy the caller's value
 * at the start of every job, so a tile computes the same bits whichever
 * thread runs it, even after the application changed its own mode.
 * Reading and writing the register costs a few cycles, and only a worker
 * whose value differs writes it.
 */
#ifndef SA_THREADS_FPENV_H
#define SA_THREADS_FPENV_H

#include <stdint.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h> /* SSE: part of baseline x86-64 */

/* The low six bits are sticky exception flags, which differ from thread to
 * thread and change nothing: only the control bits are compared and copied. */
typedef uint64_t sa_fpenv;
static inline sa_fpenv sa_fpenv_get(void) { return _mm_getcsr() & ~0x3Fu; }
static inline void sa_fpenv_set(sa_fpenv e) { _mm_setcsr((unsigned)e); }
static inline int sa_fpenv_equal(sa_fpenv a, sa_fpenv b) { return a == b; }

#elif defined(__aarch64__)

typedef uint64_t sa_fpenv;
static inline sa_fpenv sa_fpenv_get(void) {
  uint64_t v;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
  return v;
}
static inline void sa_fpenv_set(sa_fpenv e) {
  __asm__ __volatile__("msr fpcr, %0" : : "r"(e));
}
static inline int sa_fpenv_equal(sa_fpenv a, sa_fpenv b) { return a == b; }

#else
#include <fenv.h>
#include <string.h>

typedef fenv_t sa_fpenv;
static inline sa_fpenv sa_fpenv_get(void) {
  fenv_t e;
  fegetenv(&e);
  return e;
}
static inline void sa_fpenv_set(sa_fpenv e) { fesetenv(&e); }
static inline int sa_fpenv_equal(sa_fpenv a, sa_fpenv b) {
  return memcmp(&a, &b, sizeof a) == 0;
}
#endif

#endif
