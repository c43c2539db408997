/*
 * decode, AVX2: score, online softmax and weighted sum for m <= 16 rows in
 * one pass over K and V, in chunks of CHUNK keys (the contract is in
 * include/simdattn.h above sa_decode_fn).
 *
 * kernels/avx512/decode.c gives the reasons for the shape: decode is a
 * stream, each K and V byte used by the m rows of one call, so a chunk's
 * scores stay in an L1 tile on the stack (16 x CHUNK floats) instead of
 * going to L2 and back between three kernels, and the two streams are
 * software-pipelined: the dot products of a chunk prefetch its V rows, the
 * first value-sum pass prefetches the next chunk's K rows.
 *
 * What 16 ymm registers change:
 *  - dots: score_t.c's tiles, DM = 4 rows x DN = 3 keys (2 x DN_WIDE = 4
 *    for m <= 2), K read as it lies, 8 values a step widened once for every
 *    row of the tile (a q8_0 block's scale once per 32 values), and
 *    util.h's transposed reduction into the score tile.
 *  - online step: the set's own softmax_online on the chunk's tile, so its
 *    NaN and -inf rules are those of the composition by construction.
 *  - value sums: passes of RB rows x NV vectors of columns, chosen by m
 *    (tiles.h), each V row of the chunk loaded (and widened) once per pass
 *    for every row of it. The sums start at 0 and o = alpha * o + sum at
 *    the store, as wsum's beta.
 * Each phase is one function per element type (and the online step one per
 * exp), called once per chunk: the 4 x 4 type pairs times 2 exps share 8
 * phase bodies instead of instantiating 32 kernels, at the cost of three
 * indirect calls per chunk.
 *
 * Tails: keys of a short last dots block re-read the block's first key and
 * are left out of the score store; d and dv past their last full vector
 * (f32, f16, bf16: q8_0 rows are whole blocks) are copied through the
 * stack, never over-read (util.h says why not maskload); leftover rows run
 * the same tiles with fewer rows. Prefetches name only keys below n.
 */
#include <immintrin.h>
#include <sleef.h>
#include <stdint.h>

#include "kernels/avx2/tiles.h"
#include "kernels/avx2/util.h"
#include "kernels/avx2/widen.h"
#include "kernels/decode_chunks.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/unroll.h"

enum {
  CHUNK = SA_AVX2_DECODE_CHUNK,
  DM = SA_AVX2_DM,
  DN = SA_AVX2_DN,
  DN_WIDE = SA_AVX2_DN_WIDE,
  RB = SA_AVX2_DECODE_RB,
};

/* A pass starts at a multiple of 8 nv columns, so with nv a power of two a
 * q8_0 block starts at a vector c % 4 == 0 of it (sums). */
#define POW2_TO_8(x) ((x) == 1 || (x) == 2 || (x) == 4 || (x) == 8)
_Static_assert(POW2_TO_8(SA_AVX2_DECODE_NV1) && POW2_TO_8(SA_AVX2_DECODE_NV2) &&
                   POW2_TO_8(SA_AVX2_DECODE_NV4) &&
                   POW2_TO_8(SA_AVX2_DECODE_NV),
               "decode's value-sum passes take 1, 2, 4 or 8 vectors");
#undef POW2_TO_8

/* Every 64-byte line of a row on its way to L2 (a zero-length row has none
 * to name). Not to L1 as widen.h's sa_prefetch_row does: there it would
 * evict the lines of the stream being read (L1 holds about a chunk of K and
 * one of V at d = 128, f32), and decode ran up to a tenth faster with
 * prefetcht1 (Sapphire Rapids, m = 1 .. 16, f32 / f16 / q8_0). */
SA_INLINE void prefetch_row(const char *row, size_t bytes) {
  if (!bytes)
    return;
  for (size_t b = 0; b < bytes; b += 64)
    _mm_prefetch(row + b, _MM_HINT_T1);
  _mm_prefetch(row + bytes - 1, _MM_HINT_T1);
}

