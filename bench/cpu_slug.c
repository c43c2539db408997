/*
 * The CPU's name for results/<cpu>/ (see cpu_slug.h).
 */
#include "bench/cpu_slug.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simdattn.h"

/* The value of a /proc/cpuinfo line whose key is exactly `key` ("model",
 * not "model name", which follows it and would read as model 0), else NULL. */
static const char *cpuinfo_value(const char *line, const char *key) {
  size_t n = strlen(key);
  if (strncmp(line, key, n))
    return NULL;
  line += n;
  while (*line == ' ' || *line == '\t')
    line++;
  return *line == ':' ? line + 1 : NULL;
}

/* lowercase-dashes from the CPU model: "AMD EPYC 9654 96-Core Processor" ->
 * amd-epyc-9654. A model without any digit (hypervisors often hide it) gets
 * the microarchitecture from the CPUID family on AMD: amd-epyc-zen5. */
static void cpu_slug(const char *model, char *out, size_t size) {
  char buf[160];
  size_t n = 0;
  int digits = 0, dash = 1;
  const char *end = strchr(model, '@');
  for (const char *p = model; *p && p != end && n + 2 < sizeof buf; p++) {
    if (*p == '(') { /* (R), (TM) */
      const char *q = strchr(p, ')');
      if (q && q - p <= 4) {
        p = q;
        continue;
      }
    }
    if (isalnum((unsigned char)*p)) {
      buf[n++] = (char)tolower((unsigned char)*p);
      digits |= isdigit((unsigned char)*p) != 0;
      dash = 0;
    } else if (!dash) {
      buf[n++] = '-';
      dash = 1;
    }
  }
  buf[n] = '\0';
  /* drop filler words */
  static const char *const drop[] = {"-processor", "-cpu", "-with-radeon"};
  for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) {
    char *hit = strstr(buf, drop[i]);
    if (hit && (!strcmp(drop[i], "-with-radeon") ||
                hit[strlen(drop[i])] == '\0' || hit[strlen(drop[i])] == '-'))
      memmove(hit, hit + strlen(drop[i]), strlen(hit + strlen(drop[i])) + 1);
  }
  char *core = strstr(buf, "-core"); /* "-96-core" */
  if (core && (core[5] == '\0' || core[5] == '-')) {
    char *s = core;
    while (s > buf && isdigit((unsigned char)s[-1]))
      s--;
    if (s > buf && s[-1] == '-' && s < core)
      memmove(s - 1, core + 5, strlen(core + 5) + 1);
  }
  n = strlen(buf);
  while (n && buf[n - 1] == '-')
    buf[--n] = '\0';
  if (!n)
    snprintf(buf, sizeof buf, "unknown-cpu");

  const char *uarch = "";
  FILE *f = digits ? NULL : fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[256];
    int amd = 0, fam = -1, mod = -1;
    while (fgets(line, sizeof line, f)) {
      const char *v;
      if ((v = cpuinfo_value(line, "vendor_id")))
        amd = strstr(v, "AuthenticAMD") != NULL;
      else if ((v = cpuinfo_value(line, "cpu family")))
        fam = atoi(v);
      else if ((v = cpuinfo_value(line, "model")))
        mod = atoi(v);
      else if (line[0] == '\n')
        break;
    }
    fclose(f);
    if (amd && fam == 0x17)
      uarch = mod < 0x30 ? "-zen" : "-zen2";
    else if (amd && fam == 0x19)
      uarch = ((mod >= 0x10 && mod < 0x20) || (mod >= 0x60 && mod < 0x80) ||
               (mod >= 0xa0 && mod < 0xb0))
                  ? "-zen4"
                  : "-zen3";
    else if (amd && fam == 0x1a)
      uarch = "-zen5";
  }
  snprintf(out, size, "%s%s", buf, uarch);
}

void sa_bench_cpu_name(sa_bench_cpu *cpu) {
  char desc[sizeof cpu->model];
  sa_cpu_describe(desc, sizeof desc);
  char *bar = strstr(desc, " | ");
  snprintf(cpu->features, sizeof cpu->features, "%s",
           bar ? bar + 3 : "baseline");
  if (bar)
    *bar = '\0';
  snprintf(cpu->model, sizeof cpu->model, "%s", desc);
  cpu_slug(cpu->model, cpu->slug, sizeof cpu->slug);
}
