/*
 * simdattn — hand-written SIMD kernels for transformer attention on CPUs.
 *
 * The one public header. Everything a caller needs: status codes, the registry
 * of kernel sets (usable directly by an outside engine), CPU feature queries,
 * the context (chosen kernel set, worker threads) and the attention call.
 *
 * Tensors are fp32 unless the descriptor gives them another element type
 * (sa_dtype: f16, bf16, and for K and V ggml's q8_0 blocks); the arithmetic
 * is fp32 throughout. Sizes and strides are counted in elements (q8_0: in
 * 32-element blocks), never bytes. Every call returns a status; on any
 * status other than SA_OK nothing has been written to the caller's output.
 *
 * ABI: the two structs a caller fills (sa_attention_desc, sa_context_options)
 * begin with struct_size, set by their _init function from the caller's own
 * sizeof. Fields are only ever appended, so a library built with more fields
 * serves a caller compiled against fewer (the missing ones read as zero, which
 * is always the default), and a caller compiled against more fields runs on
 * an older library as long as it leaves the fields that library does not know
 * at zero (else SA_ERR_STRUCT_SIZE). The library never writes to them.
 */
#ifndef SIMDATTN_H
#define SIMDATTN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shared library exports exactly the SA_API functions of this header;
 * everything else in it is built with hidden visibility. */
#if defined(__GNUC__)
#define SA_API __attribute__((visibility("default")))
#else
#define SA_API
#endif

/* The version this header describes. */
#define SA_VERSION_MAJOR 0
#define SA_VERSION_MINOR 13
#define SA_VERSION_PATCH 0
#define SA_VERSION_STRING "0.13.0"
#define SA_VERSION                                                             \
  (SA_VERSION_MAJOR * 10000 + SA_VERSION_MINOR * 100 + SA_VERSION_PATCH)

/* The version of the library actually loaded, in SA_VERSION's form, and as
 * "0.13.0". Compare with SA_VERSION to see which header a caller was built
 * against and which library runs it. */
SA_API unsigned sa_version(void);
SA_API const char *sa_version_string(void);

/* ---------------------------------------------------------------- status */

typedef enum sa_status {
  SA_OK = 0,
  SA_ERR_NULL_POINTER,    /* a required pointer argument is NULL */
  SA_ERR_BAD_SHAPE,       /* a dimension is zero or larger than SA_MAX_DIM */
  SA_ERR_BAD_HEADS,       /* heads_q is not a multiple of heads_kv */
  SA_ERR_BAD_STRIDE,      /* output elements alias, or O overlaps Q/K/V */
  SA_ERR_BAD_ARGUMENT,    /* enum or option out of range, scale not finite */
  SA_ERR_OVERFLOW,        /* a size or offset product overflows size_t */
  SA_ERR_UNKNOWN_ISA,     /* no kernel set of that name is compiled in */
  SA_ERR_UNSUPPORTED_ISA, /* that kernel set needs features this CPU lacks */
  SA_ERR_NO_MEMORY,       /* an allocation failed */
  SA_ERR_THREADS,         /* worker threads could not be started */
  SA_ERR_BUSY,            /* another call is using this context right now */
  SA_ERR_STRUCT_SIZE,     /* struct_size unset, too small, or a field this
                             library does not know is non-zero */
  SA_ERR_WORKSPACE, /* the caller's workspace is too small for this call */
} sa_status;

/* A static, never-NULL English sentence for any value, known or not. */
SA_API const char *sa_status_str(sa_status status);

/*
 * The most recent detailed message of the calling thread (for example which
 * kernel sets this CPU can run after SA_ERR_UNSUPPORTED_ISA), or "" if none.
 */
SA_API const char *sa_last_error(void);

/* Largest accepted value of any single dimension: catches garbage sizes. */
#define SA_MAX_DIM ((size_t)1 << 31)

/* ------------------------------------------------------------ CPU features */

enum {
  SA_CPU_SSE2 = 1u << 0,
  SA_CPU_AVX = 1u << 1, /* CPUID bit and OS-saved YMM state */
  SA_CPU_AVX2 = 1u << 2,
  SA_CPU_FMA = 1u << 3,
  SA_CPU_AVX512F = 1u << 4, /* CPUID bit and OS-saved opmask and ZMM state */
  SA_CPU_AVX512BW = 1u << 5,
  SA_CPU_AVX512DQ = 1u << 6,
  SA_CPU_AVX512VL = 1u << 7,
  SA_CPU_AVX512BF16 = 1u << 8,
  SA_CPU_AVX512VNNI = 1u << 9,
  SA_CPU_F16C = 1u << 10, /* vcvtph2ps / vcvtps2ph (with AVX state) */
  /* Not an instruction: AVX512_BF16 whose vdpbf16ps gives more products
   * per cycle than FMA (AMD's; Intel's measured slower than widening bf16
   * to f32, docs/DESIGN.md). Only ever in a set's prefer_features. */
  SA_CPU_FAST_BF16DOT = 1u << 11,
  SA_CPU_NEON = 1u << 16, /* AArch64 Advanced SIMD */
  SA_CPU_ASIMDHP = 1u << 17,
  SA_CPU_SVE = 1u << 18,
  SA_CPU_BF16 = 1u << 19, /* AArch64 BFDOT / BFMMLA (FEAT_BF16) */
};

/* Features of this CPU that the OS lets us use; detected once, thread-safe. */
SA_API uint64_t sa_cpu_features(void);

/* Writes "AMD EPYC ... | avx2 fma avx512f ..." into buf (always terminated).
 * Returns the length the full text needs, like snprintf. */
