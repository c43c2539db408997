/*
 * The 0.3 features of sa_attention (additive and boolean masks with any
 * strides, sliding windows, softcap, ALiBi, sinks, per-batch valid lengths,
 * the log-sum-exp output) and sa_attention_merge / sa_alibi_slopes, on every
 * kernel set this CPU can run and both algorithms, against the
 * double-precision reference in reference.h, written from the header's
 * semantics alone (it shares no code with the library's key-range logic, so
 * a wrong range there shows).
 *
 * Contexts use one thread and small tiles (block_q 4..16, block_kv 8..32)
 * so that tiles and key blocks end mid-window and mid-mask; one variant keeps
 * the library's defaults. Q, K, V, masks, O and LSE all end at a guard page;
 * O and LSE start NaN-filled: every output element must be written, every gap
 * a layout leaves must still be NaN.
 *
 * Sections: each feature alone; mask strides that broadcast or are not
 * contiguous along keys; rows every feature leaves without a key (exact
 * zeros, LSE -inf or the sink); all features combined over random shapes;
 * attention split along keys and merged; bit-identical results over thread
 * counts; the ALiBi slopes; a one-part merge.
 */
#include "tests/reference.h"
#include "tests/testing.h"

#define MAX_SETS 16
#define MAX_HEADS 16
#define MAX_BATCH 4
#define MAX_PARTS 4
#define N_VARIANTS 4

static const sa_kernel_set *sets[MAX_SETS];
static int nsets;
/* per set: contexts of one thread and these tile sizes (0 = default) */
static sa_context *ctxs[MAX_SETS][N_VARIANTS];
static const size_t variant_bq[N_VARIANTS] = {4, 5, 16, 0};
static const size_t variant_bkv[N_VARIANTS] = {8, 13, 32, 0};
/* Rotates the tile variant: problem n runs set s on variant (n + s) % 4, so
 * every set meets every variant with both algorithms. */
static unsigned problem_counter;
static char label[512];

/* ------------------------------------------------------------- layouts */

static t_layout make_layout(int kind, size_t b, size_t h, size_t l, size_t d) {
  return t_make_layout(kind, b, h, l, d, 2);
}

/* LSE: 0 packed given as zeros, 1 [B,L,H], 2 padded (gaps everywhere) */
static t_layout make_lse_layout(int kind, size_t b, size_t h, size_t l) {
  t_layout x;
  switch (kind) {
  case 0:
    x.st = (sa_strides){0, 0, 0};
    x.rs = (sa_strides){h * l, l, 1};
    break;
  case 1:
    x.rs = x.st = (sa_strides){l * h, 1, h};
    break;
  default:
    x.rs = x.st = (sa_strides){h * (2 * l + 1), 2 * l + 1, 2};
    break;
  }
  x.floats =
      (b - 1) * x.rs.batch + (h - 1) * x.rs.head + (l - 1) * x.rs.seq + 1;
  return x;
}

/* Mask layouts. The last three are not contiguous along keys: the driver
 * gathers their rows (in decode too, where len_q = 1 makes a transposed
 * mask contiguous again, ML_KEY2 still is not). */
enum {
  ML_PACKED,      /* all strides zero: [B, Hq, Lq, keys] */
  ML_ROWS,        /* PyTorch [Lq, keys]: {0, 0, keys, 1} */
  ML_PAD,         /* padding mask [B, 1, 1, keys]: {keys, 0, 0, 1} */
  ML_HEADS_BCAST, /* [B, 1, Lq, keys] with padded rows */
  ML_TRANSPOSED,  /* [B, Hq, keys, Lq]: key stride Lq, row stride 1 */
  ML_TRANS_BCAST, /* [keys, Lq] broadcast over batch and heads */
  ML_KEY2,        /* every other element along keys */
  ML_KINDS
};
static const char *ml_names[ML_KINDS] = {
    "packed",     "[Lq,K]", "[B,1,1,K]",   "[B,1,Lq,K+3]",
    "[B,H,K,Lq]", "[K,Lq]", "key stride 2"};

typedef struct mlayout {
  sa_mask_layout ml; /* as passed */
  sa_mask_layout rs; /* resolved: explicit strides, keys never 0 */
  size_t elems;
} mlayout;

static mlayout make_mask_layout(int kind, size_t b, size_t h, size_t lq,
                                size_t lkv, size_t keys) {
  size_t k = keys ? keys : lkv;
  sa_mask_layout s;
  switch (kind) {
  case ML_PACKED:
    s = (sa_mask_layout){h * lq * k, lq * k, k, 1, k};
    break;
  case ML_ROWS:
    s = (sa_mask_layout){0, 0, k, 1, k};
    break;
  case ML_PAD:
    s = (sa_mask_layout){k, 0, 0, 1, k};
    break;
  case ML_HEADS_BCAST:
    s = (sa_mask_layout){lq * (k + 3), 0, k + 3, 1, k};
    break;
  case ML_TRANSPOSED:
    s = (sa_mask_layout){h * k * lq, k * lq, 1, lq, k};
    break;
  case ML_TRANS_BCAST:
    s = (sa_mask_layout){0, 0, 1, lq, k};
    break;
  default:
    s = (sa_mask_layout){h * lq * 2 * k, lq * 2 * k, 2 * k, 2, k};
    break;
  }
  mlayout m;
  m.rs = s;
  m.ml = s;
  m.ml.keys = keys;
  if (kind == ML_PACKED)
    m.ml = (sa_mask_layout){0, 0, 0, 0, keys};
  m.elems = (b - 1) * s.batch + (h - 1) * s.head + (lq - 1) * s.row +
            (k - 1) * s.key + 1;
  return m;
}

/* ------------------------------------------------------------ problems */

