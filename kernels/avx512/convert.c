/*
 * Conversions, AVX-512: n values, bit for bit what dtype.h's per-value
 * functions give, whatever the rounding mode and FTZ/DAZ.
 *
 * f16 -> f32 is vcvtph2ps, exact and blind to MXCSR; a signalling NaN
 * comes back quiet, as dtype.h has it. f32 -> f16 is vcvtps2ph with the
 * rounding in its immediate (nearest even, not MXCSR's): it keeps the sign
 * and top payload bits of a NaN and sets the quiet bit, and produces f16
 * denormals exactly; an f32 denormal rounds to a signed zero with or without
 * DAZ. bf16 is done in integers: widening is a shift (plus the quiet bit for
 * a signalling NaN), narrowing adds the rounding bias, as dtype.h does;
 * vcvtneps2bf16 would flush denormals.
 *
 * q8_0 -> f32 is int8 * f16 scale, exact in f32. f32 -> q8_0 is ggml's
 * reference quantiser: the same scalar d = amax / 127 and id = 1 / d, the
 * same x * id in f32, and roundf (half away from zero) as truncation plus a
 * comparison of the exact remainder. A block holding Inf or NaN goes to
 * dtype.h's loop, whose max depends on where the NaN lies.
 *
 * Tails: the last n % 16 (32) values are loaded and stored masked.
 */
#include <immintrin.h>

#include "kernels/avx512/util.h"
#include "kernels/avx512/widen.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"

void sa_f16_to_f32__avx512(size_t n, const void *src, void *dst) {
  const uint16_t *s = src;
  float *d = dst;
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(d + i, sa_widen_f16(sa_load_h16(s + i, 16)));
  if (i < n)
    _mm512_mask_storeu_ps(d + i, sa_mask16(n - i),
                          sa_widen_f16(sa_load_h16(s + i, n - i)));
}

/* x << 16, with the quiet bit set where that is a NaN. */
static inline __m512i bf16_bits(__m256i h) {
  __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
  __mmask16 nan = _mm512_cmpgt_epu32_mask(
      _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
      _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_or_epi32(u, nan, u, _mm512_set1_epi32(0x00400000));
}

void sa_bf16_to_f32__avx512(size_t n, const void *src, void *dst) {
  const uint16_t *s = src;
  float *d = dst;
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_si512(d + i, bf16_bits(sa_load_h16(s + i, 16)));
  if (i < n)
    _mm512_mask_storeu_epi32(d + i, sa_mask16(n - i),
                             bf16_bits(sa_load_h16(s + i, n - i)));
}

void sa_q8_0_to_f32__avx512(size_t n, const void *src, void *dst) {
  const sa_block_q8_0 *s = src;
  float *d = dst;
  for (size_t b = 0; b < n / SA_QK8_0; b++) {
    __m512 sc = sa_q8_0_scale(s + b);
    _mm512_storeu_ps(d + 32 * b, sa_widen_q8_0(s + b, 0, sc));
    _mm512_storeu_ps(d + 32 * b + 16, sa_widen_q8_0(s + b, 1, sc));
  }
}

static inline __m256i f16_bits(__m512 x) {
  return _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

void sa_f32_to_f16__avx512(size_t n, const void *src, void *dst) {
  const float *s = src;
  uint16_t *d = dst;
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(d + i), f16_bits(_mm512_loadu_ps(s + i)));
  if (i < n) {
    __mmask16 k = sa_mask16(n - i);
    _mm256_mask_storeu_epi16(d + i, k,
                             f16_bits(_mm512_maskz_loadu_ps(k, s + i)));
  }
}

/* dtype.h's sa_f32_to_bf16 on 16 lanes, in 32-bit lanes. */
static inline __m256i bf16_round(__m512i u) {
  __mmask16 nan = _mm512_cmpgt_epu32_mask(
      _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
      _mm512_set1_epi32(0x7f800000));
  __m512i odd =
      _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(
      _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))),
      16);
  __m512i q =
      _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(r, nan, q));
}

void sa_f32_to_bf16__avx512(size_t n, const void *src, void *dst) {
  const float *s = src;
  uint16_t *d = dst;
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(d + i),
                        bf16_round(_mm512_loadu_si512(s + i)));
  if (i < n) {
    __mmask16 k = sa_mask16(n - i);
    _mm256_mask_storeu_epi16(d + i, k,
                             bf16_round(_mm512_maskz_loadu_epi32(k, s + i)));
  }
}

/* roundf(x * id) as int32: truncate, then step away from zero where the
 * dropped fraction (exact: x - trunc(x) needs no rounding) is at least 1/2.
 * Inf and NaN go through as they would in (int)roundf: 0x80000000. */
static inline __m512i round_away(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  __m512 a = _mm512_andnot_ps(sign, x);
  __m512 t = _mm512_roundscale_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  __mmask16 up =
      _mm512_cmp_ps_mask(_mm512_sub_ps(a, t), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  t = _mm512_mask_add_ps(t, up, t, _mm512_set1_ps(1.0f));
  return _mm512_cvttps_epi32(_mm512_or_ps(t, _mm512_and_ps(x, sign)));
}

static void quantize_block(const float *x, sa_block_q8_0 *y) {
  __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
  const __m512i expo = _mm512_set1_epi32(0x7f800000);
  __mmask16 bad0 = _mm512_cmpeq_epi32_mask(
      _mm512_and_si512(_mm512_castps_si512(x0), expo), expo);
  __mmask16 bad1 = _mm512_cmpeq_epi32_mask(
      _mm512_and_si512(_mm512_castps_si512(x1), expo), expo);
  if (bad0 | bad1) {
    sa_quantize_q8_0(x, y);
    return;
  }
  /* finite: max is exact and independent of order */
  const __m512 sign = _mm512_set1_ps(-0.0f);
  float amax = _mm512_reduce_max_ps(
      _mm512_max_ps(_mm512_andnot_ps(sign, x0), _mm512_andnot_ps(sign, x1)));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->scale = sa_f32_to_f16(d);
  __m512 vid = _mm512_set1_ps(id);
  __m128i q0 = _mm512_cvtepi32_epi8(round_away(_mm512_mul_ps(x0, vid)));
  __m128i q1 = _mm512_cvtepi32_epi8(round_away(_mm512_mul_ps(x1, vid)));
  _mm_storeu_si128((__m128i *)y->q, q0);
  _mm_storeu_si128((__m128i *)(y->q + 16), q1);
}

void sa_f32_to_q8_0__avx512(size_t n, const void *src, void *dst) {
  const float *s = src;
  sa_block_q8_0 *d = dst;
  for (size_t b = 0; b < n / SA_QK8_0; b++)
    quantize_block(s + b * SA_QK8_0, d + b);
}
