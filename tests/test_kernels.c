/*
 * Every kernel set in the registry that this CPU can run, against the scalar
 * oracle, kernel by kernel.
 *
 * Shapes: m, n, d and dv at and around every runnable set's register tiles,
 * vector steps, panel chunk (KC) and small-m cutoffs (tile_sizes.h, from
 * the sets' own numbers), where tail and path bugs live, crossed with each
 * other; softmax and score_mod rows around each vector step and unroll;
 * plus random larger shapes. Every buffer ends at
 * a PROT_NONE page, so a kernel that reads or writes one float past a row's
 * end faults; row strides are sometimes wider than the row (the gap is NaN
 * and must stay NaN), and starts are sometimes one float off, so no
 * alignment is ever given.
 *
 * Each case computes the oracle once and checks every distinct kernel
 * function against it (sets that share a kernel, such as avx2 and
 * avx2-polyexp for score, test it once).
 *
 * Tolerances: two float implementations of the same sum differ by at most the
 * sum of their error bounds; the bounds are the ones test_scalar_kernels
 * proves for the oracle, with each set's exp accuracy (exp_ulps, from the
 * registry) plugged in.
 */
#include "kernels/kernels.h"
#include "tests/testing.h"
#include "tests/tile_sizes.h"

#define MAX_SETS 16
static const sa_kernel_set *oracle, *sets[MAX_SETS];
static int nsets;

/* Big guarded regions, reused: a matrix is placed so its last float is the
 * region's last float before the guard page. */
/* room for the largest swept case: n up to 2 x 128 + 1 keys (wsum's
 * sub-blocks) with d up to 2 x 512 + 1 (avx512bf16's panel) */
#define POOL_FLOATS (1u << 20)
enum { Q, K, S, R, V, O, O0, NPOOL };
static guarded pool[NPOOL];

typedef struct mat {
  float *p;
  size_t ld;
} mat;

static mat mat_at(int slot, size_t rows, size_t cols, int wide, int offset) {
  mat a;
  a.ld = cols + (wide ? t_range(1, 5) : 0);
  size_t n = (rows - 1) * a.ld + cols + (size_t)offset;
  if (n > POOL_FLOATS) {
    fprintf(stderr, "test_kernels: case too large for the pool\n");
    exit(2);
  }
  float *base = pool[slot].p + (POOL_FLOATS - n);
  for (size_t i = 0; i < n; i++)
    base[i] = NAN; /* padding between rows must never be read as data */
  a.p = base + offset;
  return a;
}

static void fill(mat a, size_t rows, size_t cols, float lo, float hi) {
  for (size_t i = 0; i < rows; i++)
    t_fill(a.p + i * a.ld, cols, lo, hi);
}

/* The gaps between rows still hold NaN. */
static int gaps_intact(mat a, size_t rows, size_t cols) {
  for (size_t i = 0; i + 1 < rows; i++)
    for (size_t j = cols; j < a.ld; j++)
      if (!isnan(a.p[i * a.ld + j]))
        return 0;
  return 1;
}

/* Has this function already been checked in this case? */
static int seen_fn(void (*fn)(void), void (**done)(void), int *ndone) {
  for (int i = 0; i < *ndone; i++)
    if (done[i] == fn)
      return 1;
  done[(*ndone)++] = fn;
  return 0;
}

/* A kernel run two ways (a policy at -1, then 1) must give the same bits:
 * the first way's rows x cols are kept in `first`, the second compared. */
static int ways_agree(int way, float *first, mat got, size_t rows,
                      size_t cols) {
  int same = 1;
  for (size_t i = 0; i < rows; i++) {
    float *row = first + i * cols, *g = got.p + i * got.ld;
    if (way < 0)
      memcpy(row, g, cols * sizeof(float));
    else
      same &= !memcmp(row, g, cols * sizeof(float));
  }
  return same;
}

