/* Internal: the resolved form of a descriptor, and the context's insides. */
#ifndef SA_ATTENTION_INTERNAL_H
#define SA_ATTENTION_INTERNAL_H

#include <stdatomic.h>

#include "simdattn.h"
#include "threads/pool.h"

#define SA_DEFAULT_BLOCK_Q 64
#define SA_DEFAULT_BLOCK_KV 256
/* Prefill's blocks where a core's L2 holds their working set (plan.c). */
#define SA_WIDE_BLOCK_Q 128
#define SA_WIDE_BLOCK_KV 512
/* Tiles of at most SA_DECODE_ROWS rows (decode: one position, or a GQA
 * group's heads stacked) take SA_DECODE_BLOCK_KV keys a step unless the
 * context sets block_kv: their score tile stays small, and every kernel
 * call restarts the K or V stream the prefetchers follow (see
 * docs/DESIGN.md, "Element types"). Paged caches keep SA_DEFAULT_BLOCK_KV,
 * so that 256-key pages are still read in place, except decode (plan.c:
 * f32_decode_few, paged_block). */
#define SA_DECODE_ROWS 16
#define SA_DECODE_BLOCK_KV 1024
/* ...and those of at most SA_DECODE_FEW_ROWS rows (MHA's one, GQA groups
 * of up to 8 heads) SA_DECODE_FEW_BLOCK_KV: their tile is still 128 KiB at
 * most, and a quarter as many calls restart the K and V streams a quarter
 * as often (4 rows on Zen 5: f32 KV decode 1.01-1.04x, f16 1.02-1.09x,
 * bf16 1.04-1.06x, q8_0 1.03-1.06x; at 16 rows 0.97-0.99x, so those keep
 * 1024; docs/DESIGN.md, "Decode key blocks"). */
#define SA_DECODE_FEW_ROWS 8
#define SA_DECODE_FEW_BLOCK_KV 4096
/* Tiles of up to SA_GROUP_ROWS rows (an MQA group of query heads) take
 * SA_GROUP_BLOCK_KV keys: score's first Kᵀ panel of each call comes from
 * memory unprefetched, and 512 keys halve how often (the MQA row 1.065x
 * against 256; 1024 no better, and half the split-KV parts). */
#define SA_GROUP_ROWS 32
#define SA_GROUP_BLOCK_KV 512
/* A key block that the tile's last rows see further into than its first
 * (the causal diagonal) has its value sums taken SA_DIAG_ROWS rows at a
 * time, and its scores too where the set's score_upto cannot take them
 * (narrow K, bf16 Q read directly), each group only as far as its own
 * rows see (attention/fused.c). More rows than an
 * MQA group (SA_GROUP_ROWS), the most rows any set's score or wsum treats
 * as a few: a group then takes the kernels' ways of the whole tile. */
#define SA_DIAG_ROWS 64
_Static_assert(SA_DIAG_ROWS > SA_GROUP_ROWS, "diagonal groups are wide");

/* Per-worker scratch, grown on demand and kept across calls (or carved from
 * the caller's workspace). */
typedef struct sa_scratch {
  float *buf;    /* scores tile, then mx, l, alpha, then (fused) a Q copy */
  size_t *len;   /* valid keys per row of the tile, then per block */
  size_t floats; /* capacity of buf */
  size_t lens;   /* capacity of len */
} sa_scratch;

/* Split-KV: when a call has fewer tiles than this, each tile's keys are cut
 * into parts that run as separate tasks and are merged by their LSEs. A
 * constant, not the thread count, so the output stays bit-identical for any
 * number of threads; 32 covers the cores one context is likely to have. */
#define SA_SPLIT_TILES 32
/* ...and a part has at least this many key blocks, so that the partial
 * results (m x dv floats, written and merged once) stay small beside the
 * part's K and V, or SA_SPLIT_MIN_KEYS keys where fewer blocks hold them
 * (SA_DECODE_FEW_BLOCK_KV: parts as long as with 4 blocks of 1024). */
#define SA_SPLIT_MIN_BLOCKS 4
#define SA_SPLIT_MIN_KEYS 4096
/* ...and merged SA_MERGE_ROWS rows a task. */
#define SA_MERGE_ROWS 8
/* Decode over paged or token-major caches: the tiles of one sequence (its
 * KV heads) run together, SA_TOGETHER_KEYS keys of each in turn (in a
 * split call, the same part of each), so the rows of a page, or of a
 * token, are read close in time rather than one head's across the whole
 * sequence (docs/DESIGN.md, "Heads together"). The keys a turn are a
 * multiple of every set's decode chunk, so a tile's decode_rows calls chunk
 * its keys as one call over all of them would, and the output is the same
 * bits whichever tiles share a task. */
