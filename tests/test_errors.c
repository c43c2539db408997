/*
 * Bad input: every entry of the table must return its documented status and
 * leave every byte of the output buffer as it was, on every kernel set.
 * Also: status strings, the detail message, bad context options, and NaN
 * confined to the rows it belongs to. (Bad environment values: test_env.)
 *
 * The detail message is cleared before every case (sa_clear_error, or a
 * call that succeeds), so a message left by the case before cannot pass
 * for the one a case must write.
 */
#include <stdint.h>

#include "core/errors.h"
#include "tests/testing.h"

#define L 4
#define D 8
#define OUT_FLOATS (2 * 2 * L * D)

static float q[OUT_FLOATS], k[OUT_FLOATS], v[OUT_FLOATS];

/* What the 0.3 fields point at: valid unless an edit spoils them. */
static float mask_f[2 * 2 * L * L],
    slopes_bad[2] = {0.5f, NAN}, slopes_inf[2] = {INFINITY, 0.5f},
    sinks_nan[2] = {0.0f, NAN}, sinks_inf[2] = {INFINITY, 0.0f};
static uint8_t mask_b[2 * 2 * L * L];
static int64_t lens_long[2] = {L, L + 1}, lens_neg[2] = {-1, L};
static float lse_buf[2 * 2 * L], lse_before[2 * 2 * L];
/* Ragged and paged sides (batch 2): prefix sums and block tables, each
 * spoilt in one way. A paged pool of 8 pages of 2 tokens fills k and v. */
static int32_t cu_ok[3] = {0, 2, 4}, cu_decreasing[3] = {0, 3, 2},
               cu_negative[3] = {-1, 1, 3}, cu_long[3] = {0, 1, L + 2},
               table_ok[4] = {5, 2, 7, 0}, table_out[4] = {5, 2, 7, 8},
               table_neg[4] = {5, -1, 7, 0};

/* A valid paged description of k and v (fused, or auto if asked). */
static void paged(sa_attention_desc *d, const int32_t *table) {
  d->block_table = table;
  d->block_table_stride = 2;
  d->page_size = 2;
  d->num_pages = 8;
  if (d->algorithm == SA_ALGO_THREE_PASS)
    d->algorithm = SA_ALGO_FUSED;
}

static sa_attention_desc good(void) {
  sa_attention_desc d;
  sa_attention_desc_init(&d);
  d.batch = 2, d.heads_q = 2, d.heads_kv = 1;
  d.len_q = L, d.len_kv = L, d.dim_qk = D, d.dim_v = D;
  return d;
}

typedef struct bad_case {
  const char *what;
  sa_status want;
  int about_pointers; /* sa_attention_workspace takes none: it says SA_OK */
  void (*edit)(sa_attention_desc *d, const float **pq, const float **pk,
               const float **pv, float **po, int *null_desc);
} bad_case;

#define EDIT(name, ...)                                                        \
  static void name(sa_attention_desc *d, const float **pq, const float **pk,   \
                   const float **pv, float **po, int *null_desc) {             \
    (void)d, (void)pq, (void)pk, (void)pv, (void)po, (void)null_desc;          \
    __VA_ARGS__;                                                               \
  }

EDIT(e_null_desc, *null_desc = 1)
EDIT(e_null_q, *pq = NULL)
EDIT(e_null_k, *pk = NULL)
EDIT(e_null_v, *pv = NULL)
EDIT(e_null_o, *po = NULL)
EDIT(e_batch0, d->batch = 0)
EDIT(e_hq0, d->heads_q = 0)
EDIT(e_hkv0, d->heads_kv = 0)
EDIT(e_lq0, d->len_q = 0)
EDIT(e_lk0, d->len_kv = 0)
EDIT(e_dqk0, d->dim_qk = 0)
EDIT(e_dv0, d->dim_v = 0)
EDIT(e_huge_dim, d->dim_qk = SA_MAX_DIM + 1)
EDIT(e_absurd_len, d->len_kv = SIZE_MAX)
EDIT(e_heads, d->heads_q = 3; d->heads_kv = 2)
EDIT(e_mask, d->mask = (sa_mask)7)
EDIT(e_algo, d->algorithm = (sa_algorithm)9)
EDIT(e_scale_nan, d->scale = NAN)
EDIT(e_scale_inf, d->scale = INFINITY)
EDIT(e_overflow_packed, d->batch = SA_MAX_DIM; d->heads_q = SA_MAX_DIM;
     d->heads_kv = 1; d->len_q = SA_MAX_DIM)
EDIT(e_overflow_dims, d->len_kv = SA_MAX_DIM; d->dim_qk = SA_MAX_DIM;
     d->heads_kv = 2; d->heads_q = 2)