static void score_case(size_t m, size_t n, size_t d) {
  int wide = t_next() & 1, off = (t_next() >> 7) & 1;
  mat q = mat_at(Q, m, d, wide, off), k = mat_at(K, n, d, !wide, !off);
  mat r = mat_at(R, m, n, 0, 0), mag = mat_at(O0, m, n, 0, 0);
  fill(q, m, d, -1, 1);
  fill(k, n, d, -1, 1);
  float scale = t_uniform(0.05f, 2.0f);
  oracle->score(m, n, d, q.p, q.ld, k.p, k.ld, scale, r.p, r.ld);
  /* sum_p |q k| through the oracle on |q|, |k| (copies in the S, V slots) */
  mat qa = mat_at(S, m, d, 0, 0), ka = mat_at(V, n, d, 0, 0);
  for (size_t i = 0; i < m; i++)
    for (size_t p = 0; p < d; p++)
      qa.p[i * qa.ld + p] = fabsf(q.p[i * q.ld + p]);
  for (size_t j = 0; j < n; j++)
    for (size_t p = 0; p < d; p++)
      ka.p[j * ka.ld + p] = fabsf(k.p[j * k.ld + p]);
  oracle->score(m, n, d, qa.p, qa.ld, ka.p, ka.ld, 1.0f, mag.p, mag.ld);

  float *first = malloc(m * n * sizeof(float) + 1);
  void (*done[MAX_SETS])(void);
  int ndone = 0;
  for (int si = 0; si < nsets; si++) {
    const sa_kernel_set *ks = sets[si];
    if (seen_fn((void (*)(void))ks->score, done, &ndone))
      continue;
    t_context = ks->name;
    /* with and without keys as streams, whatever this core would take:
     * bit for bit alike */
    for (int way = -1; way <= 1; way += 2) {
      sa_score_streams_policy = way;
      mat s = mat_at(S, m, n, wide, off);
      ks->score(m, n, d, q.p, q.ld, k.p, k.ld, scale, s.p, s.ld);
      for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
          /* each side within (d + 1) u scale sum|q k| of the exact value;
           * 1.01 covers the rounding of the bound itself */
          double tol =
              2.02 * ((double)d + 1) * U_F32 * scale * mag.p[i * mag.ld + j] +
              1e-30;
          float got = s.p[i * s.ld + j], want = r.p[i * r.ld + j];
          CHECK(fabs(got - want) <= tol,
                "score m=%zu n=%zu d=%zu way %d (%zu,%zu) %g vs %g", m, n, d,
                way, i, j, got, want);
        }
      CHECK(gaps_intact(s, m, n),
            "score m=%zu n=%zu d=%zu way %d wrote past a row", m, n, d, way);
      CHECK(ways_agree(way, first, s, m, n),
            "score m=%zu n=%zu d=%zu: the ways differ", m, n, d);
    }
  }
  sa_score_streams_policy = 0;
  free(first);
}

/* Logits around 95 overflow expf unless the row max is subtracted first.
 * kind: 0 softmax, 1 softmax_online, 2 softmax_online2 (base 2). */
