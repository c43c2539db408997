/*
 * simdattn_accuracy: how far each kernel set's attention is from the exact
 * answer, beside how far plain fp32 attention is on the same inputs.
 *
 *   simdattn_accuracy [--quick] [--out DIR] | --list
 *
 * For every kernel set this CPU runs (the others are named as skipped) and
 * both algorithms, sa_attention on a fixed, seeded sweep of f32 cases:
 * ordinary inputs, logits near +1e3 and -1e3, long rows, d = 1, d not a
 * multiple of any vector width, a causal mask. The reference is
 * tests/testing.h's t_reference_row, the double-precision attention the
 * test suite holds the drivers to; the "plain fp32" row is plain_fp32.c,
 * measured the same way. One worker thread per call (results are the same
 * for any count). --quick shortens the long rows from 32768 to 8192 keys.
 *
 * Errors of one (case, set, algorithm), over every element of O:
 *   abs  max |O - O_ref|
 *   rel  max over query rows of  max_c |O - O_ref| / max_c |O_ref|
 *        (row-normwise, so one element near 0 does not inflate it; with
 *        d_v = 1 a row is one element and a row whose output cancels to
 *        near 0 sets it, for every implementation alike)
 *
 * Prints the tables and writes DIR (default results/<cpu>/, the directory
 * make compare writes):
 *   accuracy.md   the tables as printed
 *   accuracy.csv  one line per (case, set, algorithm):
 *     cpu, case, heads_q, heads_kv, len_q, len_kv, dim_qk, dim_v, mask,
 *     logit (0, or the offset the logits sit near), set, algorithm
 *     (fused | three_pass), max_abs_err, max_rel_err, the plain fp32
 *     loop's plain_max_abs_err and plain_max_rel_err on the same case, and
 *     max_abs_ref (the largest |O_ref|, for scale)
 * Exit status 1 if a call fails or an error is not finite. --list prints
 * the sets it would measure, one a line (for scripts/check_results.sh).
 */
#define _DEFAULT_SOURCE /* testing.h maps anonymous memory */
#include <errno.h>
#include <sys/stat.h>

#include "bench/cpu_slug.h"
#include "bench/plain_fp32.h"
#include "tests/testing.h"

/* A case of the sweep. Q = q_mean + U(-1, 1), K = k_mean + U(-1, 1),
 * V = U(-1, 1), scale 1/sqrt(dim_qk). With logit L != 0, q_mean = 1 and
 * k_mean = L / sqrt(dim_qk): every product q_p k_p is about L / sqrt(d), so
 * each score is about L, reached through partial sums of that size (the
 * summation order shows), and exp(L) overflows (or exp(-L) underflows)
 * unless the row max is subtracted. Within a row the scores spread by
 * about 1, so the softmax is not one-hot. */
typedef struct acc_case {
  const char *name; /* column label */
  size_t hq, hkv, lq, lkv, dqk, dv;
  sa_mask mask;
  double logit;
} acc_case;

#define LONG_KEYS 32768
#define LONG_KEYS_QUICK 8192

static acc_case cases[] = {
    {"ordinary", 4, 2, 64, 512, 64, 64, SA_MASK_NONE, 0},
    {"+1e3", 4, 2, 64, 512, 64, 64, SA_MASK_NONE, 1e3},
    {"-1e3", 4, 2, 64, 512, 64, 64, SA_MASK_NONE, -1e3},
    {"long", 2, 1, 4, LONG_KEYS, 64, 64, SA_MASK_NONE, 0},
    {"long +1e3", 2, 1, 4, LONG_KEYS, 64, 64, SA_MASK_NONE, 1e3},
    {"d=1", 2, 2, 64, 1000, 1, 1, SA_MASK_NONE, 0},
    {"d=67/129", 2, 2, 37, 515, 67, 129, SA_MASK_NONE, 0},
    {"causal", 2, 2, 512, 512, 64, 64, SA_MASK_CAUSAL_TOP_LEFT, 0},
};
#define N_CASES (sizeof cases / sizeof cases[0])
#define MAX_SETS 32

static const char *const algo_name[2] = {"fused", "three_pass"};
static const sa_algorithm algo_value[2] = {SA_ALGO_FUSED, SA_ALGO_THREE_PASS};

