/*
 * attn/<algo>/<set>/<shape>: whole attention through sa_attention, one
 * context per kernel set (sa_context_options.isa = the set's name,
 * num_threads = --sa_threads), algorithm three_pass or fused; and
 * attn/gemm/openblas/<shape>, the baseline a user would write.
 *
 * Counters (per call; rates over the measured time, see sa_bench_timing):
 *   flops        4 * d * (visible (query, key) pairs) * heads_q, summed over
 *                the batch, with
 *                d = dim_qk = dim_v: 2*d for a score, 2*d for its share of
 *                P.V. Without a mask every pair is visible (4*Lq*Lk*d per
 *                head); under a causal mask only the pairs the mask lets
 *                through count (L*(L+1)/2 for Lq = Lk), so a kernel that skips
 *                masked blocks is not credited for work it does not do, and
 *                one that computes them all (the OpenBLAS row) is not either.
 *                The same holds for a window and for padded keys.
 *                exp and the normalisation are not counted.
 *   GFLOPS       flops / time;  pct_peak: % of the peak probe of the set's
 *                ISA (OpenBLAS: of the best probe), times --sa_threads
 *   GBps         decode shapes only: bytes of K and V read per call / time;
 *                pct_peak_bw: % of the streaming-read probe
 *   max_abs_err  max |O - O_oracle| over the whole output, O_oracle from the
 *                scalar set (three_pass) on the same inputs; computed once,
 *                outside the timed loop
 *
 * Decode shapes (the batched and paged ones too) rotate through copies of K
 * and V spanning 512 MiB (quick 64 MiB; at least twice the last-level
 * cache), so every call reads its KV cache from memory as a real decoder
 * does; the others
 * keep one copy (a head's K and V stay in cache across query blocks, as in a
 * real prefill).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "kernels/prefetch.h"

/* PADDED: a batch whose items have 4/4, 3/4, ... of len_kv valid keys,
 * given as an additive [batch, 1, 1, len_kv] mask of 0 and -inf (how HF
 * models pass padding); WINDOW: causal with a left window of `window` keys;
 * SOFTCAP: prefill with softcap 50. */
/* Serving layouts: MIXED, a decode batch of 8 whose caches hold 1/8 .. 8/8
 * of len_kv keys (len_kv_valid), contiguous (head-major, and token-major:
 * "_blhd"); PAGED, the same in a paged
 * cache of `page` keys a page, pages shuffled; VARLEN, 8 causal prefill
 * sequences of 100 .. 2000 tokens packed end to end (cu_seqlens), beside
 * the same tokens as 8 separate calls (VARLEN_SPLIT) and padded to the
 * longest (VARLEN_PAD: [8, 2000] with len_kv_valid). */
enum {
  PREFILL,
  CAUSAL,
  DECODE,
  CROSS,
  PADDED,
  WINDOW,
  SOFTCAP,
  MIXED,
  PAGED,
  VARLEN,
  VARLEN_SPLIT,
  VARLEN_PAD
};
#define NSEQ 8

typedef struct shape {
  char name[64];
  int kind;
  size_t batch, hq, hkv, lq, lkv, d;
  size_t window;
  size_t page;      /* PAGED */
  sa_dtype qt, kvt; /* Q and O; K and V (f32 unless a row says) */
  char summary[48]; /* its name in summary.csv, "" if not there */
  size_t ref_elems; /* O elements checked against the oracle (0: all) */
  int blhd;         /* MIXED: K and V token-major, [B, L, H, D] */
} shape;

#define MAX_SHAPES 32
static shape shapes[MAX_SHAPES];
static size_t n_shapes;
static float *refs[MAX_SHAPES]; /* the oracle's output, once per shape */

static void add_shape(int kind, size_t hq, size_t hkv, size_t lq, size_t lkv,
                      size_t d) {
  shape *s = &shapes[n_shapes++];
  *s =
      (shape){"", kind, 1, hq, hkv, lq, lkv, d, 0, 0, SA_F32, SA_F32, "", 0, 0};
  switch (kind) {
  case PREFILL:
    snprintf(s->name, sizeof s->name, "L%zu_d%zu_h%zu", lq, d, hq);
    break;
  case CAUSAL:
    snprintf(s->name, sizeof s->name, "L%zu_d%zu_h%zu_causal", lq, d, hq);
    break;
  case DECODE:
    snprintf(s->name, sizeof s->name, "decode_Lk%zu_d%zu_h%zukv%zu", lkv, d, hq,
             hkv);
    break;
  case PADDED:
    s->batch = 4;
    snprintf(s->name, sizeof s->name, "L%zu_d%zu_h%zu_b4_padded", lq, d, hq);
    break;
  case WINDOW:
    s->window = lq >= 4096 ? 1024 : lq / 4; /* full suite: one window */
    snprintf(s->name, sizeof s->name, "L%zu_d%zu_h%zu_window%zu", lq, d, hq,
             s->window);
    break;
  case SOFTCAP:
    snprintf(s->name, sizeof s->name, "L%zu_d%zu_h%zu_softcap", lq, d, hq);
    break;
  case MIXED:
  case PAGED:
    s->batch = NSEQ;
    s->page = kind == PAGED ? lq : 0; /* lq carries the page size */
    s->lq = 1;
    if (kind == MIXED)
      snprintf(s->name, sizeof s->name, "decode_b8_mixed_Lk%zu_d%zu_h%zukv%zu",
               lkv, d, hq, hkv);
    else
      snprintf(s->name, sizeof s->name,
               "decode_b8_mixed_Lk%zu_d%zu_h%zukv%zu_page%zu", lkv, d, hq, hkv,
               s->page);
    break;
  case VARLEN:
  case VARLEN_SPLIT:
  case VARLEN_PAD:
    s->batch = NSEQ;
    snprintf(s->name, sizeof s->name, "prefill_8seq_L100-%zu_d%zu_h%zu_%s", lq,
             d, hq,
             kind == VARLEN         ? "varlen"
             : kind == VARLEN_SPLIT ? "separate"
                                    : "padded");
    break;
  default:
    snprintf(s->name, sizeof s->name, "cross_Lq%zu_Lk%zu_d%zu_h%zu", lq, lkv, d,
             hq);
  }
}

/* The last shape with narrow tensors: Q and O of type qt, K and V of kvt
 * ("_f16", "_bf16", "_q8_0" on its name: the KV type, or "_bf16" for all). */
static void typed(sa_dtype qt, sa_dtype kvt) {
  shape *s = &shapes[n_shapes - 1];
  s->qt = qt;
  s->kvt = kvt;
  size_t n = strlen(s->name);
  snprintf(s->name + n, sizeof s->name - n, "_%s%s", sa_dtype_name(kvt),
           qt == SA_F32 ? "kv" : "");
}

