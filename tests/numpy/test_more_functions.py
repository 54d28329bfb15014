"""``functx.numpy``'s isclose, allclose, array_equal, diff, ediff1d, cross, isscalar,
iscomplexobj, trapezoid, select, left_shift and right_shift (and ``lax``'s shift_left,
shift_right_logical, shift_right_arithmetic) against JAX: values, dtypes exactly, errors, the
docstrings' examples; hypothesis draws shapes and dtypes."""

from __future__ import annotations

import docutil
import jax
import jax.lax as jlax
import jax.numpy as jjnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from x64util import x64_off

import functx
import functx.lax as flax
import functx.numpy as fjnp
import functx.numpy._more as more

F32, F64, I8, I32, I64, U8, U32 = (np.dtype(d) for d in ("f4", "f8", "i1", "i4", "i8", "u1", "u4"))
BOOL = np.dtype(bool)


def assert_same(out, ref, rtol=1e-6):
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    if ref.dtype.kind in "biu":
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_allclose(out, ref, rtol=rtol, atol=rtol)


def draw(data, dt, shape, label="x"):
    if dt == BOOL:
        return data.draw(hnp.arrays(BOOL, shape), label=label)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -50), min(info.max, 50)
        return data.draw(hnp.arrays(dt, shape, elements=st.integers(lo, hi)), label=label)
    a = data.draw(
        hnp.arrays(F64, shape, elements=st.floats(-5, 5, allow_subnormal=False)), label=label
    )
    return a.astype(dt)


SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


@settings(max_examples=5)
@given(data=st.data())
def test_isclose_allclose_array_equal(data):
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    shape = data.draw(SHAPES)
    a = draw(data, dt, shape, "a")
    noise = draw(data, dt, shape, "noise") * data.draw(st.sampled_from([0.0, 1e-9, 1e-6, 1e-3]))
    b = (a + noise).astype(dt)
    special = np.array([np.nan, np.inf, -np.inf, 1.0], dt)
    a2 = np.concatenate([a.ravel(), special, special, special])
    b2 = np.concatenate([b.ravel(), special, special[::-1], np.roll(special, 1)])
    for kw in [{}, {"equal_nan": True}, {"rtol": 1e-3, "atol": 0.0}]:
        assert_same(fjnp.isclose(a2, b2, **kw), jjnp.isclose(a2, b2, **kw))
        assert_same(fjnp.allclose(a, b, **kw), jjnp.allclose(a, b, **kw))
        assert_same(fjnp.allclose(a2, a2, **kw), jjnp.allclose(a2, a2, **kw))
    for x, y in [(a, b), (a, a), (a2, a2), (a, a[..., :1])]:
        for en in (False, True):
            assert_same(fjnp.array_equal(x, y, en), jjnp.array_equal(x, y, en))


@settings(max_examples=15)
@given(data=st.data())
def test_diff_and_ediff1d(data):
    dt = data.draw(st.sampled_from([F32, F64, I32, I8, U8, BOOL]), label="dtype")
    shape = data.draw(SHAPES)
    a = draw(data, dt, shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    n = data.draw(st.integers(0, 3), label="n")
    kw = {}
    if dt != BOOL and data.draw(st.booleans(), label="edges"):
        kw = {"prepend": np.asarray(1, dt), "append": draw(data, dt, shape, "app")}
    assert_same(fjnp.diff(a, n=n, axis=axis, **kw), jjnp.diff(a, n=n, axis=axis, **kw))
    if dt != BOOL:
        e = {"to_begin": np.array([7, 8], dt), "to_end": np.asarray(3, dt)}
        assert_same(fjnp.ediff1d(a), jjnp.ediff1d(a))
        assert_same(fjnp.ediff1d(a, **e), jjnp.ediff1d(a, **e))


def test_diff_errors_as_jax():
    for args, kw in [((np.float32(1.0),), {}), ((np.ones(3),), {"n": -1})]:
        with pytest.raises(ValueError):
            jjnp.diff(*args, **kw)
        with pytest.raises(ValueError):
            fjnp.diff(*args, **kw)


@settings(max_examples=12)
@given(data=st.data())
def test_cross(data):
    dt = data.draw(st.sampled_from([F32, F64, I32]), label="dtype")
    na, nb = data.draw(st.sampled_from([2, 3])), data.draw(st.sampled_from([2, 3]))
    batch = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=3))
    a = draw(data, dt, (*batch, na), "a")
    b = draw(data, dt, (*batch, nb), "b")
    assert_same(fjnp.cross(a, b), jjnp.cross(a, b))
    if batch:
        at, bt = np.moveaxis(a, -1, 0), np.moveaxis(b, -1, 0)
        kw = (
            {"axisa": 0, "axisb": 0, "axisc": 0} if na == 3 or nb == 3 else {"axisa": 0, "axisb": 0}
        )
        assert_same(fjnp.cross(at, bt, **kw), jjnp.cross(at, bt, **kw))
    with pytest.raises(ValueError):
        fjnp.cross(np.ones(4), np.ones(3))
    with pytest.raises(ValueError):
        jjnp.cross(np.ones(4), np.ones(3))