static void softmax_case(size_t m, size_t n, int kind) {
  const int online = kind != 0;
  int wide = t_next() & 1, off = (t_next() >> 7) & 1;
  mat x = mat_at(Q, m, n, 0, 0), r = mat_at(R, m, n, 0, 0);
  size_t len[64];
  int use_len = t_next() % 3 != 0;
  float base = (t_next() & 1) ? 95.0f : 0.0f, spread = t_uniform(1, 40);
  float mx0[64], l0[64], rmx[64], rl[64], ralpha[64];
  for (size_t i = 0; i < m; i++) {
    len[i] = i == 0 ? n : i == 1 ? 0 : t_range(0, n);
    for (size_t j = 0; j < n; j++)
      x.p[i * x.ld + j] = r.p[i * r.ld + j] = base + t_uniform(-spread, spread);
    int fresh = t_next() & 1;
    rmx[i] = mx0[i] = fresh ? -INFINITY : base + t_uniform(-spread, spread);
    rl[i] = l0[i] = fresh ? 0.0f : t_uniform(0.5f, 10.0f);
  }
  const size_t *lp = use_len ? len : NULL;
  if (kind == 2)
    oracle->softmax_online2(m, n, r.p, r.ld, lp, rmx, rl, ralpha);
  else if (online)
    oracle->softmax_online(m, n, r.p, r.ld, lp, rmx, rl, ralpha);
  else
    oracle->softmax(m, n, r.p, r.ld, lp);

  void (*done[MAX_SETS])(void);
  int ndone = 0;
  for (int si = 0; si < nsets; si++) {
    const sa_kernel_set *ks = sets[si];
    sa_softmax_online_fn step =
        kind == 2 ? ks->softmax_online2 : ks->softmax_online;
    void (*fn)(void) =
        online ? (void (*)(void))step : (void (*)(void))ks->softmax;
    if (seen_fn(fn, done, &ndone))
      continue;
    t_context = ks->name;
    const char *what = kind == 2 ? "softmax_online2"
                       : online  ? "softmax_online"
                                 : "softmax";
    mat s = mat_at(S, m, n, wide, off);
    float mx[64], l[64], alpha[64];
    for (size_t i = 0; i < m; i++) {
      memcpy(s.p + i * s.ld, x.p + i * x.ld, n * sizeof(float));
      mx[i] = mx0[i];
      l[i] = l0[i];
    }
    if (online)
      step(m, n, s.p, s.ld, lp, mx, l, alpha);
    else
      ks->softmax(m, n, s.p, s.ld, lp);
    /* Both sides compute the same exp arguments, so they differ by their
     * exps' errors, which the registry states in ULP (at most 2u each) */
    double ulp = 2.0 * ((double)ks->exp_ulps + oracle->exp_ulps);
    for (size_t i = 0; i < m; i++) {
      size_t nv = use_len ? len[i] : n;
      for (size_t j = 0; j < n; j++) {
        float got = s.p[i * s.ld + j], want = r.p[i * r.ld + j];
        if (j >= nv) {
          CHECK(got == 0.0f, "%s masked (%zu,%zu)=%g n=%zu len=%zu", what, i, j,
                got, n, nv);
          continue;
        }
        /* exp alone online (u to spare); plain adds both row sums (n u
         * each) and the normalisation */
        double rel = online ? ulp + 1 : (ulp + 2.0 * (double)nv + 6);
        CHECK(fabs(got - want) <= rel * U_F32 * fabs(want) + 0x1p-140 &&
                  isfinite(got),
              "%s m=%zu n=%zu len=%zu (%zu,%zu) %g vs %g", what, m, n, nv, i, j,
              got, want);
      }
      if (!online)
        continue;
      CHECK(mx[i] == rmx[i], "online mx[%zu] %g vs %g (the max is exact)", i,
            mx[i], rmx[i]);
      CHECK(fabs(alpha[i] - ralpha[i]) <=
                (ulp + 1) * U_F32 * ralpha[i] + 0x1p-140,
            "online alpha[%zu] %g vs %g", i, alpha[i], ralpha[i]);
      double tol = (2.0 * (double)nv + ulp + 4) * U_F32 * rl[i] + 0x1p-140;
      CHECK(fabs(l[i] - rl[i]) <= tol, "online l[%zu] %g vs %g (n=%zu)", i,
            l[i], rl[i], nv);
    }
    CHECK(gaps_intact(s, m, n), "%s m=%zu n=%zu wrote past a row", what, m, n);
  }
}

