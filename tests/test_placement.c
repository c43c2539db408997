/*
 * Placement on synthetic machines (hwloc_topology_set_synthetic): the pure
 * plan in threads/placement.c, no thread is started or bound here.
 *
 * What every plan must satisfy (check_plan): each pinned worker has its own
 * core, its cpuset is exactly that core's PUs within the allowed set, no PU
 * is used twice, cores are taken in logical (compact) order, and workers
 * past the usable cores are left unpinned (-1, empty cpuset) rather than
 * wrapped onto busy cores.
 */
#include <hwloc.h>

#include "tests/testing.h"
#include "threads/placement.h"
#include "threads/pool.h"
#include "threads/topology.h"

static hwloc_topology_t load(const char *desc) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0 || hwloc_topology_set_synthetic(t, desc) ||
      hwloc_topology_load(t) != 0) {
    printf("cannot load synthetic topology '%s'\n", desc);
    exit(2);
  }
  return t;
}

typedef struct plan {
  int n, pinned;
  int core[64];
  hwloc_bitmap_t set[64];
} plan;

static void make_plan(plan *p, hwloc_topology_t t, hwloc_const_cpuset_t allowed,
                      int n) {
  p->n = n;
  for (int w = 0; w < n; w++) {
    p->set[w] = hwloc_bitmap_alloc();
    hwloc_bitmap_fill(p->set[w]); /* must be overwritten */
    p->core[w] = 12345;
  }
  p->pinned = sa_placement_plan(t, allowed, 0, n, p->core, p->set);
}

static void free_plan(plan *p) {
  for (int w = 0; w < p->n; w++)
    hwloc_bitmap_free(p->set[w]);
}

static void check_plan(const plan *p, hwloc_topology_t t,
                       hwloc_const_cpuset_t allowed) {
  hwloc_obj_type_t unit = sa_placement_unit(t);
  int usable = sa_placement_count(t, allowed);
  int want = p->n < usable ? p->n : usable;
  CHECK(p->pinned == want, "%d workers, %d usable cores: %d pinned, want %d",
        p->n, usable, p->pinned, want);
  hwloc_bitmap_t used = hwloc_bitmap_alloc(), expect = hwloc_bitmap_alloc();
  int prev = -1;
  for (int w = 0; w < p->n; w++) {
    if (w >= p->pinned) {
      CHECK(p->core[w] == -1, "worker %d past the cores: core %d, want -1", w,
            p->core[w]);
      CHECK(hwloc_bitmap_iszero(p->set[w]),
            "worker %d past the cores has a cpuset", w);
      continue;
    }
    hwloc_obj_t o = hwloc_get_obj_by_type(t, unit, (unsigned)p->core[w]);
    CHECK(o != NULL, "worker %d: core %d does not exist", w, p->core[w]);
    if (!o)
      continue;
    CHECK(p->core[w] > prev, "worker %d: core %d after core %d (not compact)",
          w, p->core[w], prev);
    prev = p->core[w];
    hwloc_bitmap_and(expect, o->cpuset, allowed);
    CHECK(!hwloc_bitmap_iszero(expect) &&
              hwloc_bitmap_isequal(expect, p->set[w]),
          "worker %d: cpuset is not core %d's allowed PUs", w, p->core[w]);
    CHECK(!hwloc_bitmap_intersects(used, p->set[w]),
          "worker %d: a PU is already used by another worker", w);
    hwloc_bitmap_or(used, used, p->set[w]);
  }
  /* Compact: nothing skipped, a usable core before a pinned one is taken. */
  for (int i = 0; p->pinned > 0 && i < prev; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, unit, (unsigned)i);
    if (hwloc_bitmap_intersects(o->cpuset, allowed))
      CHECK(hwloc_bitmap_intersects(o->cpuset, used),
            "usable core %d skipped while core %d is used", i, prev);
  }
  hwloc_bitmap_free(used);
  hwloc_bitmap_free(expect);
}

/* Logical index of the ancestor of type `type` (package, L3) of worker w. */
static int ancestor(hwloc_topology_t t, const plan *p, int w,
                    hwloc_obj_type_t type) {
  hwloc_obj_t o =
      hwloc_get_obj_by_type(t, sa_placement_unit(t), (unsigned)p->core[w]);
  hwloc_obj_t a = o ? hwloc_get_ancestor_obj_by_type(t, type, o) : NULL;
  return a ? (int)a->logical_index : -1;
}

static void two_packages(void) {
  t_context = "pack:2 numa:1 core:8 pu:2";
  hwloc_topology_t t = load(t_context);
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t);
  CHECK(sa_placement_unit(t) == HWLOC_OBJ_CORE, "unit is not the core");
  CHECK(sa_placement_count(t, all) == 16, "%d cores, want 16",
        sa_placement_count(t, all));
  int ns[] = {1, 4, 8, 9, 16, 20};
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    plan p;
    make_plan(&p, t, all, ns[i]);
    check_plan(&p, t, all);
    for (int w = 0; w < p.pinned; w++) {
      /* Compact: the first package (and its NUMA node) fills first. */
      int pk = ancestor(t, &p, w, HWLOC_OBJ_PACKAGE);
      CHECK(pk == (w < 8 ? 0 : 1), "%d workers: worker %d on package %d", ns[i],
            w, pk);
      hwloc_obj_t node = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE,
                                               (unsigned)(w < 8 ? 0 : 1));
      CHECK(node && hwloc_bitmap_isincluded(p.set[w], node->cpuset),
            "%d workers: worker %d outside NUMA node %d", ns[i], w,
            w < 8 ? 0 : 1);
      CHECK(hwloc_bitmap_weight(p.set[w]) == 2,
            "worker %d: %d PUs, want both PUs of its core", w,
            hwloc_bitmap_weight(p.set[w]));
    }
    free_plan(&p);
  }
  hwloc_topology_destroy(t);
}

