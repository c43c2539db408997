"""Every bad-input status reachable from Python comes back as a
simdattn.Error subclass with the status, its sentence and the library's
detail; what Python itself must refuse (so that the library never reads
past an array) is a TypeError or ValueError before any call."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import simdattn


@pytest.fixture
def t(rng):
    q = rng.standard_normal((2, 4, 5, 8), dtype=np.float32)
    k = rng.standard_normal((2, 2, 6, 8), dtype=np.float32)
    v = rng.standard_normal((2, 2, 6, 8), dtype=np.float32)
    return q, k, v


def raises(cls, status, detail, fn, *args, **kw):
    """fn raises cls carrying status, with detail in its message, and
    leaves a passed out= untouched (no status writes the output)."""
    out = kw.get("out")
    before = None if out is None else out.copy()
    with pytest.raises(cls) as info:
        fn(*args, **kw)
    e = info.value
    assert isinstance(e, simdattn.Error)
    assert e.status_name == status, e.status_name
    assert detail in e.detail and detail in str(e)
    assert e.status_text and e.status_text in str(e)
    if out is not None:
        np.testing.assert_array_equal(out, before)
    return e


@pytest.mark.parametrize("kw, detail", [
    (dict(scale=float("nan")), "scale is not finite"),
    (dict(scale=float("inf")), "scale is not finite"),
    (dict(scale=1e39), "scale is not finite"),  # beyond float32: inf
    (dict(window=(-2, 0)), "window_left = -2"),
    (dict(window=(0, -5)), "window_right = -5"),
    (dict(softcap=-1.0), "softcap"),
    (dict(softcap=float("inf")), "softcap"),
    (dict(softcap=float("nan")), "softcap"),
    (dict(sinks=[0, float("nan"), 0, 0]), "sinks[1] is NaN or +inf"),
    (dict(sinks=[0, 0, 0, np.inf]), "sinks[3] is NaN or +inf"),
    (dict(alibi_slopes=[0, 0, np.inf, 0]), "alibi_slopes[2] is not finite"),
], ids=lambda x: x if isinstance(x, str) else ",".join(x))
def test_bad_argument(t, kw, detail):
    out = np.zeros((2, 4, 5, 8), np.float32)
    e = raises(simdattn.BadArgumentError, "SA_ERR_BAD_ARGUMENT", detail,
               simdattn.attention, *t, out=out, **kw)
    assert e.status == 5 and isinstance(e, ValueError)


@pytest.mark.parametrize("lens, detail", [
    ([6, 7], "len_kv_valid[1] = 7 is outside [0, len_kv = 6]"),
    ([-1, 3], "len_kv_valid[0] = -1"),
])
def test_kv_lens_out_of_range(t, lens, detail):
    raises(simdattn.BadShapeError, "SA_ERR_BAD_SHAPE", detail,
           simdattn.attention, *t, kv_lens=lens)


def test_bad_shapes_and_heads(t):
    q, k, v = t
    raises(simdattn.BadShapeError, "SA_ERR_BAD_SHAPE", "len_q = 0",
           simdattn.attention, q[:, :, :0], k, v)
    raises(simdattn.BadShapeError, "SA_ERR_BAD_SHAPE", "dim_v = 0",
           simdattn.attention, q, k, v[..., :0])
    raises(simdattn.BadHeadsError, "SA_ERR_BAD_HEADS",
           "heads_q = 3 is not a multiple of heads_kv = 2",
           simdattn.attention, q[:, :3], k, v)
    raises(simdattn.BadShapeError, "SA_ERR_BAD_SHAPE", "heads = 0",
           simdattn.alibi_slopes, 0)


def test_bad_output_strides(t):
    q, k, v = t
    # batches, heads and rows of out 8 floats apart: rows share addresses
    buf = np.zeros((1 + 3 + 4) * 8 + 8, np.float32)  # exactly the span
    out = np.lib.stride_tricks.as_strided(buf, (2, 4, 5, 8), (32, 32, 32, 4))
    raises(simdattn.BadStrideError, "SA_ERR_BAD_STRIDE",
           "lets output elements overlap", simdattn.attention, q, k, v,
           out=out)
    # out overlapping an input other than as exact in-place Q
    kv = np.zeros((2, 4, 6, 8), np.float32)
    k2 = kv[:, :2]
    raises(simdattn.BadStrideError, "SA_ERR_BAD_STRIDE", "o overlaps k",
           simdattn.attention, q, k2, v, out=kv[:, :, :5])
    # LSE parts and outputs: merge's out overlapping a part without being it
    lse = np.zeros((2, 4, 5), np.float32)
    big, other = np.zeros((2, 2, 4, 5, 9), np.float32)
    raises(simdattn.BadStrideError, "SA_ERR_BAD_STRIDE", "overlaps part 0",
           simdattn.merge, [big[..., :8], other[..., :8]], [lse, lse],
           out=big[..., 1:])


def test_unknown_and_unsupported_isa():
    e = raises(simdattn.UnknownIsaError, "SA_ERR_UNKNOWN_ISA", "nonesuch",
               simdattn.Context, isa="nonesuch")
    assert "scalar" in e.detail  # it names the sets this CPU can run
    unsupported = [s.name for s in simdattn.kernel_sets() if not s.supported]
    if not unsupported:
        pytest.skip("this CPU runs every compiled kernel set")
    raises(simdattn.UnsupportedIsaError, "SA_ERR_UNSUPPORTED_ISA",
           unsupported[0], simdattn.Context, isa=unsupported[0])


def test_bad_context_options():
    raises(simdattn.BadArgumentError, "SA_ERR_BAD_ARGUMENT", "first_core",
           simdattn.Context, threads=1, first_core=-1)
    raises(simdattn.BadArgumentError, "SA_ERR_BAD_ARGUMENT", "spin_us",
           simdattn.Context, threads=2, spin_us=-2)
    with pytest.raises(ValueError, match="pin"):
        simdattn.Context(pin="sometimes")
    with pytest.raises(ValueError, match="does not fit"):
        simdattn.Context(threads=1 << 40)


def run_python(code, **env):
    """code in a fresh interpreter (the library reads the environment
    once per process), with this process's way of finding simdattn."""
    path = os.pathsep.join(p for p in sys.path if p)
    e = dict(os.environ, PYTHONPATH=path, **env)
    return subprocess.run([sys.executable, "-c", code], env=e,
                          capture_output=True, text=True, timeout=60)


