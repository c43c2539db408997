/*
 * Every kernel set in the registry that this CPU can run, against the scalar
 * oracle, kernel by kernel.
 *
 * Shapes: every m, n, d from 1 to 3W + 1 (W = the set's lanes), where tail
 * bugs live, plus random larger ones. Every buffer ends at a PROT_NONE page,
 * so a kernel that reads or writes one float past a row's end faults; row
 * strides are sometimes wider than the row and starts are sometimes one
 * float off, so no alignment is ever given.
 *
 * Tolerances: two float implementations of the same sum differ by at most the
 * sum of their error bounds; the bounds are the ones test_scalar_kernels
 * proves for the oracle, with the set's exp accuracy (ULPs) plugged in.
 */
#include "kernels.h"
#include "testing.h"

static const sa_kernel_set *oracle;

/* exp accuracy the set claims, in ULPs: SLEEF u10 and glibc expf are within
 * 1, the polynomial exps are measured at under 4 (see their headers). */
static double exp_ulps(const sa_kernel_set *ks) {
  return strcmp(ks->exp_impl, "poly") == 0 ? 4.0 : 1.0;
}

/* A matrix of rows x cols floats, row stride ld, ending at a guard page. */
typedef struct mat {
  guarded g;
  float *p;
  size_t ld;
} mat;

static mat mat_new(size_t rows, size_t cols, int wide, int offset) {
  mat a;
  a.ld = cols + (wide ? t_range(1, 5) : 0);
  size_t n = (rows - 1) * a.ld + cols + (size_t)offset;
  a.g = g_alloc(n);
  a.p = a.g.p + offset;
  for (size_t i = 0; i < n; i++)
    a.g.p[i] = NAN; /* padding between rows must never be read as data */
  for (size_t i = 0; i < rows; i++)
    t_fill(a.p + i * a.ld, cols, -1, 1);
  return a;
}

static void score_case(const sa_kernel_set *ks, size_t m, size_t n, size_t d) {
  int wide = t_next() & 1, off = (t_next() >> 7) & 1;
  mat q = mat_new(m, d, wide, off), k = mat_new(n, d, !wide, !off);
  mat s = mat_new(m, n, wide, off), r = mat_new(m, n, 0, 0);
  float scale = t_uniform(0.05f, 2.0f);
  ks->score(m, n, d, q.p, q.ld, k.p, k.ld, scale, s.p, s.ld);
  oracle->score(m, n, d, q.p, q.ld, k.p, k.ld, scale, r.p, r.ld);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double mag = 0;
      for (size_t p = 0; p < d; p++)
        mag += fabs((double)q.p[i * q.ld + p] * k.p[j * k.ld + p]);
      /* each side within (d + 1) u scale sum|q k| of the exact value */
      double tol = 2 * ((double)d + 1) * U_F32 * scale * mag + 1e-30;
      float got = s.p[i * s.ld + j], want = r.p[i * r.ld + j];
      CHECK(fabs(got - want) <= tol,
            "score m=%zu n=%zu d=%zu (%zu,%zu) %g vs %g", m, n, d, i, j, got,
            want);
    }
  /* the gaps between output rows stay untouched */
  for (size_t i = 0; i + 1 < m; i++)
    for (size_t j = n; j < s.ld; j++)
      CHECK(isnan(s.p[i * s.ld + j]), "score wrote past row end (%zu,%zu)", i,
            j);
  g_free(&q.g), g_free(&k.g), g_free(&s.g), g_free(&r.g);
}

/* Logits drawn around +-range: 95 +- 5 overflows expf unless the row max
 * is subtracted first. */
static void softmax_case(const sa_kernel_set *ks, size_t m, size_t n,
                         int online) {
  int wide = t_next() & 1, off = (t_next() >> 7) & 1;
  mat s = mat_new(m, n, wide, off), r = mat_new(m, n, 0, 0);
  size_t *len = malloc(m * sizeof(size_t));
  int use_len = t_next() % 3 != 0;
  float base = (t_next() & 1) ? 95.0f : 0.0f, spread = t_uniform(1, 40);
  for (size_t i = 0; i < m; i++) {
    len[i] = t_range(0, n);
    if (i == 0)
      len[i] = n;
    if (i == 1)
      len[i] = 0;
    for (size_t j = 0; j < n; j++)
      s.p[i * s.ld + j] = r.p[i * r.ld + j] = base + t_uniform(-spread, spread);
  }
  float mx[64], l[64], alpha[64], rmx[64], rl[64], ralpha[64];
  for (size_t i = 0; i < m; i++) {
    int fresh = t_next() & 1;
    rmx[i] = mx[i] = fresh ? -INFINITY : base + t_uniform(-spread, spread);
    rl[i] = l[i] = fresh ? 0.0f : t_uniform(0.5f, 10.0f);
  }
  const size_t *lp = use_len ? len : NULL;
  if (online) {
    ks->softmax_online(m, n, s.p, s.ld, lp, mx, l, alpha);
    oracle->softmax_online(m, n, r.p, r.ld, lp, rmx, rl, ralpha);
  } else {
    ks->softmax(m, n, s.p, s.ld, lp);
    oracle->softmax(m, n, r.p, r.ld, lp);
  }
  double ulp = exp_ulps(ks) + 1.0; /* the set's exp and glibc's expf */
  for (size_t i = 0; i < m; i++) {
    size_t nv = use_len ? len[i] : n;
    for (size_t j = 0; j < n; j++) {
      float got = s.p[i * s.ld + j], want = r.p[i * r.ld + j];
      if (j >= nv) {
        CHECK(got == 0.0f, "%s masked (%zu,%zu)=%g n=%zu len=%zu",
              online ? "online" : "softmax", i, j, got, n, nv);
        continue;
      }
      /* exp ulps + both sums (n u each) + normalisation */
      double rel = online ? (ulp + 2) : (ulp + 2.0 * (double)nv + 6);
      CHECK(fabs(got - want) <= rel * U_F32 * fabs(want) + 0x1p-140 &&
                isfinite(got),
            "%s m=%zu n=%zu len=%zu (%zu,%zu) %g vs %g",
            online ? "online" : "softmax", m, n, nv, i, j, got, want);
    }
    if (online) {
      /* the max is exact in any order */
      CHECK(mx[i] == rmx[i] || (isnan(mx[i]) && isnan(rmx[i])),
            "online mx[%zu] %g vs %g", i, mx[i], rmx[i]);
      CHECK(fabs(alpha[i] - ralpha[i]) <=
                (ulp + 1) * U_F32 * ralpha[i] + 0x1p-140,
            "online alpha[%zu] %g vs %g", i, alpha[i], ralpha[i]);
      double tol = (2.0 * (double)nv + ulp + 4) * U_F32 * rl[i] + 0x1p-140;
      CHECK(fabs(l[i] - rl[i]) <= tol, "online l[%zu] %g vs %g (n=%zu)", i,
            l[i], rl[i], nv);
    }
  }
  for (size_t i = 0; i + 1 < m; i++)
    for (size_t j = n; j < s.ld; j++)
      CHECK(isnan(s.p[i * s.ld + j]), "softmax wrote past row end");
  free(len);
  g_free(&s.g), g_free(&r.g);
}

