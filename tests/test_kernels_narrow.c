/*
 * The narrow-type kernel slots of every runnable set (score_t, wsum_t for
 * f16, bf16 and q8_0; score_bf16 where a set has it) against the scalar
 * oracle's, on the same rounded inputs.
 *
 * Shapes: m, n, d and dv at and around every runnable set's register tiles,
 * vector steps, panel chunks (KC: score_t's, score_bf16's) and small-m
 * cutoffs (tile_sizes.h), crossed; for q8_0 each d rounded up to whole
 * blocks; plus random larger ones. Every narrow matrix ends at a PROT_NONE
 * page, rows
 * are sometimes wider than their data (the gap holds a pattern that would show
 * as garbage if read), outputs' gaps are NaN and must stay NaN.
 *
 * Tolerances: a kernel widens each value exactly, so it is an f32 kernel
 * on the widened values and test_kernels' bounds hold, with the magnitudes
 * taken over the widened values: score 2.02 (d + 1) u scale sum|q k|, wsum
 * 2 (n + 2) u (sum|p v| + |beta o|). score_bf16 sums pairs of exact
 * products before accumulating, another order of the same sum, within the
 * same bound.
 */
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "tests/testing.h"
#include "tests/tile_sizes.h"

#define MAX_SETS 16
static const sa_kernel_set *oracle, *sets[MAX_SETS];
static int nsets;

/* room for the largest swept case: n up to 2 x 128 + 1 keys (wsum's
 * sub-blocks) with d up to 2 x 512 + 1 (avx512bf16's panel) */
#define POOL_FLOATS (1u << 20)
enum { QN, KN, PF, OF, RF, WQ, WK, NPOOL };
static guarded pool[NPOOL];

static const sa_dtype types[] = {SA_F16, SA_BF16, SA_Q8_0};

/* Units (elements or q8_0 blocks) a row of d values takes. */
static size_t units(sa_dtype t, size_t d) { return t == SA_Q8_0 ? d / 32 : d; }

/* A narrow rows x d matrix, ld units apart, ending at the slot's guard;
 * its values rounded from uniform(lo, hi), row gaps 0x7f bytes. */
/* The last `bytes` bytes of a slot, up against its guard page (a case
 * that does not fit is a bug of the test, not of a kernel). */
static void *pool_tail(int slot, size_t bytes) {
  if (bytes > POOL_FLOATS * sizeof(float)) {
    fprintf(stderr, "test_kernels_narrow: case too large for the pool\n");
    exit(2);
  }
  return (char *)(pool[slot].p + POOL_FLOATS) - bytes;
}

static void *narrow_at(int slot, sa_dtype t, size_t rows, size_t d, int wide,
                       size_t *ld, float lo, float hi) {
  size_t u = sa_dtype_unit(t), row = units(t, d);
  *ld = row + (wide ? t_range(1, 3) : 0);
  size_t bytes = ((rows - 1) * *ld + row) * u;
  char *base = pool_tail(slot, bytes);
  memset(base, 0x7f, bytes);
  float x[32];
  for (size_t i = 0; i < rows; i++) {
    char *r = base + i * *ld * u;
    if (t == SA_Q8_0) {
      for (size_t b = 0; b < row; b++) {
        t_fill(x, 32, lo, hi);
        sa_quantize_q8_0(x, (sa_block_q8_0 *)(void *)r + b);
      }
    } else {
      for (size_t p = 0; p < d; p++) {
        float v = t_uniform(lo, hi);
        uint16_t h = t == SA_F16 ? sa_f32_to_f16(v) : sa_f32_to_bf16(v);
        memcpy(r + 2 * p, &h, 2);
      }
    }
  }
  return base;
}

/* Its values widened, |x| if asked, packed rows of d floats. */
static float *widened(int slot, sa_dtype t, const void *a, size_t rows,
                      size_t d, size_t ld, int absolute) {
  float *w = pool[slot].p;
  for (size_t i = 0; i < rows; i++)
    for (size_t p = 0; p < d; p++) {
      float v = sa_load_elem(t, (const char *)a + i * ld * sa_dtype_unit(t), p);
      w[i * d + p] = absolute ? fabsf(v) : v;
    }
  return w;
}

/* An f32 matrix at the end of its slot, row gaps NaN. */
static float *floats_at(int slot, size_t rows, size_t cols, int wide,
                        size_t *ld) {
  *ld = cols + (wide ? t_range(1, 5) : 0);
  size_t n = (rows - 1) * *ld + cols;
  float *base = pool_tail(slot, n * sizeof(float));
  for (size_t i = 0; i < n; i++)
    base[i] = NAN;
  return base;
}

