/*
 * The attention a reader would write in an afternoon, in fp32: what the
 * accuracy table (bench/accuracy.c) prints beside every kernel set, so that
 * each set's error can be read against the error fp32 itself brings.
 */
#ifndef SA_BENCH_PLAIN_FP32_H
#define SA_BENCH_PLAIN_FP32_H

#include "simdattn.h"

/* O for every (batch, query head, row) of an f32 descriptor with no mask or
 * a causal one, its strides resolved (none all zero). s holds len_kv
 * floats. */
void sa_plain_fp32_attention(const sa_attention_desc *d, const float *q,
                             const float *k, const float *v, float *o,
                             float *s);

#endif /* SA_BENCH_PLAIN_FP32_H */