#define SA_TOGETHER_MAX 16
#define SA_TOGETHER_KEYS 256

struct sa_context {
  /* 0 while free, else the fork generation of the call running on it, + 1:
   * a value from another generation was left by a parent's thread that does
   * not exist in this process, and is taken over. */
  atomic_uint busy;
  const sa_kernel_set *ks;
  sa_pool *pool;
  sa_pool_config pool_cfg;  /* kept to start the pool again after fork() */
  size_t block_q, block_kv; /* 0: chosen per call (plan.c) */
  sa_scratch *scratch;      /* one per worker */
  int nthreads;
  unsigned char *workspace; /* the caller's, 64-byte aligned; NULL: ours */
  size_t workspace_bytes;   /* its size from there */
  float *split;             /* split-KV partial results (ours) */
  size_t split_floats;
};

/* Takes the context for one call: SA_OK, or SA_ERR_BUSY if a call is running
 * on it; restarts its pool first if this process is a fork() child. */
sa_status sa_context_enter(sa_context *ctx);
void sa_context_leave(sa_context *ctx);

/* The calling thread's own one-thread context, made on its first use. */
sa_status sa_context_thread_default(sa_context **out);

/* Scratch pieces start on cache lines: 64-byte rows of the score tile. */
static inline size_t sa_round64(size_t bytes) {
  return (bytes + 63) & ~(size_t)63;
}

/* Bytes of one worker's scratch for a plan (64-byte aligned pieces). */
size_t sa_scratch_bytes(size_t floats, size_t lens);

/*
 * Copies a caller's struct that begins with struct_size into the library's
 * own of `have` bytes: fields past the caller's size read as zero, fields the
 * library does not know must be zero. min: the smallest size ever accepted.
 */
sa_status sa_struct_load(const char *what, const void *user, size_t min,
                         size_t have, void *out);

/* A mask tensor, resolved: strides never all zero, keys never 0. */
typedef struct sa_mask_at {
  size_t batch, head, row, key, keys;
} sa_mask_at;

/* x in log2 units (x * log2(e), rounded once), as the fused driver takes
 * scores, sinks, slopes and the softcap when it runs the online step in
 * base 2. */
static inline float sa_log2_units(float x) {
  return (float)((double)x * 1.4426950408889634);
}

/* Everything a tile needs, checked and with defaults filled in. */
typedef struct sa_plan {
  size_t batch, heads_q, heads_kv, group, len_q, len_kv, dim_qk, dim_v;
  float scale;
  float scale2; /* scale in log2 units; 0 where it, the softcap, a slope or
                   a finite sink is not finite there (the fused driver then
                   stays in base e) */
  sa_mask mask;
  sa_algorithm algorithm;
  sa_strides q, k, v, o;
  size_t block_q, block_kv;
  size_t lds;            /* row stride of the scores tile, in floats */
  size_t qcopy;          /* fused: where a tile's Q rows are copied, in buf */
  size_t rowvals;        /* per-row mx, l, alpha, slope, distance, in buf */
  size_t gather;         /* where strided mask rows are gathered, in buf */
  size_t scratch_floats; /* per worker */
  size_t scratch_lens;   /* per worker */
  size_t end[4];         /* q, k, v, o: elements from the base to past the
                            last element */
  int in_place;          /* o is q (f32): the fused driver copies Q rows */

  /* 0.4: element types. Strides, extents (end) and kdim / vdim count each
   * tensor's units: elements, or q8_0 blocks of unit[] bytes. */
  sa_dtype q_type, k_type, v_type, o_type;
  size_t unit[4]; /* bytes per unit of q, k, v, o */
  size_t kdim, vdim;
  size_t ostage; /* a narrow O's rows accumulate here in f32, in buf */
  int q_direct;  /* Q and K bf16 go to the set's score_bf16 as they are */

  /* 0.3: around the softmax (see sa_attention_desc) */
  const float *mask_add;
  const uint8_t *mask_bool;
  sa_mask_at add_at, bool_at;
  size_t keys;    /* keys any row may see: min(len_kv, the masks' keys) */
  int window;     /* wl, wr apply */
  int64_t wl, wr; /* -1: unbounded on that side */
  float softcap;  /* 0: off */
  const float *slopes, *sinks;
  const int64_t *len_valid;
  float *lse;
  sa_strides lse_at;
  const int32_t *cu_q, *cu_kv; /* ragged sides (varlen), or NULL */
  const int32_t *table;        /* paged keys, or NULL */
  size_t table_ld, page, npages;
  size_t kvgather;     /* paged, small pages: a key block gathered, in buf */
  size_t rowlist;      /* listed decode: list_keys K, then V row addresses */
  size_t list_keys;    /* keys a listed decode call takes at most */
  size_t together;     /* decode in turns (paged or token-major) with a
                          narrow Q or O: the f32 Q rows then O rows of
                          SA_TOGETHER_MAX tiles, in buf (0: none) */
  size_t end_extra[3]; /* add, bool (bytes), lse: elements spanned */
  int scan;            /* a mask can remove keys inside a row's range */
  int mods;            /* score_mod has a step besides the window's edge */
  int online;          /* three-pass normalises after wsum (sinks, lse) */
} sa_plan;

