/*
 * The element-type helpers of the public API: sizes, names, and sa_convert,
 * which runs the best runnable set's conversion kernels. Every set's
 * conversions give the same bits (tests/test_dtypes.c checks them against
 * kernels/dtype.h), so which set runs them changes only the speed.
 */
#include <stdint.h>
#include <string.h>

#include "attention/internal.h"
#include "core/errors.h"
#include "kernels/dtype.h"

size_t sa_dtype_bytes(sa_dtype t, size_t n) {
  switch (t) {
  case SA_F32:
    return n <= SIZE_MAX / 4 ? n * 4 : 0;
  case SA_F16:
  case SA_BF16:
    return n <= SIZE_MAX / 2 ? n * 2 : 0;
  case SA_Q8_0:
    return n % SA_QK8_0 ? 0 : n / SA_QK8_0 * sizeof(sa_block_q8_0);
  default:
    return 0;
  }
}

const char *sa_dtype_name(sa_dtype t) {
  switch (t) {
  case SA_F32:
    return "f32";
  case SA_F16:
    return "f16";
  case SA_BF16:
    return "bf16";
  case SA_Q8_0:
    return "q8_0";
  default:
    return "?";
  }
}

sa_status sa_convert(sa_dtype to, void *dst, sa_dtype from, const void *src,
                     size_t n) {
  if (!dst || !src)
    return sa_fail(SA_ERR_NULL_POINTER, "sa_convert: dst and src must not be "
                                        "NULL");
  if ((unsigned)to > SA_Q8_0 || (unsigned)from > SA_Q8_0 ||
      (to != SA_F32 && from != SA_F32 && to != from))
    return sa_fail(SA_ERR_BAD_ARGUMENT,
                   "sa_convert: %d -> %d: types are sa_dtype values and one "
                   "side must be f32 (or both the same)",
                   (int)from, (int)to);
  size_t in = sa_dtype_bytes(from, n), out = sa_dtype_bytes(to, n);
  if (n && (!in || !out))
    return sa_fail(SA_ERR_BAD_SHAPE,
                   "sa_convert: %zu values are not whole q8_0 blocks of 32 "
                   "(or too many)",
                   n);
  if (sa_overlaps(dst, out, src, in))
    return sa_fail(SA_ERR_BAD_STRIDE, "sa_convert: dst overlaps src");
  const sa_kernel_set *ks = sa_kernel_set_best();
  if (from == to)
    memcpy(dst, src, in);
  else if (to == SA_F32)
    ks->to_f32[from](n, src, dst);
  else
    ks->from_f32[to](n, src, dst);
  sa_clear_error();
  return SA_OK;
}
