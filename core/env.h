/*
 * Internal: the SIMDATTN_* environment variables, read once per process.
 *
 * One snapshot, taken on first use under pthread_once: every module sees the
 * same values for the life of the process (getenv racing an application's
 * setenv is undefined behaviour, and a setting that changes between two
 * calls of one engine would be a bug magnet). Values are trimmed of leading
 * and trailing white space, so " 4 " is "4". A bad value is reported by the
 * call that would use it, never by one that does not.
 */
#ifndef SA_CORE_ENV_H
#define SA_CORE_ENV_H

#include "simdattn.h"

/* SIMDATTN_ISA, trimmed; NULL when unset or empty. */
const char *sa_env_isa(void);

/* SIMDATTN_NUM_THREADS: *out = 0 when unset, else a count in [1, 4096];
 * SA_ERR_BAD_ARGUMENT (with the detail message) for anything else. */
sa_status sa_env_num_threads(int *out);

/* SIMDATTN_PIN: "cores" (or unset) or "none"; SA_ERR_BAD_ARGUMENT else. */
sa_status sa_env_pin(sa_pin_policy *out);

#endif
