/*
 * Each kernel set's exp and exp2 against double precision, in ULP, held to
 * the exp_ulps its registry row states.
 *
 * The kernels do not export their exp, but the online step gives it back
 * exactly: a row [0, x1, x2, ...] with every x <= 0 has max 0, so
 * softmax_online writes p = exp(x - 0) = exp(x) for each x, and
 * softmax_online2 exp2(x), with no other rounding. The arguments are the
 * floats of [-104, 0] (exp) and [-151, 0] (exp2), every STRIDE-th bit
 * pattern from -0 down (a prime stride, so every exponent and many
 * mantissa patterns are met), plus the ends of the range: the arguments a
 * softmax gives. Normal results are held to exp_ulps ULP of the exact
 * value; a denormal one (below FLT_MIN) to one denormal spacing, or 0 (a
 * set may flush results below FLT_MIN to zero, as NEON's polynomial does).
 * exp(0) must be 1 exactly: a row's largest score weighs exactly 1.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "tests/testing.h"

enum { STRIDE = 509, ROW = 1024 };

typedef struct worst {
  double ulps; /* largest error of a normal result, in its ULP */
  float at;
  long points;
} worst;

/* The ULP of a normal float result near `ref` (ref >= FLT_MIN). */
static double ulp_of(double ref) {
  int e;
  frexp(ref, &e);
  return ldexp(1.0, e - 24);
}

/* One row through the set's online step (base 2 or e), its results
 * checked against double precision. */
static void check_row(const sa_kernel_set *ks, int base2, const float *x,
                      size_t n, worst *w) {
  float s[ROW + 1], mx = -INFINITY, l = 0.0f, alpha;
  s[0] = 0.0f;
  memcpy(s + 1, x, n * sizeof(float));
  (base2 ? ks->softmax_online2 : ks->softmax_online)(1, n + 1, s, ROW + 1, NULL,
                                                     &mx, &l, &alpha);
  CHECK(s[0] == 1.0f && mx == 0.0f, "%s(0) = %a, max %g",
        base2 ? "exp2" : "exp", s[0], mx);
  for (size_t j = 0; j < n; j++) {
    double ref = base2 ? exp2((double)x[j]) : exp((double)x[j]);
    float got = s[j + 1];
    w->points++;
    if (ref < FLT_MIN) {
      CHECK(got == 0.0f || fabs((double)got - ref) <= 0x1p-149,
            "%s(%a) = %a, exact %a (a denormal result)", base2 ? "exp2" : "exp",
            x[j], got, ref);
      continue;
    }
    double err = fabs((double)got - ref) / ulp_of(ref);
    if (err > w->ulps) {
      w->ulps = err;
      w->at = x[j];
    }
    CHECK(err <= ks->exp_ulps, "%s(%a) = %a, exact %a: %.4f ULP > %.2f",
          base2 ? "exp2" : "exp", x[j], got, ref, err, ks->exp_ulps);
  }
}

/* Every STRIDE-th float of [lo, 0], and lo itself, in rows of ROW. */
static worst sweep(const sa_kernel_set *ks, int base2, float lo) {
  worst w = {0.0, 0.0f, 0};
  uint32_t end;
  memcpy(&end, &lo, sizeof end);
  float x[ROW];
  size_t n = 0;
  uint32_t bits;
  uint64_t b = 0x80000000u; /* -0.0f, then down to lo */
  do {
    bits = b < end ? (uint32_t)b : end;
    memcpy(&x[n++], &bits, sizeof bits);
    if (n == ROW || bits == end) {
      check_row(ks, base2, x, n, &w);
      n = 0;
    }
    b += STRIDE;
  } while (bits != end);
  return w;
}

int main(void) {
  const sa_kernel_set *sets[16];
  int nsets = t_runnable_sets(sets, 16);
  for (int i = 0; i < nsets; i++) {
    const sa_kernel_set *ks = sets[i];
    t_context = ks->name;
    worst e = sweep(ks, 0, -104.0f), e2 = sweep(ks, 1, -151.0f);
    printf("%-16s exp %.4f ULP (at %a), exp2 %.4f ULP (at %a); stated %.2f; "
           "%ld points\n",
           ks->name, e.ulps, e.at, e2.ulps, e2.at, ks->exp_ulps,
           e.points + e2.points);
  }
  return t_finish("test_exp");
}
