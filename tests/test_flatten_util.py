"""``functx.flatten_util.ravel_pytree`` against ``jax.flatten_util.ravel_pytree``: the flat
vector's values and dtype (JAX's promotion of the leaves' dtypes), unravel's leaves and dtypes,
its errors, and both under ``jit`` and ``grad``."""

from __future__ import annotations

from typing import Any, NamedTuple

import docutil
import hypothesis.strategies as st
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings

import functx
import functx.numpy as fnp
from functx import tree_util as tu
from functx.flatten_util import ravel_pytree

jax = pytest.importorskip("jax")
jnp = jax.numpy
jtu = jax.tree_util
from jax.flatten_util import ravel_pytree as jravel  # noqa: E402


class Pt(NamedTuple):
    x: Any
    y: Any


def _same(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


def _check(tree):
    flat, unravel = ravel_pytree(tree)
    jflat, junravel = jravel(tree)
    _same(flat, jflat)
    back, jback = unravel(flat), junravel(jflat)
    assert tu.tree_structure(back).num_leaves == jtu.tree_structure(jback).num_leaves
    for a, b in zip(tu.tree_leaves(back), jtu.tree_leaves(jback), strict=True):
        _same(a, b)
    return flat, unravel


TREES = [
    {"a": np.int32(1), "b": np.ones(2, np.float16), "c": [np.ones((2, 2), np.float32)]},
    {"a": np.int32(1), "b": np.bool_(True)},
    (np.float32(1.0), np.int32(2)),
    [np.arange(6, dtype=np.int8).reshape(2, 3), np.arange(2, dtype=np.uint8)],
    Pt(np.ones(3, ml_dtypes.bfloat16), np.ones(1, np.float16)),
    {"w": np.arange(4, dtype=np.float32).reshape(2, 2), "n": None, "s": np.float32(7)},
    [np.zeros((0, 3), np.float32), np.ones(2, np.float32)],
    [True, False],
]


@pytest.mark.parametrize("tree", TREES, ids=lambda t: repr(tu.tree_structure(t)))
def test_ravel_pytree_as_jax(tree):
    _check(tree)


@pytest.mark.usefixtures("no_x64")
def test_python_scalars_as_jax_without_x64():
    # the test session runs JAX with x64 on; JAX's default (x64 off) is what functx follows here
    with jax.enable_x64(False):
        for tree in [(1.0, 2), [True, 3], {"a": 2.5, "b": np.int32(1)}]:
            _check(tree)


def test_empty_tree_gives_an_empty_float32_vector():
    for tree in [[], {}, None, {"a": (None, [])}]:
        flat, unravel = _check(tree)
        assert unravel(flat) == tree == jravel(tree)[1](jravel(tree)[0])


def test_single_dtype_unravel_keeps_the_given_dtype_as_jax():
    tree = {"a": np.ones(2, np.float32), "b": np.zeros((), np.float32)}
    _, unravel = ravel_pytree(tree)
    _, junravel = jravel(tree)
    for dt in [np.float16, np.int32]:
        ours = unravel(np.ones(3, dt))
        theirs = junravel(jnp.ones(3, dt))
        for a, b in zip(tu.tree_leaves(ours), jtu.tree_leaves(theirs), strict=True):
            _same(a, b)


def test_unravel_errors_as_jax():
    mixed = (np.float32(1), np.int32(2))
    _, unravel = ravel_pytree(mixed)
    _, junravel = jravel(mixed)
    for u, ones in [(unravel, fnp.ones), (junravel, jnp.ones)]:
        with pytest.raises(ValueError, match="Sum of sizes 2"):
            u(ones(3, "float32"))
        with pytest.raises(TypeError, match="unravel function given array of dtype int32"):
            u(ones(2, "int32"))
    _, unravel = ravel_pytree([np.ones(2, np.float32)])
    _, junravel = jravel([np.ones(2, np.float32)])
    for u, ones in [(unravel, fnp.ones), (junravel, jnp.ones)]:
        with pytest.raises(ValueError):
            u(ones(3, "float32"))


_DTYPES = [np.float32, np.float16, np.int32, np.int8, np.uint8, np.int16, np.bool_]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_DTYPES), st.lists(st.integers(0, 3), min_size=0, max_size=3)),
        min_size=1,
        max_size=4,
    )
)
def test_ravel_pytree_shapes_and_dtypes(specs):
    rng = np.random.default_rng(0)
    tree = {
        f"k{i}": (rng.integers(0, 5, size=shape) > 2).astype(dt)
        if dt is np.bool_
        else rng.integers(0, 5, size=shape).astype(dt)
        for i, (dt, shape) in enumerate(specs)
    }
    _check(tree)


def test_ravel_pytree_under_jit():
    tree = {"a": np.arange(3, dtype=np.float32), "b": (np.int32(4), np.ones((2, 2), np.float16))}

    def f(t):
        flat, unravel = ravel_pytree(t)
        return flat * 2, unravel(flat + 1)

    def jf(t):
        flat, unravel = jravel(t)
        return flat * 2, unravel(flat + 1)

    ours, theirs = functx.jit(f)(tree), jax.jit(jf)(tree)
    for a, b in zip(tu.tree_leaves(ours), jtu.tree_leaves(theirs), strict=True):
        _same(a, b)
    # an unravel made outside jit, called inside
    flat, unravel = ravel_pytree(tree)
    jflat, junravel = jravel(tree)
    ours, theirs = functx.jit(unravel)(flat), jax.jit(junravel)(jflat)
    for a, b in zip(tu.tree_leaves(ours), jtu.tree_leaves(theirs), strict=True):
        _same(a, b)


def test_ravel_pytree_under_grad():
    tree = {"w": np.arange(4, dtype=np.float32).reshape(2, 2), "b": [np.float32(0.5)]}

    def loss(rv):
        def f(t):
            flat, _ = rv(t)
            return (flat**2).sum() + flat[0] * flat[-1]

        return f

    ours = functx.grad(loss(ravel_pytree))(tree)
    theirs = jax.grad(loss(jravel))(tree)
    for a, b in zip(tu.tree_leaves(ours), jtu.tree_leaves(theirs), strict=True):
        _same(a, b)

    # grad through unravel: a flat parameter vector fed to a tree-shaped model
    flat, unravel = ravel_pytree(tree)
    jflat, junravel = jravel(tree)

    def model(u):
        return lambda v: (u(v)["w"].sum() * u(v)["b"][0]) ** 2

    _same(functx.grad(model(unravel))(flat), jax.grad(model(junravel))(jflat))


@pytest.mark.usefixtures("no_x64")
def test_docstring_example_runs():
    assert functx.flatten_util.ravel_pytree is ravel_pytree
    # (its public example runs in tests/test_docstrings.py; any others here)
    assert docutil.run(ravel_pytree, "ravel_pytree", globs={}).failed == 0
