/*
 * libFuzzer harness: one input is one sa_attention call (fuzz_case.h),
 * sometimes spoilt by one defect (invalid.h), run on every kernel set this
 * CPU can run, the scalar oracle first. A finding prints what the case is
 * and which rule it broke, then aborts, so libFuzzer keeps the input.
 *
 * The rules, for every call:
 * - No crash and no sanitizer report (the library is built with
 *   AddressSanitizer and UBSan, the SIMD sets without ASan: Q, K, V and the
 *   masks end or start at a PROT_NONE page, the other arrays are allocated
 *   to exactly their extent).
 * - Every set returns the status scalar returns, and scalar the one the
 *   header promises for the planted defect (SA_OK for none).
 * - Nothing is written outside O's and LSE's elements: the canary bytes
 *   around them and in their stride gaps keep their value; no input byte
 *   changes. A call that fails writes nothing at all.
 * - A row that sees no key is exactly zero, its LSE exactly the sink or
 *   -inf (whatever the values: no key is read for it).
 * - Output is bit-identical for another thread count (one set per input).
 *
 * Numbers, by what the inputs allow (bounds_of() below):
 * - All inputs finite and tame (no product, score, or sum of weighted V
 *   rows can leave fp32's range in any summation order): every O and LSE
 *   element of every set is finite and within the analytic bound of
 *   tests/reference.h around the double-precision result, plus what that
 *   bound leaves out and the contract allows (see within()). Each set's
 *   distance to scalar is then at most twice the bound: scalar is held to
 *   the same truth, not trusted.
 * - Some input NaN or infinite, its finite values tame: each element is
 *   finite in every set exactly when it is in the oracle (which elements
 *   are NaN follows from the data and the tiling, which every set shares;
 *   NaN against Inf may differ: 0 * Inf and tiny * Inf are both right),
 *   and, when every V value is finite, scalar's are finite exactly where
 *   the double reference's are.
 * - Finite values too large to be tame: fp32 overflow is legitimate and
 *   order dependent, so only the rules above that hold for every call.
 *
 * The oracle of a set is scalar, except for the bf16 dot-product set
 * (score_bf16) when Q and K are both bf16: the header lets it read bf16
 * denormals as zero, so its oracle is scalar, and its reference the double
 * one, on inputs with those denormals flushed.
 */
#include <stdarg.h>

#include "fuzz/invalid.h"

#define FZ_MAX_SETS 16
/* Contexts kept at once: every one the inputs can ask for on x86-64's six
 * sets (6 x 3 thread counts x FZ_BLOCKS). */
#define FZ_MAX_CONTEXTS 200

static const sa_kernel_set *sets[FZ_MAX_SETS]; /* scalar first */
static int nsets;
static sa_context *ctxs[FZ_MAX_SETS][3][FZ_BLOCKS];
static int nctxs;

/* The running case and what its call is ("valid" or the defect), for the
 * report. */
static const fz_case *cur;
static const char *cur_what = "valid";

static void finding(const char *set, const char *fmt, ...) {
  char what[2048];
  fz_describe(cur, what, sizeof what);
  fprintf(stderr, "\n=== simdattn fuzz finding on set %s (%s call) ===\n", set,
          cur_what);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\ncase: %s\n", what);
  abort();
}

/* SA_FUZZ_VERBOSE=1 prints at exit how many cases each kind of check saw;
 * 2 also prints each case before it runs: what a sanitizer report (which
 * ends the process at once) came from. */
static int verbose;
static size_t n_cases, n_bad_calls, n_within, n_classes, n_untamed, n_flushed,
    n_contexts;

static void stats(void) {
  fprintf(stderr,
          "attention_fuzz: %zu cases: %zu bad calls, %zu held to the bound, "
          "%zu to the oracle's non-finite elements, %zu too large to "
          "judge; %zu flushed bf16 oracles; %zu contexts made\n",
          n_cases, n_bad_calls, n_within, n_classes, n_untamed, n_flushed,
          n_contexts);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *v = getenv("SA_FUZZ_VERBOSE");
  verbose = v ? atoi(v) : 0;
  if (verbose)
    atexit(stats);
  for (size_t i = 0; i < sa_kernel_set_count() && nsets < FZ_MAX_SETS; i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    if (!sa_kernel_set_supported(ks))
      continue;
    if (!strcmp(ks->name, "scalar")) {
      memmove(sets + 1, sets, (size_t)nsets * sizeof *sets);
      sets[0] = ks;
    } else {
      sets[nsets] = ks;
    }
    nsets++;
  }
  if (!nsets || strcmp(sets[0]->name, "scalar")) {
    fprintf(stderr, "attention_fuzz: no scalar set\n");
    abort();
  }
  fprintf(stderr, "attention_fuzz: %d kernel sets:", nsets);
  for (int s = 0; s < nsets; s++)
    fprintf(stderr, " %s", sets[s]->name);
  fprintf(stderr, "\n");
  return 0;
}

