/*
 * The shapes the kernel sweeps take, from the blocking of every runnable
 * set (dispatch/tiles.c), XNNPACK's tester style: a tile t gives t - 1, t,
 * t + 1 and 2t + 1 (short of, exactly, past one tile, and two tiles and a
 * tail), a cutoff c gives c - 1, c and c + 1. Each list is the union over
 * the sets, sorted, so that one case's oracle result serves every set.
 */
#ifndef SA_TILE_SIZES_H
#define SA_TILE_SIZES_H

#include "dispatch/tiles.h"
#include "tests/testing.h"

typedef struct t_sizes {
  size_t n;
  size_t v[64];
} t_sizes;

static inline void t_sizes_add(t_sizes *s, size_t x) {
  size_t i = 0;
  while (i < s->n && s->v[i] < x)
    i++;
  if (x == 0 || (i < s->n && s->v[i] == x))
    return;
  CHECK(s->n < sizeof s->v / sizeof s->v[0], "more than 64 sizes");
  if (s->n == sizeof s->v / sizeof s->v[0])
    return;
  memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof s->v[0]);
  s->v[i] = x;
  s->n++;
}

/* Every nonzero t of list[len]: as tiles (2t + 1 too) or as cutoffs. */
static inline void t_sizes_around(t_sizes *s, const size_t *list, size_t len,
                                  int tile) {
  for (size_t i = 0; i < len && list[i]; i++) {
    t_sizes_add(s, list[i] - 1);
    t_sizes_add(s, list[i]);
    t_sizes_add(s, list[i] + 1);
    if (tile)
      t_sizes_add(s, 2 * list[i] + 1);
  }
}

/* rows m; keys n of score and wsum; row lengths of softmax and score_mod;
 * d of score below and around the panel chunk; dv of wsum */
typedef struct t_shapes {
  t_sizes m, n, row, d, kc, dv;
} t_shapes;

#define T_AROUND(s, list, tile)                                                \
  t_sizes_around(s, list, sizeof(list) / sizeof((list)[0]), tile)

static inline t_shapes t_kernel_shapes(const sa_kernel_set *const *sets,
                                       int nsets) {
  t_shapes sh;
  memset(&sh, 0, sizeof sh);
  for (int i = 0; i < nsets; i++) {
    const sa_tiles *t = sa_kernel_set_tiles(sets[i]);
    T_AROUND(&sh.m, t->m, 1);
    T_AROUND(&sh.m, t->m_cut, 0);
    T_AROUND(&sh.n, t->n, 1);
    T_AROUND(&sh.n, t->n_cut, 0);
    T_AROUND(&sh.row, t->row, 1);
    T_AROUND(&sh.d, t->d, 1);
    T_AROUND(&sh.kc, t->kc, 1);
    T_AROUND(&sh.dv, t->dv, 1);
  }
  return sh;
}

static inline void t_sizes_print(const char *what, const t_sizes *s) {
  printf("%-4s", what);
  for (size_t i = 0; i < s->n; i++)
    printf(" %zu", s->v[i]);
  printf("\n");
}

#endif