/* Values p .. p + 8 of a row of type t, widened; sc: the q8_0 block's scale
 * (sa_q8_scale), ignored for other types. */
SA_INLINE __m256 load8(sa_dtype t, const char *row, size_t p, __m256 sc) {
  if (t == SA_F32)
    return _mm256_loadu_ps((const float *)row + p);
  return sa_widen8(t, sa_elem_at(t, row, p), sc);
}

/* The same for the np < 8 values left at a row's end, other lanes 0
 * (f32, f16, bf16 only). */
SA_INLINE __m256 load8_part(sa_dtype t, const char *row, size_t p, size_t np) {
  if (t == SA_F32)
    return sa_load8_part((const float *)row + p, np);
  return sa_widen8_part(t, sa_elem_at(t, row, p), np);
}

/* ---- dots: s[0..mr)[0..nk) = scale * q[0..mr) . kr[0..nk), nk <= dn */

/* acc[r][c] += q[r][p .. p + 8) * k[c][p .. p + 8) for r < mr, c < dn. */
SA_INLINE void fma_step(sa_dtype t, size_t mr, size_t dn, const float *q,
                        size_t ldq, const char *const *kr, size_t p,
                        const __m256 *sc, __m256 acc[4][4]) {
  __m256 b[4];
  for (size_t c = 0; c < dn; c++)
    b[c] = load8(t, kr[c], p, sc[c]);
  for (size_t r = 0; r < mr; r++) {
    __m256 a = _mm256_loadu_ps(q + r * ldq + p);
    for (size_t c = 0; c < dn; c++)
      acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
  }
}

/* mr and dn are constants at every call, so acc lives in registers. */
SA_INLINE void dots(sa_dtype t, size_t mr, size_t dn, size_t d, const float *q,
                    size_t ldq, const char *const *kr, float *s, size_t nk,
                    float scale) {
  __m256 acc[4][4], sc[4];
  for (size_t r = 0; r < 4; r++)
    for (size_t c = 0; c < 4; c++)
      acc[r][c] = _mm256_setzero_ps();
  for (size_t c = 0; c < 4; c++)
    sc[c] = _mm256_setzero_ps();
  size_t p = 0;
  for (; p + 32 <= d; p += 32) {
    if (t == SA_Q8_0)
      for (size_t c = 0; c < dn; c++)
        sc[c] = sa_q8_scale(kr[c], p);
    for (size_t u = 0; u < 32; u += 8)
      fma_step(t, mr, dn, q, ldq, kr, p + u, sc, acc);
  }
  if (t != SA_Q8_0) {
    for (; p + 8 <= d; p += 8)
      fma_step(t, mr, dn, q, ldq, kr, p, sc, acc);
    if (p < d) {
      __m256 b[4];
      for (size_t c = 0; c < dn; c++)
        b[c] = load8_part(t, kr[c], p, d - p);
      for (size_t r = 0; r < mr; r++) {
        __m256 a = sa_load8_part(q + r * ldq + p, d - p);
        for (size_t c = 0; c < dn; c++)
          acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
      }
    }
  }
  sa_dots_store8(mr, dn, acc, scale, s, CHUNK, nk);
}

/* The chunk's scores s[i][0..nc) for every row in blocks of dn keys, K
 * rows at k[j]; the V rows of the same keys (v[j], vrow bytes each) are
 * prefetched meanwhile. */
SA_INLINE void chunk_dots(sa_dtype t, size_t dn, size_t m, size_t nc, size_t d,
                          const float *q, size_t ldq, const void *const *k,
                          const void *const *v, size_t vrow, float scale,
                          float *s) {
  for (size_t j0 = 0; j0 < nc; j0 += dn) {
    size_t nk = nc - j0 < dn ? nc - j0 : dn;
    const char *kr[4];
    for (size_t c = 0; c < dn; c++)
      kr[c] = k[c < nk ? j0 + c : j0];
    for (size_t c = 0; c < nk; c++)
      prefetch_row(v[j0 + c], vrow);
    for (size_t i0 = 0; i0 < m; i0 += DM) {
#define DOTS(r)                                                                \
  dots(t, r, dn, d, q + i0 * ldq, ldq, kr, s + i0 * CHUNK + j0, nk, scale)
      SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
    }
  }
}

