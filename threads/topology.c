/*
 * The machine's topology, loaded once, and the thread count that follows
 * from it when the user asks for nothing.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "threads/placement.h"
#include "threads/topology.h"

static pthread_once_t topo_once = PTHREAD_ONCE_INIT;
static hwloc_topology_t topo_loaded; /* written once, under topo_once */

static void topo_load(void) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0)
    return;
  /* Only CPUs and caches matter here: skip PCI and other I/O discovery. */
  hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(t) != 0) {
    hwloc_topology_destroy(t);
    return;
  }
  /* Kept until exit: pools in any thread may still be binding through it. */
  topo_loaded = t;
}

hwloc_topology_t sa_topology(void) {
  pthread_once(&topo_once, topo_load);
  return topo_loaded;
}

hwloc_bitmap_t sa_topology_allowed(hwloc_topology_t topo) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (!set)
    return NULL;
  hwloc_const_cpuset_t avail = hwloc_topology_get_allowed_cpuset(topo);
  if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0)
    hwloc_bitmap_and(set, set, avail);
  else
    hwloc_bitmap_zero(set);
  if (hwloc_bitmap_iszero(set))
    hwloc_bitmap_copy(set, avail);
  return set;
}

hwloc_bitmap_t sa_topology_within(hwloc_topology_t topo, const char *cpus,
                                  int *bad_list) {
  hwloc_bitmap_t set = sa_topology_allowed(topo);
  *bad_list = 0;
  if (!set || !cpus)
    return set;
  hwloc_bitmap_t want = hwloc_bitmap_alloc();
  if (want && hwloc_bitmap_list_sscanf(want, cpus) == 0) {
    hwloc_bitmap_and(set, set, want);
  } else {
    *bad_list = want != NULL;
    hwloc_bitmap_free(set);
    set = NULL;
  }
  hwloc_bitmap_free(want);
  return set;
}

int sa_topology_cpus(void) {
  hwloc_topology_t topo = sa_topology();
  hwloc_bitmap_t allowed = topo ? sa_topology_allowed(topo) : NULL;
  int n = allowed ? hwloc_bitmap_weight(allowed) : -1;
  hwloc_bitmap_free(allowed);
  if (n > 0)
    return n;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online < 1 ? 1 : online > 65536 ? 65536 : (int)online;
}

static pthread_once_t l2_once = PTHREAD_ONCE_INIT;
static size_t l2_bytes; /* written once, under l2_once */

static void l2_find(void) {
  hwloc_topology_t topo = sa_topology();
  if (!topo)
    return;
  size_t least = 0;
  int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_L2CACHE);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L2CACHE, (unsigned)i);
    int cores =
        hwloc_get_nbobjs_inside_cpuset_by_type(topo, o->cpuset, HWLOC_OBJ_CORE);
    size_t each = (size_t)o->attr->cache.size / (size_t)(cores > 1 ? cores : 1);
    if (least == 0 || each < least)
      least = each;
  }
  if (least >= ((size_t)128 << 10) && least <= ((size_t)16 << 20))
    l2_bytes = least;
}

static pthread_once_t l1d_once = PTHREAD_ONCE_INIT;
static size_t l1d_bytes; /* written once, under l1d_once */

static void l1d_find(void) {
  hwloc_topology_t topo = sa_topology();
  if (!topo)
    return;
  size_t least = 0;
  int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_L1CACHE);
  for (int i = 0; i < n; i++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_L1CACHE, (unsigned)i);
    if (o->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION)
      continue;
    size_t each = (size_t)o->attr->cache.size;
    if (least == 0 || each < least)
      least = each;
  }
  if (least >= ((size_t)8 << 10) && least <= ((size_t)1 << 20))
    l1d_bytes = least;
}

size_t sa_topology_l1d(void) {
  pthread_once(&l1d_once, l1d_find);
  return l1d_bytes;
}

size_t sa_topology_l2(void) {
  pthread_once(&l2_once, l2_find);
  return l2_bytes;
}
