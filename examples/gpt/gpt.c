/*
 * The decoder block of a GPT-style model, in C on the installed simdattn:
 * token and positional embeddings, pre-LayerNorm causal multi-head attention
 * (one sa_attention call per layer and step, over all heads), the residual
 * adds, the MLP (GELU, 4x), a final LayerNorm and the tied unembedding. It
 * prefills a prompt, then generates greedily with a KV cache, and checks that
 * prefill-then-decode gives what recomputing the whole sequence gives.
 *
 * The weights are random (seeded, deterministic): the point is the data flow
 * and the attention calls, not the text. See README.md next to this file.
 *
 *   gpt [--gpt3-geometry] [--prompt N] [--generate N] [--threads N]
 *       [--seed S] [--dump FILE]
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, posix_memalign */
#if defined(__linux__)
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include <sys/mman.h>
#endif

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <simdattn.h>

#ifdef GPT_CBLAS
#include <cblas.h>
#endif

/* ------------------------------------------------------------ the model */

/* One decoder block. Matrices are row-major [in][out], so a projection is
 * y = x W + b on rows x of the residual stream. */
typedef struct layer {
  float *ln1_g, *ln1_b;
  float *w_q, *b_q; /* [d_model][heads * d_head]: head h is columns h*d_head.. */
  float *w_k, *b_k;
  /* The value map as a low-rank pair per head ("OV circuit" view):
   * value-down W_V^h = columns h*d_head.. of w_v   (d_model -> d_head),
   * value-up   W_U^h = rows    h*d_head.. of w_o   (d_head  -> d_model).
   * Stacked over heads the value-ups are the usual W_O. */
  float *w_v, *b_v;
  float *w_o, *b_o; /* [heads * d_head][d_model] */
  float *ln2_g, *ln2_b;
  float *w_fc, *b_fc;     /* [d_model][d_mlp] */
  float *w_proj, *b_proj; /* [d_mlp][d_model] */
} layer;

typedef struct model {
  size_t vocab, d, heads, dh, mlp, layers, max_pos;
  float *tok_emb; /* [vocab][d]: the input embedding and, tied, the unembedding */
  float *pos_emb; /* [max_pos][d]: learned-style absolute positions */
  float *lnf_g, *lnf_b;
  layer *layer;
} model;

/* Every tensor in one fixed order: initialisation, --dump and gpt.py all
 * walk this list, so the file needs no names. */
typedef struct tensor {
  float **p;
  size_t n;
  float center, half; /* uniform in [center - half, center + half) */
} tensor;

#define PER_LAYER 16

static size_t model_tensors(model *m, tensor *t) {
  size_t d = m->d, hd = m->heads * m->dh, n = 0;
  /* Uniform with the standard deviation s has half-width sqrt(3) s. Matrices
   * get s = 1/sqrt(fan_in), so every projection keeps activations of order
   * one and the attention scores q.k/sqrt(d_head) have spread about 1: the
   * softmax is neither flat nor one-hot. The two matrices writing into the
   * residual stream are scaled by 1/sqrt(2 layers), as GPT-2 does. */
  float r3 = sqrtf(3.0f), res = 1.0f / sqrtf(2.0f * (float)m->layers);
  float in_d = r3 / sqrtf((float)d), in_hd = r3 / sqrtf((float)hd),
        in_mlp = r3 / sqrtf((float)m->mlp);
  t[n++] = (tensor){&m->tok_emb, m->vocab * d, 0, in_d};
  t[n++] = (tensor){&m->pos_emb, m->max_pos * d, 0, in_d};
  for (size_t l = 0; l < m->layers; l++) {
    layer *w = &m->layer[l];
    t[n++] = (tensor){&w->ln1_g, d, 1, 0.1f};
    t[n++] = (tensor){&w->ln1_b, d, 0, 0.05f};
    t[n++] = (tensor){&w->w_q, d * hd, 0, in_d};
    t[n++] = (tensor){&w->b_q, hd, 0, 0.05f};
    t[n++] = (tensor){&w->w_k, d * hd, 0, in_d};
    t[n++] = (tensor){&w->b_k, hd, 0, 0.05f};
    t[n++] = (tensor){&w->w_v, d * hd, 0, in_d};
    t[n++] = (tensor){&w->b_v, hd, 0, 0.05f};
    t[n++] = (tensor){&w->w_o, hd * d, 0, in_hd * res};
    t[n++] = (tensor){&w->b_o, d, 0, 0.05f};
    t[n++] = (tensor){&w->ln2_g, d, 1, 0.1f};
    t[n++] = (tensor){&w->ln2_b, d, 0, 0.05f};
    t[n++] = (tensor){&w->w_fc, d * m->mlp, 0, in_d};
    t[n++] = (tensor){&w->b_fc, m->mlp, 0, 0.05f};
    t[n++] = (tensor){&w->w_proj, m->mlp * d, 0, in_mlp * res};
    t[n++] = (tensor){&w->b_proj, d, 0, 0.05f};
  }
  t[n++] = (tensor){&m->lnf_g, d, 1, 0.1f};
  t[n++] = (tensor){&m->lnf_b, d, 0, 0.05f};
  return n;
}