SA_API size_t sa_cpu_describe(char *buf, size_t size);

/* Writes the space-separated names of the bits set in `features` into buf
 * (always terminated, truncated at a whole name) and returns buf. */
SA_API const char *sa_cpu_feature_names(uint64_t features, char *buf,
                                        size_t size);

/* ---------------------------------------------------------- element types */

/*
 * The element type of one tensor. Scores, softmax and the weighted sum of V
 * are always computed and accumulated in fp32; narrow types are widened in
 * registers as they are read, and a narrow O is rounded once at the end.
 */
typedef enum sa_dtype {
  SA_F32 = 0, /* IEEE binary32 */
  SA_F16,     /* IEEE binary16 (llama.cpp's default KV cache) */
  SA_BF16,    /* bfloat16: the top 16 bits of a binary32 */
  /* ggml's block_q8_0, K and V only: each run of 32 values along d is
   * one sa_block_q8_0 (34 bytes, 2-byte aligned) holding int8 q[32] and an
   * f16 scale, value = q * scale. The dimension must be a multiple of 32,
   * and strides count blocks: a packed [B, H, L, d] cache has seq stride
   * d / 32. An engine's q8_0 cache is passed as it is. */
  SA_Q8_0,
} sa_dtype;

/* One q8_0 block, byte for byte ggml's: scale first, then the 32 values. */
typedef struct sa_block_q8_0 {
  uint16_t scale; /* binary16 bits */
  int8_t q[32];
} sa_block_q8_0;

/* Bytes that n elements of type t take (q8_0: n a multiple of 32), or 0
 * for an unknown type or a q8_0 count that is not whole blocks. */
SA_API size_t sa_dtype_bytes(sa_dtype t, size_t n);

/* "f32", "f16", "bf16", "q8_0"; "?" for anything else. */
SA_API const char *sa_dtype_name(sa_dtype t);

/*
 * Converts n values from src (type from) to dst (type to), with the best
 * runnable kernel set. One side must be SA_F32 (or both the same type: a
 * copy). Rounding:
 * - f32 -> f16 and f32 -> bf16 round to nearest, ties to even, whatever the
 *   FP environment; overflow gives +-Inf, denormals are produced and read
 *   exactly (no flush to zero), NaN stays NaN (quiet, sign and top payload
 *   bits kept); f16 / bf16 -> f32 is exact (a signalling NaN is quieted).
 * - f32 -> q8_0 is ggml's reference quantiser (quantize_row_q8_0_ref):
 *   scale = max|x| / 127 rounded to f16, q = roundf(x * (1 / unrounded
 *   scale)); q8_0 -> f32 is q * scale. n must be a multiple of 32.
 * src and dst must not overlap (SA_ERR_BAD_STRIDE); an unknown type or a
 * pair without f32 is SA_ERR_BAD_ARGUMENT, a q8_0 count not a multiple of
 * 32 SA_ERR_BAD_SHAPE.
 */
SA_API sa_status sa_convert(sa_dtype to, void *dst, sa_dtype from,
                            const void *src, size_t n);

/* ------------------------------------------------------------ kernel sets */

/*
 * The micro-kernel contract. All f32, row-major, ld* = row stride in floats,
 * no alignment required, no read or write outside the rows and columns named.
 * `len` (may be NULL = every row has all n columns valid) gives per row the
 * number of valid leading columns; columns at or past len[i] are masked.
 *
 * score:  s[i][j] = scale * sum_p q[i][p] * k[j][p]      i < m, j < n, p < d
 * softmax: in place; valid prefix -> exp(x - rowmax) / rowsum, the rest -> 0;
 *          a row with len 0 becomes all zeros, never NaN.
 * softmax_online: one FlashAttention step on raw scores. Per row i:
 *          new = max(mx[i], max of valid s[i][j]); s[i][j] <- exp(s - new)
 *          on the valid prefix and 0 past it; alpha[i] = exp(mx[i] - new);
 *          l[i] = l[i] * alpha[i] + rowsum; mx[i] = new.
 *          Start with mx = -INFINITY, l = 0. A row whose max is still
 *          -INFINITY afterwards (nothing valid yet) gets s = 0, alpha = 1,
 *          l unchanged, except that l becomes NaN if one of its valid
 *          scores is NaN: a NaN seen before any finite score is never lost.
 * softmax_online2 (0.10): softmax_online in base 2, 2^ in place of exp, for
 *          scores in log2 units (score's scale multiplied by log2(e)): then
 *          mx is the row's max in those units, l is the same sum, and the
 *          row's log-sum-exp is mx * ln2 + ln(l). One exp2 a score is the
 *          exp's range reduction less a multiply and an FMA.
 * wsum:   o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c],  c < dv;
 *          beta NULL means overwrite (o is never read then).
 * score_upto, wsum_upto (0.13): score and wsum for rows that need keys
 *          [0, ends[i]) only (ends[i] <= n; the causal diagonal, each row
 *          one key further than the row before). score_upto writes
 *          s[i][j] for j < ends[i] exactly as score would; s[i][j] past
 *          ends[i] may be written or not. wsum_upto takes p with
 *          p[i][j] = 0 for j >= ends[i] (as softmax_online leaves it with
 *          len = ends) and gives wsum's o, bit for bit when those V rows
 *          are finite: it may skip the zero terms or add them.
 * score_mod: in place on a tile of scaled scores, before either softmax;
 *          each step is optional (see sa_score_mods) and they run in this
 *          order: softcap s = cap * tanh(s / cap); ALiBi
 *          s += slope[i] * (dist[i] + j); additive mask s += add[i][j]
 *          (an add of -INFINITY makes s -INFINITY even where s is NaN:
 *          a masked key never poisons its row); boolean mask s = -INFINITY
 *          where keep[i][j] == 0; s = -INFINITY for j < lo[i]. Columns at
 *          or past n are not touched.
 *
 * Kernels allocate nothing on the heap and keep no state between calls, so
 * any number of threads may call one set at once. They do use the calling
 * thread's stack: the x86 score kernels pack a transposed panel of K there
 * (32 KiB for AVX-512, 16 KiB for AVX2), the x86 q8_0 wsum widens V
 * there for many rows (24 KiB), and AVX2's wsum keeps the sums of up to 4
 * rows there (9 KiB), so give threads that call kernels directly at least
 * 64 KiB of stack. No kernel reads the
 * floating-point environment on purpose: results follow the caller's
 * rounding mode and denormal (FTZ/DAZ) settings.
 */
