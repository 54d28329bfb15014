"""Every primitive of ``functx.primitives.registry`` against an independent reference.

Each case runs a primitive three ways that must agree bit for bit: eagerly (``prim.bind``), traced
with the operands as inputs (``make_jaxpr`` + ``jaxpr_as_fun``) and traced with the operands closed
over (0-d ones become literals, the others constvars); it also checks that the NumPy ``impl``
returns exactly the shape and dtype that ``abstract_eval`` infers. The result is compared with a
reference written here (Python scalars, long double, mpmath or explicit loops; float64 first, then
float32/int/bool where the primitive accepts them and float16/bfloat16 for a sample), with
hypothesis drawing shapes (0-d and size-0 included) and values. Where ``jax.lax`` has the same
primitive it is a second reference.

``PRIMITIVE_TESTS`` maps every primitive to the test that exercises it; ``test_coverage`` fails for
a primitive that is missing from it or lacks ``abstract_eval``/``impl``.
"""

from __future__ import annotations

import itertools
import math
import pathlib
import re

import hypothesis.extra.numpy as hnp
import ml_dtypes
import mpmath
import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

import functx
from functx import dtypes, lax as flax, primitives as P
from functx.core import ShapedArray, typecheck_jaxpr
from functx.errors import FunctxTypeError
from functx.interpreter import jaxpr_as_fun

jax = pytest.importorskip("jax")
jlax = jax.lax
jjnp = jax.numpy

LD = np.longdouble
F64, F32, F16, BF16 = dtypes.float64, dtypes.float32, dtypes.float16, dtypes.bfloat16
I8, I16, I32, I64 = dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64
U8, U32, U64, BOOL = dtypes.uint8, dtypes.uint32, dtypes.uint64, dtypes.bool_
FLOATS = (F64, F32, F16, BF16)
LOW = (F16, BF16)

# --- The coverage table ------------------------------------------------------------------------
# primitive name -> the test function (in this file) that checks it against a reference.
_UNARY_FLOAT = [
    "floor",
    "ceil",
    "exp",
    "exp2",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "logistic",
    "erf",
    "erfc",
    "lgamma",
]
_BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter"]
_COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]
_BITWISE = ["and", "or", "xor"]
_REDUCE = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or"]
# The cumulative reductions are not primitives: functx.lax.cumsum & co. are associative scans.
_CUMULATIVE = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]
_SCATTER = ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]

ELSEWHERE = "tested in another file under tests/"

PRIMITIVE_TESTS = {
    **{n: "test_unary_float" for n in _UNARY_FLOAT},
    "round": "test_round",
    "neg": "test_unary_number",
    "abs": "test_unary_number",
    "sign": "test_unary_number",
    "not": "test_not",
    "is_finite": "test_is_finite",
    "integer_pow": "test_integer_pow",
    **{n: "test_binary_float" for n in _BINARY},
    **{n: "test_compare" for n in _COMPARE},
    **{n: "test_bitwise" for n in _BITWISE},
    "select_n": "test_select_n",
    "convert_element_type": "test_convert_element_type",
    "iota": "test_iota",
    "stop_gradient": "test_stop_gradient",
    **{n: "test_reduce" for n in _REDUCE},
    "argmax": "test_argreduce",
    "argmin": "test_argreduce",
    "broadcast_in_dim": "test_broadcast_in_dim",
    "reshape": "test_reshape",
    "transpose": "test_transpose",
    "squeeze": "test_squeeze_expand_dims",
    "expand_dims": "test_squeeze_expand_dims",
    "rev": "test_rev",
    "slice": "test_slice",
    "concatenate": "test_concatenate",
    "pad": "test_pad",
    "dynamic_slice": "test_dynamic_slice",
    "dynamic_update_slice": "test_dynamic_update_slice",
    "gather": "test_gather",
    **{n: "test_scatter" for n in _SCATTER},
    "dot_general": "test_dot_general",
    # Higher-order primitives registered by other modules are tested with their feature: some test
    # file under tests/ must name them.
    "custom_jvp_call": ELSEWHERE,
    "custom_vjp_call": ELSEWHERE,
    "custom_lin": ELSEWHERE,
    "custom_vmap_call": ELSEWHERE,
    "cond": ELSEWHERE,
    "while": ELSEWHERE,
    "scan": ELSEWHERE,
    "associative_scan": ELSEWHERE,
    "reduce": ELSEWHERE,
    # The complex parts: tests/test_complex.py.
    "real": ELSEWHERE,
    "imag": ELSEWHERE,
    "conj": ELSEWHERE,
    "complex": ELSEWHERE,
    "checkpoint": ELSEWHERE,
    "fft": ELSEWHERE,  # tests/numpy/test_fft.py
    "name": ELSEWHERE,
    "debug_callback": ELSEWHERE,
    "check": ELSEWHERE,  # tests/experimental/test_checkify.py
    "pure_callback": ELSEWHERE,
    "io_callback": ELSEWHERE,
    "threefry2x32": ELSEWHERE,
    "rng_bit_generator": ELSEWHERE,  # tests/test_rng_bit_generator.py
    "rng_uniform": ELSEWHERE,  # tests/test_rng_bit_generator.py
    # dense linear algebra: tests/numpy/test_linalg.py (against NumPy and JAX)
    "cholesky": ELSEWHERE,
    "triangular_solve": ELSEWHERE,
    # The special functions: tests/scipy/test_lax_special.py (against scipy, mpmath and JAX).
    **{
        n: ELSEWHERE
        for n in (
            "erf_inv digamma bessel_i0e bessel_i1e igamma igammac igamma_grad_a "
            "random_gamma_grad polygamma zeta reduce_precision"
        ).split()
    },
    "lu": ELSEWHERE,
    "lu_pivots_to_permutation": ELSEWHERE,
    "eigh": ELSEWHERE,
    "qr": ELSEWHERE,
    "svd": ELSEWHERE,
    "sort": ELSEWHERE,
    "top_k": ELSEWHERE,
    "custom_linear_solve": ELSEWHERE,  # tests/test_custom_solve.py
    "eig": ELSEWHERE,  # tests/numpy/test_linalg_eig.py
    "hessenberg": ELSEWHERE,  # tests/numpy/test_linalg_lax_more.py
    "tridiagonal": ELSEWHERE,  # tests/numpy/test_linalg_lax_more.py
    "householder_product": ELSEWHERE,  # tests/numpy/test_linalg_lax_more.py
    "schur": ELSEWHERE,  # tests/numpy/test_linalg_lax_more.py
    "tridiagonal_solve": ELSEWHERE,  # tests/numpy/test_linalg_lax_more.py
    "bitcast_convert_type": ELSEWHERE,  # tests/test_bitcast.py (against JAX)
    "psum": ELSEWHERE,  # tests/control/test_collectives.py
    "pmax": ELSEWHERE,  # tests/control/test_collectives.py
    "pmin": ELSEWHERE,  # tests/control/test_collectives.py
    "axis_index": ELSEWHERE,  # tests/control/test_collectives.py
    "all_gather": ELSEWHERE,  # tests/control/test_collectives.py
    "reduce_scatter": ELSEWHERE,  # tests/control/test_collectives.py
    "all_to_all": ELSEWHERE,  # tests/control/test_collectives.py
    "ppermute": ELSEWHERE,  # tests/control/test_collectives.py
}


def _mentioned_in_other_tests(name):
    here = pathlib.Path(__file__).resolve()
    for path in here.parent.rglob("test_*.py"):
        if path.resolve() != here and re.search(rf"\b{re.escape(name)}\b", path.read_text()):
            return True
    return False


def test_coverage():
    """Every registered primitive has shape inference, an implementation and a test."""
    missing = sorted(set(P.registry) - set(PRIMITIVE_TESTS))
    assert not missing, f"primitives without a test in PRIMITIVE_TESTS: {missing}"
    stale = sorted(set(PRIMITIVE_TESTS) - set(P.registry))
    assert not stale, f"PRIMITIVE_TESTS names unknown primitives: {stale}"
    untested = []
    for name, prim in P.registry.items():
        assert prim.name == name
        assert callable(prim.abstract_eval), f"{name} has no abstract_eval"
        assert callable(prim.impl), f"{name} has no impl"
        if PRIMITIVE_TESTS[name] == ELSEWHERE:
            if not _mentioned_in_other_tests(name):
                untested.append(name)
        else:
            test = globals().get(PRIMITIVE_TESTS[name])
            assert callable(test), f"{name}: {PRIMITIVE_TESTS[name]} is not a test in this file"
    assert not untested, f"primitives no test file under tests/ mentions: {untested}"
    # the grouped tests are parametrized from these lists, so each name in them really runs
    for group in (_UNARY_FLOAT, _BINARY, _COMPARE, _BITWISE, _REDUCE, _SCATTER):
        assert set(group) <= set(P.registry)


def _row_problems(row):
    """Each field of an elementwise row that a transform or backend needs and the row lacks."""
    E = P.elementwise
    out = []

    def spelled(what, v):
        if isinstance(v, E.Unsupported):
            if not v.reason:
                out.append(f"{what}: Unsupported without a reason")
        elif not (isinstance(v, str) and v) and not callable(v):
            out.append(f"{what}: needs a function name, a template, a callable or Unsupported")

    if row.group not in ("unary", "binary", "compare", "bitwise"):
        out.append(f"group {row.group!r} is not an elementwise group")
    if row.kinds not in ("float", "number", "intbool", "any"):
        out.append(f"operand kinds {row.kinds!r} unknown")
    if not callable(row.numpy):
        out.append("numpy: no NumPy implementation")
    d = row.jvp
    if d is None:
        out.append("jvp: no derivative (a function, a pair of partials, Linear, NONDIFF)")
    elif isinstance(d, E.Unsupported):
        if not d.reason:
            out.append("jvp: Unsupported without a reason")
    elif isinstance(d, E.Linear):
        if len(d.signs) != row.arity:
            out.append(f"jvp: Linear needs {row.arity} signs")
    elif d not in (E.NONDIFF, E.APPLY):
        ok = callable(d) if row.arity == 1 else (len(d) == 2 and all(map(callable, d)))
        if not ok:
            out.append("jvp: no derivative (a function, a pair of partials, Linear, NONDIFF)")
    spelled("cpp (functx.lowering C++ renderer)", row.cpp)
    spelled("triton (functx.lowering Triton renderer)", row.triton)
    if (
        isinstance(row.triton, str)
        and row.triton.startswith("libdevice.")
        and "{" not in row.triton
    ):
        stand_in = row.interpret or row.numpy
        if not callable(stand_in):
            out.append("interpret: no NumPy stand-in for TRITON_INTERPRET")
    if not isinstance(row.costly, bool):
        out.append("costly: must be True or False")
    if row.builder not in ("plain", "custom"):
        out.append(f"builder {row.builder!r} unknown")
    if not hasattr(flax, row.public_name):
        out.append(f"no public functx.lax.{row.public_name}")
    return out