/* The last shape with K and V token-major ([B, L, H, D], "_blhd"): how
 * llama.cpp-style caches and ragged [tokens, H, D] ones lie. */
static void token_major(void) {
  shape *s = &shapes[n_shapes - 1];
  s->blhd = 1;
  size_t n = strlen(s->name);
  snprintf(s->name + n, sizeof s->name - n, "_blhd");
}

/* Puts the last shape (f32, batch 1, one of the four basic kinds) in
 * summary.csv, under a name that says what it is: prefill-L2048-d128[-h8]
 * (no -h: one head), causal-L2048-d128-h8, decode-L4096-h32-kv8 (or -mha
 * when every query head has its own KV head), cross-Lq77-L4096. The row's
 * label carries it into the JSON. */
static void summary(void) {
  shape *s = &shapes[n_shapes - 1];
  char h[24] = "";
  if (s->hq > 1)
    snprintf(h, sizeof h, "-h%zu", s->hq);
  switch (s->kind) {
  case PREFILL:
  case CAUSAL:
    snprintf(s->summary, sizeof s->summary, "%s-L%zu-d%zu%s",
             s->kind == PREFILL ? "prefill" : "causal", s->lq, s->d, h);
    break;
  case DECODE:
    if (s->hq == s->hkv)
      snprintf(s->summary, sizeof s->summary, "decode-L%zu-h%zu-mha", s->lkv,
               s->hq);
    else
      snprintf(s->summary, sizeof s->summary, "decode-L%zu-h%zu-kv%zu", s->lkv,
               s->hq, s->hkv);
    break;
  default:
    snprintf(s->summary, sizeof s->summary, "cross-Lq%zu-L%zu", s->lq, s->lkv);
  }
}

/* Keys of sequence b in MIXED/PAGED (1/8 .. 8/8 of len_kv), or its length in
 * the VARLEN kinds (100 .. len_q, evenly spaced). */
static size_t seq_len(const shape *s, size_t b) {
  if (s->kind == MIXED || s->kind == PAGED)
    return s->lkv * (b + 1) / NSEQ;
  return 100 + (s->lq - 100) * b / (NSEQ - 1);
}

/* Valid keys of batch item b of a PADDED shape. */
static size_t padded_len(const shape *s, size_t b) {
  return s->lkv * (s->batch - b) / s->batch;
}

typedef struct layout_data {
  const float *pad;
  int64_t lens[NSEQ];
  int32_t cu[NSEQ + 1];
  int32_t *table;
  size_t pages;
} layout_data;

static sa_attention_desc desc_of(const shape *s, sa_algorithm algo,
                                 const layout_data *ld) {
  sa_attention_desc d;
  sa_attention_desc_init(&d);
  d.batch = s->batch;
  d.heads_q = s->hq;
  d.heads_kv = s->hkv;
  d.len_q = s->lq;
  d.len_kv = s->lkv;
  d.dim_qk = s->d;
  d.dim_v = s->d;
  d.scale = 0.0f; /* 1/sqrt(d) */
  d.mask = s->kind == CAUSAL || s->kind == WINDOW ? SA_MASK_CAUSAL_TOP_LEFT
                                                  : SA_MASK_NONE;
  d.algorithm = algo;
  d.q_type = d.o_type = s->qt;
  d.k_type = d.v_type = s->kvt;
  if (s->kind == PADDED) {
    d.mask_add = ld->pad;
    d.mask_add_layout = (sa_mask_layout){s->lkv, 0, 0, 1, 0};
  }
  if (s->kind == WINDOW) {
    d.window = 1;
    d.window_left = (int64_t)s->window;
    d.window_right = -1;
  }
  if (s->kind == SOFTCAP)
    d.softcap = 50.0f;
  if (s->kind == MIXED || s->kind == PAGED)
    d.len_kv_valid = ld->lens;
  if (s->blhd) {
    sa_strides t = {s->lkv * s->hkv * s->d, s->d, s->hkv * s->d};
    d.k = d.v = t;
  }
  if (s->kind == PAGED) {
    d.block_table = ld->table;
    d.block_table_stride = s->lkv / s->page;
    d.page_size = s->page;
    d.num_pages = ld->pages;
    d.algorithm = SA_ALGO_FUSED;
  }
  if (s->kind >= VARLEN) {
    d.mask = SA_MASK_CAUSAL_TOP_LEFT;
    d.len_kv = s->lq;
    sa_strides tok = {s->lq * s->hq * s->d, s->d, s->hq * s->d};
    d.q = d.k = d.v = d.o = tok; /* [B, L, H, D]; ragged: [tokens, H, D] */
    if (s->kind == VARLEN) {
      d.cu_seqlens_q = d.cu_seqlens_kv = ld->cu;
      d.q.batch = d.k.batch = d.v.batch = d.o.batch = 0;
    }
    if (s->kind == VARLEN_PAD)
      d.len_kv_valid = ld->lens;
  }
  return d;
}

/* (query, key) pairs the masks let through, for one head, whole batch. */
static double visible_pairs(const shape *s) {
  double n = 0;
  for (size_t b = 0; b < s->batch; b++)
    for (size_t i = 0; i < s->lq; i++) {
      size_t see = s->lkv;
      if (s->kind == CAUSAL || s->kind == WINDOW)
        see = i + 1 < s->lkv ? i + 1 : s->lkv;
      if (s->kind == WINDOW && see > s->window + 1)
        see = s->window + 1;
      if (s->kind == PADDED)
        see = padded_len(s, b);
      if (s->kind == MIXED || s->kind == PAGED)
        see = seq_len(s, b);
      if (s->kind >= VARLEN) /* the real tokens' pairs only */
        see = i < seq_len(s, b) ? i + 1 : 0;
      n += (double)see;
    }
  return n;
}

static double flops_of(const shape *s) {
  return 2.0 * (double)(s->d + s->d) * visible_pairs(s) * (double)s->hq;
}

/* A summary shape whose oracle call would take over a second (~3 GFLOP/s).
 * These time only each ISA's most accurate exp (no oracle rows, no rows
 * of the SLEEF sets: they would cost minutes of make compare), and check the
 * error on the first KV head's query heads, so the oracle's reference
 * costs one head. */
static int big(const shape *s) { return s->summary[0] && flops_of(s) > 4e9; }

/* ---------------------------------------------------------------- data */

typedef struct shape_data {
  int idx;
  float *q, *k, *v, *o, *s, *pad; /* q, k, v, o in the shape's types */
  size_t q_elems, kv_elems, o_elems, copies;
  size_t kv_bytes; /* one copy of K (or V) */
  float *wide;     /* a narrow O widened, to measure its error */
  layout_data ld;
} shape_data;

static shape_data cur = {.idx = -1};

