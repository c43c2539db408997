/*
 * Ragged batches (cu_seqlens_q / cu_seqlens_kv, FlashAttention's varlen
 * layout), paged KV caches (block_table, vLLM's layout), sa_kv_append, and
 * split-KV determinism through both, on every kernel set this CPU can run,
 * against the double-precision reference in reference.h, written from the
 * header alone: each sequence is its own dense attention, its rows and keys
 * found by offsets computed there (token rows from the prefix sums, key rows
 * from the block table), never by the library's tile logic.
 *
 * Contexts use one thread and small tiles (block_q 4..16, block_kv 8..16)
 * so that key blocks end mid-page and mid-sequence and short calls split
 * their keys; one variant keeps the defaults (block_kv 256: pages below it
 * are gathered or read in place). Every buffer ends at a guard page, and
 * every float a call must not read or write is NaN: Q, K and V rows outside
 * every sequence (gaps before cu_seqlens[0] and after the last sequence,
 * padding between tokens, heads and pages, pages no table names, page slots
 * past a sequence's length) and O / LSE everywhere before the call. A read
 * of one of them shows as a NaN output; every real output row must be
 * written and every gap must still be NaN.
 *
 * Sections: varlen (fixed cases with lengths 0, 1, odd, 64 in one batch,
 * then random ones with every 0.3 feature); paged (page sizes 1 to 64 around
 * block_kv, shuffled and shared pages, partial and full tables, decode and
 * short prefill, a caller workspace ending at a guard page); sa_kv_append
 * building a cache step by step, checked element-exact, with decode through
 * paged + varlen after every step; thread counts 1, 2, 3, 8 bit-identical on
 * split-KV decodes.
 */
#include "tests/reference.h"
#include "tests/testing.h"

#define MAX_SETS 16
#define MAX_B 8
#define MAX_H 16
#define N_VAR 4
/* A stride the header says is unused (a ragged side's batch stride): any
 * use of it for a batch item past 0 lands far outside the buffer. */
#define UNUSED_STRIDE ((size_t)1 << 36)

static const sa_kernel_set *sets[MAX_SETS];
static int nsets;
static sa_context *ctxs[MAX_SETS][N_VAR];
static const size_t var_bq[N_VAR] = {4, 5, 16, 0};
static const size_t var_bkv[N_VAR] = {8, 13, 16, 0};
static unsigned counter; /* rotates tile variants over problems */
static char label[1024];

enum { SIDE_PADDED, SIDE_RAGGED, SIDE_PAGED };
static const char *side_names[] = {"padded", "ragged", "paged"};

static void fill_nan(float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    x[i] = NAN;
}

/* ------------------------------------------------------------- layouts */

typedef struct tlay {
  sa_strides st; /* as passed: all zero = the default */
  sa_strides rs; /* resolved */
  size_t floats;
} tlay;

static size_t span_of(const sa_strides *s, size_t n0, size_t n1, size_t n2,
                      size_t d) {
  return (n0 - 1) * s->batch + (n1 - 1) * s->head + (n2 - 1) * s->seq + d;
}

/* [batch, heads, len, d]: 0 packed (zero strides), 1 [B,L,H,D], 2 padded */
static tlay padded_layout(int kind, size_t b, size_t h, size_t l, size_t d) {
  t_layout x = t_make_layout(kind, b, h, l, d, 3);
  tlay y = {x.st, x.rs, x.floats};
  return y;
}

/* A ragged side of `tokens` rows: 0 the default [tokens, heads, d] (zero
 * strides), 1 token-major with padding after every head and token, 2
 * head-major [heads, tokens, d] with padding. The batch stride is unused. */
static tlay ragged_layout(int kind, size_t h, size_t tokens, size_t d) {
  tlay x;
  switch (kind) {
  case 0:
    x.st = (sa_strides){0, 0, 0};
    x.rs = (sa_strides){0, d, h * d};
    break;
  case 1:
    x.rs = x.st = (sa_strides){UNUSED_STRIDE, d + 2, h * (d + 2) + 1};
    break;
  default:
    x.rs = x.st = (sa_strides){UNUSED_STRIDE, tokens * (d + 1) + 3, d + 1};
    break;
  }
  x.floats = span_of(&x.rs, 1, h, tokens, d);
  return x;
}

/* A page pool [pages, page, heads, d]: 0 packed default, 1 explicit and
 * padded, 2 head-major pages with contiguous rows [pages, heads, page, d]
 * (a page's rows of a head are adjacent), 3 head-major with padded rows. */
static tlay paged_layout(int kind, size_t np, size_t P, size_t h, size_t d) {
  tlay x;
  switch (kind) {
  case 0:
    x.st = (sa_strides){0, 0, 0};
    x.rs = (sa_strides){h * P * d, P * d, d}; /* head-major pages */
    break;
  case 1: {
    size_t seq = h * (d + 2) + 1;
    x.rs = x.st = (sa_strides){P * seq + 5, d + 2, seq};
    break;
  }
  case 2:
    x.rs = x.st = (sa_strides){h * (P * d + 3) + 1, P * d + 3, d};
    break;
  default:
    x.rs = x.st = (sa_strides){h * P * (d + 1), P * (d + 1), d + 1};
    break;
  }
  x.floats = span_of(&x.rs, np, h, P, d);
  return x;
}

/* LSE: 1 default ([B, H, L], or [H, tokens] when ragged), 2 explicit with
 * gaps ([B, L, H+1], or [tokens, H+1] with an unused batch stride). */
static tlay lse_layout(int kind, int ragged, size_t b, size_t h, size_t l) {
  tlay x;
  if (kind == 1) {
    x.st = (sa_strides){0, 0, 0};
    x.rs = ragged ? (sa_strides){0, l, 1} : (sa_strides){h * l, l, 1};
  } else {
    x.rs = x.st = ragged ? (sa_strides){UNUSED_STRIDE, 1, h + 1}
                         : (sa_strides){l * (h + 1) + 2, 1, h + 1};
  }
  x.floats = span_of(&x.rs, ragged ? 1 : b, h, l, 1);
  return x;
}

/* Masks [B, Hq, len_q, keys] (row and key within the sequence): 1 packed
 * default, 2 PyTorch [Lq, K] {0, 0, K, 1}, 3 transposed [B, H, K, Lq]
 * (gathered), 4 [Lq, K] over fewer keys than len_kv. */
static sa_mask_layout mask_layout(int kind, size_t b, size_t h, size_t lq,
                                  size_t lkv, sa_mask_layout *resolved,
                                  size_t *elems) {
  sa_mask_layout s, given;
  size_t k = kind == 4 ? lkv / 2 + 1 : lkv;
  switch (kind) {
  case 1:
    s = (sa_mask_layout){h * lq * k, lq * k, k, 1, k};
    given = (sa_mask_layout){0, 0, 0, 0, 0};
    break;
  case 2:
  case 4:
    given = s = (sa_mask_layout){0, 0, k, 1, k};
    break;
  default:
    given = s = (sa_mask_layout){h * k * lq, k * lq, 1, lq, k};
    break;
  }
  *resolved = s;
  *elems = (b - 1) * s.batch + (h - 1) * s.head + (lq - 1) * s.row +
           (k - 1) * s.key + 1;
  return given;
}

/* ------------------------------------------------------------ problems */

