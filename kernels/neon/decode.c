/*
 * decode, NEON: score, online softmax and weighted sum for m <= 16 rows in
 * one pass over K and V, in chunks of CHUNK keys (the contract is in
 * include/simdattn.h above sa_decode_fn). The AVX-512 kernel
 * (kernels/avx512/decode.c) is the same design; what differs is said here.
 *
 * Decode is a stream: each K and V byte is used by the m rows of one call
 * and never again. Run as score, softmax_online and wsum, the score tile
 * makes a round trip through the cache and each kernel walks one stream
 * alone.
 * Here a chunk's scores stay in an L1 tile on the stack (16 x CHUNK floats)
 * and the two streams are software-pipelined: the dot products of a chunk
 * prefetch its V rows, the first value-sum pass prefetches the next chunk's
 * K rows. CHUNK is 32, not AVX-512's 64: a chunk of K and of V at d = 128,
 * f32, is 16 KiB each, so both fit the 32 KiB L1D of the smaller cores
 * (Cortex-A72) while one is read and the other arrives.
 *
 * Per chunk, as the contract's composition does:
 *  - dots: 4 rows x 4 keys of accumulators, K read as it lies, 8 values of
 *    d a step widened once (widen.h) for all the tile's rows, one pairwise
 *    reduction per tile. With one or two rows, the high 4 values of a step
 *    go to a second set of accumulators: 4 chains of 2 dependent FMAs a
 *    step would leave the FMA pipes waiting on latency.
 *  - the online step is the set's own softmax_online kernel on the tile,
 *    called once per chunk: the same code as the composition, so the same
 *    max, exp, sum and NaN rules (a row still at -inf gets p = 0, alpha = 1
 *    and l NaN if a score was NaN; a NaN mx stays).
 *  - value sums: rows x columns register tiles chosen by m so one pass
 *    covers as many columns as the 32 registers hold: 1 row x 64 columns,
 *    2 x 32, 3-4 x 16, 5-8 x 8 (8 more rows: another pass of those), with
 *    the weights of 4 keys one vector per row, broadcast by lane (FMLA by
 *    element), so each V row of the chunk is loaded and widened once per
 *    pass for all its rows. The sums start at 0, and o = alpha * o + sum at
 *    the store, alpha * o rounded on its own as the contract states.
 *
 * Which K and V types: one dots function per K type and one sums function
 * per V type, picked per call, with the online step as a third pointer:
 * three indirect calls a chunk instead of 16 type pairs x 2 exps of
 * inlined copies.
 *
 * What it costs, counted (no AArch64 hardware was at hand to time it):
 * executed instructions per key at d = dv = 128 over 1024 keys, GCC 12
 * -O3, qemu-aarch64 with an instruction-counting plugin, against the
 * composition on one block of 1024 keys (score or score_t,
 * softmax_online, wsum or wsum_t):
 *                   m = 1       m = 4       m = 8
 *   f32 K and V     246 / 188   628 / 491   1189 / 983
 *   q8_0 K and V    432 / 400   859 / 743   1573 / 1486
 * The prefetches are 45, 57, 86 (f32) and 27, 40, 57 (q8_0) of these:
 * more with more rows, as their code in the sum loops takes registers and
 * a test on every pass. The inner loops themselves are shorter than the
 * composition's (objdump -d, f32, one row: dots 22 instructions per 8
 * values of d for 4 keys, 88 a key, against score's 1 x 4 tile, 12 per 4
 * values, 96; value sums 106 per 4 keys for 64 columns, 53 a key, against
 * wsum's 33 per 4 keys for 16 columns, 66); what is added is what a chunk
 * of 32 keys repeats: the dot tiles' setup and reduction, zeroing and
 * storing the sum tiles. So this kernel runs more instructions than the
 * composition, not fewer; what it can save is memory time (V's prefetch,
 * the score tile kept in L1), which only hardware shows. Time it against
 * the composition (SIMDATTN_ISA, the bench) before relying on it; the
 * prefetches are the first thing to try without, and a chunk of 64 keys
 * runs 11 to 58 fewer a key but no longer fits both streams in a 32 KiB
 * L1D.
 *
 * Tails, with nothing read or written outside the named rows and columns
 * (AArch64 has no masked loads): a short last group of keys re-reads the
 * group's first key and its extra scores land past nc in the stack tile,
 * where nothing reads them; d past a multiple of 8 is read 4 at a time and
 * then lane by lane with zero pad; value-sum columns past the last full
 * pass go in 16-column passes (q8_0 is whole 32-value blocks, so that ends
 * it), then 4-column ones and one 1-3 column pass moved lane by lane; keys
 * past a multiple of 4 are summed one at a time. Prefetches are issued only
 * for keys below n.
 */