/* K and V of every shape live in two pools that only grow, sized for the
 * decode rows' copies at the first decode row, so those copies (the
 * run's decode_bytes) are allocated and written once per run rather than
 * once per row; a run without decode rows never asks for them. Each decode
 * row still reads its copies until they settle before it is timed (see
 * bm_attention): on this project's Zen 5 VM a row timed right after its
 * copies were written once ran up to 10 times slow (most of that was the
 * probe's huge pages: bench/peak_mem.c). */
static float *kv_pool[2];
static size_t kv_pool_floats;

static void kv_from_pool(size_t floats, float **k, float **v) {
  if (floats > kv_pool_floats) {
    sa_bench_free(kv_pool[0]);
    sa_bench_free(kv_pool[1]);
    kv_pool[0] = sa_bench_alloc(floats);
    kv_pool[1] = sa_bench_alloc(floats);
    kv_pool_floats = floats;
  }
  *k = kv_pool[0];
  *v = kv_pool[1];
}

/* The current shape's inputs; switching shapes frees the previous one's. */
static shape_data *data_for(int idx) {
  if (cur.idx == idx)
    return &cur;
  sa_bench_free(cur.q);
  sa_bench_free(cur.o);
  sa_bench_free(cur.s);
  sa_bench_free(cur.pad);
  sa_bench_free(cur.wide);
  free(cur.ld.table);
  const shape *s = &shapes[idx];
  cur = (shape_data){.idx = idx, .copies = 1};
  cur.q_elems = s->batch * s->hq * s->lq * s->d;
  cur.kv_elems = s->batch * s->hkv * s->lkv * s->d;
  cur.o_elems = s->batch * s->hq * s->lq * s->d;
  layout_data *ld = &cur.ld;
  if (s->kind == MIXED || s->kind == PAGED || s->kind == VARLEN_PAD)
    for (size_t b = 0; b < NSEQ; b++)
      ld->lens[b] = (int64_t)seq_len(s, b);
  if (s->kind == PAGED) {
    /* room for every sequence's full length, in shuffled order */
    ld->pages = s->batch * (s->lkv / s->page);
    ld->table = malloc(ld->pages * sizeof(int32_t));
    if (!ld->table)
      abort();
    for (size_t i = 0; i < ld->pages; i++)
      ld->table[i] = (int32_t)((i * 7919) % ld->pages);
  }
  if (s->kind == VARLEN || s->kind == VARLEN_SPLIT) {
    ld->cu[0] = 0;
    for (size_t b = 0; b < NSEQ; b++)
      ld->cu[b + 1] = ld->cu[b] + (int32_t)seq_len(s, b);
    cur.q_elems = cur.kv_elems = cur.o_elems =
        (size_t)ld->cu[NSEQ] * s->hq * s->d;
  }
  cur.kv_bytes = sa_dtype_bytes(s->kvt, cur.kv_elems);
  /* every decode kind reads its cache from memory, as a decoder does */
  const int decoding =
      s->kind == DECODE || s->kind == MIXED || s->kind == PAGED;
  if (decoding) {
    cur.copies = sa_bench_cfg.decode_bytes / (2 * cur.kv_bytes);
    if (cur.copies < 1)
      cur.copies = 1;
  }
  /* every tensor filled in f32, then rounded to its type */
  size_t kv_floats = (cur.kv_bytes * cur.copies + 3) / 4;
  cur.q = sa_bench_alloc(cur.q_elems);
  /* a decode row asks for every decode row's size, so the pools grow once */
  size_t decode_floats =
      decoding ? sa_bench_cfg.decode_bytes / 2 / sizeof(float) + 16 : 0;
  kv_from_pool(kv_floats > decode_floats ? kv_floats : decode_floats, &cur.k,
               &cur.v);
  cur.o = sa_bench_alloc(cur.o_elems);
  float *tmp =
      sa_bench_alloc(cur.kv_elems > cur.q_elems ? cur.kv_elems : cur.q_elems);
  sa_bench_fill(tmp, cur.q_elems, 11, 1.0f);
  sa_convert(s->qt, cur.q, SA_F32, tmp, cur.q_elems);
  sa_bench_fill(tmp, cur.kv_elems, 12, 1.0f);
  sa_convert(s->kvt, cur.k, SA_F32, tmp, cur.kv_elems);
  sa_bench_fill(tmp, cur.kv_elems, 13, 1.0f);
  sa_convert(s->kvt, cur.v, SA_F32, tmp, cur.kv_elems);
  sa_bench_free(tmp);
  if (s->qt != SA_F32)
    cur.wide = sa_bench_alloc(cur.o_elems);
  if (s->kind == PADDED) {
    cur.pad = sa_bench_alloc(s->batch * s->lkv);
    for (size_t b = 0; b < s->batch; b++)
      for (size_t j = 0; j < s->lkv; j++)
        cur.pad[b * s->lkv + j] = j < padded_len(s, b) ? 0.0f : -INFINITY;
    cur.ld.pad = cur.pad;
  }
  for (size_t c = 1; c < cur.copies; c++) {
    memcpy((char *)cur.k + c * cur.kv_bytes, cur.k, cur.kv_bytes);
    memcpy((char *)cur.v + c * cur.kv_bytes, cur.v, cur.kv_bytes);
  }
  return &cur;
}

/* O as f32: itself, or widened into sd->wide. */
static const float *o_as_f32(const shape *s, shape_data *sd, const void *o) {
  if (s->qt == SA_F32)
    return o;
  sa_convert(SA_F32, sd->wide, s->qt, o, sd->o_elems);
  return sd->wide;
}

/* ---------------------------------------------------------------- contexts */

static sa_context *contexts[64], *contexts_mt[64];

/* ks's context of `threads` workers in table (one a set), made once. */
/* The pairs' other-thread-count contexts keep their workers awake through
 * the other side's call, as back-to-back calls do: left to the default spin
 * (100 us) they would sleep through it and each timed call would pay their
 * wake-up, 60-110 us on the Zen 5 VM (simdattn_call_overhead's idle rows). */
#define PAIR_SPIN_US 50000

static sa_context *context_in(sa_context **table, const sa_kernel_set *ks,
                              int threads) {
  size_t i = 0;
  while (i < sa_kernel_set_count() && sa_kernel_set_at(i) != ks)
    i++;
  if (i >= 64)
    return NULL;
  if (!table[i]) {
    sa_context_options o;
    sa_context_options_init(&o);
    o.isa = ks->name;
    o.num_threads = threads;
    o.spin_us = table == contexts_mt ? PAIR_SPIN_US : 0;
    if (sa_context_create(&o, &table[i]) != SA_OK)
      table[i] = NULL;
  }
  return table[i];
}

/* ks's context of the run's threads. */
static sa_context *context_for(const sa_kernel_set *ks) {
  return context_in(contexts, ks, sa_bench_cfg.threads);
}

