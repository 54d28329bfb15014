"""``lax.bitcast_convert_type`` (the primitive), ``Array.view``, ``Array.byteswap`` and the jnp
functions that read sign bits (signbit, copysign, nextafter, frexp, ldexp), against JAX: values bit
for bit, shapes, dtypes and error classes, in both x64 modes, eager, under vmap, jvp/grad and C++
``jit``. (Triton, under its interpreter: the ``bitcast`` case of
tests/lowering/test_backend_suite.py.)

JAX on the CPU flushes subnormal operands of arithmetic to zero (``5e-324 * 2`` is 0 there);
functx keeps IEEE subnormals, so frexp/ldexp/nextafter are compared on normal values, zeros,
infinities and NaNs only, and the subnormal cases are checked against NumPy.
"""

from __future__ import annotations

import doctest
import functools
import os
import re
import warnings

import docutil
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.numpy as fnp
from functx import lax

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
NUMERIC = [
    np.dtype(t)
    for t in (
        np.int8,
        np.uint8,
        np.int16,
        np.uint16,
        np.int32,
        np.uint32,
        np.int64,
        np.uint64,
        np.float16,
        BF16,
        np.float32,
        np.float64,
    )
]


def _bits(rng, shape, dt):
    """An array of ``dt`` with uniformly random bits (NaNs with payloads, subnormals, ...)."""
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    return np.frombuffer(rng.bytes(n), dt).reshape(shape).copy()


