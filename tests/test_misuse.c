/*
 * What applications do to a context that the happy path never does, against
 * the promises of simdattn.h ("runs one sa_attention at a time", "After
 * fork()", "Worker threads run with the calling thread's floating-point
 * control state"):
 *
 * (a) BUSY: while one thread is inside sa_attention on a context, a second
 *     thread's call on it returns SA_ERR_BUSY and leaves its output
 *     untouched; every call of the first thread returns SA_OK with the
 *     result of a one-thread call (memcmp). Afterwards the context works
 *     again, for the thread that was refused and for another. Every kernel
 *     set this CPU runs.
 * (b) fork(): a child inherits a 2-thread context (default pinning and
 *     SA_PIN_NONE) that the parent has used; it computes the parent's
 *     result with it, or just destroys it, or runs two calls plus the
 *     NULL-context path and forks a grandchild that does the same again.
 *     Also a fork taken while another parent thread is inside sa_attention
 *     on the context: the child finds the context busy (held by a thread it
 *     does not have) and must still get SA_OK and the right answer. Every
 *     child has an alarm, so a hang is a failed child, not a hung suite.
 *     The same with a 1-thread context, whose restart starts no thread: it
 *     still runs where a child cannot start threads (qemu-user, TSan), and
 *     there the 2-thread children that would start one are skipped.
 * (c) Floating-point control state: with FTZ/DAZ (x86-64 MXCSR) or FZ
 *     (AArch64 FPCR) set on the calling thread, and separately with
 *     rounding toward zero, contexts of 1, 2, 3 and 8 threads created
 *     before the change give bit-identical outputs, and those outputs
 *     differ from the default mode's (inputs chosen so that they must).
 *     Going back to the default mode gives the default results again.
 *     Every kernel set, both drivers.
 */
#include <errno.h>
#include <fcntl.h>
#include <fenv.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#include "attention/internal.h"
#include "tests/testing.h"
#include "threads/fork.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* Generous: under emulation everything is ~50x slower. A deadline is only
 * ever reached when something is broken. */
#define DEADLINE_S 20.0

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------- helpers */

typedef struct problem {
  sa_attention_desc d;
  float *q, *k, *v;
  size_t no; /* output elements */
} problem;

static problem make_problem(size_t heads, size_t lq, size_t lkv, size_t dim,
                            sa_mask mask) {
  problem p;
  sa_attention_desc_init(&p.d);
  p.d.batch = 1;
  p.d.heads_q = p.d.heads_kv = heads;
  p.d.len_q = lq;
  p.d.len_kv = lkv;
  p.d.dim_qk = p.d.dim_v = dim;
  p.d.mask = mask;
  size_t nq = heads * lq * dim, nkv = heads * lkv * dim;
  p.q = malloc(nq * sizeof(float));
  p.k = malloc(nkv * sizeof(float));
  p.v = malloc(nkv * sizeof(float));
  p.no = nq;
  if (!p.q || !p.k || !p.v) {
    perror("malloc");
    exit(2);
  }
  t_fill(p.q, nq, -1, 1);
  t_fill(p.k, nkv, -1, 1);
  t_fill(p.v, nkv, -1, 1);
  return p;
}

static void free_problem(problem *p) {
  free(p->q);
  free(p->k);
  free(p->v);
}

static float *new_out(const problem *p) {
  float *o = malloc(p->no * sizeof(float));
  if (!o) {
    perror("malloc");
    exit(2);
  }
  for (size_t i = 0; i < p->no; i++)
    o[i] = NAN;
  return o;
}

/* A NaN payload no computation produces: "untouched" means these bits. */
static void fill_sentinel(float *o, size_t n) {
  const uint32_t bits = 0x7fa5a5a5u;
  for (size_t i = 0; i < n; i++)
    memcpy(&o[i], &bits, sizeof bits);
}

static sa_status call(sa_context *ctx, const problem *p, float *o) {
  return sa_attention(ctx, &p->d, p->q, p->k, p->v, o);
}

static int same(const float *a, const float *b, size_t n) {
  return memcmp(a, b, n * sizeof(float)) == 0;
}

/* ------------------------------------------------------------- (a) BUSY */

