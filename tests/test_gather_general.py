"""lax.gather / lax.scatter* with dimension numbers, lax.index_take and jnp.put_along_axis
(functx/_gather.py, functx/numpy/_put.py) against JAX: JAX's own typical dimension numbers (NumPy
indexing, take_along_axis, batched gathers, windows wider than 1), every mode with out-of-bounds
windows, dtypes and errors, in both x64 modes; gradients (finite differences in float64 and
jax.grad), vmap against a loop. The compiled backends run the case ``general_gather_scatter`` of
tests/lowering/test_backend_suite.py (C++ and Triton against eager and JAX)."""

import doctest

import docutil
import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
import functx.numpy as fjnp
from functx import lax as flax
from functx.errors import UnsupportedError
from functx.test_util import check_grads
from functx.tracing import get_aval

jlax = jax.lax
RNG = np.random.default_rng(7)


def same(got, want, what=""):
    """Equal values (NaNs equal), dtypes and shapes, over lists of arrays."""
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            same(g, w, f"{what}[{i}]")
        return
    g, w = np.asarray(got), np.asarray(want)
    assert (g.dtype, g.shape) == (w.dtype, w.shape), (what, g.dtype, w.dtype, g.shape, w.shape)
    if g.dtype.kind in "fc":
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


# (name, operand, indices, dimension-number fields, slice sizes): JAX's typical gathers.
X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 5.5
GATHERS = [
    # x[idx] (jnp indexing): one collapsed axis, whole slices of the others; -1 and 2 out of bounds
    ("take_rows", X, np.array([[1], [0], [-1], [2]]), ((1, 2), (0,), (0,)), (1, 3, 4)),
    # x[:, i, j] points of two axes
    ("points", X, np.array([[0, 3], [2, 1], [3, 9]]), ((1,), (1, 2), (1, 2)), (2, 1, 1)),
    # windows wider than one, a permuted start_index_map, offset dims around the batch axis
    (
        "windows",
        X,
        np.array([[1, 0], [3, 1], [-2, 1]], np.int8),
        ((0, 2, 3), (), (2, 1)),
        (2, 2, 3),
    ),  # noqa: E501
    # take_along_axis's batched form: operand and index batching axes
    (
        "batched",
        X,
        np.array([[[2], [0]], [[1], [5]]]),
        ((2,), (1,), (1,), (0,), (0,)),
        (1, 1, 4),
    ),
    # two batching axes and a window of the last axis
    (
        "batched2",
        X,
        np.array([[[1], [3]], [[0], [2]], [[2], [1]]]).transpose(1, 0, 2),
        ((2,), (), (2,), (0, 1), (0, 1)),
        (1, 1, 2),
    ),
    # unsigned indices beyond every bound, integer operand
    ("uint", X.astype(np.int32), np.array([[250], [1]], np.uint8), ((1, 2), (0,), (0,)), (1, 3, 4)),
    # a scalar operand, and an empty window
    ("scalar", np.float32(2.5), np.zeros((3, 0), np.int32), ((), (), ()), ()),
    ("empty", X, np.array([[0], [1]]), ((1, 2), (0,), (0,)), (1, 0, 4)),
]
MODES = [None, "clip", "fill", "promise_in_bounds", jlax.GatherScatterMode.FILL_OR_DROP]


def _mode(lax, m):
    return getattr(lax.GatherScatterMode, m.name) if hasattr(m, "name") else m


def _gathers(lax, dn_cls, operand_of=lambda c: c[1]):
    out = []
    for c in GATHERS:
        dn = dn_cls(*c[3])
        for m in MODES:
            out.append(lax.gather(operand_of(c), c[2], dn, c[4], mode=_mode(lax, m)))
        out.append(lax.gather(operand_of(c), c[2], dn, c[4], mode="fill", fill_value=7))
    return out


