/*
 * wsum, NEON: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c]
 * (i < m, j < n, c < dv); beta NULL overwrites o without reading it, so o may
 * hold garbage or NaN on the first step.
 *
 * A rank-1 update per key: row j of V is contiguous in c, so each output row
 * is a sum of V rows scaled by broadcast weights. The tile is 4 output rows x
 * 16 columns (4 vectors): 16 accumulators, and every V vector loaded is used
 * by 4 FMAs, every weight by 4. Weights are loaded 4 keys at a time as one
 * vector per output row and broadcast from their lane by vfmaq_laneq_f32, so
 * a block of 4 keys costs 4 + 16 loads for 64 FMAs.
 *
 * Tails, with nothing read or written outside p[i][0..n), v[j][0..dv) and
 * o[i][0..dv): leftover keys (n % 4) one at a time with vld1q_dup of the
 * weight; leftover columns in single vectors, the last 1-3 moved lane by lane;
 * leftover rows one at a time through the same tile with 1 row.
 */
#include "kernels/kernels.h"
#include "kernels/neon/tiles.h"
#include "kernels/neon/util.h"
#include "kernels/upto.h"

/* One V row's NV vectors (the last one partial when rc < 4). */
SA_NEON_INLINE void load_v(float32x4_t *dst, size_t NV, size_t rc,
                           const float *row) {
  for (size_t t = 0; t < NV; t++)
    dst[t] = rc == 4 ? vld1q_f32(row + 4 * t)
                     : sa_neon_load_partial(row + 4 * t, rc, 0.0f);
}

/* MR rows x NV vectors of columns; MR and NV are constants at every call
 * site. rc < 4 only for the last, partial vector (then NV == 1). */
SA_NEON_INLINE void wsum_tile(size_t MR, size_t NV, size_t rc, size_t n,
                              const float *p, size_t ldp, const float *v,
                              size_t ldv, const float *beta, float *o,
                              size_t ldo) {
  float32x4_t acc[4][4];
  for (size_t r = 0; r < MR; r++)
    for (size_t t = 0; t < NV; t++)
      acc[r][t] = vdupq_n_f32(0.0f);

  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    float32x4_t pw[4], vv[4];
    for (size_t r = 0; r < MR; r++)
      pw[r] = vld1q_f32(p + r * ldp + j);
    load_v(vv, NV, rc, v + j * ldv);
    for (size_t r = 0; r < MR; r++)
      for (size_t t = 0; t < NV; t++)
        acc[r][t] = vfmaq_laneq_f32(acc[r][t], vv[t], pw[r], 0);
    load_v(vv, NV, rc, v + (j + 1) * ldv);
    for (size_t r = 0; r < MR; r++)
      for (size_t t = 0; t < NV; t++)
        acc[r][t] = vfmaq_laneq_f32(acc[r][t], vv[t], pw[r], 1);
    load_v(vv, NV, rc, v + (j + 2) * ldv);
    for (size_t r = 0; r < MR; r++)
      for (size_t t = 0; t < NV; t++)
        acc[r][t] = vfmaq_laneq_f32(acc[r][t], vv[t], pw[r], 2);
    load_v(vv, NV, rc, v + (j + 3) * ldv);
    for (size_t r = 0; r < MR; r++)
      for (size_t t = 0; t < NV; t++)
        acc[r][t] = vfmaq_laneq_f32(acc[r][t], vv[t], pw[r], 3);
  }
  for (; j < n; j++) {
    float32x4_t vv[4];
    load_v(vv, NV, rc, v + j * ldv);
    for (size_t r = 0; r < MR; r++) {
      float32x4_t w = vld1q_dup_f32(p + r * ldp + j);
      for (size_t t = 0; t < NV; t++)
        acc[r][t] = vfmaq_f32(acc[r][t], vv[t], w);
    }
  }

  for (size_t r = 0; r < MR; r++) {
    float *orow = o + r * ldo;
    for (size_t t = 0; t < NV; t++) {
      float32x4_t res = acc[r][t];
      if (rc == 4) {
        if (beta)
          res = vfmaq_n_f32(res, vld1q_f32(orow + 4 * t), beta[r]);
        vst1q_f32(orow + 4 * t, res);
      } else {
        if (beta)
          res = vfmaq_n_f32(res, sa_neon_load_partial(orow + 4 * t, rc, 0.0f),
                            beta[r]);
        sa_neon_store_partial(orow + 4 * t, rc, res);
      }
    }
  }
}

/* All column groups of MR output rows starting at row i. */
SA_NEON_INLINE void wsum_rows(size_t MR, size_t n, size_t dv, const float *p,
                              size_t ldp, const float *v, size_t ldv,
                              const float *beta, float *o, size_t ldo) {
  size_t c = 0;
  for (; c + 16 <= dv; c += 16)
    wsum_tile(MR, 4, 4, n, p, ldp, v + c, ldv, beta, o + c, ldo);
  for (; c + 4 <= dv; c += 4)
    wsum_tile(MR, 1, 4, n, p, ldp, v + c, ldv, beta, o + c, ldo);
  if (c < dv)
    wsum_tile(MR, 1, dv - c, n, p, ldp, v + c, ldv, beta, o + c, ldo);
}

void sa_wsum__neon(size_t m, size_t n, size_t dv, const float *p, size_t ldp,
                   const float *v, size_t ldv, const float *beta, float *o,
                   size_t ldo) {
  size_t i = 0;
  for (; i + 4 <= m; i += 4)
    wsum_rows(4, n, dv, p + i * ldp, ldp, v, ldv, beta ? beta + i : NULL,
              o + i * ldo, ldo);
  for (; i < m; i++)
    wsum_rows(1, n, dv, p + i * ldp, ldp, v, ldv, beta ? beta + i : NULL,
              o + i * ldo, ldo);
}

/* Rows that see keys [0, ends[i]) (the causal diagonal): each block of
 * rows up to its last end; a lane sums its keys in order either way. */
void sa_wsum_upto__neon(size_t m, size_t n, size_t dv, const float *p,
                        size_t ldp, const float *v, size_t ldv,
                        const float *beta, float *o, size_t ldo,
                        const size_t *ends) {
  for (size_t i = 0; i < m; i += SA_NEON_WSUM_MR) {
    size_t mr = m - i < SA_NEON_WSUM_MR ? m - i : SA_NEON_WSUM_MR;
    sa_wsum__neon(mr, sa_ends_clip(ends + i, mr, n), dv, p + i * ldp, ldp, v,
                  ldv, beta ? beta + i : NULL, o + i * ldo, ldo);
  }
}
