/*
 * Internal: applying a placement to a pool's threads.
 *
 * Workers 1.. are bound once, right after they start. The caller's thread
 * is worker 0 only while sa_pool_run runs, so it is bound on entry and its
 * own binding is put back on exit: a library must not leave the
 * application's thread pinned to core 0 behind its back. A one-worker pool
 * never binds anything (its only worker is the caller).
 *
 * Binding is all or nothing: if the OS refuses any worker's binding
 * (containers, some VMs), every worker goes back to the mask it started with
 * and the pool runs unpinned; that is never an error. Asking for CPUs that do
 * not exist or cannot be used (options.cpus, first_core) is one.
 *
 * A caller that is already bound exactly where worker 0 goes (an engine that
 * pins its own thread) is found so on its first pinned call and left alone
 * from then on, without a system call per call.
 */
#ifndef SA_THREADS_PIN_H
#define SA_THREADS_PIN_H

#include <hwloc.h>
#include <pthread.h>
#include <stdint.h>

#include "simdattn.h"
#include "threads/pool.h"

typedef struct sa_pin {
  uint64_t id;            /* unique per pin setup: keys the caller's cache */
  hwloc_topology_t topo;  /* NULL when nothing is bound */
  hwloc_bitmap_t *cpuset; /* per worker; empty: unpinned */
  hwloc_bitmap_t saved;   /* the caller's own binding during a run */
  int *core;              /* per worker: logical index of its core, or -1 */
  int n;
  int pinned; /* every worker bound to a core of its own */
} sa_pin;

/* threads: the cfg->nthreads - 1 worker threads 1... Fails only on a bad
 * cfg->cpus or cfg->first_core (SA_ERR_BAD_ARGUMENT); on any other trouble
 * the pool is left unpinned (and says why under SIMDATTN_VERBOSE). */
sa_status sa_pin_setup(sa_pin *pin, const sa_pool_config *cfg,
                       const pthread_t *threads);
void sa_pin_release(sa_pin *pin);
int sa_pin_core(const sa_pin *pin, int worker);

/* Binds the calling thread as worker 0; returns whether leave must undo it. */
int sa_pin_caller_enter(sa_pin *pin);
void sa_pin_caller_leave(sa_pin *pin, int rebound);

#endif