def test_gather_vs_jax():
    same(
        _gathers(flax, flax.GatherDimensionNumbers),
        jax.jit(lambda: _gathers(jlax, jlax.GatherDimensionNumbers))(),
    )


def test_gather_default_mode(no_x64):
    """x64 off: index and operand dtypes, and the fill values of each kind of dtype (bool: True,
    unsigned: the largest, signed: the smallest, inexact: NaN)."""

    def progs(lax):
        dn = lax.GatherDimensionNumbers((1, 2), (0,), (0,))
        i = np.array([[1], [3]], np.int64)
        outs = [lax.gather((X > 0).astype(dt), i, dn, (1, 3, 4), mode="fill") for dt in DTYPES]
        c = GATHERS[2]
        return outs + [lax.gather(c[1], c[2], lax.GatherDimensionNumbers(*c[3]), c[4])]

    same(progs(flax), jax.jit(lambda: progs(jlax))())


DTYPES = (np.bool_, np.uint16, np.int8, np.float16, np.float64)


# scatters: (operand, indices, updates, dimension-number fields)
U3 = np.arange(18, dtype=np.float32).reshape(3, 3, 2) / 4 - 1
SCATTERS = [
    # x.at[idx].op(v) with repeated and out-of-bounds rows
    (
        "rows",
        X,
        np.array([[1], [1], [2], [-1]]),
        np.ones((4, 3, 4), np.float32) * 2,
        ((1, 2), (0,), (0,)),
    ),
    # windows of two axes (one out-of-bounds window)
    ("windows", X, np.array([[0, 1], [1, 2], [5, 0]]), U3, ((1, 2), (0,), (0, 2))),
    # batched: one update per (batch, index) pair
    (
        "batched",
        X,
        np.array([[[2], [0]], [[1], [1]]]),
        np.full((2, 2, 4), 3.0, np.float32),
        ((2,), (1,), (1,), (0,), (0,)),
    ),
    # a scalar operand
    (
        "scalar",
        np.float32(1.5),
        np.zeros((2, 0), np.int32),
        np.array([2.0, 4.0], np.float32),
        ((), (), ()),
    ),
]
SCATTER_OPS = ["scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max"]


def _scatters(lax):
    out = []
    dn_cls = lax.ScatterDimensionNumbers
    for name, x, i, u, dn in SCATTERS:
        for op in SCATTER_OPS:
            for m in (None, "clip", "promise_in_bounds"):
                out.append(getattr(lax, op)(x, i, u, dn_cls(*dn), mode=m))
        if name != "rows":  # (repeated indices: which update wins is unspecified)
            out.append(lax.scatter(x, i, u, dn_cls(*dn), mode="clip"))
            out.append(lax.scatter(x, i, u, dn_cls(*dn)))
    xi = X.astype(np.int32)
    dn = dn_cls((1, 2), (0,), (0,))
    out.append(lax.scatter_add(xi, np.array([[1], [1]]), np.ones((2, 3, 4), np.int32), dn))
    return out


def test_scatter_vs_jax():
    same(_scatters(flax), jax.jit(lambda: _scatters(jlax))())


def test_scatter_default_mode(no_x64):
    dn = (1, 2), (0,), (0,)
    x, i, u = X.astype(np.int8), np.array([[0], [7]], np.uint32), np.ones((2, 3, 4), np.int8)
    got = flax.scatter_max(x, i, u, flax.ScatterDimensionNumbers(*dn))
    same(got, jlax.scatter_max(x, i, u, jlax.ScatterDimensionNumbers(*dn)))


