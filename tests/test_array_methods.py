"""The methods functx Arrays and tracers share with ``jax.Array`` that forward to functx.numpy
(argsort, sort, take, ...): values and dtypes against JAX's methods, eagerly and under jit, and
their docstring examples (run with x64 off, as tests/conftest.py sets for doctests)."""

import doctest

import docutil
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import functx
import functx.numpy as fnp

METHODS = (
    "argpartition argsort sort searchsorted choose compress diagonal trace nonzero ptp repeat take"
).split()

JITTED = ("argsort", "take", "trace")
X = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], np.float32)
CASES = [
    ("argpartition", X, (1,), {}),
    ("argsort", X, (), {"axis": 0, "descending": True}),
    ("sort", X, (), {"axis": None}),
    ("searchsorted", np.arange(6.0, dtype=np.float32), (np.array([2.5, 0.0]),), {"side": "right"}),
    ("choose", np.array([0, 1, 1]), ([np.arange(3), 10 + np.arange(3)],), {}),
    ("compress", X, (np.array([False, True]),), {"axis": 0}),
    ("diagonal", X, (), {"offset": 1}),
    ("trace", X, (), {"dtype": np.float32}),
    ("nonzero", X, (), {"size": 6, "fill_value": -1}),
    ("ptp", X, (), {"axis": 1, "keepdims": True}),
    ("repeat", X, (2,), {"axis": 1}),
    ("take", X, (np.array([2, 0]),), {"axis": 1}),
    ("take", X, (np.array([7, -1]),), {"mode": "fill", "fill_value": 9.0}),
]


def _same(got, want):
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("name,x,args,kw", CASES, ids=[c[0] for c in CASES])
def test_method_against_jax(name, x, args, kw):
    want = getattr(jnp.asarray(x), name)(*args, **kw)
    _same(getattr(fnp.asarray(x), name)(*args, **kw), want)
    if name in JITTED:  # (on tracers too; a few compiles only: the suite's time is scarce)
        _same(functx.jit(lambda a: getattr(a, name)(*args, **kw))(fnp.asarray(x)), want)


def test_sizes_and_flat():
    for dt in (np.float32, np.int8, np.complex64, np.float64):
        x = np.zeros((2, 3), dt)
        assert fnp.asarray(x).itemsize == jnp.asarray(x).itemsize
        assert fnp.asarray(x).nbytes == jnp.asarray(x).nbytes
    with pytest.raises(NotImplementedError):
        fnp.arange(3).flat  # noqa: B018 (JAX raises too)
    x = fnp.arange(3.0, dtype=fnp.float32)
    assert functx.jit(lambda a: a * a.itemsize)(x).tolist() == [0.0, 4.0, 8.0]


def test_docstring_examples(no_x64):
    # (the public names' examples run in tests/test_docstrings.py; the others here)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for name in METHODS:
        fn = getattr(functx.Array, name)
        for section in ("Arguments:", "Returns:", "Example:"):
            assert section in fn.__doc__, (name, section)
        tests = docutil.uncovered(doctest.DocTestFinder(recurse=False).find(fn, name, globs={}))
        before = runner.failures
        for t in tests:
            runner.run(t)
        assert runner.failures == before, name
    assert jax.Array is not functx.Array  # (the reference stays JAX's own)
