/*
 * Growable structs: the caller says how big its struct is, the library reads
 * exactly that much. A caller built against an older header has fewer fields
 * (the rest take their default, zero); one built against a newer header may
 * have fields this library cannot honour, which is an error unless they are
 * zero (their default). The same rule as Linux's openat2/clone3 structs.
 */
#include <string.h>

#include "attention/internal.h"
#include "core/errors.h"

/* Larger than any struct this header family will grow to: a garbage
 * struct_size (an uninitialised struct) must not make the library scan
 * megabytes of the caller's memory. */
#define SA_STRUCT_SIZE_LIMIT 4096

sa_status sa_struct_load(const char *what, const void *user, size_t min,
                         size_t have, void *out) {
  size_t size;
  memcpy(&size, user, sizeof size);
  if (size < min || size > SA_STRUCT_SIZE_LIMIT)
    return sa_fail(SA_ERR_STRUCT_SIZE,
                   "%s.struct_size = %zu is not the size of any version of "
                   "it (this library: %zu to %zu bytes); fill it with "
                   "%s_init()",
                   what, size, min, have, what);
  const unsigned char *u = user;
  for (size_t i = have; i < size; i++)
    if (u[i])
      return sa_fail(SA_ERR_STRUCT_SIZE,
                     "%s: byte %zu is set, a field that library %s does not "
                     "know (it knows %zu bytes); leave it zero or use a newer "
                     "library",
                     what, i, SA_VERSION_STRING, have);
  size_t n = size < have ? size : have;
  memcpy(out, user, n);
  memset((unsigned char *)out + n, 0, have - n);
  return SA_OK;
}