/* splitmix64: tiny, fast, and every tensor gets its own stream from
 * (seed, index), so its values do not depend on the order of filling. */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Two uniforms in [-1, 1) per draw, each a 24-bit integer times 2^-23 (exact
 * in fp32). */
static void fill_uniform(float *p, size_t n, uint64_t seed, uint64_t stream,
                         float center, float half) {
  uint64_t s = seed ^ (stream * 0xd1b54a32d192ed03u);
  const float k = 1.0f / 8388608.0f;
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    uint64_t z = splitmix(&s);
    p[i] = center + half * ((float)(z >> 40) * k - 1.0f);
    p[i + 1] = center + half * ((float)((z >> 8) & 0xffffff) * k - 1.0f);
  }
  if (i < n)
    p[i] = center + half * ((float)(splitmix(&s) >> 40) * k - 1.0f);
}

/* ------------------------------------------------------------ helpers */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *xmalloc(size_t n, const char *what) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "gpt: out of memory (%.1f MB for %s)\n", (double)n / 1e6,
            what);
    exit(1);
  }
  return p;
}

static float *floats(size_t n, const char *what) {
  if (n > SIZE_MAX / sizeof(float)) {
    fprintf(stderr, "gpt: %s is too large\n", what);
    exit(1);
  }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  /* Big weights (--gpt3-geometry has 7 GB) in transparent huge pages:
   * first-touching 4 KiB pages dominated the start-up (on a small VM, about
   * 4 s per GB; half that with 2 MiB pages), and the matmuls stream these
   * matrices, so fewer TLB misses too. Only a hint: ignored if THP is off. */
  size_t bytes = n * sizeof(float), huge = (size_t)2 << 20;
  if (bytes >= 16 * huge) {
    void *p;
    if (posix_memalign(&p, huge, bytes) != 0) {
      fprintf(stderr, "gpt: out of memory (%.1f MB for %s)\n",
              (double)bytes / 1e6, what);
      exit(1);
    }
    madvise(p, bytes, MADV_HUGEPAGE);
    return p;
  }
#endif
  return xmalloc(n * sizeof(float), what);
}

/*
 * y[i][j] = (accumulate ? y[i][j] : bias[j] or 0) + sum_k x[i][k] w[k][j]
 * for i < m, j < n, k < kd; every matrix row-major with its own row stride.
 *
 * The plain loop walks w once, a block of nb columns at a time, and updates
 * all m rows of y from each row of that block; the inner loop is unit-stride
 * in w and y, which the compiler vectorises. nb is chosen so that the m x nb
 * block of y stays in L2 (about 128 KiB): wide blocks for a decode step, so
 * that w streams from memory in long runs, narrower ones for a prefill.
 * Each y[i][j] sums its terms in increasing k whatever m and nb are, so a
 * decode step (m = 1) rounds exactly like the same row inside a prefill.
 */
static void matmul(size_t m, size_t n, size_t kd, const float *x, size_t ldx,
                   const float *w, size_t ldw, const float *bias, float *y,
                   size_t ldy, int accumulate) {
  if (!accumulate)
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++)
        y[i * ldy + j] = bias ? bias[j] : 0.0f;
#ifdef GPT_CBLAS
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n,
              (int)kd, 1.0f, x, (int)ldx, w, (int)ldw, 1.0f, y, (int)ldy);