@settings(max_examples=12)
@given(data=st.data())
def test_trapezoid(data):
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4))
    y = draw(data, dt, shape, "y")
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    x1 = np.sort(draw(data, dt, (shape[axis],), "x"))
    xf = draw(data, dt, shape, "xf")
    for kw in [{}, {"dx": 0.5}, {"x": x1}, {"x": xf}]:
        assert_same(
            fjnp.trapezoid(y, axis=axis, **kw), jjnp.trapezoid(y, axis=axis, **kw), rtol=1e-5
        )


@settings(max_examples=6)
@given(data=st.data())
def test_select(data):
    dt = data.draw(st.sampled_from([F32, I32, I8, BOOL]), label="dtype")
    shape = data.draw(SHAPES)
    k = data.draw(st.integers(1, 3))
    conds = [draw(data, BOOL, shape, f"c{i}") for i in range(k)]
    choices = [draw(data, dt, shape, f"v{i}") for i in range(k)]
    # (a Python int default with bool choices is int64 in JAX with x64, int32 in functx: item 2)
    for default in (False if dt == BOOL else 0, draw(data, dt, shape[-1:], "d")):
        assert_same(fjnp.select(conds, choices, default), jjnp.select(conds, choices, default))
    with pytest.raises(ValueError):
        fjnp.select(conds, choices[:-1] + [choices[0], choices[0]])
    with pytest.raises(ValueError):
        fjnp.select([], [])


def test_isscalar_iscomplexobj():
    cases = [
        1,
        1.0,
        True,
        1j,
        np.float32(1),
        np.int8(1),
        "s",
        None,
        [1.0],
        (1,),
        np.ones(()),
        np.ones(2),
        np.complex64(1j),
        np.ones(2, np.complex64),
    ]
    for c in cases:
        assert fjnp.isscalar(c) is jjnp.isscalar(c), c
        assert fjnp.iscomplexobj(c) is jjnp.iscomplexobj(c), c
    assert fjnp.isscalar(fjnp.ones(())) and not fjnp.isscalar(fjnp.ones(2))
    for dt in (F32, F64, I32, BOOL, np.dtype(fjnp.bfloat16)):
        assert fjnp.iscomplexobj(fjnp.zeros(2, dt)) is False
    seen = []
    functx.vmap(lambda v: seen.append((fjnp.isscalar(v), fjnp.iscomplexobj(v))) or v)(np.ones(3))
    assert seen == [(True, False)]


INT_DTYPES = [I8, np.dtype("i2"), I32, I64, U8, np.dtype("u2"), U32, np.dtype("u8")]


