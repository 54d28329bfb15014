"""``functx.experimental.sparse`` (BCOO) against ``jax.experimental.sparse``: the stored buffers
(data, indices, nse, layout flags), dense values, dtypes and shapes over several layouts
(batch, sparse and dense dims), the products against NumPy float64, gradients in ``data`` and the
dense operand against finite differences, ``jit`` and ``vmap`` through the BCOO pytree, and
JAX's errors."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from errutil import raises_as_jax
from jax.experimental import sparse as jsp
from x64util import x64_off, x64_on

import functx
import functx.numpy as fjnp
from functx.experimental import sparse as fsp
from functx.test_util import check_grads

RNG = np.random.default_rng(0)


def _dense(shape, density=0.4, dtype=np.float64):
    x = RNG.normal(size=shape) * (RNG.random(shape) < density)
    return x.astype(dtype)


def _as_jax(m):
    """JAX's BCOO with functx's buffers (constructing one compiles nothing in JAX)."""
    bufs = (np.asarray(m.data), np.asarray(m.indices))
    return jsp.BCOO(
        bufs, shape=m.shape, indices_sorted=m.indices_sorted, unique_indices=m.unique_indices
    )


def _built(module, x, **layout):
    """``module.BCOO`` (functx's or JAX's) of ``x``, from functx's buffers."""
    m = fsp.BCOO.fromdense(x, **layout)
    return module.BCOO((np.asarray(m.data), np.asarray(m.indices)), shape=m.shape)


def _same_bcoo(got, want):
    assert type(got).__name__ == "BCOO"
    assert got.shape == want.shape and got.nse == want.nse
    assert (got.n_batch, got.n_sparse, got.n_dense) == (want.n_batch, want.n_sparse, want.n_dense)
    assert got.dtype == want.dtype and got.indices.dtype == want.indices.dtype
    assert (got.indices_sorted, got.unique_indices) == (want.indices_sorted, want.unique_indices)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)


# (shape, n_batch, n_dense): every layout is checked against NumPy; the first two also against
# JAX (each new shape costs JAX compiles, seconds per layout on the CI machine)
LAYOUTS = [
    ((3, 4), 0, 0),
    ((2, 3, 4), 1, 1),
    ((5,), 0, 0),
    ((3, 4), 1, 0),
    ((3, 4), 0, 1),
    ((2, 3, 4), 0, 0),
    ((2, 3, 4), 2, 0),
    ((2, 3), 1, 1),  # no sparse dims
]


def _perm(shape, n_batch, n_dense):
    """A permutation reversing each of the batch, sparse and dense groups of dims."""
    cut = [0, n_batch, len(shape) - n_dense, len(shape)]
    return tuple(i for lo, hi in zip(cut, cut[1:]) for i in reversed(range(lo, hi)))


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_layouts_against_numpy(shape, n_batch, n_dense):
    x = _dense(shape)
    m = fsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    np.testing.assert_array_equal(fsp.bcoo_todense(m), x)
    # nse: the largest count of nonzero sparse positions of a batch; padding indices = shape
    sparse = list(range(n_batch, len(shape) - n_dense))
    nz = np.any(x != 0, axis=tuple(range(len(shape) - n_dense, len(shape))))
    assert m.nse == np.sum(nz, axis=tuple(sparse)).max()
    padded = fsp.bcoo_fromdense(x, nse=m.nse + 2, n_batch=n_batch, n_dense=n_dense)
    pad = np.broadcast_to(np.array(shape)[sparse], padded.indices.shape[:-2] + (2, len(sparse)))
    np.testing.assert_array_equal(padded.indices[..., -2:, :], pad)
    np.testing.assert_array_equal(padded.todense(), x)
    perm = _perm(shape, n_batch, n_dense)
    np.testing.assert_array_equal(m.transpose(perm).todense(), np.transpose(x, perm))
    for axes in [(0,), (len(shape) - 1,), tuple(range(len(shape)))]:
        np.testing.assert_allclose(fsp.bcoo_reduce_sum(m, axes=axes).todense(), x.sum(axes))
    for v in (2.5, RNG.normal(size=shape), RNG.normal(size=shape[-1:])):
        np.testing.assert_allclose((m * v).todense(), x * v, rtol=1e-14)
        np.testing.assert_allclose((v * m).todense(), x * v, rtol=1e-14)


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS[:2])
def test_layouts_against_jax(shape, n_batch, n_dense):
    x = _dense(shape)
    got = fsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    want = jsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    _same_bcoo(got, want)
    assert repr(got) == repr(want)
    _same_bcoo(
        fsp.bcoo_fromdense(x, nse=7, n_batch=n_batch, n_dense=n_dense),
        jsp.bcoo_fromdense(x, nse=7, n_batch=n_batch, n_dense=n_dense),
    )
    if n_batch == 0:
        return  # (the operations below in the batched layout only: JAX's compiles are slow)
    perm = _perm(shape, n_batch, n_dense)
    _same_bcoo(
        fsp.bcoo_transpose(got, permutation=perm), jsp.bcoo_transpose(want, permutation=perm)
    )
    g, w = fsp.bcoo_reduce_sum(got, axes=(0, 1)), jsp.bcoo_reduce_sum(want, axes=(0, 1))
    assert (g.shape, g.nse, g.n_batch, g.n_dense) == (w.shape, w.nse, w.n_batch, w.n_dense)
    np.testing.assert_allclose(g.todense(), w.todense(), rtol=1e-14)
    np.testing.assert_allclose(got.sum(), want.sum(), rtol=1e-14)
    v = RNG.normal(size=shape[-1:])
    g, w = fsp.bcoo_multiply_dense(got, v), jsp.bcoo_multiply_dense(want, v)
    assert (g.shape, g.dtype) == (w.shape, w.dtype)
    np.testing.assert_allclose(g, w, rtol=1e-14)
    _same_bcoo(got * v, want * v)


