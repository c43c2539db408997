/*
 * Conversions, AVX2: n values between f32 and f16 / bf16 / q8_0 (q8_0: n a
 * multiple of 32), bit for bit dtype.h's, for every input, whatever the
 * MXCSR holds.
 *
 * Why integer arithmetic for f16 and not F16C: real CPUs ignore FTZ and DAZ
 * in vcvtph2ps / vcvtps2ph, but qemu (which runs the suite as Haswell)
 * honours them and flushes f16 denormals. The integer versions are a
 * dozen uops per 8 values, and conversions run once per tensor, not in the
 * attention loops (the kernels use F16C there, see widen.h). The only float
 * instructions here are exact whatever the rounding mode: int -> float of
 * values below 2^24, multiplies by powers of two and f16 scales whose
 * results are normal, and the q8_0 quantiser's own arithmetic, which does
 * what dtype.h's does in the same MXCSR.
 *
 * Main loop 8 values (q8_0: one block) at a time; the last n % 8 values go
 * through dtype.h one by one, so nothing past n is read or written.
 */
#include <immintrin.h>

#include "kernels/dtype.h"
#include "kernels/kernels.h"

#define SA_INLINE static inline __attribute__((always_inline))

SA_INLINE __m256i set1(uint32_t x) { return _mm256_set1_epi32((int)x); }

/* a > b, a < b: signed compares, so for values below 2^31 only */
SA_INLINE __m256i gt(__m256i a, uint32_t b) {
  return _mm256_cmpgt_epi32(a, set1(b));
}
SA_INLINE __m256i lt(__m256i a, uint32_t b) {
  return _mm256_cmpgt_epi32(set1(b), a);
}

/* 8 zero-extended binary16 -> binary32 bits (sa_f16_to_f32). */
SA_INLINE __m256i f16_to_f32_bits(__m256i h) {
  const __m256i sign = _mm256_slli_epi32(_mm256_and_si256(h, set1(0x8000)), 16);
  const __m256i em = _mm256_and_si256(h, set1(0x7fff));
  const __m256i sh = _mm256_slli_epi32(em, 13);
  __m256i r = _mm256_add_epi32(sh, set1((127u - 15u) << 23));
  /* Inf and NaN (quietened) */
  const __m256i quiet = _mm256_and_si256(gt(em, 0x7c00), set1(0x00400000));
  r = _mm256_blendv_epi8(
      r, _mm256_or_si256(_mm256_or_si256(sh, set1(0x7f800000)), quiet),
      gt(em, 0x7bff));
  /* zero and denormals: man * 2^-24, exact (a normal result) */
  const __m256 den =
      _mm256_mul_ps(_mm256_cvtepi32_ps(em), _mm256_set1_ps(0x1p-24f));
  r = _mm256_blendv_epi8(r, _mm256_castps_si256(den), lt(em, 0x400));
  return _mm256_or_si256(r, sign);
}

/* 8 binary32 bits -> binary16 bits in the low halves (sa_f32_to_f16). */
SA_INLINE __m256i f32_to_f16_bits(__m256i u) {
  const __m256i abs = _mm256_and_si256(u, set1(0x7fffffff));
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 16), set1(0x8000));
  /* normal: rebias, round the 13 dropped bits to nearest even */
  __m256i r = _mm256_sub_epi32(abs, set1((127u - 15u) << 23));
  r = _mm256_add_epi32(
      r, _mm256_add_epi32(set1(0x0fff),
                          _mm256_and_si256(_mm256_srli_epi32(r, 13), set1(1))));
  r = _mm256_srli_epi32(r, 13);
  /* f16 denormal: the significand shifted right by 14..24, nearest even */
  const __m256i man =
      _mm256_or_si256(_mm256_and_si256(abs, set1(0x7fffff)), set1(0x800000));
  const __m256i shift = _mm256_sub_epi32(set1(126), _mm256_srli_epi32(abs, 23));
  const __m256i half1 = _mm256_sub_epi32(
      _mm256_sllv_epi32(set1(1), _mm256_sub_epi32(shift, set1(1))), set1(1));
  const __m256i odd = _mm256_and_si256(_mm256_srlv_epi32(man, shift), set1(1));
  const __m256i den = _mm256_srlv_epi32(
      _mm256_add_epi32(man, _mm256_add_epi32(half1, odd)), shift);
  r = _mm256_blendv_epi8(r, den, lt(abs, 0x38800000));
  r = _mm256_andnot_si256(lt(abs, 0x33000000), r); /* below 2^-25: 0 */
  r = _mm256_blendv_epi8(r, set1(0x7c00), gt(abs, 0x477fefff)); /* Inf */
  const __m256i nan = _mm256_or_si256(
      set1(0x7e00), _mm256_and_si256(_mm256_srli_epi32(abs, 13), set1(0x3ff)));
  r = _mm256_blendv_epi8(r, nan, gt(abs, 0x7f800000));
  return _mm256_or_si256(r, sign);
}

/* 8 binary32 bits -> bfloat16 bits in the low halves (sa_f32_to_bf16). */
SA_INLINE __m256i f32_to_bf16_bits(__m256i u) {
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i rnd = _mm256_srli_epi32(
      _mm256_add_epi32(
          u, _mm256_add_epi32(set1(0x7fff), _mm256_and_si256(hi, set1(1)))),
      16);
  const __m256i abs = _mm256_and_si256(u, set1(0x7fffffff));
  return _mm256_blendv_epi8(rnd, _mm256_or_si256(hi, set1(0x40)),
                            gt(abs, 0x7f800000));
}

/* The low halves of 8 lanes, in order, to 8 uint16 at d. */
SA_INLINE void store_halves(uint16_t *d, __m256i r) {
  _mm_storeu_si128((__m128i *)d,
                   _mm_packus_epi32(_mm256_castsi256_si128(r),
                                    _mm256_extracti128_si256(r, 1)));
}

