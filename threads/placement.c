/*
 * Placement: workers onto cores, compact, one worker per core at most.
 * See placement.h for why the logical order is the compact order.
 */
#include "threads/placement.h"

hwloc_obj_type_t sa_placement_unit(hwloc_topology_t topo) {
  /* Some platforms report no core level (hwloc then has PUs only). */
  return hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE
                                                            : HWLOC_OBJ_PU;
}

int sa_placement_count(hwloc_topology_t topo, hwloc_const_cpuset_t allowed) {
  hwloc_obj_type_t unit = sa_placement_unit(topo);
  int n = hwloc_get_nbobjs_by_type(topo, unit), usable = 0;
  for (int i = 0; i < n; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, unit, (unsigned)i);
    if (o && o->cpuset && hwloc_bitmap_intersects(o->cpuset, allowed))
      usable++;
  }
  return usable;
}

int sa_placement_plan(hwloc_topology_t topo, hwloc_const_cpuset_t allowed,
                      int skip, int nworkers, int *core,
                      hwloc_bitmap_t *cpuset) {
  hwloc_obj_type_t unit = sa_placement_unit(topo);
  int n = hwloc_get_nbobjs_by_type(topo, unit), w = 0;
  for (int i = 0; i < n && w < nworkers; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, unit, (unsigned)i);
    if (!o || !o->cpuset || !hwloc_bitmap_intersects(o->cpuset, allowed))
      continue;
    if (skip > 0) {
      skip--;
      continue;
    }
    core[w] = (int)o->logical_index;
    if (cpuset)
      hwloc_bitmap_and(cpuset[w], o->cpuset, allowed);
    w++;
  }
  int pinned = w;
  for (; w < nworkers; w++) {
    core[w] = -1;
    if (cpuset)
      hwloc_bitmap_zero(cpuset[w]);
  }
  return pinned;
}