/* Strides of a [batch, heads, len, dim] tensor in its units (elements, or
 * q8_0 blocks, dim then counting units too), shared by every entry point
 * that takes them (attention, merge, kv_append): resolve fills all-zero
 * strides in as packed [batch, heads, len, dim]; extent gives the highest
 * unit offset + 1 (0 when batch or len is 0), SA_ERR_OVERFLOW unless it
 * fits in ptrdiff_t bytes at `unit` bytes each, so pointer arithmetic on
 * it is defined. `name` is the tensor's, for the message. */
sa_status sa_strides_resolve(const char *name, sa_strides *st, size_t heads,
                             size_t len, size_t dim);
sa_status sa_strides_extent(const char *name, const sa_strides *st,
                            size_t batch, size_t heads, size_t len, size_t dim,
                            size_t unit, size_t *end);

/* Do [a, a + a_bytes) and [b, b + b_bytes) share a byte? Compared
 * as integers: the tensors may come from different allocations, where
 * comparing pointers is not defined. */
int sa_overlaps(const void *a, size_t a_bytes, const void *b, size_t b_bytes);

/* base + units of `unit` bytes each. */
static inline const void *sa_at(const void *base, size_t units, size_t unit) {
  return (const char *)base + units * unit;
}

/* The largest dim_qk + dim_v whose wide blocks fit a core's L2 (0: none,
 * or no L2 found). */
size_t sa_wide_dims(void);

/* Validates desc (no pointer checks) into plan; SA_OK or the reason.
 * block_q / block_kv 0: the defaults for the call's shape. */
sa_status sa_plan_make(const sa_attention_desc *desc, size_t block_q,
                       size_t block_kv, sa_plan *plan);

/* The pointer checks: O may be Q exactly (sets plan->in_place), and must
 * not otherwise overlap Q, K or V (SA_ERR_BAD_STRIDE); LSE overlaps none of
 * them, and neither O nor LSE overlaps a mask. */
sa_status sa_plan_memory(sa_plan *plan, const void *q, const void *k,
                         const void *v, const void *o);

/* Paged keys: blocks are cut at page boundaries and read in place when a
 * page holds a whole key block. Smaller pages: a decode tile hands the set's
 * decode_rows the block's row addresses (its chunks span pages); other
 * tiles, and blocks a mask cuts, are gathered contiguous per block. */
static inline int sa_pages_in_place(const sa_plan *p) {
  return p->page >= p->block_kv;
}

/* Token-major keys ([B, L, H, D], ragged [tokens, H, D]): a head's K or
 * V rows are not adjacent, so one head's stream hops a row of every head
 * apart. Decode reads such caches a sequence's heads together
 * (sa_tiles_fused_decode), as it reads pages finer than a key block. */
static inline int sa_rows_apart(const sa_plan *p) {
  return !p->table && (p->k.seq != p->kdim || p->v.seq != p->vdim);
}

/* The set has a decode_rows, and the plan asks nothing around the softmax
 * that it lacks (no score_mod step, no scan for masked keys). */
static inline int sa_decode_rows_fit(const sa_kernel_set *ks,
                                     const sa_plan *p) {
  return ks->decode_rows && !p->mods && !p->scan;
}

/* Under 1 MiB of L2 a core's contiguous GQA decode takes the three
 * kernels for groups of up to this many query heads (plan.c,
 * rows_on_contiguous). */
#define SA_SMALL_L2_GROUP 6

/* How contiguous GQA decode runs (plan.c, rows_on_contiguous): 0 as this
 * machine's caches say, 1 through decode_rows, -1 through the three
 * kernels.
 * Tests set it to run both ways; set only while no call runs. */
