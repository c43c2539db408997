/*
 * Binding a pool's threads to the cores placement.c chose for them, and
 * undoing it when the OS says no. Rules in pin.h.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "threads/pin.h"
#include "threads/placement.h"
#include "threads/topology.h"

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void
say(const char *fmt, ...) {
  if (!sa_verbose())
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("simdattn: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void free_sets(sa_pin *pin) {
  if (pin->cpuset)
    for (int w = 0; w < pin->n; w++)
      hwloc_bitmap_free(pin->cpuset[w]);
  free(pin->cpuset);
  pin->cpuset = NULL;
  hwloc_bitmap_free(pin->saved);
  pin->saved = NULL;
  pin->topo = NULL;
  for (int w = 0; pin->core && w < pin->n; w++)
    pin->core[w] = -1;
}

/* Under SIMDATTN_VERBOSE: one line naming each pinned worker's PUs. */
static void say_plan(const sa_pin *pin, int npinned) {
  if (!sa_verbose())
    return;
  fprintf(stderr, "simdattn: %d worker%s, %d pinned one per core:", pin->n,
          pin->n == 1 ? "" : "s", npinned);
  for (int w = 0; w < npinned; w++) {
    char buf[64];
    hwloc_bitmap_list_snprintf(buf, sizeof buf, pin->cpuset[w]);
    fprintf(stderr, " w%d=core%d{%s}", w, pin->core[w], buf);
  }
  if (npinned < pin->n)
    fprintf(stderr, "; workers %d-%d unpinned (more workers than cores)",
            npinned, pin->n - 1);
  fputc('\n', stderr);
}

static atomic_uint_fast64_t next_id = 1;

/* The CPUs workers may be placed on: the process's, within cfg->cpus. */
static sa_status usable_cpus(hwloc_topology_t topo, const sa_pool_config *cfg,
                             hwloc_bitmap_t *out) {
  int bad_list;
  hwloc_bitmap_t allowed = sa_topology_within(topo, cfg->cpus, &bad_list);
  if (bad_list)
    return sa_fail(SA_ERR_BAD_ARGUMENT,
                   "cpus='%.64s' is not a CPU list such as \"0-3,8\"",
                   cfg->cpus);
  if (!allowed)
    return sa_fail(SA_ERR_NO_MEMORY, "cpuset");
  int cores = sa_placement_count(topo, allowed);
  if (cores <= cfg->first_core) {
    char buf[128];
    hwloc_bitmap_list_snprintf(buf, sizeof buf, allowed);
    hwloc_bitmap_free(allowed);
    return sa_fail(SA_ERR_BAD_ARGUMENT,
                   "first_core = %d, but the CPUs this process may use%s%.64s "
                   "hold %d core(s) {%s}",
                   cfg->first_core, cfg->cpus ? " within " : "",
                   cfg->cpus ? cfg->cpus : "", cores, buf);
  }
  *out = allowed;
  return SA_OK;
}

