/*
 * The AVX-512 kernels' blocking, stated once: score.c, score_t.c,
 * score_bf16.c, panel.h, wsum.c and wsum_t.c take their tile sizes and path
 * cutoffs from here, and dispatch/tiles.c reports them to the kernel tests,
 * which sweep shapes around them (tails and path switches are where the
 * bugs are), so a retuned tile moves the tests with it. Plain C:
 * dispatch/ includes it without AVX-512 flags.
 */
#ifndef SA_AVX512_TILES_H
#define SA_AVX512_TILES_H

enum {
  SA_AVX512_LANES = 16,  /* floats per zmm vector */
  SA_AVX512_MR = 8,      /* score's GEMM tile: rows x keys of the Kᵀ panel */
  SA_AVX512_NR = 32,     /*   (16 accumulators of 32 zmm) */
  SA_AVX512_KC = 256,    /* d per panel chunk (32 KiB of stack) */
  SA_AVX512_DOTS_M = 16, /* score and score_t: dot products for m <= this
                            (and wsum, wsum_t stream in sub-blocks), */
  SA_AVX512_DM = 4,      /*   DM rows x DN keys a block */
  SA_AVX512_DN = 4,
  /* score's dots: keys as DN streams of at least STREAM_KEYS, on
   * STREAM_BYTES of K or more */
  SA_AVX512_STREAM_KEYS = 16,
  SA_AVX512_STREAM_BYTES = 1 << 20,
  SA_AVX512_BF16_MR = 8, /* score_bf16 (vdpbf16ps): its GEMM tile, */
  SA_AVX512_BF16_NR = 32,
  SA_AVX512_BF16_KC = 512,   /*   values of d per chunk (pairs: 256 rows), */
  SA_AVX512_BF16_DOTS_M = 8, /*   dot products for m <= this */
  SA_AVX512_WSUM_MR = 8,     /* wsum and wsum_t: rows x vectors of columns */
  SA_AVX512_WSUM_NV = 2,
  SA_AVX512_WSUM_CG = 128, /* columns a group, each group's keys in turn */
  /* decode-shaped wsum where the L1D is under 48 KiB: row pairs of 8
   * vectors (128 columns, as wide as the registers hold) through sub-blocks
   * of KL keys; elsewhere as wsum_t below */
  SA_AVX512_WSUM_M2 = 2,
  SA_AVX512_WSUM_NV2 = 8,
  SA_AVX512_WSUM_KL = 256,
  /* decode-shaped wsum_t: up to M2 rows M2 x NV2, up to M4 rows M4 x NV4
   * (64 columns), through sub-blocks of KB keys (a multiple for some
   * types) that pass every column block before the next */
  SA_AVX512_WSUM_M4 = 4,
  SA_AVX512_WSUM_NV4 = 4,
  SA_AVX512_WSUM_KB = 16,
  SA_AVX512_WSUM_LEAD_M = 32,   /* up to this many rows (MQA groups): the */
  SA_AVX512_WSUM_LEAD = 2,      /*   first LEAD rows stream V, the rest reuse */
  SA_AVX512_DECODE_CHUNK = 128, /* decode: keys a chunk while K or V is f32
                                   (docs/DESIGN.md, "The decode kernel") */
  SA_AVX512_DECODE_CHUNK_NARROW = 128, /* and while both are narrow */
};

#endif /* SA_AVX512_TILES_H */
