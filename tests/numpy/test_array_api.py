"""The Array API standard's functions and signatures on ``functx.numpy`` against JAX: can_cast,
isdtype, unstack, from_dlpack and ``Array.__dlpack__``, the keyword signatures of astype, clip
and reshape, repeat's integer and bool counts, sign at zero, finfo/iinfo of dtypes and arrays,
and the docstrings' examples. Values, dtypes and error classes are JAX's."""

from __future__ import annotations

import inspect
import itertools
import warnings

import docutil
import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.numpy as fjnp
import functx.numpy._array_api as aapi
from functx.test_util import check_grads

DTYPES = [
    np.dtype(d) for d in ("bool", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8")
] + [np.dtype(ml_dtypes.bfloat16), np.dtype("c8"), np.dtype("c16")]
KINDS = [
    "bool",
    "signed integer",
    "unsigned integer",
    "integral",
    "real floating",
    "complex floating",
    "numeric",
]


def assert_same(out, ref):
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    np.testing.assert_array_equal(out, ref)


def raises_like(f, g):
    """``f`` (functx) raises an instance of the class ``g`` (JAX) raises."""
    with pytest.raises(Exception) as ref:
        g()
    with pytest.raises(type(ref.value)):
        f()


def test_can_cast_and_isdtype_match_jax():
    for a, b in itertools.product(DTYPES, DTYPES):
        for casting in ("safe", "same_kind"):
            assert fjnp.can_cast(a, b, casting) == jjnp.can_cast(a, b, casting), (a, b)
    for d in DTYPES + [np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.int4)]:
        for k in KINDS + [d, np.float32, ("bool", "real floating"), (np.int8, "complex floating")]:
            assert fjnp.isdtype(d, k) == jjnp.isdtype(d, k), (d, k)
    assert fjnp.isdtype("int8", "integral") and fjnp.isdtype(fjnp.float32, fjnp.float32)
    # arrays: their dtype
    x, xj = fjnp.ones(2, fjnp.float32), jjnp.ones(2, jjnp.float32)
    assert fjnp.can_cast(x, fjnp.float64) is True == jjnp.can_cast(xj.dtype, jjnp.float64)
    assert fjnp.can_cast(x, fjnp.int8) is False == jjnp.can_cast(xj.dtype, jjnp.int8)
    # a tracer: its dtype
    assert functx.make_jaxpr(lambda t: t * fjnp.can_cast(t, fjnp.int8, "unsafe"))(x) is not None
    # errors: the classes JAX raises
    raises_like(lambda: fjnp.can_cast(1.0, fjnp.float32), lambda: jjnp.can_cast(1.0, jjnp.float32))
    raises_like(lambda: fjnp.can_cast(x, fjnp.int8, "foo"), lambda: jjnp.can_cast(xj, "i1", "foo"))
    raises_like(lambda: fjnp.isdtype(fjnp.int8, "foo"), lambda: jjnp.isdtype(jjnp.int8, "foo"))
    raises_like(lambda: fjnp.isdtype(fjnp.int8, 3), lambda: jjnp.isdtype(jjnp.int8, 3))
    with pytest.raises(ValueError, match="integral"):
        fjnp.isdtype(fjnp.int8, "integer")


