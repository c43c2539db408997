/* Status sentences, the per-thread detail message behind sa_last_error, and
 * the version of the library that is running. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/errors.h"
#include "simdattn.h"

static _Thread_local char last_error[512];

const char *sa_status_str(sa_status status) {
  switch (status) {
  case SA_OK:
    return "success";
  case SA_ERR_NULL_POINTER:
    return "a required pointer argument is NULL";
  case SA_ERR_BAD_SHAPE:
    return "a dimension is zero or larger than SA_MAX_DIM";
  case SA_ERR_BAD_HEADS:
    return "heads_q is not a multiple of heads_kv";
  case SA_ERR_BAD_STRIDE:
    return "output elements alias each other, or the output overlaps an "
           "input";
  case SA_ERR_BAD_ARGUMENT:
    return "an argument is out of range (mask, algorithm, scale, option, "
           "environment variable)";
  case SA_ERR_OVERFLOW:
    return "a size or offset computation overflows size_t";
  case SA_ERR_UNKNOWN_ISA:
    return "no kernel set of that name is compiled into this library";
  case SA_ERR_UNSUPPORTED_ISA:
    return "that kernel set needs CPU features this machine lacks";
  case SA_ERR_NO_MEMORY:
    return "out of memory";
  case SA_ERR_THREADS:
    return "worker threads could not be started";
  case SA_ERR_BUSY:
    return "another call is running on this context";
  case SA_ERR_STRUCT_SIZE:
    return "struct_size is unset or too small, or a field this library does "
           "not know is set";
  case SA_ERR_WORKSPACE:
    return "the caller's workspace is smaller than the call needs";
  }
  return "unknown status code";
}

const char *sa_last_error(void) { return last_error; }

sa_status sa_fail(sa_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

void sa_clear_error(void) { last_error[0] = '\0'; }

unsigned sa_version(void) { return SA_VERSION; }
const char *sa_version_string(void) { return SA_VERSION_STRING; }
