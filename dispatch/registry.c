/*
 * The registry: the one list of kernel sets. Dispatch, tests, benchmarks and
 * `make compare` all enumerate this array through sa_kernel_set_at, so a set
 * added here is selected, tested and benchmarked with no other edit.
 *
 * A set appears only when CMake compiled its kernels/<isa>/ directory
 * (SA_HAVE_<ISA>). Priority orders the automatic choice: wider vectors first,
 * and within one ISA the more accurate exp. Since 0.11 that is the
 * polynomial (x86: exp 0.90, exp2 0.80 ULP on every float, where SLEEF's u10
 * measured 0.99 and 0.85), which is also the faster (fused prefill
 * 1.02-1.07x on x86); SLEEF's sets stay one name away (docs/DESIGN.md,
 * "Which exp is the default").
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/env.h"
#include "core/errors.h"
#include "dispatch/registry.h"
#include "kernels/kernels.h"

#define SA_X86_AVX2 (SA_CPU_AVX | SA_CPU_AVX2 | SA_CPU_FMA | SA_CPU_F16C)
#define SA_X86_AVX512                                                          \
  (SA_X86_AVX2 | SA_CPU_AVX512F | SA_CPU_AVX512BW | SA_CPU_AVX512DQ |          \
   SA_CPU_AVX512VL)

#define SET .struct_size = sizeof(sa_kernel_set)

int sa_wsum_decode_policy;
int sa_score_streams_policy;

/* Which ISA's narrow-type kernels a set uses: its own once written. */
#define NARROW_AVX2 avx2
#define NARROW_AVX512 avx512
#define NARROW_NEON neon

/* The narrow-type slots of one ISA (kernels.h names them): its score_t and
 * wsum_t kernels, and the conversions of `conv` (scalar-f64 uses scalar's). */
