/*
 * Widening narrow K / V values to fp32 vectors for the AVX2 kernels
 * (score_t.c, wsum_t.c, decode.c). Every widening is exact, so the kernels
 * then do the f32 kernels' arithmetic on the very values the oracle sees:
 *   f16:  F16C vcvtph2ps (exact, and real CPUs ignore DAZ for it);
 *   bf16: into the top half of a lane, zero below: 8 values zero-extended
 *         and shifted, or 16 as even and odd values (a shift, an and); an
 *         sNaN stays signalling, but the first FMA quietens it as the
 *         oracle's widening does;
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

/* 16 bf16 values at x as two vectors, without zero-extension: the even
 * ones (values 0, 2, .. 14) in *e and the odd ones in *o. A 32-bit lane
 * holds values 2i (low half) and 2i + 1 (high half), each an f32 once in
 * the high half: one load, a shift and an and, where widening 8 at a time
 * takes two zero-extending loads and two shifts (on a Zen 3 core shifts
 * and shuffles share pipe 1 with the FMAs). The and's mask is made here,
 * in the caller's loop (the empty asm keeps it there): gcc hoists the
 * constant out of every loop, where it held one of the 16 registers
 * through wsum_t's 6-row tile (12 sums, 2 V vectors, a broadcast), which
 * then ran 1.8x slower. A kernel summing into the two vectors keeps the
 * columns so, and puts them back in order once (sa_pairs_in_order). */
SA_INLINE void sa_widen16_bf16_pairs(const char *x, __m256 *e, __m256 *o) {
  __m256i v = _mm256_loadu_si256((const __m256i *)x);
  __m256i high = _mm256_set1_epi32((int)0xffff0000u);
  __asm__("" : "+x"(high));
  *e = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  *o = _mm256_castsi256_ps(_mm256_and_si256(v, high));
}

/* Columns 0, 2, .. 14 in *e and 1, 3, .. 15 in *o, back in column order
 * (0-7 in *e, 8-15 in *o). */
SA_INLINE void sa_pairs_in_order(__m256 *e, __m256 *o) {
  __m256 lo = _mm256_unpacklo_ps(*e, *o), hi = _mm256_unpackhi_ps(*e, *o);
  *e = _mm256_permute2f128_ps(lo, hi, 0x20);
  *o = _mm256_permute2f128_ps(lo, hi, 0x31);
}

/* Prefetch a row of `bytes` bytes at x: every 64-byte line holds a
 * 64-byte step's start or the row's last byte. */
SA_INLINE void sa_prefetch_row(const char *x, size_t bytes) {
  for (size_t b = 0; b < bytes; b += 64)
    _mm_prefetch(x + b, _MM_HINT_T0);
  _mm_prefetch(x + bytes - 1, _MM_HINT_T0);
}

#endif /* SA_AVX2_WIDEN_H */
