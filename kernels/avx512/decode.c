/*
 * decode, AVX-512: score, online softmax and weighted sum for m <= 16 rows
 * in one pass over K and V, in chunks of CHUNK keys while K or V is f32
 * and CHUNK_NARROW while both are narrow (the contract is in
 * include/simdattn.h above sa_decode_fn).
 *
 * Decode is a stream: each K and V byte is used by the m rows of one call
 * and never again, so its speed is how fast K and V arrive. Here a chunk's
 * scores stay in a tile on the stack (16 x CHUNK floats), and the rows are
 * read as one stream, a chunk's K rows, its V rows, the next chunk's K
 * rows: the dot products and the value sums prefetch it a few KiB ahead, a
 * row per row they read, and (K or V f32) touch the 4 KiB page of the row
 * 16 KiB on. The driver uses it for pages shorter than a key block, where
 * the three kernels would pay a call each and a rescale per page
 * (docs/DESIGN.md, "The decode kernel", which has the measurements: f32
 * rows run fastest in chunks of 128 keys with the touches, narrow ones in
 * chunks of 128 too (32 until 0.11.4), without).
 *
 * Per chunk, as the contract's composition does:
 *  - dots: DM rows x DN keys of vector accumulators over d, K read as it
 *    lies, 32 values a step widened once (f16 / bf16 / q8_0, widen.h) for
 *    every row; one transposed reduction stores the DM x DN scores. bf16
 *    K is widened as evens and odds against Q's rows copied once per call
 *    in that order, as score_t.c's dots (which say why).
 *  - softmax step per row on the chunk's scores in L1: max, exp, sum, and
 *    alpha = exp(mx - new).
 *  - value sums: rows x columns register tiles chosen by m so that one
 *    pass covers as many columns as the registers hold (m <= 2: 128
 *    columns, m <= 4: 64, else 32 per pass of 8 rows); each V row of the
 *    chunk is loaded (and widened) once per pass for every row. f32 V with
 *    more than 2 rows goes in row pairs of 128 columns instead, as wsum.c
 *    (which says why): the first pair reads the chunk's V rows whole, in
 *    address order, the others find them in cache (m = 4, f32, 4096 keys
 *    from memory, one Zen 4 core: 1.15x as fast, m = 8 1.08x, 16-key pages
 *    1.04-1.14x); narrow V keeps the wide tiles, which widen a row once for
 *    four or eight rows, where pairs would widen it once a pair. The sums
 *    start at 0, and o = alpha * o + sum at the store, as wsum's beta: the
 *    running o never absorbs a chunk's terms one at a time. bf16 V is
 *    widened as evens and odds and its sums put back in column order at
 *    the store, as wsum_t.c's.
 *
 * Tails: keys of a short last group re-read the group's first key and are
 * left out of the score store; d and dv past their ends are read masked
 * (q8_0: whole blocks). Prefetches are issued only for keys below n.
 */
#include <immintrin.h>
#include <math.h>
#include <sleef.h>
#include <stdint.h>

#include "kernels/avx512/exp_poly.h"
#include "kernels/avx512/tiles.h"
#include "kernels/avx512/util.h"
#include "kernels/avx512/widen.h"
#include "kernels/decode_chunks.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/unroll.h"

enum {
  CHUNK = SA_AVX512_DECODE_CHUNK, /* keys a chunk, K or V f32; the tile's
                                    row stride */
  CHUNK_NARROW = SA_AVX512_DECODE_CHUNK_NARROW, /* K and V both narrow */
  DM = SA_AVX512_DM,
  DN = SA_AVX512_DN,
  AHEAD = 6144,        /* bytes of rows a row is prefetched before it is
                          read, K or V f32 */
  AHEAD_NARROW = 8192, /* K and V both narrow */
  FAR = 16384,         /* and its page first touched (K or V f32) */
  SEQ_M = 1            /* f32 K rows read one by one for m <= SEQ_M (dots) */
};

/* A chunk's stream, in the order it is read: its K rows (k, nc of them),
 * its V rows (v), the next chunk's K rows (kn, nk of them); rows krow and
 * vrow bytes; prefetched `ahead` rows before they are read, and their
 * pages touched `far` rows before (0: not). */
