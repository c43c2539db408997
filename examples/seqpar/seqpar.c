/*
 * Sequence parallelism over MPI: one long-context attention with its keys
 * sharded across ranks. Each rank holds a contiguous range of the keys and
 * values, runs sa_attention on it with the log-sum-exp out (desc.lse), all
 * ranks all-gather their partial O and LSE, and every rank merges them with
 * sa_attention_merge into the attention over all keys. Rank 0 then checks
 * the merged result against one sa_attention call over the whole sequence.
 * See README.md next to this file.
 *
 *   mpirun -np 2 --oversubscribe ./seqpar [--batch B] [--heads-q H]
 *       [--heads-kv H] [--len-q N] [--len-kv N] [--dim D] [--seed S]
 *       [--threads N] [--repeat N] [--causal] [--sinks] [--no-check]
 */
#if defined(__linux__)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <sched.h>
#else
#define _POSIX_C_SOURCE 200809L /* sysconf */
#endif

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <simdattn.h>

/* ------------------------------------------------------------ the data */

/* Counter-based splitmix64: element i of a stream is a pure function of
 * (seed, stream, i), so every rank generates exactly its own shard of K and
 * V, and rank 0 the whole, with no communication and the same values. */
static float uniform_at(uint64_t seed, uint64_t stream, uint64_t i) {
  uint64_t z = seed ^ (stream * 0xd1b54a32d192ed03u);
  z += (i + 1) * 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  z ^= z >> 31;
  return (float)(z >> 40) * (1.0f / 8388608.0f) - 1.0f; /* [-1, 1), exact */
}

enum { STREAM_Q = 1, STREAM_K, STREAM_V, STREAM_SINK };

/* Keys [k0, k0 + n) of a [batch, heads, len_kv, dim] tensor, packed as
 * [batch, heads, n, dim]: the global index decides the value. */
static void fill_keys(float *p, uint64_t seed, uint64_t stream, size_t batch,
                      size_t heads, size_t len_kv, size_t dim, size_t k0,
                      size_t n, float amp) {
  for (size_t bh = 0; bh < batch * heads; bh++)
    for (size_t j = 0; j < n; j++)
      for (size_t x = 0; x < dim; x++)
        p[(bh * n + j) * dim + x] =
            amp * uniform_at(seed, stream, (bh * len_kv + k0 + j) * dim + x);
}

/* ------------------------------------------------------------ helpers */

static void die(const char *what, sa_status st) {
  fprintf(stderr, "seqpar: %s: %s (%s)\n", what, sa_status_str(st),
          sa_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1); /* the other ranks may sit in a collective */
  exit(1);
}

static void *xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "seqpar: out of memory (%zu bytes)\n", bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
  }
  return p;
}

static float *floats(size_t n) { return xmalloc(n * sizeof(float)); }

static int parse_size(const char *s, size_t *out) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*s == '\0' || *s == '-' || *end != '\0' || v == 0 || v > (1u << 30))
    return 0;
  *out = (size_t)v;
  return 1;
}

/* Worker threads per rank. Ranks launched on one node without binding all
 * see every CPU, and a context per rank with one thread per core each would
 * put ranks x cores threads on the cores: share them out instead. A launcher
 * that bound each rank to its own cores already did the sharing, and the
 * library's default (one worker per usable core) is right. */
static int threads_per_rank(int local_ranks) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 1)
    online = 1;
  long usable = online;
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    usable = CPU_COUNT(&set);
#endif
  if (usable < online)
    return 0;
  long t = online / local_ranks;
  return t < 1 ? 1 : (int)t;
}

typedef struct config {
  size_t batch, heads_q, heads_kv, len_q, len_kv, dim;
  uint64_t seed;
  int threads, repeat, causal, sinks, check;
} config;