def _ref_gather(x, idx, offset, collapsed, smap, sizes, mode):
    """XLA's gather, element by element (NumPy): the reference for random dimension numbers."""
    window = [d for d in range(x.ndim) if d not in collapsed]
    batch, it = idx.shape[:-1], iter(range(len(idx.shape) - 1))
    out_shape = [
        sizes[window[offset.index(p)]] if p in offset else batch[next(it)]
        for p in range(len(batch) + len(window))
    ]  # noqa: E501
    out = np.zeros(out_shape, x.dtype)
    for o in np.ndindex(*out_shape):
        b = tuple(o[p] for p in range(len(o)) if p not in offset)
        full, ok = [0] * x.ndim, True
        for k, d in enumerate(smap):
            s, hi = int(idx[b + (k,)]), x.shape[d] - sizes[d]
            ok &= 0 <= s <= hi
            full[d] = min(max(s, 0), hi)
        for j, d in enumerate(window):
            full[d] += o[offset[j]]
        out[o] = x[tuple(full)] if ok or mode != "fill" else np.nan
    return out


def _ref_scatter_add(x, idx, upd, window_dims, inserted, smap, mode):
    out = x.copy()
    window = [d for d in range(x.ndim) if d not in inserted]
    sizes = [1] * x.ndim
    for d, u in zip(window, window_dims):
        sizes[d] = upd.shape[u]
    for o in np.ndindex(*upd.shape):
        b = tuple(o[p] for p in range(len(o)) if p not in window_dims)
        full, ok = [0] * x.ndim, True
        for k, d in enumerate(smap):
            s, hi = int(idx[b + (k,)]), x.shape[d] - sizes[d]
            ok &= 0 <= s <= hi
            full[d] = min(max(s, 0), hi)
        for j, d in enumerate(window):
            full[d] += o[window_dims[j]]
        if ok or mode == "clip":
            out[tuple(full)] += upd[o]
    return out


@settings(max_examples=12)
@given(st.data())
def test_gather_scatter_add_hypothesis(data):
    """Random operand shapes, start_index_maps, windows, offset positions and modes, against
    XLA's semantics written out element by element."""
    nd = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=nd, max_size=nd)))
    smap = tuple(data.draw(st.permutations(range(nd)))[: data.draw(st.integers(0, nd))])
    sizes = tuple(data.draw(st.integers(0 if d > 1 else 1, d)) for d in shape)
    collapsed = tuple(d for d in range(nd) if sizes[d] == 1 and data.draw(st.booleans()))
    nb = data.draw(st.integers(0, 2))
    out_rank = nb + nd - len(collapsed)
    offset = tuple(sorted(data.draw(st.permutations(range(out_rank)))[: nd - len(collapsed)]))
    batch = tuple(data.draw(st.lists(st.integers(1, 3), min_size=nb, max_size=nb)))
    idx = RNG.integers(-2, 6, batch + (len(smap),)).astype(np.int32)
    x = RNG.standard_normal(shape).astype(np.float32)
    mode = data.draw(st.sampled_from([None, "clip", "fill"]))
    g = flax.gather(x, idx, flax.GatherDimensionNumbers(offset, collapsed, smap), sizes, mode=mode)
    same(g, _ref_gather(x, idx, offset, collapsed, smap, sizes, mode))
    u = RNG.standard_normal(np.shape(g)).astype(np.float32)
    sdn = flax.ScatterDimensionNumbers(offset, collapsed, smap)
    got = flax.scatter_add(x, idx, u, sdn, mode=mode)
    same(got, _ref_scatter_add(x, idx, u, offset, collapsed, smap, mode))


# --- errors --------------------------------------------------------------------------------------
BAD_GATHERS = [
    (np.array([[0]]), ((1,), (0,), (0,)), (1, 3, 4)),  # offsets + collapsed != rank
    (np.array([[0]]), ((1, 3), (0,), (0,)), (1, 3, 4)),  # an offset dim beyond the output's rank
    (np.array([[0]]), ((2, 1), (0,), (0,)), (1, 3, 4)),  # unsorted offset dims
    (np.array([[0]]), ((1, 2), (0,), (3,)), (1, 3, 4)),  # start_index_map out of range
    (np.array([[0, 1]]), ((1, 2), (0,), (0,)), (1, 3, 4)),  # index vector too long
    (np.array([[0]]), ((1, 2), (0,), (0,)), (2, 3, 4)),  # collapsed axis of size 2
    (np.array([[0]]), ((1, 2), (0,), (0,)), (1, 9, 4)),  # slice bigger than the axis
    (np.array([[0]]), ((1, 2), (0,), (0,)), (1, 3)),  # one slice size short
    (np.array([[0]]), ((1,), (1,), (0,), (0,), (0,)), (1, 1, 4)),  # batching overlaps the map
    (np.array([[[0]]]), ((2,), (1,), (1,), (0,), (1,)), (1, 1, 4)),  # batching the index vector
    (np.array([[0.0]]), ((1, 2), (0,), (0,)), (1, 3, 4)),  # float indices
]