typedef struct stream_ahead {
  const void *const *k, *const *v, *const *kn;
  size_t nc, nk, krow, vrow, ahead, far;
} stream_ahead;

#define AI static inline __attribute__((always_inline))

typedef __m512 (*exp16_fn)(__m512);

/* Every 64-byte line of [row, row + bytes), into L2: rows are named 6-8
 * KiB ahead of the reader in the order it reads them (prefetch_ahead).
 * Until 0.9.1 a whole chunk was named ahead (a chunk's V rows during its
 * dot products, the next chunk's K rows during its value sums: 32 KiB each
 * at d = 128, f32), into L2. 0.9.1 named rows nearer, into L1 (T0), with
 * pages touched ahead: on the Zen 5 VM 16-key pages read 1.17-1.29x
 * faster, 8 KiB ahead into L2 1.12x. On a Zen 4 (32 KiB L1D, where T0
 * prefetches slow even a plain read loop: 12-20 GB/s against 25 with none
 * and 26-29 with T1) the same rows named into L2 (0.11.1) ran decode 1.35x
 * as fast at m = 4 on contiguous rows and 1.45x on 16-key pages shuffled
 * through 512 MiB (m = 1: 1.47x / 1.57x, m = 8: 1.22x / 1.43x; f16 and q8_0
 * pages 1.05-1.10x; one core, builds alternated in one process). L2 it is,
 * which may cost Zen 5 up to a tenth here (not measured there since). */
AI void prefetch_row(const char *row, size_t bytes) {
  const char *x = (const char *)((uintptr_t)row & ~(uintptr_t)63);
  for (; x < row + bytes; x += 64)
    _mm_prefetch(x, _MM_HINT_T1);
}

/* The first line of the last 4 KiB page that starts inside the row, if
 * one does: a page's first touch, ahead of the row prefetch that reads
 * it. And the row's own first line, into L2, when the row starts inside a
 * page: a row that follows a jump (the next head slice of a paged cache,
 * the next token of a token-major one) may start in a page the stream has
 * not touched. 16-key pages, f32, h32/kv8 batch 8, one Zen 4 core, pool
 * 64 bytes into its first page: 1.14-1.15x -> 1.10x the contiguous time,
 * page-aligned 1.10x -> 1.07-1.08x, two threads 1.11-1.14x -> 1.09-1.10x
 * (medians of 21-31, builds alternated). */
AI void touch_page(const char *row, size_t bytes) {
  uintptr_t pg = ((uintptr_t)row + bytes - 1) & ~(uintptr_t)4095;
  if (pg >= (uintptr_t)row)
    _mm_prefetch((const char *)pg, _MM_HINT_T0);
  if ((uintptr_t)row & 4095)
    _mm_prefetch(row, _MM_HINT_T1);
}

/* Row x of the chunk's stream (NULL past its end), and its bytes. */
AI const char *stream_row(const stream_ahead *st, size_t x, size_t *bytes) {
  *bytes = st->krow;
  if (x < st->nc)
    return st->k[x];
  if (x - st->nc < st->nc) {
    *bytes = st->vrow;
    return st->v[x - st->nc];
  }
  return x - 2 * st->nc < st->nk ? st->kn[x - 2 * st->nc] : NULL;
}

/* Called as row x of the stream is read: the row `ahead` rows on is
 * prefetched, and the page of the row `far` rows on touched. */
AI void prefetch_ahead(const stream_ahead *st, size_t x) {
  size_t bytes;
  const char *row = stream_row(st, x + st->ahead, &bytes);
  if (row)
    prefetch_row(row, bytes);
  if (st->far && (row = stream_row(st, x + st->far, &bytes)))
    touch_page(row, bytes);
}

/* Values p .. p + 32 of a row of type t, rem of them valid (q8_0: p a
 * multiple of 32 and rem >= 32), widened into lo and hi (bf16 with eo: as
 * evens and odds, widen.h); lanes past rem are 0 and not read. */
