/*
 * The chunk loop of a decode kernel (the contract is in include/simdattn.h
 * above sa_decode_fn), for the sets whose decode runs its three phases as
 * functions chosen per type: per chunk of `chunk` keys, the dot products
 * into the score tile s (rows `chunk` floats apart) while the chunk's V
 * rows are prefetched, the set's own softmax_online on the tile, and the
 * value sums while the next chunk's K rows are prefetched. Each phase is
 * one indirect call per chunk, against a chunk's worth of FMAs.
 *
 * Plain C and static inline (see unroll.h): any kernel folder includes it
 * whatever its ISA flags.
 */
#ifndef SA_KERNELS_DECODE_CHUNKS_H
#define SA_KERNELS_DECODE_CHUNKS_H

#include "kernels/dtype.h"
#include "simdattn.h"

/* s[i][0..nc) = scale * q[i] . k[j] for the chunk's nc keys (k: its first
 * row, kb bytes apart), prefetching the V rows of the same keys (vrow bytes
 * each, vb apart). */
typedef void (*sa_decode_dots_fn)(size_t m, size_t nc, size_t d, const float *q,
                                  size_t ldq, const char *k, size_t kb,
                                  const char *v, size_t vb, size_t vrow,
                                  float scale, float *s);
/* o[i] = alpha[i] * o[i] + sum_j p[i][j] * v[j] for the chunk's nc keys,
 * prefetching the nk rows of the next chunk's K from kn (krow bytes each). */
typedef void (*sa_decode_sums_fn)(size_t m, size_t nc, size_t dv,
                                  const float *p, const char *v, size_t vb,
                                  const float *alpha, float *o, size_t ldo,
                                  const char *kn, size_t nk, size_t kb,
                                  size_t krow);

/* Bytes of a row of dim values of type t. */
static inline size_t sa_decode_row_bytes(sa_dtype t, size_t dim) {
  return sa_dtype_row(t, dim) * sa_dtype_unit(t);
}

/* The keys [0, n) in chunks; s holds SA_DECODE_ROWS x chunk floats. */
static inline void
sa_decode_chunks(size_t chunk, float *s, sa_decode_dots_fn dots,
                 sa_softmax_online_fn online, sa_decode_sums_fn sums, size_t m,
                 size_t n, size_t d, size_t dv, const float *q, size_t ldq,
                 const void *k, size_t ldk, sa_dtype kt, const void *v,
                 size_t ldv, sa_dtype vt, float scale, float *mx, float *l,
                 float *o, size_t ldo) {
  float alpha[SA_DECODE_ROWS];
  const size_t kb = ldk * sa_dtype_unit(kt), vb = ldv * sa_dtype_unit(vt);
  const size_t krow = sa_decode_row_bytes(kt, d);
  const size_t vrow = sa_decode_row_bytes(vt, dv);
  const char *kc = k, *vc = v;
  for (size_t j0 = 0; j0 < n; j0 += chunk, kc += chunk * kb, vc += chunk * vb) {
    size_t nc = n - j0 < chunk ? n - j0 : chunk;
    size_t rest = n - j0 - nc, nk = rest < chunk ? rest : chunk;
    dots(m, nc, d, q, ldq, kc, kb, vc, vb, vrow, scale, s);
    online(m, nc, s, chunk, NULL, mx, l, alpha);
    sums(m, nc, dv, s, vc, vb, alpha, o, ldo, kc + chunk * kb, nk, kb, krow);
  }
}

#endif /* SA_KERNELS_DECODE_CHUNKS_H */