typedef void (*sa_score_fn)(size_t m, size_t n, size_t d, const float *q,
                            size_t ldq, const float *k, size_t ldk, float scale,
                            float *s, size_t lds);
typedef void (*sa_softmax_fn)(size_t m, size_t n, float *s, size_t lds,
                              const size_t *len);
typedef void (*sa_softmax_online_fn)(size_t m, size_t n, float *s, size_t lds,
                                     const size_t *len, float *mx, float *l,
                                     float *alpha);
typedef void (*sa_wsum_fn)(size_t m, size_t n, size_t dv, const float *p,
                           size_t ldp, const float *v, size_t ldv,
                           const float *beta, float *o, size_t ldo);
typedef void (*sa_score_upto_fn)(size_t m, size_t n, size_t d, const float *q,
                                 size_t ldq, const float *k, size_t ldk,
                                 float scale, float *s, size_t lds,
                                 const size_t *ends);
typedef void (*sa_wsum_upto_fn)(size_t m, size_t n, size_t dv, const float *p,
                                size_t ldp, const float *v, size_t ldv,
                                const float *beta, float *o, size_t ldo,
                                const size_t *ends);

/* What score_mod applies to one tile; a NULL pointer (or softcap 0) skips
 * that step. Row i of a per-row array belongs to row i of the tile; mask
 * rows are contiguous along keys, ld_* floats or bytes apart. */
typedef struct sa_score_mods {
  float softcap;      /* > 0: s = softcap * tanh(s / softcap) first */
  const float *slope; /* ALiBi slope per row */
  const float *dist;  /* per row: key minus query position of column 0 */
  const float *add;   /* additive mask, row i at add + i * ld_add */
  size_t ld_add;
  const uint8_t *keep; /* boolean mask, nonzero = attend */
  size_t ld_keep;
  const size_t *lo; /* per row: columns before lo[i] are masked */
} sa_score_mods;

typedef void (*sa_score_mod_fn)(size_t m, size_t n, float *s, size_t lds,
                                const sa_score_mods *mods);

/*
 * Narrow element types (0.4). The same contracts as score and wsum, with K
 * (score_t) or V (wsum_t) of another type: k / v point at the first key's
 * row, and ldk / ldv count that type's units (elements; 34-byte blocks for
 * q8_0, where d or dv is a multiple of 32). Each value is widened exactly to
 * fp32 and the arithmetic is the f32 kernel's. score_qk takes Q as well as K
 * in bf16 and may multiply in bf16 pairs (AVX512_BF16 vdpbf16ps): products
 * are exact, pairs are summed before they reach the fp32 accumulator, and
 * bf16 denormal inputs count as zero. convert: n values (q8_0: n a multiple
 * of 32) with sa_convert's rounding; src and dst do not overlap.
 */
typedef void (*sa_score_t_fn)(size_t m, size_t n, size_t d, const float *q,
                              size_t ldq, const void *k, size_t ldk,
                              float scale, float *s, size_t lds);
typedef void (*sa_score_qk_fn)(size_t m, size_t n, size_t d, const void *q,
                               size_t ldq, const void *k, size_t ldk,
                               float scale, float *s, size_t lds);
typedef void (*sa_wsum_t_fn)(size_t m, size_t n, size_t dv, const float *p,
                             size_t ldp, const void *v, size_t ldv,
                             const float *beta, float *o, size_t ldo);
typedef void (*sa_convert_fn)(size_t n, const void *src, void *dst);

/*
 * decode (0.6): score, online softmax and weighted sum in one kernel for a
 * few rows (decode: one query position, or the query heads of one KV group),
 * with no score tile in memory: for m <= SA_DECODE_ROWS rows, n keys, K and
 * V of types k_type and v_type (f32, f16, bf16, q8_0; ldk / ldv in their
 * units, as score_t / wsum_t). The keys are taken in chunks of the set's
 * own size c, from key 0, and each chunk is one online step:
 *   s[i][j] = scale * q[i] . k[j] for the chunk's j;
 *   new = max(mx[i], max_j s[i][j]), NaN skipped; p[i][j] = exp(s - new);
 *   alpha = exp(mx[i] - new); l[i] = l[i] * alpha + sum_j p[i][j];
 *   o[i][c] = alpha * o[i][c] + sum_j p[i][j] * v[j][c]  (alpha * o
 *   rounded on its own, as wsum's beta); mx[i] = new
 * with softmax_online's rule for a row whose max is still -INFINITY
 * (p = 0, alpha = 1, l NaN if a score was NaN). So it equals score,
 * softmax_online and wsum run on blocks of c keys, up to the rounding of
 * their sums. o, mx and l are read: start with o = 0, mx = -INFINITY and
 * l = 0 (a sink: mx = its logit, l = 1).
 */
