"""Shared fixtures. Run with the library the package finds (SIMDATTN_LIBRARY,
the source tree's build/, or an installed prefix):

    SIMDATTN_LIBRARY=build/libsimdattn.so python3 -m pytest python/tests

`make test-python` runs them on the package pip-installed into build/venv.
"""
import os
import sys

import pytest

try:
    import simdattn  # noqa: F401  (the installed package, when there is one)
except ImportError:
    # straight from the source tree: python/ holds the package
    sys.path.insert(0, os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    import simdattn  # noqa: F401


def supported_sets():
    return [s.name for s in simdattn.kernel_sets() if s.supported]


@pytest.fixture(scope="session", params=supported_sets())
def ctx(request):
    """A one-thread context on each kernel set this CPU can run."""
    with simdattn.Context(threads=1, isa=request.param) as c:
        yield c


@pytest.fixture
def rng():
    import numpy as np
    return np.random.default_rng(1234)
