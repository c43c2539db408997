#!/usr/bin/env python3
"""The -polyexp sets' polynomials (kernels/exp_coeffs.h), fitted again.

exp2(f) ~ 1 + f u(f) on [-1/2, 1/2] and exp(r) ~ 1 + r u(r) on
[-ln2/2, ln2/2], u of degree 5, minimax in relative error by Lawson's
iteration (weighted least squares, each weight multiplied by its point's
error). The coefficients are rounded to float one at a time, lowest first,
and the remaining ones fitted again around the rounded ones, so the float
polynomial stays near the real one's error. Prints the SA_EXP*_C* lines and
each polynomial's largest relative error. Needs numpy (python3-numpy).
"""
import numpy as np


def fit(fun, a, b, fixed, deg=5, iters=80):
    x = np.cos(np.linspace(0, np.pi, 6001)) * (b - a) / 2 + (a + b) / 2
    x = x[np.abs(x) > 1e-12]
    y = fun(x)
    basis = np.stack([x ** (k + 1) for k in range(deg + 1)], 1) / y[:, None]
    target = (y - 1) / y
    if fixed:
        target = target - basis[:, : len(fixed)] @ np.array(fixed)
    free = basis[:, len(fixed):]
    w = np.full(len(x), 1.0 / len(x))
    for _ in range(iters):
        sw = np.sqrt(w)
        c = np.linalg.lstsq(free * sw[:, None], target * sw, rcond=None)[0]
        w = w * np.abs(free @ c - target)
        w /= w.sum()
    return list(fixed) + list(c)


def main():
    ln2 = np.log(2.0)
    for name, fun, half, first in (
        ("EXP2", lambda x: 2.0 ** x, 0.5, 1),
        ("EXP", np.exp, ln2 / 2 + 1e-4, 2),
    ):
        fixed = [] if first == 1 else [1.0]  # exp's C1 is 1 exactly
        while len(fixed) < 6:
            c = fit(fun, -half, half, fixed)
            fixed.append(float(np.float32(c[len(fixed)])))
        x = np.linspace(-half, half, 400001)
        u = np.zeros_like(x)
        for c in reversed(fixed):
            u = u * x + c
        err = np.max(np.abs((1 + x * u) / fun(x) - 1))
        for k in range(first, 7):
            print("#define SA_%s_C%d %.10ef" % (name, k, fixed[k - 1]))
        print("/* %s: %.2e relative, %.3f ULP */" % (name, err, err / 2.0 ** -24))


if __name__ == "__main__":
    main()