EDIT(e_overflow_stride, d->k = (sa_strides){1, 1, SIZE_MAX / 2})
EDIT(e_overflow_bytes, d->v = (sa_strides){0, 0, (size_t)PTRDIFF_MAX / 2})
EDIT(e_o_rows_overlap, d->o = (sa_strides){2 * L * D, L *D, D - 1})
EDIT(e_o_heads_alias, d->o = (sa_strides){2 * L * D, 0, D})
EDIT(e_o_batch_alias, d->o = (sa_strides){L * D, L *D, D})
EDIT(e_size0, d->struct_size = 0)
EDIT(e_size_small, d->struct_size = SA_ATTENTION_DESC_MIN_SIZE - 1)
EDIT(e_size_huge, d->struct_size = (size_t)1 << 40)
EDIT(e_o_on_k, *po = (float *)*pk + 1)
EDIT(e_o_on_v, *po = (float *)*pv + D)
EDIT(e_o_on_q_shifted, *po = (float *)*pq + D)
EDIT(e_o_on_q_strides, *po = (float *)*pq;
     d->q = (sa_strides){2 * L * D, L *D, D}; d->o = (sa_strides){0, 0, 0};
     d->len_q = L / 2)

EDIT(e_add_keys, d->mask_add = mask_f; d->mask_add_layout.keys = L + 1)
EDIT(e_bool_keys, d->mask_bool = mask_b; d->mask_bool_layout.keys = L + 1)
EDIT(e_add_span, d->mask_add = mask_f;
     d->mask_add_layout = (sa_mask_layout){0, 0, (size_t)PTRDIFF_MAX / 2, 1, 0})
EDIT(e_bool_wrap, d->mask_bool = mask_b;
     d->mask_bool_layout = (sa_mask_layout){SIZE_MAX / 2, 0, 0, 1, 0})
EDIT(e_window_left, d->window = 1; d->window_left = -2)
EDIT(e_window_right, d->window = 1; d->window_right = INT64_MIN)
EDIT(e_softcap_nan, d->softcap = NAN)
EDIT(e_softcap_inf, d->softcap = INFINITY)
EDIT(e_softcap_neg, d->softcap = -1.0f)
EDIT(e_slope_nan, d->alibi_slopes = slopes_bad)
EDIT(e_slope_inf, d->alibi_slopes = slopes_inf)
EDIT(e_sink_nan, d->sinks = sinks_nan)
EDIT(e_sink_inf, d->sinks = sinks_inf)
EDIT(e_len_long, d->len_kv_valid = lens_long)
EDIT(e_len_neg, d->len_kv_valid = lens_neg)
EDIT(e_lse_alias, d->lse = lse_buf; d->lse_at = (sa_strides){L, 0, 1})
EDIT(e_lse_rows, d->lse = lse_buf; d->lse_at = (sa_strides){2 * L, L, 0})
EDIT(e_lse_span, d->lse = lse_buf;
     d->lse_at = (sa_strides){(size_t)PTRDIFF_MAX / 2, L, 1})
EDIT(e_lse_on_o, d->lse = *po + 5)
EDIT(e_lse_on_q, d->lse = (float *)*pq + 1)
EDIT(e_o_on_mask, d->mask_add = *po + 2)
EDIT(e_lse_on_mask, d->lse = lse_buf;
     d->mask_bool = (const uint8_t *)(const void *)(lse_buf + 3))
EDIT(e_cu_q_decreasing, d->cu_seqlens_q = cu_decreasing)
EDIT(e_cu_q_negative, d->cu_seqlens_q = cu_negative)
EDIT(e_cu_q_long, d->cu_seqlens_q = cu_long)
EDIT(e_cu_kv_decreasing, d->cu_seqlens_kv = cu_decreasing)
EDIT(e_cu_kv_negative, d->cu_seqlens_kv = cu_negative)
EDIT(e_cu_kv_long, d->cu_seqlens_kv = cu_long)
EDIT(e_cu_both_one_bad, d->cu_seqlens_q = cu_ok; d->cu_seqlens_kv = cu_long)
EDIT(e_table_out, paged(d, table_out))
EDIT(e_table_neg, paged(d, table_neg))
EDIT(e_table_stride, paged(d, table_ok); d->block_table_stride = 1)
EDIT(e_table_stride0, paged(d, table_ok); d->block_table_stride = 0)
EDIT(e_page0, paged(d, table_ok); d->page_size = 0)
EDIT(e_pages0, paged(d, table_ok); d->num_pages = 0)
EDIT(e_page_huge, paged(d, table_ok); d->page_size = SA_MAX_DIM + 1)
EDIT(e_pool_overflow, paged(d, table_ok); d->num_pages = SA_MAX_DIM;
     d->page_size = SA_MAX_DIM)
