/* The SIMDATTN_* snapshot behind env.h and sa_verbose. */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/errors.h"

enum { VALUE_MAX = 64 };

typedef struct env_snapshot {
  char isa[VALUE_MAX];
  char threads[VALUE_MAX];
  char pin[VALUE_MAX];
  int verbose;
} env_snapshot;

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static env_snapshot env;

/* Copies the variable without surrounding white space; "" when unset. A
 * value too long for the buffer keeps its first VALUE_MAX - 1 characters,
 * enough for any valid value and for the error message of a bad one. */
static void take(const char *name, char *dst) {
  const char *s = getenv(name);
  dst[0] = '\0';
  if (!s)
    return;
  while (isspace((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1]))
    n--;
  if (n >= VALUE_MAX)
    n = VALUE_MAX - 1;
  memcpy(dst, s, n);
  dst[n] = '\0';
}

static void load(void) {
  char verbose[VALUE_MAX];
  take("SIMDATTN_ISA", env.isa);
  take("SIMDATTN_NUM_THREADS", env.threads);
  take("SIMDATTN_PIN", env.pin);
  take("SIMDATTN_VERBOSE", verbose);
  env.verbose = verbose[0] && strcmp(verbose, "0") != 0;
}

static const env_snapshot *snapshot(void) {
  pthread_once(&env_once, load);
  return &env;
}

const char *sa_env_isa(void) {
  const env_snapshot *e = snapshot();
  return e->isa[0] ? e->isa : NULL;
}

sa_status sa_env_num_threads(int *out) {
  const char *s = snapshot()->threads;
  *out = 0;
  if (!s[0])
    return SA_OK;
  long v = 0;
  const char *c = s;
  for (; *c >= '0' && *c <= '9' && v <= 4096; c++)
    v = v * 10 + (*c - '0');
  if (*c || v < 1 || v > 4096)
    return sa_fail(SA_ERR_BAD_ARGUMENT,
                   "SIMDATTN_NUM_THREADS='%s' is not a thread count in "
                   "[1, 4096]",
                   s);
  *out = (int)v;
  return SA_OK;
}

sa_status sa_env_pin(sa_pin_policy *out) {
  const char *s = snapshot()->pin;
  if (!s[0] || strcmp(s, "cores") == 0) {
    *out = SA_PIN_CORES;
    return SA_OK;
  }
  if (strcmp(s, "none") == 0) {
    *out = SA_PIN_NONE;
    return SA_OK;
  }
  return sa_fail(SA_ERR_BAD_ARGUMENT,
                 "SIMDATTN_PIN='%s' is neither 'cores' nor 'none'", s);
}

int sa_verbose(void) { return snapshot()->verbose; }
