/*
 * Causal attention with 1, 2, 3 and 8 threads is bit-identical (memcmp),
 * for every kernel set this CPU runs, both drivers, MHA and GQA, prefill and
 * decode: tile boundaries never depend on the thread count, and each worker
 * loads the caller's floating-point control state, so a set whose kernels
 * computed anything from where or on which worker they run would show here.
 * Each set's one-thread output is also held to the double-precision
 * reference of testing.h, so identical garbage cannot pass. Contiguous GQA
 * decode runs both ways the machine could take it (decode_rows, the three
 * kernels).
 */
#include "attention/internal.h"
#include "tests/testing.h"

static const int thread_counts[] = {1, 2, 3, 8};
#define NCOUNTS (sizeof thread_counts / sizeof thread_counts[0])

static const sa_kernel_set *sets[32];
static int nsets;
/* The contexts' block sizes (0: the library's own, which depend on the
 * shape and the machine, never on the thread count). */
static size_t block_q = 32, block_kv = 128;

/* One set's output with 1 thread into o[0], then each other count's, which
 * must be the same bits. */
static void run_counts(const sa_kernel_set *ks, const sa_attention_desc *d,
                       const float *q, const float *k, const float *v,
                       float **o, size_t n) {
  for (size_t c = 0; c < NCOUNTS; c++) {
    for (size_t i = 0; i < n; i++)
      o[c][i] = NAN;
    /* Small tiles: many tasks, so 8 workers all get some, and key blocks
     * that end mid-way (200 = 128 + 72; query blocks 200 = 6*32 + 8). */
    sa_context *ctx = t_context_new(ks->name, thread_counts[c], SA_PIN_DEFAULT,
                                    block_q, block_kv);
    if (!ctx)
      continue;
    CHECK(sa_context_num_threads(ctx) == thread_counts[c],
          "asked %d threads, got %d", thread_counts[c],
          sa_context_num_threads(ctx));
    sa_status st = sa_attention(ctx, d, q, k, v, o[c]);
    CHECK(st == SA_OK, "%d threads: %s", thread_counts[c], sa_last_error());
    if (c > 0)
      CHECK(memcmp(o[c], o[0], n * sizeof(float)) == 0,
            "%d threads differ from 1 thread", thread_counts[c]);
    sa_context_destroy(ctx);
  }
}

static void determinism_case(const char *what, size_t hq, size_t hkv, size_t lq,
                             size_t lkv, sa_mask mask, sa_algorithm algo) {
  sa_attention_desc d;
  sa_attention_desc_init(&d);
  d.batch = 2;
  d.heads_q = hq;
  d.heads_kv = hkv;
  d.len_q = lq;
  d.len_kv = lkv;
  d.dim_qk = d.dim_v = 64;
  d.mask = mask;
  d.algorithm = algo;
  size_t nq = d.batch * hq * lq * 64, nkv = d.batch * hkv * lkv * 64;
  float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k);
  float *v = malloc(nkv * sizeof *v), *o[NCOUNTS];
  t_fill(q, nq, -1, 1);
  t_fill(k, nkv, -1, 1);
  t_fill(v, nkv, -1, 1);
  for (size_t c = 0; c < NCOUNTS; c++)
    o[c] = malloc(nq * sizeof(float));

  /* The reference, once for every set: tolerance per element derived in
   * testing.h (dot product of length d in fp32, exp, two fp32 sums over
   * the visible keys). Packed, so element x of O is element x here. */
  sa_attention_desc rd = d;
  rd.q = rd.o = t_packed(hq, lq, 64);
  rd.k = rd.v = t_packed(hkv, lkv, 64);
  double *p = malloc(lkv * sizeof *p), *ref = malloc(nq * sizeof *ref),
         *tol = malloc(nq * sizeof *tol);
  size_t at = 0;
  for (size_t b = 0; b < d.batch; b++)
    for (size_t h = 0; h < hq; h++)
      for (size_t i = 0; i < lq; i++, at += 64)
        t_reference_row(&rd, q, k, v, b, h, i, 1.0 / sqrt(64.0), p, ref + at,
                        tol + at);

  for (int s = 0; s < nsets; s++) {
    char name[96];
    snprintf(name, sizeof name, "%s, %s", sets[s]->name, what);
    t_context = name;
    run_counts(sets[s], &d, q, k, v, o, nq);
    double worst = 0;
    int bad = 0;
    for (size_t x = 0; x < nq; x++) {
      double err = fabs(o[0][x] - ref[x]);
      worst = err / tol[x] > worst ? err / tol[x] : worst;
      if (!(err <= tol[x]) && bad++ < 3)
        CHECK(0, "element %zu (row %zu col %zu): %g vs %g (tol %g)", x, x / 64,
              x % 64, o[0][x], ref[x], tol[x]);
    }
    CHECK(bad == 0, "%d elements outside the reference tolerance", bad);
    printf("%-44s worst error %.3f of tolerance\n", name, worst);
  }
  free(p), free(ref), free(tol);
  for (size_t c = 0; c < NCOUNTS; c++)
    free(o[c]);
  free(q), free(k), free(v);
}

