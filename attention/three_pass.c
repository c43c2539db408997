/*
 * Three-pass tile: the whole score row block at once, then softmax, then the
 * weighted sum. Simple and exact to the kernels' contract; it needs
 * block_q x len_kv floats of scratch, which is why fused is the default.
 * Only the columns some row of the tile can see are computed.
 */
#include <string.h>

#include "internal.h"

void sa_tile_three_pass(const sa_kernel_set *ks, const sa_plan *p,
                        const sa_tile_io *t, sa_scratch *ws) {
  size_t *len = ws->len, nv = 0;
  for (size_t r = 0; r < t->m; r++) {
    len[r] = sa_visible_keys(p, t->pos + r * t->step);
    nv = len[r] > nv ? len[r] : nv;
  }
  if (nv > 0) {
    float *s = ws->buf;
    ks->score(t->m, nv, p->dim_qk, t->q, t->ldq, t->k, p->k.seq, p->scale, s,
              p->lds);
    ks->softmax(t->m, nv, s, p->lds, p->mask == SA_MASK_NONE ? NULL : len);
    ks->wsum(t->m, nv, p->dim_v, s, p->lds, t->v, p->v.seq, NULL, t->o, t->ldo);
  }
  /* A row that sees no key gets zeros: none were written when no row of the
   * tile sees one, and 0 * v (NaN where v is not finite) when others do. */
  for (size_t r = 0; r < t->m; r++)
    if (len[r] == 0)
      memset(t->o + r * t->ldo, 0, p->dim_v * sizeof(float));
}
