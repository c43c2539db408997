/*
 * The fuzzer's input, decoded into one sa_attention call: a descriptor
 * (shapes, strides, masks, window, softcap, ALiBi, sinks, valid lengths,
 * LSE, ragged and paged sides, element types, O in place of Q), the
 * context it runs on (threads, block_q, block_kv) and the tensors' values.
 *
 * The first bytes are read one field at a time, so that a mutated byte
 * changes one thing; what is left seeds the generator for the bulk values
 * and is read as a list of special values (NaN, +-Inf, denormals, huge and
 * tiny magnitudes) planted at chosen live elements. Any byte string is a
 * valid input; a short one is a small, plain case (reading past the end
 * gives zeros).
 *
 * Shapes stay small (batch <= 2, heads <= 4, lengths <= 70, dims <= 80) so
 * that a case costs milliseconds.
 */
#ifndef SA_FUZZ_CASE_H
#define SA_FUZZ_CASE_H

#include "fuzz/tensor.h"

#define FZ_GUARD 64    /* canary bytes before and after O and LSE */
#define FZ_CANARY 0xa5 /* what O's and LSE's bytes that are no element hold */
#define FZ_MAX_LEN 70  /* len_q, len_kv */
#define FZ_MAX_DIM 80  /* dim_qk, dim_v */
#define FZ_SPECIALS 32 /* planted values read from the input at most */

/* The (block_q, block_kv) pairs of a context: 0 is the library's default;
 * small ones end tiles and key blocks mid-mask, mid-window and mid-page,
 * and split decode into many split-KV parts. */
static const size_t fz_block_q[] = {0, 1, 3, 4, 5, 8, 16, 2, 0, 64};
static const size_t fz_block_kv[] = {0, 1, 4, 7, 16, 32, 13, 3, 64, 0};
#define FZ_BLOCKS (sizeof fz_block_q / sizeof fz_block_q[0])

/* --------------------------------------------------------- the bytes */

typedef struct fz_bytes {
  const uint8_t *p;
  size_t n;
} fz_bytes;

static inline unsigned fz_u8(fz_bytes *b) {
  if (!b->n)
    return 0;
  b->n--;
  return *b->p++;
}
static inline unsigned fz_pick(fz_bytes *b, unsigned n) { return fz_u8(b) % n; }

/* A length in [1, max], most often small: the cheap cases are where most
 * executions should go, and every length stays reachable. */
static inline size_t fz_len(fz_bytes *b, size_t max) {
  unsigned x = fz_u8(b);
  return x < 160 ? 1 + x % 17 : 1 + x % max;
}

/* An element type: f32 half the time; q8_0 only for K and V. */
static inline sa_dtype fz_type(fz_bytes *b, int kv) {
  unsigned x = fz_u8(b);
  if (x < 128)
    return SA_F32;
  return (sa_dtype)(1 + x % (kv ? 3 : 2));
}

/* ------------------------------------------------------------ a case */

enum { FZ_DENSE, FZ_RAGGED_Q, FZ_RAGGED_KV, FZ_RAGGED, FZ_PAGED, FZ_PAGED_Q };

typedef struct fz_case {
  sa_attention_desc d; /* the call, valid (invalid.h spoils a copy) */
  int side;
  int threads, threads2; /* workers of the call; of the determinism rerun */
  unsigned blocks;       /* index into fz_block_q / fz_block_kv */
  int in_place;          /* O is Q */
  unsigned mutation;     /* the byte invalid.h reads */
  fz_tensor q, k, v, o;
  unsigned char *oimg; /* O's buffer before a call, canaries included */
  size_t obytes;       /* O's buffer with its canaries */
  int fence_front;     /* inputs fenced before their start, not after */
  float *add;          /* additive mask: elements, resolved layout */
  unsigned char *add_live;
  size_t add_n;
  sa_mask_layout add_rs;
  guarded add_fence;
  uint8_t *keep; /* boolean mask */
  guarded keep_fence;
  size_t keep_n;
  sa_mask_layout keep_rs;
  float *slopes, *sinks;
  int64_t *valid;
  int32_t *cuq, *cukv, *table;
  size_t table_n;
  unsigned char *lse_mem; /* LSE with its canaries */
  size_t lse_n;           /* LSE's extent in floats */
  sa_strides lse_rs;
  view w; /* what the reference reads: widened tensors */
} fz_case;

