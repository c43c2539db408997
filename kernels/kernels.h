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
#define SA_DECLARE_SCORE_MOD(fn)                                               \
  void fn(size_t m, size_t n, float *s, size_t lds, const sa_score_mods *mods)

/* scalar: plain C, libm expf, the oracle. */
SA_DECLARE_SCORE(sa_score__scalar);
SA_DECLARE_SOFTMAX(sa_softmax__scalar);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__scalar);
SA_DECLARE_WSUM(sa_wsum__scalar);
SA_DECLARE_SCORE_MOD(sa_score_mod__scalar);

/* avx2: AVX2 + FMA, 8 lanes. */
SA_DECLARE_SCORE(sa_score__avx2);
SA_DECLARE_SOFTMAX(sa_softmax__avx2_sleef);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__avx2_sleef);
SA_DECLARE_SOFTMAX(sa_softmax__avx2_poly);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__avx2_poly);
SA_DECLARE_WSUM(sa_wsum__avx2);
SA_DECLARE_SCORE_MOD(sa_score_mod__avx2);

/* avx512: AVX-512 F/BW/DQ/VL, 16 lanes, masked tails. */
SA_DECLARE_SCORE(sa_score__avx512);
SA_DECLARE_SOFTMAX(sa_softmax__avx512_sleef);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__avx512_sleef);
SA_DECLARE_SOFTMAX(sa_softmax__avx512_poly);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__avx512_poly);
SA_DECLARE_WSUM(sa_wsum__avx512);
SA_DECLARE_SCORE_MOD(sa_score_mod__avx512);

/* neon: AArch64 Advanced SIMD, 4 lanes. */
SA_DECLARE_SCORE(sa_score__neon);
SA_DECLARE_SOFTMAX(sa_softmax__neon_sleef);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__neon_sleef);
SA_DECLARE_SOFTMAX(sa_softmax__neon_poly);
SA_DECLARE_SOFTMAX_ONLINE(sa_softmax_online__neon_poly);
SA_DECLARE_WSUM(sa_wsum__neon);
SA_DECLARE_SCORE_MOD(sa_score_mod__neon);

#endif /* SA_KERNELS_H */
