/*
 * The micro-kernel contract every kernel set implements. The contract itself
 * (what score, softmax, softmax_online and wsum compute, and what they may
 * touch) is written once, in include/simdattn.h above sa_score_fn; this header
 * declares every implementation so dispatch/registry.c can list them.
 *
 * Naming: sa_<op>__<isa>[_<variant>]. Each kernels/<isa>/ directory is the only
 * code compiled with that ISA's flags; a set is listed in the registry only
 * when CMake built its directory (SA_HAVE_<ISA>).
 */
#ifndef SA_KERNELS_H
#define SA_KERNELS_H

#include "simdattn.h"

#define SA_DECLARE_SCORE(fn)                                                   \
  void fn(size_t m, size_t n, size_t d, const float *q, size_t ldq,            \
          const float *k, size_t ldk, float scale, float *s, size_t lds)
#define SA_DECLARE_SOFTMAX(fn)                                                 \
  void fn(size_t m, size_t n, float *s, size_t lds, const size_t *len)
#define SA_DECLARE_SOFTMAX_ONLINE(fn)                                          \
  void fn(size_t m, size_t n, float *s, size_t lds, const size_t *len,         \
          float *mx, float *l, float *alpha)
#define SA_DECLARE_WSUM(fn)                                                    \
  void fn(size_t m, size_t n, size_t dv, const float *p, size_t ldp,           \
          const float *v, size_t ldv, const float *beta, float *o, size_t ldo)
#define SA_DECLARE_SCORE_UPTO(fn)                                              \
  void fn(size_t m, size_t n, size_t d, const float *q, size_t ldq,            \
          const float *k, size_t ldk, float scale, float *s, size_t lds,       \
          const size_t *ends)
#define SA_DECLARE_WSUM_UPTO(fn)                                               \
  void fn(size_t m, size_t n, size_t dv, const float *p, size_t ldp,           \
          const float *v, size_t ldv, const float *beta, float *o, size_t ldo, \
          const size_t *ends)
#define SA_DECLARE_SCORE_MOD(fn)                                               \
  void fn(size_t m, size_t n, float *s, size_t lds, const sa_score_mods *mods)
#define SA_DECLARE_SCORE_T(fn)                                                 \
  void fn(size_t m, size_t n, size_t d, const float *q, size_t ldq,            \
          const void *k, size_t ldk, float scale, float *s, size_t lds)
#define SA_DECLARE_SCORE_QK(fn)                                                \
  void fn(size_t m, size_t n, size_t d, const void *q, size_t ldq,             \
          const void *k, size_t ldk, float scale, float *s, size_t lds)
#define SA_DECLARE_WSUM_T(fn)                                                  \
  void fn(size_t m, size_t n, size_t dv, const float *p, size_t ldp,           \
          const void *v, size_t ldv, const float *beta, float *o, size_t ldo)
#define SA_DECLARE_CONVERT(fn) void fn(size_t n, const void *src, void *dst)
#define SA_DECLARE_DECODE(fn)                                                  \
  void fn(size_t m, size_t n, size_t d, size_t dv, const float *q, size_t ldq, \
          const void *k, size_t ldk, sa_dtype k_type, const void *v,           \
          size_t ldv, sa_dtype v_type, float scale, float *mx, float *l,       \
          float *o, size_t ldo)
#define SA_DECLARE_DECODE_ROWS(fn)                                             \
  void fn(size_t m, size_t n, size_t d, size_t dv, const float *q, size_t ldq, \
          const void *const *k, sa_dtype k_type, const void *const *v,         \
          sa_dtype v_type, float scale, float *mx, float *l, float *o,         \
          size_t ldo)

/* The narrow-type slots of one ISA: score_t, wsum_t, to_f32, from_f32 for
 * f16, bf16 and q8_0, named sa_<op>_<type>__<isa>. */
