"""Per-call overhead of the Python binding (a benchmark, not a test).

    SIMDATTN_LIBRARY=build/libsimdattn.so python3 python/bench_overhead.py

Times simdattn.attention on a tiny shape (B=1, H=1, L=1, D=8: the C call
itself is a few hundred ns), and the same call made straight through ctypes
with a descriptor built once, so the difference is what the binding's
Python adds (checks, strides, descriptor). Each figure is the median over
rounds of the mean of a batch of calls. The C library's own per-call figure
comes from build/bench/simdattn_call_overhead (README, "Threads").
"""
import argparse
import ctypes
import statistics
import sys
import time

import numpy as np

import simdattn
from simdattn import _lib


def median_us(fn, rounds, batch):
    for _ in range(batch):  # warm up: the thread's NULL context, caches
        fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        times.append((time.perf_counter() - t0) / batch * 1e6)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--batch", type=int, default=2000)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 1, 1, 8), dtype=np.float32)
               for _ in range(3))
    out = np.empty_like(q)

    d = _lib.AttentionDesc()
    d.struct_size = _lib.ATTENTION_DESC_SIZE
    d.batch = d.heads_q = d.heads_kv = d.len_q = d.len_kv = 1
    d.dim_qk = d.dim_v = 8
    ptrs = [a.ctypes.data for a in (q, k, v, out)]
    ref = ctypes.byref(d)

    def raw():
        _lib.attention(None, ref, *ptrs)

    with simdattn.Context(threads=1) as ctx:
        rows = [
            ("ctypes call alone (descriptor built once)", raw),
            ("simdattn.attention(q, k, v)",
             lambda: simdattn.attention(q, k, v)),
            ("simdattn.attention(q, k, v, out=out)",
             lambda: simdattn.attention(q, k, v, out=out)),
            ("... causal=True, scale=0.5, return_lse=True",
             lambda: simdattn.attention(q, k, v, causal=True, scale=0.5,
                                        return_lse=True)),
            ("... context=Context(threads=1)",
             lambda: simdattn.attention(q, k, v, context=ctx)),
        ]
        try:
            import torch
            import simdattn.torch as st
            tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
            rows.append(("simdattn.torch.scaled_dot_product_attention",
                         lambda: st.scaled_dot_product_attention(tq, tk, tv)))
        except ImportError:
            pass
        print("simdattn %s (%s), Python %s, numpy %s; B=H=L=1, D=8"
              % (simdattn.__version__, simdattn.library_path,
                 sys.version.split()[0], np.__version__))
        base = None
        for name, fn in rows:
            us = median_us(fn, args.rounds, args.batch)
            base = us if base is None else base
            extra = "" if fn is raw else "  (+%.1f us over the bare call)" % (
                us - base)
            print("%-48s %7.2f us/call%s" % (name, us, extra))


if __name__ == "__main__":
    main()