def test_simdattn_isa_environment_is_an_error():
    code = """if 1:
        import numpy as np, simdattn
        x = np.zeros((1, 1, 2, 8), np.float32)
        try:
            simdattn.attention(x, x, x)
        except simdattn.UnknownIsaError as e:
            print("raised", e.status_name, e.detail)
    """
    r = run_python(code, SIMDATTN_ISA="bogus")
    assert "raised SA_ERR_UNKNOWN_ISA" in r.stdout and "bogus" in r.stdout, \
        r.stdout + r.stderr


def test_missing_library_is_an_import_error():
    r = run_python("import simdattn", SIMDATTN_LIBRARY="/nonexistent/lib.so")
    assert r.returncode != 0
    assert "ImportError" in r.stderr and "SIMDATTN_LIBRARY" in r.stderr


@pytest.mark.parametrize("call, exc, text", [
    (lambda q, k, v: simdattn.attention(q.astype(np.float64), k, v),
     TypeError, "float32"),
    (lambda q, k, v: simdattn.attention(q.tolist(), k, v), TypeError,
     "numpy array"),
    (lambda q, k, v: simdattn.attention(q[0, 0], k, v), ValueError,
     "3 or 4 dimensions"),
    (lambda q, k, v: simdattn.attention(q, k[:1], v), ValueError,
     "do not agree"),
    (lambda q, k, v: simdattn.attention(q, k, v[:, :, :5]), ValueError,
     "do not agree"),
    (lambda q, k, v: simdattn.attention(q, k[..., :4], v), ValueError,
     "do not agree"),
    (lambda q, k, v: simdattn.attention(q[0], k, v), ValueError,
     "all be 3-D"),
    (lambda q, k, v: simdattn.attention(q, k, v, mask=np.ones((5, 7), bool)),
     ValueError, "not broadcastable"),
    (lambda q, k, v: simdattn.attention(q, k, v, mask=np.ones((5, 6))),
     TypeError, "float32"),
    (lambda q, k, v: simdattn.attention(q, k, v, mask=np.ones((1,) * 5,
                                                               bool)),
     ValueError, "at most 4"),
    (lambda q, k, v: simdattn.attention(q, k, v, sinks=[1.0, 2.0]),
     ValueError, "one value per query head"),
    (lambda q, k, v: simdattn.attention(q, k, v, alibi_slopes=np.ones(2)),
     ValueError, "one value per query head"),
    (lambda q, k, v: simdattn.attention(q, k, v, kv_lens=[3]), ValueError,
     "one length per batch"),
    (lambda q, k, v: simdattn.attention(q, k, v, kv_lens=[3.0, 2.0]),
     TypeError, "integers"),
    (lambda q, k, v: simdattn.attention(q, k, v, window=(1 << 63, 0)),
     ValueError, "does not fit"),
    (lambda q, k, v: simdattn.attention(q, k, v, causal="diagonal"),
     ValueError, "causal"),
    (lambda q, k, v: simdattn.attention(q, k, v, algorithm="magic"),
     ValueError, "algorithm"),
    (lambda q, k, v: simdattn.attention(q, k, v, layout="lbhd"), ValueError,
     "layout"),
    (lambda q, k, v: simdattn.attention(q, k, v, out=np.empty((2, 4, 5, 7),
                                                               np.float32)),
     ValueError, "shape"),
    (lambda q, k, v: simdattn.attention(q, k, v, out=np.empty((2, 4, 5, 8))),
     TypeError, "float32"),
    (lambda q, k, v: simdattn.attention(
        q, k, v, out=np.empty((2, 4, 5, 16), np.float32)[..., ::2]),
     ValueError, "contiguous last dimension"),
    (lambda q, k, v: simdattn.attention(
        q, k, v, out=np.broadcast_to(np.empty(8, np.float32), (2, 4, 5, 8))),
     ValueError, "read-only"),
    (lambda q, k, v: simdattn.merge([], []), ValueError, "at least one"),
    (lambda q, k, v: simdattn.merge([q], [q[..., 0].copy(), q[..., 1]]),
     ValueError, "as many"),
    (lambda q, k, v: simdattn.merge([q], [q]), ValueError, "lses must have"),
], ids=lambda x: x if isinstance(x, str) else "")
def test_python_side_checks(t, call, exc, text):
    with pytest.raises(exc, match=text):
        call(*t)


def test_closed_context(t):
    c = simdattn.Context(threads=1)
    c.close()
    c.close()  # twice is fine
    with pytest.raises(ValueError, match="closed"):
        simdattn.attention(*t, context=c)


def test_gil_is_released_during_a_call():
    """A long call on a context in one thread; this thread keeps running
    Python meanwhile (it could not if the call held the GIL) and sees the
    context busy."""
    rng = np.random.default_rng(0)
    big = rng.standard_normal((1, 2, 3000, 64), dtype=np.float32)
    tiny = big[:, :1, :1]
    started, done = threading.Event(), threading.Event()
    with simdattn.Context(threads=1) as c:
        def long_call():
            started.set()
            simdattn.attention(big, big, big, context=c)
            done.set()
        th = threading.Thread(target=long_call)
        th.start()
        started.wait()
        seen = None
        while not done.is_set() and seen is None:
            try:
                simdattn.attention(tiny, tiny, tiny, context=c)
            except simdattn.BusyError as e:
                seen = e
            time.sleep(0.0005)
        th.join()
    assert seen is not None, "the long call finished before one could run " \
        "beside it: make it longer"
    assert seen.status_name == "SA_ERR_BUSY" and isinstance(seen,
                                                            RuntimeError)
