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

#include "attention/internal.h"
#include "kernels/dtype.h"
#include "kernels/prefetch.h"

/* Paged keys from `key` on that share its page, at most `most` of them,
 * and where the first one's K and V rows are in the tile's KV head. */
static size_t page_run(const sa_plan *p, const sa_tile_io *t, size_t key,
                       size_t most, const char **k, const char **v) {
  size_t pg = (size_t)p->table[t->b * p->table_ld + key / p->page];
  size_t slot = key % p->page, run = p->page - slot;
  *k = sa_at(t->k, pg * p->k.batch + slot * p->k.seq, p->unit[1]);
  *v = sa_at(t->v, pg * p->v.batch + slot * p->v.seq, p->unit[2]);
  return run < most ? run : most;
}

/* Where keys [j0, j0 + nb) of the tile's KV head are, as rows ld units
 * apart. A paged cache: inside one page when in_place (the caller keeps
 * blocks there), else gathered into scratch. */
static void keys_at(const sa_plan *p, const sa_tile_io *t, sa_scratch *ws,
                    int in_place, size_t j0, size_t nb, const void **k,
                    size_t *ldk, const void **v, size_t *ldv) {
  const size_t ku = p->unit[1], vu = p->unit[2];
  if (!p->table) {
    *k = sa_at(t->k, j0 * p->k.seq, ku);
    *v = sa_at(t->v, j0 * p->v.seq, vu);
    *ldk = p->k.seq;
    *ldv = p->v.seq;
    return;
  }
  if (in_place) {
    const char *ks, *vs;
    page_run(p, t, j0, nb, &ks, &vs);
    *k = ks;
    *v = vs;
    *ldk = p->k.seq;
    *ldv = p->v.seq;
    return;
  }
  /* rows of kdim / vdim units, packed; V's start where K's would end in
   * f32 (plan.c reserves that much), not where they end: q8_0 rows are 34
   * bytes a block, and V right after them would lose float alignment */
  const size_t krow = p->kdim * ku, vrow = p->vdim * vu;
  char *gk = (char *)(ws->buf + p->kvgather);
  char *gv = (char *)(ws->buf + p->kvgather + p->block_kv * p->dim_qk);
  for (size_t j = 0; j < nb;) {
    /* a run of keys in one page: one copy when its rows are adjacent (a
     * head-major page), else one per row */
    const char *ks, *vs;
    size_t run = page_run(p, t, j0 + j, nb - j, &ks, &vs);
    if (p->k.seq == p->kdim)
      memcpy(gk + j * krow, ks, run * krow);
    else
      for (size_t r = 0; r < run; r++)
        memcpy(gk + (j + r) * krow, ks + r * p->k.seq * ku, krow);
    if (p->v.seq == p->vdim)
      memcpy(gv + j * vrow, vs, run * vrow);
    else
      for (size_t r = 0; r < run; r++)
        memcpy(gv + (j + r) * vrow, vs + r * p->v.seq * vu, vrow);
    j += run;
  }
  *k = gk;
  *v = gv;
  *ldk = p->kdim;
  *ldv = p->vdim;
}

/* The addresses of the K and V rows of keys [j0, j0 + nb) of the tile's KV
 * head: in a paged cache page by page, else a stride apart. */
static void rows_at(const sa_plan *p, const sa_tile_io *t, size_t j0, size_t nb,
                    const void **k, const void **v) {
  const size_t kr = p->k.seq * p->unit[1], vr = p->v.seq * p->unit[2];
  if (!p->table) {
    const char *ks = sa_at(t->k, j0 * p->k.seq, p->unit[1]);
    const char *vs = sa_at(t->v, j0 * p->v.seq, p->unit[2]);
    for (size_t j = 0; j < nb; j++) {
      k[j] = ks + j * kr;
      v[j] = vs + j * vr;
    }
    return;
  }
  for (size_t j = 0; j < nb;) {
    const char *ks, *vs;
    size_t run = page_run(p, t, j0 + j, nb - j, &ks, &vs);
    for (size_t r = 0; r < run; r++, j++) {
      k[j] = ks + r * kr;
      v[j] = vs + r * vr;
    }
  }
}