typedef struct lspec {
  size_t batch, heads_q, heads_kv, len_q, len_kv, dim_qk, dim_v;
  int qside, kside;         /* SIDE_*: qside padded or ragged */
  int lq[MAX_B], lk[MAX_B]; /* ragged sides: tokens per sequence */
  int q_off, k_off;         /* cu_seqlens[0]: the rows before it are gaps */
  int qlay, olay, klay;     /* layout kinds */
  int vlay;                 /* V's kind + 1; 0: klay's */
  int lse;                  /* 0 none, 1 default strides, 2 explicit */
  int valid;                /* len_kv_valid = valid_v */
  int64_t valid_v[MAX_B];
  sa_mask mask;
  int window;
  int64_t wl, wr;
  float scale, softcap;
  int alibi, sinks; /* sinks: 1 random, 2 some heads -inf */
  int add, boolm;   /* mask_layout kind; 0: none */
  size_t page, table_extra, spare_pages;
  int shared;  /* sequence 1's first page is sequence 0's */
  int inplace; /* O is Q (dim_v == dim_qk, olay == qlay) */
} lspec;

typedef struct lprob {
  lspec s;
  view w;
  int32_t cu_q[MAX_B + 1], cu_k[MAX_B + 1];
  int32_t *table;
  size_t pages_used;
  int64_t valid[MAX_B];
  float slopes[MAX_H], sinks[MAX_H];
  guarded gq, gk, gv, go, gl, gadd, gbool;
  size_t nq, nk, nv, no, nl;
  float *q0; /* in place: Q as made, restored before every call */
  refs r;
} lprob;

static lspec shape(size_t b, size_t hq, size_t hkv, size_t lq, size_t lkv,
                   size_t dq, size_t dv) {
  lspec s;
  memset(&s, 0, sizeof s);
  s.batch = b, s.heads_q = hq, s.heads_kv = hkv, s.len_q = lq, s.len_kv = lkv;
  s.dim_qk = dq, s.dim_v = dv;
  return s;
}

/* Keys of paged sequence b. */
static size_t paged_len(const lspec *s, size_t b) {
  return s->valid ? (size_t)s->valid_v[b] : s->len_kv;
}

/* The block table: each sequence's pages drawn from a shuffled pool with
 * spare pages no sequence uses; entries past what a sequence needs are -1
 * (never read). */
static void make_table(lprob *P) {
  const lspec *s = &P->s;
  size_t need[MAX_B], ld = 0, total = 0;
  for (size_t b = 0; b < s->batch; b++) {
    need[b] = (paged_len(s, b) + s->page - 1) / s->page;
    ld = need[b] > ld ? need[b] : ld;
    total += need[b];
  }
  ld += s->table_extra;
  int share = s->shared && s->batch > 1 && need[0] > 0 && need[1] > 0;
  total -= (size_t)share;
  size_t np = total + s->spare_pages;
  np = np ? np : 1;
  int32_t *perm = xmalloc(np * sizeof(int32_t));
  for (size_t i = 0; i < np; i++)
    perm[i] = (int32_t)i;
  for (size_t i = np; i > 1; i--) { /* Fisher-Yates */
    size_t j = (size_t)(t_next() % i);
    int32_t t = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = t;
  }
  P->table = xmalloc((ld ? ld : 1) * s->batch * sizeof(int32_t));
  size_t next = 0;
  for (size_t b = 0; b < s->batch; b++)
    for (size_t i = 0; i < ld; i++)
      P->table[b * ld + i] = i >= need[b]                ? -1
                             : share && b == 1 && i == 0 ? P->table[0]
                                                         : perm[next++];
  free(perm);
  P->pages_used = total;
  sa_attention_desc *d = &P->w.d;
  d->block_table = P->table;
  d->block_table_stride = ld;
  d->page_size = s->page;
  d->num_pages = np;
}

/* Random rows where a sequence has them (a key-side row shared between
 * sequences is drawn once); every other float of the buffers stays NaN. */
static void fill_rows(lprob *P) {
  const sa_attention_desc *d = &P->w.d;
  const lspec *s = &P->s;
  fill_nan(P->gq.p, P->nq);
  fill_nan(P->gk.p, P->nk);
  fill_nan(P->gv.p, P->nv);
  for (size_t b = 0; b < s->batch; b++)
    for (size_t h = 0; h < s->heads_q; h++)
      for (size_t i = 0; i < seq_len_q(d, b); i++)
        t_fill(P->gq.p + q_at(d, &P->w.qs, b, h, i), s->dim_qk, -1, 1);
  for (size_t b = 0; b < s->batch; b++)
    for (size_t h = 0; h < s->heads_kv; h++)
      for (size_t j = 0; j < seq_len_kv(d, b); j++) {
        float *kr = P->gk.p + k_at(d, &P->w.ks, b, h, j);
        float *vr = P->gv.p + k_at(d, &P->w.vs, b, h, j);
        if (isnan(kr[0]))
          t_fill(kr, s->dim_qk, -1, 1);
        if (isnan(vr[0]))
          t_fill(vr, s->dim_v, -2, 2);
      }
}