EDIT(e_table_valid_long, paged(d, table_ok); d->len_kv_valid = lens_long)
EDIT(e_table_cu_kv, paged(d, table_ok); d->cu_seqlens_kv = cu_ok)
EDIT(e_paged_three_pass, paged(d, table_ok); d->algorithm = SA_ALGO_THREE_PASS)
/* 0.4: element types */
EDIT(e_q8_dim, d->k_type = SA_Q8_0) /* D = 8: not whole blocks */
EDIT(e_q8_v_dim, d->v_type = SA_Q8_0; d->dim_qk = 32)
EDIT(e_q8_q, d->q_type = SA_Q8_0; d->dim_qk = d->dim_v = 32)
EDIT(e_q8_o, d->o_type = SA_Q8_0; d->dim_qk = d->dim_v = 32)
EDIT(e_type_9, d->v_type = (sa_dtype)9)
EDIT(e_type_neg, d->k_type = (sa_dtype)-1)
EDIT(e_q_type_big, d->q_type = (sa_dtype)4)
EDIT(e_in_place_types, *po = (float *)*pq; d->q_type = SA_F16;
     d->o_type = SA_BF16)
/* blocks are 34 bytes: an extent fine in floats is too far in blocks */
EDIT(e_q8_span, d->k_type = SA_Q8_0; d->dim_qk = d->dim_v = 32;
     d->k = (sa_strides){0, 0, (size_t)PTRDIFF_MAX / 60})