/* ---- value sums: o[r][c0 ..) = alpha[r] * o + sum_j p[r][j] * v[j][c0 ..]
 * for r < mr over nv vectors of columns, cn of them valid (full: cn is
 * 8 nv, and the column checks fold away). The first pass prefetches the
 * next chunk's K rows (nk of them at kn[j], krow bytes each), one per V
 * row used. mr, nv and full are constants at every call. */
SA_INLINE void sums(sa_dtype t, size_t mr, size_t nv, int full, size_t nc,
                    const float *p, const void *const *v, size_t c0, size_t cn,
                    const float *alpha, float *o, size_t ldo,
                    const void *const *kn, size_t nk, size_t krow) {
  __m256 acc[8][8];
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
#pragma GCC unroll 8
    for (size_t c = 0; c < nv; c++)
      acc[r][c] = _mm256_setzero_ps();
  for (size_t j = 0; j < nc; j++) {
    const char *row = v[j];
    if (j < nk)
      prefetch_row(kn[j], krow);
    __m256 b[8], sc = _mm256_setzero_ps();
#pragma GCC unroll 8
    for (size_t c = 0; c < nv; c++) {
      size_t at = c0 + 8 * c;
      if (full || 8 * c + 8 <= cn) {
        /* one scale per q8_0 block (32 columns, 4 vectors) */
        if (t == SA_Q8_0 && (c % 4 == 0))
          sc = sa_q8_scale(row, at);
        b[c] = load8(t, row, at, sc);
      } else if (8 * c < cn) {
        b[c] = load8_part(t, row, at, cn - 8 * c);
      } else {
        b[c] = _mm256_setzero_ps();
      }
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < mr; r++) {
      __m256 a = _mm256_broadcast_ss(p + r * CHUNK + j);
#pragma GCC unroll 8
      for (size_t c = 0; c < nv; c++)
        acc[r][c] = _mm256_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++) {
    __m256 ar = _mm256_set1_ps(alpha[r]);
#pragma GCC unroll 8
    for (size_t c = 0; c < nv; c++) {
      float *out = o + r * ldo + c0 + 8 * c;
      /* alpha * o rounded on its own, as wsum's beta */
      if (full || 8 * c + 8 <= cn) {
        __m256 x = _mm256_mul_ps(ar, _mm256_loadu_ps(out));
        _mm256_storeu_ps(out, _mm256_add_ps(x, acc[r][c]));
      } else if (8 * c < cn) {
        __m256 x = _mm256_mul_ps(ar, sa_load8_part(out, cn - 8 * c));
        sa_store8_part(out, cn - 8 * c, _mm256_add_ps(x, acc[r][c]));
      }
    }
  }
}

/* Columns [0, dv) of rows 0..mr in passes of nv vectors, the last one
 * partial when dv is not a multiple of 8 nv; the first pass (row block 0)
 * prefetches the next chunk's K. */
SA_INLINE void row_passes(sa_dtype t, size_t mr, size_t nv, size_t nc,
                          size_t dv, const float *p, const void *const *v,
                          const float *alpha, float *o, size_t ldo,
                          const void *const *kn, size_t nk, size_t krow) {
  size_t c0 = 0;
  for (; c0 + 8 * nv <= dv; c0 += 8 * nv, nk = 0)
    sums(t, mr, nv, 1, nc, p, v, c0, 8 * nv, alpha, o, ldo, kn, nk, krow);
  if (c0 < dv)
    sums(t, mr, nv, 0, nc, p, v, c0, dv - c0, alpha, o, ldo, kn, nk, krow);
}

/* Every row and column of the chunk: one row block for m <= 4 (as many
 * columns a pass as the registers hold beside the rows), blocks of RB rows
 * one vector wide above. */
SA_INLINE void chunk_sums(sa_dtype t, size_t m, size_t nc, size_t dv,
                          const float *p, const void *const *v,
                          const float *alpha, float *o, size_t ldo,
                          const void *const *kn, size_t nk, size_t krow) {
#define PASSES(r, nv, i0)                                                      \
  row_passes(t, r, nv, nc, dv, p + (i0)*CHUNK, v, alpha + (i0), o + (i0)*ldo,  \
             ldo, kn, (i0) == 0 ? nk : 0, krow)
  if (m == 1)
    PASSES(1, SA_AVX2_DECODE_NV1, 0);
  else if (m == 2)
    PASSES(2, SA_AVX2_DECODE_NV2, 0);
  else if (m == 3)
    PASSES(3, SA_AVX2_DECODE_NV4, 0);
  else if (m == 4)
    PASSES(4, SA_AVX2_DECODE_NV4, 0);
  else
    for (size_t i0 = 0; i0 < m; i0 += RB) {
#define BLOCK(r) PASSES(r, SA_AVX2_DECODE_NV, i0)
      SA_UNROLL_1_8(m - i0 < RB ? m - i0 : RB, BLOCK);
#undef BLOCK
    }
#undef PASSES
}

/* ---- one phase function per type, and the chunk loop */

#define PHASES(T, name)                                                        \
  static void dots_##name(size_t m, size_t nc, size_t d, const float *q,       \
                          size_t ldq, const void *const *k,                    \
                          const void *const *v, size_t vrow, float scale,      \
                          float *s) {                                          \
    if (m <= SA_AVX2_DOTS_M_WIDE)                                              \
      chunk_dots(T, DN_WIDE, m, nc, d, q, ldq, k, v, vrow, scale, s);          \
    else                                                                       \
      chunk_dots(T, DN, m, nc, d, q, ldq, k, v, vrow, scale, s);               \
  }                                                                            \
  static void sums_##name(size_t m, size_t nc, size_t dv, const float *p,      \
                          const void *const *v, const float *alpha, float *o,  \
                          size_t ldo, const void *const *kn, size_t nk,        \
                          size_t krow) {                                       \
    chunk_sums(T, m, nc, dv, p, v, alpha, o, ldo, kn, nk, krow);               \
  }
