"""``lax.reduce_window`` (functx/_window.py) against JAX: values and dtypes over drawn shapes,
windows, strides, paddings and dilations; JAX's choice of the one element per window that a
max/min gradient reaches (ties included); check_grads; the general computation (order of the
fold, several operands); errors; vmap against a loop; jit on C++ and Triton (interpreter) against
eager; stax's pooling layers."""

from __future__ import annotations

import contextlib

import docutil
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.lax as flax
import functx.numpy as fnp
from functx.test_util import check_grads

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax as jlax  # noqa: E402

jax.config.update("jax_enable_x64", True)

MONOIDS = {
    "add": (flax.add, jlax.add, 0.0),
    "max": (flax.max, jlax.max, -np.inf),
    "min": (flax.min, jlax.min, np.inf),
}


@st.composite
def windows(draw):
    nd = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=nd, max_size=nd)))
    dims = tuple(draw(st.lists(st.integers(1, 3), min_size=nd, max_size=nd)))
    strides = tuple(draw(st.lists(st.integers(1, 3), min_size=nd, max_size=nd)))
    padding = draw(
        st.one_of(
            st.sampled_from(["VALID", "SAME", "SAME_LOWER"]),
            st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 2)), min_size=nd, max_size=nd),
        )
    )
    base = tuple(draw(st.lists(st.integers(1, 2), min_size=nd, max_size=nd)))
    wdil = tuple(draw(st.lists(st.integers(1, 2), min_size=nd, max_size=nd)))
    if draw(st.booleans()):  # half the cases: the non-overlapping pooling path
        strides, wdil = dims, (1,) * nd
    return shape, dims, strides, padding, base, wdil