/* What a problem has, before its random contents are drawn. */
typedef struct spec {
  size_t batch, heads_q, heads_kv, len_q, len_kv, dim_qk, dim_v;
  float scale;
  sa_mask mask;
  int layout_qo, layout_kv; /* make_layout's kinds */
  int add, boolm;           /* mask layout kind + 1; 0: no such mask */
  size_t add_keys, bool_keys;
  int add_ninf_pct, bool_false_pct;
  int window;
  int64_t wl, wr;
  float softcap;
  int alibi; /* 1: sa_alibi_slopes, 2: random, either sign */
  int sinks; /* 1: random, 2: some heads -inf, 3: all -inf */
  int valid; /* 1: valid_v, 2: random (0, len_kv or between) */
  int64_t valid_v[MAX_BATCH];
  int lse;     /* make_lse_layout's kind + 1; 0: no LSE */
  int kill;    /* 1: one row's boolean mask all 0, 2: its additive all -inf */
  int pattern; /* masks hold causality (bool) and ALiBi (add), for splits */
} spec;

typedef struct problem {
  spec sp;
  view w;
  t_layout lo, ll;
  guarded gq, gk, gv, go, gl, gadd, gbool;
  float slopes[MAX_HEADS], sinks[MAX_HEADS];
  int64_t valid[MAX_BATCH];
  refs r;
} problem;

static spec shape(size_t b, size_t hq, size_t hkv, size_t lq, size_t lkv,
                  size_t dq, size_t dv) {
  spec s;
  memset(&s, 0, sizeof s);
  s.batch = b, s.heads_q = hq, s.heads_kv = hkv, s.len_q = lq, s.len_kv = lkv;
  s.dim_qk = dq, s.dim_v = dv;
  return s;
}

static void prob_make(problem *P, const spec *s) {
  memset(P, 0, sizeof *P);
  P->sp = *s;
  view *w = &P->w;
  sa_attention_desc *d = &w->d;
  sa_attention_desc_init(d);
  d->batch = s->batch, d->heads_q = s->heads_q, d->heads_kv = s->heads_kv;
  d->len_q = s->len_q, d->len_kv = s->len_kv;
  d->dim_qk = s->dim_qk, d->dim_v = s->dim_v;
  d->scale = s->scale;
  d->mask = s->mask;
  size_t B = s->batch, Hq = s->heads_q, Lq = s->len_q, Lkv = s->len_kv;
  t_layout lq = make_layout(s->layout_qo, B, Hq, Lq, s->dim_qk);
  t_layout lk = make_layout(s->layout_kv, B, s->heads_kv, Lkv, s->dim_qk);
  t_layout lv = make_layout(s->layout_kv, B, s->heads_kv, Lkv, s->dim_v);
  P->lo = make_layout(s->layout_qo, B, Hq, Lq, s->dim_v);
  d->q = lq.st, d->k = lk.st, d->v = lv.st, d->o = P->lo.st;
  w->qs = lq.rs, w->ks = lk.rs, w->vs = lv.rs, w->os = P->lo.rs;
  P->gq = g_alloc(lq.floats);
  P->gk = g_alloc(lk.floats);
  P->gv = g_alloc(lv.floats);
  P->go = g_alloc(P->lo.floats);
  t_fill(P->gq.p, lq.floats, -1, 1);
  t_fill(P->gk.p, lk.floats, -1, 1);
  t_fill(P->gv.p, lv.floats, -2, 2);
  w->q = P->gq.p, w->k = P->gk.p, w->v = P->gv.p;

  if (s->add) {
    mlayout m = make_mask_layout(s->add - 1, B, Hq, Lq, Lkv, s->add_keys);
    P->gadd = g_alloc(m.elems);
    for (size_t x = 0; x < m.elems; x++)
      P->gadd.p[x] = (int)(t_next() % 100) < s->add_ninf_pct ? -INFINITY
                                                             : t_uniform(-2, 2);
    d->mask_add = P->gadd.p;
    d->mask_add_layout = m.ml;
    w->add_at = m.rs;
  }
  if (s->boolm) {
    mlayout m = make_mask_layout(s->boolm - 1, B, Hq, Lq, Lkv, s->bool_keys);
    size_t nf = (m.elems + 3) / 4;
    P->gbool = g_alloc(nf);
    /* the last byte right before the guard page */
    uint8_t *keep = (uint8_t *)P->gbool.p + (nf * 4 - m.elems);
    for (size_t x = 0; x < m.elems; x++) /* any nonzero byte attends */
      keep[x] = (int)(t_next() % 100) < s->bool_false_pct
                    ? 0
                    : (uint8_t)(1 + t_next() % 255);
    d->mask_bool = keep;
    d->mask_bool_layout = m.ml;
    w->bool_at = m.rs;
  }
  if (s->alibi) {
    if (s->alibi == 1)
      CHECK(sa_alibi_slopes(Hq, P->slopes) == SA_OK, "sa_alibi_slopes");
    else
      for (size_t h = 0; h < Hq; h++)
        P->slopes[h] = t_uniform(-0.3f, 0.3f);
    d->alibi_slopes = P->slopes;
  }
  /* Split attention expresses what depends on len_kv through the masks:
   * causality (bottom-right) in the boolean one, ALiBi in the additive. */
  if (s->pattern) {
    int64_t off = (int64_t)Lkv - (int64_t)Lq;
    for (size_t b = 0; b < B; b++)
      for (size_t h = 0; h < Hq; h++)
        for (size_t i = 0; i < Lq; i++)
          for (size_t j = 0; j < Lkv; j++) {
            int64_t dist = (int64_t)j - ((int64_t)i + off);
            if (d->mask_bool)
              ((uint8_t *)d->mask_bool)[mask_at(&w->bool_at, b, h, i, j)] =
                  dist <= 0 && t_next() % 10 != 0;
            if (d->mask_add)
              P->gadd.p[mask_at(&w->add_at, b, h, i, j)] =
                  t_next() % 10 == 0 ? -INFINITY
                                     : (float)(-0.25 * (double)(h + 1) /
                                               (double)Hq * (double)dist);
          }
  }
  if (s->kill) { /* one row that no key survives */
    size_t b = B - 1, h = Hq - 1, i = Lq / 2;
    if (s->kill == 1)
      for (size_t j = 0; j < w->bool_at.keys; j++)
        ((uint8_t *)d->mask_bool)[mask_at(&w->bool_at, b, h, i, j)] = 0;
    else
      for (size_t j = 0; j < w->add_at.keys; j++)
        P->gadd.p[mask_at(&w->add_at, b, h, i, j)] = -INFINITY;
  }
  d->window = s->window;
  d->window_left = s->wl;
  d->window_right = s->wr;
  d->softcap = s->softcap;
  if (s->sinks) {
    for (size_t h = 0; h < Hq; h++)
      P->sinks[h] = s->sinks == 3 || (s->sinks == 2 && h % 3 == 1)
                        ? -INFINITY
                        : t_uniform(-1, 3);
    d->sinks = P->sinks;
  }
  if (s->valid) {
    for (size_t b = 0; b < B; b++) {
      int64_t v = s->valid_v[b];
      if (s->valid == 2) {
        unsigned kind = (unsigned)(t_next() % 4);
        v = kind == 0 ? 0 : kind == 1 ? (int64_t)Lkv : (int64_t)t_range(0, Lkv);
      }
      P->valid[b] = v < 0 ? 0 : v > (int64_t)Lkv ? (int64_t)Lkv : v;
    }
    d->len_kv_valid = P->valid;
  }
  if (s->lse) {
    P->ll = make_lse_layout(s->lse - 1, B, Hq, Lq);
    P->gl = g_alloc(P->ll.floats);
    d->lse = P->gl.p;
    d->lse_at = P->ll.st;
    w->ls = P->ll.rs;
  }
  refs_compute(w, &P->r);
}