/* One measured call; VARLEN_SPLIT is its sequences one call each. */
static sa_status call(sa_context *ctx, const shape *s,
                      const sa_attention_desc *d, const shape_data *sd,
                      const void *k, const void *v, float *o) {
  if (s->kind != VARLEN_SPLIT)
    return sa_attention(ctx, d, sd->q, k, v, o);
  for (size_t b = 0; b < NSEQ; b++) {
    sa_attention_desc one = *d;
    size_t at = (size_t)sd->ld.cu[b] * s->hq * s->d;
    one.batch = 1;
    one.len_q = one.len_kv = seq_len(s, b);
    sa_status st = sa_attention(ctx, &one, sd->q + at, (const float *)k + at,
                                (const float *)v + at, o + at);
    if (st != SA_OK)
      return st;
  }
  return SA_OK;
}

static const float *ensure_ref(int idx, shape_data *sd) {
  if (refs[idx])
    return refs[idx];
  sa_context *ctx = context_for(sa_bench_oracle());
  shape *s = &shapes[idx];
  sa_attention_desc d = desc_of(s, SA_ALGO_THREE_PASS, &sd->ld);
  if (big(s)) { /* batch 1: the first group's heads lead Q and O */
    d.heads_q = s->hq / s->hkv;
    d.heads_kv = 1;
    s->ref_elems = d.heads_q * s->lq * s->d;
  }
  float *r = sa_bench_alloc(sd->o_elems);
  if (!ctx || call(ctx, &shapes[idx], &d, sd, sd->k, sd->v, r) != SA_OK) {
    sa_bench_free(r);
    return NULL;
  }
  if (shapes[idx].qt != SA_F32) /* widened in place: f32 needs the room */
    memcpy(r, o_as_f32(&shapes[idx], sd, r), sd->o_elems * sizeof(float));
  refs[idx] = r;
  return r;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - (double)b[i]);
    if (!(e <= m)) /* NaN wins */
      m = e;
  }
  return m;
}

/* ---------------------------------------------------------------- rows */

#ifdef SA_BENCH_HAVE_ONEDNN
/* The oneDNN primitives of one shape, made outside the timed loop; a new
 * shape replaces them (shapes run one after another). */
static sa_onednn_attn *dnnl_attn;
static int dnnl_shape = -1;

static sa_onednn_attn *onednn_for(int idx, const sa_attention_desc *d,
                                  char *err, size_t len) {
  if (dnnl_shape != idx) {
    sa_onednn_destroy(dnnl_attn);
    dnnl_attn = sa_onednn_create(d, err, len);
    dnnl_shape = dnnl_attn ? idx : -1;
  }
  return dnnl_attn;
}
#endif

enum { KERNELS, OPENBLAS, ONEDNN };

typedef struct attn_arg {
  int shape;
  int what;                /* KERNELS (a kernel set) or a baseline */
  const sa_kernel_set *ks; /* KERNELS: the set */
  sa_algorithm algo;
  int have_err;
  double err;
  int warmed; /* its copies were read until settled (once per row) */
} attn_arg;

/* One call of the row on copy c of K and V; SA_ERR_BAD_ARGUMENT stands for a
 * oneDNN primitive that failed (reported as oneDNN's). */
static sa_status run_copy(const attn_arg *a, const shape *s, sa_context *ctx,
                          const sa_attention_desc *desc, shape_data *sd,
                          void *dnnl, size_t c) {
  const void *k = (const char *)sd->k + c * sd->kv_bytes;
  const void *v = (const char *)sd->v + c * sd->kv_bytes;
  (void)dnnl;
  if (a->what == KERNELS)
    return call(ctx, s, desc, sd, k, v, sd->o);
#ifdef SA_BENCH_HAVE_OPENBLAS
  if (a->what == OPENBLAS)
    sa_openblas_attention(desc, sd->q, (const float *)k, (const float *)v,
                          sd->o, sd->s);
#endif
#ifdef SA_BENCH_HAVE_ONEDNN
  if (a->what == ONEDNN &&
      sa_onednn_run(dnnl, sd->q, (const float *)k, (const float *)v, sd->o))
    return SA_ERR_BAD_ARGUMENT;
#endif
  return SA_OK;
}