/* The set's decode_rows can take the plan's rows: nothing around the
 * softmax it lacks, and f32 scores from Q (not score_bf16's bf16 Q). */
static int rows_decodable(const sa_kernel_set *ks, const sa_plan *p) {
  return sa_decode_rows_fit(ks, p) && !p->q_direct;
}

/* A paged cache finer than a key block, or a contiguous one plan.c lists
 * for it, read through the set's decode_rows (for tiles of at most
 * SA_DECODE_ROWS rows). */
static int rows_listed(const sa_kernel_set *ks, const sa_plan *p) {
  return rows_decodable(ks, p) && p->list_keys;
}

/* The most keys of the block any of rows [i0, i0 + mg) sees. */
static size_t rows_see(const sa_rows *r, size_t i0, size_t mg) {
  size_t most = 0;
  for (size_t i = i0; i < i0 + mg; i++)
    most = r->hib[i] > most ? r->hib[i] : most;
  return most;
}

/* A block whose rows see keys [0, hib[i]) of it, hib not all equal (the
 * causal diagonal: each row one key further than the row before), whose
 * scores score_upto cannot take (below), in groups of SA_DIAG_ROWS rows, each
 * group's three kernels only over the keys its rows see. The last group takes
 * what is left, up to twice that: with more than 32 rows in every group, score
 * and wsum take the ways they take for the whole tile, so the output is bit for
 * bit the same. The whole block at once would compute the scores and value sums
 * of every key for every row and zero the weights of the keys past each row's
 * end: with 128-row tiles, causal prefill at L 2048 did 6 % more FMAs than its
 * visible ones, 3 % in groups of 64. Each group's scores, softmax and sums are
 * those of the whole block on its rows, less terms whose weights were 0. A
 * group that sees no key of the block keeps its state (alpha 1), and its output
 * rows start at 0 if this is the first block. */
static void diagonal(const sa_kernel_set *ks, const sa_plan *p,
                     const sa_tile_io *t, sa_rows *r, const void *q, size_t ldq,
                     const void *kb, size_t ldk, const void *vb, size_t ldv,
                     float *s, int first) {
  const sa_softmax_online_fn online =
      r->log2 ? ks->softmax_online2 : ks->softmax_online;
  /* Q is f32 here unless bf16 rows go to score_bf16 as they are */
  const size_t qu = p->q_direct ? p->unit[0] : sizeof(float);
  for (size_t i0 = 0, mg; i0 < t->m; i0 += mg) {
    mg = t->m - i0 < 2 * SA_DIAG_ROWS ? t->m - i0 : SA_DIAG_ROWS;
    const size_t ng = rows_see(r, i0, mg);
    float *o = t->o + i0 * t->ldo, *si = s + i0 * p->lds;
    if (!ng) {
      for (size_t i = 0; first && i < mg; i++)
        memset(o + i * t->ldo, 0, p->dim_v * sizeof(float));
      continue;
    }
    sa_score_any(ks, p, mg, ng, sa_at(q, i0 * ldq, qu), ldq, kb, ldk, r->scale,
                 si);
    online(mg, ng, si, p->lds, r->hib + i0, r->mx + i0, r->l + i0,
           r->alpha + i0);
    sa_wsum_any(ks, p, mg, ng, si, vb, ldv, first ? NULL : r->alpha + i0, o,
                t->ldo);
  }
}

