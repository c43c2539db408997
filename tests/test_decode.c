/*
 * Every runnable set's decode kernel (score, online softmax and weighted sum
 * in one pass) against the double-precision reference of reference.h, for
 * every pair of K and V types.
 *
 * A case is m query rows (the heads of one KV group) over n keys, the keys
 * handed to the kernel in two calls split at a random point, so the second
 * call continues the first's state (mx, l, o) as the drivers do from key
 * block to key block; a third of the cases start from a sink (mx = its
 * logit, l = 1). The result o / l and the LSE mx + log l must be within the
 * reference's tolerance of the attention of those rows over those keys,
 * which is what the contract's composition computes up to rounding.
 *
 * Shapes: n around every runnable set's chunk (c - 1, c, c + 1, 2c + 1,
 * where chunks and tails meet), m up to SA_DECODE_ROWS (the value sums
 * change register tiles at 2, 4 and 8 rows), d and dv around the vector
 * widths. Every buffer ends at a PROT_NONE page, rows are sometimes wider
 * than their data with NaN (or a NaN q8_0 scale) in the gap, which must
 * never reach a result, and O's gaps must stay NaN. Some cases begin with
 * keys scored -inf, so that a chunk or a whole call sees no finite score.
 *
 * decode_rows runs on the same rows copied in a shuffled order, its lists
 * in key order, split where decode was: its state must equal decode's bit
 * for bit, as the contract says.
 */
#include "kernels/dtype.h"
#include "tests/reference.h"
#include "tests/tile_sizes.h"

#define MAX_SETS 16
static const sa_kernel_set *sets[MAX_SETS];
static int nsets;

/* Guarded regions, reused: a buffer is placed so its last byte is the
 * region's last byte before the guard page. */
#define POOL_FLOATS (1u << 20)
enum { Q, K, V, O, KL, VL, NPOOL };
static guarded pool[NPOOL];

static void *at_end(int slot, size_t bytes) {
  if (bytes > POOL_FLOATS * sizeof(float)) {
    fprintf(stderr, "test_decode: case too large for the pool\n");
    exit(2);
  }
  return (char *)(pool[slot].p + POOL_FLOATS) - bytes;
}

/* n rows of `dim` values of type t, ld units apart (gaps NaN), from the
 * float values x (rows dim apart); x is then overwritten with the values
 * as the kernel will read them (rounded to t), which the reference uses. */
static const void *typed_rows(int slot, sa_dtype t, float *x, size_t n,
                              size_t dim, size_t ld) {
  const size_t unit = sa_dtype_unit(t), row = sa_dtype_row(t, dim);
  size_t bytes = n ? ((n - 1) * ld + row) * unit : unit;
  char *base = at_end(slot, bytes);
  for (size_t j = 0; j < n; j++) {
    char *r = base + j * ld * unit;
    float *xr = x + j * dim;
    if (t == SA_Q8_0) {
      for (size_t b = 0; b < row; b++)
        sa_quantize_q8_0(xr + 32 * b, (sa_block_q8_0 *)r + b);
      for (size_t b = row; b < ld && j + 1 < n; b++) {
        sa_block_q8_0 *g = (sa_block_q8_0 *)r + b;
        g->scale = 0x7e00; /* a NaN scale: a gap read shows */
        memset(g->q, 1, sizeof g->q);
      }
    } else {
      for (size_t p = 0; p < dim; p++) {
        if (t == SA_F32)
          ((float *)r)[p] = xr[p];
        else if (t == SA_F16)
          ((uint16_t *)r)[p] = sa_f32_to_f16(xr[p]);
        else
          ((uint16_t *)r)[p] = sa_f32_to_bf16(xr[p]);
      }
      for (size_t p = dim; p < ld && j + 1 < n; p++) {
        if (t == SA_F32)
          ((float *)r)[p] = NAN;
        else
          ((uint16_t *)r)[p] = t == SA_F16 ? 0x7e00 : 0x7fc0;
      }
    }
    for (size_t p = 0; p < dim; p++)
      xr[p] = sa_load_elem(t, r, p);
  }
  return base;
}

static long runs;

/* The n rows at src (ld units of t apart, row units each) copied packed
 * into a guarded region in the order perm gives (the row placed last meets
 * the PROT_NONE page), their addresses listed in the original order. */
static void listed_rows(int slot, sa_dtype t, const void *src, size_t n,
                        size_t ld, size_t row, const size_t *perm,
                        const void **list) {
  const size_t unit = sa_dtype_unit(t), bytes = row * unit;
  char *base = at_end(slot, (n ? n : 1) * bytes);
  for (size_t j = 0; j < n; j++) {
    char *to = base + perm[j] * bytes;
    memcpy(to, (const char *)src + j * ld * unit, bytes);
    list[j] = to;
  }
}