#else
  size_t NB = (size_t)32768 / (m ? m : 1);
  NB = NB < 64 ? 64 : NB;
  for (size_t j0 = 0; j0 < n; j0 += NB) {
    size_t nb = n - j0 < NB ? n - j0 : NB;
    for (size_t k = 0; k < kd; k++) {
      const float *wk = w + k * ldw + j0;
      for (size_t i = 0; i < m; i++) {
        float a = x[i * ldx + k];
        float *yi = y + i * ldy + j0;
        for (size_t j = 0; j < nb; j++)
          yi[j] += a * wk[j];
      }
    }
  }
#endif
}

/* logits[i][v] = h[i] . tok_emb[v]: the unembedding tied to the embedding,
 * i.e. h E^T, read along E's rows. */
static void unembed(size_t m, const float *h, const model *md, float *logits) {
  size_t d = md->d;
#ifdef GPT_CBLAS
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)md->vocab,
              (int)d, 1.0f, h, (int)d, md->tok_emb, (int)d, 0.0f, logits,
              (int)md->vocab);
#else
  for (size_t i = 0; i < m; i++)
    for (size_t v = 0; v < md->vocab; v++) {
      /* eight partial sums: a fixed order the compiler can vectorise */
      const float *a = h + i * d, *e = md->tok_emb + v * d;
      float s[8] = {0};
      size_t k = 0;
      for (; k + 8 <= d; k += 8)
        for (size_t u = 0; u < 8; u++)
          s[u] += a[k + u] * e[k + u];
      for (; k < d; k++)
        s[0] += a[k] * e[k];
      logits[i * md->vocab + v] =
          ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    }
#endif
}

static void layernorm(size_t m, size_t d, const float *x, const float *g,
                      const float *b, float *y) {
  for (size_t i = 0; i < m; i++) {
    const float *xi = x + i * d;
    float mean = 0, var = 0;
    for (size_t k = 0; k < d; k++)
      mean += xi[k];
    mean /= (float)d;
    for (size_t k = 0; k < d; k++)
      var += (xi[k] - mean) * (xi[k] - mean);
    float r = 1.0f / sqrtf(var / (float)d + 1e-5f);
    for (size_t k = 0; k < d; k++)
      y[i * d + k] = (xi[k] - mean) * r * g[k] + b[k];
  }
}

/* GELU, GPT-2's tanh approximation. */
static float gelu(float x) {
  return 0.5f * x *
         (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

static size_t argmax(const float *v, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (v[i] > v[best])
      best = i;
  return best;
}

static float max_abs(const float *a, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; i++)
    m = fmaxf(m, fabsf(a[i]));
  return m;
}

static float max_abs_diff(const float *a, const float *b, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; i++)
    m = fmaxf(m, fabsf(a[i] - b[i]));
  return m;
}

/* ------------------------------------------------------------ the block */

/* Per-run state: the attention context, scratch big enough for every row of
 * the longest pass, what we time, and the one-off OV check. */
typedef struct run {
  sa_context *ctx;
  float *h, *q, *att, *ff, *tmp; /* scratch */
  double t_attn;                 /* seconds inside sa_attention */
  int ov_checked;
  float ov_diff, ov_tol;
} run;

/*
 * Rows x[0..n) of the residual stream, at positions pos0 .. pos0+n-1, through
 * layer w. The layer's keys and values for those positions are written
 * straight into rows pos0.. of kc / vc ([cap][heads][d_head], batch 1), and
 * the queries attend to rows 0 .. pos0+n-1 there: a prefill is pos0 = 0,
 * n = prompt length; a decode step is n = 1 at pos0 = tokens so far.
 */
