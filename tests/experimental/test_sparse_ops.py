"""The BCOO shape operations, sparse products, ``sparsify`` and the sparse-aware derivatives of
``functx.experimental.sparse`` against ``jax.experimental.sparse`` (exact buffers: data,
indices, nse, layout, flags) and NumPy float64 (dense values over every layout), with
gradients against finite differences, ``jit``, ``vmap`` and JAX's errors."""

from __future__ import annotations

import itertools
import warnings

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from errutil import raises_as_jax
from jax.experimental import sparse as jsp
from test_sparse import LAYOUTS, _dense, _same_bcoo
from x64util import x64_off

import functx
import functx.numpy as fjnp
from functx import lax as flax
from functx.experimental import sparse as fsp
from functx.test_util import check_grads

RNG = np.random.default_rng(1)


def _pair(x, **layout):
    """functx's BCOO of ``x`` and JAX's BCOO of the same buffers and flags."""
    m = fsp.BCOO.fromdense(x, **layout)
    return m, _pair_of(jsp, m)


def _pair_of(module, m):
    """``m`` itself (functx) or JAX's BCOO of its buffers and flags."""
    if module is fsp:
        return m
    bufs = (np.asarray(m.data), np.asarray(m.indices))
    flags = {"indices_sorted": m.indices_sorted, "unique_indices": m.unique_indices}
    return jsp.BCOO(bufs, shape=m.shape, **flags)


def _jit(call, *args):
    """``call(*args)`` with JAX's functions inside one ``jax.jit``: one compile, where JAX's
    eager sparse operations compile each primitive (seconds per test on the CI machine)."""
    return jax.jit(call)(*args)


def _same_layout(got, want):
    """Same shape, nse and layout, the same dense value; the buffers may differ in padding."""
    assert (got.shape, got.nse, got.n_batch, got.n_dense, got.dtype) == (
        want.shape,
        want.nse,
        want.n_batch,
        want.n_dense,
        want.dtype,
    )
    rtol = 1e-13 if got.dtype == np.float64 else 1e-6
    np.testing.assert_allclose(got.todense(), want.todense(), rtol=rtol, atol=rtol / 100)


def _ops(shape, n_batch, n_dense):
    """(name, call(module, mat)) for each shape operation, with arguments fitting the layout."""
    nd = len(shape)
    # (the slices keep most sparse positions: JAX's nse-trimming path compiles for seconds, and
    # is compared once, in test_slice_trims_nse_as_jax)
    step = [2] + [1] * (nd - 1)
    sizes = [shape[0] - 1, *shape[1:]]
    ops = [
        (
            "slice",
            lambda m, a: m.bcoo_slice(a, start_indices=[1] * nd, limit_indices=shape, strides=step),
        ),
        ("dynamic_slice", lambda m, a: m.bcoo_dynamic_slice(a, [-1] + [0] * (nd - 1), sizes)),
        ("rev", lambda m, a: m.bcoo_rev(a, tuple(range(nd)))),
        (
            "broadcast_in_dim",
            lambda m, a: m.bcoo_broadcast_in_dim(
                a, shape=(2, *shape), broadcast_dimensions=tuple(range(1, nd + 1))
            ),
        ),
    ]
    for d in range(nd - n_dense):
        ops.append((f"concatenate{d}", lambda m, a, d=d: m.bcoo_concatenate([a, a], dimension=d)))
    return ops


def test_shape_ops_against_jax():
    got, want = _pair(_dense((3, 4, 5), dtype=np.float32), n_batch=1)
    for _, op in _ops((3, 4, 5), 1, 0):
        _same_bcoo(op(fsp, got), _jit(lambda a, op=op: op(jsp, a), want))
    got, want = _pair(_dense((4, 5), dtype=np.float32))
    for new, dims in [((1, 20), None), ((5, 2, 2), (1, 0))]:
        _same_bcoo(
            fsp.bcoo_reshape(got, new_sizes=new, dimensions=dims),
            _jit(lambda a: jsp.bcoo_reshape(a, new_sizes=new, dimensions=dims), want),
        )
    # squeeze: a size-1 dim of each group
    got, want = _pair(_dense((1, 3, 1, 1), dtype=np.float32), n_batch=1, n_dense=1)
    _same_bcoo(
        fsp.bcoo_squeeze(got, dimensions=(0, 2, -1)),
        _jit(lambda a: jsp.bcoo_squeeze(a, dimensions=(0, 2, -1)), want),
    )