static const bad_case table[] = {
    {"desc NULL", SA_ERR_NULL_POINTER, 0, e_null_desc},
    {"q NULL", SA_ERR_NULL_POINTER, 1, e_null_q},
    {"k NULL", SA_ERR_NULL_POINTER, 1, e_null_k},
    {"v NULL", SA_ERR_NULL_POINTER, 1, e_null_v},
    {"o NULL", SA_ERR_NULL_POINTER, 1, e_null_o},
    {"batch 0", SA_ERR_BAD_SHAPE, 0, e_batch0},
    {"heads_q 0", SA_ERR_BAD_SHAPE, 0, e_hq0},
    {"heads_kv 0", SA_ERR_BAD_SHAPE, 0, e_hkv0},
    {"len_q 0", SA_ERR_BAD_SHAPE, 0, e_lq0},
    {"len_kv 0", SA_ERR_BAD_SHAPE, 0, e_lk0},
    {"dim_qk 0", SA_ERR_BAD_SHAPE, 0, e_dqk0},
    {"dim_v 0", SA_ERR_BAD_SHAPE, 0, e_dv0},
    {"dim_qk > SA_MAX_DIM", SA_ERR_BAD_SHAPE, 0, e_huge_dim},
    {"len_kv SIZE_MAX", SA_ERR_BAD_SHAPE, 0, e_absurd_len},
    {"heads_q 3 over heads_kv 2", SA_ERR_BAD_HEADS, 0, e_heads},
    {"mask 7", SA_ERR_BAD_ARGUMENT, 0, e_mask},
    {"algorithm 9", SA_ERR_BAD_ARGUMENT, 0, e_algo},
    {"scale NaN", SA_ERR_BAD_ARGUMENT, 0, e_scale_nan},
    {"scale inf", SA_ERR_BAD_ARGUMENT, 0, e_scale_inf},
    {"B*H*L*D overflows size_t", SA_ERR_OVERFLOW, 0, e_overflow_packed},
    {"L*D*H overflows size_t", SA_ERR_OVERFLOW, 0, e_overflow_dims},
    {"k seq stride spans past SIZE_MAX", SA_ERR_OVERFLOW, 0, e_overflow_stride},
    {"v spans more bytes than ptrdiff_t", SA_ERR_OVERFLOW, 0, e_overflow_bytes},
    {"o rows overlap", SA_ERR_BAD_STRIDE, 0, e_o_rows_overlap},
    {"o heads alias (stride 0)", SA_ERR_BAD_STRIDE, 0, e_o_heads_alias},
    {"o batches alias", SA_ERR_BAD_STRIDE, 0, e_o_batch_alias},
    {"struct_size 0 (not initialised)", SA_ERR_STRUCT_SIZE, 0, e_size0},
    {"struct_size below the first version", SA_ERR_STRUCT_SIZE, 0,
     e_size_small},
    {"struct_size absurd", SA_ERR_STRUCT_SIZE, 0, e_size_huge},
    {"o overlaps k", SA_ERR_BAD_STRIDE, 1, e_o_on_k},
    {"o overlaps v", SA_ERR_BAD_STRIDE, 1, e_o_on_v},
    {"o overlaps q one row on", SA_ERR_BAD_STRIDE, 1, e_o_on_q_shifted},
    {"o is q with other strides", SA_ERR_BAD_STRIDE, 1, e_o_on_q_strides},
    {"mask_add wider than len_kv", SA_ERR_BAD_SHAPE, 0, e_add_keys},
    {"mask_bool wider than len_kv", SA_ERR_BAD_SHAPE, 0, e_bool_keys},
    {"mask_add spans more than ptrdiff_t", SA_ERR_OVERFLOW, 0, e_add_span},
    {"mask_bool strides wrap size_t", SA_ERR_OVERFLOW, 0, e_bool_wrap},
    {"window_left -2", SA_ERR_BAD_ARGUMENT, 0, e_window_left},
    {"window_right INT64_MIN", SA_ERR_BAD_ARGUMENT, 0, e_window_right},
    {"softcap NaN", SA_ERR_BAD_ARGUMENT, 0, e_softcap_nan},
    {"softcap inf", SA_ERR_BAD_ARGUMENT, 0, e_softcap_inf},
    {"softcap negative", SA_ERR_BAD_ARGUMENT, 0, e_softcap_neg},
    {"an ALiBi slope NaN", SA_ERR_BAD_ARGUMENT, 0, e_slope_nan},
    {"an ALiBi slope inf", SA_ERR_BAD_ARGUMENT, 0, e_slope_inf},
    {"a sink NaN", SA_ERR_BAD_ARGUMENT, 0, e_sink_nan},
    {"a sink +inf", SA_ERR_BAD_ARGUMENT, 0, e_sink_inf},
    {"len_kv_valid above len_kv", SA_ERR_BAD_SHAPE, 0, e_len_long},
    {"len_kv_valid negative", SA_ERR_BAD_SHAPE, 0, e_len_neg},
    {"lse heads alias", SA_ERR_BAD_STRIDE, 0, e_lse_alias},
    {"lse rows alias", SA_ERR_BAD_STRIDE, 0, e_lse_rows},
    {"lse spans more than ptrdiff_t", SA_ERR_OVERFLOW, 0, e_lse_span},
    {"lse overlaps o", SA_ERR_BAD_STRIDE, 1, e_lse_on_o},
    {"lse overlaps q", SA_ERR_BAD_STRIDE, 1, e_lse_on_q},
    {"o overlaps mask_add", SA_ERR_BAD_STRIDE, 1, e_o_on_mask},
    {"lse overlaps mask_bool", SA_ERR_BAD_STRIDE, 1, e_lse_on_mask},
    /* ragged and paged sides: validation, which the workspace query runs
     * too (about_pointers 0) */
    {"cu_seqlens_q decreasing", SA_ERR_BAD_SHAPE, 0, e_cu_q_decreasing},
    {"cu_seqlens_q[0] negative", SA_ERR_BAD_SHAPE, 0, e_cu_q_negative},
    {"a query sequence longer than len_q", SA_ERR_BAD_SHAPE, 0, e_cu_q_long},
    {"cu_seqlens_kv decreasing", SA_ERR_BAD_SHAPE, 0, e_cu_kv_decreasing},
    {"cu_seqlens_kv[0] negative", SA_ERR_BAD_SHAPE, 0, e_cu_kv_negative},
    {"a key sequence longer than len_kv", SA_ERR_BAD_SHAPE, 0, e_cu_kv_long},
    {"cu_seqlens_q fine, cu_seqlens_kv too long", SA_ERR_BAD_SHAPE, 0,
     e_cu_both_one_bad},
    {"block_table entry = num_pages", SA_ERR_BAD_ARGUMENT, 0, e_table_out},
    {"block_table entry negative", SA_ERR_BAD_ARGUMENT, 0, e_table_neg},
    {"block_table_stride below a sequence's pages", SA_ERR_BAD_SHAPE, 0,
     e_table_stride},
    {"block_table_stride 0", SA_ERR_BAD_SHAPE, 0, e_table_stride0},
    {"page_size 0", SA_ERR_BAD_SHAPE, 0, e_page0},
    {"num_pages 0", SA_ERR_BAD_SHAPE, 0, e_pages0},
    {"page_size > SA_MAX_DIM", SA_ERR_BAD_SHAPE, 0, e_page_huge},
    {"page pool spans past SIZE_MAX", SA_ERR_OVERFLOW, 0, e_pool_overflow},
    {"paged len_kv_valid above len_kv", SA_ERR_BAD_SHAPE, 0,
     e_table_valid_long},
    {"block_table with cu_seqlens_kv", SA_ERR_BAD_ARGUMENT, 0, e_table_cu_kv},
    {"paged under SA_ALGO_THREE_PASS", SA_ERR_BAD_ARGUMENT, 0,
     e_paged_three_pass},
    {"q8_0 K with dim_qk 8", SA_ERR_BAD_SHAPE, 0, e_q8_dim},
    {"q8_0 V with dim_v 8", SA_ERR_BAD_SHAPE, 0, e_q8_v_dim},
    {"q8_0 Q", SA_ERR_BAD_ARGUMENT, 0, e_q8_q},
    {"q8_0 O", SA_ERR_BAD_ARGUMENT, 0, e_q8_o},
    {"v_type 9", SA_ERR_BAD_ARGUMENT, 0, e_type_9},
    {"k_type -1", SA_ERR_BAD_ARGUMENT, 0, e_type_neg},
    {"q_type 4", SA_ERR_BAD_ARGUMENT, 0, e_q_type_big},
    {"o is q with other types", SA_ERR_BAD_STRIDE, 1, e_in_place_types},
    {"q8_0 K spans more bytes than ptrdiff_t", SA_ERR_OVERFLOW, 0, e_q8_span},
};

