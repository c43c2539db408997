/*
 * Two ways of naming rows ahead of a kernel. The second, sa_spread (at the
 * end), is for score's GEMM ways: the next Kᵀ panel's rows, a few lines
 * between chunks of a tile's steps.
 *
 * A prefetch cursor for the kernels that stream rows from memory with few
 * query rows (avx2's and avx512's score dot products and wsum, f32 and
 * narrow):
 * it names the 64-byte lines of rows [0, n) once each, in address order,
 * row after row, a bounded number of rows ahead of the reader, a few lines
 * at a time as the reader goes.
 *
 * Why address order. A score tile reads three or four rows side by side, 32
 * bytes of each at a time; prefetching the lines of the rows a fixed number
 * of keys ahead in that same order (each line named twice, hopping between
 * rows) streamed a contiguous f32 K at 9-11 GB/s on a Zen 3 core whose read
 * probe reaches 19; naming the same lines once each, ascending, streamed it
 * at 15-19 GB/s (kernel called directly, m = 4, d = 128, 16 MB caches
 * rotated). The hardware prefetchers follow an ascending stream of
 * requests, not one that jumps back and forth between rows.
 *
 * Pacing is the caller's: before each block of work it raises the cursor to
 * at least `ahead` rows past the block's first row (a cursor that fell
 * behind jumps, rather than naming lines the reader already has), and as
 * the block goes it names lines up to a row limit: a line at a time as it
 * steps (sa_prefetch_next: the f32 kernels, bound by memory) or a row at a
 * time (sa_prefetch_until: the narrow ones, where the cursor's own
 * instructions would show). A cursor that runs ahead of the limit waits.
 * Nothing is named at or past row n, so no line outside the rows is
 * touched. Measured, the line-at-a-time trickle streamed f32 K about a
 * tenth faster than a burst of whole rows per tile, at about 80
 * instructions a key.
 *
 * Pages ahead. A caller can ask that each time the cursor names the first
 * line of a 4 KiB page, the line SA_PREFETCH_FAR bytes further on be named
 * too, if it is in one of the rows: the first touch of every page then
 * comes that far ahead of the reader. The hardware prefetchers stop at 4
 * KiB pages, and the first access to a page waits for its translation (in
 * a virtual machine, a two-level walk); touched early, neither stalls the
 * stream. On the Zen 5 VM (f32, d = 128, 4 rows, caches rotated through
 * 512 MiB) it took the three kernels' decode from 21-22 to 30-33 GB/s, and
 * a plain read loop that names only each page's first line 16 KiB ahead
 * read 40-42 GB/s against 29-34 without (the bench's read probe measures
 * that way too: bench/peak_mem.c). Rows that never hold a page's first
 * line (a head's rows inside [tokens, heads, d]) get nothing more. Naming
 * only the pages, without the line-by-line trickle, halved the kernels'
 * stream: the hardware does not follow their hops between rows.
 *
 * Plain C with a compiler builtin (a hint, which never faults): any kernel
 * folder includes it whatever its ISA flags.
 */
#ifndef SA_KERNELS_PREFETCH_H
#define SA_KERNELS_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct sa_prefetcher {
  const char *base; /* row 0 */
  size_t ld;        /* bytes from one row to the next */
  size_t bytes;     /* bytes of a row that are read (0: none) */
  size_t n;         /* rows */
  size_t row;       /* the row whose lines are being named, <= n */
  const char *line; /* its next line (NULL: none left) */
  const char *end;  /* one past its last byte */
} sa_prefetcher;

/* How far ahead of the cursor a page's first touch goes, for the callers
 * of sa_prefetch_next that ask (`pages`): 8 and 16 KiB measured alike, 32
 * KiB a little slower. The f32 kernels ask; the narrow ones (f16 / bf16 /
 * q8_0 decode) measured 0.76-0.92x with pages ahead on the Zen 5 VM, so
 * they ask for nothing and compile to what they were (their bursts,
 * sa_prefetch_until, have no pages ahead at all). */
#define SA_PREFETCH_FAR 16384

/* The 64-byte line that holds address p. */
static inline const char *sa_line_of(const void *p) {
  return (const char *)((uintptr_t)p & ~(uintptr_t)63);
}

/* The first line of row pf->row (none past the last row). */
static inline void sa_prefetcher_seek(sa_prefetcher *pf, size_t row) {
  pf->row = row < pf->n ? row : pf->n;
  pf->line = pf->end = NULL;
  if (pf->row < pf->n && pf->bytes) {
    const char *r = pf->base + pf->row * pf->ld;
    pf->line = sa_line_of(r);
    pf->end = r + pf->bytes;
  }
}

/* A cursor over n rows of `bytes` bytes, ld bytes apart, from row `first`. */
static inline sa_prefetcher sa_prefetcher_at(const void *base, size_t ld,
                                             size_t bytes, size_t n,
                                             size_t first) {
  sa_prefetcher pf = {(const char *)base, ld, bytes, n, 0, NULL, NULL};
  sa_prefetcher_seek(&pf, first);
  return pf;
}

