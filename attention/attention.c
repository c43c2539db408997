/*
 * sa_attention: validate, make sure every worker has scratch, then hand the
 * tiles to the pool. Tiles are (batch, query head, query block), or for
 * decode with GQA (batch, KV head, group of query heads) so that a KV head's
 * keys are streamed once for all the query heads that share it.
 *
 * Task t is numbered so that the costliest tiles come first (under a causal
 * mask the last query blocks see the most keys); workers take tasks in that
 * order, which balances load without knowing the thread count. A tile's
 * result does not depend on which worker computes it, so the output is
 * bit-identical for any number of threads.
 *
 * Order of a call: read the caller's descriptor (struct_size), validate it
 * and the pointers (nothing written yet), take the context (SA_ERR_BUSY),
 * size the scratch, run, release.
 */
#include <stdlib.h>

#include "errors.h"
#include "internal.h"

typedef struct job {
  const sa_kernel_set *ks;
  const sa_plan *p;
  sa_scratch *scratch;
  const float *q, *k, *v;
  float *o;
  size_t nqb;    /* query blocks (or head groups) per (batch, head) */
  size_t nheads; /* heads the tiles are enumerated over */
  int stacked;   /* decode: rows are query heads of one KV group */
} job;

static void run_tile(void *arg, size_t task, int worker) {
  const job *j = arg;
  const sa_plan *p = j->p;
  size_t bh = task % (p->batch * j->nheads);
  size_t blk = j->nqb - 1 - task / (p->batch * j->nheads);
  size_t b = bh / j->nheads, h = bh % j->nheads;
  sa_tile_io t;
  size_t hq, hkv;
  if (j->stacked) {
    hkv = h;
    hq = h * p->group + blk * p->block_q;
    size_t left = (h + 1) * p->group - hq;
    t.m = left < p->block_q ? left : p->block_q;
    t.pos = 0;
    t.step = 0;
    t.ldq = p->q.head;
    t.ldo = p->o.head;
  } else {
    hq = h;
    hkv = h / p->group;
    t.pos = blk * p->block_q;
    t.m = p->len_q - t.pos < p->block_q ? p->len_q - t.pos : p->block_q;
    t.step = 1;
    t.ldq = p->q.seq;
    t.ldo = p->o.seq;
  }
  t.b = b;
  t.h0 = hq;
  t.q = j->q + b * p->q.batch + hq * p->q.head + t.pos * p->q.seq;
  t.o = j->o + b * p->o.batch + hq * p->o.head + t.pos * p->o.seq;
  t.k = j->k + b * p->k.batch + hkv * p->k.head;
  t.v = j->v + b * p->v.batch + hkv * p->v.head;
  if (p->algorithm == SA_ALGO_THREE_PASS)
    sa_tile_three_pass(j->ks, p, &t, &j->scratch[worker]);
  else
    sa_tile_fused(j->ks, p, &t, &j->scratch[worker]);
}

/* Every worker's scratch big enough for the plan: grown (and kept) in our
 * own memory, or checked against its share of the caller's workspace. */
static sa_status ensure_scratch(sa_context *ctx, const sa_plan *p) {
  if (ctx->workspace) {
    size_t need = sa_scratch_bytes(p->scratch_floats, p->scratch_lens);
    if (need > ctx->worker_bytes)
      return sa_fail(SA_ERR_WORKSPACE,
                     "this call needs %zu bytes of workspace per worker (%d "
                     "workers: ask sa_attention_workspace), the context has "
                     "%zu",
                     need, ctx->nthreads, ctx->worker_bytes);
    size_t floats_bytes = sa_round64(p->scratch_floats * sizeof(float));
    for (int w = 0; w < ctx->nthreads; w++) {
      unsigned char *base = ctx->workspace + (size_t)w * ctx->worker_bytes;
      ctx->scratch[w].buf = (float *)(void *)base;
      ctx->scratch[w].len = (size_t *)(void *)(base + floats_bytes);
    }
    return SA_OK;
  }
  for (int w = 0; w < ctx->nthreads; w++) {
    sa_scratch *s = &ctx->scratch[w];
    if (s->floats < p->scratch_floats) {
      /* 64-byte rows keep the score tile's rows on cache-line boundaries */
      size_t bytes = sa_round64(p->scratch_floats * sizeof(float));
      float *buf = aligned_alloc(64, bytes);
      if (!buf)
        return sa_fail(SA_ERR_NO_MEMORY, "scratch of %zu bytes", bytes);
      free(s->buf);
      s->buf = buf;
      s->floats = p->scratch_floats;
    }
    if (s->lens < p->scratch_lens) {
      size_t *len = malloc(p->scratch_lens * sizeof(size_t));
      if (!len)
        return sa_fail(SA_ERR_NO_MEMORY, "scratch lengths");
      free(s->len);
      s->len = len;
      s->lens = p->scratch_lens;
    }
  }
  return SA_OK;
}

static sa_status load_desc(const sa_attention_desc *user,
                           sa_attention_desc *d) {
  return sa_struct_load("sa_attention_desc", user, SA_ATTENTION_DESC_MIN_SIZE,
                        sizeof *d, d);
}

sa_status sa_attention_workspace(const sa_context *ctx,
                                 const sa_attention_desc *desc, size_t *bytes) {
  if (!desc || !bytes)
    return sa_fail(SA_ERR_NULL_POINTER, "sa_attention_workspace: NULL");
  sa_attention_desc d;
  sa_plan p;
  sa_status st;
  if ((st = load_desc(desc, &d)) ||
      (st = sa_plan_make(&d, ctx ? ctx->block_q : SA_DEFAULT_BLOCK_Q,
                         ctx ? ctx->block_kv : SA_DEFAULT_BLOCK_KV, &p)))
    return st;
  size_t workers = ctx ? (size_t)ctx->nthreads : 1;
  /* each share is whole cache lines; 63 more for aligning the start */
  *bytes = workers * sa_scratch_bytes(p.scratch_floats, p.scratch_lens) + 63;
  sa_clear_error();
  return SA_OK;
}

sa_status sa_attention(sa_context *ctx, const sa_attention_desc *desc,
                       const float *q, const float *k, const float *v,
                       float *o) {
  if (!desc || !q || !k || !v || !o)
    return sa_fail(SA_ERR_NULL_POINTER,
                   "sa_attention: desc, q, k, v and o must not be NULL");
  sa_attention_desc d;
  sa_status st;
  if ((st = load_desc(desc, &d)) ||
      (!ctx && (st = sa_context_thread_default(&ctx))))
    return st;
  sa_plan p;
  if ((st = sa_plan_make(&d, ctx->block_q, ctx->block_kv, &p)) ||
      (st = sa_plan_memory(&p, q, k, v, o)) || (st = sa_context_enter(ctx)))
    return st;
  if ((st = ensure_scratch(ctx, &p))) {
    sa_context_leave(ctx);
    return st;
  }

  job j = {ctx->ks, &p, ctx->scratch, q, k, v, o, 0, 0, 0};
  j.stacked = p.len_q == 1 && p.group > 1;
  if (j.stacked) {
    j.nheads = p.heads_kv;
    j.nqb = (p.group + p.block_q - 1) / p.block_q;
  } else {
    j.nheads = p.heads_q;
    j.nqb = (p.len_q + p.block_q - 1) / p.block_q;
  }
  /* cannot overflow: each factor is at most the extent of O's rows */
  size_t ntasks = p.batch * j.nheads * j.nqb;
  sa_pool_run(ctx->pool, ntasks, run_tile, &j);
  sa_context_leave(ctx);
  sa_clear_error();
  return SA_OK;
}
