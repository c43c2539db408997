/*
 * The persistent worker pool.
 *
 * Threads are started once, with the context, and sleep between calls. A
 * call publishes its job and bumps a generation word; workers spin on that
 * word for a short while (a new call usually follows soon: the next layer,
 * the next token) and then block on a condition variable. Tasks are handed
 * out in increasing index order by one atomic counter. The caller works as
 * worker 0 and returns once every participating worker has checked out, so
 * the job's fields are never read after sa_pool_run returns.
 *
 * Binding: see placement.h for which core each worker gets and pin.c for
 * how the binding is applied and undone. Floating-point control state: see
 * fpenv.h; fork(): see fork.h.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/errors.h"
#include "threads/fork.h"
#include "threads/fpenv.h"
#include "threads/pin.h"
#include "threads/placement.h"
#include "threads/pool.h"
#include "threads/topology.h"

/*
 * Spin budget before sleeping, in pause iterations: a few tens of
 * microseconds, long enough to cover the gap between back-to-back calls,
 * short enough not to steal a core from the caller's other work for long.
 */
#define SA_SPIN_ITERS 4000

/* The generation and the number of participating workers share one word, so
 * a worker always reads a consistent pair. 16 bits hold any count <= 4096. */
#define ACTIVE_BITS 16
#define ACTIVE_MASK ((UINT64_C(1) << ACTIVE_BITS) - 1)

typedef struct sa_worker {
  pthread_t thread;
  struct sa_pool *pool;
  int index;
} sa_worker;

struct sa_pool {
  /* Hot words on their own cache lines: `next` is hit once per task by every
   * worker, `state` is what idle workers spin on. */
  _Alignas(64) atomic_size_t next;
  _Alignas(64) atomic_uint_fast64_t state; /* generation << 16 | active */
  _Alignas(64) atomic_int remaining;       /* workers 1.. still in the job */
  atomic_int stop;

  /* The job: plain fields, published by the release store of `state` and
   * handed back by the release decrement of `remaining`. */
  sa_task_fn fn;
  void *arg;
  size_t ntasks;
  sa_fpenv fpenv; /* the caller's control state */

  pthread_mutex_t mu;
  pthread_cond_t wake; /* workers: state changed */
  pthread_cond_t done; /* caller: remaining reached 0 */