static void test_table(const sa_kernel_set *ks) {
  static float o[OUT_FLOATS], before[OUT_FLOATS];
  for (size_t i = 0; i < OUT_FLOATS; i++)
    before[i] = (float)i * 0.25f - 3.0f;
  sa_context_options opt;
  sa_context_options_init(&opt);
  opt.isa = ks->name;
  opt.num_threads = 1;
  sa_context *ctx;
  CHECK(sa_context_create(&opt, &ctx) == SA_OK, "context %s", ks->name);
  for (size_t t = 0; t < sizeof table / sizeof table[0]; t++) {
    for (int algo = SA_ALGO_AUTO; algo <= SA_ALGO_FUSED; algo++) {
      sa_attention_desc d = good();
      d.algorithm = (sa_algorithm)algo;
      const float *pq = q, *pk = k, *pv = v;
      float *po = o;
      int null_desc = 0;
      memcpy(o, before, sizeof o);
      memcpy(lse_buf, lse_before, sizeof lse_buf);
      table[t].edit(&d, &pq, &pk, &pv, &po, &null_desc);
      /* a call that succeeds clears the message: a stale one cannot pass */
      sa_attention_desc ok = good();
      size_t ws;
      CHECK(sa_attention_workspace(ctx, &ok, &ws) == SA_OK &&
                sa_last_error()[0] == '\0',
            "a good workspace query leaves no message");
      sa_status st = sa_attention(ctx, null_desc ? NULL : &d, pq, pk, pv, po);
      t_context = table[t].what;
      CHECK(st == table[t].want, "%s: got '%s', want '%s'", ks->name,
            sa_status_str(st), sa_status_str(table[t].want));
      CHECK(memcmp(o, before, sizeof o) == 0, "%s: output was modified",
            ks->name);
      CHECK(memcmp(lse_buf, lse_before, sizeof lse_buf) == 0,
            "%s: lse was modified", ks->name);
      CHECK(sa_last_error()[0] != '\0', "no detail message");
      if (!null_desc)
        CHECK(sa_attention_workspace(ctx, &d, &ws) ==
                  (table[t].about_pointers ? SA_OK : table[t].want),
              "workspace query disagrees");
    }
  }
  /* the same descriptor, made valid, works on the same context */
  sa_attention_desc d = good();
  CHECK(sa_attention(ctx, &d, q, k, v, o) == SA_OK, "valid call after errors");
  sa_context_destroy(ctx);
}

static void test_isa_errors(void) {
  t_context = "isa";
  sa_context_options opt;
  sa_context_options_init(&opt);
  sa_context *ctx = (sa_context *)&opt; /* must stay untouched */
  sa_context *const sentinel = ctx;
  opt.isa = "no-such-isa";
  sa_clear_error();
  CHECK(sa_context_create(&opt, &ctx) == SA_ERR_UNKNOWN_ISA, "unknown isa");
  CHECK(ctx == sentinel, "out written on error");
  CHECK(strstr(sa_last_error(), "scalar") != NULL,
        "message names the runnable sets: '%s'", sa_last_error());
  const sa_kernel_set *out = NULL;
  CHECK(sa_kernel_set_select("no-such-isa", &out) == SA_ERR_UNKNOWN_ISA &&
            out == NULL,
        "select unknown");
  CHECK(sa_kernel_set_select("scalar", NULL) == SA_ERR_NULL_POINTER,
        "select NULL out");
  int unsupported = 0;
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    if (sa_kernel_set_supported(ks))
      continue;
    unsupported++;
    opt.isa = ks->name;
    sa_clear_error();
    CHECK(sa_context_create(&opt, &ctx) == SA_ERR_UNSUPPORTED_ISA &&
              ctx == sentinel,
          "%s is not runnable here", ks->name);
    /* quoted: "avx512" is also part of the feature name "avx512f" */
    char quoted[80];
    snprintf(quoted, sizeof quoted, "'%s'", ks->name);
    CHECK(strstr(sa_last_error(), quoted) != NULL &&
              strstr(sa_last_error(), "lacks") != NULL,
          "message: '%s'", sa_last_error());
  }
  printf("unsupported-set checks: %d set(s) not runnable on this CPU\n",
         unsupported);

  opt.isa = NULL;
  opt.num_threads = -1;
  sa_clear_error();
  CHECK(sa_context_create(&opt, &ctx) == SA_ERR_BAD_ARGUMENT &&
            strstr(sa_last_error(), "num_threads") != NULL,
        "threads -1: '%s'", sa_last_error());
  opt.num_threads = 0;
  opt.pin = (sa_pin_policy)42;
  sa_clear_error();
  CHECK(sa_context_create(&opt, &ctx) == SA_ERR_BAD_ARGUMENT &&
            strstr(sa_last_error(), "pin") != NULL,
        "pin 42: '%s'", sa_last_error());
  opt.pin = SA_PIN_DEFAULT;
  opt.spin_us = -2;
  sa_clear_error();
  CHECK(sa_context_create(&opt, &ctx) == SA_ERR_BAD_ARGUMENT &&
            strstr(sa_last_error(), "spin_us") != NULL,
        "spin_us -2: '%s'", sa_last_error());
  opt.spin_us = 0;
  CHECK(sa_context_create(NULL, NULL) == SA_ERR_NULL_POINTER, "out NULL");
  sa_context_destroy(NULL);
}

