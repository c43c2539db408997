/*
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

/* The first line of row pf->row (none past the last row). */
static inline void sa_prefetcher_seek(sa_prefetcher *pf, size_t row) {
  pf->row = row < pf->n ? row : pf->n;
  pf->line = pf->end = NULL;
  if (pf->row < pf->n && pf->bytes) {
    const char *r = pf->base + pf->row * pf->ld;
    pf->line = (const char *)((uintptr_t)r & ~(uintptr_t)63);
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

/* Name the cursor's next line unless it has reached row `limit`; into
 * every cache level, or (l2) into L2 and out (a constant at every call). */
static inline __attribute__((always_inline)) void
sa_prefetch_next(sa_prefetcher *pf, size_t limit, int l2) {
  if (!pf->line || pf->row >= limit)
    return;
  if (l2)
    __builtin_prefetch(pf->line, 0, 2);
  else
    __builtin_prefetch(pf->line, 0, 3);
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
      if (l2)
        __builtin_prefetch(x, 0, 2);
      else
        __builtin_prefetch(x, 0, 3);
    sa_prefetcher_seek(pf, pf->row + 1);
  }
}

/* How many rows ahead to keep a cursor: `bytes` worth of rows, at least
 * 4 (the kernels keep about 4 KiB in flight: 2 and 8 KiB measured no
 * better on the Zen 3 core above). */
static inline size_t sa_prefetch_rows_ahead(size_t row_bytes, size_t bytes) {
  return row_bytes && bytes / row_bytes > 4 ? bytes / row_bytes : 4;
}

#endif /* SA_KERNELS_PREFETCH_H */
