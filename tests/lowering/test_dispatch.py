"""``functx.jit``'s dispatch fast path (issue 20, item 3): calls with NumPy arrays, NumPy and
Python scalars, committed and uncommitted Arrays skip flattening and tracing after the first
call. These tests check that the fast path computes what the general path does: values, dtypes
in both x64 modes, non-contiguous inputs, float0 outputs, and what it must not take."""

from __future__ import annotations

import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.numpy as fnp
from functx import config


def _f(x, y):
    return x * 2.0 + y


@pytest.mark.parametrize(
    "x",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.arange(6, dtype=np.float64).reshape(2, 3),
        np.float32(1.5),
        1.5,
        True,
        fnp.zeros((2, 3), fnp.float32),  # an uncommitted (broadcast) Array
        fnp.asarray(np.ones((2, 3), np.float32)),
    ],
    ids=["np32", "np64", "npscalar", "pyfloat", "pybool", "zeros", "array"],
)
def test_fast_path_matches_the_general_path(x):
    jf = functx.jit(_f)
    y = np.float32(0.25)
    first = jf(x, y)  # general path (and records the fast path)
    assert jf._cpu_calls, "the call should have a fast-path record"
    again = jf(x, y)  # fast path
    want = np.asarray(x, np.float64) * 2.0 + 0.25
    for r in (first, again):
        assert r.dtype == first.dtype and r.shape == np.shape(want)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-6)
    with x64_off():
        lo = jf(x, y)
        lo2 = jf(x, y)
    assert lo.dtype == lo2.dtype and lo.dtype != np.float64, lo.dtype
    np.testing.assert_allclose(np.asarray(lo2), want, rtol=1e-6)
    assert config.x64_on()  # (the suite runs with x64 on)


def test_non_contiguous_inputs_on_the_fast_path():
    jf = functx.jit(lambda x: x + 1.0)
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[:, ::2]  # strided
    np.testing.assert_array_equal(np.asarray(jf(view)), view + 1)
    np.testing.assert_array_equal(np.asarray(jf(view)), view + 1)
    base[0, 0] = 100.0  # values are read at each call, never cached
    np.testing.assert_array_equal(np.asarray(jf(view)), view + 1)
    b = np.broadcast_to(np.float32(3.0), (4, 3))
    np.testing.assert_array_equal(np.asarray(jf(b)), b + 1)


def test_float0_outputs_survive_repeated_calls():
    # (the fast path once skipped the float0 outputs of such a program from its second call)
    g = functx.jit(functx.grad(lambda x, n: (x * n).sum(), argnums=(0, 1), allow_int=True))
    x, n = fnp.asarray([1.0, 2.0]), fnp.asarray([1, 2])
    for _ in range(3):
        gx, gn = g(x, n)
        np.testing.assert_array_equal(np.asarray(gx), [1.0, 2.0])
        assert gn.dtype == functx.dtypes.float0 and gn.shape == (2,)


def test_python_ints_take_the_general_path():
    jf = functx.jit(lambda x: x + 1)
    assert int(jf(3)) == 4 and int(jf(2**31 + 5)) == 2**31 + 6  # (x64 on: int64)
    assert not jf._cpu_calls  # an int's dtype depends on its value: not on the fast path


def test_pytrees_on_the_fast_path_keyed_by_structure():
    jt = functx.jit(lambda p, b: {k: v * 2 + b.sum() for k, v in p.items()})
    b = np.ones(2, np.float32)
    p1 = {"a": np.ones(3, np.float32), "b": fnp.zeros(2, fnp.float32)}
    p2 = {"a": np.ones(3, np.float32), "c": fnp.zeros(2, fnp.float32)}  # another structure
    for _ in range(2):
        for p in (p1, p2):
            out = jt(p, b)
            assert set(out) == set(p)
            for k in p:
                np.testing.assert_array_equal(np.asarray(out[k]), np.asarray(p[k]) * 2 + 2)
    assert len(jt._cpu_calls) == 2 and len(jt.cache) == 2
    p3 = {"a": np.ones(4, np.float32), "b": fnp.zeros(2, fnp.float32)}  # another leaf shape
    np.testing.assert_array_equal(np.asarray(jt(p3, b)["a"]), np.full(4, 4.0))
    assert len(jt.cache) == 3


def test_shape_change_recompiles_on_the_fast_path():
    jf = functx.jit(lambda x: x.sum())
    for n in (3, 4, 3, 4):
        x = np.arange(n, dtype=np.float32)
        assert float(jf(x)) == float(x.sum())
    assert len(jf.cache) == 2


def test_traces_under_named_axes_are_keyed_by_them():
    # (lax.axis_size is a Python int baked into a trace: a jit or scan body traced under a vmap
    # of one size must not be reused under another, nor the fast path outside any axis)
    import functx.lax as lax

    f = functx.jit(lambda x: x * lax.axis_size("i"))
    for n in (3, 5, 3):
        out = functx.vmap(f, axis_name="i")(fnp.ones(n, fnp.float32))
        np.testing.assert_array_equal(np.asarray(out), np.full(n, float(n)))

    def body(c, _):
        return c + lax.axis_size("i"), None

    def scanned(x):
        return lax.scan(body, x, None, length=2)[0]

    for n in (2, 3):
        out = functx.vmap(scanned, axis_name="i")(fnp.zeros(n, fnp.float32))
        np.testing.assert_array_equal(np.asarray(out), np.full(n, 2.0 * n))
    g = functx.jit(lambda x: lax.psum(x, "i"))
    out = functx.vmap(g, axis_name="i")(fnp.arange(4.0, dtype=fnp.float32))
    np.testing.assert_array_equal(np.asarray(out), np.full(4, 6.0))
    with pytest.raises(NameError):
        g(fnp.arange(4.0, dtype=fnp.float32))  # (outside the vmap: unbound, not the cached trace)