static inline float *fz_lse(const fz_case *c) {
  return c->lse_mem ? (float *)(void *)(c->lse_mem + FZ_GUARD) : NULL;
}

/* Scales: the default, ordinary ones, negative, and magnitudes at the
 * edges (a denormal scale; 2^40, where fp32 attention is still sound;
 * 1e20, where scores overflow). */
static const float fz_scales[] = {
    0.0f,  -0.0f,  1.0f,    -1.0f, 0.125f,    0.01f, 3.7f, -0.5f,
    100.f, 1e-20f, 0x1p40f, 1e20f, 0x1p-149f, 0.3f,  2.0f, 0.0f};
static const float fz_caps[] = {0.5f,  1.0f,   3.0f,  30.0f,
                                1e-3f, 1e-40f, 1e20f, 5.0f};
static const size_t fz_pages[] = {1, 2, 3, 4, 5, 8, 16, 32, 64, 7};

/* Prefix sums for `batch` sequences of at most `bound` each, starting at
 * 0, 1 or 2 (the rows before are not the call's). */
static inline int32_t *fz_prefix(fz_bytes *b, size_t batch, size_t bound) {
  int32_t *cu = xmalloc((batch + 1) * sizeof *cu);
  cu[0] = (int32_t)fz_pick(b, 3);
  for (size_t i = 0; i < batch; i++) {
    unsigned x = fz_u8(b);
    cu[i + 1] = cu[i] + (int32_t)(x & 1 ? bound : x / 2 % (bound + 1));
  }
  return cu;
}

/* A mask's layout: one of six kinds, over keys `keys` (0: len_kv). */
static inline sa_mask_layout fz_mask_layout(unsigned kind, size_t keys,
                                            const sa_attention_desc *d,
                                            sa_mask_layout *rs, size_t *n) {
  size_t k = keys ? keys : d->len_kv, lq = d->len_q, h = d->heads_q;
  sa_mask_layout s;
  switch (kind % 6) {
  case 0: /* packed */
    s = (sa_mask_layout){h * lq * k, lq * k, k, 1, k};
    break;
  case 1: /* [len_q, keys], broadcast over batch and heads */
    s = (sa_mask_layout){0, 0, k, 1, k};
    break;
  case 2: /* a padding mask [batch, 1, 1, keys] */
    s = (sa_mask_layout){k, 0, 0, 1, k};
    break;
  case 3: /* [batch, heads, keys, len_q]: not contiguous along keys */
    s = (sa_mask_layout){h * k * lq, k * lq, 1, lq, k};
    break;
  case 4: /* every third element along keys, rows padded */
    s = (sa_mask_layout){h * lq * (3 * k + 1), lq * (3 * k + 1), 3 * k + 1, 3,
                         k};
    break;
  default: /* [batch, 1, len_q, keys + 2] */
    s = (sa_mask_layout){lq * (k + 2), 0, k + 2, 1, k};
    break;
  }
  *rs = s;
  *n = (d->batch - 1) * s.batch + (h - 1) * s.head + (lq - 1) * s.row +
       (k - 1) * s.key + 1;
  sa_mask_layout passed = s;
  passed.keys = keys;
  if (kind % 6 == 0)
    passed = (sa_mask_layout){0, 0, 0, 0, keys};
  return passed;
}

/* Keys batch item b may read: its length, cut by the masks' extents. */
static inline size_t fz_live_keys(const fz_case *c, size_t b) {
  size_t n = seq_len_kv(&c->d, b);
  if (c->add && c->add_rs.keys < n)
    n = c->add_rs.keys;
  if (c->keep && c->keep_rs.keys < n)
    n = c->keep_rs.keys;
  return n;
}

