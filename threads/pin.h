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
 * and the pool runs unpinned; that is never an error.
 */
#ifndef SA_THREADS_PIN_H
#define SA_THREADS_PIN_H

#include <hwloc.h>
#include <pthread.h>

#include "simdattn.h"

typedef struct sa_pin {
  hwloc_topology_t topo;  /* NULL when nothing is bound */
  hwloc_bitmap_t *cpuset; /* per worker; empty: unpinned */
  hwloc_bitmap_t saved;   /* the caller's own binding during a run */
  int *core;              /* per worker: logical index of its core, or -1 */
  int n;
  int pinned; /* every worker bound to a core of its own */
} sa_pin;

/* threads: the n-1 worker threads 1..n-1. Never fails: on any trouble the
 * pool is left unpinned (and says why under SIMDATTN_VERBOSE). */
void sa_pin_setup(sa_pin *pin, sa_pin_policy policy, int n,
                  const pthread_t *threads);
void sa_pin_release(sa_pin *pin);
int sa_pin_core(const sa_pin *pin, int worker);

/* Binds the calling thread as worker 0; returns whether leave must undo it. */
int sa_pin_caller_enter(sa_pin *pin);
void sa_pin_caller_leave(sa_pin *pin, int rebound);

#endif