#include <stdint.h>

#include "kernels/decode_chunks.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/neon/tiles.h"
#include "kernels/neon/util.h"
#include "kernels/neon/widen.h"
#include "kernels/unroll.h"

enum { CHUNK = SA_NEON_DECODE_CHUNK };

/* Every 64-byte line of [p, p + bytes) on its way to L1, eight PRFMs a
 * loop step so the loop adds little to the one instruction a line. */
SA_NEON_INLINE void prefetch_span(const char *p, size_t bytes) {
  const char *x = (const char *)((uintptr_t)p & ~(uintptr_t)63);
  const char *end = p + bytes;
  for (; x + 448 < end; x += 512)
    for (int i = 0; i < 8; i++)
      __builtin_prefetch(x + 64 * i, 0, 3);
  for (; x < end; x += 64)
    __builtin_prefetch(x, 0, 3);
}

/* rows rows of `bytes` each, at row[j]: one span when the first and last
 * lie as if packed (a KV cache of one head, a page of one), so a line two
 * rows share is asked for once and the loop runs per line, not per row (a
 * prefetch is a hint: rows between that lie elsewhere only go unasked). */
SA_NEON_INLINE void prefetch_rows(const void *const *row, size_t rows,
                                  size_t bytes) {
  const char *first = row[0], *last = row[rows - 1];
  if (last == first + (rows - 1) * bytes) {
    prefetch_span(first, rows * bytes);
    return;
  }
  for (size_t j = 0; j < rows; j++)
    prefetch_span(row[j], bytes);
}

/* ---- dots: s[r][0..4) = scale * q[r] . key c, for r < MR, c < 4 */

/* One step of 8 values of d at p: lo[c] and hi[c] are key c's values
 * p .. p + 4 and p + 4 .. p + 8, widened. With SPLIT the high half goes
 * to acc2 (more chains for one or two rows), else to acc as well. */
SA_NEON_INLINE void dots_step8(size_t MR, int SPLIT, float32x4_t acc[4][4],
                               float32x4_t acc2[4][4], const float *q,
                               size_t ldq, size_t p, const float32x4_t *lo,
                               const float32x4_t *hi) {
  for (size_t r = 0; r < MR; r++) {
    float32x4_t a = vld1q_f32(q + r * ldq + p);
    for (size_t c = 0; c < 4; c++)
      acc[r][c] = vfmaq_f32(acc[r][c], a, lo[c]);
  }
  for (size_t r = 0; r < MR; r++) {
    float32x4_t a = vld1q_f32(q + r * ldq + p + 4);
    for (size_t c = 0; c < 4; c++) {
      if (SPLIT)
        acc2[r][c] = vfmaq_f32(acc2[r][c], a, hi[c]);
      else
        acc[r][c] = vfmaq_f32(acc[r][c], a, hi[c]);
    }
  }
}

