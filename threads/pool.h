/*
 * Internal: the persistent worker pool a context owns.
 *
 * sa_pool_run hands out task indices 0..ntasks-1 in increasing order to
 * whichever worker asks next; the caller's thread works as worker 0. Callers
 * order their tasks costliest first and make each task's result independent
 * of which worker runs it: that is what keeps attention bit-identical for any
 * thread count.
 */
#ifndef SA_THREADS_POOL_H
#define SA_THREADS_POOL_H

#include <stddef.h>

#include "simdattn.h"

typedef struct sa_pool sa_pool;

/* fn(arg, task, worker): worker in [0, sa_pool_size) is stable for the call. */
typedef void (*sa_task_fn)(void *arg, size_t task, int worker);

/* nthreads >= 1, already resolved from options and the environment. */
sa_status sa_pool_create(int nthreads, sa_pin_policy pin, sa_pool **out);
void sa_pool_destroy(sa_pool *pool);
int sa_pool_size(const sa_pool *pool);
/* 1 when every worker is bound to its own core. */
int sa_pool_pinned(const sa_pool *pool);
/* Runs every task once and returns when all are done. */
void sa_pool_run(sa_pool *pool, size_t ntasks, sa_task_fn fn, void *arg);

/* Logical index (hwloc) of the core worker is bound to, -1 if unpinned. */
int sa_pool_worker_core(const sa_pool *pool, int worker);

/* Threads to use when nothing is asked for: one per physical core. */
int sa_pool_default_threads(void);

#endif