def test_slice_trims_nse_as_jax():
    # a window with fewer positions than nse: the duplicates summed down to that many entries
    got, want = _pair(_dense((4, 5), density=0.8, dtype=np.float32))
    kw = {"start_indices": (1, 1), "limit_indices": (4, 4), "strides": (2, 1)}
    g = fsp.bcoo_slice(got, **kw)
    assert g.nse == 6 < got.nse
    _same_bcoo(g, _jit(lambda a: jsp.bcoo_slice(a, **kw), want))


@pytest.mark.parametrize("shape,n_batch,n_dense", LAYOUTS)
def test_shape_ops_against_numpy(shape, n_batch, n_dense):
    x = _dense(shape)
    m = fsp.BCOO.fromdense(x, n_batch=n_batch, n_dense=n_dense)
    nd = len(shape)
    for name, op in _ops(shape, n_batch, n_dense):
        want = {
            "slice": lambda: x[(slice(1, None, 2),) + (slice(1, None),) * (nd - 1)],
            "dynamic_slice": lambda: x[-(shape[0] - 1) :],
            "rev": lambda: x[(slice(None, None, -1),) * nd],
            "broadcast_in_dim": lambda: np.broadcast_to(x, (2, *shape)),
        }.get(name, lambda: np.concatenate([x, x], int(name[-1])))()
        np.testing.assert_array_equal(op(fsp, m).todense(), want, err_msg=name)
    # a window with fewer sparse positions than nse, at wrapped and clamped starts
    sizes = [max(1, s - 2) for s in shape]
    for start in ([1] * nd, [-1] * nd):
        got = fsp.bcoo_dynamic_slice(m, start, sizes)
        want = jax.lax.dynamic_slice(x, start, sizes)
        np.testing.assert_array_equal(got.todense(), want)
    # reshape within the groups (the sparse dims merged into one)
    nb, ns = n_batch, nd - n_batch - n_dense
    new = (*shape[:nb], int(np.prod(shape[nb : nb + ns])), *shape[nb + ns :])
    got = fsp.bcoo_reshape(m, new_sizes=new)
    np.testing.assert_array_equal(got.todense(), x.reshape(new))
    # every layout change
    for b, d in itertools.product(range(nd + 1), repeat=2):
        if b + d <= nd:
            got = fsp.bcoo_update_layout(m, n_batch=b, n_dense=d, on_inefficient=None)
            assert (got.n_batch, got.n_dense) == (b, d)
            np.testing.assert_array_equal(got.todense(), x)


def test_update_layout_against_jax():
    got, want = _pair(_dense((3, 4, 2), dtype=np.float32), n_batch=1, n_dense=1)
    # each of the four moves: dense -> sparse, batch -> sparse, sparse -> dense, sparse -> batch
    for b, d in [(1, 0), (0, 1), (0, 3), (3, 0)]:
        kw = {"n_batch": b, "n_dense": d, "on_inefficient": None}
        _same_bcoo(
            fsp.bcoo_update_layout(got, **kw), _jit(lambda a: jsp.bcoo_update_layout(a, **kw), want)
        )
    _same_bcoo(got.update_layout(n_batch=0), _jit(lambda a: a.update_layout(n_batch=0), want))
    raises_as_jax(
        lambda m: m.bcoo_update_layout(_pair_of(m, got), n_batch=2),
        jsp,
        fsp,
        ValueError,
    )
    with pytest.raises(fsp.SparseEfficiencyError, match="inefficient storage"):
        fsp.bcoo_update_layout(got, n_batch=2)
    assert issubclass(fsp.SparseEfficiencyError, ValueError)
    with pytest.warns(fsp.SparseEfficiencyWarning):
        fsp.bcoo_update_layout(got, n_dense=2, on_inefficient="warn")
    for kw in ({"n_batch": -1}, {"n_dense": 4}, {"n_batch": 0, "on_inefficient": "loud"}):
        raises_as_jax(
            lambda m, kw=kw: m.bcoo_update_layout(_pair_of(m, got), **kw), jsp, fsp, ValueError
        )