static void wsum_case(size_t m, size_t n, size_t dv) {
  int wide = t_next() & 1, off = (t_next() >> 7) & 1;
  mat p = mat_at(Q, m, n, wide, off), v = mat_at(K, n, dv, !wide, off);
  mat o0 = mat_at(O0, m, dv, 0, 0), r = mat_at(R, m, dv, 0, 0);
  float beta[64];
  int use_beta = t_next() & 1;
  fill(p, m, n, 0, 1);
  fill(v, n, dv, -1, 1);
  fill(o0, m, dv, -1, 1);
  for (size_t i = 0; i < m; i++) {
    beta[i] = t_uniform(0, 1);
    memcpy(r.p + i * r.ld, o0.p + i * o0.ld, dv * sizeof(float));
  }
  const float *bp = use_beta ? beta : NULL;
  oracle->wsum(m, n, dv, p.p, p.ld, v.p, v.ld, bp, r.p, r.ld);

  void (*done[MAX_SETS])(void);
  int ndone = 0;
  for (int si = 0; si < nsets; si++) {
    const sa_kernel_set *ks = sets[si];
    if (seen_fn((void (*)(void))ks->wsum, done, &ndone))
      continue;
    t_context = ks->name;
    /* both ways a set may take decode-shaped calls (kernels.h), bit for
     * bit alike */
    float *first = malloc(m * dv * sizeof(float) + 1);
    for (int way = -1; way <= 1; way += 2) {
      sa_wsum_decode_policy = way;
      mat o = mat_at(O, m, dv, wide, !off);
      for (size_t i = 0; i < m; i++)
        for (size_t c = 0; c < dv; c++) /* beta NULL must never read o */
          o.p[i * o.ld + c] = use_beta ? o0.p[i * o0.ld + c] : NAN;
      ks->wsum(m, n, dv, p.p, p.ld, v.p, v.ld, bp, o.p, o.ld);
      for (size_t i = 0; i < m; i++)
        for (size_t c = 0; c < dv; c++) {
          double mag =
              use_beta ? fabs((double)beta[i] * o0.p[i * o0.ld + c]) : 0;
          for (size_t j = 0; j < n; j++)
            mag += fabs((double)p.p[i * p.ld + j] * v.p[j * v.ld + c]);
          double tol = 2 * ((double)n + 2) * U_F32 * mag + 1e-30;
          float got = o.p[i * o.ld + c], want = r.p[i * r.ld + c];
          CHECK(fabs(got - want) <= tol,
                "wsum m=%zu n=%zu dv=%zu beta=%d way %d (%zu,%zu) %g vs %g", m,
                n, dv, use_beta, way, i, c, got, want);
        }
      CHECK(gaps_intact(o, m, dv),
            "wsum m=%zu n=%zu dv=%zu way %d wrote past a row", m, n, dv, way);
      CHECK(ways_agree(way, first, o, m, dv),
            "wsum m=%zu n=%zu dv=%zu: the ways differ", m, n, dv);
    }
    free(first);
  }
  sa_wsum_decode_policy = 0;
}

/* score_upto and wsum_upto: each row i up to its own end, ends[i] <= n,
 * either the causal diagonal's (one key further a row, clipped to [0, n])
 * or any (order random). Held to the set's own score and wsum over all n
 * keys, bit for bit: score_upto on every score a row needs, wsum_upto on p
 * whose entries past each row's end are 0, as the online step leaves them.
 * Neither may write past a row; wsum_upto with beta NULL must not read o. */
static long upto_checked;

static void upto_case(size_t m, size_t n, size_t d, size_t dv, int diagonal) {
  size_t ends[160];
  long base = (long)t_range(0, n + m) - (long)m;
  for (size_t i = 0; i < m; i++) {
    long e = diagonal ? base + (long)i + 1 : (long)t_range(0, n);
    ends[i] = e < 0 ? 0 : (size_t)e > n ? n : (size_t)e;
  }
  int wide = t_next() & 1, off = (t_next() >> 7) & 1;
  mat q = mat_at(Q, m, d, wide, off), k = mat_at(K, n, d, !wide, !off);
  fill(q, m, d, -1, 1);
  fill(k, n, d, -1, 1);
  float scale = t_uniform(0.05f, 2.0f);
  void (*done[MAX_SETS])(void);
  int ndone = 0;
  for (int si = 0; si < nsets; si++) {
    const sa_kernel_set *ks = sets[si];
    if (!ks->score_upto ||
        seen_fn((void (*)(void))ks->score_upto, done, &ndone))
      continue;
    t_context = ks->name;
    mat r = mat_at(R, m, n, 0, 0), s = mat_at(S, m, n, wide, off);
    ks->score(m, n, d, q.p, q.ld, k.p, k.ld, scale, r.p, r.ld);
    ks->score_upto(m, n, d, q.p, q.ld, k.p, k.ld, scale, s.p, s.ld, ends);
    for (size_t i = 0; i < m; i++, upto_checked++)
      CHECK(!memcmp(s.p + i * s.ld, r.p + i * r.ld, ends[i] * sizeof(float)),
            "score_upto m=%zu n=%zu d=%zu diagonal=%d: row %zu (end %zu) is "
            "not score's",
            m, n, d, diagonal, i, ends[i]);
    CHECK(gaps_intact(s, m, n), "score_upto m=%zu n=%zu d=%zu wrote past a row",
          m, n, d);
  }

  mat p = mat_at(Q, m, n, wide, off), v = mat_at(K, n, dv, !wide, off);
  mat o0 = mat_at(O0, m, dv, 0, 0);
  float beta[160];
  int use_beta = t_next() & 1;
  fill(p, m, n, 0, 1);
  for (size_t i = 0; i < m; i++)
    for (size_t j = ends[i]; j < n; j++)
      p.p[i * p.ld + j] = 0.0f;
  fill(v, n, dv, -1, 1);
  fill(o0, m, dv, -1, 1);
  for (size_t i = 0; i < m; i++)
    beta[i] = t_uniform(0, 1);
  const float *bp = use_beta ? beta : NULL;
  ndone = 0;
  for (int si = 0; si < nsets; si++) {
    const sa_kernel_set *ks = sets[si];
    if (!ks->wsum_upto || seen_fn((void (*)(void))ks->wsum_upto, done, &ndone))
      continue;
    t_context = ks->name;
    mat r = mat_at(R, m, dv, 0, 0), o = mat_at(O, m, dv, wide, !off);
    for (size_t i = 0; i < m; i++)
      for (size_t c = 0; c < dv; c++) {
        r.p[i * r.ld + c] = o0.p[i * o0.ld + c];
        o.p[i * o.ld + c] = use_beta ? o0.p[i * o0.ld + c] : NAN;
      }
    ks->wsum(m, n, dv, p.p, p.ld, v.p, v.ld, bp, r.p, r.ld);
    ks->wsum_upto(m, n, dv, p.p, p.ld, v.p, v.ld, bp, o.p, o.ld, ends);
    for (size_t i = 0; i < m; i++, upto_checked++)
      CHECK(!memcmp(o.p + i * o.ld, r.p + i * r.ld, dv * sizeof(float)),
            "wsum_upto m=%zu n=%zu dv=%zu beta=%d diagonal=%d: row %zu (end "
            "%zu) is not wsum's",
            m, n, dv, use_beta, diagonal, i, ends[i]);
    CHECK(gaps_intact(o, m, dv),
          "wsum_upto m=%zu n=%zu dv=%zu wrote past a row", m, n, dv);
  }
}