/* Jump forward to row `row` if the cursor is behind it. */
static inline void sa_prefetcher_raise(sa_prefetcher *pf, size_t row) {
  if (pf->row < row)
    sa_prefetcher_seek(pf, row);
}

/* Name the line at x into every cache level, or (l2) into L2 and out: the
 * builtin wants its locality as a constant. */
static inline __attribute__((always_inline)) void
sa_prefetch_line(const void *x, int l2) {
  if (l2)
    __builtin_prefetch(x, 0, 2);
  else
    __builtin_prefetch(x, 0, 3);
}

/* The first line of the last 4 KiB page that starts inside the row, if
 * one does: a page's first touch, ahead of the row prefetch that reads
 * it. And the row's own first line, into L2, when the row starts inside a
 * page: a row that follows a jump (the next head slice of a paged cache,
 * the next token of a token-major one) may start in a page the stream has
 * not touched. avx512's decode lanes touch each row's page so, some rows
 * before they name its lines; bench/'s plain read does as they do. 16-key
 * pages, f32, h32/kv8 batch 8, one Zen 4 core, pool 64 bytes into its
 * first page: 1.14-1.15x -> 1.10x the contiguous time, page-aligned 1.10x
 * -> 1.07-1.08x, two threads 1.11-1.14x -> 1.09-1.10x (medians of 21-31,
 * builds alternated). */
static inline __attribute__((always_inline)) void sa_touch_page(const char *row,
                                                                size_t bytes) {
  uintptr_t pg = ((uintptr_t)row + bytes - 1) & ~(uintptr_t)4095;
  if (pg >= (uintptr_t)row)
    sa_prefetch_line((const char *)pg, 0);
  if ((uintptr_t)row & 4095)
    sa_prefetch_line(row, 1);
}

/* Called with each line x a cursor with pages ahead names: when x is a
 * page's first line, name the line SA_PREFETCH_FAR bytes on if it lies in
 * a row (a division per page, not per line). */
static inline __attribute__((always_inline)) void
sa_prefetch_far(sa_prefetcher *pf, const char *x, int l2) {
  if (((uintptr_t)x & 4095) >= 64 || !pf->ld)
    return;
  size_t off = (size_t)(x - pf->base) + SA_PREFETCH_FAR;
  size_t row = off / pf->ld;
  if (row >= pf->n || off - row * pf->ld >= pf->bytes)
    return;
  sa_prefetch_line(pf->base + off, l2);
}

/* Name the cursor's next line unless it has reached row `limit`; into
 * every cache level, or (l2) into L2 and out; with pages ahead or not (l2
 * and pages constants at every call). */
static inline __attribute__((always_inline)) void
sa_prefetch_next(sa_prefetcher *pf, size_t limit, int l2, int pages) {
  if (!pf->line || pf->row >= limit)
    return;
  if (pages)
    sa_prefetch_far(pf, pf->line, l2);
  sa_prefetch_line(pf->line, l2);
  pf->line += 64;
  if (pf->line >= pf->end)
    sa_prefetcher_seek(pf, pf->row + 1);
}

/* Name every line of the rows from the cursor's up to row `limit` (not
 * included), in address order, in one burst. */
static inline __attribute__((always_inline)) void
sa_prefetch_until(sa_prefetcher *pf, size_t limit, int l2) {
  while (pf->line && pf->row < limit) {
    for (const char *x = pf->line; x < pf->end; x += 64)
      sa_prefetch_line(x, l2);
    sa_prefetcher_seek(pf, pf->row + 1);
  }
}

/* Name every line of rows [0, rows) of n rows of `bytes` bytes, ld bytes
 * apart, in one burst: the rows before a cursor's first, for a call whose
 * rows follow no call's cursor (a page of its own). */
static inline __attribute__((always_inline)) void
sa_prefetch_head(const void *base, size_t ld, size_t bytes, size_t n,
                 size_t rows, int l2) {
  sa_prefetcher head = sa_prefetcher_at(base, ld, bytes, n, 0);
  sa_prefetch_until(&head, rows, l2);
}

/* The cursor for rows that lie end to end (ld == bytes: a head's K or V
 * rows of a packed cache, or a page's), where the rows are one range of
 * bytes and the lines to name are a pointer stepping 64 bytes at a time:
 * no row to track, no seek at each row's end, the limit a pointer set once
 * a block (sa_range_to). The same lines in the same order as sa_prefetcher
 * (a line that two unaligned rows share is named once, not twice), at a
 * compare, a test and a prefetch a line against sa_prefetch_next's loads,
 * stores and row-end branch: score's dots at m = 4 with K in cache take
 * 0.86x the time (avx512, Zen 5 VM; from memory: score.c). wsum's
 * sub-blocks measured level with it (0.92-1.03x) and keep the row cursor. */
typedef struct sa_range {
  const char *base; /* row 0 */
  const char *line; /* the next line to name */
  const char *stop; /* name nothing at or past this (sa_range_to) */
  const char *end;  /* one past the last row */
  size_t ld;        /* bytes a row (and from one row to the next) */
  size_t n;         /* rows */
} sa_range;