@settings(max_examples=6, deadline=None)
@given(
    shape=st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple),
    data=st.data(),
)
def test_unstack_matches_jax(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    dt = data.draw(st.sampled_from(["bool", "i4", "f4", "c8"]), label="dtype")
    x = (np.arange(int(np.prod(shape))).reshape(shape) % 3).astype(dt)
    # (NumPy's slices as the reference: JAX's eager unstack compiles one program per slice;
    # test_unstack_transforms_and_errors compares with JAX itself)
    out, ref = fjnp.unstack(fjnp.asarray(x), axis=axis), tuple(np.moveaxis(x, axis, 0))
    assert isinstance(out, tuple) and len(out) == len(ref)
    for o, r in zip(out, ref):
        assert_same(o, r)


def test_unstack_transforms_and_errors():
    x = np.arange(12.0).reshape(3, 4)
    # jit on the C++ backend (one compile: unstack, and a complex gather's fill value for an
    # out-of-range index, NaN+0j as in JAX), vmap and grad against JAX
    c, idx = np.array([1 + 2j, 3j], np.complex64), np.array([0, 9])
    f = functx.jit(lambda t, u, i: (fjnp.stack(fjnp.unstack(t, axis=1)[::-1]), fjnp.take(u, i)))
    out = f(fjnp.asarray(x), fjnp.asarray(c), fjnp.asarray(idx))
    assert_same(out[0], jjnp.stack(jjnp.unstack(jjnp.asarray(x), axis=1)[::-1]))
    assert_same(out[1], jjnp.take(jjnp.asarray(c), idx))
    v = functx.vmap(lambda t: fjnp.unstack(t)[1])(fjnp.asarray(x))
    assert_same(v, jax.vmap(lambda t: jjnp.unstack(t)[1])(jjnp.asarray(x)))
    check_grads(lambda t: fjnp.unstack(t, axis=-1)[2] * 3.0, (fjnp.asarray(x),), order=1)
    g = functx.grad(lambda t: fjnp.unstack(t)[0].sum())(fjnp.asarray(x))
    assert_same(g, jax.grad(lambda t: jjnp.unstack(t)[0].sum())(jjnp.asarray(x)))
    assert inspect.signature(fjnp.unstack) == inspect.signature(aapi.unstack)
    for bad in ((np.float32(1.0), {}), (x, {"axis": 2}), (x, {"axis": -3})):
        raises_like(
            lambda b=bad: fjnp.unstack(fjnp.asarray(b[0]), **b[1]),
            lambda b=bad: jjnp.unstack(jjnp.asarray(b[0]), **b[1]),
        )
    raises_like(lambda: fjnp.unstack([1, 2]), lambda: jjnp.unstack([1, 2]))


def test_from_dlpack_and_array_dlpack():
    a = np.arange(6.0).reshape(2, 3)
    out = fjnp.from_dlpack(a)
    assert_same(out, jjnp.from_dlpack(a))
    shared = fjnp.from_dlpack(a, copy=False)  # the producer's buffer, as JAX on the CPU
    a[0, 0] = 7.0
    assert float(shared[0, 0]) == 7.0 and float(out[0, 0]) == 0.0
    assert float(fjnp.from_dlpack(a, copy=True)[0, 0]) == 7.0
    assert fjnp.from_dlpack(out) is out
    assert_same(fjnp.from_dlpack(a[:, ::2]), a[:, ::2])
    with pytest.raises(ValueError, match="copy=False"):
        fjnp.from_dlpack(a[:, ::2], copy=False)
    raises_like(lambda: fjnp.from_dlpack([1, 2]), lambda: jjnp.from_dlpack([1, 2]))
    with x64_off():
        assert fjnp.from_dlpack(a).dtype == jjnp.from_dlpack(a).dtype == np.float32
        with pytest.raises(ValueError, match="jax_enable_x64"):
            fjnp.from_dlpack(a, copy=False)
    # Array.__dlpack__: JAX's keyword signature; NumPy (DLPack 1.0) reads the buffer itself,
    # an older consumer gets a writable copy
    x = fjnp.asarray(np.arange(4, dtype=np.int32))
    sig, ref = inspect.signature(x.__dlpack__), inspect.signature(jjnp.ones(1).__dlpack__)
    assert list(sig.parameters) == list(ref.parameters)
    assert x.__dlpack_device__() == (1, 0)
    back = np.from_dlpack(x)
    assert_same(back, np.arange(4, dtype=np.int32))
    assert not back.flags.writeable
    assert "dltensor" in repr(x.__dlpack__())
    with pytest.raises(BufferError):
        x.__dlpack__(copy=False)


def test_astype_clip_reshape_signatures():
    x, xj = fjnp.asarray([-1.5, 0.5, 2.5]), jjnp.asarray([-1.5, 0.5, 2.5])
    for name in ("astype", "clip", "reshape", "from_dlpack", "isdtype", "unstack"):
        assert list(inspect.signature(getattr(fjnp, name)).parameters) == [
            p
            for p in inspect.signature(getattr(jjnp, name)).parameters
            if p not in ("out_sharding",)
        ], name
    # astype: dtype None is the default float, copy/device keywords, complex sources
    for args, kw in [((fjnp.int32,), {"copy": True}), ((None,), {}), ((bool,), {})]:
        assert_same(fjnp.astype(x, *args, **kw), jjnp.astype(xj, *args, **kw))
    assert_same(fjnp.astype(x, fjnp.int8, device=x.device), xj.astype(jjnp.int8))
    c = np.array([0j, 1j, 2 + 0j], np.complex64)
    assert_same(fjnp.astype(fjnp.asarray(c), bool), jjnp.astype(jjnp.asarray(c), bool))
    with pytest.warns(DeprecationWarning, match="complex to real"):
        assert_same(fjnp.astype(fjnp.asarray(c), fjnp.float32), c.real)
    with x64_off():
        assert fjnp.astype(fjnp.arange(2), None).dtype == np.float32
    # clip: min/max by keyword or position; JAX's errors
    for args, kw in [((0, 1), {}), ((), {"min": 0}), ((), {"max": 1}), ((), {"min": 2, "max": 1})]:
        assert_same(fjnp.clip(x, *args, **kw), jjnp.clip(xj, *args, **kw))
    assert_same(x.clip(max=0), xj.clip(max=0))
    i8 = np.array([-3, 5], np.int8)
    assert_same(fjnp.clip(fjnp.asarray(i8), 0, 2.5), jjnp.clip(jjnp.asarray(i8), 0, 2.5))
    for kw in ({"a_min": 0}, {"x": 1}):
        raises_like(lambda k=kw: fjnp.clip(x, **k), lambda k=kw: jjnp.clip(xj, **k))
    raises_like(lambda: fjnp.clip(), lambda: jjnp.clip())
    raises_like(lambda: fjnp.clip(fjnp.asarray(c), 0), lambda: jjnp.clip(jjnp.asarray(c), 0))
    # reshape: copy is accepted and unused (as JAX); newshape is gone (as JAX)
    assert_same(fjnp.reshape(x, (3, 1), copy=False), jjnp.reshape(xj, (3, 1), copy=False))
    raises_like(lambda: fjnp.reshape(x, newshape=(3,)), lambda: jjnp.reshape(xj, newshape=(3,)))


def test_repeat_counts_and_complex_take():
    x = np.array([[1 + 2j, 3j], [4.0, 5 - 1j]], np.complex64)
    cases = [
        (np.array([1, 0], np.uint64), 1),
        (np.array([2], np.uint8), 0),
        (np.uint64(2), None),
        (True, 1),
        (np.array([True, False]), 0),
    ]
    for reps, axis in cases:
        # (NumPy's repeat of the counts as int64 as the reference: JAX's eager repeat compiles
        # dozens of programs; the values and dtypes are the same)
        out = fjnp.repeat(fjnp.asarray(x), reps, axis=axis)
        assert_same(out, np.repeat(x, np.asarray(reps).astype(np.int64), axis=axis))
    empty = np.zeros(0, bool)
    out = fjnp.repeat(fjnp.asarray(empty), fjnp.asarray(np.zeros(0, np.uint8)))
    assert_same(out, empty)
    # a gather's fill value for an out-of-range index of a complex array: NaN+0j, as JAX
    idx = np.array([0, 9])
    ref = jjnp.take(jjnp.asarray(x[0]), idx)
    assert_same(fjnp.take(fjnp.asarray(x[0]), fjnp.asarray(idx)), ref)


def test_sign_and_signbit_at_zero():
    v = np.array([-0.0, 0.0, -2.0, 3.0, np.inf, -np.inf], np.float64)
    for fn in ("sign", "signbit"):
        out, ref = getattr(fjnp, fn)(fjnp.asarray(v)), getattr(jjnp, fn)(jjnp.asarray(v))
        assert_same(out, ref)
        assert_same(np.signbit(np.asarray(out)), np.signbit(np.asarray(ref)))  # sign(-0.0) = -0.0
    c = np.array([0j, complex(-0.0, -0.0), 3 + 4j, -3j], np.complex128)
    out, ref = fjnp.sign(fjnp.asarray(c)), jjnp.sign(jjnp.asarray(c))
    np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-15)


