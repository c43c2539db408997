/* The fork generation counter behind fork.h. */
#include <pthread.h>
#include <stdatomic.h>

#include "threads/fork.h"

static pthread_once_t watch_once = PTHREAD_ONCE_INIT;
static atomic_uint generation;

/* The child is single-threaded when this runs: nothing else can race it. */
static void in_child(void) {
  atomic_fetch_add_explicit(&generation, 1, memory_order_relaxed);
}

static void watch(void) { pthread_atfork(NULL, NULL, in_child); }

void sa_fork_watch(void) { pthread_once(&watch_once, watch); }

unsigned sa_fork_generation(void) {
  return atomic_load_explicit(&generation, memory_order_relaxed);
}