static void prob_make(lprob *P, const lspec *s) {
  memset(P, 0, sizeof *P);
  P->s = *s;
  view *w = &P->w;
  sa_attention_desc *d = &w->d;
  sa_attention_desc_init(d);
  size_t B = s->batch, Hq = s->heads_q, Hkv = s->heads_kv;
  d->batch = B, d->heads_q = Hq, d->heads_kv = Hkv;
  d->len_q = s->len_q, d->len_kv = s->len_kv;
  d->dim_qk = s->dim_qk, d->dim_v = s->dim_v;
  d->scale = s->scale;
  d->mask = s->mask;
  if (s->valid) {
    for (size_t b = 0; b < B; b++)
      P->valid[b] = s->valid_v[b];
    d->len_kv_valid = P->valid;
  }

  tlay lq, lo, lk, lv, ll = {{0, 0, 0}, {0, 0, 0}, 0};
  size_t qrows = s->len_q; /* rows of the LSE's query dimension */
  if (s->qside == SIDE_RAGGED) {
    P->cu_q[0] = s->q_off;
    for (size_t b = 0; b < B; b++)
      P->cu_q[b + 1] = P->cu_q[b] + s->lq[b];
    d->cu_seqlens_q = P->cu_q;
    qrows = (size_t)P->cu_q[B] + 2; /* two gap tokens after the last */
    lq = ragged_layout(s->qlay, Hq, qrows, s->dim_qk);
    lo = ragged_layout(s->olay, Hq, qrows, s->dim_v);
  } else {
    lq = padded_layout(s->qlay, B, Hq, s->len_q, s->dim_qk);
    lo = padded_layout(s->olay, B, Hq, s->len_q, s->dim_v);
  }
  if (s->kside == SIDE_RAGGED) {
    P->cu_k[0] = s->k_off;
    for (size_t b = 0; b < B; b++)
      P->cu_k[b + 1] = P->cu_k[b] + s->lk[b];
    d->cu_seqlens_kv = P->cu_k;
    size_t rows = (size_t)P->cu_k[B] + 1;
    lk = ragged_layout(s->klay, Hkv, rows, s->dim_qk);
    lv = ragged_layout(s->vlay ? (s->vlay - 1) % 3 : s->klay, Hkv, rows,
                       s->dim_v);
  } else if (s->kside == SIDE_PAGED) {
    make_table(P);
    lk = paged_layout(s->klay, d->num_pages, s->page, Hkv, s->dim_qk);
    lv = paged_layout(s->vlay ? s->vlay - 1 : s->klay, d->num_pages, s->page,
                      Hkv, s->dim_v);
  } else {
    lk = padded_layout(s->klay, B, Hkv, s->len_kv, s->dim_qk);
    lv = padded_layout(s->vlay ? (s->vlay - 1) % 3 : s->klay, B, Hkv, s->len_kv,
                       s->dim_v);
  }
  d->q = lq.st, d->k = lk.st, d->v = lv.st, d->o = lo.st;
  w->qs = lq.rs, w->ks = lk.rs, w->vs = lv.rs, w->os = lo.rs;
  P->nq = lq.floats, P->nk = lk.floats, P->nv = lv.floats, P->no = lo.floats;
  P->gq = g_alloc(P->nq);
  P->gk = g_alloc(P->nk);
  P->gv = g_alloc(P->nv);
  P->go = g_alloc(P->no);
  w->q = P->gq.p, w->k = P->gk.p, w->v = P->gv.p;
  fill_rows(P);
  if (s->inplace) {
    P->q0 = xmalloc(P->nq * sizeof(float));
    memcpy(P->q0, P->gq.p, P->nq * sizeof(float));
  }

  if (s->lse) {
    /* varlen's default LSE is [heads_q, cu_seqlens_q[batch]]: the tokens
     * the prefix sums end at, gap tokens after them not counted */
    size_t lrows = qrows;
    if (s->qside == SIDE_RAGGED && s->lse == 1)
      lrows = P->cu_q[B] ? (size_t)P->cu_q[B] : 1;
    ll = lse_layout(s->lse, s->qside == SIDE_RAGGED, B, Hq, lrows);
    P->nl = ll.floats;
    P->gl = g_alloc(P->nl);
    d->lse = P->gl.p;
    d->lse_at = ll.st;
    w->ls = ll.rs;
  }
  if (s->add) {
    size_t n;
    d->mask_add_layout =
        mask_layout(s->add, B, Hq, s->len_q, s->len_kv, &w->add_at, &n);
    P->gadd = g_alloc(n);
    for (size_t x = 0; x < n; x++)
      P->gadd.p[x] = t_next() % 100 < 15 ? -INFINITY : t_uniform(-2, 2);
    d->mask_add = P->gadd.p;
  }
  if (s->boolm) {
    size_t n;
    d->mask_bool_layout =
        mask_layout(s->boolm, B, Hq, s->len_q, s->len_kv, &w->bool_at, &n);
    size_t nf = (n + 3) / 4;
    P->gbool = g_alloc(nf);
    uint8_t *keep = (uint8_t *)P->gbool.p + (nf * 4 - n);
    for (size_t x = 0; x < n; x++)
      keep[x] = t_next() % 100 < 20 ? 0 : (uint8_t)(1 + t_next() % 255);
    d->mask_bool = keep;
  }
  d->window = s->window;
  d->window_left = s->wl;
  d->window_right = s->wr;
  d->softcap = s->softcap;
  if (s->alibi) {
    for (size_t h = 0; h < Hq; h++)
      P->slopes[h] = t_uniform(-0.3f, 0.3f);
    d->alibi_slopes = P->slopes;
  }
  if (s->sinks) {
    for (size_t h = 0; h < Hq; h++)
      P->sinks[h] = s->sinks == 2 && h % 3 == 1 ? -INFINITY : t_uniform(-1, 3);
    d->sinks = P->sinks;
  }
  refs_compute(w, &P->r);
}

static void prob_free(lprob *P) {
  g_free(&P->gq), g_free(&P->gk), g_free(&P->gv), g_free(&P->go);
  g_free(&P->gl), g_free(&P->gadd), g_free(&P->gbool);
  free(P->table);
  free(P->q0);
  refs_free(&P->r);
}

static void describe(const lspec *s, const char *what, char *buf, size_t n) {
  char lens[160] = "";
  size_t at = 0;
  for (size_t b = 0; b < s->batch && at < sizeof lens - 24; b++)
    at += (size_t)snprintf(lens + at, sizeof lens - at, "%s%d/%d", b ? "," : "",
                           s->qside == SIDE_RAGGED ? s->lq[b] : -1,
                           s->kside == SIDE_RAGGED ? s->lk[b]
                           : s->valid              ? (int)s->valid_v[b]
                                                   : -1);
  snprintf(buf, n,
           "%s: q %s k %s B%zu Hq%zu Hkv%zu Lq%zu Lkv%zu d%zu/%zu lens "
           "[%s] off %d/%d lay %d/%d/%d/%d page %zu mask%d win%d(%lld,%lld) "
           "cap%g alibi%d sinks%d add%d bool%d lse%d",
           what, side_names[s->qside], side_names[s->kside], s->batch,
           s->heads_q, s->heads_kv, s->len_q, s->len_kv, s->dim_qk, s->dim_v,
           lens, s->q_off, s->k_off, s->qlay, s->olay, s->klay, s->vlay,
           s->page, (int)s->mask, s->window, (long long)s->wl, (long long)s->wr,
           (double)s->softcap, s->alibi, s->sinks, s->add, s->boolm, s->lse);
}

static const char *algo_name(int algo) {
  return algo == SA_ALGO_AUTO    ? "auto"
         : algo == SA_ALGO_FUSED ? "fused"
                                 : "3pass";
}

static void set_label(const char *what, int si, int algo, const char *extra) {
  snprintf(label, sizeof label, "%s | %s %s %s", what, sets[si]->name,
           algo_name(algo), extra);
  t_context = label;
}

/* One call on ctx with O and LSE NaN first; paged under three-pass must be
 * refused with O and LSE untouched. 1 on failure. */
static int prob_run(lprob *P, sa_context *ctx, int algo) {
  float *o = P->go.p;
  size_t no = P->no;
  if (P->q0) { /* in place: the reference read this Q */
    memcpy(P->gq.p, P->q0, P->nq * sizeof(float));
    o = P->gq.p, no = P->nq;
  } else
    fill_nan(o, no);
  if (P->gl.p)
    fill_nan(P->gl.p, P->nl);
  sa_attention_desc d = P->w.d;
  d.algorithm = (sa_algorithm)algo;
  sa_status st = sa_attention(ctx, &d, P->w.q, P->w.k, P->w.v, o);
  if (d.block_table && algo == SA_ALGO_THREE_PASS) {
    size_t touched = 0;
    for (size_t x = 0; !P->q0 && x < P->no; x++)
      touched += !isnan(P->go.p[x]);
    for (size_t x = 0; P->gl.p && x < P->nl; x++)
      touched += !isnan(P->gl.p[x]);
    CHECK(st == SA_ERR_BAD_ARGUMENT && touched == 0,
          "paged under three-pass: got '%s', %zu floats written",
          sa_status_str(st), touched);
    return st != SA_ERR_BAD_ARGUMENT || touched != 0;
  }
  CHECK(st == SA_OK, "sa_attention: %s (%s)", sa_status_str(st),
        sa_last_error());
  if (st != SA_OK)
    return 1;
  return check_result(&P->w, &P->r, o, no, P->gl.p, P->nl);
}

/* Every set; algorithms three-pass and fused (paged: fused or auto, and
 * three-pass refused); variants all or rotating. 1 if any failed. */
static int run_all(lprob *P, const char *what, int all_variants) {
  char desc[640], extra[64];
  describe(&P->s, what, desc, sizeof desc);
  int bad = 0, paged = P->s.kside == SIDE_PAGED;
  for (int si = 0; si < nsets; si++)
    for (int a = 0; a < 2; a++) {
      int algo = a == 0                                  ? SA_ALGO_THREE_PASS
                 : paged && (counter + (unsigned)si) % 2 ? SA_ALGO_AUTO
                                                         : SA_ALGO_FUSED;
      for (int v = 0; v < N_VAR; v++) {
        if (!all_variants && v != (int)((counter + (unsigned)si) % N_VAR))
          continue;
        if (paged && algo == SA_ALGO_THREE_PASS && v > 0)
          continue; /* refused before tiles matter */
        snprintf(extra, sizeof extra, "bq%zu bkv%zu", var_bq[v], var_bkv[v]);
        set_label(desc, si, algo, extra);
        if (ctxs[si][v])
          bad |= prob_run(P, ctxs[si][v], algo);
      }
    }
  counter++;
  return bad;
}