static void prob_free(problem *P) {
  g_free(&P->gq), g_free(&P->gk), g_free(&P->gv), g_free(&P->go);
  g_free(&P->gl), g_free(&P->gadd), g_free(&P->gbool);
  refs_free(&P->r);
}

static void describe(const spec *s, const char *what, char *buf, size_t n) {
  snprintf(buf, n,
           "%s: B%zu Hq%zu Hkv%zu Lq%zu Lkv%zu d%zu/%zu scale%g mask%d "
           "lay%d/%d add%d(k%zu) bool%d(k%zu) win%d(%lld,%lld) cap%g alibi%d "
           "sinks%d valid%d lse%d",
           what, s->batch, s->heads_q, s->heads_kv, s->len_q, s->len_kv,
           s->dim_qk, s->dim_v, (double)s->scale, (int)s->mask, s->layout_qo,
           s->layout_kv, s->add, s->add_keys, s->boolm, s->bool_keys, s->window,
           (long long)s->wl, (long long)s->wr, (double)s->softcap, s->alibi,
           s->sinks, s->valid, s->lse);
}

static void set_label(const char *what, int set, int algo, const char *extra) {
  snprintf(label, sizeof label, "%s | %s %s %s", what, sets[set]->name,
           algo == SA_ALGO_FUSED ? "fused" : "3pass", extra);
  t_context = label;
}

/* One call on ctx: O and LSE NaN first, then checked. 1 on failure. */
static int prob_run(problem *P, sa_context *ctx, int algo) {
  for (size_t x = 0; x < P->lo.floats; x++)
    P->go.p[x] = NAN;
  for (size_t x = 0; P->gl.p && x < P->ll.floats; x++)
    P->gl.p[x] = NAN;
  sa_attention_desc d = P->w.d;
  d.algorithm = (sa_algorithm)algo;
  sa_status st = sa_attention(ctx, &d, P->w.q, P->w.k, P->w.v, P->go.p);
  CHECK(st == SA_OK, "sa_attention: %s (%s)", sa_status_str(st),
        sa_last_error());
  if (st != SA_OK)
    return 1;
  return check_result(&P->w, &P->r, P->go.p, P->lo.floats, P->gl.p,
                      P->ll.floats);
}

/* Every set, both algorithms, tile variants rotating. 1 if any failed. */
static int run_all(problem *P, const char *what) {
  char desc[384], extra[64];
  describe(&P->sp, what, desc, sizeof desc);
  int bad = 0;
  for (int s = 0; s < nsets; s++)
    for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
      int v = (int)((problem_counter + (unsigned)s) % N_VARIANTS);
      snprintf(extra, sizeof extra, "bq%zu bkv%zu", variant_bq[v],
               variant_bkv[v]);
      set_label(desc, s, algo, extra);
      if (ctxs[s][v])
        bad |= prob_run(P, ctxs[s][v], algo);
    }
  problem_counter++;
  return bad;
}

/* ----------------------------------------------------- 1. each alone */

static spec base_shape(int k) {
  switch (k) {
  case 0:
    return shape(2, 4, 2, 19, 37, 16, 12);
  case 1:
    return shape(1, 3, 3, 40, 40, 33, 8);
  case 2: /* decode: the query heads of a KV group are the tile's rows */
    return shape(2, 6, 2, 1, 50, 20, 24);
  default: /* more queries than keys */
    return shape(1, 2, 1, 33, 9, 7, 17);
  }
}

#define N_ALONE 24