static void test_strings(void) {
  t_context = "strings";
  for (int s = SA_OK; s <= SA_ERR_WORKSPACE; s++) {
    const char *a = sa_status_str((sa_status)s);
    CHECK(a && a[0], "status %d has a sentence", s);
    for (int s2 = SA_OK; s2 < s; s2++)
      CHECK(strcmp(a, sa_status_str((sa_status)s2)) != 0, "%d == %d", s, s2);
  }
  CHECK(strcmp(sa_status_str((sa_status)999), "unknown status code") == 0,
        "unknown status");
}

/* NaN in one query row reaches that row's output only. */
static void test_nan_rows(void) {
  t_context = "nan";
  for (int algo = SA_ALGO_THREE_PASS; algo <= SA_ALGO_FUSED; algo++) {
    float qq[OUT_FLOATS], o[OUT_FLOATS];
    memcpy(qq, q, sizeof qq);
    qq[D * 1 + 3] = NAN; /* batch 0, head 0, position 1 */
    sa_attention_desc d = good();
    d.algorithm = (sa_algorithm)algo;
    CHECK(sa_attention(NULL, &d, qq, k, v, o) == SA_OK, "nan call");
    for (size_t r = 0; r < OUT_FLOATS / D; r++)
      for (size_t c = 0; c < D; c++)
        CHECK(r == 1 ? isnan(o[r * D + c]) : isfinite(o[r * D + c]),
              "row %zu col %zu = %g", r, c, o[r * D + c]);
  }
}

/* sa_attention_merge: each bad input a status, the outputs untouched. */
static void test_merge_errors(void) {
  t_context = "merge";
  enum { ROWS = 2 * 2 * L };
  static float a[ROWS * D], b[ROWS * D], la[ROWS], lb[ROWS], out[ROWS * D + 8],
      lout[ROWS], out0[ROWS * D + 8], lout0[ROWS];
  t_fill(a, ROWS * D, -1, 1);
  t_fill(b, ROWS * D, -1, 1);
  t_fill(la, ROWS, -3, 3);
  t_fill(lb, ROWS, -3, 3);
  t_fill(out0, ROWS * D + 8, -9, 9);
  t_fill(lout0, ROWS, -9, 9);
  const float a1 = a[1];
  const float *o_parts[2] = {a, b}, *l_parts[2] = {la, lb},
              *null_part[2] = {a, NULL};
  struct {
    const char *what;
    sa_status want;
    int field; /* which edit */
  } cases[] = {
      {"struct_size 0", SA_ERR_STRUCT_SIZE, 0},
      {"batch 0", SA_ERR_BAD_SHAPE, 1},
      {"parts 0", SA_ERR_BAD_SHAPE, 2},
      {"dim_v > SA_MAX_DIM", SA_ERR_BAD_SHAPE, 3},
      {"a part NULL", SA_ERR_NULL_POINTER, 4},
      {"o overlaps a part without being it", SA_ERR_BAD_STRIDE, 5},
      {"o rows span past ptrdiff_t", SA_ERR_OVERFLOW, 6},
      {"lse is an o part", SA_ERR_BAD_STRIDE, 7},
      {"desc NULL", SA_ERR_NULL_POINTER, 8},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    sa_merge_desc d;
    sa_merge_desc_init(&d);
    d.batch = 2, d.heads = 2, d.len_q = L, d.dim_v = D, d.parts = 2;
    const float *const *op = o_parts, *const *lp = l_parts;
    float *o = out, *lse = lout;
    memcpy(out, out0, sizeof out);
    memcpy(lout, lout0, sizeof lout);
    sa_clear_error();
    switch (cases[c].field) {
    case 0:
      d.struct_size = 0;
      break;
    case 1:
      d.batch = 0;
      break;
    case 2:
      d.parts = 0;
      break;
    case 3:
      d.dim_v = SA_MAX_DIM + 1;
      break;
    case 4:
      op = null_part;
      break;
    case 5:
      o_parts[1] = out + 3;
      break;
    case 6:
      d.o = (sa_strides){0, 0, (size_t)PTRDIFF_MAX / 4};
      break;
    case 7:
      lse = a + 1;
      break;
    default:
      break;
    }
    sa_status st =
        sa_attention_merge(cases[c].field == 8 ? NULL : &d, op, lp, o, lse);
    o_parts[1] = b;
    CHECK(st == cases[c].want, "%s: got '%s', want '%s'", cases[c].what,
          sa_status_str(st), sa_status_str(cases[c].want));
    CHECK(memcmp(out, out0, sizeof out) == 0 &&
              memcmp(lout, lout0, sizeof lout) == 0 && a[1] == a1,
          "%s: an output was modified", cases[c].what);
    CHECK(sa_last_error()[0] != '\0', "%s: no detail message", cases[c].what);
  }
}