/* Bytes instead of floats, ending at the slot's guard page like mat_at. */
static uint8_t *bytes_at(int slot, size_t rows, size_t cols, int wide,
                         size_t *ld) {
  *ld = cols + (wide ? t_range(1, 5) : 0);
  size_t n = (rows - 1) * *ld + cols;
  uint8_t *end = (uint8_t *)(pool[slot].p + POOL_FLOATS);
  memset(end - n, 0xa5, n); /* gaps: nonzero, so "keep" if ever read */
  return end - n;
}

/*
 * score_mod, one feature set (SM_* bits) on an m x n tile. Scores hold some
 * NaN and +-Inf wherever they fall, masked or not: a masked key must come
 * out -inf even from NaN. Every value is exact except through tanh: SLEEF's
 * u35 is within 3.5 ULP and glibc's tanhf within 2.12 (measured over every
 * 37th float on glibc 2.36; its libm-test-ulps says 2), an absolute 5.7 u
 * for |tanh| <= 1, so cap * tanh differs by 5.7 u cap plus the rounding of
 * each product (u cap); the ALiBi FMA and the add then round each side
 * once more, at most u of the largest intermediate each.
 */
enum { SM_CAP = 1, SM_ALIBI = 2, SM_ADD = 4, SM_KEEP = 8, SM_LO = 16 };
static long score_mod_checked;

