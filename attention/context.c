/*
 * The context: the chosen kernel set, the worker pool, tile sizes and each
 * worker's scratch. Everything is resolved here, once, so the attention call
 * itself only validates shapes and runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "internal.h"
#include "topology.h"

/* Parses a positive decimal int from the environment; 0 if unset. */
static sa_status env_int(const char *name, int *out) {
  const char *s = getenv(name);
  *out = 0;
  if (!s || !s[0])
    return SA_OK;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 1 || v > 4096)
    return sa_fail(SA_ERR_BAD_ARGUMENT,
                   "%s='%.32s' is not a thread count in "
                   "[1, 4096]",
                   name, s);
  *out = (int)v;
  return SA_OK;
}

static sa_status env_pin(sa_pin_policy *pin) {
  const char *s = getenv("SIMDATTN_PIN");
  *pin = SA_PIN_CORES;
  if (!s || !s[0] || strcmp(s, "cores") == 0)
    return SA_OK;
  if (strcmp(s, "none") == 0) {
    *pin = SA_PIN_NONE;
    return SA_OK;
  }
  return sa_fail(SA_ERR_BAD_ARGUMENT,
                 "SIMDATTN_PIN='%.32s' is neither 'cores' nor 'none'", s);
}

sa_status sa_context_create(const sa_context_options *opts, sa_context **out) {
  sa_context_options o = {0};
  if (!out)
    return sa_fail(SA_ERR_NULL_POINTER, "sa_context_create: out is NULL");
  if (opts)
    o = *opts;
  if (o.num_threads < 0 || o.num_threads > 4096 ||
      (unsigned)o.pin > SA_PIN_NONE || o.block_q > SA_MAX_DIM ||
      o.block_kv > SA_MAX_DIM)
    return sa_fail(SA_ERR_BAD_ARGUMENT, "sa_context_options out of range");

  const char *isa = o.isa ? o.isa : getenv("SIMDATTN_ISA");
  const sa_kernel_set *ks;
  sa_status st = sa_kernel_set_select(isa, &ks);
  if (st != SA_OK)
    return st;

  int nthreads = o.num_threads;
  if (nthreads == 0 && (st = env_int("SIMDATTN_NUM_THREADS", &nthreads)))
    return st;
  if (nthreads == 0)
    nthreads = sa_pool_default_threads();
  sa_pin_policy pin = o.pin;
  if (pin == SA_PIN_DEFAULT && (st = env_pin(&pin)))
    return st;

  sa_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx)
    return sa_fail(SA_ERR_NO_MEMORY, "context");
  ctx->ks = ks;
  ctx->block_q = o.block_q ? o.block_q : SA_DEFAULT_BLOCK_Q;
  ctx->block_kv = o.block_kv ? o.block_kv : SA_DEFAULT_BLOCK_KV;
  if ((st = sa_pool_create(nthreads, pin, &ctx->pool))) {
    free(ctx);
    return st;
  }
  ctx->nthreads = sa_pool_size(ctx->pool);
  ctx->scratch = calloc((size_t)ctx->nthreads, sizeof *ctx->scratch);
  if (!ctx->scratch) {
    sa_pool_destroy(ctx->pool);
    free(ctx);
    return sa_fail(SA_ERR_NO_MEMORY, "context scratch");
  }
  if (sa_verbose())
    fprintf(stderr, "simdattn: context: kernel set %s (%s), %d thread(s), %s\n",
            ks->name, ks->about, ctx->nthreads,
            sa_pool_pinned(ctx->pool) ? "pinned one per core" : "unpinned");
  *out = ctx;
  return SA_OK;
}

void sa_context_destroy(sa_context *ctx) {
  if (!ctx)
    return;
  sa_pool_destroy(ctx->pool);
  for (int w = 0; w < ctx->nthreads; w++) {
    free(ctx->scratch[w].buf);
    free(ctx->scratch[w].len);
  }
  free(ctx->scratch);
  free(ctx);
}

const sa_kernel_set *sa_context_kernel_set(const sa_context *ctx) {
  return ctx ? ctx->ks : NULL;
}
int sa_context_num_threads(const sa_context *ctx) {
  return ctx ? ctx->nthreads : 0;
}
int sa_context_pinned(const sa_context *ctx) {
  return ctx ? sa_pool_pinned(ctx->pool) : 0;
}