static void block(const model *md, const layer *w, run *r, float *x, size_t n,
                  size_t pos0, float *kc, float *vc, size_t cap) {
  size_t d = md->d, H = md->heads, D = md->dh, HD = H * D;

  /* pre-LN attention */
  layernorm(n, d, x, w->ln1_g, w->ln1_b, r->h);
  matmul(n, HD, d, r->h, d, w->w_q, HD, w->b_q, r->q, HD, 0);
  matmul(n, HD, d, r->h, d, w->w_k, HD, w->b_k, kc + pos0 * HD, HD, 0);
  /* value-down, head by head: v^h = x W_V^h, d_model -> d_head. (One
   * matmul with all of W_V gives the same numbers; written per head to show
   * the pair.) */
  for (size_t h = 0; h < H; h++)
    matmul(n, D, d, r->h, d, w->w_v + h * D, HD, w->b_v + h * D,
           vc + pos0 * HD + h * D, HD, 0);

  /* Causal attention, every head in one call. Q, K, V and O are [L, H, D]
   * (rows of the projections and of the cache); strides say so, nothing is
   * transposed. Prefill: len_q = len_kv, top-left causal. Decode: the new
   * rows are the last len_q of len_kv keys, so the diagonal sits bottom
   * right (with len_q = 1 that is every key: the same as no mask). */
  sa_attention_desc a;
  sa_attention_desc_init(&a);
  a.batch = 1;
  a.heads_q = a.heads_kv = H;
  a.len_q = n;
  a.len_kv = pos0 + n;
  a.dim_qk = a.dim_v = D;
  a.scale = 0.0f; /* 1/sqrt(d_head) */
  a.mask = pos0 == 0 ? SA_MASK_CAUSAL_TOP_LEFT : SA_MASK_CAUSAL_BOTTOM_RIGHT;
  a.q = a.o = (sa_strides){n * HD, D, HD};
  a.k = a.v = (sa_strides){cap * HD, D, HD};
  double t0 = now();
  sa_status st = sa_attention(r->ctx, &a, r->q, kc, vc, r->att);
  r->t_attn += now() - t0;
  if (st != SA_OK) {
    fprintf(stderr, "gpt: sa_attention: %s (%s)\n", sa_status_str(st),
            sa_last_error());
    exit(1);
  }

  /* Value-up and the residual add: x += b_O + sum_h att^h W_U^h. Together
   * with the value-down this is head h's OV circuit W_V^h W_U^h, a rank
   * d_head map d_model -> d_model that moves what position j holds to
   * position i with weight A^h[i][j]; attention is linear in V, so the up
   * map can wait until after the mix, where it costs d_head per row, not
   * d_model. r->att is concat(heads): row i holds head h in columns
   * h*d_head.., so att^h is a strided view of it. */
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < d; j++)
      r->tmp[i * d + j] = w->b_o[j];
  for (size_t h = 0; h < H; h++)
    matmul(n, d, D, r->att + h * D, HD, w->w_o + h * D * d, d, NULL, r->tmp, d,
           1);
  if (!r->ov_checked) {
    /* Once: the stacked form, concat(heads) W_O as one matmul, must agree
     * (bit for bit with the plain loop, which sums in the same order). */
    float *full = r->ff; /* free until the MLP */
    matmul(n, d, HD, r->att, HD, w->w_o, d, w->b_o, full, d, 0);
    r->ov_diff = max_abs_diff(full, r->tmp, n * d);
    /* One reordered sum of HD terms: 256 ulps of the largest output. */
    r->ov_tol = 256.0f * FLT_EPSILON * fmaxf(1.0f, max_abs(full, n * d));
    r->ov_checked = 1;
  }
  for (size_t i = 0; i < n * d; i++)
    x[i] += r->tmp[i];

  /* pre-LN MLP, 4x with GELU, and its residual add */
  layernorm(n, d, x, w->ln2_g, w->ln2_b, r->h);
  matmul(n, md->mlp, d, r->h, d, w->w_fc, md->mlp, w->b_fc, r->ff, md->mlp, 0);
  for (size_t i = 0; i < n * md->mlp; i++)
    r->ff[i] = gelu(r->ff[i]);
  matmul(n, d, md->mlp, r->ff, md->mlp, w->w_proj, d, w->b_proj, r->tmp, d, 0);
  for (size_t i = 0; i < n * d; i++)
    x[i] += r->tmp[i];
}

/* Tokens tok[0..n) at positions pos0.. through the embeddings, every layer
 * and the final LayerNorm + unembedding. hidden gets the residual stream
 * after the last block, logits the next-token scores of every row. */
static void forward(const model *md, run *r, const int32_t *tok, size_t n,
                    size_t pos0, float **kc, float **vc, size_t cap,
                    float *hidden, float *logits) {
  size_t d = md->d;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < d; k++)
      hidden[i * d + k] = md->tok_emb[(size_t)tok[i] * d + k] +
                          md->pos_emb[(pos0 + i) * d + k];
  for (size_t l = 0; l < md->layers; l++)
    block(md, &md->layer[l], r, hidden, n, pos0, kc[l], vc[l], cap);
  layernorm(n, d, hidden, md->lnf_g, md->lnf_b, r->h);
  unembed(n, r->h, md, logits);
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f) {
  fprintf(f, "usage: gpt [--gpt3-geometry] [--prompt N] [--generate N] "
             "[--threads N] [--seed S] [--dump FILE]\n");
}

