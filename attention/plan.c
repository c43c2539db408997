/*
 * Descriptor validation: every check happens here, before any scratch is
 * allocated or any output byte written, so a bad call leaves O untouched.
 * Every size and offset product is checked for size_t overflow, because a
 * wrapped product would pass a bounds check and then walk off the buffer.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention/internal.h"
#include "core/errors.h"
#include "kernels/dtype.h"
#include "threads/topology.h"

static int mul_ov(size_t a, size_t b, size_t *r) {
  return __builtin_mul_overflow(a, b, r);
}
static int add_ov(size_t a, size_t b, size_t *r) {
  return __builtin_add_overflow(a, b, r);
}

sa_status sa_strides_resolve(const char *name, sa_strides *st, size_t heads,
                             size_t len, size_t dim) {
  if (st->batch == 0 && st->head == 0 && st->seq == 0) {
    st->seq = dim;
    if (mul_ov(len, dim, &st->head) || mul_ov(heads, st->head, &st->batch))
      return sa_fail(SA_ERR_OVERFLOW, "%s: packed size overflows size_t", name);
  }
  return SA_OK;
}

sa_status sa_strides_extent(const char *name, const sa_strides *st,
                            size_t batch, size_t heads, size_t len, size_t dim,
                            size_t unit, size_t *out) {
  size_t a, b, c, end;
  if (batch == 0 || len == 0) { /* a ragged side with no tokens */
    *out = 0;
    return SA_OK;
  }
  if (mul_ov(batch - 1, st->batch, &a) || mul_ov(heads - 1, st->head, &b) ||
      mul_ov(len - 1, st->seq, &c) || add_ov(a, b, &end) ||
      add_ov(end, c, &end) || add_ov(end, dim, &end) ||
      end > (size_t)PTRDIFF_MAX / unit)
    return sa_fail(SA_ERR_OVERFLOW,
                   "%s: strides span more than the address "
                   "space",
                   name);
  *out = end;
  return SA_OK;
}

/* Sufficient condition for no two output elements to share an address: with
 * the dimensions of extent > 1 sorted by stride, each stride clears the whole
 * span of the ones inside it, the innermost clearing the contiguous row. */
static sa_status no_alias(const char *name, const sa_strides *st, size_t batch,
                          size_t heads, size_t len, size_t dim) {
  size_t ext[3] = {batch, heads, len}, str[3] = {st->batch, st->head, st->seq};
  size_t n = 0, e[3], s[3];
  for (int i = 0; i < 3; i++)
    if (ext[i] > 1) {
      e[n] = ext[i];
      s[n] = str[i];
      n++;
    }
  for (size_t i = 1; i < n; i++) /* insertion sort by stride */
    for (size_t j = i; j > 0 && s[j] < s[j - 1]; j--) {
      size_t t = s[j];
      s[j] = s[j - 1];
      s[j - 1] = t;
      t = e[j];
      e[j] = e[j - 1];
      e[j - 1] = t;
    }
  size_t span = dim;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < span)
      return sa_fail(SA_ERR_BAD_STRIDE,
                     "%s: a stride of %zu lets output elements overlap (needs "
                     ">= %zu)",
                     name, s[i], span);
    span = s[i] * e[i]; /* cannot overflow: sa_strides_extent() checked it */
  }
  return SA_OK;
}

static size_t round_up16(size_t x) { return (x + 15) & ~(size_t)15; }

/* A mask's layout: packed when all strides are zero; keys within len_kv;
 * its span must fit the address space. */
static sa_status mask_layout(const char *name, const sa_mask_layout *in,
                             const sa_plan *p, size_t elem, sa_mask_at *at,
                             size_t *end) {
  if (in->keys > p->len_kv)
    return sa_fail(SA_ERR_BAD_SHAPE,
                   "%s_layout.keys = %zu is more than len_kv = %zu", name,
                   in->keys, p->len_kv);
  at->keys = in->keys ? in->keys : p->len_kv;
  at->batch = in->batch;
  at->head = in->head;
  at->row = in->row;
  at->key = in->key;
  if (!at->batch && !at->head && !at->row && !at->key) {
    at->key = 1;
    at->row = at->keys;
    if (mul_ov(p->len_q, at->row, &at->head) ||
        mul_ov(p->heads_q, at->head, &at->batch))
      return sa_fail(SA_ERR_OVERFLOW, "%s: packed size overflows size_t", name);
  }
  size_t a, b, c, d, e;
  if (mul_ov(p->batch - 1, at->batch, &a) ||
      mul_ov(p->heads_q - 1, at->head, &b) ||
      mul_ov(p->len_q - 1, at->row, &c) || mul_ov(at->keys - 1, at->key, &d) ||
      add_ov(a, b, &e) || add_ov(e, c, &e) || add_ov(e, d, &e) ||
      add_ov(e, 1, &e) || e > (size_t)PTRDIFF_MAX / elem)
    return sa_fail(SA_ERR_OVERFLOW,
                   "%s: strides span more than the address space", name);
  *end = e;
  return SA_OK;
}