typedef struct holder {
  sa_context *ctx;
  const problem *p;
  const float *ref;
  float *o;
  atomic_int stop;    /* the other thread has made its attempts */
  atomic_int done;    /* this thread left its loop */
  atomic_int started; /* calls begun */
  /* Read only after done. refused: the other thread's call slipped in
   * between two of ours and held the context: the same rule, other way. */
  int calls, refused, bad_status, wrong;
} holder;

/* Calls back to back until told to stop, so that whatever the speed of the
 * machine (or emulator) a call is in flight whenever the other thread looks;
 * the gaps between calls are a few microseconds. */
static void *hold_context(void *arg) {
  holder *h = arg;
  double end = now_s() + DEADLINE_S;
  while (!atomic_load(&h->stop) && now_s() < end) {
    atomic_fetch_add(&h->started, 1);
    sa_status st = call(h->ctx, h->p, h->o);
    h->calls++;
    if (st == SA_ERR_BUSY) {
      h->refused++;
      sched_yield(); /* the other thread's call has the context */
    } else if (st != SA_OK)
      h->bad_status++;
    else if (!same(h->o, h->ref, h->p->no))
      h->wrong++;
  }
  atomic_store(&h->done, 1);
  return NULL;
}

/* Until ctx is inside one of h's calls. 0 if h gave up, or began 50 calls
 * (each busy nearly all its length) without our seeing busy once. */
static int wait_busy(sa_context *ctx, holder *h, double end) {
  int first = atomic_load(&h->started);
  while (atomic_load(&ctx->busy) == 0) {
    if (atomic_load(&h->done) || atomic_load(&h->started) - first > 50 ||
        now_s() > end)
      return 0;
    sched_yield();
  }
  return 1;
}

/* The second thread: calls on the context while the holder is inside. */
typedef struct contender {
  sa_context *ctx;
  holder *h;
  float *mine, *sentinel;
  int refused, attempts, slipped, saw_busy;
  atomic_int done;
} contender;

static void *contend(void *arg) {
  contender *c = arg;
  const problem *p = c->h->p;
  const float *ref = c->h->ref;
  /* The holder's call can end between our look at busy and our own call;
   * then ours legitimately runs in the gap (and must be right), and we try
   * again. Without the one-call rule no attempt is ever refused. */
  double end = now_s() + DEADLINE_S;
  while (!c->refused && c->attempts < 200) {
    if (!wait_busy(c->ctx, c->h, end))
      break; /* a call of the holder's never showed as busy */
    c->saw_busy = 1;
    fill_sentinel(c->mine, p->no);
    sa_status st = call(c->ctx, p, c->mine);
    c->attempts++;
    if (st == SA_ERR_BUSY) {
      c->refused = 1;
      CHECK(same(c->mine, c->sentinel, p->no),
            "a refused call wrote to its output");
      CHECK(sa_last_error()[0] != '\0', "SA_ERR_BUSY without a message");
    } else if (st == SA_OK) {
      c->slipped++;
      CHECK(same(c->mine, ref, p->no),
            "a call between two of the other thread's is wrong");
    } else {
      CHECK(0, "second thread: %s", sa_status_str(st));
    }
  }
  atomic_store(&c->h->stop, 1);

  /* The refused thread takes the context as soon as the holder is out. */
  while (!atomic_load(&c->h->done) && now_s() < end + DEADLINE_S)
    sched_yield();
  sa_status st = call(c->ctx, p, c->mine);
  CHECK(st == SA_OK, "refused thread, once the context is free: %s",
        sa_status_str(st));
  CHECK(st != SA_OK || same(c->mine, ref, p->no),
        "refused thread, once free: wrong result");
  atomic_store(&c->done, 1);
  return NULL;
}

/* Joins th once *done is set. A thread stuck inside the library (two calls
 * let onto one pool can deadlock) cannot be recovered: say so and end the
 * test here, rather than let the watchdog end it without a word. */
static void join_or_bail(pthread_t th, atomic_int *done, const char *who) {
  double end = now_s() + 3 * DEADLINE_S;
  struct timespec ms = {0, 1000000};
  while (!atomic_load(done) && now_s() < end)
    nanosleep(&ms, NULL);
  if (!atomic_load(done)) {
    CHECK(0, "%s did not come back from sa_attention in %.0f s", who,
          3 * DEADLINE_S);
    fflush(stdout);
    _exit(t_finish("test_misuse"));
  }
  pthread_join(th, NULL);
}

