"""dtypes and promotion against JAX: the promotion table, weak types, defaults.

Both JAX and functx run with ``jax_enable_x64`` on (tests/conftest.py), where a Python float
defaults to float64; the tests of the default mode run both with it off (``x64_off``), and compare
exactly in each mode.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.numpy as fnp
from functx import dtypes

jax = pytest.importorskip("jax")
jjnp = jax.numpy

ALL = tuple(d for d in dtypes.SUPPORTED if d not in dtypes.NARROW)  # narrow: test_narrow_dtypes
NARROW = tuple(d for d in ALL if d.itemsize <= 4)
F32, F64, I32, I64, BOOL = dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64, dtypes.bool_


def _pairs(ds):
    """(dtype, weak) operands: every dtype strong, and every non-bool dtype weak."""
    return [(d, False) for d in ds] + [(d, True) for d in ds if d != BOOL]


def _jax_result(a, b):
    """JAX's (dtype, weak_type) for ``a + b`` of two (dtype, weak) operands, by tracing only."""
    S = jax.ShapeDtypeStruct
    if True:
        op = (lambda p, q: p | q) if a[0] == b[0] == BOOL else (lambda p, q: p + q)
        r = jax.eval_shape(op, S((), a[0], weak_type=a[1]), S((), b[0], weak_type=b[1]))
    return np.dtype(r.dtype), bool(r.weak_type)


def test_promote_types_all_pairs_vs_jax():
    for a, b in itertools.product(ALL, ALL):
        ours = dtypes.promote_types(a, b)
        assert ours == np.dtype(jjnp.promote_types(a, b)), (a, b)
        assert ours == dtypes.promote_types(b, a)
    for a in ALL:
        assert dtypes.promote_types(a, a) == a


def test_promote_types_accepts_python_types_and_names():
    assert dtypes.promote_types(float, "int8") == F64
    assert dtypes.promote_types(int, bool) == I64
    with x64_off():
        assert dtypes.promote_types(float, "int8") == F32
        assert dtypes.promote_types(int, bool) == I32
    assert dtypes.promote_types("bfloat16", np.float16) == F32
    assert dtypes.promote_types(np.uint64, np.int64) == F64


@pytest.mark.parametrize("a", _pairs(ALL), ids=lambda p: f"{p[0]}{'_w' if p[1] else ''}")
def test_result_type_vs_jax_x64(a):
    for b in _pairs(ALL):
        ours = dtypes.result_type(a, b)
        assert ours == dtypes.result_type(b, a)
        assert ours == _jax_result(a, b), (a, b)


@pytest.mark.parametrize("a", _pairs(NARROW), ids=lambda p: f"{p[0]}{'_w' if p[1] else ''}")
def test_result_type_vs_jax_x32(a):
    """In the 32-bit mode of both, the answer must be identical (uint32 with int32 narrowed to
    int32 as JAX narrows it)."""
    with x64_off():
        for b in _pairs(NARROW):
            assert dtypes.result_type(a, b) == _jax_result(a, b), (a, b)


@pytest.mark.usefixtures("no_x64")
def test_result_type_single_and_many():
    assert dtypes.result_type((dtypes.float16, True)) == (dtypes.float16, True)
    assert dtypes.result_type((BOOL, True)) == (BOOL, False)
    assert dtypes.result_type((I32, True), (F32, True), (dtypes.int8, False)) == (F32, True)
    assert dtypes.result_type(
        (dtypes.uint8, False), (dtypes.int8, False), (dtypes.float16, False)
    ) == (dtypes.float16, False)
    with jax.enable_x64(False):
        r = jax.eval_shape(
            lambda a, b, c: a + b + c,
            *[
                jax.ShapeDtypeStruct((), d, weak_type=w)
                for d, w in [(I32, True), (F32, True), (dtypes.int8, False)]
            ],
        )
    assert (np.dtype(r.dtype), r.weak_type) == (F32, True)


