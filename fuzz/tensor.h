/*
 * One tensor of a fuzzed call (Q, K, V or O): its strides, a buffer of
 * exactly the extent they give, which units the call may read (live), and
 * the same values widened to f32 for the reference. Units the call may not
 * read hold NaN (q8_0: a NaN scale), so a read that reaches the arithmetic
 * shows in O; an input's buffer ends (or starts) at a PROT_NONE page, so a
 * read past it faults.
 */
#ifndef SA_FUZZ_TENSOR_H
#define SA_FUZZ_TENSOR_H

#include <float.h>

#include "kernels/dtype.h"
#include "tests/reference.h"

typedef struct fz_tensor {
  sa_dtype t;
  size_t dim;          /* elements per row */
  size_t ru;           /* units per row */
  size_t outer, heads; /* index ranges: [outer, heads, rows] rows */
  size_t rows;         /* (batch, len), (1, tokens) or (pages, page) */
  sa_strides st;       /* as passed, in units (all zero: packed) */
  sa_strides rs;       /* resolved */
  size_t units;        /* extent */
  size_t bytes;        /* units * unit bytes */
  unsigned char *n;    /* the library's buffer (exactly bytes long) */
  guarded fence;       /* an input's mapping (base NULL: O, malloc'd) */
  unsigned char *live; /* per unit: the call may read it */
  float *w;            /* widened: units * elements-per-unit floats */
  sa_strides ws;       /* widened strides, in floats */
  unsigned char *mem;  /* what was allocated (O: with canaries) */
} fz_tensor;

static inline size_t fz_per_unit(sa_dtype t) { return t == SA_Q8_0 ? 32 : 1; }

/* How a tensor's strides are laid out. */
enum {
  FZ_PACKED,    /* all zero: the side's packed default */
  FZ_HEAD_MAJ,  /* [outer, heads, rows, dim] with gaps */
  FZ_TOKEN_MAJ, /* [outer, rows, heads, dim] with gaps */
  FZ_BROADCAST, /* head-major with head (or batch) stride 0: inputs only */
  FZ_KINDS
};

/* Strides of kind `kind` in units; `ragged` sides step tokens with seq
 * and never use batch (it gets garbage: the library must ignore it). */
static inline void fz_strides(fz_tensor *x, int kind, size_t pad, int ragged) {
  size_t ru = x->ru, r = x->rows, h = x->heads;
  sa_strides s = {0, 0, 0};
  switch (kind) {
  case FZ_PACKED:
    x->st = s;
    if (ragged)
      x->rs = (sa_strides){0, ru, h * ru};
    else
      x->rs = (sa_strides){h * r * ru, r * ru, ru};
    return;
  case FZ_TOKEN_MAJ:
    s.head = ru + pad;
    s.seq = h * s.head + pad;
    s.batch = r * s.seq + pad;
    break;
  default:
    s.seq = ru + pad;
    s.head = r * s.seq + pad;
    s.batch = h * s.head + pad;
    if (kind == FZ_BROADCAST) {
      if (h > 1)
        s.head = 0;
      else
        s.batch = 0;
    }
    break;
  }
  if (ragged)
    s.batch = pad & 1 ? (size_t)0x7fffffffffffull : 0;
  if (!s.batch && !s.head && !s.seq)
    s.seq = ru; /* one row: keep it from reading as "packed" */
  x->st = x->rs = s;
}

static inline void fz_extent(fz_tensor *x) {
  const sa_strides *s = &x->rs;
  x->units = x->outer && x->rows
                 ? (x->outer - 1) * s->batch + (x->heads - 1) * s->head +
                       (x->rows - 1) * s->seq + x->ru
                 : 0;
  x->bytes = x->units * sa_dtype_unit(x->t);
  size_t k = fz_per_unit(x->t);
  x->ws = (sa_strides){s->batch * k, s->head * k, s->seq * k};
}

/* O: exactly its extent (at least a byte: pointers are never NULL) with
 * `guard` canary bytes on either side, which the harness checks after
 * every call. An input (guard 0): against a PROT_NONE page, after its last
 * byte or (front) before its first, because under clang the SIMD sets are
 * built without AddressSanitizer (fuzz/README.md says why), so the page,
 * not ASan, is what catches a kernel reading past a tensor. */
static inline void fz_alloc(fz_tensor *x, size_t guard, int front) {
  x->mem =
      guard ? xmalloc(x->bytes + 2 * guard) : g_map(x->bytes, front, &x->fence);
  x->n = x->mem + guard;
  x->live = calloc(x->units + 1, 1);
  x->w = xmalloc((x->units * fz_per_unit(x->t) + 1) * sizeof(float));
}

static inline void fz_tensor_free(fz_tensor *x) {
  if (x->fence.base)
    g_free(&x->fence);
  else
    free(x->mem);
  free(x->live), free(x->w);
  x->mem = x->n = x->live = NULL;
  x->w = NULL;
}

/* Marks one row (units [at, at + ru)) live. */
static inline void fz_live_row(fz_tensor *x, size_t at) {
  memset(x->live + at, 1, x->ru);
}

