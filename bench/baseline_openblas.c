/*
 * The baseline a user would write without simdattn: per (batch, query head),
 * cblas_sgemm for S = scale * Q * K^T, a plain C row softmax (masked keys get
 * 0; the full S is computed even under a causal mask, as a GEMM does), and
 * cblas_sgemm for O = P * V. Packed [B, H, L, D] tensors; query head h reads
 * key/value head h / (heads_q / heads_kv).
 *
 * OpenBLAS runs with as many threads as the contexts (--sa_threads, 1 by
 * default: openblas_set_num_threads(1)), so the comparison is like for like.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>

#include "bench/bench.h"

const char *sa_openblas_describe(void) {
  static char buf[256];
  snprintf(buf, sizeof buf,
           "%s; core %s; %d thread(s) (openblas_set_num_threads)",
           openblas_get_config(), openblas_get_corename(),
           openblas_get_num_threads());
  return buf;
}

void sa_openblas_set_threads(int n) { openblas_set_num_threads(n); }

static void softmax_rows(size_t m, size_t n, float *s,
                         const sa_attention_desc *d) {
  for (size_t i = 0; i < m; i++) {
    float *row = s + i * n;
    size_t len = n;
    if (d->mask == SA_MASK_CAUSAL_TOP_LEFT)
      len = i + 1 < n ? i + 1 : n;
    else if (d->mask == SA_MASK_CAUSAL_BOTTOM_RIGHT)
      len = i + 1 + n > d->len_q
                ? (i + 1 + n - d->len_q < n ? i + 1 + n - d->len_q : n)
                : 0;
    float mx = -INFINITY, sum = 0.0f;
    for (size_t j = 0; j < len; j++)
      mx = row[j] > mx ? row[j] : mx;
    for (size_t j = 0; j < len; j++) {
      row[j] = expf(row[j] - mx);
      sum += row[j];
    }
    float inv = len ? 1.0f / sum : 0.0f;
    for (size_t j = 0; j < len; j++)
      row[j] *= inv;
    for (size_t j = len; j < n; j++)
      row[j] = 0.0f;
  }
}

void sa_openblas_attention(const sa_attention_desc *d, const float *q,
                           const float *k, const float *v, float *o, float *s) {
  const size_t lq = d->len_q, lk = d->len_kv, dq = d->dim_qk, dv = d->dim_v;
  const size_t group = d->heads_q / d->heads_kv;
  const float scale = d->scale > 0 ? d->scale : 1.0f / sqrtf((float)dq);
  for (size_t b = 0; b < d->batch; b++)
    for (size_t h = 0; h < d->heads_q; h++) {
      size_t hk = h / group;
      const float *qh = q + (b * d->heads_q + h) * lq * dq;
      const float *kh = k + (b * d->heads_kv + hk) * lk * dq;
      const float *vh = v + (b * d->heads_kv + hk) * lk * dv;
      float *oh = o + (b * d->heads_q + h) * lq * dv;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)lq, (int)lk,
                  (int)dq, scale, qh, (int)dq, kh, (int)dq, 0.0f, s, (int)lk);
      softmax_rows(lq, lk, s, d);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)lq, (int)dv,
                  (int)lk, 1.0f, s, (int)lk, vh, (int)dv, 0.0f, oh, (int)dv);
    }
}
