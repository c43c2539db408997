/*
 * Fused tile (FlashAttention-style): K and V stream through in blocks of
 * block_kv keys; each block's scores go through score_mod (when a mask,
 * softcap, ALiBi or a window edge asks for it) and the online softmax, whose
 * alpha rescales the running output before the block's weighted sum is
 * added. The output rows themselves are the accumulator, and are divided by
 * the running sum l at the end.
 *
 * Only keys some row of the tile may see are touched: under a causal mask
 * that skips about half the work, under a window all but O(window) keys per
 * row, and a block that the masks remove for every row is skipped whole.
 *
 * In place (O is Q), the output rows are overwritten by the first block's
 * weighted sum while later blocks still need the queries: the tile's Q rows
 * are copied to scratch first (m x d floats, against m x n x d FMAs).
 */
#include <string.h>

#include "internal.h"

void sa_tile_fused(const sa_kernel_set *ks, const sa_plan *p,
                   const sa_tile_io *t, sa_scratch *ws) {
  const size_t m = t->m, bkv = p->block_kv;
  sa_rows r;
  sa_rows_start(p, t, ws, &r);
  const float *q = t->q;
  size_t ldq = t->ldq;
  if (p->in_place) {
    float *copy = ws->buf + p->qcopy;
    for (size_t i = 0; i < m; i++)
      memcpy(copy + i * p->dim_qk, t->q + i * t->ldq,
             p->dim_qk * sizeof(float));
    q = copy;
    ldq = p->dim_qk;
  }

  float *s = ws->buf;
  int first = 1;
  for (size_t j0 = r.jlo; j0 < r.jhi; j0 += bkv) {
    size_t nb = r.jhi - j0 < bkv ? r.jhi - j0 : bkv;
    int partial, left;
    if (!sa_rows_block(p, t, &r, j0, nb, &partial, &left))
      continue;
    ks->score(m, nb, p->dim_qk, q, ldq, t->k + j0 * p->k.seq, p->k.seq,
              p->scale, s, p->lds);
    sa_rows_mods(ks, p, t, ws, &r, j0, nb, left);
    ks->softmax_online(m, nb, s, p->lds, partial ? r.hib : NULL, r.mx, r.l,
                       r.alpha);
    ks->wsum(m, nb, p->dim_v, s, p->lds, t->v + j0 * p->v.seq, p->v.seq,
             first ? NULL : r.alpha, t->o, t->ldo);
    first = 0;
  }
  sa_rows_finish(p, t, &r);
}