AI void load32(sa_dtype t, int eo, const char *row, size_t p, size_t rem,
               __m512 *lo, __m512 *hi) {
  if (t != SA_F32) {
    sa_widen32_eo(t, eo, row, p, rem, lo, hi);
    return;
  }
  const float *x = (const float *)row + p;
  *lo =
      rem >= 16 ? _mm512_loadu_ps(x) : _mm512_maskz_loadu_ps(sa_mask16(rem), x);
  *hi = rem >= 32  ? _mm512_loadu_ps(x + 16)
        : rem > 16 ? _mm512_maskz_loadu_ps(sa_mask16(rem - 16), x + 16)
                   : _mm512_setzero_ps();
}

/* ---- dots: s[0..mr)[0..nk) = scale * q[0..mr) . kr[0..nk), nk <= DN */

/* With seq, each K row is read whole before the next (c outer), instead of
 * the DN rows a step at a time: a row's lines then arrive in address order,
 * which the hardware prefetchers follow, at the cost of loading Q's rows
 * once per key instead of once per DN keys. f32 K rows from memory, one
 * Zen 4 core, builds alternated (medians of 21-31): m = 1 1.07-1.09x as
 * fast; m = 2 level to 1.06x, m = 4 level to 5 % slower (its Q loads); f16
 * K at m = 1 1.16x slower (half the bytes a key against the same FMAs).
 * Each sum takes the same terms in the same order either way. */
AI void dots(sa_dtype t, size_t mr, size_t d, const float *q, size_t ldq,
             const char *const *kr, float *s, size_t lds, size_t nk,
             float scale, int eo, int seq) {
  __m512 acc[DM][DN];
#pragma GCC unroll 4
  for (size_t r = 0; r < mr; r++)
    for (size_t c = 0; c < DN; c++)
      acc[r][c] = _mm512_setzero_ps();
  for (size_t c = 0; seq && c < DN; c++)
    for (size_t p = 0; p < d; p += 32) {
      __m512 b0, b1;
      load32(t, eo, kr[c], p, d - p, &b0, &b1);
#pragma GCC unroll 4
      for (size_t r = 0; r < mr; r++) {
        __m512 a0, a1;
        load32(SA_F32, 0, (const char *)(q + r * ldq), p, eo ? 32 : d - p, &a0,
               &a1);
        acc[r][c] = _mm512_fmadd_ps(a0, b0, acc[r][c]);
        acc[r][c] = _mm512_fmadd_ps(a1, b1, acc[r][c]);
      }
    }
  for (size_t p = 0; !seq && p < d; p += 32) {
    size_t rem = d - p;
    __m512 b[DN][2];
    for (size_t c = 0; c < DN; c++)
      load32(t, eo, kr[c], p, rem, &b[c][0], &b[c][1]);
#pragma GCC unroll 4
    for (size_t r = 0; r < mr; r++) {
      __m512 a0, a1; /* eo: Q's copy holds whole steps */
      load32(SA_F32, 0, (const char *)(q + r * ldq), p, eo ? 32 : rem, &a0,
             &a1);
      for (size_t c = 0; c < DN; c++) {
        acc[r][c] = _mm512_fmadd_ps(a0, b[c][0], acc[r][c]);
        acc[r][c] = _mm512_fmadd_ps(a1, b[c][1], acc[r][c]);
      }
    }
  }
  sa_dots_store(mr, acc, scale, s, lds, nk);
}

/* The chunk's scores, s[i][0..nc) for every row, K rows at st->k[j]; the
 * stream is prefetched meanwhile, a row per key. */
AI void chunk_dots(sa_dtype t, size_t m, size_t d, const float *q, size_t ldq,
                   const stream_ahead *st, float scale, float *s, int eo) {
  const size_t nc = st->nc;
  const void *const *k = st->k;
  for (size_t j0 = 0; j0 < nc; j0 += DN) {
    size_t nk = nc - j0 < DN ? nc - j0 : DN;
    const char *kr[DN];
    for (size_t c = 0; c < DN; c++)
      kr[c] = k[c < nk ? j0 + c : j0];
    for (size_t c = 0; c < nk; c++)
      prefetch_ahead(st, j0 + c);
    for (size_t i0 = 0; i0 < m; i0 += DM) {
#define DOTS(r)                                                                \
  if (eo)                                                                      \
    dots(t, r, d, q + i0 * ldq, ldq, kr, s + i0 * CHUNK + j0, CHUNK, nk,       \
         scale, 1, 0);                                                         \
  else if (t == SA_F32 && m <= SEQ_M)                                          \
    dots(t, r, d, q + i0 * ldq, ldq, kr, s + i0 * CHUNK + j0, CHUNK, nk,       \
         scale, 0, 1);                                                         \
  else                                                                         \
    dots(t, r, d, q + i0 * ldq, ldq, kr, s + i0 * CHUNK + j0, CHUNK, nk,       \
         scale, 0, 0)
      SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
    }
  }
}

