/*
 * score_mod, scalar oracle: softcap, ALiBi, additive mask, boolean mask and
 * the left edge of a window, applied in place to a tile of scaled scores in
 * the order the contract in simdattn.h gives.
 *
 * The ALiBi term is one fused multiply-add, slope * distance + s, because the
 * SIMD sets compute it that way: distances are exact integers in float, so
 * every set rounds once, identically.
 */
#include <math.h>

#include "kernels/kernels.h"

void sa_score_mod__scalar(size_t m, size_t n, float *s, size_t lds,
                          const sa_score_mods *mods) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * lds;
    const float *add = mods->add ? mods->add + i * mods->ld_add : NULL;
    const uint8_t *keep = mods->keep ? mods->keep + i * mods->ld_keep : NULL;
    size_t lo = mods->lo ? (mods->lo[i] < n ? mods->lo[i] : n) : 0;
    for (size_t j = 0; j < n; j++) {
      float x = row[j];
      if (mods->softcap > 0.0f)
        x = mods->softcap * tanhf(x / mods->softcap);
      if (mods->slope)
        x = fmaf(mods->slope[i], mods->dist[i] + (float)j, x);
      if (add)
        x = add[j] == -INFINITY ? -INFINITY : x + add[j];
      if (keep && keep[j] == 0)
        x = -INFINITY;
      row[j] = x;
    }
    for (size_t j = 0; j < lo; j++)
      row[j] = -INFINITY;
  }
}
