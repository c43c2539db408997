/*
 * Internal: where each worker goes, computed from a topology alone.
 *
 * Pure: reads the topology, binds nothing, so tests can feed it synthetic
 * machines (hwloc_topology_set_synthetic).
 *
 * The unit of placement is the physical core (HWLOC_OBJ_CORE); on a machine
 * whose topology has no core level it is the PU. Units are taken in hwloc's
 * logical order, which is depth-first through the tree: every core of the
 * first package (and of its first NUMA node, L3, ...) comes before any core
 * of the next. That is the compact fill: workers that share tiles' K/V rows
 * also share the nearest caches and memory.
 */
#ifndef SA_THREADS_PLACEMENT_H
#define SA_THREADS_PLACEMENT_H

#include <hwloc.h>

/* HWLOC_OBJ_CORE, or HWLOC_OBJ_PU when the topology has no cores. */
hwloc_obj_type_t sa_placement_unit(hwloc_topology_t topo);

/* Units with at least one PU in `allowed`. */
int sa_placement_count(hwloc_topology_t topo, hwloc_const_cpuset_t allowed);

/*
 * Plans nworkers workers: the first `skip` usable units are left out (another
 * context's), then worker w gets the next usable unit in logical order, core[w]
 * = its logical index and cpuset[w] = its PUs that are in `allowed`. Workers
 * past the number of usable units are not wrapped onto busy cores: they get
 * core[w] = -1 and an empty cpuset and stay unpinned, for the OS to balance.
 * cpuset may be NULL; otherwise each entry is an allocated bitmap that is
 * overwritten. Returns the number of pinned workers, min(nworkers, usable units
 * - skip).
 */
int sa_placement_plan(hwloc_topology_t topo, hwloc_const_cpuset_t allowed,
                      int skip, int nworkers, int *core,
                      hwloc_bitmap_t *cpuset);

#endif