extern int sa_contiguous_rows_policy;

/* Decode whose tiles can take the set's decode_rows in turns: one query
 * position, tiles of at most SA_DECODE_ROWS rows, keys paged finer than a
 * key block (listed) or token-major. The shape alone decides. (A
 * contiguous head-major cache listed for decode_rows gains nothing from
 * turns: its tiles go one at a time.) */
static inline int sa_decode_by_rows(const sa_plan *p) {
  return ((p->table && p->list_keys) || sa_rows_apart(p)) && p->len_q == 1 &&
         p->block_q <= SA_DECODE_ROWS;
}

/* Batch item b's query rows, and its keys (ragged, paged or valid length). */
static inline size_t sa_batch_len_q(const sa_plan *p, size_t b) {
  return p->cu_q ? (size_t)(p->cu_q[b + 1] - p->cu_q[b]) : p->len_q;
}
static inline size_t sa_batch_len_kv(const sa_plan *p, size_t b) {
  size_t len = p->cu_kv ? (size_t)(p->cu_kv[b + 1] - p->cu_kv[b]) : p->len_kv;
  if (p->len_valid && (size_t)p->len_valid[b] < len)
    len = (size_t)p->len_valid[b];
  return len;
}

/* Where query position i of batch item b sits: its diagonal key c(i). */
static inline int64_t sa_row_diagonal(const sa_plan *p, size_t b, size_t i) {
  if (p->mask != SA_MASK_CAUSAL_BOTTOM_RIGHT)
    return (int64_t)i;
  return (int64_t)i + (int64_t)sa_batch_len_kv(p, b) -
         (int64_t)sa_batch_len_q(p, b);
}

/* The keys [*lo, *hi) that query position i of batch item b may see before
 * the masks' contents are read; *lo == *hi when none. Inline: the drivers
 * call it for every row of every tile. */
static inline void sa_row_keys(const sa_plan *p, size_t b, size_t i, size_t *lo,
                               size_t *hi) {
  /* all in int64: sizes are at most 2^31, so nothing here overflows */
  int64_t h = (int64_t)p->keys, l = 0, c = sa_row_diagonal(p, b, i);
  int64_t len = (int64_t)sa_batch_len_kv(p, b);
  h = len < h ? len : h;
  if (p->mask != SA_MASK_NONE && c + 1 < h)
    h = c + 1;
  if (p->wr >= 0 && c + p->wr + 1 < h)
    h = c + p->wr + 1;
  if (p->wl >= 0 && c - p->wl > l)
    l = c - p->wl;
  if (h <= l)
    h = l = 0;
  *lo = (size_t)l;
  *hi = (size_t)h;
}

/* One tile: rows of query heads [h0, h0+nh) at positions [i0, i0+m).
 * Either nh == 1 (a block of positions) or m == 1 (decode: the query heads
 * of one KV group stacked as rows, strided by the head stride). */
typedef struct sa_tile {
  size_t b, h0, nh, i0, m;
} sa_tile;

typedef struct sa_tile_io {
  const void *q;     /* f32 rows (narrow ones are widened into scratch first),
                        or bf16 ones when the plan says q_direct */
  const void *k, *v; /* the KV head's key 0, in the plan's types */
  float *o;          /* f32 rows: the caller's, or scratch for a narrow O */
  size_t ldq, ldo;   /* row strides of this tile's Q and O rows, in units */
  size_t m;          /* rows */
  size_t b;          /* batch item */
  size_t pos;        /* query position of row 0; rows advance it by `step` */
  size_t step;       /* 1 for a block of positions, 0 for stacked heads */
  size_t h0;         /* query head of row 0; stacked rows advance it by 1 */
  float *lse;        /* row 0's LSE, rows ldlse apart; NULL: none wanted */
  size_t ldlse;
  size_t part, parts; /* split-KV: this task does part `part` of `parts`
                         of the tile's keys (1 part: all of them) */
  float *kept;        /* split-KV: per row, 1 if it kept a key in the part */
} sa_tile_io;

/* score and wsum for the plan's element types: f32, a narrow K or V
 * (score_t, wsum_t), or bf16 Q and K both (score_bf16). One branch per
 * kernel call; the kernels are where the time goes. */
