/*
 * sa_attention: validate, make sure every worker has scratch, then hand the
 * tiles to the pool. Tiles are (batch, query head, query block), or for
 * decode with GQA (batch, KV head, group of query heads) so that a KV head's
 * keys are streamed once for all the query heads that share it.
 *
 * Tasks go (batch, head) by (batch, head), and within one the costliest
 * query block first (under a causal mask the last blocks see the most
 * keys): consecutive tasks share K and V in cache, and the cheap first
 * blocks of the last head end the call, which balances load without knowing
 * the thread count. A tile's
 * result does not depend on which worker computes it, so the output is
 * bit-identical for any number of threads.
 *
 * Order of a call: read the caller's descriptor (struct_size), validate it
 * and the pointers (nothing written yet), take the context (SA_ERR_BUSY),
 * size the scratch, run, release.
 */
#include <math.h>
#include <stdlib.h>

#include "attention/internal.h"
#include "core/errors.h"

typedef struct job {
  const sa_kernel_set *ks;
  const sa_plan *p;
  sa_scratch *scratch;
  const void *q, *k, *v;
  void *o;
  size_t nqb;      /* query blocks (or head groups) per (batch, head) */
  size_t nheads;   /* heads the tiles are enumerated over */
  int stacked;     /* decode: rows are query heads of one KV group */
  size_t parts;    /* split-KV: key parts per tile (1: no split) */
  float *split;    /* parts' results: per task, block_q rows of dim_v + 1 */
  int turns;       /* decode in turns (sa_tiles_fused_decode) */
  size_t together; /* tiles a task runs so (1: one) */
  size_t merges;   /* split-KV: merge tasks per tile */
} job;

/* Tile number `tile` of job j: the query blocks of one (batch, head) are
 * consecutive, costliest first, so workers keep that head's K and V in cache
 * across its blocks (hopping heads per block, as 0.2 did, streamed every
 * head's K and V from memory once per block: ragged prefill of 8 sequences
 * took 110 ms instead of 81). */
static void tile_of(const job *j, size_t tile, sa_tile_io *t) {
  const sa_plan *p = j->p;
  size_t bh = tile / j->nqb;
  size_t blk = j->nqb - 1 - tile % j->nqb;
  size_t b = bh / j->nheads, h = bh % j->nheads;
  size_t hq, hkv, ldlse;
  size_t lq = sa_batch_len_q(p, b);
  if (j->stacked) {
    hkv = h;
    hq = h * p->group + blk * p->block_q;
    size_t left = (h + 1) * p->group - hq;
    t->m = lq == 0 ? 0 : left < p->block_q ? left : p->block_q;
    t->pos = 0;
    t->step = 0;
    t->ldq = p->q.head;
    t->ldo = p->o.head;
    ldlse = p->lse_at.head;
  } else {
    hq = h;
    hkv = h / p->group;
    t->pos = blk * p->block_q;
    /* a ragged batch's shorter sequences have empty tiles at the end */
    t->m = t->pos >= lq               ? 0
           : lq - t->pos < p->block_q ? lq - t->pos
                                      : p->block_q;
    t->step = 1;
    t->ldq = p->q.seq;
    t->ldo = p->o.seq;
    ldlse = p->lse_at.seq;
  }
  t->b = b;
  t->h0 = hq;
  /* a ragged side starts sequence b at its token row; a paged one adds
   * the page per key block (sa_tile_fused) */
  size_t row0 = p->cu_q ? (size_t)p->cu_q[b] + t->pos : t->pos;
  size_t qb = p->cu_q ? 0 : b;
  size_t kb = p->table || p->cu_kv ? 0 : b;
  size_t krow = p->cu_kv ? (size_t)p->cu_kv[b] : 0;
  t->q = sa_at(j->q, qb * p->q.batch + hq * p->q.head + row0 * p->q.seq,
               p->unit[0]);
  t->o = (float *)sa_at(
      j->o, qb * p->o.batch + hq * p->o.head + row0 * p->o.seq, p->unit[3]);
  t->k = sa_at(j->k, kb * p->k.batch + hkv * p->k.head + krow * p->k.seq,
               p->unit[1]);
  t->v = sa_at(j->v, kb * p->v.batch + hkv * p->v.head + krow * p->v.seq,
               p->unit[2]);
  t->lse = p->lse ? p->lse + qb * p->lse_at.batch + hq * p->lse_at.head +
                        row0 * p->lse_at.seq
                  : NULL;
  t->ldlse = ldlse;
  t->part = 0;
  t->parts = 1;
  t->kept = NULL;
}

/* One part's results: block_q rows of dim_v floats, then block_q LSEs, then
 * block_q flags: the row kept a key in the part. */