SA_INLINE __m256i load_halves(const uint16_t *s) {
  return _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)s));
}

void sa_f16_to_f32__avx2(size_t n, const void *src, void *dst) {
  const uint16_t *s = src;
  float *d = dst;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_si256((__m256i *)(d + i),
                        f16_to_f32_bits(load_halves(s + i)));
  for (; i < n; i++)
    d[i] = sa_f16_to_f32(s[i]);
}

void sa_bf16_to_f32__avx2(size_t n, const void *src, void *dst) {
  const uint16_t *s = src;
  float *d = dst;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i u = _mm256_slli_epi32(load_halves(s + i), 16);
    __m256i nan = gt(_mm256_and_si256(u, set1(0x7fffffff)), 0x7f800000);
    u = _mm256_or_si256(u, _mm256_and_si256(nan, set1(0x00400000)));
    _mm256_storeu_si256((__m256i *)(d + i), u);
  }
  for (; i < n; i++)
    d[i] = sa_bf16_to_f32(s[i]);
}

void sa_f32_to_f16__avx2(size_t n, const void *src, void *dst) {
  const float *s = src;
  uint16_t *d = dst;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    store_halves(d + i,
                 f32_to_f16_bits(_mm256_loadu_si256((const __m256i *)(s + i))));
  for (; i < n; i++)
    d[i] = sa_f32_to_f16(s[i]);
}

void sa_f32_to_bf16__avx2(size_t n, const void *src, void *dst) {
  const float *s = src;
  uint16_t *d = dst;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    store_halves(
        d + i, f32_to_bf16_bits(_mm256_loadu_si256((const __m256i *)(s + i))));
  for (; i < n; i++)
    d[i] = sa_f32_to_bf16(s[i]);
}

/* (float)q * scale is exact (widen.h), as in sa_dequantize_q8_0. */
void sa_q8_0_to_f32__avx2(size_t n, const void *src, void *dst) {
  const sa_block_q8_0 *s = src;
  float *d = dst;
  for (size_t b = 0; b < n / SA_QK8_0; b++, d += SA_QK8_0) {
    const __m256 sc = _mm256_set1_ps(sa_f16_to_f32(s[b].scale));
    for (size_t u = 0; u < SA_QK8_0; u += 8) {
      __m256i q =
          _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(s[b].q + u)));
      _mm256_storeu_ps(d + u, _mm256_mul_ps(_mm256_cvtepi32_ps(q), sc));
    }
  }
}

/*
 * One block of ggml's quantiser, as sa_quantize_q8_0: amax by integer max of
 * the |x| bits (the float order for non-negative values); d and 1/d by the
 * same scalar divisions; x * id by the same multiply; roundf (half away from
 * zero, rounding-mode free) as truncation plus a step of 1 where the exactly
 * computed fraction is at least 1/2. A block holding Inf or NaN, or whose
 * 1/d overflows, goes to the scalar quantiser: its float -> int8 of a NaN or
 * Inf is the compiler's, so only the same code gives the same bytes.
 */
static void quantize_block(const float *x, sa_block_q8_0 *y) {
  __m256i v[4], amax = _mm256_setzero_si256();
  for (size_t u = 0; u < 4; u++) {
    v[u] = _mm256_loadu_si256((const __m256i *)(x + 8 * u));
    amax = _mm256_max_epi32(amax, _mm256_and_si256(v[u], set1(0x7fffffff)));
  }
  __m128i m4 = _mm_max_epi32(_mm256_castsi256_si128(amax),
                             _mm256_extracti128_si256(amax, 1));
  m4 = _mm_max_epi32(m4, _mm_shuffle_epi32(m4, 0x4e));
  m4 = _mm_max_epi32(m4, _mm_shuffle_epi32(m4, 0xb1));
  const uint32_t abits = (uint32_t)_mm_cvtsi128_si32(m4);
  const float d = sa_bits_f32(abits) / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  if (abits >= 0x7f800000u || isinf(id)) {
    sa_f32_to_q8_0__scalar(SA_QK8_0, x, y);
    return;
  }
  const uint16_t scale = sa_f32_to_f16(d);
  memcpy(&y->scale, &scale, sizeof scale);
  const __m256 vid = _mm256_set1_ps(id), half = _mm256_set1_ps(0.5f);
  const __m256 sgn = _mm256_castsi256_ps(set1(0x80000000));
  __m256i q[4];
  for (size_t u = 0; u < 4; u++) {
    __m256 p = _mm256_mul_ps(_mm256_castsi256_ps(v[u]), vid);
    __m256 t = _mm256_round_ps(p, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_andnot_ps(sgn, _mm256_sub_ps(p, t)); /* |p - t|, exact */
    __m256 one = _mm256_or_ps(_mm256_and_ps(p, sgn), _mm256_set1_ps(1.0f));
    t = _mm256_add_ps(t,
                      _mm256_and_ps(_mm256_cmp_ps(f, half, _CMP_GE_OQ), one));
    q[u] = _mm256_cvttps_epi32(t);
  }
  /* packs interleave 128-bit lanes: dword k of c holds 4 int8 of q[k % 4]'s
   * low (k < 4) or high half */
  __m256i c = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]),
                                 _mm256_packs_epi32(q[2], q[3]));
  c = _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256((__m256i *)y->q, c);
}

void sa_f32_to_q8_0__avx2(size_t n, const void *src, void *dst) {
  const float *s = src;
  sa_block_q8_0 *d = dst;
  for (size_t b = 0; b < n / SA_QK8_0; b++)
    quantize_block(s + b * SA_QK8_0, d + b);
}
