/*
 * The context: the chosen kernel set, the worker pool, tile sizes and each
 * worker's scratch. Everything is resolved here, once, so the attention call
 * itself only validates shapes and runs. Also here: the one-call-at-a-time
 * rule (busy), the restart after fork(), and the per-thread context that
 * NULL-context calls use.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/internal.h"
#include "core/env.h"
#include "core/errors.h"
#include "threads/fork.h"
#include "threads/topology.h"

size_t sa_scratch_bytes(size_t floats, size_t lens) {
  return sa_round64(floats * sizeof(float)) + sa_round64(lens * sizeof(size_t));
}

static sa_status check_options(const sa_context_options *o) {
  if (o->num_threads < 0 || o->num_threads > 4096)
    return sa_fail(SA_ERR_BAD_ARGUMENT, "num_threads = %d is outside [0, 4096]",
                   o->num_threads);
  if ((unsigned)o->pin > SA_PIN_NONE)
    return sa_fail(SA_ERR_BAD_ARGUMENT, "pin = %d is not an sa_pin_policy",
                   (int)o->pin);
  if (o->block_q > SA_MAX_DIM || o->block_kv > SA_MAX_DIM)
    return sa_fail(SA_ERR_BAD_ARGUMENT, "block_q or block_kv above 2^31");
  if (o->first_core < 0 || o->first_core > 65536)
    return sa_fail(SA_ERR_BAD_ARGUMENT, "first_core = %d is outside [0, 65536]",
                   o->first_core);
  if (!o->workspace != !o->workspace_bytes)
    return sa_fail(SA_ERR_BAD_ARGUMENT,
                   "workspace and workspace_bytes must be given together");
  if (o->spin_us < -1 || o->spin_us > SA_SPIN_MAX_US)
    return sa_fail(SA_ERR_BAD_ARGUMENT,
                   "spin_us = %d is outside [-1, %d] (-1: never spin, 0: "
                   "the default)",
                   o->spin_us, SA_SPIN_MAX_US);
  return SA_OK;
}

static void context_free(sa_context *ctx) {
  if (ctx->pool)
    sa_pool_destroy(ctx->pool);
  for (int w = 0; ctx->scratch && !ctx->workspace && w < ctx->nthreads; w++) {
    free(ctx->scratch[w].buf);
    free(ctx->scratch[w].len);
  }
  free(ctx->scratch);
  if (!ctx->workspace)
    free(ctx->split);
  free((char *)ctx->pool_cfg.cpus);
  free(ctx);
}

/* A context from resolved settings: no option or environment is read here. */
static sa_status context_new(const sa_kernel_set *ks, const sa_pool_config *cfg,
                             const sa_context_options *o, sa_context **out) {
  sa_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx)
    return sa_fail(SA_ERR_NO_MEMORY, "context");
  atomic_init(&ctx->busy, 0);
  ctx->ks = ks;
  ctx->pool_cfg = *cfg;
  ctx->pool_cfg.cpus = NULL;
  if (cfg->cpus && !(ctx->pool_cfg.cpus = strdup(cfg->cpus))) {
    free(ctx);
    return sa_fail(SA_ERR_NO_MEMORY, "context");
  }
  ctx->block_q = o->block_q; /* 0: chosen per call by the call's shape */
  ctx->block_kv = o->block_kv;
  sa_status st = sa_pool_create(&ctx->pool_cfg, &ctx->pool);
  if (st != SA_OK) {
    ctx->pool = NULL;
    context_free(ctx);
    return st;
  }
  ctx->nthreads = sa_pool_size(ctx->pool);
  ctx->scratch = calloc((size_t)ctx->nthreads, sizeof *ctx->scratch);
  if (!ctx->scratch) {
    context_free(ctx);
    return sa_fail(SA_ERR_NO_MEMORY, "context scratch");
  }
  if (o->workspace) {
    /* each worker's share starts on a cache line of its own */
    uintptr_t base = (uintptr_t)o->workspace;
    size_t pad = (size_t)(-base & 63);
    ctx->workspace_bytes =
        o->workspace_bytes > pad ? o->workspace_bytes - pad : 0;
    ctx->workspace = (unsigned char *)o->workspace + pad;
  }
  *out = ctx;
  return SA_OK;
}