#define SA_DECLARE_NARROW(isa)                                                 \
  SA_DECLARE_SCORE_T(sa_score_f16__##isa);                                     \
  SA_DECLARE_SCORE_T(sa_score_bf16__##isa);                                    \
  SA_DECLARE_SCORE_T(sa_score_q8_0__##isa);                                    \
  SA_DECLARE_WSUM_T(sa_wsum_f16__##isa);                                       \
  SA_DECLARE_WSUM_T(sa_wsum_bf16__##isa);                                      \
  SA_DECLARE_WSUM_T(sa_wsum_q8_0__##isa);                                      \
  SA_DECLARE_CONVERT(sa_f16_to_f32__##isa);                                    \
  SA_DECLARE_CONVERT(sa_bf16_to_f32__##isa);                                   \
  SA_DECLARE_CONVERT(sa_q8_0_to_f32__##isa);                                   \
  SA_DECLARE_CONVERT(sa_f32_to_f16__##isa);                                    \
  SA_DECLARE_CONVERT(sa_f32_to_bf16__##isa);                                   \
  SA_DECLARE_CONVERT(sa_f32_to_q8_0__##isa)

/* scalar: plain C, libm expf, the oracle. */
SA_DECLARE_SCORE(sa_score__scalar);
SA_DECLARE_SOFTMAX(sa_softmax__scalar);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__scalar);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online2__scalar);
SA_DECLARE_WSUM(sa_wsum__scalar);
SA_DECLARE_SCORE_UPTO(sa_score_upto__scalar);
SA_DECLARE_WSUM_UPTO(sa_wsum_upto__scalar);
SA_DECLARE_SCORE_MOD(sa_score_mod__scalar);
SA_DECLARE_NARROW(scalar);
SA_DECLARE_DECODE(sa_decode__scalar);
SA_DECLARE_DECODE_ROWS(sa_decode_rows__scalar);
/* scalar-f64: the same loops with double accumulators and exp (the
 * conversions are scalar's, which are exact or correctly rounded). */
SA_DECLARE_SCORE(sa_score__scalar_f64);
SA_DECLARE_SOFTMAX(sa_softmax__scalar_f64);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__scalar_f64);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online2__scalar_f64);
SA_DECLARE_WSUM(sa_wsum__scalar_f64);
SA_DECLARE_SCORE_UPTO(sa_score_upto__scalar_f64);
SA_DECLARE_WSUM_UPTO(sa_wsum_upto__scalar_f64);
SA_DECLARE_SCORE_T(sa_score_f16__scalar_f64);
SA_DECLARE_SCORE_T(sa_score_bf16__scalar_f64);
SA_DECLARE_SCORE_T(sa_score_q8_0__scalar_f64);
SA_DECLARE_WSUM_T(sa_wsum_f16__scalar_f64);
SA_DECLARE_WSUM_T(sa_wsum_bf16__scalar_f64);
SA_DECLARE_WSUM_T(sa_wsum_q8_0__scalar_f64);
SA_DECLARE_DECODE(sa_decode__scalar_f64);
SA_DECLARE_DECODE_ROWS(sa_decode_rows__scalar_f64);

/* avx2: AVX2 + FMA (+ F16C for f16), 8 lanes. */
SA_DECLARE_SCORE(sa_score__avx2);
SA_DECLARE_SOFTMAX(sa_softmax__avx2_sleef);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__avx2_sleef);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online2__avx2_sleef);
SA_DECLARE_SOFTMAX(sa_softmax__avx2_poly);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__avx2_poly);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online2__avx2_poly);
SA_DECLARE_WSUM(sa_wsum__avx2);
SA_DECLARE_SCORE_UPTO(sa_score_upto__avx2);
SA_DECLARE_WSUM_UPTO(sa_wsum_upto__avx2);
SA_DECLARE_SCORE_MOD(sa_score_mod__avx2);
SA_DECLARE_NARROW(avx2);
SA_DECLARE_DECODE(sa_decode__avx2_sleef);
SA_DECLARE_DECODE(sa_decode__avx2_poly);
SA_DECLARE_DECODE_ROWS(sa_decode_rows__avx2_sleef);
SA_DECLARE_DECODE_ROWS(sa_decode_rows__avx2_poly);

/* avx512: AVX-512 F/BW/DQ/VL, 16 lanes, masked tails. */
SA_DECLARE_SCORE(sa_score__avx512);
SA_DECLARE_SOFTMAX(sa_softmax__avx512_sleef);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__avx512_sleef);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online2__avx512_sleef);
SA_DECLARE_SOFTMAX(sa_softmax__avx512_poly);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__avx512_poly);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online2__avx512_poly);
SA_DECLARE_WSUM(sa_wsum__avx512);
SA_DECLARE_SCORE_UPTO(sa_score_upto__avx512);
SA_DECLARE_WSUM_UPTO(sa_wsum_upto__avx512);
SA_DECLARE_SCORE_MOD(sa_score_mod__avx512);
SA_DECLARE_NARROW(avx512);
SA_DECLARE_DECODE(sa_decode__avx512_sleef);
SA_DECLARE_DECODE(sa_decode__avx512_poly);
SA_DECLARE_DECODE_ROWS(sa_decode_rows__avx512_sleef);
SA_DECLARE_DECODE_ROWS(sa_decode_rows__avx512_poly);
/* avx512bf16: Q and K bf16 through vdpbf16ps (AVX512_BF16). */
SA_DECLARE_SCORE_QK(sa_score_bf16_dp__avx512);