/* A cursor over n rows of ld bytes each, end to end, from row `first`. */
static inline sa_range sa_range_at(const void *base, size_t ld, size_t n,
                                   size_t first) {
  const char *b = (const char *)base;
  sa_range r = {b, b, b, b + n * ld, ld, n};
  const char *f = b + (first < n ? first : n) * ld;
  r.line = sa_line_of(f);
  return r;
}

/* Jump forward to row `from` if the cursor is behind it, and let it name
 * lines up to row `to` (not included). */
static inline void sa_range_to(sa_range *r, size_t from, size_t to) {
  const size_t n = r->n;
  const char *f = r->base + (from < n ? from : n) * r->ld;
  f = sa_line_of(f);
  if (r->line < f)
    r->line = f;
  r->stop = r->base + (to < n ? to : n) * r->ld;
}

/* Name the cursor's next line unless it has reached its stop; with pages
 * ahead, as sa_prefetch_next (l2 and pages constants at every call). */
static inline __attribute__((always_inline)) void
sa_range_next(sa_range *r, int l2, int pages) {
  const char *x = r->line;
  if (x >= r->stop)
    return;
  if (pages && ((uintptr_t)x & 4095) < 64 && SA_PREFETCH_FAR < r->end - x)
    sa_prefetch_line(x + SA_PREFETCH_FAR, l2);
  sa_prefetch_line(x, l2);
  r->line = x + 64;
}

/* Name K's next line for score's dots (avx2, avx512): by the range when
 * K's rows lie end to end, else by the row cursor up to row `limit`;
 * neither when both are NULL. Each a constant pointer or NULL where the
 * caller is inlined, so the cursor's state stays in registers. */
static inline __attribute__((always_inline)) void
sa_dots_next_line(sa_range *rg, sa_prefetcher *pf, size_t limit) {
  if (rg)
    sa_range_next(rg, 0, 1);
  else if (pf)
    sa_prefetch_next(pf, limit, 0, 1);
}

/* How many rows ahead to keep a cursor: `bytes` worth of rows, at least
 * 4 (the kernels keep about 4 KiB in flight: 2 and 8 KiB measured no
 * better on the Zen 3 core above). */
static inline size_t sa_prefetch_rows_ahead(size_t row_bytes, size_t bytes) {
  return row_bytes && bytes / row_bytes > 4 ? bytes / row_bytes : 4;
}

/* A spread stream: the lines of `rows` rows named a few at a time, between
 * chunks of SA_SPREAD_STEPS steps of a loop (sa_spread_lines before each
 * chunk), for the GEMM ways of score, which name the next Kᵀ panel's K rows
 * while the tiles use this one, so that packing it does not wait on memory
 * (docs/DESIGN.md, "The MQA row"). Spread, not in bursts: a panel's lines
 * named before a tile, or a tile's share of them, filled the miss buffers
 * and stalled the tile's own loads (level with no prefetch at all, where
 * spread they made score from memory 1.6-1.9x as fast). Between chunks,
 * not at each step: the stream's state in the step loop cost 2-8 % with K
 * in cache, its registers spilled beside the tile's row pointers.
 * Non-temporal, though Zen 5 measured every hint alike. */
enum { SA_SPREAD_STEPS = 16 };

typedef struct sa_spread {
  const char *row; /* the row being named */
  size_t off;      /* its next line's offset */
  size_t bytes;    /* bytes of a row */
  size_t ld;       /* bytes from a row to the next */
  size_t left;     /* lines still to name (0: none) */
  size_t per;      /* lines a chunk */
} sa_spread;

/* The lines of rows [0, rows) from k, ld bytes apart, `bytes` each, spread
 * over `chunks` chunks. */
static inline sa_spread sa_spread_rows(const void *k, size_t ld, size_t bytes,
                                       size_t rows, size_t chunks) {
  sa_spread pf = {(const char *)k, 0, bytes, ld, rows * ((bytes + 63) / 64), 1};
  if (chunks && pf.left > chunks)
    pf.per = (pf.left + chunks - 1) / chunks;
  return pf;
}

/* The rows of the panel after one that ends at row j: rows [j, j + nr),
 * none at or past row n, spread over `chunks` chunks. */
static inline sa_spread sa_spread_panel(const void *k, size_t ld, size_t bytes,
                                        size_t n, size_t j, size_t nr,
                                        size_t chunks) {
  size_t rows = n - j < nr ? n - j : nr;
  return sa_spread_rows(rows ? (const char *)k + j * ld : (const char *)k, ld,
                        bytes, rows, chunks);
}

/* The next chunk's share of lines. */
static inline __attribute__((always_inline)) void
sa_spread_lines(sa_spread *pf) {
  for (size_t i = 0; i < pf->per && pf->left; i++, pf->left--) {
    __builtin_prefetch(pf->row + pf->off, 0, 0);
    pf->off += 64;
    if (pf->off >= pf->bytes) {
      pf->off = 0;
      pf->row += pf->ld;
    }
  }
}

#endif /* SA_KERNELS_PREFETCH_H */