/* A block that the tile's rows see to different depths (the causal
 * diagonal, under a softcap, ALiBi, a mask or a window too), its scores
 * through the set's score_upto for every row at once: a register tile is
 * skipped where all its rows have ended, and Kᵀ is packed once for the
 * tile's rows rather than once a group. The value sums stay the driver's
 * to cut: with 2 SA_DIAG_ROWS rows or more in groups of SA_DIAG_ROWS (as
 * `diagonal`), else the whole tile, each over the keys its last row sees.
 * Which terms a row adds decides which non-finite V rows past its end
 * poison it (a 0 weight times Inf), so that cut must be the same in every
 * set, not each set's register tile (wsum_upto's). Each row's scores,
 * score_mod steps, online step and sums are those of the whole block, less
 * terms whose weights were 0: bit for bit the whole block's result where V
 * is finite. f32 K with f32 scores from Q (sa_upto_fits). */
static void upto(const sa_kernel_set *ks, const sa_plan *p, const sa_tile_io *t,
                 sa_scratch *ws, sa_rows *r, size_t j0, int left, const void *q,
                 size_t ldq, const void *kb, size_t ldk, const void *vb,
                 size_t ldv, float *s, int first) {
  const sa_softmax_online_fn online =
      r->log2 ? ks->softmax_online2 : ks->softmax_online;
  const size_t n = rows_see(r, 0, t->m);
  ks->score_upto(t->m, n, p->dim_qk, q, ldq, kb, ldk, r->scale, s, p->lds,
                 r->hib);
  sa_rows_mods(ks, p, t, ws, r, j0, n, left);
  online(t->m, n, s, p->lds, r->hib, r->mx, r->l, r->alpha);
  const size_t g = t->m >= 2 * SA_DIAG_ROWS ? SA_DIAG_ROWS : t->m;
  for (size_t i0 = 0, mg; i0 < t->m; i0 += mg) {
    mg = t->m - i0 < 2 * g ? t->m - i0 : g;
    sa_wsum_any(ks, p, mg, rows_see(r, i0, mg), s + i0 * p->lds, vb, ldv,
                first ? NULL : r->alpha + i0, t->o + i0 * t->ldo, t->ldo);
  }
}