/* The 0.3 fields: masks, window, softcap, ALiBi, sinks, lengths, LSE. Per
 * head and per batch arrays are read here, once, so that a bad value is a
 * status before anything is written. */
static sa_status plan_extras(const sa_attention_desc *d, sa_plan *p, size_t qn,
                             size_t ql) {
  sa_status st;
  p->keys = p->len_kv;
  p->mask_add = d->mask_add;
  p->mask_bool = d->mask_bool;
  if (d->mask_add) {
    if ((st = mask_layout("mask_add", &d->mask_add_layout, p, sizeof(float),
                          &p->add_at, &p->end_extra[0])))
      return st;
    p->keys = p->add_at.keys < p->keys ? p->add_at.keys : p->keys;
  }
  if (d->mask_bool) {
    if ((st = mask_layout("mask_bool", &d->mask_bool_layout, p, 1, &p->bool_at,
                          &p->end_extra[1])))
      return st;
    p->keys = p->bool_at.keys < p->keys ? p->bool_at.keys : p->keys;
  }
  p->window = d->window != 0;
  p->wl = p->wr = -1;
  if (p->window) {
    if (d->window_left < -1 || d->window_right < -1)
      return sa_fail(SA_ERR_BAD_ARGUMENT,
                     "window_left = %lld, window_right = %lld: each must be "
                     ">= -1 (-1 = unbounded)",
                     (long long)d->window_left, (long long)d->window_right);
    p->wl = d->window_left;
    p->wr = d->window_right;
  }
  if (!(d->softcap >= 0.0f) || isinf(d->softcap))
    return sa_fail(SA_ERR_BAD_ARGUMENT,
                   "softcap must be 0 (off) or finite and positive");
  p->softcap = d->softcap;
  p->slopes = d->alibi_slopes;
  p->sinks = d->sinks;
  if (!isfinite(sa_log2_units(p->softcap)))
    p->scale2 = 0.0f;
  for (size_t h = 0; h < p->heads_q; h++) {
    if (p->slopes && !isfinite(p->slopes[h]))
      return sa_fail(SA_ERR_BAD_ARGUMENT, "alibi_slopes[%zu] is not finite", h);
    if (p->slopes && !isfinite(sa_log2_units(p->slopes[h])))
      p->scale2 = 0.0f;
    if (p->sinks && (isnan(p->sinks[h]) || p->sinks[h] == INFINITY))
      return sa_fail(SA_ERR_BAD_ARGUMENT,
                     "sinks[%zu] is NaN or +inf (-inf: no sink)", h);
    if (p->sinks && isinf(sa_log2_units(p->sinks[h])) &&
        p->sinks[h] != -INFINITY)
      p->scale2 = 0.0f;
  }
  p->len_valid = d->len_kv_valid;
  for (size_t b = 0; p->len_valid && b < p->batch; b++)
    if (p->len_valid[b] < 0 || (uint64_t)p->len_valid[b] > p->len_kv)
      return sa_fail(SA_ERR_BAD_SHAPE,
                     "len_kv_valid[%zu] = %lld is outside [0, len_kv = %zu]", b,
                     (long long)p->len_valid[b], p->len_kv);
  p->lse = d->lse;
  if (p->lse) {
    p->lse_at = d->lse_at;
    sa_strides *at = &p->lse_at;
    if (p->cu_q && !at->batch && !at->head && !at->seq) {
      at->head = ql; /* [heads_q, tokens] */
      at->seq = 1;
    }
    if ((st = sa_strides_resolve("lse", at, p->heads_q, p->len_q, 1)) ||
        (st = sa_strides_extent("lse", at, qn, p->heads_q, ql, 1, sizeof(float),
                                &p->end_extra[2])) ||
        (ql && (st = no_alias("lse", at, qn, p->heads_q, ql, 1))))
      return st;
  }
  p->scan = p->mask_add || p->mask_bool;
  p->mods = p->scan || p->softcap > 0.0f || p->slopes;
  p->online = p->sinks || p->lse;
  return SA_OK;
}

