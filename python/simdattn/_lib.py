"""The C library, seen through ctypes: where it is found, its structs, its
functions and its statuses. Nothing here knows about numpy or torch.

The structs mirror include/simdattn.h field for field; tests/test_api.py
compiles a C file that prints the header's offsets and compares them with
these, so a field added to the header without being added here is caught.
"""
import ctypes
import os
import sys
import sysconfig
from ctypes import (POINTER, Structure, c_char_p, c_float, c_int, c_int64,
                    c_size_t, c_uint, c_uint64, c_void_p)

# --------------------------------------------------------------- finding it

_SONAME = "libsimdattn.so.0"
_MIN_VERSION = 200  # 0.2.0, in SA_VERSION's form


def _candidates():
    """Where to look, best first, as (path, why) pairs.

    SIMDATTN_LIBRARY wins because it is the one the user chose. Then the
    build tree of a source checkout (python/simdattn -> ../../build), so the
    package runs from the repository without installing anything. Then the
    dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache: an installed
    prefix such as /usr/local), and finally prefixes the loader may not
    search: the running Python's (a venv that cmake --install went into),
    /usr/local and /usr.
    """
    env = os.environ.get("SIMDATTN_LIBRARY", "").strip()
    if env:
        yield env, "SIMDATTN_LIBRARY"
        return  # an explicit choice that fails must not fall back silently
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    if os.path.isfile(os.path.join(repo, "include", "simdattn.h")):
        yield os.path.join(repo, "build", "libsimdattn.so"), "build tree"
    yield _SONAME, "dynamic loader"
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for prefix in dict.fromkeys([sys.prefix, "/usr/local", "/usr"]):
        for sub in ("lib", "lib64", os.path.join("lib", multiarch)):
            yield os.path.join(prefix, sub, _SONAME), "prefix " + prefix


def _load():
    tried = []
    for path, why in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (%s): no such file" % (path, why))
            continue
        try:
            # ctypes.CDLL, not PyDLL: every call through it releases the GIL
            # for the duration of the C call, so other Python threads run
            # while attention does.
            dll = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s): %s" % (path, why, e))
            continue
        # The structs here follow the 0.2 ABI (struct_size first); an older
        # library (a stale build tree, say) would misread them.
        version = getattr(dll, "sa_version", None)
        if version is not None:
            version.restype = c_uint
        if version is None or version() < _MIN_VERSION:
            tried.append("%s (%s): older than 0.2, which this binding needs"
                         % (path, why))
            continue
        return dll, path
    raise ImportError(
        "simdattn: cannot load libsimdattn; build it (make build) or set "
        "SIMDATTN_LIBRARY to its path. Tried:\n  " + "\n  ".join(tried))


lib, path = _load()

# ----------------------------------------------------------------- structs


class Strides(Structure):
    _fields_ = [("batch", c_size_t), ("head", c_size_t), ("seq", c_size_t)]


class MaskLayout(Structure):
    _fields_ = [("batch", c_size_t), ("head", c_size_t), ("row", c_size_t),
                ("key", c_size_t), ("keys", c_size_t)]


class AttentionDesc(Structure):
    # C enums (sa_mask, sa_algorithm) are int-sized with gcc and clang.
    _fields_ = [
        ("struct_size", c_size_t),
        ("batch", c_size_t), ("heads_q", c_size_t), ("heads_kv", c_size_t),
        ("len_q", c_size_t), ("len_kv", c_size_t),
        ("dim_qk", c_size_t), ("dim_v", c_size_t),
        ("scale", c_float), ("mask", c_int), ("algorithm", c_int),
        ("q", Strides), ("k", Strides), ("v", Strides), ("o", Strides),
        # 0.3
        ("mask_add", c_void_p), ("mask_add_layout", MaskLayout),
        ("mask_bool", c_void_p), ("mask_bool_layout", MaskLayout),
        ("window", c_int), ("window_left", c_int64), ("window_right", c_int64),
        ("softcap", c_float),
        ("alibi_slopes", c_void_p), ("sinks", c_void_p),
        ("len_kv_valid", c_void_p),
        ("lse", c_void_p), ("lse_at", Strides),
        # 0.3: ragged batches and paged KV caches (not exposed by attention()
        # yet; bound so the struct is the header's)
        ("cu_seqlens_q", c_void_p), ("cu_seqlens_kv", c_void_p),
        ("block_table", c_void_p), ("block_table_stride", c_size_t),
        ("page_size", c_size_t), ("num_pages", c_size_t),
        # 0.4: element types (sa_dtype)
        ("q_type", c_int), ("k_type", c_int), ("v_type", c_int),
        ("o_type", c_int),
    ]


class MergeDesc(Structure):
    _fields_ = [
        ("struct_size", c_size_t),
        ("batch", c_size_t), ("heads", c_size_t), ("len_q", c_size_t),
        ("dim_v", c_size_t), ("parts", c_size_t),
        ("o", Strides), ("lse", Strides),
    ]


class ContextOptions(Structure):
    _fields_ = [
        ("struct_size", c_size_t), ("isa", c_char_p), ("num_threads", c_int),
        ("pin", c_int), ("block_q", c_size_t), ("block_kv", c_size_t),
        ("cpus", c_char_p), ("first_core", c_int),
        ("workspace", c_void_p), ("workspace_bytes", c_size_t),
        ("spin_us", c_int),
    ]


class KernelSetStruct(Structure):
    # Only the descriptive fields are read; the kernel pointers stay opaque.
    _fields_ = [
        ("struct_size", c_size_t), ("name", c_char_p), ("isa", c_char_p),
        ("exp_impl", c_char_p), ("about", c_char_p), ("vector_bits", c_uint),
        ("priority", c_int), ("cpu_features", c_uint64),
    ]