#define NARROW(isa) NARROW_SLOTS(isa, isa)
#define NARROW_SLOTS(isa, conv)                                                \
  .score_t = {[SA_F16] = sa_score_f16__##isa,                                  \
              [SA_BF16] = sa_score_bf16__##isa,                                \
              [SA_Q8_0] = sa_score_q8_0__##isa},                               \
  .wsum_t = {[SA_F16] = sa_wsum_f16__##isa,                                    \
             [SA_BF16] = sa_wsum_bf16__##isa,                                  \
             [SA_Q8_0] = sa_wsum_q8_0__##isa},                                 \
  CONVERSIONS(conv)
#define CONVERSIONS(isa)                                                       \
  .to_f32 = {[SA_F16] = sa_f16_to_f32__##isa,                                  \
             [SA_BF16] = sa_bf16_to_f32__##isa,                                \
             [SA_Q8_0] = sa_q8_0_to_f32__##isa},                               \
  .from_f32 = {[SA_F16] = sa_f32_to_f16__##isa,                                \
               [SA_BF16] = sa_f32_to_bf16__##isa,                              \
               [SA_Q8_0] = sa_f32_to_q8_0__##isa}

/* Each exp once: its name and the accuracy its code states, in ULP, which
 * .exp_ulps holds, the tests read and the about lines print. */
#define STR(x) #x
#define XSTR(x) STR(x)
/* C promises nothing of expf or exp2f; glibc states 0.502 for both, and
 * they measured 0.5016 on every float of [-104, 89] and [-126, 0] (2.36,
 * x86-64) */
#define LIBM_ULPS 0.502
/* scalar-f64: glibc's exp in double (under 1 double ULP), rounded to float
 * once: half a float ULP and 2^-29 of one */
#define LIBM_DOUBLE_ULPS 0.501
/* SLEEF's u10 entry points; the polynomials as kernels/<isa>/exp_poly.h
 * measured them (x86 and NEON: exp 0.9013, exp2 0.7996; 1.0103 / 1.0175
 * and 1.251 / 1.2495 before 0.11) */
#define SLEEF_U10_ULPS 1
#define POLY_X86_ULPS 0.91
#define POLY_NEON_ULPS 0.91
#define EXP_LIBM .exp_impl = "libm", .exp_ulps = LIBM_ULPS
#define EXP_SLEEF_U10 .exp_impl = "sleef-u10", .exp_ulps = SLEEF_U10_ULPS
#define EXP_POLY_X86 .exp_impl = "poly", .exp_ulps = POLY_X86_ULPS
#define EXP_POLY_NEON .exp_impl = "poly", .exp_ulps = POLY_NEON_ULPS
#define SLEEF_ABOUT "u10 (" XSTR(SLEEF_U10_ULPS) " ULP)"
#define POLY_ABOUT(ulps) "polynomial exp (" XSTR(ulps) " ULP)"

/* What the two exp variants of one ISA share: the blocking. */
#define AVX2_BLOCKING                                                          \
  "AVX2+FMA; score and wsum 6x16 register tiles (score on a packed K panel, "  \
  "row pairs x 4 keys of dot products for m <= 8, narrow K 4x3); "
#define AVX512_BLOCKING                                                        \
  "AVX-512 F/BW/DQ/VL; score and wsum 8x32 register tiles (score on a "        \
  "packed K panel, 4x4 dot products for m <= 16), masked tails; "

/* decode and decode_rows: one chunk loop, so always both. */
#define DECODE(set)                                                            \
  .decode = sa_decode__##set, .decode_rows = sa_decode_rows__##set
#define UPTO(isa)                                                              \
  .score_upto = sa_score_upto__##isa, .wsum_upto = sa_wsum_upto__##isa

static const sa_kernel_set kernel_sets[] = {
    {SET, .name = "scalar", .isa = "scalar", EXP_LIBM,
     .about = "plain C loops, libm expf; the oracle", .vector_bits = 0,
     .priority = 0, .cpu_features = 0, .score = sa_score__scalar,
     .softmax = sa_softmax__scalar, .softmax_online = sa_softmax_online__scalar,
     .softmax_online2 = sa_softmax_online2__scalar, .wsum = sa_wsum__scalar,
     .score_mod = sa_score_mod__scalar, NARROW(scalar), DECODE(scalar),
     UPTO(scalar)},
    /* Never chosen automatically (priority below scalar's): the set to hold
     * the others to when the float oracle's own rounding matters. */
    {SET, .name = "scalar-f64", .isa = "scalar", .exp_impl = "libm-double",
     .exp_ulps = LIBM_DOUBLE_ULPS,
     .about = "the scalar loops accumulating in double (dot products, exp, "
              "row sums, P.V), each stored value rounded to float once; the "
              "most accurate set",
     .vector_bits = 0, .priority = -1, .cpu_features = 0,
     .score = sa_score__scalar_f64, .softmax = sa_softmax__scalar_f64,
     .softmax_online = sa_softmax_online__scalar_f64,
     .softmax_online2 = sa_softmax_online2__scalar_f64,
     .wsum = sa_wsum__scalar_f64, .score_mod = sa_score_mod__scalar,
     NARROW_SLOTS(scalar_f64, scalar), DECODE(scalar_f64), UPTO(scalar_f64)},
#if SA_HAVE_AVX2
    {SET, .name = "avx2", .isa = "avx2", EXP_SLEEF_U10,
     .about = AVX2_BLOCKING "SLEEF expf8 " SLEEF_ABOUT, .vector_bits = 256,
     .priority = 20, .cpu_features = SA_X86_AVX2, .score = sa_score__avx2,
     .softmax = sa_softmax__avx2_sleef,
     .softmax_online = sa_softmax_online__avx2_sleef,
     .softmax_online2 = sa_softmax_online2__avx2_sleef, .wsum = sa_wsum__avx2,
     .score_mod = sa_score_mod__avx2, NARROW(NARROW_AVX2), DECODE(avx2_sleef),
     UPTO(avx2)},
    {SET, .name = "avx2-polyexp", .isa = "avx2", EXP_POLY_X86,
     .about = AVX2_BLOCKING POLY_ABOUT(POLY_X86_ULPS), .vector_bits = 256,
     .priority = 21, .cpu_features = SA_X86_AVX2, .score = sa_score__avx2,
     .softmax = sa_softmax__avx2_poly,
     .softmax_online = sa_softmax_online__avx2_poly,
     .softmax_online2 = sa_softmax_online2__avx2_poly, .wsum = sa_wsum__avx2,
     .score_mod = sa_score_mod__avx2, NARROW(NARROW_AVX2), DECODE(avx2_poly),
     UPTO(avx2)},
#endif
#if SA_HAVE_AVX512
    {SET, .name = "avx512", .isa = "avx512", EXP_SLEEF_U10,
     .about = AVX512_BLOCKING "SLEEF expf16 " SLEEF_ABOUT, .vector_bits = 512,
     .priority = 30, .cpu_features = SA_X86_AVX512, .score = sa_score__avx512,
     .softmax = sa_softmax__avx512_sleef,
     .softmax_online = sa_softmax_online__avx512_sleef,
     .softmax_online2 = sa_softmax_online2__avx512_sleef,
     .wsum = sa_wsum__avx512, .score_mod = sa_score_mod__avx512,
     NARROW(NARROW_AVX512), DECODE(avx512_sleef), UPTO(avx512)},
    {SET, .name = "avx512-polyexp", .isa = "avx512", EXP_POLY_X86,
     .about = AVX512_BLOCKING POLY_ABOUT(POLY_X86_ULPS), .vector_bits = 512,
     .priority = 31, .cpu_features = SA_X86_AVX512, .score = sa_score__avx512,
     .softmax = sa_softmax__avx512_poly,
     .softmax_online = sa_softmax_online__avx512_poly,
     .softmax_online2 = sa_softmax_online2__avx512_poly,
     .wsum = sa_wsum__avx512, .score_mod = sa_score_mod__avx512,
     NARROW(NARROW_AVX512), DECODE(avx512_poly), UPTO(avx512)},
#endif
#if SA_HAVE_AVX512BF16
    /* the avx512-polyexp set plus bf16 Q.K (its exp SLEEF's until 0.11) */
    {SET, .name = "avx512bf16", .isa = "avx512", EXP_POLY_X86,
     .about =
         AVX512_BLOCKING POLY_ABOUT(POLY_X86_ULPS) "; bf16 Q.K by "
                                                   "vdpbf16ps (AVX512_BF16)",
     .vector_bits = 512, .priority = 32,
     .cpu_features = SA_X86_AVX512 | SA_CPU_AVX512BF16,
     .score = sa_score__avx512, .softmax = sa_softmax__avx512_poly,
     .softmax_online = sa_softmax_online__avx512_poly,
     .softmax_online2 = sa_softmax_online2__avx512_poly,
     .wsum = sa_wsum__avx512, .score_mod = sa_score_mod__avx512,
     NARROW(NARROW_AVX512), .score_bf16 = sa_score_bf16_dp__avx512,
     DECODE(avx512_poly), UPTO(avx512), .prefer_features = SA_CPU_FAST_BF16DOT},
#endif
#if SA_HAVE_NEON
    {SET, .name = "neon", .isa = "neon", EXP_SLEEF_U10,
     .about = "AArch64 Advanced SIMD, SLEEF expf4 " SLEEF_ABOUT,
     .vector_bits = 128, .priority = 10, .cpu_features = SA_CPU_NEON,
     .score = sa_score__neon, .softmax = sa_softmax__neon_sleef,
     .softmax_online = sa_softmax_online__neon_sleef,
     .softmax_online2 = sa_softmax_online2__neon_sleef, .wsum = sa_wsum__neon,
     .score_mod = sa_score_mod__neon, NARROW(NARROW_NEON), DECODE(neon_sleef),
     UPTO(neon)},
    {SET, .name = "neon-polyexp", .isa = "neon", EXP_POLY_NEON,
     .about = "AArch64 Advanced SIMD, inline " POLY_ABOUT(POLY_NEON_ULPS),
     .vector_bits = 128, .priority = 11, .cpu_features = SA_CPU_NEON,
     .score = sa_score__neon, .softmax = sa_softmax__neon_poly,
     .softmax_online = sa_softmax_online__neon_poly,
     .softmax_online2 = sa_softmax_online2__neon_poly, .wsum = sa_wsum__neon,
     .score_mod = sa_score_mod__neon, NARROW(NARROW_NEON), DECODE(neon_poly),
     UPTO(neon)},
#endif
#if SA_HAVE_NEON_BF16
    /* the neon-polyexp set plus bf16 Q.K (its exp SLEEF's until 0.11) */
    {SET, .name = "neon-bf16", .isa = "neon", EXP_POLY_NEON,
     .about = "AArch64 Advanced SIMD, inline " POLY_ABOUT(
         POLY_NEON_ULPS) "; bf16 Q.K by BFDOT",
     .vector_bits = 128, .priority = 12,
     .cpu_features = SA_CPU_NEON | SA_CPU_BF16, .score = sa_score__neon,
     .softmax = sa_softmax__neon_poly,
     .softmax_online = sa_softmax_online__neon_poly,
     .softmax_online2 = sa_softmax_online2__neon_poly, .wsum = sa_wsum__neon,
     .score_mod = sa_score_mod__neon, NARROW(NARROW_NEON),
     .score_bf16 = sa_score_bf16_dp__neon, DECODE(neon_poly), UPTO(neon)},
#endif
};

#define N_SETS (sizeof kernel_sets / sizeof kernel_sets[0])

/* One peak probe per ISA folder, under its sets' SA_HAVE_<ISA> and asking
 * for what they ask (the probes are built with their flags). */
static const sa_peak_probe peak_probes[] = {
    {"scalar", 0, sa_peak_fma__scalar, sa_peak_read__scalar},
#if SA_HAVE_AVX2
    {"avx2", SA_X86_AVX2, sa_peak_fma__avx2, sa_peak_read__avx2},
#endif
#if SA_HAVE_AVX512
    {"avx512", SA_X86_AVX512, sa_peak_fma__avx512, sa_peak_read__avx512},
#endif
#if SA_HAVE_NEON
    {"neon", SA_CPU_NEON, sa_peak_fma__neon, sa_peak_read__neon},
#endif
};

#define N_PROBES (sizeof peak_probes / sizeof peak_probes[0])

size_t sa_peak_probe_count(void) { return N_PROBES; }

const sa_peak_probe *sa_peak_probe_at(size_t i) {
  return i < N_PROBES ? &peak_probes[i] : NULL;
}

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
  return (sa_cpu_features() & set->cpu_features) == set->cpu_features;
}

int sa_kernel_set_preferred(const sa_kernel_set *set) {
  if (!set)
    return 0;
  return (sa_cpu_features() & set->prefer_features) == set->prefer_features;
}

const sa_kernel_set *sa_kernel_set_best(void) {
  const sa_kernel_set *best = &kernel_sets[0];
  for (size_t i = 1; i < N_SETS; i++)
    if (sa_kernel_set_supported(&kernel_sets[i]) &&
        sa_kernel_set_preferred(&kernel_sets[i]) &&
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
    uint64_t missing = set->cpu_features & ~sa_cpu_features();
    sa_cpu_feature_names(missing, need, sizeof need);
    return sa_fail(SA_ERR_UNSUPPORTED_ISA,
                   "kernel set '%s' needs %s, which this CPU lacks; it can "
                   "run: %s",
                   set->name, need, runnable);
  }
  *out = set;
  return SA_OK;
}

/* The default, decided once: SIMDATTN_ISA through the same rule as any
 * name, and the outcome kept, message included, so that every later caller
 * gets the same answer without looking at the environment again. */
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static const sa_kernel_set *default_set;
static sa_status default_status;
static char default_error[512];

static void choose_default(void) {
  default_status = sa_kernel_set_select(sa_env_isa(), &default_set);
  if (default_status != SA_OK) {
    snprintf(default_error, sizeof default_error, "SIMDATTN_ISA: %s",
             sa_last_error());
    default_set = NULL;
  }
  if (sa_verbose())
    fprintf(stderr, "simdattn: default kernel set: %s\n",
            default_set ? default_set->name : default_error);
}

sa_status sa_kernel_set_default(const sa_kernel_set **out) {
  if (!out)
    return sa_fail(SA_ERR_NULL_POINTER, "sa_kernel_set_default: out is NULL");
  pthread_once(&default_once, choose_default);
  if (default_status != SA_OK)
    return sa_fail(default_status, "%s", default_error);
  *out = default_set;
  return SA_OK;
}