static int gaps_intact(const float *a, size_t rows, size_t cols, size_t ld) {
  for (size_t i = 0; i + 1 < rows; i++)
    for (size_t j = cols; j < ld; j++)
      if (!isnan(a[i * ld + j]))
        return 0;
  return 1;
}

static int seen_fn(void (*fn)(void), void (**done)(void), int *ndone) {
  for (int i = 0; i < *ndone; i++)
    if (done[i] == fn)
      return 1;
  done[(*ndone)++] = fn;
  return 0;
}

/* score_t[t] of every set, and score_bf16 (Q bf16 too) where present. */
static void score_case(sa_dtype t, size_t m, size_t n, size_t d) {
  int wide = t_next() & 1;
  size_t ldk, ldq, ldq16, lds, ldr;
  const void *k = narrow_at(KN, t, n, d, wide, &ldk, -1, 1);
  /* Q: bf16 values, so that score_bf16 sees the same numbers */
  const void *q16 = narrow_at(QN, SA_BF16, m, d, !wide, &ldq16, -1, 1);
  ldq = ldq16 + 1;
  float *q = pool_tail(PF, ((m - 1) * ldq + d) * sizeof(float));
  for (size_t i = 0; i < m; i++)
    for (size_t p = 0; p < d; p++)
      q[i * ldq + p] =
          sa_load_elem(SA_BF16, (const char *)q16 + i * ldq16 * 2, p);
  float scale = t_uniform(0.05f, 2.0f);
  float *r = floats_at(RF, m, n, 0, &ldr);
  oracle->score_t[t](m, n, d, q, ldq, k, ldk, scale, r, ldr);
  /* sum |q k| over the widened values */
  const float *qa = widened(WQ, SA_BF16, q16, m, d, ldq16, 1);
  const float *ka = widened(WK, t, k, n, d, ldk, 1);
  double *mag = malloc(m * n * sizeof(double));
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t p = 0; p < d; p++)
        s += (double)qa[i * d + p] * ka[j * d + p];
      mag[i * n + j] = s;
    }
  void (*done[2 * MAX_SETS])(void);
  int ndone = 0;
  for (int si = 0; si < nsets; si++)
    for (int bf = 0; bf < 2; bf++) {
      const sa_kernel_set *ks = sets[si];
      void (*fn)(void) =
          bf ? (void (*)(void))ks->score_bf16 : (void (*)(void))ks->score_t[t];
      if (bf && (t != SA_BF16 || !ks->score_bf16))
        continue;
      CHECK(fn != NULL, "%s has no score_t[%s]", ks->name, sa_dtype_name(t));
      if (!fn || seen_fn(fn, done, &ndone))
        continue;
      t_context = ks->name;
      float *s = floats_at(OF, m, n, wide, &lds);
      if (bf)
        ks->score_bf16(m, n, d, q16, ldq16, k, ldk, scale, s, lds);
      else
        ks->score_t[t](m, n, d, q, ldq, k, ldk, scale, s, lds);
      size_t bad = 0;
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
          double tol =
              2.02 * ((double)d + 1) * U_F32 * scale * mag[i * n + j] + 1e-30;
          float got = s[i * lds + j], want = r[i * ldr + j];
          if (!(fabs(got - want) <= tol) && bad++ == 0)
            CHECK(0, "score%s %s m=%zu n=%zu d=%zu (%zu,%zu) %g vs %g",
                  bf ? "_bf16" : "_t", sa_dtype_name(t), m, n, d, i, j, got,
                  want);
        }
      CHECK(bad == 0 && gaps_intact(s, m, n, lds),
            "score%s %s m=%zu n=%zu d=%zu: %zu wrong, gaps %s",
            bf ? "_bf16" : "_t", sa_dtype_name(t), m, n, d, bad,
            gaps_intact(s, m, n, lds) ? "intact" : "written");
    }
  free(mag);
}