/* ------------------------------------------------------ 1. varlen */

static size_t pick(const size_t *a, size_t n) { return a[t_next() % n]; }

static const size_t seq_lens[] = {0, 1, 2, 3, 5, 8, 16, 17, 37, 64};
static const size_t dims[] = {1, 3, 8, 16, 17, 33};
#define N_SEQ_LENS (sizeof seq_lens / sizeof seq_lens[0])
#define N_DIMS (sizeof dims / sizeof dims[0])

/* Random features on s (each at about the given odds); windows and masks
 * relative to the sequences' own positions. */
static void random_features(lspec *s) {
  s->scale = t_next() % 3 == 0 ? 0.0f : t_uniform(0.3f, 2.0f);
  s->mask = (sa_mask)(t_next() % 3);
  if (t_next() % 3 == 0) {
    s->window = 1;
    s->wl = t_next() % 4 == 0 ? -1 : (int64_t)t_range(0, 20);
    s->wr = t_next() % 4 == 0 ? -1 : (int64_t)t_range(0, 20);
  }
  if (t_next() % 3 == 0)
    s->softcap = t_uniform(0.5f, 4.0f);
  if (t_next() % 3 == 0)
    s->alibi = 1;
  if (t_next() % 3 == 0)
    s->sinks = 1 + (int)(t_next() % 2);
  if (t_next() % 3 == 0)
    s->add = 1 + (int)(t_next() % 4);
  if (t_next() % 3 == 0)
    s->boolm = 1 + (int)(t_next() % 4);
  s->lse = (int)(t_next() % 3);
}

/* A random varlen problem: kind 0 both sides ragged, 1 queries only (keys
 * padded), 2 keys only (queries padded); decode (len_q 1, GQA) now and
 * then. */
static lspec random_varlen(int id) {
  int kind = id % 3, decode = id % 5 == 4;
  size_t b = t_range(1, 5), hkv = t_range(1, 2);
  size_t hq = hkv * (decode ? t_range(2, 4) : t_range(1, 3));
  size_t dq = pick(dims, N_DIMS), dv = pick(dims, N_DIMS);
  lspec s = shape(b, hq, hkv, 1, 1, dq, dv);
  size_t mq = 0, mk = 0;
  for (size_t i = 0; i < b; i++) {
    s.lq[i] = decode ? (int)(t_next() % 2) : (int)pick(seq_lens, N_SEQ_LENS);
    s.lk[i] = (int)pick(seq_lens, N_SEQ_LENS);
    mq = (size_t)s.lq[i] > mq ? (size_t)s.lq[i] : mq;
    mk = (size_t)s.lk[i] > mk ? (size_t)s.lk[i] : mk;
  }
  s.qside = kind != 2 ? SIDE_RAGGED : SIDE_PADDED;
  s.kside = kind != 1 ? SIDE_RAGGED : SIDE_PADDED;
  /* len_q / len_kv bound the sequences (sometimes loosely); a padded
   * side's length is its own */
  s.len_q = s.qside == SIDE_RAGGED ? mq + (t_next() % 3 == 0 ? 3 : 0)
                                   : (decode ? 1 : t_range(1, 40));
  s.len_kv = s.kside == SIDE_RAGGED ? mk + (t_next() % 3 == 0 ? 2 : 0)
                                    : t_range(1, 64);
  s.len_q = s.len_q ? s.len_q : 1;
  s.len_kv = s.len_kv ? s.len_kv : 1;
  if (decode)
    s.len_q = 1;
  s.q_off = t_next() % 2 ? (int)t_range(1, 4) : 0;
  s.k_off = t_next() % 2 ? (int)t_range(1, 4) : 0;
  s.qlay = (int)(t_next() % 3), s.olay = (int)(t_next() % 3);
  s.klay = (int)(t_next() % 3);
  s.vlay = (int)(t_next() % 4);
  random_features(&s);
  if (t_next() % 3 == 0) { /* len_kv_valid on top of the lengths */
    s.valid = 1;
    for (size_t i = 0; i < b; i++)
      s.valid_v[i] = (int64_t)t_range(0, s.len_kv);
  }
  return s;
}

static void set_lens(int *dst, const int *src, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = src[i];
}

