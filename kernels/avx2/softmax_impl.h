/*
 * The row loops of softmax and softmax_online on AVX2, written once and
 * instantiated by softmax_sleef.c and softmax_poly.c with their exp. The exp
 * is passed as a function pointer to a static inline function: with a
 * constant argument the compiler inlines the polynomial, and the SLEEF entry
 * point stays one direct call per 8 floats.
 *
 * Per row, three passes over at most n floats that stay in L1: the max, then
 * exp(x - max) stored in place and summed, then the scaling by 1/sum (or,
 * online, nothing: the caller rescales). Columns past the valid prefix are
 * written as 0 and never read, so masked-out garbage (even NaN) is harmless.
 * The last partial vector of a row is copied through the stack (util.h).
 */
#ifndef SA_AVX2_SOFTMAX_IMPL_H
#define SA_AVX2_SOFTMAX_IMPL_H

#include <math.h>

#include "kernels/avx2/util.h"

typedef __m256 (*sa_exp8_fn)(__m256);

/* max(init, row[0..count)). Four accumulators hide the max latency; the
 * operand order max(x, acc) keeps acc when x is NaN, as the oracle's
 * `x > acc ? x : acc` does. */
static inline float sa_rowmax8(const float *row, size_t count, float init) {
  __m256 a0 = _mm256_set1_ps(init), a1 = a0, a2 = a0, a3 = a0;
  size_t j = 0;
  for (; j + 32 <= count; j += 32) {
    a0 = _mm256_max_ps(_mm256_loadu_ps(row + j), a0);
    a1 = _mm256_max_ps(_mm256_loadu_ps(row + j + 8), a1);
    a2 = _mm256_max_ps(_mm256_loadu_ps(row + j + 16), a2);
    a3 = _mm256_max_ps(_mm256_loadu_ps(row + j + 24), a3);
  }
  for (; j + 8 <= count; j += 8)
    a0 = _mm256_max_ps(_mm256_loadu_ps(row + j), a0);
  if (j < count) {
    __m256 x = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY),
                                sa_load8_part(row + j, count - j),
                                _mm256_castsi256_ps(sa_mask8(count - j)));
    a1 = _mm256_max_ps(x, a1);
  }
  a0 = _mm256_max_ps(_mm256_max_ps(a0, a1), _mm256_max_ps(a2, a3));
  return sa_hmax8(a0);
}

/* row[j] = exp(row[j] - mx) for j < count; returns their sum. */
static inline float sa_expsum8(float *row, size_t count, float mx,
                               sa_exp8_fn exp8) {
  const __m256 vmx = _mm256_set1_ps(mx);
  __m256 s0 = _mm256_setzero_ps(), s1 = s0;
  size_t j = 0;
  for (; j + 16 <= count; j += 16) {
    __m256 e0 = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), vmx));
    __m256 e1 = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j + 8), vmx));
    _mm256_storeu_ps(row + j, e0);
    _mm256_storeu_ps(row + j + 8, e1);
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  if (j + 8 <= count) {
    __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), vmx));
    _mm256_storeu_ps(row + j, e);
    s0 = _mm256_add_ps(s0, e);
    j += 8;
  }
  if (j < count) {
    /* the masked-off lanes compute exp(0 - mx): kept out of sum and store */
    __m256 e = exp8(_mm256_sub_ps(sa_load8_part(row + j, count - j), vmx));
    e = _mm256_and_ps(e, _mm256_castsi256_ps(sa_mask8(count - j)));
    sa_store8_part(row + j, count - j, e);
    s1 = _mm256_add_ps(s1, e);
  }
  return sa_hsum8(_mm256_add_ps(s0, s1));
}

static inline void sa_scale8(float *row, size_t count, float c) {
  const __m256 vc = _mm256_set1_ps(c);
  size_t j = 0;
  for (; j + 8 <= count; j += 8)
    _mm256_storeu_ps(row + j, _mm256_mul_ps(_mm256_loadu_ps(row + j), vc));
  if (j < count)
    sa_store8_part(row + j, count - j,
                   _mm256_mul_ps(sa_load8_part(row + j, count - j), vc));
}

static inline size_t sa_valid(const size_t *len, size_t i, size_t n) {
  return len ? (len[i] < n ? len[i] : n) : n;
}

static inline void sa_softmax8_rows(size_t m, size_t n, float *s, size_t lds,
                                    const size_t *len, sa_exp8_fn exp8) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    size_t valid = sa_valid(len, i, n);
    if (valid > 0) {
      float mx = sa_rowmax8(row, valid, -INFINITY);
      float sum = sa_expsum8(row, valid, mx, exp8);
      sa_scale8(row, valid, 1.0f / sum);
    }
    sa_zero8(row + valid, n - valid);
  }
}

static inline void sa_softmax_online8_rows(size_t m, size_t n, float *s,
                                           size_t lds, const size_t *len,
                                           float *mx, float *l, float *alpha,
                                           sa_exp8_fn exp8) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    size_t valid = sa_valid(len, i, n);
    float next = sa_rowmax8(row, valid, mx[i]);
    if (next == -INFINITY) {
      /* nothing valid seen yet: exp(-inf - -inf) would be NaN; alpha = 1
       * makes the caller's rescale a no-op. The max skipped NaN scores:
       * l carries one on (rare path, so a plain loop). */
      for (size_t j = 0; j < valid; j++)
        if (row[j] != row[j])
          l[i] = NAN;
      sa_zero8(row, n);
      alpha[i] = 1.0f;
      continue;
    }
    float sum = sa_expsum8(row, valid, next, exp8);
    sa_zero8(row + valid, n - valid);
    alpha[i] = _mm256_cvtss_f32(exp8(_mm256_set1_ps(mx[i] - next)));
    l[i] = l[i] * alpha[i] + sum;
    mx[i] = next;
  }
}

#endif /* SA_AVX2_SOFTMAX_IMPL_H */
