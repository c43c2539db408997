/*
 * The API 0.2 contract of include/simdattn.h, through the public calls, on
 * every kernel set this CPU can run (found through the registry) and with
 * both algorithms:
 *
 * 1. Growable structs: an older caller's sa_context_options (the minimum
 *    size, ending at a guard page) gets the defaults of the newer fields; a
 *    newer caller's desc or options works when its unknown tail is zero and
 *    fails with SA_ERR_STRUCT_SIZE, writing nothing, when any byte of it is
 *    not; a minimum-size desc at a guard page works.
 * 2. In place (O == Q): bit-identical to the out-of-place call on the same
 *    context, packed and [B,L,H,D], every mask, GQA decode, several key
 *    blocks per row.
 * 3. The Numerics rules: NaN in the first key block, every score -Inf, a
 *    first block of -Inf only, +Inf scores, rows that see no key with NaN
 *    and Inf in V; key blocks of 1 and the default.
 * 4. A negative scale against the double reference; -0 means the default.
 * 5. A caller's workspace of exactly sa_attention_workspace bytes, at any
 *    alignment, gives the library's own result bit for bit; a smaller one
 *    is SA_ERR_WORKSPACE with O untouched; a pointer without a size (or a
 *    size without a pointer) is refused.
 * 6. cpus / first_core: range and parse errors, SA_PIN_NONE ignoring them,
 *    two workers confined to one core, and first_core moving workers onto
 *    other cores, as far as the machine has cores and lets us bind.
 * 7. spin_us: range errors; every accepted value gives one worker's result
 *    bit for bit on two, with workers awake and woken from sleep.
 */
#include <hwloc.h>
#include <limits.h>
#include <stddef.h>
#include <time.h>

#include "attention/internal.h"
#include "tests/testing.h"
#include "threads/placement.h"
#include "threads/topology.h"

static const sa_kernel_set *sets[32];
static int nsets, skipped;
static char where[200];

static void skip(const char *why) {
  skipped++;
  printf("SKIPPED: %s\n", why);
}

static const char *algo_name(int algo) {
  return algo == SA_ALGO_FUSED ? "fused" : "3pass";
}

/* Elements from a tensor's base to just past its last element. */
static size_t span(sa_strides s, size_t b, size_t h, size_t l, size_t d) {
  return (b - 1) * s.batch + (h - 1) * s.head + (l - 1) * s.seq + d;
}

/* Strides always spelled out, so the reference can read them as they are. */
static sa_attention_desc make_desc(size_t b, size_t hq, size_t hkv, size_t lq,
                                   size_t lkv, size_t dqk, size_t dv,
                                   sa_mask mask) {
  sa_attention_desc d;
  sa_attention_desc_init(&d);
  d.batch = b;
  d.heads_q = hq;
  d.heads_kv = hkv;
  d.len_q = lq;
  d.len_kv = lkv;
  d.dim_qk = dqk;
  d.dim_v = dv;
  d.mask = mask;
  d.q = t_packed(hq, lq, dqk);
  d.k = t_packed(hkv, lkv, dqk);
  d.v = t_packed(hkv, lkv, dv);
  d.o = t_packed(hq, lq, dv);
  return d;
}

typedef struct bufs {
  guarded q, k, v, o;
  size_t nq, nk, nv, no;
} bufs;

static bufs bufs_new(const sa_attention_desc *d) {
  bufs b;
  b.nq = span(d->q, d->batch, d->heads_q, d->len_q, d->dim_qk);
  b.nk = span(d->k, d->batch, d->heads_kv, d->len_kv, d->dim_qk);
  b.nv = span(d->v, d->batch, d->heads_kv, d->len_kv, d->dim_v);
  b.no = span(d->o, d->batch, d->heads_q, d->len_q, d->dim_v);
  b.q = g_alloc(b.nq);
  b.k = g_alloc(b.nk);
  b.v = g_alloc(b.nv);
  b.o = g_alloc(b.no);
  t_fill(b.q.p, b.nq, -1, 1);
  t_fill(b.k.p, b.nk, -1, 1);
  t_fill(b.v.p, b.nv, -2, 2);
  return b;
}

static void bufs_free(bufs *b) {
  g_free(&b->q), g_free(&b->k), g_free(&b->v), g_free(&b->o);
}

static void fill(float *x, size_t n, float value) {
  for (size_t i = 0; i < n; i++)
    x[i] = value;
}

/* n if a and b are bit-identical, else the first float that differs. */
static size_t first_diff(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (memcmp(a + i, b + i, sizeof(float)) != 0)
      return i;
  return n;
}

static int all_bytes(const void *p, size_t n, unsigned char c) {
  const unsigned char *u = p;
  for (size_t i = 0; i < n; i++)
    if (u[i] != c)
      return 0;
  return 1;
}

/* `bytes` bytes that end right before a PROT_NONE page: a struct read or
 * written one byte past its size faults. Sizes here are multiples of 8 and
 * pages are aligned, so a size_t at the start is aligned too. */
static void *at_guard(guarded *g, size_t bytes) {
  size_t floats = (bytes + sizeof(float) - 1) / sizeof(float);
  *g = g_alloc(floats);
  return (char *)g->p + floats * sizeof(float) - bytes;
}

/* Numeric contexts are unpinned: results do not depend on placement, which
 * section 6 checks on its own. */
static sa_context *ctx_new(const char *isa, int threads, size_t bq,
                           size_t bkv) {
  return t_context_new(isa, threads, SA_PIN_NONE, bq, bkv);
}

/* One call of d on a fresh one-thread context of isa, into bf->o filled
 * with a sentinel first; 1 when it returned SA_OK. */
static int call_on(const char *isa, sa_algorithm algo, size_t bq, size_t bkv,
                   sa_attention_desc *d, bufs *bf) {
  sa_context *ctx = ctx_new(isa, 1, bq, bkv);
  if (!ctx)
    return 0;
  d->algorithm = algo;
  fill(bf->o.p, bf->no, 7.0f);
  sa_status st = sa_attention(ctx, d, bf->q.p, bf->k.p, bf->v.p, bf->o.p);
  CHECK(st == SA_OK, "%s", sa_last_error());
  sa_context_destroy(ctx);
  return st == SA_OK;
}

static const float *row_at(const float *base, sa_strides s, size_t b, size_t h,
                           size_t i) {
  return base + b * s.batch + h * s.head + i * s.seq;
}

static double scale_of(const sa_attention_desc *d) {
  return d->scale != 0.0f ? (double)d->scale : 1.0 / sqrt((double)d->dim_qk);
}

static double t_p[512], t_ref[128], t_tol[128];