/* sa_kv_append: each bad input a status, the caches untouched (the bad
 * part is in the second sequence where it can be: nothing is written for
 * the first either), the new rows untouched. */
static void test_kv_append_errors(void) {
  t_context = "kv_append";
  enum { PAGES = 8, PAGE = 2, T = 2, CACHE = PAGES * PAGE * D };
  static float kc[CACHE], vc[CACHE], kc0[CACHE], vc0[CACHE], kn[2 * T * D],
      vn[2 * T * D], kn0[2 * T * D];
  t_fill(kc0, CACHE, -5, 5);
  t_fill(vc0, CACHE, -5, 5);
  t_fill(kn, 2 * T * D, -1, 1);
  t_fill(vn, 2 * T * D, -1, 1);
  memcpy(kn0, kn, sizeof kn);
  int64_t start_ok[2] = {0, 1}, start_neg[2] = {0, -1},
          start_past[2] = {0, 2 * PAGE - 1}, start_huge[2] = {0, INT64_MAX};
  int32_t table_ok2[4] = {3, 6, 1, 4}, table_out2[4] = {3, 6, 8, 4},
          table_neg2[4] = {3, 6, -2, 4}, table_far[4] = {3, 6, 1, 9};
  struct {
    const char *what;
    sa_status want;
    int field;
  } cases[] = {
      {"desc NULL", SA_ERR_NULL_POINTER, 0},
      {"k_cache NULL", SA_ERR_NULL_POINTER, 1},
      {"v_cache NULL", SA_ERR_NULL_POINTER, 2},
      {"k_new NULL", SA_ERR_NULL_POINTER, 3},
      {"v_new NULL", SA_ERR_NULL_POINTER, 4},
      {"start NULL", SA_ERR_NULL_POINTER, 5},
      {"block_table NULL", SA_ERR_NULL_POINTER, 6},
      {"struct_size 0", SA_ERR_STRUCT_SIZE, 7},
      {"batch 0", SA_ERR_BAD_SHAPE, 8},
      {"heads_kv 0", SA_ERR_BAD_SHAPE, 9},
      {"dim_qk 0", SA_ERR_BAD_SHAPE, 10},
      {"dim_v 0", SA_ERR_BAD_SHAPE, 11},
      {"tokens 0", SA_ERR_BAD_SHAPE, 12},
      {"page_size 0", SA_ERR_BAD_SHAPE, 13},
      {"num_pages 0", SA_ERR_BAD_SHAPE, 14},
      {"a start negative", SA_ERR_BAD_SHAPE, 15},
      {"a start past SA_MAX_DIM", SA_ERR_BAD_SHAPE, 16},
      {"a page = num_pages", SA_ERR_BAD_ARGUMENT, 17},
      {"a page negative", SA_ERR_BAD_ARGUMENT, 18},
      {"the table too short for the new tokens", SA_ERR_BAD_SHAPE, 19},
      {"cache strides span past SIZE_MAX", SA_ERR_OVERFLOW, 20},
      {"new rows' strides span past ptrdiff_t", SA_ERR_OVERFLOW, 21},
      {"q8_0 cache with dim 8", SA_ERR_BAD_SHAPE, 22},
      {"f16 cache, bf16 new rows", SA_ERR_BAD_ARGUMENT, 23},
      {"cache type 7", SA_ERR_BAD_ARGUMENT, 24},
      {"new rows to round overlap the cache", SA_ERR_BAD_STRIDE, 25},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    sa_kv_append_desc d;
    sa_kv_append_desc_init(&d);
    d.batch = 2, d.heads_kv = 1, d.dim_qk = D, d.dim_v = D, d.tokens = T;
    d.start = start_ok, d.block_table = table_ok2;
    d.block_table_stride = 2, d.page_size = PAGE, d.num_pages = PAGES;
    float *pk = kc, *pv = vc;
    const float *nk = kn, *nv = vn;
    memcpy(kc, kc0, sizeof kc);
    memcpy(vc, vc0, sizeof vc);
    sa_clear_error();
    switch (cases[c].field) {
    case 1:
      pk = NULL;
      break;
    case 2:
      pv = NULL;
      break;
    case 3:
      nk = NULL;
      break;
    case 4:
      nv = NULL;
      break;
    case 5:
      d.start = NULL;
      break;
    case 6:
      d.block_table = NULL;
      break;
    case 7:
      d.struct_size = 0;
      break;
    case 8:
      d.batch = 0;
      break;
    case 9:
      d.heads_kv = 0;
      break;
    case 10:
      d.dim_qk = 0;
      break;
    case 11:
      d.dim_v = 0;
      break;
    case 12:
      d.tokens = 0;
      break;
    case 13:
      d.page_size = 0;
      break;
    case 14:
      d.num_pages = 0;
      break;
    case 15:
      d.start = start_neg;
      break;
    case 16:
      d.start = start_huge;
      break;
    case 17:
      d.block_table = table_out2;
      break;
    case 18:
      d.block_table = table_neg2;
      break;
    case 19: /* tokens 3 and 4 of sequence 1 need its page 2: none */
      d.start = start_past;
      d.block_table = table_far;
      break;
    case 20:
      d.k = (sa_strides){SIZE_MAX / 4, 1, 1};
      break;
    case 21:
      d.v_new = (sa_strides){0, 0, (size_t)PTRDIFF_MAX / 2};
      break;
    case 22:
      d.k_type = SA_Q8_0;
      break;
    case 23:
      d.v_type = SA_F16;
      d.v_new_type = SA_BF16;
      break;
    case 24:
      d.k_type = d.k_new_type = (sa_dtype)7;
      break;
    case 25: /* f32 rows to round into an f16 cache, lying inside it */
      d.k_type = SA_F16;
      nk = kc + 4;
      break;
    default:
      break;
    }
    sa_status st =
        sa_kv_append(cases[c].field == 0 ? NULL : &d, pk, pv, nk, nv);
    CHECK(st == cases[c].want, "%s: got '%s', want '%s'", cases[c].what,
          sa_status_str(st), sa_status_str(cases[c].want));
    CHECK(memcmp(kc, kc0, sizeof kc) == 0 && memcmp(vc, vc0, sizeof vc) == 0,
          "%s: a cache was modified", cases[c].what);
    CHECK(memcmp(kn, kn0, sizeof kn) == 0, "%s: new rows modified",
          cases[c].what);
    CHECK(sa_last_error()[0] != '\0', "%s: no detail message", cases[c].what);
  }
  /* the same call made valid writes: sequence 1's two tokens at keys 1
   * and 2, slot 1 of page 1 (table_ok2[2]) and slot 0 of page 4 */
  sa_kv_append_desc d;
  sa_kv_append_desc_init(&d);
  d.batch = 2, d.heads_kv = 1, d.dim_qk = D, d.dim_v = D, d.tokens = T;
  d.start = start_ok, d.block_table = table_ok2;
  d.block_table_stride = 2, d.page_size = PAGE, d.num_pages = PAGES;
  memcpy(kc, kc0, sizeof kc);
  memcpy(vc, vc0, sizeof vc);
  CHECK(sa_kv_append(&d, kc, vc, kn, vn) == SA_OK, "valid append: %s",
        sa_last_error());
  CHECK(memcmp(kc + (1 * PAGE + 1) * D, kn + T * D, D * sizeof(float)) == 0 &&
            memcmp(vc + (4 * PAGE + 0) * D, vn + (T + 1) * D,
                   D * sizeof(float)) == 0 &&
            memcmp(kc + (3 * PAGE) * D, kn, 2 * D * sizeof(float)) == 0,
        "valid append: rows not where the table puts them");
}

int main(void) {
  t_seed(4);
  t_fill(lse_before, 2 * 2 * L, -7, 7);
  for (size_t i = 0; i < sizeof mask_b; i++)
    mask_b[i] = 1;
  t_fill(q, OUT_FLOATS, -1, 1);
  t_fill(k, OUT_FLOATS, -1, 1);
  t_fill(v, OUT_FLOATS, -1, 1);
  const sa_kernel_set *sets[32];
  int nsets = t_runnable_sets(sets, 32);
  for (int i = 0; i < nsets; i++)
    test_table(sets[i]);
  test_isa_errors();
  test_strings();
  test_nan_rows();
  test_merge_errors();
  test_kv_append_errors();
  return t_finish("test_errors");
}
