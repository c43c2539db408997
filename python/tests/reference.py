"""Attention in float64 numpy, straight from include/simdattn.h, with the
tolerance a float32 computation of it is allowed.

Tolerance (the argument of test_features.c, simplified to one bound per
call): a float32 logit s = scale * q.k carries at most (D + 2) u scale
sum_p |q_p k_p| of rounding from the dot product (u = 2^-24), and each
later step (scale, softcap's divide, tanh and multiply, the ALiBi fma, the
mask add, the subtraction of the row max) a few u of |s|: with delta the
largest such error over the keys a row sees, the softmax weights move by a
factor within e^{+-2 delta}, so O by at most (e^{2 delta} - 1) max|v|; exp
(1 ULP in SLEEF and libm, under 1 ULP in the polynomials), the sum over n
keys and the final divide add (n + 8) u max|v|. Twice that is the bound
used. It is a worst case: for q, k, v ~ N(0, 1) with D = 16..32 it comes
to 1e-5..5e-5 max|v|, while the errors measured in these tests stay under
1% of it (about 2e-7 max|v|). The LSE is 1-Lipschitz in the logits:
delta, plus (n + 8) u for its sum and u |lse| for the final add.
"""
import math

import numpy as np

U = 2.0 ** -24


def attention(q, k, v, *, causal=False, scale=None, mask=None, window=None,
              softcap=None, alibi_slopes=None, sinks=None, kv_lens=None):
    """q [B,Hq,Lq,D], k [B,Hkv,Lk,D], v [B,Hkv,Lk,Dv] (bhld). Returns
    (o, lse, o_tol, lse_tol) in float64."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    B, Hq, Lq, D = q.shape
    Hkv, Lk = k.shape[1:3]
    k = np.repeat(k, Hq // Hkv, axis=1)  # query head h reads h // group
    v = np.repeat(v, Hq // Hkv, axis=1)
    scale = 1 / math.sqrt(D) if scale is None else scale
    s = scale * q @ k.swapaxes(-1, -2)
    err = (D + 2) * U * abs(scale) * (np.abs(q) @ np.abs(k).swapaxes(-1, -2))
    err += 2 * U * np.abs(s)
    if softcap:
        y = softcap * np.tanh(s / softcap)
        err += U * np.abs(s) + 4 * U * np.abs(y)
        s = y
    lens = np.full(B, Lk) if kv_lens is None else np.asarray(kv_lens)
    i = np.arange(Lq)[None, None, :, None]
    j = np.arange(Lk)[None, None, None, :]
    c = i + (lens - Lq)[:, None, None, None] if causal == "bottom_right" \
        else i + 0 * lens[:, None, None, None]
    see = j < lens[:, None, None, None]
    if causal:
        see = see & (j <= c)
    if window is not None:
        left, right = window
        if left >= 0:
            see = see & (j >= c - left)
        if right >= 0:
            see = see & (j <= c + right)
    if alibi_slopes is not None:
        a = np.asarray(alibi_slopes, np.float64)[None, :, None, None] * (j - c)
        s = s + a
        err += U * np.abs(a) + 2 * U * np.abs(s)
    if mask is not None:
        m = np.broadcast_to(mask, s.shape)
        if m.dtype in (np.bool_, np.uint8):
            see = see & (m != 0)
        else:
            s = s + m
            see = see & (m != -np.inf)
            err += 2 * U * np.abs(np.where(see, s, 0))
    s = np.where(see, s, -np.inf)
    sink = np.full(Hq, -np.inf) if sinks is None else np.asarray(sinks,
                                                                np.float64)
    sink = np.broadcast_to(sink[None, :, None, None], (B, Hq, Lq, 1))
    mx = np.maximum(s.max(-1, keepdims=True), sink)
    mx0 = np.where(np.isfinite(mx), mx, 0.0)
    p = np.exp(s - mx0)
    den = p.sum(-1, keepdims=True) + np.exp(sink - mx0)
    with np.errstate(invalid="ignore", divide="ignore"):
        o = np.where(den > 0, (p @ v) / den, 0.0)
        lse = np.where(den > 0, np.log(den) + mx0, -np.inf)[..., 0]
    delta = np.where(see, err + 2 * U * np.abs(s), 0).max(initial=0.0)
    vmax = max(np.abs(v).max(initial=0.0), 1e-30)
    o_tol = 2 * vmax * (math.expm1(2 * delta) + (Lk + 8) * U)
    finite = np.abs(lse[np.isfinite(lse)]).max(initial=0.0)
    lse_tol = 2 * (delta + (Lk + 8) * U + U * finite)
    return o, lse, o_tol, lse_tol


def check(got, want, tol, what="o"):
    """Max abs error within tol, same positions of -inf (LSE of empty rows)."""
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(np.isneginf(got), np.isneginf(want)), what
    fin = np.isfinite(want)
    assert np.isfinite(got[fin]).all(), what + ": non-finite values"
    errmax = np.abs(got[fin] - want[fin]).max(initial=0.0)
    assert errmax <= tol, "%s: max error %.3g > tolerance %.3g" % (
        what, errmax, tol)
    return errmax
