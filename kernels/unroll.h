/*
 * A count known only at run time, turned into a compile-time constant:
 * SA_UNROLL_1_<N>(x, CALL) expands to CALL(c) for the c in [1, N] equal to
 * x (x outside: CALL(1)), SA_UNROLL_0_15(x, CALL) to CALL(c) for x in
 * [0, 15]. A kernel body written for a constant row count (or step set)
 * keeps its accumulator arrays in registers; every call site instantiates
 * it once per value.
 *
 * Macros only: no code, so any kernel directory may include it whatever
 * its ISA flags.
 */
#ifndef SA_KERNELS_UNROLL_H
#define SA_KERNELS_UNROLL_H

#define SA_UNROLL_CASE_(c, CALL)                                               \
  case c:                                                                      \
    CALL(c);                                                                   \
    break;

#define SA_UNROLL_1_2(x, CALL)                                                 \
  do {                                                                         \
    if ((x) == 2)                                                              \
      CALL(2);                                                                 \
    else                                                                       \
      CALL(1);                                                                 \
  } while (0)

#define SA_UNROLL_1_4(x, CALL)                                                 \
  do {                                                                         \
    switch (x) {                                                               \
      SA_UNROLL_CASE_(4, CALL)                                                 \
      SA_UNROLL_CASE_(3, CALL)                                                 \
      SA_UNROLL_CASE_(2, CALL)                                                 \
    default:                                                                   \
      CALL(1);                                                                 \
      break;                                                                   \
    }                                                                          \
  } while (0)

#define SA_UNROLL_1_6(x, CALL)                                                 \
  do {                                                                         \
    switch (x) {                                                               \
      SA_UNROLL_CASE_(6, CALL)                                                 \
      SA_UNROLL_CASE_(5, CALL)                                                 \
      SA_UNROLL_CASE_(4, CALL)                                                 \
      SA_UNROLL_CASE_(3, CALL)                                                 \
      SA_UNROLL_CASE_(2, CALL)                                                 \
    default:                                                                   \
      CALL(1);                                                                 \
      break;                                                                   \
    }                                                                          \
  } while (0)

#define SA_UNROLL_1_8(x, CALL)                                                 \
  do {                                                                         \
    switch (x) {                                                               \
      SA_UNROLL_CASE_(8, CALL)                                                 \
      SA_UNROLL_CASE_(7, CALL)                                                 \
      SA_UNROLL_CASE_(6, CALL)                                                 \
      SA_UNROLL_CASE_(5, CALL)                                                 \
      SA_UNROLL_CASE_(4, CALL)                                                 \
      SA_UNROLL_CASE_(3, CALL)                                                 \
      SA_UNROLL_CASE_(2, CALL)                                                 \
    default:                                                                   \
      CALL(1);                                                                 \
      break;                                                                   \
    }                                                                          \
  } while (0)

/* x in [1, rb] for a block of rb rows, rb 2, 4 or 8 (a constant): the
 * wsum kernels' row blocks, whose width depends on the block's height. */
#define SA_UNROLL_1_RB(rb, x, CALL)                                            \
  do {                                                                         \
    if ((rb) == 2)                                                             \
      SA_UNROLL_1_2(x, CALL);                                                  \
    else if ((rb) == 4)                                                        \
      SA_UNROLL_1_4(x, CALL);                                                  \
    else                                                                       \
      SA_UNROLL_1_8(x, CALL);                                                  \
  } while (0)

#define SA_UNROLL_0_15(x, CALL)                                                \
  do {                                                                         \
    switch (x) {                                                               \
      SA_UNROLL_CASE_(0, CALL)                                                 \
      SA_UNROLL_CASE_(1, CALL)                                                 \
      SA_UNROLL_CASE_(2, CALL)                                                 \
      SA_UNROLL_CASE_(3, CALL)                                                 \
      SA_UNROLL_CASE_(4, CALL)                                                 \
      SA_UNROLL_CASE_(5, CALL)                                                 \
      SA_UNROLL_CASE_(6, CALL)                                                 \
      SA_UNROLL_CASE_(7, CALL)                                                 \
      SA_UNROLL_CASE_(8, CALL)                                                 \
      SA_UNROLL_CASE_(9, CALL)                                                 \
      SA_UNROLL_CASE_(10, CALL)                                                \
      SA_UNROLL_CASE_(11, CALL)                                                \
      SA_UNROLL_CASE_(12, CALL)                                                \
      SA_UNROLL_CASE_(13, CALL)                                                \
      SA_UNROLL_CASE_(14, CALL)                                                \
      SA_UNROLL_CASE_(15, CALL)                                                \
    default:                                                                   \
      break;                                                                   \
    }                                                                          \
  } while (0)

/* STEP(a0); STEP(a1); ... on the accumulators a0..a11 (a0..a15) of a peak
 * probe (kernels/<isa>/peak.c): independent chains written out one by one,
 * so each stays in a register of its own. */
#define SA_STEP_A0_A11(STEP)                                                   \
  do {                                                                         \
    STEP(a0);                                                                  \
    STEP(a1);                                                                  \
    STEP(a2);                                                                  \
    STEP(a3);                                                                  \
    STEP(a4);                                                                  \
    STEP(a5);                                                                  \
    STEP(a6);                                                                  \
    STEP(a7);                                                                  \
    STEP(a8);                                                                  \
    STEP(a9);                                                                  \
    STEP(a10);                                                                 \
    STEP(a11);                                                                 \
  } while (0)
#define SA_STEP_A0_A15(STEP)                                                   \
  do {                                                                         \
    SA_STEP_A0_A11(STEP);                                                      \
    STEP(a12);                                                                 \
    STEP(a13);                                                                 \
    STEP(a14);                                                                 \
    STEP(a15);                                                                 \
  } while (0)

#endif