void sa_tile_fused(const sa_kernel_set *ks, const sa_plan *p,
                   const sa_tile_io *t, sa_scratch *ws) {
  const size_t m = t->m, bkv = p->block_kv;
  /* A few rows with nothing around the softmax, on a cache paged finer
   * than a key block: the set's decode_rows takes each block whose keys
   * every row sees, its rows' addresses listed page by page, score to
   * weighted sum in one call whose chunks span pages (the three kernels
   * would pay a gather per block, or three calls and a rescale per page).
   * Contiguous f32 caches take it too for GQA groups of 3 to 8 heads on
   * the cores where it measured faster (plan.c, contiguous_by_rows and
   * rows_on_contiguous); other contiguous tiles keep the three kernels,
   * which stream K and V at least as fast there. */
  const int dec = m <= SA_DECODE_ROWS && rows_listed(ks, p);
  /* Scores are taken in log2 units: scale * log2(e) in score's epilogue,
   * and the online step's exp becomes exp2, whose range reduction is a
   * multiply and an FMA shorter. The softcap and ALiBi slopes scale with
   * them (sa_rows_mods) and a boolean mask's -inf is -inf in any base; an
   * additive mask would need its values scaled, so it keeps base e, and so
   * does decode_rows. */
  const int log2 =
      !dec && !p->mask_add && p->scale2 != 0.0f && ks->softmax_online2;
  const sa_softmax_online_fn online =
      log2 ? ks->softmax_online2 : ks->softmax_online;
  sa_rows r;
  sa_rows_start(p, t, ws, log2, &r);
  const void *q = t->q;
  size_t ldq = t->ldq;
  if (p->in_place) {
    float *copy = ws->buf + p->qcopy;
    for (size_t i = 0; i < m; i++)
      memcpy(copy + i * p->dim_qk, (const float *)t->q + i * t->ldq,
             p->dim_qk * sizeof(float));
    q = copy;
    ldq = p->dim_qk;
  }

  const int in_place = p->table && sa_pages_in_place(p);
  float *s = ws->buf;
  int first = 1;
  size_t nb;
  for (size_t j0 = r.jlo; j0 < r.jhi; j0 += nb) {
    nb = r.jhi - j0 < bkv ? r.jhi - j0 : bkv;
    if (in_place && nb > p->page - j0 % p->page)
      nb = p->page - j0 % p->page; /* a block never spans two pages */
    int partial, left;
    if (dec) {
      /* as many keys as the lists hold when every row sees them all, else
       * a key block when every row sees that */
      size_t nl = r.jhi - j0 < p->list_keys ? r.jhi - j0 : p->list_keys;
      sa_rows_block(p, t, &r, j0, nl, &partial, &left);
      if ((partial || left) && nl > nb)
        sa_rows_block(p, t, &r, j0, nl = nb, &partial, &left);
      nb = nl;
    }
    if (dec && !partial && !left) {
      const void **kl = (const void **)(void *)(ws->buf + p->rowlist);
      const void **vl = kl + p->list_keys;
      rows_at(p, t, j0, nb, kl, vl);
      if (first)
        for (size_t i = 0; i < m; i++)
          memset(t->o + i * t->ldo, 0, p->dim_v * sizeof(float));
      ks->decode_rows(m, nb, p->dim_qk, p->dim_v, q, ldq, kl, p->k_type, vl,
                      p->v_type, p->scale, r.mx, r.l, t->o, t->ldo);
      first = 0;
      continue;
    }
    if (!dec && !sa_rows_block(p, t, &r, j0, nb, &partial, &left))
      continue;
    const void *kb, *vb;
    size_t ldk, ldv;
    keys_at(p, t, ws, in_place, j0, nb, &kb, &ldk, &vb, &ldv);
    if (partial && sa_upto_fits(ks, p)) {
      upto(ks, p, t, ws, &r, j0, left, q, ldq, kb, ldk, vb, ldv, s, first);
      first = 0;
      continue;
    }
    if (partial && !left && !p->mods && m >= 2 * SA_DIAG_ROWS) {
      diagonal(ks, p, t, &r, q, ldq, kb, ldk, vb, ldv, s, first);
      first = 0;
      continue;
    }
    sa_score_any(ks, p, m, nb, q, ldq, kb, ldk, r.scale, s);
    sa_rows_mods(ks, p, t, ws, &r, j0, nb, left);
    online(m, nb, s, p->lds, partial ? r.hib : NULL, r.mx, r.l, r.alpha);
    sa_wsum_any(ks, p, m, nb, s, vb, ldv, first ? NULL : r.alpha, t->o, t->ldo);
    first = 0;
  }
  sa_rows_finish(p, t, &r);
}

/* Decode (one query position a sequence) on pages that decode_rows would
 * take, or on a token-major cache, with nothing around the softmax that
 * decode_rows lacks; Q and O f32 or the plan's room for every tile's
 * widened Q and staged O (narrow), and O not Q (an f32 O would be zeroed
 * over its queries before the last turn). */
int sa_fused_together(const sa_kernel_set *ks, const sa_plan *p) {
  return rows_decodable(ks, p) && sa_decode_by_rows(p) && !p->in_place &&
         ((p->q_type == SA_F32 && p->o_type == SA_F32) || p->together);
}

/* Pages hold every KV head's rows of their keys, one head after another
 * ([pages, heads_kv, page_size, dim]), and a token-major cache every
 * head's row of a token. One tile at a time reads a sequence's pages a
 * head-slice each (8 KiB of 64 at 16 keys, 8 heads, d 128, f32), or a row
 * of each token (512 bytes of 4 KiB), and comes back to the same pages
 * once per head, a whole sequence later; in turns of SA_TOGETHER_KEYS keys
 * of every tile, a page's or a token's rows are all read within a few
 * hundred KiB. Each call's first K rows are named before the call ahead of
 * it, since a call's own prefetch starts at its rows. Every row of a
 * sequence's tiles sees the same keys (one query position, no per-head
 * mask: those are score_mod steps, which sa_fused_together turns away), so
 * a group that does not is one of tiles with no rows (a ragged Q's empty
 * sequence); it goes one tile at a time (sa_tile_fused) rather than
 * assume. */