/* A prefix-sum array: batch + 1 values from 0 or more, never decreasing,
 * each step at most `bound`. Its total goes to *tokens. */
static sa_status prefix_sums(const char *name, const int32_t *cu, size_t batch,
                             size_t bound, size_t *tokens) {
  if (cu[0] < 0)
    return sa_fail(SA_ERR_BAD_SHAPE, "%s[0] = %d is negative", name, cu[0]);
  for (size_t b = 0; b < batch; b++)
    if (cu[b + 1] < cu[b] || (size_t)(cu[b + 1] - cu[b]) > bound)
      return sa_fail(SA_ERR_BAD_SHAPE,
                     "%s[%zu..%zu] = %d..%d: a sequence length outside "
                     "[0, %zu]",
                     name, b, b + 1, cu[b], cu[b + 1], bound);
  *tokens = (size_t)cu[batch];
  return SA_OK;
}

/* Ragged and paged sides: their lengths checked, their packed defaults
 * filled in, and the (outer, rows) the tensors span. */
static sa_status plan_ragged(const sa_attention_desc *d, sa_plan *p, size_t *qn,
                             size_t *ql, size_t *kn, size_t *kl) {
  sa_status st;
  p->cu_q = d->cu_seqlens_q;
  p->cu_kv = d->cu_seqlens_kv;
  p->table = d->block_table;
  if (p->table && p->cu_kv)
    return sa_fail(SA_ERR_BAD_ARGUMENT,
                   "block_table and cu_seqlens_kv: keys are either paged or "
                   "ragged");
  sa_strides *qs[] = {&p->q, &p->o}, *ks[] = {&p->k, &p->v};
  size_t qdims[] = {p->dim_qk, p->dim_v}, dims[] = {p->kdim, p->vdim};
  if (p->cu_q) {
    if ((st = prefix_sums("cu_seqlens_q", p->cu_q, p->batch, p->len_q, ql)))
      return st;
    *qn = 1;
    for (int t = 0; t < 2; t++)
      if (!qs[t]->batch && !qs[t]->head && !qs[t]->seq)
        *qs[t] = (sa_strides){0, qdims[t], p->heads_q * qdims[t]};
  }
  if (p->cu_kv) {
    if ((st = prefix_sums("cu_seqlens_kv", p->cu_kv, p->batch, p->len_kv, kl)))
      return st;
    *kn = 1;
    for (int t = 0; t < 2; t++)
      if (!ks[t]->batch && !ks[t]->head && !ks[t]->seq)
        *ks[t] = (sa_strides){0, dims[t], p->heads_kv * dims[t]};
  }
  if (p->table) {
    if (d->page_size == 0 || d->page_size > SA_MAX_DIM || d->num_pages == 0 ||
        d->num_pages > SA_MAX_DIM)
      return sa_fail(SA_ERR_BAD_SHAPE,
                     "page_size = %zu and num_pages = %zu must be in [1, 2^31]",
                     d->page_size, d->num_pages);
    if (p->algorithm != SA_ALGO_FUSED)
      return sa_fail(SA_ERR_BAD_ARGUMENT,
                     "a paged KV cache needs SA_ALGO_FUSED (or AUTO)");
    p->page = d->page_size;
    p->npages = d->num_pages;
    p->table_ld = d->block_table_stride;
    *kn = p->npages;
    *kl = p->page;
    /* packed head-major pages, [pages, heads, page_size, dim]: one head's
     * keys adjacent, as contiguous caches have them (a token-major page
     * strides a head's rows by heads_kv * dim, which cost decode a third
     * of its bandwidth) */
    for (int t = 0; t < 2; t++)
      if ((st = sa_strides_resolve(t ? "v" : "k", ks[t], p->heads_kv, p->page,
                                   dims[t])))
        return st;
  }
  return SA_OK;
}

/* Every page a sequence uses exists; read once, before anything is
 * written (after plan_extras has checked len_kv_valid). */
