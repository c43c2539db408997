/*
 * Whole attention, both drivers, on every kernel set this CPU can run,
 * against the naive double-precision attention of testing.h.
 *
 * The sweep is random but seeded, and every case mixes: sizes of 1 and odd
 * sizes, len_q != len_kv both ways, MHA / GQA / MQA, no mask and both causal
 * alignments (bottom-right with len_q > len_kv leaves rows that see no key:
 * they must be exact zeros), packed [B,H,L,D], [B,L,H,D] and padded layouts,
 * dim_qk != dim_v, logits up to 1e4 in magnitude, and tile sizes small
 * enough that tiles and key blocks end mid-way.
 *
 * Every tensor ends at a guard page, and O starts out NaN-filled: gaps the
 * layout leaves between output rows must still be NaN afterwards, and every
 * output element must have been written.
 *
 * Where the algorithms guarantee bits, the check is bits: a row that sees
 * exactly one key gets weight exp(0) = 1 exactly on every set, and 1 * v
 * plus exact zeros, divided by a sum of 1, is v: both drivers (and so any
 * two runs) must return that key's V row bit for bit, which no tolerance
 * would notice being a few ULP off.
 */
#include "tests/testing.h"

static t_layout make_layout(int kind, size_t b, size_t h, size_t l, size_t d) {
  return t_make_layout(kind, b, h, l, d, kind == 2 ? t_range(1, 3) : 0);
}

static size_t pick_len(void) {
  static const size_t lens[] = {1, 2, 3, 5, 7, 16, 17, 31, 33, 64, 65, 100};
  return lens[t_next() % (sizeof lens / sizeof lens[0])];
}

static size_t pick_dim(void) {
  static const size_t dims[] = {1, 3, 8, 15, 16, 17, 31, 48, 64, 65, 80, 128};
  return dims[t_next() % (sizeof dims / sizeof dims[0])];
}

static long one_key_rows; /* rows held to their key's v bit for bit */

/* Cases with random block sizes and lengths up to 100, then a few long
 * ones, with the library's default blocks (even ids) or tiles of 128-300
 * rows (odd ids: the causal diagonal in row groups, attention/fused.c). */
enum { SHORT_CASES = 400, LONG_CASES = 10 };