static void bm_attention(sa_bench_state *st, void *argp) {
  attn_arg *a = argp;
  const shape *s = &shapes[a->shape];
  shape_data *sd = data_for(a->shape);
  sa_attention_desc desc = desc_of(s, a->algo, &sd->ld);
  const sa_kernel_set *oracle = sa_bench_oracle();
  /* The oracle's own three_pass row produces the reference as it runs. */
  int makes_ref =
      a->ks == oracle && a->algo == SA_ALGO_THREE_PASS && !refs[a->shape];
  sa_context *ctx = NULL;
  if (a->what == KERNELS && !(ctx = context_for(a->ks))) {
    sa_bench_skip_with_error(st, "sa_context_create failed");
    return;
  }
#ifdef SA_BENCH_HAVE_OPENBLAS
  if (a->what == OPENBLAS && !sd->s)
    sd->s = sa_bench_alloc(s->lq * s->lkv);
#endif
  void *dnnl = NULL; /* oneDNN's primitives for its row */
#ifdef SA_BENCH_HAVE_ONEDNN
  if (a->what == ONEDNN) {
    char err[200];
    if (!(dnnl = onednn_for(a->shape, &desc, err, sizeof err))) {
      sa_bench_skip_with_error(st, err);
      return;
    }
  }
#endif
  if (!a->have_err && !makes_ref && !ensure_ref(a->shape, sd)) {
    sa_bench_skip_with_error(st, "the oracle failed on this shape");
    return;
  }

  sa_status rc = SA_OK;
  /* Untimed passes over every copy until two in a row take about the same
   * time (within 5%), or 8 passes, or a second of them: see kv_from_pool
   * for why. Once per row: Google Benchmark calls a row several times as
   * it sizes its run. */
  double warm_start = sa_bench_now(), prev = -1, t0 = warm_start;
  for (int pass = 0; !a->warmed && sd->copies > 1 && pass < 8; pass++) {
    for (size_t c = 0; c < sd->copies; c++)
      (void)run_copy(a, s, ctx, &desc, sd, dnnl, c);
    double t1 = sa_bench_now(), t = t1 - t0;
    if ((prev >= 0 && fabs(t - prev) <= 0.05 * prev) || t1 - warm_start > 1.0)
      break;
    prev = t;
    t0 = t1;
  }
  a->warmed = 1;
  size_t it = 0;
  while (sa_bench_keep_running(st)) {
    sa_status r = run_copy(a, s, ctx, &desc, sd, dnnl, it++ % sd->copies);
    if (r != SA_OK)
      rc = r;
    sa_bench_clobber_memory();
  }
  if (rc != SA_OK) {
    char msg[300];
    if (a->what == ONEDNN)
      snprintf(msg, sizeof msg, "oneDNN: a primitive failed to execute");
    else
      snprintf(msg, sizeof msg, "sa_attention: %s %s", sa_status_str(rc),
               sa_last_error());
    sa_bench_skip_with_error(st, msg);
    return;
  }

  const float *o32 = o_as_f32(s, sd, sd->o);
  if (makes_ref) {
    refs[a->shape] = sa_bench_alloc(sd->o_elems);
    memcpy(refs[a->shape], o32, sd->o_elems * sizeof(float));
  }
  if (!a->have_err) {
    a->err = max_abs_diff(o32, refs[a->shape],
                          s->ref_elems ? s->ref_elems : sd->o_elems);
    a->have_err = 1;
  }

  double iters = (double)sa_bench_iterations(st);
  double flops = flops_of(s);
  sa_bench_counter(st, "flops", flops, SA_BENCH_PLAIN);
  sa_bench_counter(st, "GFLOPS", flops * iters * 1e-9, SA_BENCH_RATE);
  double peak = sa_peak_gflops(a->what == KERNELS ? a->ks->isa : NULL);
  if (peak > 0)
    sa_bench_counter(st, "pct_peak", 100.0 * flops * iters * 1e-9 / peak,
                     SA_BENCH_RATE);
  if (s->kind == DECODE || s->kind == MIXED || s->kind == PAGED) {
    /* the bytes of K and V actually read, in their type */
    double bytes = 2.0 * (double)sd->kv_bytes;
    if (s->kind != DECODE) /* the keys the sequences hold (one query row
                              each: pairs of one head = keys of one head) */
      bytes = visible_pairs(s) * (double)s->hkv *
              (double)sa_dtype_bytes(s->kvt, s->d) * 2;
    sa_bench_set_bytes_processed(st, (int64_t)(bytes * iters));
    sa_bench_counter(st, "GBps", bytes * iters * 1e-9, SA_BENCH_RATE);
    double bw = sa_peak_mem_gbs();
    if (bw > 0)
      sa_bench_counter(st, "pct_peak_bw", 100.0 * bytes * iters * 1e-9 / bw,
                       SA_BENCH_RATE);
  }
  sa_bench_counter(st, "max_abs_err", a->err, SA_BENCH_PLAIN);
  if (s->summary[0]) { /* what summary.csv says of the shape */
    sa_bench_set_label(st, s->summary);
    sa_bench_counter(st, "batch", (double)s->batch, SA_BENCH_PLAIN);
    sa_bench_counter(st, "heads_q", (double)s->hq, SA_BENCH_PLAIN);
    sa_bench_counter(st, "heads_kv", (double)s->hkv, SA_BENCH_PLAIN);
    sa_bench_counter(st, "len_q", (double)s->lq, SA_BENCH_PLAIN);
    sa_bench_counter(st, "len_kv", (double)s->lkv, SA_BENCH_PLAIN);
    sa_bench_counter(st, "dim", (double)s->d, SA_BENCH_PLAIN);
    sa_bench_counter(st, "causal", s->kind == CAUSAL, SA_BENCH_PLAIN);
  }
}

/* ---------------------------------------------------------------- pairs */

/* Two calls timed in turn, iteration by iteration, on the same copy of K
 * and V: shape a over shape b (the same data seen two ways: pages or a
 * contiguous cache, one ragged call or separate ones), or one shape on a
 * 1-thread context over a 2-thread one (split-KV). This machine's memory
 * bandwidth moves by the minute, so a ratio of two rows timed minutes
 * apart says little; the pair's counters are the medians of its two sides
 * (ms_a, ms_b) and their ratio, which make compare's serving.md reads. */
typedef struct pair_arg {
  int a, b;                /* shapes; b's layout data is a's */
  const sa_kernel_set *ks; /* fused */
  int threads_b;           /* 0: the run's context; else b's own threads */
} pair_arg;

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static double median_of(double *t, size_t n) {
  qsort(t, n, sizeof *t, cmp_double);
  return n ? (n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2])) : 0.0;
}

enum { PAIR_SAMPLES = 4096 };

static void bm_pair(sa_bench_state *st, void *argp) {
  pair_arg *a = argp;
  const shape *sa = &shapes[a->a], *sb = &shapes[a->b];
  shape_data *sd = data_for(a->a);
  sa_attention_desc da = desc_of(sa, SA_ALGO_FUSED, &sd->ld);
  sa_attention_desc db = desc_of(sb, SA_ALGO_FUSED, &sd->ld);
  sa_context *ca = context_for(a->ks);
  sa_context *cb =
      a->threads_b ? context_in(contexts_mt, a->ks, a->threads_b) : ca;
  if (!ca || !cb) {
    sa_bench_skip_with_error(st, "sa_context_create failed");
    return;
  }
  /* wall time on both sides when one of them runs on other threads */
  double (*clock)(void) = a->threads_b ? sa_bench_wall_now : sa_bench_now;
  static double ta[PAIR_SAMPLES], tb[PAIR_SAMPLES];
  size_t n = 0, it = 0;
  sa_status rc = SA_OK;
  for (size_t c = 0; c < sd->copies; c++) /* one untimed pass */
    if ((rc = call(ca, sa, &da, sd, (const char *)sd->k + c * sd->kv_bytes,
                   (const char *)sd->v + c * sd->kv_bytes, sd->o)) ||
        (rc = call(cb, sb, &db, sd, (const char *)sd->k + c * sd->kv_bytes,
                   (const char *)sd->v + c * sd->kv_bytes, sd->o)))
      break;
  while (rc == SA_OK && sa_bench_keep_running(st)) {
    size_t c = it++ % sd->copies;
    const void *k = (const char *)sd->k + c * sd->kv_bytes;
    const void *v = (const char *)sd->v + c * sd->kv_bytes;
    /* the sides alternate which goes first */
    int b_first = (int)(it & 1);
    double t0 = clock();
    sa_status r1 = b_first ? call(cb, sb, &db, sd, k, v, sd->o)
                           : call(ca, sa, &da, sd, k, v, sd->o);
    double t1 = clock();
    sa_status r2 = b_first ? call(ca, sa, &da, sd, k, v, sd->o)
                           : call(cb, sb, &db, sd, k, v, sd->o);
    double t2 = clock();
    rc = r1 ? r1 : r2;
    if (n < PAIR_SAMPLES) {
      ta[n] = b_first ? t2 - t1 : t1 - t0;
      tb[n] = b_first ? t1 - t0 : t2 - t1;
      n++;
    }
    sa_bench_clobber_memory();
  }
  if (rc != SA_OK) {
    char msg[300];
    snprintf(msg, sizeof msg, "sa_attention: %s %s", sa_status_str(rc),
             sa_last_error());
    sa_bench_skip_with_error(st, msg);
    return;
  }
  double ma = median_of(ta, n), mb = median_of(tb, n);
  sa_bench_counter(st, "ms_a", ma * 1e3, SA_BENCH_PLAIN);
  sa_bench_counter(st, "ms_b", mb * 1e3, SA_BENCH_PLAIN);
  sa_bench_counter(st, "ratio", mb > 0 ? ma / mb : 0.0, SA_BENCH_PLAIN);
}