def test_finfo_iinfo_of_dtypes_and_arrays():
    for dt in ("float16", "float32", "float64", ml_dtypes.bfloat16, "complex64", "complex128"):
        a, b = fjnp.finfo(dt), jjnp.finfo(dt)
        x = fjnp.zeros(2, dt)
        assert fjnp.finfo(x).dtype == jjnp.finfo(jjnp.zeros(2, dt)).dtype == a.dtype == b.dtype
        for attr in ("bits", "eps", "max", "min", "smallest_normal", "tiny", "resolution"):
            assert getattr(a, attr) == getattr(b, attr), (dt, attr)
            assert type(getattr(a, attr)) is type(getattr(b, attr)), (dt, attr)
    for dt in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        a, b = fjnp.iinfo(fjnp.zeros(2, dt)), jjnp.iinfo(dt)
        assert (a.bits, a.min, a.max, a.dtype) == (b.bits, b.min, b.max, b.dtype)
        assert type(a.max) is type(b.max) is int
    raises_like(lambda: fjnp.finfo(fjnp.int32), lambda: jjnp.finfo(jjnp.int32))
    raises_like(lambda: fjnp.iinfo(fjnp.float32), lambda: jjnp.iinfo(jjnp.float32))


def test_docstring_examples():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # (the public names' examples run in tests/test_docstrings.py; the module's others here)
        assert docutil.run(aapi, optionflags=0).failed == 0
    for name in ("astype", "clip", "reshape"):
        fn = getattr(fjnp, name)
        assert docutil.run(fn, name, optionflags=0).failed == 0
        assert "Arguments:" in fn.__doc__ and "Returns:" in fn.__doc__
