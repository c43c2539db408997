/*
 * The strongest baseline a user could pick instead of simdattn: oneDNN's
 * primitives (C API), per (batch, KV head)
 *
 *   S = scale * Q_g * K^T      matmul, output scale, and under a causal mask
 *                              a binary-add post-op of a 0 / -inf mask
 *   P = softmax_rows(S)        the softmax primitive, in place
 *   O_g = P * V                matmul
 *
 * where Q_g and O_g are the group's query heads: in packed [B, H, L, D]
 * tensors the heads that share a KV head are consecutive, so their rows
 * form one (group * len_q) x d matrix and K and V are read once per group
 * (for decode that is a GEMM of group rows instead of group GEMVs, which is
 * what a user who knows oneDNN would write). The primitives, the mask and
 * S are made once per shape, outside the timed loop; a call only points the
 * memory objects at each head's data and executes.
 *
 * Threads: Debian's libdnnl is built on the OpenMP runtime
 * (DNNL_CPU_RUNTIME_OMP), so omp_set_num_threads sets its thread count,
 * --sa_threads like the contexts and OpenBLAS.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "bench/bench.h"

struct sa_onednn_attn {
  size_t batch, hq, hkv, lq, lk, dq, dv, group;
  dnnl_primitive_t qk, softmax, pv;
  dnnl_memory_t q, k, s, v, o, mask;
  float *s_buf, *mask_buf;
};

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static const char *isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
  case dnnl_cpu_isa_sse41:
    return "sse41";
  case dnnl_cpu_isa_avx:
    return "avx";
  case dnnl_cpu_isa_avx2:
    return "avx2";
  case dnnl_cpu_isa_avx512_core:
    return "avx512_core";
  case dnnl_cpu_isa_avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl_cpu_isa_avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl_cpu_isa_avx512_core_amx:
    return "avx512_core_amx";
  default:
    return "other";
  }
}

static int ok(dnnl_status_t st, const char *what, char *err, size_t len);
static void md2(dnnl_memory_desc_t *md, size_t rows, size_t cols,
                size_t row_stride, size_t col_stride);
static const char *impl_of(const_dnnl_primitive_desc_t pd);

/* The implementations oneDNN picks for a matmul of the prefill rows' kind
 * (256 x 128 by 128 x 256, K read transposed) and a row softmax. */
static void find_impls(char *out, size_t out_len) {
  char err[160];
  dnnl_memory_desc_t a, b, c;
  md2(&a, 256, 128, 128, 1);
  md2(&b, 128, 256, 1, 128);
  md2(&c, 256, 256, 256, 1);
  dnnl_matmul_desc_t mm;
  dnnl_softmax_desc_t sm;
  dnnl_primitive_desc_t pm = NULL, ps = NULL;
  if (ok(dnnl_matmul_desc_init(&mm, &a, &b, NULL, &c), "m", err, sizeof err) &&
      ok(dnnl_primitive_desc_create(&pm, &mm, NULL, engine, NULL), "m", err,
         sizeof err) &&
      ok(dnnl_softmax_forward_desc_init(&sm, dnnl_forward_inference, &c, 1),
         "s", err, sizeof err) &&
      ok(dnnl_primitive_desc_create(&ps, &sm, NULL, engine, NULL), "s", err,
         sizeof err))
    snprintf(out, out_len, "; matmul %s, softmax %s", impl_of(pm), impl_of(ps));
  if (pm)
    dnnl_primitive_desc_destroy(pm);
  if (ps)
    dnnl_primitive_desc_destroy(ps);
}

static int start_engine(char *err, size_t len) {
  return engine ||
         (ok(dnnl_engine_create(&engine, dnnl_cpu, 0), "engine_create", err,
             len) &&
          ok(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags),
             "stream_create", err, len));
}

const char *sa_onednn_describe(void) {
  static char buf[320];
  char impls[160] = "", err[160];
  if (start_engine(err, sizeof err))
    find_impls(impls, sizeof impls);
  const dnnl_version_t *v = dnnl_version();
  snprintf(buf, sizeof buf,
           "oneDNN %d.%d.%d (%s), OpenMP runtime, max ISA %s; %d thread(s) "
           "(omp_set_num_threads)%s",
           v->major, v->minor, v->patch, v->hash,
           isa_name(dnnl_get_effective_cpu_isa()), omp_get_max_threads(),
           impls);
  return buf;
}

void sa_onednn_set_threads(int n) { omp_set_num_threads(n); }