static sa_status plan_paged(sa_plan *p) {
  for (size_t b = 0; p->table && b < p->batch; b++) {
    size_t len = p->len_valid ? (size_t)p->len_valid[b] : p->len_kv;
    size_t pages = (len + p->page - 1) / p->page;
    if (pages > p->table_ld)
      return sa_fail(SA_ERR_BAD_SHAPE,
                     "sequence %zu needs %zu pages, block_table_stride is %zu",
                     b, pages, p->table_ld);
    for (size_t i = 0; i < pages; i++) {
      int32_t pg = p->table[b * p->table_ld + i];
      if (pg < 0 || (size_t)pg >= p->npages)
        return sa_fail(SA_ERR_BAD_ARGUMENT,
                       "block_table[%zu][%zu] = %d is not a page in [0, %zu)",
                       b, i, pg, p->npages);
    }
  }
  return SA_OK;
}

/* Element types: Q and O f32, f16 or bf16, K and V also q8_0 (whole
 * blocks along d). Strides and extents of K and V count their units. */
static sa_status plan_types(const sa_attention_desc *d, sa_plan *p) {
  const sa_dtype types[] = {d->q_type, d->k_type, d->v_type, d->o_type};
  static const char *names[] = {"q_type", "k_type", "v_type", "o_type"};
  for (int t = 0; t < 4; t++) {
    int kv = t == 1 || t == 2;
    if ((unsigned)types[t] > (unsigned)(kv ? SA_Q8_0 : SA_BF16))
      return sa_fail(SA_ERR_BAD_ARGUMENT, "%s = %d is not %s", names[t],
                     (int)types[t],
                     types[t] == SA_Q8_0 ? "allowed (q8_0 is for K and V only)"
                                         : "an sa_dtype");
    p->unit[t] = sa_dtype_unit(types[t]);
  }
  p->q_type = d->q_type;
  p->k_type = d->k_type;
  p->v_type = d->v_type;
  p->o_type = d->o_type;
  if ((p->k_type == SA_Q8_0 && d->dim_qk % SA_QK8_0) ||
      (p->v_type == SA_Q8_0 && d->dim_v % SA_QK8_0))
    return sa_fail(SA_ERR_BAD_SHAPE,
                   "a q8_0 K or V needs its dimension to be a multiple of "
                   "32 (dim_qk %zu, k_type %s; dim_v %zu, v_type %s)",
                   d->dim_qk, sa_dtype_name(p->k_type), d->dim_v,
                   sa_dtype_name(p->v_type));
  p->kdim = sa_dtype_row(p->k_type, d->dim_qk);
  p->vdim = sa_dtype_row(p->v_type, d->dim_v);
  return SA_OK;
}

/* The default blocks: SA_WIDE_BLOCK_Q x SA_WIDE_BLOCK_KV for fused tiles
 * of many query rows when their working set (a block of K and V, the
 * scores tile, the tile's Q and O rows, in f32) fits the L2 cache one core
 * has (hwloc), else SA_DEFAULT_BLOCK_Q and (unless the context set it)
 * block_kv chosen by plan_make. On Zen 5 (1 MiB L2) the wide blocks ran
 * prefill and cross-attention 1.02-1.11x as fast at d = 64 and 128
 * (docs/DESIGN.md, "Attention drivers"). Decode tiles, paged caches
 * (blocks read in place within 256-key pages), three-pass (a whole row of
 * scores a row) and masks read element by element keep the defaults: a
 * mask that ends a row's keys inside a block costs the rest of the block
 * (a batch padded to its longest: 0.89-0.92x with wide blocks). */
static void wide_blocks(const sa_plan *p, size_t *block_q, size_t *block_kv) {
  *block_q = SA_DEFAULT_BLOCK_Q;
  if (*block_kv || p->algorithm != SA_ALGO_FUSED || p->table || p->scan ||
      p->len_q <= SA_DECODE_ROWS || p->dim_qk + p->dim_v > sa_wide_dims())
    return;
  *block_q = SA_WIDE_BLOCK_Q;
  *block_kv = SA_WIDE_BLOCK_KV;
}

