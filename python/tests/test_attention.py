"""simdattn.attention and merge against the float64 reference, on every
kernel set this CPU runs; masks, window, softcap, ALiBi, sinks, kv_lens,
LSE; zero-copy and in-place output."""
import os
import numpy as np
import pytest

import reference
import simdattn


def randn(rng, *shape):
    return rng.standard_normal(shape, dtype=np.float32)


def qkv(rng, B=2, Hq=4, Hkv=2, Lq=7, Lk=13, D=16, Dv=8):
    return randn(rng, B, Hq, Lq, D), randn(rng, B, Hkv, Lk, D), \
        randn(rng, B, Hkv, Lk, Dv)


def same(got, q, k, v, **kw):
    """got (o or (o, lse)) matches the reference of the same arguments:
    within the derived bound (reference.py), and within 1e-5 max|v|, the
    accuracy these moderate shapes are expected to have (measured: about
    2e-7 max|v|, so this second check has 50x of room)."""
    o, lse, otol, ltol = reference.attention(q, k, v, **kw)
    if isinstance(got, tuple):
        reference.check(got[1], lse, ltol, "lse")
        got = got[0]
    err = reference.check(got, o, otol)
    assert err <= 1e-5 * np.abs(v).max(), err
    return err


# ----------------------------------------------------------- every kernel set

SHAPES = {
    "mha": dict(Hq=4, Hkv=4),
    "gqa": dict(Hq=4, Hkv=2),
    "mqa_decode": dict(Hq=8, Hkv=1, Lq=1, Lk=40),
    "cross": dict(Lq=5, Lk=33, D=24, Dv=40),
    "long": dict(B=1, Hq=2, Hkv=1, Lq=70, Lk=150, D=32, Dv=32),
}


