/*
 * Bad calls: one defect planted in a fuzzed call that was valid, and the
 * status the header promises for it. The harness then holds every kernel
 * set to that status (scalar first, every other set to scalar's) and to
 * the header's rule that a call that fails writes nothing: O, LSE and every
 * input keep every byte.
 *
 * A defect whose precondition the case lacks (a table entry to spoil in a
 * call that has no table, an aliasing stride with one row) leaves the call
 * as it was, valid. Spoilt arrays are copies of exactly the original's
 * size, so the library reading past one is still AddressSanitizer's to see.
 */
#ifndef SA_FUZZ_INVALID_H
#define SA_FUZZ_INVALID_H

#include "fuzz/fuzz_case.h"

/* One call as passed: the descriptor (in `raw`, which may be bigger than
 * it, for struct_size defects), the pointers, and what it must return. */
typedef struct fz_call {
  union {
    sa_attention_desc d;
    unsigned char raw[sizeof(sa_attention_desc) + 16];
  } u;
  const sa_attention_desc *desc;
  const void *q, *k, *v;
  void *o;
  sa_status want;
  const char *what; /* the defect, or "valid" */
  void *owned[2];   /* spoilt copies, freed with the call */
} fz_call;

/* An array of the call's own, `bytes` long: a copy of src (NULL: zeros). */
static inline void *fz_copy(fz_call *call, const void *src, size_t bytes) {
  void *p = calloc(bytes, 1);
  if (!p)
    abort();
  if (src)
    memcpy(p, src, bytes);
  call->owned[call->owned[0] ? 1 : 0] = p;
  return p;
}

static inline void fz_call_free(fz_call *call) {
  free(call->owned[0]);
  free(call->owned[1]);
}

/* Pages batch item b uses. */
static inline size_t fz_pages_used(const sa_attention_desc *d, size_t b) {
  return (seq_len_kv(d, b) + d->page_size - 1) / d->page_size;
}

static inline void fz_defect(fz_call *call, const char *what, sa_status want) {
  call->what = what;
  call->want = want;
}

/* Defects of shapes, enums, scalars and element types. */
static inline void fz_spoil_fields(fz_call *call, const fz_case *c,
                                   unsigned id) {
  sa_attention_desc *d = &call->u.d;
  switch (id) {
  case 0:
    d->batch = 0, fz_defect(call, "batch 0", SA_ERR_BAD_SHAPE);
    break;
  case 1:
    d->heads_q = 0, fz_defect(call, "heads_q 0", SA_ERR_BAD_SHAPE);
    break;
  case 2:
    d->len_kv = 0, fz_defect(call, "len_kv 0", SA_ERR_BAD_SHAPE);
    break;
  case 3:
    d->dim_qk = SA_MAX_DIM + 1,
    fz_defect(call, "dim_qk 2^31+1", SA_ERR_BAD_SHAPE);
    break;
  case 4:
    d->heads_kv = d->heads_q + 1;
    fz_defect(call, "heads_q not a multiple of heads_kv", SA_ERR_BAD_HEADS);
    break;
  case 5:
    d->mask = (sa_mask)3, fz_defect(call, "mask 3", SA_ERR_BAD_ARGUMENT);
    break;
  case 6:
    d->algorithm = (sa_algorithm)3,
    fz_defect(call, "algo 3", SA_ERR_BAD_ARGUMENT);
    break;
  case 7:
    d->scale = NAN, fz_defect(call, "scale NaN", SA_ERR_BAD_ARGUMENT);
    break;
  case 8:
    d->scale = -INFINITY, fz_defect(call, "scale -inf", SA_ERR_BAD_ARGUMENT);
    break;
  case 9:
    d->q_type = SA_Q8_0, fz_defect(call, "q_type q8_0", SA_ERR_BAD_ARGUMENT);
    break;
  case 10:
    d->o_type = (sa_dtype)7, fz_defect(call, "o_type 7", SA_ERR_BAD_ARGUMENT);
    break;
  case 11:
    if (d->dim_qk % 32) {
      d->k_type = SA_Q8_0;
      fz_defect(call, "q8_0 K with dim_qk not whole blocks", SA_ERR_BAD_SHAPE);
    } else {
      d->k_type = (sa_dtype)4, fz_defect(call, "k_type 4", SA_ERR_BAD_ARGUMENT);
    }
    break;
  case 12:
    d->window = 1, d->window_left = -2;
    fz_defect(call, "window_left -2", SA_ERR_BAD_ARGUMENT);
    break;
  case 13:
    d->window = 1, d->window_right = INT64_MIN;
    fz_defect(call, "window_right INT64_MIN", SA_ERR_BAD_ARGUMENT);
    break;
  case 14:
    d->softcap = -1.0f, fz_defect(call, "softcap -1", SA_ERR_BAD_ARGUMENT);
    break;
  case 15:
    d->softcap = NAN, fz_defect(call, "softcap NaN", SA_ERR_BAD_ARGUMENT);
    break;
  case 16:
    d->softcap = INFINITY, fz_defect(call, "softcap inf", SA_ERR_BAD_ARGUMENT);
    break;
  case 17:
    d->v_type = (sa_dtype)9, fz_defect(call, "v_type 9", SA_ERR_BAD_ARGUMENT);
    break;
  default:
    break;
  }
  (void)c;
}

