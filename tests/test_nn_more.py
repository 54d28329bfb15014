"""``functx.nn``'s selu, celu, glu, hard_tanh, soft_sign and sparse_plus against ``jax.nn``:
values and dtypes on hypothesis-drawn shapes, derivatives at the kinks (``jax.grad``) and by
``check_grads`` away from them, errors, and the docstrings' examples."""

from __future__ import annotations

import doctest

import jax
import jax.nn as jnn
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import functx
import functx.nn as fnn
from functx.test_util import check_grads

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

ACTS = {
    "selu": lambda m, x: m.selu(x),
    "celu": lambda m, x: m.celu(x),
    "celu_alpha": lambda m, x: m.celu(x, alpha=0.5),
    "hard_tanh": lambda m, x: m.hard_tanh(x),
    "soft_sign": lambda m, x: m.soft_sign(x),
    "sparse_plus": lambda m, x: m.sparse_plus(x),
    "glu": lambda m, x: m.glu(x),
}
KINKS = np.array([-1.0, -0.0, 0.0, 1.0, -2.0, -0.5, 0.5, 2.0, np.inf, -np.inf])


def assert_same(out, ref, rtol):
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=rtol)


def tol(dt):
    return 2e-6 if dt == F32 else 1e-13


@pytest.mark.parametrize("name", list(ACTS))
@settings(max_examples=6)
@given(data=st.data())
def test_values_match_jax(name, data):
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    if name == "glu":
        shape = (*shape[:-1], 2 * shape[-1])
    x = data.draw(
        hnp.arrays(F64, shape, elements=st.floats(-4, 4, allow_subnormal=False)), label="x"
    ).astype(dt)
    assert_same(ACTS[name](fnn, x), ACTS[name](jnn, x), tol(dt))


@pytest.mark.parametrize("name", [n for n in ACTS if n != "glu"])
@pytest.mark.parametrize("dt", [F32, F64])
def test_kinks_values_and_derivatives(name, dt):
    x = KINKS.astype(dt)
    with np.errstate(all="ignore"):
        assert_same(ACTS[name](fnn, x), ACTS[name](jnn, x), tol(dt))
    finite = x[np.isfinite(x)]
    gx = functx.vmap(functx.grad(lambda v: ACTS[name](fnn, v)))(finite)
    gj = jax.vmap(jax.grad(lambda v: ACTS[name](jnn, v)))(finite)
    assert_same(gx, gj, tol(dt))


def test_glu_axis_gradients_and_errors():
    x = np.linspace(-2, 2, 24).reshape(2, 4, 3)
    for axis in (0, 1, -2):
        assert_same(fnn.glu(x, axis=axis), jnn.glu(x, axis=axis), 1e-13)
        gx = functx.grad(lambda v, a=axis: fnn.glu(v, axis=a).sum())(x)
        gj = jax.grad(lambda v, a=axis: jnn.glu(v, axis=a).sum())(x)
        assert_same(gx, gj, 1e-13)
    with pytest.raises(ValueError):
        fnn.glu(x, axis=-1)  # size 3 (JAX asserts: AssertionError)
    with pytest.raises(AssertionError):
        jnn.glu(x, axis=-1)


def test_hard_tanh_keeps_integer_dtype_as_jax():
    x = np.arange(-3, 4, dtype=np.int32)
    assert_same(fnn.hard_tanh(x), jnn.hard_tanh(x), 0)


@pytest.mark.parametrize("name", list(ACTS))
def test_check_grads(name):
    x = np.array([-3.3, -1.7, -0.6, -0.2, 0.3, 0.7, 1.6, 2.9])  # away from the kinks
    check_grads(lambda v: ACTS[name](fnn, v), (x,), order=2)


@pytest.mark.usefixtures("no_x64")
def test_jit_and_docstrings():
    x = np.linspace(-3, 3, 8).astype(np.float32)
    for f in ACTS.values():
        assert_same(functx.jit(lambda v, f=f: f(fnn, v))(x), f(jnn, x), 2e-6)
    for name in ("selu", "celu", "glu", "hard_tanh", "soft_sign", "sparse_plus"):
        assert name in fnn.__all__
        doc = getattr(fnn, name).__doc__
        assert "Arguments:" in doc and "Returns:" in doc and "Example:" in doc, name
        assert doctest.run_docstring_examples(getattr(fnn, name), {}) is None
    assert doctest.testmod(fnn).failed == 0
