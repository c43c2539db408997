/*
 * The memory probes, what "% of bandwidth" is measured against:
 *
 *   read   the registry's read probe (kernels/<isa>/peak_read.c) of the ISA
 *          of the best runnable kernel set: its widest loads into
 *          independent accumulators, passes taken eight ways in turn (one
 *          stream: no software prefetch; every line 1 KiB ahead; each 4
 *          KiB page's first line 16 KiB ahead; every line 4 KiB ahead into
 *          L2 only; every line 4 KiB ahead, into L1 or into L2, and each
 *          page's first line 16 KiB ahead; four streams side by side: no
 *          prefetch, and every line 4 KiB ahead into L2), the best pass
 *          kept. It has to report at least what any code of this machine
 *          reads, or a decode row would be credited with more than 100 %.
 *   triad  a[i] = b[i] + s * c[i] in baseline C (STREAM's triad, counting
 *          two reads and a write per element): a reference line only.
 *
 * Both pass over one buffer far larger than the last-level cache
 * (--sa_mem_mib; 1 GiB, quick 256 MiB, or twice the cache hwloc reports
 * if that is more: bench_main.c), in the same pages as the decode rows'
 * K and V (sa_peak_mem_buffer says why not huge ones). With several threads
 * each reads its own slice; the threads are started once and kept, a barrier
 * starts a pass and a second one ends it, so a pass lasts as long as its
 * slowest thread.
 */
#define _POSIX_C_SOURCE 200809L /* posix_memalign, pthread barriers */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hwloc.h>

#include "bench/bench.h"
#include "dispatch/registry.h"

/* Bytes ahead a prefetching pass asks for. Every line: a few lines past
 * what the hardware prefetchers track, measured 1-2 KiB best on Zen 5 and
 * Sapphire Rapids-class cores (4 KiB was slower on both). Pages: as the
 * kernels' cursor does (kernels/prefetch.h, "Pages ahead"), which on the
 * Zen 5 VM read 41-42 GB/s on one core where the other two ways read
 * 27-33 (8-32 KiB ahead alike, 4 KiB less). */
enum { PREFETCH = 1024, PREFETCH_PAGES = 16384 };

/* Into L2, and several streams (0.11.1): on a Zen 4 VM the three ways
 * above read 23-25 GB/s on one core and 28-31 on two, while decode on two
 * threads (each reading K and V, its decode kernel naming rows into L2)
 * read 32 in a `make compare` and up to 38 in a single run, above 100 % of
 * the probe. A throw-away loop there, best of three 1 GiB passes: one
 * stream with every line named 4 KiB ahead into L2 24.6-25.0 GB/s on one
 * core (none 23.4-24.9, into L1 21-22); on two, four streams a thread
 * 31-33 (one stream 27-30), four streams into L2 32-33. */
enum { PREFETCH_L2 = 4096, STREAMS = 4 };

/* Lines and pages (0.11.7): every line 4 KiB ahead, into L1 or into L2,
 * and each page's first line 16 KiB ahead, as the avx512 decode kernel
 * names its rows. On the Zen 5 VM, where that kernel's MHA decode read
 * 38.2 GB/s against a probe of 38.3, one stream so read 37.8-39.8 GB/s on
 * one core where the six older ways read 31-36 in the same runs, and
 * 73-78 on two against 60-66 (2 and 8 KiB ahead about alike, two or four
 * streams slower). */
enum { PREFETCH_LINES = 4096 };

/* ---------------------------------------------------------------- buffer */

/* The most a last-level cache instance that serves one core is taken to
 * hold: no core has a private L3 larger (the largest share is some 48 MiB,
 * 96 MiB of stacked L3 over two cores). This project's Zen 5 VM reports an
 * L3 of 508 MiB for each of its two cores, which made every buffer 2 GiB
 * and `make compare QUICK=1` six minutes long. An instance shared by
 * several cores is taken as reported: a VM's vCPUs may share its host's
 * whole L3, which is then real. */
#define LLC_ONE_CORE_MAX ((size_t)64 << 20)

/* The caches hwloc reports, read once (the bench's main thread asks
 * first): the last level's every instance, and the first core's L1D. */
static struct {
  int read;
  size_t llc, l1d;
} caches;

