"""PyTorch drop-in: scaled_dot_product_attention on CPU float32, float16 and
bfloat16 tensors (fp32 arithmetic; the output has the query's dtype).

    import simdattn.torch
    out = simdattn.torch.scaled_dot_product_attention(q, k, v, is_causal=True)
    simdattn.torch.patch()  # F.scaled_dot_product_attention, if torch has none

Same arguments and meaning as PyTorch 2.x's function of that name. Tensors
are read in place through data_ptr() and stride() whenever their last
dimension is contiguous; broadcast (expanded) inputs and masks cost nothing.
There is no autograd and no dropout. Rows whose mask removes every key come
out as zeros (PyTorch 2.5's "safe softmax"; older versions gave NaN).
"""
import math
from ctypes import byref

import torch

from . import _core, _lib

__all__ = ["scaled_dot_product_attention", "patch", "unpatch",
           "set_context"]

_context = None
# torch dtype -> sa_dtype (SA_F32, SA_F16, SA_BF16)
_DTYPES = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_MISSING = object()
_original = _MISSING  # what patch() replaced; _MISSING: there was none


def set_context(context):
    """Run the drop-in on this simdattn.Context (None: the calling thread
    alone, one worker). A context runs one call at a time, so share it only
    between calls made one after another. Returns the previous one."""
    global _context
    previous, _context = _context, context
    return previous


def _check(t, name):
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s"
                        % (name, type(t).__name__))
    if t.layout != torch.strided:
        raise TypeError("%s: simdattn takes dense (strided) tensors, not %s"
                        % (name, t.layout))
    if not t.is_cpu:
        raise ValueError("%s is on %s: simdattn runs on the CPU only"
                         % (name, t.device))
    if t.dtype not in _DTYPES:
        raise TypeError("%s is %s: simdattn takes float32, float16 or "
                        "bfloat16" % (name, t.dtype))


def _flat(t, batch, rest):
    """t expanded to batch + rest, batch dimensions merged into one, as a
    torch tensor (a copy when they do not merge). For the rare paths."""
    t = t.expand(batch + rest)
    try:
        return t.view((math.prod(batch),) + rest)
    except RuntimeError:
        return t.reshape((math.prod(batch),) + rest)


def _merged(sizes, strides):
    """One stride for batch dimensions merged into one, or None if they do
    not merge (each must step exactly over the ones inside it)."""
    inner, first = None, 0
    for n, s in zip(reversed(sizes), reversed(strides)):
        if n == 1:
            continue
        if inner is None:
            first = s
        elif s != inner[0] * inner[1]:
            return None
        inner = (n, s)
    return first


def _operand(t, name, batch, rest, mask=False):
    """(tensor, element strides) of t broadcast to batch + rest with the
    batch dimensions merged into one: the strides of (batch, *rest[:-1])
    for q, k, v, whose last dimension must be contiguous; of all four
    dimensions for a mask, where any key stride works.

    Worked out on shape and stride tuples, because torch's expand and view
    cost a microsecond each. t itself is returned and read in place unless
    the C API cannot express it; then a copy (counted in simdattn.copies()).
    """
    full = batch + rest
    pad = len(full) - t.dim()
    st = []
    for n, want, s in zip((1,) * pad + tuple(t.shape), full,
                          (0,) * pad + tuple(t.stride())):
        if n != want and n != 1:
            raise RuntimeError("%s of shape %s cannot be broadcast to %s"
                               % (name, tuple(t.shape), full))
        st.append(s if n == want and n != 1 else 0)  # 0: broadcast
    nb = len(batch)
    b = _merged(batch, st[:nb])
    if b is not None:
        sizes, es = (math.prod(batch),) + rest, [b] + st[nb:]
        if mask:
            outer = _core.outer_strides(sizes, es)
            if outer is not None:
                return t, outer
            # every stride 0, which the C API reads as packed: one value
            # everywhere, so one key row of it is enough
            _core._copies += 1
            row = t[(0,) * t.dim()].expand(rest[-1]).contiguous()
            return row, (0, 0, 0, 1)
        if rest[-1] == 1 or es[-1] == 1:
            outer = _core.outer_strides(sizes[:-1], es[:-1])
            if outer is not None:
                return t, outer
    _core._copies += 1
    t = _flat(t, batch, rest).contiguous()
    n = 4 if mask else 3
    return t, _core.outer_strides(t.shape[:n], t.stride()[:n])