def test_shape_op_errors_as_jax():
    x = _dense((3, 4, 2))
    m = fsp.BCOO.fromdense(x, n_dense=1)
    cases = [
        (
            lambda s, a: s.bcoo_slice(a, start_indices=(0, 0, 0), limit_indices=(4, 4, 2)),
            ValueError,
        ),
        (lambda s, a: s.bcoo_slice(a, start_indices=(0, 0), limit_indices=(3, 4)), ValueError),
        (
            lambda s, a: s.bcoo_slice(
                a, start_indices=(0,) * 3, limit_indices=(3, 4, 2), strides=(0, 1, 1)
            ),
            ValueError,
        ),
        (lambda s, a: s.bcoo_dynamic_slice(a, (0, 0, 0), (4, 1, 1)), TypeError),
        (lambda s, a: s.bcoo_rev(a, (3,)), TypeError),
        (lambda s, a: s.bcoo_squeeze(a, dimensions=(0,)), ValueError),
        (lambda s, a: s.bcoo_reshape(a, new_sizes=(6, 4)), ValueError),
        (lambda s, a: s.bcoo_concatenate([a, a], dimension=2), NotImplementedError),
        (lambda s, a: s.bcoo_concatenate([a, np.ones((3, 4, 2))], dimension=0), ValueError),
        (
            lambda s, a: s.bcoo_broadcast_in_dim(
                a, shape=(3, 2, 4, 2), broadcast_dimensions=(0, 2, 3)
            ),
            NotImplementedError,
        ),
        (lambda s, a: s.bcoo_multiply_sparse(a, s.bcoo_reduce_sum(a, axes=(0,))), TypeError),
        (
            lambda s, a: s.bcoo_multiply_sparse(a, s.bcoo_update_layout(a, n_dense=0)),
            NotImplementedError,
        ),
    ]
    for call, cls in cases:
        raises_as_jax(lambda s, call=call: call(s, _pair_of(s, m)), jsp, fsp, cls)
    with pytest.raises(TypeError):
        fsp.bcoo_slice(x, start_indices=(0,) * 3, limit_indices=x.shape)


def test_multiply_sparse_against_jax():
    # (lhs shape, rhs shape, their n_batch, n_dense): broadcasting, unequal batch dims, dense dims
    cases = [
        ((3, 4), (3, 4), (0, 0), 0),
        ((2, 3, 4), (2, 1, 4), (1, 0), 0),
        ((3, 4, 2), (3, 4, 2), (1, 1), 1),
    ]
    xs, pairs = [], []
    for lshape, rshape, n_batch, n_dense in cases:
        x, y = _dense(lshape, dtype=np.float32), _dense(rshape, dtype=np.float32)
        xs.append((x, y))
        pairs.append([_pair(v, n_batch=nb, n_dense=n_dense) for v, nb in zip((x, y), n_batch)])
    wants = _jit(
        lambda ps: [jsp.bcoo_multiply_sparse(a, b) for a, b in ps],
        [(ja, jb) for (_, ja), (_, jb) in pairs],
    )  # (one compile)
    for ((a, _), (b, _)), (x, y), want in zip(pairs, xs, wants, strict=True):
        got = fsp.bcoo_multiply_sparse(a, b)
        _same_layout(got, want)
        np.testing.assert_allclose(got.todense(), x * y, rtol=1e-6)
        _same_layout(a * b, got)


def test_dot_general_sampled_against_jax_and_grads():
    A, B = RNG.normal(size=(2, 3, 4)), RNG.normal(size=(2, 4, 5))
    dn = (((2,), (1,)), ((0,), (0,)))
    ind = fsp.BCOO.fromdense(_dense((2, 3, 5)), n_batch=1).indices
    got = fsp.bcoo_dot_general_sampled(A, B, ind, dimension_numbers=dn)
    want = _jit(
        lambda a, b, i: jsp.bcoo_dot_general_sampled(a, b, i, dimension_numbers=dn),
        A,
        B,
        np.asarray(ind),
    )
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_grads(
        lambda a, b: fsp.bcoo_dot_general_sampled(a, b, ind, dimension_numbers=dn),
        (A, B),
        order=1,
        modes=("rev",),
    )


