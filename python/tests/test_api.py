"""The binding against the header: struct layouts, version, the package
that was imported."""
import ctypes
import os
import re
import shutil
import subprocess
import sys

import pytest

import simdattn
from simdattn import _lib

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
HEADER = os.path.join(REPO, "include", "simdattn.h")

STRUCTS = {
    "sa_attention_desc": _lib.AttentionDesc,
    "sa_merge_desc": _lib.MergeDesc,
    "sa_context_options": _lib.ContextOptions,
    "sa_strides": _lib.Strides,
    "sa_mask_layout": _lib.MaskLayout,
}


def test_struct_layouts_match_the_header(tmp_path):
    """A C file prints sizeof and every field's offset as the compiler lays
    them out; ctypes must agree, and have every field (a field appended to
    the header but not here fails this)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not (cc and os.path.exists(HEADER)):
        pytest.skip("needs a C compiler and the source tree's header")
    lines = []
    for cname, cls in STRUCTS.items():
        lines.append('printf("%s size %%zu\\n", sizeof(%s));' % (cname, cname))
        for f in cls._fields_:
            lines.append('printf("%s %s %%zu\\n", offsetof(%s, %s));'
                         % (cname, f[0], cname, f[0]))
    # the kernel set's descriptive fields, which kernel_sets() reads
    for f in _lib.KernelSetStruct._fields_:
        lines.append('printf("sa_kernel_set %s %%zu\\n", '
                     'offsetof(sa_kernel_set, %s));' % (f[0], f[0]))
    src = tmp_path / "layout.c"
    src.write_text("#include <stdio.h>\n#include <stddef.h>\n"
                   '#include "simdattn.h"\nint main(void) {\n%s\nreturn 0;}\n'
                   % "\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run([cc, "-std=c11", "-I", os.path.dirname(HEADER), str(src),
                    "-o", str(exe)], check=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True,
                         text=True).stdout.split("\n")
    c = {tuple(line.split()[:2]): int(line.split()[2]) for line in got if line}
    for cname, cls in STRUCTS.items():
        assert c[(cname, "size")] == ctypes.sizeof(cls), cname
        for f in cls._fields_:
            assert c[(cname, f[0])] == getattr(cls, f[0]).offset, (cname, f[0])
    for f in _lib.KernelSetStruct._fields_:
        assert c[("sa_kernel_set", f[0])] == \
            getattr(_lib.KernelSetStruct, f[0]).offset, f[0]


def test_every_desc_field_is_bound():
    """Field names of sa_attention_desc in the header, in order, are the
    binding's (catches a field added between releases even without cc)."""
    if not os.path.exists(HEADER):
        pytest.skip("needs the source tree's header")
    text = open(HEADER).read()
    body = re.search(r"typedef struct sa_attention_desc \{(.*?)\} "
                     r"sa_attention_desc;", text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = []
    for decl in filter(None, (d.strip() for d in body.split(";"))):
        first, *more = decl.replace("*", " ").split(",")  # "int64_t a, b"
        names += [first.split()[-1]] + [m.strip() for m in more]
    assert names == [f[0] for f in _lib.AttentionDesc._fields_]


def test_version_is_the_library_s():
    assert re.fullmatch(r"\d+\.\d+\.\d+", simdattn.__version__)
    assert _lib.version() == sum(int(x) * m for x, m in zip(
        simdattn.__version__.split("."), (10000, 100, 1)))
    if os.path.exists(HEADER):
        header = re.search(r'#define SA_VERSION_STRING "(.*)"',
                           open(HEADER).read()).group(1)
        assert simdattn.__version__ == header
    try:
        from importlib.metadata import PackageNotFoundError, version
        assert version("simdattn") == simdattn.__version__, \
            "python/pyproject.toml's version differs from the library's"
    except PackageNotFoundError:
        pass  # run from the source tree, not installed


def test_the_installed_package_is_the_one_tested():
    """make test-python sets SIMDATTN_TEST_INSTALLED=1: the package must
    then come from the venv pip installed it into, not the source tree."""
    if os.environ.get("SIMDATTN_TEST_INSTALLED") != "1":
        pytest.skip("only under make test-python")
    assert simdattn.__file__.startswith(sys.prefix), simdattn.__file__
    assert sys.prefix != sys.base_prefix  # a venv
    assert os.path.exists(simdattn.library_path)