static void test_varlen(void) {
  int bad = 0, n = 0;
  static const int l5q[5] = {0, 1, 3, 37, 64}, l5k[5] = {37, 1, 0, 64, 3};
  static const int dec_q[6] = {1, 0, 1, 1, 0, 1},
                   dec_k[6] = {64, 5, 0, 1, 17, 33};
  for (int f = 0; f < 12; f++) {
    lspec s;
    const char *what;
    switch (f) {
    case 0:
      s = shape(5, 4, 2, 64, 64, 16, 12);
      s.qside = s.kside = SIDE_RAGGED;
      set_lens(s.lq, l5q, 5), set_lens(s.lk, l5k, 5);
      s.q_off = 3, s.k_off = 2;
      s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.lse = 1;
      what = "both ragged, lengths 0 1 3 37 64, bottom-right, LSE";
      break;
    case 1:
      s = shape(5, 3, 3, 70, 64, 17, 9);
      s.qside = s.kside = SIDE_RAGGED;
      set_lens(s.lq, l5q, 5), set_lens(s.lk, l5k, 5);
      s.qlay = 1, s.olay = 2, s.klay = 1;
      s.mask = SA_MASK_CAUSAL_TOP_LEFT, s.lse = 2, s.sinks = 2;
      what = "both ragged, strided, top-left, sinks, explicit LSE";
      break;
    case 2:
      s = shape(5, 4, 1, 64, 40, 8, 8);
      s.qside = SIDE_RAGGED;
      set_lens(s.lq, l5q, 5);
      s.q_off = 5, s.qlay = 2, s.olay = 1, s.klay = 1;
      s.valid = 1;
      s.valid_v[0] = 40, s.valid_v[1] = 0, s.valid_v[2] = 17;
      s.valid_v[3] = 1, s.valid_v[4] = 40;
      s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.window = 1, s.wl = 5, s.wr = 2;
      s.alibi = 1, s.lse = 1;
      what = "queries ragged, keys padded with len_kv_valid, window, ALiBi";
      break;
    case 3:
      s = shape(5, 2, 2, 9, 64, 16, 20);
      s.kside = SIDE_RAGGED;
      set_lens(s.lk, l5q, 5);
      s.k_off = 1, s.qlay = 1, s.olay = 2, s.klay = 2;
      s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.add = 1, s.boolm = 1;
      s.softcap = 2.0f, s.scale = 1.5f, s.lse = 2;
      what = "keys ragged, queries padded, bottom-right, masks, softcap";
      break;
    case 4:
      s = shape(6, 8, 2, 1, 64, 24, 16);
      s.qside = s.kside = SIDE_RAGGED;
      set_lens(s.lq, dec_q, 6), set_lens(s.lk, dec_k, 6);
      s.q_off = 1;
      s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.lse = 1, s.sinks = 1;
      what = "decode through varlen: one or no query per sequence, GQA";
      break;
    case 5:
      s = shape(2, 2, 1, 12, 40, 7, 5);
      s.qside = s.kside = SIDE_RAGGED;
      s.lq[0] = 12, s.lq[1] = 3, s.lk[0] = 5, s.lk[1] = 40;
      s.window = 1, s.wl = -1, s.wr = 3, s.boolm = 3, s.add = 2;
      s.lse = 2;
      what = "cross lengths, window right 3, transposed bool mask";
      break;
    case 6:
      s = shape(3, 2, 1, 37, 37, 5, 6);
      s.qside = s.kside = SIDE_RAGGED;
      s.lq[0] = 37, s.lq[1] = 1, s.lq[2] = 17;
      s.lk[0] = 3, s.lk[1] = 37, s.lk[2] = 17;
      s.q_off = 4, s.k_off = 3, s.qlay = 2, s.olay = 2, s.klay = 2;
      s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.window = 1, s.wl = 4, s.wr = -1;
      s.boolm = 4, s.lse = 1;
      what = "gaps before the first token, head-major, short mask";
      break;
    case 7: /* every sequence empty on one side or the other */
      s = shape(3, 2, 2, 4, 6, 8, 8);
      s.qside = s.kside = SIDE_RAGGED;
      s.lq[0] = 0, s.lq[1] = 4, s.lq[2] = 0;
      s.lk[0] = 6, s.lk[1] = 0, s.lk[2] = 0;
      s.q_off = 2, s.lse = 1, s.sinks = 2;
      what = "sequences without queries or without keys";
      break;
    case 8:
      s = shape(4, 6, 3, 64, 64, 16, 16);
      s.qside = s.kside = SIDE_RAGGED;
      s.lq[0] = 64, s.lq[1] = 33, s.lq[2] = 1, s.lq[3] = 64;
      s.lk[0] = 64, s.lk[1] = 64, s.lk[2] = 64, s.lk[3] = 20;
      s.valid = 1;
      s.valid_v[0] = 64, s.valid_v[1] = 40, s.valid_v[2] = 0, s.valid_v[3] = 64;
      s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.alibi = 1, s.lse = 2;
      what = "ragged keys cut by len_kv_valid";
      break;
    case 9: /* O is Q: the fused driver copies a tile's Q rows first */
      s = shape(4, 4, 2, 37, 64, 12, 12);
      s.qside = s.kside = SIDE_RAGGED;
      s.lq[0] = 37, s.lq[1] = 0, s.lq[2] = 5, s.lq[3] = 17;
      s.lk[0] = 64, s.lk[1] = 3, s.lk[2] = 1, s.lk[3] = 40;
      s.q_off = 2, s.qlay = s.olay = 1, s.inplace = 1;
      s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.lse = 1;
      what = "in place (O is Q), both ragged";
      break;
    case 10: /* no query token at all: nothing may be written */
      s = shape(3, 2, 1, 5, 9, 8, 8);
      s.qside = s.kside = SIDE_RAGGED;
      s.lk[0] = 9, s.lk[1] = 2, s.lk[2] = 0;
      s.lse = 1 + (int)(t_next() % 2), s.sinks = 1;
      what = "no query token in any sequence";
      break;
    default:
      s = shape(3, 4, 2, 1, 64, 16, 16);
      s.kside = SIDE_RAGGED;
      s.lk[0] = 64, s.lk[1] = 1, s.lk[2] = 0;
      s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.lse = 1;
      what = "decode, padded queries, ragged keys";
      break;
    }
    lprob P;
    prob_make(&P, &s);
    bad += run_all(&P, what, 1);
    n++;
    if (f == 7 || f == 4) {
      t_context = what;
      CHECK(P.r.empty > 0, "the case leaves no row without keys");
    }
    prob_free(&P);
  }
  int cases = 120;
  for (int id = 0; id < cases; id++) {
    lspec s = random_varlen(id);
    char what[48];
    snprintf(what, sizeof what, "random varlen %d", id);
    lprob P;
    prob_make(&P, &s);
    bad += run_all(&P, what, 0);
    prob_free(&P);
    n++;
  }
  printf("varlen: %d problems, %d failed\n", n, bad);
}

/* ------------------------------------------------------- 2. paged */

/*
 * Runs P on a context whose caller workspace is exactly what
 * sa_attention_workspace asks for and ends at a guard page: a paged call's
 * gathered key block (or any other scratch) past its share faults.
 */
static int run_tight_workspace(lprob *P, int si, int v, const char *desc) {
  char extra[64];
  snprintf(extra, sizeof extra, "bq%zu bkv%zu, workspace ending at a guard",
           var_bq[v], var_bkv[v]);
  set_label(desc, si, SA_ALGO_FUSED, extra);
  sa_context *probe = ctxs[si][v];
  if (!probe)
    return 1;
  size_t bytes = 0;
  sa_attention_desc d = P->w.d;
  d.algorithm = SA_ALGO_FUSED;
  sa_status st = sa_attention_workspace(probe, &d, &bytes);
  CHECK(st == SA_OK && bytes > 0, "sa_attention_workspace: %s",
        sa_status_str(st));
  if (st != SA_OK)
    return 1;
  size_t nf = (bytes + 3) / 4;
  guarded g = g_alloc(nf);
  sa_context_options opt;
  sa_context_options_init(&opt);
  opt.isa = sets[si]->name;
  opt.num_threads = 1;
  opt.pin = SA_PIN_NONE;
  opt.block_q = var_bq[v];
  opt.block_kv = var_bkv[v];
  opt.workspace = (char *)g.p + (nf * 4 - bytes);
  opt.workspace_bytes = bytes;
  sa_context *ctx = NULL;
  st = sa_context_create(&opt, &ctx);
  CHECK(st == SA_OK, "context with workspace: %s", sa_status_str(st));
  int bad = st != SA_OK || prob_run(P, ctx, SA_ALGO_FUSED);
  sa_context_destroy(ctx);
  g_free(&g);
  return bad;
}