/* MR rows (a constant at every call) x the 4 keys kr[0..4) of type t. */
SA_NEON_INLINE void dots(sa_dtype t, size_t MR, size_t d, const float *q,
                         size_t ldq, const char *const *kr, float scale,
                         float *s) {
  float32x4_t acc[4][4], split[4][4];
  for (size_t r = 0; r < 4; r++)
    for (size_t c = 0; c < 4; c++)
      acc[r][c] = split[r][c] = vdupq_n_f32(0.0f);
  const int SPLIT = MR <= 2;

  size_t p = 0;
  float32x4_t lo[4], hi[4];
  if (t == SA_Q8_0) {
    for (size_t b = 0; b < d / SA_QK8_0; b++) {
      const sa_block_q8_0 *blk[4];
      float32x4_t sc[4];
      for (size_t c = 0; c < 4; c++) {
        blk[c] = (const sa_block_q8_0 *)kr[c] + b;
        sc[c] = sa_neon_q8_scale(blk[c]);
      }
      for (size_t h = 0; h < SA_QK8_0; h += 8) {
        for (size_t c = 0; c < 4; c++)
          sa_neon_dequant8(vld1_s8(blk[c]->q + h), sc[c], &lo[c], &hi[c]);
        dots_step8(MR, SPLIT, acc, split, q, ldq, b * SA_QK8_0 + h, lo, hi);
      }
    }
  } else {
    for (; p + 8 <= d; p += 8) {
      for (size_t c = 0; c < 4; c++) {
        if (t == SA_F32) {
          lo[c] = vld1q_f32((const float *)kr[c] + p);
          hi[c] = vld1q_f32((const float *)kr[c] + p + 4);
        } else {
          sa_neon_widen8(t, (const uint16_t *)kr[c] + p, &lo[c], &hi[c]);
        }
      }
      dots_step8(MR, SPLIT, acc, split, q, ldq, p, lo, hi);
    }
    if (p + 4 <= d) {
      for (size_t c = 0; c < 4; c++)
        lo[c] = t == SA_F32 ? vld1q_f32((const float *)kr[c] + p)
                            : sa_neon_widen4(t, (const uint16_t *)kr[c] + p);
      for (size_t r = 0; r < MR; r++) {
        float32x4_t a = vld1q_f32(q + r * ldq + p);
        for (size_t c = 0; c < 4; c++)
          acc[r][c] = vfmaq_f32(acc[r][c], a, lo[c]);
      }
      p += 4;
    }
    if (p < d) {
      size_t rem = d - p;
      for (size_t c = 0; c < 4; c++)
        lo[c] =
            t == SA_F32
                ? sa_neon_load_partial((const float *)kr[c] + p, rem, 0.0f)
                : sa_neon_widen_partial(t, (const uint16_t *)kr[c] + p, rem);
      for (size_t r = 0; r < MR; r++) {
        float32x4_t a = sa_neon_load_partial(q + r * ldq + p, rem, 0.0f);
        for (size_t c = 0; c < 4; c++)
          acc[r][c] = vfmaq_f32(acc[r][c], a, lo[c]);
      }
    }
  }

  const float32x4_t vscale = vdupq_n_f32(scale);
  for (size_t r = 0; r < MR; r++) {
    if (SPLIT)
      for (size_t c = 0; c < 4; c++)
        acc[r][c] = vaddq_f32(acc[r][c], split[r][c]);
    float32x4_t sums = vpaddq_f32(vpaddq_f32(acc[r][0], acc[r][1]),
                                  vpaddq_f32(acc[r][2], acc[r][3]));
    /* all 4 lanes: past nc they fall inside the tile, unread */
    vst1q_f32(s + r * CHUNK, vmulq_f32(sums, vscale));
  }
}

/* The chunk's scores s[i][0..nc) for every row, K rows at k[j]; the V
 * rows of the same keys (v[j], vrow bytes each) are prefetched meanwhile. */