def _shift_operands(dt):
    info = np.iinfo(dt)
    bits = info.bits
    xs = [info.min, info.min + 1, 0, 1, 5, info.max - 3, info.max]
    xs += [-7, -1] if info.min < 0 else [7, 200 % (info.max + 1)]
    ys = [0, 1, 2, bits - 2, bits - 1, bits, bits + 3] + ([-1, -5] if info.min < 0 else [info.max])
    x, y = np.meshgrid(np.array(xs, dt), np.array(ys, dt))
    return x.ravel(), y.ravel()


@pytest.mark.parametrize("dt", INT_DTYPES, ids=str)
def test_lax_shifts_every_edge(dt):
    x, y = _shift_operands(dt)
    for name in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        assert_same(getattr(flax, name)(x, y), getattr(jlax, name)(x, y))
        assert_same(functx.jit(getattr(flax, name))(x, y), getattr(jlax, name)(x, y))
    assert_same(fjnp.left_shift(x, y), jjnp.left_shift(x, y))
    assert_same(fjnp.right_shift(x, y), jjnp.right_shift(x, y))


@settings(max_examples=6)
@given(data=st.data())
def test_numpy_shifts_promote_and_broadcast(data):
    # (bool operands promote to int32 in functx, to int64 in JAX with x64: issue 18 item 2)
    d1 = data.draw(st.sampled_from([I8, I32, U8, U32]), label="d1")
    d2 = data.draw(st.sampled_from([I8, I32, U8]), label="d2")
    shape = data.draw(SHAPES)
    x = draw(data, d1, shape, "x")
    y = np.abs(draw(data, d2, shape[-1:], "y")) % 9
    y = y.astype(d2)
    for f in ("left_shift", "right_shift"):
        assert_same(getattr(fjnp, f)(x, y), getattr(jjnp, f)(x, y))
        assert_same(getattr(fjnp, f)(x, 3), getattr(jjnp, f)(x, 3))


def test_shift_errors_as_jax():
    for mod in (flax, jlax):
        with pytest.raises(TypeError):
            mod.shift_left(np.ones(2, np.int32), np.ones(2, np.int8))
        with pytest.raises(TypeError):
            mod.shift_right_logical(np.ones(2, np.float32), np.ones(2, np.float32))
    for mod in (fjnp, jjnp):
        with pytest.raises(TypeError):
            mod.left_shift(np.ones(2, np.float32), 1)


@pytest.mark.usefixtures("no_x64")
def test_traced_and_docstring_examples():
    x = np.arange(6.0).reshape(2, 3)
    f = lambda v: (fjnp.diff(v, append=0.0), fjnp.trapezoid(v), fjnp.cross(v, v[::-1]))  # noqa: E731
    assert str(functx.make_jaxpr(f)(x)).startswith("{ lambda")
    for o, r in zip(
        functx.jit(f)(x),
        jax.jit(lambda v: (jjnp.diff(v, append=0.0), jjnp.trapezoid(v), jjnp.cross(v, v[::-1])))(x),
    ):
        assert_same(o, r)
    for name in more.__all__:
        assert getattr(fjnp, name) is getattr(more, name)
        doc = getattr(more, name).__doc__
        assert "Arguments:" in doc and "Returns:" in doc and "Example:" in doc, name
    # (the public names' examples run in tests/test_docstrings.py; the module's others here)
    assert docutil.run(more, optionflags=0).failed == 0
    for name in ("shift_left", "shift_right_logical", "shift_right_arithmetic"):
        assert docutil.run(getattr(flax, name), name, globs={}, optionflags=0).failed == 0
        assert "Example:" in getattr(flax, name).__doc__


# --- NaN reductions, frexp/ldexp, gcd/lcm, delete/insert, piecewise, interp, histograms, ... ----
# Running JAX means compiling every function (seconds each on the CI machine), so these tests take
# the values from NumPy, whose semantics jax.numpy follows for these functions, and the shapes and
# dtypes from JAX itself without running it: jax.eval_shape traces without compiling, with x64 off
# (the 32-bit inputs used here give the same dtypes in functx). One test runs a few under jax.jit.
NANS = np.array([[1.5, np.nan, -2.0, 4.0], [np.nan] * 4, [0.5, 3.0, np.nan, 1.0]], np.float32)
INDEX_DT = functx.dtypes.default_int()


