"""simdattn.torch.scaled_dot_product_attention: PyTorch 2.x semantics,
checked against a float64 matmul-softmax reference, against
nn.MultiheadAttention's output for a layer built on it, and against
PyTorch's own function where this PyTorch has one."""
import math

import numpy as np
import pytest

import reference
import simdattn

torch = pytest.importorskip("torch")
import simdattn.torch as sat  # noqa: E402
F = torch.nn.functional


def ref(q, k, v, attn_mask=None, is_causal=False, scale=None,
        enable_gqa=False):
    """PyTorch's documented math in float64, with the library's rule for
    rows that see no key (zeros). Returns (out, tolerance)."""
    q, k, v = (t.double() for t in (q, k, v))
    if enable_gqa:
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], -3)
        v = v.repeat_interleave(q.shape[-3] // v.shape[-3], -3)
    L, S, E = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1 / math.sqrt(E) if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale
    keep = torch.ones(L, S, dtype=torch.bool)
    if is_causal:
        keep = keep.tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        keep = keep & attn_mask
    elif attn_mask is not None:
        s = s + attn_mask.double()
        keep = keep & (attn_mask != -math.inf)
    s = s.masked_fill(~keep, -math.inf)
    p = torch.softmax(s, -1).nan_to_num(0.0)  # no key: zeros
    out = p @ v
    # the bound of reference.py: dot product and scale, softmax, sum
    mag = (q.abs() @ k.abs().transpose(-2, -1)).max().item() * abs(scale)
    seen = s[keep.expand_as(s)]
    smax = seen.abs().max().item() if seen.numel() else 0.0
    delta = reference.U * ((E + 2) * mag + 8 * smax)
    tol = 2 * v.abs().max().item() * (math.expm1(2 * delta) +
                                      (S + 8) * reference.U)
    return out, tol


def close(got, want_tol):
    want, tol = want_tol
    assert got.dtype == torch.float32 and got.shape == want.shape
    err = (got.double() - want).abs().max().item()
    assert err <= tol, "max error %.3g > %.3g" % (err, tol)


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float32)


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


@pytest.mark.parametrize("shape", [
    ((2, 4, 7, 16), (2, 4, 9, 16), (2, 4, 9, 8)),   # cross, Ev != E
    ((3, 6, 16), (3, 6, 16), (3, 6, 16)),           # 3-D: heads only
    ((5, 8), (11, 8), (11, 4)),                     # 2-D
    ((2, 3, 2, 5, 8), (2, 3, 2, 6, 8), (2, 3, 2, 6, 8)),  # two batch dims
    ((2, 4, 5, 8), (1, 4, 6, 8), (2, 1, 6, 8)),     # broadcast batch, heads
    ((1, 1, 1, 8), (1, 1, 1, 8), (1, 1, 1, 8)),
], ids=str)
@pytest.mark.parametrize("is_causal", [False, True])
def test_shapes(shape, is_causal):
    q, k, v = (randn(*s) for s in shape)
    close(sat.scaled_dot_product_attention(q, k, v, is_causal=is_causal),
          ref(q, k, v, is_causal=is_causal))


@pytest.mark.parametrize("mshape", [(7, 9), (9,), (2, 1, 1, 9), (4, 7, 9),
                                    (2, 4, 7, 9), (1,), (7, 1)], ids=str)
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_masks(mshape, kind):
    q, k, v = randn(2, 4, 7, 16), randn(2, 4, 9, 16), randn(2, 4, 9, 16)
    keep = torch.rand(mshape) > 0.3
    mask = keep if kind == "bool" else \
        torch.randn(mshape).masked_fill(~keep, -math.inf)
    before = simdattn.copies()
    got = sat.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert simdattn.copies() - before == (1 if mask.numel() == 1 else 0)
    close(got, ref(q, k, v, attn_mask=mask))


def test_scale_and_fully_masked_rows():
    q, k, v = randn(1, 2, 4, 8), randn(1, 2, 5, 8), randn(1, 2, 5, 8)
    for scale in (0.1, -0.5, 3.0):
        close(sat.scaled_dot_product_attention(q, k, v, scale=scale),
              ref(q, k, v, scale=scale))
    o = sat.scaled_dot_product_attention(q, k, v, scale=0.0)  # uniform
    torch.testing.assert_close(o, v.mean(-2, keepdim=True).expand_as(o))
    mask = torch.ones(4, 5, dtype=torch.bool)
    mask[1] = False
    o = sat.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert (o[:, :, 1] == 0).all()  # PyTorch 2.5's safe softmax, not NaN


