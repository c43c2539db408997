/*
 * wsum_t, AVX2: o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c] with V
 * in f16, bf16 or q8_0 (ldv in that type's units) and P, O, the sums in
 * fp32; beta NULL: o is only written.
 *
 * The f32 kernel (wsum.c, whose header gives the reasons for its shape)
 * with one change: the NV = 2 vectors of v[j][c0..c0 + 16) are widened
 * exactly in registers (widen.h) where the f32 kernel loads them, once per
 * j, and used by all MR = 6 rows; the FMAs, their order and every rounding
 * are the f32 kernel's on the oracle's widened values. A q8_0 vector is
 * dequantised (int8 * scale, exact) rather than folding the scale into
 * p[i][j]: that would round p * scale for every row, and costs mr
 * multiplies per j where dequantising costs 2. A 16-column tile never
 * crosses a q8_0 block (dv is a multiple of 32), so one scale serves it.
 *
 * From memory (decode) the first column block prefetches whole V rows PF
 * rows ahead, every 64-byte line of them, and the other column blocks find
 * them in cache. PF is larger than wsum.c's 8 since narrow rows are fewer
 * bytes and the prefetch must still run as far ahead in time.
 *
 * Tails: columns after the 16-wide blocks go through a one-vector tile, then
 * the last cols < 8 (f16 / bf16 only) are copied through the stack on each
 * j, never over-read. Leftover rows run the same tile with fewer rows.
 */
#include <immintrin.h>

#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/avx2/widen.h"
#include "kernels/kernels.h"
#include "kernels/unroll.h"

enum { MR = SA_AVX2_WSUM_MR, NV = SA_AVX2_WSUM_NV, PF = 16 };

SA_INLINE __m256 load(const float *x, size_t cols) {
  return cols == 8 ? _mm256_loadu_ps(x) : sa_load8_part(x, cols);
}

SA_INLINE void store(float *x, size_t cols, __m256 y) {
  if (cols == 8)
    _mm256_storeu_ps(x, y);
  else
    sa_store8_part(x, cols, y);
}

/* Columns [c0, c0 + 8 (nv - 1) + cols) of mr rows, V rows ldb bytes apart
 * starting at v; pf > 0: also prefetch the pf bytes of the row PF further
 * on. mr and nv are constants at every call, so acc lives in registers;
 * cols is 8 except in the last tile, where nv is 1. */
SA_INLINE void tile(sa_dtype t, size_t mr, size_t nv, size_t cols, size_t n,
                    const float *p, size_t ldp, const char *v, size_t ldb,
                    size_t c0, const float *beta, float *o, size_t ldo,
                    size_t pf) {
  __m256 acc[MR][NV];
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = _mm256_setzero_ps();
  for (size_t j = 0; j < n; j++) {
    const char *row = v + j * ldb;
    if (pf)
      sa_prefetch_row(v + (j + PF < n ? j + PF : n - 1) * ldb, pf);
    const __m256 sc = t == SA_Q8_0 ? sa_q8_scale(row, c0) : _mm256_setzero_ps();
    __m256 b[NV];
    for (size_t c = 0; c < nv; c++) {
      const char *x = sa_elem_at(t, row, c0 + 8 * c);
      b[c] = c + 1 < nv || cols == 8 ? sa_widen8(t, x, sc)
                                     : sa_widen8_part(t, x, cols);
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_broadcast_ss(p + r * ldp + j);
      for (size_t c = 0; c < nv; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
#pragma GCC unroll 6
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < nv; c++) {
      float *out = o + r * ldo + 8 * c;
      size_t w = c + 1 < nv ? 8 : cols;
      __m256 x = acc[r][c];
      /* beta * o rounded on its own, as the oracle does (wsum.c) */
      if (beta)
        x = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(beta[r]), load(out, w)),
                          x);
      store(out, w, x);
    }
}

SA_INLINE void rows(sa_dtype t, size_t mr, size_t nv, size_t cols, size_t n,
                    const float *p, size_t ldp, const char *v, size_t ldb,
                    size_t c0, const float *beta, float *o, size_t ldo,
                    size_t pf) {
#define TILE(r) tile(t, r, nv, cols, n, p, ldp, v, ldb, c0, beta, o, ldo, pf)
  SA_UNROLL_1_6(mr, TILE);
#undef TILE
}

SA_INLINE void wsum_t(sa_dtype t, size_t m, size_t n, size_t dv, const float *p,
                      size_t ldp, const void *v, size_t ldv, const float *beta,
                      float *o, size_t ldo) {
  const char *vb = v;
  const size_t ldb = sa_row_bytes(t, ldv);
  /* bytes a row's dv values take (q8_0: dv / 32 blocks) */
  const size_t rowb =
      t == SA_Q8_0 ? sa_row_bytes(t, dv / 32) : sa_row_bytes(t, dv);
  for (size_t i0 = 0; i0 < m; i0 += MR) {
    size_t mr = m - i0 < MR ? m - i0 : MR;
    const float *pi = p + i0 * ldp;
    const float *bi = beta ? beta + i0 : NULL;
    float *oi = o + i0 * ldo;
    size_t c0 = 0, pf = i0 == 0 ? rowb : 0;
    for (; c0 + 8 * NV <= dv; c0 += 8 * NV, pf = 0)
      rows(t, mr, NV, 8, n, pi, ldp, vb, ldb, c0, bi, oi + c0, ldo, pf);
    if (c0 + 8 <= dv) {
      rows(t, mr, 1, 8, n, pi, ldp, vb, ldb, c0, bi, oi + c0, ldo, pf);
      c0 += 8;
      pf = 0;
    }
    if (t != SA_Q8_0 && c0 < dv)
      rows(t, mr, 1, dv - c0, n, pi, ldp, vb, ldb, c0, bi, oi + c0, ldo, pf);
  }
}

void sa_wsum_f16__avx2(size_t m, size_t n, size_t dv, const float *p,
                       size_t ldp, const void *v, size_t ldv, const float *beta,
                       float *o, size_t ldo) {
  wsum_t(SA_F16, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

void sa_wsum_bf16__avx2(size_t m, size_t n, size_t dv, const float *p,
                        size_t ldp, const void *v, size_t ldv,
                        const float *beta, float *o, size_t ldo) {
  wsum_t(SA_BF16, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}

void sa_wsum_q8_0__avx2(size_t m, size_t n, size_t dv, const float *p,
                        size_t ldp, const void *v, size_t ldv,
                        const float *beta, float *o, size_t ldo) {
  wsum_t(SA_Q8_0, m, n, dv, p, ldp, v, ldv, beta, o, ldo);
}