@pytest.mark.parametrize("case", range(len(BAD_GATHERS)))
def test_gather_errors_match_jax(case):
    idx, dn, sizes = BAD_GATHERS[case]
    with pytest.raises((TypeError, ValueError)) as want:
        jlax.gather(X, idx, jlax.GatherDimensionNumbers(*dn), sizes)
    with pytest.raises(type(want.value)):
        flax.gather(X, idx, flax.GatherDimensionNumbers(*dn), sizes)


def test_scatter_and_mode_errors_match_jax():
    bad = [
        lambda lax: lax.scatter_add(
            X,
            np.array([[0]]),
            np.ones((1, 3, 4), np.int32),
            lax.ScatterDimensionNumbers((1, 2), (0,), (0,)),
        ),  # noqa: E501
        lambda lax: lax.scatter_add(
            X,
            np.array([[0]]),
            np.ones((2, 3, 4), np.float32),
            lax.ScatterDimensionNumbers((1, 2), (0,), (0,)),
        ),  # noqa: E501
        lambda lax: lax.scatter_add(
            X,
            np.array([[0]]),
            np.ones((1, 3, 9), np.float32),
            lax.ScatterDimensionNumbers((1, 2), (0,), (0,)),
        ),  # noqa: E501
        lambda lax: lax.scatter_add(
            X,
            np.array([[0]]),
            np.ones((1, 3, 4), np.float32),
            lax.ScatterDimensionNumbers((1, 2), (1,), (0,)),
        ),  # noqa: E501
        lambda lax: lax.scatter(
            X,
            np.array([[0]]),
            np.ones((1, 3, 4), np.float32),
            lax.ScatterDimensionNumbers((1, 2), (0,), (0,)),
            mode="wrong",
        ),  # noqa: E501
        lambda lax: lax.GatherScatterMode.from_any("nearest"),
    ]
    for fn in bad:
        with pytest.raises((TypeError, ValueError)) as want:
            fn(jlax)
        with pytest.raises(type(want.value)):
            fn(flax)
    # ONE_HOT: JAX fails inside its gather lowering; functx says it is unsupported
    dn = flax.GatherDimensionNumbers((1, 2), (0,), (0,))
    with pytest.raises(UnsupportedError, match="ONE_HOT"):
        flax.gather(X, np.array([[0]]), dn, (1, 3, 4), mode="one_hot")
    assert [m.name for m in flax.GatherScatterMode] == [m.name for m in jlax.GatherScatterMode]
    for s in ("clip", "fill", "drop", None, "promise_in_bounds", "one_hot"):
        assert flax.GatherScatterMode.from_any(s).name == jlax.GatherScatterMode.from_any(s).name
    assert flax.GatherDimensionNumbers((1,), (0,), (0,)) == ((1,), (0,), (0,), (), ())


# --- derivatives ---------------------------------------------------------------------------------
X64 = RNG.standard_normal((2, 3, 4))