#define SA_DECODE_ROWS 16
typedef void (*sa_decode_fn)(size_t m, size_t n, size_t d, size_t dv,
                             const float *q, size_t ldq, const void *k,
                             size_t ldk, sa_dtype k_type, const void *v,
                             size_t ldv, sa_dtype v_type, float scale,
                             float *mx, float *l, float *o, size_t ldo);

/*
 * decode_rows (0.8): decode with each key's rows given by address: key j's K
 * row at k[j] and its V row at v[j] (k_type / v_type values, d and dv of
 * them), for caches whose rows are not one stride apart: the pages of a
 * paged cache, a ring buffer. It equals decode run on those rows copied
 * into one contiguous block, bit for bit, chunks and all; its chunks span
 * any change of page, so a cache paged in 16-key pages is read in the
 * set's own chunks, with one online step each, not one per page. k and v
 * hold n pointers each, read only at indices below n.
 */
typedef void (*sa_decode_rows_fn)(size_t m, size_t n, size_t d, size_t dv,
                                  const float *q, size_t ldq,
                                  const void *const *k, sa_dtype k_type,
                                  const void *const *v, sa_dtype v_type,
                                  float scale, float *mx, float *l, float *o,
                                  size_t ldo);

/* Per-type slots hold this many entries, indexed by sa_dtype. */
#define SA_DTYPE_SLOTS 8

/*
 * A kernel set: a named table of the four micro-kernels plus what the CPU must
 * have to run them. Sets are static and live for the whole program. New
 * optional slots are only ever appended, so engines holding a pointer keep
 * working across versions.
 */
typedef struct sa_kernel_set {
  size_t struct_size;    /* sizeof(sa_kernel_set) of the library: a slot at
                            offset >= struct_size does not exist in it */
  const char *name;      /* what a user types: "avx512", "avx2-polyexp" */
  const char *isa;       /* "scalar", "avx2", "avx512", "neon" */
  const char *exp_impl;  /* how exp is computed: "libm", "sleef-u10", "poly" */
  const char *about;     /* one line: register blocking, exp accuracy */
  unsigned vector_bits;  /* 0 for scalar */
  int priority;          /* the best runnable set has the highest priority;
                            below 0: never chosen automatically (scalar-f64,
                            the accuracy reference) */
  uint64_t cpu_features; /* SA_CPU_* bits the CPU must have (C++20 reserves
                           "requires", its name before 0.2) */
  sa_score_fn score;
  sa_softmax_fn softmax;
  sa_softmax_online_fn softmax_online;
  sa_wsum_fn wsum;
  /* --- 0.3 */
  sa_score_mod_fn score_mod; /* tanh: SLEEF u35 (3.5 ULP); scalar: libm */
  /* --- 0.4: narrow element types, indexed by sa_dtype. Entry [SA_F32] is
   * NULL (score and wsum serve f32); every set fills f16, bf16 and q8_0. */
  sa_score_t_fn score_t[SA_DTYPE_SLOTS];  /* K of that type, Q f32 */
  sa_wsum_t_fn wsum_t[SA_DTYPE_SLOTS];    /* V of that type */
  sa_convert_fn to_f32[SA_DTYPE_SLOTS];   /* that type -> f32 */
  sa_convert_fn from_f32[SA_DTYPE_SLOTS]; /* f32 -> that type */
  /* Q and K both bf16 with bf16 dot-product instructions; NULL in sets
   * whose CPU has none (then Q is widened and score_t[SA_BF16] runs). */
  sa_score_qk_fn score_bf16;
  /* --- 0.5 */
  /* The largest error of this set's exp, and (0.10) of its exp2, in ULP,
   * as its code states it: libm's what glibc states (0.502), SLEEF's u10 1,
   * a polynomial what was measured for it.
   * The softmaxes' accuracy follows from it (an ULP is at
   * most 2^-23 of the value), and the tests hold each set to it. */
  float exp_ulps;
  /* --- 0.6 */
  /* Score to weighted sum for a few rows (above); NULL in a set without
   * one, where the drivers run score, softmax_online and wsum instead. */
  sa_decode_fn decode;
  /* --- 0.7 */
  /* SA_CPU_* bits without which a runnable set is not chosen by default
   * (sa_kernel_set_best); by name (SIMDATTN_ISA, sa_kernel_set_select) it
   * runs wherever cpu_features are met. 0: no preference. */
  uint64_t prefer_features;
  /* --- 0.8 */
  /* decode over rows given by address (above); NULL exactly where decode
   * is NULL. */
  sa_decode_rows_fn decode_rows;
  /* --- 0.10 */
  /* The online step in base 2 (above), which the fused driver runs on
   * scores it asks score for in log2 units (all but an additive mask's);
   * every set fills it, its exp2 within exp_ulps as its exp is. */
  sa_softmax_online_fn softmax_online2;
  /* --- 0.13 */
  /* score and wsum over rows with their own ends (above): a register tile
   * is skipped where every row of it has ended. The drivers run score_upto
   * on the causal diagonal's key block (NULL in a set without it: that
   * block's scores then go 64 rows at a time); wsum_upto is for callers of
   * the kernels, since which zero terms it adds is the set's own. */
  sa_score_upto_fn score_upto;
  sa_wsum_upto_fn wsum_upto;
} sa_kernel_set;

/* Every kernel set compiled into this library, runnable here or not. */
SA_API size_t sa_kernel_set_count(void);
SA_API const sa_kernel_set *
sa_kernel_set_at(size_t index); /* NULL past the end */

