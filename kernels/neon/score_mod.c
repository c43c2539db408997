/*
 * score_mod, NEON, 4 columns per step; tanh from SLEEF's Advanced SIMD entry
 * point (u35: within 3.5 ULP, three times the speed of u10:
 * about 30 cycles per vector instead of 100 on Zen 5, which made softcap
 * cost 40% of a d = 128 prefill), called by name so this file decides which
 * code runs.
 *
 * Bit-exact with the oracle (kernels/scalar/score_mod.c) except for tanh: the
 * cap divides rather than multiplying by its reciprocal, and the ALiBi
 * distance dist[i] + j is a float add of j converted from an integer lane
 * (as (float)j is: exactly, below 2^24) that then enters one FMA, so every
 * set rounds it the same way.
 *
 * Which steps run is the same for every element of the tile, so it is decided
 * once per call: rows() is instantiated for all 16 combinations and its loop
 * tests nothing. Columns before lo[i] end at -inf whatever the other steps
 * do, so they are filled and never computed: a sliding window's left edge
 * costs a store. A masked key's -inf is selected, never added, so a NaN score
 * under it cannot survive. Tails of 1 to 3 columns move lane by lane
 * (util.h) and their keep bytes through the stack, so nothing past column
 * n - 1 of a row is touched.
 */
#include <math.h>
#include <sleef.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/neon/util.h"
#include "kernels/unroll.h"

enum { CAP = 1, ALIBI = 2, ADD = 4, KEEP = 8 };

SA_NEON_INLINE float32x4_t load(const float *p, size_t r) {
  return r == 4 ? vld1q_f32(p) : sa_neon_load_partial(p, r, 0.0f);
}

/* Columns [j, j + r) of one row, r <= 4; r is the constant 4 in the main
 * loop, so the lane-by-lane moves are only in the tail. */
SA_NEON_INLINE void step(unsigned f, size_t r, float *row, const float *add,
                         const uint8_t *keep, size_t j, float32x4_t cap,
                         float32x4_t slope, float32x4_t dist) {
  const float32x4_t ninf = vdupq_n_f32(-INFINITY);
  float32x4_t x = load(row + j, r);
  if (f & CAP)
    x = vmulq_f32(cap, Sleef_tanhf4_u35advsimd(vdivq_f32(x, cap)));
  if (f & ALIBI) {
    static const uint32_t iota[4] = {0, 1, 2, 3};
    uint32x4_t col = vaddq_u32(vdupq_n_u32((uint32_t)j), vld1q_u32(iota));
    x = vfmaq_f32(x, slope, vaddq_f32(dist, vcvtq_f32_u32(col)));
  }
  uint32x4_t drop = vdupq_n_u32(0);
  if (f & ADD) {
    float32x4_t a = load(add + j, r);
    drop = vceqq_f32(a, ninf);
    x = vaddq_f32(x, a);
  }
  if (f & KEEP) {
    uint32_t w = 0; /* the pad lanes of a tail read as "drop": never stored */
    memcpy(&w, keep + j, r);
    uint8x8_t b = vreinterpret_u8_u32(vdup_n_u32(w));
    uint32x4_t k = vmovl_u16(vget_low_u16(vmovl_u8(b)));
    drop = vorrq_u32(drop, vceqzq_u32(k));
  }
  if (f & (ADD | KEEP))
    x = vbslq_f32(drop, ninf, x);
  if (r == 4)
    vst1q_f32(row + j, x);
  else
    sa_neon_store_partial(row + j, r, x);
}

SA_NEON_INLINE void rows(unsigned f, size_t m, size_t n, float *s, size_t lds,
                         const sa_score_mods *mods) {
  const float32x4_t cap = vdupq_n_f32(mods->softcap);
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    const float *add = f & ADD ? mods->add + i * mods->ld_add : NULL;
    const uint8_t *keep = f & KEEP ? mods->keep + i * mods->ld_keep : NULL;
    float32x4_t slope = vdupq_n_f32(0.0f), dist = slope;
    if (f & ALIBI) {
      slope = vdupq_n_f32(mods->slope[i]);
      dist = vdupq_n_f32(mods->dist[i]);
    }
    size_t j = 0, lo = mods->lo ? (mods->lo[i] < n ? mods->lo[i] : n) : 0;
    for (; j + 4 <= lo; j += 4)
      vst1q_f32(row + j, vdupq_n_f32(-INFINITY));
    for (; j < lo; j++)
      row[j] = -INFINITY;
    for (j = lo; j + 4 <= n; j += 4)
      step(f, 4, row, add, keep, j, cap, slope, dist);
    if (j < n)
      step(f, n - j, row, add, keep, j, cap, slope, dist);
  }
}

void sa_score_mod__neon(size_t m, size_t n, float *s, size_t lds,
                        const sa_score_mods *mods) {
  unsigned f = (mods->softcap > 0.0f ? CAP : 0) | (mods->slope ? ALIBI : 0) |
               (mods->add ? ADD : 0) | (mods->keep ? KEEP : 0);
#define ROWS(c) rows(c, m, n, s, lds, mods)
  SA_UNROLL_0_15(f, ROWS);
#undef ROWS
}