def test_gather_and_indexing():
    x = _dense((4, 5, 3))
    got, want = _pair(x.astype(np.float32), n_batch=1)
    dn = dict(offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0,))
    idx = np.array([[2], [0], [3]], np.int32)
    _same_bcoo(
        fsp.bcoo_gather(got, idx, flax.GatherDimensionNumbers(**dn), (1, 5, 3)),
        _jit(
            lambda a: jsp.bcoo_gather(a, idx, jax.lax.GatherDimensionNumbers(**dn), (1, 5, 3)), want
        ),
    )
    raises_as_jax(
        lambda s: s.bcoo_gather(
            _pair_of(s, got),
            idx,
            (flax if s is fsp else jax.lax).GatherDimensionNumbers(**dn),
            (1, 5, 3),
            mode="fill",
        ),
        jsp,
        fsp,
        NotImplementedError,
    )
    # indexing: each against NumPy, one against JAX's layout
    m = fsp.BCOO.fromdense(x)
    for idx in [
        1,
        (slice(1, 3),),
        (slice(None), None),
        (slice(None, None, -1), 2),
        (np.array([0, 2]),),
        (1, slice(2, 4)),
        (Ellipsis, 1),
        (np.array([[0, 2]]), np.array([[1], [3]])),
    ]:
        np.testing.assert_array_equal(fsp.todense(m[idx]), x[idx], err_msg=str(idx))
    _same_layout(m[1, 2:4], _jit(lambda a: a[1, 2:4], _pair_of(jsp, m)))
    rows = list(m)
    assert len(rows) == 4 and all(isinstance(r, fsp.BCOO) for r in rows)
    np.testing.assert_array_equal(rows[3].todense(), x[3])


def test_bcoo_methods_against_numpy():
    x, y = _dense((3, 4)), _dense((3, 4))
    m, n = fsp.BCOO.fromdense(x), fsp.BCOO.fromdense(y)
    np.testing.assert_array_equal(m.reshape(2, -1).todense(), x.reshape(2, -1))
    np.testing.assert_array_equal(m.reshape((12,)).todense(), x.reshape(12))
    for got, want in [
        (m + n, x + y),
        (m - n, x - y),
        (m * n, x * y),
        (m / 2.0, x / 2),
        (m**2, x**2),
        (abs(m), abs(x)),
        (+m, x),
        (m + np.ones((3, 4)), x + 1),
    ]:
        np.testing.assert_allclose(fsp.todense(got), want, rtol=1e-14)
    assert isinstance(m + n, fsp.BCOO) and (m + n).nse == m.nse + n.nse
    raises_as_jax(lambda s: _pair_of(s, m) + 1.0, jsp, fsp, NotImplementedError)
    raises_as_jax(lambda s: _pair_of(s, m) - np.ones((3, 4)), jsp, fsp, NotImplementedError)
    raises_as_jax(lambda s: 1.0 / _pair_of(s, m), jsp, fsp, NotImplementedError)


# functions of (numpy module, x, v), run by sparsify on a BCOO x and a dense v
SPARSIFIED = [
    lambda np_, x, v: np_.sin(x) @ v + 1.0,
    lambda np_, x, v: (x * x).sum(0) * v[0],
    lambda np_, x, v: np_.concatenate([x, -x], 1).T,
    lambda np_, x, v: np_.abs(x).reshape(20)[3:11] * 2.0,
    lambda np_, x, v: np_.expand_dims(np_.sqrt(x * x), 0).sum((0, 2)),
    lambda np_, x, v: (x.astype(np.float32) / 4.0)[::-1, 1:] ** 3,
    lambda np_, x, v: x[np.array([0, 2])] @ v,
    # NumPy-style broadcasts of a sparse operand of +, *: JAX's binary rules stretch size-1 axes
    lambda np_, x, v: x.sum(1)[:, None] + v * np_.ones((4, 1), np.float32),
    lambda np_, x, v: x[:, :1] * x,
    lambda np_, x, v: x.sum(0) * x,
]


def test_sparsify_against_jax():
    x, v = _dense((4, 5), dtype=np.float32), RNG.normal(size=5).astype(np.float32)
    m, jm = _pair(x)
    gots = [fsp.sparsify(lambda x, v, f=f: f(fjnp, x, v))(m, v) for f in SPARSIFIED]
    # (JAX: one compile for all the functions)
    wants = _jit(
        lambda x, v: [jsp.sparsify(lambda x, v, f=f: f(jjnp, x, v))(x, v) for f in SPARSIFIED],
        jm,
        v,
    )
    for f, got, want in zip(SPARSIFIED, gots, wants, strict=True):
        assert isinstance(got, fsp.BCOO) == isinstance(want, jsp.BCOO)
        if isinstance(got, fsp.BCOO):
            _same_layout(got, want)
        else:
            assert (got.shape, got.dtype) == (want.shape, want.dtype)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # the dense function on the dense array
        np.testing.assert_allclose(fsp.todense(got), f(np, x, v), rtol=1e-5, atol=1e-6)


