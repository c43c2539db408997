/*
 * Per-call overhead of sa_attention, outside Google Benchmark so the same
 * file builds against any library version (0.1 had no struct_size) and two
 * builds can be run side by side:
 *
 *   simdattn_call_overhead [rounds]
 *
 * Rows: a tiny call (one head, one query, 16 keys, d 64: almost nothing but
 * overhead) through a NULL context, a one-thread context and a two-thread
 * pinned context; the same with two heads (two tasks: the second worker is
 * woken and the caller bound to its core), also with the caller already
 * bound there by the application; the two-head call after 1 ms idle (the
 * sleeping workers' wake-up), and with spin_us keeping them awake through
 * it; and a decode-sized call (one token, 32
 * query heads over 8 KV heads, 4096 keys, d 128) through a NULL context and
 * a context. Each figure is the median over rounds of the mean time of a
 * batch of calls.
 */
#define _POSIX_C_SOURCE 200809L
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simdattn.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static sa_attention_desc shape(size_t hq, size_t hkv, size_t lkv, size_t d) {
  sa_attention_desc desc;
  memset(&desc, 0, sizeof desc);
#if SA_VERSION_MINOR >= 2
  sa_attention_desc_init(&desc);
#endif
  desc.batch = 1, desc.heads_q = hq, desc.heads_kv = hkv;
  desc.len_q = 1, desc.len_kv = lkv, desc.dim_qk = d, desc.dim_v = d;
  return desc;
}

static sa_context *context_spin(int threads, int spin_us) {
  sa_context_options o;
  memset(&o, 0, sizeof o);
#if SA_VERSION_MINOR >= 2
  sa_context_options_init(&o);
#endif
#if SA_VERSION_MINOR >= 12
  o.spin_us = spin_us;
#else
  (void)spin_us;
#endif
  o.num_threads = threads;
  o.pin = SA_PIN_CORES;
  sa_context *ctx = NULL;
  if (sa_context_create(&o, &ctx) != SA_OK) {
    fprintf(stderr, "context: %s\n", sa_last_error());
    exit(1);
  }
  return ctx;
}

static sa_context *context(int threads) { return context_spin(threads, 0); }

/* Median over `rounds` of the mean ns of `calls` calls, each call after
 * idle_us microseconds of sleep when idle_us > 0 (the sleep not timed). */
static double per_call_after(sa_context *ctx, const sa_attention_desc *desc,
                             int calls, int rounds, long idle_us) {
  size_t nq = desc->heads_q * desc->dim_qk;
  size_t nkv = desc->heads_kv * desc->len_kv * desc->dim_qk;
  float *q = calloc(nq, sizeof *q), *k = calloc(nkv, sizeof *k);
  float *v = calloc(nkv, sizeof *v), *o = calloc(nq, sizeof *o);
  for (size_t i = 0; i < nkv; i++)
    k[i] = v[i] = (float)(i % 13) * 0.01f;
  for (size_t i = 0; i < nq; i++)
    q[i] = (float)(i % 7) * 0.1f;
  double *t = malloc((size_t)rounds * sizeof *t);
  for (int w = 0; w < calls; w++) /* warm: scratch, caches, lazy setup */
    sa_attention(ctx, desc, q, k, v, o);
  for (int r = 0; r < rounds; r++) {
    double sum = 0.0, t0 = now_ns();
    for (int c = 0; c < calls; c++) {
      if (idle_us > 0) {
        struct timespec nap = {0, idle_us * 1000};
        nanosleep(&nap, NULL);
        t0 = now_ns();
      }
      if (sa_attention(ctx, desc, q, k, v, o) != SA_OK) {
        fprintf(stderr, "sa_attention: %s\n", sa_last_error());
        exit(1);
      }
      if (idle_us > 0)
        sum += now_ns() - t0;
    }
    t[r] = (idle_us > 0 ? sum : now_ns() - t0) / calls;
  }
  qsort(t, (size_t)rounds, sizeof *t, cmp);
  double med = t[rounds / 2];
  free(t), free(q), free(k), free(v), free(o);
  return med;
}

static double per_call(sa_context *ctx, const sa_attention_desc *desc,
                       int calls, int rounds) {
  return per_call_after(ctx, desc, calls, rounds, 0);
}

/* Binds the calling thread where a pinned pool puts worker 0: the first
 * core (logical order) that has a CPU this process may use. */
static int bind_like_worker0(void) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) || hwloc_topology_load(t))
    return 0;
  hwloc_bitmap_t allowed = hwloc_bitmap_alloc(), set = hwloc_bitmap_alloc();
  int ok = 0;
  if (hwloc_get_cpubind(t, allowed, HWLOC_CPUBIND_PROCESS) == 0) {
    int n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    for (int i = 0; i < n && !ok; i++) {
      hwloc_obj_t c = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)i);
      hwloc_bitmap_and(set, c->cpuset, allowed);
      if (!hwloc_bitmap_iszero(set))
        ok = hwloc_set_cpubind(t, set, HWLOC_CPUBIND_THREAD) == 0;
    }
  }
  hwloc_bitmap_free(set);
  hwloc_bitmap_free(allowed);
  hwloc_topology_destroy(t);
  return ok;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 9;
  if (rounds < 1)
    rounds = 1;
  sa_attention_desc tiny = shape(1, 1, 16, 64);
  sa_attention_desc decode = shape(32, 8, 4096, 128);
  sa_context *one = context(1), *two = context(2);
  printf("simdattn %s, kernel set %s, median of %d rounds\n", SA_VERSION_STRING,
         sa_context_kernel_set(one)->name, rounds);
  printf("%-34s %12s\n", "call", "ns per call");
  printf("%-34s %12.0f\n", "tiny, NULL context",
         per_call(NULL, &tiny, 20000, rounds));
  printf("%-34s %12.0f\n", "tiny, 1-thread context",
         per_call(one, &tiny, 20000, rounds));
  printf("%-34s %12.0f\n",
         sa_context_pinned(two) ? "tiny, 2-thread pinned context"
                                : "tiny, 2-thread context (unpinned)",
         per_call(two, &tiny, 20000, rounds));
  sa_attention_desc tiny2 = shape(2, 2, 16, 64);
  printf("%-34s %12.0f\n", "tiny x2 heads, 2-thread context",
         per_call(two, &tiny2, 20000, rounds));
  if (sa_context_pinned(two) && bind_like_worker0())
    printf("%-34s %12.0f\n", "  the same, caller pre-bound",
           per_call(two, &tiny2, 20000, rounds));
  /* A call after the workers went idle: asleep past the spin, they are
   * woken (a vCPU that halted takes the longest); spin_us keeps them up. */
  printf("%-34s %12.0f\n", "tiny x2 heads, after 1 ms idle",
         per_call_after(two, &tiny2, 200, rounds, 1000));
#if SA_VERSION_MINOR >= 12
  sa_context *awake = context_spin(2, 5000);
  printf("%-34s %12.0f\n", "  the same, spin_us 5000",
         per_call_after(awake, &tiny2, 200, rounds, 1000));
  sa_context_destroy(awake);
#endif
  printf("%-34s %12.0f\n", "decode h32/kv8 L4096, NULL context",
         per_call(NULL, &decode, 20, rounds));
  printf("%-34s %12.0f\n", "decode h32/kv8 L4096, 1-thread ctx",
         per_call(one, &decode, 20, rounds));
  sa_context_destroy(one);
  sa_context_destroy(two);
  return 0;
}