/* ---- the online step on one row's chunk of scores, in place */

static void online_row(float *s, size_t nc, float *mx, float *l, float *alpha,
                       exp16_fn exp16) {
  __m512 vm = _mm512_set1_ps(*mx);
  size_t j = 0;
  /* max(x, acc) keeps acc for a NaN x: NaN scores are skipped */
  for (; j + 16 <= nc; j += 16)
    vm = _mm512_max_ps(_mm512_loadu_ps(s + j), vm);
  if (j < nc) {
    __mmask16 k = sa_mask16(nc - j);
    vm = _mm512_mask_max_ps(vm, k, _mm512_maskz_loadu_ps(k, s + j), vm);
  }
  float next = _mm512_reduce_max_ps(vm);
  if (next == -INFINITY) {
    /* nothing finite yet: weights 0, alpha 1; a NaN score is not lost */
    for (j = 0; j < nc; j++) {
      if (s[j] != s[j])
        *l = NAN;
      s[j] = 0.0f;
    }
    *alpha = 1.0f;
    return;
  }
  vm = _mm512_set1_ps(next);
  __m512 sum = _mm512_setzero_ps();
  for (j = 0; j + 16 <= nc; j += 16) {
    __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
    _mm512_storeu_ps(s + j, e);
    sum = _mm512_add_ps(sum, e);
  }
  if (j < nc) {
    __mmask16 k = sa_mask16(nc - j);
    __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), vm));
    _mm512_mask_storeu_ps(s + j, k, e);
    sum = _mm512_mask_add_ps(sum, k, sum, e);
  }
  *alpha =
      *mx == next ? 1.0f : _mm512_cvtss_f32(exp16(_mm512_set1_ps(*mx - next)));
  *l = *l * *alpha + _mm512_reduce_add_ps(sum);
  *mx = next;
}

/* ---- value sums: o[r][c0 ..) = alpha[r] * o + sum_j p[r][j] * v[j][c0 ..]
 * for rows 0..mr, NV vectors of columns (cn of them valid); with pf, the
 * stream is prefetched, a row per V row used. mr and NV constants at every
 * call. */
AI void sums(sa_dtype t, size_t mr, size_t NV, size_t nc, const float *p,
             const void *const *v, size_t c0, size_t cn, const float *alpha,
             float *o, size_t ldo, int pf, const stream_ahead *st) {
  __m512 acc[8][8];
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
#pragma GCC unroll 8
    for (size_t c = 0; c < NV; c++)
      acc[r][c] = _mm512_setzero_ps();
  for (size_t j = 0; j < nc; j++) {
    if (pf)
      prefetch_ahead(st, nc + j);
    __m512 b[8];
#pragma GCC unroll 4
    for (size_t g = 0; g < NV / 2; g++) {
      size_t at = 32 * g;
      if (at < cn)
        load32(t, 1, v[j], c0 + at, cn - at, &b[2 * g], &b[2 * g + 1]);
      else
        b[2 * g] = b[2 * g + 1] = _mm512_setzero_ps();
    }
#pragma GCC unroll 8
    for (size_t r = 0; r < mr; r++) {
      __m512 a = _mm512_set1_ps(p[r * CHUNK + j]);
#pragma GCC unroll 8
      for (size_t c = 0; c < NV; c++)
        acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
    }
  }
  /* bf16's sums, as evens and odds, in column order */
  for (size_t r = 0; t == SA_BF16 && r < mr; r++)
    for (size_t c = 0; c < NV; c += 2)
      sa_bf16_eo_columns(&acc[r][c], &acc[r][c + 1]);
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++) {
    __m512 ar = _mm512_set1_ps(alpha[r]);
#pragma GCC unroll 8
    for (size_t c = 0; c < NV; c++) {
      if (16 * c >= cn)
        break;
      __mmask16 km = sa_mask16(cn - 16 * c);
      float *out = o + r * ldo + c0 + 16 * c;
      /* alpha * o rounded on its own, as wsum's beta */
      __m512 x = _mm512_mul_ps(ar, _mm512_maskz_loadu_ps(km, out));
      _mm512_mask_storeu_ps(out, km, _mm512_add_ps(x, acc[r][c]));
    }
  }
}

