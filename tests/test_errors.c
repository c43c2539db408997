/*
 * Bad input: every entry of the table must return its documented status and
 * leave every byte of the output buffer as it was, on every kernel set.
 * Also: status strings, the detail message, bad context options, and NaN
 * confined to the rows it belongs to. (Bad environment values: test_env.)
 */
#include <stdint.h>

#include "testing.h"

#define L 4
#define D 8
#define OUT_FLOATS (2 * 2 * L * D)

static float q[OUT_FLOATS], k[OUT_FLOATS], v[OUT_FLOATS];

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
      table[t].edit(&d, &pq, &pk, &pv, &po, &null_desc);
      sa_status st = sa_attention(ctx, null_desc ? NULL : &d, pq, pk, pv, po);
      t_context = table[t].what;
      CHECK(st == table[t].want, "%s: got '%s', want '%s'", ks->name,
            sa_status_str(st), sa_status_str(table[t].want));
      CHECK(memcmp(o, before, sizeof o) == 0, "%s: output was modified",
            ks->name);
      CHECK(sa_last_error()[0] != '\0', "no detail message");
      size_t ws;
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
    CHECK(sa_context_create(&opt, &ctx) == SA_ERR_UNSUPPORTED_ISA &&
              ctx == sentinel,
          "%s is not runnable here", ks->name);
    CHECK(strstr(sa_last_error(), "lacks") != NULL, "message: '%s'",
          sa_last_error());
  }
  printf("unsupported-set checks: %d set(s) not runnable on this CPU\n",
         unsupported);

  opt.isa = NULL;
  opt.num_threads = -1;
  CHECK(sa_context_create(&opt, &ctx) == SA_ERR_BAD_ARGUMENT, "threads -1");
  opt.num_threads = 0;
  opt.pin = (sa_pin_policy)42;
  CHECK(sa_context_create(&opt, &ctx) == SA_ERR_BAD_ARGUMENT, "pin 42");
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

int main(void) {
  t_seed(4);
  t_fill(q, OUT_FLOATS, -1, 1);
  t_fill(k, OUT_FLOATS, -1, 1);
  t_fill(v, OUT_FLOATS, -1, 1);
  for (size_t i = 0; i < sa_kernel_set_count(); i++)
    if (sa_kernel_set_supported(sa_kernel_set_at(i)))
      test_table(sa_kernel_set_at(i));
  test_isa_errors();
  test_strings();
  test_nan_rows();
  return t_finish("test_errors");
}