/* ----------------------------------------------------------- values */

/* Planted values, rounded to the tensor's type when stored. */
static const float fz_special[] = {
    NAN,     INFINITY, -INFINITY, 0.0f,     -0.0f,      0x1p-149f,
    -1e-40f, FLT_MIN,  1e-30f,    65504.0f, 65520.0f,   0x1p-24f,
    FLT_MAX, -FLT_MAX, 1e30f,     -1e20f,   3.0e38f,    1.0f,
    -1.0f,   88.7f,    -104.0f,   0.5f,     -0x1p-133f, 1e4f,
};
#define FZ_NSPECIAL (sizeof fz_special / sizeof fz_special[0])

/* One value of distribution `dist` (the input picks one per tensor). */
static inline float fz_value(unsigned dist, float c) {
  float sign = t_next() & 1 ? -1.0f : 1.0f;
  switch (dist % 8) {
  case 0:
    return t_uniform(-1, 1);
  case 1:
    return t_uniform(-8, 8);
  case 2: /* 2^-30 .. 2^30 */
    return sign * ldexpf(t_uniform(1, 2), (int)t_range(0, 60) - 30);
  case 3: /* every binade: denormals to near FLT_MAX */
    return sign * ldexpf(t_uniform(1, 2), (int)t_range(0, 276) - 150);
  case 4: /* small integers: exact products, tied scores */
    return (float)((int)t_range(0, 6) - 3);
  case 5:
    return c;
  case 6:
    return t_next() % 8 ? 0.0f : t_uniform(-2, 2);
  default: /* large but tame for V, not for Q.K */
    return sign * ldexpf(t_uniform(1, 2), (int)t_range(20, 60));
  }
}

/* Stores v as element e of unit u, rounded to the tensor's type (q8_0: v
 * is the block's scale when e is 32, else quant e gets round(v) clamped to
 * int8). */
static inline void fz_store(fz_tensor *x, size_t u, size_t e, float v) {
  unsigned char *p = x->n + u * sa_dtype_unit(x->t);
  uint16_t h;
  switch (x->t) {
  case SA_F32:
    memcpy(p, &v, 4);
    break;
  case SA_F16:
  case SA_BF16:
    h = x->t == SA_F16 ? sa_f32_to_f16(v) : sa_f32_to_bf16(v);
    memcpy(p, &h, 2);
    break;
  default: {
    sa_block_q8_0 *b = (sa_block_q8_0 *)(void *)p;
    if (e == 32) {
      b->scale = sa_f32_to_f16(v);
    } else {
      float r = v != v ? 0.0f : v < -128.0f ? -128.0f : v > 127.0f ? 127.0f : v;
      b->q[e] = (int8_t)(int)roundf(r);
    }
  }
  }
}

/* Every unit NaN (a q8_0 block: NaN scale), then the live units drawn
 * from distribution `dist`. */
static inline void fz_fill(fz_tensor *x, unsigned dist) {
  float c = fz_value(dist % 5, 0.0f);
  for (size_t u = 0; u < x->units; u++) {
    if (x->t == SA_Q8_0) {
      sa_block_q8_0 *b = (sa_block_q8_0 *)(void *)(x->n + u * sizeof *b);
      b->scale = 0x7e00;
      memset(b->q, 1, 32);
      if (!x->live[u])
        continue;
      float s = fabsf(fz_value(dist, c)) / 127.0f;
      fz_store(x, u, 32, s);
      for (size_t e = 0; e < 32; e++)
        fz_store(x, u, e,
                 dist % 8 == 4   ? (float)((int)t_range(0, 6) - 3)
                 : dist % 8 == 5 ? 100.0f
                 : dist % 8 == 6 ? (t_next() % 8 ? 0.0f : 50.0f)
                                 : (float)((int)t_range(0, 254) - 127));
      continue;
    }
    fz_store(x, u, 0, x->live[u] ? fz_value(dist, c) : NAN);
  }
}

/* Element-wise widening for the reference, from the stored bits. */
static inline void fz_widen(fz_tensor *x) {
  for (size_t u = 0; u < x->units; u++) {
    const unsigned char *p = x->n + u * sa_dtype_unit(x->t);
    if (x->t == SA_Q8_0)
      sa_dequantize_q8_0((const sa_block_q8_0 *)(const void *)p, x->w + 32 * u);
    else
      x->w[u] = sa_load_elem(x->t, p, 0);
  }
}

/* The largest finite magnitude among live values, and whether any live
 * value is not finite. */
static inline double fz_max_abs(const fz_tensor *x, int *nonfinite) {
  double m = 0.0;
  size_t k = fz_per_unit(x->t);
  for (size_t u = 0; u < x->units; u++)
    for (size_t e = 0; x->live[u] && e < k; e++) {
      double a = fabs((double)x->w[u * k + e]);
      if (!isfinite(a))
        *nonfinite = 1;
      else if (a > m)
        m = a;
    }
  return m;
}

#endif
