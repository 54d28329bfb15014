"""Sorting and selection against JAX: lax.sort/sort_key_val/top_k, jnp sort/argsort/lexsort/
partition/searchsorted/unique/nonzero/where/quantile & co.; values, dtypes and errors in both x64
modes, gradients, vmap, and jit on the C++ backend (Triton refuses the sort kernel clearly)."""

import contextlib

import docutil
import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.numpy as fjnp
from functx.test_util import check_grads

SPECIAL = np.array([0.0, np.nan, -np.inf, -0.0, 1.0, -np.nan, np.inf, 0.0, 1.0, -2.5], np.float32)


def same(got, want):
    """Equal values (NaNs equal, signs of zeros compared), dtypes and shapes; pytrees."""
    gl, wl = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=0, equal_nan=True)
            if g.dtype.kind == "f":
                assert np.array_equal(np.signbit(g), np.signbit(w) | np.isnan(w) & np.signbit(g))
        else:
            np.testing.assert_array_equal(g, w)


# against JAX: one jax.jit of all of them per mode (XLA's compile of sorts is the cost here)
CASES = [
    ("lax.sort keys2", lambda m, x: m.lax.sort((x > 0, -x, x), num_keys=2)),
    ("lax.sort dim0", lambda m, x: m.lax.sort((x.reshape(2, 5), x.reshape(2, 5) > 0), dimension=0)),
    ("top_k axis0", lambda m, x: m.lax.top_k(x.reshape(5, 2), 3, axis=0)),
    ("argsort desc", lambda m, x: m.numpy.argsort(x, descending=True)),
    ("partition", lambda m, x: m.numpy.sort(m.numpy.partition(m.numpy.nan_to_num(x), 3)[:3])),
    ("argpartition", lambda m, x: m.numpy.argpartition(m.numpy.nan_to_num(x), 3)[3]),
    (
        "searchsorted",
        lambda m, x: [
            m.numpy.searchsorted(m.numpy.sort(x), x, side=s, method=k)
            for s in ("left", "right")
            for k in ("scan", "compare_all")
        ],
    ),
    (
        "unique size",
        lambda m, x: m.numpy.unique(
            x, size=12, fill_value=7.0, return_index=True, return_inverse=True, return_counts=True
        ),
    ),
    (
        "unique axis",
        lambda m, x: m.numpy.unique(
            m.numpy.round(x.reshape(5, 2) / 2.0), axis=0, size=5, return_inverse=True
        ),
    ),
    ("nonzero size", lambda m, x: m.numpy.nonzero(x.reshape(2, 5), size=9, fill_value=-1)),
    (
        "quantile",
        lambda m, x: m.numpy.quantile(m.numpy.nan_to_num(x), m.numpy.array([0.1, 0.5, 1.0])),
    ),
    ("nanquantile", lambda m, x: m.numpy.nanquantile(x.reshape(2, 5), 0.3, axis=1, keepdims=True)),
    ("percentile", lambda m, x: m.numpy.percentile(m.numpy.nan_to_num(x), 40, method="nearest")),
    ("nanmedian", lambda m, x: m.numpy.nanmedian(x.reshape(2, 5), axis=0)),
    ("nanpercentile", lambda m, x: m.numpy.nanpercentile(x.reshape(2, 5), 70.0, axis=1)),
    ("argwhere size", lambda m, x: m.numpy.argwhere(x.reshape(2, 5) > 0, size=6, fill_value=-2)),
    ("flatnonzero size", lambda m, x: m.numpy.flatnonzero(x > 0, size=4)),
    ("lexsort", lambda m, x: m.numpy.lexsort((x > 0, m.numpy.nan_to_num(x)))),
    (
        "unique_* size",
        lambda m, x: [
            tuple(m.numpy.unique_all(x, size=11, fill_value=1.0)),
            tuple(m.numpy.unique_counts(x, size=11)),
            tuple(m.numpy.unique_inverse(x, size=11)),
            m.numpy.unique_values(x, size=11),
        ],
    ),
    ("median", lambda m, x: m.numpy.median(x.reshape(2, 5), axis=1)),
    (
        "quantile methods",
        lambda m, x: [
            m.numpy.quantile(m.numpy.arange(7.0), 0.4, method=k) for k in ("higher", "midpoint")
        ],
    ),
]
# the cases whose dtypes depend on the mode also run with x64 off
X64_OFF = ("argsort desc", "nonzero size", "quantile", "top_k axis0")


def _all(m, x, names):
    return [f(m, x) for n, f in CASES if n in names]