sa_status sa_pin_setup(sa_pin *pin, const sa_pool_config *cfg,
                       const pthread_t *threads) {
  const int n = cfg->nthreads;
  memset(pin, 0, sizeof *pin);
  pin->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
  pin->n = n;
  pin->core = malloc((size_t)n * sizeof *pin->core);
  if (!pin->core)
    return sa_fail(SA_ERR_NO_MEMORY, "pin table");
  for (int w = 0; w < n; w++)
    pin->core[w] = -1;
  if (cfg->pin == SA_PIN_NONE) {
    say("%d worker%s unpinned (pin policy none)", n, n == 1 ? "" : "s");
    return SA_OK;
  }
  hwloc_topology_t topo = sa_topology();
  if (!topo) {
    say("hwloc could not load the topology: %d workers unpinned", n);
    return SA_OK;
  }
  hwloc_bitmap_t allowed = NULL;
  sa_status st = usable_cpus(topo, cfg, &allowed);
  if (st != SA_OK)
    return st;
  if (n == 1) {
    say("%d worker: the calling thread, its binding left alone", n);
    hwloc_bitmap_free(allowed);
    return SA_OK;
  }
  const struct hwloc_topology_support *sup = hwloc_topology_get_support(topo);
  if (!sup->cpubind->set_thread_cpubind ||
      !sup->cpubind->set_thisthread_cpubind ||
      !sup->cpubind->get_thisthread_cpubind) {
    say("thread binding is not supported here: %d workers unpinned", n);
    hwloc_bitmap_free(allowed);
    return SA_OK;
  }

  hwloc_bitmap_t origin = hwloc_bitmap_alloc();
  pin->saved = hwloc_bitmap_alloc();
  pin->cpuset = calloc((size_t)n, sizeof *pin->cpuset);
  int ok = origin && pin->saved && pin->cpuset;
  for (int w = 0; ok && w < n; w++)
    ok = (pin->cpuset[w] = hwloc_bitmap_alloc()) != NULL;
  /* Workers inherited the creating thread's mask: that is what undo restores.
   */
  if (!ok || hwloc_get_cpubind(topo, origin, HWLOC_CPUBIND_THREAD) != 0) {
    say("cannot read this thread's binding: %d workers unpinned", n);
    goto unpinned;
  }
  pin->topo = topo;
  int npinned = sa_placement_plan(topo, allowed, cfg->first_core, n, pin->core,
                                  pin->cpuset);

  /* Worker 0 is bound per run; try it once now so a refusal shows up here. */
  int bound = 0, err = 0;
  if (npinned > 0) {
    if (hwloc_set_cpubind(topo, pin->cpuset[0], HWLOC_CPUBIND_THREAD) != 0)
      err = errno ? errno : EPERM;
    else
      hwloc_set_cpubind(topo, origin, HWLOC_CPUBIND_THREAD);
  }
  for (int w = 1; w < npinned && !err; w++) {
    if (hwloc_set_thread_cpubind(topo, threads[w - 1], pin->cpuset[w], 0) != 0)
      err = errno ? errno : EPERM;
    else
      bound = w;
  }
  if (err) {
    for (int w = 1; w <= bound; w++)
      hwloc_set_thread_cpubind(topo, threads[w - 1], origin, 0);
    say("binding refused by the OS (%s): %d workers run unpinned",
        strerror(err), n);
    goto unpinned;
  }
  pin->pinned = npinned == n;
  say_plan(pin, npinned);
  hwloc_bitmap_free(origin);
  hwloc_bitmap_free(allowed);
  return SA_OK;

unpinned:
  free_sets(pin);
  hwloc_bitmap_free(origin);
  hwloc_bitmap_free(allowed);
  return SA_OK;
}

void sa_pin_release(sa_pin *pin) {
  free_sets(pin);
  free(pin->core);
  pin->core = NULL;
}

int sa_pin_core(const sa_pin *pin, int worker) {
  if (!pin->core || worker < 0 || worker >= pin->n)
    return -1;
  return pin->core[worker];
}

/* Per thread: the pin setup (by id) this thread was last found already
 * bound for. An application that rebinds the thread later only moves where
 * the caller's share of the tiles runs, never what they compute. */
static _Thread_local uint64_t prebound_for;

int sa_pin_caller_enter(sa_pin *pin) {
  if (!pin->topo || hwloc_bitmap_iszero(pin->cpuset[0]) ||
      prebound_for == pin->id)
    return 0;
  if (hwloc_get_cpubind(pin->topo, pin->saved, HWLOC_CPUBIND_THREAD) != 0)
    return 0;
  if (hwloc_bitmap_isequal(pin->saved, pin->cpuset[0])) {
    prebound_for = pin->id;
    return 0;
  }
  return hwloc_set_cpubind(pin->topo, pin->cpuset[0], HWLOC_CPUBIND_THREAD) ==
         0;
}

void sa_pin_caller_leave(sa_pin *pin, int rebound) {
  if (rebound)
    hwloc_set_cpubind(pin->topo, pin->saved, HWLOC_CPUBIND_THREAD);
}