def test_sparsify_errors_jit_and_vmap():
    x = _dense((3, 4))
    m = fsp.BCOO.fromdense(x)
    raises_as_jax(
        lambda s: s.sparsify(lambda a: a + 1.0)(_pair_of(s, m)), jsp, fsp, NotImplementedError
    )
    for f in (lambda a: a.sum(1)[:, None] * np.ones((3, 2)), lambda a: a * np.ones((2, 3, 4))):
        raises_as_jax(lambda s, f=f: s.sparsify(f)(_pair_of(s, m)), jsp, fsp, NotImplementedError)
    with pytest.raises(NotImplementedError, match="exp"):
        fsp.sparsify(fjnp.exp)(m)
    f = fsp.sparsify(lambda a, v: fjnp.tanh(a[1:]) @ v)
    v = RNG.normal(size=4)
    np.testing.assert_allclose(functx.jit(f)(m, v), np.tanh(x[1:]) @ v, rtol=1e-12)
    # cond with a sparse operand: each branch run sparsely
    branchy = fsp.sparsify(lambda p, a: flax.cond(p, lambda a: a * 2.0, lambda a: -abs(a), a))
    for p in (True, False):
        got = functx.jit(branchy)(p, m)
        assert isinstance(got, fsp.BCOO) and got.nse == m.nse
        np.testing.assert_array_equal(got.todense(), x * 2.0 if p else -abs(x))
    # loops with sparse carries and consts; a scan's sparse outputs stack along a batch dim
    loop = fsp.sparsify(
        lambda a, n: flax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, -c[1]), (0, a))[1]
    )
    np.testing.assert_array_equal(loop(m, 3).todense(), -x)
    power = fsp.sparsify(lambda a, v: flax.fori_loop(0, 2, lambda i, c: c + a @ c, v))
    sq, v4 = _dense((4, 4)), RNG.normal(size=4)
    step = np.eye(4) + sq
    np.testing.assert_allclose(power(fsp.BCOO.fromdense(sq), v4), step @ step @ v4, rtol=1e-13)
    ys = fsp.sparsify(lambda a: flax.scan(lambda c, t: (c, c * t), a, fjnp.arange(3.0))[1])(m)
    assert isinstance(ys, fsp.BCOO) and ys.n_batch == 1
    np.testing.assert_array_equal(ys.todense(), x[None] * np.arange(3.0)[:, None, None])
    # a second call on like arguments runs the cached trace
    traces = []
    g = fsp.sparsify(lambda a: traces.append(a.shape) or fjnp.sin(a))
    np.testing.assert_array_equal(g(m).todense(), g(m).todense())
    assert traces == [(3, 4)]
    # vmap over a batch dim of the BCOO
    xb = _dense((2, 3, 4))
    mb = fsp.BCOO.fromdense(xb, n_batch=1)
    out = functx.vmap(fsp.sparsify(lambda a: (a * 2.0).sum(1)))(mb)
    np.testing.assert_allclose(fsp.todense(out), xb.sum(2) * 2)
    # a traced start under jit, the eager result the reference
    ds = lambda a, i: fsp.bcoo_dynamic_slice(a, (i, 0), (2, 4)).todense()  # noqa: E731
    for i in (0, 2, -1):
        np.testing.assert_array_equal(functx.jit(ds)(m, i), ds(m, i))


