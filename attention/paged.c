/*
 * sa_kv_append: new tokens' keys and values into a paged cache. Everything
 * is checked first (lengths, every page each new token lands in, the extents
 * of the cache and of the new rows), then rows are copied, or rounded into
 * a narrow cache by the best set's conversion kernels: a decoder appends a
 * token per step, so this is a few rows of dim values each.
 */
#include <stdint.h>
#include <string.h>

#include "attention/internal.h"
#include "core/errors.h"
#include "kernels/dtype.h"

sa_status sa_kv_append(const sa_kv_append_desc *desc, void *k_cache,
                       void *v_cache, const void *k_new, const void *v_new) {
  if (!desc || !k_cache || !v_cache || !k_new || !v_new)
    return sa_fail(SA_ERR_NULL_POINTER,
                   "sa_kv_append: desc, caches and new rows must not be NULL");
  sa_kv_append_desc d;
  sa_status st = sa_struct_load("sa_kv_append_desc", desc,
                                SA_KV_APPEND_DESC_MIN_SIZE, sizeof d, &d);
  if (st)
    return st;
  if (!d.start || !d.block_table)
    return sa_fail(SA_ERR_NULL_POINTER, "sa_kv_append: start and "
                                        "block_table must not be NULL");
  const size_t dims[] = {d.batch,  d.heads_kv,  d.dim_qk,   d.dim_v,
                         d.tokens, d.page_size, d.num_pages};
  const char *names[] = {"batch",  "heads_kv",  "dim_qk",   "dim_v",
                         "tokens", "page_size", "num_pages"};
  for (int i = 0; i < 7; i++)
    if (dims[i] == 0 || dims[i] > SA_MAX_DIM)
      return sa_fail(SA_ERR_BAD_SHAPE,
                     "sa_kv_append: %s = %zu is outside "
                     "[1, 2^31]",
                     names[i], dims[i]);
  /* types: the cache's any K/V type, the new rows' that or f32 */
  const sa_dtype ctype[] = {d.k_type, d.v_type},
                 ntype[] = {d.k_new_type, d.v_new_type};
  size_t dim[] = {d.dim_qk, d.dim_v}, cdim[2], ndim[2], cunit[2], nunit[2];
  for (int t = 0; t < 2; t++) {
    if ((unsigned)ctype[t] > SA_Q8_0 ||
        (ntype[t] != ctype[t] && ntype[t] != SA_F32))
      return sa_fail(SA_ERR_BAD_ARGUMENT,
                     "sa_kv_append: %s cache type %d, new rows %d: the new "
                     "rows must be of the cache's type or f32",
                     t ? "v" : "k", (int)ctype[t], (int)ntype[t]);
    if (ctype[t] == SA_Q8_0 && dim[t] % SA_QK8_0)
      return sa_fail(SA_ERR_BAD_SHAPE,
                     "sa_kv_append: a q8_0 cache needs %s (%zu) to be a "
                     "multiple of 32",
                     t ? "dim_v" : "dim_qk", dim[t]);
    cdim[t] = sa_dtype_row(ctype[t], dim[t]);
    ndim[t] = sa_dtype_row(ntype[t], dim[t]);
    cunit[t] = sa_dtype_unit(ctype[t]);
    nunit[t] = sa_dtype_unit(ntype[t]);
  }
  /* the cache is [pages, heads_kv, page_size, dim] (head-major pages, as
   * sa_attention reads them), the new rows [batch, heads_kv, tokens, dim] */
  sa_strides *cache[] = {&d.k, &d.v}, *fresh[] = {&d.k_new, &d.v_new};
  static const char *cname[] = {"sa_kv_append k", "sa_kv_append v"},
                    *fname[] = {"sa_kv_append k_new", "sa_kv_append v_new"};
  size_t cend[2], nend[2];
  for (int t = 0; t < 2; t++)
    if ((st = sa_strides_resolve(cname[t], cache[t], d.heads_kv, d.page_size,
                                 cdim[t])) ||
        (st = sa_strides_resolve(fname[t], fresh[t], d.heads_kv, d.tokens,
                                 ndim[t])) ||
        (st = sa_strides_extent(cname[t], cache[t], d.num_pages, d.heads_kv,
                                d.page_size, cdim[t], cunit[t], &cend[t])) ||
        (st = sa_strides_extent(fname[t], fresh[t], d.batch, d.heads_kv,
                                d.tokens, ndim[t], nunit[t], &nend[t])))
      return st;
  const void *src[] = {k_new, v_new};
  void *dst[] = {k_cache, v_cache};
  for (int t = 0; t < 2; t++)
    if (ntype[t] != ctype[t] &&
        sa_overlaps(dst[t], cend[t] * cunit[t], src[t], nend[t] * nunit[t]))
      return sa_fail(SA_ERR_BAD_STRIDE,
                     "sa_kv_append: new %s rows to convert overlap the cache",
                     t ? "v" : "k");
  for (size_t b = 0; b < d.batch; b++) {
    if (d.start[b] < 0 || (uint64_t)d.start[b] > SA_MAX_DIM)
      return sa_fail(SA_ERR_BAD_SHAPE, "sa_kv_append: start[%zu] = %lld", b,
                     (long long)d.start[b]);
    size_t first = (size_t)d.start[b] / d.page_size;
    size_t last = ((size_t)d.start[b] + d.tokens - 1) / d.page_size;
    if (last >= d.block_table_stride)
      return sa_fail(SA_ERR_BAD_SHAPE,
                     "sa_kv_append: sequence %zu reaches page %zu of a table "
                     "of %zu",
                     b, last, d.block_table_stride);
    for (size_t i = first; i <= last; i++) {
      int32_t pg = d.block_table[b * d.block_table_stride + i];
      if (pg < 0 || (size_t)pg >= d.num_pages)
        return sa_fail(SA_ERR_BAD_ARGUMENT,
                       "sa_kv_append: block_table[%zu][%zu] = %d is not a "
                       "page in [0, %zu)",
                       b, i, pg, d.num_pages);
    }
  }
  const sa_kernel_set *ks = sa_kernel_set_best();
  for (size_t b = 0; b < d.batch; b++)
    for (size_t tok = 0; tok < d.tokens; tok++) {
      size_t pos = (size_t)d.start[b] + tok;
      size_t pg =
          (size_t)d.block_table[b * d.block_table_stride + pos / d.page_size];
      size_t slot = pos % d.page_size;
      for (int t = 0; t < 2; t++)
        for (size_t h = 0; h < d.heads_kv; h++) {
          void *to = (void *)sa_at(dst[t],
                                   pg * cache[t]->batch + h * cache[t]->head +
                                       slot * cache[t]->seq,
                                   cunit[t]);
          const void *from = sa_at(src[t],
                                   b * fresh[t]->batch + h * fresh[t]->head +
                                       tok * fresh[t]->seq,
                                   nunit[t]);
          if (ntype[t] == ctype[t])
            memmove(to, from, cdim[t] * cunit[t]);
          else
            ks->from_f32[ctype[t]](dim[t], from, to);
        }
    }
  sa_clear_error();
  return SA_OK;
}