static void two_cores(void) {
  t_context = "pack:1 core:2 pu:1";
  hwloc_topology_t t = load(t_context);
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t);
  plan p;
  make_plan(&p, t, all, 8); /* oversubscribed like 8 threads on 2 cores */
  check_plan(&p, t, all);
  CHECK(p.pinned == 2, "8 workers on 2 cores: %d pinned, want 2", p.pinned);
  free_plan(&p);
  hwloc_topology_destroy(t);
}

static void two_l3(void) {
  t_context = "pack:1 l3:2 core:4 pu:2";
  hwloc_topology_t t = load(t_context);
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t);
  CHECK(sa_placement_count(t, all) == 8, "%d cores, want 8",
        sa_placement_count(t, all));
  for (int n = 1; n <= 10; n++) {
    plan p;
    make_plan(&p, t, all, n);
    check_plan(&p, t, all);
    for (int w = 0; w < p.pinned; w++) {
      int l3 = ancestor(t, &p, w, HWLOC_OBJ_L3CACHE);
      CHECK(l3 == w / 4, "%d workers: worker %d under L3 %d, want %d", n, w, l3,
            w / 4);
    }
    free_plan(&p);
  }
  hwloc_topology_destroy(t);
}

/* A restricted mask (taskset, cgroup): cores outside it are skipped, and a
 * core with only some PUs allowed is bound to those PUs only. */
static void restricted(void) {
  t_context = "pack:2 core:4 pu:2, restricted";
  hwloc_topology_t t = load("pack:2 core:4 pu:2");
  hwloc_bitmap_t allowed =
      hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(t));
  hwloc_obj_t c0 = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, 0);
  hwloc_obj_t c1 = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, 1);
  hwloc_bitmap_andnot(allowed, allowed, c0->cpuset);
  hwloc_bitmap_clr(allowed, hwloc_bitmap_first(c1->cpuset));
  CHECK(sa_placement_count(t, allowed) == 7, "%d usable cores, want 7",
        sa_placement_count(t, allowed));
  plan p;
  make_plan(&p, t, allowed, 8);
  check_plan(&p, t, allowed);
  CHECK(p.core[0] == 1, "worker 0 on core %d, want 1 (core 0 excluded)",
        p.core[0]);
  CHECK(hwloc_bitmap_weight(p.set[0]) == 1,
        "worker 0 has %d PUs, want the one allowed PU of core 1",
        hwloc_bitmap_weight(p.set[0]));
  CHECK(p.core[7] == -1, "worker 7 pinned to core %d with 7 usable cores",
        p.core[7]);
  free_plan(&p);
  hwloc_bitmap_free(allowed);
  hwloc_topology_destroy(t);
}

/* No core level at all: PUs are the unit. */
static void no_cores(void) {
  t_context = "pack:1 pu:4";
  hwloc_topology_t t = load(t_context);
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t);
  CHECK(sa_placement_unit(t) == HWLOC_OBJ_PU, "unit is not the PU");
  plan p;
  make_plan(&p, t, all, 6);
  check_plan(&p, t, all);
  CHECK(p.pinned == 4, "%d pinned on 4 PUs", p.pinned);
  free_plan(&p);
  hwloc_topology_destroy(t);
}

/* Zero workers asks for nothing and writes nothing. */
static void zero_workers(void) {
  t_context = "zero workers";
  hwloc_topology_t t = load("pack:1 core:2 pu:1");
  int core = 77;
  CHECK(sa_placement_plan(t, hwloc_topology_get_topology_cpuset(t), 0, 0, &core,
                          NULL) == 0,
        "0 workers pinned some");
  CHECK(core == 77, "wrote past 0 workers");
  hwloc_topology_destroy(t);
}

/* This machine: the default thread count is its usable core count. */
static void this_machine(void) {
  t_context = "this machine";
  int n = sa_pool_default_threads(NULL, 0);
  hwloc_topology_t t = sa_topology();
  CHECK(n >= 1, "sa_pool_default_threads() = %d", n);
  if (t) {
    hwloc_bitmap_t allowed = sa_topology_allowed(t);
    int cores = sa_placement_count(t, allowed);
    CHECK(n == cores, "default %d threads, %d usable cores", n, cores);
    printf("this machine: %d usable cores, %d PUs\n", cores,
           hwloc_bitmap_weight(allowed));
    plan p;
    make_plan(&p, t, allowed, n + 2);
    check_plan(&p, t, allowed);
    free_plan(&p);
    hwloc_bitmap_free(allowed);
  } else {
    printf("this machine: no hwloc topology, sysconf fallback gave %d\n", n);
  }
}

int main(void) {
  two_packages();
  two_cores();
  two_l3();
  restricted();
  no_cores();
  zero_workers();
  this_machine();
  return t_finish("test_placement");
}
