/*
 * decode, AVX-512: score, online softmax and weighted sum for m <= 16 rows
 * in one pass over K and V, in chunks of CHUNK keys while K or V is f32
 * and CHUNK_NARROW while both are narrow (the contract is in
 * include/simdattn.h above sa_decode_fn).
 *
 * Decode is a stream: each K and V byte is used by the m rows of one call
 * and never again, so its speed is how fast K and V arrive. Here a chunk's
 * scores stay in a tile on the stack (16 x CHUNK floats, two of them), and
 * the chunks run in a pipeline that reads K and V side by side: the first
 * pass of chunk c's value sums goes WG keys at a time, woven with chunk c
 * + 1's dot products, WG keys at a time (a chunk at a time while K and V
 * are both narrow). Each of the two lanes, K's rows and V's, is prefetched
 * AHEAD bytes of key pairs ahead of its reader, a row per row read, and (K
 * or V f32) the 4 KiB page of the row FAR bytes of pairs on is touched.
 * Until 0.11.6 the rows were read as one stream, a chunk's K rows then its
 * V rows: a core's reads go faster with both in flight (docs/DESIGN.md,
 * "K and V side by side", which has the measurements). The driver uses it
 * for pages shorter than a key block, where the three kernels would pay a
 * call each and a rescale per page, and for GQA groups over contiguous f32
 * caches where the L1D is under 48 KiB (attention/plan.c: measured faster
 * so on a Zen 4, slower on a Zen 5). docs/DESIGN.md, "The decode kernel":
 * f32 rows run fastest in chunks of 128 keys with the touches, narrow ones
 * in chunks of 128 too (32 until 0.11.4), without.
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
 *    the store, as wsum_t.c's. Where the rows make three tiles or more
 *    (f32 V, m >= 6), the woven pass runs every whole tile on each group
 *    of keys (woven, decode_typed): only a left-over row reads the chunk
 *    again.
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
#include "kernels/cpu_core.h"
#include "kernels/decode_chunks.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"
#include "kernels/unroll.h"

enum {
  CHUNK = SA_AVX512_DECODE_CHUNK, /* keys a chunk, K or V f32; the tile's
                                    row stride */
  CHUNK_NARROW = SA_AVX512_DECODE_CHUNK_NARROW, /* K and V both narrow */
  DM = SA_AVX512_DM,
  DN = SA_AVX512_DN,
  AHEAD = 12288,       /* bytes of key pairs (a K row and a V row) a row is
                          prefetched before it is read, K or V f32 */
  AHEAD_NARROW = 8192, /* K and V both narrow */
  FAR = 16384,         /* and its page first touched (K or V f32) */
  WG = 32,             /* keys of K, then of V, in the woven pass (f32) */
  SEQ_M = 1            /* f32 K rows read one by one for m <= SEQ_M (dots) */
};

/* One of the two streams a call reads, K's rows or V's: the chunk being
 * read (a, na rows) then the next (b, nb); rows `bytes` long, prefetched
 * `ahead` rows before they are read and their pages touched `far` rows
 * before (0: not); pc is the next row to prefetch. */
typedef struct lane {
  const void *const *a, *const *b;
  size_t na, nb, bytes, ahead, far, pc;
  int l1; /* rows prefetched into L1, else L2 */
} lane;

#define AI static inline __attribute__((always_inline))

typedef __m512 (*exp16_fn)(__m512);

