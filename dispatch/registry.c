/*
 * The registry: the one list of kernel sets. Dispatch, tests, benchmarks and
 * `make compare` all enumerate this array through sa_kernel_set_at, so a set
 * added here is selected, tested and benchmarked with no other edit.
 *
 * A set appears only when CMake compiled its kernels/<isa>/ directory
 * (SA_HAVE_<ISA>). Priority orders the automatic choice: wider vectors first,
 * and within one ISA the SLEEF exp (1 ULP) over the faster polynomial, so the
 * default is the accurate one and the polynomial stays one name away.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "kernels.h"

#define SA_X86_AVX2 (SA_CPU_AVX | SA_CPU_AVX2 | SA_CPU_FMA)
#define SA_X86_AVX512                                                          \
  (SA_X86_AVX2 | SA_CPU_AVX512F | SA_CPU_AVX512BW | SA_CPU_AVX512DQ |          \
   SA_CPU_AVX512VL)

static const sa_kernel_set kernel_sets[] = {
    {"scalar", "scalar", "libm", "plain C loops, libm expf; the oracle", 0, 0,
     0, sa_score__scalar, sa_softmax__scalar, sa_softmax_online__scalar,
     sa_wsum__scalar},
#if SA_HAVE_AVX2
    {"avx2", "avx2", "sleef-u10",
     "AVX2+FMA; score and wsum 6x16 register tiles (score on a packed K "
     "panel, 4x3 dot products for m <= 8, 2x4 for m <= 2); SLEEF expf8 u10 (1 "
     "ULP)",
     256, 21, SA_X86_AVX2, sa_score__avx2, sa_softmax__avx2_sleef,
     sa_softmax_online__avx2_sleef, sa_wsum__avx2},
    {"avx2-polyexp", "avx2", "poly",
     "AVX2+FMA; score and wsum 6x16 register tiles (score on a packed K "
     "panel, 4x3 dot products for m <= 8, 2x4 for m <= 2); polynomial exp "
     "(1.01 ULP)",
     256, 20, SA_X86_AVX2, sa_score__avx2, sa_softmax__avx2_poly,
     sa_softmax_online__avx2_poly, sa_wsum__avx2},
#endif
#if SA_HAVE_AVX512
    {"avx512", "avx512", "sleef-u10",
     "AVX-512 F/BW/DQ/VL; score and wsum 8x32 register tiles (score on a "
     "packed K panel, 4x4 dot products for m <= 16), masked tails; SLEEF "
     "expf16 u10 (1 ULP)",
     512, 31, SA_X86_AVX512, sa_score__avx512, sa_softmax__avx512_sleef,
     sa_softmax_online__avx512_sleef, sa_wsum__avx512},
    {"avx512-polyexp", "avx512", "poly",
     "AVX-512 F/BW/DQ/VL; score and wsum 8x32 register tiles (score on a "
     "packed K panel, 4x4 dot products for m <= 16), masked tails; "
     "polynomial exp (1.01 ULP)",
     512, 30, SA_X86_AVX512, sa_score__avx512, sa_softmax__avx512_poly,
     sa_softmax_online__avx512_poly, sa_wsum__avx512},
#endif
#if SA_HAVE_NEON
    {"neon", "neon", "sleef-u10", "AArch64 Advanced SIMD, SLEEF expf4 u10", 128,
     11, SA_CPU_NEON, sa_score__neon, sa_softmax__neon_sleef,
     sa_softmax_online__neon_sleef, sa_wsum__neon},
    {"neon-polyexp", "neon", "poly",
     "AArch64 Advanced SIMD, inline polynomial exp", 128, 10, SA_CPU_NEON,
     sa_score__neon, sa_softmax__neon_poly, sa_softmax_online__neon_poly,
     sa_wsum__neon},
#endif
};

#define N_SETS (sizeof kernel_sets / sizeof kernel_sets[0])

size_t sa_kernel_set_count(void) { return N_SETS; }

const sa_kernel_set *sa_kernel_set_at(size_t index) {
  return index < N_SETS ? &kernel_sets[index] : NULL;
}

const sa_kernel_set *sa_kernel_set_find(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; i < N_SETS; i++)
    if (strcmp(kernel_sets[i].name, name) == 0)
      return &kernel_sets[i];
  return NULL;
}

int sa_kernel_set_supported(const sa_kernel_set *set) {
  if (!set)
    return 0;
  return (sa_cpu_features() & set->requires) == set->requires;
}

const sa_kernel_set *sa_kernel_set_best(void) {
  const sa_kernel_set *best = &kernel_sets[0];
  for (size_t i = 1; i < N_SETS; i++)
    if (sa_kernel_set_supported(&kernel_sets[i]) &&
        kernel_sets[i].priority > best->priority)
      best = &kernel_sets[i];
  return best;
}

static void list_runnable(char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < N_SETS; i++) {
    if (!sa_kernel_set_supported(&kernel_sets[i]))
      continue;
    int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
                     kernel_sets[i].name);
    if (n < 0 || (size_t)n >= size - used)
      break;
    used += (size_t)n;
  }
}

sa_status sa_kernel_set_select(const char *name, const sa_kernel_set **out) {
  if (!out)
    return sa_fail(SA_ERR_NULL_POINTER, "sa_kernel_set_select: out is NULL");
  if (!name || !name[0] || strcmp(name, "auto") == 0) {
    *out = sa_kernel_set_best();
    return SA_OK;
  }
  char runnable[256];
  list_runnable(runnable, sizeof runnable);
  const sa_kernel_set *set = sa_kernel_set_find(name);
  if (!set)
    return sa_fail(SA_ERR_UNKNOWN_ISA,
                   "no kernel set named '%.64s'; this CPU can run: %s", name,
                   runnable);
  if (!sa_kernel_set_supported(set)) {
    char need[128];
    uint64_t missing = set->requires & ~sa_cpu_features();
    sa_cpu_feature_names(missing, need, sizeof need);
    return sa_fail(SA_ERR_UNSUPPORTED_ISA,
                   "kernel set '%s' needs %s, which this CPU lacks; it can "
                   "run: %s",
                   set->name, need, runnable);
  }
  *out = set;
  return SA_OK;
}

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static const sa_kernel_set *default_set;

static void choose_default(void) {
  const char *env = getenv("SIMDATTN_ISA");
  const sa_kernel_set *set = NULL;
  if (sa_kernel_set_select(env, &set) != SA_OK) {
    fprintf(stderr, "simdattn: SIMDATTN_ISA: %s; using %s\n", sa_last_error(),
            sa_kernel_set_best()->name);
    set = sa_kernel_set_best();
  }
  default_set = set;
  if (sa_verbose())
    fprintf(stderr, "simdattn: kernel set %s\n", default_set->name);
}

const sa_kernel_set *sa_kernel_set_default(void) {
  pthread_once(&default_once, choose_default);
  return default_set;
}
