/*
 * Every runnable set's conversion kernels against references written here,
 * from IEEE 754 and ggml's q8_0 definition, not from kernels/dtype.h:
 *
 * - f16 / bf16 -> f32: all 65,536 inputs, the value decoded with ldexp and
 *   NaN checked bit for bit (quiet bit set, payload kept).
 * - f32 -> f16 / bf16: for every one of the 65,536 upper halves of an f32,
 *   the lower halves around the rounding points (0, 1, the tie - 1, the
 *   tie, the tie + 1, all ones, a random one), every f16 value and every
 *   midpoint between neighbouring f16 values and its neighbours: each
 *   result must be the nearest representable value, ties to the even one,
 *   with the next power of two past the largest finite value standing for
 *   Inf (IEEE's overflow rule); NaNs keep sign and top payload bits, quiet.
 *   Run once more under round-toward-zero with FTZ/DAZ set where the CPU
 *   has them: the result must not change.
 * - q8_0: ggml's quantize_row_q8_0_ref, restated, byte for byte, on blocks
 *   with zeros, exact ties of x * id, huge and tiny scales; dequantisation
 *   as q * scale exactly.
 */
#include <fenv.h>

#include "kernels/kernels.h"
#include "tests/testing.h"

#define MAX_SETS 16
static const sa_kernel_set *sets[MAX_SETS];
static int nsets;

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}
static float from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

/* IEEE binary16 value of h (finite or Inf) in double. */
static double f16_value(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0    ? ldexp(m, -24)
             : e == 31 ? INFINITY
                       : ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -v : v;
}
static double bf16_value(uint16_t b) {
  return (double)from_bits((uint32_t)b << 16);
}

/* Nearest of the non-negative codes lo, lo + 1 to a (>= 0), ties to even;
 * `top` is the code of Inf, valued `inf_as` for rounding. */
static uint16_t nearest(double a, uint16_t lo, double vlo, double vhi) {
  double dl = a - vlo, dh = vhi - a;
  if (dl < dh)
    return lo;
  if (dh < dl)
    return (uint16_t)(lo + 1);
  return lo & 1 ? (uint16_t)(lo + 1) : lo;
}

/* The f16 an f32 must round to. */
static uint16_t want_f16(float x) {
  uint32_t u = bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  if (isnan(x))
    return (uint16_t)(sign | 0x7e00 | ((u >> 13) & 0x3ff));
  double a = fabs((double)x);
  if (a >= 65536.0)
    return sign | 0x7c00;
  uint16_t lo = 0, hi = 0x7c00; /* non-negative codes are monotonic */
  while (hi - lo > 1) {         /* f16_value(lo) <= a < value(hi) */
    uint16_t mid = (uint16_t)((lo + hi) / 2);
    if (f16_value(mid) <= a)
      lo = mid;
    else
      hi = mid;
  }
  double vhi = lo + 1 == 0x7c00 ? 65536.0 : f16_value((uint16_t)(lo + 1));
  return sign | nearest(a, lo, f16_value(lo), vhi);
}

/* The bf16 an f32 must round to. */
static uint16_t want_bf16(float x) {
  uint32_t u = bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  if (isnan(x))
    return (uint16_t)((u >> 16) | 0x40);
  double a = fabs((double)x);
  uint16_t lo = (uint16_t)((u & 0x7fffffff) >> 16); /* truncation */
  if (lo == 0x7f80)
    return sign | lo; /* Inf */
  double vhi =
      lo + 1 == 0x7f80 ? ldexp(1, 128) : bf16_value((uint16_t)(lo + 1));
  return sign | nearest(a, lo, bf16_value(lo), vhi);
}

/* A widened value must equal the decoded one; NaN: quiet, payload kept. */
static int same_widened(float got, uint16_t h, int is_bf16) {
  uint32_t g = bits(got);
  if (is_bf16) {
    uint32_t w = (uint32_t)h << 16;
    if ((w & 0x7fffffff) > 0x7f800000)
      w |= 0x00400000;
    return g == w;
  }
  if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
    return g == ((uint32_t)(h & 0x8000) << 16 | 0x7fc00000 |
                 (uint32_t)(h & 0x1ff) << 13);
  double v = f16_value(h);
  return (double)got == v && !!signbit(got) == !!(h & 0x8000);
}

