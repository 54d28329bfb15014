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


def _momentum_step(state, K, y):
    """The kernel least squares momentum step of ``benchmarks/workloads.py`` (family ``kls``)."""

    def loss(a):
        r = K @ a - y
        return 0.5 * fnp.sum(r * r) + 0.5e-3 * a @ (K @ a)

    a, v = state
    value, g = functx.value_and_grad(loss)(a)
    v = 0.9 * v + g
    return value, (a - 1e-3 * v, v)


def test_fed_back_outputs_give_what_fresh_arguments_give():
    """A loop feeding a step's outputs (functx Arrays in a tuple) back takes the fast path with a
    runner for Arrays; fresh NumPy copies of the same state take another (NumPy arrays passed as
    they are): the same program, so the same bits, and both follow NumPy's float64 loop."""
    rng = np.random.default_rng(3)
    n = 24
    K = rng.standard_normal((n, n)).astype(np.float32)
    K = K @ K.T / n + np.eye(n, dtype=np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    state = (rng.standard_normal(n).astype(np.float32), np.zeros(n, np.float32))
    step = functx.jit(_momentum_step)
    a64, v64 = (s.astype(np.float64) for s in state)
    K64, y64 = K.astype(np.float64), y.astype(np.float64)
    for _ in range(4):
        value, new = step(state, K, y)
        fresh_value, fresh = step(tuple(np.array(s) for s in state), K, y)
        assert type(new[0]) is functx.Array and new[0].dtype == np.float32
        np.testing.assert_array_equal(np.asarray(value), np.asarray(fresh_value))
        for got, again in zip(new, fresh):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(again))
        r = K64 @ a64 - y64
        want_value = 0.5 * r @ r + 0.5e-3 * a64 @ (K64 @ a64)
        v64 = 0.9 * v64 + K64.T @ r + 0.5e-3 * (K64 + K64.T) @ a64
        a64 = a64 - 1e-3 * v64
        np.testing.assert_allclose(float(value), want_value, rtol=1e-4)
        np.testing.assert_allclose(np.asarray(new[0]), a64, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(new[1]), v64, rtol=1e-4, atol=1e-4)
        state = new
    assert len(step.cache) == 1 and len(step._cpu_calls) == 2  # (Arrays; NumPy arrays)


def test_pytree_signatures_retrace_on_any_change():
    """The fast path's signature of tuples, lists and dicts: another leaf shape or dtype, a
    list for a tuple, other dict keys (inserted out of order), a None, a namedtuple (optree's
    node: the general path) each get their own program and the right result; a float64 NumPy
    leaf under x64 off is converted to the program's float32."""
    import collections

    jf = functx.jit(lambda p, b: (p["w"][0] * 2.0 + b + p.get("a", 0.0), p["w"][1]))
    x, b = np.arange(3, dtype=np.float32), np.float32(1.0)
    cases = [
        ({"w": (x, x)}, b),
        ({"w": (x, x + 1)}, b),  # (same signature)
        ({"w": [x, x]}, b),  # a list
        ({"w": (x[:2], x)}, b),  # a leaf's shape
        ({"w": (x.astype(np.float64), x)}, b),  # a leaf's dtype (x64 on)
        ({"w": (x, x), "z": None}, b),  # another key, holding None
        ({"w": (x, x), "a": x * 3}, b),  # keys out of order (leaves in sorted order)
    ]
    for _ in range(2):
        for p, bb in cases:
            first, second = jf(p, bb)
            w0, w1 = p["w"]
            np.testing.assert_array_equal(np.asarray(first), w0 * 2.0 + bb + p.get("a", 0.0))
            np.testing.assert_array_equal(np.asarray(second), w1)
            assert first.dtype == np.result_type(w0.dtype, np.float32)
    assert len(jf.cache) == 6 and len(jf._cpu_calls) == 6
    Pair = collections.namedtuple("Pair", "a b")
    out = jf({"w": Pair(x, x)}, b)  # (a namedtuple: optree flattens it)
    np.testing.assert_array_equal(np.asarray(out[0]), x * 2 + 1)
    assert len(jf.cache) == 7 and len(jf._cpu_calls) == 6
    with x64_off():
        for _ in range(2):
            first, _ = jf({"w": (x.astype(np.float64), x)}, b)
            assert first.dtype == np.float32
            np.testing.assert_array_equal(np.asarray(first), x * 2 + 1)


def test_gpu_pytree_fast_path_matches_the_general_path(monkeypatch):
    """GPU arrays in tuples, lists and dicts take the GPU fast path (``gpu_tree_signature``;
    Triton's interpreter as the GPU) with the general path's results, leaves in optree's order
    (dict keys inserted out of order); another structure, leaf shape or key set is another
    signature; a namedtuple, a Python float or an uncommitted leaf has none (general path)."""
    import collections

    pytest.importorskip("triton")
    from functx.devices import device as placement
    from functx.devices.eager import gpu_tree_signature

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(placement, "_gpu_list", placement._gpu_list or None)
    monkeypatch.setattr(placement, "GPU_IN_USE", placement.GPU_IN_USE)
    gpu = functx.devices("gpu")[0]
    jf = functx.jit(lambda p, b: (p["w"][0] * 2.0 + b + p.get("a", 0.0), p["w"][1] - b))
    x = np.arange(3, dtype=np.float32)
    cases = [
        ({"w": (x, x + 1)}, np.float32(1.0)),
        ({"w": (x, x + 2), "a": x * 3}, np.float32(2.0)),  # keys out of order (sorted leaves)
    ]
    for _ in range(2):
        for p, b in cases:
            first, second = jf(*functx.device_put((p, b), gpu))
            w0, w1 = p["w"]
            np.testing.assert_array_equal(np.asarray(first), w0 * 2.0 + b + p.get("a", 0.0))
            np.testing.assert_array_equal(np.asarray(second), w1 - b)
    assert len(jf.cache) == 2 and len(jf._gpu_calls) == 2
    p, b = functx.device_put(cases[1], gpu)
    sig, leaves = gpu_tree_signature((p, b))
    assert [id(v) for v in leaves] == [id(p["a"]), id(p["w"][0]), id(p["w"][1]), id(b)]
    w0, w1 = p["w"]
    others = [({"w": [w0, w1]}, b), ({"w": (w0[:2], w1)}, b), ({"w": (w0, w1), "z": None}, b)]
    sigs = {gpu_tree_signature(a)[0] for a in [({"w": (w0, w1)}, b), *others]}
    assert len(sigs) == 4 and sig not in sigs
    Pair = collections.namedtuple("Pair", "a b")
    for a in [({"w": Pair(w0, w1)}, b), ({"w": (w0, w1)}, 1.0), (fnp.zeros(3), b)]:
        assert gpu_tree_signature(a) is None