/* The rows a query-side or key-side tensor spans, by side. */
static inline void fz_rows(fz_case *c, fz_tensor *x, int keyside) {
  const sa_attention_desc *d = &c->d;
  x->outer = d->batch;
  x->rows = keyside ? d->len_kv : d->len_q;
  if (!keyside && d->cu_seqlens_q)
    x->outer = 1, x->rows = (size_t)d->cu_seqlens_q[d->batch];
  if (keyside && d->cu_seqlens_kv)
    x->outer = 1, x->rows = (size_t)d->cu_seqlens_kv[d->batch];
  if (keyside && d->block_table)
    x->outer = d->num_pages, x->rows = d->page_size;
}

static inline void fz_layout(fz_case *c, fz_tensor *x, fz_bytes *b, int keyside,
                             int input) {
  unsigned kind = fz_u8(b);
  int ragged = keyside ? !!c->d.cu_seqlens_kv : !!c->d.cu_seqlens_q;
  fz_rows(c, x, keyside);
  x->heads = keyside ? c->d.heads_kv : c->d.heads_q;
  x->ru = sa_dtype_row(x->t, x->dim);
  int k = (int)(kind % (input ? FZ_KINDS : FZ_BROADCAST));
  fz_strides(x, k, kind / 16 % 4, ragged);
  fz_extent(x);
}

/* Marks the units the call may read: Q's rows of every sequence, K's and
 * V's keys that some row may see. */
static inline void fz_mark_live(fz_case *c) {
  const sa_attention_desc *d = &c->d;
  for (size_t b = 0; b < d->batch; b++) {
    for (size_t h = 0; h < d->heads_q; h++)
      for (size_t i = 0; i < seq_len_q(d, b); i++)
        fz_live_row(&c->q, q_at(d, &c->q.rs, b, h, i));
    for (size_t h = 0; h < d->heads_kv; h++)
      for (size_t j = 0; j < fz_live_keys(c, b); j++) {
        fz_live_row(&c->k, k_at(d, &c->k.rs, b, h, j));
        fz_live_row(&c->v, k_at(d, &c->v.rs, b, h, j));
      }
  }
}

/* Which elements of a mask the call may read: rows and keys of some
 * sequence (a broadcast layout maps many onto one). */
static inline unsigned char *fz_mask_live(const fz_case *c,
                                          const sa_mask_layout *rs, size_t n) {
  const sa_attention_desc *d = &c->d;
  unsigned char *live = calloc(n + 1, 1);
  for (size_t b = 0; b < d->batch; b++)
    for (size_t h = 0; h < d->heads_q; h++)
      for (size_t i = 0; i < seq_len_q(d, b); i++)
        for (size_t j = 0; j < fz_live_keys(c, b); j++)
          live[mask_at(rs, b, h, i, j)] = 1;
  return live;
}

static inline void fz_masks(fz_case *c, fz_bytes *b) {
  sa_attention_desc *d = &c->d;
  unsigned a = fz_u8(b), k = fz_u8(b);
  if (a % 3 == 0) {
    size_t keys = k & 1 ? 1 + (k >> 1) % d->len_kv : 0;
    d->mask_add_layout = fz_mask_layout(a / 3, keys, d, &c->add_rs, &c->add_n);
    c->add = g_map(c->add_n * sizeof(float), c->fence_front, &c->add_fence);
    d->mask_add = c->add;
  }
  unsigned p = fz_u8(b), kk = fz_u8(b);
  if (p % 3 == 0) {
    size_t keys = kk & 1 ? 1 + (kk >> 1) % d->len_kv : 0;
    d->mask_bool_layout =
        fz_mask_layout(p / 3, keys, d, &c->keep_rs, &c->keep_n);
    c->keep = g_map(c->keep_n, c->fence_front, &c->keep_fence);
    d->mask_bool = c->keep;
  }
  /* values once the keys each sequence has are known; elements no row
   * reads are NaN (additive) or attend (boolean) */
  unsigned ninf = fz_pick(b, 101), dist = fz_u8(b), off = fz_pick(b, 101);
  if (c->add) {
    c->add_live = fz_mask_live(c, &c->add_rs, c->add_n);
    for (size_t x = 0; x < c->add_n; x++)
      c->add[x] = !c->add_live[x]                     ? NAN
                  : (unsigned)(t_next() % 100) < ninf ? -INFINITY
                                                      : fz_value(dist, 1.0f);
  }
  if (c->keep) {
    unsigned char *live = fz_mask_live(c, &c->keep_rs, c->keep_n);
    for (size_t x = 0; x < c->keep_n; x++)
      c->keep[x] = !live[x] ? 1
                   : (unsigned)(t_next() % 100) < off
                       ? 0
                       : (uint8_t)(1 + t_next() % 255);
    free(live);
  }
}

