"""functx/_laxmore.py's top-k searches, ``broadcast_like`` and ``ragged_dot`` against JAX."""

from __future__ import annotations

import hypothesis.strategies as st
import jax
import numpy as np
import pytest
from hypothesis import given, settings

import functx as fx
import functx.numpy as fnp
from functx import lax
from functx.errors import FunctxIndexError, FunctxTypeError, FunctxValueError
from functx.test_util import check_grads

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True)


def _same(got, want):
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@st.composite
def _k_case(draw):
    shape = draw(st.lists(st.integers(1, 7), min_size=1, max_size=3))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    k = draw(st.integers(1, shape[dim]))
    dtype = draw(st.sampled_from([np.float32, np.float64, fnp.bfloat16]))
    # few distinct values (ties), signed zeros and infinities
    pool = np.array([-np.inf, -2.0, -0.0, 0.0, 1.5, 3.0, np.inf], np.float64)
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=int(np.prod(shape))))
    x = pool[np.array(idx[: int(np.prod(shape))])].reshape(shape).astype(dtype)
    return x, k, dim


@SETTINGS
@given(_k_case(), st.booleans())
def test_approx_max_and_min_k_are_jaxs_exact_top_k(case, is_max):
    x, k, dim = case
    # entries equal to XLA's initial value (-inf for max, +inf for min) take other indices in
    # JAX (approx_max_k's docstring): keep them out of the comparison
    x = np.where(x == (-np.inf if is_max else np.inf), -5.0 if is_max else 5.0, x).astype(x.dtype)
    name = "approx_max_k" if is_max else "approx_min_k"
    got = getattr(lax, name)(x, k, reduction_dimension=dim)
    _same(got, getattr(jax.lax, name)(x, k, reduction_dimension=dim))
    _same(fx.jit(lambda a: getattr(lax, name)(a, k, reduction_dimension=dim))(x), got)


def test_approx_max_k_puts_nan_first_as_jax():
    x = np.array([[3.0, np.nan, 2.0, 5.0, -0.0, 0.0, 5.0, -np.inf, 7.0]], np.float32)
    _same(lax.approx_max_k(x, 4), jax.lax.approx_max_k(x, 4))


def test_approx_k_aggregate_false_gives_the_exact_top_k():
    # JAX returns an implementation-defined number >= k of candidates; functx the top k.
    x = np.random.default_rng(0).standard_normal((3, 50)).astype(np.float32)
    vals, idx = lax.approx_max_k(x, 5, aggregate_to_topk=False)
    want = -np.sort(-x, axis=-1)[:, :5]
    np.testing.assert_array_equal(np.asarray(vals), want)
    jv, _ = jax.lax.approx_max_k(x, 5, aggregate_to_topk=False)
    assert jv.shape[-1] >= 5
    np.testing.assert_array_equal(-np.sort(-np.asarray(jv), axis=-1)[:, :5], want)


def test_approx_k_grads_and_vmap():
    x = np.random.default_rng(1).standard_normal((4, 9))
    check_grads(lambda a: lax.approx_max_k(a, 3)[0], (x,), order=2)
    check_grads(lambda a: lax.approx_min_k(a, 2, reduction_dimension=0)[0], (x,), order=2)
    check_grads(lambda a: lax.approx_min_k(a, 1)[0], (x,), order=2)
    f = fx.vmap(lambda r: lax.approx_min_k(r, 3))
    _same(
        f(x.astype(np.float32)),
        jax.vmap(lambda r: jax.lax.approx_min_k(r, 3))(x.astype(np.float32)),
    )