def compare(f, *args, rtol=1e-6, ref=np, jax_types=True):
    """``f(functx.numpy, *args)`` output by output: values against ``f(ref, *args)``, shapes and
    dtypes against ``jax.eval_shape`` of ``f(jax.numpy, *args)``."""
    import warnings

    outs = jax.tree_util.tree_leaves(f(fjnp, *args))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        refs = jax.tree_util.tree_leaves(f(ref, *args))
    assert len(outs) == len(refs)
    if jax_types:
        with jax.enable_x64(functx.config.jax_enable_x64):  # (functx's mode: x64 in the suite)
            types = jax.tree_util.tree_leaves(jax.eval_shape(lambda *a: f(jjnp, *a), *args))
        assert len(types) == len(outs)
    for k, (o, r) in enumerate(zip(outs, refs)):
        o, r = np.asarray(o), np.asarray(r)
        if jax_types:
            assert (o.shape, o.dtype) == (types[k].shape, types[k].dtype), (k, o, types[k])
        assert_same(o, r.astype(o.dtype), rtol)


NAN_KWS = [
    {},
    {"axis": 1},
    {"axis": 0, "keepdims": True},
    {"axis": 1, "where": np.array([1, 0, 1, 1], bool)},
]


def test_nan_reductions():
    def f(m, a):
        out = []
        for name in ("nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanvar", "nanstd"):
            for kw in NAN_KWS:
                if name in ("nanmax", "nanmin") and "where" in kw:
                    kw = {**kw, "initial": 0}
                out.append(getattr(m, name)(a, **kw))
        for kw in [{"axis": 1, "initial": 2}, {"axis": 0, "dtype": F32}]:
            out += [m.nansum(a, **kw), m.nanprod(a, **kw)]
        out += [
            m.nanvar(a, axis=1, ddof=1),
            m.nanmax(a, axis=1, initial=10),
            m.nanstd(a, 0, ddof=2),
        ]
        out += [m.nanvar(a, 1, mean=m.nanmean(a, 1, keepdims=True))]
        for name in ("nancumsum", "nancumprod"):
            out += [getattr(m, name)(a), getattr(m, name)(a, axis=1, dtype=F32)]
        with np.errstate(invalid="ignore"):  # the NaNs of `a` cast to int8 on purpose
            small = a[:1].astype(np.int8)
        out += [m.nanmax(a[:, :0], axis=1, initial=0), m.nanmin(small, initial=-3)]
        for name in ("nanargmax", "nanargmin"):
            some = a[np.array([0, 2])]  # NumPy raises on an all-NaN slice, JAX gives -1 (below)
            out += [
                getattr(m, name)(some),
                getattr(m, name)(some, 1),
                getattr(m, name)(some, 0, keepdims=True),
            ]
        return out

    compare(f, NANS)
    for name in ("nanargmax", "nanargmin"):
        out = getattr(fjnp, name)(NANS, 1)
        assert out.dtype == fjnp.argmax(NANS).dtype
        np.testing.assert_array_equal(out, [3, -1, 1] if name == "nanargmax" else [2, -1, 0])


def test_frexp_ldexp_gcd_lcm():
    x32 = np.array([8.0, -3.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 0.1, 3e38], F32)
    e = np.array([3, -2, 5, 0, 1, -1, 2, 140, -200, -1], np.int32)
    a = np.array([12, 7, 0, -4, 0, 18], np.int32)
    b = np.array([[18], [-5]], np.int8)

    def f(m, x32, x64, e, a, b):
        return [
            m.frexp(x32),
            m.frexp(x64),
            m.ldexp(x32, e),
            m.ldexp(x64, e),
            m.frexp(a)[0],
            m.gcd(a, b),
            m.lcm(a, b),
            m.fabs(a),
        ]

    compare(f, x32, x32, e, a, b, rtol=0)
    compare(f, x32, x32.astype(F64) * 1e-270, e, a, b, rtol=0, jax_types=False)
    # JAX's XLA flushes float32 subnormals to zero; functx (and NumPy) keep them exact
    np.testing.assert_array_equal(fjnp.frexp(np.float32(1e-40))[0], np.frexp(np.float32(1e-40))[0])
    for mod in (fjnp, jjnp):
        with pytest.raises(ValueError):
            mod.gcd(np.ones(2, np.float32), 2)
        with pytest.raises(ValueError):
            mod.ldexp(np.ones(2, np.float32), np.ones(2, np.float32))