static void busy_case(const sa_kernel_set *ks, const problem *p,
                      const float *ref) {
  char name[96];
  snprintf(name, sizeof name, "busy, %s", ks->name);
  t_context = name;
  sa_context *ctx = t_context_new(ks->name, 2, SA_PIN_DEFAULT, 0, 0);
  if (!ctx)
    return;
  holder h = {.ctx = ctx, .p = p, .ref = ref, .o = new_out(p)};
  atomic_init(&h.stop, 0);
  atomic_init(&h.done, 0);
  atomic_init(&h.started, 0);
  contender c = {
      .ctx = ctx, .h = &h, .mine = new_out(p), .sentinel = new_out(p)};
  atomic_init(&c.done, 0);
  fill_sentinel(c.sentinel, p->no);
  pthread_t th_h, th_c;
  if (pthread_create(&th_h, NULL, hold_context, &h) != 0 ||
      pthread_create(&th_c, NULL, contend, &c) != 0) {
    CHECK(0, "pthread_create failed");
    exit(2);
  }
  join_or_bail(th_c, &c.done, "the second thread");
  join_or_bail(th_h, &h.done, "the holding thread");
  CHECK(c.saw_busy, "never saw the context busy while another thread called");
  CHECK(c.refused, "%d calls during another thread's calls, none refused",
        c.attempts);
  CHECK(h.calls > h.refused && h.bad_status == 0 && h.wrong == 0,
        "holding thread: %d calls, %d refused, %d failed otherwise, %d wrong",
        h.calls, h.refused, h.bad_status, h.wrong);

  /* And this thread, which took no part: nothing of the refusal stayed. */
  fill_sentinel(c.mine, p->no);
  sa_status st = call(ctx, p, c.mine);
  CHECK(st == SA_OK && same(c.mine, ref, p->no),
        "a third thread on the context after BUSY: %s", sa_status_str(st));
  printf("%-34s %s after %d attempt(s) (%d slipped between calls), "
         "holder made %d call(s), %d refused\n",
         name, c.refused ? "refused" : "NOT REFUSED", c.attempts, c.slipped,
         h.calls, h.refused);
  sa_context_destroy(ctx);
  free(h.o);
  free(c.mine);
  free(c.sentinel);
}

static void busy(const sa_kernel_set *def, const sa_kernel_set **sets,
                 int nsets) {
  /* Long enough that a call outlasts a look at busy by far. */
  problem p = make_problem(4, 256, 256, 64, SA_MASK_NONE);
  for (int i = 0; i < nsets; i++) {
    const sa_kernel_set *ks = sets[i];
    /* The NULL context has the default set and the default tile sizes; any
     * other set is its own one-thread context with those sizes. */
    float *ref = new_out(&p);
    sa_context *one =
        ks == def ? NULL : t_context_new(ks->name, 1, SA_PIN_DEFAULT, 0, 0);
    if (ks != def && !one)
      continue;
    sa_status st = call(one, &p, ref);
    CHECK(st == SA_OK, "%s reference: %s", ks->name, sa_last_error());
    sa_context_destroy(one);
    if (st == SA_OK)
      busy_case(ks, &p, ref);
    free(ref);
  }
  free_problem(&p);
}

/* ------------------------------------------------------------- (b) fork */

typedef struct inherited {
  sa_context *ctx;
  const problem *p;
  const float *ref;
} inherited;

typedef int (*child_fn)(const inherited *in);

/* Runs fn in a child; its status for waitpid. */
static int in_child(const char *what, child_fn fn, const inherited *in) {
  fflush(stdout); /* else the child's exit would print the parent's output */
  pid_t pid = fork();
  if (pid < 0) {
    CHECK(0, "%s: fork: %s", what, strerror(errno));
    return -1;
  }
  if (pid == 0) {
    alarm(20); /* a child that hangs dies of SIGALRM */
    t_context = what;
    t_failed = 0;
    int code = fn(in);
    fflush(stdout);
    _exit(t_failed ? 1 : code);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      CHECK(0, "%s: waitpid: %s", what, strerror(errno));
      return -1;
    }
  return status;
}