/* Every 64-byte line of [row, row + bytes), into L1 (l1) or L2: rows are
 * named a few KiB ahead of their reader in the order it reads them
 * (lane_read). Until 0.9.1 a whole chunk was named ahead (a chunk's V rows
 * during its dot products, the next chunk's K rows during its value sums:
 * 32 KiB each at d = 128, f32), into L2. 0.9.1 named rows nearer, into L1
 * (T0), with pages touched ahead: on the Zen 5 VM 16-key pages read
 * 1.17-1.29x faster, 8 KiB ahead into L2 1.12x. On a Zen 4 (32 KiB L1D,
 * where T0 prefetches slow even a plain read loop: 12-20 GB/s against 25
 * with none and 26-29 with T1) the same rows named into L2 (0.11.1) ran
 * decode 1.35x as fast at m = 4 on contiguous rows and 1.45x on 16-key
 * pages shuffled through 512 MiB (m = 1: 1.47x / 1.57x, m = 8: 1.22x /
 * 1.43x; f16 and q8_0 pages 1.05-1.10x; one core, builds alternated in one
 * process). Back on a Zen 5 (48 KiB L1D) with 0.11.6's woven kernel, L1
 * won again: rows from memory 0.74-0.81x the time of L2 (m = 1-8, f32;
 * both ways in one library, docs/DESIGN.md, "Back into L1"), f16 / bf16
 * 0.92-0.93x, 16-key pages 0.96x, rows in L2 1.00-1.03x. So the level
 * follows the L1D's size (prefetch_into_l1). */
AI void prefetch_row(const char *row, size_t bytes, int l1) {
  const char *x = sa_line_of(row);
  for (; x < row + bytes; x += 64)
    sa_prefetch_line(x, !l1);
}

/* Whether lanes prefetch into L1: with an L1D of 48 KiB or more (Zen 5
 * measured), except on Intel's cores. Why the size, a reading not yet
 * tested: a line named 12 KiB of key pairs ahead must outlive those reads
 * and the second value-sum pass's, some 30 KiB of lines through the L1
 * before it is used, which a 32 KiB L1D may not hold. Why not Intel's
 * (0.12.5): on a Sapphire Rapids class Xeon (48 KiB L1D, one core reading
 * about 15 GB/s) L2 measured faster, batch-8 decode over 16-key pages
 * 0.96x the time over 8 and over 32 KV heads (f32, one thread, builds
 * alternated in one process); 256-key pages and token-major caches
 * level. A line named into L1 holds one of the core's few fill buffers
 * until it arrives, which may be the reason there. */
static int prefetch_into_l1(void) {
  return sa_core_l1d_large() && !sa_core_intel();
}

/* Row x of the lane (NULL past its end). */
AI const char *lane_row(const lane *ln, size_t x) {
  if (x < ln->na)
    return ln->a[x];
  return x - ln->na < ln->nb ? ln->b[x - ln->na] : NULL;
}

/* Called as row x of the lane is read: every row up to x + ahead is
 * prefetched, each once, and the page `far` rows on touched. */
