/*
 * Each ISA's blocking, from the numbers its kernels use (kernels/<isa>/
 * tiles.h), by the ISA name a registry row carries: every set of one ISA
 * shares its kernels' tiles, so a set added to the registry brings its
 * shapes into the tests with no other edit.
 */
#include <string.h>

#include "dispatch/tiles.h"
#include "kernels/dtype.h"
#include "kernels/scalar/tiles.h"

#if SA_HAVE_AVX2
#include "kernels/avx2/tiles.h"
#endif
#if SA_HAVE_AVX512
#include "kernels/avx512/tiles.h"
#endif
#if SA_HAVE_NEON
#include "kernels/neon/tiles.h"
#endif

/* plain loops, one element at a time; decode composes them in chunks */
static const sa_tiles scalar = {.m = {1},
                                .n = {1},
                                .row = {1},
                                .d = {1},
                                .dv = {1},
                                .chunk = {SA_SCALAR_DECODE_CHUNK}};

#if SA_HAVE_AVX2
static const sa_tiles avx2 = {
    .m = {SA_AVX2_MR, SA_AVX2_DM, SA_AVX2_WSUM_MR},
    .m_cut = {SA_AVX2_DOTS_M_WIDE, SA_AVX2_DOTS_M, SA_AVX2_WSUM_DEQ_M,
              SA_AVX2_WSUM_STREAM_M},
    /* wsum_t's sub-blocks are 2 KB (f16, bf16) and 4 KB (q8_0) keys */
    .n = {SA_AVX2_NR, SA_AVX2_DN, SA_AVX2_DN_WIDE, SA_AVX2_WSUM_KB,
          2 * SA_AVX2_WSUM_KB, 4 * SA_AVX2_WSUM_KB},
    /* score's dots and wsum's sums as key streams from these many keys on */
    .n_cut = {SA_AVX2_DN_WIDE * SA_AVX2_STREAM_KEYS,
              4 * SA_AVX2_WSUM_STREAM_KEYS},
    .k_bytes = SA_AVX2_STREAM_BYTES,
    /* softmax_impl.h's row max takes 4 vectors a step, exp and sum 2 */
    .row = {SA_AVX2_LANES, 2 * SA_AVX2_LANES, 4 * SA_AVX2_LANES},
    /* score_t's dot products take a q8_0 block of d a step */
    .d = {SA_AVX2_LANES, SA_QK8_0},
    .kc = {SA_AVX2_KC},
    .dv = {SA_AVX2_LANES, (SA_AVX2_WSUM_NV * SA_AVX2_LANES), SA_AVX2_WSUM_CG,
           SA_AVX2_WSUM_STREAM_COLS},
    /* decode: its chunk, and its value sums' f32 sub-block */
    .chunk = {SA_AVX2_DECODE_CHUNK, SA_AVX2_WSUM_KB},
};
#endif

#if SA_HAVE_AVX512
static const sa_tiles avx512 = {
    .m = {SA_AVX512_MR, SA_AVX512_DM, SA_AVX512_WSUM_MR, SA_AVX512_BF16_MR,
          SA_AVX512_WSUM_M4, SA_AVX512_WSUM_M2},
    .m_cut = {SA_AVX512_DOTS_M, SA_AVX512_BF16_DOTS_M, SA_AVX512_WSUM_LEAD_M},
    /* wsum_t's sub-blocks are 4 KB (f16, bf16) and 8 KB (q8_0) keys, and
     * for the 4-row tile KB and NR (16 and 32 keys) */
    .n = {SA_AVX512_NR, SA_AVX512_DN, SA_AVX512_BF16_NR, SA_AVX512_WSUM_KB,
          4 * SA_AVX512_WSUM_KB, 8 * SA_AVX512_WSUM_KB},
    /* f32 wsum's decode-shaped sub-block; score's dots as key streams
     * from these many keys on (and k_bytes of K) */
    .n_cut = {SA_AVX512_WSUM_KL, (SA_AVX512_DN * SA_AVX512_STREAM_KEYS)},
    .k_bytes = SA_AVX512_STREAM_BYTES,
    /* softmax_impl.h's row max takes 4 vectors a step, exp and sum 2 */
    .row = {SA_AVX512_LANES, 2 * SA_AVX512_LANES, 4 * SA_AVX512_LANES},
    /* score_t's and score_bf16's dot products take 32 values of d a step */
    .d = {SA_AVX512_LANES, SA_QK8_0},
    .kc = {SA_AVX512_KC, SA_AVX512_BF16_KC},
    .dv = {SA_AVX512_LANES, (SA_AVX512_WSUM_NV * SA_AVX512_LANES),
           (SA_AVX512_WSUM_NV4 * SA_AVX512_LANES),
           (SA_AVX512_WSUM_NV2 * SA_AVX512_LANES), SA_AVX512_WSUM_CG},
    .chunk = {SA_AVX512_DECODE_CHUNK, SA_AVX512_DECODE_CHUNK_NARROW},
};
#endif

#if SA_HAVE_NEON
static const sa_tiles neon = {
    .m = {SA_NEON_MR, SA_NEON_WSUM_MR},
    .n = {SA_NEON_NR}, /* wsum too takes 4 keys a step */
    /* softmax_rows.h takes 4 vectors a step, then single ones */
    .row = {SA_NEON_LANES, 4 * SA_NEON_LANES},
    .d = {SA_NEON_LANES, SA_NEON_NARROW_STEP},
    .dv = {SA_NEON_LANES, SA_NEON_WSUM_COLS},
    .chunk = {SA_NEON_DECODE_CHUNK},
};
#endif

const sa_tiles *sa_kernel_set_tiles(const sa_kernel_set *ks) {
#if SA_HAVE_AVX2
  if (strcmp(ks->isa, "avx2") == 0)
    return &avx2;
#endif
#if SA_HAVE_AVX512
  if (strcmp(ks->isa, "avx512") == 0)
    return &avx512;
#endif
#if SA_HAVE_NEON
  if (strcmp(ks->isa, "neon") == 0)
    return &neon;
#endif
  return &scalar;
}