def test_sparse_derivatives_against_jax():
    x, v = _dense((4, 5), dtype=np.float32), RNG.normal(size=5).astype(np.float32)
    m, jm = _pair(x)

    def loss(mod):
        np_ = fjnp if mod is fsp else jjnp
        return lambda X, y: np_.sum(np_.sin(X @ y) ** 2)

    derivs = {
        "grad": lambda mod: mod.grad(loss(mod), argnums=(0, 1)),
        "value_and_grad": lambda mod: mod.value_and_grad(loss(mod), argnums=(0, 1)),
        "jacfwd": lambda mod: mod.jacfwd(lambda X, y: X @ y),
        "jacrev": lambda mod: mod.jacrev(lambda X, y: X @ y),
    }
    gots = {k: d(fsp)(m, v) for k, d in derivs.items()}
    wants = _jit(lambda a, b: {k: d(jsp)(a, b) for k, d in derivs.items()}, jm, v)  # (one compile)
    for fn in ("grad", "value_and_grad"):
        got, want = (gots[fn], wants[fn]) if fn == "grad" else (gots[fn][1], wants[fn][1])
        assert got[0].indices is m.indices
        _same_layout(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    np.testing.assert_allclose(gots["value_and_grad"][0], wants["value_and_grad"][0], rtol=1e-5)
    for fn in ("jacfwd", "jacrev"):
        _same_layout(gots[fn], wants[fn])
    g, aux = fsp.grad(lambda X: (loss(fsp)(X, v), 3.0), has_aux=True)(m)
    assert aux == 3.0 and isinstance(g, fsp.BCOO)
    assert fsp.jacobian is fsp.jacrev
    # the gradient in the stored values: functx.grad's in data, checked by finite differences
    md = fsp.BCOO.fromdense(_dense((4, 5)))

    def in_data(d):
        return (md._with_data(d) @ np.arange(5.0)).sum() ** 2

    got = fsp.grad(lambda X: (X @ np.arange(5.0)).sum() ** 2)(md)
    np.testing.assert_allclose(got.data, functx.grad(in_data)(md.data), rtol=1e-14)
    check_grads(in_data, (md.data,), order=1, modes=("rev",))


def test_random_bcoo_same_bits_as_jax():
    cases = [
        ((3, 4), {}),
        ((2, 3, 4), {"n_batch": 1, "nse": 3, "dtype": np.float32}),
        ((5, 4, 2), {"n_dense": 1, "nse": 0.3, "unique_indices": False, "sorted_indices": True}),
        ((4, 4), {"nse": 4, "dtype": np.float32, "generator": "normal"}),
    ]

    def draw(module, random, key):
        return [
            module.random_bcoo(
                key, shape, **{**kw, "generator": getattr(random, kw.get("generator", "uniform"))}
            )
            for shape, kw in cases
        ]

    with x64_off(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (float64 requested with x64 off: JAX's too)
        got = draw(fsp, functx.random, functx.random.key(3))
        # (one compile for all: JAX's random_bcoo compiles for seconds)
        want = _jit(lambda k: draw(jsp, jax.random, k), jax.random.key(3))
    for g, w in zip(got, want, strict=True):
        _same_bcoo(g, w)
    for g, (_, kw) in zip(got, cases):
        if kw.get("unique_indices", True):
            flat = np.asarray(g.indices).reshape(-1, g.nse, g.n_sparse)
            assert all(len({tuple(r) for r in b}) == g.nse for b in flat)
    key = {fsp: functx.random.key(0), jsp: jax.random.key(0)}
    for shape, kw in [((3, 4), {"nse": 12}), ((3, 4), {"n_batch": 2, "n_dense": 1})]:
        raises_as_jax(lambda s: s.random_bcoo(key[s], shape, **kw), jsp, fsp, ValueError)


def test_ops_grads_jit_and_vmap():
    x = _dense((3, 4, 2))
    m = fsp.BCOO.fromdense(x, n_batch=1)
    idx = m.indices
    dn = flax.GatherDimensionNumbers(
        offset_dims=(1, 2), collapsed_slice_dims=(0,), start_index_map=(0,)
    )
    ops = {
        "slice": lambda a: fsp.bcoo_slice(a, start_indices=(1, 1, 0), limit_indices=(3, 4, 2)),
        "dynamic_slice": lambda a: fsp.bcoo_dynamic_slice(a, (1, 2, 0), (2, 2, 2)),
        "reshape": lambda a: fsp.bcoo_reshape(a, new_sizes=(3, 8)),
        "rev": lambda a: fsp.bcoo_rev(a, (0, 2)),
        "update_layout": lambda a: fsp.bcoo_update_layout(
            a, n_batch=0, n_dense=1, on_inefficient=None
        ),
        "concatenate": lambda a: fsp.bcoo_concatenate([a, a * 2.0], dimension=1),
        "multiply_sparse": lambda a: fsp.bcoo_multiply_sparse(a, a),
        "gather": lambda a: fsp.bcoo_gather(a, np.array([[2], [0]]), dn, (1, 4, 2)),
    }
    for name, op in ops.items():

        def dense_of(d, op=op):
            return op(fsp.BCOO((d, idx), shape=m.shape)).todense()

        # gradients in the stored values against finite differences; compiled against eager
        check_grads(dense_of, (m.data,), order=1, modes=("rev",))
        np.testing.assert_allclose(
            functx.jit(dense_of)(m.data), dense_of(m.data), rtol=1e-14, err_msg=name
        )
    # vmap over the batch dim: each batch's operation
    got = functx.vmap(lambda a: fsp.bcoo_rev(a, (1,)).todense())(m)
    np.testing.assert_array_equal(got, x[:, :, ::-1])
    got = functx.vmap(lambda a: fsp.bcoo_slice(a, start_indices=(1, 0), limit_indices=(4, 2)))(m)
    np.testing.assert_array_equal(got.todense(), x[:, 1:])


def test_astype_and_sum_against_jax():
    # duplicates: a cast sums them first (it does not distribute over a sum), as JAX's
    data, idx = np.array([1.5, 2.0, 3.0], np.float32), np.array([[0, 1], [0, 1], [1, 1]], np.int32)
    m = fsp.BCOO((data, idx), shape=(2, 2))

    def methods(a):
        return a.astype(np.int32), a.sum(1, keepdims=True), a.sum(0), a.sum()

    got, want = methods(m), _jit(methods, _pair_of(jsp, m))
    for g, w in zip(got[:3], want[:3]):
        _same_bcoo(g, w)
    assert (got[3].shape, got[3].dtype) == (want[3].shape, want[3].dtype)
    assert float(got[3]) == float(want[3]) == data.sum()


# (lhs shape, n_batch, rhs shape, n_batch, dimension numbers) of sparse @ sparse
SPDOTS = [
    ((4, 5), 0, (5, 3), 0, (((1,), (0,)), ((), ()))),
    ((2, 4, 5), 1, (2, 5, 3), 1, (((2,), (1,)), ((0,), (0,)))),
    ((5,), 0, (5, 3), 0, (((0,), (0,)), ((), ()))),
    ((4, 5), 0, (3, 5), 0, (((1,), (1,)), ((), ()))),
    ((4, 5), 0, (3, 2), 0, (((), ()), ((), ()))),
]


def test_sparse_sparse_dot_general_against_jax_and_numpy():
    for k, (ls, lnb, rs, rnb, dn) in enumerate(SPDOTS):
        x, y = _dense(ls, dtype=np.float32), _dense(rs, dtype=np.float32)
        (a, ja), (b, jb) = _pair(x, n_batch=lnb), _pair(y, n_batch=rnb)
        got = fsp.bcoo_dot_general(a, b, dimension_numbers=dn)
        want = jax.lax.dot_general(x.astype(np.float64), y.astype(np.float64), dn)
        np.testing.assert_allclose(got.todense(), want, rtol=1e-5, atol=1e-6)
        if k < 2:  # the buffers: JAX's (one compile each)
            dot = lambda p, q: jsp.bcoo_dot_general(p, q, dimension_numbers=dn)  # noqa: B023
            _same_bcoo(got, _jit(dot, ja, jb))
    x = _dense((4, 5))
    m = fsp.BCOO.fromdense(x)
    np.testing.assert_allclose((m @ m.T).todense(), x @ x.T, rtol=1e-13)
    # gradients in both operands' stored values
    idx = m.indices
    check_grads(
        lambda d, e: (
            fsp.BCOO((d, idx), shape=(4, 5)) @ fsp.BCOO((e, idx), shape=(4, 5)).T
        ).todense(),
        (m.data, m.data * 2),
        order=1,
        modes=("rev",),
    )
    # dense dims: JAX's NotImplementedError (its eager path asserts first; under jit it says so)
    dense_dims = fsp.BCOO.fromdense(x, n_dense=1)
    with pytest.raises(NotImplementedError, match="dense dimensions"):
        _jit(lambda p, q: p @ q.T, _pair_of(jsp, dense_dims), _pair_of(jsp, m))
    with pytest.raises(functx.errors.UnsupportedError, match="dense dimensions"):
        dense_dims @ m.T
