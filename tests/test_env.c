/*
 * The SIMDATTN_* environment variables, one rule for all: read once per
 * process, trimmed of white space, and a bad value is the status of every
 * call that would use it and of none that would not.
 *
 * The library takes its snapshot of the environment on first use, so every
 * case runs in a child process of its own, forked before this process has
 * made any library call.
 */
#include <sys/wait.h>

#include "tests/testing.h"

enum { L = 4, D = 8, N = 2 * L * D };
static float q[N], k[N], v[N];

static sa_attention_desc desc(void) {
  sa_attention_desc d;
  sa_attention_desc_init(&d);
  d.batch = 1, d.heads_q = 2, d.heads_kv = 1;
  d.len_q = L, d.len_kv = L, d.dim_qk = D, d.dim_v = D;
  return d;
}

/* Runs fn in a child with `name` set to `value` (NULL: unset); the child's
 * failed checks fail the case here. */
static void in_child(const char *what, const char *name, const char *value,
                     void (*fn)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    t_passed = t_failed = 0;
    t_context = what;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
    fn();
    fflush(stdout);
    _exit(t_failed ? 1 : 0);
  }
  int status = 0;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0,
        "%s: child failed (status %#x)", what, status);
}

/* An output buffer that must come back unchanged from a failing call. */
static int call_leaves_output(sa_context *ctx, sa_status want) {
  float o[N], before[N];
  for (int i = 0; i < N; i++)
    o[i] = before[i] = (float)i;
  sa_attention_desc d = desc();
  sa_status st = sa_attention(ctx, &d, q, k, v, o);
  return st == want && (want == SA_OK || memcmp(o, before, sizeof o) == 0);
}

/* SIMDATTN_ISA naming no set: the default, every default context and every
 * NULL-context call fail alike, with the same message; naming a set is still
 * possible. */
static void isa_unknown(void) {
  const sa_kernel_set *ks = NULL;
  sa_context *ctx = NULL;
  CHECK(sa_kernel_set_default(&ks) == SA_ERR_UNKNOWN_ISA && !ks, "default");
  CHECK(strstr(sa_last_error(), "SIMDATTN_ISA") &&
            strstr(sa_last_error(), "scalar"),
        "message names the variable and the runnable sets: '%s'",
        sa_last_error());
  CHECK(sa_context_create(NULL, &ctx) == SA_ERR_UNKNOWN_ISA && !ctx,
        "default context");
  CHECK(call_leaves_output(NULL, SA_ERR_UNKNOWN_ISA), "NULL context");
  sa_context_options o;
  sa_context_options_init(&o);
  o.isa = "scalar";
  CHECK(sa_context_create(&o, &ctx) == SA_OK, "an explicit set still works");
  CHECK(call_leaves_output(ctx, SA_OK), "explicit set call");
  sa_context_destroy(ctx);
}

/* SIMDATTN_ISA naming each runnable set, with white space around it. */
static const sa_kernel_set *wanted;
static void isa_named(void) {
  const sa_kernel_set *ks = NULL;
  sa_context *ctx = NULL;
  CHECK(sa_kernel_set_default(&ks) == SA_OK && ks == wanted, "default %s",
        ks ? ks->name : sa_last_error());
  CHECK(sa_context_create(NULL, &ctx) == SA_OK &&
            sa_context_kernel_set(ctx) == wanted,
        "context follows SIMDATTN_ISA");
  sa_context_destroy(ctx);
  CHECK(call_leaves_output(NULL, SA_OK), "NULL context");
  /* read once: a later change is not seen */
  setenv("SIMDATTN_ISA", "no-such-set", 1);
  CHECK(sa_kernel_set_default(&ks) == SA_OK && ks == wanted, "read once");
}

static void isa_named_best(void) {
  wanted = sa_kernel_set_best();
  isa_named();
}

static void isa_unsupported(void) {
  const sa_kernel_set *ks = NULL;
  CHECK(sa_kernel_set_default(&ks) == SA_ERR_UNSUPPORTED_ISA, "default");
  CHECK(call_leaves_output(NULL, SA_ERR_UNSUPPORTED_ISA), "NULL context");
}

/* SIMDATTN_NUM_THREADS: bad values fail contexts that would use them, never
 * NULL-context calls (one thread, the caller). */
static void threads_bad(void) {
  sa_context *ctx = NULL;
  CHECK(sa_context_create(NULL, &ctx) == SA_ERR_BAD_ARGUMENT && !ctx,
        "default context");
  CHECK(strstr(sa_last_error(), "SIMDATTN_NUM_THREADS"), "message '%s'",
        sa_last_error());
  CHECK(call_leaves_output(NULL, SA_OK), "NULL context ignores it");
  sa_context_options o;
  sa_context_options_init(&o);
  o.num_threads = 1;
  CHECK(sa_context_create(&o, &ctx) == SA_OK, "explicit count ignores it");
  sa_context_destroy(ctx);
}

