/*
 * The name results/<cpu>/ is filed under, shared by simdattn_bench and
 * simdattn_accuracy so that both write into the same directory.
 */
#ifndef SA_BENCH_CPU_SLUG_H
#define SA_BENCH_CPU_SLUG_H

typedef struct sa_bench_cpu {
  char model[512];    /* "AMD EPYC 9654 96-Core Processor" */
  char features[512]; /* "avx2 fma avx512f ...", or "baseline" */
  char slug[160];     /* "amd-epyc-9654": lowercase, dashes */
} sa_bench_cpu;

/* sa_cpu_describe's text split into model and features, and the slug. */
void sa_bench_cpu_name(sa_bench_cpu *cpu);

#endif /* SA_BENCH_CPU_SLUG_H */
