"""``functx.experimental.sparse``'s BCSR, COO, CSR and CSC classes, their functions, the
``JAXSparse`` base class and the efficiency error and warnings against
``jax.experimental.sparse``: the stored buffers, dense values, dtypes and shapes, the products
against NumPy float64, gradients against finite differences, ``jit`` and ``vmap`` through the
pytrees, and JAX's errors."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import scipy.sparse
from errutil import raises_as_jax
from jax.experimental import sparse as jsp
from x64util import x64_off

import functx
from functx.experimental import sparse as fsp
from functx.test_util import check_grads

RNG = np.random.default_rng(1)


def _dense(shape, density=0.4, dtype=np.float64):
    x = RNG.normal(size=shape) * (RNG.random(shape) < density)
    return x.astype(dtype)


def _same(got, want, names):
    """Same class name, shape, dtype and buffers ``names`` (exactly)."""
    assert type(got).__name__ == type(want).__name__
    assert got.shape == want.shape and got.nse == want.nse and got.dtype == want.dtype
    for name in names:
        g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_array_equal(g, w, err_msg=name)


BCSR_BUFS = ("data", "indices", "indptr")


def _same_bcsr(got, want):
    _same(got, want, BCSR_BUFS)
    assert (got.n_batch, got.n_sparse, got.n_dense) == (want.n_batch, want.n_sparse, want.n_dense)
    assert (got.indices_sorted, got.unique_indices) == (want.indices_sorted, want.unique_indices)


def _bcsr(module, x, **layout):
    """``module.BCSR`` (functx's or JAX's) of ``x``, from functx's buffers."""
    m = fsp.BCSR.fromdense(x, **layout)
    return module.BCSR(tuple(np.asarray(b) for b in m.tree_flatten()[0]), shape=m.shape)


def _numpy_bcsr(x, nse, n_batch, n_dense):
    """NumPy's BCSR buffers of ``x``: per batch, the nonzero (row, col) positions in row-major
    order, padded with column ``cols`` and zero data; ``indptr`` counts the entries per row."""
    batch, (rows, cols), dense = (
        x.shape[:n_batch],
        x.shape[n_batch : n_batch + 2],
        x.shape[n_batch + 2 :],
    )
    flat = x.reshape((-1, rows, cols) + dense)
    data = np.zeros((len(flat), nse) + dense, x.dtype)
    indices = np.full((len(flat), nse), cols, np.int32)
    indptr = np.zeros((len(flat), rows + 1), np.int32)
    for b, mat in enumerate(flat):
        r, c = np.nonzero(np.any(mat != 0, axis=tuple(range(2, mat.ndim))))
        data[b, : len(r)], indices[b, : len(r)] = mat[r, c], c
        indptr[b, 1:] = np.cumsum(np.bincount(r, minlength=rows))
    return (
        data.reshape(batch + data.shape[1:]),
        indices.reshape(batch + (nse,)),
        indptr.reshape(batch + (rows + 1,)),
    )


# (shape, n_batch, n_dense): each against NumPy (JAX's conventions: test_bcsr_against_jax)
BCSR_LAYOUTS = [((3, 4), 0, 0), ((2, 3, 4), 1, 0), ((3, 4, 2), 0, 1), ((2, 2, 3, 4), 2, 0)]


@pytest.mark.parametrize("shape,n_batch,n_dense", BCSR_LAYOUTS)
def test_bcsr_layouts_against_numpy(shape, n_batch, n_dense):
    x = _dense(shape)
    x[(0,) * n_batch + (1,)] = 0  # an empty row
    layout = {"n_batch": n_batch, "n_dense": n_dense}
    m = fsp.BCSR.fromdense(x, **layout)
    nz = np.any(x != 0, axis=tuple(range(n_batch + 2, x.ndim)))
    assert m.nse == nz.sum(axis=(-2, -1)).max()
    assert (m.n_batch, m.n_sparse, m.n_dense) == (n_batch, 2, n_dense)
    for nse in (m.nse, m.nse + 2):
        got = fsp.bcsr_fromdense(x, nse=nse, **layout)
        for name, want in zip(BCSR_BUFS, _numpy_bcsr(x, nse, n_batch, n_dense), strict=True):
            np.testing.assert_array_equal(getattr(got, name), want, err_msg=name)
        np.testing.assert_array_equal(fsp.bcsr_todense(got), x)
        coo = got.to_bcoo()
        np.testing.assert_array_equal(coo.todense(), x)
        _same(fsp.BCSR.from_bcoo(coo), got, BCSR_BUFS)
        # extract: y at the stored positions, zero elsewhere
        y = RNG.normal(size=shape)
        bufs = got.indices, got.indptr
        extracted = fsp.BCSR((fsp.bcsr_extract(*bufs, y), *bufs), shape=shape).todense()
        np.testing.assert_array_equal(extracted, y * nz.reshape(nz.shape + (1,) * n_dense))
    # from a BCOO whose entries are out of order: sorted first
    coo = m.to_bcoo()
    flip = fsp.BCOO((np.flip(coo.data, n_batch), np.flip(coo.indices, n_batch)), shape=shape)
    _same(fsp.BCSR.from_bcoo(flip), m, BCSR_BUFS)


