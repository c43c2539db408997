/*
 * simdattn_bench: every kernel set of the registry, its micro-kernels and
 * whole attention, against the peak probes and an OpenBLAS baseline.
 *
 *   simdattn_bench [--sa_suite=default|quick] [--sa_threads=N]
 *                  [--sa_peak=isa:GFLOPS,...,mem:GBs] [--sa_mem_mib=N]
 *                  [--sa_print=context|slug|sets] [--benchmark_* ...]
 *
 * Google Benchmark's own flags pass through (filter, format, out,
 * repetitions, min_time, ...). scripts/compare.sh drives it for make compare.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/cpu_slug.h"

#ifndef SA_BENCH_C_COMPILER
#define SA_BENCH_C_COMPILER "unknown"
#endif
#ifndef SA_BENCH_C_FLAGS
#define SA_BENCH_C_FLAGS ""
#endif
#ifndef SA_BENCH_BUILD_TYPE
#define SA_BENCH_BUILD_TYPE ""
#endif
#ifndef SA_BENCH_SLEEF_VERSION
#define SA_BENCH_SLEEF_VERSION "unknown"
#endif
#ifndef SA_BENCH_HWLOC_VERSION
#define SA_BENCH_HWLOC_VERSION "unknown"
#endif

sa_bench_config sa_bench_cfg = {
    .threads = 1,
    .quick = 0,
    .mem_bytes = (size_t)1 << 30,
    .decode_bytes = (size_t)512 << 20,
};

/* ---------------------------------------------------------------- utils */

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

/* ---------------------------------------------------------------- context */

typedef struct kv {
  char key[40];
  char value[512];
} kv;
static kv ctx_items[32];
static size_t n_ctx;

static void put(const char *key, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(const char *key, const char *fmt, ...) {
  if (n_ctx == sizeof ctx_items / sizeof ctx_items[0])
    return;
  kv *e = &ctx_items[n_ctx++];
  snprintf(e->key, sizeof e->key, "%s", key);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->value, sizeof e->value, fmt, ap);
  va_end(ap);
}

static void gather_context(void) {
  if (n_ctx)
    return;
  sa_bench_cpu cpu;
  sa_bench_cpu_name(&cpu);
  put("sa_cpu_model", "%s", cpu.model);
  put("sa_cpu_slug", "%s", cpu.slug);
  put("sa_cpu_features", "%s", cpu.features);
  put("sa_compiler", "%s", SA_BENCH_C_COMPILER);
  put("sa_cflags", "%s (%s); ISA flags only in kernels/<isa>/",
      SA_BENCH_C_FLAGS, SA_BENCH_BUILD_TYPE);
  put("sa_version_simdattn", "%s", SA_VERSION_STRING);
  put("sa_version_sleef", "%s", SA_BENCH_SLEEF_VERSION);
  put("sa_version_hwloc", "%s", SA_BENCH_HWLOC_VERSION);
  put("sa_version_gbench", "%s", sa_bench_gbench_version());
#ifdef SA_BENCH_HAVE_OPENBLAS
  put("sa_openblas", "%s", sa_openblas_describe());
#else
  put("sa_openblas", "%s", "not built (no libopenblas-dev)");
#endif

  /* Threads and pinning as a context of the oracle set reports them. */
  sa_context_options o;
  sa_context_options_init(&o);
  o.isa = sa_bench_oracle()->name;
  o.num_threads = sa_bench_cfg.threads;
  sa_context *c = NULL;
  if (sa_context_create(&o, &c) == SA_OK) {
    int n = sa_context_num_threads(c);
    put("sa_threads", "%d", n);
    if (n != sa_bench_cfg.threads)
      put("sa_threads_asked", "%d", sa_bench_cfg.threads);
    put("sa_pinning", "%s",
        sa_context_pinned(c) ? "pinned to cores" : "unpinned");
    sa_context_destroy(c);
  } else {
    put("sa_threads", "%d", sa_bench_cfg.threads);
    put("sa_pinning", "unknown (context failed: %s)", sa_last_error());
  }
  put("sa_timing", "%s",
      sa_bench_cfg.threads > 1
          ? "wall-clock time (several threads)"
          : "CPU time of the calling thread, which runs all the work with one "
            "thread (robust on a shared machine)");
  put("sa_suite", "%s", sa_bench_cfg.quick ? "quick" : "default");

  char run[512] = "", skip[512] = "", reference[512] = "";
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    char *dst = sa_bench_timed(ks)            ? run
                : sa_kernel_set_supported(ks) ? reference
                                              : skip;
    size_t len = strlen(dst);
    snprintf(dst + len, 512 - len, "%s%s", len ? " " : "", ks->name);
    char key[40];
    snprintf(key, sizeof key, "sa_set_%s", ks->name);
    put(key, "%s [isa %s, exp %s]", ks->about, ks->isa, ks->exp_impl);
  }
  put("sa_oracle", "%s", sa_bench_oracle()->name);
  put("sa_sets_run", "%s", run);
  put("sa_sets_skipped", "%s", skip[0] ? skip : "none");
  put("sa_sets_reference", "%s", reference[0] ? reference : "none");
}

