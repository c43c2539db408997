/*
 * wsum, NEON, narrow V: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c]
 * with p and o f32 and v f16, bf16 or q8_0 (ldv in elements, or 34-byte
 * blocks for q8_0 where dv is a multiple of 32); beta NULL overwrites o
 * without reading it.
 *
 * The f32 kernel's tile (wsum.c): 4 output rows x 16 columns, a rank-1
 * update per key with the weights of 4 keys loaded as one vector per row and
 * broadcast by lane. Only the V loads change: each V row's 16 values are
 * widened once right after their load (two 16-byte loads for f16 / bf16, one
 * for q8_0) and then used by the FMAs of all 4 rows, so decode reads V at
 * half (f16, bf16) or about a quarter (q8_0) of the f32 bytes. q8_0 values are
 * dequantised with their block's scale (exact, widen.h) rather than folding
 * the scale into the weight, which would round p * scale: the sums then see
 * exactly the oracle's values.
 *
 * Tails, with nothing read or written outside p[i][0..n), v[j][0..dv) and
 * o[i][0..dv): leftover keys one at a time, leftover columns in single
 * vectors and the last 1-3 lane by lane (f16 / bf16 only: a q8_0 dv is whole
 * blocks, i.e. whole 16-column groups), leftover rows through the same tile
 * with one row.
 */
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/neon/widen.h"

/* Columns [c, c + 4 NV) of one V row (rc < 4 only for a last partial
 * vector, then NV == 1), widened. t is a constant at every call site. */
SA_NEON_INLINE void load_v(sa_dtype t, float32x4_t *dst, size_t NV, size_t rc,
                           const void *row, size_t c) {
  if (t == SA_Q8_0) {
    const sa_block_q8_0 *b = (const sa_block_q8_0 *)row + c / SA_QK8_0;
    sa_neon_dequant16(b->q + c % SA_QK8_0, sa_neon_q8_scale(b), dst);
    return;
  }
  const uint16_t *x = (const uint16_t *)row + c;
  if (NV == 4) {
    sa_neon_widen8(t, x, &dst[0], &dst[1]);
    sa_neon_widen8(t, x + 8, &dst[2], &dst[3]);
  } else if (rc == 4) {
    dst[0] = sa_neon_widen4(t, x);
  } else {
    dst[0] = sa_neon_widen_partial(t, x, rc);
  }
}

/* MR rows x NV vectors of columns starting at column c; rows of V are vb
 * bytes apart. */
SA_NEON_INLINE void wsum_tile(sa_dtype t, size_t MR, size_t NV, size_t rc,
                              size_t n, const float *p, size_t ldp,
                              const char *v, size_t vb, size_t c,
                              const float *beta, float *o, size_t ldo) {
  float32x4_t acc[4][4];
  for (size_t r = 0; r < MR; r++)
    for (size_t u = 0; u < NV; u++)
      acc[r][u] = vdupq_n_f32(0.0f);

  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    float32x4_t pw[4], vv[4];
    for (size_t r = 0; r < MR; r++)
      pw[r] = vld1q_f32(p + r * ldp + j);
    load_v(t, vv, NV, rc, v + j * vb, c);
    for (size_t r = 0; r < MR; r++)
      for (size_t u = 0; u < NV; u++)
        acc[r][u] = vfmaq_laneq_f32(acc[r][u], vv[u], pw[r], 0);
    load_v(t, vv, NV, rc, v + (j + 1) * vb, c);
    for (size_t r = 0; r < MR; r++)
      for (size_t u = 0; u < NV; u++)
        acc[r][u] = vfmaq_laneq_f32(acc[r][u], vv[u], pw[r], 1);
    load_v(t, vv, NV, rc, v + (j + 2) * vb, c);
    for (size_t r = 0; r < MR; r++)
      for (size_t u = 0; u < NV; u++)
        acc[r][u] = vfmaq_laneq_f32(acc[r][u], vv[u], pw[r], 2);
    load_v(t, vv, NV, rc, v + (j + 3) * vb, c);
    for (size_t r = 0; r < MR; r++)
      for (size_t u = 0; u < NV; u++)
        acc[r][u] = vfmaq_laneq_f32(acc[r][u], vv[u], pw[r], 3);
  }
  for (; j < n; j++) {
    float32x4_t vv[4];
    load_v(t, vv, NV, rc, v + j * vb, c);
    for (size_t r = 0; r < MR; r++) {
      float32x4_t w = vld1q_dup_f32(p + r * ldp + j);
      for (size_t u = 0; u < NV; u++)
        acc[r][u] = vfmaq_f32(acc[r][u], vv[u], w);
    }
  }

  for (size_t r = 0; r < MR; r++) {
    float *orow = o + r * ldo + c;
    for (size_t u = 0; u < NV; u++) {
      float32x4_t res = acc[r][u];
      if (rc == 4) {
        if (beta)
          res = vfmaq_n_f32(res, vld1q_f32(orow + 4 * u), beta[r]);
        vst1q_f32(orow + 4 * u, res);
      } else {
        if (beta)
          res = vfmaq_n_f32(res, sa_neon_load_partial(orow + 4 * u, rc, 0.0f),
                            beta[r]);
        sa_neon_store_partial(orow + 4 * u, rc, res);
      }
    }
  }
}

/* All column groups of MR output rows. */
SA_NEON_INLINE void wsum_rows(sa_dtype t, size_t MR, size_t n, size_t dv,
                              const float *p, size_t ldp, const char *v,
                              size_t vb, const float *beta, float *o,
                              size_t ldo) {
  size_t c = 0;
  for (; c + 16 <= dv; c += 16)
    wsum_tile(t, MR, 4, 4, n, p, ldp, v, vb, c, beta, o, ldo);
  if (t == SA_Q8_0)
    return;
  for (; c + 4 <= dv; c += 4)
    wsum_tile(t, MR, 1, 4, n, p, ldp, v, vb, c, beta, o, ldo);
  if (c < dv)
    wsum_tile(t, MR, 1, dv - c, n, p, ldp, v, vb, c, beta, o, ldo);
}

SA_NEON_INLINE void wsum_typed(sa_dtype t, size_t m, size_t n, size_t dv,
                               const float *p, size_t ldp, const void *v,
                               size_t ldv, const float *beta, float *o,
                               size_t ldo) {
  const size_t vb = ldv * sa_dtype_unit(t);
  size_t i = 0;
  for (; i + 4 <= m; i += 4)
    wsum_rows(t, 4, n, dv, p + i * ldp, ldp, v, vb, beta ? beta + i : NULL,
              o + i * ldo, ldo);
  for (; i < m; i++)
    wsum_rows(t, 1, n, dv, p + i * ldp, ldp, v, vb, beta ? beta + i : NULL,
              o + i * ldo, ldo);
}

void sa_wsum_f16__neon(size_t m, size_t n, size_t dv, const float *p,
                       size_t ldp, const void *v, size_t ldv, const float *beta,
                       float *o, size_t ldo) {
  wsum_typed(SA_F16, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

void sa_wsum_bf16__neon(size_t m, size_t n, size_t dv, const float *p,
                        size_t ldp, const void *v, size_t ldv,
                        const float *beta, float *o, size_t ldo) {
  wsum_typed(SA_BF16, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

void sa_wsum_q8_0__neon(size_t m, size_t n, size_t dv, const float *p,
                        size_t ldp, const void *v, size_t ldv,
                        const float *beta, float *o, size_t ldo) {
  wsum_typed(SA_Q8_0, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}