static void decode_case(size_t m, size_t n, size_t d, size_t dv, sa_dtype kt,
                        sa_dtype vt) {
  const size_t pad = t_next() % 3 == 0 ? t_range(1, 3) : 0;
  const size_t ldq = d + pad, ldk = sa_dtype_row(kt, d) + pad,
               ldv = sa_dtype_row(vt, dv) + pad, ldo = dv + pad;
  float *qf = xmalloc(m * d * sizeof(float));
  float *kf = xmalloc((n ? n : 1) * d * sizeof(float));
  float *vf = xmalloc((n ? n : 1) * dv * sizeof(float));
  t_fill(qf, m * d, -1, 1);
  t_fill(kf, n * d, -1, 1);
  t_fill(vf, n * dv, -1, 1);
  /* A quarter of the cases with a narrow K that holds -inf (f32, f16,
   * bf16) begin with keys scored -inf (q[i][0] > 0, k[j][0] = -inf): a
   * chunk, or a whole first call, whose max stays -inf must give p = 0
   * and alpha = 1, never exp(-inf - -inf) = NaN. The reference leaves
   * those keys out through a boolean mask, which means the same. */
  size_t ninf = kt != SA_Q8_0 && n && t_next() % 4 == 0 ? t_range(1, n) : 0;
  uint8_t *keep = xmalloc(n ? n : 1);
  for (size_t j = 0; j < n; j++) {
    keep[j] = j >= ninf;
    if (j < ninf)
      kf[j * d] = -INFINITY;
  }
  for (size_t i = 0; i < m && ninf; i++)
    qf[i * d] = fabsf(qf[i * d]) + 0.125f;
  float *q = at_end(Q, ((m - 1) * ldq + d) * sizeof(float));
  for (size_t i = 0; i < m; i++) {
    memcpy(q + i * ldq, qf + i * d, d * sizeof(float));
    for (size_t p = d; p < ldq && i + 1 < m; p++)
      q[i * ldq + p] = NAN;
  }
  const void *k = typed_rows(K, kt, kf, n, d, ldk);
  const void *v = typed_rows(V, vt, vf, n, dv, ldv);

  float sinks[SA_DECODE_ROWS];
  int sink = t_next() % 3 == 0;
  for (size_t i = 0; i < m; i++)
    sinks[i] = t_uniform(-2, 2);
  view w;
  memset(&w, 0, sizeof w);
  sa_attention_desc *desc = &w.d;
  sa_attention_desc_init(desc);
  desc->batch = 1, desc->heads_q = m, desc->heads_kv = 1;
  desc->len_q = 1, desc->len_kv = n, desc->dim_qk = d, desc->dim_v = dv;
  desc->scale = t_uniform(0.05f, 1.5f);
  desc->sinks = sink ? sinks : NULL;
  if (ninf) {
    desc->mask_bool = keep;
    w.bool_at = (sa_mask_layout){.key = 1, .keys = n};
  }
  w.q = qf, w.k = kf, w.v = vf;
  w.qs = t_packed(m, 1, d);
  w.ks = t_packed(1, n, d);
  w.vs = t_packed(1, n, dv);
  w.os = t_packed(m, 1, dv);
  w.ls = t_packed(m, 1, 1);
  refs r;
  refs_compute(&w, &r);

  size_t n1 = t_range(0, n);
  float *o = at_end(O, ((m - 1) * ldo + dv) * sizeof(float));
  float *out = xmalloc(m * dv * sizeof(float)), lse[SA_DECODE_ROWS];
  /* the rows again, shuffled, for decode_rows */
  size_t *perm = xmalloc((n ? n : 1) * sizeof(size_t));
  for (size_t j = 0; j < n; j++)
    perm[j] = j;
  for (size_t j = n; j > 1; j--) {
    size_t x = t_range(0, j - 1), y = perm[j - 1];
    perm[j - 1] = perm[x], perm[x] = y;
  }
  const void **kl = xmalloc((n ? n : 1) * sizeof(void *));
  const void **vl = xmalloc((n ? n : 1) * sizeof(void *));
  listed_rows(KL, kt, k, n, ldk, sa_dtype_row(kt, d), perm, kl);
  listed_rows(VL, vt, v, n, ldv, sa_dtype_row(vt, dv), perm, vl);
  const size_t obytes = ((m - 1) * ldo + dv) * sizeof(float);
  float *o_dec = xmalloc(obytes);
  for (int s = 0; s < nsets; s++) {
    const sa_kernel_set *ks = sets[s];
    t_context = ks->name;
    float mx[SA_DECODE_ROWS], l[SA_DECODE_ROWS];
    for (size_t i = 0; i < m; i++) {
      mx[i] = sink ? sinks[i] : -INFINITY;
      l[i] = sink ? 1.0f : 0.0f;
      for (size_t c = 0; c < ldo && (c < dv || i + 1 < m); c++)
        o[i * ldo + c] = c < dv ? 0.0f : NAN;
    }
    ks->decode(m, n1, d, dv, q, ldq, k, ldk, kt, v, ldv, vt, desc->scale, mx, l,
               o, ldo);
    ks->decode(m, n - n1, d, dv, q, ldq,
               (const char *)k + n1 * ldk * sa_dtype_unit(kt), ldk, kt,
               (const char *)v + n1 * ldv * sa_dtype_unit(vt), ldv, vt,
               desc->scale, mx, l, o, ldo);
    runs += 2;
    int gaps = 1;
    for (size_t i = 0; i < m; i++) {
      for (size_t c = 0; c < dv; c++)
        out[i * dv + c] = l[i] != 0.0f ? o[i * ldo + c] / l[i] : 0.0f;
      for (size_t c = dv; c < ldo && i + 1 < m; c++)
        gaps &= isnan(o[i * ldo + c]);
      lse[i] = l[i] != 0.0f ? mx[i] + logf(l[i]) : -INFINITY;
    }
    CHECK(gaps, "m=%zu n=%zu d=%zu dv=%zu: wrote into O's row gap", m, n, d,
          dv);
    if (check_result(&w, &r, out, m * dv, lse, m))
      printf("  in: %s, m=%zu n=%zu (split at %zu) d=%zu dv=%zu K %s V %s%s"
             ", %zu keys -inf\n",
             ks->name, m, n, n1, d, dv, sa_dtype_name(kt), sa_dtype_name(vt),
             sink ? ", sinks" : "", ninf);

    /* decode_rows over the shuffled copy: decode's state, bit for bit */
    float mx2[SA_DECODE_ROWS], l2[SA_DECODE_ROWS];
    memcpy(o_dec, o, obytes);
    for (size_t i = 0; i < m; i++) {
      mx2[i] = sink ? sinks[i] : -INFINITY;
      l2[i] = sink ? 1.0f : 0.0f;
      for (size_t c = 0; c < dv; c++)
        o[i * ldo + c] = 0.0f;
    }
    ks->decode_rows(m, n1, d, dv, q, ldq, kl, kt, vl, vt, desc->scale, mx2, l2,
                    o, ldo);
    ks->decode_rows(m, n - n1, d, dv, q, ldq, kl + n1, kt, vl + n1, vt,
                    desc->scale, mx2, l2, o, ldo);
    runs += 2;
    CHECK(memcmp(mx, mx2, m * sizeof(float)) == 0 &&
              memcmp(l, l2, m * sizeof(float)) == 0 &&
              memcmp(o, o_dec, obytes) == 0,
          "%s: decode_rows differs from decode on the same rows, m=%zu n=%zu "
          "(split at %zu) d=%zu dv=%zu K %s V %s",
          ks->name, m, n, n1, d, dv, sa_dtype_name(kt), sa_dtype_name(vt));
  }
  free(o_dec);
  free(perm);
  free(kl);
  free(vl);
  refs_free(&r);
  free(out);
  free(keep);
  free(qf);
  free(kf);
  free(vf);
}

