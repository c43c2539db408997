/*
 * kernel/<op>/<set>/<tile>: each micro-kernel of every kernel set this CPU
 * runs, on tiles of 64 query rows against 256 or 1024 keys (the drivers'
 * blocks where a core's L2 is small; prefill takes 128 x 512 where it
 * holds them, docs/DESIGN.md "Attention drivers"), at d = 64 and 128.
 *
 *   score, wsum       GFLOPS = 2*m*n*d per call (wsum: with beta = 1, the
 *                     m*d rescale multiplies not counted), % of the set's
 *                     ISA FMA peak
 *   score_upto,       the same on the causal diagonal of a 256-key block
 *   wsum_upto         (row i sees its first n - m + i + 1 keys; 0.13):
 *                     GFLOPS of the keys the rows see, so that the rate
 *                     beside score's and wsum's shows what the skipped
 *                     register tiles save
 *   softmax,          items_per_second = m*n elements per call
 *   softmax_online,
 *   softmax_online2   (base 2: what the fused driver runs on unmodified
 *                     scores; against softmax_online, the exp2's saving)
 *
 * The softmaxes work in place and are timed on their own output
 * call after call (values in [0, 1] after the first): the exps have no
 * value-dependent branches, and restoring the tile each time would cost more
 * than the clock reads of a pause/resume pair on a tile this small.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

enum {
  OP_SCORE,
  OP_SOFTMAX,
  OP_SOFTMAX_ONLINE,
  OP_SOFTMAX_ONLINE2,
  OP_WSUM,
  OP_SCORE_UPTO,
  OP_WSUM_UPTO,
  N_OPS
};
static const char *const op_names[N_OPS] = {
    "score", "softmax",    "softmax_online", "softmax_online2",
    "wsum",  "score_upto", "wsum_upto"};

typedef struct kernel_arg {
  const sa_kernel_set *ks;
  int op;
  size_t m, n, d;
} kernel_arg;

typedef struct tile_data {
  size_t m, n, d;
  float *q, *k, *s, *v, *o, *mx, *l, *alpha, *beta;
  size_t *ends; /* the causal diagonal's: row i sees n - m + i + 1 keys */
} tile_data;

/* One tile's buffers at a time, reallocated when the sizes change. */
static tile_data cur;

static tile_data *tile(size_t m, size_t n, size_t d) {
  if (cur.q && cur.m == m && cur.n == n && cur.d == d)
    return &cur;
  float **bufs[] = {&cur.q,  &cur.k, &cur.s,     &cur.v,   &cur.o,
                    &cur.mx, &cur.l, &cur.alpha, &cur.beta};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    sa_bench_free(*bufs[i]);
  free(cur.ends);
  cur.m = m, cur.n = n, cur.d = d;
  cur.q = sa_bench_alloc(m * d);
  cur.k = sa_bench_alloc(n * d);
  cur.s = sa_bench_alloc(m * n);
  cur.v = sa_bench_alloc(n * d);
  cur.o = sa_bench_alloc(m * d);
  cur.mx = sa_bench_alloc(m);
  cur.l = sa_bench_alloc(m);
  cur.alpha = sa_bench_alloc(m);
  cur.beta = sa_bench_alloc(m);
  sa_bench_fill(cur.q, m * d, 1, 1.0f);
  sa_bench_fill(cur.k, n * d, 2, 1.0f);
  sa_bench_fill(cur.v, n * d, 3, 1.0f);
  cur.ends = malloc(m * sizeof *cur.ends);
  if (!cur.ends)
    abort();
  for (size_t i = 0; i < m; i++) {
    cur.beta[i] = 1.0f;
    cur.ends[i] = n > m ? n - m + i + 1 : i + 1 < n ? i + 1 : n;
  }
  return &cur;
}