def test_dtypes_against_jax():
    with x64_off():
        x = _dense((3, 4), dtype=np.float32)
        got, want = fsp.BCOO.fromdense(x), jsp.BCOO.fromdense(x)
        _same_bcoo(got, want)
        _same_bcoo(
            fsp.bcoo_fromdense(x, index_dtype=np.int16), jsp.bcoo_fromdense(x, index_dtype=np.int16)
        )
        _same_bcoo(got * 2, want * 2)
        v = np.ones(4, np.float32)
        g, w = got @ v, want @ v
        assert (g.shape, g.dtype) == (w.shape, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-6)
        assert got.astype(np.int32).dtype == np.int32 and (-got).dtype == np.float32
        assert (fjnp.asarray(x.T) @ got).dtype == np.float32


def test_construct_from_buffers_sums_duplicates_and_drops_padding():
    data = np.array([1.0, 2.0, 3.0, 4.0])
    idx = np.array([[0, 1], [2, 0], [0, 1], [3, 3]], np.int32)  # a duplicate and a padding row
    got = fsp.BCOO((data, idx), shape=(3, 3))
    want = np.zeros((3, 3))
    np.add.at(want, (idx[:3, 0], idx[:3, 1]), data[:3])
    np.testing.assert_array_equal(got.todense(), want)
    assert (got.ndim, got.size, len(got), got.nse, got.indices_sorted) == (2, 9, 3, 4, False)


def test_transpose_and_multiply_errors_as_jax():
    x = _dense((2, 3, 4))

    def mixing(m):
        return m.bcoo_transpose(_built(m, x, n_batch=1), permutation=(1, 0, 2))

    raises_as_jax(mixing, jsp, fsp, NotImplementedError)
    raises_as_jax(lambda m: _built(m, x).transpose((0, 0, 1)), jsp, fsp, TypeError)
    raises_as_jax(
        lambda m: m.bcoo_multiply_dense(_built(m, x), np.ones((2, 2, 3, 4))),
        jsp,
        fsp,
        NotImplementedError,
    )


def _duplicated(n_batch):
    data = RNG.normal(size=(2,) * n_batch + (6,))
    idx = RNG.integers(0, 3, size=(2,) * n_batch + (6, 2)).astype(np.int32)
    idx[..., 5, :] = 3  # padding
    return data, idx


def test_sort_indices_and_sum_duplicates_against_jax():
    n_batch = 1
    data, idx = _duplicated(n_batch)
    shape = (2,) * n_batch + (3, 3)
    got = fsp.BCOO((data, idx), shape=shape)
    want = _as_jax(got)
    _same_bcoo(fsp.bcoo_sort_indices(got), jsp.bcoo_sort_indices(want))
    _same_bcoo(fsp.bcoo_sum_duplicates(got), jsp.bcoo_sum_duplicates(want))
    np.testing.assert_allclose(got.sum_duplicates().todense(), want.todense(), rtol=1e-12)
    _same_bcoo(got.sum_duplicates(), want.sum_duplicates())