static unsigned long long number(const char *opt, const char *s,
                                 unsigned long long lo,
                                 unsigned long long hi) {
  char *end;
  unsigned long long v = strtoull(s ? s : "", &end, 0);
  if (!s || !*s || *end || *s == '-' || v < lo || v > hi) {
    fprintf(stderr, "gpt: %s wants a number in [%llu, %llu], got '%s'\n", opt,
            lo, hi, s ? s : "");
    exit(2);
  }
  return v;
}

/* tokens/s readable at both ends: 0.42 and 1150 */
static double rate(double n, double s) { return n / s; }
static int rate_digits(double n, double s) { return n / s < 100 ? 2 : 0; }

static void print_tokens(const char *what, const int32_t *t, size_t n) {
  printf("%s (%zu):", what, n);
  for (size_t i = 0; i < n && i < 24; i++)
    printf(" %d", (int)t[i]);
  printf(n > 24 ? " ...\n" : "\n");
}

/* The --dump file, all little-endian (this machine's order, checked by
 * gpt.py through the magic): "SAGPT001", then 12 int64 (vocab, d_model,
 * heads, d_head, d_mlp, layers, max_pos, prompt, generate, rows, tokens,
 * seed), int32 tokens[tokens], every tensor of model_tensors() in order as
 * float32, then float32 logits[rows][vocab] of the prefill-then-decode run.
 * rows = prompt + generate - 1: every position that was fed. */
static int dump(const char *path, model *md, size_t P, size_t N, uint64_t seed,
                const int32_t *tok, const float *logits) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    perror(path);
    return 1;
  }
  size_t rows = P + N - 1;
  int64_t hdr[12] = {(int64_t)md->vocab,  (int64_t)md->d,
                     (int64_t)md->heads,  (int64_t)md->dh,
                     (int64_t)md->mlp,    (int64_t)md->layers,
                     (int64_t)md->max_pos, (int64_t)P,
                     (int64_t)N,          (int64_t)rows,
                     (int64_t)(P + N),    (int64_t)seed};
  int ok = fwrite("SAGPT001", 1, 8, f) == 8 &&
           fwrite(hdr, sizeof hdr, 1, f) == 1 &&
           fwrite(tok, sizeof *tok, P + N, f) == P + N;
  tensor *t = xmalloc((4 + PER_LAYER * md->layers) * sizeof *t, "tensors");
  size_t nt = model_tensors(md, t);
  for (size_t i = 0; ok && i < nt; i++)
    ok = fwrite(*t[i].p, sizeof(float), t[i].n, f) == t[i].n;
  free(t);
  ok = ok && fwrite(logits, sizeof(float), rows * md->vocab, f) ==
                 rows * md->vocab;
  long bytes = ftell(f);
  if (fclose(f) != 0 || !ok) {
    fprintf(stderr, "gpt: writing %s failed\n", path);
    return 1;
  }
  printf("dump: %s (%.1f MB: geometry, weights, tokens, logits)\n", path,
         (double)bytes / 1e6);
  return 0;
}