def test_elementwise_rows_are_complete():
    """Every elementwise primitive has ONE row, and every row has each field that the eager path,
    jvp, both renderers, the Triton interpreter and the scheduler's cost model read (or says
    explicitly, with a reason, that it is unsupported)."""
    E = P.elementwise
    names = [r.name for r in E.ROWS]
    assert len(names) == len(set(names)), "an elementwise op has two rows"
    elementwise = {p.name for g in ("unary", "binary", "compare", "bitwise") for p in P.by_group(g)}
    assert elementwise == set(names), (
        f"elementwise primitives without a row: {sorted(elementwise - set(names))}"
    )
    problems = [f"{r.name}: {m}" for r in E.ROWS for m in _row_problems(r)]
    assert not problems, "elementwise rows missing pieces:\n" + "\n".join(problems)


def test_reduction_semantics_cover_every_reduction():
    """Each reduce primitive has one row of reduction semantics, whose combine is an elementwise
    row, and whose identity is one of that combine for every dtype it accepts."""
    R = P.reduce
    assert set(R.SEMANTICS) | set(R.ARG) == {p.name for p in P.by_group("reduce")}
    for r in R.SEMANTICS.values():
        assert r.combine in P.elementwise.ROW, f"{r.name}: combine {r.combine!r} is not a row"
        for dt in (F64, F32, F16, BF16, I8, I32, I64, U8, U32, U64, BOOL):
            if (r.kinds == "number" and dt == BOOL) or (r.kinds == "intbool" and dt in FLOATS):
                continue
            ident, v = (
                np.asarray(R.identity(r.name, dt), dt),
                np.asarray(True if dt == BOOL else 3, dt),
            )
            combined = P.registry[r.combine].impl(ident, v)
            assert combined == v, f"{r.name}: {ident} is no identity of {r.combine} for {dt}"


# --- Running a primitive three ways ------------------------------------------------------------
def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind in "fV" or a.dtype == BF16 else a


def _identical(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (
        f"{what}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    )
    if a.dtype.kind in "fV" or a.dtype == BF16:  # NaN == NaN here, and -0.0 != 0.0
        an, bn = np.isnan(a.astype(np.float64)), np.isnan(b.astype(np.float64))
        assert np.array_equal(an, bn), what
        assert np.array_equal(_bits(a)[~an], _bits(b)[~bn]), what
    else:
        assert np.array_equal(a, b), what


def run(prim, *args, **params) -> np.ndarray:
    """Bind ``prim`` eagerly and through two traced paths; check they agree and match inference."""
    args = [np.asarray(a) for a in args]
    out_aval = prim.abstract_eval(*[ShapedArray(a.shape, a.dtype) for a in args], **params)
    raw = np.asarray(prim.impl(*[a.copy() for a in args], **params))
    assert raw.shape == out_aval.shape, f"{prim}: impl gives {raw.shape}, inference {out_aval}"
    assert raw.dtype == out_aval.dtype, f"{prim}: impl gives {raw.dtype}, inference {out_aval}"

    eager = prim.bind(*args, **params)
    assert isinstance(eager, functx.Array)
    assert eager.aval == out_aval
    _identical(eager, raw, f"{prim} eager vs impl")

    closed = functx.make_jaxpr(lambda *a: prim.bind(*a, **params))(*args)
    typecheck_jaxpr(closed)
    assert [e.prim for e in closed.eqns] == [prim]
    assert closed.out_avals == [out_aval]
    (traced,) = jaxpr_as_fun(closed)(*args)
    _identical(traced, raw, f"{prim} traced (operands as inputs) vs eager")

    closed2 = functx.make_jaxpr(lambda: prim.bind(*args, **params))()
    typecheck_jaxpr(closed2)
    (traced2,) = jaxpr_as_fun(closed2)()
    _identical(traced2, raw, f"{prim} traced (operands closed over) vs eager")
    return raw


# --- References and tolerances -----------------------------------------------------------------
def _eps(dtype):
    return float(ml_dtypes.finfo(dtype).eps)


def assert_close(actual, expected, ulps=4.0, atol=0.0):
    """``expected`` (any precision) rounded to ``actual``'s dtype, within ``ulps`` units of it."""
    actual = np.asarray(actual)
    dt = actual.dtype
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if dt in FLOATS:
        with np.errstate(all="ignore"):
            e = (
                expected.astype(np.float64).astype(dt).astype(np.float64)
                if expected.dtype != LD
                else expected.astype(dt).astype(np.float64)
            )
        a = actual.astype(np.float64)
        fi = ml_dtypes.finfo(dt)
        np.testing.assert_allclose(
            a,
            e,
            rtol=ulps * _eps(dt),
            atol=atol + ulps * float(fi.smallest_subnormal),
            equal_nan=True,
        )
    else:
        np.testing.assert_array_equal(actual, expected.astype(dt))


def assert_matches_jax(ours, theirs, rtol=0.0, atol=0.0, err_msg=""):
    """Compare with a JAX result. XLA's CPU kernels flush subnormal results to zero (functx keeps
    IEEE subnormals), so subnormals count as zero on both sides; dtypes must agree."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    if ours.dtype in FLOATS:
        tiny = float(ml_dtypes.finfo(ours.dtype).smallest_normal)

        def flush(a):
            a = a.astype(np.float64)
            return np.where(np.abs(a) < tiny, 0.0, a)

        np.testing.assert_allclose(
            flush(ours), flush(theirs), rtol=rtol, atol=atol, equal_nan=True, err_msg=err_msg
        )
    else:
        np.testing.assert_array_equal(ours, theirs, err_msg=err_msg)


def wrap(v: int, dtype) -> int:
    """Python int -> the value it has in ``dtype`` with two's-complement wrap-around."""
    if dtype == BOOL:
        return bool(v)
    bits = dtype.itemsize * 8
    v &= (1 << bits) - 1
    if dtype.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def pyref(fn, *arrays, dtype):
    """Apply a Python-scalar function elementwise (broadcasting) and build an array of ``dtype``."""
    arrays = np.broadcast_arrays(*[np.asarray(a) for a in arrays])
    shape = arrays[0].shape if arrays else ()
    vals = []
    for idx in np.ndindex(shape):
        r = fn(*[_py(a[idx]) for a in arrays])
        vals.append(wrap(r, dtype) if dtype.kind in "iu" else r)
    return np.array(vals, dtype=dtype if dtype not in FLOATS else np.float64).reshape(shape)


def _py(v):
    if isinstance(v, np.generic) and v.dtype == BF16:
        return float(v)
    return v.item()


# --- Strategies --------------------------------------------------------------------------------
SHAPES = st.one_of(
    st.just(()), st.just((0,)), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
)
NONEMPTY = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


def elements(dtype, lo=None, hi=None, nan=True, inf=True):
    if dtype == BOOL:
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.integers(
            info.min if lo is None else max(lo, info.min),
            info.max if hi is None else min(hi, info.max),
        )
    width = {F64: 64, F32: 32, F16: 16, BF16: 32}[dtype]
    bounded = lo is not None or hi is not None
    return st.floats(
        min_value=lo,
        max_value=hi,
        allow_nan=nan and not bounded,
        allow_infinity=inf and not bounded,
        width=width,
    )


def arrays(dtype, shape, **kw):
    if dtype == BF16:
        return hnp.arrays(F32, shape, elements=elements(BF16, **kw)).map(lambda a: a.astype(BF16))
    return hnp.arrays(dtype, shape, elements=elements(dtype, **kw))


SPECIAL = [
    0.0,
    -0.0,
    0.5,
    -0.5,
    1.0,
    -1.0,
    1.5,
    2.5,
    -2.5,
    3.0,
    -3.0,
    0.1,
    -0.7,
    0.999,
    7.0,
    20.0,
    -20.0,
    100.0,
    1e10,
    -1e10,
    1e-10,
    1e-300,
    math.nan,
    math.inf,
    -math.inf,
]


def special_values(dtype, n=40, seed=0):
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore"):
        vals = np.concatenate([np.asarray(SPECIAL, np.float64), rng.normal(0, 3, n)])
        return vals.astype(dtype)


# --- Elementwise unary -------------------------------------------------------------------------
def _mp(fn):
    def ref(v):
        if math.isnan(v):
            return math.nan
        try:
            r = fn(mpmath.mpf(v))
        except (ValueError, ZeroDivisionError):  # lgamma's poles
            return math.inf
        if isinstance(r, mpmath.mpc):
            r = r.real
        return float(r)

    return ref


def _erf_ref(x):
    with mpmath.workdps(30):
        return pyref(_mp(mpmath.erf), x.astype(np.float64), dtype=F64)


def _erfc_ref(x):
    with mpmath.workdps(30):
        return pyref(_mp(mpmath.erfc), x.astype(np.float64), dtype=F64)


def _lgamma_ref(x):
    def lg(v):
        if math.isinf(v):
            return mpmath.inf
        return mpmath.loggamma(v)  # complex for v < 0: its real part is log|gamma(v)|

    with mpmath.workdps(30):
        return pyref(_mp(lg), x.astype(np.float64), dtype=F64)


# name -> (reference on a long-double array, jax.lax function)
UNARY_REF = {
    "floor": (np.floor, jlax.floor),
    "ceil": (np.ceil, jlax.ceil),
    "exp": (np.exp, jlax.exp),
    "exp2": (np.exp2, jlax.exp2),
    "log": (np.log, jlax.log),
    "log1p": (np.log1p, jlax.log1p),
    "expm1": (np.expm1, jlax.expm1),
    "sqrt": (np.sqrt, jlax.sqrt),
    "rsqrt": (lambda x: 1 / np.sqrt(x), jlax.rsqrt),
    "cbrt": (np.cbrt, jlax.cbrt),
    "sin": (np.sin, jlax.sin),
    "cos": (np.cos, jlax.cos),
    "tan": (np.tan, jlax.tan),
    "asin": (np.arcsin, jlax.asin),
    "acos": (np.arccos, jlax.acos),
    "atan": (np.arctan, jlax.atan),
    "sinh": (np.sinh, jlax.sinh),
    "cosh": (np.cosh, jlax.cosh),
    "tanh": (np.tanh, jlax.tanh),
    "asinh": (np.arcsinh, jlax.asinh),
    "acosh": (np.arccosh, jlax.acosh),
    "atanh": (np.arctanh, jlax.atanh),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), jlax.logistic),
    "erf": (_erf_ref, jlax.erf),
    "erfc": (_erfc_ref, jlax.erfc),
    "lgamma": (_lgamma_ref, jlax.lgamma),
}
# Functions of huge arguments whose float32 NumPy kernels are accurate only to a few ulp.
_LOOSE = {
    "tan": 8,
    "sin": 8,
    "cos": 8,
    "lgamma": 16,
    "erf": 8,
    "erfc": 8,
    "acosh": 8,
    "asinh": 8,
    "atanh": 8,
    "logistic": 8,
    "expm1": 8,
    "log1p": 8,
}