# (lhs shape, n_batch, rhs shape, dimension numbers): all against NumPy, the first two against JAX
DOTS = [
    ((3, 4), 0, (4, 5), (((1,), (0,)), ((), ()))),
    ((2, 3, 4), 1, (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((3, 4), 0, (4,), (((1,), (0,)), ((), ()))),
    ((3, 4), 0, (5, 3), (((0,), (1,)), ((), ()))),
    ((3, 4), 0, (2, 5), (((), ()), ((), ()))),
    ((2, 3, 4), 1, (4, 5), (((2,), (0,)), ((), ()))),
    ((2, 3, 4), 1, (2, 5), (((0,), (0,)), ((), ()))),
    ((2, 3, 4), 2, (3, 4), (((1, 2), (0, 1)), ((), ()))),
]


def _np_dot_general(x, y, dn):
    """``lax.dot_general`` in NumPy float64 (einsum)."""
    (lc, rc), (lb, rb) = dn
    lhs, rhs = list("abcdefg"[: x.ndim]), list("hijklmn"[: y.ndim])
    for i, j in zip((*lc, *lb), (*rc, *rb)):
        rhs[j] = lhs[i]
    out = [lhs[i] for i in lb]
    out += [lhs[i] for i in range(x.ndim) if i not in lc and i not in lb]
    out += [rhs[j] for j in range(y.ndim) if j not in rc and j not in rb]
    return np.einsum(f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}", x, y)


@pytest.mark.parametrize("k", range(len(DOTS)))
def test_dot_general_against_numpy_and_jax(k):
    lshape, n_batch, rshape, dn = DOTS[k]
    x, y = _dense(lshape), RNG.normal(size=rshape)
    (lc, rc), (lb, rb) = dn
    swapped = ((rc, lc), (rb, lb))
    got = fsp.bcoo_dot_general(fsp.BCOO.fromdense(x, n_batch=n_batch), y, dimension_numbers=dn)
    np.testing.assert_allclose(got, _np_dot_general(x, y, dn), rtol=1e-12, atol=1e-14)
    # dense @ sparse: the operands swapped
    got_t = fsp.bcoo_dot_general(
        y, fsp.BCOO.fromdense(x, n_batch=n_batch), dimension_numbers=swapped
    )
    np.testing.assert_allclose(got_t, _np_dot_general(y, x, swapped), rtol=1e-12, atol=1e-14)
    if k < 2:
        sp = _as_jax(fsp.BCOO.fromdense(x, n_batch=n_batch))
        want = jsp.bcoo_dot_general(sp, y, dimension_numbers=dn)
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        want = jsp.bcoo_dot_general(y, sp, dimension_numbers=swapped)
        assert (got_t.shape, got_t.dtype) == (want.shape, want.dtype)


def test_matmul_operators():
    x = _dense((3, 4))
    m = fsp.BCOO.fromdense(x)
    for other in (np.ones(4), RNG.normal(size=(4, 2)), RNG.normal(size=(2, 4, 3))):
        np.testing.assert_allclose(m @ other, x @ other, rtol=1e-12)
    for other in (np.ones(3), RNG.normal(size=(2, 3)), RNG.normal(size=(2, 5, 3))):
        np.testing.assert_allclose(other @ m, other @ x, rtol=1e-12)  # a NumPy lhs defers too
        np.testing.assert_allclose(fjnp.asarray(other) @ m, other @ x, rtol=1e-12)


def test_dot_general_errors_as_jax():
    x, y = _dense((2, 3, 4)), np.ones((2, 4, 5))
    raises_as_jax(lambda m: _built(m, x[0]) @ np.ones(5), jsp, fsp, TypeError)
    raises_as_jax(
        lambda m: m.bcoo_dot_general(
            _built(m, x), y, dimension_numbers=(((2,), (1,)), ((0,), (0,)))
        ),
        jsp,
        fsp,
        NotImplementedError,
    )  # a batch dim that is not a BCOO batch dim
    raises_as_jax(
        lambda m: m.bcoo_dot_general(
            _built(m, x, n_dense=1), y[0], dimension_numbers=(((2,), (0,)), ((), ()))
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
    # fromdense: finite differences would move zeros into the stored set; its derivative is the
    # tangent at the stored positions (JAX's jvp rule)
    t = RNG.normal(size=x.shape)
    got = functx.jvp(lambda x: fsp.BCOO.fromdense(x, nse=sp.nse).data, (x,), (t,))[1]
    np.testing.assert_array_equal(got, t[tuple(np.asarray(idx).T)])
    check_grads(lambda d: fsp.BCOO((d, idx), shape=(3, 4)).todense(), (sp.data,), order=1)
    # the same gradients as JAX's
    jf = jax.grad(lambda d, y: (jsp.BCOO((d, idx), shape=(3, 4)) @ y).sum() ** 2, (0, 1))
    ff = functx.grad(lambda d, y: (fsp.BCOO((d, idx), shape=(3, 4)) @ y).sum() ** 2, (0, 1))
    for g, w in zip(ff(sp.data, y), jf(np.asarray(sp.data), y)):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_jit_and_vmap_through_the_pytree():
    x = _dense((2, 3, 4))
    got = fsp.BCOO.fromdense(x, n_batch=1)
    _same_bcoo(functx.jit(lambda m: m * 2.0)(got), got * 2.0)
    # vmap maps the batch dim as JAX does: the function sees an unbatched BCOO
    shapes = []
    out = functx.vmap(lambda m: shapes.append(m.shape) or m.todense())(got)
    assert shapes == [(3, 4)]
    np.testing.assert_allclose(out, x)
    # a BCOO made inside vmap gains a leading batch dim
    _same_bcoo(
        functx.vmap(lambda r: fsp.BCOO.fromdense(r, nse=4))(x[0]),
        fsp.BCOO.fromdense(x[0], nse=4, n_batch=1),
    )
    np.testing.assert_allclose(
        functx.vmap(lambda m, v: m @ v)(got, RNG.normal(size=(2, 4))).shape, (2, 3)
    )
    # JAX's ValueError for mapping a BCOO without batch dims
    raises_as_jax(
        lambda m: m[0].vmap(lambda a: a.todense())(_built(m[1], x[0])),
        (jax, jsp),
        (functx, fsp),
        ValueError,
    )
    # the default nse needs concrete values (JAX's ConcretizationTypeError, a TypeError)
    raises_as_jax(
        lambda m: m[0].jit(lambda x: m[1].BCOO.fromdense(x))(x),
        (jax, jsp),
        (functx, fsp),
        TypeError,
    )


def test_compiled_against_eager():
    # one jitted program through every operation (its kernels) against the eager interpreter
    data, idx = _duplicated(1)
    x = _dense((2, 3, 4))

    def program(x, data, y):
        m = fsp.bcoo_fromdense(x, nse=6, n_batch=1)
        s = fsp.bcoo_sum_duplicates(fsp.BCOO((data, idx), shape=(2, 3, 3)), nse=4)
        return (
            m.data,
            m.indices,
            s.data,
            s.indices,
            m @ y,
            fsp.bcoo_reduce_sum(m, axes=(1,)).todense(),
        )

    args = (x, data, RNG.normal(size=(2, 4, 5)))
    for got, want in zip(functx.jit(program)(*args), program(*args), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)


def test_empty_eye_todense_against_jax():
    with x64_off():
        for args, kw in [
            ((2, 3), {}),
            ((2, 3, 4), {"n_batch": 1, "nse": 2}),
            ((3,), {"n_dense": 1}),
        ]:
            _same_bcoo(fsp.empty(args, **kw), jsp.empty(args, **kw))
        for n, m, k in [(3, 4, 1), (4, 3, -2), (3, 3, 5)]:
            _same_bcoo(fsp.eye(n, m, k), jsp.eye(n, m, k))
        for kw in ({"n_batch": 1}, {"n_dense": 1}):
            np.testing.assert_array_equal(fsp.eye(3, 4, 1, **kw).todense(), np.eye(3, 4, 1))
        _same_bcoo(fsp.eye(3, dtype=np.int32), jsp.eye(3, dtype=np.int32))
        x = np.ones(3)
        assert fsp.todense(x) is x
        np.testing.assert_array_equal(fsp.todense(fsp.eye(2)), np.eye(2))
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


def test_empty_and_eye_default_dtypes_follow_x64_as_jax():
    for ctx in (x64_on, x64_off):
        with ctx():
            for f, j in ((fsp.eye(3), jsp.eye(3)), (fsp.empty((2, 3)), jsp.empty((2, 3)))):
                assert f.dtype == j.dtype
            _same_bcoo(fsp.eye(3, 4, k=1), jsp.eye(3, 4, k=1))
