/*
 * Dispatch: the registry is well formed, detection agrees with the
 * compiler's own CPU probe, the automatic choice is the best runnable set
 * (and, where CI says which CPU it emulates, exactly the expected one),
 * and the one-time choice of the default is thread-safe.
 *
 * SIMDATTN_EXPECT_BEST=<name>: set by CI for each emulated CPU (avx2-polyexp
 * under qemu -cpu Haswell, scalar under -cpu qemu64, neon-bf16 under
 * qemu-aarch64 -cpu max and neon-polyexp under -cpu cortex-a72).
 * SIMDATTN_REQUIRE_SETS, which every test enumerating sets reads (testing.h),
 * names what must run there.
 */
#include <pthread.h>

#include "tests/testing.h"

static void test_registry(void) {
  t_context = "registry";
  CHECK(sa_kernel_set_count() >= 1, "at least the scalar set");
  CHECK(sa_kernel_set_at(sa_kernel_set_count()) == NULL, "past the end");
  const sa_kernel_set *scalar = sa_kernel_set_find("scalar");
  CHECK(scalar && sa_kernel_set_supported(scalar), "scalar runs everywhere");
  CHECK(sa_kernel_set_find("nope") == NULL && sa_kernel_set_find(NULL) == NULL,
        "find unknown");
  CHECK(!sa_kernel_set_supported(NULL), "supported(NULL)");
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    CHECK(ks->name && ks->isa && ks->exp_impl && ks->about, "strings");
    CHECK(ks->struct_size == sizeof(sa_kernel_set), "%s: struct_size %zu",
          ks->name, ks->struct_size);
    CHECK(ks->score && ks->softmax && ks->softmax_online && ks->wsum &&
              ks->softmax_online2,
          "%s has score, softmax, both online steps and wsum", ks->name);
    CHECK(ks->score_upto && ks->wsum_upto,
          "%s has score_upto and wsum_upto (the fused driver's diagonal)",
          ks->name);
    /* correctly rounded is 0.5; a set that forgot the field says 0 */
    CHECK(ks->exp_ulps >= 0.5f && ks->exp_ulps < 4.0f,
          "%s: exp_ulps %g is no exp's accuracy", ks->name, ks->exp_ulps);
    CHECK(sa_kernel_set_find(ks->name) == ks, "%s found by name", ks->name);
    for (size_t j = 0; j < i; j++) {
      CHECK(strcmp(ks->name, sa_kernel_set_at(j)->name) != 0, "dup name");
      CHECK(ks->priority != sa_kernel_set_at(j)->priority, "dup priority");
    }
    printf("  %-16s isa=%-7s %3u-bit exp=%-9s (%.2f ULP) %s\n", ks->name,
           ks->isa, ks->vector_bits, ks->exp_impl, ks->exp_ulps,
           sa_kernel_set_supported(ks) ? "runnable" : "not runnable here");
  }
}

static void test_detection(void) {
  t_context = "detection";
  uint64_t f = sa_cpu_features();
  char buf[512];
  size_t n = sa_cpu_describe(buf, sizeof buf);
  CHECK(n > 0 && strlen(buf) == n, "describe: '%s'", buf);
  printf("  cpu: %s\n", buf);
  char tiny[4];
  sa_cpu_describe(tiny, sizeof tiny);
  CHECK(strlen(tiny) == 3, "describe truncates safely");
#if defined(__x86_64__)
  /* gcc's probe reads CPUID and XCR0 itself: an independent opinion */
  __builtin_cpu_init();
  CHECK(!!(f & SA_CPU_AVX2) == !!__builtin_cpu_supports("avx2"), "avx2");
  CHECK(!!(f & SA_CPU_FMA) == !!__builtin_cpu_supports("fma"), "fma");
  CHECK(!!(f & SA_CPU_AVX512F) == !!__builtin_cpu_supports("avx512f"),
        "avx512f");
  CHECK(!!(f & SA_CPU_AVX512BW) == !!__builtin_cpu_supports("avx512bw"),
        "avx512bw");
  CHECK(!!(f & SA_CPU_AVX512DQ) == !!__builtin_cpu_supports("avx512dq"),
        "avx512dq");
  CHECK(!!(f & SA_CPU_AVX512VL) == !!__builtin_cpu_supports("avx512vl"),
        "avx512vl");
  CHECK(f & SA_CPU_SSE2, "sse2 is baseline x86-64");
  /* the vendor rule of cpu_x86.c, read from gcc's vendor probe */
  CHECK(!!(f & SA_CPU_FAST_BF16DOT) ==
            (!!(f & SA_CPU_AVX512BF16) && __builtin_cpu_is("amd")),
        "fast-bf16dot");
#elif defined(__aarch64__)
  CHECK(f & SA_CPU_NEON, "Advanced SIMD is baseline AArch64");
#endif
}