int main(int argc, char **argv) {
  int gpt3 = 0;
  size_t P = 0, N = 0;
  int threads = 0;
  uint64_t seed = 1;
  const char *dump_path = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--gpt3-geometry"))
      gpt3 = 1;
    else if (!strcmp(a, "--prompt"))
      P = number(a, v, 1, 1u << 20), i++;
    else if (!strcmp(a, "--generate"))
      N = number(a, v, 1, 1u << 20), i++;
    else if (!strcmp(a, "--threads"))
      threads = (int)number(a, v, 0, 4096), i++;
    else if (!strcmp(a, "--seed"))
      seed = number(a, v, 0, UINT64_MAX), i++;
    else if (!strcmp(a, "--dump") && v)
      dump_path = v, i++;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else {
      usage(stderr);
      return 2;
    }
  }

  model md = {0};
  if (gpt3) {
    /* GPT-3 175B's attention: 96 heads of 128, d_model 12,288, for one
     * layer. The 4x MLP stays (4.8 GB of its 7.2 GB of weights): it fits
     * in memory and only costs time. The vocabulary stays small: 50,257
     * rows would add 2.5 GB and nothing to the attention. */
    md = (model){.vocab = 512, .d = 12288, .heads = 96, .dh = 128,
                 .mlp = 4 * 12288, .layers = 1};
    P = P ? P : 8, N = N ? N : 4;
  } else {
    md = (model){.vocab = 512, .d = 256, .heads = 8, .dh = 32, .mlp = 4 * 256,
                 .layers = 2};
    P = P ? P : 16, N = N ? N : 32;
  }
  /* The last generated token is never fed back (nothing left to predict),
   * so T = P + N - 1 positions go through the model. */
  size_t T = P + N - 1, d = md.d, HD = md.heads * md.dh, V = md.vocab;
  md.max_pos = T;

  sa_context *ctx;
  sa_context_options o;
  sa_context_options_init(&o);
  o.num_threads = threads; /* 0: SIMDATTN_NUM_THREADS, else one per core */
  sa_status st = sa_context_create(&o, &ctx);
  if (st != SA_OK) {
    fprintf(stderr, "gpt: sa_context_create: %s (%s)\n", sa_status_str(st),
            sa_last_error());
    return 1;
  }
#ifdef GPT_CBLAS
  const char *mm = "cblas_sgemm";
#else
  const char *mm = "plain C loop";