/* Turns on one feature (or one setting of it); returns its name. */
static const char *alone(spec *s, int f) {
  int64_t L = (int64_t)s->len_kv;
  switch (f) {
  case 0:
    s->add = ML_PACKED + 1, s->add_ninf_pct = 20;
    return "additive mask";
  case 1:
    s->boolm = ML_PACKED + 1, s->bool_false_pct = 30;
    return "boolean mask";
  case 2:
    s->window = 1, s->wl = 3, s->wr = -1;
    return "window left 3";
  case 3:
    s->window = 1, s->wl = -1, s->wr = 2;
    return "window right 2";
  case 4:
    s->window = 1, s->wl = 4, s->wr = 1;
    return "window 4/1";
  case 5:
    s->window = 1, s->wl = 0, s->wr = 6;
    return "window left 0";
  case 6:
    s->window = 1, s->wl = 5, s->wr = 0;
    return "window right 0";
  case 7:
    s->window = 1, s->wl = 0, s->wr = 0;
    return "window 0/0 (the diagonal only)";
  case 8:
    s->window = 1, s->wl = 1000, s->wr = 1000;
    return "window wider than the sequence";
  case 9:
    s->window = 1, s->wl = -1, s->wr = -1;
    return "window -1/-1";
  case 10:
    s->softcap = 1.5f, s->scale = 2.5f; /* logits reach past the cap */
    return "softcap";
  case 11:
    s->alibi = 1;
    return "ALiBi, sa_alibi_slopes";
  case 12:
    s->alibi = 2;
    return "ALiBi, random slopes";
  case 13:
    s->sinks = 2;
    return "sinks, some -inf";
  case 14:
    s->sinks = 3;
    return "sinks all -inf";
  case 15:
    s->valid = 1, s->valid_v[0] = L / 2 + 1, s->valid_v[1] = 0;
    return "len_kv_valid (and 0)";
  case 16:
    s->valid = 1, s->valid_v[0] = L, s->valid_v[1] = L / 3;
    return "len_kv_valid (len_kv)";
  case 17:
    s->lse = 1;
    return "LSE packed";
  case 18:
    s->lse = 2;
    return "LSE [B,L,H]";
  case 19:
    s->lse = 3;
    return "LSE padded";
  case 20:
    s->mask = SA_MASK_CAUSAL_TOP_LEFT, s->lse = 1;
    return "causal top-left with LSE";
  case 21:
    s->mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s->lse = 1;
    return "causal bottom-right with LSE";
  case 22:
    s->mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s->window = 1, s->wl = 2, s->wr = -1;
    return "window left 2 on bottom-right causal";
  default:
    s->mask = SA_MASK_CAUSAL_BOTTOM_RIGHT, s->valid = 1;
    s->valid_v[0] = L - 3 > 0 ? L - 3 : 0, s->valid_v[1] = L / 2;
    return "len_kv_valid aligning bottom-right causal";
  }
}

static void test_alone(void) {
  int bad = 0, n = 0;
  for (int k = 0; k < 4; k++)
    for (int f = 0; f < N_ALONE; f++) {
      spec s = base_shape(k);
      s.layout_qo = k % 3, s.layout_kv = (k + 1) % 3;
      const char *what = alone(&s, f);
      problem P;
      prob_make(&P, &s);
      bad += run_all(&P, what);
      prob_free(&P);
      n++;
    }
  printf("features alone: %d problems, %d failed\n", n, bad);
}

/* ------------------------------------------- 3. mask strides, extents */

static void test_mask_layouts(void) {
  int bad = 0, n = 0;
  static const int shapes[] = {0, 2, 3};
  for (int k = 0; k < 3; k++)
    for (int kind = 0; kind < ML_KINDS + 2; kind++)
      for (int which = 0; which < 3; which++) { /* add, bool, both */
        spec s = base_shape(shapes[k]);
        s.layout_qo = 1;
        /* two more kinds: a packed and a [Lq, K] mask shorter than len_kv,
         * the keys past them masked */
        int ml = kind < ML_KINDS    ? kind
                 : kind == ML_KINDS ? ML_PACKED
                                    : ML_ROWS;
        size_t keys = kind < ML_KINDS    ? 0
                      : kind == ML_KINDS ? (s.len_kv > 6 ? s.len_kv - 5 : 1)
                                         : s.len_kv / 2 + 1;
        if (which != 1)
          s.add = ml + 1, s.add_keys = keys, s.add_ninf_pct = 25;
        if (which != 0)
          s.boolm = ml + 1, s.bool_keys = keys, s.bool_false_pct = 25;
        if (which == 2 && keys > 3) /* the shorter of the two decides */
          s.bool_keys = keys - 2;
        char what[96];
        snprintf(what, sizeof what, "mask layout %s keys %zu",
                 kind < ML_KINDS ? ml_names[kind] : "short", keys);
        problem P;
        prob_make(&P, &s);
        bad += run_all(&P, what);
        prob_free(&P);
        n++;
      }
  printf("mask layouts: %d problems, %d failed\n", n, bad);
}

/* ------------------------------------------------ 4. rows with no key */

/* Each feature alone leaving some rows without a key: exact zeros, LSE
 * -inf, or exactly the sink when the head has one. */
static void test_empty_rows(void) {
  int bad = 0, n = 0;
  for (int f = 0; f < 9; f++)
    for (int sink = 0; sink < 2; sink++) {
      spec s;
      const char *what;
      switch (f) {
      case 0:
        s = base_shape(0);
        s.boolm = ML_PACKED + 1, s.bool_false_pct = 20, s.kill = 1;
        what = "a boolean mask row all 0";
        break;
      case 1:
        s = base_shape(0);
        s.add = ML_PACKED + 1, s.add_ninf_pct = 20, s.kill = 2;
        what = "an additive mask row all -inf";
        break;
      case 2:
        s = base_shape(0);
        s.valid = 1, s.valid_v[0] = (int64_t)s.len_kv, s.valid_v[1] = 0;
        what = "len_kv_valid 0";
        break;
      case 3: /* rows i >= 14 need keys j >= i - 1 > 11 */
        s = shape(1, 2, 2, 30, 12, 9, 5);
        s.window = 1, s.wl = 1, s.wr = -1;
        what = "a window past the last key";
        break;
      case 4:
        s = shape(2, 3, 1, 20, 7, 8, 8);
        s.mask = SA_MASK_CAUSAL_BOTTOM_RIGHT;
        what = "bottom-right causal, more queries than keys";
        break;
      case 5: /* rows i >= 6 need keys j >= i - 2 >= 4 */
        s = shape(1, 2, 1, 12, 20, 8, 6);
        s.boolm = ML_ROWS + 1, s.bool_keys = 4;
        s.window = 1, s.wl = 2, s.wr = -1;
        what = "a boolean mask of 4 keys under a window";
        break;
      case 6:
        s = shape(1, 2, 1, 12, 20, 8, 6);
        s.add = ML_PAD + 1, s.add_keys = 3;
        s.window = 1, s.wl = 1, s.wr = -1;
        what = "an additive mask of 3 keys under a window";
        break;
      case 7:
        s = base_shape(2);
        s.boolm = ML_PACKED + 1, s.kill = 1;
        what = "decode, a boolean mask row all 0";
        break;
      default:
        s = base_shape(2);
        s.valid = 1, s.valid_v[0] = (int64_t)s.len_kv, s.valid_v[1] = 0;
        what = "decode, len_kv_valid 0";
        break;
      }
      s.lse = 1 + f % 3;
      s.sinks = sink ? 2 : 0;
      s.layout_qo = f % 3;
      problem P;
      prob_make(&P, &s);
      t_context = what;
      CHECK(P.r.empty > 0, "the case leaves no row without keys");
      bad += run_all(&P, what);
      prob_free(&P);
      n++;
    }
  printf("rows with no key: %d problems, %d failed\n", n, bad);
}

