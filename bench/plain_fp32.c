/*
 * Plain fp32 attention, one row at a time and in the obvious order: each
 * score a float dot product summed from p = 0, times the scale; the row
 * max subtracted; expf; the sum from j = 0; each weight divided by it; the
 * weighted sum of V from j = 0, all in float. Built with -ffp-contract=off,
 * like the scalar set, so that no compiler fuses a multiply into an add
 * behind the reader's back.
 */
#define _DEFAULT_SOURCE /* testing.h maps anonymous memory */
#include "bench/plain_fp32.h"

#include <math.h>

#include "tests/testing.h" /* t_visible: the keys row i sees */

void sa_plain_fp32_attention(const sa_attention_desc *d, const float *q,
                             const float *k, const float *v, float *o,
                             float *s) {
  const float scale =
      d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)d->dim_qk);
  const size_t group = d->heads_q / d->heads_kv;
  for (size_t b = 0; b < d->batch; b++)
    for (size_t h = 0; h < d->heads_q; h++)
      for (size_t i = 0; i < d->len_q; i++) {
        const float *qi = q + b * d->q.batch + h * d->q.head + i * d->q.seq;
        const float *kh = k + b * d->k.batch + h / group * d->k.head;
        const float *vh = v + b * d->v.batch + h / group * d->v.head;
        float *oi = o + b * d->o.batch + h * d->o.head + i * d->o.seq;
        size_t n = t_visible(d, i);
        float mx = -INFINITY, sum = 0.0f;
        for (size_t j = 0; j < n; j++) {
          float acc = 0.0f;
          for (size_t p = 0; p < d->dim_qk; p++)
            acc += qi[p] * kh[j * d->k.seq + p];
          s[j] = acc * scale;
          mx = s[j] > mx ? s[j] : mx;
        }
        for (size_t j = 0; j < n; j++) {
          s[j] = expf(s[j] - mx);
          sum += s[j];
        }
        for (size_t j = 0; j < n; j++)
          s[j] /= sum;
        for (size_t c = 0; c < d->dim_v; c++) {
          float acc = 0.0f;
          for (size_t j = 0; j < n; j++)
            acc += s[j] * vh[j * d->v.seq + c];
          oi[c] = n ? acc : 0.0f;
        }
      }
}