static int parse_args(int argc, char **argv, config *c) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    size_t *field = NULL;
    if (!strcmp(a, "--causal")) {
      c->causal = 1;
      continue;
    }
    if (!strcmp(a, "--sinks")) {
      c->sinks = 1;
      continue;
    }
    if (!strcmp(a, "--no-check")) {
      c->check = 0;
      continue;
    }
    if (i + 1 >= argc)
      return 0;
    const char *v = argv[++i];
    size_t n;
    if (!strcmp(a, "--batch"))
      field = &c->batch;
    else if (!strcmp(a, "--heads-q"))
      field = &c->heads_q;
    else if (!strcmp(a, "--heads-kv"))
      field = &c->heads_kv;
    else if (!strcmp(a, "--len-q"))
      field = &c->len_q;
    else if (!strcmp(a, "--len-kv"))
      field = &c->len_kv;
    else if (!strcmp(a, "--dim"))
      field = &c->dim;
    if (field) {
      if (!parse_size(v, field))
        return 0;
    } else if (!strcmp(a, "--seed")) {
      char *end;
      c->seed = strtoull(v, &end, 0);
      if (*v == '\0' || *end != '\0')
        return 0;
    } else if (!strcmp(a, "--threads") || !strcmp(a, "--repeat")) {
      if (!parse_size(v, &n) || n > 4096)
        return 0;
      *(!strcmp(a, "--threads") ? &c->threads : &c->repeat) = (int)n;
    } else {
      return 0;
    }
  }
  return c->heads_q % c->heads_kv == 0;
}

/* --------------------------------------------------- one rank's shard */

/*
 * Attention of all query rows over keys [k0, k0 + n) of the sequence,
 * writing O and LSE for every row. Without --causal any split is exact with
 * SA_MASK_NONE. With --causal the whole problem is bottom-right causal (the
 * len_q queries are the last len_q positions, as in a chunked prefill):
 * global query row i sees global keys g <= i + len_kv - len_q, i.e. local
 * keys j <= i + off with off = len_kv - len_q - k0. Under SA_MASK_NONE the
 * window is relative to c = i, so window_right = off says exactly that; the
 * rank's key offset is all it needs, no mask tensor. A window_right of -1
 * means unbounded and below -1 is an error, so when off < 0 the first -off
 * rows see no key of this shard (their O is 0, their LSE -inf, or the sink)
 * and the rest are one call on rows -off.. with window_right = 0.
 */