/* Decode (one query position) of f32 K and V with nothing around the
 * softmax (no mask, score_mod step or window) in tiles of at most
 * SA_DECODE_FEW_ROWS rows: what decode_rows takes at least as fast as the
 * three kernels on both x86 sets of a Zen 4 (below; not a Zen 5, nor
 * groups of 3-6 heads on a Zen 3: rows_on_contiguous).
 *
 * Paged, it takes the decode blocks of a contiguous cache, so 256-key pages
 * (shorter than those) go through decode_rows in turns as finer pages do
 * (fused.c), instead of the three kernels a 256-key block in place: every
 * kernel call restarts the K or V stream, and one every 256 keys cost 8-10 %
 * (h32/kv8 batch 8, one Zen 4 core: 256-key pages 1.08-1.09x the
 * contiguous time, now 1.00x; a contiguous cache in 256-key blocks 1.08-1.10x).
 * Up to SA_DECODE_FEW_ROWS rows, as contiguous_by_rows: with 16 (h32/kv2)
 * avx512 ran 0.91x the time through it but avx2 1.06-1.07x. Narrow caches
 * keep 256-key blocks: decode_rows's narrow rows are slower than score_t's
 * and wsum_t's (f16 level, bf16 1.06x slower through it).
 * A window or a mask would leave blocks partial, and those take the
 * three kernels on rows gathered from pages shorter than the block. */
static int f32_decode_few(const sa_plan *p) {
  return p->len_q == 1 && p->k_type == SA_F32 && p->v_type == SA_F32 &&
         !p->mods && !p->window && p->block_q <= SA_DECODE_FEW_ROWS;
}

int sa_contiguous_rows_policy;

/* Whether this machine's contiguous GQA decode of groups of `rows` query
 * heads takes decode_rows (below). Measured faster so on a Zen 4 (32 KiB
 * L1D, 1 MiB L2), slower on a Zen 5 (48 KiB L1D: h32/kv8 and kv4, batch 1
 * and 8, one and two threads, f32 from memory, both paths in one process:
 * avx512 1.12-1.28x the three kernels' time, avx2 1.21x; with its lanes
 * prefetching into L2 instead of L1, 1.23-1.26x), and on a Zen 3 (32 KiB
 * L1D, 512 KiB L2, AVX2 only) slower for groups of 3-6 heads (the three
 * kernels 0.82-0.91x the time: h32/kv8 batch 1 and 8, one and two threads,
 * and groups of 3, 5 and 6) but faster for 7 and 8 (the three kernels
 * 1.03-1.09x: avx2's wsum takes 6 rows a tile, so 7 or 8 rows take it
 * twice). The L1D and the L2 (hwloc) are the lines between the three
 * cores we have measured, and where hwloc reports none the Zen 4 way
 * stands. Unmeasured elsewhere. Pages of 256 keys or more follow the
 * contiguous cache (plan_make): where it takes the three kernels, they
 * take them a page a block in place (h32/kv8 batch 8, 256-key pages over
 * contiguous, Zen 5: 1.08-1.09x, through decode_rows in turns
 * 1.14-1.30x). sa_contiguous_rows_policy (tests) forces either way. */
static int rows_on_contiguous(size_t rows) {
  if (sa_contiguous_rows_policy)
    return sa_contiguous_rows_policy > 0;
  size_t l1d = sa_topology_l1d(), l2 = sa_topology_l2();
  if (l1d == 0)
    return 1;
  if (l1d >= ((size_t)48 << 10))
    return 0;
  return l2 == 0 || l2 >= ((size_t)1 << 20) || rows > SA_SMALL_L2_GROUP;
}

/* Decode of a GQA group of 3 to SA_DECODE_FEW_ROWS query heads over a
 * contiguous head-major f32 cache, with nothing around the softmax: its
 * tiles take decode_rows one at a time, rows listed a block at a time
 * (fused.c), rather than the three kernels, where rows_on_contiguous
 * says so (the cores it was measured faster on). Its chunks read 128-256 keys
 * of K, then of V, with one online step each; the three kernels stream
 * the 4096-key block's K, then its V. h32 over 8 or 4 KV heads (4 or 8
 * rows), batch 8 of 512-4096 keys, one Zen 4 core, paths alternated:
 * avx2 0.79-0.87x the three kernels' time, avx512 0.93-0.95x; two
 * threads 0.75-0.94x and 0.95-0.97x; batch 1 (split-KV) 0.91-0.95x. Left
 * out: 2 rows (level), 16 (avx512 0.89x but avx2 1.15x), 1 (paged f32
 * decode through decode_rows ran 1.09-1.14x the contiguous three
 * kernels'), and narrow caches (decode_rows's narrow rows are slower than
 * score_t's and wsum_t's: docs/DESIGN.md, "Narrow caches in turns"). */