/* Paged keys: pages of one size, each sequence's in a shuffled or shared
 * order, the table's entries past a sequence's pages garbage. */
static inline void fz_paged(fz_case *c, fz_bytes *b) {
  sa_attention_desc *d = &c->d;
  size_t page = fz_pages[fz_pick(b, sizeof fz_pages / sizeof fz_pages[0])];
  size_t per = (d->len_kv + page - 1) / page;
  unsigned x = fz_u8(b);
  d->page_size = page;
  d->block_table_stride = per + x % 2;
  d->num_pages = d->batch * per + x / 2 % 3;
  c->table_n = d->batch * d->block_table_stride;
  c->table = xmalloc(c->table_n * sizeof(int32_t));
  for (size_t i = 0; i < c->table_n; i++)
    c->table[i] = (int32_t)i;
  for (size_t i = c->table_n; i > 1; i--) {
    size_t j = t_next() % i;
    int32_t t = c->table[i - 1];
    c->table[i - 1] = c->table[j], c->table[j] = t;
  }
  for (size_t bb = 0; bb < d->batch; bb++) {
    size_t used = (seq_len_kv(d, bb) + page - 1) / page;
    for (size_t i = 0; i < d->block_table_stride; i++) {
      int32_t *e = &c->table[bb * d->block_table_stride + i];
      if (i >= used) /* never read: a page that is not there */
        *e = t_next() & 1 ? -1 : (int32_t)(d->num_pages + 9);
      else if (x & 8) /* pages shared between sequences */
        *e = (int32_t)(t_next() % d->num_pages);
      else
        *e = (int32_t)((size_t)*e % d->num_pages);
    }
  }
  d->block_table = c->table;
}

/* Shapes, types and the attention's options. */
static inline void fz_desc(fz_case *c, fz_bytes *b) {
  sa_attention_desc *d = &c->d;
  sa_attention_desc_init(d);
  d->batch = 1 + fz_pick(b, 2);
  d->heads_q = 1 + fz_pick(b, 4);
  size_t div[4], nd = 0;
  for (size_t h = 1; h <= d->heads_q; h++)
    if (d->heads_q % h == 0)
      div[nd++] = h;
  d->heads_kv = div[fz_pick(b, (unsigned)nd)];
  d->len_q = fz_u8(b) < 64 ? 1 : fz_len(b, FZ_MAX_LEN);
  d->len_kv = fz_len(b, FZ_MAX_LEN);
  d->dim_qk = fz_len(b, FZ_MAX_DIM);
  d->dim_v = fz_len(b, FZ_MAX_DIM);
  d->q_type = fz_type(b, 0);
  d->k_type = fz_type(b, 1);
  d->v_type = fz_type(b, 1);
  d->o_type = fz_type(b, 0);
  if (d->k_type == SA_Q8_0)
    d->dim_qk = d->dim_qk > 40 ? 64 : 32;
  if (d->v_type == SA_Q8_0)
    d->dim_v = d->dim_v > 40 ? 64 : 32;
  c->in_place = fz_pick(b, 6) == 0;
  if (c->in_place) {
    d->dim_v = d->dim_qk;
    d->o_type = d->q_type;
    if (d->v_type == SA_Q8_0 && d->dim_v % 32)
      d->v_type = SA_F16;
  }
  d->mask = (sa_mask)fz_pick(b, 3);
  d->algorithm = (sa_algorithm)fz_pick(b, 3);
  unsigned s = fz_u8(b);
  d->scale = s < 240 ? fz_scales[s % 16] : (float)s / 32.0f - 7.5f;
  c->side = (int)fz_pick(b, 6);
  unsigned w = fz_u8(b), wl = fz_u8(b), wr = fz_u8(b);
  if (w % 4 == 0) {
    d->window = 1 + (int)(w >> 2);
    d->window_left = (int64_t)(wl % 80) - 1;
    d->window_right = (int64_t)(wr % 80) - 1;
  }
  unsigned cap = fz_u8(b);
  if (cap % 4 == 0)
    d->softcap = fz_caps[cap / 4 % 8];
}