static void score_mod_case(size_t m, size_t n, unsigned feats) {
  int wide = t_next() & 1, off = (t_next() >> 7) & 1;
  mat x = mat_at(Q, m, n, 0, 0), r = mat_at(R, m, n, 0, 0);
  mat add = mat_at(K, m, n, t_next() & 1, 0);
  size_t ld_keep;
  uint8_t *keep = bytes_at(V, m, n, t_next() & 1, &ld_keep);
  float slope[64], dist[64];
  size_t lo[64];
  static const uint8_t yes[] = {1, 2, 255, 0x80};
  for (size_t i = 0; i < m; i++) {
    slope[i] = t_uniform(-1, 1);
    dist[i] = rintf(t_uniform(-3000, 3000));
    if (t_next() % 4 == 0) /* not a key position, but rounds the same */
      dist[i] += t_uniform(-1, 1);
    lo[i] = t_range(0, n + 2);
    for (size_t j = 0; j < n; j++) {
      unsigned u = (unsigned)(t_next() % 100);
      float *xv = &x.p[i * x.ld + j];
      *xv = u < 4   ? NAN
            : u < 6 ? INFINITY
            : u < 8 ? -INFINITY
                    : t_uniform(-40, 40);
      add.p[i * add.ld + j] =
          t_next() % 5 == 0 ? -INFINITY : t_uniform(-10, 10);
      u = (unsigned)(t_next() % 8);
      keep[i * ld_keep + j] = u < 3   ? 0
                              : u < 7 ? yes[u - 3]
                                      : (uint8_t)t_range(1, 255);
      r.p[i * r.ld + j] = *xv;
    }
  }
  sa_score_mods mods = {0};
  mods.softcap = feats & SM_CAP ? t_uniform(1, 50) : 0.0f;
  mods.slope = feats & SM_ALIBI ? slope : NULL;
  mods.dist = feats & SM_ALIBI ? dist : NULL;
  mods.add = feats & SM_ADD ? add.p : NULL;
  mods.ld_add = add.ld;
  mods.keep = feats & SM_KEEP ? keep : NULL;
  mods.ld_keep = ld_keep;
  mods.lo = feats & SM_LO ? lo : NULL;
  oracle->score_mod(m, n, r.p, r.ld, &mods);

  void (*done[MAX_SETS])(void);
  int ndone = 0;
  for (int si = 0; si < nsets; si++) {
    const sa_kernel_set *ks = sets[si];
    if (seen_fn((void (*)(void))ks->score_mod, done, &ndone))
      continue;
    t_context = ks->name;
    score_mod_checked++;
    mat s = mat_at(S, m, n, wide, off);
    for (size_t i = 0; i < m; i++)
      memcpy(s.p + i * s.ld, x.p + i * x.ld, n * sizeof(float));
    ks->score_mod(m, n, s.p, s.ld, &mods);
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        float got = s.p[i * s.ld + j], want = r.p[i * r.ld + j];
        int masked = (mods.add && add.p[i * add.ld + j] == -INFINITY) ||
                     (mods.keep && keep[i * ld_keep + j] == 0) ||
                     (mods.lo && j < lo[i]);
        if (masked || isinf(want) || isnan(want)) {
          CHECK((!masked || got == -INFINITY) &&
                    (isnan(want) ? isnan(got) : got == want),
                "score_mod f=%u m=%zu n=%zu (%zu,%zu) %g vs %g masked=%d",
                feats, m, n, i, j, got, want, masked);
          continue;
        }
        double tol = 0;
        if (mods.softcap > 0) {
          double big = mods.softcap;
          if (mods.slope)
            big += fabs((double)slope[i] * (dist[i] + (double)j));
          if (mods.add)
            big += fabs(add.p[i * add.ld + j]);
          tol = 7.7 * U_F32 * mods.softcap + 4.1 * U_F32 * big;
        }
        CHECK(fabs((double)got - want) <= tol,
              "score_mod f=%u m=%zu n=%zu cap=%g (%zu,%zu) %.9g vs %.9g", feats,
              m, n, mods.softcap, i, j, got, want);
      }
    CHECK(gaps_intact(s, m, n), "score_mod f=%u m=%zu n=%zu wrote past a row",
          feats, m, n);
  }
}

/* Each feature alone, none, all, and one random mix. */
static void score_mod_cases(size_t m, size_t n) {
  static const unsigned alone[] = {0,       SM_CAP, SM_ALIBI, SM_ADD,
                                   SM_KEEP, SM_LO,  31};
  for (size_t f = 0; f < sizeof alone / sizeof alone[0]; f++)
    score_mod_case(m, n, alone[f]);
  score_mod_case(m, n, (unsigned)t_range(0, 31));
}