/* The pair "pair/<set>/<a>_over_<b>" (b's name; "_1t_over_2t" when b is
 * the same shape on two threads). */
static void add_pair(int ai, int bi, const sa_kernel_set *ks, int threads_b) {
  pair_arg *a = calloc(1, sizeof *a); /* lives until exit */
  if (!a)
    abort();
  *a = (pair_arg){ai, bi, ks, threads_b};
  char name[200];
  if (threads_b)
    snprintf(name, sizeof name, "pair/%s/%.63s_1t_over_%dt", ks->name,
             shapes[ai].name, threads_b);
  else
    snprintf(name, sizeof name, "pair/%s/%.63s_over_%.63s", ks->name,
             shapes[ai].name, shapes[bi].name);
  sa_bench *b = sa_bench_register(name, bm_pair, a);
  sa_bench_set_unit(b, SA_BENCH_MS);
  if (threads_b)
    sa_bench_use_real_time(b);
  else
    sa_bench_timing(b);
}

/* ---------------------------------------------------------- plain reads */

/* What memory allows a paged decode, measured beside it: the K and V rows
 * the paged shape's decode reads and the same rows of the contiguous
 * cache, each read by a plain loop in the order the avx512 decode kernel
 * reads and prefetches them, without its arithmetic. One call a turn: a
 * sequence's KV heads in turns of READ_TURN keys (the driver's turns) when
 * paged, one head's keys whole when contiguous. In a call, chunks of
 * READ_CHUNK keys: the first chunk's K rows, then per chunk c its V rows
 * woven with chunk c + 1's K rows, READ_WEAVE keys of each in turn. Each
 * of the two lanes, K's rows and V's, names a row's every line
 * READ_AHEAD bytes of key pairs ahead (into L1 where the L1D holds 48 KiB,
 * else L2) and touches the page of the row READ_FAR bytes of pairs on, as
 * kernels/avx512/decode.c does. Until 0.11.8 the loop read a chunk's K
 * rows then its V rows, as that kernel did until 0.11.6, into L2, and
 * read slower than the decode itself. The pair
 * "pair/plain-read/<paged>_over_<contiguous>" reports the two medians and
 * their ratio, which serving.md prints under the paged check it bounds. */
enum {
  READ_TURN = 256,
  READ_CHUNK = 128,
  READ_WEAVE = 32,
  READ_AHEAD = 12288,
  READ_FAR = 16384
};

/* Row offsets from K's start, in key order: a call's n K rows (V's are at
 * the same offsets from V's start). calls[i] is call i's first row in off;
 * *ncalls calls, *n rows. */
static size_t *read_order(const shape *s, const layout_data *ld, int paged,
                          size_t row, size_t *n, size_t **calls,
                          size_t *ncalls) {
  size_t total = 0, nc = 0;
  for (size_t b = 0; b < s->batch; b++) {
    size_t len = seq_len(s, b), turn = paged ? READ_TURN : len;
    total += s->hkv * len;
    nc += s->hkv * (len + turn - 1) / (turn ? turn : 1);
  }
  size_t *off = malloc((total ? total : 1) * sizeof *off), x = 0;
  size_t *at = malloc((nc + 1) * sizeof *at), c = 0;
  if (!off || !at)
    abort();
  for (size_t b = 0; b < s->batch; b++) {
    size_t len = seq_len(s, b), turn = paged ? READ_TURN : len;
    for (size_t t0 = 0; t0 < len; t0 += turn)
      for (size_t h = 0; h < s->hkv; h++) {
        at[c++] = x;
        for (size_t j = t0; j < t0 + turn && j < len; j++) {
          size_t r = ((b * s->hkv + h) * s->lkv + j) * row;
          if (paged) {
            size_t pg = (size_t)ld->table[b * (s->lkv / s->page) + j / s->page];
            r = ((pg * s->hkv + h) * s->page + j % s->page) * row;
          }
          off[x++] = r;
        }
      }
  }
  at[c] = x;
  *n = x;
  *calls = at;
  *ncalls = c;
  return off;
}

/* One lane of a call: rows at base + off[0..n), prefetched through pc. */
typedef struct read_lane {
  const char *base;
  const size_t *off;
  size_t n, pc, ahead, far, row;
  int l1;
} read_lane;

/* As the kernel's lane_read: every row up to x + ahead named, each once,
 * and the page of the row far rows on touched. */
static inline void read_lane_to(read_lane *ln, size_t x) {
  for (; ln->pc <= x + ln->ahead && ln->pc < ln->n; ln->pc++) {
    const char *r = ln->base + ln->off[ln->pc];
    for (size_t b = 0; b < ln->row; b += 64)
      sa_prefetch_line(r + b, !ln->l1);
    size_t y = ln->pc + ln->far - ln->ahead;
    if (y < ln->n)
      sa_touch_page(ln->base + ln->off[y], ln->row);
  }
}

typedef unsigned long long read_vec __attribute__((vector_size(16)));

/* Rows [j0, j1) of the lane, read whole. */
static inline void read_lane_rows(read_lane *ln, size_t j0, size_t j1,
                                  read_vec acc[4]) {
  for (size_t j = j0; j < j1 && j < ln->n; j++) {
    read_lane_to(ln, j);
    const char *r = ln->base + ln->off[j];
    for (size_t b = 0; b < ln->row; b += 64)
      for (int w = 0; w < 4; w++) {
        read_vec u;
        memcpy(&u, r + b + 16 * (size_t)w, sizeof u);
        acc[w] += u;
      }
  }
}

/* Every byte of the calls' rows (row bytes each, a multiple of 64). */
static uint64_t read_rows(const char *k, const char *v, const size_t *off,
                          const size_t *calls, size_t ncalls, size_t row,
                          int l1) {
  size_t ahead = READ_AHEAD / (2 * row), far = READ_FAR / (2 * row);
  ahead = ahead < 2 ? 2 : ahead;
  far = far < ahead ? ahead : far;
  read_vec acc[4] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  for (size_t c = 0; c < ncalls; c++) {
    size_t n = calls[c + 1] - calls[c];
    read_lane kl = {k, off + calls[c], n, 0, ahead, far, row, l1};
    read_lane vl = kl;
    vl.base = v;
    read_lane_rows(&kl, 0, READ_CHUNK, acc);
    for (size_t c0 = 0; c0 < n; c0 += READ_CHUNK)
      for (size_t g = c0; g < c0 + READ_CHUNK && g < n; g += READ_WEAVE) {
        read_lane_rows(&kl, g + READ_CHUNK, g + READ_CHUNK + READ_WEAVE, acc);
        read_lane_rows(&vl, g, g + READ_WEAVE < n ? g + READ_WEAVE : n, acc);
      }
  }
  read_vec x = acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
  return x[0] ^ x[1];
}

