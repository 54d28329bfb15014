"""``functx.experimental.sparse`` (BCOO) against ``jax.experimental.sparse``: the stored buffers
(data, indices, nse, layout flags), dense values, dtypes and shapes over several layouts
(batch, sparse and dense dims), the products against NumPy float64, gradients in ``data`` and the
dense operand against finite differences, ``jit`` and ``vmap`` through the BCOO pytree, and
JAX's errors."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from errutil import raises_as_jax
from jax.experimental import sparse as jsp
from x64util import x64_off

import functx
import functx.numpy as fjnp
from functx.experimental import sparse as fsp
from functx.test_util import check_grads

RNG = np.random.default_rng(0)


def _dense(shape, density=0.4, dtype=np.float64):
    x = RNG.normal(size=shape) * (RNG.random(shape) < density)
    return x.astype(dtype)


def _same_bcoo(got, want):
    assert type(got).__name__ == "BCOO"
    assert got.shape == want.shape and got.nse == want.nse
    assert (got.n_batch, got.n_sparse, got.n_dense) == (want.n_batch, want.n_sparse, want.n_dense)
    assert got.dtype == want.dtype and got.indices.dtype == want.indices.dtype
    assert (got.indices_sorted, got.unique_indices) == (want.indices_sorted, want.unique_indices)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)


# (shape, n_batch, n_dense)
LAYOUTS = [
    ((5,), 0, 0),
    ((3, 4), 0, 0),
    ((3, 4), 1, 0),
    ((3, 4), 0, 1),
    ((2, 3, 4), 1, 1),
    ((2, 3, 4), 0, 0),
    ((2, 3, 4), 2, 0),
]


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_fromdense_todense_against_jax(shape, n_batch, n_dense):
    x = _dense(shape)
    for nse in (None, 7):
        got = fsp.BCOO.fromdense(x, nse=nse, n_batch=n_batch, n_dense=n_dense)
        want = jsp.BCOO.fromdense(x, nse=nse, n_batch=n_batch, n_dense=n_dense)
        _same_bcoo(got, want)
        np.testing.assert_array_equal(got.todense(), want.todense())
        assert repr(got) == repr(want)
    np.testing.assert_array_equal(fsp.bcoo_todense(got), x if nse is None else got.todense())


def test_fromdense_dtypes_and_index_dtype():
    with x64_off():
        x = _dense((3, 4))
        got = fsp.bcoo_fromdense(x, index_dtype=np.int16)
        want = jsp.bcoo_fromdense(x, index_dtype=np.int16)
        _same_bcoo(got, want)
        got = fsp.bcoo_fromdense(x.astype(np.int32))
        _same_bcoo(got, jsp.bcoo_fromdense(x.astype(np.int32)))


def test_construct_from_buffers_and_todense_sums_duplicates_drops_padding():
    data = np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([[0, 1], [2, 0], [0, 1], [3, 3]], np.int32)  # a duplicate and a padding row
    got = fsp.BCOO((data, idx), shape=(3, 3))
    want = jsp.BCOO((data, idx), shape=(3, 3))
    _same_bcoo(got, want)
    np.testing.assert_array_equal(got.todense(), want.todense())
    assert (got.ndim, got.size, len(got)) == (want.ndim, want.size, len(want))


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_transpose_against_jax(shape, n_batch, n_dense):
    x = _dense(shape)
    got = fsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    want = jsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    ns = len(shape) - n_batch - n_dense
    groups = [
        list(range(n_batch)),
        list(range(n_batch, n_batch + ns)),
        list(range(n_batch + ns, len(shape))),
    ]
    perm = tuple(i for g in groups for i in g[::-1])
    _same_bcoo(
        fsp.bcoo_transpose(got, permutation=perm), jsp.bcoo_transpose(want, permutation=perm)
    )
    np.testing.assert_array_equal(got.transpose(perm).todense(), np.transpose(x, perm))
    if n_batch == 0 and n_dense == 0:
        _same_bcoo(got.T, want.T)


def test_transpose_errors_as_jax():
    x = _dense((2, 3, 4))

    def mixing(m):
        return m.bcoo_transpose(m.BCOO.fromdense(x, n_batch=1), permutation=(1, 0, 2))

    raises_as_jax(mixing, jsp, fsp, NotImplementedError)
    raises_as_jax(lambda m: m.BCOO.fromdense(x).transpose((0, 0, 1)), jsp, fsp, TypeError)


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_reduce_sum_against_jax(shape, n_batch, n_dense):
    x = _dense(shape)
    got = fsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    want = jsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    for axes in [(0,), (len(shape) - 1,), tuple(range(len(shape)))]:
        g, w = fsp.bcoo_reduce_sum(got, axes=axes), jsp.bcoo_reduce_sum(want, axes=axes)
        assert (g.shape, g.nse, g.n_batch, g.n_dense) == (w.shape, w.nse, w.n_batch, w.n_dense)
        np.testing.assert_allclose(g.todense(), w.todense(), rtol=1e-12)
        np.testing.assert_allclose(g.todense(), x.sum(axes), rtol=1e-12)
    np.testing.assert_allclose(got.sum(), want.sum(), rtol=1e-12)
    if len(shape) > 1:
        np.testing.assert_allclose(got.sum(0).todense(), want.sum(0).todense(), rtol=1e-12)


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_multiply_dense_against_jax(shape, n_batch, n_dense):
    x = _dense(shape)
    got = fsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    want = jsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    for v in (np.float64(2.5), RNG.normal(size=shape), RNG.normal(size=shape[-1:])):
        g, w = fsp.bcoo_multiply_dense(got, v), jsp.bcoo_multiply_dense(want, v)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-12)
        _same_bcoo(got * v, want * v)
        np.testing.assert_allclose((v * got).todense(), x * v, rtol=1e-12)
    raises_as_jax(
        lambda m: m.bcoo_multiply_dense(m.BCOO.fromdense(x), np.ones((2,) + shape)),
        jsp,
        fsp,
        NotImplementedError,
    )


def test_astype_neg_and_scalar_dtypes():
    with x64_off():
        x = _dense((3, 4), dtype=np.float32)
        got, want = fsp.BCOO.fromdense(x), jsp.BCOO.fromdense(x)
        _same_bcoo(got.astype(np.int32), want.astype(np.int32))
        _same_bcoo(got * 2, want * 2)
        _same_bcoo(-got, -want)


def _duplicated(n_batch):
    data = RNG.normal(size=(2,) * n_batch + (6,))
    idx = RNG.integers(0, 3, size=(2,) * n_batch + (6, 2)).astype(np.int32)
    idx[..., 5, :] = 3  # padding
    return data, idx


@pytest.mark.parametrize("n_batch", [0, 1])
def test_sort_indices_and_sum_duplicates_against_jax(n_batch):
    data, idx = _duplicated(n_batch)
    shape = (2,) * n_batch + (3, 3)
    got, want = fsp.BCOO((data, idx), shape=shape), jsp.BCOO((data, idx), shape=shape)
    _same_bcoo(fsp.bcoo_sort_indices(got), jsp.bcoo_sort_indices(want))
    for nse in (None, 3, 12):
        g, w = fsp.bcoo_sum_duplicates(got, nse=nse), jsp.bcoo_sum_duplicates(want, nse=nse)
        _same_bcoo(g, w)
    np.testing.assert_allclose(got.sum_duplicates().todense(), want.todense(), rtol=1e-12)
    _same_bcoo(got.sum_duplicates(), want.sum_duplicates())


# (lhs shape, n_batch, rhs shape, dimension numbers)
DOTS = [
    ((3, 4), 0, (4,), (((1,), (0,)), ((), ()))),
    ((3, 4), 0, (4, 5), (((1,), (0,)), ((), ()))),
    ((3, 4), 0, (5, 3), (((0,), (1,)), ((), ()))),
    ((3, 4), 0, (2, 5), (((), ()), ((), ()))),
    ((2, 3, 4), 1, (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((2, 3, 4), 1, (4, 5), (((2,), (0,)), ((), ()))),
    ((2, 3, 4), 1, (2, 5), (((0,), (0,)), ((), ()))),
    ((2, 3, 4), 2, (3, 4), (((1, 2), (0, 1)), ((), ()))),
]


@pytest.mark.parametrize("lshape,n_batch,rshape,dn", DOTS)
def test_dot_general_against_jax_and_numpy(lshape, n_batch, rshape, dn):
    x, y = _dense(lshape), RNG.normal(size=rshape)
    got = fsp.bcoo_dot_general(fsp.BCOO.fromdense(x, n_batch=n_batch), y, dimension_numbers=dn)
    want = jsp.bcoo_dot_general(jsp.BCOO.fromdense(x, n_batch=n_batch), y, dimension_numbers=dn)
    ref = jax.lax.dot_general(x, y, dn)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    # dense @ sparse: the operands swapped
    (lc, rc), (lb, rb) = dn
    swapped = ((rc, lc), (rb, lb))
    got = fsp.bcoo_dot_general(y, fsp.BCOO.fromdense(x, n_batch=n_batch), dimension_numbers=swapped)
    want = jsp.bcoo_dot_general(
        y, jsp.BCOO.fromdense(x, n_batch=n_batch), dimension_numbers=swapped
    )
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_matmul_operators_and_dtypes():
    with x64_off():
        x, v, m = _dense((3, 4), dtype=np.float32), np.ones(4, np.float32), np.ones((2, 3))
        got, want = fsp.BCOO.fromdense(x), jsp.BCOO.fromdense(x)
        for g, w in [
            (got @ v, want @ v),
            (fjnp.asarray(m) @ got, jjnp.asarray(m) @ want),
        ]:
            assert (g.shape, g.dtype) == (w.shape, w.dtype)
            np.testing.assert_allclose(g, w, rtol=1e-6)
        # a NumPy array on the left leaves the product to BCOO (JAX's gives an object array)
        np.testing.assert_allclose(m.astype(np.float32) @ got, m @ x, rtol=1e-6)
        stack = RNG.normal(size=(2, 4, 3)).astype(np.float32)
        np.testing.assert_allclose(got @ stack, x @ stack, rtol=1e-5)


def test_dot_general_errors_as_jax():
    x, y = _dense((2, 3, 4)), np.ones((2, 4, 5))
    raises_as_jax(lambda m: m.BCOO.fromdense(x[0]) @ np.ones(5), jsp, fsp, TypeError)
    raises_as_jax(
        lambda m: m.bcoo_dot_general(
            m.BCOO.fromdense(x), y, dimension_numbers=(((2,), (1,)), ((0,), (0,)))
        ),
        jsp,
        fsp,
        NotImplementedError,
    )  # a batch dim that is not a BCOO batch dim
    raises_as_jax(
        lambda m: m.bcoo_dot_general(
            m.BCOO.fromdense(x, n_dense=1), y[0], dimension_numbers=(((2,), (0,)), ((), ()))
        ),
        jsp,
        fsp,
        NotImplementedError,
    )  # contracting a dense dim


def test_grads_against_finite_differences():
    x, y = _dense((3, 4)), RNG.normal(size=(4, 2))
    sp = fsp.BCOO.fromdense(x)
    idx = sp.indices

    def f(data, y):
        m = fsp.BCOO((data, idx), shape=(3, 4))
        return fsp.bcoo_dot_general(m, y, dimension_numbers=(((1,), (0,)), ((), ()))) ** 2

    check_grads(f, (sp.data, y), order=1, modes=("rev",))
    # fromdense: finite differences would move zeros into the stored set; JAX's jvp instead
    t = RNG.normal(size=x.shape)
    got = functx.jvp(lambda x: fsp.BCOO.fromdense(x, nse=sp.nse).data, (x,), (t,))[1]
    want = jax.jvp(lambda x: jsp.BCOO.fromdense(x, nse=sp.nse).data, (x,), (t,))[1]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_grads(lambda d: fsp.BCOO((d, idx), shape=(3, 4)).todense(), (sp.data,), order=1)
    # the same gradients as JAX's
    jf = jax.grad(lambda d, y: (jsp.BCOO((d, idx), shape=(3, 4)) @ y).sum() ** 2, (0, 1))
    ff = functx.grad(lambda d, y: (fsp.BCOO((d, idx), shape=(3, 4)) @ y).sum() ** 2, (0, 1))
    for g, w in zip(ff(sp.data, y), jf(np.asarray(sp.data), y)):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_jit_and_vmap_through_the_pytree():
    x = _dense((2, 3, 4))
    got = fsp.BCOO.fromdense(x, n_batch=1)
    want = jsp.BCOO.fromdense(x, n_batch=1)
    _same_bcoo(functx.jit(lambda m: m * 2.0)(got), jax.jit(lambda m: m * 2.0)(want))
    y = RNG.normal(size=(4, 5))
    np.testing.assert_allclose(functx.jit(lambda m, y: m @ y)(got, y), want @ y, rtol=1e-10)
    # vmap maps the batch dim as JAX does: the function sees an unbatched BCOO
    shapes = []
    out = functx.vmap(lambda m: shapes.append(m.shape) or m.todense())(got)
    assert shapes == [(3, 4)]
    np.testing.assert_allclose(out, x)
    _same_bcoo(
        functx.vmap(lambda r: fsp.BCOO.fromdense(r, nse=4))(x[0]),
        jax.vmap(lambda r: jsp.BCOO.fromdense(r, nse=4))(x[0]),
    )
    np.testing.assert_allclose(
        functx.vmap(lambda m, v: m @ v)(got, RNG.normal(size=(2, 4))).shape, (2, 3)
    )
    # the default nse needs concrete values (JAX's ConcretizationTypeError, a TypeError)
    raises_as_jax(
        lambda m: m[0].jit(lambda x: m[1].BCOO.fromdense(x))(x),
        (jax, jsp),
        (functx, fsp),
        TypeError,
    )


def test_empty_eye_todense_against_jax():
    with x64_off():
        for args, kw in [
            ((2, 3), {}),
            ((2, 3, 4), {"n_batch": 1, "nse": 2}),
            ((3,), {"n_dense": 1}),
        ]:
            _same_bcoo(fsp.empty(args, **kw), jsp.empty(args, **kw))
        for n, m, k in [(3, None, 0), (3, 4, 1), (4, 3, -2), (3, 3, 5)]:
            _same_bcoo(fsp.eye(n, m, k), jsp.eye(n, m, k))
        for kw in ({"n_batch": 1}, {"n_dense": 1}):
            np.testing.assert_array_equal(
                fsp.eye(3, 4, 1, **kw).todense(), jsp.eye(3, 4, 1, **kw).todense()
            )
        _same_bcoo(fsp.eye(3, dtype=np.int32), jsp.eye(3, dtype=np.int32))
        x = np.ones(3)
        assert fsp.todense(x) is x
        np.testing.assert_array_equal(fsp.todense(fsp.eye(2)), jsp.todense(jsp.eye(2)))
    raises_as_jax(lambda m: m.empty((2, 3), sparse_format="dok"), jsp, fsp, ValueError)


def test_bad_buffers_and_nse_as_jax():
    raises_as_jax(
        lambda m: m.BCOO((np.ones(3), np.zeros((4, 2), np.int32)), shape=(2, 3)),
        jsp,
        fsp,
        ValueError,
    )
    raises_as_jax(
        lambda m: m.BCOO((np.ones((2, 3)), np.zeros((3, 3, 1), np.int32)), shape=(2, 3)),
        jsp,
        fsp,
        ValueError,
    )
    raises_as_jax(lambda m: m.BCOO.fromdense(np.ones((2, 2)), nse=1.5), jsp, fsp, TypeError)
