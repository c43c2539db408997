/* Internal: record a detail message for sa_last_error and return a status. */
#ifndef SA_CORE_ERRORS_H
#define SA_CORE_ERRORS_H

#include "simdattn.h"

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
sa_status
sa_fail(sa_status status, const char *fmt, ...);
void sa_clear_error(void);

/* 1 when SIMDATTN_VERBOSE is set to something other than "" or "0": one
 * rule for every module that reports on stderr. */
int sa_verbose(void);

#endif