static void check_child(const char *what, int status) {
  if (status == -1)
    return;
  if (WIFSIGNALED(status))
    CHECK(0, "%s: child killed by signal %d%s", what, WTERMSIG(status),
          WTERMSIG(status) == SIGALRM ? " (it hung)" : "");
  else
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "%s: child exited with %d", what, WEXITSTATUS(status));
}

static void use_ctx(sa_context *ctx, const problem *p, const float *ref,
                    const char *what) {
  float *o = new_out(p);
  sa_status st = call(ctx, p, o);
  CHECK(st == SA_OK, "%s: %s (%s)", what, sa_status_str(st), sa_last_error());
  CHECK(st != SA_OK || same(o, ref, p->no), "%s: not the parent's result",
        what);
  free(o);
}

static int child_use_destroy(const inherited *in) {
  use_ctx(in->ctx, in->p, in->ref, "inherited context");
  sa_context_destroy(in->ctx);
  return 0;
}

static int child_destroy(const inherited *in) {
  sa_context_destroy(in->ctx);
  return 0;
}

static int child_twice_and_null(const inherited *in) {
  use_ctx(in->ctx, in->p, in->ref, "first call");
  use_ctx(in->ctx, in->p, in->ref, "second call");
  /* The parent's main thread made its NULL-context one: inherited too. */
  use_ctx(NULL, in->p, in->ref, "NULL context");
  return 0;
}

static int child_twice_then_fork(const inherited *in) {
  child_twice_and_null(in);
  /* Restarted pools are forked again: a generation further on. */
  check_child("grandchild", in_child("grandchild", child_twice_and_null, in));
  sa_context_destroy(in->ctx);
  return 0;
}

/* Exit code 0 only if this child really inherited a context in use. */
#define NOT_BUSY_AT_FORK 3

static int child_of_busy(const inherited *in) {
  int held = atomic_load(&in->ctx->busy) != 0;
  use_ctx(in->ctx, in->p, in->ref, "context busy at fork");
  use_ctx(in->ctx, in->p, in->ref, "context busy at fork, again");
  sa_context_destroy(in->ctx);
  return held ? 0 : NOT_BUSY_AT_FORK;
}

static void fork_while_busy(sa_context *ctx, const problem *small,
                            const float *small_ref, const problem *big,
                            const float *big_ref) {
  /* A working parent's context grew its scratch long ago, so the fork lands
   * in the tiles of a call. A fork inside the one regrowth (free the old
   * buffer, then store the new pointer) would leave the child a freed
   * buffer; that is not what this case is about, and it is not provoked. */
  use_ctx(ctx, big, big_ref, "parent, sizing scratch");
  holder h = {.ctx = ctx, .p = big, .ref = big_ref, .o = new_out(big)};
  atomic_init(&h.stop, 0);
  atomic_init(&h.done, 0);
  atomic_init(&h.started, 0);
  pthread_t th;
  if (pthread_create(&th, NULL, hold_context, &h) != 0) {
    CHECK(0, "pthread_create failed");
    return;
  }
  /* As with BUSY, the call may end between the look and the fork: the child
   * says whether busy was still set, and we fork again until it was. */
  inherited in = {ctx, small, small_ref};
  double end = now_s() + DEADLINE_S;
  int tries = 0, caught = 0, bad = 0;
  while (!caught && !bad && tries < 50) {
    if (!wait_busy(ctx, &h, end))
      break;
    int status = in_child("fork during a call", child_of_busy, &in);
    tries++;
    if (status != -1 && WIFEXITED(status) &&
        WEXITSTATUS(status) == NOT_BUSY_AT_FORK)
      continue;
    caught = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    bad = !caught;
    check_child("fork during a call", status);
  }
  atomic_store(&h.stop, 1);
  pthread_join(th, NULL);
  CHECK(caught || bad, "no fork landed inside a call in %d tries", tries);
  CHECK(h.bad_status == 0 && h.wrong == 0,
        "parent thread calling across forks: %d not SA_OK, %d wrong",
        h.bad_status, h.wrong);
  printf("%-34s %s after %d fork(s)\n", "fork during a call",
         caught ? "child took over a busy context" : "FAILED", tries);
  free(h.o);
}

