/*
 * A small C API over Google Benchmark (1.7.x), so the benchmarks themselves
 * are plain C. gbench_shim.cc is the only C++ in the project.
 *
 *   static void bm(sa_bench_state *st, void *arg) {
 *     struct my_args *a = arg;
 *     while (sa_bench_keep_running(st))
 *       work(a);
 *     sa_bench_counter(st, "GFLOPS", a->flops * 1e-9, SA_BENCH_RATE);
 *   }
 *   int main(int argc, char **argv) {
 *     sa_bench *b = sa_bench_register("group/name", bm, &args);
 *     sa_bench_set_unit(b, SA_BENCH_MS);
 *     sa_bench_add_context("cpu", "...");
 *     return sa_bench_main(argc, argv);   // --benchmark_* flags pass through
 *   }
 *
 * The argument block is the caller's: it must outlive sa_bench_main.
 */
#ifndef SA_GBENCH_SHIM_H
#define SA_GBENCH_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sa_bench_state sa_bench_state; /* a benchmark::State */
typedef struct sa_bench sa_bench;             /* a registered benchmark */
typedef void (*sa_bench_fn)(sa_bench_state *st, void *arg);

/* ------------------------------------------------------------ registration */

/* Registers fn(st, arg) under name. Never NULL (aborts on allocation failure).
 */
sa_bench *sa_bench_register(const char *name, sa_bench_fn fn, void *arg);

typedef enum sa_bench_unit {
  SA_BENCH_NS = 0,
  SA_BENCH_US,
  SA_BENCH_MS,
  SA_BENCH_S,
} sa_bench_unit;

void sa_bench_set_unit(sa_bench *b, sa_bench_unit unit);
/* Overrides --benchmark_min_time for this benchmark (seconds, > 0). */
void sa_bench_set_min_time(sa_bench *b, double seconds);
/* Overrides --benchmark_repetitions for this benchmark (>= 1). */
void sa_bench_set_repetitions(sa_bench *b, int n);
/* Fixed iteration count (then min_time is ignored). */
void sa_bench_set_iterations(sa_bench *b, int64_t n);
/* Report wall-clock time (and rates over it) instead of the main thread's
 * CPU time: needed whenever the measured code runs on other threads. */
void sa_bench_use_real_time(sa_bench *b);
/* Report the CPU time of the whole process (all its threads) instead of the
 * main thread's: with one working thread, robust on a shared machine. */
void sa_bench_measure_process_cpu_time(sa_bench *b);

/* Adds a "max" aggregate over the repetitions (next to mean, median, stddev,
 * cv), applied to the times and every counter: for probes whose best run is
 * the answer (a peak rate). */
void sa_bench_add_max_statistic(sa_bench *b);

/* ------------------------------------------------------------ in the body */

/* The timing loop: while (sa_bench_keep_running(st)) { ... } */
int sa_bench_keep_running(sa_bench_state *st);
/* Iterations the loop runs (or ran) in this call. */
int64_t sa_bench_iterations(const sa_bench_state *st);
/* Excludes the code between pause and resume from the timing. Each pair costs
 * two clock reads: keep it out of loops whose body takes microseconds. */
void sa_bench_pause(sa_bench_state *st);
void sa_bench_resume(sa_bench_state *st);

enum {
  SA_BENCH_PLAIN = 0,             /* reported as given */
  SA_BENCH_RATE = 1u << 0,        /* divided by the measured time: per second */
  SA_BENCH_PER_ITER = 1u << 1,    /* the value is per iteration: multiplied by
                                     the iteration count (with RATE: work/s) */
  SA_BENCH_AVG_THREADS = 1u << 2, /* divided by the benchmark's thread count */
  SA_BENCH_BASE_1024 = 1u << 3,   /* k, M, G in the console mean 1024^n */
};
/* Sets a user counter (shown in the console, written to the JSON).
 * With SA_BENCH_RATE alone, value is the total over all iterations. */
void sa_bench_counter(sa_bench_state *st, const char *name, double value,
                      unsigned flags);
/* Totals over all iterations; reported as items_per_second / bytes_per_second.
 */
void sa_bench_set_items_processed(sa_bench_state *st, int64_t items);
void sa_bench_set_bytes_processed(sa_bench_state *st, int64_t bytes);
void sa_bench_set_label(sa_bench_state *st, const char *label);
/* Marks this run failed (reported with the message); the loop then stops. */
void sa_bench_skip_with_error(sa_bench_state *st, const char *msg);

/* Keeps the compiler from deleting a computation whose result is unused. */
void sa_bench_do_not_optimize(const void *p);
void sa_bench_clobber_memory(void);

/* ------------------------------------------------------------ running */

/* A key/value pair written to the "context" of every report (console header
 * and JSON): CPU, compiler, library versions, threads... Call before main. */
void sa_bench_add_context(const char *key, const char *value);

/*
 * Runs everything registered: Google Benchmark parses and removes its own
 * flags (--benchmark_filter, --benchmark_format, --benchmark_out,
 * --benchmark_repetitions, --benchmark_min_time, ...), an unknown flag is an
 * error (exit status 1), then the selected benchmarks run. Prints the custom
 * context as one line on stderr first. Returns the process exit status: 1
 * also when the filter matched no benchmark.
 */
int sa_bench_main(int argc, char **argv);

/* The version of Google Benchmark the shim was built against, e.g. "1.7.1". */
const char *sa_bench_gbench_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SA_GBENCH_SHIM_H */
