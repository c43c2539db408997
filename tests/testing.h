/*
 * The test harness every test program shares: counted checks, a seeded
 * generator, buffers that end at a PROT_NONE guard page, and the naive
 * double-precision attention that is the reference for the drivers.
 *
 * Every helper is static: each test is one translation unit.
 */
#ifndef SA_TESTING_H
#define SA_TESTING_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "simdattn.h"

/* float unit roundoff: |fl(x) - x| <= u |x| */
#define U_F32 (0x1p-24)

static int t_passed, t_failed;
static const char *t_context = "";

/* Records one check; prints the first few failures of a context in full. */
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (cond) {                                                                \
      t_passed++;                                                              \
    } else {                                                                   \
      t_failed++;                                                              \
      if (t_failed <= 40) {                                                    \
        printf("FAIL %s:%d [%s] ", __FILE__, __LINE__, t_context);             \
        printf(__VA_ARGS__);                                                   \
        printf("\n");                                                          \
      }                                                                        \
    }                                                                          \
  } while (0)

/* The closing line CI reads, and the exit status. */
static inline int t_finish(const char *name) {
  printf("%s: %d passed, %d failed\n", name, t_passed, t_failed);
  return t_failed ? 1 : 0;
}

/* ------------------------------------------------------------- random */

static uint64_t t_rng = 0x9e3779b97f4a7c15ull;
static inline void t_seed(uint64_t s) { t_rng = s * 0x9e3779b97f4a7c15ull + 1; }
static inline uint64_t t_next(void) { /* xorshift64* */
  t_rng ^= t_rng >> 12;
  t_rng ^= t_rng << 25;
  t_rng ^= t_rng >> 27;
  return t_rng * 0x2545f4914f6cdd1dull;
}
static inline float t_uniform(float lo, float hi) {
  return lo + (hi - lo) * (float)((t_next() >> 40) * 0x1p-24);
}
static inline size_t t_range(size_t lo, size_t hi) { /* inclusive */
  return lo + (size_t)(t_next() % (hi - lo + 1));
}
static inline void t_fill(float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++)
    x[i] = t_uniform(lo, hi);
}

/* ------------------------------------------------------- guarded buffers */

/*
 * n floats whose last one sits right before a PROT_NONE page, so any read or
 * write past the end faults. Offsetting the end by `misalign` floats from the
 * page boundary is not possible without a gap, so alignment varies with n
 * instead; callers add 1-float offsets at the front for unaligned starts.
 */
typedef struct guarded {
  float *p;
  void *base;
  size_t map_bytes;
} guarded;

/* `bytes` bytes right before a PROT_NONE page, or (front) right after one;
 * g gets the mapping for g_free, the start is returned. A start at the end
 * keeps the alignment of any element size that divides `bytes`. */
static inline void *g_map(size_t bytes, int front, guarded *g) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t data = (bytes + page - 1) / page * page, map = data + page;
  char *base = mmap(NULL, map, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    perror("mmap");
    exit(2);
  }
  if (mprotect(front ? base : base + data, page, PROT_NONE) != 0) {
    perror("mprotect");
    exit(2);
  }
  g->base = base;
  g->map_bytes = map;
  return front ? base + page : base + data - bytes;
}

static inline guarded g_alloc(size_t n) {
  guarded g = {NULL, NULL, 0};
  g.p = g_map(n * sizeof(float), 0, &g);
  return g;
}

static inline void g_free(guarded *g) {
  if (g->base)
    munmap(g->base, g->map_bytes);
  g->base = NULL;
  g->p = NULL;
}

/* ---------------------------------------------------------- kernel sets */

/*
 * Every registry set this CPU runs, in registry order, into sets[max]; the
 * others are printed as SKIPPED and counted, never dropped silently.
 * SIMDATTN_REQUIRE_SETS="avx2,avx2-polyexp" (CI sets it per emulated CPU)
 * names sets that must be among them: one not compiled in or not runnable
 * here is a failed check, so a runner that lacks AVX-512 without anyone
 * noticing cannot pass as one that has it.
 */
static inline int t_runnable_sets(const sa_kernel_set **sets, int max) {
  const char *saved = t_context;
  t_context = "kernel sets";
  int n = 0, skipped = 0;
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    if (!sa_kernel_set_supported(ks)) {
      printf("%-16s SKIPPED: this CPU lacks its features\n", ks->name);
      skipped++;
      continue;
    }
    CHECK(n < max, "%s: more runnable sets than the test's %d", ks->name, max);
    if (n < max)
      sets[n++] = ks;
  }
  printf("kernel sets: %d runnable here, %d skipped\n", n, skipped);
  const char *req = getenv("SIMDATTN_REQUIRE_SETS");
  for (const char *p = req ? req : ""; *p;) {
    size_t len = strcspn(p, ", \t");
    if (len > 0) {
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)len, p);
      const sa_kernel_set *ks = sa_kernel_set_find(name);
      CHECK(ks && sa_kernel_set_supported(ks),
            "SIMDATTN_REQUIRE_SETS: %s is %s", name,
            ks ? "not runnable on this CPU" : "not compiled in");
    }
    p += len + (p[len] != '\0');
  }
  if (req && req[0])
    printf("kernel sets required by SIMDATTN_REQUIRE_SETS: %s\n", req);
  t_context = saved;
  return n;
}

/* ------------------------------------------------------------- contexts */

/* A context with these settings (isa NULL: the default set; 0: defaults),
 * or NULL after a failed check naming why. */
