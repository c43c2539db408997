/*
 * What every benchmark file uses: the run's configuration, aligned buffers,
 * deterministic inputs, which sets are timed and against which oracle, and
 * how rows are timed. Depends on nothing else of bench/ but the shim.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"

sa_bench_config sa_bench_cfg = {
    .threads = 1,
    .quick = 0,
    .mem_bytes = (size_t)1 << 30,
    .decode_bytes = (size_t)512 << 20,
};

static double seconds_on(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double sa_bench_now(void) {
  return seconds_on(sa_bench_cfg.threads > 1 ? CLOCK_MONOTONIC
                                             : CLOCK_THREAD_CPUTIME_ID);
}

double sa_bench_wall_now(void) { return seconds_on(CLOCK_MONOTONIC); }

float *sa_bench_alloc(size_t floats) {
  size_t bytes = (floats * sizeof(float) + 63) & ~(size_t)63;
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes ? bytes : 64)) {
    fprintf(stderr, "simdattn_bench: out of memory (%zu bytes)\n", bytes);
    exit(1);
  }
  memset(p, 0, bytes);
  return p;
}

void sa_bench_free(float *p) { free(p); }

void sa_bench_fill(float *x, size_t n, uint64_t seed, float amp) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x[i] = amp * ((float)(s >> 40) * (2.0f / 16777216.0f) - 1.0f);
  }
}

const sa_kernel_set *sa_bench_oracle(void) {
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    if (ks->cpu_features == 0 && ks->vector_bits == 0)
      return ks;
  }
  return sa_kernel_set_at(0);
}

int sa_bench_timed(const sa_kernel_set *ks) {
  return sa_kernel_set_supported(ks) && ks->priority >= 0;
}

void sa_bench_timing(sa_bench *b) {
  /* One thread: the pool runs every task on the calling thread, so that
   * thread's CPU time is the cost, whatever else shares the machine (and
   * whatever idle threads OpenBLAS or the pool keep spinning). Several
   * threads: wall-clock. */
  if (sa_bench_cfg.threads > 1)
    sa_bench_use_real_time(b);
}
