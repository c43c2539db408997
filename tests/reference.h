/*
 * The double-precision reference test_features and test_layouts hold
 * sa_attention to: every feature of sa_attention_desc (masks with any
 * strides, windows, softcap, ALiBi, sinks, len_kv_valid, the LSE) on dense,
 * ragged (cu_seqlens_q / cu_seqlens_kv) and paged (block_table) sides,
 * written from the header's semantics alone. Each sequence is its own dense
 * attention, its rows and keys found by offsets computed here (token rows
 * from the prefix sums, key rows from the block table); it shares no code
 * with the library's key-range, tile or page logic, so a wrong range there
 * shows.
 *
 * Every helper is static: each test is one translation unit. testing.h
 * (checks, U_F32) is included from here.
 */
#ifndef SA_REFERENCE_H
#define SA_REFERENCE_H

#include "tests/testing.h"

static inline void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  return p;
}

/* ------------------------------------------------------------ the view */

/* One call's inputs, every stride resolved, as the reference reads them. */
typedef struct view {
  sa_attention_desc d;            /* as passed to sa_attention */
  const float *q, *k, *v;         /* the buffers the reference reads */
  sa_strides qs, ks, vs, os, ls;  /* resolved: Q, K, V, O, LSE */
  sa_mask_layout add_at, bool_at; /* resolved: explicit strides, keys set */
} view;

/* Sequence b's queries: its ragged length or len_q. */
static inline size_t seq_len_q(const sa_attention_desc *d, size_t b) {
  return d->cu_seqlens_q ? (size_t)(d->cu_seqlens_q[b + 1] - d->cu_seqlens_q[b])
                         : d->len_q;
}

/* Sequence b's keys: its ragged length or len_kv, cut by len_kv_valid. */
static inline size_t seq_len_kv(const sa_attention_desc *d, size_t b) {
  size_t n = d->cu_seqlens_kv
                 ? (size_t)(d->cu_seqlens_kv[b + 1] - d->cu_seqlens_kv[b])
                 : d->len_kv;
  if (d->len_kv_valid && d->len_kv_valid[b] < (int64_t)n)
    n = d->len_kv_valid[b] < 0 ? 0 : (size_t)d->len_kv_valid[b];
  return n;
}

/* Query-side element (b, h, i) (Q, O, LSE): a token row when ragged. */
static inline size_t q_at(const sa_attention_desc *d, const sa_strides *s,
                          size_t b, size_t h, size_t i) {
  if (d->cu_seqlens_q)
    return ((size_t)d->cu_seqlens_q[b] + i) * s->seq + h * s->head;
  return b * s->batch + h * s->head + i * s->seq;
}

/* Key-side element (b, head, j) (K, V): a token row when ragged, a page slot
 * when paged. */
static inline size_t k_at(const sa_attention_desc *d, const sa_strides *s,
                          size_t b, size_t h, size_t j) {
  if (d->block_table) {
    int32_t pg = d->block_table[b * d->block_table_stride + j / d->page_size];
    return (size_t)pg * s->batch + (j % d->page_size) * s->seq + h * s->head;
  }
  if (d->cu_seqlens_kv)
    return ((size_t)d->cu_seqlens_kv[b] + j) * s->seq + h * s->head;
  return b * s->batch + h * s->head + j * s->seq;
}

/* Mask element (b, h, i, j), row and key within the sequence. */
static inline size_t mask_at(const sa_mask_layout *a, size_t b, size_t h,
                             size_t i, size_t j) {
  return b * a->batch + h * a->head + i * a->row + j * a->key;
}

/* ----------------------------------------------------------- reference */

/* Reference output per row slot (b, h, i) at (b * heads_q + h) * len_q + i,
 * with its tolerance; slots past a ragged sequence's length are not
 * computed. */
typedef struct refs {
  size_t rows, empty;             /* rows: B x Hq x len_q slots */
  double *o, *tol, *spread, *mag; /* rows x dim_v */
  double *lse, *lse_tol;          /* rows */
  size_t *nvis;                   /* keys the row sees */
} refs;

/*
 * Row (b, h, i) of sequence b in double, straight from the header: which
 * keys it sees, their logits (scale, softcap, ALiBi, additive mask), the
 * softmax with the sink in its denominator, O and LSE.
 *
 * Tolerance, in t_reference_row's terms: each logit carries the dot
 * product's (d + 2) u scale sum|q k|, plus what each later step adds:
 * softcap rounds s / cap (moving tanh's argument by u|s|, and tanh's slope
 * is at most 1) and tanh and the product with cap (a few u of the capped
 * value; tanh is 3.5 ULP in SLEEF's u35, ~2 in libm, and an ULP is at most
 * 2u relative); ALiBi rounds once (an fma)
 * and the mask add once. The softmax's subtraction of the running max
 * rounds once more, relative to the larger of the score and the max (which
 * may be the sink). With delta the worst logit error, the output moves by at
 * most (e^{2 delta} - 1) sum_j p_j |v_j - o| (the sink a key of value 0),
 * exp, sums and rescaling add (n + 8) u sum p|v|, counted (twice) as in
 * testing.h. The LSE is 1-Lipschitz in the logits (delta), plus its row
 * sum's relative error through log, plus rounding of max + log.
 *
 * Also kept per element: the spread sum_j p_j |v_j - o| and the magnitude
 * sum_j p_j |v_j|, for tolerances of results built from this one (a merge
 * of split attention).
 */