static int contiguous_by_rows(const sa_plan *p) {
  return !p->table && !sa_rows_apart(p) && f32_decode_few(p) &&
         p->block_q > 2 && rows_on_contiguous(p->block_q);
}

/* Other paged calls: SA_DEFAULT_BLOCK_KV keys a block, so that 256-key
 * pages are read in place; decode on longer pages, a page a block up to
 * the contiguous cache's (decode_block), since every kernel call restarts
 * the K or V stream: f16 2048-key pages in 256-key blocks ran at 1.22x the
 * contiguous time (h32/kv8 batch 8, one Zen 4 core). */
static size_t paged_block(const sa_plan *p, size_t decode_block) {
  if (p->len_q != 1 || p->page <= SA_DEFAULT_BLOCK_KV)
    return SA_DEFAULT_BLOCK_KV;
  return p->page < decode_block ? p->page : decode_block;
}

size_t sa_wide_dims(void) {
  const size_t q = SA_WIDE_BLOCK_Q, kv = SA_WIDE_BLOCK_KV;
  /* floats of L2: (kv + q) x (dim_qk + dim_v) of K, V, Q and O rows, and
   * the q x kv scores */
  size_t floats = sa_topology_l2() / sizeof(float);
  return floats > q * kv ? (floats - q * kv) / (q + kv) : 0;
}

