/*
 * The NEON kernels' blocking, for dispatch/tiles.c to report to the kernel
 * tests, which sweep shapes around it. Every size here is the 4-lane
 * vector or a small multiple of it, so the kernels spell them as 4s and
 * 16s where they walk (SA_NEON_SCORE_WALK in common.h, wsum.c, wsum_t.c):
 * change one there, change it here.
 */
#ifndef SA_NEON_TILES_H
#define SA_NEON_TILES_H

enum {
  SA_NEON_LANES = 4, /* floats per q register */
  SA_NEON_MR = 4,    /* score: rows x keys of dot products a tile */
  SA_NEON_NR = 4,
  SA_NEON_NARROW_STEP = 8, /* score_t and score_bf16: d per step, widened */
  SA_NEON_WSUM_MR = 4,     /* wsum and wsum_t: rows x columns a tile */
  SA_NEON_WSUM_COLS = 16,
  SA_NEON_DECODE_CHUNK = 32, /* decode: keys a chunk (16 KiB of f32 K at
                                d = 128, and as much V: both in a 32 KiB
                                L1D) */
};

#endif /* SA_NEON_TILES_H */