def test_delete_insert_append():
    # JAX's delete/insert/append are NumPy's (jax.numpy's own tests compare them with NumPy);
    # NumPy is the cheap reference here, one case each runs against JAX.
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    for obj, axis in [
        (1, None),
        (-1, 1),
        (np.array([0, 2]), 1),
        (slice(0, 3, 2), 0),
        (np.array([True, False, True]), 0),
    ]:
        assert_same(fjnp.delete(a, obj, axis), np.delete(a, obj, axis))
    for obj, vals, axis in [
        (1, 9, None),
        (np.array([0, 2, 2]), np.array([7, 8, 9]), 1),
        (-1, np.array([5, 6, 7, 8]), 0),
        (slice(None), 0.5, 1),
        (np.array([3]), np.array([[1], [2], [3]]), 1),
        (np.array([4, 0]), np.array([[1, 2]]), 1),
    ]:
        assert_same(fjnp.insert(a, obj, vals, axis), np.insert(a, obj, vals, axis))
    assert_same(fjnp.append(a, np.ones(2, I8)), np.append(a, np.ones(2, I8)))
    assert_same(fjnp.append(a, a[:1], axis=0), np.append(a, a[:1], axis=0))
    for mod in (fjnp, jjnp):
        with pytest.raises(ValueError):
            mod.delete(a, np.array([1.0]))
        with pytest.raises(ValueError):
            mod.insert(a, np.array([[1]]), 0)
    with pytest.raises(functx.errors.ConcretizationError):
        functx.jit(lambda o: fjnp.delete(a, o))(np.array([1]))


def test_piecewise_interp_histogram_bincount_digitize():
    x = np.linspace(-3, 3, 13, dtype=np.float32)
    xp = np.array([-2.0, -1.0, 0.5, 0.5, 2.0], np.float32)
    fp = np.array([1.0, -1.0, 3.0, 4.0, 0.0], np.float32)
    data = np.array([0.0, 0.5, 1.0, 3.0, 4.0, -1.0, 2.0, 2.0], np.float32)
    w = np.arange(8, dtype=np.float32)
    ints = np.array([0, 1, 1, 3, -2, 7], np.int32)

    def f(m, x, xp, fp, data, w, ints):
        fl = [lambda v: -v, lambda v, k=2.0: v * k, 1.0]
        out = [
            m.piecewise(x, [x < 0, x > 1], fl),
            m.piecewise(x, [x > 0], [m.sin]),
        ]
        out += [
            m.interp(x, xp, fp),
            m.interp(x, xp, fp, left=-9, right=9),
            m.interp(x, xp[:1], fp[:1]),
            m.interp(ints, ints[:2] * 2, ints[:2]),
        ]
        for kw in [
            {},
            {"bins": 4},
            {"bins": 3, "range": (0, 2)},
            {"weights": w, "density": True},
            {"bins": m.array([0.0, 1.0, 3.0])},
        ]:
            hist, edges = m.histogram(data, **kw)
            out += [hist.astype(np.float32), edges]  # JAX's counts are float, NumPy's int
        out += [m.histogram(ints[:3] * 0 + 2)[0].astype(F32), m.histogram_bin_edges(data, 5)]
        for bins in (m.array([0.0, 1.0, 2.0]), m.array([2.0, 1.0, 0.0])):
            out += [m.digitize(data, bins), m.digitize(data, bins, right=True)]
        return out

    with x64_off():  # (JAX's default mode: with x64 on, one dtype differs; see the report)
        compare(f, x, xp, fp, data, w, ints)
    assert fjnp.histogram(data)[0].dtype == F32
    nonneg = np.maximum(ints, 0)
    np.testing.assert_array_equal(fjnp.bincount(ints), np.bincount(nonneg))
    assert_same(fjnp.bincount(ints, length=4), np.bincount(nonneg)[:4].astype(INDEX_DT))
    assert_same(fjnp.bincount(ints, w[:6], length=10), np.bincount(nonneg, w[:6], 10).astype(F32))
    # a bool array of conditions: one per entry, each for the whole array (as in JAX)
    out = fjnp.piecewise(x, np.array([False, True]), [lambda v: v * 0, lambda v: v * 10])
    assert_same(out, x * 10)
    np.testing.assert_array_equal(
        fjnp.bincount(ints, minlength=9), np.bincount(np.maximum(ints, 0), minlength=9)
    )
    for mod in (fjnp, jjnp):
        with pytest.raises(TypeError):
            mod.bincount(np.ones(3, np.float32))
        with pytest.raises(ValueError):
            mod.piecewise(x, [x > 0], [1, 2, 3])


