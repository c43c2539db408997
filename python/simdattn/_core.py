"""The numpy API: attention, merge, contexts, kernel sets, CPU facts.

Tensors go to the library as a base address plus element strides, the way
the C API takes them, so any numpy view whose innermost dimension is
contiguous is used in place. Python checks only what keeps the library
inside the arrays' memory (dtypes, ranks, shapes that agree); the library
checks the rest and its status comes back as a simdattn.Error.
"""
import ctypes
from collections import namedtuple
from ctypes import byref

import numpy as np

from . import _lib

_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)
_BOOL_DTYPES = (np.dtype(np.bool_), np.dtype(np.uint8))
# The C API reads a scale of 0 as "1/sqrt(d)"; Python's scale=0 means zero,
# so it goes in as the smallest normal float, which gives the same uniform
# weights unless a score exceeds 1e30.
_TINY = float(np.finfo(np.float32).tiny)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_INT = (-(1 << 31), (1 << 31) - 1)

_MASKS = {"top_left": _lib.MASK_CAUSAL_TOP_LEFT,
          "bottom_right": _lib.MASK_CAUSAL_BOTTOM_RIGHT}
_ALGOS = {"auto": _lib.ALGO_AUTO, "fused": _lib.ALGO_FUSED,
          "three_pass": _lib.ALGO_THREE_PASS}
_PINS = {None: _lib.PIN_DEFAULT, "cores": _lib.PIN_CORES,
         "none": _lib.PIN_NONE}

_copies = 0


def copies():
    """How many input copies the binding has made in this process.

    Inputs are used in place whenever their innermost dimension is
    contiguous; this counter goes up by one for every tensor that was not
    and had to be copied (tests use it to prove zero-copy).
    """
    return _copies


def _copied(a):
    global _copies
    _copies += 1
    return np.ascontiguousarray(a)


# ------------------------------------------------------------------ strides


def outer_strides(sizes, strides):
    """Element strides of the outer dimensions for the C API, or None.

    sizes/strides are in elements. None when the C API cannot take them:
    negative strides (size_t), or every stride 0 over more than one element
    (all-zero strides mean "packed" to the library, so a fully broadcast
    tensor must be materialised).
    """
    out = list(strides)
    for i, n in enumerate(sizes):
        if n == 1:
            out[i] = 0  # never stepped; numpy and torch may report anything
        elif out[i] < 0:
            return None
    if not any(out):
        for i, n in enumerate(sizes):
            if n == 1:
                out[i] = 1  # harmless: this index is always 0
                return out
        return None
    return out