/* ------------------------------------------------ 2. all combined */

static size_t pick(const size_t *a, size_t n) { return a[t_next() % n]; }

static const size_t lens[] = {1, 2, 3, 5, 8, 13, 17, 31, 40, 64, 70};
static const size_t dims[] = {1, 3, 8, 16, 17, 33, 40};
#define N_LENS (sizeof lens / sizeof lens[0])
#define N_DIMS (sizeof dims / sizeof dims[0])

/* A random shape. The draws are sequenced statements, not arguments of
 * one call (whose order of evaluation is the compiler's): every platform
 * draws the same cases. split: len_kv of at least 2, for a split. */
static spec random_shape(size_t max_hkv, int split) {
  size_t hkv = t_range(1, max_hkv);
  size_t b = t_range(1, 2);
  size_t hq = hkv * t_range(1, 3);
  size_t lq = pick(lens, N_LENS);
  size_t lkv = split ? t_range(2, 70) : pick(lens, N_LENS);
  size_t dq = pick(dims, N_DIMS);
  size_t dv = pick(dims, N_DIMS);
  return shape(b, hq, hkv, lq, lkv, dq, dv);
}

/* Every feature, each on at random (all of them when `all`). */
static spec random_spec(int id, int all) {
  spec s = random_shape(3, 0);
  size_t hkv = s.heads_kv;
  if (id % 6 == 0) /* decode */
    s.len_q = 1, s.heads_q = hkv * t_range(2, 4);
  s.scale = id % 3 == 0 ? 0.0f : t_uniform(0.3f, 2.5f);
  s.mask = (sa_mask)(t_next() % 3);
  s.layout_qo = (int)(t_next() % 3), s.layout_kv = (int)(t_next() % 3);
  if (all || t_next() % 10 < 7) {
    s.add = 1 + (int)(t_next() % ML_KINDS);
    s.add_keys = t_next() % 4 == 0 ? t_range(1, s.len_kv) : 0;
    s.add_ninf_pct = (int)t_range(0, 30);
  }
  if (all || t_next() % 10 < 7) {
    s.boolm = 1 + (int)(t_next() % ML_KINDS);
    s.bool_keys = t_next() % 4 == 0 ? t_range(1, s.len_kv) : 0;
    s.bool_false_pct = (int)t_range(0, 30);
  }
  if (all || t_next() % 2) {
    s.window = 1;
    s.wl = t_next() % 4 == 0 ? -1 : (int64_t)t_range(0, s.len_kv);
    s.wr = t_next() % 4 == 0 ? -1 : (int64_t)t_range(0, s.len_kv);
  }
  if (all || t_next() % 2)
    s.softcap = t_uniform(0.5f, 5.0f);
  if (all || t_next() % 2)
    s.alibi = 1 + (int)(t_next() % 2);
  if (all || t_next() % 2)
    s.sinks = 1 + (int)(t_next() % 2);
  if (all || t_next() % 2)
    s.valid = 2;
  if (all || t_next() % 10 < 7)
    s.lse = 1 + (int)(t_next() % 3);
  return s;
}

static void test_combined(void) {
  int bad = 0, cases = 120;
  for (int id = 0; id < cases; id++) {
    spec s = random_spec(id, id % 4 == 0);
    char what[48];
    snprintf(what, sizeof what, "combined case %d", id);
    problem P;
    prob_make(&P, &s);
    bad += run_all(&P, what);
    prob_free(&P);
  }
  printf("all features combined: %d cases, %d failed\n", cases, bad);
}

/* ------------------------------------------- 5. split keys, merge */

/*
 * Attention over keys [0, len_kv) against the merge of attention over parts
 * [j0, j1): K, V and the masks' key dimension offset by j0, len_kv = j1 - j0,
 * len_kv_valid clipped to the part, the sinks in one part only. Causality
 * and ALiBi depend on len_kv (the diagonal), so here they live in the
 * boolean and additive masks under SA_MASK_NONE.
 *
 * Tolerance of the merged row, from the parts' own references: with w_k
 * the true weight exp(lse_k - lse) of part k, each part's error tol_k enters
 * as sum_k w_k tol_k; each part's LSE error (at most F, the largest part
 * lse_tol) perturbs the weights by a factor within e^{+-2F}, moving the
 * output by at most (e^{2F} - 1) sum_k w_k |o_k - o| <= (e^{2F} - 1) x the
 * row's spread sum_j p_j |v_j - o|; the merge itself rounds a few u per part
 * (exp, sum, divide, multiply-add). Its LSE: F plus that rounding.
 * Against the unsplit result the two tolerances add.
 */
