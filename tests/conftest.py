"""Shared test setup: JAX (the reference) and functx both run with ``jax_enable_x64`` on (one of
JAX's own CI configurations), so float64 inputs stay float64 and Python scalars are weak 64-bit;
tests of the default mode run under ``x64_off()`` (both libraries' flags off in a block), and
tests/test_x64.py checks both modes. Hypothesis runs a small, deterministic number of examples so
the suite stays inside its budget."""

import doctest
import os
import resource
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from x64util import x64_off

import functx

os.environ.setdefault("JAX_PLATFORMS", "cpu")

try:
    import jax

    jax.config.update("jax_enable_x64", True)
except ImportError:  # pragma: no cover - jax is a test dependency
    jax = None

functx.config.update("jax_enable_x64", True)

# Docstring examples show what users see: JAX's default mode (x64 off). Every doctest run in the
# suite (doctest.testmod, run_docstring_examples, DocTestRunner.run) runs in that mode.
_doctest_run = doctest.DocTestRunner.run


def _doctest_run_default_mode(self, *args, **kwargs):
    with x64_off():
        return _doctest_run(self, *args, **kwargs)


doctest.DocTestRunner.run = _doctest_run_default_mode


@pytest.fixture
def no_x64():
    """Run the test with ``jax_enable_x64`` off in functx and in JAX (their default mode)."""
    with x64_off():
        yield


settings.register_profile(
    "functx",
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)
settings.load_profile(os.environ.get("FUNCTX_HYPOTHESIS_PROFILE", "functx"))


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def interpreted_gpu(monkeypatch):
    """The GPU device of this test: Triton's CPU interpreter (``TRITON_INTERPRET=1`` for this
    test only; the device list looked up again, and what an earlier test found restored after).
    Skips without torch and Triton."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from functx.devices import device as placement

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(placement, "_gpu_list", placement._gpu_list or None)
    monkeypatch.setattr(placement, "GPU_IN_USE", placement.GPU_IN_USE)
    return functx.devices("gpu")[0]


# The longest single tests start first, so that pytest-xdist's two workers do not end with one
# of them alone on a minutes-long test (the docs build, the gloo processes, the 20,000-op chain).
_LONG_FIRST = (
    "tests/test_docs_site.py",
    "tests/test_distributed.py",
    "tests/lowering/test_jit_safety.py::test_a_20000_op_chain",
)


def pytest_collection_modifyitems(config, items):
    first = [it for it in items if it.nodeid.startswith(_LONG_FIRST)]
    first.sort(key=lambda it: next(i for i, p in enumerate(_LONG_FIRST) if it.nodeid.startswith(p)))
    if first:
        rest = [it for it in items if not it.nodeid.startswith(_LONG_FIRST)]
        items[:] = first + rest


# FUNCTX_TEST_TIMES=<file>: each worker appends "cpu<TAB>wall<TAB>nodeid" per test to <file> (its
# CPU seconds, with the child processes it waited for: g++, subprocesses). CPU time is steadier
# than wall time on a loaded machine.
_TIMES = os.environ.get("FUNCTX_TEST_TIMES")


def _cpu() -> float:
    usage = (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    return sum(u.ru_utime + u.ru_stime for u in usage)


if _TIMES:

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        cpu, wall = _cpu(), time.perf_counter()
        yield
        with open(_TIMES, "a") as f:
            f.write(f"{_cpu() - cpu:.3f}\t{time.perf_counter() - wall:.3f}\t{item.nodeid}\n")
