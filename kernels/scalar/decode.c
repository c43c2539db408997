/*
 * decode, scalar: the composition the contract states, literally: score
 * (score_t for a narrow K), softmax_online and wsum (wsum_t) on chunks of
 * CHUNK keys through a score tile on the stack, with wsum's beta = alpha.
 * So the oracle is the definition, and scalar-f64's is the same composition
 * of its double-accumulator kernels.
 *
 * The SIMD sets' decode kernels keep the chunk's scores in L1 and their sums
 * in registers instead; the tests hold them to this.
 */
#include "kernels/decode_chunks.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/scalar/rows.h"
#include "kernels/scalar/tiles.h"

enum { CHUNK = SA_SCALAR_DECODE_CHUNK };

/* The kernels one composition runs, f32 and per narrow type, and their
 * flavours over listed rows (decode_rows). */
typedef struct ops {
  sa_score_fn score;
  sa_score_t_fn score_t[SA_DTYPE_SLOTS];
  sa_softmax_online_fn online;
  sa_wsum_fn wsum;
  sa_wsum_t_fn wsum_t[SA_DTYPE_SLOTS];
  sa_score_rows_fn score_rows;
  sa_wsum_rows_fn wsum_rows;
} ops;

/* Keys [0, n) in chunks: rows ld units apart from k and v, or listed. */
static void compose(size_t m, size_t n, size_t d, size_t dv, const float *q,
                    size_t ldq, sa_decode_src ksrc, sa_dtype kt,
                    sa_decode_src vsrc, sa_dtype vt, float scale, float *mx,
                    float *l, float *o, size_t ldo, const ops *f) {
  const sa_decode_src *k = &ksrc, *v = &vsrc;
  float s[SA_DECODE_ROWS * CHUNK], alpha[SA_DECODE_ROWS];
  const size_t ldk = k->bytes / sa_dtype_unit(kt),
               ldv = v->bytes / sa_dtype_unit(vt);
  for (size_t j0 = 0; j0 < n; j0 += CHUNK) {
    size_t nc = n - j0 < CHUNK ? n - j0 : CHUNK;
    if (k->list)
      f->score_rows(m, nc, d, q, ldq, k->list + j0, kt, scale, s, CHUNK);
    else if (kt == SA_F32)
      f->score(m, nc, d, q, ldq, (const float *)(k->base + j0 * k->bytes), ldk,
               scale, s, CHUNK);
    else
      f->score_t[kt](m, nc, d, q, ldq, k->base + j0 * k->bytes, ldk, scale, s,
                     CHUNK);
    f->online(m, nc, s, CHUNK, NULL, mx, l, alpha);
    if (v->list)
      f->wsum_rows(m, nc, dv, s, CHUNK, v->list + j0, vt, alpha, o, ldo);
    else if (vt == SA_F32)
      f->wsum(m, nc, dv, s, CHUNK, (const float *)(v->base + j0 * v->bytes),
              ldv, alpha, o, ldo);
    else
      f->wsum_t[vt](m, nc, dv, s, CHUNK, v->base + j0 * v->bytes, ldv, alpha, o,
                    ldo);
  }
}

#define OPS(variant)                                                           \
  {                                                                            \
    .score = sa_score__scalar##variant,                                        \
    .score_t = {[SA_F16] = sa_score_f16__scalar##variant,                      \
                [SA_BF16] = sa_score_bf16__scalar##variant,                    \
                [SA_Q8_0] = sa_score_q8_0__scalar##variant},                   \
    .online = sa_softmax_online__scalar##variant,                              \
    .wsum = sa_wsum__scalar##variant,                                          \
    .wsum_t = {[SA_F16] = sa_wsum_f16__scalar##variant,                        \
               [SA_BF16] = sa_wsum_bf16__scalar##variant,                      \
               [SA_Q8_0] = sa_wsum_q8_0__scalar##variant},                     \
    .score_rows = sa_score_rows__scalar##variant,                              \
    .wsum_rows = sa_wsum_rows__scalar##variant,                                \
  }

static const ops scalar_ops = OPS(), scalar_f64_ops = OPS(_f64);

SA_DECODE_ENTRIES(scalar, compose, &scalar_ops)
SA_DECODE_ENTRIES(scalar_f64, compose, &scalar_f64_ops)
