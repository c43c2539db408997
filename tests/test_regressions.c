/*
 * Bugs the fuzzer (fuzz/, make fuzz) found, each as the smallest plain call
 * that showed it, on every kernel set this CPU can run and both tile
 * settings that matter (the library's defaults and small blocks), against
 * the double reference of reference.h.
 *
 * Some of these bugs were undefined behaviour that x86 forgives (a float
 * read from a 2-byte boundary): here they run as ordinary calls, and
 * `make test-sanitize` (UBSan) is what fails on them.
 */
#include "kernels/dtype.h"
#include "tests/reference.h"

#define MAX_SETS 16

static const sa_kernel_set *sets[MAX_SETS];
static int nsets;

/* The call on every set, one thread, with block_kv bkv (0: the default),
 * O (f32, o_floats long) NaN first and then held to the reference. */
static void on_every_set(const view *w, const void *q, const void *k,
                         const void *v, size_t o_floats, size_t bkv) {
  refs r;
  refs_compute(w, &r);
  float *o = xmalloc(o_floats * sizeof(float));
  for (int s = 0; s < nsets; s++) {
    sa_context *ctx = t_context_new(sets[s]->name, 1, SA_PIN_NONE, 0, bkv);
    if (!ctx)
      continue;
    for (size_t x = 0; x < o_floats; x++)
      o[x] = NAN;
    sa_status st = sa_attention(ctx, &w->d, q, k, v, o);
    CHECK(st == SA_OK, "%s: %s (%s)", sets[s]->name, sa_status_str(st),
          sa_last_error());
    if (st == SA_OK)
      check_result(w, &r, o, o_floats, NULL, 0);
    sa_context_destroy(ctx);
  }
  free(o);
  refs_free(&r);
}

/*
 * Paged keys in pages smaller than a key block are gathered into scratch,
 * the block's K rows and then its V rows. V's rows began right where K's
 * ended: with a q8_0 K (34 bytes a block) and an odd number of keys in the
 * block, an f32 V sat on a 2-byte boundary and every load of it was
 * undefined. Found as: B1 Hq3 Hkv3 Lq6 Lkv13 d32/1, K q8_0, V f32, pages of
 * one key, block_kv left to the library (13 keys, one block).
 */
static void gathered_v_after_q8_0_k(void) {
  enum { LQ = 2, LKV = 13, DQK = 32, DV = 3 };
  t_context = "gathered f32 V after q8_0 K rows";
  float q[LQ * DQK], kf[LKV * DQK], kw[LKV * DQK], v[LKV * DV];
  sa_block_q8_0 k[LKV];
  int32_t table[LKV];
  t_fill(q, LQ * DQK, -1, 1);
  t_fill(kf, LKV * DQK, -1, 1);
  t_fill(v, LKV * DV, -2, 2);
  for (size_t j = 0; j < LKV; j++) { /* key j in page 12 - j */
    table[j] = (int32_t)(LKV - 1 - j);
    sa_quantize_q8_0(kf + j * DQK, &k[table[j]]);
  }
  for (size_t pg = 0; pg < LKV; pg++)
    sa_dequantize_q8_0(&k[pg], kw + pg * DQK);
  float vp[LKV * DV];
  for (size_t j = 0; j < LKV; j++)
    memcpy(vp + (size_t)table[j] * DV, v + j * DV, DV * sizeof(float));

  view w;
  memset(&w, 0, sizeof w);
  sa_attention_desc *d = &w.d;
  sa_attention_desc_init(d);
  d->batch = 1, d->heads_q = d->heads_kv = 1;
  d->len_q = LQ, d->len_kv = LKV, d->dim_qk = DQK, d->dim_v = DV;
  d->k_type = SA_Q8_0;
  d->block_table = table, d->block_table_stride = LKV;
  d->page_size = 1, d->num_pages = LKV;
  w.q = q, w.k = kw, w.v = vp;
  w.qs = t_packed(1, LQ, DQK);
  w.os = t_packed(1, LQ, DV);
  w.ks = t_packed(1, 1, DQK); /* widened pages of one key */
  w.vs = t_packed(1, 1, DV);
  for (size_t bkv = 0; bkv <= 13; bkv += 13) /* default, and 13 */
    on_every_set(&w, q, k, vp, LQ * DV, bkv);
}

int main(void) {
  t_seed(11);
  for (size_t i = 0; i < sa_kernel_set_count() && nsets < MAX_SETS; i++)
    if (sa_kernel_set_supported(sa_kernel_set_at(i)))
      sets[nsets++] = sa_kernel_set_at(i);
  gathered_v_after_q8_0_k();
  return t_finish("test_regressions");
}