/* Per-head and per-batch arrays: ALiBi slopes, sinks, valid lengths. */
static inline void fz_arrays(fz_case *c, fz_bytes *b) {
  sa_attention_desc *d = &c->d;
  unsigned a = fz_u8(b), s = fz_u8(b), v = fz_u8(b);
  if (a % 4) {
    c->slopes = xmalloc(d->heads_q * sizeof(float));
    if (a % 4 == 1)
      sa_alibi_slopes(d->heads_q, c->slopes);
    for (size_t h = 0; a % 4 != 1 && h < d->heads_q; h++)
      c->slopes[h] =
          a % 4 == 2 ? t_uniform(-0.5f, 0.5f) : fz_value(a / 4, 0.1f);
    d->alibi_slopes = c->slopes;
  }
  if (s % 5) {
    c->sinks = xmalloc(d->heads_q * sizeof(float));
    for (size_t h = 0; h < d->heads_q; h++)
      c->sinks[h] = s % 5 == 3 || (s % 5 == 2 && h % 2) ? -INFINITY
                    : s % 5 == 4                        ? fz_value(s / 5, 1.0f)
                                                        : t_uniform(-2, 4);
    d->sinks = c->sinks;
  }
  if (v % 3 == 0) {
    c->valid = xmalloc(d->batch * sizeof(int64_t));
    for (size_t i = 0; i < d->batch; i++) {
      unsigned x = fz_u8(b);
      c->valid[i] = x % 4 == 0   ? 0
                    : x % 4 == 1 ? (int64_t)d->len_kv
                                 : (int64_t)(x / 4 % (d->len_kv + 1));
    }
    d->len_kv_valid = c->valid;
  }
}

/* Ragged and paged sides (paged keys need the fused algorithm). */
static inline void fz_sides(fz_case *c, fz_bytes *b) {
  sa_attention_desc *d = &c->d;
  if (c->side == FZ_RAGGED_Q || c->side == FZ_RAGGED || c->side == FZ_PAGED_Q)
    d->cu_seqlens_q = c->cuq = fz_prefix(b, d->batch, d->len_q);
  if (c->side == FZ_RAGGED_KV || c->side == FZ_RAGGED)
    d->cu_seqlens_kv = c->cukv = fz_prefix(b, d->batch, d->len_kv);
  if (c->side == FZ_PAGED || c->side == FZ_PAGED_Q) {
    if (d->algorithm == SA_ALGO_THREE_PASS)
      d->algorithm = SA_ALGO_FUSED;
    fz_paged(c, b);
  }
}

/* LSE: none, packed, token-major or padded; between canaries. */
static inline void fz_lse_make(fz_case *c, fz_bytes *b) {
  sa_attention_desc *d = &c->d;
  unsigned kind = fz_pick(b, 4);
  if (!kind)
    return;
  size_t qn = d->batch, ql = d->len_q, h = d->heads_q;
  if (d->cu_seqlens_q)
    qn = 1, ql = (size_t)d->cu_seqlens_q[d->batch];
  sa_strides s;
  if (kind == 1) /* packed: [B, H, L], ragged [H, tokens] */
    s = d->cu_seqlens_q ? (sa_strides){0, ql, 1} : (sa_strides){h * ql, ql, 1};
  else if (kind == 2)
    s = (sa_strides){ql * h, 1, h};
  else
    s = (sa_strides){h * (2 * ql + 1), 2 * ql + 1, 2};
  c->lse_rs = s;
  d->lse_at = kind == 1 ? (sa_strides){0, 0, 0} : s;
  c->lse_n = qn && ql
                 ? (qn - 1) * s.batch + (h - 1) * s.head + (ql - 1) * s.seq + 1
                 : 0;
  c->lse_mem = xmalloc(c->lse_n * sizeof(float) + 2 * FZ_GUARD);
  d->lse = fz_lse(c);
}