static inline void sa_score_any(const sa_kernel_set *ks, const sa_plan *p,
                                size_t m, size_t n, const void *q, size_t ldq,
                                const void *k, size_t ldk, float scale,
                                float *s) {
  if (p->q_direct)
    ks->score_bf16(m, n, p->dim_qk, q, ldq, k, ldk, scale, s, p->lds);
  else if (p->k_type == SA_F32)
    ks->score(m, n, p->dim_qk, q, ldq, k, ldk, scale, s, p->lds);
  else
    ks->score_t[p->k_type](m, n, p->dim_qk, q, ldq, k, ldk, scale, s, p->lds);
}
static inline void sa_wsum_any(const sa_kernel_set *ks, const sa_plan *p,
                               size_t m, size_t n, const float *s,
                               const void *v, size_t ldv, const float *beta,
                               float *o, size_t ldo) {
  if (p->v_type == SA_F32)
    ks->wsum(m, n, p->dim_v, s, p->lds, v, ldv, beta, o, ldo);
  else
    ks->wsum_t[p->v_type](m, n, p->dim_v, s, p->lds, v, ldv, beta, o, ldo);
}

/* The set's score_upto can take the plan's rows (a block they see to
 * different depths): f32 K, Q not bf16-direct. */
static inline int sa_upto_fits(const sa_kernel_set *ks, const sa_plan *p) {
  return ks->score_upto && !p->q_direct && p->k_type == SA_F32;
}

void sa_tile_three_pass(const sa_kernel_set *ks, const sa_plan *p,
                        const sa_tile_io *t, sa_scratch *ws);
void sa_tile_fused(const sa_kernel_set *ks, const sa_plan *p,
                   const sa_tile_io *t, sa_scratch *ws);
/* Whether decode's tiles run in turns (sa_tiles_fused_decode), a task
 * taking one or several. */
int sa_fused_together(const sa_kernel_set *ks, const sa_plan *p);
/* nt <= SA_TOGETHER_MAX tiles of one sequence, key turn by key turn; on a
 * paged cache, as sa_tile_fused on each, bit for bit. */
void sa_tiles_fused_decode(const sa_kernel_set *ks, const sa_plan *p,
                           const sa_tile_io *t, size_t nt, sa_scratch *ws);

/* ---- what both tile drivers share (attention/rows.c) */

/* Per-row state, in a worker's scratch. */
typedef struct sa_rows {
  size_t *lo, *hi;   /* each row's key range, absolute */
  size_t *lob, *hib; /* the range clipped to the current block, relative */
  size_t *seen;      /* nonzero once a key of the row survived the masks */
  float *mx, *l, *alpha, *slope, *dist;
  size_t jlo, jhi; /* union of the rows' ranges; jlo == jhi: none */
  int log2;        /* scores in log2 units: mx too, and the step in base 2 */
  float scale;     /* score's scale: the plan's, times log2(e) when log2 */
} sa_rows;

/* Ranges, softmax state (sinks included) and slopes of tile t's rows; in
 * log2 units when log2 (the fused driver, unless an additive mask). */
void sa_rows_start(const sa_plan *p, const sa_tile_io *t, sa_scratch *ws,
                   int log2, sa_rows *r);

/* The same in the caller's storage: idx 5 bq indices, vals 5 bq floats,
 * bq >= t->m. */
void sa_rows_start_in(const sa_plan *p, const sa_tile_io *t, size_t *idx,
                      float *vals, size_t bq, int log2, sa_rows *r);

/* For the key block [j0, j0 + nb): clips the ranges into lob/hib, marks
 * rows that keep a key there as seen; returns 0 when the masks remove the
 * block for the whole tile. *partial: some row ends inside it; *left: some
 * row starts inside it. */
int sa_rows_block(const sa_plan *p, const sa_tile_io *t, sa_rows *r, size_t j0,
                  size_t nb, int *partial, int *left);

/* score_mod on the block's scores, when some step or the window asks. */
void sa_rows_mods(const sa_kernel_set *ks, const sa_plan *p,
                  const sa_tile_io *t, sa_scratch *ws, const sa_rows *r,
                  size_t j0, size_t nb, int left);

/* One row of a merge: n parts' LSEs and output rows (dv floats each) into
 * out, which may be one of them; w holds n floats of scratch. Returns the
 * merged LSE. */
float sa_merge_row(size_t n, const float *lse, const float *const *rows,
                   float *w, float *out, size_t dv);

/* The online softmax's end: O rows divided by l (zeros for a row that kept
 * no key, NaN for one whose kept scores were all -inf), and their LSE. */
void sa_rows_finish(const sa_plan *p, const sa_tile_io *t, const sa_rows *r);

#endif