static void test_paged(void) {
  static const size_t pages[] = {1, 5, 16, 17, 20, 64};
  int bad = 0, n = 0;
  size_t empty = 0;
  for (size_t pi = 0; pi < sizeof pages / sizeof pages[0]; pi++)
    for (int f = 0; f < 5; f++) {
      size_t P0 = pages[pi];
      size_t lkv = (70 + P0 - 1) / P0 * P0; /* a whole number of pages */
      lspec s;
      const char *what;
      switch (f) {
      case 0: /* decode, GQA: empty, full table, partial pages, shared */
        s = shape(4, 8, 2, 1, lkv, 16, 16);
        s.valid = 1;
        s.valid_v[0] = 0, s.valid_v[1] = (int64_t)lkv;
        s.valid_v[2] = (int64_t)t_range(1, lkv), s.valid_v[3] = 1;
        s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.lse = 1;
        s.shared = 1, s.spare_pages = 3;
        what = "paged decode, GQA, lengths 0 / full table / random / 1";
        break;
      case 1: /* short prefill, padded queries, bottom-right */
        s = shape(3, 4, 2, 6, lkv, 12, 20);
        s.valid = 1;
        s.valid_v[0] = (int64_t)lkv, s.valid_v[1] = 6, s.valid_v[2] = 3;
        s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.lse = 2;
        s.table_extra = 2, s.spare_pages = 1;
        what = "paged short prefill, bottom-right (a sequence shorter than "
               "its queries)";
        break;
      case 2: /* prefill chunks through varlen queries */
        s = shape(3, 2, 1, 7, lkv, 9, 7);
        s.qside = SIDE_RAGGED;
        s.lq[0] = 7, s.lq[1] = 0, s.lq[2] = 3;
        s.q_off = 2, s.qlay = 1, s.olay = 2;
        s.valid = 1;
        s.valid_v[0] = (int64_t)lkv - 1, s.valid_v[1] = 9, s.valid_v[2] = 3;
        s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.lse = 1, s.shared = 1;
        what = "paged keys, ragged queries (chunked prefill)";
        break;
      case 3: /* no len_kv_valid: every sequence has len_kv keys */
        s = shape(2, 3, 3, 5, lkv, 8, 8);
        s.mask = SA_MASK_CAUSAL_TOP_LEFT, s.sinks = 2, s.lse = 1;
        s.spare_pages = 2;
        what = "paged, no len_kv_valid (len_kv keys each), top-left";
        break;
      default: /* the features on a paged decode */
        s = shape(2, 6, 2, 1, lkv, 16, 12);
        s.valid = 1;
        s.valid_v[0] = (int64_t)lkv - 3, s.valid_v[1] = (int64_t)lkv / 2;
        s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT;
        s.window = 1, s.wl = 40, s.wr = -1, s.softcap = 3.0f, s.alibi = 1;
        s.sinks = 1, s.add = 2, s.boolm = 3, s.lse = 2, s.shared = 1;
        what = "paged decode with window, softcap, ALiBi, sinks, masks";
        break;
      }
      s.kside = SIDE_PAGED;
      s.page = P0;
      s.klay = (int)((pi + (size_t)f) % 4);
      lprob P;
      prob_make(&P, &s);
      char what2[160];
      snprintf(what2, sizeof what2, "%s, page %zu", what, P0);
      bad += run_all(&P, what2, 1);
      empty += P.r.empty;
      char desc[640];
      describe(&P.s, what2, desc, sizeof desc);
      for (int si = 0; si < nsets; si++)
        bad += run_tight_workspace(&P, si,
                                   (int)(counter + (unsigned)si) % N_VAR, desc);
      prob_free(&P);
      n++;
    }
  /* random: page sizes around and between the block sizes, any pool
   * layout, queries padded or ragged, every feature now and then */
  static const size_t rpages[] = {1, 2, 3, 5, 8, 13, 16, 17, 31, 64};
  for (int id = 0; id < 60; id++) {
    int decode = id % 3 == 0, ragged = id % 2 == 1;
    size_t b = t_range(1, 4), hkv = t_range(1, 2);
    size_t hq = hkv * (decode ? t_range(2, 4) : t_range(1, 3));
    size_t dq = pick(dims, N_DIMS), dv = pick(dims, N_DIMS);
    lspec s = shape(b, hq, hkv, 1, t_range(1, 80), dq, dv);
    s.kside = SIDE_PAGED;
    s.page = pick(rpages, sizeof rpages / sizeof rpages[0]);
    s.klay = (int)(t_next() % 4), s.vlay = (int)(t_next() % 5);
    s.table_extra = t_range(0, 2), s.spare_pages = t_range(0, 3);
    s.shared = t_next() % 2 == 0;
    if (t_next() % 4 != 0) {
      s.valid = 1;
      for (size_t i = 0; i < b; i++)
        s.valid_v[i] = t_next() % 4 == 0 ? (int64_t)s.len_kv
                                         : (int64_t)t_range(0, s.len_kv);
    }
    size_t mq = 0;
    for (size_t i = 0; i < b; i++) {
      s.lq[i] = decode ? (int)(t_next() % 2) : (int)t_range(0, 9);
      mq = (size_t)s.lq[i] > mq ? (size_t)s.lq[i] : mq;
    }
    if (ragged) {
      s.qside = SIDE_RAGGED;
      s.len_q = mq ? mq : 1;
      s.q_off = (int)t_range(0, 2);
    } else
      s.len_q = decode ? 1 : t_range(1, 9);
    s.qlay = (int)(t_next() % 3), s.olay = (int)(t_next() % 3);
    random_features(&s);
    if (id == 0) { /* every sequence empty: a table of stride 0 */
      s.valid = 1, s.table_extra = 0;
      for (size_t i = 0; i < b; i++)
        s.valid_v[i] = 0;
    }
    char what[48];
    snprintf(what, sizeof what, "random paged %d", id);
    lprob P;
    prob_make(&P, &s);
    bad += run_all(&P, what, 0);
    empty += P.r.empty;
    prob_free(&P);
    n++;
  }
  t_context = "paged";
  CHECK(empty > 0, "no paged row without keys");
  printf("paged: %d problems, %d failed\n", n, bad);
}

/* --------------------------------------------------- 3. sa_kv_append */

#define AP_B 4
#define AP_HKV 2
#define AP_HQ 6
#define AP_DQ 16
#define AP_DV 12
#define AP_MAX 40 /* keys per sequence at most */

typedef struct cache {
  size_t page, ld, np;
  int32_t table[AP_B * AP_MAX];
  tlay lk, lv;
  guarded gk, gv;
  size_t len[AP_B];
  /* the source rows, [b][h][j][d] */
  float kd[AP_B][AP_HKV][AP_MAX][AP_DQ], vd[AP_B][AP_HKV][AP_MAX][AP_DV];
} cache;

/* Appends `tokens` new random rows to each sequence of [b0, b0 + nb) (a
 * sub-batch: table and start offset to b0), new rows in layout nk (0
 * packed default, 1 [B, T, H, D] padded). */
static int append(cache *c, size_t b0, size_t nb, size_t tokens, int nk) {
  sa_kv_append_desc a;
  sa_kv_append_desc_init(&a);
  a.batch = nb, a.heads_kv = AP_HKV, a.dim_qk = AP_DQ, a.dim_v = AP_DV;
  a.tokens = tokens;
  int64_t start[AP_B];
  for (size_t b = 0; b < nb; b++)
    start[b] = (int64_t)c->len[b0 + b];
  a.start = start;
  a.block_table = c->table + b0 * c->ld;
  a.block_table_stride = c->ld, a.page_size = c->page, a.num_pages = c->np;
  a.k = c->lk.st, a.v = c->lv.st;
  sa_strides sk, sv;
  if (nk == 0) {
    sk = (sa_strides){AP_HKV * tokens * AP_DQ, tokens * AP_DQ, AP_DQ};
    sv = (sa_strides){AP_HKV * tokens * AP_DV, tokens * AP_DV, AP_DV};
  } else {
    sk = (sa_strides){tokens * (AP_HKV * (AP_DQ + 1) + 2), AP_DQ + 1,
                      AP_HKV * (AP_DQ + 1) + 2};
    sv = (sa_strides){tokens * (AP_HKV * (AP_DV + 3) + 1), AP_DV + 3,
                      AP_HKV * (AP_DV + 3) + 1};
    a.k_new = sk, a.v_new = sv;
  }
  size_t nkf = span_of(&sk, nb, AP_HKV, tokens, AP_DQ);
  size_t nvf = span_of(&sv, nb, AP_HKV, tokens, AP_DV);
  guarded kn = g_alloc(nkf), vn = g_alloc(nvf);
  fill_nan(kn.p, nkf), fill_nan(vn.p, nvf);
  for (size_t b = 0; b < nb; b++)
    for (size_t h = 0; h < AP_HKV; h++)
      for (size_t t = 0; t < tokens; t++) {
        float *kr = kn.p + b * sk.batch + h * sk.head + t * sk.seq;
        float *vr = vn.p + b * sv.batch + h * sv.head + t * sv.seq;
        t_fill(kr, AP_DQ, -1, 1);
        t_fill(vr, AP_DV, -2, 2);
        memcpy(c->kd[b0 + b][h][c->len[b0 + b] + t], kr, sizeof(float) * AP_DQ);
        memcpy(c->vd[b0 + b][h][c->len[b0 + b] + t], vr, sizeof(float) * AP_DV);
      }
  sa_status st = sa_kv_append(&a, c->gk.p, c->gv.p, kn.p, vn.p);
  CHECK(st == SA_OK,
        "sa_kv_append of %zu tokens to %zu sequence(s) from %zu: "
        "%s (%s)",
        tokens, nb, b0, sa_status_str(st), sa_last_error());
  for (size_t b = 0; b < nb; b++)
    c->len[b0 + b] += tokens;
  g_free(&kn), g_free(&vn);
  return st != SA_OK;
}