static void wsum_case(const sa_kernel_set *ks, size_t m, size_t n, size_t dv) {
  int wide = t_next() & 1, off = (t_next() >> 7) & 1;
  mat p = mat_new(m, n, wide, off), v = mat_new(n, dv, !wide, off);
  mat o = mat_new(m, dv, wide, !off), r = mat_new(m, dv, 0, 0);
  float beta[64];
  int use_beta = t_next() & 1;
  for (size_t i = 0; i < m; i++) {
    beta[i] = t_uniform(0, 1);
    for (size_t c = 0; c < dv; c++) {
      if (!use_beta) /* beta NULL must never read o */
        o.p[i * o.ld + c] = NAN;
      r.p[i * r.ld + c] = o.p[i * o.ld + c];
    }
    for (size_t j = 0; j < n; j++)
      p.p[i * p.ld + j] = t_uniform(0, 1);
  }
  const float *bp = use_beta ? beta : NULL;
  ks->wsum(m, n, dv, p.p, p.ld, v.p, v.ld, bp, o.p, o.ld);
  oracle->wsum(m, n, dv, p.p, p.ld, v.p, v.ld, bp, r.p, r.ld);
  for (size_t i = 0; i < m; i++)
    for (size_t c = 0; c < dv; c++) {
      double mag = use_beta ? fabs((double)beta[i] * r.p[i * r.ld + c]) : 0;
      for (size_t j = 0; j < n; j++)
        mag += fabs((double)p.p[i * p.ld + j] * v.p[j * v.ld + c]);
      double tol = 2 * ((double)n + 2) * U_F32 * mag + 1e-30;
      float got = o.p[i * o.ld + c], want = r.p[i * r.ld + c];
      CHECK(fabs(got - want) <= tol,
            "wsum m=%zu n=%zu dv=%zu beta=%d (%zu,%zu) "
            "%g vs %g",
            m, n, dv, use_beta, i, c, got, want);
    }
  for (size_t i = 0; i + 1 < m; i++)
    for (size_t c = dv; c < o.ld; c++)
      CHECK(isnan(o.p[i * o.ld + c]), "wsum wrote past row end");
  g_free(&p.g), g_free(&v.g), g_free(&o.g), g_free(&r.g);
}

static void test_set(const sa_kernel_set *ks) {
  size_t w = ks->vector_bits ? ks->vector_bits / 32 : 4;
  size_t top = 3 * w + 1;
  int before = t_failed;
  t_context = ks->name;
  /* the full cube of small sizes for the two kernels with three sizes */
  for (size_t m = 1; m <= top; m++)
    for (size_t n = 1; n <= top; n++)
      for (size_t d = 1; d <= top; d++) {
        score_case(ks, m, n, d);
        wsum_case(ks, m, n, d);
      }
  for (size_t m = 1; m <= top; m++)
    for (size_t n = 1; n <= top; n++) {
      softmax_case(ks, m, n, 0);
      softmax_case(ks, m, n, 1);
    }
  /* larger random shapes, including realistic d = 64, 128 */
  for (int it = 0; it < 60; it++) {
    size_t m = t_range(1, 64), n = t_range(1, 700), d = t_range(1, 260);
    if (it % 4 == 0)
      d = it % 8 ? 64 : 128;
    score_case(ks, m, n, d);
    wsum_case(ks, m, n, d);
    softmax_case(ks, m, n, it & 1);
  }
  printf("%-16s %s (vector %u bits, exp %s)\n", ks->name,
         t_failed == before ? "ok" : "FAILED", ks->vector_bits, ks->exp_impl);
}

int main(void) {
  t_seed(2);
  oracle = sa_kernel_set_find("scalar");
  CHECK(oracle != NULL, "the scalar oracle is always compiled");
  if (!oracle)
    return t_finish("test_kernels");
  int tested = 0, skipped = 0;
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    if (!sa_kernel_set_supported(ks)) {
      printf("%-16s SKIPPED: this CPU lacks its features\n", ks->name);
      skipped++;
      continue;
    }
    test_set(ks); /* the oracle too: its tails and guards count as well */
    tested++;
  }
  printf("kernel sets: %d tested, %d skipped (not runnable here)\n", tested,
         skipped);
  return t_finish("test_kernels");
}
