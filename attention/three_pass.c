/*
 * Three-pass tile: the whole score row block at once, then softmax, then the
 * weighted sum. Simple and exact to the kernels' contract; it needs
 * block_q x len_kv floats of scratch, which is why fused is the default.
 * Only the columns some row of the tile can see are computed.
 */
#include <string.h>

#include "internal.h"

static void zero_rows(const sa_tile_io *t, size_t dv) {
  for (size_t r = 0; r < t->m; r++)
    memset(t->o + r * t->ldo, 0, dv * sizeof(float));
}

void sa_tile_three_pass(const sa_kernel_set *ks, const sa_plan *p,
                        const sa_tile_io *t, sa_scratch *ws) {
  size_t *len = ws->len, nv = 0;
  for (size_t r = 0; r < t->m; r++) {
    len[r] = sa_visible_keys(p, t->pos + r * t->step);
    nv = len[r] > nv ? len[r] : nv;
  }
  if (nv == 0) {
    zero_rows(t, p->dim_v);
    return;
  }
  float *s = ws->buf;
  ks->score(t->m, nv, p->dim_qk, t->q, t->ldq, t->k, p->k.seq, p->scale, s,
            p->lds);
  ks->softmax(t->m, nv, s, p->lds, p->mask == SA_MASK_NONE ? NULL : len);
  ks->wsum(t->m, nv, p->dim_v, s, p->lds, t->v, p->v.seq, NULL, t->o, t->ldo);
}