def _unary_ref(name, x):
    with np.errstate(all="ignore"):
        return UNARY_REF[name][0](x.astype(LD) if name not in ("erf", "erfc", "lgamma") else x)


@pytest.mark.parametrize("name", _UNARY_FLOAT)
@given(data=st.data())
@settings(max_examples=12)
def test_unary_float(name, data):
    prim = P.registry[name]
    dtype = data.draw(st.sampled_from([F64, F64, F32, F32, F16, BF16]), label="dtype")
    x = data.draw(arrays(dtype, SHAPES), label="x")
    out = run(prim, x)
    assert out.dtype == dtype
    ulps = _LOOSE.get(name, 4) if dtype != F64 else 4
    # lgamma near its negative zeros is ill-conditioned: compare absolutely there
    atol = 1e-6 if name == "lgamma" and dtype == F64 else (2e-5 if name == "lgamma" else 0.0)
    if dtype in LOW:
        ulps, atol = 2, atol  # one rounding of the float32 result, plus slack
    assert_close(out, _unary_ref(name, x), ulps=ulps, atol=atol)
    with pytest.raises(FunctxTypeError, match=name):
        prim.abstract_eval(ShapedArray(x.shape, I32))


@pytest.mark.parametrize("name", _UNARY_FLOAT)
@pytest.mark.parametrize("dtype", [F64, F32])
def test_unary_float_vs_jax(name, dtype):
    x = special_values(dtype)
    if name == "lgamma":
        x = x[np.abs(x.astype(np.float64)) < 1e9]  # XLA's lgamma loses accuracy for huge |x|
    ours = np.asarray(getattr(flax, name)(x))
    ref = np.asarray(UNARY_REF[name][1](x))
    # XLA's CPU kernels are approximations (exp2(100) in float32 is 18 ulp off, float32 lgamma(1)
    # is 5e-7); the tight reference is the long-double/mpmath one of test_unary_float.
    tol = 1e-5 if dtype == F32 else 1e-12
    atol = (2e-6 if dtype == F32 else 1e-12) if name == "lgamma" else 0.0
    assert_matches_jax(ours, ref, rtol=tol, atol=atol)


def _round_ref(v, method):
    if not math.isfinite(v):
        return v
    t = math.trunc(v)
    frac = v - t  # exact
    if method == 0:
        r = t + (math.copysign(1, v) if abs(frac) >= 0.5 else 0)
    else:
        r = round(v)  # Python rounds half to even
    return math.copysign(float(r), v) if r == 0 else float(r)


@given(data=st.data())
def test_round(data):
    dtype = data.draw(st.sampled_from([F64, F32, F16, BF16]))
    method = data.draw(st.sampled_from([0, 1]))
    x = data.draw(arrays(dtype, SHAPES))
    out = run(P.round_p, x, rounding_method=method)
    ref = pyref(lambda v: _round_ref(v, method), x, dtype=dtype)
    _identical(out, ref.astype(dtype), "round")


@pytest.mark.parametrize("dtype", [F64, F32])
def test_round_edge_cases_vs_jax(dtype):
    x = np.concatenate(
        [
            special_values(dtype),
            np.asarray(
                [
                    0.49999999999999994,
                    2.0**52 + 1,
                    -(2.0**52 + 1),
                    2.0**23 + 1,
                    0.49999997,
                    4.5,
                    5.5,
                    -4.5,
                    -5.5,
                ],
                np.float64,
            ).astype(dtype),
        ]
    )
    for method in (0, 1):
        ours = np.asarray(flax.round(x, method))
        _identical(ours, np.asarray(jlax.round(x, method)), f"round method {method}")
        _identical(
            ours,
            pyref(lambda v: _round_ref(v, method), x, dtype=dtype).astype(dtype),
            f"round method {method}",
        )


_NUM_REF = {
    "neg": lambda v: -v,
    "abs": abs,
    "sign": lambda v: v if v != v or v == 0 else (1 if v > 0 else -1) * type(v)(1),
}


@pytest.mark.parametrize("name", ["neg", "abs", "sign"])
@given(data=st.data())
def test_unary_number(name, data):
    dtype = data.draw(st.sampled_from([F64, F32, I32, I8, U8, I64, F16, BF16]))
    x = data.draw(arrays(dtype, SHAPES))
    out = run(P.registry[name], x)
    ref = pyref(_NUM_REF[name], x, dtype=dtype)
    if dtype in FLOATS:
        _identical(out, ref.astype(dtype), name)  # exact, including sign(-0.0) == -0.0
    else:
        np.testing.assert_array_equal(out, ref)
    with pytest.raises(FunctxTypeError, match=name):
        P.registry[name].abstract_eval(ShapedArray((2,), BOOL))


@pytest.mark.parametrize("name", ["neg", "abs", "sign"])
@pytest.mark.parametrize("dtype", [F64, F32, I32, I8])
def test_unary_number_vs_jax(name, dtype):
    x = (
        special_values(dtype)
        if dtype in FLOATS
        else np.array([0, 1, -1, 5, -7, np.iinfo(dtype).min, np.iinfo(dtype).max], dtype)
    )
    _identical(np.asarray(getattr(flax, name)(x)), np.asarray(getattr(jlax, name)(x)), name)


@given(data=st.data())
def test_not(data):
    dtype = data.draw(st.sampled_from([BOOL, I32, U8, I8, U64]))
    x = data.draw(arrays(dtype, SHAPES))
    out = run(P.not_p, x)
    ref = pyref((lambda v: not v) if dtype == BOOL else (lambda v: ~v), x, dtype=dtype)
    np.testing.assert_array_equal(out, ref)
    with pytest.raises(FunctxTypeError, match="not"):
        P.not_p.abstract_eval(ShapedArray((), F32))


@given(data=st.data())
def test_is_finite(data):
    dtype = data.draw(st.sampled_from([F64, F32, F16, BF16]))
    x = data.draw(arrays(dtype, SHAPES))
    out = run(P.is_finite_p, x)
    assert out.dtype == BOOL
    np.testing.assert_array_equal(out, pyref(math.isfinite, x, dtype=BOOL))
    with pytest.raises(FunctxTypeError, match="is_finite"):
        P.is_finite_p.abstract_eval(ShapedArray((), I32))


@given(data=st.data())
def test_integer_pow(data):
    dtype = data.draw(st.sampled_from([F64, F32, I32, I8, U8, F16, BF16]))
    if dtype in FLOATS:
        y = data.draw(st.integers(-4, 9))
        x = data.draw(arrays(dtype, SHAPES))
        out = run(P.integer_pow_p, x, y=y)
        with np.errstate(all="ignore"):
            ref = x.astype(LD) ** y
        assert_close(out, ref, ulps=max(abs(y), 1) + 2)
    else:
        y = data.draw(st.integers(0, 300))
        x = data.draw(arrays(dtype, SHAPES))
        out = run(P.integer_pow_p, x, y=y)
        np.testing.assert_array_equal(out, pyref(lambda v: v**y, x, dtype=dtype))
        with pytest.raises(FunctxTypeError, match="integer_pow"):
            P.integer_pow_p.abstract_eval(ShapedArray((), dtype), y=-1)


@pytest.mark.parametrize("dtype", [F64, F32, I32, I8])
def test_integer_pow_vs_jax(dtype):
    x = special_values(dtype) if dtype in FLOATS else np.arange(-6, 7).astype(dtype)
    ys = [0, 1, 2, 3, 7, 200] + ([-1, -2, -3, 16777217] if dtype in FLOATS else [])
    refs = jax.jit(lambda v: [jlax.integer_pow(v, y) for y in ys])(x)  # one compile
    for y, ref in zip(ys, refs):
        assert_matches_jax(
            flax.integer_pow(x, y), ref, rtol=1e-6 if dtype == F32 else 1e-14, err_msg=f"y={y}"
        )


# --- Elementwise binary ------------------------------------------------------------------------
def _fdiv(a, b):
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _ffmod(a, b):
    try:
        return math.fmod(a, b)
    except ValueError:
        return math.nan


def _fmax(a, b):
    return math.nan if a != a or b != b else (a if a > b else b)


def _fmin(a, b):
    return math.nan if a != a or b != b else (a if a < b else b)