/* Contexts are costly (threads, scratch): one per (set, threads, blocks),
 * kept across inputs; all dropped when too many pile up. */
static sa_context *context(int set, int threads, unsigned blocks) {
  sa_context **slot = &ctxs[set][threads - 1][blocks];
  if (*slot)
    return *slot;
  if (nctxs >= FZ_MAX_CONTEXTS) {
    for (int s = 0; s < nsets; s++)
      for (int t = 0; t < 3; t++)
        for (size_t b = 0; b < FZ_BLOCKS; b++) {
          sa_context_destroy(ctxs[s][t][b]);
          ctxs[s][t][b] = NULL;
        }
    nctxs = 0;
  }
  sa_context_options opt;
  sa_context_options_init(&opt);
  opt.isa = sets[set]->name;
  opt.num_threads = threads;
  opt.pin = SA_PIN_NONE;
  opt.block_q = fz_block_q[blocks];
  opt.block_kv = fz_block_kv[blocks];
  sa_status st = sa_context_create(&opt, slot);
  if (st != SA_OK)
    finding(sets[set]->name, "sa_context_create: %s (%s)", sa_status_str(st),
            sa_last_error());
  nctxs++;
  n_contexts++;
  return *slot;
}

/* ------------------------------------------------------------ outputs */

/* One run's outputs: O widened, per row slot (b, h, i) as in refs, and
 * LSE; the raw buffers for bit comparisons. */
typedef struct result {
  sa_status st;
  float *o, *lse;
  unsigned char *oraw, *lraw;
} result;

static void result_alloc(result *r, const fz_case *c, size_t rows) {
  r->o = xmalloc((rows * c->d.dim_v + 1) * sizeof(float));
  r->lse = xmalloc((rows + 1) * sizeof(float));
  r->oraw = xmalloc(c->obytes);
  r->lraw = xmalloc(c->lse_n * sizeof(float) + 2 * FZ_GUARD);
}

static void result_free(result *r) {
  free(r->o), free(r->lse), free(r->oraw), free(r->lraw);
}

static size_t rows_of(const fz_case *c) {
  return c->d.batch * c->d.heads_q * c->d.len_q;
}

/* Calls f(c, b, h, i, row slot) for every query row of every sequence. */
#define FOR_ROWS(c, b, h, i, row)                                              \
  for (size_t b = 0; b < (c)->d.batch; b++)                                    \
    for (size_t h = 0; h < (c)->d.heads_q; h++)                                \
      for (size_t i = 0, row = (b * (c)->d.heads_q + h) * (c)->d.len_q;        \
           i < seq_len_q(&(c)->d, b); i++, row++)

/* Which bytes of O's and LSE's buffers (canaries included) are elements. */
static unsigned char *element_map(const fz_case *c, int lse) {
  size_t n = lse ? c->lse_n * sizeof(float) + 2 * FZ_GUARD : c->obytes;
  size_t unit = lse ? sizeof(float) : sa_dtype_unit(c->d.o_type);
  size_t width = lse ? 1 : c->d.dim_v;
  unsigned char *map = calloc(n + 1, 1);
  FOR_ROWS(c, b, h, i, row) {
    size_t at = q_at(&c->d, lse ? &c->lse_rs : &c->o.rs, b, h, i);
    memset(map + FZ_GUARD + at * unit, 1, width * unit);
  }
  return map;
}

/* O's buffer before a call: canaries, elements NaN (all ones), or Q's
 * units when O is Q. */