static void bm_kernel(sa_bench_state *st, void *argp) {
  const kernel_arg *a = argp;
  const sa_kernel_set *ks = a->ks;
  const size_t m = a->m, n = a->n, d = a->d;
  tile_data *t = tile(m, n, d);
  const float scale = 1.0f / sqrtf((float)(d ? d : 1));

  /* Logits with a realistic spread (before the loop: not timed). */
  sa_bench_fill(t->s, m * n, 4, 8.0f);
  for (size_t i = 0; i < m; i++) {
    t->mx[i] = -INFINITY;
    t->l[i] = 0.0f;
  }

  switch (a->op) {
  case OP_SCORE:
    while (sa_bench_keep_running(st)) {
      ks->score(m, n, d, t->q, d, t->k, d, scale, t->s, n);
      sa_bench_clobber_memory();
    }
    break;
  case OP_SOFTMAX:
    while (sa_bench_keep_running(st)) {
      ks->softmax(m, n, t->s, n, NULL);
      sa_bench_clobber_memory();
    }
    break;
  case OP_SOFTMAX_ONLINE:
    while (sa_bench_keep_running(st)) {
      ks->softmax_online(m, n, t->s, n, NULL, t->mx, t->l, t->alpha);
      sa_bench_clobber_memory();
    }
    break;
  case OP_SOFTMAX_ONLINE2:
    while (sa_bench_keep_running(st)) {
      ks->softmax_online2(m, n, t->s, n, NULL, t->mx, t->l, t->alpha);
      sa_bench_clobber_memory();
    }
    break;
  case OP_WSUM:
    /* p: a softmaxed tile, so o stays bounded under beta = 1. */
    sa_bench_oracle()->softmax(m, n, t->s, n, NULL);
    while (sa_bench_keep_running(st)) {
      ks->wsum(m, n, d, t->s, n, t->v, d, t->beta, t->o, d);
      sa_bench_clobber_memory();
    }
    break;
  case OP_SCORE_UPTO:
    while (sa_bench_keep_running(st)) {
      ks->score_upto(m, n, d, t->q, d, t->k, d, scale, t->s, n, t->ends);
      sa_bench_clobber_memory();
    }
    break;
  case OP_WSUM_UPTO:
    /* p as the online step leaves it: 0 past each row's end */
    sa_bench_oracle()->softmax(m, n, t->s, n, t->ends);
    while (sa_bench_keep_running(st)) {
      ks->wsum_upto(m, n, d, t->s, n, t->v, d, t->beta, t->o, d, t->ends);
      sa_bench_clobber_memory();
    }
    break;
  }
  sa_bench_do_not_optimize(t->s);
  sa_bench_do_not_optimize(t->o);

  double iters = (double)sa_bench_iterations(st);
  if (a->op == OP_SCORE || a->op == OP_WSUM || a->op == OP_SCORE_UPTO ||
      a->op == OP_WSUM_UPTO) {
    double pairs = (double)m * (double)n;
    if (a->op == OP_SCORE_UPTO || a->op == OP_WSUM_UPTO) {
      size_t seen = 0;
      for (size_t i = 0; i < m; i++)
        seen += t->ends[i];
      pairs = (double)seen;
    }
    double flops = 2.0 * pairs * (double)d;
    sa_bench_counter(st, "flops", flops, SA_BENCH_PLAIN);
    sa_bench_counter(st, "GFLOPS", flops * iters * 1e-9, SA_BENCH_RATE);
    double peak = sa_peak_gflops(ks->isa);
    if (peak > 0)
      sa_bench_counter(st, "pct_peak", 100.0 * flops * iters * 1e-9 / peak,
                       SA_BENCH_RATE);
  } else {
    sa_bench_set_items_processed(st, (int64_t)(m * n * iters));
  }
}

static void add(const sa_kernel_set *ks, int op, size_t m, size_t n, size_t d) {
  kernel_arg *a = malloc(sizeof *a); /* lives until exit */
  if (!a)
    abort();
  *a = (kernel_arg){ks, op, m, n, d};
  char name[160];
  if (d)
    snprintf(name, sizeof name, "kernel/%s/%s/%zux%zu_d%zu", op_names[op],
             ks->name, m, n, d);
  else
    snprintf(name, sizeof name, "kernel/%s/%s/%zux%zu", op_names[op], ks->name,
             m, n);
  sa_bench *b = sa_bench_register(name, bm_kernel, a);
  sa_bench_set_unit(b, SA_BENCH_US);
  sa_bench_timing(b);
}

void sa_bench_register_kernels(void) {
  static const size_t tiles_default[] = {256, 1024}, tiles_quick[] = {256};
  static const size_t dims_default[] = {64, 128}, dims_quick[] = {64};
  const size_t *ns = sa_bench_cfg.quick ? tiles_quick : tiles_default;
  const size_t *ds = sa_bench_cfg.quick ? dims_quick : dims_default;
  size_t nn = sa_bench_cfg.quick ? 1 : 2, nd = sa_bench_cfg.quick ? 1 : 2;
  const size_t m = 64;

  /* Grouped by operation and tile, every set inside a group, so rows that
   * are compared with each other run back to back. */
  for (int op = 0; op < N_OPS; op++) {
    int upto = op == OP_SCORE_UPTO || op == OP_WSUM_UPTO;
    int needs_d = op == OP_SCORE || op == OP_WSUM || upto;
    for (size_t in = 0; in < (upto ? 1 : nn); in++)
      for (size_t id = 0; id < (needs_d ? nd : 1); id++)
        for (size_t i = 0; i < sa_kernel_set_count(); i++) {
          const sa_kernel_set *ks = sa_kernel_set_at(i);
          if (!sa_bench_timed(ks))
            continue;
          add(ks, op, m, ns[in], needs_d ? ds[id] : 0);
        }
  }
}