#endif
  printf("simdattn %s, kernel set %s, %d thread(s); matmuls: %s\n",
         sa_version_string(), sa_context_kernel_set(ctx)->name,
         sa_context_num_threads(ctx), mm);

  /* weights */
  double t0 = now();
  md.layer = xmalloc(md.layers * sizeof *md.layer, "layers");
  tensor *t = xmalloc((4 + PER_LAYER * md.layers) * sizeof *t, "tensors");
  size_t nt = model_tensors(&md, t), params = 0;
  for (size_t i = 0; i < nt; i++) {
    *t[i].p = floats(t[i].n, "weights");
    fill_uniform(*t[i].p, t[i].n, seed, i + 1, t[i].center, t[i].half);
    params += t[i].n;
  }
  printf("geometry: d_model %zu = %zu heads x d_head %zu, MLP %zu, %zu "
         "layer(s), vocab %zu, %zu positions; %.1fM parameters (%.0f MB), "
         "seed %" PRIu64 ", made in %.2f s\n",
         d, md.heads, md.dh, md.mlp, md.layers, V, md.max_pos,
         (double)params / 1e6, (double)params * 4 / 1e6, seed, now() - t0);

  /* KV caches, preallocated to the longest sequence: a step appends its row
   * in place; sa_attention reads the first len_kv rows through the strides. */
  float **kc = xmalloc(4 * md.layers * sizeof *kc, "caches");
  float **vc = kc + md.layers, **kr = vc + md.layers, **vr = kr + md.layers;
  for (size_t l = 0; l < md.layers; l++) {
    kc[l] = floats(T * HD, "KV cache"), vc[l] = floats(T * HD, "KV cache");
    kr[l] = floats(T * HD, "K/V"), vr[l] = floats(T * HD, "K/V");
  }
  size_t scratch = d > HD ? d : HD;
  run r = {.ctx = ctx};
  r.h = floats(T * d, "scratch"), r.q = floats(T * HD, "scratch");
  r.att = floats(T * HD, "scratch"), r.tmp = floats(T * scratch, "scratch");
  r.ff = floats(T * (md.mlp > d ? md.mlp : d), "scratch");

  int32_t *tok = xmalloc((P + N) * sizeof *tok, "tokens");
  uint64_t s = seed ^ 0x70726f6d7074u; /* the prompt: random token ids */
  for (size_t i = 0; i < P; i++)
    tok[i] = (int32_t)(splitmix(&s) % V);
  float *hid = floats(T * d, "hidden"), *logits = floats(T * V, "logits");

  /* prefill: the whole prompt in one pass, logits for every prompt row */
  double t_pre = now();
  forward(&md, &r, tok, P, 0, kc, vc, T, hid, logits);
  tok[P] = (int32_t)argmax(logits + (P - 1) * V, V);
  t_pre = now() - t_pre;
  double attn_pre = r.t_attn;

  /* decode: one token a step, its K/V appended to the cache */
  double t_dec = now();
  for (size_t p = P; p < T; p++) {
    forward(&md, &r, tok + p, 1, p, kc, vc, T, hid + p * d, logits + p * V);
    tok[p + 1] = (int32_t)argmax(logits + p * V, V);
  }
  t_dec = now() - t_dec;
  double attn_dec = r.t_attn - attn_pre;

  printf("OV circuit: per-head value-down/value-up vs concat(heads) W_O: "
         "max |diff| %.3g (tol %.3g)\n",
         (double)r.ov_diff, (double)r.ov_tol);
  print_tokens("prompt", tok, P);
  print_tokens("generated", tok + P, N);
  printf("prefill: %zu tokens in %.2f ms = %.*f tokens/s (attention %.0f%%)\n",
         P, t_pre * 1e3, rate_digits((double)P, t_pre), rate((double)P, t_pre),
         100 * attn_pre / t_pre);
  if (N > 1)
    printf("decode:  %zu tokens in %.2f ms = %.*f tokens/s, %.3f ms/token "
           "(attention %.0f%%)\n",
           N - 1, t_dec * 1e3, rate_digits((double)(N - 1), t_dec),
           rate((double)(N - 1), t_dec), t_dec * 1e3 / (double)(N - 1),
           100 * attn_dec / t_dec);

  /* Recompute from scratch: the whole fed sequence in one pass, no cache
   * from before (fresh K/V buffers). Same math, other summation orders
   * (attention tiles over other key blocks), so equal up to rounding.
   *
   * Tolerance: reordering an fp32 sum of K terms of order one moves it by
   * about sqrt(K) eps (random-walk rounding, eps = 2^-23). A layer chains
   * four such sums (projection, attention, up-projection, MLP) of at most
   * K = d_mlp terms, the unembedding adds one more, and LayerNorm keeps the
   * stream at order one so errors add rather than multiply: about
   * 4 sqrt(K) (layers + 1) eps relative, times a safety factor of 2:
   * 8 sqrt(K) (layers + 1) eps times the largest magnitude (768 ulps for
   * the default geometry). */
  float *hid2 = floats(T * d, "hidden"), *logits2 = floats(T * V, "logits");
  r.t_attn = 0;
  double t_re = now();
  forward(&md, &r, tok, T, 0, kr, vr, T, hid2, logits2);
  t_re = now() - t_re;
  float ulps = 8.0f * sqrtf((float)md.mlp) * (float)(md.layers + 1);
  float tol_l = ulps * FLT_EPSILON * fmaxf(1.0f, max_abs(logits2, T * V));
  float tol_h = ulps * FLT_EPSILON * fmaxf(1.0f, max_abs(hid2, T * d));
  float dl = max_abs_diff(logits, logits2, T * V);
  float dh = max_abs_diff(hid, hid2, T * d);
  size_t same = 0;
  for (size_t p = P - 1; p < T; p++)
    same += argmax(logits2 + p * V, V) == (size_t)tok[p + 1];
  int ok = dl <= tol_l && dh <= tol_h && r.ov_diff <= r.ov_tol;
  printf("check: prefill+decode vs recomputing all %zu positions (%.2f ms): "
         "logits max |diff| %.3g (tol %.3g), hidden max |diff| %.3g "
         "(tol %.3g), greedy tokens %zu/%zu the same: %s\n",
         T, t_re * 1e3, (double)dl, (double)tol_l, (double)dh, (double)tol_h,
         same, N, ok ? "ok" : "MISMATCH");

  int rc = ok ? 0 : 1;
  if (dump_path && dump(dump_path, &md, P, N, seed, tok, logits))
    rc = 1;

  for (size_t i = 0; i < nt; i++)
    free(*t[i].p);
  for (size_t l = 0; l < md.layers; l++)
    free(kc[l]), free(vc[l]), free(kr[l]), free(vr[l]);
  free(t), free(kc), free(md.layer), free(r.h), free(r.q), free(r.att), free(r.tmp), free(r.ff);
  free(tok), free(hid), free(logits), free(hid2), free(logits2);
  sa_context_destroy(ctx);
  return rc;
}