/* Every row and column of the chunk, in passes over its V rows of RB rows
 * and 16 NV columns each (as many as the registers hold); the first pass
 * prefetches. */
AI void chunk_sums(sa_dtype t, size_t m, size_t nc, size_t dv, const float *p,
                   const void *const *v, const float *alpha, float *o,
                   size_t ldo, const stream_ahead *st) {
#define PASS(r, NV, i0)                                                        \
  sums(t, r, NV, nc, p + (i0)*CHUNK, v, c0, cn, alpha + (i0), o + (i0)*ldo,    \
       ldo, pf, st)
  if (t == SA_F32 || m <= 2) { /* row pairs of 128 columns */
    for (size_t c0 = 0; c0 < dv; c0 += 128) {
      size_t cn = dv - c0 < 128 ? dv - c0 : 128;
      for (size_t i0 = 0; i0 < m; i0 += 2) {
        int pf = c0 == 0 && i0 == 0;
        if (m - i0 >= 2)
          PASS(2, 8, i0);
        else
          PASS(1, 8, i0);
      }
    }
  } else if (m <= 4) {
    for (size_t c0 = 0; c0 < dv; c0 += 64) {
      size_t cn = dv - c0 < 64 ? dv - c0 : 64;
      int pf = c0 == 0;
      if (m == 4)
        PASS(4, 4, 0);
      else
        PASS(3, 4, 0);
    }
  } else {
    for (size_t i0 = 0; i0 < m; i0 += 8)
      for (size_t c0 = 0; c0 < dv; c0 += 32) {
        size_t cn = dv - c0 < 32 ? dv - c0 : 32;
        int pf = i0 == 0 && c0 == 0;
#define PASS2(r) PASS(r, 2, i0)
        SA_UNROLL_1_8(m - i0 < 8 ? m - i0 : 8, PASS2);
#undef PASS2
      }
  }
#undef PASS
}

/* ---- the kernel */

_Static_assert(CHUNK <= SA_DECODE_CHUNK_MAX && CHUNK_NARROW <= CHUNK,
               "decode's lists and tile hold a chunk");

/* sa_decode_chunks' loop with the phases inlined for one pair of types (the
 * online step is per row here, exp16 passed in). */