typedef struct err {
  double abs, rel;
} err;

/* One case's inputs, its reference and the largest |O_ref|. */
typedef struct inputs {
  sa_attention_desc d;
  float *q, *k, *v, *o;
  double *ref;
  size_t o_floats;
  double max_ref;
} inputs;

static void *must_alloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "simdattn_accuracy: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  return p;
}

static void fill(float *x, size_t n, double mean) {
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(mean + t_uniform(-1.0f, 1.0f));
}

static void make_inputs(const acc_case *c, uint64_t seed, inputs *in) {
  sa_attention_desc *d = &in->d;
  sa_attention_desc_init(d);
  d->batch = 1, d->heads_q = c->hq, d->heads_kv = c->hkv;
  d->len_q = c->lq, d->len_kv = c->lkv, d->dim_qk = c->dqk, d->dim_v = c->dv;
  d->mask = c->mask;
  /* The scale as the library would round it, given to the reference too:
   * the error measured is the kernels', not 1/sqrt(d)'s rounding. */
  d->scale = (float)(1.0 / sqrt((double)c->dqk));
  /* t_reference_row and plain_fp32.c read resolved strides. */
  d->q = t_packed(c->hq, c->lq, c->dqk);
  d->k = t_packed(c->hkv, c->lkv, c->dqk);
  d->v = t_packed(c->hkv, c->lkv, c->dv);
  d->o = t_packed(c->hq, c->lq, c->dv);
  size_t nq = c->hq * c->lq * c->dqk, nk = c->hkv * c->lkv * c->dqk,
         nv = c->hkv * c->lkv * c->dv;
  in->o_floats = c->hq * c->lq * c->dv;
  in->q = must_alloc(nq * sizeof(float));
  in->k = must_alloc(nk * sizeof(float));
  in->v = must_alloc(nv * sizeof(float));
  in->o = must_alloc(in->o_floats * sizeof(float));
  in->ref = must_alloc(in->o_floats * sizeof(double));
  t_seed(seed);
  double sq = sqrt((double)c->dqk);
  fill(in->q, nq, c->logit != 0 ? 1.0 : 0.0);
  fill(in->k, nk, c->logit / sq);
  fill(in->v, nv, 0.0);

  double *p = must_alloc(c->lkv * sizeof(double));
  double *tol = must_alloc(c->dv * sizeof(double));
  in->max_ref = 0.0;
  for (size_t h = 0; h < c->hq; h++)
    for (size_t i = 0; i < c->lq; i++) {
      double *row = in->ref + (h * c->lq + i) * c->dv;
      t_reference_row(d, in->q, in->k, in->v, 0, h, i, d->scale, p, row, tol);
      for (size_t x = 0; x < c->dv; x++)
        in->max_ref = fmax(in->max_ref, fabs(row[x]));
    }
  free(p);
  free(tol);
}

static void free_inputs(inputs *in) {
  free(in->q), free(in->k), free(in->v), free(in->o), free(in->ref);
}

/* abs and row-normwise rel of in->o against the reference; a NaN anywhere
 * makes both NaN. */
static err measure(const inputs *in) {
  const size_t dv = in->d.dim_v, rows = in->o_floats / dv;
  err e = {0.0, 0.0};
  for (size_t r = 0; r < rows; r++) {
    double worst = 0.0, big = 0.0;
    for (size_t c = 0; c < dv; c++) {
      double x = fabs((double)in->o[r * dv + c] - in->ref[r * dv + c]);
      worst = x > worst || isnan(x) ? x : worst;
      big = fmax(big, fabs(in->ref[r * dv + c]));
    }
    e.abs = worst > e.abs || isnan(worst) ? worst : e.abs;
    double rel = big > 0.0 ? worst / big : worst;
    e.rel = rel > e.rel || isnan(rel) ? rel : e.rel;
  }
  return e;
}