static void o_image(const fz_case *c, const unsigned char *omap,
                    const unsigned char *qsrc, unsigned char *img) {
  memset(img, FZ_CANARY, c->obytes);
  if (c->in_place) {
    memcpy(img + FZ_GUARD, qsrc, c->q.bytes);
    return;
  }
  for (size_t x = 0; x < c->obytes; x++)
    if (omap[x])
      img[x] = 0xff;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* Every byte of every input, so that a write into one shows. */
static uint64_t inputs_hash(const fz_case *c) {
  const sa_attention_desc *d = &c->d;
  uint64_t h = 1469598103934665603ull;
  h = hash_bytes(h, c->q.n, c->q.bytes);
  h = hash_bytes(h, c->k.n, c->k.bytes);
  h = hash_bytes(h, c->v.n, c->v.bytes);
  if (c->add)
    h = hash_bytes(h, c->add, c->add_n * sizeof(float));
  if (c->keep)
    h = hash_bytes(h, c->keep, c->keep_n);
  if (c->slopes)
    h = hash_bytes(h, c->slopes, d->heads_q * sizeof(float));
  if (c->sinks)
    h = hash_bytes(h, c->sinks, d->heads_q * sizeof(float));
  if (c->valid)
    h = hash_bytes(h, c->valid, d->batch * sizeof(int64_t));
  if (c->cuq)
    h = hash_bytes(h, c->cuq, (d->batch + 1) * sizeof(int32_t));
  if (c->cukv)
    h = hash_bytes(h, c->cukv, (d->batch + 1) * sizeof(int32_t));
  if (c->table)
    h = hash_bytes(h, c->table, c->table_n * sizeof(int32_t));
  return h;
}

/* The pieces one run needs besides the set. */
typedef struct runner {
  fz_case *c;
  const unsigned char *omap, *lmap; /* element_map of O and of LSE */
  uint64_t hash;                    /* of the inputs */
  unsigned char *obuf;              /* O's buffer, canaries included */
  unsigned char *limg;              /* LSE's buffer before a call */
} runner;

/* Compares a buffer with its image before the call: a failing call keeps
 * every byte, a succeeding one every byte that is not an element. */
static void untouched(const char *set, const char *what, sa_status st,
                      const unsigned char *buf, const unsigned char *img,
                      const unsigned char *map, size_t n) {
  for (size_t x = 0; x < n; x++)
    if (buf[x] != img[x] && (st != SA_OK || !map[x]))
      finding(set, "%s's byte %td (from its first element) written%s", what,
              (ptrdiff_t)x - FZ_GUARD,
              st != SA_OK ? " by a failing call" : ": not an element");
}

/* One call of the case (spoilt as its mutation byte says) on set `set`
 * with `threads` workers, Q and K from qsrc and ksrc (the case's, or
 * copies with bf16 denormals flushed): checks what every call must do,
 * and keeps the outputs in *r. */
static void run(const runner *R, int set, int threads,
                const unsigned char *qsrc, const void *ksrc, result *r) {
  fz_case *c = R->c;
  const char *name = sets[set]->name;
  size_t lbytes = c->lse_n * sizeof(float) + 2 * FZ_GUARD;
  float *lse = fz_lse(c);
  o_image(c, R->omap, qsrc, c->oimg);
  memcpy(R->obuf, c->oimg, c->obytes);
  if (c->lse_mem)
    memcpy(c->lse_mem, R->limg, lbytes);
  /* O is the canaried buffer; Q is too when in place */
  void *o = R->obuf + FZ_GUARD;
  fz_call call;
  fz_call_make(&call, c, c->in_place ? o : (void *)qsrc, o);
  if (call.k == c->k.n)
    call.k = ksrc;
  cur_what = call.what;
  r->st = sa_attention(context(set, threads, c->blocks), call.desc, call.q,
                       call.k, call.v, call.o);
  if (set == 0 && r->st != call.want)
    finding(name, "status %s (%s), the header says %s", sa_status_str(r->st),
            sa_last_error(), sa_status_str(call.want));
  if (R->hash != inputs_hash(c))
    finding(name, "an input changed (status %s)", sa_status_str(r->st));
  untouched(name, "O", r->st, R->obuf, c->oimg, R->omap, c->obytes);
  if (c->lse_mem)
    untouched(name, "LSE", r->st, c->lse_mem, R->limg, R->lmap, lbytes);
  memcpy(r->oraw, R->obuf, c->obytes);
  if (c->lse_mem)
    memcpy(r->lraw, c->lse_mem, lbytes);
  FOR_ROWS(c, b, h, i, row) {
    size_t at = q_at(&c->d, &c->o.rs, b, h, i);
    for (size_t e = 0; e < c->d.dim_v; e++)
      r->o[row * c->d.dim_v + e] = sa_load_elem(c->d.o_type, o, at + e);
    r->lse[row] = c->lse_mem ? lse[q_at(&c->d, &c->lse_rs, b, h, i)] : 0.0f;
  }
  fz_call_free(&call);
}

/* ------------------------------------------------------------ numbers */

/* What the inputs allow the harness to hold the numbers to. */
typedef struct bounds {
  int finite;   /* every live input value is finite (additive -inf aside) */
  int v_finite; /* every live V value is */
  int tame;     /* the finite ones keep every fp32 intermediate in range */
  double mv;    /* the largest finite |V| */
} bounds;

/*
 * Tame: whatever the summation order, no product, score, capped score plus
 * ALiBi plus mask, max-subtracted score or weighted sum of V rows leaves
 * 2^100 (far inside fp32's 2^128), so nothing overflows and every output
 * of finite inputs is finite. The scale is also at most 2^40: the
 * reference's bound is relative, and a product that underflows is off by
 * up to 2^-150 absolutely, which a larger scale would make visible.
 */
static bounds bounds_of(const fz_case *c) {
  const sa_attention_desc *d = &c->d;
  bounds bd;
  int nf = 0, vnf = 0;
  double mq = fz_max_abs(&c->q, &nf), mk = fz_max_abs(&c->k, &nf);
  double ma = 0.0, msl = 0.0, msk = 0.0;
  bd.mv = fz_max_abs(&c->v, &vnf);
  for (size_t x = 0; c->add && x < c->add_n; x++) {
    double a = c->add_live[x] ? c->add[x] : 0.0;
    if (a != a || a == INFINITY)
      nf = 1;
    else if (a != -INFINITY && fabs(a) > ma)
      ma = fabs(a);
  }
  for (size_t h = 0; h < d->heads_q; h++) {
    if (c->slopes && fabs(c->slopes[h]) > msl)
      msl = fabs(c->slopes[h]);
    if (c->sinks && isfinite(c->sinks[h]) && fabs(c->sinks[h]) > msk)
      msk = fabs(c->sinks[h]);
  }
  double sc =
      fabs(d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)d->dim_qk));
  double big = 0x1p100, dot = mq * mk * (double)d->dim_qk;
  double capped =
      d->softcap > 0.0f && d->softcap < sc * dot ? d->softcap : sc * dot;
  double logit = capped + msl * (double)d->len_kv + ma;
  bd.tame = dot <= big && sc * dot <= big && sc * mq <= big && sc <= 0x1p40 &&
            logit <= big && msk <= big &&
            ((double)d->len_kv + 2) * bd.mv <= big;
  bd.finite = !nf && !vnf;
  bd.v_finite = !vnf;
  return bd;
}

