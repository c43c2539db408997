/*
 * sa_attention_merge: partial results over disjoint key ranges, combined by
 * their log-sum-exps. Each part's rows are softmax-weighted averages over
 * its keys, normalised by exp(lse_k); rescaling each by exp(lse_k - max) and
 * renormalising gives the average over all keys (FlashAttention's split-KV
 * step, done once per row rather than per key block).
 *
 * Per row all weights are computed from the LSEs before any output element
 * is written, and each output element is written after every part's element
 * at that address was read: so o (or lse) may be one of the parts.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attention/internal.h"
#include "core/errors.h"

/* out may be exactly one part, or overlap none. */
static sa_status check_out(const char *name, const float *out, size_t end,
                           const float *const *parts, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (parts[k] != out &&
        sa_overlaps(out, end * sizeof(float), parts[k], end * sizeof(float)))
      return sa_fail(SA_ERR_BAD_STRIDE,
                     "merge: %s overlaps part %zu without being it", name, k);
  return SA_OK;
}

float sa_merge_row(size_t n, const float *lse, const float *const *rows,
                   float *w, float *out, size_t dv) {
  float mx = -INFINITY;
  int nan = 0;
  for (size_t k = 0; k < n; k++) {
    nan |= lse[k] != lse[k];
    mx = lse[k] > mx ? lse[k] : mx;
  }
  float sum = 0.0f, out_lse;
  if (nan || mx == INFINITY) {
    out_lse = NAN;
  } else if (mx == -INFINITY) {
    out_lse = -INFINITY;
  } else {
    for (size_t k = 0; k < n; k++) {
      w[k] = expf(lse[k] - mx);
      sum += w[k];
    }
    out_lse = mx + logf(sum);
    for (size_t k = 0; k < n; k++)
      w[k] /= sum;
  }
  for (size_t c = 0; c < dv; c++) {
    float acc = 0.0f;
    if (out_lse != out_lse) {
      acc = NAN;
    } else if (out_lse != -INFINITY) {
      /* a part of weight 0 contributes nothing, not 0 * its NaN */
      for (size_t k = 0; k < n; k++)
        if (w[k] != 0.0f)
          acc += w[k] * rows[k][c];
    }
    out[c] = acc;
  }
  return out_lse;
}

sa_status sa_attention_merge(const sa_merge_desc *desc,
                             const float *const *o_parts,
                             const float *const *lse_parts, float *o,
                             float *lse) {
  if (!desc || !o_parts || !lse_parts || !o)
    return sa_fail(SA_ERR_NULL_POINTER,
                   "sa_attention_merge: desc, o_parts, lse_parts and o must "
                   "not be NULL");
  sa_merge_desc d;
  sa_status st = sa_struct_load("sa_merge_desc", desc, SA_MERGE_DESC_MIN_SIZE,
                                sizeof d, &d);
  if (st)
    return st;
  const size_t dims[] = {d.batch, d.heads, d.len_q, d.dim_v, d.parts};
  const char *names[] = {"batch", "heads", "len_q", "dim_v", "parts"};
  for (int i = 0; i < 5; i++)
    if (dims[i] == 0 || dims[i] > SA_MAX_DIM)
      return sa_fail(SA_ERR_BAD_SHAPE, "merge: %s = %zu is outside [1, 2^31]",
                     names[i], dims[i]);
  for (size_t k = 0; k < d.parts; k++)
    if (!o_parts[k] || !lse_parts[k])
      return sa_fail(SA_ERR_NULL_POINTER, "merge: part %zu is NULL", k);
  size_t oend, lend;
  if ((st = sa_strides_resolve("merge o", &d.o, d.heads, d.len_q, d.dim_v)) ||
      (st = sa_strides_resolve("merge lse", &d.lse, d.heads, d.len_q, 1)) ||
      (st = sa_strides_extent("merge o", &d.o, d.batch, d.heads, d.len_q,
                              d.dim_v, sizeof(float), &oend)) ||
      (st = sa_strides_extent("merge lse", &d.lse, d.batch, d.heads, d.len_q, 1,
                              sizeof(float), &lend)) ||
      (st = check_out("o", o, oend, o_parts, d.parts)) ||
      (lse && (st = check_out("lse", lse, lend, lse_parts, d.parts))))
    return st;
  oend *= sizeof(float);
  lend *= sizeof(float);
  if (lse && sa_overlaps(o, oend, lse, lend))
    return sa_fail(SA_ERR_BAD_STRIDE, "merge: o and lse overlap");
  for (size_t k = 0; k < d.parts; k++)
    if (sa_overlaps(o, oend, lse_parts[k], lend) ||
        (lse && sa_overlaps(lse, lend, o_parts[k], oend)))
      return sa_fail(SA_ERR_BAD_STRIDE,
                     "merge: an output overlaps another kind of part %zu", k);

  /* per part: a weight, its LSE and its row, for the row being merged */
  float wbuf[2 * 64];
  const float *rbuf[64];
  float *w = d.parts <= 64 ? wbuf : malloc(d.parts * 2 * sizeof(float));
  const float **rows =
      d.parts <= 64 ? rbuf : malloc(d.parts * sizeof(const float *));
  if (!w || !rows) {
    if (w != wbuf)
      free(w);
    if (rows != rbuf)
      free(rows);
    return sa_fail(SA_ERR_NO_MEMORY, "merge: %zu parts", d.parts);
  }
  float *vals = w + d.parts;
  for (size_t b = 0; b < d.batch; b++)
    for (size_t h = 0; h < d.heads; h++)
      for (size_t i = 0; i < d.len_q; i++) {
        size_t ro = b * d.o.batch + h * d.o.head + i * d.o.seq;
        size_t rl = b * d.lse.batch + h * d.lse.head + i * d.lse.seq;
        for (size_t k = 0; k < d.parts; k++) {
          vals[k] = lse_parts[k][rl];
          rows[k] = o_parts[k] + ro;
        }
        float out_lse = sa_merge_row(d.parts, vals, rows, w, o + ro, d.dim_v);
        if (lse)
          lse[rl] = out_lse;
      }
  if (w != wbuf)
    free(w);
  if (rows != rbuf)
    free((void *)rows);
  sa_clear_error();
  return SA_OK;
}
