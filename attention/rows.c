/*
 * What both tile drivers do around the kernels once a descriptor asks for
 * more than a causal mask: which keys each row may see, whether a mask
 * removes a whole key block, the arguments of score_mod, and the end of the
 * online softmax with its log-sum-exp.
 *
 * A tile's rows share one batch item and are either consecutive query
 * positions of one head (step 1) or the query heads of one KV group at one
 * position (step 0, decode): either way row r's mask rows, slope, sink and
 * LSE are a fixed stride apart.
 */
#include <math.h>
#include <string.h>

#include "attention/internal.h"

static size_t row_pos(const sa_tile_io *t, size_t r) {
  return t->pos + r * t->step;
}
static size_t row_head(const sa_tile_io *t, size_t r) {
  return t->h0 + (t->step ? 0 : r);
}

/* The union [jlo, jhi) of the rows' ranges (an empty range made [0, 0)),
 * and which rows see keys without a mask to read. */
static void unite(const sa_plan *p, const sa_tile_io *t, sa_rows *r) {
  r->jlo = SIZE_MAX;
  r->jhi = 0;
  for (size_t i = 0; i < t->m; i++) {
    if (r->lo[i] >= r->hi[i]) {
      r->lo[i] = r->hi[i] = 0;
    } else {
      r->jlo = r->lo[i] < r->jlo ? r->lo[i] : r->jlo;
      r->jhi = r->hi[i] > r->jhi ? r->hi[i] : r->jhi;
    }
    r->seen[i] = !p->scan && r->lo[i] < r->hi[i];
  }
  if (r->jlo >= r->jhi)
    r->jlo = r->jhi = 0;
}

/* Split-KV: keeps part t->part of t->parts of the tile's visible keys, cut
 * at whole key blocks, so that parts are equal in work and their bounds
 * follow from the shape alone. */
static void clip_to_part(const sa_plan *p, const sa_tile_io *t, sa_rows *r) {
  size_t blocks = (r->jhi - r->jlo + p->block_kv - 1) / p->block_kv;
  size_t per = (blocks + t->parts - 1) / t->parts * p->block_kv;
  size_t from = r->jlo + t->part * per, to = from + per;
  from = from < r->jhi ? from : r->jhi;
  to = to < r->jhi ? to : r->jhi;
  for (size_t i = 0; i < t->m; i++) {
    r->lo[i] = r->lo[i] > from ? r->lo[i] : from;
    r->hi[i] = r->hi[i] < to ? r->hi[i] : to;
  }
  unite(p, t, r);
}

void sa_rows_start(const sa_plan *p, const sa_tile_io *t, sa_scratch *ws,
                   int log2, sa_rows *r) {
  sa_rows_start_in(p, t, ws->len, ws->buf + p->rowvals, p->block_q, log2, r);
}

void sa_rows_start_in(const sa_plan *p, const sa_tile_io *t, size_t *idx,
                      float *vals, size_t bq, int log2, sa_rows *r) {
  r->lo = idx;
  r->hi = r->lo + bq;
  r->lob = r->hi + bq;
  r->hib = r->lob + bq;
  r->seen = r->hib + bq;
  r->mx = vals;
  r->l = r->mx + bq;
  r->alpha = r->l + bq;
  r->slope = r->alpha + bq;
  r->dist = r->slope + bq;
  r->log2 = log2;
  r->scale = log2 ? p->scale2 : p->scale;
  for (size_t i = 0; i < t->m; i++) {
    sa_row_keys(p, t->b, row_pos(t, i), &r->lo[i], &r->hi[i]);
    /* a sink is a key with logit sinks[h] and no value: the state after
     * it is max = sink, sum = exp(0); split-KV gives it to part 0 only */
    float sink =
        p->sinks && t->part == 0 ? p->sinks[row_head(t, i)] : -INFINITY;
    r->mx[i] = log2 ? sa_log2_units(sink) : sink;
    r->l[i] = sink == -INFINITY ? 0.0f : 1.0f;
    if (p->slopes)
      r->slope[i] = log2 ? sa_log2_units(p->slopes[row_head(t, i)])
                         : p->slopes[row_head(t, i)];
  }
  unite(p, t, r);
  if (t->parts > 1)
    clip_to_part(p, t, r);
}

/* Row i's mask element at key j, each mask's origin moved to (b, h, pos). */
static const float *add_row(const sa_plan *p, const sa_tile_io *t, size_t i) {
  const sa_mask_at *a = &p->add_at;
  return p->mask_add + t->b * a->batch + row_head(t, i) * a->head +
         row_pos(t, i) * a->row;
}
static const uint8_t *bool_row(const sa_plan *p, const sa_tile_io *t,
                               size_t i) {
  const sa_mask_at *a = &p->bool_at;
  return p->mask_bool + t->b * a->batch + row_head(t, i) * a->head +
         row_pos(t, i) * a->row;
}

/* Does row i keep some key of [from, to)? Stops at the first one, which for
 * the usual masks is the first key looked at. */