def test_gqa_and_mqa():
    q, k, v = randn(2, 8, 5, 16), randn(2, 2, 7, 16), randn(2, 2, 7, 16)
    close(sat.scaled_dot_product_attention(q, k, v, enable_gqa=True),
          ref(q, k, v, enable_gqa=True))
    with pytest.raises(RuntimeError, match="enable_gqa"):
        sat.scaled_dot_product_attention(q, k, v)
    with pytest.raises(RuntimeError, match="multiple"):
        sat.scaled_dot_product_attention(q[:, :7], k, v, enable_gqa=True)
    # one KV head broadcasts without enable_gqa, as matmul would
    close(sat.scaled_dot_product_attention(q, k[:, :1], v[:, :1]),
          ref(q, k[:, :1], v[:, :1], enable_gqa=True))
    # key and value grouped differently (copied to one grouping)
    v4 = randn(2, 4, 7, 8)
    got = sat.scaled_dot_product_attention(q, k, v4, enable_gqa=True)
    close(got, ref(q, k.repeat_interleave(4, 1), v4.repeat_interleave(2, 1)))


def test_views_are_read_in_place():
    B, L, H, D = 2, 10, 4, 16
    x = randn(B, L, 3 * H * D)  # a fused QKV projection, [B, L, 3*H*D]
    q, k, v = (t.view(B, L, H, D).transpose(1, 2) for t in x.chunk(3, -1))
    mask = (torch.rand(B, 1, 1, L) > 0.2).expand(B, H, L, L)
    before = simdattn.copies()
    got = sat.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert simdattn.copies() == before  # strided views, expanded mask
    close(got, ref(q, k, v, attn_mask=mask))
    # a last dimension that is not contiguous is copied, and still right
    kt = k.transpose(-1, -2).contiguous().transpose(-1, -2)
    close(sat.scaled_dot_product_attention(q, kt, v), ref(q, kt, v))
    assert simdattn.copies() == before + 1
    # all strides zero (one row everywhere): copied, never misread as packed
    kz = randn(D).expand(B, H, L, D)
    close(sat.scaled_dot_product_attention(q, kz, v), ref(q, kz, v))


def test_degenerate_shapes_follow_torch():
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 0, 8), randn(2, 3, 0, 5)
    o = sat.scaled_dot_product_attention(q, k, v)
    assert o.shape == (2, 3, 4, 5) and (o == 0).all()
    o = sat.scaled_dot_product_attention(randn(2, 3, 0, 8), randn(2, 3, 6, 8),
                                         randn(2, 3, 6, 5))
    assert o.shape == (2, 3, 0, 5)


def test_refusals():
    q = randn(1, 2, 3, 8)
    with pytest.raises(NotImplementedError, match="dropout"):
        sat.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
    with pytest.raises(TypeError, match="float32"):
        sat.scaled_dot_product_attention(q.double(), q, q)
    with pytest.raises(TypeError, match="float32"):
        sat.scaled_dot_product_attention(q, q.int(), q)
    with pytest.raises(ValueError, match="CPU"):
        sat.scaled_dot_product_attention(q, q, q.to("meta"))
    with pytest.raises(TypeError, match="torch.Tensor"):
        sat.scaled_dot_product_attention(q.numpy(), q, q)
    with pytest.raises(TypeError, match="bool"):
        sat.scaled_dot_product_attention(q, q, q,
                                         attn_mask=torch.zeros(3, 3).long())
    with pytest.raises(RuntimeError, match="is_causal"):
        sat.scaled_dot_product_attention(q, q, q, is_causal=True,
                                         attn_mask=torch.ones(3, 3).bool())
    with pytest.raises(RuntimeError, match="broadcast"):
        sat.scaled_dot_product_attention(q, q, q,
                                         attn_mask=torch.ones(2, 3).bool())
    with pytest.raises(RuntimeError, match="agree"):
        sat.scaled_dot_product_attention(q, q[..., :4], q)
    with pytest.raises(RuntimeError, match="2 dimensions"):
        sat.scaled_dot_product_attention(q[0, 0, 0], q, q)
    g = q.clone().requires_grad_()
    with pytest.raises(NotImplementedError, match="no_grad"):
        sat.scaled_dot_product_attention(g, q, q)
    with torch.no_grad():
        sat.scaled_dot_product_attention(g, q, q)
    with pytest.raises(simdattn.BadArgumentError, match="scale is not finite"):
        sat.scaled_dot_product_attention(q, q, q, scale=math.nan)


def test_context_and_threads():
    q, k, v = randn(2, 8, 33, 16), randn(2, 8, 40, 16), randn(2, 8, 40, 16)
    one = sat.scaled_dot_product_attention(q, k, v, is_causal=True)
    with simdattn.Context(threads=2) as ctx:
        assert sat.set_context(ctx) is None
        try:
            two = sat.scaled_dot_product_attention(q, k, v, is_causal=True)
        finally:
            assert sat.set_context(None) is ctx
    assert torch.equal(one, two)  # bit-identical for any thread count