/* The (target, index, value) records at the input's end: NaN, infinities,
 * denormals and huge values at live elements of Q, K, V, the additive
 * mask, the slopes or the sinks (only values the contract allows there). */
static inline void fz_plant(fz_case *c, fz_bytes *b) {
  for (int r = 0; r < FZ_SPECIALS && b->n >= 4; r++) {
    unsigned target = fz_pick(b, 6);
    size_t idx = fz_u8(b);
    idx |= (size_t)fz_u8(b) << 8;
    float v = fz_special[fz_pick(b, FZ_NSPECIAL)];
    fz_tensor *x = target == 0 ? &c->q : target == 1 ? &c->k : &c->v;
    if (target <= 2) {
      /* the first live unit from idx on, wrapping */
      for (size_t s = 0; s < x->units; s++) {
        size_t u = (idx + s) % x->units;
        if (!x->live[u])
          continue;
        size_t e = x->t == SA_Q8_0 ? (idx >> 4) % 33 : 0;
        fz_store(x, u, e, e < 32 && x->t == SA_Q8_0 ? -128.0f : v);
        break;
      }
    } else if (target == 3 && c->add) {
      size_t x0 = idx % c->add_n;
      if (c->add_live[x0])
        c->add[x0] = v;
    } else if (target == 4 && c->slopes) {
      c->slopes[idx % c->d.heads_q] = isfinite(v) ? v : 1e30f;
    } else if (target == 5 && c->sinks) {
      c->sinks[idx % c->d.heads_q] = v != v || v == INFINITY ? -INFINITY : v;
    }
  }
}

/* O: Q's layout when in place, else its own; a buffer with canaries. */
static inline void fz_out(fz_case *c, fz_bytes *b) {
  sa_attention_desc *d = &c->d;
  c->o.t = d->o_type;
  c->o.dim = d->dim_v;
  if (c->in_place) {
    fz_rows(c, &c->o, 0);
    c->o.heads = d->heads_q;
    c->o.ru = c->q.ru;
    c->o.st = c->q.st;
    c->o.rs = c->q.rs;
    fz_extent(&c->o);
  } else {
    fz_layout(c, &c->o, b, 0, 0);
  }
  fz_alloc(&c->o, FZ_GUARD, 0);
  c->obytes = c->o.bytes + 2 * FZ_GUARD;
  c->oimg = xmalloc(c->obytes);
  d->o = c->o.st;
}

/* The view the reference reads: widened tensors at float strides. */
static inline void fz_view(fz_case *c) {
  view *w = &c->w;
  memset(w, 0, sizeof *w);
  w->d = c->d;
  w->d.q_type = w->d.k_type = w->d.v_type = w->d.o_type = SA_F32;
  w->d.q = w->qs = c->q.ws;
  w->d.k = w->ks = c->k.ws;
  w->d.v = w->vs = c->v.ws;
  w->d.o = w->os = c->o.rs;
  w->ls = c->lse_rs;
  w->q = c->q.w, w->k = c->k.w, w->v = c->v.w;
  w->add_at = c->add_rs;
  w->bool_at = c->keep_rs;
}