typedef struct read_arg {
  int paged, contiguous; /* shapes */
} read_arg;

static void bm_read_pair(sa_bench_state *st, void *argp) {
  read_arg *a = argp;
  const shape *s = &shapes[a->paged];
  shape_data *sd = data_for(a->paged);
  const size_t row = sa_dtype_bytes(s->kvt, s->d);
  const int l1 = sa_bench_l1d_bytes() >= (size_t)48 << 10;
  size_t na, nb, nca, ncb, *ca, *cb;
  size_t *oa = read_order(s, &sd->ld, 1, row, &na, &ca, &nca);
  size_t *ob =
      read_order(&shapes[a->contiguous], &sd->ld, 0, row, &nb, &cb, &ncb);
  static double ta[PAIR_SAMPLES], tb[PAIR_SAMPLES];
  size_t n = 0, it = 0;
  volatile uint64_t sink = 0;
  while (sa_bench_keep_running(st)) {
    size_t c = it++ % sd->copies;
    const char *k = (const char *)sd->k + c * sd->kv_bytes;
    const char *v = (const char *)sd->v + c * sd->kv_bytes;
    int b_first = (int)(it & 1);
    double t0 = sa_bench_now();
    sink ^= b_first ? read_rows(k, v, ob, cb, ncb, row, l1)
                    : read_rows(k, v, oa, ca, nca, row, l1);
    double t1 = sa_bench_now();
    sink ^= b_first ? read_rows(k, v, oa, ca, nca, row, l1)
                    : read_rows(k, v, ob, cb, ncb, row, l1);
    double t2 = sa_bench_now();
    if (n < PAIR_SAMPLES) {
      ta[n] = b_first ? t2 - t1 : t1 - t0;
      tb[n] = b_first ? t1 - t0 : t2 - t1;
      n++;
    }
  }
  free(oa);
  free(ob);
  free(ca);
  free(cb);
  double ma = median_of(ta, n), mb = median_of(tb, n);
  sa_bench_counter(st, "ms_a", ma * 1e3, SA_BENCH_PLAIN);
  sa_bench_counter(st, "ms_b", mb * 1e3, SA_BENCH_PLAIN);
  sa_bench_counter(st, "ratio", mb > 0 ? ma / mb : 0.0, SA_BENCH_PLAIN);
  sa_bench_counter(st, "GBps_a",
                   ma > 0 ? (double)(2 * na * row) / ma * 1e-9 : 0.0,
                   SA_BENCH_PLAIN);
  sa_bench_counter(st, "GBps_b",
                   mb > 0 ? (double)(2 * nb * row) / mb * 1e-9 : 0.0,
                   SA_BENCH_PLAIN);
}

/* The plain reads beside each f32 paged decode shape, once per run. */
static void add_read_pairs(void) {
  for (size_t i = 0; i < n_shapes; i++)
    for (size_t j = 0; j < n_shapes; j++) {
      const shape *s = &shapes[i], *o = &shapes[j];
      if (s->kind != PAGED || s->kvt != SA_F32 || o->kind != MIXED || o->blhd ||
          o->kvt != SA_F32 || o->hkv != s->hkv || o->lkv != s->lkv ||
          o->d != s->d || s->lkv % s->page)
        continue;
      read_arg *a = calloc(1, sizeof *a); /* lives until exit */
      if (!a)
        abort();
      *a = (read_arg){(int)i, (int)j};
      char name[200];
      snprintf(name, sizeof name, "pair/plain-read/%.63s_over_%.63s", s->name,
               o->name);
      sa_bench *b = sa_bench_register(name, bm_read_pair, a);
      sa_bench_set_unit(b, SA_BENCH_MS);
      sa_bench_timing(b);
      break;
    }
}

/* The serving checks' pairs, one-thread runs only: each paged shape over
 * the head-major contiguous one of its size, ragged prefill over separate
 * calls, and the longest MQA decode (split-KV) on 1 thread over 2. */
static void add_pairs(const sa_kernel_set *ks) {
  for (size_t i = 0; i < n_shapes; i++) {
    const shape *s = &shapes[i];
    if (s->qt != SA_F32 || s->kvt != SA_F32)
      continue;
    for (size_t j = 0; j < n_shapes; j++) {
      const shape *o = &shapes[j];
      int same = o->hq == s->hq && o->hkv == s->hkv && o->lkv == s->lkv &&
                 o->d == s->d && o->lq == s->lq && o->qt == SA_F32 &&
                 o->kvt == SA_F32;
      if (same && s->kind == PAGED && o->kind == MIXED && !o->blhd)
        add_pair((int)i, (int)j, ks, 0);
      if (same && s->kind == VARLEN && o->kind == VARLEN_SPLIT)
        add_pair((int)i, (int)j, ks, 0);
    }
    if (s->kind == DECODE && s->hkv == 1 && s->batch == 1)
      add_pair((int)i, (int)i, ks, 2);
  }
}

/* Whether no runnable set of ks's ISA has a more accurate exp (since 0.11
 * a SLEEF set has a less accurate one than the polynomial's): by the
 * registry's exp_ulps, not by name. */
static int most_accurate_exp(const sa_kernel_set *ks) {
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *o = sa_kernel_set_at(i);
    if (sa_bench_timed(o) && !strcmp(o->isa, ks->isa) &&
        o->exp_ulps < ks->exp_ulps)
      return 0;
  }
  return 1;
}

/* A row: kernel set ks (what == KERNELS) or a baseline. */
static void add(int shape_idx, int what, const sa_kernel_set *ks,
                sa_algorithm algo) {
  attn_arg *a = calloc(1, sizeof *a); /* lives until exit */
  if (!a)
    abort();
  a->shape = shape_idx;
  a->what = what;
  a->ks = ks;
  a->algo = algo;
  const shape *s = &shapes[shape_idx];
  char name[160];
  if (what == KERNELS)
    snprintf(name, sizeof name, "attn/%s/%s/%.63s",
             algo == SA_ALGO_FUSED ? "fused" : "three_pass", ks->name, s->name);
  else
    snprintf(name, sizeof name, "attn/gemm/%s/%.63s",
             what == OPENBLAS ? "openblas" : "onednn", s->name);
  sa_bench *b = sa_bench_register(name, bm_attention, a);
  sa_bench_set_unit(b, SA_BENCH_MS);
  sa_bench_timing(b);
  /* The oracle is slow (plain C, no FMA, ~3 GFLOP/s): where a call takes
   * half a second or more, one call is the measurement, and one repetition.
   * (Google Benchmark then appends /min_time:0.001/repeats:1 to the name.) */
  if (what == KERNELS && ks->cpu_features == 0 &&
      flops_of(s) / sa_bench_cfg.threads > 1.5e9) {
    sa_bench_set_repetitions(b, 1);
    sa_bench_set_min_time(b, 1e-3);
  }
}