static inline void ref_row(const view *w, size_t b, size_t h, size_t i,
                           double *s, unsigned char *vis, refs *r, size_t row) {
  const sa_attention_desc *d = &w->d;
  size_t hkv = h / (d->heads_q / d->heads_kv);
  int64_t len = (int64_t)seq_len_kv(d, b), lq = (int64_t)seq_len_q(d, b);
  int64_t c = d->mask == SA_MASK_CAUSAL_BOTTOM_RIGHT ? (int64_t)i + len - lq
                                                     : (int64_t)i;
  double scale = d->scale != 0.0f ? d->scale : 1.0 / sqrt((double)d->dim_qk);
  double sink = d->sinks ? d->sinks[h] : -INFINITY;
  const float *qi = w->q + q_at(d, &w->qs, b, h, i);
  double mx = sink, worst = 0.0, big = 0.0;
  size_t nv = 0;
  for (size_t j = 0; j < d->len_kv; j++) {
    int64_t jj = (int64_t)j;
    int see = jj < len;
    if (d->mask != SA_MASK_NONE)
      see &= jj <= c;
    if (d->window) {
      if (d->window_left >= 0)
        see &= jj >= c - d->window_left;
      if (d->window_right >= 0)
        see &= jj <= c + d->window_right;
    }
    double add = 0.0;
    if (d->mask_add) {
      if (j >= w->add_at.keys)
        see = 0;
      else
        add = d->mask_add[mask_at(&w->add_at, b, h, i, j)];
      see &= add != -INFINITY;
    }
    if (d->mask_bool)
      see &= j < w->bool_at.keys &&
             d->mask_bool[mask_at(&w->bool_at, b, h, i, j)] != 0;
    vis[j] = (unsigned char)see;
    if (!see)
      continue;
    nv++;
    const float *kj = w->k + k_at(d, &w->ks, b, hkv, j);
    double acc = 0.0, mag = 0.0;
    for (size_t p = 0; p < d->dim_qk; p++) {
      acc += (double)qi[p] * kj[p];
      mag += fabs((double)qi[p] * kj[p]);
    }
    double x = scale * acc;
    double err = ((double)d->dim_qk + 2) * U_F32 * fabs(scale) * mag +
                 2 * U_F32 * fabs(x);
    if (d->softcap > 0.0f) {
      double y = d->softcap * tanh(x / d->softcap);
      err += U_F32 * fabs(x) + 8 * U_F32 * fabs(y);
      x = y;
    }
    if (d->alibi_slopes) {
      double a = (double)d->alibi_slopes[h] * (double)(jj - c);
      x += a;
      err += U_F32 * fabs(a) + 2 * U_F32 * fabs(x);
    }
    if (d->mask_add) {
      x += add;
      err += 2 * U_F32 * fabs(x);
    }
    s[j] = x;
    mx = x > mx ? x : mx;
    worst = err > worst ? err : worst;
    big = fabs(x) > big ? fabs(x) : big;
  }
  double *o = r->o + row * d->dim_v, *tol = r->tol + row * d->dim_v;
  double *spread = r->spread + row * d->dim_v, *magv = r->mag + row * d->dim_v;
  r->nvis[row] = nv;
  if (nv == 0) {
    r->empty++;
    for (size_t c2 = 0; c2 < d->dim_v; c2++)
      o[c2] = tol[c2] = spread[c2] = magv[c2] = 0.0;
    r->lse[row] = sink;
    r->lse_tol[row] = 0.0;
    return;
  }
  worst += 2 * U_F32 * (big + fabs(mx));
  double z = 0.0, psink = sink != -INFINITY ? exp(sink - mx) : 0.0;
  for (size_t j = 0; j < d->len_kv; j++)
    if (vis[j]) {
      s[j] = exp(s[j] - mx);
      z += s[j];
    }
  z += psink;
  size_t n = nv + (sink != -INFINITY);
  for (size_t c2 = 0; c2 < d->dim_v; c2++) {
    double acc = 0.0, mag = 0.0, spr = 0.0;
    for (size_t j = 0; j < d->len_kv; j++)
      if (vis[j]) {
        double vj = w->v[k_at(d, &w->vs, b, hkv, j) + c2];
        acc += s[j] / z * vj;
        mag += s[j] / z * fabs(vj);
      }
    for (size_t j = 0; j < d->len_kv; j++)
      if (vis[j])
        spr += s[j] / z * fabs(w->v[k_at(d, &w->vs, b, hkv, j) + c2] - acc);
    spr += psink / z * fabs(acc);
    o[c2] = acc;
    spread[c2] = spr;
    magv[c2] = mag;
    tol[c2] = 1.5 * expm1(2 * worst) * spr +
              4.0 * ((double)n + 8) * U_F32 * mag + 1e-30;
  }
  r->lse[row] = mx + log(z);
  r->lse_tol[row] = worst + 4.0 * ((double)n + 8) * U_F32 +
                    4 * U_F32 * (fabs(r->lse[row]) + fabs(mx)) + 1e-30;
}

