/*
 * Narrow element types widened to fp32 in AVX-512 registers, exactly: the
 * value each lane gets is the one dtype.h gives, so the kernels that use
 * these do the f32 kernels' arithmetic on the same numbers as the oracle.
 * Static inline only (see util.h): compiled with AVX-512 flags.
 *
 * The units are what one 64-byte load or one q8_0 block holds, 32 values:
 * f16 and bf16 as one vector of 32 halves, q8_0 as one block. Lanes past a
 * short tail are loaded masked (neither read nor faulted) and come back 0.
 *
 * bf16 also comes as evens and odds (sa_widen32_bf16_eo): two operations
 * for 32 values, none crossing lanes, for kernels that can keep their
 * other operand (Q, or the sums) in that order.
 *
 * Signalling NaNs are not quietened here: every use is an arithmetic
 * operation, which quietens them (the conversions to f32 do it themselves).
 */
#ifndef SA_AVX512_WIDEN_H
#define SA_AVX512_WIDEN_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/avx512/util.h"
#include "simdattn.h"

/* Lanes [0, r) of a 32-lane (16-bit element) vector; all once r >= 32. */
static inline __mmask32 sa_mask32(size_t r) {
  return r >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << r) - 1u);
}

/* Halves [0, r) of x (r <= 32), the rest 0. */
static inline __m512i sa_load_h32(const uint16_t *x, size_t r) {
  return r >= 32 ? _mm512_loadu_si512(x)
                 : _mm512_maskz_loadu_epi16(sa_mask32(r), x);
}

/* Halves [0, r) of x (r <= 16), the rest 0. */
static inline __m256i sa_load_h16(const uint16_t *x, size_t r) {
  return r >= 16 ? _mm256_loadu_si256((const __m256i *)x)
                 : _mm256_maskz_loadu_epi16((__mmask16)((1u << r) - 1u), x);
}

/* f16 -> f32: vcvtph2ps is exact for every input, denormals included, and
 * takes no notice of MXCSR (DAZ included) for binary16 sources. */
static inline __m512 sa_widen_f16(__m256i h) { return _mm512_cvtph_ps(h); }

/* bf16 -> f32: the bits are the top half. */
static inline __m512 sa_widen_bf16(__m256i h) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The f16 scale of a q8_0 block in all 16 lanes. */
static inline __m512 sa_q8_0_scale(const sa_block_q8_0 *b) {
  return _mm512_cvtph_ps(_mm256_set1_epi16((short)b->scale));
}

/* 32 bf16 values p .. p + 32 of row (r valid, the rest 0) widened as two
 * vectors: the 16 at even positions and the 16 at odd ones. Two single
 * operations, no lane crossing: the users keep their other operand in the
 * same order. */
static inline void sa_widen32_bf16_eo(const void *row, size_t p, size_t r,
                                      __m512 *ev, __m512 *od) {
  __m512i x = sa_load_h32((const uint16_t *)row + p, r);
  *ev = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
  *od = _mm512_castsi512_ps(
      _mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
}

/* Two vectors of sums in that order (ev: columns 0, 2, .., 30; od: 1, 3,
 * .., 31) back in column order, in place. */
static inline void sa_bf16_eo_columns(__m512 *ev, __m512 *od) {
  const __m512i lo =
      _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(8));
  __m512 e = *ev, o = *od;
  *ev = _mm512_permutex2var_ps(e, lo, o);
  *od = _mm512_permutex2var_ps(e, hi, o);
}

/* Most floats of Q a kernel copies in that order (8 KiB of its stack). */
enum { SA_BF16_EO_FLOATS = 2048 };

/* Rows [0, m) of q (ldq apart, d values) into qe (ldqe apart, ldqe a
 * multiple of 32), each 32 values as their 16 evens, then their 16 odds,
 * the values past d 0. */
static inline void sa_bf16_eo_rows(size_t m, size_t d, const float *q,
                                   size_t ldq, float *qe, size_t ldqe) {
  const __m512i ie = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12,
                                      10, 8, 6, 4, 2, 0);
  const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
  for (size_t r = 0; r < m; r++)
    for (size_t p = 0; p < ldqe; p += 32) {
      size_t rem = d > p ? d - p : 0;
      const float *qr = q + r * ldq + p;
      __m512 a0 = _mm512_maskz_loadu_ps(sa_mask16(rem), qr);
      __m512 a1 =
          _mm512_maskz_loadu_ps(sa_mask16(rem > 16 ? rem - 16 : 0), qr + 16);
      _mm512_store_ps(qe + r * ldqe + p, _mm512_permutex2var_ps(a0, ie, a1));
      _mm512_store_ps(qe + r * ldqe + p + 16,
                      _mm512_permutex2var_ps(a0, io, a1));
    }
}