/* neon: AArch64 Advanced SIMD, 4 lanes. */
SA_DECLARE_SCORE(sa_score__neon);
SA_DECLARE_SOFTMAX(sa_softmax__neon_sleef);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__neon_sleef);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online2__neon_sleef);
SA_DECLARE_SOFTMAX(sa_softmax__neon_poly);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__neon_poly);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online2__neon_poly);
SA_DECLARE_WSUM(sa_wsum__neon);
SA_DECLARE_SCORE_UPTO(sa_score_upto__neon);
SA_DECLARE_WSUM_UPTO(sa_wsum_upto__neon);
SA_DECLARE_SCORE_MOD(sa_score_mod__neon);
SA_DECLARE_NARROW(neon);
SA_DECLARE_DECODE(sa_decode__neon_sleef);
SA_DECLARE_DECODE(sa_decode__neon_poly);
SA_DECLARE_DECODE_ROWS(sa_decode_rows__neon_sleef);
SA_DECLARE_DECODE_ROWS(sa_decode_rows__neon_poly);
/* neon-bf16: Q and K bf16 through BFDOT (FEAT_BF16). */
SA_DECLARE_SCORE_QK(sa_score_bf16_dp__neon);

/* How avx512's wsum runs decode-shaped calls (kernels/avx512/wsum.c): 0 as
 * this machine's L1D says, 1 in 16-key sub-blocks, -1 in row pairs through
 * 256-key sub-blocks. Bit for bit alike; tests set it to run both ways, only
 * while no call runs. Defined in dispatch/registry.c, so that every build
 * has it. */
extern int sa_wsum_decode_policy;

/* Whether avx2's and avx512's score take a dot tile's keys as four streams
 * where their shapes allow it (score.c of each): 0 as this core's maker
 * and L1D say (kernels/cpu_core.h), 1 always, -1 never. Bit for bit alike;
 * tests set it to run both ways, only while no call runs. Defined in
 * dispatch/registry.c. */
extern int sa_score_streams_policy;

/* The FMA peak probes (kernels/<isa>/peak.c): what the bench's "% of peak"
 * is measured against, one per ISA, each built with its set's flags. Runs
 * independent chains of a = a*m + c for reps rounds, folds them into *sink
 * and returns the flops done. Listed in dispatch/registry.h. */
typedef uint64_t (*sa_peak_fma_fn)(uint64_t reps, float *sink);
uint64_t sa_peak_fma__scalar(uint64_t reps, float *sink);
uint64_t sa_peak_fma__avx2(uint64_t reps, float *sink);
uint64_t sa_peak_fma__avx512(uint64_t reps, float *sink);
uint64_t sa_peak_fma__neon(uint64_t reps, float *sink);

/* The read-bandwidth probes (kernels/<isa>/peak_read.c): what the bench's
 * "% of bandwidth" is measured against, one per ISA, with its widest loads.
 * Each reads bytes from buf, 64-byte aligned, into independent accumulators
 * and returns their fold, the way `way` says: bytes as `streams` equal
 * parts (each a multiple of SA_PEAK_READ_BLOCK) read side by side, a block
 * of each in turn (more streams keep more of the hardware prefetchers
 * busy); ahead > 0 also prefetches that many bytes ahead of each stream,
 * every line (every = 64) or only the lines at multiples of `every` bytes
 * (a power of two: 4096 names each page's first line, kernels/prefetch.h,
 * "Pages ahead"), into every cache level or (l2) into L2 and out; far > 0
 * also names each 4 KiB page's first line far bytes ahead, into every
 * level, as the decode kernels touch their pages. */
#define SA_PEAK_READ_BLOCK 512
typedef struct sa_peak_read_way {
  size_t streams, ahead, every;
  int l2;
  size_t far;
} sa_peak_read_way;
typedef uint64_t (*sa_peak_read_fn)(const void *buf, size_t bytes,
                                    const sa_peak_read_way *way);
uint64_t sa_peak_read__scalar(const void *buf, size_t bytes,
                              const sa_peak_read_way *way);
uint64_t sa_peak_read__avx2(const void *buf, size_t bytes,
                            const sa_peak_read_way *way);
uint64_t sa_peak_read__avx512(const void *buf, size_t bytes,
                              const sa_peak_read_way *way);
uint64_t sa_peak_read__neon(const void *buf, size_t bytes,
                            const sa_peak_read_way *way);

#endif /* SA_KERNELS_H */
