/*
 * What the benchmark files share: the run's configuration (from --sa_* flags),
 * the peak probes, inputs, and the registration entry points.
 *
 * Benchmark names map onto the code:
 *   peak/fma/<isa>                      kernels/<isa>/peak.c
 *   peak/mem/read_<size>                bench/peak_mem.c
 *   kernel/<op>/<set>/<m>x<n>[_d<d>]    the <op> slot of kernel set <set>
 *   attn/<algo>/<set>/<shape>           sa_attention, algorithm three_pass or
 *                                       fused, context isa = <set>
 *   attn/gemm/openblas/<shape>          bench/baseline_openblas.c
 * Kernel set names come from the registry, never from this directory.
 */
#ifndef SA_BENCH_H
#define SA_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "bench/gbench_shim.h"
#include "simdattn.h"

typedef struct sa_bench_config {
  int threads;         /* --sa_threads=N: worker threads per context (1) */
  int quick;           /* --sa_suite=quick: the tiny suite */
  double min_time;     /* --benchmark_min_time as given, 0 if not */
  size_t mem_bytes;    /* streaming-read probe size */
  size_t decode_bytes; /* decode shapes rotate K/V copies over this much */
} sa_bench_config;

extern sa_bench_config sa_bench_cfg;

/* ---------------------------------------------------------------- peaks */

/* Peak of the ISA a kernel set uses (GFLOP/s for sa_bench_cfg.threads
 * threads): from --sa_peak if given, else measured once, briefly, here. 0 if
 * no probe runs here. isa NULL: the best of all probes. */
double sa_peak_gflops(const char *isa);
/* Streaming-read bandwidth, GB/s (1e9 bytes), same rules. */
double sa_peak_mem_gbs(void);
/* Parses --sa_peak=isa:GFLOPS,...,mem:GBs; 0 on success. */
int sa_peak_parse(const char *spec);

/* bench/peak_mem.c: reads bytes (a multiple of 64) and folds them. */
uint64_t sa_peak_read(const void *buf, size_t bytes);

void sa_bench_register_peaks(void);
void sa_bench_register_kernels(void);
void sa_bench_register_attention(void);

/* ------------------------------------------------ utils: bench_util.c */

/* 64-byte aligned, zeroed; aborts on failure. Free with sa_bench_free. */
float *sa_bench_alloc(size_t floats);
void sa_bench_free(float *p);
/* Deterministic values uniform in [-amp, amp). */
void sa_bench_fill(float *x, size_t n, uint64_t seed, float amp);
/* The set every other set is checked against: the one that needs nothing
 * from the CPU (the scalar oracle). */
const sa_kernel_set *sa_bench_oracle(void);
/* Whether the bench times a set: this CPU runs it and it is not an accuracy
 * reference (a negative priority, such as scalar-f64's: never chosen
 * automatically, so its speed answers no one's question; its accuracy is in
 * make compare's accuracy table). */
int sa_bench_timed(const sa_kernel_set *ks);
/* How rows are timed: the calling thread's CPU time with one thread (robust
 * on a shared machine), wall-clock time with several. Sets it on b. */
void sa_bench_timing(sa_bench *b);

/* ------------------------------------------ the run's context: run_context.c
 */

/* Fills the custom context (CPU, compiler, versions, threads, pinning). */
void sa_bench_add_run_context(void);
/* Prints the context as key=value lines (for scripts). */
void sa_bench_print_context(void);
/* One value of the context ("sa_cpu_slug"), NULL if there is no such key. */
const char *sa_bench_context_value(const char *key);

#ifdef SA_BENCH_HAVE_OPENBLAS
/* bench/baseline_openblas.c */
const char *sa_openblas_describe(void);
void sa_openblas_set_threads(int n);
/* What a user would write: per head cblas_sgemm for S = scale*Q*K^T, a plain
 * row softmax (masked keys -> 0), cblas_sgemm for O = P*V. Packed
 * [B,H,L,D] tensors; s holds len_q*len_kv floats. */
void sa_openblas_attention(const sa_attention_desc *d, const float *q,
                           const float *k, const float *v, float *o, float *s);
#endif

#endif /* SA_BENCH_H */