/* softmax_online's rule for a row whose max is still -INFINITY, which
 * finite data never reaches: a first call over n1 keys of -INFINITY (q > 0,
 * so every score is -inf) must leave mx = -inf, l = 0 and o = 0 exactly,
 * so a second call over finite keys gives what a fresh call does, bit for
 * bit; row 0 has q[0] = 0, so its first score is 0 * -inf = NaN, and its l
 * must end NaN (the NaN is not lost behind the -inf). */
static void minus_inf_case(size_t m, size_t n1, size_t n2, size_t d) {
  float *q = xmalloc(m * d * sizeof(float));
  float *k = xmalloc((n1 + n2) * d * sizeof(float));
  float *v = xmalloc((n1 + n2) * d * sizeof(float));
  t_fill(q, m * d, 0.5f, 1);
  q[0] = 0.0f;
  for (size_t x = 0; x < n1 * d; x++)
    k[x] = -INFINITY;
  t_fill(k + n1 * d, n2 * d, -1, 1);
  t_fill(v, (n1 + n2) * d, -1, 1);
  for (int s = 0; s < nsets; s++) {
    const sa_kernel_set *ks = sets[s];
    t_context = ks->name;
    float mx[2][SA_DECODE_ROWS], l[2][SA_DECODE_ROWS];
    float *o[2] = {xmalloc(m * d * sizeof(float)),
                   xmalloc(m * d * sizeof(float))};
    for (int run = 0; run < 2; run++) {
      for (size_t i = 0; i < m; i++)
        mx[run][i] = -INFINITY, l[run][i] = 0.0f;
      memset(o[run], 0, m * d * sizeof(float));
      if (run == 0)
        ks->decode(m, n1, d, d, q, d, k, d, SA_F32, v, d, SA_F32, 0.5f, mx[run],
                   l[run], o[run], d);
      ks->decode(m, n2, d, d, q, d, k + n1 * d, d, SA_F32, v + n1 * d, d,
                 SA_F32, 0.5f, mx[run], l[run], o[run], d);
    }
    CHECK(isnan(l[0][0]), "m=%zu n1=%zu: a NaN score behind -inf was lost", m,
          n1);
    int same = 1;
    for (size_t i = 1; i < m; i++) {
      same &= mx[0][i] == mx[1][i] && l[0][i] == l[1][i];
      same &= memcmp(o[0] + i * d, o[1] + i * d, d * sizeof(float)) == 0;
    }
    CHECK(same, "m=%zu n1=%zu n2=%zu d=%zu: keys of -inf changed the state", m,
          n1, n2, d);
    free(o[0]);
    free(o[1]);
  }
  free(q);
  free(k);
  free(v);
}

