/*
 * Fused tile (FlashAttention-style): K and V stream through in blocks of
 * block_kv keys; each block's scores go through the online softmax, whose
 * alpha rescales the running output before the block's weighted sum is
 * added. The output rows themselves are the accumulator, and are divided by
 * the running sum l at the end.
 *
 * Key blocks past the last key any row of the tile can see are never
 * touched: under a causal mask that skips about half the work.
 *
 * In place (O is Q), the output rows are overwritten by the first block's
 * weighted sum while later blocks still need the queries: the tile's Q rows
 * are copied to scratch first (m x d floats, against m x n x d FMAs).
 */
#include <math.h>
#include <string.h>

#include "internal.h"

void sa_tile_fused(const sa_kernel_set *ks, const sa_plan *p,
                   const sa_tile_io *t, sa_scratch *ws) {
  const size_t m = t->m, bkv = p->block_kv, dv = p->dim_v;
  size_t *len = ws->len, *lenb = ws->len + p->block_q, nv = 0;
  for (size_t r = 0; r < m; r++) {
    len[r] = sa_visible_keys(p, t->pos + r * t->step);
    nv = len[r] > nv ? len[r] : nv;
  }
  float *s = ws->buf;
  float *mx = s + p->block_q * p->lds, *l = mx + p->block_q,
        *alpha = l + p->block_q;
  for (size_t r = 0; r < m; r++) {
    mx[r] = -INFINITY;
    l[r] = 0.0f;
  }
  const float *q = t->q;
  size_t ldq = t->ldq;
  if (p->in_place) {
    float *copy = ws->buf + p->qcopy;
    for (size_t r = 0; r < m; r++)
      memcpy(copy + r * p->dim_qk, t->q + r * t->ldq,
             p->dim_qk * sizeof(float));
    q = copy;
    ldq = p->dim_qk;
  }

  for (size_t j0 = 0; j0 < nv; j0 += bkv) {
    size_t nb = nv - j0 < bkv ? nv - j0 : bkv;
    int partial = 0;
    for (size_t r = 0; r < m; r++) {
      size_t left = len[r] > j0 ? len[r] - j0 : 0;
      lenb[r] = left < nb ? left : nb;
      partial |= lenb[r] != nb;
    }
    ks->score(m, nb, p->dim_qk, q, ldq, t->k + j0 * p->k.seq, p->k.seq,
              p->scale, s, p->lds);
    ks->softmax_online(m, nb, s, p->lds, partial ? lenb : NULL, mx, l, alpha);
    ks->wsum(m, nb, dv, s, p->lds, t->v + j0 * p->v.seq, p->v.seq,
             j0 == 0 ? NULL : alpha, t->o, t->ldo);
  }

  /* A row that may see no key gets zeros, not 0/0. A row that saw keys but
   * kept l == 0 had only -inf scores, which the online max cannot tell from
   * "nothing yet": it gets NaN, as the three-pass softmax gives it. (NaN
   * scores before the first finite one made l NaN in softmax_online.) */
  for (size_t r = 0; r < m; r++) {
    float *o = t->o + r * t->ldo;
    if (len[r] == 0 || l[r] == 0.0f) {
      float fill = len[r] == 0 ? 0.0f : NAN;
      for (size_t c = 0; c < dv; c++)
        o[c] = fill;
      continue;
    }
    float inv = 1.0f / l[r];
    for (size_t c = 0; c < dv; c++)
      o[c] *= inv;
  }
}