static void wsum_case(sa_dtype t, size_t m, size_t n, size_t dv) {
  int wide = t_next() & 1, use_beta = t_next() & 1;
  size_t ldv, ldp, ldo, ldr;
  const void *v = narrow_at(KN, t, n, dv, wide, &ldv, -1, 1);
  float *p = floats_at(PF, m, n, !wide, &ldp);
  for (size_t i = 0; i < m; i++)
    t_fill(p + i * ldp, n, 0, 1);
  float beta[64], *o0 = pool[WQ].p;
  for (size_t i = 0; i < m; i++) {
    beta[i] = t_uniform(0, 1);
    t_fill(o0 + i * dv, dv, -1, 1);
  }
  const float *bp = use_beta ? beta : NULL;
  float *r = floats_at(RF, m, dv, 0, &ldr);
  for (size_t i = 0; i < m; i++)
    memcpy(r + i * ldr, o0 + i * dv, dv * sizeof(float));
  oracle->wsum_t[t](m, n, dv, p, ldp, v, ldv, bp, r, ldr);
  const float *va = widened(WK, t, v, n, dv, ldv, 1);
  void (*done[MAX_SETS])(void);
  int ndone = 0;
  for (int si = 0; si < nsets; si++) {
    const sa_kernel_set *ks = sets[si];
    CHECK(ks->wsum_t[t] != NULL, "%s has no wsum_t[%s]", ks->name,
          sa_dtype_name(t));
    if (!ks->wsum_t[t] || seen_fn((void (*)(void))ks->wsum_t[t], done, &ndone))
      continue;
    t_context = ks->name;
    float *o = floats_at(OF, m, dv, wide, &ldo);
    for (size_t i = 0; i < m; i++)
      for (size_t c = 0; c < dv; c++) /* beta NULL must never read o */
        o[i * ldo + c] = use_beta ? o0[i * dv + c] : NAN;
    ks->wsum_t[t](m, n, dv, p, ldp, v, ldv, bp, o, ldo);
    size_t bad = 0;
    for (size_t i = 0; i < m; i++)
      for (size_t c = 0; c < dv; c++) {
        double mag = use_beta ? fabs((double)beta[i] * o0[i * dv + c]) : 0;
        for (size_t j = 0; j < n; j++)
          mag += fabs((double)p[i * ldp + j] * va[j * dv + c]);
        double tol = 2 * ((double)n + 2) * U_F32 * mag + 1e-30;
        float got = o[i * ldo + c], want = r[i * ldr + c];
        if (!(fabs(got - want) <= tol) && bad++ == 0)
          CHECK(0, "wsum_t %s m=%zu n=%zu dv=%zu beta=%d (%zu,%zu) %g vs %g",
                sa_dtype_name(t), m, n, dv, use_beta, i, c, got, want);
      }
    CHECK(bad == 0 && gaps_intact(o, m, dv, ldo),
          "wsum_t %s m=%zu n=%zu dv=%zu: %zu wrong, gaps %s", sa_dtype_name(t),
          m, n, dv, bad, gaps_intact(o, m, dv, ldo) ? "intact" : "written");
  }
}

int main(void) {
  t_seed(14);
  oracle = sa_kernel_set_find("scalar");
  nsets = t_runnable_sets(sets, MAX_SETS);
  for (int i = 0; i < NPOOL; i++)
    pool[i] = g_alloc(POOL_FLOATS);
  const t_shapes sh = t_kernel_shapes(sets, nsets);
  /* score's d past the panel chunks (kc) too: the GEMM path's chunks; q8_0
   * takes whole blocks, so there each size is rounded up to one */
  t_sizes sd = sh.d, qd = {0}, qdv = {0};
  for (size_t c = 0; c < sh.kc.n; c++)
    t_sizes_add(&sd, sh.kc.v[c]);
  for (size_t c = 0; c < sd.n; c++)
    t_sizes_add(&qd, (sd.v[c] + SA_QK8_0 - 1) / SA_QK8_0 * SA_QK8_0);
  for (size_t c = 0; c < sh.dv.n; c++)
    t_sizes_add(&qdv, (sh.dv.v[c] + SA_QK8_0 - 1) / SA_QK8_0 * SA_QK8_0);
  t_sizes_print("m", &sh.m);
  t_sizes_print("n", &sh.n);
  t_sizes_print("d", &sd);
  t_sizes_print("dv", &sh.dv);
  t_sizes_print("q8 d", &qd);
  t_sizes_print("q8 dv", &qdv);
  for (int ti = 0; ti < 3; ti++) {
    sa_dtype t = types[ti];
    const t_sizes *ds = t == SA_Q8_0 ? &qd : &sd;
    const t_sizes *dvs = t == SA_Q8_0 ? &qdv : &sh.dv;
    for (size_t a = 0; a < sh.m.n; a++)
      for (size_t b = 0; b < sh.n.n; b++) {
        for (size_t c = 0; c < ds->n; c++)
          score_case(t, sh.m.v[a], sh.n.v[b], ds->v[c]);
        for (size_t c = 0; c < dvs->n; c++)
          wsum_case(t, sh.m.v[a], sh.n.v[b], dvs->v[c]);
      }
    for (int it = 0; it < 60; it++) {
      size_t m = t_range(1, 64), n = t_range(1, 300);
      size_t d = t == SA_Q8_0 ? 32 * t_range(1, 8) : t_range(1, 300);
      if (it % 3 == 0)
        d = 128;
      score_case(t, m, n, d);
      wsum_case(t, m, n, d);
    }
  }
  for (int i = 0; i < NPOOL; i++)
    g_free(&pool[i]);
  return t_finish("test_kernels_narrow");
}