static int row_keeps(const sa_plan *p, const sa_tile_io *t, size_t i,
                     size_t from, size_t to) {
  const float *add = p->mask_add ? add_row(p, t, i) : NULL;
  const uint8_t *keep = p->mask_bool ? bool_row(p, t, i) : NULL;
  const size_t sa = p->add_at.key, sb = p->bool_at.key;
  for (size_t j = from; j < to; j++)
    if ((!keep || keep[j * sb]) && (!add || add[j * sa] != -INFINITY))
      return 1;
  return 0;
}

int sa_rows_block(const sa_plan *p, const sa_tile_io *t, sa_rows *r, size_t j0,
                  size_t nb, int *partial, int *left) {
  int any = !p->scan;
  *partial = *left = 0;
  for (size_t i = 0; i < t->m; i++) {
    size_t lo = r->lo[i] > j0 ? r->lo[i] - j0 : 0;
    size_t hi = r->hi[i] > j0 ? r->hi[i] - j0 : 0;
    lo = lo < nb ? lo : nb;
    hi = hi < nb ? hi : nb;
    hi = hi > lo ? hi : lo;
    r->lob[i] = lo;
    r->hib[i] = hi;
    *partial |= hi != nb;
    *left |= lo != 0;
    if (p->scan && lo < hi && row_keeps(p, t, i, j0 + lo, j0 + hi)) {
      r->seen[i] = 1;
      any = 1;
    }
  }
  return any;
}

void sa_rows_mods(const sa_kernel_set *ks, const sa_plan *p,
                  const sa_tile_io *t, sa_scratch *ws, const sa_rows *r,
                  size_t j0, size_t nb, int left) {
  if (!p->mods && !left)
    return;
  sa_score_mods mods;
  memset(&mods, 0, sizeof mods);
  /* in log2 units cap * tanh(s / cap) * log2(e) is the same softcap of the
   * scaled score with cap * log2(e) */
  mods.softcap = r->log2 ? sa_log2_units(p->softcap) : p->softcap;
  mods.lo = left ? r->lob : NULL;
  if (p->slopes) {
    for (size_t i = 0; i < t->m; i++)
      r->dist[i] =
          (float)((int64_t)j0 - sa_row_diagonal(p, t->b, row_pos(t, i)));
    mods.slope = r->slope;
    mods.dist = r->dist;
  }
  /* Row strides of the tile's mask rows: one position or one head apart.
   * Rows strided along keys are gathered into contiguous scratch first. */
  float *gather = ws->buf + p->gather;
  if (p->mask_add) {
    const sa_mask_at *a = &p->add_at;
    const float *base = add_row(p, t, 0) + j0 * a->key;
    if (a->key == 1) {
      mods.add = base;
      mods.ld_add = t->step ? a->row : a->head;
    } else {
      for (size_t i = 0; i < t->m; i++) {
        const float *src = add_row(p, t, i) + j0 * a->key;
        for (size_t j = 0; j < nb; j++)
          gather[i * p->lds + j] = src[j * a->key];
      }
      mods.add = gather;
      mods.ld_add = p->lds;
      gather += p->block_q * p->lds;
    }
  }
  if (p->mask_bool) {
    const sa_mask_at *a = &p->bool_at;
    if (a->key == 1) {
      mods.keep = bool_row(p, t, 0) + j0;
      mods.ld_keep = t->step ? a->row : a->head;
    } else {
      uint8_t *g = (uint8_t *)gather;
      for (size_t i = 0; i < t->m; i++) {
        const uint8_t *src = bool_row(p, t, i) + j0 * a->key;
        for (size_t j = 0; j < nb; j++)
          g[i * p->lds + j] = src[j * a->key];
      }
      mods.keep = g;
      mods.ld_keep = p->lds;
    }
  }
  ks->score_mod(t->m, nb, ws->buf, p->lds, &mods);
}

void sa_rows_finish(const sa_plan *p, const sa_tile_io *t, const sa_rows *r) {
  for (size_t i = 0; i < t->m; i++) {
    float *o = t->o + i * t->ldo, lse;
    float l = r->l[i];
    /* the max in base e: mx * ln2 in log2 units */
    float mx =
        r->log2 ? (float)((double)r->mx[i] * 0.6931471805599453) : r->mx[i];
    if (t->kept)
      t->kept[i] = r->seen[i] ? 1.0f : 0.0f;
    if (!r->seen[i] || l == 0.0f) {
      /* no key kept: zeros (the LSE is the sink's, or -inf); kept keys
       * whose scores were all -inf: NaN, as the three-pass softmax, unless
       * this is one part of a split, whose merge decides (other parts may
       * hold finite scores) */
      int nan = r->seen[i] && !t->kept;
      for (size_t c = 0; c < p->dim_v; c++)
        o[c] = nan ? NAN : 0.0f;
      lse = nan ? NAN : l == 0.0f ? -INFINITY : mx + logf(l);
      if (r->log2 && !r->seen[i] && l != 0.0f && p->sinks)
        lse = p->sinks[row_head(t, i)]; /* as given, not through log2 units */
    } else {
      float inv = 1.0f / l;
      for (size_t c = 0; c < p->dim_v; c++)
        o[c] *= inv;
      lse = mx + logf(l);
    }
    if (t->lse)
      t->lse[i * t->ldlse] = lse;
  }
}