def _nextafter_ref(x, y, dtype):
    """nextafter through the bit pattern, independently of the C library."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype), np.asarray(y, dtype))
    out = np.array(x, copy=True)
    ub = f"u{dtype.itemsize}"
    xb, ob = x.view(ub), out.view(ub)
    xf, yf = x.astype(np.float64), y.astype(np.float64)
    for idx in np.ndindex(x.shape):
        a, b = xf[idx], yf[idx]
        if a != a or b != b:
            out[idx] = np.asarray(math.nan, dtype)
        elif a == b:
            out[idx] = y[idx]
        elif a == 0:
            tiny = np.zeros((), ub) + 1
            out[idx] = tiny.view(dtype) if b > 0 else -tiny.view(dtype)
        else:
            away = (b > a) == (a > 0)
            ob[idx] = xb[idx] + 1 if away else xb[idx] - 1
    return out


def _idiv(a, b, dtype):
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _irem(a, b, dtype):
    return a if b == 0 else a - b * _idiv(a, b, dtype)


def _ipow(a, b, dtype):
    if b >= 0:
        return a**b
    return 1 if a == 1 else ((1 if b % 2 == 0 else -1) if a == -1 else 0)


_FLOAT_BINARY_REF = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": _fdiv,
    "rem": _ffmod,
    "max": _fmax,
    "min": _fmin,
}
_INT_BINARY_REF = {
    "add": lambda a, b, d: a + b,
    "sub": lambda a, b, d: a - b,
    "mul": lambda a, b, d: a * b,
    "div": _idiv,
    "rem": _irem,
    "pow": _ipow,
    "max": lambda a, b, d: max(a, b),
    "min": lambda a, b, d: min(a, b),
}
_FLOAT_ONLY = ("atan2", "nextafter")


def _binary_operands(data, dtype, dtype2=None, **kw):
    shape = data.draw(SHAPES, label="shape")
    mode = data.draw(st.sampled_from(["same", "same", "left0d", "right0d"]), label="mode")
    xs = () if mode == "left0d" else shape
    ys = () if mode == "right0d" else shape
    return (
        data.draw(arrays(dtype, xs, **kw), label="x"),
        data.draw(arrays(dtype2 or dtype, ys, **kw), label="y"),
    )


@pytest.mark.parametrize("name", _BINARY)
@given(data=st.data())
def test_binary_float(name, data):
    """(Despite the name, also integer and bool operands where the primitive takes them.)"""
    prim = P.registry[name]
    kinds = [F64, F64, F32, F16, BF16] + ([] if name in _FLOAT_ONLY else [I32, I8, U8, I64])
    if name in ("max", "min"):
        kinds.append(BOOL)
    dtype = data.draw(st.sampled_from(kinds), label="dtype")
    if name == "pow" and dtype in dtypes.INTEGERS:
        x, _ = _binary_operands(data, dtype)
        y = data.draw(arrays(dtype, np.shape(x) if np.ndim(x) else (), lo=-3, hi=12))
        if data.draw(st.booleans()):
            x, y = (
                np.broadcast_to(x, np.broadcast_shapes(x.shape, y.shape)).copy(),
                np.broadcast_to(y, np.broadcast_shapes(x.shape, y.shape)).copy(),
            )
    else:
        x, y = _binary_operands(data, dtype)
    out = run(prim, x, y)
    assert out.dtype == dtype and out.shape == np.broadcast_shapes(x.shape, y.shape)
    if dtype == BOOL:
        fn = {"max": lambda a, b: a or b, "min": lambda a, b: a and b}[name]
        np.testing.assert_array_equal(out, pyref(fn, x, y, dtype=BOOL))
    elif dtype in dtypes.INTEGERS:
        ref = _INT_BINARY_REF[name]
        np.testing.assert_array_equal(out, pyref(lambda a, b: ref(a, b, dtype), x, y, dtype=dtype))
    elif name in _FLOAT_BINARY_REF:
        # Python floats are IEEE float64: exact for f64, and one extra rounding to a narrower
        # type is harmless for + - * / (53 >= 2*24 + 2).
        exact = pyref(_FLOAT_BINARY_REF[name], x, y, dtype=F64)
        assert_close(out, exact, ulps=0 if dtype == F64 else 1)
    elif name == "nextafter":
        _identical(out, _nextafter_ref(x, y, dtype), "nextafter")
    else:
        fn = {"pow": np.power, "atan2": np.arctan2}[name]
        with np.errstate(all="ignore"):
            ref = fn(x.astype(LD), y.astype(LD))
        assert_close(out, ref, ulps=4)
    if name not in ("max", "min"):
        with pytest.raises(FunctxTypeError, match=name):
            prim.abstract_eval(ShapedArray((2,), BOOL), ShapedArray((2,), BOOL))
    with pytest.raises(FunctxTypeError, match="shapes"):
        prim.abstract_eval(ShapedArray((2,), dtype), ShapedArray((3,), dtype))


@given(data=st.data())
def test_pow_float_int_exponent(data):
    dtype = data.draw(st.sampled_from([F64, F32]))
    x, y = _binary_operands(data, dtype, I32, lo=-5, hi=5)
    out = run(P.pow_p, x, y)
    with np.errstate(all="ignore"):
        assert_close(out, x.astype(LD) ** y.astype(LD), ulps=4)


_JAX_BINARY = {
    "add": jlax.add,
    "sub": jlax.sub,
    "mul": jlax.mul,
    "div": jlax.div,
    "rem": jlax.rem,
    "pow": jlax.pow,
    "max": jlax.max,
    "min": jlax.min,
    "atan2": jlax.atan2,
    "nextafter": jlax.nextafter,
}


@pytest.mark.parametrize("name", _BINARY)
@pytest.mark.parametrize("dtype", [F64, F32, I32, I8, U8])
def test_binary_vs_jax(name, dtype):
    if dtype in dtypes.INTEGERS and name in ("pow", "atan2", "nextafter"):
        pytest.skip("float-only in jax.lax")
    if dtype in FLOATS:
        v = special_values(dtype, n=8)
        x, y = (a.ravel() for a in np.meshgrid(v, v))
    else:
        info = np.iinfo(dtype)
        v = np.array(
            sorted(
                {0, 1, 2, 3, 7, info.max, info.max - 1, info.min, info.min + 1}
                | ({-1, -2, -3, -7} if dtype.kind == "i" else set())
            ),
            dtype,
        )
        x, y = (a.ravel() for a in np.meshgrid(v, v))
    ours = getattr(flax, name)(x, y)
    ref = _JAX_BINARY[name](x, y)
    # pow and atan2 are not correctly rounded in either library; the rest must agree exactly
    # (as values: XLA may return either zero for max(-0.0, 0.0))
    assert_matches_jax(ours, ref, rtol=4 * _eps(dtype) if name in ("pow", "atan2") else 0)


@given(data=st.data())
def test_compare(data):
    name = data.draw(st.sampled_from(_COMPARE))
    dtype = data.draw(st.sampled_from([F64, F32, I32, U8, BOOL, F16, BF16]))
    x, y = _binary_operands(data, dtype)
    out = run(P.registry[name], x, y)
    assert out.dtype == BOOL
    ops = {
        "eq": lambda a, b: a == b,
        "ne": lambda a, b: a != b,
        "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b,
        "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b,
    }
    np.testing.assert_array_equal(out, pyref(ops[name], x, y, dtype=BOOL))


@pytest.mark.parametrize("name", _COMPARE)
def test_compare_vs_jax(name):
    v = special_values(F32, n=4)
    x, y = (a.ravel() for a in np.meshgrid(v, v))
    np.testing.assert_array_equal(
        np.asarray(getattr(flax, name)(x, y)), np.asarray(getattr(jlax, name)(x, y))
    )


@pytest.mark.parametrize("name", _BITWISE)
@given(data=st.data())
def test_bitwise(name, data):
    dtype = data.draw(st.sampled_from([BOOL, I32, U8, I8, U64, I64]))
    x, y = _binary_operands(data, dtype)
    out = run(P.registry[name], x, y)
    op = {"and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b}[name]
    np.testing.assert_array_equal(out, pyref(op, x, y, dtype=dtype))
    with pytest.raises(FunctxTypeError, match=name):
        P.registry[name].abstract_eval(ShapedArray((), F32), ShapedArray((), F32))


def test_binary_weak_type_propagation():
    w, s = ShapedArray((3,), F32, True), ShapedArray((3,), F32, False)
    assert P.add_p.abstract_eval(w, w).weak_type
    assert not P.add_p.abstract_eval(w, s).weak_type
    assert not P.lt_p.abstract_eval(w, w).weak_type
    assert P.lt_p.abstract_eval(w, w).dtype == BOOL


# --- select_n, convert_element_type, iota, stop_gradient ---------------------------------------
@given(data=st.data())
def test_select_n(data):
    shape = data.draw(SHAPES)
    dtype = data.draw(st.sampled_from([F64, F32, I32, BOOL, BF16]))
    pred_kind = data.draw(st.sampled_from([BOOL, I32]))
    n = data.draw(st.integers(1, 2 if pred_kind == BOOL else 4))
    pshape = data.draw(st.sampled_from([shape, ()]))
    which = data.draw(
        arrays(BOOL, pshape) if pred_kind == BOOL else arrays(I32, pshape, lo=0, hi=n - 1)
    )
    cases = [data.draw(arrays(dtype, shape)) for _ in range(n)]
    out = run(P.select_n_p, which, *cases)
    ref = np.empty(shape, dtype)
    for idx in np.ndindex(shape):
        k = min(int(which[idx if pshape else ()]), n - 1)  # one case: select_n is the identity
        ref[idx] = cases[k][idx]
    _identical(out, ref, "select_n")


def test_select_n_rejects():
    a = ShapedArray((3,), F32)
    with pytest.raises(FunctxTypeError, match="select_n"):
        P.select_n_p.abstract_eval(ShapedArray((3,), F32), a, a)
    with pytest.raises(FunctxTypeError, match="select_n"):
        P.select_n_p.abstract_eval(ShapedArray((3,), BOOL), a, ShapedArray((3,), F64))
    with pytest.raises(FunctxTypeError, match="select_n"):
        P.select_n_p.abstract_eval(ShapedArray((2,), BOOL), a, a)
    with pytest.raises(FunctxTypeError, match="select_n"):
        P.select_n_p.abstract_eval(ShapedArray((3,), BOOL), a, a, a)


_CVT = [F64, F32, F16, BF16, I64, I32, I8, U8, U32, U64, BOOL]


def _convert_ref(v, src, dst):
    if dst == BOOL:
        return v != 0
    if dst in dtypes.INTEGERS:
        if src in FLOATS:  # saturating, NaN -> 0, as XLA
            info = np.iinfo(dst)
            if v != v:
                return 0
            if v >= info.max:
                return int(info.max)
            if v <= info.min:
                return int(info.min)
            return int(math.trunc(v))
        return wrap(int(v), dst)
    return float(v)


@given(data=st.data())
def test_convert_element_type(data):
    src = data.draw(st.sampled_from(_CVT), label="src")
    dst = data.draw(st.sampled_from(_CVT), label="dst")
    if src in dtypes.INTEGERS and dst in FLOATS and dst != F64:
        x = data.draw(arrays(src, SHAPES, lo=-(2**53), hi=2**53))  # no double rounding
    else:
        x = data.draw(arrays(src, SHAPES))
    weak = data.draw(st.booleans())
    out = run(P.convert_element_type_p, x, new_dtype=dst, weak_type=weak)
    assert out.dtype == dst
    ref = pyref(lambda v: _convert_ref(v, src, dst), x, dtype=dst if dst not in FLOATS else F64)
    if dst in FLOATS:
        with np.errstate(over="ignore"):
            # float -> float: one correct rounding; bfloat16 from float64 rounds through float32
            # as JAX/XLA and ml_dtypes do
            r = ref.astype(F32).astype(BF16) if dst == BF16 and src == F64 else ref.astype(dst)
        _identical(out, r, f"{src} -> {dst}")
    else:
        np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("src", [F64, F32, F16, BF16, I64, I32, U8, BOOL])
def test_convert_element_type_vs_jax(src):
    if src in FLOATS:
        with np.errstate(over="ignore"):
            x = np.concatenate(
                [
                    special_values(src),
                    np.array(
                        [
                            2.0**31,
                            -(2.0**31),
                            2.0**31 - 128,
                            255.5,
                            256,
                            -1.5,
                            2.0**63,
                            2.0**64,
                            1e30,
                            -1e30,
                            65504.0,
                            70000.0,
                        ],
                        np.float64,
                    ).astype(src),
                ]
            )
    elif src == BOOL:
        x = np.array([True, False])
    else:
        info = np.iinfo(src)
        x = np.array(
            [
                0,
                1,
                -1,
                127,
                128,
                255,
                256,
                2**24 + 1,
                2**31 - 1,
                info.min,
                info.max,
                2**60 + 2**36 + 1,
            ],
            np.int64,
        ).astype(src)
    # all conversions of one source in one compiled JAX function (one compile, not eleven)
    refs = jax.jit(lambda v: [jlax.convert_element_type(v, d) for d in _CVT])(x)
    for dst, ref in zip(_CVT, refs):
        ours = np.asarray(flax.convert_element_type(x, dst))
        ref = np.asarray(ref)
        if dst == BF16 or (src in FLOATS and dst in FLOATS):
            _identical(ours, ref.astype(dst), f"{src} -> {dst}")
        else:
            np.testing.assert_array_equal(ours, ref, err_msg=f"{src} -> {dst}")


@given(data=st.data())
def test_iota(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    dim = data.draw(st.integers(0, len(shape) - 1))
    dtype = data.draw(st.sampled_from([I32, I64, U8, F32, F64]))
    out = run(P.iota_p, dtype=dtype, shape=shape, dimension=dim)
    ref = np.empty(shape, dtype)
    for idx in np.ndindex(shape):
        ref[idx] = idx[dim]
    np.testing.assert_array_equal(out, ref)
    with pytest.raises(FunctxTypeError, match="iota"):
        P.iota_p.abstract_eval(dtype=dtype, shape=shape, dimension=len(shape))


@given(data=st.data())
def test_stop_gradient(data):
    dtype = data.draw(st.sampled_from([F64, F32, I32, BOOL]))
    x = data.draw(arrays(dtype, SHAPES))
    _identical(run(P.stop_gradient_p, x), x, "stop_gradient")


# --- Reductions --------------------------------------------------------------------------------
def _axes(data, ndim):
    return (
        tuple(sorted(data.draw(st.sets(st.integers(0, ndim - 1), max_size=ndim)))) if ndim else ()
    )


def _reduce_ref(name, x, axes):
    """Reduce with Python scalars (exact integers, long-double floats) over ``axes``."""
    dtype = x.dtype
    keep = [i for i in range(x.ndim) if i not in axes]
    out_shape = tuple(x.shape[i] for i in keep)
    moved = np.moveaxis(x, keep + list(axes), range(x.ndim)).reshape(
        out_shape + (math.prod(x.shape[a] for a in axes),)
    )
    out = np.empty(out_shape, dtype=LD if dtype in FLOATS else object)
    for idx in np.ndindex(out_shape):
        vals = [_py(v) for v in moved[idx]]
        if dtype in FLOATS:
            vals = [LD(v) for v in vals]
        if name == "reduce_sum":
            r = sum(vals, LD(0) if dtype in FLOATS else 0)
        elif name == "reduce_prod":
            r = math.prod(vals, start=LD(1) if dtype in FLOATS else 1)
        elif name in ("reduce_max", "reduce_min"):
            if dtype in FLOATS and any(v != v for v in vals):
                r = LD(math.nan)
            elif not vals:
                r = P.identity(name, dtype)
            else:
                r = max(vals) if name == "reduce_max" else min(vals)
        elif name == "reduce_and":
            r = (
                all(vals)
                if dtype == BOOL
                else (-1 if not vals else __import__("functools").reduce(lambda a, b: a & b, vals))
            )
        else:
            r = (
                any(vals)
                if dtype == BOOL
                else __import__("functools").reduce(lambda a, b: a | b, vals, 0)
            )
        out[idx] = r if dtype in FLOATS or dtype == BOOL else wrap(int(r), dtype)
    return out, moved


@pytest.mark.parametrize("name", _REDUCE)
@given(data=st.data())
def test_reduce(name, data):
    if name in ("reduce_and", "reduce_or"):
        kinds = [BOOL, I32, U8, I8]
    elif name in ("reduce_max", "reduce_min"):
        kinds = [F64, F64, F32, I32, U8, BOOL, F16, BF16]
    else:
        kinds = [F64, F64, F32, I32, I8, U8, F16, BF16]
    dtype = data.draw(st.sampled_from(kinds))
    shape = data.draw(SHAPES)
    axes = _axes(data, len(shape))
    kw = (
        dict(lo=-2, hi=2)
        if name == "reduce_prod" and dtype in FLOATS
        else (dict(lo=-1e6, hi=1e6) if name == "reduce_sum" and dtype in (F64, F32) else {})
    )
    x = data.draw(arrays(dtype, shape, **kw))
    out = run(P.registry[name], x, axes=axes)
    ref, moved = _reduce_ref(name, x, axes)
    if dtype in FLOATS and name in ("reduce_sum", "reduce_prod"):
        n = max(moved.shape[-1], 1)
        with np.errstate(all="ignore"):
            scale = np.abs(moved.astype(LD)).sum(-1) if name == "reduce_sum" else np.abs(ref)
        if dtype in LOW:  # accumulated in float32, rounded once
            assert_close(
                out,
                ref.astype(np.float64),
                ulps=1,
                atol=float(n * _eps(F32) * np.max(scale, initial=0)),
            )
        else:
            np.testing.assert_allclose(
                out.astype(np.float64),
                ref.astype(np.float64),
                atol=float(n * _eps(dtype) * np.max(scale, initial=0)),
                rtol=n * _eps(dtype),
                equal_nan=True,
            )
    elif dtype in FLOATS:  # max/min of -0.0 and 0.0 may be either zero
        np.testing.assert_array_equal(out.astype(np.float64), ref.astype(np.float64))
    else:
        np.testing.assert_array_equal(out, ref.astype(dtype))


@pytest.mark.parametrize("name", _REDUCE)
@pytest.mark.parametrize(
    "shape,axes",
    [((0, 3), (0,)), ((2, 0), (1,)), ((2, 0), (0, 1)), ((2, 3), ()), ((), ()), ((2, 3, 4), (0, 2))],
)
def test_reduce_vs_jax(name, shape, axes):
    """Including empty axes, which give the identity (-inf for max, True for and, ...)."""
    dtypes_ = [BOOL, I32] if name in ("reduce_and", "reduce_or") else [F32, I32, U8]
    rng = np.random.default_rng(0)
    for dtype in dtypes_:
        x = (rng.normal(size=shape) * 3).astype(dtype) if dtype != BOOL else rng.random(shape) > 0.5
        ours = np.asarray(getattr(flax, name)(x, axes))
        theirs = np.asarray(getattr(jlax, name)(x, axes))
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, err_msg=f"{dtype}")
        assert ours.dtype == theirs.dtype


def test_reduce_rejects():
    with pytest.raises(FunctxTypeError, match="axis 2"):
        P.reduce_sum_p.abstract_eval(ShapedArray((2, 3), F32), axes=(2,))
    with pytest.raises(FunctxTypeError, match="repeated"):
        P.reduce_max_p.abstract_eval(ShapedArray((2, 3), F32), axes=(1, 1))
    with pytest.raises(FunctxTypeError, match="reduce_sum"):
        P.reduce_sum_p.abstract_eval(ShapedArray((2,), BOOL), axes=(0,))
    with pytest.raises(FunctxTypeError, match="reduce_and"):
        P.reduce_and_p.abstract_eval(ShapedArray((2,), F32), axes=(0,))


def _argref(name, x, axis):
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape[:-1], np.int64)
    for idx in np.ndindex(out.shape):
        vals = [_py(v) for v in moved[idx]]
        nans = [i for i, v in enumerate(vals) if v != v]
        if nans:  # NaN counts as the largest and the smallest: the first NaN wins
            out[idx] = nans[0]
        else:
            best = max(vals) if name == "argmax" else min(vals)
            out[idx] = vals.index(best)  # ties: the first index
    return out


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@given(data=st.data())
def test_argreduce(name, data):
    dtype = data.draw(st.sampled_from([F64, F32, I32, U8, BOOL, F16, BF16]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    nonempty = [i for i, d in enumerate(shape) if d > 0]
    assume(nonempty)
    axis = data.draw(st.sampled_from(nonempty))
    if dtype in FLOATS:  # few distinct values: ties and NaNs are common
        x = data.draw(
            hnp.arrays(
                F64,
                shape,
                elements=st.sampled_from(
                    [0.0, -0.0, 1.0, -1.0, 2.5, math.nan, math.inf, -math.inf]
                ),
            )
        ).astype(dtype)
    else:
        x = data.draw(arrays(dtype, shape, lo=0, hi=3))
    index_dtype = data.draw(st.sampled_from([I32, I64]))
    out = run(P.registry[name], x, axes=(axis,), index_dtype=index_dtype)
    assert out.dtype == index_dtype
    np.testing.assert_array_equal(out, _argref(name, x, axis))
    with pytest.raises(FunctxTypeError, match="empty"):
        P.registry[name].abstract_eval(ShapedArray((2, 0), dtype), axes=(1,), index_dtype=I32)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argreduce_vs_jax(name):
    x = np.array(
        [
            [1.0, np.nan, 3.0, np.nan],
            [2.0, 2.0, -1.0, -1.0],
            [-np.inf, np.inf, 0.0, -0.0],
            [5.0, 5.0, 5.0, 5.0],
        ],
        np.float32,
    )
    for axis in (0, 1):
        np.testing.assert_array_equal(
            np.asarray(getattr(flax, name)(x, axis)),
            np.asarray(getattr(jlax, name)(x, axis, np.int32)),
        )
    b = np.array([False, True, True, False])
    np.testing.assert_array_equal(
        np.asarray(getattr(flax, name)(b, 0)), np.asarray(getattr(jlax, name)(b, 0, np.int32))
    )


# --- Cumulative reductions ---------------------------------------------------------------------
def _cum_ref(name, x, axis, reverse):
    dtype = x.dtype
    moved = np.moveaxis(x, axis, -1)
    out = np.empty(moved.shape, LD if dtype in FLOATS else object)
    for idx in np.ndindex(moved.shape[:-1]):
        row = [_py(v) for v in moved[idx]]
        row = [LD(v) for v in row] if dtype in FLOATS else row
        if reverse:
            row = row[::-1]
        acc, res = None, []
        for v in row:
            if acc is None:
                acc = v
            elif name == "cumsum":
                acc = acc + v
            elif name == "cumprod":
                acc = acc * v
            elif name in ("cummax", "cummin"):
                if dtype in FLOATS and (acc != acc or v != v):
                    acc = LD(math.nan)
                else:
                    acc = max(acc, v) if name == "cummax" else min(acc, v)
            else:
                with np.errstate(all="ignore"):
                    acc = np.logaddexp(acc, v)
            res.append(acc if dtype in FLOATS or dtype == BOOL else wrap(int(acc), dtype))
        out[idx] = res[::-1] if reverse else res
    return np.moveaxis(out, -1, axis)


@pytest.mark.parametrize("name", _CUMULATIVE)
@given(data=st.data())
def test_cumulative(name, data):
    kinds = [F64, F64, F32, F16] + ([] if name == "cumlogsumexp" else [I32, I8, U8])
    if name in ("cummax", "cummin"):
        kinds.append(BOOL)
    dtype = data.draw(st.sampled_from(kinds))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=5))
    axis = data.draw(st.integers(0, len(shape) - 1))
    reverse = data.draw(st.booleans())
    kw = (
        dict(lo=-2, hi=2)
        if name == "cumprod" and dtype in FLOATS
        else (dict(lo=-1e4, hi=1e4) if name == "cumsum" and dtype in FLOATS else {})
    )
    x = data.draw(arrays(dtype, shape, **kw))
    out = np.asarray(getattr(flax, name)(x, axis, reverse))  # an associative_scan
    ref = _cum_ref(name, x, axis, reverse)
    if dtype in FLOATS and name in ("cumsum", "cumprod", "cumlogsumexp"):
        n = max(shape[axis], 1)
        acc = F32 if dtype in LOW else dtype
        scale = np.max(np.abs(x.astype(np.float64)), initial=0) if name != "cumprod" else 1.0
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(
                out.astype(np.float64),
                ref.astype(dtype).astype(np.float64),
                rtol=n * _eps(acc) + (_eps(dtype) if dtype in LOW else 0),
                atol=n * _eps(acc) * (scale if math.isfinite(scale) else 0)
                + (n * _eps(dtype) * scale if dtype in LOW else 0),
                equal_nan=True,
            )
    elif dtype in FLOATS:  # max/min of -0.0 and 0.0 may be either zero
        np.testing.assert_array_equal(out.astype(np.float64), ref.astype(np.float64))
    else:
        np.testing.assert_array_equal(out, ref.astype(dtype))


@pytest.mark.parametrize("name", _CUMULATIVE)
def test_cumulative_vs_jax(name):
    x = np.array([[1.0, -2.0, np.nan, 0.5], [3.0, 0.25, -1.0, 4.0], [-np.inf, 1.0, 2.0, 0.0]])
    for axis, reverse in itertools.product((0, 1), (False, True)):
        ours = np.asarray(getattr(flax, name)(x, axis, reverse))
        theirs = np.asarray(getattr(jlax, name)(x, axis, reverse))
        np.testing.assert_allclose(
            ours, theirs, rtol=1e-14, equal_nan=True, err_msg=f"axis={axis} reverse={reverse}"
        )


# --- Shape ops ---------------------------------------------------------------------------------
@st.composite
def broadcast_case(draw):
    out_shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    dims = (
        tuple(sorted(draw(st.sets(st.integers(0, len(out_shape) - 1), max_size=len(out_shape)))))
        if out_shape
        else ()
    )
    in_shape = tuple(draw(st.sampled_from([out_shape[d], 1])) for d in dims)
    return in_shape, out_shape, dims


@given(case=broadcast_case(), data=st.data())
def test_broadcast_in_dim(case, data):
    in_shape, shape, dims = case
    dtype = data.draw(st.sampled_from([F64, I32, BOOL]))
    x = data.draw(arrays(dtype, in_shape))
    out = run(P.broadcast_in_dim_p, x, shape=shape, broadcast_dimensions=dims)
    ref = np.empty(shape, dtype)
    for idx in np.ndindex(shape):
        ref[idx] = x[tuple(0 if x.shape[i] == 1 else idx[d] for i, d in enumerate(dims))]
    _identical(out, ref, "broadcast_in_dim")
    if dims:
        with pytest.raises(FunctxTypeError, match="broadcast_in_dim"):
            P.broadcast_in_dim_p.abstract_eval(
                ShapedArray(in_shape, dtype),
                shape=shape,
                broadcast_dimensions=dims[::-1] + dims[:0] if len(dims) > 1 else (len(shape),),
            )


@given(data=st.data())
def test_reshape(data):
    shape = data.draw(SHAPES)
    x = data.draw(arrays(F64, shape))
    size = x.size
    # a random factorisation of the size (size 0: any shape with a zero)
    if size == 0:
        new = data.draw(st.sampled_from([(0,), (2, 0), (0, 3, 1)]))
    else:
        new, rest = [], size
        for p in (2, 3, 5, 7):
            while rest % p == 0 and data.draw(st.booleans()):
                new.append(p)
                rest //= p
        new = tuple(data.draw(st.permutations(new + [rest] + [1] * data.draw(st.integers(0, 1)))))
    out = run(P.reshape_p, x, new_sizes=new)
    _identical(out.ravel(), np.array([x[i] for i in np.ndindex(x.shape)], F64), "reshape order")
    assert out.shape == new
    with pytest.raises(FunctxTypeError, match="reshape"):
        P.reshape_p.abstract_eval(ShapedArray(shape, F64), new_sizes=(size + 1,))


@given(data=st.data())
def test_transpose(data):
    shape = data.draw(SHAPES)
    perm = tuple(data.draw(st.permutations(range(len(shape)))))
    x = data.draw(arrays(I32, shape))
    out = run(P.transpose_p, x, permutation=perm)
    assert out.shape == tuple(shape[p] for p in perm)
    for idx in np.ndindex(out.shape):
        src = [0] * len(shape)
        for i, p in enumerate(perm):
            src[p] = idx[i]
        assert out[idx] == x[tuple(src)]
    with pytest.raises(FunctxTypeError, match="transpose"):
        P.transpose_p.abstract_eval(ShapedArray(shape, I32), permutation=perm + (len(perm),))


@given(data=st.data())
def test_squeeze_expand_dims(data):
    base = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    n = len(base) + data.draw(st.integers(0, 2))
    ones = (
        sorted(
            data.draw(
                st.sets(st.integers(0, n - 1), min_size=n - len(base), max_size=n - len(base))
            )
        )
        if n
        else []
    )
    it = iter(base)
    full = tuple(1 if i in ones else next(it) for i in range(n))
    x = data.draw(arrays(F32, base))
    e = run(P.expand_dims_p, x, dimensions=tuple(ones))
    assert e.shape == full
    _identical(e.ravel(), x.ravel(), "expand_dims")
    s = run(P.squeeze_p, e, dimensions=tuple(ones))
    _identical(s, x, "squeeze")
    big = [i for i, d in enumerate(full) if d != 1]
    if big:
        with pytest.raises(FunctxTypeError, match="squeeze"):
            P.squeeze_p.abstract_eval(ShapedArray(full, F32), dimensions=(big[0],))


@given(data=st.data())
def test_rev(data):
    shape = data.draw(SHAPES)
    dims = _axes(data, len(shape))
    x = data.draw(arrays(I32, shape))
    out = run(P.rev_p, x, dimensions=dims)
    for idx in np.ndindex(shape):
        src = tuple(shape[d] - 1 - i if d in dims else i for d, i in enumerate(idx))
        assert out[idx] == x[src]


@given(data=st.data())
def test_slice(data):
    shape = data.draw(SHAPES)
    starts, limits, strides = [], [], []
    for d in shape:
        s = data.draw(st.integers(0, d))
        starts.append(s)
        limits.append(data.draw(st.integers(s, d)))
        strides.append(data.draw(st.integers(1, 3)))
    strides = data.draw(st.sampled_from([None, tuple(strides)]))
    x = data.draw(arrays(F64, shape))
    out = run(
        P.slice_p, x, start_indices=tuple(starts), limit_indices=tuple(limits), strides=strides
    )
    st_ = strides or (1,) * len(shape)
    ranges = [list(range(s, l, k)) for s, l, k in zip(starts, limits, st_)]
    ref = np.array([x[tuple(i)] for i in itertools.product(*ranges)], F64).reshape(
        [len(r) for r in ranges]
    )
    _identical(out, ref, "slice")
    if shape:
        with pytest.raises(FunctxTypeError, match="slice"):
            P.slice_p.abstract_eval(
                ShapedArray(shape, F64),
                start_indices=tuple(starts),
                limit_indices=tuple(d + 1 for d in shape),
                strides=None,
            )


@given(data=st.data())
def test_concatenate(data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    dim = data.draw(st.integers(0, len(shape) - 1))
    n = data.draw(st.integers(1, 4))
    xs = []
    for _ in range(n):
        s = list(shape)
        s[dim] = data.draw(st.integers(0, 3))
        xs.append(data.draw(arrays(I32, tuple(s))))
    out = run(P.concatenate_p, *xs, dimension=dim)
    offsets = np.cumsum([0] + [x.shape[dim] for x in xs])
    for idx in np.ndindex(out.shape):
        k = int(np.searchsorted(offsets, idx[dim], side="right") - 1)
        src = list(idx)
        src[dim] -= offsets[k]
        assert out[idx] == xs[k][tuple(src)]
    with pytest.raises(FunctxTypeError, match="concatenate"):
        P.concatenate_p.abstract_eval(
            ShapedArray(shape, I32), ShapedArray(shape, F32), dimension=dim
        )


def _pad_ref(x, padval, config):
    shape = [lo + hi + d + max(d - 1, 0) * it for d, (lo, hi, it) in zip(x.shape, config)]
    out = np.full(shape, padval, x.dtype)
    for idx in np.ndindex(x.shape):
        pos = tuple(lo + i * (it + 1) for i, (lo, _, it) in zip(idx, config))
        if all(0 <= p < n for p, n in zip(pos, shape)):
            out[pos] = x[idx]
    return out


@given(data=st.data())
def test_pad(data):
    shape = data.draw(SHAPES)
    config = tuple(
        (data.draw(st.integers(-3, 3)), data.draw(st.integers(-3, 3)), data.draw(st.integers(0, 2)))
        for _ in shape
    )
    assume(all(lo + hi + d + max(d - 1, 0) * it >= 0 for d, (lo, hi, it) in zip(shape, config)))
    dtype = data.draw(st.sampled_from([F64, I32, BOOL, F32]))
    x = data.draw(arrays(dtype, shape))
    padval = data.draw(arrays(dtype, ()))
    out = run(P.pad_p, x, padval, padding_config=config)
    _identical(out, _pad_ref(x, padval, config), "pad")


@pytest.mark.parametrize(
    "config",
    [
        ((1, 2, 0),),
        ((-1, -2, 0),),
        ((0, 0, 2),),
        ((-2, 3, 1),),
        ((2, -4, 3),),
        ((-5, 0, 2),),
        ((1, 1, 1), (-1, 2, 0)),
    ],
)
def test_pad_vs_jax(config):
    x = np.arange(1, 1 + 4 * (3 if len(config) == 2 else 1), dtype=np.float32).reshape(
        (4, 3) if len(config) == 2 else (4,)
    )
    ours = np.asarray(flax.pad(x, -1.0, config))
    np.testing.assert_array_equal(ours, np.asarray(jlax.pad(x, np.float32(-1), config)))
    np.testing.assert_array_equal(ours, _pad_ref(x, np.float32(-1), config))


def test_pad_rejects():
    with pytest.raises(FunctxTypeError, match="negative size"):
        P.pad_p.abstract_eval(
            ShapedArray((3,), F32), ShapedArray((), F32), padding_config=((-2, -2, 0),)
        )
    with pytest.raises(FunctxTypeError, match="interior"):
        P.pad_p.abstract_eval(
            ShapedArray((3,), F32), ShapedArray((), F32), padding_config=((0, 0, -1),)
        )
    with pytest.raises(FunctxTypeError, match="padding value"):
        P.pad_p.abstract_eval(
            ShapedArray((3,), F32), ShapedArray((), F64), padding_config=((0, 0, 0),)
        )


_X234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
_SHAPE_OPS_VS_JAX = [  # (name, functx call, jax call): the same lax function in both libraries
    ("broadcast_in_dim", lambda m: m.broadcast_in_dim(_X234[:, :1], (5, 2, 3, 4), (1, 2, 3))),
    ("iota", lambda m: m.broadcasted_iota(np.int32, (3, 4, 2), 1)),
    ("transpose", lambda m: m.transpose(_X234, (2, 0, 1))),
    ("squeeze", lambda m: m.squeeze(_X234[:, :1, None], (1, 2))),
    ("expand_dims", lambda m: m.expand_dims(_X234, (0, 3))),
    ("rev", lambda m: m.rev(_X234, (0, 2))),
    ("slice", lambda m: m.slice(_X234, (0, 1, 0), (2, 3, 4), (1, 1, 3))),
    ("concatenate", lambda m: m.concatenate([_X234, _X234[:, :1] * 2], 1)),
    (
        "dynamic_slice",
        lambda m: m.dynamic_slice(_X234, (np.int32(1), np.int32(2), np.int32(7)), (1, 2, 2)),
    ),
    (
        "dynamic_update_slice",
        lambda m: m.dynamic_update_slice(
            _X234, -_X234[:1, :2, :2], (np.int32(1), np.int32(5), np.int32(1))
        ),
    ),
    ("select_n", lambda m: m.select_n(_X234 > 7, _X234, -_X234)),
    ("bitwise_not", lambda m: m.bitwise_not(np.array([0, 5, -3], np.int32))),
]


@pytest.mark.parametrize("name,call", _SHAPE_OPS_VS_JAX, ids=[c[0] for c in _SHAPE_OPS_VS_JAX])
def test_shape_and_index_ops_vs_jax(name, call):
    ours, theirs = call(flax), call(jlax)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


# --- Indexing ----------------------------------------------------------------------------------
def _clamp_start(i, d, s):
    return min(max(int(i), 0), d - s)


@given(data=st.data())
def test_dynamic_slice(data):
    shape = data.draw(SHAPES)
    sizes = tuple(data.draw(st.integers(0, d)) for d in shape)
    idx_dtype = data.draw(st.sampled_from([I32, I64, U8]))
    starts = [
        np.asarray(
            data.draw(st.integers(-6, 8) if idx_dtype != U8 else st.integers(0, 8)), idx_dtype
        )
        for _ in shape
    ]
    x = data.draw(arrays(F32, shape))
    out = run(P.dynamic_slice_p, x, *starts, slice_sizes=sizes)
    st_ = [_clamp_start(i, d, s) for i, d, s in zip(starts, shape, sizes)]
    ref = x[np.ix_(*[np.arange(a, a + s) for a, s in zip(st_, sizes)])] if shape else x
    _identical(out, ref, "dynamic_slice")


@given(data=st.data())
def test_dynamic_update_slice(data):
    shape = data.draw(SHAPES)
    ushape = tuple(data.draw(st.integers(0, d)) for d in shape)
    starts = [np.asarray(data.draw(st.integers(-6, 8)), I32) for _ in shape]
    x = data.draw(arrays(I32, shape))
    u = data.draw(arrays(I32, ushape))
    out = run(P.dynamic_update_slice_p, x, u, *starts)
    ref = x.copy()
    st_ = [_clamp_start(i, d, s) for i, d, s in zip(starts, shape, ushape)]
    for idx in np.ndindex(ushape):
        ref[tuple(a + i for a, i in zip(st_, idx))] = u[idx]
    np.testing.assert_array_equal(out, ref)
    assert not np.shares_memory(out, x)
    if shape:
        with pytest.raises(FunctxTypeError, match="dynamic_update_slice"):
            P.dynamic_update_slice_p.abstract_eval(
                ShapedArray(shape, I32),
                ShapedArray(tuple(d + 1 for d in shape), I32),
                *[ShapedArray((), I32)] * len(shape),
            )


@st.composite
def gather_case(draw, fill_ok=True):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    k = draw(st.integers(1, len(shape)))
    axes = tuple(draw(st.permutations(range(len(shape))))[:k])
    batch = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    dims = [shape[a] for a in axes]
    idx = draw(hnp.arrays(I32, batch + (k,), elements=st.integers(-3, max(dims) + 2)))
    return shape, axes, idx


def _gather_ref(x, idx, axes, mode, fill):
    rest = [d for i, d in enumerate(x.shape) if i not in axes]
    out = np.empty(idx.shape[:-1] + tuple(rest), x.dtype)
    for b in np.ndindex(idx.shape[:-1]):
        ix = [int(v) for v in idx[b]]
        dims = [x.shape[a] for a in axes]
        if mode == "clip":
            ix = [min(max(i, 0), d - 1) for i, d in zip(ix, dims)]
        elif any(not 0 <= i < d for i, d in zip(ix, dims)):
            out[b] = fill
            continue
        sel = [slice(None)] * x.ndim
        for a, i in zip(axes, ix):
            sel[a] = i
        out[b] = x[tuple(sel)]
    return out


@given(case=gather_case(), data=st.data())
def test_gather(case, data):
    shape, axes, idx = case
    mode = data.draw(st.sampled_from(["clip", "fill"]))
    if mode == "clip" and any(shape[a] == 0 for a in axes) and idx[..., 0].size:
        with pytest.raises(FunctxTypeError, match="empty axis"):
            P.gather_p.abstract_eval(
                ShapedArray(shape, F32), ShapedArray(idx.shape, I32), axes=axes, mode=mode
            )
        return
    dtype = data.draw(st.sampled_from([F64, I32, U8, BOOL]))
    fill = data.draw(st.sampled_from([None, 7]))
    x = data.draw(arrays(dtype, shape))
    params = (
        dict(axes=axes, mode=mode) if fill is None else dict(axes=axes, mode=mode, fill_value=fill)
    )
    out = run(P.gather_p, x, idx, **params)
    default = {F64: math.nan, I32: np.iinfo(I32).min, U8: 255, BOOL: True}[dtype]
    _identical(out, _gather_ref(x, idx, axes, mode, default if fill is None else fill), "gather")


@pytest.mark.parametrize("name", _SCATTER)
@given(case=gather_case(), data=st.data())
def test_scatter(name, case, data):
    shape, axes, idx = case
    mode = data.draw(st.sampled_from(["drop", "clip"]))
    dtype = data.draw(st.sampled_from([F64, F32, I32, U8] + ([BOOL] if name == "scatter" else [])))
    x = data.draw(arrays(dtype, shape))
    rest = tuple(d for i, d in enumerate(shape) if i not in axes)
    upd = data.draw(arrays(dtype, idx.shape[:-1] + rest))
    dims = [shape[a] for a in axes]
    resolved = []
    for b in np.ndindex(idx.shape[:-1]):
        ix = [int(v) for v in idx[b]]
        if x.size == 0:  # nowhere to write
            ix = None
        elif mode == "clip":
            ix = [min(max(i, 0), d - 1) for i, d in zip(ix, dims)]
        elif any(not 0 <= i < d for i, d in zip(ix, dims)):
            ix = None
        resolved.append((b, ix))
    if name == "scatter":  # which of two colliding writes wins is unspecified (as in XLA)
        hits = [tuple(ix) for _, ix in resolved if ix is not None]
        assume(len(hits) == len(set(hits)) or not rest or 0 in rest)
    out = run(P.registry[name], x, idx, upd, axes=axes, mode=mode)
    ref = x.astype(LD if dtype in FLOATS else object)

    def combine(a, b):
        if name == "scatter":
            return b
        if name == "scatter_add":
            return a + b
        if name == "scatter_mul":
            return a * b
        if dtype in FLOATS and (a != a or b != b):
            return LD(math.nan)
        return min(a, b) if name == "scatter_min" else max(a, b)

    for b, ix in resolved:
        if ix is None:
            continue
        sel = [slice(None)] * len(shape)
        for a, i in zip(axes, ix):
            sel[a] = i
        sub = ref[tuple(sel)]
        new = np.asarray(upd[b]).astype(LD if dtype in FLOATS else object)
        if np.ndim(sub) == 0:
            ref[tuple(sel)] = combine(sub, new[()])
        else:
            for j in np.ndindex(sub.shape):
                sub[j] = combine(sub[j], new[j])
    if dtype in FLOATS:
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(
                out.astype(np.float64),
                ref.astype(dtype).astype(np.float64),
                rtol=1e-12 if dtype == F64 else 1e-5,
                equal_nan=True,
            )
    else:
        np.testing.assert_array_equal(
            out,
            np.vectorize(lambda v: wrap(int(v), dtype), otypes=[dtype])(ref)
            if ref.size
            else ref.astype(dtype),
        )


def test_scatter_add_duplicates_and_out_of_bounds():
    """As np.add.at with out-of-range indices dropped."""
    x = np.zeros(5)
    idx = np.array([[0], [1], [1], [4], [5], [-1], [100], [1]], np.int32)
    upd = np.arange(1.0, 9.0)
    out = run(P.scatter_add_p, x, idx, upd, axes=(0,), mode="drop")
    ref = np.zeros(5)
    ok = (idx[:, 0] >= 0) & (idx[:, 0] < 5)
    np.add.at(ref, idx[ok, 0], upd[ok])
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(
        np.asarray(functx.numpy.zeros(5).at[idx[:, 0]].add(upd)),
        np.asarray(jjnp.zeros(5).at[idx[:, 0]].add(upd)),
    )


def test_index_rejects():
    with pytest.raises(FunctxTypeError, match="gather"):
        P.gather_p.abstract_eval(
            ShapedArray((3,), F32), ShapedArray((2, 1), F32), axes=(0,), mode="clip"
        )
    with pytest.raises(FunctxTypeError, match="gather"):
        P.gather_p.abstract_eval(
            ShapedArray((3,), F32), ShapedArray((2, 2), I32), axes=(0,), mode="clip"
        )
    with pytest.raises(FunctxTypeError, match="scatter_add"):
        P.scatter_add_p.abstract_eval(
            ShapedArray((3,), F32),
            ShapedArray((2, 1), I32),
            ShapedArray((3,), F32),
            axes=(0,),
            mode="drop",
        )
    with pytest.raises(FunctxTypeError, match="dynamic_slice"):
        P.dynamic_slice_p.abstract_eval(
            ShapedArray((3,), F32), ShapedArray((), F32), slice_sizes=(1,)
        )
    with pytest.raises(FunctxTypeError, match="dynamic_slice"):
        P.dynamic_slice_p.abstract_eval(
            ShapedArray((3,), F32), ShapedArray((), I32), slice_sizes=(4,)
        )


# --- Contraction -------------------------------------------------------------------------------
@st.composite
def dot_case(draw):
    nb, nc, nl, nr = (draw(st.integers(0, 2)) for _ in range(4))
    size = st.integers(0, 3)
    B = [draw(size) for _ in range(nb)]
    C = [draw(size) for _ in range(nc)]
    L = [draw(size) for _ in range(nl)]
    R = [draw(size) for _ in range(nr)]
    lhs_axes = (
        [("b", i) for i in range(nb)]
        + [("l", i) for i in range(nl)]
        + [("c", i) for i in range(nc)]
    )
    rhs_axes = (
        [("b", i) for i in range(nb)]
        + [("c", i) for i in range(nc)]
        + [("r", i) for i in range(nr)]
    )
    lhs_axes = draw(st.permutations(lhs_axes))
    rhs_axes = draw(st.permutations(rhs_axes))
    sizes = {"b": B, "c": C, "l": L, "r": R}
    lshape = tuple(sizes[k][i] for k, i in lhs_axes)
    rshape = tuple(sizes[k][i] for k, i in rhs_axes)
    dn = (
        (
            tuple(lhs_axes.index(("c", i)) for i in range(nc)),
            tuple(rhs_axes.index(("c", i)) for i in range(nc)),
        ),
        (
            tuple(lhs_axes.index(("b", i)) for i in range(nb)),
            tuple(rhs_axes.index(("b", i)) for i in range(nb)),
        ),
    )
    return lshape, rshape, dn, lhs_axes, rhs_axes


def _einsum_spec(lhs_axes, rhs_axes):
    letters = {}

    def let(a):
        return letters.setdefault(a, "abcdefghijklmnop"[len(letters)])

    ls = "".join(let(a) for a in lhs_axes)
    rs = "".join(let(a) for a in rhs_axes)
    nb = sum(1 for a in lhs_axes if a[0] == "b")
    out = (
        "".join(let(("b", i)) for i in range(nb))
        + "".join(let(a) for a in lhs_axes if a[0] == "l")
        + "".join(let(a) for a in rhs_axes if a[0] == "r")
    )
    return f"{ls},{rs}->{out}"


@given(case=dot_case(), data=st.data())
def test_dot_general(case, data):
    lshape, rshape, dn, la, ra = case
    dtype, pet = data.draw(
        st.sampled_from(
            [
                (F64, None),
                (F32, None),
                (I32, None),
                (BOOL, None),
                (F16, None),
                (F16, F32),
                (I8, I32),
                (BF16, F32),
            ]
        )
    )
    kw = dict(lo=-10, hi=10) if dtype != BOOL else {}
    lhs = data.draw(arrays(dtype, lshape, **kw))
    rhs = data.draw(arrays(dtype, rshape, **kw))
    out = run(P.dot_general_p, lhs, rhs, dimension_numbers=dn, preferred_element_type=pet)
    assert out.dtype == (pet or dtype)
    spec = _einsum_spec(la, ra)
    if dtype in FLOATS:
        ref = np.einsum(spec, lhs.astype(LD), rhs.astype(LD))
        bound = np.einsum(spec, np.abs(lhs.astype(LD)), np.abs(rhs.astype(LD)))
        k = max(math.prod(lshape[i] for i in dn[0][0]), 1)
        acc = pet or (F32 if dtype in LOW else dtype)
        tol = (k + 1) * _eps(acc) * bound.astype(np.float64) + _eps(pet or dtype) * np.abs(
            ref.astype(np.float64)
        )
        assert np.all(np.abs(out.astype(np.float64) - ref.astype(np.float64)) <= tol + 1e-300)
    elif dtype == BOOL:
        ref = np.einsum(spec, lhs.astype(np.int64), rhs.astype(np.int64)) != 0
        np.testing.assert_array_equal(out, ref)
    else:
        ref = np.einsum(spec, lhs.astype(np.int64), rhs.astype(np.int64))
        np.testing.assert_array_equal(
            out,
            np.vectorize(lambda v: wrap(int(v), pet or dtype))(ref)
            if ref.size
            else ref.astype(pet or dtype),
        )


@pytest.mark.parametrize(
    "dn,lshape,rshape",
    [
        ((((1,), (0,)), ((), ())), (2, 3), (3, 4)),
        ((((0,), (1,)), ((), ())), (3, 2), (4, 3)),
        ((((2,), (1,)), ((0,), (0,))), (2, 3, 4), (2, 4, 5)),
        ((((0, 2), (2, 0)), ((1,), (1,))), (3, 2, 4), (4, 2, 3)),
        ((((), ()), ((), ())), (2,), (3,)),
        ((((0,), (0,)), ((), ())), (0,), (0,)),
    ],
)
@pytest.mark.parametrize(
    "dtype,pet", [(F32, None), (F64, None), (I32, None), (I8, I32), (F16, F32)]
)
def test_dot_general_vs_jax(dn, lshape, rshape, dtype, pet):
    rng = np.random.default_rng(1)
    lhs = (rng.normal(size=lshape) * 4).astype(dtype)
    rhs = (rng.normal(size=rshape) * 4).astype(dtype)
    ours = np.asarray(flax.dot_general(lhs, rhs, dn, preferred_element_type=pet))
    theirs = np.asarray(jlax.dot_general(lhs, rhs, dn, preferred_element_type=pet))
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(
        ours.astype(np.float64), theirs.astype(np.float64), rtol=1e-5, atol=1e-4
    )


def test_dot_general_rejects():
    with pytest.raises(FunctxTypeError, match="cannot contract"):
        P.dot_general_p.abstract_eval(
            ShapedArray((2, 3), F32),
            ShapedArray((4, 5), F32),
            dimension_numbers=(((1,), (0,)), ((), ())),
        )
    with pytest.raises(FunctxTypeError, match="dtypes"):
        P.dot_general_p.abstract_eval(
            ShapedArray((2, 3), F32),
            ShapedArray((3, 5), F64),
            dimension_numbers=(((1,), (0,)), ((), ())),
        )
    with pytest.raises(FunctxTypeError, match="pair up"):
        P.dot_general_p.abstract_eval(
            ShapedArray((2, 3), F32),
            ShapedArray((3, 5), F32),
            dimension_numbers=(((1,), ()), ((), ())),
        )