static void caches_read(void) {
  caches.read = 1;
  hwloc_topology_t t;
  if (hwloc_topology_init(&t))
    return;
  if (!hwloc_topology_load(t)) {
    /* every instance of the last level there is: all of them serve a
     * multi-threaded read */
    static const hwloc_obj_type_t levels[] = {HWLOC_OBJ_L3CACHE,
                                              HWLOC_OBJ_L2CACHE};
    for (int k = 0; k < 2 && !caches.llc; k++) {
      int n = hwloc_get_nbobjs_by_type(t, levels[k]);
      for (int i = 0; i < n; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t, levels[k], (unsigned)i);
        int cores = hwloc_get_nbobjs_inside_cpuset_by_type(t, o->cpuset,
                                                           HWLOC_OBJ_CORE);
        size_t size = (size_t)o->attr->cache.size;
        caches.llc +=
            cores <= 1 && size > LLC_ONE_CORE_MAX ? LLC_ONE_CORE_MAX : size;
      }
    }
    hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_L1CACHE, 0);
    if (o)
      caches.l1d = (size_t)o->attr->cache.size;
  }
  hwloc_topology_destroy(t);
}

size_t sa_bench_llc_bytes(void) {
  if (!caches.read)
    caches_read();
  return caches.llc;
}

size_t sa_bench_l1d_bytes(void) {
  if (!caches.read)
    caches_read();
  return caches.l1d;
}

static unsigned char *mem_buf;

unsigned char *sa_peak_mem_buffer(void) {
  if (!mem_buf) {
    size_t bytes = sa_bench_cfg.mem_bytes;
    void *p = NULL;
    /* In the pages any buffer gets, as K and V do: no huge-page advice.
     * On this project's VM (Zen 5, whose kernel runs DAMON over physical
     * memory) a probe buffer in huge pages made the rows timed after it read
     * memory 3 to 20 times slower in bursts of up to a second (decode
     * h32/kv8 f32: 9.6, 14.6, 30.9 ms a call in some repetitions against
     * 1.45 in the others; with 4 KiB pages, 1.43-1.51 in every one), while
     * the probe read the same in both (28.4-34.7 GB/s, within the minute's
     * noise). */
    if (posix_memalign(&p, 64, bytes)) {
      fprintf(stderr, "simdattn_bench: out of memory (%zu bytes)\n", bytes);
      exit(1);
    }
    memset(p, 1, bytes); /* touch every page before any timing */
    mem_buf = p;
  }
  return mem_buf;
}

/* ---------------------------------------------------------------- team */

typedef void (*job_fn)(int id, int n);

/* n - 1 workers; the caller is member 0. */
static struct team {
  int n;
  pthread_t *th;
  pthread_barrier_t start, end;
  job_fn job;
} team;

static void *worker(void *arg) {
  int id = (int)(intptr_t)arg;
  for (;;) {
    pthread_barrier_wait(&team.start);
    team.job(id, team.n);
    pthread_barrier_wait(&team.end);
  }
  return NULL;
}

/* The team of n threads, started on first use and kept (workers block in
 * the start barrier between passes). One size per process: the bench asks
 * for 1 (no team) and --sa_threads. */
static int team_for(int n) {
  if (team.n == n)
    return 0;
  if (team.n) {
    fprintf(stderr, "simdattn_bench: probe team of %d asked for %d\n", team.n,
            n);
    return -1;
  }
  team.th = calloc((size_t)n, sizeof *team.th);
  if (!team.th || pthread_barrier_init(&team.start, NULL, (unsigned)n) ||
      pthread_barrier_init(&team.end, NULL, (unsigned)n))
    return -1;
  for (int i = 1; i < n; i++)
    if (pthread_create(&team.th[i], NULL, worker, (void *)(intptr_t)i))
      return -1;
  team.n = n;
  return 0;
}