def test_gradients_finite_differences():
    i_ok = np.array([[0, 1], [1, 2], [1, 0]])
    i_oob = np.array([[0, 1], [1, 3], [5, -1]])
    gdn = flax.GatherDimensionNumbers((1, 2), (0,), (0, 2))
    sdn = flax.ScatterDimensionNumbers((1, 2), (0,), (0, 2))
    u = RNG.standard_normal((3, 3, 2))
    for mode in ("clip", "fill"):
        check_grads(
            lambda x: flax.gather(x, i_oob, gdn, (1, 3, 2), mode=mode, fill_value=0.5),
            (X64,),
            2,
            modes=("rev",),
        )  # noqa: E501
    check_grads(lambda x, u: flax.scatter_add(x, i_oob, u, sdn), (X64, u), 2, modes=("rev",))
    check_grads(lambda x, u: flax.scatter(x, i_ok, u, sdn, mode="clip"), (X64, u), 1)
    check_grads(lambda x, u: flax.scatter_mul(x, i_oob, u, sdn), (X64, u), 1)
    check_grads(lambda x, u: flax.scatter_max(x, i_ok, u, sdn), (X64, u), 1)


def test_gradients_vs_jax():
    """jax.grad of the same programs: gather's transpose is a scatter-add, scatter's derivative
    reaches only the update that lands (repeated indices), scatter_min/max split ties."""
    i = np.array([[0, 1], [0, 1], [1, 2], [1, 0]])  # two windows at one place
    u = np.round(RNG.standard_normal((4, 3, 2)), 1)
    u[1] = u[0]  # a tie for scatter_min/max
    w = RNG.standard_normal((2, 3, 4))

    def progs(lax, grad):
        gdn = lax.GatherDimensionNumbers((1, 2), (0,), (0, 2))
        sdn = lax.ScatterDimensionNumbers((1, 2), (0,), (0, 2))
        outs = [grad(lambda x: (lax.gather(x, i, gdn, (1, 3, 2)) ** 2).sum())(X64)]
        for op in ("scatter", "scatter_add", "scatter_sub", "scatter_min", "scatter_max"):
            f = lambda x, u, op=op: (getattr(lax, op)(x, i, u, sdn) * w).sum()  # noqa: E731
            outs += list(grad(f, (0, 1))(X64, u))
        # scatter_mul: JAX differentiates the updates only with unique_indices=True
        iu, uu = i[1:], u[1:] + 2.0
        f = lambda x, u: (lax.scatter_mul(x, iu, u, sdn, unique_indices=True) * w).sum()  # noqa: E731
        return outs + list(grad(f, (0, 1))(X64, uu))

    same(progs(flax, functx.grad), jax.jit(lambda: progs(jlax, jax.grad))())


def test_vmap_matches_a_loop():
    gdn = flax.GatherDimensionNumbers((1, 2), (0,), (0, 2))
    sdn = flax.ScatterDimensionNumbers((1, 2), (0,), (0, 2))
    xs = RNG.standard_normal((3, 2, 3, 4)).astype(np.float32)
    idx = RNG.integers(-1, 4, (3, 2, 2)).astype(np.int32)
    us = RNG.standard_normal((3, 2, 3, 2)).astype(np.float32)

    def f(x, i, u):
        g = flax.gather(x, i, gdn, (1, 3, 2), mode="fill")
        return g, flax.scatter_add(x, i, u, sdn), flax.scatter(x, i[:1], u[:1], sdn, mode="clip")

    got = functx.vmap(f)(xs, idx, us)
    for k in range(3):
        same([o[k] for o in got], list(f(xs[k], idx[k], us[k])))
    got = functx.vmap(f, (None, 0, None))(xs[0], idx, us[0])
    for k in range(3):
        same([o[k] for o in got], list(f(xs[0], idx[k], us[0])))


# --- index_take, scatter_apply, put_along_axis ---------------------------------------------------
def test_index_take_on_a_gpu_array(interpreted_gpu):
    """index_take's axis sizes go with the operands' device (a GPU array raised a DeviceError
    against them on the host)."""
    idx = (np.array([0, -1, 3]), np.array([2, 5, -3]))
    got = flax.index_take(*functx.device_put((X, idx), interpreted_gpu), (0, 2))
    assert got.device == interpreted_gpu
    np.testing.assert_array_equal(np.asarray(got), np.asarray(flax.index_take(X, idx, (0, 2))))


