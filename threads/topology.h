/*
 * Internal: what the machine looks like, for the pool.
 *
 * Loading a topology reads sysfs (milliseconds), so it is done once per
 * process and kept; hwloc allows any number of threads to read and bind
 * through one topology as long as nobody modifies it, and nobody does.
 */
#ifndef SA_THREADS_TOPOLOGY_H
#define SA_THREADS_TOPOLOGY_H

#include "core/errors.h"
#include <hwloc.h>

/* The process-wide topology, or NULL if hwloc could not load one. */
hwloc_topology_t sa_topology(void);

/*
 * The CPUs this process may run on: the union of its threads' bindings
 * (taskset, a launcher's mask) within the topology's allowed set (cgroups).
 * Falls back to the allowed set when the binding cannot be read. Caller
 * frees with hwloc_bitmap_free; NULL only when out of memory.
 */
hwloc_bitmap_t sa_topology_allowed(hwloc_topology_t topo);

/* sa_topology_allowed within an OS CPU list ("0-3,8"; NULL: no limit).
 * NULL when out of memory, or when cpus is not such a list (*bad_list = 1). */
hwloc_bitmap_t sa_topology_within(hwloc_topology_t topo, const char *cpus,
                                  int *bad_list);

/* PUs in sa_topology_allowed (online CPUs without hwloc): more workers
 * than this and they take turns on CPUs. */
int sa_topology_cpus(void);

/* The L2 cache one core has to itself: the smallest L2 the topology lists,
 * divided among the cores under it; 0 when hwloc finds none or reports a
 * size outside [128 KiB, 16 MiB] (a hypervisor's invention). */
size_t sa_topology_l2(void);

/* The L1 data cache of one core: the smallest the topology lists; 0 when
 * hwloc finds none or reports a size outside [8 KiB, 1 MiB]. */
size_t sa_topology_l1d(void);

#endif