static void test_merge_split(void) {
  int bad = 0, cases = 32;
  size_t part_empty = 0;
  for (int id = 0; id < cases; id++) {
    spec s = random_shape(2, 1);
    s.scale = id % 2 ? 0.0f : t_uniform(0.3f, 2.5f);
    s.layout_qo = id % 2, s.layout_kv = (int)(t_next() % 3);
    s.pattern = 1;
    if (id % 3 != 2)
      s.boolm = 1 + (int)(t_next() % ML_KINDS);
    if (id % 3 != 1)
      s.add = 1 + (int)(t_next() % ML_KINDS);
    if (id % 2)
      s.softcap = t_uniform(1.0f, 4.0f);
    s.sinks = id % 3 == 0 ? 1 : id % 3 == 1 ? 2 : 0;
    s.valid = id % 4 == 0 ? 2 : 0;
    s.lse = 1 + (int)(t_next() % 2);
    problem P;
    prob_make(&P, &s);
    const view *w = &P.w;
    size_t Lkv = s.len_kv, dv = s.dim_v, rows = P.r.rows;

    /* the parts: np non-empty key ranges */
    size_t np = t_range(2, MAX_PARTS), cut[MAX_PARTS + 1];
    np = np < Lkv ? np : Lkv;
    cut[0] = 0, cut[np] = Lkv;
    for (size_t k = 1; k < np; k++)
      cut[k] = t_range(cut[k - 1] + 1, Lkv - (np - k));
    size_t sink_part = t_next() % np;
    view pv[MAX_PARTS];
    refs pr[MAX_PARTS];
    int64_t pvalid[MAX_PARTS][MAX_BATCH];
    for (size_t k = 0; k < np; k++) {
      size_t j0 = cut[k], nk = cut[k + 1] - cut[k];
      view *u = &pv[k];
      *u = *w;
      sa_attention_desc *d = &u->d;
      d->len_kv = nk;
      d->k = w->ks, d->v = w->vs; /* packed strides would follow len_kv */
      u->k = w->k + j0 * w->ks.seq;
      u->v = w->v + j0 * w->vs.seq;
      if (d->mask_add) {
        d->mask_add = w->d.mask_add + j0 * w->add_at.key;
        u->add_at.keys = nk;
        d->mask_add_layout = u->add_at;
      }
      if (d->mask_bool) {
        d->mask_bool = w->d.mask_bool + j0 * w->bool_at.key;
        u->bool_at.keys = nk;
        d->mask_bool_layout = u->bool_at;
      }
      if (d->len_kv_valid) {
        for (size_t b = 0; b < s.batch; b++) {
          int64_t v = P.valid[b] - (int64_t)j0;
          pvalid[k][b] = v < 0 ? 0 : v > (int64_t)nk ? (int64_t)nk : v;
        }
        d->len_kv_valid = pvalid[k];
      }
      d->sinks = k == sink_part ? w->d.sinks : NULL;
      refs_compute(u, &pr[k]);
      for (size_t r = 0; r < rows; r++)
        part_empty += pr[k].lse[r] == -INFINITY;
    }

    /* the merged row's reference: the whole row's, with the tolerance
     * above */
    refs mr = P.r;
    mr.tol = malloc(rows * dv * sizeof(double));
    mr.lse_tol = malloc(rows * sizeof(double));
    for (size_t r = 0; r < rows; r++) {
      double F = 0.0, wt[MAX_PARTS];
      for (size_t k = 0; k < np; k++) {
        wt[k] =
            pr[k].lse[r] != -INFINITY ? exp(pr[k].lse[r] - P.r.lse[r]) : 0.0;
        F = pr[k].lse_tol[r] > F ? pr[k].lse_tol[r] : F;
      }
      for (size_t c = 0; c < dv; c++) {
        size_t e = r * dv + c;
        double t = 0.0;
        for (size_t k = 0; k < np; k++)
          t += wt[k] * pr[k].tol[e];
        mr.tol[e] = t + 1.5 * expm1(2 * F) * P.r.spread[e] +
                    4.0 * ((double)np + 4) * U_F32 * P.r.mag[e] + 1e-30;
      }
      mr.lse_tol[r] = F + 4.0 * ((double)np + 4) * U_F32 +
                      4 * U_F32 * fabs(P.r.lse[r]) + 1e-30;
    }

    char desc[384], extra[96];
    describe(&s, "split and merged", desc, sizeof desc);
    float *full_o = malloc(P.lo.floats * sizeof(float));
    float *full_l = malloc(P.ll.floats * sizeof(float));
    for (int si = 0; si < nsets; si++)
      for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
        int v = (int)((problem_counter + (unsigned)si) % N_VARIANTS);
        int mode = (id + si + algo) % 3; /* out apart, in place, no LSE */
        size_t inplace = (size_t)(id + si) % np;
        snprintf(extra, sizeof extra,
                 "bq%zu bkv%zu, %zu parts at %zu %zu %zu, "
                 "merge mode %d",
                 variant_bq[v], variant_bkv[v], np, cut[1], cut[np > 2 ? 2 : 1],
                 cut[np > 3 ? 3 : 1], mode);
        set_label(desc, si, algo, extra);
        sa_context *ctx = ctxs[si][v];
        if (!ctx)
          continue;
        int b0 = prob_run(&P, ctx, algo);
        memcpy(full_o, P.go.p, P.lo.floats * sizeof(float));
        memcpy(full_l, P.gl.p, P.ll.floats * sizeof(float));

        guarded og[MAX_PARTS], lg[MAX_PARTS];
        const float *ops[MAX_PARTS], *lps[MAX_PARTS];
        for (size_t k = 0; k < np; k++) {
          og[k] = g_alloc(P.lo.floats);
          lg[k] = g_alloc(P.ll.floats);
          for (size_t x = 0; x < P.lo.floats; x++)
            og[k].p[x] = NAN;
          for (size_t x = 0; x < P.ll.floats; x++)
            lg[k].p[x] = NAN;
          sa_attention_desc d = pv[k].d;
          d.algorithm = (sa_algorithm)algo;
          d.lse = lg[k].p;
          sa_status st =
              sa_attention(ctx, &d, pv[k].q, pv[k].k, pv[k].v, og[k].p);
          CHECK(st == SA_OK, "part %zu: %s (%s)", k, sa_status_str(st),
                sa_last_error());
          b0 |= st != SA_OK || check_result(&pv[k], &pr[k], og[k].p,
                                            P.lo.floats, lg[k].p, P.ll.floats);
          ops[k] = og[k].p;
          lps[k] = lg[k].p;
        }

        guarded mo = {NULL, NULL, 0}, ml = {NULL, NULL, 0};
        float *out_o, *out_l;
        if (mode == 1) {
          out_o = og[inplace].p;
          out_l = lg[inplace].p;
        } else {
          mo = g_alloc(P.lo.floats);
          for (size_t x = 0; x < P.lo.floats; x++)
            mo.p[x] = NAN;
          out_o = mo.p;
          out_l = NULL;
          if (mode == 0) {
            ml = g_alloc(P.ll.floats);
            for (size_t x = 0; x < P.ll.floats; x++)
              ml.p[x] = NAN;
            out_l = ml.p;
          }
        }
        sa_merge_desc md;
        sa_merge_desc_init(&md);
        md.batch = s.batch, md.heads = s.heads_q, md.len_q = s.len_q;
        md.dim_v = dv, md.parts = np;
        md.o = P.lo.st, md.lse = P.ll.st;
        sa_status st = sa_attention_merge(&md, ops, lps, out_o, out_l);
        CHECK(st == SA_OK, "merge: %s (%s)", sa_status_str(st),
              sa_last_error());
        if (st == SA_OK) {
          b0 |= check_result(w, &mr, out_o, P.lo.floats, out_l, P.ll.floats);
          /* and against the unsplit call: both tolerances */
          size_t r = 0, nbad = 0;
          for (size_t b = 0; b < s.batch; b++)
            for (size_t h = 0; h < s.heads_q; h++)
              for (size_t i = 0; i < s.len_q; i++, r++) {
                size_t at = b * w->os.batch + h * w->os.head + i * w->os.seq;
                for (size_t c = 0; c < dv; c++)
                  nbad +=
                      !(fabs(out_o[at + c] - full_o[at + c]) <=
                        mr.tol[r * dv + c] + P.r.tol[r * dv + c]) &&
                      !(P.r.nvis[r] == 0 && out_o[at + c] == full_o[at + c]);
                size_t la = b * w->ls.batch + h * w->ls.head + i * w->ls.seq;
                if (out_l)
                  nbad += !(fabs(out_l[la] - full_l[la]) <=
                            mr.lse_tol[r] + P.r.lse_tol[r]) &&
                          !(P.r.nvis[r] == 0 && out_l[la] == full_l[la]);
              }
          CHECK(nbad == 0, "%zu merged elements differ from the unsplit call",
                nbad);
          b0 |= nbad != 0;
        }
        for (size_t k = 0; k < np; k++)
          g_free(&og[k]), g_free(&lg[k]);
        g_free(&mo), g_free(&ml);
        bad += b0;
      }
    problem_counter++;
    free(full_o), free(full_l);
    free(mr.tol), free(mr.lse_tol);
    for (size_t k = 0; k < np; k++)
      refs_free(&pr[k]);
    prob_free(&P);
  }
  t_context = "split and merged";
  CHECK(part_empty > 0, "no part left a row without keys: the -inf LSE merge "
                        "was not exercised");
  printf("split and merged: %d cases, %d runs failed, %zu part rows with "
         "LSE -inf\n",
         cases, bad, part_empty);
}

