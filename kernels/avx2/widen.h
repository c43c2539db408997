/*
 * Widening narrow K / V values to fp32 vectors for the AVX2 kernels
 * (score_t.c, wsum_t.c). Every widening is exact, so the kernels then do the
 * f32 kernels' arithmetic on the very values the oracle sees:
 *   f16:  F16C vcvtph2ps (exact, and real CPUs ignore DAZ for it);
 *   bf16: zero-extend and shift into the top half (an sNaN stays signalling,
 *         but the first FMA quietens it as the oracle's widening does);
 *   q8_0: int8 -> int32 -> f32, times the block's f16 scale: an 8-bit by
 *         11-bit product no smaller than 2^-24, so exact in fp32.
 * The kernels name the type as a constant (sa_dtype) at every call, so each
 * helper folds to the one type's instructions. Static inline only (util.h
 * says why).
 *
 * Rows are byte pointers: element p of a row of type t lies at
 * sa_elem_at(t, row, p), and a q8_0 row is whole blocks, so a vector of 8
 * values never crosses a block and its scale is that of block p / 32.
 */
#ifndef SA_AVX2_WIDEN_H
#define SA_AVX2_WIDEN_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "simdattn.h"

#define SA_INLINE static inline __attribute__((always_inline))

/* Bytes of n units (elements, or q8_0 blocks) of type t. */
SA_INLINE size_t sa_row_bytes(sa_dtype t, size_t n) {
  return n * (t == SA_Q8_0 ? sizeof(sa_block_q8_0) : 2);
}

/* Where the unit holding element p of a row starts (q8_0: its block). */
SA_INLINE const char *sa_unit_at(sa_dtype t, const char *row, size_t p) {
  return t == SA_Q8_0 ? row + p / 32 * sizeof(sa_block_q8_0) : row + 2 * p;
}

/* The address of element p of a row (q8_0: its int8). */
SA_INLINE const char *sa_elem_at(sa_dtype t, const char *row, size_t p) {
  return t == SA_Q8_0 ? sa_unit_at(t, row, p) + 2 + p % 32 : row + 2 * p;
}

/* The scale of the q8_0 block holding element p, in all 8 lanes. */
SA_INLINE __m256 sa_q8_scale(const char *row, size_t p) {
  uint16_t h;
  memcpy(&h, sa_unit_at(SA_Q8_0, row, p), 2);
  return _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/* 8 values of type t at x (sa_elem_at); sc: the block's scale for q8_0,
 * ignored otherwise. */
SA_INLINE __m256 sa_widen8(sa_dtype t, const char *x, __m256 sc) {
  if (t == SA_F16)
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)x));
  if (t == SA_BF16)
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)x)), 16));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                           _mm_loadl_epi64((const __m128i *)x))),
                       sc);
}

/* The first r (< 8) 16-bit values at x, other lanes 0, without reading past
 * x[r - 1]: AVX2 has no 16-bit masked load, so through the stack. Only f16
 * and bf16 rows have such tails (q8_0 rows are whole blocks). */
SA_INLINE __m256 sa_widen8_part(sa_dtype t, const char *x, size_t r) {
  uint16_t buf[8] = {0};
  memcpy(buf, x, 2 * (r < 8 ? r : 8));
  return sa_widen8(t, (const char *)buf, _mm256_setzero_ps());
}

/* Elements [p, p + 8) of a row, of which the first np are real (np < 8
 * only in f16 / bf16 rows); each q8_0 call fetches its block's scale. */
SA_INLINE __m256 sa_widen8_at(sa_dtype t, const char *row, size_t p,
                              size_t np) {
  if (t == SA_Q8_0)
    return sa_widen8(t, sa_elem_at(t, row, p), sa_q8_scale(row, p));
  if (np < 8)
    return sa_widen8_part(t, sa_elem_at(t, row, p), np);
  return sa_widen8(t, sa_elem_at(t, row, p), _mm256_setzero_ps());
}

/* Prefetch a row of `bytes` bytes at x: every 64-byte line holds a
 * 64-byte step's start or the row's last byte. */
SA_INLINE void sa_prefetch_row(const char *x, size_t bytes) {
  for (size_t b = 0; b < bytes; b += 64)
    _mm_prefetch(x + b, _MM_HINT_T0);
  _mm_prefetch(x + bytes - 1, _MM_HINT_T0);
}

#endif /* SA_AVX2_WIDEN_H */
