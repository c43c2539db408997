/*
 * The AVX2 kernels' blocking, stated once: score.c, score_t.c, panel.h,
 * wsum.c, wsum_t.c and decode.c take their tile sizes and path cutoffs from
 * here, and dispatch/tiles.c reports them to the kernel tests, which sweep
 * shapes around them (tails and path switches are where the bugs are), so a
 * retuned tile moves the tests with it. Plain C: dispatch/ includes it
 * without AVX flags.
 */
#ifndef SA_AVX2_TILES_H
#define SA_AVX2_TILES_H

enum {
  SA_AVX2_LANES = 8,  /* floats per ymm vector */
  SA_AVX2_MR = 6,     /* score's GEMM tile: rows x keys of the Kᵀ panel */
  SA_AVX2_NR = 16,    /*   (12 accumulators of 16 ymm) */
  SA_AVX2_KC = 256,   /* d per panel chunk (16 KiB of stack) */
  SA_AVX2_DOTS_M = 8, /* score and score_t: dot products for m <= this, */
  SA_AVX2_DM = 4,     /*   DM rows x DN keys a block, */
  SA_AVX2_DN = 3,
  SA_AVX2_DOTS_M_WIDE = 2, /*   DN_WIDE keys for m <= this */
  SA_AVX2_DN_WIDE = 4,
  /* score's dots: keys as DN_WIDE streams of at least STREAM_KEYS, for
   * m <= DOTS_M_WIDE, and for m <= DOTS_M on STREAM_BYTES of K or more */
  SA_AVX2_STREAM_KEYS = 16,
  SA_AVX2_STREAM_BYTES = 1 << 20,
  SA_AVX2_WSUM_MR = 6, /* wsum and wsum_t: rows x vectors of columns */
  SA_AVX2_WSUM_NV = 2,
  SA_AVX2_WSUM_KB = 32,      /*   keys a sub-block, through every column */
  SA_AVX2_WSUM_CG = 128,     /*   of a group of CG columns before the next */
  SA_AVX2_WSUM_STREAM_M = 4, /* wsum and wsum_t for m <= this: V as 4 */
  SA_AVX2_WSUM_STREAM_KEYS = 16,  /* streams of at least this many keys, */
  SA_AVX2_WSUM_STREAM_COLS = 512, /* sums in L1 for this many columns */
  SA_AVX2_WSUM_DEQ_M = 12,        /* q8_0 wsum_t: V widened once a sub-block of
                                     keys for all rows when m > this */
  SA_AVX2_DECODE_CHUNK = 256,     /* decode: keys a chunk (128 KiB of f32 K at
                                     d = 128, and as much V; sub-blocks of
                                     WSUM_KB keys f32); its value sums */
  SA_AVX2_DECODE_NV1 = 8, /*   take 1 row x NV1 vectors a pass for m = 1, */
  SA_AVX2_DECODE_NV2 = 4, /*   2 x NV2 for m = 2, m x NV4 for m <= 4, */
  SA_AVX2_DECODE_NV4 = 2,
  SA_AVX2_DECODE_RB = 8, /*   else blocks of RB rows x NV (each NV a power */
  SA_AVX2_DECODE_NV = 1, /*   of two: a q8_0 block starts a 4th vector) */
};

#endif /* SA_AVX2_TILES_H */
