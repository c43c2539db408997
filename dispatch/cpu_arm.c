/*
 * AArch64 feature detection through the kernel's hardware capability words
 * (getauxval): the kernel reports only what it has enabled, so no separate
 * OS-support check is needed as on x86. Advanced SIMD is architectural on
 * AArch64 but is still read from HWCAP_ASIMD for honesty under emulators.
 */
#if defined(__aarch64__)

#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "dispatch/cpu.h"
#include "simdattn.h"

#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1 << 10)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1 << 22)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1 << 14)
#endif

uint64_t sa_cpu_detect(void) {
  unsigned long hw = getauxval(AT_HWCAP);
  uint64_t f = 0;
  if (hw & HWCAP_ASIMD)
    f |= SA_CPU_NEON;
  if (hw & HWCAP_ASIMDHP)
    f |= SA_CPU_ASIMDHP;
  if (hw & HWCAP_SVE)
    f |= SA_CPU_SVE;
  if (getauxval(AT_HWCAP2) & HWCAP2_BF16)
    f |= SA_CPU_BF16;
  return f;
}

/* Linux exposes no model string on AArch64; the MIDR implementer/part from
 * /proc/cpuinfo is the closest thing. */
void sa_cpu_model_name(char *buf, size_t size) {
  if (size == 0)
    return;
  buf[0] = '\0';
  FILE *fp = fopen("/proc/cpuinfo", "r");
  if (!fp)
    return;
  char line[256], impl[32] = "", part[32] = "";
  while (fgets(line, sizeof line, fp)) {
    if (!impl[0] && sscanf(line, "CPU implementer : %31s", impl) == 1)
      continue;
    if (!part[0] && sscanf(line, "CPU part : %31s", part) == 1)
      continue;
  }
  fclose(fp);
  if (impl[0])
    snprintf(buf, size, "AArch64 implementer %s part %s", impl, part);
  else
    snprintf(buf, size, "AArch64");
}

#endif
