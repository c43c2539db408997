/*
 * Internal: where each kernel set's blocking changes, for the kernel tests.
 * Tails and path switches are where kernel bugs live, so the sweeps take
 * every dimension at and around these sizes (XNNPACK's testers: one less,
 * equal, one more, twice plus one for a tile; one either side of a cutoff)
 * instead of every size up to some bound. Not part of the ABI: the public
 * sa_kernel_set stays what an engine needs.
 */
#ifndef SA_DISPATCH_TILES_H
#define SA_DISPATCH_TILES_H

#include <stddef.h>

#include "simdattn.h"

/* Each list holds up to its length of sizes; 0 ends it early. */
typedef struct sa_tiles {
  size_t m[6];     /* query rows per register tile or block */
  size_t m_cut[4]; /* score or wsum take another path from m = cut + 1 on */
  size_t n[6];     /* keys per tile of score, per sub-block of wsum */
  size_t n_cut[2]; /* other cutoffs of n: sub-blocks long enough that one
                      past is the test, where score's or wsum's keys go as
                      streams */
  size_t k_bytes;  /* score takes another path from n d floats this many
                      bytes on (0: none) */
  size_t row[4];   /* values per step of softmax's and score_mod's rows */
  size_t d[4];     /* values of d per step of score's loops */
  size_t kc[2];    /* values of d per packed-panel chunk */
  size_t dv[6];    /* wsum's columns per vector, register tiles, groups */
  size_t chunk[2]; /* decode: keys per chunk */
} sa_tiles;

/* The blocking of the ISA ks runs on; the scalar set's is all ones. */
const sa_tiles *sa_kernel_set_tiles(const sa_kernel_set *ks);

#endif /* SA_DISPATCH_TILES_H */
