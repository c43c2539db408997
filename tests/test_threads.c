/*
 * The worker pool, through the attention API and directly.
 *
 * (a) Causal attention with 1, 2, 3 and 8 threads is bit-identical (memcmp),
 *     for both drivers, MHA and GQA, prefill and decode; the one-thread
 *     output is also held to the double-precision reference of testing.h,
 *     so identical garbage cannot pass.
 * (b) Pinning is real: each worker reads its own binding back from inside a
 *     task and it must be exactly the cores the placement gave it; the
 *     caller's own binding is the same after a run as before.
 * (c) Every task index runs exactly once, on a valid worker, in increasing
 *     order per worker, for many (ntasks, nthreads) including 0, 1 and
 *     ntasks < nthreads.
 * (d) One pool reused for 1000 small runs, some after idle gaps long enough
 *     for workers to fall asleep: no deadlock, no lost wakeup (a watchdog
 *     alarm turns a hang into a failure).
 */
#define _GNU_SOURCE /* sched_yield, nanosleep with -std=c11 */
#include <hwloc.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "tests/testing.h"
#include "threads/placement.h"
#include "threads/pool.h"
#include "threads/topology.h"

#define MAXW 16

/* ------------------------------------------------------- (a) determinism */

static const int thread_counts[] = {1, 2, 3, 8};
#define NCOUNTS (sizeof thread_counts / sizeof thread_counts[0])

static void determinism_case(const char *name, size_t hq, size_t hkv, size_t lq,
                             size_t lkv, sa_mask mask, sa_algorithm algo) {
  t_context = name;
  sa_attention_desc d;
  sa_attention_desc_init(&d);
  d.batch = 2;
  d.heads_q = hq;
  d.heads_kv = hkv;
  d.len_q = lq;
  d.len_kv = lkv;
  d.dim_qk = d.dim_v = 64;
  d.mask = mask;
  d.algorithm = algo;
  size_t nq = d.batch * hq * lq * 64, nkv = d.batch * hkv * lkv * 64;
  float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k);
  float *v = malloc(nkv * sizeof *v), *o[NCOUNTS];
  t_fill(q, nq, -1, 1);
  t_fill(k, nkv, -1, 1);
  t_fill(v, nkv, -1, 1);
  for (size_t c = 0; c < NCOUNTS; c++) {
    o[c] = malloc(nq * sizeof(float));
    for (size_t i = 0; i < nq; i++)
      o[c][i] = NAN;
    /* Small tiles: many tasks, so 8 workers all get some, and key blocks
     * that end mid-way (300 = 2*128 + 44). */
    sa_context_options opt;
    sa_context_options_init(&opt);
    opt.num_threads = thread_counts[c];
    opt.block_q = 32;
    opt.block_kv = 128;
    sa_context *ctx = NULL;
    sa_status st = sa_context_create(&opt, &ctx);
    CHECK(st == SA_OK, "%d threads: context: %s", thread_counts[c],
          sa_last_error());
    if (st != SA_OK)
      continue;
    CHECK(sa_context_num_threads(ctx) == thread_counts[c],
          "asked %d threads, got %d", thread_counts[c],
          sa_context_num_threads(ctx));
    st = sa_attention(ctx, &d, q, k, v, o[c]);
    CHECK(st == SA_OK, "%d threads: %s", thread_counts[c], sa_last_error());
    if (c > 0)
      CHECK(memcmp(o[c], o[0], nq * sizeof(float)) == 0,
            "%d threads differ from 1 thread", thread_counts[c]);
    sa_context_destroy(ctx);
  }

  /* The reference: tolerance per element derived in testing.h (dot product
   * of length d in fp32, exp, two fp32 sums over the visible keys). */
  d.q = d.o = t_packed(hq, lq, 64);
  d.k = d.v = t_packed(hkv, lkv, 64);
  double *p = malloc(lkv * sizeof *p), ref[64], tol[64];
  double scale = 1.0 / sqrt(64.0), worst = 0;
  int bad = 0;
  for (size_t b = 0; b < d.batch; b++)
    for (size_t h = 0; h < hq; h++)
      for (size_t i = 0; i < lq; i++) {
        t_reference_row(&d, q, k, v, b, h, i, scale, p, ref, tol);
        const float *row = o[0] + b * d.o.batch + h * d.o.head + i * d.o.seq;
        for (size_t c = 0; c < 64; c++) {
          double err = fabs(row[c] - ref[c]);
          worst = err / tol[c] > worst ? err / tol[c] : worst;
          if (!(err <= tol[c]) && bad++ < 3)
            CHECK(0, "b%zu h%zu row %zu col %zu: %g vs %g (tol %g)", b, h, i, c,
                  row[c], ref[c], tol[c]);
        }
      }
  CHECK(bad == 0, "%d elements outside the reference tolerance", bad);
  printf("%-28s worst error %.3f of tolerance\n", name, worst);
  free(p);
  for (size_t c = 0; c < NCOUNTS; c++)
    free(o[c]);
  free(q);
  free(k);
  free(v);
}