def _bcsr_program(sp, x, y, bufs):
    """The BCSR buffers each library's functions give (JAX's run as one jitted program: its
    eager sparse operations compile each of their steps, seconds per call)."""
    padded = sp.bcsr_fromdense(x, nse=8, n_batch=1)
    summed = sp.bcsr_sum_duplicates(sp.BCSR(bufs, shape=(2, 2, 3)), nse=3)
    extracted = sp.bcsr_extract(padded.indices, padded.indptr, y)
    return padded, padded.to_bcoo().indices, extracted, summed


def test_bcsr_against_jax():
    x, y = _dense((2, 3, 4)), RNG.normal(size=(2, 3, 4))
    x[0, 1] = 0
    bufs = _DUPLICATES
    got = _bcsr_program(fsp, x, y, bufs)
    want = jax.jit(lambda *a: _bcsr_program(jsp, *a))(x, y, bufs)
    for g, w in zip(got, want, strict=True):
        if isinstance(w, jsp.BCSR):
            _same_bcsr(g, w)
            assert repr(g) == repr(w)
        else:
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    with x64_off():  # the dtypes: index_dtype, float32 data times int32
        x = x.astype(np.float32)

        def typed(sp, x, y):
            m = sp.bcsr_fromdense(x, nse=8, n_batch=1, index_dtype=np.int16)
            empty = sp.empty((2, 3, 4), sparse_format="bcsr", n_batch=1, nse=2)
            return m, m @ y, empty

        y = np.ones((4, 2), np.int32)
        got = typed(fsp, x, y)
        want = jax.jit(lambda *a: typed(jsp, *a))(x, y)
        _same_bcsr(got[0], want[0])
        _same_bcsr(got[2], want[2])
        assert (got[1].shape, got[1].dtype) == (want[1].shape, want[1].dtype)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)


# two batches of 2 x 3: duplicates, a lone explicit zero at [1, 0, 1], and padding entries
# (column 3) inside and past the row pointers
_DUPLICATES = (
    np.array([[1.0, 2.0, 3.0, 4.0, 5.0], [0.0, 1.0, 2.0, 3.0, 4.0]]),
    np.array([[2, 2, 2, 1, 3], [1, 2, 0, 3, 0]], np.int32),
    np.array([[0, 3, 4], [0, 2, 4]], np.int32),
)


def test_bcsr_sum_duplicates_against_numpy():
    got = fsp.BCSR(_DUPLICATES, shape=(2, 2, 3))
    dense = np.asarray(got.todense())
    np.testing.assert_array_equal(dense, [[[0, 0, 6], [0, 4, 0]], [[0, 0, 1], [2, 0, 0]]])
    for out, nse in [
        (fsp.bcsr_sum_duplicates(got), 3),
        (fsp.bcsr_sum_duplicates(got, nse=4), 4),
        (got.sum_duplicates(), 2),  # the zero dropped
        (got.sum_duplicates(remove_zeros=False), 3),
    ]:
        assert out.nse == nse
        np.testing.assert_array_equal(out.todense(), dense)
        rows = np.asarray(out.to_bcoo().indices)  # sorted and unique per batch
        for b in range(2):
            keys = [tuple(r) for r in rows[b] if r[1] < 3]
            assert keys == sorted(set(keys))


def _shape_program(sp, x, y, nse_x, nse_y):
    m, b = sp.bcsr_fromdense(x, nse=nse_x), sp.bcsr_fromdense(y, nse=nse_y, n_batch=1)
    return (
        sp.bcsr_broadcast_in_dim(m, shape=(2, 3, 4), broadcast_dimensions=(1, 2)),
        sp.bcsr_concatenate([m, m], dimension=0),
        sp.bcsr_concatenate([m, m], dimension=1),
        sp.bcsr_concatenate([b, b], dimension=0),
    )