/* sa_attention on the set named, one thread, into in->o. */
static int run_set(const char *set, sa_algorithm algo, inputs *in) {
  sa_context_options opt;
  sa_context_options_init(&opt);
  opt.isa = set;
  opt.num_threads = 1;
  opt.pin = SA_PIN_NONE;
  sa_context *ctx = NULL;
  sa_status st = sa_context_create(&opt, &ctx);
  if (st == SA_OK) {
    in->d.algorithm = algo;
    st = sa_attention(ctx, &in->d, in->q, in->k, in->v, in->o);
    sa_context_destroy(ctx);
  }
  if (st != SA_OK)
    fprintf(stderr, "simdattn_accuracy: %s: %s (%s)\n", set, sa_status_str(st),
            sa_last_error());
  return st == SA_OK ? 0 : 1;
}

/* mkdir -p */
static int make_dirs(const char *path) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char was = *p;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
      return -1;
    if (was == '\0')
      return 0;
    *p = was;
  }
}

/* ---------------------------------------------------------------- output */

typedef struct table {
  const sa_kernel_set *sets[MAX_SETS];
  size_t nsets;
  err plain[N_CASES];
  err set[MAX_SETS][2][N_CASES];
  double max_ref[N_CASES];
  char skipped[512];
} table;

static void print_metric(FILE *f, const table *t, int rel) {
  fprintf(f, "| set | algorithm |");
  for (size_t c = 0; c < N_CASES; c++)
    fprintf(f, " %s |", cases[c].name);
  fprintf(f, "\n|---|---|");
  for (size_t c = 0; c < N_CASES; c++)
    fprintf(f, "---:|");
  fprintf(f, "\n| plain fp32 loop | |");
  for (size_t c = 0; c < N_CASES; c++)
    fprintf(f, " %.1e |", rel ? t->plain[c].rel : t->plain[c].abs);
  fprintf(f, "\n");
  for (size_t s = 0; s < t->nsets; s++)
    for (int a = 0; a < 2; a++) {
      fprintf(f, "| %s | %s |", t->sets[s]->name, algo_name[a]);
      for (size_t c = 0; c < N_CASES; c++)
        fprintf(f, " %.1e |", rel ? t->set[s][a][c].rel : t->set[s][a][c].abs);
      fprintf(f, "\n");
    }
}

static void print_md(FILE *f, const table *t, const sa_bench_cpu *cpu,
                     int quick) {
  fprintf(f, "### Accuracy: %s (`%s`)\n\n", cpu->model, cpu->slug);
  fprintf(f,
          "Error of O against a double-precision reference (f32 tensors, "
          "one thread),\nbeside plain fp32 attention on the same inputs. "
          "Regenerate: `make accuracy%s`.\n\n",
          quick ? " QUICK=1" : "");
  fprintf(f, "Max relative error: per query row max|O - ref| / max|ref|, "
             "the worst row.\n\n");
  print_metric(f, t, 1);
  fprintf(f, "\nMax absolute error: max|O - ref| over every element.\n\n");
  print_metric(f, t, 0);
  fprintf(f, "\nCases (Q, K, V uniform in [-1, 1) plus a mean; scale "
             "1/sqrt(d); heads q/kv, rows x keys, d_qk/d_v):\n\n");
  for (size_t c = 0; c < N_CASES; c++) {
    const acc_case *k = &cases[c];
    fprintf(f, "- %s: %zu/%zu heads, %zu x %zu, d %zu/%zu%s", k->name, k->hq,
            k->hkv, k->lq, k->lkv, k->dqk, k->dv,
            k->mask == SA_MASK_CAUSAL_TOP_LEFT ? ", causal" : "");
    if (k->logit != 0)
      fprintf(f, ", logits near %+g (Q mean 1, K mean %+.4g)", k->logit,
              k->logit / sqrt((double)k->dqk));
    fprintf(f, "; max|ref| %.3g\n", t->max_ref[c]);
  }
  fprintf(f, "\nSets not run on this CPU: %s\n",
          t->skipped[0] ? t->skipped : "none");
}