def _reference(q, k, v, mask, is_causal, scale):
    """PyTorch's own math, for the shapes the library has no answer for:
    no keys (S = 0) or no features (E = 0)."""
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if is_causal:
        keep = torch.ones(s.shape[-2:], dtype=torch.bool).tril()
        s = s.masked_fill(~keep, -math.inf)
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool \
            else s + mask
    return torch.matmul(torch.softmax(s, dim=-1), v)


def scaled_dot_product_attention(query, key, value, attn_mask=None,
                                 dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value, as PyTorch 2.x's.

    query [..., Hq, L, E], key [..., Hkv, S, E], value [..., Hkv, S, Ev];
    leading dimensions broadcast. attn_mask: bool (True = take part) or
    float32 (added), broadcastable to [..., Hq, L, S]. is_causal: query i
    sees keys j <= i (top-left). scale: None is 1/sqrt(E). enable_gqa: Hq a
    multiple of Hkv, query head h reading KV head h // (Hq / Hkv).
    Returns a new tensor [..., Hq, L, Ev].
    """
    if dropout_p:
        raise NotImplementedError(
            "simdattn.torch.scaled_dot_product_attention: dropout_p = %r is "
            "not supported (simdattn has no dropout); pass dropout_p=0.0, as "
            "in inference" % (dropout_p,))
    _check(query, "query")
    _check(key, "key")
    _check(value, "value")
    if attn_mask is not None:
        if not isinstance(attn_mask, torch.Tensor):
            raise TypeError("attn_mask must be a torch.Tensor")
        if attn_mask.dtype not in (torch.bool,) + tuple(_DTYPES):
            raise TypeError("attn_mask is %s: it must be bool (True = take "
                            "part) or floating (added)" % attn_mask.dtype)
        if attn_mask.dtype not in (torch.bool, torch.float32):
            _core._copies += 1  # the library adds f32 masks
            attn_mask = attn_mask.float()
        if not attn_mask.is_cpu or attn_mask.layout != torch.strided:
            raise ValueError("attn_mask must be a dense CPU tensor")
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit "
                               "attn_mask should not be set when "
                               "is_causal=True")
    if torch.is_grad_enabled() and (query.requires_grad or key.requires_grad
                                    or value.requires_grad):
        raise NotImplementedError(
            "simdattn has no backward pass: call it under torch.no_grad() "
            "or torch.inference_mode()")
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError("query, key and value need at least 2 "
                           "dimensions (..., L, E)")
    n = max(query.dim(), key.dim(), value.dim()) - 2
    L, E = query.shape[-2:]
    S, Ek = key.shape[-2:]
    Sv, Ev = value.shape[-2:]
    if Ek != E or Sv != S:
        raise RuntimeError(
            "shapes do not agree: query %s, key %s, value %s (key needs "
            "query's E, value key's S)" % (tuple(query.shape),
                                           tuple(key.shape),
                                           tuple(value.shape)))

    # Leading dimensions, padded to one rank as broadcasting does; the last
    # of them is the heads, the others the batch.
    lead = [(1,) * (n + 2 - t.dim()) + tuple(t.shape[:-2])
            for t in (query, key, value)]
    hq, hk, hv = (x[-1] for x in lead) if n else (1, 1, 1)
    batch = ()
    if n > 1:
        qb, kb, vb = (x[:-1] for x in lead)
        batch = qb if qb == kb == vb else torch.broadcast_shapes(qb, kb, vb)
    if enable_gqa and (hk != hq or hv != hq):
        if not hk or not hv or hq % hk or hq % hv:
            raise RuntimeError(
                "enable_gqa: query heads (%d) must be a multiple of key heads "
                "(%d) and value heads (%d)" % (hq, hk, hv))
        hkv = hk
        if hk != hv:  # two groupings, which one heads_kv cannot express
            _core._copies += 2
            key = key.reshape(lead[1] + key.shape[-2:]).repeat_interleave(
                hq // hk, dim=-3)
            value = value.reshape(lead[2] + value.shape[-2:]) \
                .repeat_interleave(hq // hv, dim=-3)
            hkv = hq
    else:
        heads = max(hq, hk, hv)
        if any(h not in (1, heads) for h in (hq, hk, hv)):
            raise RuntimeError(
                "heads differ: query %d, key %d, value %d; pass "
                "enable_gqa=True for grouped-query attention" % (hq, hk, hv))
        # one KV head for all (MQA) stays one: the library's grouped path;
        # otherwise a single head broadcasts (stride 0)
        hkv = 1 if hk == hv == 1 else heads
        hq = heads

    if scale is None:
        c_scale = 0.0  # the library's 1/sqrt(E)
    else:
        c_scale = float(scale)
        if abs(c_scale) < _core._TINY:  # zero is zero (see _core); NaN passes
            c_scale = _core._TINY
    out_shape = (batch + (hq,) if n else ()) + (L, Ev)
    if 0 in out_shape:
        return query.new_empty(out_shape)
    if S == 0 or E == 0:
        g = hq // hkv
        return _reference(
            _flat(query, batch, (hq, L, E)).float(),
            _flat(key, batch, (hkv, S, E)).float().repeat_interleave(g, 1),
            _flat(value, batch, (hkv, S, Ev)).float().repeat_interleave(g, 1),
            None if attn_mask is None else _flat(attn_mask, batch, (hq, L, S)),
            is_causal,
            (1 / math.sqrt(E) if E else 1.0) if scale is None else scale,
        ).reshape(out_shape).to(query.dtype)

    q, qs = _operand(query, "query", batch, (hq, L, E))
    k, ks = _operand(key, "key", batch, (hkv, S, E))
    v, vs = _operand(value, "value", batch, (hkv, S, Ev))
    out = torch.empty(out_shape, dtype=query.dtype)  # packed [B, Hq, L, Ev]

    d = _lib.AttentionDesc()
    d.struct_size = _lib.ATTENTION_DESC_SIZE
    d.batch, d.heads_q, d.heads_kv = math.prod(batch), hq, hkv
    d.len_q, d.len_kv, d.dim_qk, d.dim_v = L, S, E, Ev
    d.scale = c_scale
    d.q_type, d.o_type = _DTYPES[q.dtype], _DTYPES[out.dtype]
    d.k_type, d.v_type = _DTYPES[k.dtype], _DTYPES[v.dtype]
    if is_causal:
        d.mask = _lib.MASK_CAUSAL_TOP_LEFT
    d.q.batch, d.q.head, d.q.seq = qs
    d.k.batch, d.k.head, d.k.seq = ks
    d.v.batch, d.v.head, d.v.seq = vs
    d.o.batch, d.o.head, d.o.seq = hq * L * Ev, L * Ev, Ev
    mask = None  # kept alive until the call returns
    if attn_mask is not None:
        mask, ms = _operand(attn_mask, "attn_mask", batch, (hq, L, S), True)
        layout = _lib.MaskLayout(ms[0], ms[1], ms[2], ms[3], 0)
        if mask.dtype == torch.bool:
            # torch bools are one byte, 0 or 1: the C mask as it is
            d.mask_bool, d.mask_bool_layout = mask.data_ptr(), layout
        else:
            d.mask_add, d.mask_add_layout = mask.data_ptr(), layout

    ctx = None if _context is None else _context._live()
    # ctypes.CDLL releases the GIL for the C call: other threads run.
    st = _lib.attention(ctx, byref(d), q.data_ptr(), k.data_ptr(),
                        v.data_ptr(), out.data_ptr())
    if st:
        raise _lib.fail(st)
    return out


def patch(force=False):
    """Install the drop-in as torch.nn.functional.scaled_dot_product_attention
    when this PyTorch has none (1.x), or in any case with force=True.
    Returns whether it installed it."""
    global _original
    F = torch.nn.functional
    current = getattr(F, "scaled_dot_product_attention", _MISSING)
    if current is scaled_dot_product_attention or (
            current is not _MISSING and not force):
        return False
    _original = current
    F.scaled_dot_product_attention = scaled_dot_product_attention
    return True


def unpatch():
    """Undo patch(): put back what it replaced, or remove the attribute if
    PyTorch had none. Returns whether there was anything to undo."""
    global _original
    F = torch.nn.functional
    if getattr(F, "scaled_dot_product_attention", None) is not \
            scaled_dot_product_attention:
        return False
    if _original is _MISSING:
        del F.scaled_dot_product_attention
    else:
        F.scaled_dot_product_attention = _original
    _original = _MISSING
    return True