/* --------------------------------------------------- 6. thread counts */

/* Tiles do not depend on which worker runs them: 1, 2, 3 and 8 threads give
 * the same bits, with every feature on, for both tile shapes (a block of
 * positions, and decode's stacked heads), and for a long decode whose two
 * tiles are split into parts of their keys (split-KV: 600 keys in blocks of
 * 16 give 9 parts per tile, merged by their LSEs in a fixed order). */
static void test_threads(void) {
  int bad = 0;
  static const int counts[] = {1, 2, 3, 8};
  for (int k = 0; k < 3; k++) {
    spec s = k == 0   ? shape(2, 6, 2, 45, 70, 24, 20)
             : k == 1 ? shape(2, 8, 2, 1, 70, 24, 20)
                      : shape(1, 8, 2, 1, 600, 24, 20);
    s.mask = k == 0 ? SA_MASK_CAUSAL_BOTTOM_RIGHT : SA_MASK_CAUSAL_TOP_LEFT;
    s.layout_qo = 1, s.layout_kv = 2;
    s.add = ML_ROWS + 1, s.add_ninf_pct = 15;
    s.boolm = ML_TRANSPOSED + 1, s.bool_false_pct = 20;
    s.window = 1, s.wl = 20, s.wr = 3;
    s.softcap = 3.0f, s.alibi = 1, s.sinks = 2, s.valid = 2, s.lse = 2;
    problem P;
    prob_make(&P, &s);
    char desc[384];
    describe(&s, "threads", desc, sizeof desc);
    float *o1 = malloc(P.lo.floats * sizeof(float));
    float *l1 = malloc(P.ll.floats * sizeof(float));
    for (int si = 0; si < nsets; si++)
      for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++)
        for (int ci = 0; ci < 4; ci++) {
          int nt = counts[ci];
          char extra[32];
          snprintf(extra, sizeof extra, "%d threads", nt);
          set_label(desc, si, algo, extra);
          sa_context *ctx =
              t_context_new(sets[si]->name, nt, SA_PIN_NONE, 8, 16);
          if (!ctx) {
            bad++;
            continue;
          }
          bad += prob_run(&P, ctx, algo);
          sa_context_destroy(ctx);
          if (nt == 1) {
            memcpy(o1, P.go.p, P.lo.floats * sizeof(float));
            memcpy(l1, P.gl.p, P.ll.floats * sizeof(float));
            continue;
          }
          int same = memcmp(o1, P.go.p, P.lo.floats * sizeof(float)) == 0 &&
                     memcmp(l1, P.gl.p, P.ll.floats * sizeof(float)) == 0;
          CHECK(same, "O or LSE differs from one thread's");
          bad += !same;
        }
    free(o1), free(l1);
    prob_free(&P);
  }
  printf("thread counts 1, 2, 3, 8: %d failures\n", bad);
}

/* ----------------------------------------------- ALiBi slopes, merge of 1 */