/* One output row against the double reference of testing.h (rows that see
 * no key must be exact zeros). One CHECK per row, naming the worst column. */
static void check_row(const sa_attention_desc *d, const float *q,
                      const float *k, const float *v, size_t b, size_t h,
                      size_t i, const float *orow) {
  size_t nv =
      t_reference_row(d, q, k, v, b, h, i, scale_of(d), t_p, t_ref, t_tol);
  size_t bad = d->dim_v;
  for (size_t c = 0; c < d->dim_v && bad == d->dim_v; c++)
    if (nv == 0 ? orow[c] != 0.0f : !(fabs(orow[c] - t_ref[c]) <= t_tol[c]))
      bad = c;
  CHECK(bad == d->dim_v,
        "row (%zu,%zu,%zu) c%zu: %.9g vs reference %.9g (tol %.3g)", b, h, i,
        bad, bad < d->dim_v ? orow[bad] : 0.0,
        bad < d->dim_v ? t_ref[bad] : 0.0, bad < d->dim_v ? t_tol[bad] : 0.0);
}

static void check_all(const sa_attention_desc *d, const float *q,
                      const float *k, const float *v, const float *o) {
  for (size_t b = 0; b < d->batch; b++)
    for (size_t h = 0; h < d->heads_q; h++)
      for (size_t i = 0; i < d->len_q; i++)
        check_row(d, q, k, v, b, h, i, row_at(o, d->o, b, h, i));
}

/* ------------------------------------------------------ 1. growable structs */