def _elem(byte_strides, item):
    """Byte strides to element strides; None if one is not a multiple."""
    out = []
    for s in byte_strides:
        if s % item:
            return None
        out.append(s // item)
    return out


def _tensor(a, name, blhd):
    """(array, sizes (B, H, L, D), outer element strides) of q, k, v."""
    if not isinstance(a, np.ndarray):
        raise TypeError("%s must be a numpy array, got %s"
                        % (name, type(a).__name__))
    if a.dtype != _F32:
        raise TypeError("%s must be float32, got %s (convert with "
                        ".astype(np.float32))" % (name, a.dtype))
    shape, st = a.shape, a.strides
    if len(shape) == 3:
        shape, st = (1,) + shape, (0,) + st
    elif len(shape) != 4:
        raise ValueError("%s must have 3 or 4 dimensions, got shape %s"
                         % (name, a.shape))
    if blhd:
        shape = (shape[0], shape[2], shape[1], shape[3])
        st = (st[0], st[2], st[1], st[3])
    if 0 in shape:
        return a, shape, (0, 0, 0)  # the library reports the empty dimension
    es = None
    if shape[3] == 1 or st[3] == 4:
        es = _elem(st[:3], 4)
        if es is not None:
            es = outer_strides(shape[:3], es)
    if es is None:
        # innermost not contiguous, negative strides or fully broadcast
        a = _copied(a)
        st = a.strides
        if len(st) == 3:
            st = (0,) + st
        if blhd:
            st = (st[0], st[2], st[1])
        es = outer_strides(shape[:3], [s // 4 for s in st[:3]])
    return a, shape, es


def _out_array(out, shape, blhd, ndim):
    """Check a caller's output: float32, the right shape, writable, usable
    in place (it is written through its strides, never copied)."""
    b, h, l, d = shape
    want = (b, l, h, d) if blhd else (b, h, l, d)
    if ndim == 3:
        want = want[1:]
    if not isinstance(out, np.ndarray) or out.dtype != _F32:
        raise TypeError("out must be a float32 numpy array")
    if out.shape != want:
        raise ValueError("out has shape %s, expected %s" % (out.shape, want))
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    if 0 in shape:
        return (0, 0, 0)  # the library reports the empty dimension
    es = _out_strides(out, blhd)
    if es is None:
        raise ValueError("out must have a contiguous last dimension and "
                         "non-negative strides whose elements do not alias")
    return es


def _mask(mask, sizes, d):
    """Fill d's mask_bool or mask_add from a bool/uint8 or float32 array
    broadcastable to sizes = (B, Hq, Lq, Lk). Returns the array to keep."""
    if not isinstance(mask, np.ndarray):
        raise TypeError("mask must be a numpy array (bool or float32)")
    if mask.dtype in _BOOL_DTYPES:
        item, is_bool = 1, True
    elif mask.dtype == _F32:
        item, is_bool = 4, False
    else:
        raise TypeError("mask must be bool, uint8 (nonzero = attend) or "
                        "float32 (added to the scores), got %s" % mask.dtype)
    if mask.ndim > 4:
        raise ValueError("mask has %d dimensions, at most 4" % mask.ndim)
    pad = 4 - mask.ndim
    shape = (1,) * pad + mask.shape
    for n, want in zip(shape, sizes):
        if n != want and n != 1:
            raise ValueError("mask of shape %s is not broadcastable to "
                             "[B, Hq, Lq, Lk] = %s"
                             % (mask.shape, list(sizes)))
    if 0 in sizes:
        return mask  # the library reports the empty dimension
    es = _elem(mask.strides, item)
    if es is None or min(es, default=0) < 0:
        mask = _copied(mask)
        es = [s // item for s in mask.strides]
    es = [0] * pad + es
    es = [s if n == want else 0 for s, n, want in zip(es, shape, sizes)]
    es = outer_strides(sizes, es)
    if es is None:
        # one value for every element: one key row of it is enough
        mask = _copied(np.broadcast_to(mask.reshape(shape), sizes)[0, 0, 0])
        es = [0, 0, 0, 1]
    layout = _lib.MaskLayout(es[0], es[1], es[2], es[3], 0)
    ptr = mask.ctypes.data
    if is_bool:
        # numpy bools are one byte, 0 or 1: the buffer is the C mask as is
        d.mask_bool, d.mask_bool_layout = ptr, layout
    else:
        d.mask_add, d.mask_add_layout = ptr, layout
    return mask


def _per_head(x, n, name):
    a = np.ascontiguousarray(x, dtype=np.float32)
    if a.shape != (n,):
        raise ValueError("%s must have one value per query head (%d), got "
                         "shape %s" % (name, n, a.shape))
    return a


def _int_in(x, lo_hi, name):
    x = int(x)
    if not lo_hi[0] <= x <= lo_hi[1]:
        raise ValueError("%s = %d does not fit the C type" % (name, x))
    return x


# ---------------------------------------------------------------- attention


def attention(q, k, v, *, causal=False, scale=None, mask=None,
              algorithm="auto", context=None, layout="bhld", out=None,
              window=None, softcap=None, alibi_slopes=None, sinks=None,
              kv_lens=None, return_lse=False):
    """softmax(scale * q k^T + masks) v for every batch item and query head.

    q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv] float32 in
    layout "bhld" (or [B, L, H, D] with layout="blhd"; 3-D arrays drop B).
    Hq a multiple of Hkv is GQA/MQA. Arrays are read in place when their
    last dimension is contiguous (see copies()). Returns out (new, or the
    one passed, written through its strides), and with return_lse=True
    (out, lse) with lse float32 [B, Hq, Lq].

    causal: False, True / "top_left" (query i sees keys j <= i) or
    "bottom_right" (j <= i + Lk - Lq, the KV-cache convention).
    scale: None is 1/sqrt(D); any other number is used as given.
    mask: bool/uint8 (nonzero = attend) or float32 (added), broadcastable
    to [B, Hq, Lq, Lk]. window=(left, right): keys c-left..c+right, -1
    unbounded. softcap: s = cap * tanh(s / cap). alibi_slopes: Hq floats,
    or True for the standard ones. sinks: Hq logits. kv_lens: B valid key
    lengths. context: a simdattn.Context, or None for the calling thread
    alone with the default kernel set.
    """
    blhd = layout == "blhd"
    if not blhd and layout != "bhld":
        raise ValueError("layout must be 'bhld' or 'blhd', got %r" % (layout,))
    q, (b, hq, lq, dqk), qs = _tensor(q, "q", blhd)
    k, (bk, hkv, lk, dk), ks = _tensor(k, "k", blhd)
    v, (bv, hv, lv, dv), vs = _tensor(v, "v", blhd)
    if not (q.ndim == k.ndim == v.ndim):
        raise ValueError("q, k and v must all be 3-D or all be 4-D")
    if bk != b or bv != b or dk != dqk or (hv, lv) != (hkv, lk):
        raise ValueError(
            "shapes do not agree (as [B, H, L, D]): q %s, k %s, v %s; k and v "
            "need q's B, k q's D, v k's H and L"
            % ([b, hq, lq, dqk], [bk, hkv, lk, dk], [bv, hv, lv, dv]))

    d = _lib.AttentionDesc()
    d.struct_size = _lib.ATTENTION_DESC_SIZE
    d.batch, d.heads_q, d.heads_kv = b, hq, hkv
    d.len_q, d.len_kv, d.dim_qk, d.dim_v = lq, lk, dqk, dv
    if scale is not None:
        scale = float(scale)
        d.scale = _TINY if abs(scale) < _TINY else scale  # NaN passes on
    if causal is False or causal is None:
        pass
    elif causal is True:
        d.mask = _lib.MASK_CAUSAL_TOP_LEFT
    elif causal in _MASKS:
        d.mask = _MASKS[causal]
    else:
        raise ValueError("causal must be False, True, 'top_left' or "
                         "'bottom_right', got %r" % (causal,))
    if algorithm != "auto":
        if algorithm not in _ALGOS:
            raise ValueError("algorithm must be 'auto', 'fused' or "
                             "'three_pass', got %r" % (algorithm,))
        d.algorithm = _ALGOS[algorithm]
    d.q.batch, d.q.head, d.q.seq = qs
    d.k.batch, d.k.head, d.k.seq = ks
    d.v.batch, d.v.head, d.v.seq = vs

    if out is None:
        shape = (b, lq, hq, dv) if blhd else (b, hq, lq, dv)
        out = np.empty(shape if q.ndim == 4 else shape[1:], _F32)
        # packed in its own layout: strides written out, not left at 0,
        # because 0 means packed [B,H,L,D] whatever the layout
        hs, ls = (dv, hq * dv) if blhd else (lq * dv, dv)
        d.o.batch, d.o.head, d.o.seq = hq * lq * dv, hs, ls
    else:
        d.o.batch, d.o.head, d.o.seq = _out_array(out, (b, hq, lq, dv), blhd,
                                                  q.ndim)

    keep = None  # the mask as passed to C: held until the call returns
    if mask is not None:
        keep = _mask(mask, (b, hq, lq, lk), d)
    if window is not None:
        left, right = window
        d.window = 1
        d.window_left = _int_in(left, _INT64, "window left")
        d.window_right = _int_in(right, _INT64, "window right")
    if softcap is not None:
        d.softcap = float(softcap)
    if alibi_slopes is not None:
        if alibi_slopes is True:
            alibi_slopes = _standard_slopes(hq)
        alibi_slopes = _per_head(alibi_slopes, hq, "alibi_slopes")
        d.alibi_slopes = alibi_slopes.ctypes.data
    if sinks is not None:
        sinks = _per_head(sinks, hq, "sinks")
        d.sinks = sinks.ctypes.data
    if kv_lens is not None:
        kv_lens = np.asarray(kv_lens)
        if kv_lens.dtype.kind not in "iu":
            raise TypeError("kv_lens must be integers, got %s" % kv_lens.dtype)
        kv_lens = np.ascontiguousarray(kv_lens, dtype=_I64)
        if kv_lens.shape != (b,):
            raise ValueError("kv_lens must have one length per batch item "
                             "(%d), got shape %s" % (b, kv_lens.shape))
        d.len_kv_valid = kv_lens.ctypes.data
    lse = None
    if return_lse:
        lse = np.empty((b, hq, lq) if q.ndim == 4 else (hq, lq), _F32)
        d.lse = lse.ctypes.data  # packed [B, Hq, Lq]: lse_at stays 0

    ctx = None
    if context is not None:
        ctx = context._handle
        if ctx is None:
            raise ValueError("this simdattn.Context is closed")
    # The GIL is released for the length of the C call (ctypes.CDLL).
    st = _lib.attention(ctx, byref(d), q.ctypes.data, k.ctypes.data,
                        v.ctypes.data, out.ctypes.data)
    if st:
        raise _lib.fail(st)
    del keep  # held to here: it may be a copy nothing else refers to
    return (out, lse) if return_lse else out


def merge(outs, lses, *, layout="bhld", out=None):
    """Combine attention results over disjoint key ranges of the same
    queries (each part from attention(..., return_lse=True)) into the
    result over all of them: returns (out, lse).

    outs: parts shaped like attention's output ([B, H, L, Dv] in layout, or
    3-D), lses: their [B, H, L] log-sum-exps. The library takes one set of
    strides for every part and the result: parts packed in their layout are
    read in place (and all parts strided exactly like out), others copied.
    out may be one of the parts (merge in place).
    """
    if _lib.attention_merge is None:
        raise RuntimeError("the loaded libsimdattn (%s) has no "
                           "sa_attention_merge (0.3)" % __version__)
    blhd = layout == "blhd"
    if not blhd and layout != "bhld":
        raise ValueError("layout must be 'bhld' or 'blhd', got %r" % (layout,))
    outs, lses = list(outs), list(lses)
    if not outs or len(outs) != len(lses):
        raise ValueError("merge needs as many lses as outs, at least one")
    for name, parts in (("outs", outs), ("lses", lses)):
        for p in parts:
            if not isinstance(p, np.ndarray) or p.dtype != _F32:
                raise TypeError("%s must be float32 numpy arrays" % name)
    shape = outs[0].shape
    if len(shape) not in (3, 4) or any(p.shape != shape for p in outs):
        raise ValueError("outs must all have one 3-D or 4-D shape, got %s"
                         % [p.shape for p in outs])
    s4 = shape if len(shape) == 4 else (1,) + shape
    b, h, l, dv = (s4[0], s4[2], s4[1], s4[3]) if blhd else s4
    lse_shape = (b, h, l) if len(shape) == 4 else (h, l)
    if any(p.shape != lse_shape for p in lses):
        raise ValueError("lses must have shape %s, got %s"
                         % (lse_shape, [p.shape for p in lses]))

    def key(a):  # strides that matter: a size-1 dimension is never stepped
        return tuple(0 if n == 1 else s for n, s in zip(a.shape, a.strides))

    result = np.empty(shape, _F32) if out is None else out
    if out is not None:
        if not isinstance(out, np.ndarray) or out.dtype != _F32:
            raise TypeError("out must be a float32 numpy array")
        if out.shape != shape or not out.flags.writeable:
            raise ValueError("out must be writable with shape %s" % (shape,))
        usable = _out_strides(out, blhd) is not None
        if not (usable and all(key(p) == key(out) for p in outs)) and \
                not out.flags.c_contiguous:
            result = np.empty(shape, _F32)  # computed packed, copied to out
    outs = [p if key(p) == key(result) else _copied(p) for p in outs]
    lses = [p if p.flags.c_contiguous else _copied(p) for p in lses]
    lse = np.empty(lse_shape, _F32)

    d = _lib.MergeDesc()
    d.struct_size = _lib.MERGE_DESC_SIZE
    d.batch, d.heads, d.len_q, d.dim_v, d.parts = b, h, l, dv, len(outs)
    d.o.batch, d.o.head, d.o.seq = _out_strides(result, blhd)
    d.lse.batch, d.lse.head, d.lse.seq = h * l, l, 1  # packed, never all 0
    n = len(outs)
    o_ptrs = (ctypes.c_void_p * n)(*[p.ctypes.data for p in outs])
    l_ptrs = (ctypes.c_void_p * n)(*[p.ctypes.data for p in lses])
    st = _lib.attention_merge(byref(d), o_ptrs, l_ptrs, result.ctypes.data,
                              lse.ctypes.data)
    if st:
        raise _lib.fail(st)
    if out is not None and result is not out:
        out[...] = result
        result = out
    return result, lse


def _out_strides(a, blhd):
    """Outer element strides (B, H, L) of an output-shaped array, or None
    when the library cannot write it in place."""
    shape, st = a.shape, a.strides
    if len(shape) == 3:
        shape, st = (1,) + shape, (0,) + st
    if blhd:
        shape = (shape[0], shape[2], shape[1], shape[3])
        st = (st[0], st[2], st[1], st[3])
    if not (shape[3] == 1 or st[3] == 4):
        return None
    es = _elem(st[:3], 4)
    return None if es is None else outer_strides(shape[:3], es)


# -------------------------------------------------------- library and CPU

# supported: this CPU runs it; preferred: it may be the default here (a set
# runs by name wherever it is supported, sa_kernel_set_preferred)
KernelSet = namedtuple("KernelSet", "name isa exp_impl about vector_bits "
                       "priority supported preferred")
Cpu = namedtuple("Cpu", "description features")


def _kernel_set(p):
    s = p.contents
    return KernelSet(s.name.decode(), s.isa.decode(), s.exp_impl.decode(),
                     s.about.decode(), s.vector_bits, s.priority,
                     bool(_lib.kernel_set_supported(p)),
                     bool(_lib.kernel_set_preferred(p)))


def kernel_sets():
    """Every kernel set compiled into the library, runnable here or not."""
    return [_kernel_set(_lib.kernel_set_at(i))
            for i in range(_lib.kernel_set_count())]


def default_kernel_set():
    """The set a NULL context uses (SIMDATTN_ISA, else the best one)."""
    p = ctypes.POINTER(_lib.KernelSetStruct)()
    st = _lib.kernel_set_default(byref(p))
    if st:
        raise _lib.fail(st)
    return _kernel_set(p)


def cpu():
    """This CPU: sa_cpu_describe's line and the feature names it has."""
    n = _lib.cpu_describe(None, 0) + 1
    buf = ctypes.create_string_buffer(n)
    _lib.cpu_describe(buf, n)
    names = ctypes.create_string_buffer(1024)
    _lib.cpu_feature_names(_lib.cpu_features(), names, len(names))
    return Cpu(buf.value.decode(), tuple(names.value.decode().split()))


def alibi_slopes(n):
    """The standard ALiBi slopes of n heads (float32 [n])."""
    if _lib.alibi_slopes is None:
        raise RuntimeError("the loaded libsimdattn has no sa_alibi_slopes")
    out = np.empty(max(int(n), 0), _F32)
    st = _lib.alibi_slopes(int(n) if n >= 0 else 0, out.ctypes.data)
    if st:
        raise _lib.fail(st)
    return out


_standard_slopes = alibi_slopes  # attention's argument of that name hides it


class Context:
    """A kernel set and a pool of worker threads (an sa_context).

    threads: None = SIMDATTN_NUM_THREADS, else one per core. isa: a kernel
    set's name, "auto" for the best, None for the default (SIMDATTN_ISA).
    pin: None (SIMDATTN_PIN, else "cores"), "cores" or "none". spin_us:
    how long idle workers stay awake for the next call (0: 100 us, -1:
    never, up to 10_000_000). A context
    runs one call at a time (another thread's call gets simdattn.BusyError);
    close it (or use `with`) to stop its threads, and not while a call on it
    is running in another thread.
    """

    _handle = None

    def __init__(self, threads=None, isa=None, pin=None, cpus=None,
                 first_core=0, spin_us=0):
        if pin not in _PINS:
            raise ValueError("pin must be None, 'cores' or 'none', got %r"
                             % (pin,))
        o = _lib.ContextOptions()
        o.struct_size = ctypes.sizeof(o)
        o.isa = None if isa is None else str(isa).encode()
        o.num_threads = 0 if threads is None else _int_in(threads, _INT,
                                                          "threads")
        o.pin = _PINS[pin]
        o.cpus = None if cpus is None else str(cpus).encode()
        o.first_core = _int_in(first_core, _INT, "first_core")
        o.spin_us = _int_in(spin_us, _INT, "spin_us")
        h = ctypes.c_void_p()
        st = _lib.context_create(byref(o), byref(h))
        if st:
            raise _lib.fail(st)
        self._handle = h.value

    def _live(self):
        if self._handle is None:
            raise ValueError("this simdattn.Context is closed")
        return self._handle

    @property
    def kernel_set(self):
        return _kernel_set(_lib.context_kernel_set(self._live()))

    @property
    def threads(self):
        return _lib.context_num_threads(self._live())

    @property
    def pinned(self):
        return bool(_lib.context_pinned(self._live()))

    @property
    def closed(self):
        return self._handle is None

    def close(self):
        h, self._handle = self._handle, None
        if h is not None:
            _lib.context_destroy(h)

    def __enter__(self):
        self._live()
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        if self._handle is None:
            return "<simdattn.Context closed>"
        return "<simdattn.Context %s, %d threads%s>" % (
            self.kernel_set.name, self.threads,
            ", pinned" if self.pinned else "")


__version__ = _lib.version_string().decode()