/* Defects of the per-head and per-batch arrays and the masks. */
static inline void fz_spoil_arrays(fz_call *call, const fz_case *c,
                                   unsigned id) {
  sa_attention_desc *d = &call->u.d;
  size_t h = c->mutation % c->d.heads_q, b = c->mutation % c->d.batch;
  float *f;
  int64_t *n;
  switch (id) {
  case 18:
    f = fz_copy(call, c->slopes, d->heads_q * sizeof(float));
    f[h] = NAN, d->alibi_slopes = f;
    fz_defect(call, "an ALiBi slope NaN", SA_ERR_BAD_ARGUMENT);
    break;
  case 19:
  case 20:
    if (!c->sinks)
      break;
    f = fz_copy(call, c->sinks, d->heads_q * sizeof(float));
    f[h] = id == 19 ? INFINITY : NAN, d->sinks = f;
    fz_defect(call, "a sink +inf or NaN", SA_ERR_BAD_ARGUMENT);
    break;
  case 21:
  case 22:
    if (!c->valid)
      break;
    n = fz_copy(call, c->valid, d->batch * sizeof(int64_t));
    n[b] = id == 21 ? (int64_t)d->len_kv + 1 : -1, d->len_kv_valid = n;
    fz_defect(call, "len_kv_valid outside [0, len_kv]", SA_ERR_BAD_SHAPE);
    break;
  case 23:
    if (c->add)
      d->mask_add_layout.keys = d->len_kv + 1;
    else if (c->keep)
      d->mask_bool_layout.keys = d->len_kv + 1;
    else
      break;
    fz_defect(call, "a mask's keys past len_kv", SA_ERR_BAD_SHAPE);
    break;
  default:
    break;
  }
}

/* Strides of x that span past the address space, when some index of x
 * is above 0 (with one row of one head, no stride is ever multiplied). */
static inline int huge_strides(const fz_tensor *x, sa_strides *s) {
  if (!x->outer || !x->rows || (x->outer < 2 && x->heads < 2 && x->rows < 2))
    return 0;
  *s = (sa_strides){SIZE_MAX / 4, SIZE_MAX / 4, SIZE_MAX / 4};
  return 1;
}

/* Defects of strides and of where O and LSE lie. */
static inline void fz_spoil_memory(fz_call *call, const fz_case *c,
                                   unsigned id) {
  sa_attention_desc *d = &call->u.d;
  const fz_tensor *o = &c->o, *q = &c->q, *k = &c->k;
  int rows = o->outer && o->rows;
  switch (id) {
  case 24: /* two heads' rows on one address */
    if (!rows || d->heads_q < 2)
      break;
    d->o = o->rs, d->o.head = 0;
    fz_defect(call, "O's head stride 0", SA_ERR_BAD_STRIDE);
    break;
  case 25: /* rows overlapping by an element */
    if (!rows || o->rows < 2 || d->dim_v < 2)
      break;
    d->o = o->rs, d->o.seq = d->dim_v - 1;
    fz_defect(call, "O's rows overlap", SA_ERR_BAD_STRIDE);
    break;
  case 26:
    if (!o->bytes || !k->bytes)
      break;
    call->o = (void *)k->n;
    fz_defect(call, "O is K", SA_ERR_BAD_STRIDE);
    break;
  case 27: /* O on Q without being exactly Q */
    if (!o->bytes || !q->bytes || c->in_place ||
        (d->q_type == d->o_type && d->dim_qk == d->dim_v &&
         !memcmp(&q->rs, &o->rs, sizeof q->rs)))
      break;
    call->o = (void *)q->n;
    fz_defect(call, "O on Q", SA_ERR_BAD_STRIDE);
    break;
  case 28:
    if (!d->lse || !c->lse_n || !o->bytes)
      break;
    /* on it, or a float into it when it is longer than that */
    d->lse =
        (float *)call->o + (o->bytes > sizeof(float) ? c->mutation % 2 : 0);
    fz_defect(call, "LSE on O", SA_ERR_BAD_STRIDE);
    break;
  case 29:
    if (!d->lse || !c->lse_n || !k->bytes)
      break;
    d->lse = (float *)(void *)k->n;
    fz_defect(call, "LSE on K", SA_ERR_BAD_STRIDE);
    break;
  case 30:
    if (!d->lse || !c->lse_n || !c->add)
      break;
    d->lse = c->add;
    fz_defect(call, "LSE on the additive mask", SA_ERR_BAD_STRIDE);
    break;
  case 31: /* a span past the address space */
  case 32:
    if (id == 31 ? huge_strides(q, &d->q) : huge_strides(k, &d->k))
      fz_defect(call, "strides that overflow", SA_ERR_OVERFLOW);
    break;
  default:
    break;
  }
}

