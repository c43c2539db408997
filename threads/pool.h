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

/* The longest spin_us a context takes: 10 s. */
#define SA_SPIN_MAX_US 10000000

/* What a pool is made from, already resolved from options and environment. */
typedef struct sa_pool_config {
  int nthreads;      /* >= 1 */
  sa_pin_policy pin; /* SA_PIN_CORES or SA_PIN_NONE */
  const char *cpus;  /* NULL, or the OS CPU list workers are confined to */
  int first_core;    /* usable cores skipped before worker 0's */
  int spin_us;       /* sa_context_options.spin_us, checked: 0 default */
} sa_pool_config;

/* SA_ERR_BAD_ARGUMENT for a cpus list hwloc cannot parse or that leaves no
 * usable CPU, or a first_core past the usable cores (when pinning). */
sa_status sa_pool_create(const sa_pool_config *cfg, sa_pool **out);
/* Also for a pool inherited across fork(): its threads are gone, so it is
 * not joined, only freed. */
void sa_pool_destroy(sa_pool *pool);
/* 1 when the pool was created before a fork() of this process: it has no
 * threads here, and must be destroyed and created again. */
int sa_pool_forked(const sa_pool *pool);
int sa_pool_size(const sa_pool *pool);
/* 1 when every worker is bound to its own core. */
int sa_pool_pinned(const sa_pool *pool);
/* Runs every task once and returns when all are done. Workers run under the
 * calling thread's floating-point control state (fpenv.h). */
void sa_pool_run(sa_pool *pool, size_t ntasks, sa_task_fn fn, void *arg);

/* Logical index (hwloc) of the core worker is bound to, -1 if unpinned. */
int sa_pool_worker_core(const sa_pool *pool, int worker);

/* Threads to use when nothing is asked for: one per usable physical core,
 * within cpus (NULL: all) and after skipping first_core of them. */
int sa_pool_default_threads(const char *cpus, int first_core);

#endif
