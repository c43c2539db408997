/* Internal: per-architecture CPU feature detection behind sa_cpu_features. */
#ifndef SA_DISPATCH_CPU_H
#define SA_DISPATCH_CPU_H

#include <stddef.h>
#include <stdint.h>

/* SA_CPU_* bits the CPU has and the OS has enabled; called once. */
uint64_t sa_cpu_detect(void);

/* The CPU's marketing name into buf ("" if unknown). */
void sa_cpu_model_name(char *buf, size_t size);

#endif
