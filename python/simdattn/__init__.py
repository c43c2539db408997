"""simdattn: hand-written SIMD attention kernels for CPUs, from Python.

A thin ctypes layer over libsimdattn (no compiled extension):

    import numpy as np, simdattn
    out = simdattn.attention(q, k, v, causal=True)        # float32 [B,H,L,D]
    out, lse = simdattn.attention(q, k, v, mask=keep, return_lse=True)
    with simdattn.Context(threads=4) as ctx:
        out = simdattn.attention(q, k, v, context=ctx)

simdattn.torch has a drop-in scaled_dot_product_attention for CPU float32
tensors (imported on first use: `import simdattn.torch`). The library is
found through SIMDATTN_LIBRARY, the source tree's build/, or the dynamic
loader (an installed prefix); simdattn.library_path says which was loaded.
"""
from ._core import (Context, Cpu, KernelSet, __version__, alibi_slopes,
                    attention, copies, cpu, default_kernel_set, kernel_sets,
                    merge)
from ._lib import (BadArgumentError, BadHeadsError, BadShapeError,
                   BadStrideError, BusyError, Error, NoMemoryError,
                   NullPointerError, SizeOverflowError, StructSizeError,
                   ThreadsError, UnknownIsaError, UnsupportedIsaError,
                   WorkspaceError)
from ._lib import path as library_path

__all__ = [
    "attention", "merge", "alibi_slopes", "Context", "kernel_sets",
    "default_kernel_set", "cpu", "copies", "KernelSet", "Cpu",
    "library_path", "__version__", "Error", "NullPointerError",
    "BadShapeError", "BadHeadsError", "BadStrideError", "BadArgumentError",
    "SizeOverflowError", "UnknownIsaError", "UnsupportedIsaError",
    "NoMemoryError", "ThreadsError", "BusyError", "StructSizeError",
    "WorkspaceError",
]


def __getattr__(name):
    # simdattn.torch imports torch (seconds): only when first asked for.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'simdattn' has no attribute %r" % name)