AI void decode_typed(sa_dtype kt, sa_dtype vt, size_t m, size_t n, size_t d,
                     size_t dv, const float *q, size_t ldq,
                     const sa_decode_src *k, const sa_decode_src *v,
                     float scale, float *mx, float *l, float *o, size_t ldo,
                     exp16_fn exp16) {
  _Alignas(64) float s[SA_DECODE_ROWS * CHUNK];
  float alpha[SA_DECODE_ROWS];
  const void *kbuf[2][CHUNK], *vbuf[CHUNK];
  const size_t krow = sa_decode_row_bytes(kt, d);
  const size_t vrow = sa_decode_row_bytes(vt, dv);
  const size_t rowb = krow > vrow ? krow : vrow;
  /* f32 rows stream with their pages touched ahead; with K and V both
   * narrow the kernel is nearer bound by its instructions than by the
   * stream, and touches gained nothing. Narrow chunks were 32 keys until
   * 0.11.4; on a Zen 4, 16-key pages of f16 / q8_0 / bf16 decode 1.05-1.08x
   * as fast in chunks of 128 (the online step and O's rescale a quarter as
   * often), 64 half that */
  const int wide = kt == SA_F32 || vt == SA_F32;
  const size_t ch = wide ? CHUNK : CHUNK_NARROW;
  size_t ahead = (wide ? AHEAD : AHEAD_NARROW) / rowb;
  ahead = ahead < 4 ? 4 : ahead > ch ? ch : ahead;
  size_t far = wide ? FAR / rowb : 0;
  far = far > ch ? ch : far;
  /* bf16 K: Q's rows as evens and odds (widen.h), if they fit */
  _Alignas(64) float qe[SA_BF16_EO_FLOATS];
  const int eo = kt == SA_BF16 && sa_bf16_eo_q(m, d, &q, &ldq, qe);
  const void *const *kr = sa_decode_rows_at(k, 0, n < ch ? n : ch, kbuf[0]);
  for (size_t j0 = 0, b = 0; j0 < n; j0 += ch, b ^= 1) {
    size_t nc = n - j0 < ch ? n - j0 : ch;
    size_t rest = n - j0 - nc, nk = rest < ch ? rest : ch;
    const void *const *vr = sa_decode_rows_at(v, j0, nc, vbuf);
    const void *const *kn = sa_decode_rows_at(k, j0 + nc, nk, kbuf[b ^ 1]);
    const stream_ahead st = {kr, vr, kn, nc, nk, krow, vrow, ahead, far};
    chunk_dots(kt, m, d, q, ldq, &st, scale, s, eo);
    for (size_t i = 0; i < m; i++)
      online_row(s + i * CHUNK, nc, &mx[i], &l[i], &alpha[i], exp16);
    chunk_sums(vt, m, nc, dv, s, vr, alpha, o, ldo, &st);
    kr = kn;
  }
}

/* One instantiation per K type, V type taken at run time per chunk pass. */
#define DECODE_K(kt)                                                           \
  static void decode_k_##kt(size_t m, size_t n, size_t d, size_t dv,           \
                            const float *q, size_t ldq,                        \
                            const sa_decode_src *k, const sa_decode_src *v,    \
                            sa_dtype vt, float scale, float *mx, float *l,     \
                            float *o, size_t ldo, exp16_fn exp16) {            \
    switch (vt) {                                                              \
    case SA_F16:                                                               \
      decode_typed(kt, SA_F16, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,     \
                   ldo, exp16);                                                \
      break;                                                                   \
    case SA_BF16:                                                              \
      decode_typed(kt, SA_BF16, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,    \
                   ldo, exp16);                                                \
      break;                                                                   \
    case SA_Q8_0:                                                              \
      decode_typed(kt, SA_Q8_0, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,    \
                   ldo, exp16);                                                \
      break;                                                                   \
    default:                                                                   \
      decode_typed(kt, SA_F32, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,     \
                   ldo, exp16);                                                \
      break;                                                                   \
    }                                                                          \
  }
DECODE_K(SA_F32)
DECODE_K(SA_F16)
DECODE_K(SA_BF16)
DECODE_K(SA_Q8_0)
#undef DECODE_K

static void decode_any(size_t m, size_t n, size_t d, size_t dv, const float *q,
                       size_t ldq, sa_decode_src k, sa_dtype kt,
                       sa_decode_src v, sa_dtype vt, float scale, float *mx,
                       float *l, float *o, size_t ldo, exp16_fn exp16) {
  switch (kt) {
  case SA_F16:
    decode_k_SA_F16(m, n, d, dv, q, ldq, &k, &v, vt, scale, mx, l, o, ldo,
                    exp16);
    break;
  case SA_BF16:
    decode_k_SA_BF16(m, n, d, dv, q, ldq, &k, &v, vt, scale, mx, l, o, ldo,
                     exp16);
    break;
  case SA_Q8_0:
    decode_k_SA_Q8_0(m, n, d, dv, q, ldq, &k, &v, vt, scale, mx, l, o, ldo,
                     exp16);
    break;
  default:
    decode_k_SA_F32(m, n, d, dv, q, ldq, &k, &v, vt, scale, mx, l, o, ldo,
                    exp16);
    break;
  }
}

static __m512 exp_sleef(__m512 x) { return Sleef_expf16_u10avx512f(x); }
static __m512 exp_poly(__m512 x) { return sa_exp16_poly(x); }

SA_DECODE_ENTRIES(avx512_sleef, decode_any, exp_sleef)
SA_DECODE_ENTRIES(avx512_poly, decode_any, exp_poly)