static void determinism(void) {
  const sa_mask tl = SA_MASK_CAUSAL_TOP_LEFT;
  determinism_case("three-pass MHA L=300", 4, 4, 300, 300, tl,
                   SA_ALGO_THREE_PASS);
  determinism_case("fused MHA L=300", 4, 4, 300, 300, tl, SA_ALGO_FUSED);
  determinism_case("three-pass GQA 8/2 L=300", 8, 2, 300, 300, tl,
                   SA_ALGO_THREE_PASS);
  determinism_case("fused GQA 8/2 L=300", 8, 2, 300, 300, tl, SA_ALGO_FUSED);
  /* Decode: tiles are groups of query heads sharing a KV head. */
  determinism_case("fused GQA decode", 16, 2, 1, 300,
                   SA_MASK_CAUSAL_BOTTOM_RIGHT, SA_ALGO_FUSED);
}

/* --------------------------------------------- (b) and (c): pool directly */

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
  static const size_t tasks[] = {0, 1,  2,  3,  5,  7,    8,
                                 9, 15, 16, 17, 64, 1000, 4096};
  const size_t ntk = sizeof tasks / sizeof tasks[0];
  for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
    for (int pin = SA_PIN_CORES; pin <= SA_PIN_NONE; pin++) {
      sa_pool *pool = NULL;
      sa_status st = sa_pool_create(
          &(sa_pool_config){threads[i], (sa_pin_policy)pin, NULL, 0}, &pool);
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

/*
 * (b) Every task waits until all n tasks have started, so each of the n
 * workers holds exactly one; inside, it reads its own binding back.
 */
typedef struct probe {
  hwloc_topology_t topo;
  atomic_int arrived;
  int n;
  int got[MAXW];
  hwloc_bitmap_t seen[MAXW];
} probe;

static void probe_task(void *arg, size_t task, int worker) {
  probe *pr = arg;
  (void)task;
  atomic_fetch_add(&pr->arrived, 1);
  while (atomic_load(&pr->arrived) < pr->n)
    sched_yield(); /* oversubscribed: let the others reach here */
  pr->got[worker]++;
  if (hwloc_get_cpubind(pr->topo, pr->seen[worker], HWLOC_CPUBIND_THREAD))
    hwloc_bitmap_zero(pr->seen[worker]);
}

static void pinning(int n, sa_pin_policy policy) {
  char name[64];
  snprintf(name, sizeof name, "binding, %d workers, %s", n,
           policy == SA_PIN_NONE ? "none" : "cores");
  t_context = name;
  hwloc_topology_t topo = sa_topology();
  if (!topo) {
    printf("%s: no hwloc topology here, binding not checked\n", name);
    return;
  }
  hwloc_bitmap_t before = hwloc_bitmap_alloc(), after = hwloc_bitmap_alloc();
  hwloc_bitmap_t allowed = sa_topology_allowed(topo);
  hwloc_get_cpubind(topo, before, HWLOC_CPUBIND_THREAD);
  sa_pool *pool = NULL;
  if (sa_pool_create(&(sa_pool_config){n, policy, NULL, 0}, &pool) != SA_OK) {
    CHECK(0, "pool of %d not created", n);
    return;
  }
  /* The plan the pool should have followed, computed independently. */
  int core[MAXW];
  hwloc_bitmap_t want[MAXW];
  for (int w = 0; w < n; w++)
    want[w] = hwloc_bitmap_alloc();
  int planned = sa_placement_plan(topo, allowed, 0, n, core, want);
  int cores = sa_placement_count(topo, allowed);

  probe pr = {.topo = topo, .n = n};
  atomic_init(&pr.arrived, 0);
  for (int w = 0; w < n; w++)
    pr.seen[w] = hwloc_bitmap_alloc();
  sa_pool_run(pool, (size_t)n, probe_task, &pr);
  hwloc_get_cpubind(topo, after, HWLOC_CPUBIND_THREAD);

  for (int w = 0; w < n; w++)
    CHECK(pr.got[w] == 1, "worker %d ran %d probe tasks, want 1", w, pr.got[w]);
  CHECK(hwloc_bitmap_isequal(before, after),
        "the caller's binding changed across a run");

  int pinned = sa_pool_pinned(pool);
  int bound = sa_pool_worker_core(pool, 0) >= 0;
  if (policy == SA_PIN_NONE || n == 1) {
    CHECK(!pinned && !bound, "policy none / one worker, yet pinned");
  } else if (!bound) {
    /* The OS refused: everyone runs with the mask they started with. */
    printf("%s: binding refused here; checked the unpinned path\n", name);
    CHECK(!pinned, "pinned while worker 0 has no core");
  } else {
    CHECK(pinned == (n <= cores), "%d workers, %d cores: pinned = %d", n, cores,
          pinned);
    CHECK(planned == (n < cores ? n : cores), "plan pinned %d", planned);
  }
  for (int w = 0; w < n; w++) {
    int c = sa_pool_worker_core(pool, w);
    char a[128], b[128];
    hwloc_bitmap_list_snprintf(a, sizeof a, pr.seen[w]);
    if (c >= 0) {
      CHECK(c == core[w], "worker %d on core %d, plan says %d", w, c, core[w]);
      hwloc_bitmap_list_snprintf(b, sizeof b, want[w]);
      CHECK(hwloc_bitmap_isequal(pr.seen[w], want[w]),
            "worker %d is bound to {%s}, its core is {%s}", w, a, b);
    } else {
      /* Unpinned workers keep the creating thread's mask. */
      hwloc_bitmap_list_snprintf(b, sizeof b, before);
      CHECK(hwloc_bitmap_isequal(pr.seen[w], before),
            "unpinned worker %d is bound to {%s}, not the caller's {%s}", w, a,
            b);
    }
  }
  if (bound)
    printf("%s: every pinned worker read back its own core\n", name);
  for (int w = 0; w < n; w++) {
    hwloc_bitmap_free(pr.seen[w]);
    hwloc_bitmap_free(want[w]);
  }
  sa_pool_destroy(pool);
  hwloc_bitmap_free(before);
  hwloc_bitmap_free(after);
  hwloc_bitmap_free(allowed);
}

static void context_pinning(void) {
  t_context = "context reports pinning";
  int cores = sa_pool_default_threads(NULL, 0);
  sa_context_options opt;
  sa_context_options_init(&opt);
  opt.num_threads = cores > 1 ? cores : 2;
  opt.pin = SA_PIN_NONE;
  sa_context *ctx = NULL;
  CHECK(sa_context_create(&opt, &ctx) == SA_OK, "%s", sa_last_error());
  CHECK(ctx && sa_context_pinned(ctx) == 0, "pin none, yet pinned");
  sa_context_destroy(ctx);
  opt.pin = SA_PIN_CORES;
  opt.num_threads = 4 * cores + 1; /* more workers than cores */
  CHECK(sa_context_create(&opt, &ctx) == SA_OK, "%s", sa_last_error());
  CHECK(ctx && sa_context_pinned(ctx) == 0,
        "%d workers on %d cores cannot each have a core", opt.num_threads,
        cores);
  sa_context_destroy(ctx);
}

/* --------------------------------------------------------- (d) reuse */

static void add_task(void *arg, size_t task, int worker) {
  (void)worker;
  atomic_fetch_add((atomic_size_t *)arg, task + 1);
}

static void reuse(int n) {
  char name[48];
  snprintf(name, sizeof name, "1000 runs on %d workers", n);
  t_context = name;
  sa_pool *pool = NULL;
  if (sa_pool_create(&(sa_pool_config){n, SA_PIN_CORES, NULL, 0}, &pool) !=
      SA_OK) {
    CHECK(0, "pool of %d", n);
    return;
  }
  int wrong = 0;
  for (int i = 0; i < 1000; i++) {
    size_t ntasks = t_next() % (size_t)(2 * n + 2);
    atomic_size_t sum;
    atomic_init(&sum, 0);
    if (i % 97 == 0) {
      /* Idle long enough that workers stop spinning and sleep. */
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
    CHECK(sa_pool_create(
              &(sa_pool_config){n, i % 2 ? SA_PIN_NONE : SA_PIN_CORES, NULL, 0},
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
  int cores = sa_pool_default_threads(NULL, 0);
  const sa_kernel_set *ks = NULL;
  CHECK(sa_kernel_set_default(&ks) == SA_OK, "%s", sa_last_error());
  printf("kernel set %s, %d default threads\n", ks ? ks->name : "none", cores);
  determinism();
  static record r;
  exactly_once(&r);
  int ns[] = {1, 2, 3, cores, cores + 1, 8};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    int seen = 0;
    for (size_t j = 0; j < i; j++)
      seen |= ns[j] == ns[i];
    if (!seen && ns[i] <= MAXW) {
      pinning(ns[i], SA_PIN_CORES);
      pinning(ns[i], SA_PIN_NONE);
    }
  }
  context_pinning();
  create_destroy();
  reuse(2);
  reuse(3);
  reuse(8);
  return t_finish("test_threads");
}