/* The cache against the source rows, bit for bit; every float no sequence
 * owns still the NaN it started as. 1 on failure. */
static int check_cache(const cache *c, const char *when) {
  size_t nk = c->lk.floats, nv = c->lv.floats;
  unsigned char *ok = calloc(nk + nv, 1);
  size_t bad = 0, stray = 0;
  for (size_t b = 0; b < AP_B; b++)
    for (size_t h = 0; h < AP_HKV; h++)
      for (size_t j = 0; j < c->len[b]; j++) {
        int32_t pg = c->table[b * c->ld + j / c->page];
        size_t slot = j % c->page;
        size_t ak = (size_t)pg * c->lk.rs.batch + h * c->lk.rs.head +
                    slot * c->lk.rs.seq;
        size_t av = (size_t)pg * c->lv.rs.batch + h * c->lv.rs.head +
                    slot * c->lv.rs.seq;
        bad += memcmp(c->gk.p + ak, c->kd[b][h][j], sizeof(float) * AP_DQ) != 0;
        bad += memcmp(c->gv.p + av, c->vd[b][h][j], sizeof(float) * AP_DV) != 0;
        memset(ok + ak, 1, AP_DQ);
        memset(ok + nk + av, 1, AP_DV);
      }
  for (size_t x = 0; x < nk; x++)
    stray += !ok[x] && !isnan(c->gk.p[x]);
  for (size_t x = 0; x < nv; x++)
    stray += !ok[nk + x] && !isnan(c->gv.p[x]);
  free(ok);
  t_context = when;
  CHECK(bad == 0 && stray == 0,
        "page %zu: %zu cache rows differ from their source, %zu floats "
        "written outside every sequence's rows",
        c->page, bad, stray);
  return bad != 0 || stray != 0;
}

/* Attention through the cache: queries ragged with nq[b] of them per
 * sequence (the last nq[b] positions, bottom-right causal), keys paged
 * with len_kv_valid = the lengths; reference from the source rows, a
 * padded [B, H, AP_MAX, D] view of them. 1 on failure. */
static int attend(cache *c, const int *nq, const char *what) {
  size_t B = AP_B, lq = 0;
  int32_t cu[AP_B + 1];
  int64_t valid[AP_B];
  cu[0] = 1; /* one gap token first */
  for (size_t b = 0; b < B; b++) {
    cu[b + 1] = cu[b] + nq[b];
    lq = (size_t)nq[b] > lq ? (size_t)nq[b] : lq;
    valid[b] = (int64_t)c->len[b];
  }
  size_t tokens = (size_t)cu[B] + 1;
  guarded gq = g_alloc(tokens * AP_HQ * AP_DQ);
  guarded go = g_alloc(tokens * AP_HQ * AP_DV);
  guarded gl = g_alloc(tokens * AP_HQ);
  fill_nan(gq.p, tokens * AP_HQ * AP_DQ);
  for (size_t t = (size_t)cu[0]; t < (size_t)cu[B]; t++)
    t_fill(gq.p + t * AP_HQ * AP_DQ, AP_HQ * AP_DQ, -1, 1);

  view w;
  memset(&w, 0, sizeof w);
  sa_attention_desc *d = &w.d;
  sa_attention_desc_init(d);
  d->batch = B, d->heads_q = AP_HQ, d->heads_kv = AP_HKV;
  d->len_q = lq ? lq : 1, d->len_kv = AP_MAX;
  d->dim_qk = AP_DQ, d->dim_v = AP_DV;
  d->mask = SA_MASK_CAUSAL_BOTTOM_RIGHT;
  d->cu_seqlens_q = cu;
  d->len_kv_valid = valid;
  d->lse = gl.p;
  w.q = gq.p;
  w.qs = (sa_strides){0, AP_DQ, AP_HQ * AP_DQ};
  w.os = (sa_strides){0, AP_DV, AP_HQ * AP_DV};
  w.ls = (sa_strides){0, (size_t)cu[B], 1}; /* [heads, cu[B]] */
  /* the reference's keys: the source rows, padded */
  w.k = &c->kd[0][0][0][0], w.v = &c->vd[0][0][0][0];
  w.ks = t_packed(AP_HKV, AP_MAX, AP_DQ);
  w.vs = t_packed(AP_HKV, AP_MAX, AP_DV);
  refs r;
  refs_compute(&w, &r);
  /* the call's keys: the pages */
  sa_attention_desc call = *d;
  call.block_table = c->table, call.block_table_stride = c->ld;
  call.page_size = c->page, call.num_pages = c->np;
  call.k = c->lk.st, call.v = c->lv.st;
  int bad = 0;
  char extra[64];
  for (int si = 0; si < nsets; si++) {
    int v = (int)((counter + (unsigned)si) % N_VAR);
    int algo = (counter + (unsigned)si) % 2 ? SA_ALGO_AUTO : SA_ALGO_FUSED;
    snprintf(extra, sizeof extra, "page %zu bq%zu bkv%zu", c->page, var_bq[v],
             var_bkv[v]);
    set_label(what, si, algo, extra);
    if (!ctxs[si][v])
      continue;
    fill_nan(go.p, tokens * AP_HQ * AP_DV);
    fill_nan(gl.p, tokens * AP_HQ);
    call.algorithm = (sa_algorithm)algo;
    sa_status st =
        sa_attention(ctxs[si][v], &call, gq.p, c->gk.p, c->gv.p, go.p);
    CHECK(st == SA_OK, "sa_attention: %s (%s)", sa_status_str(st),
          sa_last_error());
    bad |= st != SA_OK || check_result(&w, &r, go.p, tokens * AP_HQ * AP_DV,
                                       gl.p, tokens * AP_HQ);
  }
  counter++;
  refs_free(&r);
  g_free(&gq), g_free(&go), g_free(&gl);
  return bad;
}

