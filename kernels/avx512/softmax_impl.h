/*
 * The row loops of softmax and softmax_online on AVX-512, written once and
 * instantiated by softmax_sleef.c and softmax_poly.c with their exp. The exp
 * is passed as a function pointer to a static inline function: with a
 * constant argument the compiler inlines the polynomial, and the SLEEF entry
 * point stays one direct call per 16 floats.
 *
 * Per row, three passes over at most n floats that stay in L1: the max, then
 * exp(x - max) stored in place and summed, then the scaling by 1/sum (or,
 * online, nothing: the caller rescales). Columns past the valid prefix are
 * written as 0 and never read, so masked-out garbage (even NaN) is harmless.
 */
#ifndef SA_AVX512_SOFTMAX_IMPL_H
#define SA_AVX512_SOFTMAX_IMPL_H

#include <math.h>

#include "kernels/avx512/util.h"

typedef __m512 (*sa_exp16_fn)(__m512);

/* max(init, row[0..count)). Four accumulators hide the max latency; the
 * operand order max(x, acc) keeps acc when x is NaN, as the oracle's
 * `x > acc ? x : acc` does. */
static inline float sa_rowmax16(const float *row, size_t count, float init) {
  __m512 a0 = _mm512_set1_ps(init), a1 = a0, a2 = a0, a3 = a0;
  size_t j = 0;
  for (; j + 64 <= count; j += 64) {
    a0 = _mm512_max_ps(_mm512_loadu_ps(row + j), a0);
    a1 = _mm512_max_ps(_mm512_loadu_ps(row + j + 16), a1);
    a2 = _mm512_max_ps(_mm512_loadu_ps(row + j + 32), a2);
    a3 = _mm512_max_ps(_mm512_loadu_ps(row + j + 48), a3);
  }
  for (; j + 16 <= count; j += 16)
    a0 = _mm512_max_ps(_mm512_loadu_ps(row + j), a0);
  if (j < count) {
    __mmask16 k = sa_mask16(count - j);
    a1 = _mm512_mask_max_ps(a1, k, _mm512_maskz_loadu_ps(k, row + j), a1);
  }
  a0 = _mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3));
  return _mm512_reduce_max_ps(a0);
}

/* row[j] = exp(row[j] - mx) for j < count; returns their sum. */
static inline float sa_expsum16(float *row, size_t count, float mx,
                                sa_exp16_fn exp16) {
  const __m512 vmx = _mm512_set1_ps(mx);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  size_t j = 0;
  for (; j + 32 <= count; j += 32) {
    __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), vmx));
    __m512 e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j + 16), vmx));
    _mm512_storeu_ps(row + j, e0);
    _mm512_storeu_ps(row + j + 16, e1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  if (j + 16 <= count) {
    __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), vmx));
    _mm512_storeu_ps(row + j, e);
    s0 = _mm512_add_ps(s0, e);
    j += 16;
  }
  if (j < count) {
    /* the masked-off lanes compute exp(0 - mx): kept out of sum and store */
    __mmask16 k = sa_mask16(count - j);
    __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), vmx));
    _mm512_mask_storeu_ps(row + j, k, e);
    s1 = _mm512_mask_add_ps(s1, k, s1, e);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

static inline void sa_scale16(float *row, size_t count, float c) {
  const __m512 vc = _mm512_set1_ps(c);
  size_t j = 0;
  for (; j + 16 <= count; j += 16)
    _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_loadu_ps(row + j), vc));
  if (j < count) {
    __mmask16 k = sa_mask16(count - j);
    _mm512_mask_storeu_ps(row + j, k,
                          _mm512_mul_ps(_mm512_maskz_loadu_ps(k, row + j), vc));
  }
}

static inline size_t sa_valid(const size_t *len, size_t i, size_t n) {
  return len ? (len[i] < n ? len[i] : n) : n;
}

static inline void sa_softmax16_rows(size_t m, size_t n, float *s, size_t lds,
                                     const size_t *len, sa_exp16_fn exp16) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    size_t valid = sa_valid(len, i, n);
    if (valid > 0) {
      float mx = sa_rowmax16(row, valid, -INFINITY);
      float sum = sa_expsum16(row, valid, mx, exp16);
      sa_scale16(row, valid, 1.0f / sum);
    }
    sa_zero16(row + valid, n - valid);
  }
}

static inline void sa_softmax_online16_rows(size_t m, size_t n, float *s,
                                            size_t lds, const size_t *len,
                                            float *mx, float *l, float *alpha,
                                            sa_exp16_fn exp16) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    size_t valid = sa_valid(len, i, n);
    float next = sa_rowmax16(row, valid, mx[i]);
    if (next == -INFINITY) {
      /* nothing valid seen yet: exp(-inf - -inf) would be NaN; alpha = 1
       * makes the caller's rescale a no-op. The max skipped NaN scores:
       * l carries one on (rare path, so a plain loop). */
      for (size_t j = 0; j < valid; j++)
        if (row[j] != row[j])
          l[i] = NAN;
      sa_zero16(row, n);
      alpha[i] = 1.0f;
      continue;
    }
    float sum = sa_expsum16(row, valid, next, exp16);
    sa_zero16(row + valid, n - valid);
    alpha[i] = _mm512_cvtss_f32(exp16(_mm512_set1_ps(mx[i] - next)));
    l[i] = l[i] * alpha[i] + sum;
    mx[i] = next;
  }
}

#endif /* SA_AVX512_SOFTMAX_IMPL_H */
