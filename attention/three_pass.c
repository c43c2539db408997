/*
 * Three-pass tile: the whole score row block at once, then softmax, then the
 * weighted sum. Simple and exact to the kernels' contract; it needs
 * block_q x len_kv floats of scratch, which is why fused is the default.
 * Only the keys some row of the tile may see are computed.
 *
 * With sinks or an LSE output the softmax runs as one online step instead
 * (the sink is its starting state, and its max and sum give the LSE): the
 * weighted sum of exp(s - max) is then divided by the sum, as fused does.
 */
#include <string.h>

#include "attention/internal.h"

void sa_tile_three_pass(const sa_kernel_set *ks, const sa_plan *p,
                        const sa_tile_io *t, sa_scratch *ws) {
  sa_rows r;
  sa_rows_start(p, t, ws, 0, &r);
  size_t nv = r.jhi - r.jlo;
  int partial = 0, left = 0, any = 0;
  if (nv > 0)
    any = sa_rows_block(p, t, &r, r.jlo, nv, &partial, &left);
  if (any) {
    float *s = ws->buf;
    const void *k = sa_at(t->k, r.jlo * p->k.seq, p->unit[1]);
    const void *v = sa_at(t->v, r.jlo * p->v.seq, p->unit[2]);
    /* rows that see the keys to different depths (the causal diagonal):
     * score_upto skips the register tiles past every row's end, bit for
     * bit the whole block's scores (fused.c, upto) */
    const int upto = partial && sa_upto_fits(ks, p);
    if (upto)
      ks->score_upto(t->m, nv, p->dim_qk, t->q, t->ldq, k, p->k.seq, r.scale, s,
                     p->lds, r.hib);
    else
      sa_score_any(ks, p, t->m, nv, t->q, t->ldq, k, p->k.seq, r.scale, s);
    sa_rows_mods(ks, p, t, ws, &r, r.jlo, nv, left);
    const size_t *len = partial ? r.hib : NULL;
    if (p->online)
      ks->softmax_online(t->m, nv, s, p->lds, len, r.mx, r.l, r.alpha);
    else
      ks->softmax(t->m, nv, s, p->lds, len);
    sa_wsum_any(ks, p, t->m, nv, s, v, p->v.seq, NULL, t->o, t->ldo);
  }
  if (p->online) {
    sa_rows_finish(p, t, &r);
    return;
  }
  /* A row that keeps no key gets zeros: none were written when no row of
   * the tile keeps one, and 0 * v (NaN where v is not finite) when others
   * do. */
  for (size_t i = 0; i < t->m; i++)
    if (!r.seen[i])
      memset(t->o + i * t->ldo, 0, p->dim_v * sizeof(float));
}
