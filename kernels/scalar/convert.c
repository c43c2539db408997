/*
 * Conversions, scalar: the per-value functions of dtype.h in a loop. The
 * oracle the SIMD sets' conversions are checked against, value for value.
 */
#include "kernels/dtype.h"
#include "kernels/kernels.h"

void sa_f16_to_f32__scalar(size_t n, const void *src, void *dst) {
  const uint16_t *s = src;
  float *d = dst;
  for (size_t i = 0; i < n; i++)
    d[i] = sa_f16_to_f32(s[i]);
}

void sa_bf16_to_f32__scalar(size_t n, const void *src, void *dst) {
  const uint16_t *s = src;
  float *d = dst;
  for (size_t i = 0; i < n; i++)
    d[i] = sa_bf16_to_f32(s[i]);
}

void sa_q8_0_to_f32__scalar(size_t n, const void *src, void *dst) {
  const sa_block_q8_0 *s = src;
  float *d = dst;
  for (size_t b = 0; b < n / SA_QK8_0; b++)
    sa_dequantize_q8_0(s + b, d + b * SA_QK8_0);
}

void sa_f32_to_f16__scalar(size_t n, const void *src, void *dst) {
  const float *s = src;
  uint16_t *d = dst;
  for (size_t i = 0; i < n; i++)
    d[i] = sa_f32_to_f16(s[i]);
}

void sa_f32_to_bf16__scalar(size_t n, const void *src, void *dst) {
  const float *s = src;
  uint16_t *d = dst;
  for (size_t i = 0; i < n; i++)
    d[i] = sa_f32_to_bf16(s[i]);
}

void sa_f32_to_q8_0__scalar(size_t n, const void *src, void *dst) {
  const float *s = src;
  sa_block_q8_0 *d = dst;
  for (size_t b = 0; b < n / SA_QK8_0; b++)
    sa_quantize_q8_0(s + b * SA_QK8_0, d + b);
}