@pytest.mark.parametrize(
    "call, err",
    [
        (lambda: lax.approx_max_k(np.ones(10, np.int32), 2), FunctxValueError),
        (lambda: lax.approx_min_k(np.ones(10, np.float32), 11), FunctxValueError),
        (lambda: lax.approx_min_k(np.ones(10, np.float32), 0), FunctxValueError),
        (
            lambda: lax.approx_max_k(np.ones(10, np.float32), 2, reduction_dimension=1),
            FunctxIndexError,
        ),
        (lambda: lax.approx_max_k(np.ones(10, np.float32), 2, recall_target=1.5), FunctxValueError),
        (lambda: lax.approx_max_k(np.ones(10, np.float32), 2.5), FunctxTypeError),
    ],
)
def test_approx_k_bad_input_names_the_problem(call, err):
    with pytest.raises(err, match="approx_m"):
        call()


@pytest.mark.parametrize("like", [np.zeros((2, 3)), np.zeros((4, 1, 3), np.int8), 0.0])
def test_broadcast_like(like):
    x = np.array([1, 2, 3], np.int32) if np.ndim(like) else np.float32(2.0)
    _same([lax.broadcast_like(x, like)], [jax.lax.broadcast_like(x, like)])


@st.composite
def _ragged_case(draw):
    g = draw(st.integers(1, 4))
    m, k, n = draw(st.integers(0, 9)), draw(st.integers(1, 5)), draw(st.integers(1, 5))
    sizes = draw(st.lists(st.integers(0, 5), min_size=g, max_size=g))
    return m, k, n, np.array(sizes, draw(st.sampled_from([np.int32, np.uint32])))


@SETTINGS
@given(_ragged_case())
def test_ragged_dot_is_jaxs(case):
    m, k, n, sizes = case
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    lhs = rng.integers(-3, 4, (m, k)).astype(np.float32)
    rhs = rng.integers(-3, 4, (len(sizes), k, n)).astype(np.float32)
    want = jax.lax.ragged_dot(lhs, rhs, sizes)
    _same([lax.ragged_dot(lhs, rhs, sizes)], [want])
    _same([fx.jit(lax.ragged_dot)(lhs, rhs, sizes)], [want])


def test_ragged_dot_dtypes_grads_and_vmap():
    rng = np.random.default_rng(2)
    lhs, rhs = rng.standard_normal((6, 3)), rng.standard_normal((3, 3, 2))
    sizes = np.array([2, 1, 3], np.int32)
    check_grads(lambda a, b: lax.ragged_dot(a, b, sizes), (lhs, rhs), order=2)
    bf = fnp.bfloat16
    got = lax.ragged_dot(lhs.astype(bf), rhs.astype(bf), sizes, preferred_element_type=np.float32)
    want = jax.lax.ragged_dot(
        lhs.astype(bf), rhs.astype(bf), sizes, preferred_element_type=np.float32
    )
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    ints = lax.ragged_dot(lhs.astype(np.int32), rhs.astype(np.int32), sizes)
    assert ints.dtype == jax.lax.ragged_dot(lhs.astype(np.int32), rhs.astype(np.int32), sizes).dtype
    f32 = (lhs.astype(np.float32), rhs.astype(np.float32))
    batched = fx.vmap(lambda a: lax.ragged_dot(a, f32[1], sizes))(np.stack([f32[0], 2 * f32[0]]))
    # (JAX's vmap of ragged_dot over lhs is not implemented: against a loop of JAX's calls)
    want = np.stack([jax.lax.ragged_dot(a, f32[1], sizes) for a in (f32[0], 2 * f32[0])])
    np.testing.assert_allclose(np.asarray(batched), np.asarray(want), rtol=1e-6)


def test_ragged_dot_bad_shapes():
    with pytest.raises(FunctxTypeError, match="group dimension size to be 3, got 2"):
        lax.ragged_dot(np.ones((6, 2)), np.ones((2, 2, 4)), np.array([1, 2, 3]))
    with pytest.raises(FunctxTypeError, match="contracting"):
        lax.ragged_dot(np.ones((6, 3)), np.ones((3, 2, 4)), np.array([1, 2, 3]))
    with pytest.raises(NotImplementedError, match="group_offset"):
        lax.ragged_dot(np.ones((6, 2)), np.ones((3, 2, 4)), np.array([1, 2, 3]), group_offset=0)