sa_status sa_plan_make(const sa_attention_desc *d, size_t block_q,
                       size_t block_kv, sa_plan *p) {
  const size_t dims[] = {d->batch,  d->heads_q, d->heads_kv, d->len_q,
                         d->len_kv, d->dim_qk,  d->dim_v};
  const char *names[] = {"batch",  "heads_q", "heads_kv", "len_q",
                         "len_kv", "dim_qk",  "dim_v"};
  for (int i = 0; i < 7; i++)
    if (dims[i] == 0 || dims[i] > SA_MAX_DIM)
      return sa_fail(SA_ERR_BAD_SHAPE, "%s = %zu is outside [1, 2^31]",
                     names[i], dims[i]);
  if (d->heads_q % d->heads_kv != 0)
    return sa_fail(SA_ERR_BAD_HEADS,
                   "heads_q = %zu is not a multiple of heads_kv = %zu",
                   d->heads_q, d->heads_kv);
  if ((unsigned)d->mask > SA_MASK_CAUSAL_BOTTOM_RIGHT)
    return sa_fail(SA_ERR_BAD_ARGUMENT, "mask = %d is not an sa_mask",
                   (int)d->mask);
  if ((unsigned)d->algorithm > SA_ALGO_FUSED)
    return sa_fail(SA_ERR_BAD_ARGUMENT, "algorithm = %d is not an sa_algorithm",
                   (int)d->algorithm);
  /* any finite scale, negative ones included, is a well-defined softmax */
  if (!isfinite(d->scale))
    return sa_fail(SA_ERR_BAD_ARGUMENT, "scale is not finite");
  sa_status st;
  if ((st = plan_types(d, p)))
    return st;

  p->batch = d->batch;
  p->heads_q = d->heads_q;
  p->heads_kv = d->heads_kv;
  p->group = d->heads_q / d->heads_kv;
  p->len_q = d->len_q;
  p->len_kv = d->len_kv;
  p->dim_qk = d->dim_qk;
  p->dim_v = d->dim_v;
  p->scale = d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)d->dim_qk);
  p->scale2 = sa_log2_units(p->scale);
  if (!isfinite(p->scale2))
    p->scale2 = 0.0f;
  p->mask = d->mask;
  p->algorithm = d->algorithm == SA_ALGO_AUTO ? SA_ALGO_FUSED : d->algorithm;
  p->q = d->q;
  p->k = d->k;
  p->v = d->v;
  p->o = d->o;

  /* How many (outer, rows) each tensor spans: [batch, len] normally,
   * [1, tokens] for a ragged side, [pages, page_size] for a paged cache. */
  size_t qn = p->batch, ql = p->len_q, kn = p->batch, kl = p->len_kv;
  if ((st = plan_ragged(d, p, &qn, &ql, &kn, &kl)))
    return st;
  if ((st = sa_strides_resolve("q", &p->q, p->heads_q, p->len_q, p->dim_qk)) ||
      (st = sa_strides_resolve("k", &p->k, p->heads_kv, p->len_kv, p->kdim)) ||
      (st = sa_strides_resolve("v", &p->v, p->heads_kv, p->len_kv, p->vdim)) ||
      (st = sa_strides_resolve("o", &p->o, p->heads_q, p->len_q, p->dim_v)) ||
      (st = sa_strides_extent("q", &p->q, qn, p->heads_q, ql, p->dim_qk,
                              p->unit[0], &p->end[0])) ||
      (st = sa_strides_extent("k", &p->k, kn, p->heads_kv, kl, p->kdim,
                              p->unit[1], &p->end[1])) ||
      (st = sa_strides_extent("v", &p->v, kn, p->heads_kv, kl, p->vdim,
                              p->unit[2], &p->end[2])) ||
      (st = sa_strides_extent("o", &p->o, qn, p->heads_q, ql, p->dim_v,
                              p->unit[3], &p->end[3])) ||
      (ql && (st = no_alias("o", &p->o, qn, p->heads_q, ql, p->dim_v))) ||
      (st = plan_extras(d, p, qn, ql)) || (st = plan_paged(p)))
    return st;

  if (block_q == 0) /* the context leaves both to the call's shape */
    wide_blocks(p, &block_q, &block_kv);
  p->block_q = block_q < p->len_q ? block_q : p->len_q;
  if (p->len_q == 1 && p->group > 1) /* decode: a KV group's heads as rows */
    p->block_q = block_q < p->group ? block_q : p->group;
  if (block_kv == 0) { /* the context leaves it to the call's shape */
    block_kv = p->block_q <= SA_DECODE_FEW_ROWS ? SA_DECODE_FEW_BLOCK_KV
               : p->block_q <= SA_DECODE_ROWS   ? SA_DECODE_BLOCK_KV
               : p->block_q <= SA_GROUP_ROWS    ? SA_GROUP_BLOCK_KV
                                                : SA_DEFAULT_BLOCK_KV;
    if (p->table && (!f32_decode_few(p) || (p->page >= SA_DEFAULT_BLOCK_KV &&
                                            !rows_on_contiguous(p->block_q))))
      block_kv = paged_block(p, block_kv);
  }
  p->block_kv = block_kv < p->len_kv ? block_kv : p->len_kv;

  /* Fused: the scores tile, five floats per row (mx, l, alpha, slope,
   * distance), room for the tile's Q rows (used only when O is Q,
   * sa_plan_memory), and for a block of strided mask rows gathered
   * contiguous. Three-pass: a whole row block of scores, the rest alike. */
  int fused = p->algorithm == SA_ALGO_FUSED;
  size_t cols = fused ? p->block_kv : p->len_kv;
  p->lds = round_up16(cols);
  size_t tile, extra, qrows = 0, orows = 0, gadd = 0, gbool = 0;
  int ov = mul_ov(p->block_q, p->lds, &tile) || mul_ov(p->block_q, 5, &extra) ||
           ((fused || p->q_type != SA_F32) &&
            mul_ov(p->block_q, p->dim_qk, &qrows)) ||
           (p->o_type != SA_F32 && mul_ov(p->block_q, p->dim_v, &orows)) ||
           add_ov(tile, extra, &p->qcopy) ||
           add_ov(p->qcopy, qrows, &p->ostage) ||
           add_ov(p->ostage, orows, &p->gather);
  if (!ov && p->mask_add && p->add_at.key != 1)
    gadd = tile;
  if (!ov && p->mask_bool && p->bool_at.key != 1)
    gbool = (tile + 3) / 4;
  /* paged keys in pages smaller than a key block: the block's K and V rows
   * are gathered contiguous, or (decode) their addresses listed, two
   * pointers a key at an even float offset */
  size_t gkv = 0, glist = 0;
  p->list_keys = 0;
  const int paged_list = p->table && !sa_pages_in_place(p);
  if (!ov && (paged_list || (fused && contiguous_by_rows(p)))) {
    /* a decode call takes up to SA_DECODE_BLOCK_KV keys (fewer calls, and
     * the kernel's prefetch runs on across pages within one) */
    p->list_keys =
        p->len_kv < SA_DECODE_BLOCK_KV ? p->len_kv : SA_DECODE_BLOCK_KV;
    if (p->list_keys < p->block_kv)
      p->list_keys = p->block_kv;
    ov = (paged_list && /* f32: the most */
          mul_ov(p->block_kv, p->dim_qk + p->dim_v, &gkv)) ||
         mul_ov(p->list_keys, 2 * sizeof(void *) / sizeof(float), &glist);
  }
  /* ...and when decode's tiles may run together (attention.c) with Q or O
   * narrow, each tile's Q widened and O staged, as run_tile does for one */
  size_t gtog = 0;
  if (!ov && sa_decode_by_rows(p) &&
      (p->q_type != SA_F32 || p->o_type != SA_F32))
    ov = mul_ov(SA_TOGETHER_MAX * p->block_q, p->dim_qk + p->dim_v, &gtog);
  if (ov || add_ov(p->gather, gadd, &p->kvgather) ||
      add_ov(p->kvgather, gbool, &p->kvgather) ||
      add_ov(p->kvgather, gkv, &p->rowlist) ||
      add_ov(p->rowlist, p->rowlist & 1, &p->rowlist) || /* even */
      add_ov(p->rowlist, glist, &p->together) ||
      add_ov(p->together, gtog, &p->scratch_floats) ||
      p->scratch_floats > (size_t)PTRDIFF_MAX / sizeof(float) / 2)
    return sa_fail(SA_ERR_OVERFLOW, "workspace of %zu x %zu floats overflows",
                   p->block_q, p->lds);
  p->rowvals = tile;
  p->together = gtog ? p->together : 0;
  p->scratch_lens = 5 * p->block_q;
  p->in_place = 0;
  p->q_direct = 0;
  return SA_OK;
}

