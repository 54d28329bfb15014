"""Shared test setup: JAX (the reference) and functx both run with ``jax_enable_x64`` on (one of
JAX's own CI configurations), so float64 inputs stay float64 and Python scalars are weak 64-bit;
tests of the default mode run under ``x64_off()`` (both libraries' flags off in a block), and
tests/test_x64.py checks both modes. Hypothesis runs a small, deterministic number of examples so
the suite stays inside its budget."""

import atexit
import doctest
import os
import resource
import shutil
import tempfile
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from x64util import x64_off

import functx

os.environ.setdefault("JAX_PLATFORMS", "cpu")

# One directory for the whole run, shared by pytest-xdist's workers: the process that starts the
# run (the controller, or the only process with -n 0) makes it before the workers start, they
# inherit its path, and the maker removes it at exit.
if "FUNCTX_TEST_RUN_DIR" not in os.environ:
    os.environ["FUNCTX_TEST_RUN_DIR"] = tempfile.mkdtemp(prefix="functx-test-run-")
    atexit.register(shutil.rmtree, os.environ["FUNCTX_TEST_RUN_DIR"], ignore_errors=True)

try:
    import jax

    jax.config.update("jax_enable_x64", True)
    # JAX's reference programs go through its persistent compilation cache, every one of them
    # (no minimum compile time): a program another worker (or an earlier test, under another
    # function object) already compiled is loaded, not compiled again by XLA. The executable is
    # the one XLA built, so the references are unchanged.
    jax.config.update(
        "jax_compilation_cache_dir", os.path.join(os.environ["FUNCTX_TEST_RUN_DIR"], "jax")
    )
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
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
def no_jax_persistent_cache():
    """JAX without the persistent compilation cache the suite turns on (its default): for a test
    of what JAX reports about its compiles, such as explain_cache_misses' messages."""
    jax.config.update("jax_enable_compilation_cache", False)
    yield
    jax.config.update("jax_enable_compilation_cache", True)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


#: FUNCTX_TEST_TRITON_GPU=1: the tests that take ``triton_gpu`` run on a CUDA GPU, not Triton's
#: CPU interpreter
TRITON_ON_GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0")


def _gpu_device(monkeypatch, on_gpu: bool):
    """functx's GPU device for one test: a CUDA GPU (``on_gpu``; skips without one) or Triton's
    CPU interpreter (``TRITON_INTERPRET=1`` for this test only); the device list looked up again,
    and what an earlier test found restored after. Skips without torch and Triton."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from functx.devices import device as placement

    if on_gpu and not torch.cuda.is_available():
        pytest.skip("FUNCTX_TEST_TRITON_GPU=1 without a CUDA device")
    if not on_gpu:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(placement, "_gpu_list", placement._gpu_list or None)
    monkeypatch.setattr(placement, "GPU_IN_USE", placement.GPU_IN_USE)
    return functx.devices("gpu")[0]


@pytest.fixture
def interpreted_gpu(monkeypatch):
    """The GPU device of this test: Triton's CPU interpreter (see ``_gpu_device``)."""
    return _gpu_device(monkeypatch, False)


@pytest.fixture
def triton_gpu(monkeypatch):
    """The GPU device of this test: Triton's CPU interpreter, or a CUDA GPU with
    FUNCTX_TEST_TRITON_GPU=1 (see ``_gpu_device``)."""
    return _gpu_device(monkeypatch, TRITON_ON_GPU)


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


# FUNCTX_TEST_TIMES=<file>: each worker appends "cpu<TAB>wall<TAB>nodeid<TAB>worker" per test to
# <file> (its CPU seconds, with the child processes it waited for: g++, subprocesses; the worker's
# name, gw0 or gw1, shows how the two workers' runs end). CPU time is steadier than wall time on a
# loaded machine.
_TIMES = os.environ.get("FUNCTX_TEST_TIMES")


def _cpu() -> float:
    usage = (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    return sum(u.ru_utime + u.ru_stime for u in usage)


if _TIMES:

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        cpu, wall = _cpu(), time.perf_counter()
        yield
        cpu, wall = _cpu() - cpu, time.perf_counter() - wall
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(_TIMES, "a") as f:
            f.write(f"{cpu:.3f}\t{wall:.3f}\t{item.nodeid}\t{worker}\n")
