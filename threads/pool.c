/*
 * The persistent worker pool.
 *
 * Threads are started once, with the context, and sleep between calls. A
 * call publishes its job and bumps a generation word; workers spin on that
 * word for a short while (a new call usually follows soon: the next layer,
 * the next token) and then block on a condition variable. Tasks are handed
 * out in increasing index order by one atomic counter that also names the
 * job, so a claim is made only on the job it was read from. The caller works
 * as worker 0 and returns once every task is done: it never waits for a
 * worker that claimed nothing (until 0.12 it waited for each woken worker
 * to check out, and a call whose tasks the caller had all run itself still
 * paid a sleeping worker's wake-up, 60-110 us in a VM). A worker reads the
 * job's fields only after a claim succeeds, while the job cannot end.
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
#include <time.h>
#include <unistd.h>

#include "core/errors.h"
#include "threads/fork.h"
#include "threads/fpenv.h"
#include "threads/pin.h"
#include "threads/placement.h"
#include "threads/pool.h"
#include "threads/topology.h"

/*
 * Spin budget before sleeping, by the clock: long enough to cover the gap
 * between back-to-back calls, short enough not to steal a core from the
 * caller's other work for long. Until 0.12 it was 4000 pauses, whose length
 * varies tenfold between cores (86 us on the Zen 5 VM, a quarter of that
 * where a pause is a few cycles). The clock is read every SPIN_POLLS pauses.
 */
#define SA_SPIN_DEFAULT_US 100
#define SA_DONE_SPIN_US 2000
#define SPIN_POLLS 32

/* The task word: job number (24 bits), task count (20), next task (20). A
 * larger call runs as several jobs, one after the other. */
#define TASK_BITS 20
#define TASK_MAX ((UINT32_C(1) << TASK_BITS) - 1)
#define JOB_MAX ((UINT32_C(1) << 24) - 1)

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
  _Alignas(64) atomic_uint_fast64_t next;     /* job, ntasks, next task */
  _Alignas(64) atomic_uint_fast64_t state;    /* generation << 16 | active */
  _Alignas(64) atomic_uint_fast32_t finished; /* tasks of the job done */
  atomic_int stop;

  /* The job: plain fields, published by the release store of `next` and
   * read only by a worker holding a claim on it; results are handed back by
   * the release increment of `finished`. */
  sa_task_fn fn;
  void *arg;
  size_t base;    /* task 0's index in the caller's numbering */
  sa_fpenv fpenv; /* the caller's control state */
  uint32_t job;   /* the caller's count of jobs, numbering `next` */

  pthread_mutex_t mu;
  pthread_cond_t wake; /* workers: state changed */
  pthread_cond_t done; /* caller: finished reached ntasks */

  int n;               /* workers, the caller included */
  int started;         /* threads actually created (teardown after a failure) */
  uint64_t spin_ns;    /* spin budget; 0: sleep at once */
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

/* Claims and runs tasks of whatever job `next` holds until it has none
 * left. The word holds the job's number, its task count and the next task,
 * and a claim is a compare-and-swap of the whole word: so a claim is made
 * only on the job the count was read with (a count kept apart from the word
 * let a worker claim task n of a finished job once the next job's larger
 * count was stored: TSan saw it in test_pool), and a worker that read a
 * finished job's word claims nothing of the next one (its number would have
 * to come round, 2^24 jobs, during one stale read, with the same count and
 * task). While a claim is held its job cannot end, so fn, arg, base and
 * fpenv read after it are that job's. */
