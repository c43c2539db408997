/*
 * The oracle's own test: each scalar kernel against double precision on
 * random inputs, with the error bound of the float algorithm it implements.
 */
#include "kernels/kernels.h"
#include "tests/testing.h"

/* expf's error as the registry states it for the scalar set, in u (an ULP
 * is at most 2u of the value) */
static double exp_rel;

static void test_score(void) {
  t_context = "score";
  for (int it = 0; it < 300; it++) {
    size_t m = t_range(1, 9), n = t_range(1, 40), d = t_range(1, 160);
    size_t ldq = d + t_range(0, 3), ldk = d + t_range(0, 3),
           lds = n + t_range(0, 3);
    float *q = malloc(m * ldq * 4), *k = malloc(n * ldk * 4),
          *s = malloc(m * lds * 4);
    t_fill(q, m * ldq, -2, 2);
    t_fill(k, n * ldk, -2, 2);
    float scale = t_uniform(0.01f, 3.0f);
    sa_score__scalar(m, n, d, q, ldq, k, ldk, scale, s, lds);
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        double acc = 0, mag = 0;
        for (size_t p = 0; p < d; p++) {
          acc += (double)q[i * ldq + p] * k[j * ldk + p];
          mag += fabs((double)q[i * ldq + p] * k[j * ldk + p]);
        }
        /* d roundings of the running sum, one for the scale */
        double tol = ((double)d + 1) * U_F32 * scale * mag + 1e-30;
        CHECK(fabs(s[i * lds + j] - scale * acc) <= tol,
              "m=%zu n=%zu d=%zu (%zu,%zu): %g vs %g", m, n, d, i, j,
              s[i * lds + j], scale * acc);
      }
    free(q), free(k), free(s);
  }
}

/* Logits from [lo, hi]: XNNPACK's [90, 100] overflows expf unless the max is
 * subtracted; [-1e4, 1e4] checks huge spreads underflow cleanly to 0. */
static void test_softmax(float lo, float hi) {
  t_context = "softmax";
  for (int it = 0; it < 300; it++) {
    size_t m = t_range(1, 6), n = t_range(1, 300), lds = n + t_range(0, 2);
    float *s = malloc(m * lds * 4), *x = malloc(m * lds * 4);
    size_t *len = malloc(m * sizeof(size_t));
    int use_len = it % 3 != 0;
    for (size_t i = 0; i < m; i++)
      len[i] = i == 0 ? 0 : t_range(0, n);
    t_fill(x, m * lds, lo, hi);
    memcpy(s, x, m * lds * 4);
    sa_softmax__scalar(m, n, s, lds, use_len ? len : NULL);
    for (size_t i = 0; i < m; i++) {
      size_t nv = use_len ? len[i] : n;
      double mx = -INFINITY, sum = 0;
      for (size_t j = 0; j < nv; j++)
        mx = x[i * lds + j] > mx ? x[i * lds + j] : mx;
      for (size_t j = 0; j < nv; j++)
        sum += exp((double)x[i * lds + j] - mx);
      for (size_t j = 0; j < n; j++) {
        float got = s[i * lds + j];
        if (j >= nv) {
          CHECK(got == 0.0f, "masked (%zu,%zu) = %g", i, j, got);
          continue;
        }
        double arg = (double)x[i * lds + j] - mx;
        double ref = exp(arg) / sum;
        /* expf (its registry ULPs, at most 2u each), the float
         * subtraction u|arg|, the sum n u, the division and the
         * reciprocal 2u, and 2u to spare */
        double tol =
            (((double)nv + 4 + exp_rel) * U_F32 + U_F32 * fabs(arg)) * ref +
            0x1p-149;
        CHECK(fabs(got - ref) <= tol && isfinite(got),
              "n=%zu len=%zu (%zu,%zu): %g vs %g", n, nv, i, j, got, ref);
      }
    }
    free(s), free(x), free(len);
  }
}

/* Several online steps over a row split into blocks must give the same l, mx
 * and block values as the one-shot computation in double; in base 2 for
 * softmax_online2. */
