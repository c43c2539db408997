/*
 * The run's context: CPU, compiler, library versions, threads, pinning and
 * the kernel sets run or skipped, as Google Benchmark context entries (JSON
 * output) or key=value lines (--sa_print=context, for scripts).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
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

typedef struct kv {
  char key[40];
  char value[512];
} kv;
static kv ctx_items[48];
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
#ifdef SA_BENCH_HAVE_ONEDNN
  put("sa_onednn", "%s", sa_onednn_describe());
#else
  put("sa_onednn", "%s", "not built (no libdnnl-dev)");
#endif
  put("sa_read_probe", "%s (the best runnable set's ISA)", sa_peak_read_isa());
  put("sa_memory",
      "probe buffer %zu MiB, decode K/V rotation %zu MiB; last-level cache "
      "%zu MiB (hwloc; one core's own at most 64 MiB)",
      sa_bench_cfg.mem_bytes >> 20, sa_bench_cfg.decode_bytes >> 20,
      sa_bench_llc_bytes() >> 20);

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

const char *sa_bench_context_value(const char *key) {
  gather_context();
  for (size_t i = 0; i < n_ctx; i++)
    if (!strcmp(ctx_items[i].key, key))
      return ctx_items[i].value;
  return NULL;
}