def test_patch():
    had = hasattr(F, "scaled_dot_product_attention")
    original = getattr(F, "scaled_dot_product_attention", None)
    try:
        assert sat.patch() is (not had)  # only where PyTorch lacks one
        assert sat.patch() is False  # never twice
        sat.unpatch()
        assert sat.patch(force=True) is True
        assert F.scaled_dot_product_attention is \
            sat.scaled_dot_product_attention
        q = randn(1, 2, 3, 8)
        close(F.scaled_dot_product_attention(q, q, q, is_causal=True),
              ref(q, q, q, is_causal=True))
    finally:
        sat.unpatch()
    assert getattr(F, "scaled_dot_product_attention", None) is original


@pytest.mark.parametrize("causal", [False, True])
def test_multihead_attention_layer(causal):
    """One nn.MultiheadAttention layer computed by hand around the drop-in
    (its in_proj weights, head split as views, SDPA, out_proj) equals the
    module's own forward. PyTorch 1.13's MHA does not call SDPA, so the
    comparison is with PyTorch's independent implementation."""
    E, H, B, L = 32, 4, 2, 9
    mha = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    x = randn(B, L, E)
    # MHA's bool mask says True = NOT allowed; SDPA's True = take part
    blocked = torch.ones(L, L, dtype=torch.bool).triu(1) if causal else None
    with torch.no_grad():
        want = mha(x, x, x, attn_mask=blocked, need_weights=False)[0]
        qkv = F.linear(x, mha.in_proj_weight, mha.in_proj_bias)
        q, k, v = (t.view(B, L, H, E // H).transpose(1, 2)
                   for t in qkv.chunk(3, -1))
        before = simdattn.copies()
        o = sat.scaled_dot_product_attention(q, k, v, is_causal=causal)
        assert simdattn.copies() == before  # head views read in place
        got = mha.out_proj(o.transpose(1, 2).reshape(B, L, E))
    # both sides are float32: the drop-in's bound plus PyTorch's own
    # rounding (a float32 softmax and two matmuls, ~1e-7 relative)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not hasattr(torch.nn.functional,
                                "scaled_dot_product_attention"),
                    reason="this PyTorch has no scaled_dot_product_attention")
def test_same_as_pytorch_s_own():  # pragma: no cover - PyTorch 2.x only
    q, k, v = randn(2, 4, 7, 16), randn(2, 4, 9, 16), randn(2, 4, 9, 8)
    mask = torch.rand(7, 9) > 0.3
    mask[:, 0] = True
    for kw in (dict(), dict(is_causal=True), dict(attn_mask=mask),
               dict(scale=0.3)):
        torch.testing.assert_close(
            sat.scaled_dot_product_attention(q, k, v, **kw),
            F.scaled_dot_product_attention(q, k, v, **kw),
            rtol=1e-5, atol=1e-5)


def test_numpy_and_torch_agree():
    assert simdattn.torch is sat  # the lazy attribute is the module
    q, k, v = randn(2, 4, 7, 16), randn(2, 2, 9, 16), randn(2, 2, 9, 8)
    a = sat.scaled_dot_product_attention(q, k, v, is_causal=True,
                                         enable_gqa=True)
    b = simdattn.attention(q.numpy(), k.numpy(), v.numpy(), causal=True)
    np.testing.assert_array_equal(a.numpy(), b)


@pytest.mark.parametrize("qt,kvt", [
    (torch.float16, torch.float16), (torch.bfloat16, torch.bfloat16),
    (torch.float32, torch.float16), (torch.float32, torch.bfloat16),
    (torch.bfloat16, torch.float32)])
@pytest.mark.parametrize("causal", [False, True])
def test_half_precision(qt, kvt, causal):
    """float16 / bfloat16 tensors go in as they are (no float32 copy) and
    come out in the query's dtype: within the fp32 bound of the rounded
    inputs, plus the output's own rounding."""
    torch.manual_seed(3)
    q = randn(2, 4, 33, 64).to(qt)
    k = randn(2, 2, 47, 64).to(kvt)
    v = randn(2, 2, 47, 64).to(kvt)
    before = simdattn.copies()
    got = sat.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                           enable_gqa=True)
    assert simdattn.copies() == before
    assert got.dtype == qt and got.shape == (2, 4, 33, 64)
    want, tol = ref(q.float(), k.float(), v.float(), is_causal=causal,
                    enable_gqa=True)
    half_ulp = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8,
                torch.float32: 0.0}[qt]
    err = (got.double() - want).abs()
    assert (err <= tol + half_ulp * (want.abs() + tol)).all(), \
        "max error %.3g" % err.max().item()
