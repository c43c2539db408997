// The C shim over Google Benchmark: the only C++ in simdattn. Every function
// is a thin forward; see gbench_shim.h for the contract.
#include "bench/gbench_shim.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#ifndef SA_GBENCH_VERSION
#define SA_GBENCH_VERSION "unknown"
#endif

namespace {

benchmark::State &S(sa_bench_state *st) {
  return *reinterpret_cast<benchmark::State *>(st);
}
const benchmark::State &S(const sa_bench_state *st) {
  return *reinterpret_cast<const benchmark::State *>(st);
}
benchmark::internal::Benchmark *B(sa_bench *b) {
  return reinterpret_cast<benchmark::internal::Benchmark *>(b);
}

std::vector<std::pair<std::string, std::string>> &context() {
  static std::vector<std::pair<std::string, std::string>> c;
  return c;
}

} // namespace

extern "C" {

sa_bench *sa_bench_register(const char *name, sa_bench_fn fn, void *arg) {
  benchmark::internal::Benchmark *b = benchmark::RegisterBenchmark(
      name, [fn, arg](benchmark::State &st) {
        fn(reinterpret_cast<sa_bench_state *>(&st), arg);
      });
  if (!b) {
    std::fprintf(stderr, "sa_bench_register: cannot register %s\n", name);
    std::abort();
  }
  return reinterpret_cast<sa_bench *>(b);
}

void sa_bench_set_unit(sa_bench *b, sa_bench_unit unit) {
  static const benchmark::TimeUnit units[] = {
      benchmark::kNanosecond, benchmark::kMicrosecond, benchmark::kMillisecond,
      benchmark::kSecond};
  B(b)->Unit(units[unit <= SA_BENCH_S ? unit : SA_BENCH_NS]);
}
void sa_bench_set_min_time(sa_bench *b, double seconds) {
  B(b)->MinTime(seconds);
}
void sa_bench_set_repetitions(sa_bench *b, int n) { B(b)->Repetitions(n); }
void sa_bench_set_iterations(sa_bench *b, int64_t n) {
  B(b)->Iterations(static_cast<benchmark::IterationCount>(n));
}
void sa_bench_use_real_time(sa_bench *b) { B(b)->UseRealTime(); }
void sa_bench_add_max_statistic(sa_bench *b) {
  B(b)->ComputeStatistics("max", [](const std::vector<double> &v) -> double {
    double m = v.empty() ? 0.0 : v[0];
    for (double x : v)
      m = x > m ? x : m;
    return m;
  });
}
void sa_bench_measure_process_cpu_time(sa_bench *b) {
  B(b)->MeasureProcessCPUTime();
}

int sa_bench_keep_running(sa_bench_state *st) { return S(st).KeepRunning(); }
int64_t sa_bench_iterations(const sa_bench_state *st) {
  return static_cast<int64_t>(S(st).iterations());
}
void sa_bench_pause(sa_bench_state *st) { S(st).PauseTiming(); }
void sa_bench_resume(sa_bench_state *st) { S(st).ResumeTiming(); }

void sa_bench_counter(sa_bench_state *st, const char *name, double value,
                      unsigned flags) {
  int f = benchmark::Counter::kDefaults;
  if (flags & SA_BENCH_RATE)
    f |= benchmark::Counter::kIsRate;
  if (flags & SA_BENCH_PER_ITER)
    f |= benchmark::Counter::kIsIterationInvariant;
  if (flags & SA_BENCH_AVG_THREADS)
    f |= benchmark::Counter::kAvgThreads;
  S(st).counters[name] = benchmark::Counter(
      value, static_cast<benchmark::Counter::Flags>(f),
      (flags & SA_BENCH_BASE_1024) ? benchmark::Counter::kIs1024
                                   : benchmark::Counter::kIs1000);
}
void sa_bench_set_items_processed(sa_bench_state *st, int64_t items) {
  S(st).SetItemsProcessed(items);
}
void sa_bench_set_bytes_processed(sa_bench_state *st, int64_t bytes) {
  S(st).SetBytesProcessed(bytes);
}
void sa_bench_set_label(sa_bench_state *st, const char *label) {
  S(st).SetLabel(label);
}
void sa_bench_skip_with_error(sa_bench_state *st, const char *msg) {
  S(st).SkipWithError(msg);
}

void sa_bench_do_not_optimize(const void *p) { benchmark::DoNotOptimize(p); }
void sa_bench_clobber_memory(void) { benchmark::ClobberMemory(); }

void sa_bench_add_context(const char *key, const char *value) {
  context().emplace_back(key, value ? value : "");
}

const char *sa_bench_gbench_version(void) { return SA_GBENCH_VERSION; }

int sa_bench_main(int argc, char **argv) {
  // Finished rows appear at once even when stdout is a pipe (make compare
  // reads them as progress): line-buffered stdio under a flushing cout.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::cout.setf(std::ios::unitbuf);
  bool listing = false;
  for (int i = 1; i < argc; i++)
    listing |= std::string(argv[i]).rfind("--benchmark_list_tests", 0) == 0;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  std::string line;
  for (const auto &kv : context()) {
    benchmark::AddCustomContext(kv.first, kv.second);
    line += (line.empty() ? "" : " | ") + kv.first + ": " + kv.second;
  }
  if (!line.empty() && !listing)
    std::fprintf(stderr, "%s\n", line.c_str());
  size_t ran = benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (ran == 0) {
    std::fprintf(stderr, "no benchmark matches the filter\n");
    return 1;
  }
  return 0;
}

} // extern "C"
