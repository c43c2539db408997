/*
 * The peak probes: what "% of peak" in the tables is measured against, taken
 * on this machine in the same run. peak/fma/<isa> runs a chain of independent
 * FMAs (kernels/<isa>/peak.c, built with that set's flags, listed by
 * dispatch/registry.h like the kernel sets) and is called only when
 * sa_cpu_features() says the CPU and OS run that ISA's sets;
 * peak/read/<isa>/<size>_t<n> reads a buffer far larger than the caches
 * with the best runnable ISA's read probe (kernels/<isa>/peak_read.c,
 * bench/peak_mem.c) on 1 and on --sa_threads threads, and
 * peak/triad/baseline/<size>_t<n> is STREAM's triad for reference.
 * No ISA name is spelled in bench/.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "dispatch/registry.h"

/* Bounds the table of measured peaks; the registry has one probe per ISA
 * folder. */
enum { MAX_PROBES = 8 };

static size_t n_probes(void) {
  size_t n = sa_peak_probe_count();
  return n < MAX_PROBES ? n : MAX_PROBES;
}

static const sa_peak_probe *probe(size_t i) { return sa_peak_probe_at(i); }

static int runnable(const sa_peak_probe *p) {
  return (sa_cpu_features() & p->cpu_features) == p->cpu_features;
}

/* Single-thread values: -1 unknown yet, 0 not runnable here. */
static double fma_gflops[MAX_PROBES];
static double mem_gbs = -1;
static int peaks_init;

static void init_peaks(void) {
  if (peaks_init)
    return;
  for (size_t i = 0; i < n_probes(); i++)
    fma_gflops[i] = -1;
  peaks_init = 1;
}

/* Best of five ~5 ms runs: enough for a percentage column. */
static double measure_fma(const sa_peak_probe *p) {
  float sink;
  double best = 0;
  uint64_t reps = 1 << 14;
  for (int t = 0; t < 5; t++) {
    double t0 = sa_bench_now();
    uint64_t flops = p->fn(reps, &sink);
    double dt = sa_bench_now() - t0;
    sa_bench_do_not_optimize(&sink);
    if (dt < 2e-3) {
      reps *= 4;
      t--;
      continue;
    }
    if (flops / dt > best)
      best = flops / dt;
  }
  return best * 1e-9;
}

/* Short measurement for rows run without --sa_peak: three passes each way
 * over the buffer at the run's thread count. */
static double measure_mem(void) {
  return sa_peak_read_measure(sa_bench_cfg.threads, 3).gbs;
}

double sa_peak_gflops(const char *isa) {
  init_peaks();
  double best = 0;
  for (size_t i = 0; i < n_probes(); i++) {
    if (isa && strcmp(isa, probe(i)->isa) != 0)
      continue;
    if (fma_gflops[i] < 0)
      fma_gflops[i] = runnable(probe(i)) ? measure_fma(probe(i)) : 0;
    if (fma_gflops[i] > best)
      best = fma_gflops[i];
  }
  return best * sa_bench_cfg.threads;
}

double sa_peak_mem_gbs(void) {
  if (mem_gbs < 0)
    mem_gbs = measure_mem();
  return mem_gbs;
}

int sa_peak_parse(const char *spec) {
  init_peaks();
  char buf[512];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    char *colon = strchr(tok, ':');
    if (!colon)
      return -1;
    *colon = '\0';
    char *end;
    double v = strtod(colon + 1, &end);
    if (*end || !(v > 0) || !isfinite(v))
      return -1;
    if (strcmp(tok, "mem") == 0) {
      mem_gbs = v;
      continue;
    }
    size_t i = 0;
    while (i < n_probes() && strcmp(tok, probe(i)->isa) != 0)
      i++;
    if (i == n_probes())
      return -1;
    fma_gflops[i] = v;
  }
  return 0;
}

/* ---------------------------------------------------------------- rows */

static void bm_fma(sa_bench_state *st, void *arg) {
  const sa_peak_probe *p = arg;
  float sink = 0;
  double flops = 0;
  /* Untimed warm-up, once per process (~50 ms): brings the core up to its
   * running clock before the first timed probe. */
  static int warm;
  if (!warm) {
    double t0 = sa_bench_now();
    while (sa_bench_now() - t0 < 0.05)
      p->fn(1 << 16, &sink);
    warm = 1;
  }
  while (sa_bench_keep_running(st))
    flops += (double)p->fn(1 << 16, &sink);
  sa_bench_do_not_optimize(&sink);
  sa_bench_counter(st, "GFLOPS", flops * 1e-9, SA_BENCH_RATE);
}