int main(void) {
  t_seed(2);
  oracle = sa_kernel_set_find("scalar");
  CHECK(oracle != NULL, "the scalar oracle is always compiled");
  if (!oracle)
    return t_finish("test_kernels");
  /* the oracle too: its own tails and guards count as well */
  nsets = t_runnable_sets(sets, MAX_SETS);
  for (int i = 0; i < NPOOL; i++)
    pool[i] = g_alloc(POOL_FLOATS);
  const t_shapes sh = t_kernel_shapes(sets, nsets);
  /* score's d past the panel chunks (kc) too: the GEMM path's chunks */
  t_sizes sd = sh.d;
  for (size_t c = 0; c < sh.kc.n; c++)
    t_sizes_add(&sd, sh.kc.v[c]);
  t_sizes_print("m", &sh.m);
  t_sizes_print("n", &sh.n);
  t_sizes_print("d", &sd);
  t_sizes_print("dv", &sh.dv);
  t_sizes_print("row", &sh.row);

  long cases = 0;
  for (size_t a = 0; a < sh.m.n; a++)
    for (size_t b = 0; b < sh.n.n; b++) {
      size_t m = sh.m.v[a], n = sh.n.v[b];
      for (size_t c = 0; c < sd.n; c++, cases++)
        score_case(m, n, sd.v[c]);
      for (size_t c = 0; c < sh.dv.n; c++, cases++)
        wsum_case(m, n, sh.dv.v[c]);
    }
  for (size_t a = 0; a < sh.m.n; a++)
    for (size_t b = 0; b < sh.row.n; b++, cases += 3) {
      softmax_case(sh.m.v[a], sh.row.v[b], 0);
      softmax_case(sh.m.v[a], sh.row.v[b], 1);
      softmax_case(sh.m.v[a], sh.row.v[b], 2);
      score_mod_cases(sh.m.v[a], sh.row.v[b]);
    }
  /* score's paths by the bytes of K (n d floats): a key either side of
   * each set's cut, at every m of the dot products, with a tail of keys */
  for (int si = 0; si < nsets; si++) {
    size_t cut = sa_kernel_set_tiles(sets[si])->k_bytes;
    static const size_t ds[] = {64, 128, 200};
    for (size_t c = 0; cut && c < sizeof ds / sizeof ds[0]; c++) {
      size_t n0 = (cut + ds[c] * sizeof(float) - 1) / (ds[c] * sizeof(float));
      const size_t ns[] = {n0 - 1, n0, n0 + 1, n0 + 9};
      static const size_t ms[] = {1, 2, 3, 4, 5, 8, 9};
      for (size_t b = 0; b < 4; b++)
        for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++, cases++)
          score_case(ms[a], ns[b], ds[c]);
    }
  }
  size_t longest = sh.row.v[sh.row.n - 1];
  for (int it = 0; it < 40; it++)
    score_mod_cases(t_range(1, 20), t_range(longest + 1, 700));
  /* larger random shapes, including the realistic d = 64 and 128 */
  for (int it = 0; it < 200; it++, cases += 3) {
    size_t m = t_range(1, 64), n = t_range(1, 700), d = t_range(1, 260);
    if (it % 4 == 0)
      d = it % 8 ? 64 : 128;
    score_case(m, n, d);
    wsum_case(m, n, d);
    softmax_case(m, n, it % 3);
  }
  /* the upto kernels: row counts around every set's tiles and cutoffs
   * (the GEMM ways start past 16 rows), up to a 128-row tile and beyond */
  static const size_t um[] = {1, 4, 7, 9, 16, 17, 25, 33, 64, 100, 128, 131};
  static const size_t un[] = {1, 15, 33, 100, 129, 512};
  static const size_t ud[] = {1, 64, 67, 128, 300};
  for (size_t a = 0; a < sizeof um / sizeof um[0]; a++)
    for (size_t b = 0; b < sizeof un / sizeof un[0]; b++)
      for (size_t c = 0; c < sizeof ud / sizeof ud[0]; c++, cases += 2) {
        upto_case(um[a], un[b], ud[c], ud[(c + 1) % 5], 1);
        upto_case(um[a], un[b], ud[c], ud[(c + 2) % 5], 0);
      }
  for (int s = 0; s < nsets; s++)
    printf("%-16s tested (vector %u bits, exp %s, %.2f ULP)\n", sets[s]->name,
           sets[s]->vector_bits, sets[s]->exp_impl, sets[s]->exp_ulps);
  printf("%ld score, wsum and softmax cases; score_mod: %ld kernel runs "
         "(distinct functions); upto: %ld rows\n",
         cases, score_mod_checked, upto_checked);
  for (int i = 0; i < NPOOL; i++)
    g_free(&pool[i]);
  return t_finish("test_kernels");
}
