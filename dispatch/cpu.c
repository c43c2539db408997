/*
 * The public face of CPU detection: detect once (pthread_once, so concurrent
 * first calls from an engine's threads agree), then answer from the cache.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dispatch/cpu.h"
#include "simdattn.h"

#if !defined(__x86_64__) && !defined(_M_X64) && !defined(__aarch64__)
uint64_t sa_cpu_detect(void) { return 0; }
void sa_cpu_model_name(char *buf, size_t size) {
  if (size)
    snprintf(buf, size, "unknown CPU");
}
#endif

static pthread_once_t features_once = PTHREAD_ONCE_INIT;
static uint64_t features;

static void detect_once(void) { features = sa_cpu_detect(); }

uint64_t sa_cpu_features(void) {
  pthread_once(&features_once, detect_once);
  return features;
}

static const struct {
  uint64_t bit;
  const char *name;
} feature_names[] = {
    {SA_CPU_SSE2, "sse2"},
    {SA_CPU_AVX, "avx"},
    {SA_CPU_AVX2, "avx2"},
    {SA_CPU_FMA, "fma"},
    {SA_CPU_AVX512F, "avx512f"},
    {SA_CPU_AVX512BW, "avx512bw"},
    {SA_CPU_AVX512DQ, "avx512dq"},
    {SA_CPU_AVX512VL, "avx512vl"},
    {SA_CPU_AVX512BF16, "avx512bf16"},
    {SA_CPU_AVX512VNNI, "avx512vnni"},
    {SA_CPU_F16C, "f16c"},
    {SA_CPU_FAST_BF16DOT, "fast-bf16dot"},
    {SA_CPU_NEON, "neon"},
    {SA_CPU_ASIMDHP, "asimdhp"},
    {SA_CPU_SVE, "sve"},
    {SA_CPU_BF16, "bf16"},
};

const char *sa_cpu_feature_names(uint64_t f, char *buf, size_t size) {
  size_t used = 0;
  if (size == 0)
    return buf;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++) {
    if (!(f & feature_names[i].bit))
      continue;
    int n = snprintf(buf + used, size - used, "%s%s", used ? " " : "",
                     feature_names[i].name);
    if (n < 0 || (size_t)n >= size - used)
      break;
    used += (size_t)n;
  }
  return buf;
}

size_t sa_cpu_describe(char *buf, size_t size) {
  char model[64], names[256];
  sa_cpu_model_name(model, sizeof model);
  sa_cpu_feature_names(sa_cpu_features(), names, sizeof names);
  int n = snprintf(buf, size, "%s | %s", model[0] ? model : "unknown CPU",
                   names[0] ? names : "baseline");
  return n < 0 ? 0 : (size_t)n;
}