void sa_bench_register_attention(void) {
  if (sa_bench_cfg.quick) {
    add_shape(PREFILL, 2, 2, 256, 256, 64);
    summary();
    add_shape(CAUSAL, 2, 2, 256, 256, 64);
    summary();
    add_shape(DECODE, 8, 2, 1, 1024, 64);
    summary();
    add_shape(CROSS, 2, 2, 77, 512, 64);
    summary();
    add_shape(PADDED, 2, 2, 256, 256, 64);
    add_shape(WINDOW, 2, 2, 512, 512, 64);
    add_shape(SOFTCAP, 2, 2, 256, 256, 64);
    add_shape(DECODE, 8, 1, 1, 4096, 64);
    add_shape(MIXED, 8, 2, 1, 1024, 64);
    add_shape(PAGED, 8, 2, 16, 1024, 64);
    add_shape(VARLEN, 2, 2, 300, 300, 64);
    add_shape(VARLEN_SPLIT, 2, 2, 300, 300, 64);
    add_shape(VARLEN_PAD, 2, 2, 300, 300, 64);
    static const sa_dtype kv[] = {SA_F16, SA_BF16, SA_Q8_0};
    for (int t = 0; t < 3; t++) {
      add_shape(DECODE, 8, 2, 1, 1024, 64);
      typed(SA_F32, kv[t]);
    }
    add_shape(PREFILL, 2, 2, 256, 256, 64);
    typed(SA_BF16, SA_BF16);
  } else {
    /* The shapes of summary.csv. Prefill of one head (a kernel's own
     * efficiency), then 8 and 32 heads of the same work per head (what the
     * caches make of many heads in flight), causal, GQA and MHA decode,
     * cross-attention. The big ones time no oracle and no SLEEF-set row
     * (big()). */
    static const size_t lens[] = {512, 2048, 4096}, dims[] = {64, 128};
    for (size_t i = 0; i < 3; i++)
      for (size_t j = 0; j < 2; j++) {
        add_shape(PREFILL, 1, 1, lens[i], lens[i], dims[j]);
        summary();
      }
    add_shape(PREFILL, 8, 8, 2048, 2048, 128);
    summary();
    add_shape(PREFILL, 32, 32, 2048, 2048, 128);
    summary();
    add_shape(CAUSAL, 8, 8, 2048, 2048, 128);
    summary();
    add_shape(DECODE, 32, 8, 1, 4096, 128);
    summary();
    add_shape(DECODE, 32, 32, 1, 4096, 128);
    summary();
    add_shape(CROSS, 8, 8, 77, 4096, 64);
    summary();
    /* What models put around the softmax; the two window rows show the
     * cost follows the window, not the square of the length. */
    add_shape(PADDED, 4, 4, 1024, 1024, 128);
    add_shape(WINDOW, 2, 2, 4096, 4096, 128);
    add_shape(WINDOW, 2, 2, 8192, 8192, 128);
    add_shape(SOFTCAP, 4, 4, 2048, 2048, 128);
    /* Serving layouts: split-KV decode of one long MQA cache (compare 1
     * and 2 threads), a decode batch of mixed lengths contiguous (head- and
     * token-major) and paged (16 and 256 keys a page), and ragged prefill
     * against separate calls and padding. */
    add_shape(DECODE, 32, 1, 1, 32768, 128);
    add_shape(MIXED, 32, 8, 1, 4096, 128);
    add_shape(MIXED, 32, 8, 1, 4096, 128);
    token_major();
    add_shape(PAGED, 32, 8, 16, 4096, 128);
    add_shape(PAGED, 32, 8, 256, 4096, 128);
    add_shape(VARLEN, 4, 4, 2000, 2000, 128);
    add_shape(VARLEN_SPLIT, 4, 4, 2000, 2000, 128);
    add_shape(VARLEN_PAD, 4, 4, 2000, 2000, 128);
    /* Narrow tensors: the decode row with an f16, bf16 and q8_0 cache (GB/s
     * on the bytes actually read) and bf16 prefill beside the f32 rows. */
    static const sa_dtype kv[] = {SA_F16, SA_BF16, SA_Q8_0};
    for (int t = 0; t < 3; t++) {
      add_shape(DECODE, 32, 8, 1, 4096, 128);
      typed(SA_F32, kv[t]);
    }
    add_shape(PREFILL, 1, 1, 2048, 2048, 128);
    typed(SA_BF16, SA_BF16);
  }

  const sa_kernel_set *oracle = sa_bench_oracle();
  static const sa_algorithm algos[] = {SA_ALGO_THREE_PASS, SA_ALGO_FUSED};
  for (size_t si = 0; si < n_shapes; si++) {
    /* The oracle first: its three_pass row leaves the reference behind. */
    /* a paged cache is read by the fused driver only */
    size_t a0 = shapes[si].kind == PAGED ? 1 : 0;
    int is_big = big(&shapes[si]);
    for (size_t a = a0; a < 2 && !is_big; a++)
      add((int)si, KERNELS, oracle, algos[a]);
    for (size_t i = 0; i < sa_kernel_set_count(); i++) {
      const sa_kernel_set *ks = sa_kernel_set_at(i);
      if (ks == oracle || !sa_bench_timed(ks) ||
          (is_big && !most_accurate_exp(ks)))
        continue;
      for (size_t a = a0; a < 2; a++)
        add((int)si, KERNELS, ks, algos[a]);
    }
    /* the baselines know no masks beyond causal, window or softcap */
    if (shapes[si].kind <= CROSS && shapes[si].kvt == SA_F32) {
#ifdef SA_BENCH_HAVE_OPENBLAS
      add((int)si, OPENBLAS, NULL, SA_ALGO_THREE_PASS);
#endif
#ifdef SA_BENCH_HAVE_ONEDNN
      add((int)si, ONEDNN, NULL, SA_ALGO_THREE_PASS);
#endif
    }
  }
  for (size_t i = 0; sa_bench_cfg.threads == 1 && i < sa_kernel_set_count();
       i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    if (ks != oracle && sa_bench_timed(ks))
      add_pairs(ks);
  }
  if (sa_bench_cfg.threads == 1)
    add_read_pairs();
}