static double half_ulp(sa_dtype t) {
  return t == SA_F16 ? 0x1p-11 : t == SA_BF16 ? 0x1p-8 : 0.0;
}

/*
 * Finite inputs, tame: every element within the reference's bound, which
 * leaves out (and so is widened by) what the contract allows besides:
 * - exp results below FLT_MIN carry an absolute error (denormal, or 0 in
 *   a polynomial exp), at most 2^-149 per weight, times |V|;
 * - a narrow O's rounding: half an ulp, or half its denormal spacing, and
 *   f16's overflow to Inf when the value reaches 65504;
 * - a bound of expm1(huge) times a zero spread is NaN: no bound at all.
 */
static void within(const fz_case *c, int s, const refs *ref, const result *r,
                   const result *scalar, double mv) {
  const sa_attention_desc *d = &c->d;
  const char *name = sets[s]->name;
  double hu = half_ulp(d->o_type);
  double tiny = d->o_type == SA_F16    ? 0x1p-25
                : d->o_type == SA_BF16 ? 0x1p-134
                                       : 0.0;
  FOR_ROWS(c, b, h, i, row) {
    size_t nv = ref->nvis[row];
    if (!nv)
      continue;
    for (size_t e = 0; e < d->dim_v; e++) {
      size_t at = row * d->dim_v + e;
      double want = ref->o[at], tol = ref->tol[at], got = r->o[at];
      if (!(tol >= 0.0))
        tol = INFINITY;
      tol += 8.0 * ((double)nv + 2) * 0x1p-149 * mv;
      if (d->o_type != SA_F32)
        tol += hu * (fabs(want) + tol) + tiny;
      if (!isfinite(got) && d->o_type == SA_F16 && fabs(want) + tol >= 65504.0)
        continue;
      if (!(fabs(got - want) <= tol))
        finding(name,
                "O(b%zu,h%zu,i%zu)[%zu] = %.9g, want %.9g within %.3g (%zu "
                "keys); scalar gave %.9g",
                b, h, i, e, got, want, tol, nv, (double)scalar->o[at]);
    }
    if (!d->lse)
      continue;
    double want = ref->lse[row], tol = ref->lse_tol[row], got = r->lse[row];
    if (!(tol >= 0.0))
      tol = INFINITY;
    if (!(fabs(got - want) <= tol))
      finding(name,
              "LSE(b%zu,h%zu,i%zu) = %.9g, want %.9g within %.3g (%zu keys)", b,
              h, i, got, want, tol, nv);
  }
}