static float *part_slot(const job *j, size_t tile, size_t part) {
  const sa_plan *p = j->p;
  return j->split + (tile * j->parts + part) * p->block_q * (p->dim_v + 2);
}

/* Row i of the caller's O, as tile_of pointed t at it (t->o is then only
 * an address, in O's own type). */
static void *out_row(const sa_plan *p, const sa_tile_io *t, size_t i) {
  return (char *)t->o + i * t->ldo * p->unit[3];
}

/* A narrow O: f32 rows from scratch, rounded once into the caller's. */
static void store_rows(const sa_kernel_set *ks, const sa_plan *p,
                       const sa_tile_io *t, const float *rows, size_t ld) {
  for (size_t i = 0; i < t->m; i++)
    ks->from_f32[p->o_type](p->dim_v, rows + i * ld, out_row(p, t, i));
}

/* A narrow Q's tile rows widened into qs once: m x d values against
 * m x n x d FMAs. */
static void widen_q(const job *j, sa_tile_io *t, float *qs) {
  const sa_plan *p = j->p;
  for (size_t i = 0; i < t->m; i++)
    j->ks->to_f32[p->q_type](p->dim_qk, sa_at(t->q, i * t->ldq, p->unit[0]),
                             qs + i * p->dim_qk);
  t->q = qs;
  t->ldq = p->dim_qk;
}

/* Tile t as part `part` of its keys: normalised rows and their LSEs go
 * to the part's slot, merged once every part is done. */
static void to_part(const job *j, size_t tile, size_t part, sa_tile_io *t) {
  const sa_plan *p = j->p;
  float *slot = part_slot(j, tile, part);
  t->part = part;
  t->parts = j->parts;
  t->o = slot;
  t->ldo = p->dim_v;
  t->lse = slot + p->block_q * p->dim_v;
  t->ldlse = 1;
  t->kept = t->lse + p->block_q;
}

/* A task of tiles that run together (sa_tiles_fused_decode), the same part
 * of each one's keys when the call splits: narrow Q rows widened and
 * (unsplit) O rows staged per tile in the plan's room for them. */
static void run_together(const job *j, size_t task, sa_scratch *ws) {
  const sa_plan *p = j->p;
  const size_t first = task / j->parts * j->together, part = task % j->parts;
  sa_tile_io ts[SA_TOGETHER_MAX], user[SA_TOGETHER_MAX];
  for (size_t g = 0; g < j->together; g++) {
    tile_of(j, first + g, &ts[g]);
    user[g] = ts[g];
    float *rows =
        ws->buf + p->together + g * p->block_q * (p->dim_qk + p->dim_v);
    if (p->q_type != SA_F32)
      widen_q(j, &ts[g], rows);
    if (j->parts > 1)
      to_part(j, first + g, part, &ts[g]);
    else if (p->o_type != SA_F32) {
      ts[g].o = rows + p->block_q * p->dim_qk;
      ts[g].ldo = p->dim_v;
    }
  }
  sa_tiles_fused_decode(j->ks, p, ts, j->together, ws);
  if (j->parts == 1 && p->o_type != SA_F32)
    for (size_t g = 0; g < j->together; g++)
      store_rows(j->ks, p, &user[g], ts[g].o, ts[g].ldo);
}

static void run_tile(void *arg, size_t task, int worker) {
  const job *j = arg;
  const sa_plan *p = j->p;
  sa_scratch *ws = &j->scratch[worker];
  sa_tile_io t;
  if (j->turns) {
    run_together(j, task, ws);
    return;
  }
  tile_of(j, task / j->parts, &t);
  if (t.m == 0)
    return;
  if (p->q_type != SA_F32 && !p->q_direct)
    widen_q(j, &t, ws->buf + p->qcopy);
  sa_tile_io user = t;
  if (j->parts == 1 && p->o_type != SA_F32) {
    t.o = ws->buf + p->ostage;
    t.ldo = p->dim_v;
  }
  if (j->parts > 1)
    to_part(j, task / j->parts, task % j->parts, &t);
  if (p->algorithm == SA_ALGO_THREE_PASS)
    sa_tile_three_pass(j->ks, p, &t, ws);
  else
    sa_tile_fused(j->ks, p, &t, ws);
  if (j->parts == 1 && p->o_type != SA_F32)
    store_rows(j->ks, p, &user, t.o, t.ldo);
}

/* Split-KV, second step: a tile's parts merged in part order, whichever
 * worker does it, so the result does not depend on the thread count. A
 * task merges SA_MERGE_ROWS rows of one tile: a call that splits has few
 * tiles (one for a batch-1 MQA decode), and with a task a tile one worker
 * merged while the others waited. */