@pytest.mark.parametrize("x64", [True, False])
def test_against_jax(x64):
    names = [n for n, _ in CASES if x64 or n in X64_OFF]
    with x64_off() if not x64 else contextlib.nullcontext():
        got = _all(functx, fjnp.asarray(SPECIAL), names)
        want = jax.jit(lambda v: _all(jax, v, names))(SPECIAL)
        for n, g, w in zip(names, got, want):
            try:
                same(g, w)
            except AssertionError as e:
                raise AssertionError(f"{n}: {e}") from None


def test_data_dependent_shapes_and_the_rest_against_numpy():
    """Without size= (concrete input) and the functions the JAX comparison does not run: NumPy
    gives JAX's results on NaN-free data."""
    x = np.array([[3, 0, 2, 3], [0, 1, 2, 2]], np.int32)
    idt = functx.dtypes.default_int()
    vals, idx, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    got = fjnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
    same(got, (vals, idx.astype(idt), inv.reshape(x.shape).astype(idt), cnt.astype(idt)))
    same(tuple(fjnp.unique_all(x)), tuple(got))
    same(tuple(fjnp.unique_counts(x)), (vals, cnt.astype(idt)))
    same(tuple(fjnp.unique_inverse(x)), (vals, inv.reshape(x.shape).astype(idt)))
    same(fjnp.unique_values(x), vals)
    same(fjnp.nonzero(x), tuple(i.astype(idt) for i in np.nonzero(x)))
    same(fjnp.where(x > 1), tuple(i.astype(idt) for i in np.nonzero(x > 1)))
    same(
        fjnp.argwhere(x, size=7),
        np.concatenate([np.argwhere(x), np.zeros((1, 2), int)]).astype(idt),
    )
    same(fjnp.flatnonzero(x), np.flatnonzero(x).astype(idt))
    same(fjnp.sort(x, axis=None, descending=True), np.sort(x, axis=None)[::-1])
    same(fjnp.lexsort((x[0], x[1])), np.lexsort((x[0], x[1])).astype(idt))
    same(
        functx.lax.sort_key_val(x[0], x[1]),
        (np.sort(x[0], kind="stable"), x[1][np.argsort(x[0], kind="stable")]),
    )
    f = x.astype(np.float32)
    same(fjnp.median(f, axis=0), np.median(f, axis=0))
    same(
        fjnp.percentile(f, [25.0, 50.0], axis=1),
        np.percentile(f, [25.0, 50.0], axis=1).astype(np.float32),
    )


def test_complex_and_int_orders():
    c = np.array([1 + 2j, 1 + 1j, np.nan + 0j, 0 - 1j, 1 + np.nan * 1j, -0.0 + 1j, 0 + 1j])
    same(functx.lax.sort(fjnp.asarray(c)), jax.lax.sort(jjnp.asarray(c)))
    same(fjnp.sort_complex(fjnp.asarray(c)), jjnp.sort_complex(jjnp.asarray(c)))
    xs = [(np.arange(12) * 7 % 5).astype(dt) for dt in ("uint8", "bool", "int64")]
    fn = lambda m, xs: [(m.lax.top_k(x, 4), m.numpy.argsort(x, descending=True)) for x in xs]  # noqa: E731
    same(fn(functx, xs), jax.jit(lambda xs: fn(jax, xs))(xs))
    same(fjnp.partition(xs[0], 5), jjnp.partition(xs[0], 5))