static void test_alibi_slopes(void) {
  t_context = "sa_alibi_slopes";
  /* Press et al.'s get_slopes(12), written out: get_slopes(8), which is
   * 2^-1 .. 2^-8, then these, slopes 1, 3, 5, 7 (counting from 1) of
   * get_slopes(16) */
  static const double twelve_tail[4] = {
      0.70710678118654752, 0.35355339059327376, 0.17677669529663688,
      0.08838834764831844};
  static const size_t ns[] = {1, 8, 12, 32};
  for (size_t t = 0; t < 4; t++) {
    size_t n = ns[t], p2 = 1;
    float sl[32];
    sa_status st = sa_alibi_slopes(n, sl);
    CHECK(st == SA_OK, "n = %zu: %s", n, sa_status_str(st));
    if (st != SA_OK)
      continue;
    while (p2 * 2 <= n)
      p2 *= 2;
    for (size_t h = 0; h < n; h++) {
      /* 2^(-8(h+1)/p2) for the first p2; then the sequence for 2 p2 at
       * 0-based indices 0, 2, 4, ... */
      double e = h < p2 ? -8.0 * (double)(h + 1) / (double)p2
                        : -8.0 * (double)(2 * (h - p2) + 1) / (double)(2 * p2);
      double want = n != 12 ? exp2(e)
                    : h < 8 ? ldexp(1.0, -(int)h - 1)
                            : twelve_tail[h - 8];
      CHECK(fabs(sl[h] - want) <= U_F32 * want,
            "n = %zu: slope %zu = %.9g, want %.9g", n, h, sl[h], want);
    }
  }
}

/* The fused driver takes scores, the softcap, slopes and sinks in log2
 * units (x log2 e) unless one of them would overflow there: a softcap,
 * slope or sink near FLT_MAX must give what three-pass (base e) gives,
 * finite, not the NaN of inf * 0 or inf - inf. */
static void test_log2_overflow(void) {
  enum { L = 6, D = 8 };
  float q[L * D], k[L * D], v[L * D], big[1] = {3e38f};
  t_fill(q, L * D, -1, 1);
  t_fill(k, L * D, -1, 1);
  t_fill(v, L * D, -2, 2);
  for (int c = 0; c < 3; c++) {
    t_context = c == 0   ? "softcap 3e38 (log2 units overflow)"
                : c == 1 ? "ALiBi slope 3e38 (log2 units overflow)"
                         : "sink 3e38 (log2 units overflow)";
    sa_attention_desc d;
    sa_attention_desc_init(&d);
    d.batch = d.heads_q = d.heads_kv = 1;
    d.len_q = d.len_kv = L, d.dim_qk = d.dim_v = D;
    d.mask = SA_MASK_CAUSAL_TOP_LEFT;
    if (c == 0)
      d.softcap = big[0];
    if (c == 1)
      d.alibi_slopes = big;
    if (c == 2)
      d.sinks = big;
    float lse[2][L];
    d.lse = lse[0];
    for (int si = 0; si < nsets; si++) {
      float o[2][L * D];
      for (int a = 0; a < 2; a++) {
        d.algorithm = a ? SA_ALGO_FUSED : SA_ALGO_THREE_PASS;
        d.lse = lse[a];
        sa_status st = sa_attention(ctxs[si][0], &d, q, k, v, o[a]);
        CHECK(st == SA_OK, "%s: %s (%s)", sets[si]->name, sa_status_str(st),
              sa_last_error());
      }
      size_t bad = 0;
      for (size_t x = 0; x < L * D; x++)
        bad += !isfinite(o[1][x]) || fabsf(o[1][x] - o[0][x]) > 1e-5f;
      for (size_t i = 0; i < L; i++)
        bad += !isfinite(lse[1][i]) ||
               fabsf(lse[1][i] - lse[0][i]) > 1e-5f * (1 + fabsf(lse[0][i]));
      CHECK(bad == 0, "%s: %zu elements of fused O and LSE off three-pass's",
            sets[si]->name, bad);
    }
  }
}

/* One part: the merge is a copy (weight exactly 1), and a row whose LSE is
 * -inf comes out zero with LSE -inf. */
static void test_merge_one(void) {
  t_context = "merge of one part";
  const size_t B = 2, H = 3, L = 5, D = 7, n = B * H * L * D, nl = B * H * L;
  guarded po = g_alloc(n), pl = g_alloc(nl), mo = g_alloc(n), ml = g_alloc(nl);
  t_fill(po.p, n, -3, 3);
  t_fill(pl.p, nl, -5, 5);
  pl.p[4] = -INFINITY;
  sa_merge_desc md;
  sa_merge_desc_init(&md);
  md.batch = B, md.heads = H, md.len_q = L, md.dim_v = D, md.parts = 1;
  const float *ops[1] = {po.p}, *lps[1] = {pl.p};
  sa_status st = sa_attention_merge(&md, ops, lps, mo.p, ml.p);
  CHECK(st == SA_OK, "merge: %s (%s)", sa_status_str(st), sa_last_error());
  size_t bad = 0;
  for (size_t r = 0; st == SA_OK && r < nl; r++) {
    int gone = r == 4;
    bad += gone ? ml.p[r] != -INFINITY : ml.p[r] != pl.p[r];
    for (size_t c = 0; c < D; c++)
      bad += mo.p[r * D + c] != (gone ? 0.0f : po.p[r * D + c]);
  }
  CHECK(bad == 0, "%zu elements are not the part's", bad);
  g_free(&po), g_free(&pl), g_free(&mo), g_free(&ml);
}

int main(void) {
  t_seed(0x300);
  nsets = t_runnable_sets(sets, MAX_SETS);
  for (int s = 0; s < nsets; s++)
    for (int v = 0; v < N_VARIANTS; v++)
      ctxs[s][v] = t_context_new(sets[s]->name, 1, SA_PIN_NONE, variant_bq[v],
                                 variant_bkv[v]);
  test_alibi_slopes();
  test_merge_one();
  test_log2_overflow();
  test_alone();
  test_mask_layouts();
  test_empty_rows();
  test_combined();
  test_merge_split();
  test_threads();
  for (int s = 0; s < nsets; s++) {
    for (int v = 0; v < N_VARIANTS; v++)
      sa_context_destroy(ctxs[s][v]);
    printf("%-16s tested: three-pass and fused\n", sets[s]->name);
  }
  return t_finish("test_features");
}