/* Passes of each kind per repetition; compare.sh asks for 3 repetitions and
 * the table shows the best ("max" aggregate): 9 passes each way (quick: 6,
 * to stay a smoke test where the buffer must be large). */
static int mem_passes(void) { return sa_bench_cfg.quick ? 2 : 3; }

/* peak/read/<isa>/<size>_t<n>: arg is n. */
static void bm_read(sa_bench_state *st, void *arg) {
  int n = (int)(intptr_t)arg;
  sa_peak_mem_buffer(); /* allocated and touched before any timing */
  sa_bench_bw bw = {0, 0, 0, 0, 0, 0, 0, NULL};
  while (sa_bench_keep_running(st))
    bw = sa_peak_read_measure(n, mem_passes());
  /* Plain counters: each is the best pass of this repetition, timed by the
   * probe itself (one thread: its CPU time; several: from the barrier that
   * starts them to the one that ends the slowest). */
  sa_bench_counter(st, "GBps", bw.gbs, SA_BENCH_PLAIN);
  sa_bench_counter(st, "GBps_no_prefetch", bw.gbs_plain, SA_BENCH_PLAIN);
  sa_bench_counter(st, "GBps_prefetch", bw.gbs_prefetch, SA_BENCH_PLAIN);
  sa_bench_counter(st, "GBps_prefetch_pages", bw.gbs_pages, SA_BENCH_PLAIN);
  sa_bench_counter(st, "GBps_prefetch_l2", bw.gbs_l2, SA_BENCH_PLAIN);
  sa_bench_counter(st, "GBps_streams", bw.gbs_streams, SA_BENCH_PLAIN);
  sa_bench_counter(st, "GBps_lines_pages", bw.gbs_lines_pages, SA_BENCH_PLAIN);
  sa_bench_counter(st, "threads", n, SA_BENCH_PLAIN);
}

/* peak/triad/baseline/<size>_t<n>: reference only. */
static void bm_triad(sa_bench_state *st, void *arg) {
  int n = (int)(intptr_t)arg;
  sa_peak_mem_buffer();
  double gbs = 0;
  while (sa_bench_keep_running(st))
    gbs = sa_peak_triad_measure(n, mem_passes());
  sa_bench_counter(st, "GBps", gbs, SA_BENCH_PLAIN);
  sa_bench_counter(st, "threads", n, SA_BENCH_PLAIN);
}

static void add_mem_row(const char *what, const char *isa, int n,
                        sa_bench_fn fn) {
  char name[128], size[32];
  size_t mib = sa_bench_cfg.mem_bytes >> 20;
  if (mib % 1024 == 0)
    snprintf(size, sizeof size, "%zuGiB", mib / 1024);
  else
    snprintf(size, sizeof size, "%zuMiB", mib);
  snprintf(name, sizeof name, "peak/%s/%s/%s_t%d", what, isa, size, n);
  sa_bench *b = sa_bench_register(name, fn, (void *)(intptr_t)n);
  sa_bench_set_unit(b, SA_BENCH_MS);
  sa_bench_set_iterations(b, 1); /* one measurement of several passes */
  sa_bench_timing(b);
  sa_bench_add_max_statistic(b);
}

void sa_bench_register_peaks(void) {
  char name[128];
  for (size_t i = 0; i < n_probes(); i++) {
    if (!runnable(probe(i)))
      continue;
    snprintf(name, sizeof name, "peak/fma/%s", probe(i)->isa);
    sa_bench *b = sa_bench_register(name, bm_fma, (void *)probe(i));
    sa_bench_set_unit(b, SA_BENCH_US);
    sa_bench_timing(b);
    sa_bench_add_max_statistic(b);
  }
  /* Read bandwidth for one thread and for the run's threads (decode rows
   * are measured against the latter); the triad at the run's threads. */
  add_mem_row("read", sa_peak_read_isa(), 1, bm_read);
  if (sa_bench_cfg.threads > 1)
    add_mem_row("read", sa_peak_read_isa(), sa_bench_cfg.threads, bm_read);
  add_mem_row("triad", "baseline", sa_bench_cfg.threads, bm_triad);
}