# --- Weak types on concrete arrays, against jax.numpy ------------------------------------------
# (dtype, Python scalar, the functx result dtype where it differs from x64 JAX by design)
CASES = [
    (F32, 2.0, None),
    (dtypes.int8, 1, None),
    (dtypes.bfloat16, 1.0, None),
    (dtypes.float16, 3, None),
    (dtypes.uint8, 7, None),
    (F64, 2.0, None),
    (I64, 3, None),
    (I32, 1.0, None),
    (dtypes.int8, 1.5, None),
    (dtypes.uint32, 0.5, None),
    (BOOL, 1, None),
    (BOOL, 2.5, None),
    (BOOL, True, None),
    (dtypes.int16, True, None),
    (F32, True, None),
]


@pytest.mark.parametrize("dtype,scalar,design", CASES, ids=[f"{d}-{s!r}" for d, s, _ in CASES])
@pytest.mark.parametrize("op", ["add", "multiply", "subtract", "maximum"])
def test_scalar_weak_type_vs_jax(dtype, scalar, design, op):
    if op == "subtract" and dtype == BOOL and isinstance(scalar, bool):
        pytest.skip("bool - bool is an error in both")
    x = np.array([1, 0, 1], dtype)
    ours = getattr(fnp, op)(fnp.asarray(x), scalar)
    theirs = getattr(jjnp, op)(jjnp.asarray(x), scalar)
    rev = getattr(fnp, op)(scalar, fnp.asarray(x))
    assert rev.dtype == ours.dtype and rev.weak_type == ours.weak_type
    assert ours.weak_type == theirs.weak_type
    if design is None:
        assert ours.dtype == theirs.dtype
    else:  # JAX x64 gives the weak default float64/int64 here; functx its float32/int32
        assert theirs.weak_type and np.dtype(theirs.dtype).itemsize == 8
        assert ours.dtype == design
        with jax.enable_x64(False):
            t32 = getattr(jjnp, op)(jjnp.asarray(x), scalar)
        assert ours.dtype == t32.dtype and ours.weak_type == t32.weak_type
    np.testing.assert_allclose(
        np.asarray(ours).astype(np.float64), np.asarray(theirs).astype(np.float64), rtol=1e-2
    )


@pytest.mark.usefixtures("no_x64")
def test_named_weak_type_examples():
    f32 = fnp.asarray(np.ones(3, np.float32))
    assert (f32 * 2.0).dtype == F32 and not (f32 * 2.0).weak_type
    i8 = fnp.asarray(np.ones(3, np.int8))
    assert (i8 + 1).dtype == dtypes.int8
    bf = fnp.asarray(np.ones(3, ml_dtypes.bfloat16))
    assert (bf + 1.0).dtype == dtypes.bfloat16
    i32 = fnp.asarray(np.ones(3, np.int32))
    r = i32 + 1.0
    assert r.dtype == F32 and r.weak_type  # JAX x64: float64; functx keeps float32 defaults
    w = fnp.asarray(2.0)
    assert w.dtype == F32 and w.weak_type
    assert (w * 3).dtype == F32 and (w * 3).weak_type
    assert (w * np.float16(3)).dtype == dtypes.float16
    assert (fnp.asarray(1) + fnp.asarray(np.int8(1))).dtype == dtypes.int8
    assert (fnp.asarray(1) * 2.5).dtype == F32


@pytest.mark.usefixtures("no_x64")
def test_weak_types_in_traced_jaxprs():
    def f(x):
        y = x * 2.0  # the literal is weak f32; x's dtype wins
        return y, fnp.asarray(1.0) + 1, x.astype(np.int8) + 300 % 256

    closed = functx.make_jaxpr(f)(np.ones(3, np.float16))
    outs = closed.out_avals
    assert outs[0].dtype == dtypes.float16 and not outs[0].weak_type
    assert outs[1].dtype == F32 and outs[1].weak_type
    assert outs[2].dtype == dtypes.int8
    assert "mul a 2.0:f16[]" in str(closed)


@pytest.mark.parametrize("op", ["add", "true_divide", "multiply", "power", "maximum"])
def test_array_array_promotion_vs_jax_x32(op):
    """Binary functx.numpy ops on strong arrays of every pair of 32-bit dtypes: the result dtype
    matches JAX's 32-bit mode (where its defaults are functx's)."""
    S = jax.ShapeDtypeStruct
    for a, b in itertools.product(NARROW, NARROW):
        if op == "power" and (a == BOOL and b == BOOL):
            continue
        if a == BOOL and b == BOOL and op not in ("maximum", "multiply"):
            continue
        try:
            ours = functx.make_jaxpr(getattr(fnp, op))(np.ones(2, a), np.ones(2, b)).out_avals[0]
        except TypeError as e:
            pytest.fail(f"{op}({a}, {b}) failed: {e}")
        with x64_off():
            ours = functx.make_jaxpr(getattr(fnp, op))(np.ones(2, a), np.ones(2, b)).out_avals[0]
            theirs = jax.eval_shape(getattr(jjnp, op), S((2,), a), S((2,), b))
        assert ours.dtype == np.dtype(theirs.dtype), (op, a, b)


