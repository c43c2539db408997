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
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/scalar/tiles.h"

enum { CHUNK = SA_SCALAR_DECODE_CHUNK };

/* The kernels one composition runs, f32 and per narrow type. */
typedef struct ops {
  sa_score_fn score;
  sa_score_t_fn score_t[SA_DTYPE_SLOTS];
  sa_softmax_online_fn online;
  sa_wsum_fn wsum;
  sa_wsum_t_fn wsum_t[SA_DTYPE_SLOTS];
} ops;

static void compose(const ops *f, size_t m, size_t n, size_t d, size_t dv,
                    const float *q, size_t ldq, const void *k, size_t ldk,
                    sa_dtype kt, const void *v, size_t ldv, sa_dtype vt,
                    float scale, float *mx, float *l, float *o, size_t ldo) {
  float s[SA_DECODE_ROWS * CHUNK], alpha[SA_DECODE_ROWS];
  const size_t kb = ldk * sa_dtype_unit(kt), vb = ldv * sa_dtype_unit(vt);
  for (size_t j0 = 0; j0 < n; j0 += CHUNK) {
    size_t nc = n - j0 < CHUNK ? n - j0 : CHUNK;
    const void *kc = (const char *)k + j0 * kb, *vc = (const char *)v + j0 * vb;
    if (kt == SA_F32)
      f->score(m, nc, d, q, ldq, kc, ldk, scale, s, CHUNK);
    else
      f->score_t[kt](m, nc, d, q, ldq, kc, ldk, scale, s, CHUNK);
    f->online(m, nc, s, CHUNK, NULL, mx, l, alpha);
    if (vt == SA_F32)
      f->wsum(m, nc, dv, s, CHUNK, vc, ldv, alpha, o, ldo);
    else
      f->wsum_t[vt](m, nc, dv, s, CHUNK, vc, ldv, alpha, o, ldo);
  }
}

#define OPS(variant)                                                           \
  {                                                                            \
    .score = sa_score__scalar##variant,                                        \
    .score_t = {[SA_F16] = sa_score_f16__scalar##variant,                      \
                [SA_BF16] = sa_score_bf16__scalar##variant,                    \
                [SA_Q8_0] = sa_score_q8_0__scalar##variant},                   \
    .online = sa_softmax_online__scalar##variant,                              \
    .wsum = sa_wsum__scalar##variant, .wsum_t = {                              \
      [SA_F16] = sa_wsum_f16__scalar##variant,                                 \
      [SA_BF16] = sa_wsum_bf16__scalar##variant,                               \
      [SA_Q8_0] = sa_wsum_q8_0__scalar##variant                                \
    }                                                                          \
  }

static const ops scalar_ops = OPS(), scalar_f64_ops = OPS(_f64);

SA_DECLARE_DECODE(sa_decode__scalar) {
  compose(&scalar_ops, m, n, d, dv, q, ldq, k, ldk, k_type, v, ldv, v_type,
          scale, mx, l, o, ldo);
}

SA_DECLARE_DECODE(sa_decode__scalar_f64) {
  compose(&scalar_f64_ops, m, n, d, dv, q, ldq, k, ldk, k_type, v, ldv, v_type,
          scale, mx, l, o, ldo);
}
