"""``lax.linalg.qdwh`` against JAX: the polar factors, the step count and the convergence flag
(values to rounding, dtypes in both x64 modes), padded inputs (``dynamic_shape``, concrete and
traced), the polar decomposition's properties, jit on the C++ backend, vmap against a loop,
forward-mode derivatives (check_grads in float64) and JAX's errors. Each JAX call compiles (its
qdwh is jitted: about a second per shape and keyword), so the cases are few."""

from __future__ import annotations

import doctest

import docutil
import jax
import numpy as np
import pytest

import functx
from functx.test_util import check_grads

FQ, JQ = functx.lax.linalg.qdwh, jax.lax.linalg.qdwh
RNG = np.random.default_rng(0)


def _close(got, want, tol):
    assert len(got) == len(want) == 4
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if g.dtype.kind in "biu":
            assert (g == w).all(), (g, w)
        else:
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _matrix(shape, dt):
    x = RNG.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dt)


def test_values_vs_jax():
    x = _matrix((6, 4), np.float64)
    got = FQ(x)
    _close(got, JQ(x), 1e-12)
    u, h, _, ok = got
    assert bool(ok)
    np.testing.assert_allclose(np.asarray(u) @ np.asarray(h), x, atol=1e-12)
    np.testing.assert_allclose(np.asarray(u).T @ np.asarray(u), np.eye(4), atol=1e-12)
    np.testing.assert_allclose(np.asarray(h), np.asarray(h).T, atol=1e-14)
    # the step limit: not converged within one step
    _close(FQ(x, max_iterations=1), JQ(x, max_iterations=1), 1e-10)
    assert not bool(FQ(x, max_iterations=1)[3])


def test_default_mode_complex_vs_jax(no_x64):
    x = _matrix((4, 3), np.complex64)
    _close(FQ(x), JQ(x), 2e-5)
    # a float64 input is float32 in the default mode, the step count int32
    u, _, k, _ = FQ(_matrix((3, 3), np.float64))
    assert u.dtype == np.float32 and k.dtype == np.int32


def test_dynamic_shape_vs_jax_and_jit():
    x = _matrix((6, 5), np.float64)
    want = JQ(x, dynamic_shape=(4, 3))
    _close(FQ(x, dynamic_shape=(4, 3)), want, 1e-12)
    # jit (C++) with the sizes traced: the same program as eager with concrete ones
    f = functx.jit(lambda x, m, n: FQ(x, dynamic_shape=(m, n)))
    _close(f(x, 4, 3), want, 1e-12)


def test_vmap_matches_loop():
    xs = _matrix((2, 5, 3), np.float64)
    batched = functx.vmap(FQ)(xs)
    for i in range(2):
        _close([b[i] for b in batched], FQ(xs[i]), 1e-12)


def test_forward_derivative():
    # (reverse mode stops at the while_loop, as in JAX)
    check_grads(lambda x: FQ(x)[:2], (_matrix((4, 3), np.float64),), order=1, modes=["fwd"])


def test_errors_vs_jax():
    x = _matrix((3, 4), np.float64)
    for q in (FQ, JQ):
        with pytest.raises(ValueError, match="M >= N"):
            q(x)
    with pytest.raises(ValueError):
        FQ(np.ones((2, 3, 3)))


def test_docstring_example():
    doc = FQ.__doc__
    assert all(s in doc for s in ("Arguments:", "Returns:", "Example:"))
    (t,) = doctest.DocTestFinder(recurse=False).find(FQ, "qdwh", globs={})
    assert len(t.examples) > 0
    # (the example runs in tests/test_docstrings.py; any other example of it here)
    assert docutil.run(FQ, "qdwh", globs={}).failed == 0


def test_triton_interpreted_matches_eager(monkeypatch):
    pytest.importorskip("triton")
    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = _matrix((5, 3), np.float64)
    exe = compile_triton(passes.simplify(functx.make_jaxpr(FQ)(x)))
    _close([t.numpy() for t in exe(x)], FQ(x), 1e-12)