/* Defects of the ragged and paged sides. */
static inline void fz_spoil_sides(fz_call *call, const fz_case *c,
                                  unsigned id) {
  sa_attention_desc *d = &call->u.d;
  size_t b = c->mutation % c->d.batch, used = 0, most = 0;
  int32_t *cu;
  for (size_t i = 0; c->table && i < c->d.batch; i++) {
    size_t p = fz_pages_used(&c->d, i);
    used += p;
    most = p > most ? p : most;
  }
  switch (id) {
  case 33:
    if (!c->cuq)
      break;
    cu = fz_copy(call, c->cuq, (d->batch + 1) * sizeof *cu);
    cu[0] = -1, d->cu_seqlens_q = cu;
    fz_defect(call, "cu_seqlens_q[0] -1", SA_ERR_BAD_SHAPE);
    break;
  case 34:
    if (!c->cukv)
      break;
    cu = fz_copy(call, c->cukv, (d->batch + 1) * sizeof *cu);
    cu[b + 1] = cu[b] - 1, d->cu_seqlens_kv = cu;
    fz_defect(call, "cu_seqlens_kv decreasing", SA_ERR_BAD_SHAPE);
    break;
  case 35:
    if (!c->cuq)
      break;
    cu = fz_copy(call, c->cuq, (d->batch + 1) * sizeof *cu);
    cu[d->batch] = cu[d->batch - 1] + (int32_t)d->len_q + 1;
    d->cu_seqlens_q = cu;
    fz_defect(call, "a sequence longer than len_q", SA_ERR_BAD_SHAPE);
    break;
  case 36:
  case 37: /* a page the call reads, outside the pool */
    if (!used)
      break;
    cu = fz_copy(call, c->table, c->table_n * sizeof *cu);
    for (size_t i = 0; i < d->batch; i++)
      if (fz_pages_used(&c->d, i)) {
        cu[i * d->block_table_stride] = id == 36 ? (int32_t)d->num_pages : -5;
        break;
      }
    d->block_table = cu;
    fz_defect(call, "a block_table entry outside the pool",
              SA_ERR_BAD_ARGUMENT);
    break;
  case 38:
    if (!most)
      break;
    d->block_table_stride = most - 1;
    fz_defect(call, "block_table_stride below a sequence's pages",
              SA_ERR_BAD_SHAPE);
    break;
  case 39:
    if (!d->block_table)
      break;
    d->algorithm = SA_ALGO_THREE_PASS;
    fz_defect(call, "paged with three-pass", SA_ERR_BAD_ARGUMENT);
    break;
  case 40:
    if (!d->block_table)
      break;
    d->cu_seqlens_kv = fz_copy(call, NULL, (d->batch + 1) * sizeof *cu);
    fz_defect(call, "paged and ragged keys", SA_ERR_BAD_ARGUMENT);
    break;
  case 41:
    if (!d->block_table)
      break;
    if (b)
      d->page_size = 0;
    else
      d->num_pages = 0;
    fz_defect(call, "page_size or num_pages 0", SA_ERR_BAD_SHAPE);
    break;
  default:
    break;
  }
}

/* The struct and the pointers themselves. */
static inline void fz_spoil_call(fz_call *call, unsigned id) {
  switch (id) {
  case 42:
    call->u.d.struct_size = 8;
    fz_defect(call, "struct_size 8", SA_ERR_STRUCT_SIZE);
    break;
  case 43: /* a field this library does not know, set */
    call->u.d.struct_size = sizeof call->u.raw;
    call->u.raw[sizeof(sa_attention_desc) + 3] = 1;
    fz_defect(call, "an unknown field set", SA_ERR_STRUCT_SIZE);
    break;
  case 44:
    call->q = NULL, fz_defect(call, "q NULL", SA_ERR_NULL_POINTER);
    break;
  case 45:
    call->o = NULL, fz_defect(call, "o NULL", SA_ERR_NULL_POINTER);
    break;
  case 46:
    call->desc = NULL, fz_defect(call, "desc NULL", SA_ERR_NULL_POINTER);
    break;
  default:
    break;
  }
}

#define FZ_DEFECTS 47

/* The call case c describes, spoilt by its mutation byte when that byte
 * is 160 or more (about a third of inputs). */
static inline void fz_call_make(fz_call *call, const fz_case *c, void *q,
                                void *o) {
  memset(call, 0, sizeof *call);
  call->u.d = c->d;
  call->desc = &call->u.d;
  call->q = q, call->k = c->k.n, call->v = c->v.n, call->o = o;
  call->want = SA_OK;
  call->what = "valid";
  if (c->mutation < 160)
    return;
  unsigned id = (c->mutation - 160) % FZ_DEFECTS;
  fz_spoil_fields(call, c, id);
  fz_spoil_arrays(call, c, id);
  fz_spoil_memory(call, c, id);
  fz_spoil_sides(call, c, id);
  fz_spoil_call(call, id);
}

#endif
