/*
 * The worker pool, called directly.
 *
 * (a) Every task index runs exactly once, on a valid worker, in increasing
 *     order per worker, for many (ntasks, nthreads) including 0, 1 and
 *     ntasks < nthreads, pinned and not, workers spinning by default,
 *     never (spin_us -1) or longer.
 * (b) One pool reused for 1000 small runs, some after idle gaps long enough
 *     for workers to fall asleep: no deadlock, no lost wakeup (a watchdog
 *     alarm turns a hang into a failure), with the default spin, none, and
 *     one longer than the gaps; pools created and destroyed, often before
 *     their workers ever waited.
 */
#define _GNU_SOURCE /* nanosleep with -std=c11 */
#include <stdatomic.h>
#include <time.h>

#include "tests/testing.h"
#include "threads/pool.h"

#define MAXW 16

/* ------------------------------------------------------ (a) exactly once */

typedef struct record {
  atomic_int runs[4096];   /* per task: times run */
  atomic_int bad_worker;   /* tasks given a worker index out of range */
  atomic_int out_of_order; /* a worker got a lower index than before */
  size_t last[MAXW + 1];   /* per worker: last task + 1 (only it writes) */
  int nworkers;
} record;

static void count_task(void *arg, size_t task, int worker) {
  record *r = arg;
  if (worker < 0 || worker >= r->nworkers) {
    atomic_fetch_add(&r->bad_worker, 1);
    return;
  }
  if (task + 1 <= r->last[worker])
    atomic_fetch_add(&r->out_of_order, 1);
  r->last[worker] = task + 1;
  if (task < 4096)
    atomic_fetch_add(&r->runs[task], 1);
}

static int run_and_check(sa_pool *pool, size_t ntasks, record *r) {
  for (size_t t = 0; t < ntasks; t++)
    atomic_store(&r->runs[t], 0);
  atomic_store(&r->bad_worker, 0);
  atomic_store(&r->out_of_order, 0);
  memset(r->last, 0, sizeof r->last);
  r->nworkers = sa_pool_size(pool);
  sa_pool_run(pool, ntasks, count_task, r);
  int wrong = atomic_load(&r->bad_worker) + atomic_load(&r->out_of_order);
  for (size_t t = 0; t < ntasks; t++)
    wrong += atomic_load(&r->runs[t]) != 1;
  return wrong;
}

static void exactly_once(record *r) {
  t_context = "every task once";
  static const int threads[] = {1, 2, 3, 4, 8, 16};
  static const int spins[] = {0, -1, 200}; /* spin_us: default, none, long */
  static const size_t tasks[] = {0, 1,  2,  3,  5,  7,    8,
                                 9, 15, 16, 17, 64, 1000, 4096};
  const size_t ntk = sizeof tasks / sizeof tasks[0];
  for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
    for (int pin = SA_PIN_CORES; pin <= SA_PIN_NONE; pin++) {
      sa_pool *pool = NULL;
      sa_status st =
          sa_pool_create(&(sa_pool_config){threads[i], (sa_pin_policy)pin, NULL,
                                           0, spins[(i + (size_t)pin) % 3]},
                         &pool);
      CHECK(st == SA_OK && sa_pool_size(pool) == threads[i], "pool of %d: %s",
            threads[i], sa_status_str(st));
      if (st != SA_OK)
        continue;
      /* Every size once in order, then in a shuffled order: the same pool
       * goes from many participants to few and back. */
      for (int round = 0; round < 3; round++)
        for (size_t j = 0; j < ntk; j++) {
          size_t n = tasks[round ? t_next() % ntk : j];
          int wrong = run_and_check(pool, n, r);
          CHECK(wrong == 0, "%d threads (%s), %zu tasks: %d wrong", threads[i],
                pin == SA_PIN_NONE ? "unpinned" : "pinned", n, wrong);
        }
      sa_pool_destroy(pool);
    }
  }
}

/* --------------------------------------------------------- (b) reuse */

static void add_task(void *arg, size_t task, int worker) {
  (void)worker;
  atomic_fetch_add((atomic_size_t *)arg, task + 1);
}

static void reuse(int n, int spin_us) {
  char name[64];
  snprintf(name, sizeof name, "1000 runs on %d workers, spin_us %d", n,
           spin_us);
  t_context = name;
  sa_pool *pool = NULL;
  if (sa_pool_create(&(sa_pool_config){n, SA_PIN_CORES, NULL, 0, spin_us},
                     &pool) != SA_OK) {
    CHECK(0, "pool of %d", n);
    return;
  }
  int wrong = 0;
  for (int i = 0; i < 1000; i++) {
    size_t ntasks = t_next() % (size_t)(2 * n + 2);
    atomic_size_t sum;
    atomic_init(&sum, 0);
    if (i % 97 == 0) {
      /* Idle long enough that workers stop spinning and sleep (unless
       * spin_us keeps them awake longer). */
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
    }
    sa_pool_run(pool, ntasks, add_task, &sum);
    wrong += atomic_load(&sum) != ntasks * (ntasks + 1) / 2;
  }
  CHECK(wrong == 0, "%d of 1000 runs lost a task", wrong);
  sa_pool_destroy(pool);
}

static void create_destroy(void) {
  t_context = "create and destroy";
  for (int i = 0; i < 50; i++) {
    sa_pool *pool = NULL;
    int n = 1 + i % 5;
    CHECK(
        sa_pool_create(&(sa_pool_config){n, i % 2 ? SA_PIN_NONE : SA_PIN_CORES,
                                         NULL, 0, i % 4 == 1 ? -1 : 0},
                       &pool) == SA_OK,
        "pool %d", i);
    if (i % 3 == 0) {
      atomic_size_t sum;
      atomic_init(&sum, 0);
      sa_pool_run(pool, 3, add_task, &sum);
      CHECK(atomic_load(&sum) == 6, "sum %zu", (size_t)atomic_load(&sum));
    }
    sa_pool_destroy(pool); /* often before the workers ever waited */
  }
}

int main(void) {
  alarm(600); /* a deadlock fails the test instead of hanging CI */
  t_seed(7);
  static record r;
  exactly_once(&r);
  create_destroy();
  reuse(2, 0);
  reuse(3, 0);
  reuse(8, 0);
  reuse(2, -1); /* every run wakes sleeping workers */
  reuse(3, -1);
  reuse(2, 5000); /* workers awake through the idle gaps */
  return t_finish("test_pool");
}