/* finite, not, or (f16 O near its overflow) either. */
static int fclass(const fz_case *c, double x) {
  if (c->d.o_type == SA_F16 && (x != x ? 0 : fabs(x) >= 16384.0))
    return 2;
  return isfinite(x);
}

/* Non-finite inputs: an element is finite where the oracle's is (another
 * set's, or the double reference's: see the_reference). */
static void classes(const fz_case *c, int s, const refs *ref, const result *r,
                    const result *oracle, const char *oname) {
  const sa_attention_desc *d = &c->d;
  FOR_ROWS(c, b, h, i, row) {
    if (!ref->nvis[row])
      continue;
    for (size_t e = 0; e < d->dim_v; e++) {
      size_t at = row * d->dim_v + e;
      int x = fclass(c, r->o[at]), y = fclass(c, oracle->o[at]);
      if (x != 2 && y != 2 && x != y)
        finding(sets[s]->name, "O(b%zu,h%zu,i%zu)[%zu] = %g, %s gave %g", b, h,
                i, e, (double)r->o[at], oname, (double)oracle->o[at]);
    }
    if (d->lse && !isfinite(r->lse[row]) != !isfinite(oracle->lse[row]))
      finding(sets[s]->name, "LSE(b%zu,h%zu,i%zu) = %g, %s gave %g", b, h, i,
              (double)r->lse[row], oname, (double)oracle->lse[row]);
  }
}

/* The double reference as a result, for classes(): scalar's non-finite
 * elements must be the reference's when every V is finite (a NaN or Inf V
 * row in a tile poisons rows that cannot see it, which the reference does
 * not model). Tame values fit a float. */
static void the_reference(const fz_case *c, const refs *ref, result *r) {
  result_alloc(r, c, rows_of(c));
  FOR_ROWS(c, b, h, i, row) {
    for (size_t e = 0; e < c->d.dim_v; e++)
      r->o[row * c->d.dim_v + e] = (float)ref->o[row * c->d.dim_v + e];
    r->lse[row] = (float)ref->lse[row];
  }
}

/* Rows that see no key: exact zeros, LSE exactly the sink or -inf. */
static void empty_rows(const fz_case *c, int s, const refs *ref,
                       const result *r) {
  const sa_attention_desc *d = &c->d;
  FOR_ROWS(c, b, h, i, row) {
    if (ref->nvis[row])
      continue;
    for (size_t e = 0; e < d->dim_v; e++)
      if (r->o[row * d->dim_v + e] != 0.0f)
        finding(sets[s]->name,
                "O(b%zu,h%zu,i%zu)[%zu] = %g in a row that "
                "sees no key",
                b, h, i, e, (double)r->o[row * d->dim_v + e]);
    if (d->lse && r->lse[row] != (float)ref->lse[row])
      finding(sets[s]->name,
              "LSE(b%zu,h%zu,i%zu) = %g in a row that sees "
              "no key, want %g",
              b, h, i, (double)r->lse[row], ref->lse[row]);
  }
}

/* ---------------------------------------------------- bf16 dot products */

static int bf16_dot(const fz_case *c, int s) {
  return sets[s]->score_bf16 && c->d.q_type == SA_BF16 &&
         c->d.k_type == SA_BF16;
}

/* A bf16 tensor's buffer with its denormals as signed zeros, and its
 * widened values; NULL when it has none. */
static unsigned char *flushed(const fz_tensor *x, float **w) {
  unsigned char *f = NULL;
  for (size_t u = 0; u < x->units; u++) {
    uint16_t v;
    memcpy(&v, x->n + 2 * u, 2);
    if ((v & 0x7f80u) || !(v & 0x7fu))
      continue;
    if (!f) {
      f = xmalloc(x->bytes);
      memcpy(f, x->n, x->bytes);
      *w = xmalloc((x->units + 1) * sizeof(float));
      memcpy(*w, x->w, x->units * sizeof(float));
    }
    v &= 0x8000u;
    memcpy(f + 2 * u, &v, 2);
    (*w)[u] = sa_bf16_to_f32(v);
  }
  return f;
}