/* Decodes `data` into c. */
static inline void fz_case_make(fz_case *c, const uint8_t *data, size_t size) {
  memset(c, 0, sizeof *c);
  uint64_t h = 1469598103934665603ull; /* FNV-1a of all of it: the seed */
  for (size_t i = 0; i < size; i++)
    h = (h ^ data[i]) * 1099511628211ull;
  t_seed(h);
  c->fence_front = h % 3 == 0;
  fz_bytes b = {data, size};
  fz_desc(c, &b);
  sa_attention_desc *d = &c->d;
  c->threads = 1 + (int)fz_pick(&b, 3);
  c->threads2 = 1 + (c->threads + (int)fz_pick(&b, 2)) % 3; /* another */
  c->blocks = fz_pick(&b, FZ_BLOCKS);
  c->mutation = fz_u8(&b);
  fz_arrays(c, &b);
  fz_sides(c, &b);
  c->q.t = d->q_type, c->q.dim = d->dim_qk;
  c->k.t = d->k_type, c->k.dim = d->dim_qk;
  c->v.t = d->v_type, c->v.dim = d->dim_v;
  fz_layout(c, &c->q, &b, 0, !c->in_place);
  fz_layout(c, &c->k, &b, 1, 1);
  fz_layout(c, &c->v, &b, 1, 1);
  d->q = c->q.st, d->k = c->k.st, d->v = c->v.st;
  fz_alloc(&c->q, 0, c->fence_front);
  fz_alloc(&c->k, 0, c->fence_front);
  fz_alloc(&c->v, 0, c->fence_front);
  fz_out(c, &b);
  fz_masks(c, &b);
  fz_lse_make(c, &b);
  fz_mark_live(c);
  unsigned dq = fz_u8(&b), dk = fz_u8(&b), dv = fz_u8(&b);
  fz_fill(&c->q, dq);
  fz_fill(&c->k, dk);
  fz_fill(&c->v, dv);
  fz_plant(c, &b);
  fz_widen(&c->q);
  fz_widen(&c->k);
  fz_widen(&c->v);
  fz_view(c);
}

static inline void fz_case_free(fz_case *c) {
  fz_tensor_free(&c->q), fz_tensor_free(&c->k), fz_tensor_free(&c->v);
  fz_tensor_free(&c->o);
  g_free(&c->add_fence), g_free(&c->keep_fence);
  free(c->oimg), free(c->add_live), free(c->slopes), free(c->sinks);
  free(c->valid), free(c->cuq), free(c->cukv), free(c->table);
  free(c->lse_mem);
}

/* One line that says what the case is, for a finding's report. */
static inline void fz_describe(const fz_case *c, char *buf, size_t n) {
  const sa_attention_desc *d = &c->d;
  snprintf(buf, n,
           "B%zu Hq%zu Hkv%zu Lq%zu Lkv%zu d%zu/%zu q%s k%s v%s o%s mask%d "
           "algo%d scale%g side%d win%d(%lld,%lld) cap%g alibi%d sinks%d "
           "valid%d lse%d add%d(k%zu) bool%d(k%zu) inplace%d threads%d/%d "
           "bq%zu bkv%zu strides q{%zu,%zu,%zu} k{%zu,%zu,%zu} "
           "v{%zu,%zu,%zu} o{%zu,%zu,%zu}",
           d->batch, d->heads_q, d->heads_kv, d->len_q, d->len_kv, d->dim_qk,
           d->dim_v, sa_dtype_name(d->q_type), sa_dtype_name(d->k_type),
           sa_dtype_name(d->v_type), sa_dtype_name(d->o_type), (int)d->mask,
           (int)d->algorithm, (double)d->scale, c->side, d->window,
           (long long)d->window_left, (long long)d->window_right,
           (double)d->softcap, !!d->alibi_slopes, !!d->sinks, !!d->len_kv_valid,
           !!d->lse, !!d->mask_add, c->add_rs.keys, !!d->mask_bool,
           c->keep_rs.keys, c->in_place, c->threads, c->threads2,
           fz_block_q[c->blocks], fz_block_kv[c->blocks], c->q.st.batch,
           c->q.st.head, c->q.st.seq, c->k.st.batch, c->k.st.head, c->k.st.seq,
           c->v.st.batch, c->v.st.head, c->v.st.seq, c->o.st.batch,
           c->o.st.head, c->o.st.seq);
}

#endif