/* What the header promises of the automatic choice, checked against each
 * runnable set: it runs here and is preferred here, nothing runnable and
 * preferred outranks it, its vectors are the widest, its exp the most
 * accurate of the automatic sets of its ISA. */
static void test_best(void) {
  t_context = "best";
  const sa_kernel_set *best = sa_kernel_set_best();
  CHECK(best && sa_kernel_set_supported(best), "best %s is not runnable here",
        best ? best->name : "(NULL)");
  if (!best)
    return;
  CHECK(sa_kernel_set_preferred(best), "best %s is not preferred here",
        best->name);
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    /* no preference is a preference everywhere */
    CHECK(ks->prefer_features || sa_kernel_set_preferred(ks),
          "%s has no prefer_features but is not preferred", ks->name);
    if (!sa_kernel_set_supported(ks))
      continue;
    if (sa_kernel_set_preferred(ks))
      CHECK(ks->priority <= best->priority, "runnable %s outranks best %s",
            ks->name, best->name);
    else
      printf("  %s runs here but is not preferred (lacks %#llx)\n", ks->name,
             (unsigned long long)(ks->prefer_features & ~sa_cpu_features()));
    CHECK(ks->vector_bits <= best->vector_bits, "%s is wider than %s", ks->name,
          best->name);
    /* of the sets the automatic choice considers: a negative priority
     * (scalar-f64, the double reference) is never chosen, however exact */
    if (strcmp(ks->isa, best->isa) == 0 && ks->priority >= 0)
      CHECK(best->exp_ulps <= ks->exp_ulps,
            "best %s's exp (%g ULP) is less accurate than %s's (%g)",
            best->name, best->exp_ulps, ks->name, ks->exp_ulps);
  }
  const char *expect = getenv("SIMDATTN_EXPECT_BEST");
  if (expect && expect[0]) {
    CHECK(strcmp(best->name, expect) == 0, "best is %s, CI expects %s",
          best->name, expect);
    printf("  best set: %s (expected %s)\n", best->name, expect);
  } else {
    printf("  best set: %s\n", best->name);
  }
  const sa_kernel_set *sel = NULL;
  CHECK(sa_kernel_set_select(NULL, &sel) == SA_OK && sel == best, "NULL");
  CHECK(sa_kernel_set_select("auto", &sel) == SA_OK && sel == best, "auto");
}

static const sa_kernel_set *seen[8];
static sa_status seen_status[8];
static void *ask_default(void *arg) {
  seen_status[(size_t)arg] = sa_kernel_set_default(&seen[(size_t)arg]);
  return NULL;
}

/* The default is decided once, by whichever of eight racing threads gets
 * there first, and every thread sees the same answer. (SIMDATTN_ISA itself
 * is test_env's: the library reads the environment once per process.) */
static void test_default_once(void) {
  t_context = "default";
  pthread_t th[8];
  for (size_t i = 0; i < 8; i++)
    pthread_create(&th[i], NULL, ask_default, (void *)i);
  for (size_t i = 0; i < 8; i++)
    pthread_join(th[i], NULL);
  const char *env = getenv("SIMDATTN_ISA");
  const sa_kernel_set *want =
      env && env[0] ? sa_kernel_set_find(env) : sa_kernel_set_best();
  for (size_t i = 0; i < 8; i++)
    CHECK(seen_status[i] == SA_OK && seen[i] == want, "thread %zu saw %s", i,
          seen[i] ? seen[i]->name : sa_last_error());
  CHECK(sa_kernel_set_default(NULL) == SA_ERR_NULL_POINTER, "NULL out");
  sa_context *ctx;
  CHECK(sa_context_create(NULL, &ctx) == SA_OK, "default context");
  CHECK(sa_context_kernel_set(ctx) == want, "context follows the default");
  sa_context_destroy(ctx);
}

int main(void) {
  const sa_kernel_set *sets[32];
  t_runnable_sets(sets, 32);
  test_registry();
  test_detection();
  test_best();
  test_default_once();
  return t_finish("test_dispatch");
}