int sa_overlaps(const void *a, size_t a_bytes, const void *b, size_t b_bytes) {
  uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
  return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

sa_status sa_plan_memory(sa_plan *p, const void *q, const void *k,
                         const void *v, const void *o) {
  static const char *names[] = {"q", "k", "v"};
  const void *in[] = {q, k, v};
  size_t bytes[4];
  for (int t = 0; t < 4; t++)
    bytes[t] = p->end[t] * p->unit[t];
  for (int t = 0; t < 3; t++) {
    if (!sa_overlaps(o, bytes[3], in[t], bytes[t]))
      continue;
    /* O exactly Q: row r of a tile is read (all of it, first) only by the
     * tile that writes it. An f32 O is the fused driver's accumulator, so
     * it copies the tile's Q rows first; any other O is staged in f32 and
     * written when the tile is done. */
    if (t == 0 && o == q && p->dim_v == p->dim_qk && p->q_type == p->o_type &&
        memcmp(&p->o, &p->q, sizeof p->o) == 0) {
      p->in_place = p->o_type == SA_F32;
      continue;
    }
    return sa_fail(SA_ERR_BAD_STRIDE,
                   "o overlaps %s; only o == q with the same strides, "
                   "type and dim_v == dim_qk (in place) is allowed",
                   names[t]);
  }
  /* Masks are read while O and LSE are written: neither may overlap them.
   * Bytes of the boolean mask are counted as a quarter float, rounded up. */
  const void *masks[] = {p->mask_add, p->mask_bool};
  size_t mask_end[] = {p->end_extra[0] * sizeof(float), p->end_extra[1]};
  size_t lse_end = p->end_extra[2] * sizeof(float);
  static const char *mask_names[] = {"mask_add", "mask_bool"};
  for (int t = 0; t < 2; t++)
    if (masks[t] &&
        (sa_overlaps(o, bytes[3], masks[t], mask_end[t]) ||
         (p->lse && sa_overlaps(p->lse, lse_end, masks[t], mask_end[t]))))
      return sa_fail(SA_ERR_BAD_STRIDE, "o or lse overlaps %s", mask_names[t]);
  const void *all[] = {q, k, v, o};
  static const char *all_names[] = {"q", "k", "v", "o"};
  for (int t = 0; p->lse && t < 4; t++)
    if (sa_overlaps(p->lse, lse_end, all[t], bytes[t]))
      return sa_fail(SA_ERR_BAD_STRIDE, "lse overlaps %s", all_names[t]);
  return SA_OK;
}