int main(void) {
  /* a deadlock fails the test instead of hanging CI; every set of an
   * emulated CPU (qemu, 8 threads on 2 cores) takes minutes, not seconds */
  alarm(1200);
  t_seed(7);
  nsets = t_runnable_sets(sets, 32);
  const sa_mask tl = SA_MASK_CAUSAL_TOP_LEFT;
  determinism_case("three-pass MHA L=200", 4, 4, 200, 200, tl,
                   SA_ALGO_THREE_PASS);
  determinism_case("fused MHA L=200", 4, 4, 200, 200, tl, SA_ALGO_FUSED);
  determinism_case("three-pass GQA 8/2 L=200", 8, 2, 200, 200, tl,
                   SA_ALGO_THREE_PASS);
  determinism_case("fused GQA 8/2 L=200", 8, 2, 200, 200, tl, SA_ALGO_FUSED);
  /* Decode: tiles are groups of query heads sharing a KV head. */
  determinism_case("fused GQA decode", 16, 2, 1, 200,
                   SA_MASK_CAUSAL_BOTTOM_RIGHT, SA_ALGO_FUSED);
  /* The library's decode blocks: 4 rows a tile take 4096 keys, and 4 tiles
   * split 9000 keys into parts of whole blocks (two and a tail). */
  block_q = block_kv = 0;
  determinism_case("fused GQA decode, default blocks", 8, 2, 1, 9000,
                   SA_MASK_CAUSAL_BOTTOM_RIGHT, SA_ALGO_FUSED);
  /* The merge takes 8 rows a task: a 12-row MQA tile (8 + 4) and one
   * query block of 20 rows (8 + 8 + 4), each split along its keys. */
  determinism_case("fused MQA decode 12/1, default blocks", 12, 1, 1, 9000,
                   SA_MASK_NONE, SA_ALGO_FUSED);
  determinism_case("fused split Lq=20 Lk=9000, default blocks", 1, 1, 20, 9000,
                   SA_MASK_CAUSAL_BOTTOM_RIGHT, SA_ALGO_FUSED);
  /* Contiguous GQA decode takes decode_rows or the three kernels as the
   * machine's L1D and L2 and the group's size say (plan.c): both ways
   * here, whichever this one takes. */
  for (int way = 1; way >= -1; way -= 2) {
    sa_contiguous_rows_policy = way;
    determinism_case(way > 0 ? "fused GQA decode, decode_rows"
                             : "fused GQA decode, three kernels",
                     8, 2, 1, 9000, SA_MASK_NONE, SA_ALGO_FUSED);
  }
  sa_contiguous_rows_policy = 0;
  return t_finish("test_determinism");
}