/* The parent state a fork can copy while another thread regrows scratch:
 * busy set by that thread, and a buffer already freed. Made by hand (a
 * poisoned page, a capacity that forbids regrowth) so the child meets it
 * every time; the child must neither use nor free that buffer. */
static void fork_mid_regrowth(sa_context *ctx, const problem *p,
                              const float *ref) {
  long page = sysconf(_SC_PAGESIZE);
  void *poison =
      mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (poison == MAP_FAILED) {
    CHECK(0, "mmap failed");
    return;
  }
  sa_scratch saved = ctx->scratch[0];
  ctx->scratch[0].buf = poison;
  ctx->scratch[0].floats = SIZE_MAX / 8;
  atomic_store(&ctx->busy, sa_fork_generation() + 1);
  inherited in = {ctx, p, ref};
  check_child("fork mid-regrowth",
              in_child("fork mid-regrowth", child_use_destroy, &in));
  atomic_store(&ctx->busy, 0);
  ctx->scratch[0] = saved;
  munmap(poison, (size_t)page);
}

static void fork_case(int threads, sa_pin_policy pin, int threads_ok,
                      const problem *small, const float *small_ref,
                      const problem *big, const float *big_ref) {
  char name[64];
  snprintf(name, sizeof name, "fork, %d thread%s, %s", threads,
           threads > 1 ? "s" : "",
           pin == SA_PIN_NONE ? "pin none" : "pin default");
  t_context = name;
  sa_context *ctx = t_context_new(NULL, threads, pin, 0, 0);
  if (!ctx)
    return;
  /* Used first: the workers exist and have run, as in a real parent. */
  use_ctx(ctx, small, small_ref, "parent before fork");
  inherited in = {ctx, small, small_ref};
  check_child("destroy unused", in_child("destroy unused", child_destroy, &in));
  if (threads == 1 || threads_ok)
    fork_mid_regrowth(ctx, small, small_ref);
  if (threads_ok) {
    check_child("use, then destroy",
                in_child("use, then destroy", child_use_destroy, &in));
    check_child("two calls, NULL context, grandchild",
                in_child("two calls, NULL context, grandchild",
                         child_twice_then_fork, &in));
    t_context = name;
    use_ctx(ctx, small, small_ref, "parent after its children");
    printf("%-34s three children and a grandchild\n", name);
    fork_while_busy(ctx, small, small_ref, big, big_ref);
    t_context = name;
  } else {
    printf("%-34s only a child that destroys it (see SKIP above)\n", name);
  }
  use_ctx(ctx, small, small_ref, "parent after forking");
  sa_context_destroy(ctx);
}

#ifndef UNDER_TSAN
static void *wait_for_byte(void *arg) {
  char c;
  while (read(*(int *)arg, &c, 1) < 0 && errno == EINTR)
    ;
  return NULL;
}

static void *nothing(void *arg) { return arg; }

static int child_starts_thread(const inherited *in) {
  (void)in;
  /* the emulator's own abort messages would read as the library's */
  int null = open("/dev/null", O_WRONLY);
  if (null >= 0) {
    dup2(null, 1);
    dup2(null, 2);
  }
  pthread_t th;
  return pthread_create(&th, NULL, nothing, NULL) != 0 ||
         pthread_join(th, NULL) != 0;
}
#endif

/*
 * Whether a fork() child of a process with a running thread can start
 * threads of its own here, tried without the library. qemu-user (7.2)
 * aborts in such a child, and ThreadSanitizer does not support it ("starting
 * new threads after multi-threaded fork is not supported"; with
 * die_after_fork=0 it fails on "dup thread with used id" instead); there
 * only the children that start no thread run.
 */
static int threads_after_fork(const char **why) {
#ifdef UNDER_TSAN
  *why = "ThreadSanitizer does not support threads after a multi-threaded "
         "fork";
  return 0;
#else
  int fds[2];
  pthread_t th;
  if (pipe(fds) != 0 || pthread_create(&th, NULL, wait_for_byte, &fds[0])) {
    *why = "could not set up the probe";
    return 0;
  }
  int saved = t_failed;
  int status = in_child("probe", child_starts_thread, NULL);
  t_failed = saved; /* the probe's outcome is not the library's */
  while (write(fds[1], "x", 1) < 0 && errno == EINTR)
    ;
  pthread_join(th, NULL);
  close(fds[0]);
  close(fds[1]);
  *why = "a plain fork() child of a multi-threaded process cannot start a "
         "thread here (qemu-user aborts there)";
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
#endif
}