  int n;               /* workers, the caller included */
  int started;         /* threads actually created (teardown after a failure) */
  int spin;            /* spin iterations; 0 when workers outnumber CPUs */
  unsigned generation; /* sa_fork_generation() when the threads started */
  sa_pin pin;
  sa_worker *w;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static void run_tasks(sa_pool *p, int w) {
  const size_t ntasks = p->ntasks;
  const sa_task_fn fn = p->fn;
  void *const arg = p->arg;
  /* Relaxed is enough: the job's inputs were published through `state`,
   * the outputs are published through `remaining`. */
  for (;;) {
    size_t t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    if (t >= ntasks)
      return;
    fn(arg, t, w);
  }
}

/* Waits until `state` differs from seen; spins first, then sleeps. */
static uint64_t wait_state(sa_pool *p, uint64_t seen) {
  uint64_t s;
  for (int i = 0; i < p->spin; i++) {
    s = atomic_load_explicit(&p->state, memory_order_acquire);
    if (s != seen)
      return s;
    cpu_relax();
  }
  pthread_mutex_lock(&p->mu);
  while ((s = atomic_load_explicit(&p->state, memory_order_acquire)) == seen)
    pthread_cond_wait(&p->wake, &p->mu);
  pthread_mutex_unlock(&p->mu);
  return s;
}

static void *worker_main(void *arg) {
  sa_worker *me = arg;
  sa_pool *p = me->pool;
  uint64_t seen = 0;
  sa_fpenv mine = sa_fpenv_get();
  for (;;) {
    seen = wait_state(p, seen);
    if (atomic_load_explicit(&p->stop, memory_order_relaxed))
      return NULL;
    /* A worker past `active` sits this job out and is not waited for; it
     * may skip whole generations, which is harmless for the same reason. */
    if (me->index >= (int)(seen & ACTIVE_MASK))
      continue;
    if (!sa_fpenv_equal(mine, p->fpenv)) {
      mine = p->fpenv;
      sa_fpenv_set(mine);
    }
    run_tasks(p, me->index);
    if (atomic_fetch_sub_explicit(&p->remaining, 1, memory_order_acq_rel) ==
        1) {
      /* Taking the lock orders this signal after the caller's check. */
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

/* Bumps the generation with `active` participants and wakes sleepers. */
static void publish(sa_pool *p, int active) {
  pthread_mutex_lock(&p->mu);
  uint64_t s = atomic_load_explicit(&p->state, memory_order_relaxed);
  uint64_t gen = (s >> ACTIVE_BITS) + 1;
  atomic_store_explicit(&p->state, gen << ACTIVE_BITS | (uint64_t)active,
                        memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
}

static void wait_done(sa_pool *p) {
  for (int i = 0; i < p->spin; i++) {
    if (atomic_load_explicit(&p->remaining, memory_order_acquire) == 0)
      return;
    cpu_relax();
  }
  pthread_mutex_lock(&p->mu);
  while (atomic_load_explicit(&p->remaining, memory_order_acquire) != 0)
    pthread_cond_wait(&p->done, &p->mu);
  pthread_mutex_unlock(&p->mu);
}

static void stop_threads(sa_pool *p) {
  if (p->started == 0)
    return;
  atomic_store_explicit(&p->stop, 1, memory_order_relaxed);
  publish(p, 0);
  for (int i = 0; i < p->started; i++)
    pthread_join(p->w[i].thread, NULL);
  p->started = 0;
}

static void pool_free(sa_pool *p) {
  /* After a fork the threads do not exist here and the mutex may have been
   * held by a parent thread: touch neither, just give the memory back. */
  if (!sa_pool_forked(p)) {
    stop_threads(p);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
  }
  sa_pin_release(&p->pin);
  free(p->w);
  free(p);
}

sa_status sa_pool_create(const sa_pool_config *cfg, sa_pool **out) {
  int n = cfg->nthreads < 1 ? 1 : cfg->nthreads;
  sa_fork_watch();
  size_t bytes = (sizeof(sa_pool) + 63) & ~(size_t)63;
  sa_pool *p = aligned_alloc(64, bytes);
  if (!p)
    return sa_fail(SA_ERR_NO_MEMORY, "thread pool");
  memset(p, 0, bytes);
  atomic_init(&p->next, 0);
  atomic_init(&p->state, 0);
  atomic_init(&p->remaining, 0);
  atomic_init(&p->stop, 0);
  p->n = n;
  p->generation = sa_fork_generation();
  if (pthread_mutex_init(&p->mu, NULL)) {
    free(p);
    return sa_fail(SA_ERR_THREADS, "pthread_mutex_init failed");
  }
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);

  /* Oversubscribed, a spinning worker burns the time slice a busy one needs. */
  p->spin = n > 1 && n > sa_topology_cpus() ? 0 : SA_SPIN_ITERS;

  p->w = calloc((size_t)n, sizeof *p->w);
  if (!p->w) {
    pool_free(p);
    return sa_fail(SA_ERR_NO_MEMORY, "thread pool workers");
  }
  if (n > 1) {
    /* Workers block every signal: the application's handlers run on its own
     * threads, never in the middle of a tile. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = 0;
    for (int i = 1; i < n && !err; i++) {
      p->w[i - 1].pool = p;
      p->w[i - 1].index = i;
      err =
          pthread_create(&p->w[i - 1].thread, NULL, worker_main, &p->w[i - 1]);
      if (!err)
        p->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
      int started = p->started;
      pool_free(p);
      return sa_fail(SA_ERR_THREADS,
                     "could start only %d of %d worker threads "
                     "(%s)",
                     started + 1, n, strerror(err));
    }
  }

  pthread_t *threads = NULL;
  if (n > 1) {
    threads = malloc((size_t)(n - 1) * sizeof *threads);
    if (!threads) {
      pool_free(p);
      return sa_fail(SA_ERR_NO_MEMORY, "thread pool");
    }
    for (int i = 1; i < n; i++)
      threads[i - 1] = p->w[i - 1].thread;
  }
  sa_status st = sa_pin_setup(&p->pin, cfg, threads);
  free(threads);
  if (st != SA_OK) {
    pool_free(p);
    return st;
  }
  *out = p;
  return SA_OK;
}

void sa_pool_destroy(sa_pool *pool) {
  if (pool)
    pool_free(pool);
}

int sa_pool_forked(const sa_pool *pool) {
  return pool->generation != sa_fork_generation();
}

int sa_pool_size(const sa_pool *pool) { return pool->n; }
int sa_pool_pinned(const sa_pool *pool) { return pool->pin.pinned; }
int sa_pool_worker_core(const sa_pool *pool, int worker) {
  return sa_pin_core(&pool->pin, worker);
}

void sa_pool_run(sa_pool *pool, size_t ntasks, sa_task_fn fn, void *arg) {
  if (ntasks == 0)
    return;
  int active = ntasks < (size_t)pool->n ? (int)ntasks : pool->n;
  pool->fn = fn;
  pool->arg = arg;
  pool->ntasks = ntasks;
  pool->fpenv = sa_fpenv_get();
  atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
  if (active > 1) {
    atomic_store_explicit(&pool->remaining, active - 1, memory_order_relaxed);
    publish(pool, active);
  }
  /* After waking the others: they start while this thread migrates. Alone
   * (one task) the caller shares a core with no worker: binding it would
   * only cost system calls. */
  int rebound = active > 1 ? sa_pin_caller_enter(&pool->pin) : 0;
  run_tasks(pool, 0);
  if (active > 1)
    wait_done(pool);
  sa_pin_caller_leave(&pool->pin, rebound);
}

int sa_pool_default_threads(const char *cpus, int first_core) {
  hwloc_topology_t topo = sa_topology();
  if (topo) {
    int bad;
    hwloc_bitmap_t allowed = sa_topology_within(topo, cpus, &bad);
    int n = allowed ? sa_placement_count(topo, allowed) - first_core : 0;
    hwloc_bitmap_free(allowed);
    if (n > 0)
      return n;
    /* a bad list or first_core: sa_pool_create reports it */
    return 1;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online < 1)
    return 1;
  return online > 4096 ? 4096 : (int)online;
}