static double clock_s(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Seconds one pass of job takes on n threads. One thread: its CPU time, as
 * the rows of a one-thread run are timed (robust on a shared machine).
 * Several: wall-clock from the start barrier to the end barrier. */
static double run_pass(job_fn job, int n) {
  if (n == 1) {
    double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    job(0, 1);
    return clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
  }
  if (team_for(n)) {
    fprintf(stderr, "simdattn_bench: cannot start %d probe threads\n", n);
    exit(1);
  }
  team.job = job;
  double t0 = clock_s(CLOCK_MONOTONIC);
  pthread_barrier_wait(&team.start);
  job(0, n);
  pthread_barrier_wait(&team.end);
  return clock_s(CLOCK_MONOTONIC) - t0;
}

/* ---------------------------------------------------------------- read */

/* The read probe of the best runnable kernel set's ISA (the registry's one
 * selection rule, not a ladder of ISA names here); the scalar one if none
 * matches. */
static const sa_peak_probe *read_probe(void) {
  static const sa_peak_probe *p;
  if (p)
    return p;
  const sa_kernel_set *ks = sa_kernel_set_best();
  const char *isa = ks ? ks->isa : "scalar";
  for (size_t i = 0; i < sa_peak_probe_count(); i++)
    if (!strcmp(sa_peak_probe_at(i)->isa, isa) || !p)
      p = sa_peak_probe_at(i);
  return p;
}

const char *sa_peak_read_isa(void) { return read_probe()->isa; }

static sa_peak_read_way read_now;
static uint64_t sinks[64 * 8]; /* one line each: no false sharing */

/* Thread id of n reads slice id of the buffer (a multiple of STREAMS
 * probe blocks; the tail of at most n such is left out of every pass and of
 * the byte count). */
static size_t slice_bytes(int n) {
  const size_t unit = (size_t)STREAMS * SA_PEAK_READ_BLOCK;
  return sa_bench_cfg.mem_bytes / (size_t)n / unit * unit;
}

static void read_job(int id, int n) {
  size_t s = slice_bytes(n);
  sinks[(id % 64) * 8] +=
      read_probe()->read(mem_buf + (size_t)id * s, s, &read_now);
}

sa_bench_bw sa_peak_read_measure(int threads, int passes) {
  sa_peak_mem_buffer();
  sa_bench_bw bw = {0, 0, 0, 0, 0, 0, 0, sa_peak_read_isa()};
  double bytes = (double)slice_bytes(threads) * threads;
  /* The ways in turn, so that drift hits them alike. */
  enum { WAYS = 8 };
  static const sa_peak_read_way ways[WAYS] = {
      {1, 0, 64, 0, 0},
      {1, PREFETCH, 64, 0, 0},
      {1, PREFETCH_PAGES, 4096, 0, 0},
      {1, PREFETCH_L2, 64, 1, 0},
      {STREAMS, 0, 64, 0, 0},
      {STREAMS, PREFETCH_L2, 64, 1, 0},
      {1, PREFETCH_LINES, 64, 0, PREFETCH_PAGES},
      {1, PREFETCH_LINES, 64, 1, PREFETCH_PAGES}};
  double *best[WAYS] = {&bw.gbs_plain,       &bw.gbs_prefetch,
                        &bw.gbs_pages,       &bw.gbs_l2,
                        &bw.gbs_streams,     &bw.gbs_streams,
                        &bw.gbs_lines_pages, &bw.gbs_lines_pages};
  for (int p = 0; p < WAYS * passes; p++) {
    read_now = ways[p % WAYS];
    double gbs = bytes / run_pass(read_job, threads) * 1e-9;
    if (gbs > *best[p % WAYS])
      *best[p % WAYS] = gbs;
    if (gbs > bw.gbs)
      bw.gbs = gbs;
  }
  return bw;
}

/* ---------------------------------------------------------------- triad */

/* a, b, c: the buffer's three thirds as floats; thread id of n takes the
 * id-th slice of each. */
static void triad_job(int id, int n) {
  size_t len = sa_bench_cfg.mem_bytes / 3 / sizeof(float);
  size_t per = len / (size_t)n, i0 = (size_t)id * per;
  float *a = (float *)mem_buf, *b = a + len, *c = b + len;
  const float s = 3.0f;
  for (size_t i = i0; i < i0 + per; i++)
    a[i] = b[i] + s * c[i];
}

double sa_peak_triad_measure(int threads, int passes) {
  sa_peak_mem_buffer();
  size_t len = sa_bench_cfg.mem_bytes / 3 / sizeof(float);
  double bytes = 3.0 * sizeof(float) * (double)(len / (size_t)threads) *
                 threads; /* STREAM: 2 reads + 1 write */
  double best = 0;
  for (int p = 0; p < passes; p++) {
    double gbs = bytes / run_pass(triad_job, threads) * 1e-9;
    if (gbs > best)
      best = gbs;
  }
  sa_bench_do_not_optimize(mem_buf);
  return best;
}
