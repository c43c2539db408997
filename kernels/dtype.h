/*
 * Element conversions, one value (or one q8_0 block) at a time, in plain C.
 * The scalar set is built from these, SIMD sets use them for the odd value
 * at a tail, and the library uses them where a vector loop would not pay.
 * Integer arithmetic only: the result never depends on the FP environment
 * (rounding mode, FTZ/DAZ), as sa_convert promises.
 */
#ifndef SA_KERNELS_DTYPE_H
#define SA_KERNELS_DTYPE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "simdattn.h"

enum { SA_QK8_0 = 32 };

static inline uint32_t sa_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static inline float sa_bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* binary16 -> binary32, exact; a signalling NaN comes back quiet. */
static inline float sa_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) /* Inf, NaN (quietened) */
    return sa_bits_f32(sign | 0x7f800000u | (man << 13) |
                       (man ? 0x00400000u : 0));
  if (exp == 0) {
    if (man == 0)
      return sa_bits_f32(sign);
    /* denormal: normalise; value = man * 2^-24 */
    int e = -1;
    do {
      man <<= 1;
      e++;
    } while (!(man & 0x400u));
    return sa_bits_f32(sign | (uint32_t)(127 - 15 - e) << 23 |
                       (man & 0x3ffu) << 13);
  }
  return sa_bits_f32(sign | (exp + 127 - 15) << 23 | man << 13);
}

/* binary32 -> binary16, nearest even; overflow to Inf; NaN kept quiet
 * with its top payload bits. */
static inline uint16_t sa_f32_to_f16(float x) {
  uint32_t u = sa_f32_bits(x);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) /* NaN */
    return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) /* rounds to >= 65520: Inf */
    return (uint16_t)(sign | 0x7c00u);
  if (abs < 0x38800000u) { /* below 2^-14: an f16 denormal or zero */
    if (abs < 0x33000000u) /* below 2^-25: rounds to 0 (2^-25 ties to 0) */
      return (uint16_t)sign;
    uint32_t e = abs >> 23, man = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* 14..24: bits below the denormal's ulp */
    uint32_t q = man >> shift, rem = man & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    q += rem > half || (rem == half && (q & 1));
    return (uint16_t)(sign | q);
  }
  /* normal: rebias, then round the 13 dropped bits (a carry may reach the
   * exponent, which is the right answer) */
  uint32_t r = abs - ((127u - 15u) << 23);
  r += 0x0fffu + ((r >> 13) & 1);
  return (uint16_t)(sign | (r >> 13));
}

/* bfloat16 -> binary32: the bits are the top half; a signalling NaN is
 * quietened as any IEEE conversion does. */
static inline float sa_bf16_to_f32(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  if ((u & 0x7fffffffu) > 0x7f800000u)
    u |= 0x00400000u;
  return sa_bits_f32(u);
}

/* binary32 -> bfloat16, nearest even; NaN stays a quiet NaN. */
static inline uint16_t sa_f32_to_bf16(float x) {
  uint32_t u = sa_f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

/* One block of ggml's reference quantiser (quantize_row_q8_0_ref). */
static inline void sa_quantize_q8_0(const float *x, sa_block_q8_0 *y) {
  float amax = 0.0f;
  for (int j = 0; j < SA_QK8_0; j++) {
    float a = fabsf(x[j]);
    amax = amax > a ? amax : a;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->scale = sa_f32_to_f16(d);
  for (int j = 0; j < SA_QK8_0; j++)
    y->q[j] = (int8_t)roundf(x[j] * id);
}

static inline void sa_dequantize_q8_0(const sa_block_q8_0 *x, float *y) {
  const float d = sa_f16_to_f32(x->scale);
  for (int j = 0; j < SA_QK8_0; j++)
    y[j] = (float)x->q[j] * d;
}

/* Element p of a row of type t that starts at `row` (q8_0: p's block). */
static inline float sa_load_elem(sa_dtype t, const void *row, size_t p) {
  switch (t) {
  case SA_F16:
    return sa_f16_to_f32(((const uint16_t *)row)[p]);
  case SA_BF16:
    return sa_bf16_to_f32(((const uint16_t *)row)[p]);
  case SA_Q8_0: {
    const sa_block_q8_0 *b = (const sa_block_q8_0 *)row + p / SA_QK8_0;
    return (float)b->q[p % SA_QK8_0] * sa_f16_to_f32(b->scale);
  }
  default:
    return ((const float *)row)[p];
  }
}

/* Bytes of one unit of type t: an element, or a q8_0 block. */
static inline size_t sa_dtype_unit(sa_dtype t) {
  return t == SA_Q8_0 ? sizeof(sa_block_q8_0) : t == SA_F32 ? 4 : 2;
}

/* Units in a row of dim values (q8_0: dim a multiple of 32). */
static inline size_t sa_dtype_row(sa_dtype t, size_t dim) {
  return t == SA_Q8_0 ? dim / SA_QK8_0 : dim;
}

#endif
