/*
 * An outside engine using the installed simdattn: the whole attention call,
 * then the kernel table used directly for one decode step of its own.
 *
 *   cmake -S examples -B build-example -DCMAKE_PREFIX_PATH=<prefix>
 *   cmake --build build-example && ./build-example/engine
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <simdattn.h>

#define HEADS 4
#define LEN 37
#define DIM 64

int main(void) {
  char cpu[256];
  sa_cpu_describe(cpu, sizeof cpu);
  printf("cpu: %s\n", cpu);

  /* 1. Whole attention on [B, L, H, D] tensors, no copy: strides say it. */
  size_t n = (size_t)LEN * HEADS * DIM;
  float *q = malloc(n * sizeof *q), *k = malloc(n * sizeof *k),
        *v = malloc(n * sizeof *v), *o = malloc(n * sizeof *o);
  for (size_t i = 0; i < n; i++) {
    q[i] = sinf((float)i * 0.37f);
    k[i] = cosf((float)i * 0.11f);
    v[i] = (float)(i % 7) - 3.0f;
  }
  sa_context *ctx;
  sa_status st = sa_context_create(NULL, &ctx);
  if (st != SA_OK) {
    fprintf(stderr, "simdattn: %s (%s)\n", sa_status_str(st), sa_last_error());
    return 1;
  }
  sa_strides blhd = {LEN * HEADS * DIM, DIM, HEADS * DIM};
  sa_attention_desc desc = {.struct_size = sizeof desc,
                            .batch = 1,
                            .heads_q = HEADS,
                            .heads_kv = HEADS,
                            .len_q = LEN,
                            .len_kv = LEN,
                            .dim_qk = DIM,
                            .dim_v = DIM,
                            .scale = 0.0f,
                            .mask = SA_MASK_CAUSAL_TOP_LEFT,
                            .algorithm = SA_ALGO_AUTO,
                            .q = blhd,
                            .k = blhd,
                            .v = blhd,
                            .o = blhd};
  st = sa_attention(ctx, &desc, q, k, v, o);
  printf("sa_attention on %s, %d thread(s): %s, o[0..2] = %.4f %.4f %.4f\n",
         sa_context_kernel_set(ctx)->name, sa_context_num_threads(ctx),
         sa_status_str(st), o[0], o[1], o[2]);

  /* 2. The dispatch layer alone: the engine keeps its own loop and calls
   * the chosen set's kernels on a tile (here one query row, head 0). */
  const sa_kernel_set *ks = sa_context_kernel_set(ctx);
  float s[LEN], row[DIM];
  ks->score(1, LEN, DIM, q, DIM, k, HEADS * DIM, 1.0f / sqrtf(DIM), s, LEN);
  ks->softmax(1, LEN, s, LEN, NULL);
  ks->wsum(1, LEN, DIM, s, LEN, v, HEADS * DIM, NULL, row, DIM);
  printf("kernel table '%s' (%s): row[0] = %.4f\n", ks->name, ks->about,
         row[0]);

  sa_context_destroy(ctx);
  free(q), free(k), free(v), free(o);
  return st == SA_OK ? 0 : 1;
}