static void test_softmax_online(sa_softmax_online_fn step, int base2) {
  double (*ex)(double) = base2 ? exp2 : exp;
  t_context = base2 ? "softmax_online2" : "softmax_online";
  for (int it = 0; it < 300; it++) {
    size_t m = t_range(1, 5), n = t_range(1, 200), blk = t_range(1, 64);
    float *x = malloc(m * n * 4), *s = malloc(m * n * 4);
    float mx[5], l[5], alpha[5];
    size_t len[5], lenb[5];
    t_fill(x, m * n, -30, 30);
    for (size_t i = 0; i < m; i++) {
      len[i] = it % 4 == 0 ? n : t_range(0, n);
      mx[i] = -INFINITY;
      l[i] = 0.0f;
    }
    memcpy(s, x, m * n * 4);
    for (size_t j0 = 0; j0 < n; j0 += blk) {
      size_t nb = n - j0 < blk ? n - j0 : blk;
      float prev[5];
      for (size_t i = 0; i < m; i++) {
        size_t left = len[i] > j0 ? len[i] - j0 : 0;
        lenb[i] = left < nb ? left : nb;
        prev[i] = mx[i];
      }
      /* s is a view into the row-major m x n array with lds = n */
      step(m, nb, s + j0, n, lenb, mx, l, alpha);
      for (size_t i = 0; i < m; i++) {
        double bm = prev[i];
        for (size_t j = 0; j < lenb[i]; j++)
          bm = x[i * n + j0 + j] > bm ? x[i * n + j0 + j] : bm;
        CHECK(mx[i] == (float)bm, "mx[%zu] = %g vs %g", i, mx[i], bm);
        if (bm == -INFINITY) {
          CHECK(alpha[i] == 1.0f && l[i] == 0.0f, "empty row alpha %g l %g",
                alpha[i], l[i]);
        } else if (prev[i] == -INFINITY) {
          CHECK(alpha[i] == 0.0f, "first alpha %g", alpha[i]);
        } else {
          /* the float subtraction rounds by u|arg|, then expf's ULPs, and
           * u to spare */
          double arg = (double)prev[i] - bm, ra = ex(arg);
          CHECK(fabs(alpha[i] - ra) <=
                    (exp_rel + 1 + fabs(arg)) * U_F32 * ra + 0x1p-149,
                "alpha %g vs %g", alpha[i], ra);
        }
        for (size_t j = 0; j < nb; j++) {
          float got = s[i * n + j0 + j];
          if (j >= lenb[i]) {
            CHECK(got == 0.0f, "masked %g", got);
            continue;
          }
          double arg = (double)x[i * n + j0 + j] - bm;
          double ref = ex(arg);
          CHECK(fabs(got - ref) <=
                    (exp_rel + 1 + fabs(arg)) * U_F32 * ref + 0x1p-149,
                "p %g vs %g", got, ref);
        }
      }
    }
    for (size_t i = 0; i < m; i++) {
      double bm = -INFINITY, sum = 0;
      for (size_t j = 0; j < len[i]; j++)
        bm = x[i * n + j] > bm ? x[i * n + j] : bm;
      for (size_t j = 0; j < len[i]; j++)
        sum += ex((double)x[i * n + j] - bm);
      /* each step: the rescale (2 roundings + alpha's error), the block sum */
      double steps = (double)(n + blk - 1) / (double)blk;
      double tol = ((double)n + 8 * steps + 4) * 2 * U_F32 * sum;
      CHECK(fabs(l[i] - sum) <= tol, "l[%zu] = %g vs %g", i, l[i], sum);
    }
    free(x), free(s);
  }
}

static void test_wsum(void) {
  t_context = "wsum";
  for (int it = 0; it < 300; it++) {
    size_t m = t_range(1, 7), n = t_range(1, 70), dv = t_range(1, 150);
    size_t ldp = n + t_range(0, 2), ldv = dv + t_range(0, 2),
           ldo = dv + t_range(0, 2);
    float *p = malloc(m * ldp * 4), *v = malloc(n * ldv * 4),
          *o = malloc(m * ldo * 4), *o0 = malloc(m * ldo * 4), beta[7];
    t_fill(p, m * ldp, 0, 1);
    t_fill(v, n * ldv, -3, 3);
    t_fill(o0, m * ldo, -3, 3);
    t_fill(beta, 7, 0, 1);
    int use_beta = it % 2;
    if (!use_beta)
      for (size_t x = 0; x < m * ldo; x++)
        o0[x] = NAN; /* beta NULL must never read o */
    memcpy(o, o0, m * ldo * 4);
    sa_wsum__scalar(m, n, dv, p, ldp, v, ldv, use_beta ? beta : NULL, o, ldo);
    for (size_t i = 0; i < m; i++)
      for (size_t c = 0; c < dv; c++) {
        double acc = use_beta ? (double)beta[i] * o0[i * ldo + c] : 0.0;
        double mag = fabs(acc);
        for (size_t j = 0; j < n; j++) {
          acc += (double)p[i * ldp + j] * v[j * ldv + c];
          mag += fabs((double)p[i * ldp + j] * v[j * ldv + c]);
        }
        double tol = ((double)n + 2) * U_F32 * mag + 1e-30;
        CHECK(fabs(o[i * ldo + c] - acc) <= tol, "(%zu,%zu) %g vs %g", i, c,
              o[i * ldo + c], acc);
      }
    free(p), free(v), free(o), free(o0);
  }
}

int main(void) {
  t_seed(1);
  const sa_kernel_set *scalar = sa_kernel_set_find("scalar");
  CHECK(scalar != NULL, "the scalar set is always compiled");
  if (!scalar)
    return t_finish("test_scalar_kernels");
  exp_rel = 2.0 * scalar->exp_ulps;
  test_score();
  test_softmax(90, 100);
  test_softmax(-1e4f, 1e4f);
  test_softmax_online(sa_softmax_online__scalar, 0);
  test_softmax_online(sa_softmax_online2__scalar, 1);
  test_wsum();
  return t_finish("test_scalar_kernels");
}