static void merge_rows(void *arg, size_t task, int worker) {
  const job *j = arg;
  const sa_plan *p = j->p;
  (void)worker;
  float w[SA_SPLIT_TILES], vals[SA_SPLIT_TILES];
  const float *rows[SA_SPLIT_TILES];
  size_t tile = task / j->merges, i0 = task % j->merges * SA_MERGE_ROWS;
  sa_tile_io t;
  tile_of(j, tile, &t);
  if (i0 >= t.m)
    return;
  size_t i1 = t.m - i0 < SA_MERGE_ROWS ? t.m : i0 + SA_MERGE_ROWS;
  for (size_t i = i0; i < i1; i++) {
    int kept = 0;
    for (size_t k = 0; k < j->parts; k++) {
      const float *slot = part_slot(j, tile, k);
      rows[k] = slot + i * p->dim_v;
      vals[k] = slot[p->block_q * p->dim_v + i];
      kept |= slot[p->block_q * (p->dim_v + 1) + i] != 0.0f;
    }
    /* a narrow O is merged into part 0's row (read by no one after) */
    float *o = p->o_type == SA_F32 ? out_row(p, &t, i) : (float *)rows[0];
    float lse = sa_merge_row(j->parts, vals, rows, w, o, p->dim_v);
    if (lse == -INFINITY && kept) {
      /* keys kept, every score -inf: NaN, as without the split */
      for (size_t c = 0; c < p->dim_v; c++)
        o[c] = NAN;
      lse = NAN;
    }
    if (p->o_type != SA_F32)
      j->ks->from_f32[p->o_type](p->dim_v, o, out_row(p, &t, i));
    if (t.lse)
      t.lse[i * t.ldlse] = lse;
  }
}

/* How many parts each tile's keys are cut into: decided by the shape alone
 * (tile count, keys, block size), never by the thread count. Fused only:
 * three-pass holds a whole row block of scores by design. */
static size_t split_parts(const sa_plan *p, size_t ntiles) {
  if (p->algorithm != SA_ALGO_FUSED || ntiles >= SA_SPLIT_TILES)
    return 1;
  size_t blocks = (p->len_kv + p->block_kv - 1) / p->block_kv;
  size_t parts = (SA_SPLIT_TILES + ntiles - 1) / ntiles;
  size_t least = (SA_SPLIT_MIN_KEYS + p->block_kv - 1) / p->block_kv;
  size_t most =
      blocks / (least < SA_SPLIT_MIN_BLOCKS ? least : SA_SPLIT_MIN_BLOCKS);
  return parts < most ? parts : most > 1 ? most : 1;
}

/* How many of a sequence's tiles (consecutive: its heads) a task runs in
 * turns: as many as may, halved while that leaves fewer than two tasks a
 * worker. The grouping never changes a tile's results (internal.h), so it
 * may follow the thread count; whether a call runs in turns (tiling) may
 * not, and depends on the shape alone. */
static size_t together(const job *j, size_t ntiles, size_t workers) {
  size_t g = j->nheads * j->nqb;
  while (g % 2 == 0 &&
         (g > SA_TOGETHER_MAX || ntiles / g * j->parts < 2 * workers))
    g /= 2;
  return g <= SA_TOGETHER_MAX ? g : 1;
}

/* How the call is cut into tasks, and the split-KV buffer it needs. */
static void tiling(const sa_plan *p, job *j, size_t workers, size_t *ntiles,
                   size_t *split_floats) {
  j->stacked = p->len_q == 1 && p->group > 1;
  if (j->stacked) {
    j->nheads = p->heads_kv;
    j->nqb = (p->group + p->block_q - 1) / p->block_q;
  } else {
    j->nheads = p->heads_q;
    j->nqb = (p->len_q + p->block_q - 1) / p->block_q;
  }
  /* cannot overflow: each factor is at most the extent of O's rows */
  *ntiles = p->batch * j->nheads * j->nqb;
  j->parts = split_parts(p, *ntiles);
  j->turns =
      p->algorithm == SA_ALGO_FUSED && j->ks && sa_fused_together(j->ks, p);
  j->together = j->turns ? together(j, *ntiles, workers) : 1;
  /* small: fewer than SA_SPLIT_TILES tiles, at most that many parts */
  *split_floats =
      j->parts > 1 ? *ntiles * j->parts * p->block_q * (p->dim_v + 2) : 0;
  size_t rows = j->stacked && p->group < p->block_q ? p->group : p->block_q;
  j->merges = (rows + SA_MERGE_ROWS - 1) / SA_MERGE_ROWS;
}

/* Every worker's scratch big enough for the plan, and the split-KV buffer:
 * grown (and kept) in our own memory, or carved from the caller's
 * workspace (the workers' shares, then the split buffer). */