static int ok(dnnl_status_t st, const char *what, char *err, size_t len) {
  if (st == dnnl_success)
    return 1;
  snprintf(err, len, "oneDNN: %s failed (status %d)", what, (int)st);
  return 0;
}

static void md2(dnnl_memory_desc_t *md, size_t rows, size_t cols,
                size_t row_stride, size_t col_stride) {
  dnnl_dims_t dims = {(dnnl_dim_t)rows, (dnnl_dim_t)cols};
  dnnl_dims_t strides = {(dnnl_dim_t)row_stride, (dnnl_dim_t)col_stride};
  dnnl_memory_desc_init_by_strides(md, 2, dims, dnnl_f32, strides);
}

static const char *impl_of(const_dnnl_primitive_desc_t pd) {
  const char *s = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) !=
          dnnl_success ||
      !s)
    return "?";
  return s;
}

/* Creates a primitive from an op descriptor. */
static int make(const void *op, const_dnnl_primitive_attr_t attr,
                dnnl_primitive_t *prim, const char *what, char *err,
                size_t len) {
  dnnl_primitive_desc_t pd;
  if (!ok(dnnl_primitive_desc_create(&pd, op, attr, engine, NULL), what, err,
          len))
    return 0;
  int r = ok(dnnl_primitive_create(prim, pd), what, err, len);
  dnnl_primitive_desc_destroy(pd);
  return r;
}

/* Visible keys of query row i (the OpenBLAS baseline's rule). */
static size_t visible(const sa_attention_desc *d, size_t i) {
  size_t n = d->len_kv;
  if (d->mask == SA_MASK_CAUSAL_TOP_LEFT)
    return i + 1 < n ? i + 1 : n;
  if (d->mask == SA_MASK_CAUSAL_BOTTOM_RIGHT)
    return i + 1 + n > d->len_q
               ? (i + 1 + n - d->len_q < n ? i + 1 + n - d->len_q : n)
               : 0;
  return n;
}

sa_onednn_attn *sa_onednn_create(const sa_attention_desc *d, char *err,
                                 size_t len) {
  if (!start_engine(err, len))
    return NULL;
  sa_onednn_attn *a = calloc(1, sizeof *a);
  if (!a) {
    snprintf(err, len, "out of memory");
    return NULL;
  }
  *a = (sa_onednn_attn){.batch = d->batch,
                        .hq = d->heads_q,
                        .hkv = d->heads_kv,
                        .lq = d->len_q,
                        .lk = d->len_kv,
                        .dq = d->dim_qk,
                        .dv = d->dim_v,
                        .group = d->heads_q / d->heads_kv};
  const size_t m = a->group * a->lq, n = a->lk;
  const float scale = d->scale > 0 ? d->scale : 1.0f / sqrtf((float)d->dim_qk);
  int causal = d->mask != SA_MASK_NONE;

  /* Q_g [m, dq]; K^T [dq, lk] as K's rows read by column; S [m, lk];
   * V [lk, dv]; O_g [m, dv]; all row-major. */
  dnnl_memory_desc_t q_md, kt_md, s_md, v_md, o_md;
  md2(&q_md, m, a->dq, a->dq, 1);
  md2(&kt_md, a->dq, n, 1, a->dq);
  md2(&s_md, m, n, n, 1);
  md2(&v_md, n, a->dv, a->dv, 1);
  md2(&o_md, m, a->dv, a->dv, 1);

  a->s_buf = sa_bench_alloc(m * n);
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  dnnl_matmul_desc_t qk_d, pv_d;
  dnnl_softmax_desc_t sm_d;
  int good = ok(dnnl_primitive_attr_create(&attr), "attr_create", err, len) &&
             ok(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale),
                "output scale", err, len);
  if (good && causal) {
    /* 0 where row r's query (r % lq) sees key j, -inf elsewhere; added to
     * the scaled scores before the softmax, which turns -inf into 0. */
    a->mask_buf = sa_bench_alloc(m * n);
    for (size_t r = 0; r < m; r++) {
      size_t see = visible(d, r % a->lq);
      if (see == 0) {
        snprintf(err, len, "a row sees no key: not a oneDNN softmax");
        good = 0;
        break;
      }
      for (size_t j = 0; j < n; j++)
        a->mask_buf[r * n + j] = j < see ? 0.0f : -INFINITY;
    }
    good = good && ok(dnnl_post_ops_create(&po), "post_ops", err, len) &&
           ok(dnnl_post_ops_append_binary(po, dnnl_binary_add, &s_md),
              "binary add post-op", err, len) &&
           ok(dnnl_primitive_attr_set_post_ops(attr, po), "set_post_ops", err,
              len) &&
           ok(dnnl_memory_create(&a->mask, &s_md, engine, a->mask_buf),
              "mask memory", err, len);
  }
  good = good &&
         ok(dnnl_matmul_desc_init(&qk_d, &q_md, &kt_md, NULL, &s_md),
            "matmul Q.K^T", err, len) &&
         make(&qk_d, attr, &a->qk, "matmul Q.K^T", err, len) &&
         ok(dnnl_softmax_forward_desc_init(&sm_d, dnnl_forward_inference, &s_md,
                                           1),
            "softmax", err, len) &&
         make(&sm_d, NULL, &a->softmax, "softmax", err, len) &&
         ok(dnnl_matmul_desc_init(&pv_d, &s_md, &v_md, NULL, &o_md),
            "matmul P.V", err, len) &&
         make(&pv_d, NULL, &a->pv, "matmul P.V", err, len) &&
         /* the inputs' handles are set per head in sa_onednn_run */
         ok(dnnl_memory_create(&a->q, &q_md, engine, DNNL_MEMORY_NONE),
            "memory", err, len) &&
         ok(dnnl_memory_create(&a->k, &kt_md, engine, DNNL_MEMORY_NONE),
            "memory", err, len) &&
         ok(dnnl_memory_create(&a->v, &v_md, engine, DNNL_MEMORY_NONE),
            "memory", err, len) &&
         ok(dnnl_memory_create(&a->o, &o_md, engine, DNNL_MEMORY_NONE),
            "memory", err, len) &&
         ok(dnnl_memory_create(&a->s, &s_md, engine, a->s_buf), "memory", err,
            len);
  if (po)
    dnnl_post_ops_destroy(po);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  if (!good) {
    sa_onednn_destroy(a);
    return NULL;
  }
  return a;
}

