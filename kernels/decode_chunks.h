/*
 * The chunk loop of a decode kernel (the contracts are in include/simdattn.h
 * above sa_decode_fn and sa_decode_rows_fn), for the sets whose decode runs
 * its three phases as functions chosen per type: per chunk of `chunk` keys,
 * the dot products into the score tile s (rows `chunk` floats apart) while
 * the chunk's V rows are prefetched, the set's own softmax_online on the
 * tile, and the value sums while the next chunk's K rows are prefetched.
 * Each phase is one indirect call per chunk, against a chunk's worth of
 * FMAs.
 *
 * The phases see a chunk's rows as a list of addresses, so one body serves
 * decode (rows a stride apart: the list is written per chunk, a pointer per
 * row read, against a row of d values) and decode_rows (the caller's list,
 * read in place), and a chunk of decode_rows may span pages.
 *
 * Plain C and static inline (see unroll.h): any kernel folder includes it
 * whatever its ISA flags.
 */
#ifndef SA_KERNELS_DECODE_CHUNKS_H
#define SA_KERNELS_DECODE_CHUNKS_H

#include "kernels/dtype.h"
#include "simdattn.h"

/* The largest chunk a set may take: the lists of addresses are on the
 * stack. */
#define SA_DECODE_CHUNK_MAX 128

/* Where a call's K or V rows are: at list[j] or, list NULL, `bytes` apart
 * from base. */
typedef struct sa_decode_src {
  const char *base;
  size_t bytes;
  const void *const *list;
} sa_decode_src;

/* The addresses of rows j0 .. j0 + nr of src: a slice of its list, or
 * written into buf (nr <= SA_DECODE_CHUNK_MAX). */
static inline const void *const *sa_decode_rows_at(const sa_decode_src *src,
                                                   size_t j0, size_t nr,
                                                   const void **buf) {
  if (src->list)
    return src->list + j0;
  for (size_t j = 0; j < nr; j++)
    buf[j] = src->base + (j0 + j) * src->bytes;
  return buf;
}

/* s[i][0..nc) = scale * q[i] . k[j] for the chunk's nc keys (kr: their
 * rows), prefetching the V rows of the same keys (vr, vrow bytes each). */
typedef void (*sa_decode_dots_fn)(size_t m, size_t nc, size_t d, const float *q,
                                  size_t ldq, const void *const *kr,
                                  const void *const *vr, size_t vrow,
                                  float scale, float *s);
/* o[i] = alpha[i] * o[i] + sum_j p[i][j] * v[j] for the chunk's nc keys
 * (vr: their rows), prefetching the nk rows of the next chunk's K (kn,
 * krow bytes each). */
typedef void (*sa_decode_sums_fn)(size_t m, size_t nc, size_t dv,
                                  const float *p, const void *const *vr,
                                  const float *alpha, float *o, size_t ldo,
                                  const void *const *kn, size_t nk,
                                  size_t krow);

/* Bytes of a row of dim values of type t. */
static inline size_t sa_decode_row_bytes(sa_dtype t, size_t dim) {
  return sa_dtype_row(t, dim) * sa_dtype_unit(t);
}

/* A strided source: rows ld units of type t apart from base. */
static inline sa_decode_src sa_decode_strided(const void *base, size_t ld,
                                              sa_dtype t) {
  sa_decode_src src = {(const char *)base, ld * sa_dtype_unit(t), NULL};
  return src;
}

/* A listed source. */
static inline sa_decode_src sa_decode_listed(const void *const *list) {
  sa_decode_src src = {NULL, 0, list};
  return src;
}

/* A set's two public entries, decode (rows a stride apart) and
 * decode_rows (listed), over one body taking (m, n, d, dv, q, ldq, k
 * source, k type, v source, v type, scale, mx, l, o, ldo, arg). */
#define SA_DECODE_ENTRIES(suffix, body, arg)                                   \
  SA_DECLARE_DECODE(sa_decode__##suffix) {                                     \
    body(m, n, d, dv, q, ldq, sa_decode_strided(k, ldk, k_type), k_type,       \
         sa_decode_strided(v, ldv, v_type), v_type, scale, mx, l, o, ldo,      \
         arg);                                                                 \
  }                                                                            \
  SA_DECLARE_DECODE_ROWS(sa_decode_rows__##suffix) {                           \
    body(m, n, d, dv, q, ldq, sa_decode_listed(k), k_type,                     \
         sa_decode_listed(v), v_type, scale, mx, l, o, ldo, arg);              \
  }

/* The keys [0, n) in chunks; s holds SA_DECODE_ROWS x chunk floats. */
static inline void
sa_decode_chunks(size_t chunk, float *s, sa_decode_dots_fn dots,
                 sa_softmax_online_fn online, sa_decode_sums_fn sums, size_t m,
                 size_t n, size_t d, size_t dv, const float *q, size_t ldq,
                 const sa_decode_src *k, sa_dtype kt, const sa_decode_src *v,
                 sa_dtype vt, float scale, float *mx, float *l, float *o,
                 size_t ldo) {
  float alpha[SA_DECODE_ROWS];
  const void *kbuf[2][SA_DECODE_CHUNK_MAX], *vbuf[SA_DECODE_CHUNK_MAX];
  const size_t krow = sa_decode_row_bytes(kt, d);
  const size_t vrow = sa_decode_row_bytes(vt, dv);
  const void *const *kr =
      sa_decode_rows_at(k, 0, n < chunk ? n : chunk, kbuf[0]);
  for (size_t j0 = 0, b = 0; j0 < n; j0 += chunk, b ^= 1) {
    size_t nc = n - j0 < chunk ? n - j0 : chunk;
    size_t rest = n - j0 - nc, nk = rest < chunk ? rest : chunk;
    const void *const *vr = sa_decode_rows_at(v, j0, nc, vbuf);
    const void *const *kn = sa_decode_rows_at(k, j0 + nc, nk, kbuf[b ^ 1]);
    dots(m, nc, d, q, ldq, kr, vr, vrow, scale, s);
    online(m, nc, s, chunk, NULL, mx, l, alpha);
    sums(m, nc, dv, s, vr, alpha, o, ldo, kn, nk, krow);
    kr = kn;
  }
}

#endif /* SA_KERNELS_DECODE_CHUNKS_H */
