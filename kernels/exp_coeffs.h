/*
 * The polynomials of the -polyexp sets' exp and exp2, shared by every ISA
 * (kernels/<isa>/exp_poly.h evaluate them; only the vector width differs).
 *
 *   exp2(f) = 1 + f (C1 + f (C2 + ... + f C6)),  f in [-1/2, 1/2]
 *   exp(r)  = 1 + r (1 + r (C2 + ... + r C6)),   r in [-ln2/2, ln2/2]
 *
 * Minimax in relative error (Lawson's iteration), rounded to float one
 * coefficient at a time with the rest fitted again: the float polynomials
 * are within 3.0e-9 (exp2) and 3.1e-9 (exp) of the functions, 0.05 ULP,
 * so nearly all of the error is the evaluation's (tools/fit_exp.py
 * reproduces them). Each is evaluated in Horner form ending in fma(u, f, 1):
 * the last rounding is the only one at the result's scale, which is what
 * keeps it under 1 ULP (0.10's form, 1 + (f + f^2 P(f)), rounded twice
 * there and measured 1.02).
 */
#ifndef SA_KERNELS_EXP_COEFFS_H
#define SA_KERNELS_EXP_COEFFS_H

#define SA_EXP2_C1 6.9314718246e-01f
#define SA_EXP2_C2 2.4022647738e-01f
#define SA_EXP2_C3 5.5503595620e-02f
#define SA_EXP2_C4 9.6184993163e-03f
#define SA_EXP2_C5 1.3390970416e-03f
#define SA_EXP2_C6 1.5329309099e-04f

#define SA_EXP_C2 4.9999994040e-01f
#define SA_EXP_C3 1.6666521132e-01f
#define SA_EXP_C4 4.1668266058e-02f
#define SA_EXP_C5 8.3686737344e-03f
#define SA_EXP_C6 1.3820716413e-03f

/* The coefficients from the top down, as each ISA's series helper takes
 * them (exp's c1 is 1). */
#define SA_EXP2_SERIES                                                         \
  SA_EXP2_C6, SA_EXP2_C5, SA_EXP2_C4, SA_EXP2_C3, SA_EXP2_C2, SA_EXP2_C1
#define SA_EXP_SERIES                                                          \
  SA_EXP_C6, SA_EXP_C5, SA_EXP_C4, SA_EXP_C3, SA_EXP_C2, 1.0f

#endif /* SA_KERNELS_EXP_COEFFS_H */