SA_NEON_INLINE void chunk_dots(sa_dtype t, size_t m, size_t nc, size_t d,
                               const float *q, size_t ldq, const void *const *k,
                               const void *const *v, size_t vrow, float scale,
                               float *s) {
  for (size_t j0 = 0; j0 < nc; j0 += 4) {
    size_t nk = nc - j0 < 4 ? nc - j0 : 4;
    const char *kr[4];
    for (size_t c = 0; c < 4; c++)
      kr[c] = k[c < nk ? j0 + c : j0];
    prefetch_rows(v + j0, nk, vrow);
    for (size_t i0 = 0; i0 < m; i0 += 4) {
#define DOTS(r) dots(t, r, d, q + i0 * ldq, ldq, kr, scale, s + i0 * CHUNK + j0)
      SA_UNROLL_1_4(m - i0 < 4 ? m - i0 : 4, DOTS);
#undef DOTS
    }
  }
}

#define DOTS_OF(name, t)                                                       \
  static void name(size_t m, size_t nc, size_t d, const float *q, size_t ldq,  \
                   const void *const *k, const void *const *v, size_t vrow,    \
                   float scale, float *s) {                                    \
    chunk_dots(t, m, nc, d, q, ldq, k, v, vrow, scale, s);                     \
  }
DOTS_OF(dots_f32, SA_F32)
DOTS_OF(dots_f16, SA_F16)
DOTS_OF(dots_bf16, SA_BF16)
DOTS_OF(dots_q8_0, SA_Q8_0)
#undef DOTS_OF

/* ---- value sums: o[r][c ..) = alpha[r] * o + sum_j p[r][j] * v[j][c ..] */

/* NV vectors of V from x, the element of some row at the pass's column,
 * widened (rc < 4: one partial vector of rc columns, NV == 1). q8_0: NV ==
 * 2, x that column's block and co the column's place in it. */
SA_NEON_INLINE void load_v(sa_dtype t, size_t NV, size_t rc, const char *x,
                           size_t co, float32x4_t *dst) {
  if (t == SA_Q8_0) {
    const sa_block_q8_0 *b = (const sa_block_q8_0 *)x;
    sa_neon_dequant8(vld1_s8(b->q + co), sa_neon_q8_scale(b), &dst[0], &dst[1]);
  } else if (t == SA_F32) {
    const float *f = (const float *)x;
    for (size_t u = 0; u < NV; u++)
      dst[u] =
          rc == 4 ? vld1q_f32(f + 4 * u) : sa_neon_load_partial(f, rc, 0.0f);
  } else {
    const uint16_t *h = (const uint16_t *)x;
    for (size_t u = 0; u + 2 <= NV; u += 2)
      sa_neon_widen8(t, h + 4 * u, &dst[u], &dst[u + 1]);
    if (NV == 1)
      dst[0] = rc == 4 ? sa_neon_widen4(t, h) : sa_neon_widen_partial(t, h, rc);
  }
}

/* One key: acc[r][u] += w[r] * v[u], w[r] the key's weight in every lane
 * (a lane broadcast, which GCC folds into FMLA by element). V is loaded 4
 * vectors at a time, each group used before the next is loaded, so a wide
 * tile holds 4 of them, not NV. A q8_0 group is 16 values of one block,
 * its scale widened once per block (co is 0 when NV >= 8: those passes
 * start at a block). */
SA_NEON_INLINE void sum_key(sa_dtype t, size_t MR, size_t NV, size_t rc,
                            float32x4_t acc[8][16], const char *x, size_t co,
                            const float32x4_t *w) {
  const size_t G = NV < 4 ? NV : 4;
  float32x4_t sc = vdupq_n_f32(0.0f);
#pragma GCC unroll 4
  for (size_t u = 0; u < NV; u += G) {
    float32x4_t vv[4];
    if (t == SA_Q8_0 && G == 4) {
      const sa_block_q8_0 *b =
          (const sa_block_q8_0 *)x + (co + 4 * u) / SA_QK8_0;
      if (u % 8 == 0)
        sc = sa_neon_q8_scale(b);
      sa_neon_dequant16(b->q + (co + 4 * u) % SA_QK8_0, sc, vv);
    } else {
      load_v(t, G, rc, x + 4 * u * (t == SA_F32 ? 4 : 2), co, vv);
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; r++)
#pragma GCC unroll 4
      for (size_t g = 0; g < G; g++)
        acc[r][u + g] = vfmaq_f32(acc[r][u + g], vv[g], w[r]);
  }
}