PHASES(SA_F32, f32)
PHASES(SA_F16, f16)
PHASES(SA_BF16, bf16)
PHASES(SA_Q8_0, q8_0)
#undef PHASES

static sa_decode_dots_fn dots_for(sa_dtype t) {
  return t == SA_F16    ? dots_f16
         : t == SA_BF16 ? dots_bf16
         : t == SA_Q8_0 ? dots_q8_0
                        : dots_f32;
}

static sa_decode_sums_fn sums_for(sa_dtype t) {
  return t == SA_F16    ? sums_f16
         : t == SA_BF16 ? sums_bf16
         : t == SA_Q8_0 ? sums_q8_0
                        : sums_f32;
}

_Static_assert(CHUNK <= SA_DECODE_CHUNK_MAX, "decode's lists hold a chunk");

static void decode(size_t m, size_t n, size_t d, size_t dv, const float *q,
                   size_t ldq, sa_decode_src k, sa_dtype kt, sa_decode_src v,
                   sa_dtype vt, float scale, float *mx, float *l, float *o,
                   size_t ldo, sa_softmax_online_fn online) {
  _Alignas(32) float s[SA_DECODE_ROWS * CHUNK];
  sa_decode_chunks(CHUNK, s, dots_for(kt), online, sums_for(vt), m, n, d, dv, q,
                   ldq, &k, kt, &v, vt, scale, mx, l, o, ldo);
}

SA_DECODE_ENTRIES(avx2_sleef, decode, sa_softmax_online__avx2_sleef)
SA_DECODE_ENTRIES(avx2_poly, decode, sa_softmax_online__avx2_poly)