static void run_tasks(sa_pool *p, int w, sa_fpenv *mine) {
  uint64_t cur = atomic_load_explicit(&p->next, memory_order_acquire);
  for (;;) {
    uint32_t n = (uint32_t)(cur >> TASK_BITS) & TASK_MAX;
    if ((uint32_t)(cur & TASK_MAX) >= n)
      return;
    if (!atomic_compare_exchange_weak_explicit(&p->next, &cur, cur + 1,
                                               memory_order_acq_rel,
                                               memory_order_acquire))
      continue; /* cur reloaded */
    if (w != 0 && !sa_fpenv_equal(*mine, p->fpenv)) {
      *mine = p->fpenv;
      sa_fpenv_set(*mine);
    }
    p->fn(p->arg, p->base + (size_t)(cur & TASK_MAX), w);
    if (atomic_fetch_add_explicit(&p->finished, 1, memory_order_acq_rel) + 1 ==
            n &&
        w != 0) {
      /* Taking the lock orders this signal after the caller's check. */
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
    cur = atomic_load_explicit(&p->next, memory_order_acquire);
  }
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Waits until `state` differs from seen; spins first, then sleeps. */
static uint64_t wait_state(sa_pool *p, uint64_t seen) {
  uint64_t s, until = p->spin_ns ? now_ns() + p->spin_ns : 0;
  while (until) {
    for (int i = 0; i < SPIN_POLLS; i++) {
      s = atomic_load_explicit(&p->state, memory_order_acquire);
      if (s != seen)
        return s;
      cpu_relax();
    }
    if (now_ns() >= until)
      break;
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
    /* A worker past `active` sits this job out; nobody waits for a
     * worker, so it may skip whole generations. */
    if (me->index >= (int)(seen & ACTIVE_MASK))
      continue;
    run_tasks(p, me->index, &mine);
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

/* Waits until the job's n tasks are done: by then no worker touches it.
 * This wait is for tasks in flight, at most a task long, so the caller
 * spins at least SA_DONE_SPIN_US before it sleeps: asleep, it would pay its
 * own wake-up on top (60-110 us in a VM). Only spin_us -1 and an
 * oversubscribed pool sleep at once. */
static void wait_done(sa_pool *p, uint32_t n) {
  if (atomic_load_explicit(&p->finished, memory_order_acquire) == n)
    return;
  uint64_t spin = p->spin_ns > SA_DONE_SPIN_US * 1000u ? p->spin_ns
                  : p->spin_ns                         ? SA_DONE_SPIN_US * 1000u
                                                       : 0;
  uint64_t until = spin ? now_ns() + spin : 0;
  while (until) {
    for (int i = 0; i < SPIN_POLLS; i++) {
      if (atomic_load_explicit(&p->finished, memory_order_acquire) == n)
        return;
      cpu_relax();
    }
    if (now_ns() >= until)
      break;
  }
  pthread_mutex_lock(&p->mu);
  while (atomic_load_explicit(&p->finished, memory_order_acquire) != n)
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
  atomic_init(&p->finished, 0);
  atomic_init(&p->stop, 0);
  p->n = n;
  p->generation = sa_fork_generation();
  if (pthread_mutex_init(&p->mu, NULL)) {
    free(p);
    return sa_fail(SA_ERR_THREADS, "pthread_mutex_init failed");
  }
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);

  /* Oversubscribed, a spinning worker burns the time slice a busy one needs:
   * no spinning then, unless the caller asked for it. */
  int us = cfg->spin_us;
  if (us == 0)
    us = n > 1 && n > sa_topology_cpus() ? -1 : SA_SPIN_DEFAULT_US;
  p->spin_ns = us > 0 ? (uint64_t)us * 1000u : 0;

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

/* One job of n <= TASK_MAX tasks, numbered from base. */
static void run_job(sa_pool *pool, size_t base, uint32_t n, sa_task_fn fn,
                    void *arg) {
  int active = n < (uint32_t)pool->n ? (int)n : pool->n;
  pool->fn = fn;
  pool->arg = arg;
  pool->base = base;
  pool->fpenv = sa_fpenv_get();
  pool->job++;
  atomic_store_explicit(&pool->finished, 0, memory_order_relaxed);
  /* releases the fields above to whoever claims a task of this job */
  atomic_store_explicit(&pool->next,
                        (uint64_t)(pool->job & JOB_MAX) << (2 * TASK_BITS) |
                            (uint64_t)n << TASK_BITS,
                        memory_order_release);
  if (active > 1)
    publish(pool, active);
  /* After waking the others: they start while this thread migrates. Alone
   * (one task) the caller shares a core with no worker: binding it would
   * only cost system calls. */
  int rebound = active > 1 ? sa_pin_caller_enter(&pool->pin) : 0;
  run_tasks(pool, 0, NULL);
  wait_done(pool, n);
  sa_pin_caller_leave(&pool->pin, rebound);
}

void sa_pool_run(sa_pool *pool, size_t ntasks, sa_task_fn fn, void *arg) {
  for (size_t base = 0; base < ntasks;) {
    size_t n = ntasks - base < TASK_MAX ? ntasks - base : TASK_MAX;
    run_job(pool, base, (uint32_t)n, fn, arg);
    base += n;
  }
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