/* NULL if no compiled set has that name. */
SA_API const sa_kernel_set *sa_kernel_set_find(const char *name);

/* 1 if this CPU (and OS) can run the set, else 0. */
SA_API int sa_kernel_set_supported(const sa_kernel_set *set);

/* 1 if this CPU has the set's prefer_features (0.7), so that it may be
 * chosen by default when it is also supported, else 0. */
SA_API int sa_kernel_set_preferred(const sa_kernel_set *set);

/*
 * The set used when nothing is asked for: the one SIMDATTN_ISA names if it is
 * set (not empty, not "auto"), else the highest-priority runnable set
 * among those this CPU prefers (sa_kernel_set_preferred).
 * Decided once per process, thread-safely, on first use; later changes to the
 * environment are not seen. One policy everywhere: a SIMDATTN_ISA that names
 * no set (SA_ERR_UNKNOWN_ISA) or one this CPU cannot run
 * (SA_ERR_UNSUPPORTED_ISA) is an error, returned here, by every
 * sa_context_create that leaves isa NULL and by every sa_attention with a
 * NULL context; it never falls back silently. *out is untouched on error.
 */
SA_API sa_status sa_kernel_set_default(const sa_kernel_set **out);

/* The highest-priority runnable, preferred set, ignoring SIMDATTN_ISA. */
SA_API const sa_kernel_set *sa_kernel_set_best(void);

/*
 * Look a set up by name for use on this CPU. NULL or "" or "auto" means the
 * best runnable one. SA_ERR_UNKNOWN_ISA / SA_ERR_UNSUPPORTED_ISA otherwise,
 * with sa_last_error() naming the sets this CPU can run. *out is untouched
 * on error.
 */
SA_API sa_status sa_kernel_set_select(const char *name,
                                      const sa_kernel_set **out);

/* ---------------------------------------------------------------- context */

typedef enum sa_pin_policy {
  SA_PIN_DEFAULT = 0, /* SIMDATTN_PIN if set, else cores */
  SA_PIN_CORES,       /* one worker per physical core, compact fill */
  SA_PIN_NONE,        /* leave placement to the OS */
} sa_pin_policy;

typedef struct sa_context_options {
  size_t struct_size; /* set by sa_context_options_init */
  const char *isa;    /* NULL: sa_kernel_set_default(); else a set's name */
  int num_threads;    /* 0: SIMDATTN_NUM_THREADS, else one per usable core */
  sa_pin_policy pin;  /* how workers are placed */
  size_t block_q;     /* query rows per tile; 0 = library default (64;
                         128 for fused prefill when block_kv is 0 too and a
                         core's L2 holds the blocks, see README) */
  size_t block_kv;    /* keys per fused step; 0 = library default (256;
                         512 with those 128 rows; 4096 for decode tiles of
                         at most 8 rows, 1024 for 9-16 rows, 512 for 17-32,
                         on a cache that is not paged; paged decode
                         (0.11.5): 4096 for an f32 cache, tiles of at most
                         8 rows and no mask, window, softcap or ALiBi, else
                         the page if over 256 keys, up to the figures
                         above; 0.12: on a core whose L1D is 48 KiB or
                         more, f32 pages of 256 keys or more take the page
                         too) */
  /* --- 0.2: where the workers go, and whose memory the scratch is. */
  /* NULL: every CPU the process may use. Else a list of OS CPU numbers
   * ("0-7,16-23", hwloc/taskset list syntax) that pinned workers are
   * confined to, within what the process may use. */
  const char *cpus;
  /* Pinned workers skip this many usable cores (in compact order) first, so
   * two contexts of one process can take disjoint cores: 0 and 4 for two
   * 4-thread contexts. In [0, 65536]; ignored under SA_PIN_NONE, as is cpus. */
  int first_core;
  /* Caller-owned scratch for every call of this context: the library never
   * allocates scratch then, and a call that needs more than workspace_bytes
   * (see sa_attention_workspace) fails with SA_ERR_WORKSPACE. The memory must
   * stay valid until sa_context_destroy; any alignment. NULL: the library
   * allocates and keeps scratch as calls need it. */
  void *workspace;
  size_t workspace_bytes;
  /* --- 0.12: how long idle workers wait awake. Between calls a worker
   * spins this many microseconds, watching for the next call, before it
   * sleeps (the caller, waiting for tasks in flight, spins at least 2 ms
   * unless this is -1). A call never waits for a sleeping worker to wake,
   * but it runs without that worker until it does: a few microseconds on
   * bare metal, 60-110 in a VM whose idle vCPU halts (README, "Threads").
   * 0: the default, 100 us (no spinning when workers outnumber the CPUs);
   * -1: never spin, sleep at once; up to 10000000 (10 s) to keep workers
   * awake across the gaps of a serving loop, at the cost of cores busy
   * while idle. Anything else is SA_ERR_BAD_ARGUMENT. */
  int spin_us;
} sa_context_options;

/* The smallest struct_size accepted (the fields up to block_kv); fields past
 * a caller's struct_size take their default. */
#define SA_CONTEXT_OPTIONS_MIN_SIZE                                            \
  (offsetof(sa_context_options, block_kv) + sizeof(size_t))

/* Every field at its default (zero) and struct_size set: start from this. */
static inline void sa_context_options_init(sa_context_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->struct_size = sizeof *opts;
}