def test_index_take_scatter_apply_put_along_axis_vs_jax():
    sdn = (1, 2), (0,), (0, 2)
    idx = np.array([[0, 1], [1, 2], [0, 1], [7, 0]])

    def progs(lax, jnp):
        a = np.array([[10, 30, 20], [60, 40, 50]])
        return [
            lax.index_take(X, (np.array([0, -1, 3]), np.array([2, 5, -3])), (0, 2)),
            lax.scatter_apply(
                X,
                idx,
                lambda v: v * 2 + 1,
                lax.ScatterDimensionNumbers(*sdn),
                update_shape=(4, 3, 2),
            ),  # noqa: E501
            jnp.put_along_axis(a, np.array([[1], [0]]), 99, axis=1, inplace=False),
            jnp.put_along_axis(
                a, np.array([[1, 2], [0, -1]]), np.array([[1], [2]]), 1, inplace=False
            ),  # noqa: E501
            jnp.put_along_axis(a, np.array([[1, 5, -1]]), 7, 0, inplace=False),
            jnp.put_along_axis(a, np.array([[1, 5, -3]]), 7, 0, inplace=False, mode="clip"),
            jnp.put_along_axis(a, np.array([4, -1]), 5, None, inplace=False),
            jnp.put_along_axis(
                a.astype(np.float32), np.array([[1, -5]], np.int8), 2.5, 1, inplace=False
            ),  # noqa: E501
        ]

    same(progs(flax, fjnp), jax.jit(lambda: progs(jlax, jjnp))())
    # not differentiable, as in JAX (its lax_autodiff_test checks NotImplementedError)
    dn = flax.ScatterDimensionNumbers(*sdn)
    with pytest.raises(NotImplementedError):
        functx.jacfwd(lambda x: flax.scatter_apply(x, idx, flax.sin, dn, update_shape=(4, 3, 2)))(X)
    for jnp in (jjnp, fjnp):
        with pytest.raises(ValueError, match="inplace"):
            jnp.put_along_axis(np.zeros(3), np.array([0]), 1.0, 0)
        with pytest.raises(ValueError):
            jnp.put_along_axis(np.zeros((2, 3)), np.array([0]), 1.0, 1, inplace=False)


DOCUMENTED = [
    "GatherDimensionNumbers",
    "ScatterDimensionNumbers",
    "GatherScatterMode",
    "gather",
    "index_take",
    "scatter",
    "scatter_add",
    "scatter_sub",
    "scatter_mul",
    "scatter_min",
    "scatter_max",
    "scatter_apply",
]


def test_docstring_examples_run():
    # (the public names' examples run in tests/test_docstrings.py; any others here)
    for name in DOCUMENTED + ["put_along_axis"]:
        obj = getattr(fjnp if name == "put_along_axis" else flax, name)
        for section in ("Arguments:", "Returns:", "Example:"):
            assert section in obj.__doc__, (name, section)
        result = docutil.run(obj, name, globs={"np": np}, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, name


def test_weak_types_follow_the_operand(no_x64):
    def progs(lax):
        x = lax.broadcast(1.5, (3,))  # weakly typed
        dn, sd = (
            lax.GatherDimensionNumbers((), (0,), (0,)),
            lax.ScatterDimensionNumbers((), (0,), (0,)),
        )
        i = np.array([[0], [5]])
        return [
            lax.gather(x, i, dn, (1,)),
            lax.gather(x, i, dn, (1,), mode="fill"),
            lax.scatter_add(x, i, lax.broadcast(2.0, (2,)), sd),
        ]

    got, want = progs(flax), progs(jlax)
    same(got, want)
    assert [get_aval(g).weak_type for g in got] == [w.weak_type for w in want] == [True] * 3