static void forks(void) {
  problem small = make_problem(3, 40, 70, 32, SA_MASK_CAUSAL_TOP_LEFT);
  problem big = make_problem(4, 256, 256, 64, SA_MASK_NONE);
  float *small_ref = new_out(&small), *big_ref = new_out(&big);
  /* Default set and tile sizes, as every context here uses. This also makes
   * this thread's NULL context, which the children inherit. */
  t_context = "fork references";
  CHECK(call(NULL, &small, small_ref) == SA_OK, "%s", sa_last_error());
  CHECK(call(NULL, &big, big_ref) == SA_OK, "%s", sa_last_error());
  const char *why = "";
  int threads_ok = threads_after_fork(&why);
  if (!threads_ok)
    printf("SKIP fork children that start threads: %s\n", why);
  /* A one-thread context restarts without starting a thread, so it runs
   * every child everywhere. */
  fork_case(1, SA_PIN_DEFAULT, 1, &small, small_ref, &big, big_ref);
  fork_case(2, SA_PIN_DEFAULT, threads_ok, &small, small_ref, &big, big_ref);
  fork_case(2, SA_PIN_NONE, threads_ok, &small, small_ref, &big, big_ref);
  free(small_ref);
  free(big_ref);
  free_problem(&small);
  free_problem(&big);
}

/* ---------------------------------------- (c) floating-point control state */

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
typedef uint64_t fpctl;
static fpctl fpctl_get(void) { return _mm_getcsr(); }
static void fpctl_set(fpctl v) { _mm_setcsr((unsigned)v); }
#define FPCTL_FLUSH ((fpctl)0x8040) /* FTZ (bit 15) and DAZ (bit 6) */
#define HAVE_FLUSH 1
#elif defined(__aarch64__)
typedef uint64_t fpctl;
static fpctl fpctl_get(void) {
  uint64_t v;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(v));
  return v;
}
static void fpctl_set(fpctl v) {
  __asm__ __volatile__("msr fpcr, %0" : : "r"(v));
}
#define FPCTL_FLUSH ((fpctl)1 << 24) /* FZ */
#define HAVE_FLUSH 1
#else
#define HAVE_FLUSH 0
#endif

static const int fp_threads[] = {1, 2, 3, 8};
#define NFP (sizeof fp_threads / sizeof fp_threads[0])
#define MAX_REPEAT 50
/* ... and while no worker but the caller has run one, for up to this many
 * seconds: on a loaded machine (ctest -j2 on two cores) a worker can stay
 * off its core through 50 short calls, which the caller then runs alone. */
#define WORKER_WAIT_S 10.0

static double seconds_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every tile of both drivers writes its first row's key range at its
 * worker's scratch len[0] (sa_rows_start), a key index far below SIZE_MAX,
 * so a mark there before a call tells afterwards which workers ran a tile.
 * (Not the score tile: the decode kernels keep their scores on the stack.) */
static void mark_workers(sa_context *ctx) {
  for (int w = 0; w < ctx->nthreads; w++)
    if (ctx->scratch[w].len)
      ctx->scratch[w].len[0] = SIZE_MAX;
}

static uint64_t workers_ran(const sa_context *ctx) {
  uint64_t ran = 0;
  for (int w = 0; w < ctx->nthreads && w < 64; w++)
    if (ctx->scratch[w].len && ctx->scratch[w].len[0] != SIZE_MAX)
      ran |= UINT64_C(1) << w;
  return ran;
}

typedef struct fp_tally {
  int contexts; /* multi-thread context runs */
  int all_ran;  /* ... in which every worker ran a tile */
} fp_tally;

/*
 * The one-thread output into ref, then each larger context against it. A
 * worker that runs no tile cannot show a wrong mode, and which workers get
 * tiles is up to the scheduler, so a context is called again (up to
 * MAX_REPEAT times, longer while only the caller has: WORKER_WAIT_S) until
 * every one of its workers has run a tile; at least one besides the caller
 * must have.
 */