/*
 * A context owns a kernel set, worker threads and their scratch. It runs one
 * sa_attention at a time: a call that finds another one running on the same
 * context returns SA_ERR_BUSY at once (give each calling thread its own
 * context). After fork(), the child may keep using (or destroy) a context it
 * inherited: its worker threads are started again on first use.
 */
typedef struct sa_context sa_context;

/* opts may be NULL (all defaults). On error *out is untouched.
 * SIMDATTN_NUM_THREADS above the number of CPUs the process may use is
 * clamped to it; an explicit num_threads is taken as given (at most 4096). */
SA_API sa_status sa_context_create(const sa_context_options *opts,
                                   sa_context **out);
SA_API void sa_context_destroy(sa_context *ctx); /* NULL is a no-op */

SA_API const sa_kernel_set *sa_context_kernel_set(const sa_context *ctx);
SA_API int sa_context_num_threads(const sa_context *ctx);
/* 1 if every worker is bound to its own core, 0 if running unpinned. */
SA_API int sa_context_pinned(const sa_context *ctx);

/* -------------------------------------------------------------- attention */

typedef enum sa_mask {
  SA_MASK_NONE = 0,
  SA_MASK_CAUSAL_TOP_LEFT,     /* query i sees keys j <= i */
  SA_MASK_CAUSAL_BOTTOM_RIGHT, /* query i sees keys j <= i + len_kv - len_q */
} sa_mask;

typedef enum sa_algorithm {
  SA_ALGO_AUTO = 0,   /* the library picks (fused today) */
  SA_ALGO_THREE_PASS, /* score -> softmax -> wsum on a block of query rows */
  SA_ALGO_FUSED,      /* K/V in blocks with the online softmax */
} sa_algorithm;

/*
 * Element strides of one tensor: batch, head, sequence. The innermost
 * dimension (d) is contiguous. All three zero means the packed [B,H,L,D]
 * layout; otherwise they are used as given ([B,L,H,D] is {L*H*D, D, H*D}).
 * Q, K and V are only read, so their strides may overlap or be 0 (broadcast);
 * O's must give every output element its own address (else SA_ERR_BAD_STRIDE).
 */
typedef struct sa_strides {
  size_t batch, head, seq;
} sa_strides;

/*
 * Where a mask tensor's element (batch b, query head h, query row i, key j)
 * lives: at b * batch + h * head + i * row + j * key elements from its base.
 * All four strides zero means packed [batch, heads_q, len_q, keys]; otherwise
 * they are used as given, and a stride of 0 broadcasts that dimension (a
 * PyTorch [len_q, len_kv] mask is {0, 0, len_kv, 1}, a padding mask
 * [batch, 1, 1, len_kv] is {len_kv, 0, 0, 1}). Masks are indexed by query
 * head, as in ONNX and PyTorch.
 *
 * keys: the mask's extent along keys, at most len_kv; 0 means len_kv. Keys at
 * or past it are masked (ONNX pads a shorter attn_mask with -inf / false).
 * A key stride other than 1 works but is read element by element.
 */
typedef struct sa_mask_layout {
  size_t batch, head, row, key;
  size_t keys;
} sa_mask_layout;