def _in_shape(shape, src, dst):
    return (*shape, dst.itemsize // src.itemsize) if dst.itemsize > src.itemsize else shape


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.tobytes() == want.tobytes(), (got, want)


# --- the primitive, eager ------------------------------------------------------------------------
def _numpy_bitcast(x, dst):
    """The reference: the little-endian bytes of ``x`` read as ``dst`` (JAX's shapes)."""
    x = np.array(x, order="C")
    if dst.itemsize == x.dtype.itemsize:
        return x.view(dst)
    if dst.itemsize < x.dtype.itemsize:
        return x.reshape(-1).view(dst).reshape(*x.shape, x.dtype.itemsize // dst.itemsize)
    return x.reshape(-1).view(dst).reshape(x.shape[:-1])


@settings(max_examples=40, deadline=None)
@given(
    src=st.sampled_from(NUMERIC),
    dst=st.sampled_from(NUMERIC),
    shape=st.sampled_from([(), (3,), (2, 3), (0, 2)]),
    seed=st.integers(0, 2**16),
)
def test_bitcast_eager_matches_numpy_view(src, dst, shape, seed):
    x = _bits(np.random.default_rng(seed), _in_shape(shape, src, dst), src)
    got = lax.bitcast_convert_type(x, dst)
    assert not got.weak_type
    _same_bits(got, _numpy_bitcast(x, dst))


@settings(max_examples=15, deadline=None)
@given(
    src=st.sampled_from(NUMERIC[:6] + NUMERIC[8:11]),
    dst=st.sampled_from(NUMERIC[:6] + NUMERIC[8:11]),
    shape=st.sampled_from([(), (3,), (2, 1)]),
    seed=st.integers(0, 2**16),
)
def test_bitcast_eager_default_mode(src, dst, shape, seed):
    # (x64 off: the 8- to 32-bit dtypes; 64-bit requests are truncated, test_bitcast_default_mode)
    x = _bits(np.random.default_rng(seed), _in_shape(shape, src, dst), src)
    with x64_off():
        got = lax.bitcast_convert_type(x, dst)
    _same_bits(got, _numpy_bitcast(x, dst))


def test_bitcast_examples_and_scalars():
    _same_bits(
        lax.bitcast_convert_type(np.float32([1.0, -0.0, np.inf]), np.int32),
        np.int32([0x3F800000, -(2**31), 0x7F800000]),
    )
    _same_bits(lax.bitcast_convert_type(np.uint32(0x01020304), np.uint8), np.uint8([4, 3, 2, 1]))
    _same_bits(lax.bitcast_convert_type(np.uint8([4, 3, 2, 1]), np.uint32), np.uint32(0x01020304))
    for x, dt in ((1.0, np.int64), (3, np.float64), (np.float32(2), np.int32), (-1, np.uint32)):
        if dt == np.uint32 and isinstance(x, int):
            x = np.int32(x)
        got, want = lax.bitcast_convert_type(x, dt), jax.lax.bitcast_convert_type(x, dt)
        _same_bits(got, want)
        assert got.weak_type == want.weak_type is False
    for same in (np.bool_([True, False]), np.complex64([1 + 2j])):  # same dtype: allowed
        _same_bits(lax.bitcast_convert_type(same, same.dtype), same)


def test_sub_byte_and_float8_bits_match_jax():
    # int2/int4/uint4/float4/float8 are stored one per byte by ml_dtypes; the primitive's rules
    # take them directly (functx.dtypes admits them with the narrow-dtype work)
    i4, u4, f4 = (np.dtype(getattr(ml_dtypes, n)) for n in ("int4", "uint4", "float4_e2m1fn"))
    cases = [
        (np.array([[-1, 7], [3, -8]], i4), np.dtype(np.int8)),
        (np.array([-1, 7, 0, 5], i4), u4),
        (np.array([-1, 7], i4), f4),
        (np.int8([-61, 5]), np.dtype(ml_dtypes.int2)),
        (np.int8([-61, 5]), f4),
        (np.uint16([0x1234, 0xFEDC]), i4),
        (np.array([[1, 2, 3, 4]], u4), np.dtype(np.uint16)),
        (np.float32([1.0, -2.5]), np.dtype(ml_dtypes.float8_e4m3fn)),
        (np.uint8([0x7F, 0x80, 0x3C]), np.dtype(ml_dtypes.float8_e5m2)),
    ]
    want = jax.jit(lambda xs: [jax.lax.bitcast_convert_type(x, d) for x, (_, d) in zip(xs, cases)])(
        [x for x, _ in cases]
    )
    prim = functx.primitives.bitcast_convert_type_p
    for (x, dt), w in zip(cases, want):
        got = prim.impl(x, new_dtype=dt)
        _same_bits(got, w)
        aval = prim.abstract_eval(functx.ShapedArray(x.shape, x.dtype), new_dtype=dt)
        assert aval.shape == got.shape and aval.dtype == dt
    with pytest.raises(ValueError, match=re.escape("4 * 4 != 8")):
        prim.abstract_eval(functx.ShapedArray((4,), u4), new_dtype=np.dtype(np.uint8))


def test_narrow_dtypes_through_lax_and_jit():
    x = np.int8([-61, 5])
    got = lax.bitcast_convert_type(x, fnp.int4)
    _same_bits(got, jax.lax.bitcast_convert_type(x, jnp.int4))
    _same_bits(lax.bitcast_convert_type(got, np.int8), x)
    with pytest.raises(functx.errors.UnsupportedError, match="int4 has no compiled bitcast"):
        functx.jit(lambda v: lax.bitcast_convert_type(v, fnp.int4))(x)
    f8 = fnp.asarray(np.float32([1.0, -1.0]).astype(fnp.float8_e4m3fn))
    with pytest.raises(NotImplementedError, match="only supports 16, 32, and 64-bit types"):
        fnp.signbit(f8)


_ERRORS = [
    (np.bool_([True]), np.int8),
    (np.int8([1]), np.bool_),
    (np.complex64([1j]), np.int64),
    (np.float32([1.0]), np.complex64),
    (np.float32([1.0, 2.0, 3.0]), np.float64),
    (np.float32(1.0), np.int64),
    (np.uint8(1), np.uint16),
    (np.float32([1.0]), None),
]


@pytest.mark.parametrize("x, dt", _ERRORS)
def test_bitcast_errors_match_jax(x, dt):
    with pytest.raises(Exception) as want:
        jax.lax.bitcast_convert_type(x, dt)
    with pytest.raises(Exception) as got:
        lax.bitcast_convert_type(x, dt)
    assert isinstance(got.value, want.type), (got.value, want.value)
    assert str(got.value).startswith(str(want.value).rstrip(".")), (got.value, want.value)


def test_bitcast_default_mode():
    with x64_off():
        for x, dt in ((1.0, np.int32), (2, np.float32), (np.float64([1.5, 2]), np.int16)):
            _same_bits(lax.bitcast_convert_type(x, dt), jax.lax.bitcast_convert_type(x, dt))
        # a 64-bit request warns and gives the 32-bit dtype, as in JAX
        with pytest.warns(UserWarning, match="float64 requested in bitcast_convert_type"):
            got = lax.bitcast_convert_type(np.int32([7]), np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = jax.lax.bitcast_convert_type(np.int32([7]), np.float64)
        _same_bits(got, want)


# --- transforms ----------------------------------------------------------------------------------
def test_bitcast_jvp_and_grad_are_zero():
    x = np.float32([1.5, -2.0])
    for dt in (np.float16, np.int32):

        def f(v, dt=dt):
            return jax.lax.bitcast_convert_type(v, dt)

        def g(v, dt=dt):
            return lax.bitcast_convert_type(v, dt)

        (p1, t1), (p2, t2) = functx.jvp(g, (x,), (x,)), jax.jvp(f, (x,), (x,))
        _same_bits(p1, p2)
        t1, t2 = np.asarray(t1), np.asarray(t2)
        assert t1.shape == t2.shape
        if np.dtype(dt).kind == "f":
            _same_bits(t1, t2)  # zeros
        else:
            assert t1.dtype == functx.dtypes.float0 and t2.dtype == jax.dtypes.float0
    gx = functx.grad(lambda v: lax.bitcast_convert_type(v, np.float32).sum())(x)
    _same_bits(gx, jax.grad(lambda v: jax.lax.bitcast_convert_type(v, np.float32).sum())(x))


def test_bitcast_vmap():
    x = _bits(np.random.default_rng(0), (2, 2), np.dtype(np.float32))
    for in_axes in (0, 1, -1):
        examples = np.moveaxis(x, in_axes, 0)
        for dt in (np.int32, np.uint16, np.float64):
            got = functx.vmap(lambda v, dt=dt: lax.bitcast_convert_type(v, dt), in_axes)(x)
            # (JAX's own vmap fails for a wider dtype with the batch axis last)
            want = np.stack([_numpy_bitcast(e, np.dtype(dt)) for e in examples])
            _same_bits(got, want)


# --- C++ jit and JAX: dtype pairs in one program ---------------------------------------------
_QUIET = {np.dtype(np.float16): 0x0200, BF16: 0x0040}


def _quieted(x):
    """``x`` with the quiet bit set on its half-precision NaNs: the compiled backends hold
    float16/bfloat16 values as float32, whose conversions quiet a signaling NaN."""
    x = np.array(x)
    if x.dtype in _QUIET:
        u = x.view(np.uint16)
        u[np.isnan(x.astype(np.float32))] |= _QUIET[x.dtype]
    return x


# 16 pairs, one per pair of widths (8, 16, 32, 64 bits), every dtype a source and a target
_BY_WIDTH = {w: [d for d in NUMERIC if d.itemsize * 8 == w] for w in (8, 16, 32, 64)}
PAIRS = [
    (_BY_WIDTH[a][(i + j) % len(_BY_WIDTH[a])], _BY_WIDTH[b][(i + 2 * j) % len(_BY_WIDTH[b])])
    for i, a in enumerate(_BY_WIDTH)
    for j, b in enumerate(_BY_WIDTH)
]


def _pair_input(xs, src, dst):
    x = xs[src.name]
    return x[:, : dst.itemsize // src.itemsize] if dst.itemsize > src.itemsize else x


def _pairs_program(bitcast, xs):
    return {f"{s.name}->{d.name}": bitcast(_pair_input(xs, s, d), d) for s, d in PAIRS}


def test_bitcast_pairs_jit_cpp_eager_numpy_and_jax():
    rng = np.random.default_rng(1)
    xs = {dt.name: _quieted(_bits(rng, (3, 8), dt)) for dt in NUMERIC}
    xs["float32"][0, :4] = [-0.0, np.nan, -np.inf, 1e-45]
    eager = _pairs_program(lax.bitcast_convert_type, {k: fnp.asarray(v) for k, v in xs.items()})
    jitted = functx.jit(functools.partial(_pairs_program, lax.bitcast_convert_type))(xs)
    ref = _pairs_program(lambda x, dt: _numpy_bitcast(np.asarray(x), dt), xs)  # (JAX's, below)
    assert sorted(eager) == sorted(jitted) == sorted(ref)
    for k in eager:
        _same_bits(eager[k], ref[k])
        _same_bits(_quieted(jitted[k]), _quieted(ref[k]))
    # JAX on a third of the pairs (its compile time grows with the count)
    few = PAIRS[::3]
    got = jax.jit(lambda a: [jax.lax.bitcast_convert_type(x, d) for x, (_, d) in zip(a, few)])(
        [_pair_input(xs, s, d) for s, d in few]
    )
    for (src, dst), g in zip(few, got):
        _same_bits(g, ref[f"{src.name}->{dst.name}"])


# --- Array.view ----------------------------------------------------------------------------------
_VIEW_SOURCES = {
    "f32": np.float32([[1.0, -2.0], [np.inf, -0.0]]),
    "u8": np.uint8([[0, 1, 2, 3, 128, 255, 7, 9]]),
    "bool": np.bool_([[True, False, True, True, False, False, False, True]]),
    "c64": np.complex64([[1 + 2j, -0.0 - 3j]]),
    "bf16": np.asarray([1.0, -3.0], BF16),
    "scalar": np.int16(5),
}
_VIEWS = [
    ("f32", np.int16),
    ("f32", np.float64),
    ("f32", np.complex64),
    ("f32", np.bool_),
    ("f32", None),
    ("u8", np.bool_),
    ("u8", np.float64),
    ("bool", np.int32),
    ("bool", np.bool_),
    ("c64", np.float32),
    ("c64", np.uint8),
    ("c64", np.complex128),
    ("bf16", np.float16),
    ("bf16", np.int8),
    ("bf16", np.float64),  # ValueError: the last axis does not divide
    ("f32", np.complex128),  # ValueError
    ("scalar", np.float16),
    ("scalar", np.int8),  # ValueError: 0-d and another width
]


def _views(ns, xs):
    out = {}
    for i, (src, dt) in enumerate(_VIEWS):
        try:
            out[i] = ns.asarray(xs[src]).view(dt)
        except ValueError as e:
            out[i] = e
    return out


def test_view_matches_jax():
    got = _views(fnp, _VIEW_SOURCES)
    errors = {i for i, v in got.items() if isinstance(v, Exception)}
    want = jax.jit(lambda xs: {i: v for i, v in _views(jnp, xs).items() if i not in errors})(
        _VIEW_SOURCES
    )
    for i, (src, dt) in enumerate(_VIEWS):
        if i in errors:
            with pytest.raises(ValueError, match=re.escape(str(got[i])[:40])):
                jnp.asarray(_VIEW_SOURCES[src]).view(dt)
        else:
            _same_bits(got[i], want[i])
    # JAX builds a complex view as re + 1j * im, whose product flushes subnormal parts to zero;
    # functx reads the bits
    u = _VIEW_SOURCES["u8"]
    _same_bits(fnp.asarray(u).view(np.complex64), u.view(np.complex64))
    with pytest.raises(NotImplementedError, match="`type` argument"):
        fnp.asarray(u).view(np.int8, type=np.ndarray)


def test_view_under_jit_and_vmap():
    x = np.float32([[1.0, -2.0], [3.0, 0.5]])
    _same_bits(functx.jit(lambda v: v.view(np.int16))(x), jnp.asarray(x).view(np.int16))
    _same_bits(functx.vmap(lambda v: v.view(np.int64))(x), x.view(np.int64))


def test_byteswap_matches_jax():
    rng = np.random.default_rng(2)
    xs = [_bits(rng, (2, 3), dt) for dt in (np.dtype(np.float64), BF16, np.dtype(np.int8))]
    xs += [np.float32(1.0), np.complex64([1 + 2j, -3j]), np.bool_([True, False])]
    want = jax.jit(lambda a: [jnp.asarray(v).byteswap() for v in a])(xs)
    for x, w in zip(xs, want):
        _same_bits(fnp.asarray(x).byteswap(), w)
        _same_bits(fnp.asarray(x).byteswap(), np.asarray(x).byteswap())
    _same_bits(functx.jit(lambda v: v.byteswap())(xs[0]), want[0])


# --- the sign-bit functions ----------------------------------------------------------------------
_HALVES_TOO = (np.float64, np.float32, np.float16, BF16)


def _specials(dt):
    fi = ml_dtypes.finfo(dt)
    v = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, float(fi.tiny), float(fi.max), 1.0, -2.5]
    return np.array(v + [-float(fi.max), 0.1, -float(fi.tiny), 3.0], dt)


def _sign_fns(ns, v, w):
    def any_nan(r):  # (nextafter's NaN: its sign too is the backend's)
        return ns.where(ns.isnan(r), ns.asarray(np.nan, r.dtype), r)

    return {
        "signbit": ns.signbit(v),
        "copysign": ns.copysign(w, v),
        "copysign_1": ns.copysign(1.0, v),
        "nextafter": any_nan(ns.nextafter(v, w)),
        "nextafter_back": any_nan(ns.nextafter(w, v)),
    }


def _sign_all(ns, args):
    return {k: _sign_fns(ns, *a) for k, a in args.items()}


def _nan_sign_only(a):
    """``a`` with each NaN replaced by the quiet NaN of its sign: JAX's NaN payloads differ
    between its CPU and GPU backends (a GPU gives 0x7fff.. where the CPU keeps 0x7fc0..)."""
    a = np.array(a)
    if a.dtype not in (np.float16, BF16, np.float32, np.float64):
        return a
    u = a.view(np.dtype(f"uint{a.dtype.itemsize * 8}"))
    nan = np.isnan(a.astype(np.float64))
    sign = u & np.array(1 << (a.dtype.itemsize * 8 - 1), u.dtype)
    u[nan] = sign[nan] | np.array(np.nan, a.dtype).view(u.dtype)
    return a


def _compare_trees(got, want):
    flat_got, flat_want = functx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(flat_got) == len(flat_want)
    for g, w in zip(flat_got, flat_want):
        _same_bits(_nan_sign_only(g), _nan_sign_only(w))


def test_sign_bit_functions_match_jax_eager_and_jit():
    args = {np.dtype(dt).name: (_specials(dt), _specials(dt)[::-1].copy()) for dt in _HALVES_TOO}
    with jax.default_device(jax.devices("cpu")[0]):  # (JAX's CPU: its GPU's NaN signs differ)
        want = jax.jit(lambda a: _sign_all(jnp, a))(args)
    _compare_trees(_sign_all(fnp, args), want)
    del args["float64"], want["float64"]  # (compiled: the halves and float32)
    _compare_trees(functx.jit(lambda a: _sign_all(fnp, a))(args), want)
    # frexp and ldexp (arithmetic, unchanged by the sign bit): zeros, infinities and NaNs
    v, e = _specials(np.float32), np.int32([0, 1, -1, 5, -5, 3, 2, -2, 0, 7, -7, 9, 4, 1])
    _compare_trees(fnp.frexp(v), jnp.frexp(v))
    _same_bits(fnp.ldexp(v, e), jnp.ldexp(v, e))


def test_signbit_of_negative_nan_and_zero():
    with x64_off():
        x = np.array([-np.nan, np.nan, -0.0, 0.0], np.float32)
        _same_bits(fnp.signbit(x), np.bool_([True, False, True, False]))
        _same_bits(fnp.copysign(np.float32(2), x), np.float32([-2, 2, -2, 2]))
        _same_bits(fnp.signbit(np.int32([-1, 0])), jnp.signbit(np.int32([-1, 0])))


def test_subnormals_follow_ieee():
    # (JAX's CPU flushes these; NumPy and the C library do not)
    for dt in (np.float32, np.float64):
        tiny = np.array([ml_dtypes.finfo(dt).smallest_subnormal], dt)
        x = np.concatenate([tiny, 3 * tiny, -tiny])
        m, e = fnp.frexp(x)
        nm, ne = np.frexp(x)
        _same_bits(m, nm)
        np.testing.assert_array_equal(e, ne)
        _same_bits(fnp.ldexp(x, np.int32([1, -1, 3])), np.ldexp(x, [1, -1, 3]))
        _same_bits(fnp.nextafter(x, np.zeros_like(x)), np.nextafter(x, np.zeros_like(x)))


def test_nextafter_halves_follow_numpy():
    h = np.array([0.0, -0.0, 1.0, -1.0, np.inf, np.nan, 65504.0, -6e-8], np.float16)
    t = np.array([1.0, -1.0, 2.0, -0.0, 0.0, 1.0, np.inf, -1.0], np.float16)
    with np.errstate(over="ignore"):  # 65504 -> inf on purpose
        want = np.nextafter(h, t)
    _same_bits(fnp.nextafter(h, t), want)


# --- on a GPU (FUNCTX_TEST_TRITON_GPU=1; the CPU suite runs the Triton code in the backend suite's
# interpreter case): the compiled Triton bitcasts against eager NumPy bits, and the sign-bit
# functions against JAX on the CPU
@pytest.mark.skipif(
    os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") in ("", "0"), reason="FUNCTX_TEST_TRITON_GPU=1"
)
def test_triton_on_a_gpu():
    gpu = functx.devices("gpu")[0]
    rng = np.random.default_rng(3)
    xs = {dt.name: _quieted(_bits(rng, (3, 8), dt)) for dt in NUMERIC}
    on_gpu = functx.device_put(xs, gpu)
    got = functx.jit(functools.partial(_pairs_program, lax.bitcast_convert_type))(on_gpu)
    want = _pairs_program(lambda x, dt: _numpy_bitcast(np.asarray(x), dt), xs)
    for k in want:
        # (a GPU's float32 -> half conversion may also replace a NaN's payload: sign only)
        g, w = _nan_sign_only(functx.device_get(got[k])), _nan_sign_only(want[k])
        if os.environ.get("TRITON_INTERPRET") == "1" and w.dtype == BF16:
            # (the interpreter emulates float32 <-> bfloat16 conversions in NumPy, inexactly for
            # subnormals; a GPU converts them exactly)
            sub = np.abs(w.astype(np.float32)) < ml_dtypes.finfo(BF16).tiny
            g[sub], w[sub] = 0, 0
        _same_bits(g, w)
    args = {np.dtype(dt).name: (_specials(dt), _specials(dt)[::-1].copy()) for dt in _HALVES_TOO}
    if os.environ.get("TRITON_INTERPRET") == "1":
        del args["bfloat16"]  # (nextafter's bfloat16 subnormals: as above)
    with jax.default_device(jax.devices("cpu")[0]):
        ref = jax.jit(lambda a: _sign_all(jnp, a))(args)
    out = functx.jit(lambda a: _sign_all(fnp, a))(functx.device_put(args, gpu))
    _compare_trees(functx.tree_util.tree_map(functx.device_get, out), ref)


# --- docstrings ----------------------------------------------------------------------------------
def test_docstring_examples():
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for name, obj in (
        ("bitcast_convert_type", lax.bitcast_convert_type),
        ("view", functx.Array.view),
    ):
        for section in ("Arguments:", "Returns:", "Example:"):
            assert section in obj.__doc__, (name, section)
        with x64_off():
            # (the public names' examples run in tests/test_docstrings.py; the others here)
            for test in docutil.uncovered(doctest.DocTestFinder().find(obj, name, globs={})):
                runner.run(test)
    assert runner.failures == 0