sa_status sa_context_create(const sa_context_options *opts, sa_context **out) {
  sa_context_options o;
  sa_status st;
  if (!out)
    return sa_fail(SA_ERR_NULL_POINTER, "sa_context_create: out is NULL");
  if (opts) {
    if ((st = sa_struct_load("sa_context_options", opts,
                             SA_CONTEXT_OPTIONS_MIN_SIZE, sizeof o, &o)))
      return st;
  } else {
    sa_context_options_init(&o);
  }
  if ((st = check_options(&o)))
    return st;

  const sa_kernel_set *ks;
  st = o.isa ? sa_kernel_set_select(o.isa, &ks) : sa_kernel_set_default(&ks);
  if (st != SA_OK)
    return st;

  sa_pool_config cfg = {o.num_threads, o.pin, o.cpus, o.first_core, o.spin_us};
  if (cfg.nthreads == 0) {
    if ((st = sa_env_num_threads(&cfg.nthreads)))
      return st;
    /* more than the CPUs we may use only makes workers take turns */
    int cpus = cfg.nthreads > 1 ? sa_topology_cpus() : cfg.nthreads;
    if (cfg.nthreads > cpus) {
      if (sa_verbose())
        fprintf(stderr,
                "simdattn: SIMDATTN_NUM_THREADS=%d clamped to the %d CPU(s) "
                "this process may use\n",
                cfg.nthreads, cpus);
      cfg.nthreads = cpus;
    }
  }
  if (cfg.nthreads == 0)
    cfg.nthreads = sa_pool_default_threads(o.cpus, o.first_core);
  /* one worker is the caller, which is never bound: SIMDATTN_PIN does not
   * matter then, so a bad value of it cannot fail such a context */
  if (cfg.pin == SA_PIN_DEFAULT) {
    if (cfg.nthreads == 1)
      cfg.pin = SA_PIN_CORES;
    else if ((st = sa_env_pin(&cfg.pin)))
      return st;
  }

  sa_context *ctx;
  if ((st = context_new(ks, &cfg, &o, &ctx)))
    return st;
  if (sa_verbose()) {
    fprintf(stderr, "simdattn: context: kernel set %s (%s), %d thread(s), %s\n",
            ks->name, ks->about, ctx->nthreads,
            sa_pool_pinned(ctx->pool) ? "pinned one per core" : "unpinned");
    if (o.block_q || o.block_kv)
      fprintf(stderr,
              "simdattn: context: blocks %zu x %zu (options; 0: "
              "default)\n",
              o.block_q, o.block_kv);
    else
      fprintf(stderr,
              "simdattn: context: L2 %zu KiB a core: fused prefill blocks "
              "%d x %d where dim_qk + dim_v <= %zu, else %d x %d\n",
              sa_topology_l2() >> 10, SA_WIDE_BLOCK_Q, SA_WIDE_BLOCK_KV,
              sa_wide_dims(), SA_DEFAULT_BLOCK_Q, SA_DEFAULT_BLOCK_KV);
  }
  *out = ctx;
  return SA_OK;
}

void sa_context_destroy(sa_context *ctx) {
  if (ctx)
    context_free(ctx);
}

sa_status sa_context_enter(sa_context *ctx) {
  unsigned mine = sa_fork_generation() + 1;
  unsigned held = atomic_load_explicit(&ctx->busy, memory_order_relaxed);
  if (held == mine ||
      !atomic_compare_exchange_strong_explicit(
          &ctx->busy, &held, mine, memory_order_acquire, memory_order_relaxed))
    return sa_fail(SA_ERR_BUSY,
                   "another sa_attention is running on this context; give "
                   "each calling thread its own context");
  if (held != 0) {
    /* Taken over from a parent thread that was inside a call when fork()
     * copied us: its scratch may be half regrown (freed, not yet replaced).
     * Forget it, leaking it, rather than use or free it. */
    for (int w = 0; !ctx->workspace && w < ctx->nthreads; w++)
      ctx->scratch[w] = (sa_scratch){NULL, NULL, 0, 0};
    if (!ctx->workspace) {
      ctx->split = NULL;
      ctx->split_floats = 0;
    }
  }
  if (sa_pool_forked(ctx->pool)) {
    /* a fork() child: the workers stayed behind in the parent */
    sa_pool *fresh;
    sa_status st = sa_pool_create(&ctx->pool_cfg, &fresh);
    if (st != SA_OK) {
      sa_context_leave(ctx);
      return st;
    }
    sa_pool_destroy(ctx->pool);
    ctx->pool = fresh;
  }
  return SA_OK;
}

void sa_context_leave(sa_context *ctx) {
  atomic_store_explicit(&ctx->busy, 0, memory_order_release);
}

/* The per-thread context of NULL-context calls: the fast pointer in a
 * _Thread_local, the key only so that thread exit frees it. */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int key_ok;
static _Thread_local sa_context *thread_ctx;

static void thread_ctx_free(void *p) {
  thread_ctx = NULL; /* a later destructor of this thread may still call */
  sa_context_destroy(p);
}
static void make_key(void) {
  key_ok = pthread_key_create(&key, thread_ctx_free) == 0;
}

sa_status sa_context_thread_default(sa_context **out) {
  if (thread_ctx) {
    *out = thread_ctx;
    return SA_OK;
  }
  const sa_kernel_set *ks;
  sa_status st = sa_kernel_set_default(&ks);
  if (st != SA_OK)
    return st;
  pthread_once(&key_once, make_key);
  if (!key_ok)
    return sa_fail(SA_ERR_NO_MEMORY, "pthread_key_create failed");
  sa_context_options o;
  sa_context_options_init(&o);
  sa_pool_config cfg = {1, SA_PIN_NONE, NULL, 0, 0};
  sa_context *ctx;
  if ((st = context_new(ks, &cfg, &o, &ctx)))
    return st;
  if (pthread_setspecific(key, ctx) != 0) {
    sa_context_destroy(ctx);
    return sa_fail(SA_ERR_NO_MEMORY, "pthread_setspecific failed");
  }
  thread_ctx = ctx;
  *out = ctx;
  return SA_OK;
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