typedef struct sa_attention_desc {
  size_t struct_size; /* set by sa_attention_desc_init */
  size_t batch;
  size_t heads_q;
  size_t heads_kv; /* heads_q % heads_kv == 0: MHA, GQA, MQA (heads_kv = 1) */
  size_t len_q;
  size_t len_kv; /* cross-attention when != len_q */
  size_t dim_qk;
  size_t dim_v;
  /* Any finite value; 0 (or -0) means 1/sqrt(dim_qk). Fold a temperature in
   * here; a negative scale is allowed (it turns attention to the keys least
   * like the query). NaN or Inf: SA_ERR_BAD_ARGUMENT. */
  float scale;
  sa_mask mask;
  sa_algorithm algorithm;
  sa_strides q, k, v, o;
  /* --- 0.3: what models put around the softmax. Every field's zero is
   * "off"; features combine freely. Per query row, the order is the ONNX
   * Attention (opset 23/24) reference's: s = scale * q.k; softcap; then ALiBi
   * and the masks are added; softmax; times V.
   *
   * Which keys a row can see: the causal kind (mask), the window, the
   * per-batch valid length and each mask's extent decide a range of keys
   * per row, and nothing outside it is computed; the boolean mask and the
   * additive mask's -inf entries remove keys inside it. A row left with no
   * key gets zeros (ONNX / PyTorch 2.5 "safe softmax"); a row that keeps
   * keys whose scores are all -inf is NaN, as in 0.2.
   *
   * Alignment: the diagonal a row i sits on is key c = i under
   * SA_MASK_NONE and SA_MASK_CAUSAL_TOP_LEFT, and c = i + L - len_q under
   * SA_MASK_CAUSAL_BOTTOM_RIGHT, where L is the batch item's valid key
   * length (len_kv_valid, else len_kv). Window and ALiBi are relative to c. */

  /* Additive float mask, added to the capped scores; -inf removes a key. */
  const float *mask_add;
  sa_mask_layout mask_add_layout;
  /* Boolean mask, one byte per element: nonzero = attend (ONNX, PyTorch).
   * Key blocks it removes for a whole tile are skipped. */
  const uint8_t *mask_bool;
  sa_mask_layout mask_bool_layout;
  /* Sliding window, used when window is non-zero: row i sees keys
   * c - window_left <= j <= c + window_right; -1 is unbounded on that side,
   * below -1 is SA_ERR_BAD_ARGUMENT. Keys outside the window are never
   * computed: cost O(len_q * window). With a causal mask, j <= c still
   * holds. */
  int window;
  int64_t window_left, window_right;
  /* Logit soft-capping (Gemma 2): s = softcap * tanh(s / softcap), applied
   * to the scaled scores before ALiBi and the masks (as the ONNX reference
   * does; masked keys stay masked). 0 is off; negative, NaN or Inf is
   * SA_ERR_BAD_ARGUMENT. tanh is SLEEF's u35 (3.5 ULP) in every SIMD set. */
  float softcap;
  /* ALiBi: heads_q slopes; query head h adds slopes[h] * (j - c) to its
   * scores. sa_alibi_slopes() writes the standard geometric ones. Distances
   * are exact up to 2^24 keys. Non-finite slopes are SA_ERR_BAD_ARGUMENT. */
  const float *alibi_slopes;
  /* Attention sinks (gpt-oss): heads_q logits; query head h's softmax is
   * normalised over its keys and one extra logit sinks[h] that has no value
   * row. -inf is no sink for that head; NaN or +inf is
   * SA_ERR_BAD_ARGUMENT. */
  const float *sinks;
  /* Valid key length per batch item (ONNX nonpad_kv_seqlen): batch values
   * in [0, len_kv]; keys at or past it are masked, and bottom-right causal
   * alignment uses it in place of len_kv. */
  const int64_t *len_kv_valid;
  /* Log-sum-exp out: per query row, log(sum_j exp(s_j)) (natural log) over
   * the scores it sees, after scale, softcap, ALiBi and masks, with exp(sink)
   * added when a sink is given; -inf for a row that sees no key and has no
   * sink; NaN where O is NaN. [batch, heads_q, len_q] with strides lse_at
   * (all zero: packed; seq is the stride between query rows). Written with
   * O; it must not overlap O, Q, K, V or a mask (SA_ERR_BAD_STRIDE). With
   * sa_attention_merge, attention over a key range split anywhere into
   * parts gives the unsplit result (give the sinks to one part only). */
  float *lse;
  sa_strides lse_at;
  /* Ragged batches (FlashAttention's varlen layout): batch + 1 int32 prefix
   * sums, starting at 0 or more and never decreasing. Sequence b's queries
   * are token rows cu_seqlens_q[b] .. cu_seqlens_q[b+1] - 1 of Q, O and LSE;
   * its keys are rows cu_seqlens_kv[b] .. cu_seqlens_kv[b+1] - 1 of K and V.
   * The seq stride steps tokens and the batch stride is unused; all-zero
   * strides mean packed [tokens, heads, dim] (LSE: [heads_q, tokens]).
   * len_q and len_kv bound every sequence's lengths (FlashAttention's
   * max_seqlen); a sequence longer is SA_ERR_BAD_SHAPE. Either may be
   * given alone. Causal alignment, windows, ALiBi and masks are per
   * sequence (a mask's row and key indices are within the sequence). */
  const int32_t *cu_seqlens_q, *cu_seqlens_kv;
  /* Paged KV cache (vLLM's layout): K and V are pools of num_pages pages of
   * page_size tokens, and key j of sequence b lives in slot j % page_size of
   * page block_table[b * block_table_stride + j / page_size]. The k and v
   * strides step pages (batch), slots (seq) and heads (head); all zero
   * means packed head-major pages [num_pages, heads_kv, page_size, dim]
   * (vLLM's and FlashInfer's "HND"; FlashAttention's [num_pages,
   * page_size, heads_kv, dim] is {page_size*heads_kv*dim, dim,
   * heads_kv*dim}, slower at decode: a head's rows lie heads_kv*dim
   * apart). Sequence b has
   * len_kv_valid[b] keys (else len_kv); every page it uses must be in
   * [0, num_pages). Pages may be in any order and shared between
   * sequences. Not with cu_seqlens_kv; needs SA_ALGO_FUSED (or AUTO). */
  const int32_t *block_table;
  size_t block_table_stride; /* entries per sequence, >= its pages */
  size_t page_size;
  size_t num_pages;
  /* --- 0.4: element types (sa_dtype; zero is SA_F32). Q and O: f32, f16
   * or bf16; K and V also SA_Q8_0 (dim_qk resp. dim_v a multiple of 32,
   * strides in blocks). Q, K and V are widened exactly; O is accumulated
   * in fp32 and rounded once (nearest even). O may be exactly Q only when
   * their types match. With Q and K both bf16, a set with bf16 dot products
   * (avx512bf16) multiplies in bf16 pairs; any other set widens Q to f32,
   * so every type runs on every set. Masks, LSE, sinks and slopes stay
   * f32. A paged cache takes any K/V type; strides are in its units. */
  sa_dtype q_type, k_type, v_type, o_type;
} sa_attention_desc;

/* The smallest struct_size accepted (0.2's fields). */
#define SA_ATTENTION_DESC_MIN_SIZE                                             \
  (offsetof(sa_attention_desc, o) + sizeof(sa_strides))

/* Every field at its default (zero) and struct_size set: start from this. */
static inline void sa_attention_desc_init(sa_attention_desc *desc) {
  memset(desc, 0, sizeof *desc);
  desc->struct_size = sizeof *desc;
}

