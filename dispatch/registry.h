/*
 * Internal: the registry's second list, the peak probes (FMA throughput and
 * read bandwidth), for the bench.
 *
 * A probe is ISA code, so it lives in its set's folder (kernels/<isa>/peak.c,
 * peak_read.c) and is compiled with that set's flags; it is listed here under
 * the same SA_HAVE_<ISA> as its sets and runs where they run, so no other
 * directory spells an ISA name or needs ISA flags to measure a peak.
 */
#ifndef SA_DISPATCH_REGISTRY_H
#define SA_DISPATCH_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

typedef struct sa_peak_probe {
  const char *isa;       /* matches sa_kernel_set.isa */
  uint64_t cpu_features; /* SA_CPU_* bits, those of the ISA's sets */
  sa_peak_fma_fn fn;     /* FMA throughput: "% of peak" */
  sa_peak_read_fn read;  /* read bandwidth: "% of bandwidth" (appended) */
} sa_peak_probe;

size_t sa_peak_probe_count(void);
/* NULL past the end. */
const sa_peak_probe *sa_peak_probe_at(size_t i);

#endif