def test_cov_corrcoef():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(3, 5)).astype(np.float32)
    y = rng.normal(size=(5,)).astype(np.float32)
    fw, aw = np.array([1, 2, 1, 3, 1], np.int32), rng.uniform(0.5, 1, 5).astype(np.float32)

    def f(m, x, y, fw, aw):
        out = [
            m.cov(x, **kw)
            for kw in [
                {},
                {"bias": True},
                {"ddof": 0},
                {"fweights": fw},
                {"aweights": aw},
                {"fweights": fw, "aweights": aw},
            ]
        ]
        out += [
            m.cov(y),
            m.cov(fw),
            m.corrcoef(x),
            m.corrcoef(x[0], y),
            m.corrcoef(y),
        ]
        return out

    compare(f, m, y, fw, aw, rtol=1e-5)


def test_index_helpers():
    idx = np.array([5, 7, 1, 0], np.int32)
    mi = (np.array([1, 0, 2], np.int32), np.array([2, 3, 5], np.int32))
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)

    def f(m, idx, a):
        out = list(m.unravel_index(idx, (2, 4)))
        out += [
            m.ravel_multi_index(mi, (2, 4), mode=mode, order=order)
            for mode in ("wrap", "clip")
            for order in ("C", "F")
        ]
        for x in (
            a[0, 0].astype(np.int32),
            a[0, 0, :2].astype(F32) * 0.5,
            a[0, 0, :2].astype(np.int8),
        ):
            out += [m.vander(x), m.vander(x, 4, increasing=True)]
        out += [m.rot90(a, k) for k in range(-1, 4)] + [
            m.rot90(a, 1, (2, 0)),
            m.rot90(a, 3, (2, 0)),
        ]
        out += [m.rollaxis(a, ax, st) for ax, st in [(2, 0), (0, 3), (1, -1)]]
        out += [m.diagflat(a[0, :2, :2], 1)]
        out += [m.array_equiv(x, y) for x, y in [(a[0], a[0, :1]), (a[0], a[1])]]
        out += [
            m.logspace(0, 2, 5),
            m.logspace(0, 2, 4, base=2.0, endpoint=False),
            m.geomspace(1, 1000, 4),
            m.geomspace(-1, -16, 5),
        ]
        return out

    compare(f, idx, a, rtol=1e-5)
    # out-of-range flat indices are clipped, negative ones count from the end (JAX's rule)
    oob = fjnp.unravel_index(np.array([-1, 30, -30], np.int32), (2, 4))
    np.testing.assert_array_equal(np.stack(oob), [[1, 1, 0], [3, 3, 0]])
    ok = (np.array([1, 0]), np.array([2, 3]))
    np.testing.assert_array_equal(
        fjnp.ravel_multi_index(ok, (2, 4)), jjnp.ravel_multi_index(ok, (2, 4))
    )
    for mod in (fjnp, jjnp):
        with pytest.raises(ValueError):
            mod.ravel_multi_index(mi, (2, 4))
    for args in [(3,), (3, 1), (2, -1, 4)]:
        for name in ("tril_indices", "triu_indices"):
            for o, r in zip(getattr(fjnp, name)(*args), getattr(np, name)(*args)):
                assert o.dtype == INDEX_DT
                np.testing.assert_array_equal(o, r)
    z = np.ones((2, 3))
    for name in ("tril_indices_from", "triu_indices_from", "diag_indices_from"):
        arg = z if name != "diag_indices_from" else z[:, :2]
        for o, r in zip(getattr(fjnp, name)(arg), getattr(np, name)(arg)):
            np.testing.assert_array_equal(o, r)
    for o, r in zip(fjnp.diag_indices(3, 3), np.diag_indices(3, 3)):
        np.testing.assert_array_equal(o, r)
    np.testing.assert_array_equal(fjnp.indices((2, 3)), np.indices((2, 3)))
    for o, r in zip(fjnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        np.testing.assert_array_equal(o, r)
    assert fjnp.isrealobj(a) and not fjnp.isrealobj(1j)
    # NumPy (and JAX's documentation) give False for shapes that do not broadcast; JAX 0.10.2
    # raises TypeError there
    assert not fjnp.array_equiv(a[0], a[0, :2])


def test_more_names_types_match_jax():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    ints = np.array([0, 1, 1, 3, 7], np.int32)

    def f(m, a, ints):
        some = NANS[np.array([0, 2])]
        return [
            m.append(a, a[:1], axis=0),
            m.append(a, ints),
            m.delete(a, 1, 1),
            m.insert(a, 2, 5, 0),
            m.bincount(ints, minlength=8) if m is np else m.bincount(ints, length=8),
            m.bitwise_left_shift(a, 2),
            m.bitwise_right_shift(a, 1),
            m.nanargmax(some, 1),
            m.nanargmin(some, 0),
            m.nancumsum(NANS, 1),
            m.nancumprod(NANS),
            m.indices((2, 3)),
            m.tril_indices(3, 1),
            m.triu_indices(2, 0, 3),
            m.tril_indices_from(a),
            m.triu_indices_from(a, -1),
            m.diag_indices(3),
            m.diag_indices_from(a[:3, :3]),
        ]

    compare(f, a, ints)
    assert fjnp.isrealobj(a) and not fjnp.isrealobj(1j) and not jjnp.iscomplexobj(a)
    assert fjnp.isrealobj is not None and jjnp.isrealobj(a)


def test_new_names_trace_jit_and_grad():
    # functx.jit against functx's eager results (compared above); the gradient against its formula
    x = np.array([1.0, np.nan, 3.0, -2.0], np.float32)

    def f(v):
        m, e = fjnp.frexp(v)
        xp = v[:2] * 0 + np.array([0.0, 2.0], F32)
        return fjnp.nanvar(v), m, e, fjnp.interp(v, xp, v[:2] * 0 + 1.0), fjnp.nancumsum(v)

    assert str(functx.make_jaxpr(f)(x)).startswith("{ lambda")
    for o, r in zip(functx.jit(f)(x), f(x)):
        assert_same(o, r)
    g = functx.grad(lambda u: fjnp.nansum(u * u) + fjnp.nanmax(u) + fjnp.nanstd(u))(x)
    keep = ~np.isnan(x)
    v = x[keep]
    expected = np.full_like(x, np.nan)  # NaN at the NaN input, as JAX gives
    expected[keep] = 2 * v + (v == v.max()) + (v - v.mean()) / (v.size * v.std())
    assert_same(g, expected, 1e-5)


def test_scalar_types_are_dtypes_and_constructors_as_in_jax():
    names = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    names += ["float16", "bfloat16", "float32", "float64"]
    for name in names:
        f, j = getattr(fjnp, name), getattr(jjnp, name)
        assert np.dtype(f) == np.dtype(j) and fjnp.dtype(f) == np.dtype(j)
        assert (
            f == np.dtype(j)
            and np.dtype(j) == f
            and f == np.dtype(j).type
            and f != np.int16
            or name == "int16"
        )
        assert hash(f) == hash(np.dtype(j).type) and {f: 1}[np.dtype(j).type] == 1
        v = 1 if name != "bool_" else True
        out = f(v)
        assert isinstance(out, functx.Array) and out.dtype == np.dtype(j) and out.shape == ()
        assert fjnp.zeros(2, f).dtype == np.dtype(j) and fjnp.ones(2).astype(f).dtype == np.dtype(j)
        assert isinstance(np.dtype(j).type(1), f) and not isinstance(1.5, f)
    assert fjnp.issubdtype(fjnp.float32, fjnp.floating) and fjnp.finfo(fjnp.bfloat16).bits == 16
    assert float(fjnp.float32(0.5)) == 0.5 and int(fjnp.int32(3.7)) == int(jjnp.int32(3.7))
    np.testing.assert_array_equal(fjnp.int8(np.array([1.9, -2.5])), [1, -2])
    assert fjnp.float_ is fjnp.float64 and fjnp.int_ is fjnp.int64
    assert fjnp.single == jjnp.single and fjnp.double == jjnp.double
    out = functx.jit(lambda x: fjnp.float32(x) * 2)(np.arange(3, dtype=np.int32))
    assert out.dtype == np.float32
    assert functx.grad(lambda x: fjnp.float32(x) * x)(2.0) == 4.0
    assert "Example:" in fjnp.float32.__doc__


@pytest.mark.usefixtures("no_x64")
def test_array_api_inspection_as_jax():
    x = fjnp.ones(3)
    assert x.__array_namespace__() is fjnp and x.__array_namespace__(api_version="2023.12") is fjnp
    for arr in (x, jjnp.ones(3)):
        with pytest.raises(ValueError):
            arr.__array_namespace__(api_version="1999.01")
    assert x.to_device(x.device).device == x.device
    assert x.astype(fjnp.int8, device=x.device).dtype == np.int8
    np.testing.assert_array_equal(
        x.clip(min=0.5, max=0.7), jjnp.ones(3, np.float32).clip(min=0.5, max=0.7)
    )
    info, jinfo = fjnp.__array_namespace_info__(), jjnp.__array_namespace_info__()
    assert info.capabilities() == jinfo.capabilities() and info.default_device() is None
    with jax.enable_x64(False):
        assert info.default_dtypes() == jinfo.default_dtypes()
        for kind in (None, "bool", "integral", "real floating", ("bool", "signed integer")):
            assert info.dtypes(kind=kind) == jinfo.dtypes(kind=kind), kind
    assert info.devices()[0] is None and x.device in info.devices()
    out = functx.jit(lambda v: v.__array_namespace__().sum(v.astype(fjnp.int8)))(np.ones(3))
    assert int(out) == 3


def test_lax_population_count():
    xs = {}
    for dt in (I8, np.dtype(np.int16), I32, I64, U8, np.dtype(np.uint16), U32, np.dtype(np.uint64)):
        info = np.iinfo(dt)
        xs[dt] = np.array([0, 1, 7, 96, info.max, info.min, info.max // 3, info.max // 5], dt)
    for dt, x in xs.items():
        out = flax.population_count(x)
        with jax.enable_x64(True):
            ref = jax.eval_shape(jlax.population_count, x)
        assert (out.dtype, out.shape) == (ref.dtype, ref.shape)
        bits = dt.itemsize * 8
        expected = [bin(int(v) & (2**bits - 1)).count("1") for v in x]
        np.testing.assert_array_equal(out, np.array(expected, dt))
    np.testing.assert_array_equal(
        functx.jit(flax.population_count)(xs[I32]), flax.population_count(xs[I32])
    )
    for mod in (flax, jlax):
        with pytest.raises(TypeError):
            mod.population_count(np.ones(2, np.float32))
    assert "Example:" in flax.population_count.__doc__