static void run_phase(sa_context **ctx, const problem *p, float *ref,
                      float *tmp, const char *phase, fp_tally *tally) {
  for (size_t i = 0; i < p->no; i++)
    ref[i] = NAN;
  sa_status st = call(ctx[0], p, ref);
  CHECK(st == SA_OK, "%s, 1 thread: %s", phase, sa_status_str(st));
  for (size_t c = 1; c < NFP; c++) {
    int n = fp_threads[c], calls = 0, differ = 0;
    uint64_t all = (UINT64_C(1) << n) - 1, ran = 0;
    const double until = seconds_now() + WORKER_WAIT_S;
    while (
        (ran & all) != all && !differ &&
        (calls < MAX_REPEAT || (!(ran & (all - 1)) && seconds_now() < until))) {
      mark_workers(ctx[c]);
      for (size_t i = 0; i < p->no; i++)
        tmp[i] = NAN;
      st = call(ctx[c], p, tmp);
      calls++;
      if (st != SA_OK) {
        CHECK(0, "%s, %d threads: %s", phase, n, sa_status_str(st));
        break;
      }
      ran |= workers_ran(ctx[c]);
      differ = !same(tmp, ref, p->no);
    }
    CHECK(!differ, "%s: %d threads differ from 1 thread (call %d)", phase, n,
          calls);
    CHECK(differ || (ran & (all - 1)) != 0,
          "%s: %d threads: no worker but the caller ran a tile in %d calls",
          phase, n, calls);
    tally->contexts++;
    tally->all_ran += (ran & all) == all;
  }
}

/* Even columns of V are denormal and positive: without flushing, those
 * output columns are positive denormals (the largest weight is 1 after the
 * max-subtract), with flushing every product is 0. Odd columns are ordinary. */
static problem denormal_problem(void) {
  problem p = make_problem(4, 64, 128, 32, SA_MASK_NONE);
  for (size_t i = 0; i < 4 * 128 * 32; i += 2)
    p.v[i] = t_uniform(0.5f, 1.5f) * 1e-39f;
  return p;
}

static void flush_case(sa_context **ctx, const problem *p, float **o,
                       const char *name, fp_tally *tally) {
#if HAVE_FLUSH
  char phase[256];
  fpctl saved = fpctl_get();
  snprintf(phase, sizeof phase, "%s, default mode", name);
  run_phase(ctx, p, o[0], o[3], phase, tally);

  fpctl_set(saved | FPCTL_FLUSH);
  snprintf(phase, sizeof phase, "%s, flush to zero", name);
  run_phase(ctx, p, o[1], o[3], phase, tally);
  fpctl_set(saved);
  /* The inputs must be sensitive, else identical outputs prove nothing. */
  size_t flipped = 0, denormal = 0;
  for (size_t i = 0; i < p->no; i += 2) {
    denormal++;
    flipped += o[0][i] != 0.0f && o[1][i] == 0.0f;
  }
  CHECK(flipped == denormal,
        "%s: only %zu of %zu denormal outputs are 0 under flushing, nonzero "
        "without",
        name, flipped, denormal);

  /* Workers that took the flushing state must drop it again. */
  snprintf(phase, sizeof phase, "%s, default again", name);
  run_phase(ctx, p, o[2], o[3], phase, tally);
  CHECK(same(o[2], o[0], p->no), "%s: default mode again differs from before",
        name);
  CHECK(fpctl_get() == saved, "%s: control state not restored", name);
#else
  (void)ctx;
  (void)p;
  (void)o;
  (void)name;
  (void)tally;
#endif
}