static void test_abi(void) {
  t_context = "version";
  CHECK(sa_version() == SA_VERSION, "sa_version() = %u, header says %d",
        sa_version(), SA_VERSION);
  CHECK(strcmp(sa_version_string(), SA_VERSION_STRING) == 0,
        "sa_version_string() = \"%s\", header says \"%s\"", sa_version_string(),
        SA_VERSION_STRING);

  sa_attention_desc d =
      make_desc(1, 2, 1, 5, 19, 16, 8, SA_MASK_CAUSAL_TOP_LEFT);
  bufs bf = bufs_new(&d);
  float *want = malloc(bf.no * sizeof(float));

  const size_t opt_min = SA_CONTEXT_OPTIONS_MIN_SIZE;
  const size_t desc_min = SA_ATTENTION_DESC_MIN_SIZE;
  const size_t desc_big = sizeof(sa_attention_desc) + 64;
  const size_t opt_big = sizeof(sa_context_options) + 64;
  t_context = "abi sizes";
  CHECK(opt_min % 8 == 0 && desc_min % 8 == 0 && desc_big % 8 == 0 &&
            opt_big % 8 == 0,
        "struct sizes %zu %zu %zu %zu: the guard placement needs multiples of "
        "8",
        opt_min, desc_min, desc_big, opt_big);
  guarded g_old, g_min, g_nd, g_no;
  unsigned char *old = at_guard(&g_old, opt_min);
  unsigned char *mind = at_guard(&g_min, desc_min);
  unsigned char *nd = at_guard(&g_nd, desc_big);
  unsigned char *no = at_guard(&g_no, opt_big);

  static max_align_t sentinel_obj;
  sa_context *const sentinel = (sa_context *)(void *)&sentinel_obj;

  for (int s = 0; s < nsets; s++) {
    const char *isa = sets[s]->name;
    snprintf(where, sizeof where, "abi %s", isa);
    t_context = where;
    sa_context *ctx = ctx_new(isa, 1, 0, 0);
    if (!ctx)
      continue;

    /* An older caller: the fields past block_kv do not exist for it. The
     * full struct's tail holds values that would fail if they were read,
     * and the guard page stands where they would be. */
    sa_context_options full;
    sa_context_options_init(&full);
    full.struct_size = opt_min;
    full.isa = isa;
    full.num_threads = 1;
    full.cpus = "garbage!";
    full.first_core = -1;
    full.workspace = &full;
    full.workspace_bytes = 1;
    full.spin_us = -5;
    memcpy(old, &full, opt_min);
    sa_context *octx = NULL;
    sa_status st =
        sa_context_create((const sa_context_options *)(void *)old, &octx);
    CHECK(st == SA_OK, "older options (%zu bytes): %s (%s)", opt_min,
          sa_status_str(st), sa_last_error());
    if (octx) {
      CHECK(octx->workspace == NULL && octx->pool_cfg.cpus == NULL &&
                octx->pool_cfg.first_core == 0 && octx->nthreads == 1,
            "older options: newer fields not at their defaults (workspace "
            "%p, cpus %p, first_core %d, threads %d)",
            (void *)octx->workspace, (const void *)octx->pool_cfg.cpus,
            octx->pool_cfg.first_core, octx->nthreads);
      for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
        d.algorithm = (sa_algorithm)algo;
        fill(bf.o.p, bf.no, NAN);
        st = sa_attention(octx, &d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
        CHECK(st == SA_OK, "older options, %s: %s (%s)", algo_name(algo),
              sa_status_str(st), sa_last_error());
        if (st == SA_OK)
          check_all(&d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
      }
      sa_context_destroy(octx);
    }
    size_t too_small = opt_min - 1;
    memcpy(old, &too_small, sizeof too_small);
    octx = sentinel;
    st = sa_context_create((const sa_context_options *)(void *)old, &octx);
    CHECK(st == SA_ERR_STRUCT_SIZE && octx == sentinel,
          "options struct_size %zu: %s, out %s", too_small, sa_status_str(st),
          octx == sentinel ? "untouched" : "written");

    for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
      snprintf(where, sizeof where, "abi %s %s", isa, algo_name(algo));
      d.algorithm = (sa_algorithm)algo;
      fill(want, bf.no, NAN);
      st = sa_attention(ctx, &d, bf.q.p, bf.k.p, bf.v.p, want);
      CHECK(st == SA_OK, "plain desc: %s", sa_last_error());

      /* A newer caller's desc: its tail is fields this library lacks. */
      memset(nd, 0, desc_big);
      memcpy(nd, &d, sizeof d);
      memcpy(nd, &desc_big, sizeof desc_big);
      const sa_attention_desc *ndp = (const void *)nd;
      fill(bf.o.p, bf.no, NAN);
      st = sa_attention(ctx, ndp, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
      CHECK(st == SA_OK, "desc of %zu bytes, zero tail: %s (%s)", desc_big,
            sa_status_str(st), sa_last_error());
      size_t at = first_diff(bf.o.p, want, bf.no);
      CHECK(at == bf.no, "desc of %zu bytes: float %zu differs", desc_big, at);
      size_t tail[2] = {sizeof d, desc_big - 1};
      for (int t = 0; t < 2; t++) {
        nd[tail[t]] = 1;
        memset(bf.o.p, 0x5a, bf.no * sizeof(float));
        st = sa_attention(ctx, ndp, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
        CHECK(st == SA_ERR_STRUCT_SIZE,
              "desc of %zu bytes, byte %zu set: %s, want SA_ERR_STRUCT_SIZE",
              desc_big, tail[t], sa_status_str(st));
        CHECK(all_bytes(bf.o.p, bf.no * sizeof(float), 0x5a),
              "desc byte %zu set: the output was written", tail[t]);
        nd[tail[t]] = 0;
      }

      /* The smallest desc this library accepts reads nothing past it. */
      memcpy(mind, &d, desc_min);
      memcpy(mind, &desc_min, sizeof desc_min);
      fill(bf.o.p, bf.no, NAN);
      st =
          sa_attention(ctx, (const void *)mind, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
      CHECK(st == SA_OK, "desc of %zu bytes (the minimum): %s (%s)", desc_min,
            sa_status_str(st), sa_last_error());
      at = first_diff(bf.o.p, want, bf.no);
      CHECK(at == bf.no, "minimum desc: float %zu differs", at);
      size_t small = desc_min - 1;
      memcpy(mind, &small, sizeof small);
      memset(bf.o.p, 0x5a, bf.no * sizeof(float));
      st =
          sa_attention(ctx, (const void *)mind, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
      CHECK(st == SA_ERR_STRUCT_SIZE &&
                all_bytes(bf.o.p, bf.no * sizeof(float), 0x5a),
            "desc struct_size %zu: %s", small, sa_status_str(st));
    }

    /* A newer caller's options, same rule. */
    snprintf(where, sizeof where, "abi %s options", isa);
    sa_context_options base;
    sa_context_options_init(&base);
    base.isa = isa;
    base.num_threads = 1;
    memset(no, 0, opt_big);
    memcpy(no, &base, sizeof base);
    memcpy(no, &opt_big, sizeof opt_big);
    const sa_context_options *nop = (const void *)no;
    octx = NULL;
    st = sa_context_create(nop, &octx);
    CHECK(st == SA_OK, "options of %zu bytes, zero tail: %s (%s)", opt_big,
          sa_status_str(st), sa_last_error());
    if (octx) {
      d.algorithm = SA_ALGO_FUSED;
      fill(bf.o.p, bf.no, NAN);
      st = sa_attention(octx, &d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
      CHECK(st == SA_OK && first_diff(bf.o.p, want, bf.no) == bf.no,
            "context from options of %zu bytes: %s, result differs", opt_big,
            sa_status_str(st));
      sa_context_destroy(octx);
    }
    size_t tail[2] = {sizeof base, opt_big - 1};
    for (int t = 0; t < 2; t++) {
      no[tail[t]] = 0x80;
      octx = sentinel;
      st = sa_context_create(nop, &octx);
      CHECK(st == SA_ERR_STRUCT_SIZE && octx == sentinel,
            "options of %zu bytes, byte %zu set: %s, out %s", opt_big, tail[t],
            sa_status_str(st), octx == sentinel ? "untouched" : "written");
      if (st == SA_OK && octx != sentinel)
        sa_context_destroy(octx);
      no[tail[t]] = 0;
    }
    sa_context_destroy(ctx);
  }
  free(want);
  g_free(&g_old), g_free(&g_min), g_free(&g_nd), g_free(&g_no);
  bufs_free(&bf);
}

/* ------------------------------------------------------------ 2. in place */

/* d: O's strides are Q's, dim_v == dim_qk, and the layout leaves no gaps,
 * so the whole buffer is compared. */
static void in_place_case(const char *tag, sa_attention_desc d, int threads,
                          size_t bq, size_t bkv) {
  size_t nq = span(d.q, d.batch, d.heads_q, d.len_q, d.dim_qk);
  size_t nk = span(d.k, d.batch, d.heads_kv, d.len_kv, d.dim_qk);
  size_t nv = span(d.v, d.batch, d.heads_kv, d.len_kv, d.dim_v);
  guarded q0 = g_alloc(nq), qi = g_alloc(nq), o = g_alloc(nq);
  guarded k = g_alloc(nk), v = g_alloc(nv);
  t_fill(q0.p, nq, -1, 1);
  t_fill(k.p, nk, -1, 1);
  t_fill(v.p, nv, -2, 2);
  for (int s = 0; s < nsets; s++)
    for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
      snprintf(where, sizeof where,
               "in place %s %s %s B%zu Hq%zu Hkv%zu Lq%zu Lk%zu d%zu mask%d "
               "x%d bq%zu bkv%zu",
               tag, sets[s]->name, algo_name(algo), d.batch, d.heads_q,
               d.heads_kv, d.len_q, d.len_kv, d.dim_qk, (int)d.mask, threads,
               bq, bkv);
      t_context = where;
      sa_context *ctx = ctx_new(sets[s]->name, threads, bq, bkv);
      if (!ctx)
        continue;
      d.algorithm = (sa_algorithm)algo;
      fill(o.p, nq, NAN);
      sa_status st = sa_attention(ctx, &d, q0.p, k.p, v.p, o.p);
      CHECK(st == SA_OK, "out of place: %s (%s)", sa_status_str(st),
            sa_last_error());
      memcpy(qi.p, q0.p, nq * sizeof(float));
      st = sa_attention(ctx, &d, qi.p, k.p, v.p, qi.p);
      CHECK(st == SA_OK, "in place: %s (%s)", sa_status_str(st),
            sa_last_error());
      size_t at = first_diff(qi.p, o.p, nq);
      CHECK(at == nq,
            "O == Q differs from out of place at float %zu: %.9g vs %.9g", at,
            at < nq ? qi.p[at] : 0.0, at < nq ? o.p[at] : 0.0);
      sa_context_destroy(ctx);
    }
  g_free(&q0), g_free(&qi), g_free(&o), g_free(&k), g_free(&v);
}

static void test_in_place(void) {
  for (int m = SA_MASK_NONE; m <= SA_MASK_CAUSAL_BOTTOM_RIGHT; m++) {
    sa_mask mask = (sa_mask)m;
    in_place_case("packed", make_desc(2, 2, 2, 37, 37, 24, 24, mask), 1, 8, 16);

    /* [B,L,H,D] given as strides: a row's heads interleave with the next
     * position's, so a tile's rows are not contiguous */
    sa_attention_desc d = make_desc(2, 4, 2, 29, 45, 16, 16, mask);
    d.q = d.o = (sa_strides){29 * 4 * 16, 16, 4 * 16};
    d.k = d.v = (sa_strides){45 * 2 * 16, 16, 2 * 16};
    in_place_case("[B,L,H,D]", d, 1, 8, 16);

    /* decode: a KV group's query heads are the tile's rows; block_q 3
     * splits a group of four */
    in_place_case("decode", make_desc(2, 8, 2, 1, 50, 32, 32, mask), 1, 0, 16);
    in_place_case("decode", make_desc(2, 8, 2, 1, 50, 32, 32, mask), 1, 3, 16);

    /* bottom-right with len_q > len_kv: rows that see no key get zeros */
    in_place_case("cross", make_desc(1, 2, 1, 40, 23, 8, 8, mask), 2, 8, 16);
  }
}

/* ------------------------------------------------------------ 3. numerics */

/* Rows that see no key are exact zeros; every other row is all NaN. */
static void check_nan_rows(const sa_attention_desc *d, const float *o) {
  for (size_t b = 0; b < d->batch; b++)
    for (size_t h = 0; h < d->heads_q; h++)
      for (size_t i = 0; i < d->len_q; i++) {
        const float *r = row_at(o, d->o, b, h, i);
        size_t vis = t_visible(d, i), bad = d->dim_v;
        for (size_t c = 0; c < d->dim_v && bad == d->dim_v; c++)
          if (vis == 0 ? r[c] != 0.0f : !isnan(r[c]))
            bad = c;
        CHECK(bad == d->dim_v,
              "row (%zu,%zu,%zu) sees %zu keys: c%zu = %g, "
              "want %s",
              b, h, i, vis, bad, bad < d->dim_v ? r[bad] : 0.0,
              vis ? "NaN" : "0");
      }
}

static const size_t default_and_one[] = {0, 1};

static void test_nan_first_key(void) {
  sa_mask masks[] = {SA_MASK_NONE, SA_MASK_CAUSAL_BOTTOM_RIGHT};
  for (int m = 0; m < 2; m++) {
    /* bottom-right, 24 queries on 20 keys: rows 0-3 see no key */
    sa_attention_desc d = make_desc(1, 2, 1, 24, 20, 8, 8, masks[m]);
    bufs bf = bufs_new(&d);
    bf.k.p[2] = NAN; /* key 0: in the first block of every row */
    for (int s = 0; s < nsets; s++)
      for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++)
        for (int bi = 0; bi < 2; bi++) {
          size_t bkv = default_and_one[bi];
          snprintf(where, sizeof where, "NaN in key 0, %s %s mask%d bkv%zu",
                   sets[s]->name, algo_name(algo), (int)d.mask, bkv);
          t_context = where;
          if (!call_on(sets[s]->name, (sa_algorithm)algo, 0, bkv, &d, &bf))
            continue;
          check_nan_rows(&d, bf.o.p);
        }
    bufs_free(&bf);
  }
}

/*
 * Scores of +-Inf from finite inputs: q[0] = 1e30 against k[0] = -+1e30
 * overflows the product. Even rows carry the 1e30; odd rows have q[0] = 0,
 * so their scores stay finite (0 * 1e30 = 0) and the reference holds them.
 */
static void big_q(const sa_attention_desc *d, float *q) {
  for (size_t i = 0; i < d->len_q; i++)
    q[i * d->q.seq] = i % 2 == 0 ? 1e30f : 0.0f;
}

static void check_mixed(const sa_attention_desc *d, const float *q,
                        const float *k, const float *v, const float *o) {
  for (size_t i = 0; i < d->len_q; i++) {
    const float *r = row_at(o, d->o, 0, 0, i);
    if (i % 2 == 0) {
      size_t bad = d->dim_v;
      for (size_t c = 0; c < d->dim_v && bad == d->dim_v; c++)
        if (!isnan(r[c]))
          bad = c;
      CHECK(bad == d->dim_v, "row %zu: c%zu = %g, want NaN", i, bad,
            bad < d->dim_v ? r[bad] : 0.0);
    } else {
      check_row(d, q, k, v, 0, 0, i, r);
    }
  }
}

static void test_infinite_scores(void) {
  sa_attention_desc d = make_desc(1, 1, 1, 4, 40, 8, 8, SA_MASK_NONE);
  bufs bf = bufs_new(&d);
  big_q(&d, bf.q.p);

  /* every score of the even rows -Inf: the softmax is undefined, NaN */
  for (size_t j = 0; j < d.len_kv; j++)
    bf.k.p[j * d.k.seq] = -1e30f;
  for (int s = 0; s < nsets; s++)
    for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++)
      for (int bi = 0; bi < 2; bi++) {
        size_t bkv = default_and_one[bi];
        snprintf(where, sizeof where, "all -Inf, %s %s bkv%zu", sets[s]->name,
                 algo_name(algo), bkv);
        t_context = where;
        if (!call_on(sets[s]->name, (sa_algorithm)algo, 0, bkv, &d, &bf))
          continue;
        check_mixed(&d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
      }

  /* +Inf at the first key and at a later one: NaN */
  const size_t at_inf[] = {0, 23};
  for (int a = 0; a < 2; a++) {
    for (size_t j = 0; j < d.len_kv; j++)
      bf.k.p[j * d.k.seq] = j == at_inf[a] ? 1e30f : 0.0f;
    for (int s = 0; s < nsets; s++)
      for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++)
        for (int bi = 0; bi < 2; bi++) {
          size_t bkv = default_and_one[bi];
          snprintf(where, sizeof where, "+Inf at key %zu, %s %s bkv%zu",
                   at_inf[a], sets[s]->name, algo_name(algo), bkv);
          t_context = where;
          if (!call_on(sets[s]->name, (sa_algorithm)algo, 0, bkv, &d, &bf))
            continue;
          check_mixed(&d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
        }
  }

  /* Only the first 16 keys -Inf for the even rows: the online max stays
   * -Inf through that block, and the row must still come out as the
   * softmax over the finite keys alone. */
  const size_t ninf = 16;
  for (size_t j = 0; j < d.len_kv; j++)
    bf.k.p[j * d.k.seq] = j < ninf ? -1e30f : 0.0f;
  sa_attention_desc dr = d; /* the even rows' reference: finite keys only */
  dr.len_kv = d.len_kv - ninf;
  const float *kr = bf.k.p + ninf * d.k.seq, *vr = bf.v.p + ninf * d.v.seq;
  float *first = malloc(bf.no * sizeof(float));
  const size_t blocks[] = {0, 1, ninf};
  for (int s = 0; s < nsets; s++)
    for (int bi = 0; bi < 3; bi++)
      for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
        size_t bkv = blocks[bi];
        snprintf(where, sizeof where, "first block -Inf, %s %s bkv%zu",
                 sets[s]->name, algo_name(algo), bkv);
        t_context = where;
        if (!call_on(sets[s]->name, (sa_algorithm)algo, 0, bkv, &d, &bf))
          continue;
        for (size_t i = 0; i < d.len_q; i++) {
          const float *r = row_at(bf.o.p, d.o, 0, 0, i);
          if (i % 2 == 0)
            check_row(&dr, bf.q.p, kr, vr, 0, 0, i, r);
          else
            check_row(&d, bf.q.p, bf.k.p, bf.v.p, 0, 0, i, r);
          if (algo == SA_ALGO_THREE_PASS)
            continue;
          /* fused against three-pass, each within its bound */
          const float *f = row_at(first, d.o, 0, 0, i);
          if (i % 2 == 0)
            t_reference_row(&dr, bf.q.p, kr, vr, 0, 0, i, scale_of(&d), t_p,
                            t_ref, t_tol);
          else
            t_reference_row(&d, bf.q.p, bf.k.p, bf.v.p, 0, 0, i, scale_of(&d),
                            t_p, t_ref, t_tol);
          size_t bad = d.dim_v;
          for (size_t c = 0; c < d.dim_v && bad == d.dim_v; c++)
            if (!(fabs(r[c] - f[c]) <= 2 * t_tol[c]))
              bad = c;
          CHECK(bad == d.dim_v, "row %zu c%zu: fused %.9g, three-pass %.9g", i,
                bad, bad < d.dim_v ? r[bad] : 0.0,
                bad < d.dim_v ? f[bad] : 0.0);
        }
        if (algo == SA_ALGO_THREE_PASS)
          memcpy(first, bf.o.p, bf.no * sizeof(float));
      }
  free(first);
  bufs_free(&bf);
}

static void test_masked_nonfinite_v(void) {
  /* bottom-right, 12 queries on 5 keys: rows 0-6 see no key */
  sa_attention_desc d =
      make_desc(1, 2, 1, 12, 5, 8, 8, SA_MASK_CAUSAL_BOTTOM_RIGHT);
  bufs bf = bufs_new(&d);
  for (size_t c = 0; c < d.dim_v; c++) {
    if (c % 2 == 0)
      bf.v.p[c] = NAN; /* key 0 */
    else
      bf.v.p[d.v.seq + c] = INFINITY; /* key 1 */
  }
  const size_t bqs[] = {0, 4}; /* one tile; tiles of seen and unseen rows */
  for (int s = 0; s < nsets; s++)
    for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++)
      for (int qi = 0; qi < 2; qi++)
        for (int bi = 0; bi < 2; bi++) {
          size_t bq = bqs[qi], bkv = default_and_one[bi];
          snprintf(where, sizeof where,
                   "masked rows, NaN/Inf V, %s %s bq%zu bkv%zu", sets[s]->name,
                   algo_name(algo), bq, bkv);
          t_context = where;
          if (!call_on(sets[s]->name, (sa_algorithm)algo, bq, bkv, &d, &bf))
            continue;
          for (size_t h = 0; h < d.heads_q; h++)
            for (size_t i = 0; i < d.len_q; i++) {
              const float *r = row_at(bf.o.p, d.o, 0, h, i);
              size_t vis = t_visible(&d, i), bad = d.dim_v;
              /* a row that sees key 0 weights its NaN columns by p > 0 */
              for (size_t c = 0; c < d.dim_v && bad == d.dim_v; c++)
                if (vis == 0 ? r[c] != 0.0f : c % 2 == 0 && !isnan(r[c]))
                  bad = c;
              CHECK(bad == d.dim_v, "row (%zu,%zu) sees %zu keys: c%zu = %g", h,
                    i, vis, bad, bad < d.dim_v ? r[bad] : 0.0);
            }
        }
  bufs_free(&bf);
}

/* --------------------------------------------------------------- 4. scale */

static void test_negative_scale(void) {
  sa_mask masks[] = {SA_MASK_NONE, SA_MASK_CAUSAL_TOP_LEFT};
  for (int m = 0; m < 2; m++) {
    sa_attention_desc d = make_desc(1, 4, 2, 20, 45, 24, 16, masks[m]);
    bufs bf = bufs_new(&d);
    float *zero = malloc(bf.no * sizeof(float));
    for (int s = 0; s < nsets; s++)
      for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
        snprintf(where, sizeof where, "scale, %s %s mask%d", sets[s]->name,
                 algo_name(algo), (int)d.mask);
        t_context = where;
        sa_context *ctx = ctx_new(sets[s]->name, 1, 8, 16);
        if (!ctx)
          continue;
        d.algorithm = (sa_algorithm)algo;
        d.scale = -0.3f;
        fill(bf.o.p, bf.no, NAN);
        sa_status st = sa_attention(ctx, &d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
        CHECK(st == SA_OK, "scale -0.3: %s (%s)", sa_status_str(st),
              sa_last_error());
        check_all(&d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);

        d.scale = 0.0f;
        fill(zero, bf.no, NAN);
        st = sa_attention(ctx, &d, bf.q.p, bf.k.p, bf.v.p, zero);
        CHECK(st == SA_OK, "scale 0: %s", sa_last_error());
        check_all(&d, bf.q.p, bf.k.p, bf.v.p, zero);
        d.scale = -0.0f;
        fill(bf.o.p, bf.no, NAN);
        st = sa_attention(ctx, &d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
        size_t at = first_diff(bf.o.p, zero, bf.no);
        CHECK(st == SA_OK && at == bf.no,
              "scale -0: %s, float %zu differs from scale 0", sa_status_str(st),
              at);
        d.scale = 0.0f;
        sa_context_destroy(ctx);
      }
    free(zero);
    bufs_free(&bf);
  }
}

/* ----------------------------------------------------------- 5. workspace */

static sa_context *ctx_ws(const char *isa, int threads, void *ws, size_t bytes,
                          sa_status *st) {
  sa_context_options o;
  sa_context_options_init(&o);
  o.isa = isa;
  o.num_threads = threads;
  o.pin = SA_PIN_NONE;
  o.block_q = 16;
  o.block_kv = 32;
  o.workspace = ws;
  o.workspace_bytes = bytes;
  sa_context *ctx = NULL;
  *st = sa_context_create(&o, &ctx);
  return *st == SA_OK ? ctx : NULL;
}

/* One call on a workspace context: SA_OK, the probe's result, and every
 * worker's scratch inside the caller's bytes (nothing allocated). */
static void ws_run(sa_context *ctx, sa_attention_desc *d, const bufs *bf,
                   const float *want, const unsigned char *ws, size_t bytes,
                   const char *how) {
  fill(bf->o.p, bf->no, NAN);
  sa_status st = sa_attention(ctx, d, bf->q.p, bf->k.p, bf->v.p, bf->o.p);
  CHECK(st == SA_OK, "%s: %s (%s)", how, sa_status_str(st), sa_last_error());
  size_t at = first_diff(bf->o.p, want, bf->no);
  CHECK(at == bf->no, "%s: float %zu differs from the library's scratch", how,
        at);
  for (int w = 0; w < ctx->nthreads; w++) {
    uintptr_t p = (uintptr_t)ctx->scratch[w].buf, lo = (uintptr_t)ws;
    CHECK(p >= lo && p < lo + bytes,
          "%s: worker %d's scratch is not in the "
          "workspace",
          how, w);
  }
}

static void test_workspace(void) {
  sa_attention_desc d =
      make_desc(2, 4, 2, 40, 100, 32, 32, SA_MASK_CAUSAL_BOTTOM_RIGHT);
  bufs bf = bufs_new(&d);
  float *want = malloc(bf.no * sizeof(float));
  static max_align_t sentinel_obj;
  sa_context *const sentinel = (sa_context *)(void *)&sentinel_obj;
  for (int s = 0; s < nsets; s++)
    for (int threads = 1; threads <= 2; threads++)
      for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
        const char *isa = sets[s]->name;
        snprintf(where, sizeof where, "workspace, %s %s x%d", isa,
                 algo_name(algo), threads);
        t_context = where;
        d.algorithm = (sa_algorithm)algo;
        sa_context_options po;
        sa_context_options_init(&po);
        po.isa = isa;
        po.num_threads = threads;
        po.pin = SA_PIN_NONE;
        po.block_q = 16;
        po.block_kv = 32;
        sa_context *probe = NULL;
        sa_status st = sa_context_create(&po, &probe);
        CHECK(st == SA_OK, "probe: %s", sa_last_error());
        if (st != SA_OK)
          continue;
        size_t bytes = 0;
        st = sa_attention_workspace(probe, &d, &bytes);
        CHECK(st == SA_OK && bytes > 0, "sa_attention_workspace: %s",
              sa_status_str(st));
        fill(want, bf.no, NAN);
        st = sa_attention(probe, &d, bf.q.p, bf.k.p, bf.v.p, want);
        CHECK(st == SA_OK, "probe call: %s", sa_last_error());
        sa_context_destroy(probe);
        if (bytes < 64 * (size_t)threads + 128)
          continue;

        /* exactly `bytes`, ending at a guard page: starts wherever that
         * puts it */
        guarded g;
        unsigned char *ws = at_guard(&g, bytes);
        sa_context *ctx = ctx_ws(isa, threads, ws, bytes, &st);
        CHECK(st == SA_OK, "exact workspace at a guard page: %s (%s)",
              sa_status_str(st), sa_last_error());
        if (ctx) {
          char how[64];
          snprintf(how, sizeof how, "exact, start %% 64 = %u",
                   (unsigned)((uintptr_t)ws % 64));
          ws_run(ctx, &d, &bf, want, ws, bytes, how);
          sa_context_destroy(ctx);
        }
        g_free(&g);

        /* every start alignment the library must absorb; the bytes around
         * the workspace are a canary */
        const size_t offs[] = {0, 1, 17, 63};
        size_t total = bytes + 256;
        unsigned char *raw = aligned_alloc(64, (total + 63) & ~(size_t)63);
        for (int oi = 0; oi < 4 && raw; oi++) {
          memset(raw, 0xa5, total);
          ws = raw + 64 + offs[oi];
          ctx = ctx_ws(isa, threads, ws, bytes, &st);
          CHECK(st == SA_OK, "workspace at 64k+%zu: %s (%s)", offs[oi],
                sa_status_str(st), sa_last_error());
          if (!ctx)
            continue;
          char how[64];
          snprintf(how, sizeof how, "workspace at 64k+%zu", offs[oi]);
          ws_run(ctx, &d, &bf, want, ws, bytes, how);
          sa_context_destroy(ctx);
          CHECK(all_bytes(raw, (size_t)(ws - raw), 0xa5) &&
                    all_bytes(ws + bytes, total - (size_t)(ws - raw) - bytes,
                              0xa5),
                "workspace at 64k+%zu: bytes outside it were written",
                offs[oi]);
        }

        /* too small: refused at the call, O untouched */
        size_t small = bytes - 64 * (size_t)threads - 64;
        ctx = raw ? ctx_ws(isa, threads, raw + 64, small, &st) : NULL;
        CHECK(st == SA_OK, "small workspace context: %s", sa_status_str(st));
        if (ctx) {
          memset(bf.o.p, 0x5a, bf.no * sizeof(float));
          st = sa_attention(ctx, &d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
          CHECK(st == SA_ERR_WORKSPACE,
                "%zu of %zu bytes: %s, want SA_ERR_WORKSPACE", small, bytes,
                sa_status_str(st));
          CHECK(all_bytes(bf.o.p, bf.no * sizeof(float), 0x5a),
                "%zu of %zu bytes: the output was written", small, bytes);
          sa_context_destroy(ctx);
        }
        free(raw);
      }

  /* half a workspace is an argument error, whatever the set */
  t_context = "workspace arguments";
  unsigned char buf[256];
  void *ptrs[2] = {buf, NULL};
  size_t sizes[2] = {0, sizeof buf};
  for (int i = 0; i < 2; i++) {
    sa_context_options o;
    sa_context_options_init(&o);
    o.isa = sets[0]->name;
    o.num_threads = 1;
    o.workspace = ptrs[i];
    o.workspace_bytes = sizes[i];
    sa_context *out = sentinel;
    sa_status st = sa_context_create(&o, &out);
    CHECK(st == SA_ERR_BAD_ARGUMENT && out == sentinel,
          "workspace %s, %zu bytes: %s, out %s", ptrs[i] ? "set" : "NULL",
          sizes[i], sa_status_str(st),
          out == sentinel ? "untouched" : "written");
    if (st == SA_OK && out != sentinel)
      sa_context_destroy(out);
  }
  free(want);
  bufs_free(&bf);
}

/* ------------------------------------------------------------- 6. pinning */

/* Creates with o; returns the status, destroys nothing (ctx NULL on error,
 * and then *out must have stayed untouched). */
static sa_status try_create(const sa_context_options *o, sa_context **ctx) {
  static max_align_t sentinel_obj;
  sa_context *const sentinel = (sa_context *)(void *)&sentinel_obj;
  sa_context *out = sentinel;
  sa_status st = sa_context_create(o, &out);
  if (st != SA_OK)
    CHECK(out == sentinel, "failed create wrote *out");
  *ctx = st == SA_OK ? out : NULL;
  return st;
}

static sa_context_options pin_opts(int threads, sa_pin_policy pin,
                                   const char *cpus, int first_core) {
  sa_context_options o;
  sa_context_options_init(&o);
  o.isa = sets[0]->name;
  o.num_threads = threads;
  o.pin = pin;
  o.cpus = cpus;
  o.first_core = first_core;
  return o;
}

static void expect_create(sa_context_options o, sa_status want,
                          const char *what) {
  sa_context *ctx;
  sa_status st = try_create(&o, &ctx);
  CHECK(st == want, "%s: %s (%s), want %s", what, sa_status_str(st),
        sa_last_error(), sa_status_str(want));
  sa_context_destroy(ctx);
}

static int core_of(const sa_context *ctx, int w) {
  return sa_pool_worker_core(ctx->pool, w);
}

static void test_pinning(void) {
  t_context = "pinning";
  expect_create(pin_opts(1, SA_PIN_CORES, NULL, 100000), SA_ERR_BAD_ARGUMENT,
                "first_core 100000");
  expect_create(pin_opts(1, SA_PIN_CORES, NULL, -1), SA_ERR_BAD_ARGUMENT,
                "first_core -1");
  /* placement settings mean nothing without placement */
  expect_create(pin_opts(1, SA_PIN_NONE, "garbage!", 4096), SA_OK,
                "SA_PIN_NONE, cpus garbage, first_core 4096, 1 thread");
  expect_create(pin_opts(2, SA_PIN_NONE, "garbage!", 4096), SA_OK,
                "SA_PIN_NONE, cpus garbage, first_core 4096, 2 threads");

  hwloc_topology_t topo = sa_topology();
  if (!topo) {
    skip("hwloc could not load the topology: cpus/first_core not checked");
    return;
  }
  hwloc_bitmap_t allowed = sa_topology_allowed(topo);
  int cores = allowed ? sa_placement_count(topo, allowed) : 0;
  int cpu0 = allowed ? hwloc_bitmap_first(allowed) : -1;
  hwloc_bitmap_free(allowed);
  printf("pinning: %ld CPU(s) online, %d usable core(s), first usable CPU "
         "%d\n",
         sysconf(_SC_NPROCESSORS_ONLN), cores, cpu0);
  CHECK(cores >= 1 && cpu0 >= 0, "no usable core (%d) or CPU (%d)", cores,
        cpu0);
  if (cores < 1 || cpu0 < 0)
    return;

  /* A one-worker context validates the placement settings too, though it
   * never binds (its only worker is the caller). */
  expect_create(pin_opts(1, SA_PIN_CORES, NULL, 4096),
                cores <= 4096 ? SA_ERR_BAD_ARGUMENT : SA_OK, "first_core 4096");
  expect_create(pin_opts(1, SA_PIN_CORES, NULL, cores), SA_ERR_BAD_ARGUMENT,
                "first_core = the number of usable cores");
  expect_create(pin_opts(1, SA_PIN_CORES, "garbage!", 0), SA_ERR_BAD_ARGUMENT,
                "cpus \"garbage!\"");
  char one[32];
  snprintf(one, sizeof one, "%d", cpu0);
  sa_context *ctx;
  sa_context_options o = pin_opts(1, SA_PIN_CORES, NULL, cores - 1);
  sa_status st = try_create(&o, &ctx);
  CHECK(st == SA_OK, "first_core %d (the last usable core): %s (%s)", cores - 1,
        sa_status_str(st), sa_last_error());
  if (ctx)
    CHECK(core_of(ctx, 0) == -1 && sa_context_pinned(ctx) == 0,
          "one worker: core %d, pinned %d; a one-worker pool never binds",
          core_of(ctx, 0), sa_context_pinned(ctx));
  sa_context_destroy(ctx);
  o = pin_opts(1, SA_PIN_CORES, one, 0);
  st = try_create(&o, &ctx);
  CHECK(st == SA_OK, "cpus \"%s\", 1 thread: %s (%s)", one, sa_status_str(st),
        sa_last_error());
  sa_context_destroy(ctx);

  /* Two workers on one core: worker 0 gets it, worker 1 stays unpinned,
   * and the result is still the one-thread result. */
  hwloc_obj_t pu = hwloc_get_pu_obj_by_os_index(topo, (unsigned)cpu0);
  hwloc_obj_t unit = pu;
  if (pu && sa_placement_unit(topo) == HWLOC_OBJ_CORE)
    unit = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);
  int core0 = unit ? (int)unit->logical_index : -2;
  o = pin_opts(2, SA_PIN_CORES, one, 0);
  o.block_q = 8; /* several tiles, so both workers take some */
  st = try_create(&o, &ctx);
  CHECK(st == SA_OK, "cpus \"%s\", 2 threads: %s (%s)", one, sa_status_str(st),
        sa_last_error());
  if (ctx) {
    CHECK(sa_context_num_threads(ctx) == 2 && sa_context_pinned(ctx) == 0,
          "cpus \"%s\", 2 threads: %d threads, pinned %d", one,
          sa_context_num_threads(ctx), sa_context_pinned(ctx));
    CHECK(core_of(ctx, 0) == core0 || core_of(ctx, 0) == -1,
          "worker 0 on core %d, want %d (the core of CPU %d) or -1",
          core_of(ctx, 0), core0, cpu0);
    CHECK(core_of(ctx, 1) == -1, "worker 1 on core %d with one core given",
          core_of(ctx, 1));
    if (core_of(ctx, 0) == -1)
      skip("the OS refused thread binding: worker 0 unpinned");
    sa_attention_desc d =
        make_desc(1, 4, 2, 33, 40, 16, 16, SA_MASK_CAUSAL_TOP_LEFT);
    bufs bf = bufs_new(&d);
    float *one_thread = malloc(bf.no * sizeof(float));
    sa_context *c1 = ctx_new(sets[0]->name, 1, 8, 0);
    if (c1) {
      st = sa_attention(c1, &d, bf.q.p, bf.k.p, bf.v.p, one_thread);
      sa_status st2 = sa_attention(ctx, &d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
      CHECK(st == SA_OK && st2 == SA_OK &&
                first_diff(bf.o.p, one_thread, bf.no) == bf.no,
            "one core, 2 threads: %s/%s, result differs from 1 thread",
            sa_status_str(st), sa_status_str(st2));
    }
    sa_context_destroy(c1);
    free(one_thread);
    bufs_free(&bf);
  }
  sa_context_destroy(ctx);

  if (cores < 2) {
    skip("one usable core: first_core cannot move workers");
    return;
  }
  /* first_core skips cores in compact order: B's worker 0 lands where A's
   * worker 1 is, never on A's worker 0. */
  sa_context *a, *b;
  o = pin_opts(2, SA_PIN_CORES, NULL, 0);
  st = try_create(&o, &a);
  CHECK(st == SA_OK, "first_core 0, 2 threads: %s", sa_last_error());
  o = pin_opts(2, SA_PIN_CORES, NULL, 1);
  st = try_create(&o, &b);
  CHECK(st == SA_OK, "first_core 1, 2 threads: %s", sa_last_error());
  if (a && b) {
    if (core_of(a, 0) == -1) {
      skip("the OS refused thread binding: first_core not observable");
    } else {
      CHECK(sa_context_pinned(a) == 1 && core_of(a, 1) >= 0 &&
                core_of(a, 0) != core_of(a, 1),
            "first_core 0: pinned %d, cores %d %d", sa_context_pinned(a),
            core_of(a, 0), core_of(a, 1));
      CHECK(core_of(b, 0) == core_of(a, 1) && core_of(b, 0) != core_of(a, 0),
            "first_core 1: worker 0 on core %d; first_core 0 had %d %d",
            core_of(b, 0), core_of(a, 0), core_of(a, 1));
      CHECK(cores >= 3 ? sa_context_pinned(b) == 1 && core_of(b, 1) >= 0
                       : sa_context_pinned(b) == 0 && core_of(b, 1) == -1,
            "first_core 1 of %d cores: pinned %d, worker 1 on %d", cores,
            sa_context_pinned(b), core_of(b, 1));
    }
  }
  sa_context_destroy(b);
  if (cores < 4) {
    skip("fewer than 4 usable cores: two disjoint 2-worker contexts not "
         "checked");
  } else if (a && core_of(a, 0) != -1) {
    o = pin_opts(2, SA_PIN_CORES, NULL, 2);
    st = try_create(&o, &b);
    CHECK(st == SA_OK, "first_core 2, 2 threads: %s", sa_last_error());
    if (b) {
      int ok = sa_context_pinned(b) == 1;
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
          ok &= core_of(b, i) != core_of(a, j);
      CHECK(ok, "first_core 0 and 2 share a core: {%d,%d} and {%d,%d}",
            core_of(a, 0), core_of(a, 1), core_of(b, 0), core_of(b, 1));
    }
    sa_context_destroy(b);
  }
  sa_context_destroy(a);
}

/* ---------------------------------------------------------- 7. spin_us */

/* Out-of-range spins are refused with *out untouched; every accepted one
 * (never, the default, short, the longest) runs a split-KV decode and a
 * many-tile prefill on two workers bit for bit as one worker does, also
 * after an idle gap longer than the spin, when workers must be woken. */
static void test_spin(void) {
  t_context = "spin_us";
  static const int bad[] = {-2, -1000, INT_MIN, SA_SPIN_MAX_US + 1, INT_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sa_context_options o = pin_opts(2, SA_PIN_DEFAULT, NULL, 0);
    o.spin_us = bad[i];
    char what[64];
    snprintf(what, sizeof what, "spin_us %d", bad[i]);
    expect_create(o, SA_ERR_BAD_ARGUMENT, what);
  }
  sa_attention_desc dec = make_desc(1, 8, 1, 1, 9000, 32, 32, SA_MASK_NONE);
  sa_attention_desc pre =
      make_desc(2, 3, 3, 37, 41, 16, 16, SA_MASK_CAUSAL_BOTTOM_RIGHT);
  const sa_attention_desc *shapes[] = {&dec, &pre};
  static const int good[] = {-1, 0, 1, SA_SPIN_MAX_US};
  for (size_t sh = 0; sh < 2; sh++) {
    sa_attention_desc d = *shapes[sh];
    d.algorithm = SA_ALGO_FUSED;
    bufs bf = bufs_new(&d);
    float *want = malloc(bf.no * sizeof(float));
    sa_context *one = ctx_new(sets[0]->name, 1, 0, 0);
    sa_status st = one ? sa_attention(one, &d, bf.q.p, bf.k.p, bf.v.p, want)
                       : SA_ERR_THREADS;
    CHECK(st == SA_OK, "1 worker: %s (%s)", sa_status_str(st), sa_last_error());
    if (st == SA_OK && d.len_kv <= 512) /* the reference's row buffer */
      check_all(&d, bf.q.p, bf.k.p, bf.v.p, want);
    for (size_t g = 0; st == SA_OK && g < sizeof good / sizeof good[0]; g++) {
      snprintf(where, sizeof where, "spin_us %d, %s, 2 workers", good[g],
               sh ? "prefill" : "split-KV decode");
      t_context = where;
      sa_context_options o = pin_opts(2, SA_PIN_DEFAULT, NULL, 0);
      o.spin_us = good[g];
      sa_context *ctx;
      CHECK(try_create(&o, &ctx) == SA_OK, "create: %s", sa_last_error());
      for (int call = 0; ctx && call < 3; call++) {
        if (call == 2) { /* idle past the short spins: workers asleep */
          struct timespec ts = {0, 3000000};
          nanosleep(&ts, NULL);
        }
        fill(bf.o.p, bf.no, NAN);
        sa_status cs = sa_attention(ctx, &d, bf.q.p, bf.k.p, bf.v.p, bf.o.p);
        size_t at = first_diff(bf.o.p, want, bf.no);
        CHECK(cs == SA_OK && at == bf.no,
              "call %d: %s, differs from 1 worker at float %zu", call,
              sa_status_str(cs), at);
      }
      sa_context_destroy(ctx);
    }
    sa_context_destroy(one);
    free(want);
    bufs_free(&bf);
  }
}

int main(void) {
  t_seed(20);
  nsets = t_runnable_sets(sets, 32);
  CHECK(nsets > 0, "no runnable kernel set");
  if (nsets == 0)
    return t_finish("test_api");
  test_abi();
  test_in_place();
  test_nan_first_key();
  test_infinite_scores();
  test_masked_nonfinite_v();
  test_negative_scale();
  test_workspace();
  test_pinning();
  test_spin();
  for (int s = 0; s < nsets; s++)
    printf("%-16s tested: three-pass and fused\n", sets[s]->name);
  printf("%d check group(s) skipped\n", skipped);
  return t_finish("test_api");
}