/* MR rows x NV vectors of columns from column c (MR * NV <= 16, both
 * constants at every call); the next chunk's K rows (nk of them at kn[j],
 * krow bytes each) are prefetched, one per key summed. */
SA_NEON_INLINE void sums(sa_dtype t, size_t MR, size_t NV, size_t rc, size_t nc,
                         const float *p, const void *const *v, size_t c,
                         const float *alpha, float *o, size_t ldo,
                         const void *const *kn, size_t nk, size_t krow) {
  float32x4_t acc[8][16], w[8];
#pragma GCC unroll 8
  for (size_t r = 0; r < MR; r++)
#pragma GCC unroll 16
    for (size_t u = 0; u < NV; u++)
      acc[r][u] = vdupq_n_f32(0.0f);

  /* column c of each key's row, so the loads take immediate offsets from
   * one pointer per key (LDP) */
  const size_t co = t == SA_Q8_0 && NV < 8 ? c % SA_QK8_0 : 0;
  const size_t xc = t == SA_Q8_0  ? c / SA_QK8_0 * sizeof(sa_block_q8_0)
                    : t == SA_F32 ? 4 * c
                                  : 2 * c;
#define X(j) ((const char *)v[j] + xc)
  size_t j = 0;
  for (; j + 4 <= nc; j += 4) {
    if (j < nk)
      prefetch_rows(kn + j, nk - j < 4 ? nk - j : 4, krow);
    float32x4_t pw[8];
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; r++)
      pw[r] = vld1q_f32(p + r * CHUNK + j);
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; r++)
      w[r] = vdupq_laneq_f32(pw[r], 0);
    sum_key(t, MR, NV, rc, acc, X(j), co, w);
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; r++)
      w[r] = vdupq_laneq_f32(pw[r], 1);
    sum_key(t, MR, NV, rc, acc, X(j + 1), co, w);
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; r++)
      w[r] = vdupq_laneq_f32(pw[r], 2);
    sum_key(t, MR, NV, rc, acc, X(j + 2), co, w);
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; r++)
      w[r] = vdupq_laneq_f32(pw[r], 3);
    sum_key(t, MR, NV, rc, acc, X(j + 3), co, w);
  }
  for (; j < nc; j++) {
    if (j < nk)
      prefetch_rows(kn + j, 1, krow);
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; r++)
      w[r] = vld1q_dup_f32(p + r * CHUNK + j);
    sum_key(t, MR, NV, rc, acc, X(j), co, w);
  }
#undef X

#pragma GCC unroll 8
  for (size_t r = 0; r < MR; r++) {
    float *out = o + r * ldo + c;
#pragma GCC unroll 16
    for (size_t u = 0; u < NV; u++) {
      /* alpha * o rounded on its own, then the chunk's sum added */
      if (rc == 4) {
        float32x4_t ao = vmulq_n_f32(vld1q_f32(out + 4 * u), alpha[r]);
        vst1q_f32(out + 4 * u, vaddq_f32(ao, acc[r][u]));
      } else {
        float32x4_t ao =
            vmulq_n_f32(sa_neon_load_partial(out, rc, 0.0f), alpha[r]);
        sa_neon_store_partial(out, rc, vaddq_f32(ao, acc[r][u]));
      }
    }
  }
}

/* Every column of MR rows: passes of NV vectors, then the tails; the first
 * pass prefetches the next chunk's K (nk keys; 0 for later row groups). */