@settings(max_examples=6, deadline=None)
@given(windows(), st.sampled_from(sorted(MONOIDS)), st.integers(0, 2**31 - 1))
def test_monoid_windows_match_jax(win, kind, seed):
    shape, dims, strides, padding, base, wdil = win
    fop, jop, init = MONOIDS[kind]
    x = np.random.default_rng(seed).integers(-2, 3, shape).astype(np.float64)  # many ties
    args = (dims, strides, padding, base, wdil)
    want = jlax.reduce_window(x, init, jop, *args)
    got = flax.reduce_window(x, init, fop, *args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
    if 0 in want.shape:
        return
    # the derivative: JAX's jvp (select-and-gather) and, without window dilation (JAX's vjp
    # refuses it), its gradient (select-and-scatter): the tie-breaking element included
    t = np.random.default_rng(seed + 1).standard_normal(shape)
    ct = np.random.default_rng(seed + 2).standard_normal(want.shape)
    _, jt = jax.jvp(lambda v: jlax.reduce_window(v, init, jop, *args), (x,), (t,))
    _, ft = functx.jvp(lambda v: flax.reduce_window(v, init, fop, *args), (x,), (t,))
    np.testing.assert_allclose(ft, jt, rtol=1e-12, atol=1e-12)
    try:  # JAX's vjp refuses window dilation, and negative padding with base dilation
        jg = jax.grad(lambda v: (jlax.reduce_window(v, init, jop, *args) * ct).sum())(x)
    except (NotImplementedError, TypeError):
        jg = None
    if jg is not None:
        fg = functx.grad(lambda v: (flax.reduce_window(v, init, fop, *args) * ct).sum())(x)
        np.testing.assert_allclose(fg, jg, rtol=1e-12, atol=1e-12)


def test_max_pool_gradient_of_relu_zeros_goes_to_one_element_as_jax():
    # ReLU makes whole windows of zeros: JAX gives each window's cotangent to its first element
    x = np.array([[-1.0, -2.0, 0.5, -1.0, 3.0], [-1.0, 2.0, -0.5, 2.0, -3.0], [1, -1, 0, 0, 1.0]])

    def pool(lax, relu, v):
        y = lax.reduce_window(relu(v), -np.inf, lax.max, (2, 2), (1, 1), "SAME")
        return (y * np.arange(1.0, 1.0 + y.size).reshape(y.shape)).sum()

    want = jax.grad(lambda v: pool(jlax, jax.nn.relu, v))(x)
    got = functx.grad(lambda v: pool(flax, functx.nn.relu, v))(x)
    np.testing.assert_array_equal(got, want)
    # -inf everywhere: padding holds -inf too, and a window of pads and -inf picks its first
    neg = np.full((2, 3), -np.inf)
    f = lambda lax: (
        lambda v: lax.reduce_window(v, -np.inf, lax.max, (2, 2), (1, 1), ((1, 1), (1, 0)))
    )  # noqa: E731
    np.testing.assert_array_equal(
        functx.grad(lambda v: f(flax)(v).sum())(neg), jax.grad(lambda v: f(jlax)(v).sum())(neg)
    )
    # NaN wins the value; the gradient follows JAX's select (>=, false against NaN)
    nan = np.array([1.0, np.nan, 2.0, 3.0, np.nan])
    g = lambda lax: lambda v: lax.reduce_window(v, -np.inf, lax.max, (2,), (1,))  # noqa: E731
    np.testing.assert_array_equal(g(flax)(nan), g(jlax)(nan))
    np.testing.assert_array_equal(
        functx.grad(lambda v: g(flax)(v).sum())(nan), jax.grad(lambda v: g(jlax)(v).sum())(nan)
    )


def test_check_grads_sum_max_min_and_a_general_computation():
    x = np.random.default_rng(0).permutation(24).reshape(4, 6) / 7.0  # distinct values
    cfg = ((2, 3), (1, 2), ((1, 0), (0, 1)), (1, 2), (2, 1))
    check_grads(lambda v: flax.reduce_window(v, 0.0, flax.add, *cfg), (x,), order=2)
    check_grads(lambda v: flax.reduce_window(v, -np.inf, flax.max, (2, 2), (2, 1)), (x,), 2)
    check_grads(lambda v: flax.reduce_window(v, np.inf, flax.min, (3, 2), (1, 2), "SAME"), (x,), 1)
    check_grads(lambda v: flax.reduce_window(v, 1.0, flax.mul, (2, 2), (1, 1)), (x,), 2)


def test_general_computation_several_operands_and_fold_order():
    x = np.arange(1.0, 13.0).reshape(3, 4)
    # not commutative: XLA folds each window in row-major order from the init value
    x3 = np.arange(1.0, 28.0).reshape(3, 3, 3)
    r = [
        lax.reduce_window(x3, 0.0, lambda a, b: 2 * a - b, (2, 2, 2), (1, 1, 1))
        for lax in (flax, jlax)
    ]
    np.testing.assert_allclose(*r)
    # the init value enters each window once: padding and base-dilation holes are skipped
    r = [
        lax.reduce_window(x, 1.0, lambda a, b: a + b, (2, 3), (1, 2), ((1, 2), (2, 1)), (2, 1))
        for lax in (flax, jlax)
    ]
    np.testing.assert_allclose(*r)

    def pair(lax):  # an argmax-like window: (value, index) pairs
        def comb(a, b):
            take = a[0] >= b[0]
            return lax.select(take, a[0], b[0]), lax.select(take, a[1], b[1])

        idx = np.arange(12, dtype=np.int32).reshape(3, 4)
        y = np.array([[1.0, 5, 5, 2], [0, 0, 7, 7], [3, 3, 3, 3]])
        init = (np.float64(-np.inf), np.int32(-1))
        return lax.reduce_window((y, idx), init, comb, (2, 2), (1, 1), "SAME")

    for a, b in zip(pair(flax), pair(jlax)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    # lax.mul (not a specialised monoid in JAX either), and its jvp
    t = np.ones_like(x)
    jp, jt = jax.jvp(lambda v: jlax.reduce_window(v, 1.0, jlax.mul, (1, 3), (1, 1)), (x,), (t,))
    fp, ft = functx.jvp(lambda v: flax.reduce_window(v, 1.0, flax.mul, (1, 3), (1, 1)), (x,), (t,))
    np.testing.assert_allclose(fp, jp, rtol=1e-14)
    np.testing.assert_allclose(ft, jt, rtol=1e-14)


def test_dtypes_in_both_modes():
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    xf = np.arange(12, dtype=np.float32).reshape(3, 4)
    calls = [
        (xi, 0, "add"),
        (xi, np.int32(-(2**31)), "max"),
        (xf, 0.0, "add"),
        (xf, -np.inf, "max"),
        (np.array([True, False, False]), False, "max"),
        (xf, np.float32(1), "mul"),
    ]
    for x64 in (True, False):
        for x, init, kind in calls:
            fop, jop = (flax.mul, jlax.mul) if kind == "mul" else MONOIDS[kind][:2]
            dims = (2,) * x.ndim
            with x64_off() if not x64 else contextlib.nullcontext():
                try:  # a python int init is int64 under x64: JAX's general path then refuses it
                    want = jlax.reduce_window(x, init, jop, dims, None, "VALID")
                except TypeError:
                    with pytest.raises(TypeError):
                        flax.reduce_window(x, init, fop, dims, None, "VALID")
                    continue
                got = flax.reduce_window(x, init, fop, dims, None, "VALID")
            assert got.dtype == want.dtype, (x64, x.dtype, init, kind)
            np.testing.assert_array_equal(got, want)


def test_errors_match_jax_classes():
    x = np.ones(3, np.float32)
    bad = [
        (x, 0.0, "add", (2, 2), (1,), "VALID", None),
        (x, 0.0, "add", (2,), (1, 1), "VALID", None),
        (x, 0.0, "add", (0,), (1,), "VALID", None),
        (x, 0.0, "add", (2,), (0,), "VALID", None),
        (x, 0.0, "add", (2,), (1,), "FOO", None),
        (x, 1.0, "mul", (2,), (1,), "VALID", None),  # a float64 init for a float32 operand
        (x, np.ones(2, np.float32), "mul", (2,), (1,), "VALID", None),
        (np.ones(3, bool), False, "add", (2,), (1,), "VALID", None),
        ((x,), (0.0, 0.0), "add", (2,), (1,), "VALID", None),
    ]
    for x_, init, kind, dims, strides, padding, _ in bad:
        fop, jop = (flax.mul, jlax.mul) if kind == "mul" else MONOIDS[kind][:2]
        with pytest.raises(Exception) as je:
            jlax.reduce_window(x_, init, jop, dims, strides, padding)
        with pytest.raises(type(je.value)):
            flax.reduce_window(x_, init, fop, dims, strides, padding)
    with pytest.raises(RuntimeError):
        flax.padtype_to_pads((3,), (2,), (1,), "SOME")
    # shapes of the helpers
    for args in [((5, 6), (2, 3), (2, 2), "SAME"), ((5, 6), (2, 3), (2, 2), "SAME_LOWER")]:
        assert flax.padtype_to_pads(*args) == jlax.padtype_to_pads(*args)
    pads = ((0, 0), (1, 1))
    for args in [((5, 6), (2, 3), (2, 2), pads), ((5, 6), (2, 3), (2, 2), pads, (2, 1), (1, 2))]:
        assert flax.reduce_window_shape_tuple(*args) == tuple(jlax.reduce_window_shape_tuple(*args))


def _pools(lax, v):
    """What people write: flax-style avg/max pooling over NHWC, and general windows."""
    avg = lax.reduce_window(v, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
    mx = lax.reduce_window(v, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")
    pads = ((0, 0), (1, 1), (0, 1), (0, 0))
    sm = lax.reduce_window(v, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 2, 1), pads, (1, 1, 2, 1))
    mn = lax.reduce_window(
        v, np.inf, lax.min, (1, 2, 2, 1), (1, 1, 1, 1), "VALID", None, (1, 2, 1, 1)
    )
    return avg, mx, sm, mn


X4 = np.random.default_rng(3).standard_normal((2, 5, 6, 3)).astype(np.float32)


def test_vmap_against_a_loop():
    f = lambda v: _pools(flax, v)  # noqa: E731
    xs = np.stack([X4, X4[::-1] * 2.0], axis=2)
    outs = functx.vmap(f, in_axes=2, out_axes=1)(xs)
    for i in range(xs.shape[2]):
        for o, w in zip(outs, f(xs[:, :, i])):
            np.testing.assert_allclose(o[:, i], w, rtol=1e-6)


def test_jit_cpp_and_triton_match_eager(monkeypatch):
    for o, w in zip(_pools(jlax, X4), _pools(flax, X4)):
        np.testing.assert_allclose(o, w, rtol=1e-6, atol=1e-6)
    x2 = X4[0, :, :, 0]
    h = lambda v: flax.reduce_window(v, -np.inf, flax.max, (3, 3), (2, 2), "SAME")  # noqa: E731
    np.testing.assert_array_equal(functx.jit(h)(x2), h(x2))

    # a gradient under jit: a max pool with stride 1 and a sum pool (both transposes compiled)
    def loss(u):
        m = flax.reduce_window(u, -np.inf, flax.max, (2, 2), (1, 1), "SAME")
        return (m * X4[0, :, :, 0]).sum() + flax.reduce_window(
            u, 0.0, flax.add, (2, 3), (2, 3)
        ).sum()

    g = functx.grad(loss)
    np.testing.assert_allclose(functx.jit(g)(X4[1, :, :, 1]), g(X4[1, :, :, 1]), rtol=1e-6)
    pytest.importorskip("triton")
    from functx.lowering.triton.program import compile_triton

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    small = X4[0, :4, :5, 0]  # the max pool's taps (the average pool is a reshape and a sum)
    (out,) = compile_triton(functx.make_jaxpr(h)(small))(small)
    np.testing.assert_allclose(out.numpy(), h(small), rtol=1e-6, atol=1e-6)


def test_docstring_examples_run():
    import doctest

    for name in ("reduce_window", "reduce_window_shape_tuple", "padtype_to_pads"):
        fn = getattr(flax, name)
        assert "Arguments:" in fn.__doc__ and "Returns:" in fn.__doc__
        (test,) = doctest.DocTestFinder().find(fn, name, globs={})
        assert test.examples, name
        # (the public names' examples run in tests/test_docstrings.py; the others here)
        assert docutil.run(fn, name, globs={}).failed == 0, name


def test_stax_pooling_layers_run_as_jax():
    stax = pytest.importorskip("jax.example_libraries.stax")
    x = np.random.default_rng(4).standard_normal((2, 6, 5, 3))

    def ours(kind, window, strides, padding):  # stax's layer, written against functx
        dims, st = (1, *window, 1), (1, *strides, 1)
        if kind == "max":
            return flax.reduce_window(x, -np.inf, flax.max, dims, st, padding)
        out = flax.reduce_window(x, 0.0, flax.add, dims, st, padding)
        if kind == "avg":
            ones = fnp.ones(x.shape[1:3], x.dtype)
            out = (
                out
                / flax.reduce_window(ones, 0.0, flax.add, window, strides, padding)[None, ..., None]
            )
        return out

    for kind, layer in (("max", stax.MaxPool), ("avg", stax.AvgPool), ("sum", stax.SumPool)):
        for window, strides, padding in [
            ((2, 2), (2, 2), "VALID") if kind != "max" else ((3, 2), (1, 2), "SAME")
        ]:
            init_fun, apply_fun = layer(window, strides, padding)
            shape, _ = init_fun(None, x.shape)
            want = apply_fun((), jnp.asarray(x))
            got = ours(kind, window, strides, padding)
            assert tuple(got.shape) == tuple(shape)
            np.testing.assert_allclose(got, want, rtol=1e-12)