/* " 2 " is 2; a count above the CPUs this process may use is clamped. */
static void threads_spaced(void) {
  sa_context *ctx = NULL;
  CHECK(sa_context_create(NULL, &ctx) == SA_OK, "%s", sa_last_error());
  int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
  int want = cpus < 2 ? cpus : 2;
  CHECK(sa_context_num_threads(ctx) == want, "' 2 ' gave %d threads",
        sa_context_num_threads(ctx));
  sa_context_destroy(ctx);
}

static void threads_clamped(void) {
  sa_context *ctx = NULL;
  CHECK(sa_context_create(NULL, &ctx) == SA_OK, "%s", sa_last_error());
  int n = sa_context_num_threads(ctx);
  CHECK(n >= 1 && n <= (int)sysconf(_SC_NPROCESSORS_ONLN),
        "4096 threads on %ld CPUs gave %d", sysconf(_SC_NPROCESSORS_ONLN), n);
  CHECK(call_leaves_output(ctx, SA_OK), "clamped context runs");
  sa_context_destroy(ctx);
  /* an explicit count is the caller's decision, above the CPUs too */
  sa_context_options o;
  sa_context_options_init(&o);
  o.num_threads = (int)sysconf(_SC_NPROCESSORS_ONLN) + 1;
  CHECK(sa_context_create(&o, &ctx) == SA_OK &&
            sa_context_num_threads(ctx) == o.num_threads,
        "explicit oversubscription");
  sa_context_destroy(ctx);
}

/* SIMDATTN_PIN garbage: fails a context that would pin, never one that
 * cannot (one thread) nor a NULL-context call. */
static void pin_bad(void) {
  sa_context *ctx = NULL;
  sa_context_options o;
  sa_context_options_init(&o);
  o.num_threads = 2;
  CHECK(sa_context_create(&o, &ctx) == SA_ERR_BAD_ARGUMENT && !ctx,
        "two threads");
  CHECK(strstr(sa_last_error(), "SIMDATTN_PIN"), "message '%s'",
        sa_last_error());
  o.pin = SA_PIN_NONE;
  CHECK(sa_context_create(&o, &ctx) == SA_OK, "explicit policy ignores it");
  sa_context_destroy(ctx);
  o.pin = SA_PIN_DEFAULT;
  o.num_threads = 1;
  CHECK(sa_context_create(&o, &ctx) == SA_OK, "one thread never pins");
  sa_context_destroy(ctx);
  CHECK(call_leaves_output(NULL, SA_OK), "NULL context");
}

static void pin_spaced(void) {
  sa_context *ctx = NULL;
  sa_context_options o;
  sa_context_options_init(&o);
  o.num_threads = 2;
  CHECK(sa_context_create(&o, &ctx) == SA_OK && !sa_context_pinned(ctx),
        "'  none ' is none: %s", sa_last_error());
  sa_context_destroy(ctx);
}

int main(void) {
  t_seed(12);
  t_fill(q, N, -1, 1);
  t_fill(k, N, -1, 1);
  t_fill(v, N, -1, 1);
  in_child("SIMDATTN_ISA unknown", "SIMDATTN_ISA", "no-such-set", isa_unknown);
  int unsupported = 0;
  for (size_t i = 0; i < sa_kernel_set_count(); i++) {
    const sa_kernel_set *ks = sa_kernel_set_at(i);
    char value[80];
    snprintf(value, sizeof value, " %s\t", ks->name);
    if (sa_kernel_set_supported(ks)) {
      wanted = ks;
      in_child(ks->name, "SIMDATTN_ISA", value, isa_named);
    } else {
      unsupported++;
      in_child(ks->name, "SIMDATTN_ISA", value, isa_unsupported);
    }
  }
  printf("%d set(s) not runnable here checked as SA_ERR_UNSUPPORTED_ISA\n",
         unsupported);
  in_child("SIMDATTN_ISA=auto", "SIMDATTN_ISA", "auto", isa_named_best);
  in_child("SIMDATTN_NUM_THREADS=lots", "SIMDATTN_NUM_THREADS", "lots",
           threads_bad);
  in_child("SIMDATTN_NUM_THREADS=0", "SIMDATTN_NUM_THREADS", "0", threads_bad);
  in_child("SIMDATTN_NUM_THREADS=-3", "SIMDATTN_NUM_THREADS", "-3",
           threads_bad);
  in_child("SIMDATTN_NUM_THREADS=' 2 '", "SIMDATTN_NUM_THREADS", " 2 ",
           threads_spaced);
  in_child("SIMDATTN_NUM_THREADS=4096", "SIMDATTN_NUM_THREADS", "4096",
           threads_clamped);
  in_child("SIMDATTN_PIN=sideways", "SIMDATTN_PIN", "sideways", pin_bad);
  in_child("SIMDATTN_PIN='  none '", "SIMDATTN_PIN", "  none ", pin_spaced);
  return t_finish("test_env");
}