AI void lane_read(lane *ln, size_t x) {
  while (ln->pc <= x + ln->ahead) {
    const char *row = lane_row(ln, ln->pc);
    if (!row)
      return;
    prefetch_row(row, ln->bytes, ln->l1);
    if (ln->far && (row = lane_row(ln, ln->pc + ln->far - ln->ahead)))
      sa_touch_page(row, ln->bytes);
    ln->pc++;
  }
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

/* Scores of the nk <= DN keys at kr (DN pointers) for every row, into
 * s[i][0..nk). */
AI void group_dots(sa_dtype t, size_t m, size_t d, const float *q, size_t ldq,
                   const char *const *kr, size_t nk, float scale, float *s,
                   int eo) {
  for (size_t i0 = 0; i0 < m; i0 += DM) {
#define DOTS(r)                                                                \
  if (eo)                                                                      \
    dots(t, r, d, q + i0 * ldq, ldq, kr, s + i0 * CHUNK, CHUNK, nk, scale, 1,  \
         0);                                                                   \
  else if (t == SA_F32 && m <= SEQ_M)                                          \
    dots(t, r, d, q + i0 * ldq, ldq, kr, s + i0 * CHUNK, CHUNK, nk, scale, 0,  \
         1);                                                                   \
  else                                                                         \
    dots(t, r, d, q + i0 * ldq, ldq, kr, s + i0 * CHUNK, CHUNK, nk, scale, 0, 0)
    SA_UNROLL_1_4(m - i0 < DM ? m - i0 : DM, DOTS);
#undef DOTS
  }
}

/* The scores of keys [j0, j1) of the lane's chunk (a multiple of DN apart
 * but for the chunk's end), read through the lane. */
AI void keys_dots(sa_dtype t, size_t m, size_t d, const float *q, size_t ldq,
                  lane *kl, size_t j0, size_t j1, float scale, float *s,
                  int eo) {
  for (; j0 < j1; j0 += DN) {
    size_t nk = j1 - j0 < DN ? j1 - j0 : DN;
    const char *kr[DN];
    for (size_t c = 0; c < DN; c++)
      kr[c] = kl->a[c < nk ? j0 + c : j0];
    for (size_t c = 0; c < nk; c++)
      lane_read(kl, j0 + c);
    group_dots(t, m, d, q, ldq, kr, nk, scale, s + j0, eo);
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
 * for rows 0..mr, NV vectors of columns (cn of them valid), in three
 * steps: zero, one key at a time, store. mr and NV constants at every
 * call. */
AI void sums_zero(size_t mr, size_t NV, __m512 acc[8][8]) {
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
#pragma GCC unroll 8
    for (size_t c = 0; c < NV; c++)
      acc[r][c] = _mm512_setzero_ps();
}

AI void sums_key(sa_dtype t, size_t mr, size_t NV, const float *p,
                 const char *vj, size_t c0, size_t cn, __m512 acc[8][8]) {
  __m512 b[8];
#pragma GCC unroll 4
  for (size_t g = 0; g < NV / 2; g++) {
    size_t at = 32 * g;
    if (at < cn)
      load32(t, 1, vj, c0 + at, cn - at, &b[2 * g], &b[2 * g + 1]);
    else
      b[2 * g] = b[2 * g + 1] = _mm512_setzero_ps();
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++) {
    __m512 a = _mm512_set1_ps(p[r * CHUNK]);
#pragma GCC unroll 8
    for (size_t c = 0; c < NV; c++)
      acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
  }
}

AI void sums_store(sa_dtype t, size_t mr, size_t NV, size_t c0, size_t cn,
                   const float *alpha, float *o, size_t ldo, __m512 acc[8][8]) {
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

/* The sums to L1 (out) or back (!out), 16 floats apart. */
AI void sums_park(size_t mr, size_t NV, float *mem, __m512 acc[8][8], int out) {
#pragma GCC unroll 8
  for (size_t r = 0; r < mr; r++)
#pragma GCC unroll 8
    for (size_t c = 0; c < NV; c++) {
      float *x = mem + 16 * (r * NV + c);
      if (out)
        _mm512_store_ps(x, acc[r][c]);
      else
        acc[r][c] = _mm512_load_ps(x);
    }
}

/* One pass over the chunk's nc V rows (found in cache: the first pass has
 * read them). */
AI void sums(sa_dtype t, size_t mr, size_t NV, size_t nc, const float *p,
             const void *const *v, size_t c0, size_t cn, const float *alpha,
             float *o, size_t ldo) {
  __m512 acc[8][8];
  sums_zero(mr, NV, acc);
  for (size_t j = 0; j < nc; j++)
    sums_key(t, mr, NV, p + j, v[j], c0, cn, acc);
  sums_store(t, mr, NV, c0, cn, alpha, o, ldo, acc);
}

/* The first pass of the value sums over the chunk in V's lane (columns
 * 0..cn, scores p), for rows 0..wr in blocks of mr, woven with
 * the dot products of the chunk in K's lane (the next, scores into sn): wg
 * keys of one, wg of the other. Each block's sums wait in L1 while the dot
 * products and the other blocks hold the registers (16 loads and 16 stores
 * a block per group at most), so a group's V rows, read from memory by the
 * first block, are in L1 for the others. */
AI void woven(sa_dtype kt, sa_dtype vt, size_t mr, size_t NV, size_t m,
              size_t wr, size_t d, size_t cn, size_t wg, const float *q,
              size_t ldq, float scale, int eo, lane *kl, lane *vl,
              const float *p, float *sn, const float *alpha, float *o,
              size_t ldo) {
  _Alignas(64) float accm[SA_DECODE_ROWS / 2][16 * 16];
  __m512 acc[8][8];
  const size_t nb = wr / mr;
  sums_zero(mr, NV, acc);
  for (size_t b = 0; b < nb; b++)
    sums_park(mr, NV, accm[b], acc, 1);
  const size_t nc = vl->na, nk = kl->na, end = nc > nk ? nc : nk;
  for (size_t g = 0; g < end; g += wg) {
    if (g < nk)
      keys_dots(kt, m, d, q, ldq, kl, g, g + wg < nk ? g + wg : nk, scale, sn,
                eo);
    const size_t ge = g + wg < nc ? g + wg : nc;
    for (size_t b = 0; b < nb; b++) {
      const float *pb = p + b * mr * CHUNK;
      sums_park(mr, NV, accm[b], acc, 0);
      if (b == 0)
        for (size_t j = g; j < ge; j++) {
          lane_read(vl, j);
          sums_key(vt, mr, NV, pb + j, vl->a[j], 0, cn, acc);
        }
      else
        for (size_t j = g; j < ge; j++)
          sums_key(vt, mr, NV, pb + j, vl->a[j], 0, cn, acc);
      sums_park(mr, NV, accm[b], acc, 1);
    }
  }
  for (size_t b = 0; b < nb; b++) {
    sums_park(mr, NV, accm[b], acc, 0);
    sums_store(vt, mr, NV, 0, cn, alpha + b * mr, o + b * mr * ldo, ldo, acc);
  }
}

/* Every row and column of the chunk but the first pass's (woven: rows
 * 0..wr, columns 0..W), in passes over its V rows of RB rows and 16 NV
 * columns each (as many as the registers hold). decode_typed picks the
 * first pass's tile (WOVEN) and columns (W) by these same conditions;
 * written once as a helper, its branches no longer folded per V type and
 * the library's text grew from 2.2 to 2.8 MB. */
AI void chunk_sums(sa_dtype t, size_t m, size_t wr, size_t nc, size_t dv,
                   const float *p, const void *const *v, const float *alpha,
                   float *o, size_t ldo) {
#define PASS(r, NV, i0)                                                        \
  do {                                                                         \
    if (!(c0 == 0 && (i0) + (r) <= wr))                                        \
      sums(t, r, NV, nc, p + (i0)*CHUNK, v, c0, cn, alpha + (i0),              \
           o + (i0)*ldo, ldo);                                                 \
  } while (0)
  if (t == SA_F32 || m <= 2) { /* row pairs of 128 columns */
    for (size_t c0 = 0; c0 < dv; c0 += 128) {
      size_t cn = dv - c0 < 128 ? dv - c0 : 128;
      for (size_t i0 = 0; i0 < m; i0 += 2) {
        if (m - i0 >= 2)
          PASS(2, 8, i0);
        else
          PASS(1, 8, i0);
      }
    }
  } else if (m <= 4) {
    for (size_t c0 = 0; c0 < dv; c0 += 64) {
      size_t cn = dv - c0 < 64 ? dv - c0 : 64;
      if (m == 4)
        PASS(4, 4, 0);
      else
        PASS(3, 4, 0);
    }
  } else {
    for (size_t i0 = 0; i0 < m; i0 += 8)
      for (size_t c0 = 0; c0 < dv; c0 += 32) {
        size_t cn = dv - c0 < 32 ? dv - c0 : 32;
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

/* Rows of chunk c of src (chunks of ch keys, n keys in all): their
 * addresses, written into buf if need be (NULL past the last chunk), and
 * in *nr how many. */
AI const void *const *chunk_rows(const sa_decode_src *src, size_t c, size_t ch,
                                 size_t n, const void **buf, size_t *nr) {
  *nr = c * ch < n ? (n - c * ch < ch ? n - c * ch : ch) : 0;
  return *nr ? sa_decode_rows_at(src, c * ch, *nr, buf) : NULL;
}

/* A lane over src's chunks 0 and 1. */
AI lane lane_start(const sa_decode_src *src, size_t ch, size_t n,
                   const void *buf[3][CHUNK], size_t bytes, size_t ahead,
                   size_t far, int l1) {
  lane ln = {NULL, NULL, 0, 0, bytes, ahead, far, 0, l1};
  ln.a = chunk_rows(src, 0, ch, n, buf[0], &ln.na);
  ln.b = chunk_rows(src, 1, ch, n, buf[1], &ln.nb);
  return ln;
}

/* The lane moves on to chunk c + 1, with chunk c + 2 after it; its
 * prefetch cursor keeps its place in the rows. */
AI void lane_step(lane *ln, const sa_decode_src *src, size_t c, size_t ch,
                  size_t n, const void *buf[3][CHUNK]) {
  ln->pc = ln->pc > ln->na ? ln->pc - ln->na : 0;
  ln->a = ln->b;
  ln->na = ln->nb;
  ln->b = chunk_rows(src, c + 2, ch, n, buf[(c + 2) % 3], &ln->nb);
}

/* The chunks in a pipeline: chunk 0's dot products alone, then per chunk
 * c its online step, the first pass of its value sums woven with chunk c +
 * 1's dot products, and its other passes. K's lane runs a chunk ahead of
 * V's; three lists each, as a lane holds two and the third is written. */
AI void decode_typed(sa_dtype kt, sa_dtype vt, size_t m, size_t n, size_t d,
                     size_t dv, const float *q, size_t ldq,
                     const sa_decode_src *k, const sa_decode_src *v,
                     float scale, float *mx, float *l, float *o, size_t ldo,
                     exp16_fn exp16, int l1) {
  _Alignas(64) float s[2][SA_DECODE_ROWS * CHUNK];
  float alpha[SA_DECODE_ROWS];
  const void *kbuf[3][CHUNK], *vbuf[3][CHUNK];
  const size_t krow = sa_decode_row_bytes(kt, d);
  const size_t vrow = sa_decode_row_bytes(vt, dv);
  /* f32 rows stream with their pages touched ahead; with K and V both
   * narrow the kernel is nearer bound by its instructions than by the
   * stream, and touches gained nothing, nor did weaving 8 keys at a time
   * (16-key pages, h32/kv8 batch 8: f16 1.02x, q8_0 1.08x the time of a
   * chunk at a time). Narrow chunks were 32 keys until
   * 0.11.4; on a Zen 4, 16-key pages of f16 / q8_0 / bf16 decode 1.05-1.08x
   * as fast in chunks of 128 (the online step and O's rescale a quarter as
   * often), 64 half that. */
  const int wide = kt == SA_F32 || vt == SA_F32;
  const size_t ch = wide ? CHUNK : CHUNK_NARROW, wg = wide ? WG : ch;
  size_t ahead = (wide ? AHEAD : AHEAD_NARROW) / (krow + vrow);
  ahead = ahead < 2 ? 2 : ahead > ch ? ch : ahead;
  size_t far = wide ? FAR / (krow + vrow) : 0;
  far = far > ch ? ch : far;
  /* bf16 K: Q's rows as evens and odds (widen.h), if they fit */
  _Alignas(64) float qe[SA_BF16_EO_FLOATS];
  const int eo = kt == SA_BF16 && sa_bf16_eo_q(m, d, &q, &ldq, qe);
  /* the columns of the first value-sum pass, as chunk_sums' */
  const size_t W = vt == SA_F32 || m <= 2 ? 128 : m <= 4 ? 64 : 32;
  const size_t cn = dv < W ? dv : W;
  /* and its rows: the first block of its tile's height, or every whole
   * block where there are three or more. Then a group's V rows, read from
   * memory by the first block, are in L1 for the others, which otherwise
   * pass over the chunk after it from L2 with no rows prefetched meanwhile.
   * f32, 4096 keys from memory, one Zen 5 core, both ways in one library:
   * m = 6 / 8 / 16 0.97 / 0.955 / 0.91x the time; m = 4 (two blocks) 0.98
   * to 1.05x in three runs, 16-key pages 1.01-1.03x, so two blocks keep
   * the chunk pass (f16, m = 16, two blocks of 8: 0.98-0.99x). Outputs
   * are the same bit for bit: each sum takes the same terms in order. */
  const size_t mr = vt == SA_F32 || m <= 2 ? (m >= 2 ? 2 : 1)
                    : m <= 4               ? m
                                           : (m < 8 ? m : 8);
  const size_t wr = m / mr >= 3 ? m / mr * mr : mr;
  lane kl = lane_start(k, ch, n, kbuf, krow, ahead, far, l1);
  lane vl = lane_start(v, ch, n, vbuf, vrow, ahead, far, l1);
  keys_dots(kt, m, d, q, ldq, &kl, 0, kl.na, scale, s[0], eo);
  lane_step(&kl, k, 0, ch, n, kbuf);
  for (size_t c = 0; vl.na; c++) {
    float *p = s[c & 1], *sn = s[(c & 1) ^ 1];
    const size_t nc = vl.na;
    for (size_t i = 0; i < m; i++)
      online_row(p + i * CHUNK, nc, &mx[i], &l[i], &alpha[i], exp16);
#define WOVEN(r, NV)                                                           \
  woven(kt, vt, r, NV, m, wr, d, cn, wg, q, ldq, scale, eo, &kl, &vl, p, sn,   \
        alpha, o, ldo)
    if (vt == SA_F32 || m <= 2) {
      if (m >= 2)
        WOVEN(2, 8);
      else
        WOVEN(1, 8);
    } else if (m <= 4) {
      if (m == 4)
        WOVEN(4, 4);
      else
        WOVEN(3, 4);
    } else {
#define W2(r) WOVEN(r, 2)
      SA_UNROLL_1_8(m < 8 ? m : 8, W2);
#undef W2
    }
#undef WOVEN
    chunk_sums(vt, m, wr, nc, dv, p, vl.a, alpha, o, ldo);
    lane_step(&kl, k, c + 1, ch, n, kbuf);
    lane_step(&vl, v, c, ch, n, vbuf);
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
                   ldo, exp16, 0);                                             \
      break;                                                                   \
    case SA_BF16:                                                              \
      decode_typed(kt, SA_BF16, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,    \
                   ldo, exp16, 0);                                             \
      break;                                                                   \
    case SA_Q8_0:                                                              \
      decode_typed(kt, SA_Q8_0, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,    \
                   ldo, exp16, 0);                                             \
      break;                                                                   \
    default:                                                                   \
      decode_typed(kt, SA_F32, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,     \
                   ldo, exp16, 0);                                             \
      break;                                                                   \
    }                                                                          \
  }
DECODE_K(SA_F32)
DECODE_K(SA_F16)
DECODE_K(SA_BF16)
DECODE_K(SA_Q8_0)
#undef DECODE_K

/* K and V of one type, rows prefetched into L1: f32, f16 and bf16 caches,
 * where L1 measured faster; the other pairs keep L2 and one instantiation
 * each (the file's text is half the library's). */
static int decode_l1(size_t m, size_t n, size_t d, size_t dv, const float *q,
                     size_t ldq, const sa_decode_src *k, sa_dtype kt,
                     const sa_decode_src *v, sa_dtype vt, float scale,
                     float *mx, float *l, float *o, size_t ldo,
                     exp16_fn exp16) {
  if (kt != vt || !prefetch_into_l1())
    return 0;
  switch (kt) {
  case SA_F32:
    decode_typed(SA_F32, SA_F32, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,
                 ldo, exp16, 1);
    return 1;
  case SA_F16:
    decode_typed(SA_F16, SA_F16, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,
                 ldo, exp16, 1);
    return 1;
  case SA_BF16:
    decode_typed(SA_BF16, SA_BF16, m, n, d, dv, q, ldq, k, v, scale, mx, l, o,
                 ldo, exp16, 1);
    return 1;
  default:
    return 0;
  }
}

static void decode_any(size_t m, size_t n, size_t d, size_t dv, const float *q,
                       size_t ldq, sa_decode_src k, sa_dtype kt,
                       sa_decode_src v, sa_dtype vt, float scale, float *mx,
                       float *l, float *o, size_t ldo, exp16_fn exp16) {
  if (decode_l1(m, n, d, dv, q, ldq, &k, kt, &v, vt, scale, mx, l, o, ldo,
                exp16))
    return;
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
