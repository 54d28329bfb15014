"""functx/lax/_dots.py (``ragged_dot_general`` in its three modes, ``scaled_dot``) against JAX,
with gradients against finite differences, vmap and jit."""

from __future__ import annotations

import jax
import ml_dtypes
import numpy as np
import pytest

import functx
from functx import lax
from functx.test_util import check_grads

R = np.random.RandomState(0)
F = np.float32

# name: (lhs, rhs, group_sizes, (dot dimension numbers, lhs ragged dims, rhs group dims))
FREE = ((([1], [1]), ([], [])), [0], [0])
FREE_B = ((([2], [2]), ([0], [1])), [1], [0])
CONTRACT = ((([1], [0]), ([], [])), [1], [])
CONTRACT_B = ((([2], [1]), ([0], [0])), [2], [])
BATCH = ((([2], [1]), ([0], [0])), [0], [])
RAGGED = {
    "free": (R.randn(6, 3), R.randn(3, 3, 4), [1, 2, 2], FREE),
    "free batch": (R.randn(2, 5, 3), R.randn(3, 2, 3, 4), [1, 2, 1], FREE_B),
    "free per batch": (R.randn(2, 5, 3), R.randn(3, 2, 3, 4), [[1, 2, 1], [2, 2, 1]], FREE_B),
    "contracting": (R.randn(4, 6), R.randn(6, 3), [2, 3], CONTRACT),
    "contracting per batch": (R.randn(2, 4, 6), R.randn(2, 6, 3), [[2, 3], [1, 5]], CONTRACT_B),
    "batch": (R.randn(5, 2, 3), R.randn(5, 3, 4), [2, 2], BATCH),
}


@pytest.mark.parametrize("case", RAGGED)
def test_ragged_dot_general_like_jax(case):
    a, b, g, dn = RAGGED[case]
    a, b, g = a.astype(F), b.astype(F), np.asarray(g, np.int32)
    ours = lax.ragged_dot_general(a, b, g, lax.RaggedDotDimensionNumbers(*dn))
    theirs = jax.lax.ragged_dot_general(a, b, g, jax.lax.RaggedDotDimensionNumbers(*dn))
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-5, atol=1e-5)


def test_ragged_dot_general_matches_ragged_dot_and_transforms():
    a, b, g, dn = RAGGED["free"]
    rdn = lax.RaggedDotDimensionNumbers(*dn)
    gs = np.int32([1, 2, 2])
    np.testing.assert_allclose(
        np.asarray(lax.ragged_dot_general(a, b, gs, rdn)),
        np.asarray(lax.ragged_dot(a, b, gs)),
        rtol=1e-12,
    )
    check_grads(lambda x, y: lax.ragged_dot_general(x, y, gs, rdn), (a, b), order=1, modes=("rev",))
    a2, b2, g2, dn2 = RAGGED["contracting"]
    rdn2 = lax.RaggedDotDimensionNumbers(*dn2)
    check_grads(lambda x: lax.ragged_dot_general(x, b2, np.int32(g2), rdn2), (a2,), order=1)
    f = lambda x: lax.ragged_dot_general(x, b, gs, rdn)  # noqa: E731
    batch = np.stack([a, 2 * a]).astype(F)
    np.testing.assert_allclose(
        np.asarray(functx.vmap(f)(batch)), np.stack([np.asarray(f(x)) for x in batch]), rtol=1e-5
    )
    np.testing.assert_allclose(
        np.asarray(functx.jit(f)(a.astype(F))), np.asarray(f(a.astype(F))), rtol=1e-5
    )


def test_ragged_dot_dimension_numbers():
    dn = lax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
    jdn = jax.lax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
    assert repr(dn) == repr(jdn)
    assert dn == lax.RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,)) and hash(dn)
    with pytest.raises(AttributeError):
        dn.lhs_ragged_dimensions = (1,)


def test_ragged_dot_general_errors():
    a, b, g, dn = RAGGED["free"]
    rdn = lax.RaggedDotDimensionNumbers(*dn)
    with pytest.raises(TypeError):
        lax.ragged_dot_general(a, b, np.float32([1, 2, 2]), rdn)
    with pytest.raises(TypeError):  # the group dimension has 3 groups
        lax.ragged_dot_general(a, b, np.int32([3, 3]), rdn)
    with pytest.raises(TypeError):
        lax.ragged_dot_general(a, b, np.int32([1, 2, 2]), dn)
    with pytest.raises(TypeError):  # a free ragged dimension needs an rhs group dimension
        no_group = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [0], [])
        lax.ragged_dot_general(a, b[0], np.int32([1, 2, 2]), no_group)
    with pytest.raises(NotImplementedError):
        lax.ragged_dot_general(a, b, np.int32([1, 2, 2]), rdn, group_offset=np.int32([0]))


@pytest.mark.parametrize("pet", [None, np.float32])
def test_scaled_dot_like_jax(pet):
    lhs = R.randn(2, 4, 8).astype(ml_dtypes.float8_e4m3fn)
    rhs = R.randn(2, 8, 3).astype(ml_dtypes.float8_e4m3fn)
    ls = np.exp2(R.randint(-2, 3, (2, 4, 2))).astype(ml_dtypes.float8_e8m0fnu)
    rs = np.exp2(R.randint(-2, 3, (2, 2, 3))).astype(ml_dtypes.float8_e8m0fnu)
    kw = dict(lhs_scale=ls, rhs_scale=rs, preferred_element_type=pet)
    ours = lax.scaled_dot(functx.numpy.asarray(lhs), functx.numpy.asarray(rhs), **kw)
    theirs = jax.lax.scaled_dot(lhs, rhs, **kw)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(
        np.asarray(ours, np.float64), np.asarray(theirs, np.float64), rtol=1e-2
    )


def test_scaled_dot_checks():
    x = np.ones((2, 4), F)
    bads = [{"lhs_scale": np.ones((2, 3), F)}, {"lhs_scale": np.ones((2, 4), F)}]
    for bad in [*bads, {"rhs_scale": np.ones((4,), F)}]:
        with pytest.raises(TypeError):
            lax.scaled_dot(x, x.T, **bad)
        with pytest.raises(TypeError):
            jax.lax.scaled_dot(x, x.T, **bad)
    with pytest.raises(TypeError):
        lax.scaled_dot(np.ones(3, F), np.ones(3, F))
    out = lax.scaled_dot(x, x.T, lhs_scale=np.full((2, 2), 2.0, F))
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(np.asarray(out, np.float64), np.full((2, 2), 8.0))