static void test_widen(const sa_kernel_set *ks) {
  static uint16_t in[65536];
  static float out[65536];
  for (uint32_t i = 0; i < 65536; i++)
    in[i] = (uint16_t)i;
  for (int bf = 0; bf < 2; bf++) {
    ks->to_f32[bf ? SA_BF16 : SA_F16](65536, in, out);
    size_t bad = 0, first = 0;
    for (uint32_t i = 0; i < 65536; i++)
      if (!same_widened(out[i], (uint16_t)i, bf) && bad++ == 0)
        first = i;
    CHECK(bad == 0, "%s -> f32: %zu of 65536 wrong, first 0x%04zx -> 0x%08x",
          bf ? "bf16" : "f16", bad, first, bits(out[first]));
  }
}

/* Inputs around every rounding point; n of them written to x. */
static size_t narrowing_inputs(float *x) {
  size_t n = 0;
  for (uint32_t hi = 0; hi < 65536; hi++) {
    const uint32_t lows[] = {
        0, 1, 0x7fff, 0x8000, 0x8001, 0xffff, (uint32_t)t_next() & 0xffff};
    for (int k = 0; k < 7; k++)
      x[n++] = from_bits(hi << 16 | lows[k]);
  }
  for (uint32_t h = 0; h < 0x7c00; h++) {
    double v = f16_value((uint16_t)h);
    double next = h + 1 == 0x7c00 ? 65536.0 : f16_value((uint16_t)(h + 1));
    float mid = (float)((v + next) / 2); /* exact: 12 significant bits */
    float s[] = {(float)v, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY)};
    for (int k = 0; k < 4; k++) {
      x[n++] = s[k];
      x[n++] = -s[k];
    }
  }
  return n;
}

/* want[0], want[1]: the f16 and bf16 results, computed beforehand in the
 * default FP environment (DAZ would read the references' own denormal
 * inputs as zero). */
static void test_narrow(const sa_kernel_set *ks, const float *x, size_t n,
                        uint16_t *const want[2], const char *env) {
  uint16_t *out = malloc(n * sizeof *out);
  for (int bf = 0; bf < 2; bf++) {
    ks->from_f32[bf ? SA_BF16 : SA_F16](n, x, out);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
      if (out[i] != want[bf][i] && bad++ == 0)
        first = i;
    CHECK(bad == 0,
          "f32 -> %s (%s): %zu of %zu wrong, first 0x%08x -> 0x%04x, "
          "want 0x%04x",
          bf ? "bf16" : "f16", env, bad, n, bits(x[first]), out[first],
          want[bf][first]);
  }
  free(out);
}

/* ggml's quantize_row_q8_0_ref, restated from its definition. */
static void want_q8_0(const float *x, sa_block_q8_0 *y) {
  float amax = 0.0f;
  for (int j = 0; j < 32; j++)
    amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
  float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  y->scale = want_f16(d);
  for (int j = 0; j < 32; j++)
    y->q[j] = (int8_t)roundf(x[j] * id);
}

static void test_q8_0(const sa_kernel_set *ks) {
  enum { NB = 4096 };
  float *x = malloc(NB * 32 * sizeof(float)), *back = malloc(NB * 32 * 4);
  sa_block_q8_0 *got = malloc(NB * sizeof *got), want;
  for (size_t b = 0; b < NB; b++) {
    float *xb = x + b * 32;
    /* scales within f16's range: amax / 127 below 65504 */
    float mag = ldexpf(1.0f, (int)t_range(0, 40) - 30);
    for (int j = 0; j < 32; j++)
      xb[j] = t_uniform(-mag, mag);
    switch (b % 5) {
    case 0: /* all zeros: scale 0, q 0 */
      memset(xb, 0, 32 * sizeof(float));
      break;
    case 1: /* x * id lands on k + 0.5 exactly: roundf goes away from 0 */
      for (int j = 0; j < 32; j++)
        xb[j] = j == 0 ? 127.0f : ((float)((int)(j * 7) % 255) - 127.0f) + 0.5f;
      break;
    case 2: /* one big value, the rest tiny */
      xb[b % 32] = -mag * 1000;
      break;
    default:
      break;
    }
  }
  ks->from_f32[SA_Q8_0](NB * 32, x, got);
  size_t bad = 0, first = 0;
  for (size_t b = 0; b < NB; b++) {
    want_q8_0(x + b * 32, &want);
    if (memcmp(&want, &got[b], sizeof want) != 0 && bad++ == 0)
      first = b;
  }
  CHECK(bad == 0, "f32 -> q8_0: %zu of %d blocks differ from ggml's, first %zu",
        bad, NB, first);
  ks->to_f32[SA_Q8_0](NB * 32, got, back);
  bad = 0;
  for (size_t b = 0; b < NB; b++)
    for (int j = 0; j < 32; j++) {
      double w = (double)got[b].q[j] * f16_value(got[b].scale);
      bad += (double)back[b * 32 + j] != w;
    }
  CHECK(bad == 0, "q8_0 -> f32: %zu values are not q * scale", bad);
  free(x);
  free(back);
  free(got);
}