void sa_tiles_fused_decode(const sa_kernel_set *ks, const sa_plan *p,
                           const sa_tile_io *t, size_t nt, sa_scratch *ws) {
  sa_rows r[SA_TOGETHER_MAX];
  size_t idx[SA_TOGETHER_MAX][5 * SA_DECODE_ROWS];
  float vals[SA_TOGETHER_MAX][5 * SA_DECODE_ROWS];
  const void *kl[SA_TOGETHER_KEYS], *vl[SA_TOGETHER_KEYS];
  int same = 1;
  r[0].jlo = r[0].jhi = 0;
  for (size_t g = 0; g < nt && same; g++) {
    int partial = 0, left = 0;
    same = t[g].m > 0 && t[g].m <= SA_DECODE_ROWS;
    if (!same)
      break;
    sa_rows_start_in(p, &t[g], idx[g], vals[g], SA_DECODE_ROWS, 0, &r[g]);
    same = r[g].jlo == r[0].jlo && r[g].jhi == r[0].jhi;
    if (same && r[g].jlo < r[g].jhi)
      sa_rows_block(p, &t[g], &r[g], r[g].jlo, r[g].jhi - r[g].jlo, &partial,
                    &left);
    same = same && !partial && !left;
  }
  if (!same) {
    for (size_t g = 0; g < nt; g++)
      if (t[g].m)
        sa_tile_fused(ks, p, &t[g], ws);
    return;
  }
  const size_t jlo = r[0].jlo, jhi = r[0].jhi;
  for (size_t g = 0; g < nt && jlo < jhi; g++)
    for (size_t i = 0; i < t[g].m; i++)
      memset(t[g].o + i * t[g].ldo, 0, p->dim_v * sizeof(float));
  const size_t krow = sa_dtype_row(p->k_type, p->dim_qk) * p->unit[1];
  size_t ahead = 4096 / krow; /* rows: 4 KiB of K */
  ahead = ahead < 1 ? 1 : ahead > 16 ? 16 : ahead;
  for (size_t j0 = jlo; j0 < jhi; j0 += SA_TOGETHER_KEYS) {
    size_t nb = jhi - j0 < SA_TOGETHER_KEYS ? jhi - j0 : SA_TOGETHER_KEYS;
    for (size_t g = 0; g < nt; g++) {
      /* the next call's first rows: the next tile's, or the first tile's
       * next turn */
      size_t gn = g + 1 < nt ? g + 1 : 0;
      size_t jn = g + 1 < nt ? j0 : j0 + SA_TOGETHER_KEYS;
      if (jn < jhi) {
        const void *pk[16], *pv[16];
        size_t np = jhi - jn < ahead ? jhi - jn : ahead;
        rows_at(p, &t[gn], jn, np, pk, pv);
        for (size_t x = 0; x < np; x++)
          for (size_t b = 0; b < krow; b += 64)
            sa_prefetch_line((const char *)pk[x] + b, 1);
      }
      rows_at(p, &t[g], j0, nb, kl, vl);
      ks->decode_rows(t[g].m, nb, p->dim_qk, p->dim_v, t[g].q, t[g].ldq, kl,
                      p->k_type, vl, p->v_type, p->scale, r[g].mx, r[g].l,
                      t[g].o, t[g].ldo);
    }
  }
  for (size_t g = 0; g < nt; g++)
    sa_rows_finish(p, &t[g], &r[g]);
}
