/*
 * What the benchmark files share: the run's configuration (from --sa_* flags),
 * the peak probes, inputs, and the registration entry points.
 *
 * Benchmark names map onto the code:
 *   peak/fma/<isa>                      kernels/<isa>/peak.c
 *   peak/read/<isa>/<size>_t<n>         kernels/<isa>/peak_read.c through
 *                                       bench/peak_mem.c, n threads
 *   peak/triad/baseline/<size>_t<n>     bench/peak_mem.c (reference only)
 *   kernel/<op>/<set>/<m>x<n>[_d<d>]    the <op> slot of kernel set <set>
 *   attn/<algo>/<set>/<shape>           sa_attention, algorithm three_pass or
 *                                       fused, context isa = <set>
 *   attn/gemm/openblas/<shape>          bench/baseline_openblas.c
 *   attn/gemm/onednn/<shape>            bench/baseline_onednn.c
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
  size_t mem_bytes;    /* memory probes' buffer size */
  size_t decode_bytes; /* decode shapes rotate K/V copies over this much */
} sa_bench_config;

extern sa_bench_config sa_bench_cfg;

/* ---------------------------------------------------------------- peaks */

/* Peak of the ISA a kernel set uses (GFLOP/s for sa_bench_cfg.threads
 * threads): from --sa_peak if given, else measured once, briefly, here. 0 if
 * no probe runs here. isa NULL: the best of all probes. */
double sa_peak_gflops(const char *isa);
/* Read bandwidth for sa_bench_cfg.threads threads, GB/s (1e9 bytes), same
 * rules (mem:GBs in --sa_peak). */
double sa_peak_mem_gbs(void);
/* Parses --sa_peak=isa:GFLOPS,...,mem:GBs; 0 on success. */
int sa_peak_parse(const char *spec);

/* ------------------------------------------ memory probes: peak_mem.c */

typedef struct sa_bench_bw {
  double gbs;             /* the best pass, GB/s */
  double gbs_plain;       /* the best pass without software prefetch */
  double gbs_prefetch;    /* the best pass prefetching every line */
  double gbs_pages;       /* the best pass prefetching each page's first line */
  double gbs_l2;          /* the best pass prefetching every line into L2 */
  double gbs_streams;     /* the best pass reading several streams at once */
  double gbs_lines_pages; /* the best pass prefetching every line and each
                             page's first line further ahead */
  const char *isa;        /* whose read probe */
} sa_bench_bw;

/* Bytes of last-level cache (every instance) hwloc reports, an instance
 * that serves one core taken as at most 64 MiB; 0 unknown. */
size_t sa_bench_llc_bytes(void);
/* Bytes of the first core's L1 data cache hwloc reports; 0 unknown. */
size_t sa_bench_l1d_bytes(void);
/* The probe buffer (sa_bench_cfg.mem_bytes), allocated and touched once. */
unsigned char *sa_peak_mem_buffer(void);
/* The ISA whose read probe runs: the best runnable kernel set's. */
const char *sa_peak_read_isa(void);
/* Read bandwidth of threads threads, each reading its slice of the buffer:
 * the best of passes passes without and passes with prefetch. */
sa_bench_bw sa_peak_read_measure(int threads, int passes);
/* STREAM triad in baseline C on the same buffer, best of passes, GB/s. */
double sa_peak_triad_measure(int threads, int passes);

void sa_bench_register_peaks(void);
void sa_bench_register_kernels(void);
void sa_bench_register_attention(void);

/* ------------------------------------------------ utils: bench_util.c */

/* 64-byte aligned, zeroed; aborts on failure. Free with sa_bench_free. */
/* Seconds on the clock the rows are timed with (sa_bench_timing): the
 * thread's CPU time with one thread, else monotonic wall time. */
double sa_bench_now(void);
/* Seconds of monotonic wall time, whatever the thread count. */
double sa_bench_wall_now(void);
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

#ifdef SA_BENCH_HAVE_ONEDNN
/* bench/baseline_onednn.c: oneDNN matmul + softmax + matmul primitives per
 * (batch, KV head), made once per shape. Packed [B,H,L,D] tensors. */
typedef struct sa_onednn_attn sa_onednn_attn;
const char *sa_onednn_describe(void);
void sa_onednn_set_threads(int n);
/* NULL on failure, with the reason in err. */
sa_onednn_attn *sa_onednn_create(const sa_attention_desc *d, char *err,
                                 size_t len);
/* 0 on success. */
int sa_onednn_run(sa_onednn_attn *a, const float *q, const float *k,
                  const float *v, float *o);
void sa_onednn_destroy(sa_onednn_attn *a);
#endif

#endif /* SA_BENCH_H */