static void write_csv(FILE *f, const table *t, const sa_bench_cpu *cpu) {
  fprintf(f, "cpu,case,heads_q,heads_kv,len_q,len_kv,dim_qk,dim_v,mask,logit,"
             "set,algorithm,max_abs_err,max_rel_err,plain_max_abs_err,"
             "plain_max_rel_err,max_abs_ref\n");
  for (size_t c = 0; c < N_CASES; c++) {
    const acc_case *k = &cases[c];
    for (size_t s = 0; s < t->nsets; s++)
      for (int a = 0; a < 2; a++)
        fprintf(f,
                "%s,%s,%zu,%zu,%zu,%zu,%zu,%zu,%s,%g,%s,%s,%.3e,%.3e,%.3e,"
                "%.3e,%.4g\n",
                cpu->slug, k->name, k->hq, k->hkv, k->lq, k->lkv, k->dqk, k->dv,
                k->mask == SA_MASK_NONE ? "none" : "causal", k->logit,
                t->sets[s]->name, algo_name[a], t->set[s][a][c].abs,
                t->set[s][a][c].rel, t->plain[c].abs, t->plain[c].rel,
                t->max_ref[c]);
  }
}

static int write_file(const char *dir, const char *name, const table *t,
                      const sa_bench_cpu *cpu, int quick) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "simdattn_accuracy: cannot write %s: %s\n", path,
            strerror(errno));
    return 1;
  }
  if (strstr(name, ".csv"))
    write_csv(f, t, cpu);
  else
    print_md(f, t, cpu, quick);
  return fclose(f) != 0;
}

/* ------------------------------------------------------------------ main */

int main(int argc, char **argv) {
  int quick = 0, list = 0;
  const char *out = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      quick = 1;
    } else if (!strcmp(argv[i], "--list")) {
      list = 1;
    } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
      out = argv[++i];
    } else {
      fprintf(stderr, "usage: simdattn_accuracy [--quick] [--out DIR] | "
                      "--list\n"
                      "  writes DIR/accuracy.{md,csv} (DIR: "
                      "results/<cpu>/)\n");
      return 2;
    }
  }
  sa_bench_cpu cpu;
  sa_bench_cpu_name(&cpu);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", out ? out : "results/");
  if (!out)
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "%s", cpu.slug);

  static table t;
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    if (sa_kernel_set_supported(ks) && t.nsets < MAX_SETS) {
      t.sets[t.nsets++] = ks;
      continue;
    }
    char need[128];
    sa_cpu_feature_names(ks->cpu_features & ~sa_cpu_features(), need,
                         sizeof need);
    size_t len = strlen(t.skipped);
    snprintf(t.skipped + len, sizeof t.skipped - len, "%s%s (needs %s)",
             len ? ", " : "", ks->name, need);
  }
  if (list) {
    for (size_t s = 0; s < t.nsets; s++)
      printf("%s\n", t.sets[s]->name);
    return 0;
  }
  if (t.skipped[0])
    fprintf(stderr, "simdattn_accuracy: skipped, this CPU cannot run: %s\n",
            t.skipped);

  int failed = 0;
  for (size_t c = 0; c < N_CASES; c++) {
    acc_case *k = &cases[c];
    if (quick && k->lkv == LONG_KEYS)
      k->lkv = LONG_KEYS_QUICK;
    inputs in;
    make_inputs(k, 1000 + c, &in);
    t.max_ref[c] = in.max_ref;
    float *s = must_alloc(k->lkv * sizeof(float));
    sa_plain_fp32_attention(&in.d, in.q, in.k, in.v, in.o, s);
    free(s);
    t.plain[c] = measure(&in);
    for (size_t ks = 0; ks < t.nsets; ks++)
      for (int a = 0; a < 2; a++) {
        memset(in.o, 0xff, in.o_floats * sizeof(float)); /* NaN: unwritten */
        failed |= run_set(t.sets[ks]->name, algo_value[a], &in);
        err e = measure(&in);
        t.set[ks][a][c] = e;
        failed |= !isfinite(e.abs) || !isfinite(e.rel);
      }
    free_inputs(&in);
  }

  print_md(stdout, &t, &cpu, quick);
  if (make_dirs(dir) != 0) {
    fprintf(stderr, "simdattn_accuracy: cannot create %s: %s\n", dir,
            strerror(errno));
    return 1;
  }
  failed |= write_file(dir, "accuracy.md", &t, &cpu, quick);
  failed |= write_file(dir, "accuracy.csv", &t, &cpu, quick);
  printf("\nsimdattn_accuracy: wrote %s/accuracy.md and %s/accuracy.csv%s\n",
         dir, dir, failed ? "; SOME CALLS FAILED" : "");
  return failed ? 1 : 0;
}
