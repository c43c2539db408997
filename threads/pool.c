/*
 * Single-threaded pool: runs every task on the caller's thread, in order.
 * Placeholder for the pinned multi-worker pool (issue: threads with hwloc).
 */
#include <stdlib.h>

#include "pool.h"

struct sa_pool {
  int nthreads;
};

sa_status sa_pool_create(int nthreads, sa_pin_policy pin, sa_pool **out) {
  (void)pin;
  sa_pool *p = malloc(sizeof *p);
  if (!p)
    return SA_ERR_NO_MEMORY;
  p->nthreads = nthreads < 1 ? 1 : 1;
  *out = p;
  return SA_OK;
}

void sa_pool_destroy(sa_pool *pool) { free(pool); }
int sa_pool_size(const sa_pool *pool) { return pool->nthreads; }
int sa_pool_pinned(const sa_pool *pool) {
  (void)pool;
  return 0;
}
int sa_pool_default_threads(void) { return 1; }

void sa_pool_run(sa_pool *pool, size_t ntasks, sa_task_fn fn, void *arg) {
  (void)pool;
  for (size_t t = 0; t < ntasks; t++)
    fn(arg, t, 0);
}
