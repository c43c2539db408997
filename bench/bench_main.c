/*
 * simdattn_bench: every kernel set of the registry, its micro-kernels and
 * whole attention, against the peak probes and the OpenBLAS and oneDNN
 * baselines.
 *
 *   simdattn_bench [--sa_suite=default|quick] [--sa_threads=N]
 *                  [--sa_peak=isa:GFLOPS,...,mem:GBs] [--sa_mem_mib=N]
 *                  [--sa_print=context|slug|sets] [--benchmark_* ...]
 *
 * Google Benchmark's own flags pass through (filter, format, out,
 * repetitions, min_time, ...). scripts/compare.sh drives it for make compare.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

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
          "  --sa_peak=isa:G,...,mem:B  peaks (GFLOP/s per thread; read GB/s "
          "at\n"
          "                             --sa_threads) instead of a short "
          "measurement\n"
          "  --sa_mem_mib=N             memory probes' buffer (1024; quick "
          "256;\n"
          "                             at least 2x the last-level cache)\n"
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
  /* Both must stream from memory, not from the last-level cache: a decode
   * row served by the cache would beat a probe that is not, and a probe
   * served by it would not be a memory bandwidth. So both span at least
   * twice the cache hwloc reports, in steps of 256 MiB (a VM may report its
   * host's whole L3: then they are larger than needed, never too small). */
  size_t floor = 2 * sa_bench_llc_bytes(), step = (size_t)256 << 20;
  floor = (floor + step - 1) / step * step;
  if (!mem_given && sa_bench_cfg.mem_bytes < floor)
    sa_bench_cfg.mem_bytes = floor;
  if (sa_bench_cfg.decode_bytes < floor)
    sa_bench_cfg.decode_bytes = floor;

#ifdef SA_BENCH_HAVE_OPENBLAS
  sa_openblas_set_threads(sa_bench_cfg.threads);
#endif
#ifdef SA_BENCH_HAVE_ONEDNN
  sa_onednn_set_threads(sa_bench_cfg.threads);
#endif
  if (print) {
    if (!strcmp(print, "context")) {
      sa_bench_print_context();
    } else if (!strcmp(print, "slug")) {
      const char *slug = sa_bench_context_value("sa_cpu_slug");
      if (slug)
        printf("%s\n", slug);
    } else if (!strcmp(print, "sets")) {
      for (size_t i = 0; i < sa_kernel_set_count(); i++)
        if (sa_bench_timed(sa_kernel_set_at(i)))
          printf("%s\n", sa_kernel_set_at(i)->name);
#ifdef SA_BENCH_HAVE_OPENBLAS
      printf("openblas\n");
#endif
#ifdef SA_BENCH_HAVE_ONEDNN
      printf("onednn\n");
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