/* The reference of every row of every sequence; refs_free releases it. */
static inline void refs_compute(const view *w, refs *r) {
  const sa_attention_desc *d = &w->d;
  memset(r, 0, sizeof *r);
  r->rows = d->batch * d->heads_q * d->len_q;
  size_t n = r->rows * d->dim_v;
  r->o = xmalloc(n * sizeof(double));
  r->tol = xmalloc(n * sizeof(double));
  r->spread = xmalloc(n * sizeof(double));
  r->mag = xmalloc(n * sizeof(double));
  r->lse = xmalloc(r->rows * sizeof(double));
  r->lse_tol = xmalloc(r->rows * sizeof(double));
  r->nvis = xmalloc(r->rows * sizeof(size_t));
  double *s = xmalloc(d->len_kv * sizeof(double));
  unsigned char *vis = xmalloc(d->len_kv);
  for (size_t b = 0; b < d->batch; b++)
    for (size_t h = 0; h < d->heads_q; h++)
      for (size_t i = 0; i < seq_len_q(d, b); i++)
        ref_row(w, b, h, i, s, vis, r, (b * d->heads_q + h) * d->len_q + i);
  free(s);
  free(vis);
}

static inline void refs_free(refs *r) {
  free(r->o), free(r->tol), free(r->spread), free(r->mag);
  free(r->lse), free(r->lse_tol), free(r->nvis);
  memset(r, 0, sizeof *r);
}

/*
 * O and LSE against the reference: rows that see no key must be exact zeros
 * with LSE exactly -inf (or the sink); the others within the reference's
 * tolerances. Every element of every sequence's rows of O and LSE must have
 * been written (they start NaN, which fails any comparison), every other
 * float of the buffers must still be NaN. One CHECK per call, naming the
 * first bad element. Returns 1 on failure.
 */
static inline int check_result(const view *w, const refs *r, const float *o,
                               size_t o_floats, const float *lse,
                               size_t lse_floats) {
  const sa_attention_desc *d = &w->d;
  unsigned char *mine = calloc(o_floats + 1, 1);
  unsigned char *lmine = calloc(lse_floats + 1, 1);
  size_t bad = 0;
  char first[256] = "";
  for (size_t b = 0; b < d->batch; b++)
    for (size_t h = 0; h < d->heads_q; h++)
      for (size_t i = 0; i < seq_len_q(d, b); i++) {
        size_t row = (b * d->heads_q + h) * d->len_q + i;
        size_t at = q_at(d, &w->os, b, h, i);
        int empty = r->nvis[row] == 0;
        for (size_t c = 0; c < d->dim_v; c++) {
          double want = r->o[row * d->dim_v + c],
                 t = r->tol[row * d->dim_v + c];
          float got = o[at + c];
          mine[at + c] = 1;
          int ok = empty ? got == 0.0f : fabs(got - want) <= t;
          if (!ok && bad++ == 0)
            snprintf(first, sizeof first,
                     "O(b%zu,h%zu,i%zu)[%zu] = %.9g, want %.9g (tol %.3g, "
                     "%zu keys)",
                     b, h, i, c, got, want, t, r->nvis[row]);
        }
        if (!lse)
          continue;
        at = q_at(d, &w->ls, b, h, i);
        lmine[at] = 1;
        float got = lse[at];
        double want = r->lse[row], t = r->lse_tol[row];
        int ok = empty ? got == (float)want : fabs(got - want) <= t;
        if (!ok && bad++ == 0)
          snprintf(first, sizeof first,
                   "LSE(b%zu,h%zu,i%zu) = %.9g, want %.9g (tol %.3g, %zu "
                   "keys)",
                   b, h, i, got, want, t, r->nvis[row]);
      }
  size_t gaps = 0;
  for (size_t x = 0; x < o_floats; x++)
    gaps += !mine[x] && !isnan(o[x]);
  for (size_t x = 0; lse && x < lse_floats; x++)
    gaps += !lmine[x] && !isnan(lse[x]);
  free(mine);
  free(lmine);
  CHECK(bad == 0 && gaps == 0, "%zu bad elements, %zu gap floats written; %s",
        bad, gaps, first);
  return bad != 0 || gaps != 0;
}

#endif