static sa_status ensure_scratch(sa_context *ctx, const sa_plan *p,
                                size_t split_floats, float **split) {
  if (ctx->workspace) {
    size_t share = sa_scratch_bytes(p->scratch_floats, p->scratch_lens);
    size_t need = (size_t)ctx->nthreads * share +
                  sa_round64(split_floats * sizeof(float));
    if (need > ctx->workspace_bytes)
      return sa_fail(SA_ERR_WORKSPACE,
                     "this call needs %zu bytes of workspace (%d workers: ask "
                     "sa_attention_workspace), the context has %zu",
                     need, ctx->nthreads, ctx->workspace_bytes);
    size_t floats_bytes = sa_round64(p->scratch_floats * sizeof(float));
    for (int w = 0; w < ctx->nthreads; w++) {
      unsigned char *base = ctx->workspace + (size_t)w * share;
      ctx->scratch[w].buf = (float *)(void *)base;
      ctx->scratch[w].len = (size_t *)(void *)(base + floats_bytes);
    }
    *split = (float *)(void *)(ctx->workspace + (size_t)ctx->nthreads * share);
    return SA_OK;
  }
  if (ctx->split_floats < split_floats) {
    float *buf = aligned_alloc(64, sa_round64(split_floats * sizeof(float)));
    if (!buf)
      return sa_fail(SA_ERR_NO_MEMORY, "split-KV buffer of %zu floats",
                     split_floats);
    free(ctx->split);
    ctx->split = buf;
    ctx->split_floats = split_floats;
  }
  *split = ctx->split;
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
      (st = sa_plan_make(&d, ctx ? ctx->block_q : 0, ctx ? ctx->block_kv : 0,
                         &p)))
    return st;
  size_t workers = ctx ? (size_t)ctx->nthreads : 1, ntiles, split_floats;
  job j = {.ks = ctx ? ctx->ks : NULL};
  tiling(&p, &j, workers, &ntiles, &split_floats);
  /* each share is whole cache lines; 63 more for aligning the start */
  *bytes = workers * sa_scratch_bytes(p.scratch_floats, p.scratch_lens) +
           sa_round64(split_floats * sizeof(float)) + 63;
  sa_clear_error();
  return SA_OK;
}

/* The set has the slot each narrow tensor needs (every registered set
 * fills them all; a NULL slot is a status, never a jump through NULL), and
 * bf16 Q.K goes to score_bf16 where the set has one, except in decode that
 * decode_rows can take: there Q is widened (exactly) and the rows stream
 * through decode_rows in turns, where score_bf16 would have each key block
 * of a paged or token-major cache gathered first (bf16 Q, K and V, 16-key
 * pages: 1.75x the contiguous cache's time, docs/DESIGN.md). */
static sa_status plan_kernels(const sa_kernel_set *ks, sa_plan *p) {
  if ((p->q_type != SA_F32 && !ks->to_f32[p->q_type]) ||
      (p->k_type != SA_F32 && !ks->score_t[p->k_type]) ||
      (p->v_type != SA_F32 && !ks->wsum_t[p->v_type]) ||
      (p->o_type != SA_F32 && !ks->from_f32[p->o_type]))
    return sa_fail(SA_ERR_UNSUPPORTED_ISA,
                   "kernel set '%s' lacks a kernel for q %s, k %s, v %s, o %s",
                   ks->name, sa_dtype_name(p->q_type), sa_dtype_name(p->k_type),
                   sa_dtype_name(p->v_type), sa_dtype_name(p->o_type));
  p->q_direct = p->q_type == SA_BF16 && p->k_type == SA_BF16 &&
                ks->score_bf16 &&
                !(sa_decode_rows_fit(ks, p) && sa_decode_by_rows(p));
  return SA_OK;
}

sa_status sa_attention(sa_context *ctx, const sa_attention_desc *desc,
                       const void *q, const void *k, const void *v, void *o) {
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
      (st = sa_plan_memory(&p, q, k, v, o)) ||
      (st = plan_kernels(ctx->ks, &p)) || (st = sa_context_enter(ctx)))
    return st;
  job j = {ctx->ks, &p, ctx->scratch, q, k, v, o, 0, 0, 0, 1, NULL, 0, 1, 0};
  size_t ntiles, split_floats;
  tiling(&p, &j, (size_t)ctx->nthreads, &ntiles, &split_floats);
  if ((st = ensure_scratch(ctx, &p, split_floats, &j.split))) {
    sa_context_leave(ctx);
    return st;
  }
  sa_pool_run(ctx->pool, ntiles * j.parts / j.together, run_tile, &j);
  if (j.parts > 1)
    sa_pool_run(ctx->pool, ntiles * j.merges, merge_rows, &j);
  sa_context_leave(ctx);
  sa_clear_error();
  return SA_OK;
}