static int append_run(size_t page, int layout) {
  cache *c = calloc(1, sizeof *c);
  if (!c)
    exit(2);
  c->page = page;
  c->ld = (AP_MAX + page - 1) / page;
  c->np = AP_B * c->ld + 3; /* three spare pages */
  int32_t *perm = xmalloc(c->np * sizeof(int32_t));
  for (size_t i = 0; i < c->np; i++)
    perm[i] = (int32_t)i;
  for (size_t i = c->np; i > 1; i--) {
    size_t j = (size_t)(t_next() % i);
    int32_t t = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = t;
  }
  for (size_t i = 0; i < AP_B * c->ld; i++)
    c->table[i] = perm[i];
  free(perm);
  c->lk = paged_layout(layout, c->np, page, AP_HKV, AP_DQ);
  c->lv = paged_layout(layout, c->np, page, AP_HKV, AP_DV);
  c->gk = g_alloc(c->lk.floats);
  c->gv = g_alloc(c->lv.floats);
  fill_nan(c->gk.p, c->lk.floats);
  fill_nan(c->gv.p, c->lv.floats);
  char what[96];
  int bad = 0;

  /* prompts of 0, 7, 13 and 3 tokens: in one call, in chunks, one token
   * per call, each sequence alone (batch 1, table offset) */
  bad |= append(c, 1, 1, 7, layout % 2);
  bad |= append(c, 2, 1, 5, 1);
  bad |= append(c, 2, 1, 8, 0);
  for (int t = 0; t < 3; t++)
    bad |= append(c, 3, 1, 1, t % 2);
  snprintf(what, sizeof what, "kv_append prompts, page %zu layout %d", page,
           layout);
  bad |= check_cache(c, what);
  static const int one_each[AP_B] = {1, 1, 1, 1}, some[AP_B] = {1, 0, 1, 0};
  bad |= attend(c, one_each, what);

  /* decode steps: one token for every sequence per call, attention after
   * each (some sequences without a query) */
  for (int step = 0; step < 6; step++) {
    bad |= append(c, 0, AP_B, 1, step % 2);
    snprintf(what, sizeof what, "kv_append decode step %d, page %zu layout %d",
             step, page, layout);
    bad |= check_cache(c, what);
    bad |= attend(c, step % 2 ? some : one_each, what);
  }
  /* several tokens per sequence in one call, across page boundaries, then
   * chunked prefill through the cache */
  bad |= append(c, 0, AP_B, 5, 1);
  bad |= append(c, 0, 2, 3, 0);
  snprintf(what, sizeof what, "kv_append 5 then 3 tokens, page %zu layout %d",
           page, layout);
  bad |= check_cache(c, what);
  static const int chunk[AP_B] = {4, 0, 5, 2};
  bad |= attend(c, chunk, what);
  bad |= attend(c, one_each, what);
  g_free(&c->gk), g_free(&c->gv);
  free(c);
  return bad;
}

static void test_kv_append(void) {
  static const size_t pages[] = {1, 4, 16, 64};
  int bad = 0;
  for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
    for (int layout = 0; layout < 4; layout += 1 + (int)(i % 2))
      bad += append_run(pages[i], layout);
  printf("sa_kv_append: %d runs failed\n", bad);
}

/* -------------------------------------------------- 4. thread counts */

/*
 * A long decode (1 sequence, 8 query heads over 2 KV heads, ~600 keys in
 * blocks of 16: two tiles, each split into parts of its keys) through a
 * paged cache (pages in place, and gathered) and through varlen; also two
 * ragged sequences of very different lengths; and decode batches of 8
 * sequences (0 to 600 keys: pages, [B, L, H, D], ragged) whose tiles run a
 * sequence's heads together, 4 a task, or 2 with 8 threads; and the long
 * decode over a [B, L, H, D] cache, whose two tiles run together in each
 * part of their keys. 1, 2, 3 and 8 threads give the same bits, and the
 * one-thread result matches the reference.
 */
static void test_threads(void) {
  static const int counts[] = {1, 2, 3, 8};
  int bad = 0;
  for (int k = 0; k < 9; k++) {
    lspec s = shape(1, 8, 2, 1, 600, 24, 20);
    s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.lse = 1 + k % 2;
    s.sinks = 2, s.softcap = k % 2 ? 3.0f : 0.0f;
    const char *what;
    if (k < 2) {
      s.kside = SIDE_PAGED, s.page = k == 0 ? 16 : 5;
      s.valid = 1, s.valid_v[0] = 597;
      s.klay = k == 0 ? 0 : 1, s.spare_pages = 4;
      what = k == 0 ? "long paged decode, pages in place"
                    : "long paged decode, pages gathered";
    } else if (k == 2) {
      s.qside = s.kside = SIDE_RAGGED;
      s.lq[0] = 1, s.lk[0] = 600, s.q_off = 2, s.k_off = 3;
      what = "long varlen decode";
    } else if (k == 8) {
      /* split, and both KV heads' tiles together in each part (no
       * softcap: a score_mod step keeps tiles one at a time) */
      s.klay = 1, s.softcap = 0.0f;
      what = "long [B, L, H, D] decode, split, heads together";
    } else if (k >= 4) {
      /* 32 tiles, no split: a sequence's KV heads run together, as many
       * a task as the thread count leaves (4, or 2 with 8 threads), on
       * pages, a token-major cache and a ragged one */
      static const int lens[] = {600, 0, 1, 37, 300, 257, 512, 129};
      static const char *names[] = {
          "paged decode batch, heads together",
          "paged decode batch, heads together, window",
          "[B, L, H, D] decode batch, heads together",
          "ragged decode batch, heads together"};
      s = shape(8, 8, 4, 1, 600, 24, 20);
      if (k <= 5)
        s.kside = SIDE_PAGED, s.page = 5, s.spare_pages = 3;
      if (k == 6)
        s.klay = 1;
      if (k == 7) {
        s.kside = SIDE_RAGGED, s.k_off = 2;
        for (int b = 0; b < 8; b++)
          s.lk[b] = lens[b];
      } else {
        s.valid = 1;
        for (int b = 0; b < 8; b++)
          s.valid_v[b] = lens[b];
      }
      s.lse = 1, s.sinks = 1;
      if (k == 5)
        s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.window = 1, s.wl = 200,
        s.wr = -1;
      what = names[k - 4];
    } else {
      s = shape(2, 8, 2, 1, 600, 24, 20);
      s.qside = s.kside = SIDE_RAGGED;
      s.lq[0] = 1, s.lq[1] = 1, s.lk[0] = 600, s.lk[1] = 130;
      s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s.lse = 1, s.window = 1;
      s.wl = 350, s.wr = -1, s.alibi = 1;
      what = "two varlen decodes of 600 and 130 keys, window";
    }
    lprob P;
    prob_make(&P, &s);
    char desc[640];
    describe(&P.s, what, desc, sizeof desc);
    float *o1 = xmalloc(P.no * sizeof(float));
    float *l1 = xmalloc((P.nl ? P.nl : 1) * sizeof(float));
    for (int si = 0; si < nsets; si++)
      for (int ci = 0; ci < 4; ci++) {
        int nt = counts[ci];
        char extra[32];
        snprintf(extra, sizeof extra, "%d threads", nt);
        set_label(desc, si, SA_ALGO_FUSED, extra);
        sa_context *ctx = t_context_new(sets[si]->name, nt, SA_PIN_NONE, 8, 16);
        if (!ctx) {
          bad++;
          continue;
        }
        bad += prob_run(&P, ctx, SA_ALGO_FUSED);
        sa_context_destroy(ctx);
        if (nt == 1) {
          memcpy(o1, P.go.p, P.no * sizeof(float));
          memcpy(l1, P.gl.p, P.nl * sizeof(float));
          continue;
        }
        int same = memcmp(o1, P.go.p, P.no * sizeof(float)) == 0 &&
                   memcmp(l1, P.gl.p, P.nl * sizeof(float)) == 0;
        CHECK(same, "O or LSE differs from one thread's");
        bad += !same;
      }
    free(o1), free(l1);
    prob_free(&P);
  }
  printf("thread counts 1, 2, 3, 8: %d failures\n", bad);
}

int main(void) {
  t_seed(0x3a9e);
  nsets = t_runnable_sets(sets, MAX_SETS);
  for (int s = 0; s < nsets; s++)
    for (int v = 0; v < N_VAR; v++)
      ctxs[s][v] =
          t_context_new(sets[s]->name, 1, SA_PIN_NONE, var_bq[v], var_bkv[v]);
  test_varlen();
  test_paged();
  test_kv_append();
  test_threads();
  for (int s = 0; s < nsets; s++) {
    for (int v = 0; v < N_VAR; v++)
      sa_context_destroy(ctxs[s][v]);
    printf("%-16s tested: varlen (three-pass, fused), paged (fused, auto; "
           "three-pass refused), kv_append\n",
           sets[s]->name);
  }
  return t_finish("test_layouts");
}