/* The public entry: one runnable set, the same bits, and its checks. */
static void test_api(const float *x, size_t n) {
  uint16_t *a = malloc(n * 2), *b = malloc(n * 2);
  sets[0]->from_f32[SA_F16](n, x, a);
  CHECK(sa_convert(SA_F16, b, SA_F32, x, n) == SA_OK &&
            memcmp(a, b, n * 2) == 0,
        "sa_convert f32 -> f16 differs from the kernels");
  CHECK(sa_convert(SA_F16, b, SA_BF16, a, 8) == SA_ERR_BAD_ARGUMENT,
        "bf16 -> f16 accepted");
  CHECK(sa_convert((sa_dtype)9, b, SA_F32, x, 8) == SA_ERR_BAD_ARGUMENT,
        "type 9 accepted");
  CHECK(sa_convert(SA_Q8_0, b, SA_F32, x, 33) == SA_ERR_BAD_SHAPE,
        "33 values into q8_0 accepted");
  CHECK(sa_convert(SA_F16, (char *)x + 6, SA_F32, x, 8) == SA_ERR_BAD_STRIDE,
        "overlapping convert accepted");
  CHECK(sa_dtype_bytes(SA_Q8_0, 64) == 68 && sa_dtype_bytes(SA_BF16, 3) == 6 &&
            sa_dtype_bytes(SA_Q8_0, 31) == 0 &&
            sa_dtype_bytes((sa_dtype)7, 1) == 0,
        "sa_dtype_bytes");
  CHECK(sizeof(sa_block_q8_0) == 34, "sa_block_q8_0 is %zu bytes",
        sizeof(sa_block_q8_0));
  free(a);
  free(b);
}

int main(void) {
  t_seed(13);
  nsets = t_runnable_sets(sets, MAX_SETS);
  size_t cap = 65536 * 7 + 0x7c00 * 8;
  float *x = malloc(cap * sizeof(float));
  size_t n = narrowing_inputs(x);
  uint16_t *want[2] = {malloc(n * 2), malloc(n * 2)};
  for (size_t i = 0; i < n; i++) {
    want[0][i] = want_f16(x[i]);
    want[1][i] = want_bf16(x[i]);
  }
  for (int si = 0; si < nsets; si++) {
    const sa_kernel_set *ks = sets[si];
    t_context = ks->name;
    test_widen(ks);
    test_narrow(ks, x, n, want, "nearest");
    test_q8_0(ks);
    /* the FP environment must not matter */
    int mode = fegetround();
    fesetround(FE_TOWARDZERO);
#if defined(__x86_64__)
    unsigned csr = __builtin_ia32_stmxcsr();
    __builtin_ia32_ldmxcsr(csr | 0x8040); /* FTZ, DAZ */
#endif
    test_narrow(ks, x, n, want, "toward zero, FTZ/DAZ");
#if defined(__x86_64__)
    __builtin_ia32_ldmxcsr(csr);
#endif
    fesetround(mode);
  }
  t_context = "sa_convert";
  test_api(x, n);
  free(x);
  free(want[0]);
  free(want[1]);
  return t_finish("test_convert");
}