@pytest.mark.parametrize("algorithm", ["fused", "three_pass"])
@pytest.mark.parametrize("causal", [False, "top_left", "bottom_right"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_set(ctx, rng, shape, causal, algorithm):
    q, k, v = qkv(rng, **SHAPES[shape])
    got = simdattn.attention(q, k, v, causal=causal, algorithm=algorithm,
                             context=ctx, return_lse=True)
    same(got, q, k, v, causal=causal)


def test_every_feature_on_every_set(ctx, rng):
    B, Hq, Lq, Lk = 2, 4, 9, 23
    q, k, v = qkv(rng, B=B, Hq=Hq, Lq=Lq, Lk=Lk)
    kw = dict(causal="bottom_right", mask=rng.random((B, 1, Lq, Lk)) > 0.2,
              window=(6, -1), softcap=3.0, sinks=[0.5, -np.inf, 1.0, -2.0],
              kv_lens=[Lk, 17], scale=0.4)
    got = simdattn.attention(q, k, v, context=ctx, return_lse=True,
                             alibi_slopes=True, **kw)
    same(got, q, k, v, alibi_slopes=simdattn.alibi_slopes(Hq), **kw)


def test_kernel_sets_and_cpu():
    sets = simdattn.kernel_sets()
    assert "scalar" in [s.name for s in sets]
    assert all(s.supported for s in sets if s.name == "scalar")
    best = simdattn.default_kernel_set()
    assert best.supported and best.about
    assert all(s.preferred for s in sets if s.name == "scalar")
    if os.environ.get("SIMDATTN_ISA", "auto") in ("", "auto"):
        # the default is the highest-priority set both runnable and preferred
        top = max((s for s in sets if s.supported and s.preferred),
                  key=lambda s: s.priority)
        assert best.preferred and best.name == top.name
    assert simdattn.cpu().description
    with simdattn.Context(threads=2, isa="scalar", pin="none") as c:
        assert c.kernel_set.name == "scalar" and c.threads == 2
        assert not c.pinned and "scalar" in repr(c)
    assert c.closed and "closed" in repr(c)
    with pytest.raises(ValueError, match="closed"):
        c.threads


def test_threads_give_the_same_bits(rng):
    q, k, v = qkv(rng, B=2, Hq=8, Hkv=2, Lq=40, Lk=60)
    with simdattn.Context(threads=1) as one, simdattn.Context(threads=3) as n:
        a = simdattn.attention(q, k, v, causal=True, context=one)
        b = simdattn.attention(q, k, v, causal=True, context=n)
    assert np.array_equal(a, b)
    # workers that sleep at once, or stay awake 5 ms between calls
    for spin in (-1, 5000):
        with simdattn.Context(threads=3, spin_us=spin) as n:
            for _ in range(2):
                b = simdattn.attention(q, k, v, causal=True, context=n)
                assert np.array_equal(a, b)


# -------------------------------------------------------------------- masks

MASK_SHAPES = [(), (13,), (1, 13), (7, 13), (2, 1, 1, 13), (1, 4, 7, 13),
               (4, 1, 13), (2, 4, 7, 13), (2, 4, 7, 1), (7, 1)]


@pytest.mark.parametrize("kind", ["bool", "uint8", "float"])
@pytest.mark.parametrize("mshape", MASK_SHAPES, ids=str)
def test_mask_broadcast(rng, kind, mshape):
    q, k, v = qkv(rng)  # B 2, Hq 4, Lq 7, Lk 13
    keep = rng.random(mshape) > 0.3
    if kind == "float":
        mask = np.where(keep, rng.standard_normal(mshape), -np.inf)
        mask = mask.astype(np.float32)
    else:
        mask = (keep * 3).astype(np.uint8) if kind == "uint8" else keep
        mask = np.asarray(mask)
    before = simdattn.copies()
    got = simdattn.attention(q, k, v, mask=mask, return_lse=True)
    # a mask holding one value for every element is one key row, copied
    assert simdattn.copies() - before == (1 if mask.size == 1 else 0)
    same(got, q, k, v, mask=mask)


def test_mask_views_without_copies(rng):
    q, k, v = qkv(rng)
    big = rng.random((2, 4, 13, 7 * 2)) > 0.25
    mask = big[:, :, :, ::2].swapaxes(-1, -2)  # key stride 13*14: gathered
    before = simdattn.copies()
    same(simdattn.attention(q, k, v, mask=mask), q, k, v, mask=mask)
    flipped = big[:, ::-1, :, :7].swapaxes(-1, -2)  # a negative stride
    same(simdattn.attention(q, k, v, mask=flipped), q, k, v, mask=flipped)
    assert simdattn.copies() - before == 1


def test_rows_with_no_key_are_zero(rng):
    q, k, v = qkv(rng)
    mask = np.ones((7, 13), bool)
    mask[2] = False
    o, lse = simdattn.attention(q, k, v, mask=mask, return_lse=True)
    assert (o[:, :, 2] == 0).all() and np.isneginf(lse[:, :, 2]).all()
    o, lse = simdattn.attention(q, k, v, mask=mask, return_lse=True,
                                sinks=[1.0, 2.0, -np.inf, 0.0])
    assert (o[:, :, 2] == 0).all()
    np.testing.assert_allclose(lse[:, :, 2], [[1, 2, -np.inf, 0]] * 2)


# ------------------------------------------------- the 0.3 score modifiers


@pytest.mark.parametrize("kw", [
    dict(window=(3, 0)), dict(window=(-1, 2)), dict(window=(2, 2)),
    dict(window=(4, -1), causal=True), dict(softcap=2.5),
    dict(softcap=0.7, causal="bottom_right"),
    dict(sinks=np.array([0.0, 3.0, -np.inf, -1.0], np.float32)),
    dict(sinks=[5.0, 5.0, 5.0, 5.0], causal=True),
    dict(kv_lens=[13, 4]), dict(kv_lens=[0, 9], causal="bottom_right"),
    dict(kv_lens=np.array([11, 13], np.uint8), window=(2, -1)),
    dict(alibi_slopes=[0.5, 0.25, 0.125, 0.0625]),
    dict(alibi_slopes=[0.5, -0.25, 0.0, 1.0], causal="bottom_right"),
    dict(scale=-0.3), dict(scale=2.0, softcap=4.0),
], ids=lambda kw: ",".join(sorted(kw)))
def test_modifiers(rng, kw):
    q, k, v = qkv(rng)
    got = simdattn.attention(q, k, v, return_lse=True, **kw)
    same(got, q, k, v, **kw)


def test_standard_alibi_slopes(rng):
    np.testing.assert_array_equal(simdattn.alibi_slopes(4),
                                  [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8])
    s6 = simdattn.alibi_slopes(6)  # 4's, then every other slope of 8's
    np.testing.assert_allclose(s6, [2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8,
                                    2 ** -1, 2 ** -3])
    q, k, v = qkv(rng)
    same(simdattn.attention(q, k, v, alibi_slopes=True), q, k, v,
         alibi_slopes=simdattn.alibi_slopes(4))


def test_scale_zero_means_zero(rng):
    q, k, v = qkv(rng, Hq=2, Hkv=2)
    o = simdattn.attention(q, k, v, scale=0.0)  # uniform weights
    want = np.broadcast_to(v.mean(axis=2, keepdims=True), o.shape)
    np.testing.assert_allclose(o, want, atol=1e-5 * np.abs(v).max())


# --------------------------------------------------------------------- merge


@pytest.mark.parametrize("cuts", [(5,), (1, 6, 12), (0, 13)])
def test_merge_of_key_ranges(rng, cuts):
    q, k, v = qkv(rng)
    sinks = np.array([0.3, -1.0, 2.0, -np.inf], np.float32)
    whole = simdattn.attention(q, k, v, sinks=sinks, return_lse=True)
    edges = [0, *cuts, 13]
    outs, lses = [], []
    for a, b in zip(edges, edges[1:]):
        if a == b:
            continue
        o, lse = simdattn.attention(q, k[:, :, a:b], v[:, :, a:b],
                                    return_lse=True,  # sinks: one part only
                                    sinks=None if outs else sinks)
        outs.append(o)
        lses.append(lse)
    o, lse = simdattn.merge(outs, lses)
    tol = reference.attention(q, k, v, sinks=sinks)[2]
    np.testing.assert_allclose(o, whole[0], rtol=0, atol=2 * tol)
    np.testing.assert_allclose(lse, whole[1], rtol=0, atol=1e-5)
    # merge in place: into the first part, which the library allows
    first = outs[0]
    o2, _ = simdattn.merge(outs, lses, out=first)
    assert o2 is first
    np.testing.assert_array_equal(o2, o)


def test_merge_blhd_and_strided_parts(rng):
    q, k, v = (x.transpose(0, 2, 1, 3) for x in qkv(rng))  # [B, L, H, D]
    o1, l1 = simdattn.attention(q, k[:, :6], v[:, :6], layout="blhd",
                                return_lse=True)
    o2, l2 = simdattn.attention(q, k[:, 6:], v[:, 6:], layout="blhd",
                                return_lse=True)
    whole = simdattn.attention(q, k, v, layout="blhd")
    before = simdattn.copies()
    o, _ = simdattn.merge([o1, o2], [l1, l2], layout="blhd")
    assert simdattn.copies() == before  # packed parts: read in place
    np.testing.assert_allclose(o, whole, atol=1e-5 * np.abs(v).max())
    big = np.zeros(o1.shape[:-1] + (20,), np.float32)
    strided = big[..., 3:3 + o1.shape[-1]]
    strided[...] = o2
    out = np.full_like(big, 7.0)
    o, _ = simdattn.merge([o1, strided], [l1, l2], layout="blhd",
                          out=out[..., 2:2 + o1.shape[-1]])
    np.testing.assert_allclose(o, whole, atol=1e-5 * np.abs(v).max())
    assert (out[..., :2] == 7).all()
    assert (out[..., 2 + o1.shape[-1]:] == 7).all()


# ----------------------------------------------------------------- zero-copy


def test_out_is_written_through_a_strided_view(rng):
    q, k, v = qkv(rng)
    big = np.full((2, 4, 7 * 2, 8 + 5), 7.0, np.float32)
    out = big[:, :, ::2, 2:10]  # rows 2 apart, 2 floats in: not packed
    before = simdattn.copies()
    res = simdattn.attention(q, k, v, out=out, causal=True)
    assert res is out and simdattn.copies() == before
    same(out, q, k, v, causal=True)
    assert (big[:, :, 1::2] == 7).all()
    assert (big[..., :2] == 7).all() and (big[..., 10:] == 7).all()


def test_blhd_slices_of_a_fused_projection(rng):
    B, L, H, D = 2, 11, 4, 16
    qkv_proj = randn(rng, B, L, 3, H, D)  # one [B, L, 3, H, D] matmul output
    q, k, v = qkv_proj[:, :, 0], qkv_proj[:, :, 1], qkv_proj[:, :, 2]
    before = simdattn.copies()
    o = simdattn.attention(q, k, v, layout="blhd", causal=True)
    assert simdattn.copies() == before
    assert o.shape == (B, L, H, D) and o.flags.c_contiguous
    t = (0, 2, 1, 3)
    same(o.transpose(t), q.transpose(t), k.transpose(t), v.transpose(t),
         causal=True)
    out = np.empty((B, L, H, D), np.float32)
    assert simdattn.attention(q, k, v, layout="blhd", causal=True,
                              out=out) is out
    np.testing.assert_array_equal(out, o)


def test_broadcast_inputs_are_read_in_place(rng):
    q, k, v = qkv(rng, B=3, Hq=4, Hkv=2)
    k1, v1 = np.broadcast_to(k[:1], k.shape), np.broadcast_to(v[:1], v.shape)
    before = simdattn.copies()
    o = simdattn.attention(q, k1, v1)  # batch stride 0
    assert simdattn.copies() == before
    same(o, q, k1, v1)
    # every stride 0 is "packed" to the C API: copied, never misread
    row = randn(rng, 16)
    kk = np.broadcast_to(row, k.shape)
    same(simdattn.attention(q, kk, v), q, kk, v)
    assert simdattn.copies() == before + 1


def test_copies_only_when_the_last_dimension_is_strided(rng):
    q, k, v = qkv(rng)
    before = simdattn.copies()
    kt = np.ascontiguousarray(k.swapaxes(-1, -2)).swapaxes(-1, -2)
    same(simdattn.attention(q, kt, v), q, kt, v)
    assert simdattn.copies() == before + 1
    vr = v[:, ::-1]  # a negative stride: size_t cannot say it
    same(simdattn.attention(q, k, vr), q, k, vr)
    assert simdattn.copies() == before + 2


def test_in_place_and_3d(rng):
    q, k, v = qkv(rng, B=1, Hq=2, Hkv=2, D=8, Dv=8)
    want = reference.attention(q, k, v)
    q3, k3, v3 = q[0].copy(), k[0], v[0]
    o = simdattn.attention(q3, k3, v3, out=q3)  # O is exactly Q
    assert o is q3 and o.shape == (2, 7, 8)
    reference.check(o, want[0][0], want[2])
    o, lse = simdattn.attention(q[0], k3, v3, return_lse=True)
    assert lse.shape == (2, 7)