static inline sa_context *t_context_new(const char *isa, int threads,
                                        sa_pin_policy pin, size_t block_q,
                                        size_t block_kv) {
  sa_context_options opt;
  sa_context_options_init(&opt);
  opt.isa = isa;
  opt.num_threads = threads;
  opt.pin = pin;
  opt.block_q = block_q;
  opt.block_kv = block_kv;
  sa_context *ctx = NULL;
  sa_status st = sa_context_create(&opt, &ctx);
  CHECK(st == SA_OK, "context of %d threads on %s: %s (%s)", threads,
        isa ? isa : "(default)", sa_status_str(st), sa_last_error());
  return st == SA_OK ? ctx : NULL;
}

/* ------------------------------------------------- reference attention */

typedef struct t_tensor {
  const float *p;
  sa_strides st; /* resolved: never all zero */
} t_tensor;

static inline sa_strides t_packed(size_t heads, size_t len, size_t dim) {
  sa_strides s = {heads * len * dim, len * dim, dim};
  return s;
}

/* A tensor layout for a test: 0 packed (passed as zero strides), 1
 * [B,L,H,D], 2 [B,H,L,D] with `pad` floats of gap after every row and
 * head. */
typedef struct t_layout {
  sa_strides st; /* as passed (may be all zero = packed) */
  sa_strides rs; /* resolved */
  size_t floats; /* buffer size */
} t_layout;

static inline t_layout t_make_layout(int kind, size_t b, size_t h, size_t l,
                                     size_t d, size_t pad) {
  t_layout x;
  switch (kind) {
  case 0:
    x.st = (sa_strides){0, 0, 0};
    x.rs = t_packed(h, l, d);
    break;
  case 1:
    x.rs = x.st = (sa_strides){l * h * d, d, h * d};
    break;
  default:
    x.rs = x.st =
        (sa_strides){h * (l * (d + pad) + pad), l * (d + pad) + pad, d + pad};
    break;
  }
  x.floats =
      (b - 1) * x.rs.batch + (h - 1) * x.rs.head + (l - 1) * x.rs.seq + d;
  return x;
}

static inline size_t t_visible(const sa_attention_desc *d, size_t i) {
  switch (d->mask) {
  case SA_MASK_CAUSAL_TOP_LEFT:
    return i + 1 < d->len_kv ? i + 1 : d->len_kv;
  case SA_MASK_CAUSAL_BOTTOM_RIGHT: {
    long long lim =
        (long long)i + 1 + (long long)d->len_kv - (long long)d->len_q;
    if (lim <= 0)
      return 0;
    return (size_t)lim < d->len_kv ? (size_t)lim : d->len_kv;
  }
  default:
    return d->len_kv;
  }
}

/*
 * Naive attention in double for one (batch, query head, position) row, plus
 * the tolerance an fp32 implementation is held to on each output column:
 *
 *   A logit s_j is off by at most delta = (d + 2) u scale sum_p |q_p k_jp|
 *   (a length-d dot product, then the scale), and the max-subtract adds
 *   u |s_j| more. A perturbation delta_j of the logits moves the output by
 *   sum_j p_j (delta_j - sum_k p_k delta_k) v_j, bounded by
 *   (e^{2 delta} - 1) sum_j p_j |v_jc - o_c|. exp (a few ULP), the row sum
 *   (n u) and the weighted sum (n u) add (n + 8) u sum_j p_j |v_jc|, counted
 *   twice since fused rescaling repeats them once per key block.
 *
 * Writes o_ref[dim_v] and tol[dim_v]; returns the number of visible keys.
 */
static inline size_t t_reference_row(const sa_attention_desc *d, const float *q,
                                     const float *k, const float *v, size_t b,
                                     size_t h, size_t i, double scale,
                                     double *p, double *o_ref, double *tol) {
  const sa_strides qs = d->q, ks = d->k, vs = d->v;
  size_t hkv = h / (d->heads_q / d->heads_kv);
  const float *qi = q + b * qs.batch + h * qs.head + i * qs.seq;
  size_t nv = t_visible(d, i);
  double mx = -INFINITY, worst = 0.0;
  for (size_t j = 0; j < nv; j++) {
    const float *kj = k + b * ks.batch + hkv * ks.head + j * ks.seq;
    double acc = 0.0, mag = 0.0;
    for (size_t c = 0; c < d->dim_qk; c++) {
      acc += (double)qi[c] * kj[c];
      mag += fabs((double)qi[c] * kj[c]);
    }
    p[j] = acc * scale;
    mx = p[j] > mx ? p[j] : mx;
    double err = ((double)d->dim_qk + 2) * U_F32 * fabs(scale) * mag +
                 2 * U_F32 * fabs(p[j]);
    worst = err > worst ? err : worst;
  }
  double sum = 0.0;
  for (size_t j = 0; j < nv; j++) {
    p[j] = exp(p[j] - mx);
    sum += p[j];
  }
  for (size_t j = 0; j < nv; j++)
    p[j] /= sum;
  for (size_t c = 0; c < d->dim_v; c++) {
    double acc = 0.0, mag = 0.0, spread = 0.0;
    for (size_t j = 0; j < nv; j++) {
      double vj = v[b * vs.batch + hkv * vs.head + j * vs.seq + c];
      acc += p[j] * vj;
      mag += p[j] * fabs(vj);
    }
    for (size_t j = 0; j < nv; j++) {
      double vj = v[b * vs.batch + hkv * vs.head + j * vs.seq + c];
      spread += p[j] * fabs(vj - acc);
    }
    o_ref[c] = acc;
    tol[c] = 1.5 * expm1(2 * worst) * spread +
             4.0 * ((double)nv + 8) * U_F32 * mag + 1e-30;
  }
  return nv;
}

#endif