/* ----------------------------------------------------------- the input */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_case c;
  fz_case_make(&c, data, size);
  cur = &c;
  if (verbose > 1) {
    char what[2048];
    fz_describe(&c, what, sizeof what);
    fprintf(stderr, "case: %s\n", what);
  }
  size_t rows = rows_of(&c), lbytes = c.lse_n * sizeof(float) + 2 * FZ_GUARD;
  runner R = {&c,
              element_map(&c, 0),
              element_map(&c, 1),
              inputs_hash(&c),
              xmalloc(c.obytes),
              xmalloc(lbytes)};
  memset(R.limg, FZ_CANARY, lbytes);
  FOR_ROWS(&c, b, h, i, row) {
    float nan = NAN;
    memcpy(R.limg + FZ_GUARD + q_at(&c.d, &c.lse_rs, b, h, i) * sizeof(float),
           &nan, sizeof nan);
  }
  result res[FZ_MAX_SETS], again, fres;
  for (int s = 0; s < nsets; s++) {
    result_alloc(&res[s], &c, rows);
    run(&R, s, c.threads, c.q.n, c.k.n, &res[s]);
    if (res[s].st != res[0].st)
      finding(sets[s]->name, "status %s (%s), scalar's %s",
              sa_status_str(res[s].st), sa_last_error(),
              sa_status_str(res[0].st));
  }
  /* another thread count, the same bits */
  int s2 = (int)(t_next() % (uint64_t)nsets);
  result_alloc(&again, &c, rows);
  run(&R, s2, c.threads2, c.q.n, c.k.n, &again);
  if (again.st != res[s2].st || memcmp(again.oraw, res[s2].oraw, c.obytes) ||
      (c.lse_mem && memcmp(again.lraw, res[s2].lraw, lbytes)))
    finding(sets[s2]->name, "%d and %d threads differ", c.threads, c.threads2);
  result_free(&again);

  fz_call probe;
  fz_call_make(&probe, &c, c.q.n, c.o.n);
  int valid = probe.want == SA_OK;
  fz_call_free(&probe);
  n_cases++;
  n_bad_calls += !valid;
  if (res[0].st == SA_OK && valid) {
    refs ref, fref;
    refs_compute(&c.w, &ref);
    bounds bd = bounds_of(&c);
    /* the bf16 dot-product set's own oracle */
    float *fqw = NULL, *fkw = NULL;
    unsigned char *fq = NULL, *fk = NULL;
    int has_bf16 = 0;
    for (int s = 1; s < nsets; s++)
      has_bf16 |= bf16_dot(&c, s);
    if (has_bf16) {
      fq = flushed(&c.q, &fqw);
      fk = flushed(&c.k, &fkw);
    }
    n_within += bd.tame && bd.finite;
    n_classes += bd.tame && !bd.finite;
    n_untamed += !bd.tame;
    if (fq || fk) {
      n_flushed++;
      view fw = c.w;
      fw.q = fq ? fqw : c.w.q;
      fw.k = fk ? fkw : c.w.k;
      refs_compute(&fw, &fref);
      result_alloc(&fres, &c, rows);
      run(&R, 0, c.threads, fq ? fq : c.q.n, fk ? fk : c.k.n, &fres);
    }
    for (int s = 0; s < nsets; s++) {
      int own = bf16_dot(&c, s) && (fq || fk);
      const refs *rs = own ? &fref : &ref;
      empty_rows(&c, s, rs, &res[s]);
      if (bd.tame && bd.finite)
        within(&c, s, rs, &res[s], &res[0], bd.mv);
      else if (bd.tame && s > 0)
        classes(&c, s, rs, &res[s], own ? &fres : &res[0],
                own ? "scalar on flushed inputs" : "scalar");
      else if (bd.tame && bd.v_finite) {
        result dr;
        the_reference(&c, rs, &dr);
        classes(&c, 0, rs, &res[0], &dr, "the double reference");
        result_free(&dr);
      }
    }
    if (fq || fk) {
      refs_free(&fref);
      result_free(&fres);
    }
    free(fq), free(fk), free(fqw), free(fkw);
    refs_free(&ref);
  }
  for (int s = 0; s < nsets; s++)
    result_free(&res[s]);
  free((void *)R.omap), free((void *)R.lmap), free(R.obuf), free(R.limg);
  fz_case_free(&c);
  cur = NULL;
  return 0;
}