@pytest.mark.skipif(
    not hasattr(fsp.bcoo, "bcoo_concatenate"),
    reason="bcsr_broadcast_in_dim and bcsr_concatenate call sparse36a's BCOO operations",
)
def test_bcsr_broadcast_and_concatenate_against_jax():
    x, y = _dense((3, 4)), _dense((2, 3, 4))
    nse = np.count_nonzero(x) + 1, max(np.count_nonzero(r) for r in y) + 1  # one padding entry
    got = _shape_program(fsp, x, y, *nse)
    want = jax.jit(lambda *a: _shape_program(jsp, *a, *nse))(x, y)
    dense = [np.broadcast_to(x, (2, 3, 4)), np.concatenate([x, x], 0), np.concatenate([x, x], 1)]
    dense.append(np.concatenate([y, y], 0))
    for g, w, d in zip(got, want, dense, strict=True):
        assert (g.shape, g.nse, g.n_batch) == (w.shape, w.nse, w.n_batch)
        np.testing.assert_array_equal(g.todense(), d)
        np.testing.assert_array_equal(w.todense(), d)


DOT_CASES = [  # (lhs shape, n_batch, n_dense, rhs shape, dimension numbers)
    ((3, 4), 0, 0, (4,), (((1,), (0,)), ((), ()))),
    ((3, 4), 0, 0, (4, 5), (((1,), (0,)), ((), ()))),
    ((3, 4), 0, 0, (3, 5), (((0,), (0,)), ((), ()))),
    ((2, 3, 4), 1, 0, (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    ((3, 4, 2), 0, 1, (4,), (((1,), (0,)), ((), ()))),
]


@pytest.mark.parametrize("k", range(len(DOT_CASES)))
def test_bcsr_dot_general_against_numpy(k):
    shape, n_batch, n_dense, rshape, dn = DOT_CASES[k]
    x, y = _dense(shape), RNG.normal(size=rshape)
    nse = fsp.BCSR.fromdense(x, n_batch=n_batch, n_dense=n_dense).nse + 2
    m = fsp.bcsr_fromdense(x, nse=nse, n_batch=n_batch, n_dense=n_dense)
    want = np.tensordot(x, y, (dn[0][0], dn[0][1])) if not dn[1][0] else np.matmul(x, y)
    np.testing.assert_allclose(fsp.bcsr_dot_general(m, y, dimension_numbers=dn), want, rtol=1e-12)
    if dn[0] == ((x.ndim - 1,), (max(y.ndim - 2, 0),)):
        np.testing.assert_allclose(m @ y, np.matmul(x, y), rtol=1e-12)


def test_bcsr_grads_against_finite_differences():
    x = _dense((3, 4))
    m = fsp.bcsr_fromdense(x, nse=7)
    bufs = m.indices, m.indptr

    def product(data, y):
        return fsp.BCSR((data, *bufs), shape=(3, 4)) @ y

    check_grads(product, (m.data, RNG.normal(size=(4, 2))), order=1, modes=("fwd", "rev"))
    check_grads(lambda d: fsp.BCSR((d, *bufs), shape=(3, 4)).todense(), (m.data,), order=1)
    check_grads(lambda y: fsp.bcsr_extract(*bufs, y), (RNG.normal(size=(3, 4)),), order=1)
    # fromdense: the tangent at the stored positions (a perturbation would move the nonzeros,
    # so no finite differences), as JAX's jvp rule gives
    t = RNG.normal(size=(3, 4))
    _, dt = functx.jvp(lambda x: fsp.bcsr_fromdense(x, nse=7).data, (x,), (t,))
    np.testing.assert_array_equal(dt, fsp.bcsr_extract(*bufs, t))
    _, dt = functx.jvp(lambda x: fsp.coo_fromdense(x, nse=7).data, (x,), (t,))
    coo = fsp.coo_fromdense(x, nse=7)
    np.testing.assert_array_equal(
        dt, np.where(np.arange(7) < np.count_nonzero(x), t[coo.row, coo.col], 0)
    )


def test_bcsr_jit_and_vmap_through_the_pytree():
    x = _dense((2, 3, 4))
    got = fsp.BCSR.fromdense(x, n_batch=1)
    shapes = []
    out = functx.vmap(lambda m: shapes.append(m.shape) or m.todense())(got)
    assert shapes == [(3, 4)]
    np.testing.assert_array_equal(out, x)
    made = functx.vmap(lambda r: fsp.BCSR.fromdense(r, nse=5))(x)
    _same_bcsr(made, fsp.BCSR.fromdense(x, nse=5, n_batch=1))
    y = RNG.normal(size=(2, 4))
    np.testing.assert_allclose(
        functx.vmap(lambda m, v: m @ v)(got, y), np.einsum("bij,bj->bi", x, y)
    )

    def program(x, y):
        m = fsp.bcsr_fromdense(x, nse=6, n_batch=1)
        s = fsp.bcsr_sum_duplicates(m, nse=6)
        return m.data, m.indices, m.indptr, s.data, s.indptr, m @ y, m.todense()

    args = (x, RNG.normal(size=(2, 4, 5)))
    for g, w in zip(functx.jit(program)(*args), program(*args), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-14)
    raises_as_jax(
        lambda m: m[0].vmap(lambda a: a.todense())(_bcsr(m[1], x[0])),
        (jax, jsp),
        (functx, fsp),
        ValueError,
    )


def test_bcsr_errors_as_jax():
    x = _dense((3, 4))
    bad = [
        ((np.ones(3), np.zeros(4, np.int32), np.zeros(4, np.int32)), (3, 4)),  # data length
        ((np.ones(3), np.zeros(3, np.int32), np.zeros(3, np.int32)), (3, 4)),  # indptr length
        ((np.ones((2, 3)), np.zeros((3, 3), np.int32), np.zeros((3, 4), np.int32)), (3, 3, 4)),
    ]
    for bufs, shape in bad:
        raises_as_jax(lambda m: m.BCSR(bufs, shape=shape), jsp, fsp, ValueError)
    raises_as_jax(lambda m: m.bcsr_fromdense(np.ones((2, 3, 4)), nse=3), jsp, fsp, ValueError)
    raises_as_jax(lambda m: _bcsr(m, x).T, jsp, fsp, NotImplementedError)
    raises_as_jax(
        lambda m: m.BCSR.from_bcoo(m.BCOO((np.ones(2), np.zeros((2, 1), np.int32)), shape=(3,))),
        jsp,
        fsp,
        NotImplementedError,
    )
    raises_as_jax(
        lambda m: m.bcsr_dot_general(
            np.ones((2, 3)), _bcsr(m, x), dimension_numbers=(((1,), (0,)), ((), ()))
        ),
        jsp,
        fsp,
        NotImplementedError,
    )
    raises_as_jax(lambda m: _bcsr(m, x) + 1.0, jsp, fsp, NotImplementedError)
    raises_as_jax(
        lambda m: m[0].jit(lambda x: m[1].BCSR.fromdense(x))(x),
        (jax, jsp),
        (functx, fsp),
        TypeError,
    )


# -- COO, CSR, CSC -------------------------------------------------------------------------------

FORMATS = {"COO": ("data", "row", "col"), "CSR": BCSR_BUFS, "CSC": BCSR_BUFS}


def _formats_program(sp, x, y):
    out = {}
    for name in FORMATS:
        fmt = name.lower()
        m = getattr(sp, name).fromdense(x, nse=10)
        out[name] = (m, m.T, m @ y, sp.eye(3, 5, -1, dtype=np.int32, sparse_format=fmt))
        out[name] += (sp.empty((2, 3), sparse_format=fmt),)
    return out


def test_coo_csr_csc_against_jax():
    with x64_off():
        x = _dense((4, 5), dtype=np.float32)
        x[1] = 0
        y = np.ones((5, 2), np.int32)
        got = _formats_program(fsp, x, y)
        want = jax.jit(lambda *a: _formats_program(jsp, *a))(x, y)
        for name in FORMATS:
            (m, t, prod, eye, empty), (jm, jt, jprod, jeye, jempty) = got[name], want[name]
            for g, w in [(m, jm), (t, jt), (eye, jeye), (empty, jempty)]:
                _same(g, w, FORMATS[name])
                assert repr(g) == repr(w) and g.tree_flatten()[1] == w.tree_flatten()[1]
            assert (prod.shape, prod.dtype) == (jprod.shape, jprod.dtype)
            np.testing.assert_allclose(prod, jprod, rtol=1e-6)


def test_constructor_dtypes_follow_x64_as_jax():
    # (the suite runs with x64 on: the default float is float64, as JAX's jnp.zeros gives)
    for fmt in ("bcsr", "coo", "csr", "csc"):
        got, want = fsp.empty((2, 3), sparse_format=fmt), jsp.empty((2, 3), sparse_format=fmt)
        assert got.dtype == want.dtype == np.float64
        if fmt != "bcsr":
            got, want = fsp.eye(2, sparse_format=fmt), jsp.eye(2, sparse_format=fmt)
            assert got.dtype == want.dtype == np.float64


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_coo_csr_csc_against_numpy(name):
    x = _dense((4, 5))
    x[1] = 0
    cls = getattr(fsp, name)
    got = cls.fromdense(x)
    assert got.nse == np.count_nonzero(x)
    for m in (got, cls.fromdense(x, nse=got.nse + 3)):
        np.testing.assert_array_equal(m.todense(), x)
        np.testing.assert_array_equal(m.T.todense(), x.T)
        np.testing.assert_array_equal(fsp.todense(m), x)
        for y in (RNG.normal(size=5), RNG.normal(size=(5, 2))):
            np.testing.assert_allclose(m @ y, x @ y, rtol=1e-12)
    for n, m, k in [(4, 5, 0), (4, 5, 1), (3, 5, -1), (3, 3, 4)]:
        eye = fsp.eye(n, m, k, sparse_format=name.lower())
        np.testing.assert_array_equal(eye.todense(), np.eye(n, m, k))


@pytest.mark.parametrize("fmt", ["coo", "csr"])
def test_matvec_matmat_against_numpy(fmt):
    x = _dense((4, 5))
    m = getattr(fsp, f"{fmt}_fromdense")(x, nse=np.count_nonzero(x) + 2)  # two padding entries
    np.testing.assert_array_equal(getattr(fsp, f"{fmt}_todense")(m), x)
    matvec, matmat = getattr(fsp, f"{fmt}_matvec"), getattr(fsp, f"{fmt}_matmat")
    for transpose, a in [(False, x), (True, x.T)]:
        v, b = RNG.normal(size=a.shape[1]), RNG.normal(size=(a.shape[1], 3))
        np.testing.assert_allclose(matvec(m, v, transpose), a @ v, rtol=1e-12)
        np.testing.assert_allclose(matmat(m, b, transpose=transpose), a @ b, rtol=1e-12)
    # entries at one position add up
    dup = fsp.COO((np.array([1.0, 2.0]), np.array([0, 0]), np.array([1, 1])), shape=(2, 2))
    np.testing.assert_array_equal(fsp.coo_todense(dup), [[0.0, 3.0], [0.0, 0.0]])


def test_coo_sort_indices_and_bcsr_from_scipy():
    data, row, col = RNG.normal(size=6), np.array([2, 0, 1, 0, 2, 1]), np.array([1, 3, 0, 1, 0, 0])
    m = fsp.COO((data, row, col), shape=(3, 4))
    s = m._sort_indices()
    order = np.lexsort((col, row))  # by row, then column; the tie (1, 0) keeps its order
    for name, want in [("data", data[order]), ("row", row[order]), ("col", col[order])]:
        np.testing.assert_array_equal(getattr(s, name), want)
    assert s._rows_sorted and s._sort_indices() is s
    np.testing.assert_array_equal(s.todense(), m.todense())
    x = _dense((4, 5))
    got = fsp.BCSR.from_scipy_sparse(scipy.sparse.csr_matrix(x))
    _same(got, fsp.BCSR.fromdense(x), BCSR_BUFS)
    raises_as_jax(
        lambda m: m.BCSR.from_scipy_sparse(scipy.sparse.csr_matrix(x), n_batch=1),
        jsp,
        fsp,
        NotImplementedError,
    )


def test_coo_csr_grads_jit_vmap():
    x = _dense((4, 5))
    nse = np.count_nonzero(x) + 2  # two padding entries
    csr, coo = fsp.csr_fromdense(x, nse=nse), fsp.coo_fromdense(x, nse=nse)
    v = RNG.normal(size=5)

    def f(data, v):
        return fsp.csr_matvec(fsp.CSR((data, csr.indices, csr.indptr), shape=(4, 5)), v)

    check_grads(f, (csr.data, v), order=1, modes=("fwd", "rev"))
    check_grads(
        lambda d, b: fsp.coo_matmat(
            fsp.COO((d, coo.row, coo.col), shape=(4, 5)), b, transpose=True
        ),
        (coo.data, RNG.normal(size=(4, 2))),
        order=1,
    )
    # functx's gradient at a padding entry is 0 (its value reads nowhere); JAX's scatter
    # transposes to a clamped gather and gives the last row's cotangent there
    g = functx.grad(lambda d: f(d, v).sum())(csr.data)
    assert np.all(np.asarray(g)[csr.indptr[-1] :] == 0)
    np.testing.assert_allclose(functx.jit(f)(csr.data, v), x @ v, rtol=1e-12)
    vs = RNG.normal(size=(3, 5))
    np.testing.assert_allclose(functx.vmap(lambda v: csr @ v)(vs), vs @ x.T, rtol=1e-12)
    np.testing.assert_allclose(functx.jit(lambda m, v: m @ v)(coo, v), x @ v, rtol=1e-12)


def _from_buffers(module, name, x):
    """``module``'s ``name`` matrix (COO, CSR, CSC) of ``x``, from functx's buffers."""
    m = getattr(fsp, name).fromdense(x)
    return getattr(module, name)(tuple(np.asarray(b) for b in m.tree_flatten()[0]), shape=m.shape)


def test_coo_csr_errors_as_jax():
    x = _dense((3, 4))
    for name in FORMATS:
        for bad in (lambda m: m @ np.ones((4, 2, 2)), lambda m: m @ m, lambda m: m * 2.0):
            raises_as_jax(lambda m: bad(_from_buffers(m, name, x)), jsp, fsp, NotImplementedError)
        raises_as_jax(
            lambda m: m.empty((2, 3, 4), sparse_format=name.lower()), jsp, fsp, ValueError
        )
        # transpose with axes: JAX's COO raises NotImplementedError, its CSR and CSC assert
        with pytest.raises(NotImplementedError):
            _from_buffers(fsp, name, x).transpose((1, 0))
    raises_as_jax(
        lambda m: _from_buffers(m, "COO", x).transpose((1, 0)), jsp, fsp, NotImplementedError
    )
    raises_as_jax(
        lambda m: m[0].jit(lambda x: m[1].coo_fromdense(x))(x), (jax, jsp), (functx, fsp), TypeError
    )
    # where JAX's abstract evaluation asserts, functx says what is wrong
    with pytest.raises(functx.errors.FunctxValueError, match="operand of shape"):
        fsp.csr_matvec(fsp.CSR.fromdense(x), np.ones(3))
    with pytest.raises(functx.errors.FunctxTypeError, match="dtype"):
        fsp.coo_matvec(fsp.COO.fromdense(x), np.ones(4, np.int32))
    with pytest.raises(functx.errors.FunctxValueError, match="indptr"):
        fsp.csr_todense(
            fsp.CSR((np.ones(2), np.zeros(2, np.int32), np.zeros(3, np.int32)), shape=(3, 3))
        )


def test_base_class_and_warnings_as_jax():
    x = _dense((3, 4))
    for m in (
        fsp.BCOO.fromdense(x),
        fsp.BCSR.fromdense(x),
        fsp.COO.fromdense(x),
        fsp.CSC.fromdense(x),
    ):
        assert isinstance(m, fsp.JAXSparse)
        assert (m.ndim, m.size, len(m)) == (2, 12, m.shape[0])
        assert m.block_until_ready() is m
        np.testing.assert_array_equal(fsp.todense(m), m.todense())
    with pytest.raises(TypeError):
        fsp.JAXSparse((), shape=(2,))
    for name, base in [
        ("SparseEfficiencyError", ValueError),
        ("SparseEfficiencyWarning", UserWarning),
        ("CuSparseEfficiencyWarning", "SparseEfficiencyWarning"),
    ]:
        base_f, base_j = (getattr(m, base) if isinstance(base, str) else base for m in (fsp, jsp))
        assert issubclass(getattr(fsp, name), base_f) and issubclass(getattr(jsp, name), base_j)
    assert issubclass(fsp.SparseEfficiencyError, functx.errors.FunctxError)
    for sub in ("api", "bcoo", "bcsr", "coo", "csr", "util", "linalg"):
        assert getattr(fsp, sub).__name__ == f"functx.experimental.sparse.{sub}"
    assert (fsp.api.empty, fsp.api.eye, fsp.api.todense) == (fsp.empty, fsp.eye, fsp.todense)
    # JAX's eye has no BCSR (a KeyError there)
    with pytest.raises(functx.errors.FunctxValueError, match="no sparse_format='bcsr' eye"):
        fsp.eye(3, sparse_format="bcsr")