static int run_case(int id, const sa_kernel_set **sets, int nsets) {
  sa_attention_desc d;
  sa_attention_desc_init(&d);
  d.batch = t_range(1, 2);
  d.heads_kv = t_range(1, 3);
  d.heads_q = d.heads_kv * t_range(1, 4);
  if (id % 7 == 0)
    d.heads_kv = 1, d.heads_q = t_range(1, 5); /* MQA */
  d.len_q = pick_len();
  d.len_kv = pick_len();
  if (id >= SHORT_CASES) {
    /* long enough for several of the default blocks (128 rows x 512 keys
     * where a core's L2 holds them) and their tails */
    d.batch = 1;
    d.heads_kv = 1;
    d.heads_q = t_range(1, 2);
    d.len_q = 129 + t_next() % 200;
    d.len_kv = 513 + t_next() % 700;
  }
  d.dim_qk = pick_dim();
  d.dim_v = id % 3 ? pick_dim() : d.dim_qk;
  d.mask = (sa_mask)(t_next() % 3);
  if (id >= SHORT_CASES && id % 2) /* tiles of 128-300 rows: causal */
    d.mask =
        id % 4 == 1 ? SA_MASK_CAUSAL_TOP_LEFT : SA_MASK_CAUSAL_BOTTOM_RIGHT;
  int big = id % 5 == 0; /* logits ~1e4: exp must not overflow */
  d.scale = big ? 4e4f / (float)d.dim_qk : (id % 2 ? 0.0f : t_uniform(0.1f, 2));
  double scale = d.scale != 0.0f ? d.scale : 1.0 / sqrt((double)d.dim_qk);

  int lk = (int)(t_next() % 3);
  t_layout lq = make_layout(lk, d.batch, d.heads_q, d.len_q, d.dim_qk);
  t_layout lkk =
      make_layout((int)(t_next() % 3), d.batch, d.heads_kv, d.len_kv, d.dim_qk);
  t_layout lv =
      make_layout((int)(t_next() % 3), d.batch, d.heads_kv, d.len_kv, d.dim_v);
  t_layout lo = make_layout(lk, d.batch, d.heads_q, d.len_q, d.dim_v);
  d.q = lq.st, d.k = lkk.st, d.v = lv.st, d.o = lo.st;

  guarded gq = g_alloc(lq.floats), gk = g_alloc(lkk.floats),
          gv = g_alloc(lv.floats), go = g_alloc(lo.floats);
  t_fill(gq.p, lq.floats, -1, 1);
  t_fill(gk.p, lkk.floats, -1, 1);
  t_fill(gv.p, lv.floats, -2, 2);

  /* the reference and its tolerance, per output element */
  size_t rows = d.batch * d.heads_q * d.len_q;
  double *ref = malloc(rows * d.dim_v * sizeof(double));
  double *tol = malloc(rows * d.dim_v * sizeof(double));
  size_t *vis = malloc(rows * sizeof(size_t));
  double *pbuf = malloc(d.len_kv * sizeof(double));
  sa_attention_desc rd = d;
  rd.q = lq.rs, rd.k = lkk.rs, rd.v = lv.rs, rd.o = lo.rs;
  size_t r = 0;
  for (size_t b = 0; b < d.batch; b++)
    for (size_t h = 0; h < d.heads_q; h++)
      for (size_t i = 0; i < d.len_q; i++, r++)
        vis[r] = t_reference_row(&rd, gq.p, gk.p, gv.p, b, h, i, scale, pbuf,
                                 ref + r * d.dim_v, tol + r * d.dim_v);

  int bad = 0;
  for (int s = 0; s < nsets; s++)
    for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
      sa_context_options opt;
      sa_context_options_init(&opt);
      opt.isa = sets[s]->name;
      opt.num_threads = 1;
      opt.block_q = id % 2 && id < SHORT_CASES ? t_range(1, 9) : 0;
      opt.block_kv = id % 2 && id < SHORT_CASES ? t_range(1, 40) : 0;
      if (id % 2 && id >= SHORT_CASES)
        opt.block_q = t_range(128, 300), opt.block_kv = t_range(32, 600);
      sa_context *ctx;
      sa_status st = sa_context_create(&opt, &ctx);
      CHECK(st == SA_OK, "context %s: %s", sets[s]->name, sa_status_str(st));
      if (st)
        continue;
      d.algorithm = (sa_algorithm)algo;
      for (size_t x = 0; x < lo.floats; x++)
        go.p[x] = NAN;
      st = sa_attention(ctx, &d, gq.p, gk.p, gv.p, go.p);
      sa_context_destroy(ctx);
      CHECK(st == SA_OK, "attention: %s (%s)", sa_status_str(st),
            sa_last_error());
      int before = t_failed;
      char where[160];
      snprintf(where, sizeof where,
               "case %d %s %s B%zu Hq%zu Hkv%zu Lq%zu Lk%zu d%zu/%zu mask%d "
               "t_layout%d",
               id, sets[s]->name, algo == SA_ALGO_FUSED ? "fused" : "3pass",
               d.batch, d.heads_q, d.heads_kv, d.len_q, d.len_kv, d.dim_qk,
               d.dim_v, (int)d.mask, lk);
      t_context = where;
      r = 0;
      for (size_t b = 0; b < d.batch; b++)
        for (size_t h = 0; h < d.heads_q; h++)
          for (size_t i = 0; i < d.len_q; i++, r++) {
            const float *orow =
                go.p + b * lo.rs.batch + h * lo.rs.head + i * lo.rs.seq;
            for (size_t c = 0; c < d.dim_v; c++) {
              double want = ref[r * d.dim_v + c];
              float got = orow[c];
              if (vis[r] == 0)
                CHECK(got == 0.0f,
                      "row with no visible key: (%zu,%zu,%zu) "
                      "c%zu = %g",
                      b, h, i, c, got);
              else if (vis[r] == 1) { /* want is that key's v, exactly */
                one_key_rows += c == 0;
                CHECK(got == want,
                      "row with one visible key: (%zu,%zu,%zu) c%zu = %.9g, "
                      "not its v %.9g",
                      b, h, i, c, got, want);
              } else
                CHECK(fabs(got - want) <= tol[r * d.dim_v + c],
                      "(%zu,%zu,%zu) c%zu: %.9g vs %.9g (tol %.3g)", b, h, i, c,
                      got, want, tol[r * d.dim_v + c]);
            }
          }
      /* the gaps between rows and heads of a padded t_layout stay NaN */
      if (lk == 2) {
        size_t written = 0, nan = 0;
        for (size_t x = 0; x < lo.floats; x++)
          nan += isnan(go.p[x]);
        written = rows * d.dim_v;
        CHECK(nan == lo.floats - written, "%zu gap floats overwritten",
              lo.floats - written - nan);
      }
      bad |= t_failed != before;
    }
  free(ref), free(tol), free(vis), free(pbuf);
  g_free(&gq), g_free(&gk), g_free(&gv), g_free(&go);
  return bad;
}

/* A hand-checked case: one key is visible, so the output is exactly its
 * value row; a uniform row of scores averages V. */
static void test_exact(void) {
  t_context = "exact";
  float q[2 * 2] = {1, 0, 1, 0}, k[3 * 2] = {0, 0, 0, 5, -1, 2},
              v[3 * 2] = {1, 2, 3, 4, 5, 6}, o[2 * 2];
  sa_attention_desc d;
  sa_attention_desc_init(&d);
  d.batch = d.heads_q = d.heads_kv = 1;
  d.len_q = 2, d.len_kv = 3, d.dim_qk = d.dim_v = 2;
  d.mask = SA_MASK_CAUSAL_TOP_LEFT;
  d.scale = 1.0f;
  CHECK(sa_attention(NULL, &d, q, k, v, o) == SA_OK, "exact call");
  /* row 0 sees key 0 only */
  CHECK(o[0] == 1.0f && o[1] == 2.0f, "row 0 = (%g, %g)", o[0], o[1]);
  /* row 1 sees keys 0, 1 with scores 0 and 0: weights 1/2 */
  CHECK(fabsf(o[2] - 2.0f) < 1e-6f && fabsf(o[3] - 3.0f) < 1e-6f,
        "row 1 = (%g, %g)", o[2], o[3]);
}

int main(void) {
  t_seed(3);
  const sa_kernel_set *sets[32];
  int n = t_runnable_sets(sets, 32);
  test_exact();
  int bad_cases = 0, cases = SHORT_CASES + LONG_CASES;
  for (int id = 0; id < cases; id++)
    bad_cases += run_case(id, sets, n);
  for (int s = 0; s < n; s++)
    printf("%-16s tested: three-pass and fused, %d cases\n", sets[s]->name,
           cases);
  printf("%ld rows with one visible key checked bit for bit\n", one_key_rows);
  printf("%d of %d cases failed\n", bad_cases, cases);
  return t_finish("test_attention");
}