static const sa_dtype types[] = {SA_F32, SA_F16, SA_BF16, SA_Q8_0};

int main(void) {
  t_seed(17);
  const sa_kernel_set *all[MAX_SETS];
  int nall = t_runnable_sets(all, MAX_SETS);
  /* the slot is optional in the header, but every set here fills it */
  for (int i = 0; i < nall; i++) {
    CHECK(all[i]->decode != NULL && all[i]->decode_rows != NULL,
          "%s has no decode or decode_rows kernel", all[i]->name);
    if (all[i]->decode && all[i]->decode_rows)
      sets[nsets++] = all[i];
  }
  for (int i = 0; i < NPOOL; i++)
    pool[i] = g_alloc(POOL_FLOATS);

  t_sizes ns = {0}, ms = {0};
  for (int i = 0; i < nsets; i++) {
    const sa_tiles *t = sa_kernel_set_tiles(sets[i]);
    T_AROUND(&ns, t->chunk, 1);
    /* a last chunk either side of where the value sums read streams */
    T_AROUND(&ns, t->n_cut, 0);
  }
  static const size_t few[] = {1, 2, 3, 5};
  for (size_t i = 0; i < sizeof few / sizeof few[0]; i++)
    t_sizes_add(&ns, few[i]);
  static const size_t rows[] = {1, 2, 3, 4, 5, 7, 8, 9, 16};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    t_sizes_add(&ms, rows[i]);
  t_sizes_print("n", &ns);
  t_sizes_print("m", &ms);
  static const size_t dims[] = {1, 15, 16, 17, 31, 33, 64, 128, 129};

  long cases = 0;
  /* every m and n, f32, d and dv from the list */
  for (size_t a = 0; a < ms.n; a++)
    for (size_t b = 0; b < ns.n; b++, cases++)
      decode_case(ms.v[a], ns.v[b], dims[t_range(0, 8)], dims[t_range(0, 8)],
                  SA_F32, SA_F32);
  /* every pair of types, d and dv multiples of 32 when q8_0 */
  for (size_t kt = 0; kt < 4; kt++)
    for (size_t vt = 0; vt < 4; vt++)
      for (int it = 0; it < 12; it++, cases++) {
        size_t m = ms.v[t_range(0, ms.n - 1)], n = ns.v[t_range(0, ns.n - 1)];
        size_t d =
            types[kt] == SA_Q8_0 ? 32 * t_range(1, 4) : dims[t_range(0, 8)];
        size_t dv =
            types[vt] == SA_Q8_0 ? 32 * t_range(1, 4) : dims[t_range(0, 8)];
        decode_case(m, n, d, dv, types[kt], types[vt]);
      }
  /* keys of -inf before any finite one, across chunk ends */
  for (size_t b = 0; b < ns.n; b++, cases++)
    minus_inf_case(ms.v[b % ms.n], ns.v[b], ns.v[(b + 3) % ns.n], 33);
  /* longer, realistic rows */
  for (int it = 0; it < 24; it++, cases++)
    decode_case(t_range(1, 16), t_range(100, 1100), it % 2 ? 128 : 64,
                it % 2 ? 128 : 64, types[it % 4], types[(it / 4) % 4]);
  for (int s = 0; s < nsets; s++)
    printf("%-16s decode tested\n", sets[s]->name);
  printf("%ld cases, %ld kernel calls\n", cases, runs);
  for (int i = 0; i < NPOOL; i++)
    g_free(&pool[i]);
  return t_finish("test_decode");
}