ATTENTION_DESC_SIZE = ctypes.sizeof(AttentionDesc)
MERGE_DESC_SIZE = ctypes.sizeof(MergeDesc)

# enum values of the header
MASK_NONE, MASK_CAUSAL_TOP_LEFT, MASK_CAUSAL_BOTTOM_RIGHT = 0, 1, 2
ALGO_AUTO, ALGO_THREE_PASS, ALGO_FUSED = 0, 1, 2
PIN_DEFAULT, PIN_CORES, PIN_NONE = 0, 1, 2

# --------------------------------------------------------------- functions


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = argtypes
    return f


_ctx_p = c_void_p
_set_p = POINTER(KernelSetStruct)

version_string = _fn("sa_version_string", c_char_p)
version = _fn("sa_version", c_uint)
status_str = _fn("sa_status_str", c_char_p, c_int)
last_error = _fn("sa_last_error", c_char_p)
cpu_features = _fn("sa_cpu_features", c_uint64)
cpu_describe = _fn("sa_cpu_describe", c_size_t, c_void_p, c_size_t)
cpu_feature_names = _fn("sa_cpu_feature_names", c_char_p, c_uint64, c_void_p,
                        c_size_t)
kernel_set_count = _fn("sa_kernel_set_count", c_size_t)
kernel_set_at = _fn("sa_kernel_set_at", _set_p, c_size_t)
kernel_set_supported = _fn("sa_kernel_set_supported", c_int, _set_p)
kernel_set_preferred = _fn("sa_kernel_set_preferred", c_int, _set_p)
kernel_set_default = _fn("sa_kernel_set_default", c_int, POINTER(_set_p))
context_create = _fn("sa_context_create", c_int, POINTER(ContextOptions),
                     POINTER(_ctx_p))
context_destroy = _fn("sa_context_destroy", None, _ctx_p)
context_kernel_set = _fn("sa_context_kernel_set", _set_p, _ctx_p)
context_num_threads = _fn("sa_context_num_threads", c_int, _ctx_p)
context_pinned = _fn("sa_context_pinned", c_int, _ctx_p)
# Pointers go in as plain integers (numpy's and torch's data addresses):
# c_void_p argtypes take them without building a ctypes object per call.
attention = _fn("sa_attention", c_int, _ctx_p, POINTER(AttentionDesc),
                c_void_p, c_void_p, c_void_p, c_void_p)
# 0.3 functions: absent from an older library, which then only lacks them.
try:
    attention_merge = _fn("sa_attention_merge", c_int, POINTER(MergeDesc),
                          c_void_p, c_void_p, c_void_p, c_void_p)
    alibi_slopes = _fn("sa_alibi_slopes", c_int, c_size_t, c_void_p)
except AttributeError:  # pragma: no cover - only with a 0.2 library
    attention_merge = alibi_slopes = None

# ----------------------------------------------------------------- errors

STATUS_NAMES = [
    "SA_OK", "SA_ERR_NULL_POINTER", "SA_ERR_BAD_SHAPE", "SA_ERR_BAD_HEADS",
    "SA_ERR_BAD_STRIDE", "SA_ERR_BAD_ARGUMENT", "SA_ERR_OVERFLOW",
    "SA_ERR_UNKNOWN_ISA", "SA_ERR_UNSUPPORTED_ISA", "SA_ERR_NO_MEMORY",
    "SA_ERR_THREADS", "SA_ERR_BUSY", "SA_ERR_STRUCT_SIZE", "SA_ERR_WORKSPACE",
]


class Error(Exception):
    """A status other than SA_OK from the library.

    status: the sa_status code; status_name: its enum name; status_text:
    sa_status_str's sentence; detail: sa_last_error()'s message, read on the
    calling thread right after the failing call (it is thread-local).
    """

    def __init__(self, status, detail=""):
        self.status = status
        self.status_name = (STATUS_NAMES[status] if 0 <= status <
                            len(STATUS_NAMES) else "status %d" % status)
        self.status_text = status_str(status).decode()
        self.detail = detail
        msg = "%s (%s)" % (self.status_text, self.status_name)
        super().__init__(msg + ": " + detail if detail else msg)


# One subclass per status; where a builtin means the same, it is a base too,
# so `except ValueError` catches a bad shape as Python code expects.
class NullPointerError(Error, ValueError): pass
class BadShapeError(Error, ValueError): pass
class BadHeadsError(Error, ValueError): pass
class BadStrideError(Error, ValueError): pass
class BadArgumentError(Error, ValueError): pass
class SizeOverflowError(Error, OverflowError): pass
class UnknownIsaError(Error, ValueError): pass
class UnsupportedIsaError(Error, RuntimeError): pass
class NoMemoryError(Error, MemoryError): pass
class ThreadsError(Error, RuntimeError): pass
class BusyError(Error, RuntimeError): pass
class StructSizeError(Error, RuntimeError): pass
class WorkspaceError(Error, RuntimeError): pass


_ERRORS = [None, NullPointerError, BadShapeError, BadHeadsError,
           BadStrideError, BadArgumentError, SizeOverflowError,
           UnknownIsaError, UnsupportedIsaError, NoMemoryError, ThreadsError,
           BusyError, StructSizeError, WorkspaceError]


def fail(status):
    """The exception for a non-OK status, with the thread's detail text."""
    detail = (last_error() or b"").decode(errors="replace")
    cls = _ERRORS[status] if 0 < status < len(_ERRORS) else Error
    return cls(status, detail)

for _cls in [Error] + _ERRORS[1:]:
    _cls.__module__ = "simdattn"  # shown as simdattn.BadShapeError
