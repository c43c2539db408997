/*
 * Placement made real: a pool's workers are bound where the plan of
 * threads/placement.c puts them (test_placement checks the plan itself on
 * synthetic machines).
 *
 * (a) Each worker reads its own binding back from inside a task and it must
 *     be exactly the cores the placement gave it; unpinned workers keep the
 *     creating thread's mask; the caller's own binding is the same after a
 *     run as before.
 * (b) A context reports whether it is pinned: never under SA_PIN_NONE, and
 *     not with more workers than cores.
 */
#define _GNU_SOURCE /* sched_yield with -std=c11 */
#include <hwloc.h>
#include <sched.h>
#include <stdatomic.h>

#include "tests/testing.h"
#include "threads/placement.h"
#include "threads/pool.h"
#include "threads/topology.h"

#define MAXW 16

/*
 * (a) Every task waits until all n tasks have started, so each of the n
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
  if (sa_pool_create(&(sa_pool_config){n, policy, NULL, 0, 0}, &pool) != SA_OK) {
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

int main(void) {
  alarm(600); /* a deadlock fails the test instead of hanging CI */
  int cores = sa_pool_default_threads(NULL, 0);
  printf("%d default threads\n", cores);
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
  return t_finish("test_pinning");
}