static void shard_attention(sa_context *ctx, const config *c, size_t k0,
                            size_t n, const float *q, const float *k,
                            const float *v, const float *sinks, float *o,
                            float *lse) {
  size_t lq = c->len_q, d = c->dim;
  int64_t off = (int64_t)c->len_kv - (int64_t)lq - (int64_t)k0;
  size_t skip = 0; /* leading query rows that see no key here */
  if (c->causal && off < 0)
    skip = (size_t)-off < lq ? (size_t)-off : lq;
  if (n == 0)
    skip = lq;

  /* Rows that see nothing: what sa_attention itself gives a fully masked
   * row, so the merge treats them alike. */
  for (size_t bh = 0; bh < c->batch * c->heads_q; bh++)
    for (size_t i = 0; i < skip; i++) {
      memset(o + (bh * lq + i) * d, 0, d * sizeof *o);
      lse[bh * lq + i] = sinks ? sinks[bh % c->heads_q] : -INFINITY;
    }
  if (skip == lq)
    return;

  sa_attention_desc desc;
  sa_attention_desc_init(&desc);
  desc.batch = c->batch;
  desc.heads_q = c->heads_q;
  desc.heads_kv = c->heads_kv;
  desc.len_q = lq - skip;
  desc.len_kv = n;
  desc.dim_qk = d;
  desc.dim_v = d;
  desc.mask = SA_MASK_NONE;
  /* Explicit strides: with skip > 0 the rows are a slice of [B, H, len_q, D]
   * tensors, which the packed default (from desc.len_q) would not describe. */
  desc.q = desc.o = (sa_strides){c->heads_q * lq * d, lq * d, d};
  desc.k = desc.v = (sa_strides){c->heads_kv * n * d, n * d, d};
  desc.lse_at = (sa_strides){c->heads_q * lq, lq, 1};
  desc.sinks = sinks;
  desc.lse = lse + skip;
  if (c->causal) {
    int64_t right = off + (int64_t)skip; /* >= 0 here */
    if (right < (int64_t)n - 1) {        /* else every row sees every key */
      desc.window = 1;
      desc.window_left = -1;
      desc.window_right = right;
    }
  }
  sa_status st = sa_attention(ctx, &desc, q + skip * d, k, v, o + skip * d);
  if (st != SA_OK)
    die("sa_attention on the shard", st);
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  /* A realistic long-context shape: 64 queries (a prefill chunk or a batch
   * of decode rows) over 8192 keys, GQA 8/2, head dim 64. */
  config c = {.batch = 1,
              .heads_q = 8,
              .heads_kv = 2,
              .len_q = 64,
              .len_kv = 8192,
              .dim = 64,
              .seed = 42,
              .threads = -1,
              .repeat = 5,
              .check = 1};
  if (!parse_args(argc, argv, &c)) {
    if (rank == 0)
      fprintf(stderr,
              "usage: seqpar [--batch B] [--heads-q H] [--heads-kv H] "
              "[--len-q N] [--len-kv N] [--dim D] [--seed S] [--threads N] "
              "[--repeat N] [--causal] [--sinks] [--no-check]\n"
              "(sizes >= 1, heads-q a multiple of heads-kv)\n");
    MPI_Finalize();
    return 2;
  }

  /* Contiguous key ranges; the first len_kv % ranks ranks take one more
   * key, so an uneven split costs at most one key of imbalance. */
  size_t base = c.len_kv / (size_t)ranks, extra = c.len_kv % (size_t)ranks;
  size_t r = (size_t)rank;
  size_t n = base + (r < extra ? 1 : 0);
  size_t k0 = r * base + (r < extra ? r : extra);

  MPI_Comm node;
  int local_ranks;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                      &node);
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);

  sa_context_options opts;
  sa_context_options_init(&opts);
  opts.num_threads = c.threads >= 0 ? c.threads : threads_per_rank(local_ranks);
  /* Ranks do not know each other's pinning: leave placement to the OS
   * (or to the launcher's binding). */
  opts.pin = SA_PIN_NONE;
  sa_context *ctx;
  sa_status st = sa_context_create(&opts, &ctx);
  if (st != SA_OK)
    die("sa_context_create", st);

  size_t hq = c.heads_q, hkv = c.heads_kv, d = c.dim, lq = c.len_q;
  size_t rows = c.batch * hq * lq; /* query rows, each with one LSE */
  size_t no = rows * d;            /* floats of one O */
  /* One all-gather moves O and LSE together: a rank's part is [O | LSE]. */
  size_t part = no + rows;
  if (part > (size_t)INT_MAX) {
    if (rank == 0)
      fprintf(stderr, "seqpar: %zu floats per part exceed an MPI count\n",
              part);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  /* Everyone has every query (sequence parallelism shards the keys). Q is
   * scaled so scores q.k/sqrt(d) have a spread of about 1.3: the softmax is
   * far from flat, and the shards' LSEs differ, which the merge must get
   * right. */
  float *q = floats(no), *k = floats(c.batch * hkv * n * d),
        *v = floats(c.batch * hkv * n * d);
  fill_keys(q, c.seed, STREAM_Q, c.batch, hq, lq, d, 0, lq, 4.0f);
  fill_keys(k, c.seed, STREAM_K, c.batch, hkv, c.len_kv, d, k0, n, 1.0f);
  fill_keys(v, c.seed, STREAM_V, c.batch, hkv, c.len_kv, d, k0, n, 1.0f);

  /* Sinks (gpt-oss) belong to the softmax once, not once per shard: only
   * rank 0 passes them. Near log(len_kv) they take a visible share. */
  float *sinks = NULL;
  if (c.sinks) {
    sinks = floats(hq);
    for (size_t h = 0; h < hq; h++)
      sinks[h] =
          logf((float)c.len_kv) + 2.0f * uniform_at(c.seed, STREAM_SINK, h);
  }

  float *mine = floats(part), *all = floats(part * (size_t)ranks);
  float *o = floats(no), *lse = floats(rows);
  double t_attn = INFINITY, t_gather = INFINITY, t_merge = INFINITY;

  sa_merge_desc md;
  sa_merge_desc_init(&md);
  md.batch = c.batch;
  md.heads = hq;
  md.len_q = lq;
  md.dim_v = d;
  md.parts = (size_t)ranks;
  const float **o_parts = xmalloc((size_t)ranks * sizeof *o_parts);
  const float **lse_parts = xmalloc((size_t)ranks * sizeof *lse_parts);
  for (int p = 0; p < ranks; p++) {
    o_parts[p] = all + (size_t)p * part;
    lse_parts[p] = all + (size_t)p * part + no;
  }

  /* --repeat: the first run also starts the workers; report the best. */
  for (int it = 0; it < c.repeat; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    shard_attention(ctx, &c, k0, n, q, k, v, rank == 0 ? sinks : NULL, mine,
                    mine + no);
    double t1 = MPI_Wtime();
    MPI_Allgather(mine, (int)part, MPI_FLOAT, all, (int)part, MPI_FLOAT,
                  MPI_COMM_WORLD);
    double t2 = MPI_Wtime();
    st = sa_attention_merge(&md, o_parts, lse_parts, o, lse);
    if (st != SA_OK)
      die("sa_attention_merge", st);
    double t3 = MPI_Wtime();
    t_attn = fmin(t_attn, t1 - t0);
    t_gather = fmin(t_gather, t2 - t1);
    t_merge = fmin(t_merge, t3 - t2);
  }

  /* Rank 0 prints every rank's line, in order. */
  double mine_t[3] = {t_attn, t_gather, t_merge};
  double *times = rank == 0 ? xmalloc(3 * (size_t)ranks * sizeof *times) : NULL;
  MPI_Gather(mine_t, 3, MPI_DOUBLE, times, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  unsigned long long counts[2] = {k0, n}, *ranges = NULL;
  if (rank == 0)
    ranges = xmalloc(2 * (size_t)ranks * sizeof *ranges);
  MPI_Gather(counts, 2, MPI_UNSIGNED_LONG_LONG, ranges, 2,
             MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);

  int ok = 1;
  if (rank == 0) {
    printf("seqpar: %d rank(s), batch %zu, heads %zu/%zu, len_q %zu, "
           "len_kv %zu, d %zu, %s%s; %s, %d thread(s) per rank\n",
           ranks, c.batch, hq, hkv, lq, c.len_kv, d,
           c.causal ? "bottom-right causal" : "no mask",
           c.sinks ? ", sinks on rank 0" : "", sa_context_kernel_set(ctx)->name,
           sa_context_num_threads(ctx));
    for (int p = 0; p < ranks; p++)
      printf("  rank %d: keys [%llu, %llu)  attention %8.3f ms  allgather "
             "%7.3f ms  merge %6.3f ms\n",
             p, ranges[2 * p], ranges[2 * p] + ranges[2 * p + 1],
             1e3 * times[3 * p], 1e3 * times[3 * p + 1],
             1e3 * times[3 * p + 2]);
  }

  if (rank == 0 && c.check) {
    /* The whole attention in one call, on K/V rank 0 builds in full. */
    float *kf = floats(c.batch * hkv * c.len_kv * d),
          *vf = floats(c.batch * hkv * c.len_kv * d);
    fill_keys(kf, c.seed, STREAM_K, c.batch, hkv, c.len_kv, d, 0, c.len_kv,
              1.0f);
    fill_keys(vf, c.seed, STREAM_V, c.batch, hkv, c.len_kv, d, 0, c.len_kv,
              1.0f);
    float *ref = floats(no), *ref_lse = floats(rows);
    sa_attention_desc desc;
    sa_attention_desc_init(&desc);
    desc.batch = c.batch;
    desc.heads_q = hq;
    desc.heads_kv = hkv;
    desc.len_q = lq;
    desc.len_kv = c.len_kv;
    desc.dim_qk = d;
    desc.dim_v = d;
    desc.mask = c.causal ? SA_MASK_CAUSAL_BOTTOM_RIGHT : SA_MASK_NONE;
    desc.sinks = sinks;
    desc.lse = ref_lse;
    double t0 = MPI_Wtime();
    st = sa_attention(ctx, &desc, q, kf, vf, ref);
    double t_ref = MPI_Wtime() - t0;
    if (st != SA_OK)
      die("sa_attention on the whole sequence", st);

    float vmax = 0.0f, lmax = 0.0f, diff = 0.0f, ldiff = 0.0f;
    for (size_t i = 0; i < c.batch * hkv * c.len_kv * d; i++)
      vmax = fmaxf(vmax, fabsf(vf[i]));
    for (size_t i = 0; i < no; i++)
      diff = fmaxf(diff, fabsf(o[i] - ref[i]));
    for (size_t i = 0; i < rows; i++) {
      /* -inf == -inf (a row that sees nothing) is a match, not a NaN */
      if (ref_lse[i] != lse[i])
        ldiff = fmaxf(ldiff, fabsf(lse[i] - ref_lse[i]));
      if (isfinite(ref_lse[i]))
        lmax = fmaxf(lmax, fabsf(ref_lse[i]));
    }
    /*
     * Tolerance. Both results are convex combinations of V rows, so their
     * errors scale with max|v|. They differ only in rounding:
     * - the order of the fp32 sums over keys (l = sum exp, O = sum p v): the
     *   reference runs one online softmax over len_kv keys, each rank its
     *   own over n; reordering a sum of len_kv terms moves it by about
     *   sqrt(len_kv) eps relative (random rounding; n eps is the worst case
     *   and far too loose to mean anything);
     * - the merge's weights w_k = exp(lse_k - M): an LSE carries an absolute
     *   error of about eps |lse| (the m + log(l) add) plus l's relative
     *   error, and exp turns an absolute error in lse_k into that relative
     *   error in w_k, which moves O by up to twice it times max|v|;
     * - the merge's own sums over parts and the division: a few eps per
     *   part.
     * So err <~ eps max|v| (sqrt(len_kv) + 2 max|lse| + ranks); a factor of
     * 4 covers the exp's own few ULP and the kernels' FMA-or-not rounding.
     * A wrong merge (a part dropped, a weight off) is off by a fraction of
     * max|v|, orders of magnitude above this. The LSE gets the same bound
     * without max|v| (it is an absolute error).
     */
    float scale = 4.0f * FLT_EPSILON *
                  (sqrtf((float)c.len_kv) + 2.0f * lmax + (float)ranks);
    float tol = scale * vmax, ltol = scale;
    /* NaN compares false: a NaN difference fails the check */
    ok = diff <= tol && ldiff <= ltol;
    printf("  rank 0: whole sequence in one call %8.3f ms\n", 1e3 * t_ref);
    printf("max |O_merged - O_single| = %.3g (tolerance %.3g = %.0f eps * "
           "max|v| %.3g)\n",
           diff, tol, tol / (FLT_EPSILON * vmax), vmax);
    printf("max |lse_merged - lse_single| = %.3g (tolerance %.3g)\n", ldiff,
           ltol);
    printf("%s\n", ok ? "PASS: merged shards match the single-process result"
                      : "FAIL: merged shards differ from the single-process "
                        "result");
    free(kf), free(vf), free(ref), free(ref_lse);
  }
  /* Every rank exits with the verdict, so mpirun's status is rank 0's. */
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);

  free(times), free(ranges), free(o_parts), free(lse_parts);
  free(q), free(k), free(v), free(sinks), free(mine), free(all), free(o),
      free(lse);
  sa_context_destroy(ctx);
  MPI_Finalize();
  return ok ? 0 : 1;
}