static void rounding_case(sa_context **ctx, const problem *p, float **o,
                          const char *name, fp_tally *tally) {
#ifdef FE_TOWARDZERO
  char phase[256];
  int saved = fegetround();
  snprintf(phase, sizeof phase, "%s, rounding as found", name);
  run_phase(ctx, p, o[0], o[3], phase, tally);

  int err = fesetround(FE_TOWARDZERO);
  CHECK(err == 0, "fesetround(FE_TOWARDZERO) failed");
  snprintf(phase, sizeof phase, "%s, rounding toward zero", name);
  run_phase(ctx, p, o[1], o[3], phase, tally);
  fesetround(saved);
  CHECK(!same(o[1], o[0], p->no),
        "%s: rounding toward zero changed no output bit", name);

  snprintf(phase, sizeof phase, "%s, rounding restored", name);
  run_phase(ctx, p, o[2], o[3], phase, tally);
  CHECK(same(o[2], o[0], p->no), "%s: rounding restored differs from before",
        name);
  CHECK(fegetround() == saved, "%s: rounding mode not restored", name);
#else
  (void)ctx;
  (void)p;
  (void)o;
  (void)name;
  (void)tally;
#endif
}

static void fp_state(const sa_kernel_set **sets, int nsets) {
#if !HAVE_FLUSH
  printf("SKIP flush to zero: no FTZ/DAZ control known on this architecture\n");
#endif
#ifndef FE_TOWARDZERO
  printf("SKIP rounding: FE_TOWARDZERO is not defined here\n");
#endif
  problem den = denormal_problem();
  problem rnd = make_problem(4, 64, 128, 32, SA_MASK_CAUSAL_BOTTOM_RIGHT);
  float *o[4]; /* default, changed, default again, scratch */
  for (int i = 0; i < 4; i++)
    o[i] = new_out(&den); /* rnd has the same output size */
  for (int i = 0; i < nsets; i++) {
    const sa_kernel_set *ks = sets[i];
    char name[96];
    snprintf(name, sizeof name, "fp state, %s", ks->name);
    t_context = name;
    /* Made, and run, before any mode change: every worker starts out with
     * the default state, as in an application that changes its mode after
     * setting the library up. Run with both drivers, so that the scratch
     * (where mark_workers looks) is never reallocated later. Small tiles:
     * work for every worker. */
    sa_context *ctx[NFP];
    int ok = 1;
    for (size_t c = 0; c < NFP; c++) {
      ctx[c] = t_context_new(ks->name, fp_threads[c], SA_PIN_DEFAULT, 8, 32);
      for (int a = 0; ctx[c] && a < 2; a++) {
        den.d.algorithm = a ? SA_ALGO_FUSED : SA_ALGO_THREE_PASS;
        ok &= call(ctx[c], &den, o[3]) == SA_OK;
      }
      ok &= ctx[c] != NULL;
    }
    CHECK(ok, "%s: contexts not set up", ks->name);
    fp_tally tally = {0, 0};
    for (int a = 0; ok && a < 2; a++) {
      sa_algorithm algo = a ? SA_ALGO_FUSED : SA_ALGO_THREE_PASS;
      char case_name[128];
      snprintf(case_name, sizeof case_name, "%s, %s", ks->name,
               a ? "fused" : "three-pass");
      den.d.algorithm = rnd.d.algorithm = algo;
      flush_case(ctx, &den, o, case_name, &tally);
      rounding_case(ctx, &rnd, o, case_name, &tally);
    }
    for (size_t c = 0; c < NFP; c++)
      sa_context_destroy(ctx[c]);
    printf("%-34s 1/2/3/8 threads checked; every worker ran a tile in %d "
           "of %d runs\n",
           name, tally.all_ran, tally.contexts);
  }
  for (int i = 0; i < 4; i++)
    free(o[i]);
  free_problem(&den);
  free_problem(&rnd);
}

int main(void) {
  alarm(300); /* a deadlock fails the test instead of hanging CI */
  setvbuf(stdout, NULL, _IOLBF, 0); /* what failed shows even then */
  t_seed(11);
  const sa_kernel_set *def = NULL;
  CHECK(sa_kernel_set_default(&def) == SA_OK, "%s", sa_last_error());
  if (!def)
    return t_finish("test_misuse");
  printf("default kernel set %s\n", def->name);
  const sa_kernel_set *sets[32];
  int nsets = t_runnable_sets(sets, 32);
  double t0 = now_s();
  busy(def, sets, nsets);
  double t1 = now_s();
  forks();
  double t2 = now_s();
  fp_state(sets, nsets);
  double t3 = now_s();
  printf("times: busy %.2f s, fork %.2f s, fp state %.2f s\n", t1 - t0, t2 - t1,
         t3 - t2);
  return t_finish("test_misuse");
}