/* For bf16 dots: if Q's m rows of d values fit in qe (SA_BF16_EO_FLOATS),
 * copies them there as evens and odds, points *q and *ldq at the copy
 * (its rows whole 32-value steps, 0 past d) and returns 1; else 0. */
static inline int sa_bf16_eo_q(size_t m, size_t d, const float **q, size_t *ldq,
                               float *qe) {
  const size_t ldqe = (d + 31) / 32 * 32;
  if (m * ldqe > SA_BF16_EO_FLOATS)
    return 0;
  sa_bf16_eo_rows(m, d, *q, *ldq, qe, ldqe);
  *q = qe;
  *ldq = ldqe;
  return 1;
}

/* Values 16 h .. 16 h + 15 of block b, times its scale: int8 * f16 needs at
 * most 8 + 11 significant bits, so the product is exact in f32. */
static inline __m512 sa_widen_q8_0(const sa_block_q8_0 *b, size_t h,
                                   __m512 scale) {
  __m128i q = _mm_loadu_si128((const __m128i *)(b->q + 16 * h));
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), scale);
}

/* 32 values of type t (SA_F16, SA_BF16 or SA_Q8_0, a constant at every
 * call) starting at value p of `row`, r of them valid (q8_0: r = 32, p a
 * multiple of 32), into lo (values 0..15) and hi (16..31). */
static inline __attribute__((always_inline)) void
sa_widen32(sa_dtype t, const void *row, size_t p, size_t r, __m512 *lo,
           __m512 *hi) {
  if (t == SA_Q8_0) {
    const sa_block_q8_0 *b = (const sa_block_q8_0 *)row + p / 32;
    __m512 sc = sa_q8_0_scale(b);
    *lo = sa_widen_q8_0(b, 0, sc);
    *hi = sa_widen_q8_0(b, 1, sc);
    return;
  }
  __m512i x = sa_load_h32((const uint16_t *)row + p, r);
  __m256i x0 = _mm512_castsi512_si256(x), x1 = _mm512_extracti64x4_epi64(x, 1);
  if (t == SA_F16) {
    *lo = sa_widen_f16(x0);
    *hi = sa_widen_f16(x1);
  } else {
    *lo = sa_widen_bf16(x0);
    *hi = sa_widen_bf16(x1);
  }
}

/* sa_widen32, or with eo (a constant at every call) bf16 as evens and
 * odds (sa_widen32_bf16_eo); eo means nothing to the other types. */
static inline __attribute__((always_inline)) void
sa_widen32_eo(sa_dtype t, int eo, const void *row, size_t p, size_t r,
              __m512 *lo, __m512 *hi) {
  if (t == SA_BF16 && eo)
    sa_widen32_bf16_eo(row, p, r, lo, hi);
  else
    sa_widen32(t, row, p, r, lo, hi);
}

/* 16 values of type t starting at value p of `row`, r of them valid (q8_0:
 * p a multiple of 16, r = 16). */
static inline __attribute__((always_inline)) __m512
sa_widen16(sa_dtype t, const void *row, size_t p, size_t r) {
  if (t == SA_Q8_0) {
    const sa_block_q8_0 *b = (const sa_block_q8_0 *)row + p / 32;
    return sa_widen_q8_0(b, p / 16 % 2, sa_q8_0_scale(b));
  }
  __m256i x = sa_load_h16((const uint16_t *)row + p, r);
  return t == SA_F16 ? sa_widen_f16(x) : sa_widen_bf16(x);
}

/* Bytes from the start of a row of type t to value p (q8_0: p's block). */
static inline size_t sa_widen_offset(sa_dtype t, size_t p) {
  return t == SA_Q8_0 ? p / 32 * sizeof(sa_block_q8_0) : 2 * p;
}

/* Bytes of one unit of t: ld* counts these. */
static inline size_t sa_widen_unit(sa_dtype t) {
  return t == SA_Q8_0 ? sizeof(sa_block_q8_0) : 2;
}

#endif /* SA_AVX512_WIDEN_H */