/*
 * O = softmax(scale * Q Kᵀ, masked) V for every batch and query head; query
 * head h reads key/value head h / (heads_q / heads_kv). q, k, v and o point
 * at tensors of the descriptor's q_type, k_type, v_type and o_type (all
 * f32 unless set; 0.3 and older took float pointers, which still convert). ctx
 * may be NULL: the calling thread alone, with sa_kernel_set_default(); the
 * first such call on a thread sets up a small per-thread context that later
 * calls reuse (freed when the thread exits), so NULL-context calls cost no
 * allocation.
 *
 * Output and inputs: O may be exactly Q (same pointer, same resolved strides,
 * dim_v == dim_qk): attention in place, with either algorithm. Any other
 * overlap of O's memory (from its first to its last element) with Q's, K's or
 * V's is SA_ERR_BAD_STRIDE.
 *
 * Numerics (both algorithms agree on which rows are NaN):
 * - A query row that can see no key gets zeros.
 * - A row is NaN when any score it sees is NaN or +Inf, or when every score
 *   it sees is -Inf (its softmax is undefined). Other rows are unaffected.
 * - A key a row cannot see is never read if no row of its tile sees it;
 *   inside a tile it is weighted by an exact 0, so a finite V row contributes
 *   exactly nothing but a NaN or +-Inf V row there makes that row NaN (0 * Inf
 *   is NaN). Keep masked-out V rows finite (a zero-filled cache is).
 * - Worker threads run with the calling thread's floating-point control
 *   state (rounding mode, FTZ/DAZ), so the output is bit-identical for any
 *   thread count under any such state.
 */
SA_API sa_status sa_attention(sa_context *ctx, const sa_attention_desc *desc,
                              const void *q, const void *k, const void *v,
                              void *o);

/*
 * Combines partial attention results over disjoint key ranges of the same
 * query rows into the result over their union, by their log-sum-exps:
 * with M = max_k lse_k, w_k = exp(lse_k - M),
 *   o = sum_k w_k o_k / sum_k w_k,   lse = M + log(sum_k w_k).
 * A row whose every lse_k is -inf gets o = 0 and lse = -inf; a NaN in any
 * lse_k makes the row NaN. o and lse may each be exactly one of the parts
 * (merge in place); any other overlap with a part is SA_ERR_BAD_STRIDE.
 */
typedef struct sa_merge_desc {
  size_t struct_size; /* set by sa_merge_desc_init */
  size_t batch, heads, len_q, dim_v;
  size_t parts; /* at least 1 */
  /* Strides of every part and of the result (all zero: packed): o as in
   * sa_attention_desc, lse as its lse_at. */
  sa_strides o, lse;
} sa_merge_desc;

#define SA_MERGE_DESC_MIN_SIZE                                                 \
  (offsetof(sa_merge_desc, lse) + sizeof(sa_strides))

static inline void sa_merge_desc_init(sa_merge_desc *desc) {
  memset(desc, 0, sizeof *desc);
  desc->struct_size = sizeof *desc;
}

/* o_parts and lse_parts hold desc->parts pointers each; lse may be NULL
 * when only the combined output is wanted. */
SA_API sa_status sa_attention_merge(const sa_merge_desc *desc,
                                    const float *const *o_parts,
                                    const float *const *lse_parts, float *o,
                                    float *lse);

/*
 * Appends new keys and values to a paged KV cache (the layout of
 * sa_attention_desc.block_table): token t of sequence b goes to key position
 * start[b] + t, in slot (start[b] + t) % page_size of page
 * block_table[b * block_table_stride + (start[b] + t) / page_size]. Every
 * page written must be in the table and in [0, num_pages); on any error
 * nothing is written. For different counts per sequence, call it per
 * sequence (batch 1, block_table and start offset to that sequence).
 */
typedef struct sa_kv_append_desc {
  size_t struct_size; /* set by sa_kv_append_desc_init */
  size_t batch, heads_kv, dim_qk, dim_v;
  size_t tokens;        /* new tokens per sequence */
  const int64_t *start; /* per sequence: its length before the append */
  const int32_t *block_table;
  size_t block_table_stride, page_size, num_pages;
  sa_strides k, v;         /* the cache, as sa_attention_desc's k and v */
  sa_strides k_new, v_new; /* the new rows [batch, heads_kv, tokens, dim];
                              all zero: packed */
  /* --- 0.4: the cache's element types, as in sa_attention_desc (q8_0
   * strides in blocks), and the new rows': the cache's type (copied) or
   * SA_F32 (rounded as sa_convert does: an engine's f32 K and V go into
   * an f16, bf16 or q8_0 cache in one call). */
  sa_dtype k_type, v_type, k_new_type, v_new_type;
} sa_kv_append_desc;

#define SA_KV_APPEND_DESC_MIN_SIZE                                             \
  (offsetof(sa_kv_append_desc, v_new) + sizeof(sa_strides))

static inline void sa_kv_append_desc_init(sa_kv_append_desc *desc) {
  memset(desc, 0, sizeof *desc);
  desc->struct_size = sizeof *desc;
}

SA_API sa_status sa_kv_append(const sa_kv_append_desc *desc, void *k_cache,
                              void *v_cache, const void *k_new,
                              const void *v_new);

/*
 * The standard ALiBi slopes for `heads` heads (Press et al.): 2^(-8 (h+1) / n)
 * for n a power of two; otherwise those of the power of two below, then every
 * other slope of twice that. Writes heads floats.
 */
SA_API sa_status sa_alibi_slopes(size_t heads, float *slopes);

/*
 * Bytes of scratch this call needs on ctx (all its workers, alignment and
 * the per-row length arrays included); with a NULL ctx, what the calling
 * thread's default context needs. This is the workspace_bytes a
 * caller-supplied workspace must have for the call.
 */
SA_API sa_status sa_attention_workspace(const sa_context *ctx,
                                        const sa_attention_desc *desc,
                                        size_t *bytes);

#ifdef __cplusplus
}
#endif

#endif /* SIMDATTN_H */