void sa_bench_add_run_context(void) {
  gather_context();
  for (size_t i = 0; i < n_ctx; i++)
    sa_bench_add_context(ctx_items[i].key, ctx_items[i].value);
}

void sa_bench_print_context(void) {
  gather_context();
  for (size_t i = 0; i < n_ctx; i++)
    printf("%s=%s\n", ctx_items[i].key, ctx_items[i].value);
}

/* ---------------------------------------------------------------- main */

static int starts(const char *arg, const char *flag, const char **val) {
  size_t n = strlen(flag);
  if (strncmp(arg, flag, n) != 0 || arg[n] != '=')
    return 0;
  *val = arg + n + 1;
  return 1;
}

static void usage(void) {
  fprintf(stderr,
          "simdattn_bench flags (besides Google Benchmark's --benchmark_*):\n"
          "  --sa_suite=default|quick   shapes to register (quick: tiny)\n"
          "  --sa_threads=N             worker threads per context (1)\n"
          "  --sa_peak=isa:G,...,mem:B  peaks (GFLOP/s per thread, GB/s) "
          "instead of\n"
          "                             a short measurement, for %% of peak\n"
          "  --sa_mem_mib=N             streaming-read probe size (1024; quick "
          "256)\n"
          "  --sa_print=context|slug|sets  print and exit\n");
}

int main(int argc, char **argv) {
  const char *print = NULL, *v;
  int out = 1, mem_given = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (starts(a, "--sa_threads", &v)) {
      sa_bench_cfg.threads = atoi(v);
      if (sa_bench_cfg.threads < 1 || sa_bench_cfg.threads > 4096) {
        fprintf(stderr, "simdattn_bench: bad --sa_threads=%s\n", v);
        return 2;
      }
    } else if (starts(a, "--sa_suite", &v)) {
      if (strcmp(v, "quick") && strcmp(v, "default")) {
        fprintf(stderr, "simdattn_bench: --sa_suite is default or quick\n");
        return 2;
      }
      sa_bench_cfg.quick = strcmp(v, "quick") == 0;
    } else if (starts(a, "--sa_peak", &v)) {
      if (sa_peak_parse(v)) {
        fprintf(stderr, "simdattn_bench: bad --sa_peak=%s\n", v);
        return 2;
      }
    } else if (starts(a, "--sa_mem_mib", &v)) {
      long mib = atol(v);
      if (mib < 1 || mib > (1l << 20)) {
        fprintf(stderr, "simdattn_bench: bad --sa_mem_mib=%s\n", v);
        return 2;
      }
      sa_bench_cfg.mem_bytes = (size_t)mib << 20;
      mem_given = 1;
    } else if (starts(a, "--sa_print", &v)) {
      print = v;
    } else if (!strncmp(a, "--sa_", 5)) {
      fprintf(stderr, "simdattn_bench: unknown flag %s\n", a);
      usage();
      return 2;
    } else {
      if (!strcmp(a, "--help") || !strcmp(a, "-h"))
        usage();
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = NULL;
  if (sa_bench_cfg.quick) {
    sa_bench_cfg.decode_bytes = (size_t)64 << 20;
    if (!mem_given)
      sa_bench_cfg.mem_bytes = (size_t)256 << 20;
  }

#ifdef SA_BENCH_HAVE_OPENBLAS
  sa_openblas_set_threads(sa_bench_cfg.threads);
#endif
  if (print) {
    if (!strcmp(print, "context")) {
      sa_bench_print_context();
    } else if (!strcmp(print, "slug")) {
      gather_context();
      for (size_t i = 0; i < n_ctx; i++)
        if (!strcmp(ctx_items[i].key, "sa_cpu_slug"))
          printf("%s\n", ctx_items[i].value);
    } else if (!strcmp(print, "sets")) {
      for (size_t i = 0; i < sa_kernel_set_count(); i++)
        if (sa_bench_timed(sa_kernel_set_at(i)))
          printf("%s\n", sa_kernel_set_at(i)->name);
#ifdef SA_BENCH_HAVE_OPENBLAS
      printf("openblas\n");
#endif
    } else {
      fprintf(stderr, "simdattn_bench: --sa_print is context, slug or sets\n");
      return 2;
    }
    return 0;
  }

  sa_bench_register_peaks();
  sa_bench_register_kernels();
  sa_bench_register_attention();
  sa_bench_add_run_context();
  return sa_bench_main(argc, argv);
}