@settings(max_examples=6, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    dt=st.sampled_from(["float32", "float64", "int32", "uint8", "float16"]),
    seed=st.integers(0, 2**16),
)
def test_hypothesis_sort_shapes_dtypes(shape, dt, seed):
    """Against NumPy's stable sort (the same order for these NaN-free values, ties included)."""
    x = (np.random.RandomState(seed).randint(-3, 4, size=shape)).astype(dt)
    axis = seed % len(shape)
    same(fjnp.sort(x, axis=axis), np.sort(x, axis=axis))
    idt = functx.dtypes.default_int()
    same(fjnp.argsort(x, axis=axis), np.argsort(x, axis=axis, kind="stable").astype(idt))
    k = min(2, shape[axis])
    key = x.astype(np.float64)
    order = np.argsort(-key, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    same(
        functx.lax.top_k(x, k, axis=axis), (np.take_along_axis(x, idx, axis), idx.astype(np.int32))
    )


def test_errors_like_jax():
    x = fjnp.arange(4.0)
    for fn, exc in [
        (lambda m: m.lax.top_k(m.numpy.arange(4.0), 5), ValueError),
        (lambda m: m.lax.top_k(m.numpy.arange(4.0), -1), ValueError),
        (lambda m: m.lax.top_k(m.numpy.array(1.0), 1), ValueError),
        (lambda m: m.lax.sort((m.numpy.arange(3), m.numpy.arange(4))), TypeError),
        (lambda m: m.lax.sort(m.numpy.arange(3), num_keys=2), ValueError),
        (lambda m: m.lax.sort((m.numpy.arange(3),), num_keys=2), ValueError),
        (lambda m: m.numpy.sort(m.numpy.arange(3), kind="stable"), TypeError),
        (lambda m: m.numpy.nonzero(m.numpy.array(1)), ValueError),
        (lambda m: m.numpy.searchsorted(m.numpy.arange(3), 1, side="middle"), ValueError),
        (lambda m: m.numpy.quantile(m.numpy.arange(3.0), 0.5, method="bad"), ValueError),
        (lambda m: m.jit(lambda v: m.numpy.nonzero(v))(m.numpy.arange(3)), Exception),
        (lambda m: m.jit(lambda v: m.numpy.unique(v))(m.numpy.arange(3)), Exception),
    ]:
        with pytest.raises(exc):
            fn(jax)
        with pytest.raises(exc):
            fn(functx)
    with pytest.raises(functx.errors.ConcretizationTypeError):
        functx.jit(lambda v: fjnp.where(v > 1))(x)


def test_gradients():
    x = np.array([0.3, -1.2, 2.5, 0.7, -0.1, 1.9], np.float64)
    check_grads(lambda v: functx.lax.sort(v) * np.arange(6.0), (x,), order=2)
    check_grads(lambda v: functx.lax.sort((v[::-1], v), num_keys=1)[1] ** 2, (x,), order=1)
    check_grads(lambda v: functx.lax.top_k(v, 3)[0], (x,), order=2)
    check_grads(lambda v: fjnp.quantile(v.reshape(2, 3), 0.3, axis=1), (x,), order=1)
    check_grads(lambda v: fjnp.median(v), (x,), order=1)
    fs = lambda m: (
        lambda v: [  # noqa: E731
            m.grad(lambda v: (m.numpy.sort(v) * m.numpy.arange(6.0)).sum())(v),
            m.grad(lambda v: m.numpy.percentile(v, 30.0))(v),
        ]
    )
    same(fs(functx)(x), jax.jit(fs(jax))(x))


def test_vmap_against_loop():
    x = np.random.RandomState(1).randn(3, 5).astype(np.float32)
    loop = lambda f, xs: jax.tree_util.tree_map(lambda *r: np.stack(r), *[f(r) for r in xs])  # noqa: E731
    same(functx.vmap(functx.lax.sort)(x), loop(functx.lax.sort, x))
    tk = lambda r: functx.lax.top_k(r, 2)  # noqa: E731
    same(functx.vmap(tk, in_axes=1)(x), loop(tk, x.T))
    skv = lambda r: functx.lax.sort_key_val(r, fjnp.arange(5))  # noqa: E731
    same(functx.vmap(skv)(x), loop(skv, x))
    nz = lambda r: fjnp.nonzero(r > 0, size=3)  # noqa: E731
    same(functx.vmap(nz)(x), loop(nz, x))
    same(functx.vmap(fjnp.median)(x), loop(fjnp.median, x))


def test_jit_cpp_against_eager():
    """The kernels on both backends are in tests/lowering/test_backend_suite.py (sort_top_k);
    here complex keys (C++ only) and a gradient of top_k under jit."""
    x = np.random.RandomState(2).randn(2, 9)
    z = (np.round(x) + 1j * x[::-1]).astype(np.complex64)
    topk2 = lambda m: lambda v: (m.lax.top_k(v, 3)[0] ** 2).sum()  # noqa: E731
    both = lambda z, v: (functx.lax.sort(z), functx.grad(topk2(functx))(v))  # noqa: E731
    got = functx.jit(both)(z, x[0])  # one C++ program
    same(got, both(z, x[0]))
    same(got, (np.sort(z), jax.grad(topk2(jax))(x[0])))


def test_docstring_examples_run():
    """Every public function here has Arguments, Returns and an Example that runs (default mode)."""

    from functx.control import sort as lax_sort
    from functx.numpy import _sort

    fns = [getattr(_sort, n) for n in _sort.__all__]
    fns += [lax_sort.sort, lax_sort.sort_key_val, lax_sort.top_k]
    for fn in fns:
        doc = fn.__doc__ or ""
        assert "Arguments:" in doc and "Returns:" in doc and ">>>" in doc, fn.__name__
        # (the public examples run in tests/test_docstrings.py; any others here)
        assert docutil.run(fn, fn.__name__, globs={}).failed == 0, fn.__name__