SA_NEON_INLINE void row_sums(sa_dtype t, size_t MR, size_t NV, size_t nc,
                             size_t dv, const float *p, const void *const *v,
                             const float *alpha, float *o, size_t ldo,
                             const void *const *kn, size_t nk, size_t krow) {
  size_t c = 0;
  for (; c + 4 * NV <= dv; c += 4 * NV, nk = 0)
    sums(t, MR, NV, 4, nc, p, v, c, alpha, o, ldo, kn, nk, krow);
  if (NV > 4)
    for (; c + 16 <= dv; c += 16, nk = 0)
      sums(t, MR, 4, 4, nc, p, v, c, alpha, o, ldo, kn, nk, krow);
  if (t == SA_Q8_0) /* dv is whole blocks: nothing is left */
    return;
  for (; c + 4 <= dv; c += 4, nk = 0)
    sums(t, MR, 1, 4, nc, p, v, c, alpha, o, ldo, kn, nk, krow);
  if (c < dv)
    sums(t, MR, 1, dv - c, nc, p, v, c, alpha, o, ldo, kn, nk, krow);
}

/* Every row of the chunk, in groups of at most 8 rows, the tile chosen by
 * the group's rows. */
SA_NEON_INLINE void chunk_sums(sa_dtype t, size_t m, size_t nc, size_t dv,
                               const float *p, const void *const *v,
                               const float *alpha, float *o, size_t ldo,
                               const void *const *kn, size_t nk, size_t krow) {
  for (size_t i0 = 0; i0 < m; i0 += 8, nk = 0) {
    size_t mr = m - i0 < 8 ? m - i0 : 8;
#define ROWS(r, NV)                                                            \
  row_sums(t, r, NV, nc, dv, p + i0 * CHUNK, v, alpha + i0, o + i0 * ldo, ldo, \
           kn, nk, krow)
    switch (mr) {
    case 1:
      ROWS(1, 16);
      break;
    case 2:
      ROWS(2, 8);
      break;
    case 3:
      ROWS(3, 4);
      break;
    case 4:
      ROWS(4, 4);
      break;
    case 5:
      ROWS(5, 2);
      break;
    case 6:
      ROWS(6, 2);
      break;
    case 7:
      ROWS(7, 2);
      break;
    default:
      ROWS(8, 2);
      break;
    }
#undef ROWS
  }
}

#define SUMS_OF(name, t)                                                       \
  static void name(size_t m, size_t nc, size_t dv, const float *p,             \
                   const void *const *v, const float *alpha, float *o,         \
                   size_t ldo, const void *const *kn, size_t nk,               \
                   size_t krow) {                                              \
    chunk_sums(t, m, nc, dv, p, v, alpha, o, ldo, kn, nk, krow);               \
  }
SUMS_OF(sums_f32, SA_F32)
SUMS_OF(sums_f16, SA_F16)
SUMS_OF(sums_bf16, SA_BF16)
SUMS_OF(sums_q8_0, SA_Q8_0)
#undef SUMS_OF

/* ---- the kernel */

_Static_assert(CHUNK <= SA_DECODE_CHUNK_MAX, "decode's lists hold a chunk");

static void decode(size_t m, size_t n, size_t d, size_t dv, const float *q,
                   size_t ldq, sa_decode_src k, sa_dtype kt, sa_decode_src v,
                   sa_dtype vt, float scale, float *mx, float *l, float *o,
                   size_t ldo, sa_softmax_online_fn online) {
  _Alignas(16) float s[SA_DECODE_ROWS * CHUNK];
  sa_decode_dots_fn dots_k = kt == SA_F16    ? dots_f16
                             : kt == SA_BF16 ? dots_bf16
                             : kt == SA_Q8_0 ? dots_q8_0
                                             : dots_f32;
  sa_decode_sums_fn sums_v = vt == SA_F16    ? sums_f16
                             : vt == SA_BF16 ? sums_bf16
                             : vt == SA_Q8_0 ? sums_q8_0
                                             : sums_f32;
  sa_decode_chunks(CHUNK, s, dots_k, online, sums_v, m, n, d, dv, q, ldq, &k,
                   kt, &v, vt, scale, mx, l, o, ldo);
}

SA_DECODE_ENTRIES(neon_sleef, decode, sa_softmax_online__neon_sleef)
SA_DECODE_ENTRIES(neon_poly, decode, sa_softmax_online__neon_poly)
