"""The narrow dtypes (int2/int4/uint2/uint4, the float8 family, float4_e2m1fn) against JAX:
creation, printing, finfo/iinfo, scalar constructors, the promotion lattice (no implicit
promotion but with weak Python scalars), and arithmetic on EVERY value of each type (unary ops)
and every pair of values (binary ops), eager and under C++ ``jit``, compared bit for bit
(NaNs equal whatever their payload).

JAX's exhaustive results are computed at test time (one ``jax.jit`` program per dtype, cached for
the session) and compared through digests of each op's result.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.numpy as jnp
from functx import dtypes, lax
from functx.errors import UnsupportedError

jax = pytest.importorskip("jax")
jjnp, jlax = jax.numpy, jax.lax

INTS = dtypes.NARROW_INTS
FLOATS = dtypes.NARROW_FLOATS
# float8_e8m0fnu: XLA's CPU flushes its smallest value (a float32 subnormal) to zero in
# arithmetic, functx does not (docs/differences.md); its values are compared where that is moot.
EXACT_FLOATS = tuple(d for d in FLOATS if d != dtypes.float8_e8m0fnu)
JIT_DTYPES = (dtypes.int4, dtypes.uint4, dtypes.float8_e4m3fn, dtypes.float8_e5m2)

UNARY_F = ["neg", "exp", "log", "sin", "cos", "tanh", "sqrt", "rsqrt", "floor", "ceil", "abs"]
UNARY_F += ["sign", "logistic", "log1p", "round", "is_finite", "exp2"]
BINARY_F = ["add", "sub", "mul", "div", "max", "min", "pow", "atan2", "rem", "lt", "eq", "ne"]
UNARY_I = ["neg", "sign", "bitwise_not", "population_count", "clz"]
BINARY_I = ["add", "sub", "mul", "div", "rem", "max", "min", "bitwise_and", "bitwise_or"]
BINARY_I += ["bitwise_xor", "shift_left", "shift_right_logical", "shift_right_arithmetic", "lt"]
BINARY_I += ["eq"]
# the ops checked on every value of the types outside JIT_DTYPES
SHORT = {"neg", "exp", "log", "tanh", "sqrt", "floor", "logistic", "to_f32", "to_i32", "sign"}
SHORT |= {"add", "mul", "div", "pow", "lt", "rem", "bitwise_not", "shift_right_arithmetic"}


def _values(dt):
    """Every value of ``dt`` (every code of a float type, NaN included)."""
    if dt in INTS:
        info = dtypes.iinfo(dt)
        return np.arange(int(info.min), int(info.max) + 1).astype(dt)
    return np.arange(16 if dt == dtypes.float4_e2m1fn else 256, dtype=np.uint8).view(dt)


def _pairs(dt):
    v = _values(dt)
    x, y = np.meshgrid(v, v)
    return x.ravel(), y.ravel()


def _key(a):
    """Bits to compare (as int64), every NaN the same."""
    a = np.atleast_1d(np.asarray(a))
    if a.dtype == np.bool_ or a.dtype.kind in "iu":
        return a.astype(np.int64)
    nan = np.isnan(a.astype(np.float64))
    bits = a.view(f"u{a.dtype.itemsize}").astype(np.int64)
    return np.where(nan, -1, bits)


def _same(ours, theirs, what):
    assert len(ours) == len(theirs) == len(what)
    for name, o, t in zip(what, ours, theirs):
        o, t = np.asarray(o), np.asarray(t)
        assert o.dtype == t.dtype, (name, o.dtype, t.dtype)
        bad = (_key(o) != _key(t)).ravel()
        assert not bad.any(), (
            name,
            o.dtype,
            np.nonzero(bad)[0][:5],
            o.ravel()[bad][:5],
            t.ravel()[bad][:5],
        )


def _digest(a):
    a = np.asarray(a)
    return hashlib.sha1(str(a.dtype).encode() + _key(a).tobytes()).hexdigest()[:16]


def _unary(lib, n, v):
    if n.startswith("to_"):
        return v.astype({"to_f32": np.float32, "to_i32": np.int32}[n])
    return getattr(lib, n)(v)


def _ops(lib, unary, binary):
    def f(v, x, y):
        return tuple(_unary(lib, n, v) for n in unary) + tuple(
            getattr(lib, n)(x, y) for n in binary
        )

    return f


def _lists(dt):
    if dt in INTS:
        u, b = UNARY_I + ["to_f32", "to_i32"], BINARY_I
    else:
        # (JAX 0.10.2 converts float4_e2m1fn's +-6.0 to int32's extremes: not followed)
        u = UNARY_F + ["to_f32"] + ([] if dt == dtypes.float4_e2m1fn else ["to_i32"])
        b = BINARY_F
    if dt not in JIT_DTYPES:  # (the other types: the ops that round differently, to keep the
        # reference's XLA compiles, one per dtype, within the suite's time)
        u = [n for n in u if n in SHORT]
        b = [n for n in b if n in SHORT]
    return u, b


def _names(dt):
    u, b = _lists(dt)
    return u + b


def _args(dt):
    return (_values(dt), *_pairs(dt))


def _fx_ops(dt):
    return _ops(lax, *_lists(dt))


_F32 = np.array(
    [-1e9, -100.0, -9, -8.6, -8.5, -1.5, -0.5, -0.0, 0.0, 0.3, 0.5, 1.5, 7.4, 7.5, 15.5, 16]
    + [100.0, 300.0, 449.0, 464.0, 465.0, 57344.0, 61440.0, 1e9, np.nan, np.inf, -np.inf],
    np.float32,
)
_I32 = np.array([-100, -9, -8, -1, 0, 1, 7, 8, 15, 16, 100, 255], np.int32)
_CONV_TO = [d for d in dtypes.NARROW if d != dtypes.float8_e8m0fnu]


def _conversions(f, i):
    """float32 and int32 values to each narrow type (rounding, saturation, NaN, overflow)."""
    return tuple(f.astype(d) for d in _CONV_TO) + tuple(i.astype(d) for d in _CONV_TO)


@functools.cache
def _jax_digests(name):
    """JAX's digest of each op's result on the dtype ``name`` (one ``jax.jit`` program per dtype:
    one program over every dtype compiles far slower than the sum of these), or of the
    conversions (``name`` "conversions")."""
    if name == "conversions":
        return [_digest(r) for r in jax.jit(_conversions)(_F32, _I32)]
    dt = np.dtype(getattr(dtypes, name))
    res = jax.jit(_ops(jlax, *_lists(dt)))(*_args(dt))
    return dict(zip(_names(dt), map(_digest, res)))


def _check_against_jax(dt, results):
    want = _jax_digests(dt.name)
    bad = [n for n, r in zip(_names(dt), results) if _digest(r) != want[n]]
    assert not bad, (dt, bad)


@pytest.mark.parametrize("dt", EXACT_FLOATS + INTS, ids=str)
def test_every_value_eager_vs_jax(dt):
    _check_against_jax(dt, _fx_ops(dt)(*map(jnp.asarray, _args(dt))))


def test_every_value_jit_cpp_vs_jax():
    """int4, uint4, float8_e4m3fn and float8_e5m2, every op on every value (pair), and the
    conversions, in ONE compiled program."""

    def program(args):
        out = {dt.name: _fx_ops(dt)(*args[dt.name]) for dt in JIT_DTYPES}
        out["conversions"] = _conversions(*args["conversions"])
        out["kernels"] = _kernels(*args["kernels"])
        return out

    args = {dt.name: _args(dt) for dt in JIT_DTYPES}
    args["conversions"] = (_F32, _I32)
    args["kernels"] = (_M8, _M4)
    out = functx.jit(program)(args)
    for dt in JIT_DTYPES:
        _check_against_jax(dt, out[dt.name])
    assert [_digest(r) for r in out["conversions"]] == _jax_digests("conversions")
    # reductions, products, scatters, transposes: compiled as eager computes them
    _same(out["kernels"], _kernels(jnp.asarray(_M8), jnp.asarray(_M4)), ["k"] * 9)
    for fn in (jnp.sum, jnp.cumsum):  # (XLA rounds every partial sum: refused by name)
        with pytest.raises(UnsupportedError, match="float8_e4m3fn"):
            functx.jit(fn)(_M8)


_M8 = (np.arange(24, dtype=np.float32).reshape(4, 6) * 7.3 - 50).astype(dtypes.float8_e4m3fn)
_M4 = (np.arange(24).reshape(4, 6) % 16 - 8).astype(dtypes.int4)


def _kernels(m8, m4, jax_can=False):
    """Reductions, products, scatters, transposes; ``jax_can``: only those JAX 0.10.2 computes
    (it has no int4 sum, product or scatter-add on the CPU)."""
    out = [m8.max(1), m8.argmin(0), m8 @ m8.T, m4.max(1)]
    out += [m8.at[np.array([0, 0, 2])].add(m8[1:4]), m8.T + m8.T]
    if not jax_can:
        out += [m4.sum(0), m4 @ m4.T, m4.at[np.array([1, 1])].add(m4[2:4])]
    return tuple(out)


def test_values_against_jax_with_the_differing_elements():
    """float8_e4m3fn's unary ops and two binary ones against JAX value by value (the digest
    tests above say which op differs; this one shows the differing elements)."""
    dt = dtypes.float8_e4m3fn
    unary, binary = UNARY_F[:8], ["add", "mul"]
    names = unary + binary
    theirs = jax.jit(_ops(jlax, unary, binary))(*_args(dt))
    _same(_ops(lax, unary, binary)(*map(jnp.asarray, _args(dt))), theirs, names)


def test_promotion_lattice_vs_jax():
    others = [d for d in dtypes.SUPPORTED if d not in dtypes.NARROW]
    for a in dtypes.NARROW:
        assert dtypes.promote_types(a, a) == a
        for b in dtypes.SUPPORTED:
            try:
                want = jjnp.promote_types(a, b)
            except jax.dtypes.TypePromotionError:
                with pytest.raises(dtypes.TypePromotionError):
                    dtypes.promote_types(a, b)
                continue
            assert dtypes.promote_types(a, b) == want, (a, b)
        for scalar in (1, 1.0, 1j, True):
            try:
                want = jax.eval_shape(lambda t: t + scalar, jax.ShapeDtypeStruct((2,), a))
            except jax.dtypes.TypePromotionError:
                with pytest.raises(dtypes.TypePromotionError):
                    jnp.zeros(2, a) + scalar
                continue
            got = functx.eval_shape(lambda t: t + scalar, jax.ShapeDtypeStruct((2,), a))
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), (a, scalar)
    assert others  # (the lattice of the others: tests/test_dtypes.py)


def test_promotion_error_is_a_value_error_and_weak_scalars_keep_the_type():
    x = jnp.array([7, -8], jnp.int4)
    with pytest.raises(ValueError):
        x + jnp.int8(1)
    with pytest.raises(ValueError):
        x + 1.0
    assert (x + 1).dtype == dtypes.int4
    assert str(x * 2) == "[-2 0]"
    f = jnp.array([1.5, 448], jnp.float8_e4m3fn)
    assert (f * 0.5).dtype == dtypes.float8_e4m3fn
    with pytest.raises(ValueError):
        f + jnp.float32(1)


def test_creation_printing_info_and_scalar_types_vs_jax():
    for d in dtypes.NARROW:
        name = d.name
        ours, theirs = getattr(jnp, name), getattr(jjnp, name)
        a, b = jnp.array([1, 2, 3], dtype=ours), jjnp.array([1, 2, 3], dtype=theirs)
        assert a.dtype == b.dtype == d
        assert repr(a) == repr(b), name
        assert str(a) == str(b), name
        assert repr(ours(3)) == repr(theirs(3)), name
        assert jnp.zeros(2, d).dtype == jnp.ones((2, 2), name).dtype == d
        assert jnp.arange(3).astype(d).dtype == d
        assert np.asarray(jnp.full(3, 1, d)).tolist() == np.ones(3, d).tolist()
        if d in INTS:
            assert jnp.iinfo(ours).min == jjnp.iinfo(theirs).min
            assert jnp.iinfo(ours).max == jjnp.iinfo(theirs).max
            assert jnp.iinfo(ours).bits == jjnp.iinfo(theirs).bits
        else:
            fo, ft = jnp.finfo(ours), jjnp.finfo(theirs)
            assert (float(fo.eps), float(fo.max), float(fo.tiny), fo.bits) == (
                float(ft.eps),
                float(ft.max),
                float(ft.tiny),
                ft.bits,
            ), name
        for cat in (jjnp.integer, jjnp.signedinteger, jjnp.floating, jjnp.inexact, jjnp.number):
            assert jnp.issubdtype(d, cat) == jjnp.issubdtype(d, cat), (name, cat)
        assert jnp.issubdtype(d, d)


def test_default_mode_and_jaxpr_spelling():
    with x64_off():
        x = jnp.array([1, 2], jnp.uint4)
        assert (x + 1).dtype == dtypes.uint4
        assert repr(x + 15) == repr(jjnp.array([1, 2], jjnp.uint4) + 15)
        f = jnp.asarray([0.3], jnp.float8_e5m2)
        assert repr(f * 3) == repr(jjnp.asarray([0.3], jjnp.float8_e5m2) * 3)
    text = str(functx.make_jaxpr(lambda a, b: (a + a, b * b))(x, f))
    assert "u4[2]" in text and "f8_e5m2[1]" in text


def test_reductions_dot_and_grad_vs_jax():
    f = np.array([1, 2, 3, 0.5, -4, 0.25], np.float32).astype(dtypes.float8_e4m3fn)
    i = np.array([1, -2, 7], dtypes.int4)

    def program(np_, f, i):
        return (
            *(getattr(np_, n)(f) for n in ("sum", "max", "min", "prod", "mean", "cumsum")),
            np_.dot(f, f),
            np_.dot(f, f, preferred_element_type=np.float32),
            np_.max(i),
            np_.min(i),
        )

    names = ["sum", "max", "min", "prod", "mean", "cumsum", "dot", "dot f32", "imax", "imin"]
    names += ["kernels"] * 6

    def with_kernels(np_, f, i, m8, m4):
        return program(np_, f, i) + _kernels(m8, m4, jax_can=True)

    theirs = jax.jit(lambda *a: with_kernels(jjnp, *a))(f, i, _M8, _M4)
    ours = with_kernels(jnp, *map(jnp.asarray, (f, i, _M8, _M4)))
    _same(ours, theirs, names)
    g = functx.grad(lambda x: jnp.sum(x * x))(f)
    _same([g], [np.array([2, 4, 6, 1, -8, 0.5], np.float32).astype(f.dtype)], ["grad"])
    with pytest.raises(TypeError):
        functx.grad(lambda x: jnp.sum(x.astype(jnp.float32)))(jnp.asarray(i))
    with pytest.raises(TypeError, match="int4"):  # (JAX: a TypeError too)
        jnp.abs(jnp.asarray(i))


def test_triton_raises_a_clear_error(monkeypatch):
    """Triton has no int4 or float8 arithmetic functx lowers to: UnsupportedError naming the
    dtype, under TRITON_INTERPRET=1 as on a GPU."""
    pytest.importorskip("triton")
    from functx.lowering.triton.program import compile_triton

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    for d in (dtypes.int4, dtypes.float8_e4m3fn):
        x = jnp.ones(4, d)
        with pytest.raises(UnsupportedError, match=str(d)):
            compile_triton(functx.make_jaxpr(lambda a: a + a)(x))(x)


def test_bitcast_eager_and_refused_by_the_cpp_backend():
    x = np.array([1.5, -448, 0.25, np.nan], np.float32).astype(dtypes.float8_e4m3fn)
    u = np.array([3, 200, 255], np.uint8)
    _same(
        [
            lax.bitcast_convert_type(jnp.asarray(x), np.uint8),
            lax.bitcast_convert_type(jnp.asarray(u), jnp.float8_e5m2),
        ],
        [jlax.bitcast_convert_type(x, np.uint8), jlax.bitcast_convert_type(u, jjnp.float8_e5m2)],
        ["f8->u8", "u8->f8"],
    )
    with pytest.raises(UnsupportedError, match="float8_e4m3fn"):
        functx.jit(lambda a: lax.bitcast_convert_type(a, np.uint8))(x)


def test_e8m0fnu_is_unsupported_by_the_cpp_backend():
    x = jnp.ones(4, jnp.float8_e8m0fnu)
    assert np.asarray(x * x).astype(np.float32).tolist() == [1.0] * 4
    with pytest.raises(UnsupportedError, match="float8_e8m0fnu"):
        functx.jit(lambda a: a * a)(x)