int sa_onednn_run(sa_onednn_attn *a, const float *q, const float *k,
                  const float *v, float *o) {
  dnnl_exec_arg_t qk_args[] = {
      {DNNL_ARG_SRC, a->q},
      {DNNL_ARG_WEIGHTS, a->k},
      {DNNL_ARG_DST, a->s},
      {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, a->mask}};
  dnnl_exec_arg_t sm_args[] = {{DNNL_ARG_SRC, a->s}, {DNNL_ARG_DST, a->s}};
  dnnl_exec_arg_t pv_args[] = {
      {DNNL_ARG_SRC, a->s}, {DNNL_ARG_WEIGHTS, a->v}, {DNNL_ARG_DST, a->o}};
  int n_qk = a->mask ? 4 : 3;
  for (size_t b = 0; b < a->batch; b++)
    for (size_t h = 0; h < a->hkv; h++) {
      size_t qh = b * a->hq + h * a->group; /* the group's first query head */
      size_t kh = b * a->hkv + h;
      if (dnnl_memory_set_data_handle(a->q, (void *)(q + qh * a->lq * a->dq)) ||
          dnnl_memory_set_data_handle(a->k, (void *)(k + kh * a->lk * a->dq)) ||
          dnnl_memory_set_data_handle(a->v, (void *)(v + kh * a->lk * a->dv)) ||
          dnnl_memory_set_data_handle(a->o, o + qh * a->lq * a->dv) ||
          dnnl_primitive_execute(a->qk, stream, n_qk, qk_args) ||
          dnnl_primitive_execute(a->softmax, stream, 2, sm_args) ||
          dnnl_primitive_execute(a->pv, stream, 3, pv_args))
        return -1;
    }
  return dnnl_stream_wait(stream) == dnnl_success ? 0 : -1;
}

void sa_onednn_destroy(sa_onednn_attn *a) {
  if (!a)
    return;
  dnnl_primitive_t prims[] = {a->qk, a->softmax, a->pv};
  for (size_t i = 0; i < 3; i++)
    if (prims[i])
      dnnl_primitive_destroy(prims[i]);
  dnnl_memory_t mems[] = {a->q, a->k, a->s, a->v, a->o, a->mask};
  for (size_t i = 0; i < 6; i++)
    if (mems[i])
      dnnl_memory_destroy(mems[i]);
  sa_bench_free(a->s_buf);
  sa_bench_free(a->mask_buf);
  free(a);
}
