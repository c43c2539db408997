/*
 * simdattn — hand-written SIMD kernels for transformer attention on CPUs.
 *
 * The one public header. Everything a caller needs: status codes, the registry
 * of kernel sets (usable directly by an outside engine), CPU feature queries,
 * the context (chosen kernel set, worker threads) and the attention call.
 *
 * All tensors are fp32. Sizes and strides are counted in elements (floats),
 * never bytes. Every call returns a status; on any status other than SA_OK
 * nothing has been written to the caller's output.
 */
#ifndef SIMDATTN_H
#define SIMDATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shared library exports only what this header declares. */
#if defined(__GNUC__) && defined(SA_BUILDING_LIBRARY)
#define SA_API __attribute__((visibility("default")))
#else
#define SA_API
#endif

#define SA_VERSION_MAJOR 0
#define SA_VERSION_MINOR 1
#define SA_VERSION_PATCH 0
#define SA_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- status */

typedef enum sa_status {
  SA_OK = 0,
  SA_ERR_NULL_POINTER,    /* a required pointer argument is NULL */
  SA_ERR_BAD_SHAPE,       /* a dimension is zero or larger than SA_MAX_DIM */
  SA_ERR_BAD_HEADS,       /* heads_q is not a multiple of heads_kv */
  SA_ERR_BAD_STRIDE,      /* rows overlap, or output elements alias */
  SA_ERR_BAD_ARGUMENT,    /* enum out of range, scale negative or not finite */
  SA_ERR_OVERFLOW,        /* a size or offset product overflows size_t */
  SA_ERR_UNKNOWN_ISA,     /* no kernel set of that name is compiled in */
  SA_ERR_UNSUPPORTED_ISA, /* that kernel set needs features this CPU lacks */
  SA_ERR_NO_MEMORY,       /* an allocation failed */
  SA_ERR_THREADS,         /* worker threads could not be started */
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
  SA_CPU_NEON = 1u << 16, /* AArch64 Advanced SIMD */
  SA_CPU_ASIMDHP = 1u << 17,
  SA_CPU_SVE = 1u << 18,
};

/* Features of this CPU that the OS lets us use; detected once, thread-safe. */
SA_API uint64_t sa_cpu_features(void);

/* Writes "AMD EPYC ... | avx2 fma avx512f ..." into buf (always terminated).
 * Returns the length the full text needs, like snprintf. */
SA_API size_t sa_cpu_describe(char *buf, size_t size);

/* Space-separated names of the bits set in `features`. Static storage. */
SA_API const char *sa_cpu_feature_names(uint64_t features, char *buf,
                                        size_t size);

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
 *          l unchanged.
 * wsum:   o[i][c] = beta[i] * o[i][c] + sum_j p[i][j] * v[j][c],  c < dv;
 *          beta NULL means overwrite (o is never read then).
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

/*
 * A kernel set: a named table of the four micro-kernels plus what the CPU must
 * have to run them. Sets are static and live for the whole program. New
 * optional slots are only ever appended, so engines holding a pointer keep
 * working across versions.
 */
typedef struct sa_kernel_set {
  const char *name;     /* what a user types: "avx512", "avx2-polyexp" */
  const char *isa;      /* "scalar", "avx2", "avx512", "neon" */
  const char *exp_impl; /* how exp is computed: "libm", "sleef-u10", "poly" */
  const char *about;    /* one line: register blocking, exp accuracy */
  unsigned vector_bits; /* 0 for scalar */
  int priority;         /* the best runnable set has the highest priority */
  uint64_t requires;    /* SA_CPU_* bits the CPU must have */
  sa_score_fn score;
  sa_softmax_fn softmax;
  sa_softmax_online_fn softmax_online;
  sa_wsum_fn wsum;
} sa_kernel_set;

/* Every kernel set compiled into this library, runnable here or not. */
SA_API size_t sa_kernel_set_count(void);
SA_API const sa_kernel_set *
sa_kernel_set_at(size_t index); /* NULL past the end */

/* NULL if no compiled set has that name. */
SA_API const sa_kernel_set *sa_kernel_set_find(const char *name);

/* 1 if this CPU (and OS) can run the set, else 0. */
SA_API int sa_kernel_set_supported(const sa_kernel_set *set);

/*
 * The set used when nothing is asked for: SIMDATTN_ISA if set (and valid),
 * else the highest-priority runnable set. Chosen once, thread-safely.
 * Never NULL (the scalar set runs everywhere); if SIMDATTN_ISA names a set
 * that cannot be used, the status of sa_kernel_set_select explains why and
 * this function falls back to the best runnable set.
 */
SA_API const sa_kernel_set *sa_kernel_set_default(void);

/* The highest-priority runnable set, ignoring SIMDATTN_ISA. */
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
  const char *isa;   /* NULL: SIMDATTN_ISA, else the best runnable set */
  int num_threads;   /* 0: SIMDATTN_NUM_THREADS, else one per core */
  sa_pin_policy pin; /* how workers are placed */
  size_t block_q;    /* query rows per tile; 0 = library default */
  size_t block_kv;   /* keys per fused step; 0 = library default */
} sa_context_options;

/* A context runs one sa_attention at a time (its workers and scratch are
 * shared by the call); give each calling thread its own context. */
typedef struct sa_context sa_context;

/* opts may be NULL (all defaults). On error *out is untouched. */
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

typedef struct sa_attention_desc {
  size_t batch;
  size_t heads_q;
  size_t heads_kv; /* heads_q % heads_kv == 0: MHA, GQA, MQA (heads_kv = 1) */
  size_t len_q;
  size_t len_kv; /* cross-attention when != len_q */
  size_t dim_qk;
  size_t dim_v;
  float scale; /* 0: 1/sqrt(dim_qk); fold a temperature in here */
  sa_mask mask;
  sa_algorithm algorithm;
  sa_strides q, k, v, o;
} sa_attention_desc;

/*
 * O = softmax(scale * Q Kᵀ, masked) V for every batch and query head; query
 * head h reads key/value head h / (heads_q / heads_kv). A query row that can
 * see no key gets zeros. ctx may be NULL: one thread, default kernel set.
 */
SA_API sa_status sa_attention(sa_context *ctx, const sa_attention_desc *desc,
                              const float *q, const float *k, const float *v,
                              float *o);

/* Floats of scratch the call allocates (per worker), for planning memory. */
SA_API sa_status sa_attention_workspace(const sa_context *ctx,
                                        const sa_attention_desc *desc,
                                        size_t *floats_per_worker);

#ifdef __cplusplus
}
#endif

#endif /* SIMDATTN_H */