# --- dtype utilities ---------------------------------------------------------------------------
def test_canonicalize():
    assert dtypes.canonicalize(float) == F64
    assert dtypes.canonicalize(int) == I64
    with x64_off():
        assert dtypes.canonicalize(float) == F32
        assert dtypes.canonicalize(int) == I32
        assert dtypes.canonicalize(np.float64) == F32
        assert dtypes.canonicalize("uint64") == dtypes.uint32
        assert dtypes.canonicalize(complex) == dtypes.complex64
        assert dtypes.canonicalize("complex128") == dtypes.complex64
    assert dtypes.canonicalize(bool) == BOOL
    assert dtypes.canonicalize("bfloat16") == dtypes.bfloat16
    assert dtypes.canonicalize(ml_dtypes.bfloat16) == dtypes.bfloat16
    assert dtypes.canonicalize("float16") == dtypes.float16
    assert dtypes.canonicalize(np.uint16) == dtypes.uint16
    assert dtypes.canonicalize(complex) == dtypes.complex128
    assert dtypes.canonicalize("complex128") == dtypes.complex128
    for bad in (object, "U3", np.float128 if hasattr(np, "float128") else "c16"):
        with pytest.raises(TypeError, match="functx does not support dtype"):
            dtypes.canonicalize(bad)


def test_short_names_match_jax_printing():
    for d in ALL:
        text = str(jax.make_jaxpr(lambda x: x)(np.ones(2, d)))
        assert f"a:{dtypes.short_name(d)}[2]" in text, (d, text)
        assert f"a:{dtypes.short_name(d)}[2]" in str(functx.make_jaxpr(lambda x: x)(np.ones(2, d)))


def test_issubdtype_and_kinds():
    for d in ALL:
        assert dtypes.issubdtype(d, np.floating) == jjnp.issubdtype(d, jjnp.floating), d
        assert dtypes.issubdtype(d, np.integer) == jjnp.issubdtype(d, jjnp.integer), d
        assert dtypes.issubdtype(d, np.inexact) == jjnp.issubdtype(d, jjnp.inexact), d
        assert dtypes.is_float(d) == (d in dtypes.FLOATS)
        assert dtypes.is_int(d) == jjnp.issubdtype(d, jjnp.integer)
        assert dtypes.is_signed(d) == jjnp.issubdtype(d, jjnp.signedinteger)
        assert dtypes.is_unsigned(d) == jjnp.issubdtype(d, jjnp.unsignedinteger)


def test_finfo_iinfo_vs_jax():
    for d in dtypes.FLOATS + dtypes.COMPLEX:
        a, b = dtypes.finfo(d), jjnp.finfo(d)
        assert (float(a.eps), float(a.max), float(a.tiny), a.bits) == (
            float(b.eps),
            float(b.max),
            float(b.tiny),
            b.bits,
        ), d
    for d in dtypes.INTEGERS:
        assert (dtypes.iinfo(d).min, dtypes.iinfo(d).max) == (jjnp.iinfo(d).min, jjnp.iinfo(d).max)


def test_python_scalar_dtypes():
    assert dtypes.dtype_of_python_scalar(True) == BOOL
    assert dtypes.dtype_of_python_scalar(3) == I64
    assert dtypes.dtype_of_python_scalar(3.0) == F64
    assert dtypes.dtype_of_python_scalar(1j) == dtypes.complex128
    with x64_off():
        assert dtypes.dtype_of_python_scalar(3) == I32
        assert dtypes.dtype_of_python_scalar(3.0) == F32
        assert dtypes.dtype_of_python_scalar(1j) == dtypes.complex64
    with pytest.raises(OverflowError):
        fnp.asarray(np.ones(2, np.int8)) + 2**70
