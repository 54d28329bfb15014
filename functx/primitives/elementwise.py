"""The elementwise primitives: ONE row per unary, binary, compare and bitwise op.

A row (``Elementwise``) holds everything about its op, and every layer reads it from here:

- ``numpy``: the NumPy implementation the eager path runs (wrapped by group: float unary ops
  compute float16/bfloat16 in float32, binary and compare ops run without NumPy warnings);
- ``kinds``: the operand dtypes it accepts ("float", "number" = no bool, "intbool", "any");
  ``complex``: whether complex64/complex128 operands are accepted too (as in JAX's ``lax``);
- ``jvp``: the derivative, read by ``functx.transforms.jvp`` (one generic rule for every row):
  ``NONDIFF`` (piecewise constant or integer/bool result: no tangent), ``Linear(signs)`` (the
  tangent is the signed sum of the operands' tangents), a function ``(ops, x, ans, **params)`` of a
  unary op giving ``d ans / d x``, a pair of such functions ``(ops, x, y, ans)`` of a binary op
  giving the two partial derivatives, ``APPLY`` (linear: the tangent is the op applied to the
  operands' tangents, zeros filled in: ``real``, ``complex``) or ``Unsupported(reason)``.
  ``ops`` is the op-builder namespace the transform passes in (primitives never import it);
  Python scalars combine with an operand in its dtype, as in ``functx.lax``;
- ``cpp``: its C++ spelling for ``functx.lowering.cpp``: a function name (``"fx::erf"``: a libm
  function the prelude wraps for float and double), a template over the printed operands ``{0}``,
  ``{1}`` and the compute type ``{ct}``, a callable ``(ctx) -> str`` for the special cases (integer
  division, rounding modes, ...), or ``Unsupported(reason)``;
- ``triton``: its Triton spelling, likewise (``"libdevice.erf"``: a libdevice function), with
  ``interpret`` the NumPy stand-in that replaces that libdevice function under ``TRITON_INTERPRET``
  (None: the NumPy implementation ``numpy`` itself);
- ``costly``: whether it costs much more than an add (a call, a polynomial, a division): the
  scheduler recomputes cheap expressions but keeps costly ones;
- ``exact_in_half``: whether its float16/bfloat16 result is exact in float32 (the Triton backend
  then skips rounding it to the half type);
- ``lax_name``: its ``functx.lax`` name where that differs (``bitwise_not`` for ``not``), and
  ``builder``: "plain" when ``functx.ops`` builds it from the row, "custom" where it has its own
  builder (parameters, argument checks).

Adding an elementwise op with C and libdevice equivalents is one row here plus its public name
in ``functx/lax/__init__.py`` (and its test rows); the coverage tests name any field a transform or
backend misses.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from functx import dtypes
from functx.core import ShapedArray
from functx.primitives import special as S
from functx.primitives.base import LOW_FLOATS, err, fmt, prim, quiet, same_dtypes, upcast


@dataclass(frozen=True)
class Unsupported:
    """A field a backend or transform explicitly lacks, with the reason users will read."""

    reason: str


@dataclass(frozen=True)
class Linear:
    """The tangent of a linear op: the sum of its operands' tangents times ``signs``."""

    signs: tuple


#: The derivative of an op whose result carries no tangent.
NONDIFF = "nondifferentiable"
#: The derivative of an op linear in all its operands together: the op applied to the tangents.
APPLY = "apply"


@dataclass(frozen=True)
class Elementwise:
    """One elementwise primitive (see the module docstring for the fields)."""

    name: str
    group: str  # unary | binary | compare | bitwise
    kinds: str  # float | number | intbool | any
    numpy: Callable
    jvp: Any = None  # None: missing (the coverage tests name it)
    cpp: Any = None
    triton: Any = None
    interpret: Callable | None = None
    costly: bool = False
    exact_in_half: bool = False
    lax_name: str | None = None
    builder: str = "plain"
    abstract_eval: Callable | None = None  # a rule of its own (None: by group and kinds)
    complex: bool = False  # complex operands accepted (kinds "float": floats or complex)

    @property
    def arity(self) -> int:
        return 1 if self.group == "unary" else 2

    @property
    def public_name(self) -> str:
        return self.lax_name or self.name


# --- NumPy implementations -----------------------------------------------------------------------
def _vectorize_scalar(fn):
    """A float function of the standard library (correctly rounded) mapped over an array in
    float64: NumPy has no vectorized erf or lgamma and scipy is not a dependency."""

    def safe(v):
        # math raises where IEEE functions return inf: lgamma at its poles (0, -1, ...) and on
        # overflow; XLA (and JAX) return +inf there.
        try:
            return fn(v)
        except (ValueError, OverflowError):
            return math.inf

    ufunc = np.frompyfunc(safe, 1, 1)

    def impl(x):
        return np.asarray(ufunc(x.astype(np.float64)), np.float64).astype(x.dtype)

    return impl


def _complex_pick(x, y, greater):
    """JAX's max/min of complex operands (lexicographic, as XLA lowers them): ``x`` where its
    real part orders before/after ``y``'s, or the real parts are equal and the imaginary parts
    do; ``y`` otherwise (so a NaN part makes the result ``y``)."""
    cmp = np.greater if greater else np.less
    with np.errstate(invalid="ignore"):
        pick = np.where(x.real == y.real, cmp(x.imag, y.imag), cmp(x.real, y.real))
    return np.where(pick, x, y).astype(x.dtype)


def _logistic(x):
    if x.dtype.kind == "c":
        return (1 / (1 + np.exp(-x))).astype(x.dtype)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


# Host kernels an eager row calls where a higher layer provides them (filled at import by
# functx.lowering.cpp.hostmath; the rows fall back to NumPy without them): "rsqrt", XLA's CPU
# rsqrt of float32/float64 (the processor's approximation and Newton steps where XLA uses them, not
# rounded correctly), "pow", libm's powf/pow per element (as XLA calls it), and "libm", libm's
# function of each element for the rows NumPy computes with kernels of its own on AVX-512.
host_math: dict = {}


@functools.cache
def _libm_lib():
    """libm through ctypes, loaded once (``find_library`` runs ldconfig: 2-3 ms a call), or None
    where it cannot be loaded."""
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    except OSError:
        return None


def _libm_each(name, x, *y):
    """libm's ``name`` called through ctypes once per element (a few elements), or None where
    libm cannot be loaded."""
    import ctypes

    f = getattr(_libm_lib(), name + ("f" if x.dtype == np.float32 else ""), None)
    if f is None:
        return None
    ct = ctypes.c_float if x.dtype == np.float32 else ctypes.c_double
    f.restype, f.argtypes = ct, [ct] * (1 + len(y))
    cols = [a.ravel().tolist() for a in (x, *y)]
    return np.array([f(*v) for v in zip(*cols)], x.dtype).reshape(x.shape)


def _libm(name, fn, f64_only=False):
    """NumPy's ``fn``, or libm's ``name`` for float32/float64 operands where the host provides it
    (``host_math["libm"]``; ``f64_only``: float64 only): NumPy's own SIMD kernels for these on
    AVX-512 machines round otherwise (functx.lowering.cpp.hostmath says which)."""
    types = (np.float64,) if f64_only else (np.float32, np.float64)

    def impl(x, *y):
        if getattr(x, "dtype", None) in types and all(
            getattr(a, "dtype", None) == x.dtype for a in y
        ):
            args = np.broadcast_arrays(x, *y) if y else (np.asarray(x),)  # (a scalar operand)
            if "libm" in host_math:
                out = host_math["libm"](name, *args)
            elif args[0].size <= 16:  # (before jit's import: the docstrings' examples)
                out = _libm_each(name, *args)
            else:
                out = None
            if out is not None:
                return out[()] if isinstance(x, np.generic) else out
        return fn(x, *y)

    impl.__name__ = fn.__name__
    return impl


def _rsqrt(x):
    if x.dtype in (np.float32, np.float64) and "rsqrt" in host_math:
        return host_math["rsqrt"](x)
    return 1 / np.sqrt(x)


def _round(x, rounding_method=1):
    if rounding_method == 1:  # to nearest even
        return np.rint(x)
    # Away from zero. ``floor(|x| + 0.5)`` is wrong where the addition rounds (0.49999999999999994,
    # odd integers above 2**52), so split off the fraction exactly and step away from zero.
    t = np.trunc(x)
    step = np.abs(x - t) >= 0.5
    return np.where(step, t + np.sign(x), t).astype(x.dtype)


def _sign(x):
    if x.dtype.kind in "iub":
        return np.sign(x)
    if x.dtype.kind == "c":  # x / |x|, and 0 at 0 (as XLA)
        a = np.abs(x)
        return np.where(a == 0, 0, x / np.where(a == 0, 1, a)).astype(x.dtype)
    return np.where(x == 0, x, np.sign(x))  # sign(-0.0) is -0.0, as in XLA


def _not(x):
    return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)


def _integer_pow(x, *, y):
    # Binary exponentiation with one rounding per multiply, as JAX lowers integer_pow (so that
    # large exponents stay exact: no exponent is ever converted to the operand's dtype).
    xc = x.astype(np.float32) if x.dtype in LOW_FLOATS else x
    acc, base, n = None, xc, abs(y)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        while n:
            if n & 1:
                acc = base if acc is None else acc * base
            n >>= 1
            if n:
                base = base * base
        if acc is None:
            acc = np.ones_like(xc)
        if y < 0:
            acc = np.asarray(1, xc.dtype) / acc
    return np.asarray(acc).astype(x.dtype)


def _div(x, y):
    if x.dtype.kind == "u":
        return np.where(y == 0, np.iinfo(x.dtype).max, x // np.where(y == 0, 1, y))
    if x.dtype.kind == "i":
        # Round toward zero; x / 0 is -1 and INT_MIN / -1 wraps to INT_MIN, as in XLA.
        # (Dividing |x| is wrong for INT_MIN, whose absolute value does not exist.)
        plain = (y != 0) & (y != -1)
        safe = np.where(plain, y, 1)
        q = (x - np.fmod(x, safe)) // safe  # exact division of a multiple of safe
        return np.where(plain, q, np.where(y == 0, -1, np.negative(x)))
    return np.true_divide(x, y)


def _rem(x, y):
    if x.dtype.kind in "iu":
        safe = np.where(y == 0, 1, y)
        return np.where(y == 0, x, np.fmod(x, safe))
    return np.fmod(x, y)


def _pow(x, y):
    if x.dtype.kind in "iu":
        neg = y < 0
        out = np.power(x, np.where(neg, 0, y))
        # x ** negative integer: 1 for x == 1, +-1 for x == -1, else 0 (integer division).
        neg_val = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0))
        return np.where(neg, neg_val, out).astype(x.dtype)
    if y.dtype != x.dtype:
        y = y.astype(x.dtype)
    # NumPy computes x ** 0.5 and x ** 2 by sqrt and square where the exponent repeats (stride
    # 0); XLA's CPU calls libm's pow/powf for every element, which rounds some of them the other
    # way: the exponent is given one element per result
    shape = np.broadcast_shapes(x.shape, y.shape)
    y = np.array(np.broadcast_to(y, shape), ndmin=1)
    if x.dtype in LOW_FLOATS:
        out = _pow(x.astype(np.float32), y.astype(np.float32)).astype(x.dtype)
    elif x.dtype in (np.float32, np.float64) and "pow" in host_math:
        # (libm itself: NumPy's own SIMD power on AVX-512 machines rounds some values otherwise)
        out = host_math["pow"](np.broadcast_to(x, shape), y)
    else:
        out = np.power(x, y)
    return out.reshape(shape)


def _signed_zero_fix(fn, neg):
    """np.maximum/np.minimum return either zero for (0.0, -0.0); XLA orders -0.0 below +0.0."""

    def impl(x, y):
        if x.dtype.kind == "c":
            return _complex_pick(x, y, not neg)
        out = fn(x, y)
        if out.dtype.kind == "f" or out.dtype == dtypes.bfloat16:
            both = (x == 0) & (y == 0)
            if np.any(both):
                z = -((-x) + (-y)) if neg else x + y
                out = np.where(both, z, out)
        return out

    return impl


# --- derivatives (functions of ops, the operands and the result) ---------------------------------
def _real(x):
    return np.real(x).copy()


def _imag(x):
    return np.imag(x).copy()


def _conj(x):
    return np.conj(x).astype(dtypes.COMPLEX_OF.get(x.dtype, x.dtype))


def _complex(x, y):
    return (x + 1j * y).astype(dtypes.COMPLEX_OF[x.dtype])


def _abs_deriv(ops, x, ans):
    # d|x|/dx is 1 at 0 (and -0.0), as in JAX.
    return ops.select(ops.ge(x, 0), ops.full_like(x, 1), ops.full_like(x, -1))


def _integer_pow_deriv(ops, x, ans, *, y):
    if y == 0:
        return ops.full_like(x, 0)
    if y == 1:
        return ops.full_like(x, 1)
    return ops.mul(y, x if y == 2 else ops.integer_pow(x, y - 1))


def _pow_dx(ops, x, y, ans):
    if ops.dtype_of(y) != ops.dtype_of(x):
        y = ops.convert_element_type(y, ops.dtype_of(x))
    # y * x**(y-1), with 0 where y == 0 (so d/dx 0**0 is 0, like JAX).
    jac = ops.mul(y, ops.pow(x, ops.sub(y, 1)))
    return ops.select(ops.eq(y, 0), ops.full_like(jac, 0), jac)


def _pow_dy(ops, x, y, ans):
    safe_x = ops.select(ops.eq(x, 0), ops.full_like(x, 1), x)
    return ops.mul(ops.log(safe_x), ans)


def _balanced_eq(ops, x, z, y):
    """1 where x alone attains z, 0.5 where x and y tie, 0 elsewhere (JAX's tie split)."""
    one = ops.full_like(z, 1)
    half = ops.full_like(z, 0.5)
    zero = ops.full_like(z, 0)
    return ops.select(ops.eq(x, z), ops.select(ops.eq(y, z), half, one), zero)


def _bshape(ops, x, shape):
    return x if ops.shape_of(x) == tuple(shape) else ops.broadcast_in_dim(x, shape, ())


def _minmax_dx(ops, x, y, ans):
    shape = ops.shape_of(ans)
    xb, yb = _bshape(ops, x, shape), _bshape(ops, y, shape)
    return _balanced_eq(ops, xb, ans, yb)


def _minmax_dy(ops, x, y, ans):
    shape = ops.shape_of(ans)
    xb, yb = _bshape(ops, x, shape), _bshape(ops, y, shape)
    return _balanced_eq(ops, yb, ans, xb)


def _atan2_denominator(ops, x, y):
    return ops.add(ops.mul(x, x), ops.mul(y, y))


def _rem_dy(ops, x, y, ans):
    return ops.neg(ops.mul(ops.sign(ops.div(x, y)), ops.floor(ops.abs(ops.div(x, y)))))


# --- C++ and Triton special cases (ctx: the renderer's view of one op; see the renderers) --------
def _cpp_not(c):
    return f"(!{c.a[0]})" if c.in_dt == dtypes.bool_ else f"(({c.ct})~{c.a[0]})"


def _cpp_mul(c):
    # complex operands: the schoolbook product, as NumPy and XLA compute it (C's complex `*`
    # rescues a NaN result with a call to __mulsc3, which also keeps gcc from vectorizing)
    return f"fx::cmul({c.a[0]}, {c.a[1]})" if c.dt in dtypes.COMPLEX else f"({c.a[0]} * {c.a[1]})"


def _cpp_div(c):
    return f"({c.a[0]} / {c.a[1]})" if c.fl else f"fx_idiv<{c.ct}>({c.a[0]}, {c.a[1]})"


def _cpp_rem(c):
    return f"fx::fmod({c.a[0]}, {c.a[1]})" if c.fl else f"fx_irem<{c.ct}>({c.a[0]}, {c.a[1]})"


def _cpp_pow(c):
    if c.fl:
        return f"fx::pow({c.a[0]}, ({c.ct}){c.a[1]})"
    return f"fx_ipow_int<{c.ct}>({c.a[0]}, {c.a[1]})"


def _cpp_nextafter(c):
    if c.dt in LOW_FLOATS:
        c.unsupported("nextafter of float16/bfloat16 is not supported")
    return f"fx::nextafter({c.a[0]}, {c.a[1]})"


def _cpp_abs(c):
    return f"fx::fabs({c.a[0]})" if c.fl else f"(({c.ct})({c.a[0]} < 0 ? -{c.a[0]} : {c.a[0]}))"


def _cpp_round(c):
    return (
        f"fx::nearbyint({c.a[0]})"
        if c.params.get("rounding_method", 1) == 1
        else f"fx::round({c.a[0]})"
    )


def _cpp_integer_pow(c):
    return c.ipow(c.a[0], c.params["y"], c.ct)


def _tl_bool_arith(op, bool_op):
    def render(c):
        if c.dt == dtypes.bool_:
            return f"({c.a[0]} {bool_op} {c.a[1]})"
        return f"({c.a[0]} {op} {c.a[1]})"

    return render


def _tl_not(c):
    return f"({c.t[0]} == 0)" if c.in_dt == dtypes.bool_ else f"(~{c.t[0]})"


def _tl_div(c):
    if c.fl:
        if c.ct == "tl.float32":  # IEEE rounding, as XLA divides (Triton's `/` is div.full.f32)
            return f"tl.div_rn({c.t[0]}, {c.t[1]})"
        return f"({c.a[0]} / {c.a[1]})"
    x, y = c.t
    if c.signed:
        return (
            f"tl.where({y} == 0, -1, tl.where({y} == -1, -{x}, {x} // "
            f"tl.where(({y} == 0) | ({y} == -1), 1, {y})))"
        )
    return f"tl.where({y} == 0, {c.highest(c.in_dt)}, {x} // tl.where({y} == 0, 1, {y}))"


def _tl_rem(c):
    if c.fl:
        return f"libdevice.fmod({c.t[0]}, {c.t[1]})"
    x, y = c.t
    if c.signed:
        return (
            f"tl.where({y} == 0, {x}, tl.where({y} == -1, 0, {x} % "
            f"tl.where(({y} == 0) | ({y} == -1), 1, {y})))"
        )
    return f"tl.where({y} == 0, {x}, {x} % tl.where({y} == 0, 1, {y}))"


def _tl_pow(c):
    if c.fl:
        return f"libdevice.pow({c.t[0]}, {c.t[1]})"
    return f"_fx_ipow_{'s' if c.signed else 'u'}({c.t[0]}, {c.t[1]})"


def _tl_minmax(name):
    def render(c):
        if c.fl:
            return f"_fx_f{name}({c.t[0]}, {c.t[1]})"
        if c.dt == dtypes.bool_:
            return f"({c.a[0]} {'|' if name == 'max' else '&'} {c.a[1]})"
        return f"tl.{'maximum' if name == 'max' else 'minimum'}({c.t[0]}, {c.t[1]})"

    return render


def _tl_nextafter(c):
    if c.dt in LOW_FLOATS:
        c.unsupported("nextafter of float16/bfloat16")
    return f"libdevice.nextafter({c.t[0]}, {c.t[1]})"


def _tl_sign(c):
    x = c.t[0]
    if c.fl:
        return f"tl.where({x} != {x}, {x}, tl.where({x} > 0, 1.0, tl.where({x} < 0, -1.0, {x})))"
    if c.signed:
        return f"(({x} > 0).to({c.ct}) - ({x} < 0).to({c.ct}))"
    return f"({x} > 0).to({c.ct})"


def _tl_round(c):
    fn = "nearbyint" if c.params.get("rounding_method", 1) == 1 else "round"
    return f"libdevice.{fn}({c.t[0]})"


def _tl_sqrt(c):
    # IEEE-rounded (tl.sqrt is approximate in float32; float64's is exact)
    return f"tl.sqrt_rn({c.t[0]})" if c.ct == "tl.float32" else f"tl.sqrt({c.t[0]})"


def _tl_rsqrt(c):
    return f"(1.0 / {_tl_sqrt(c)})"


def _tl_logistic(c):
    x = c.t[0]
    ex = c.temp(f"libdevice.exp(-tl.abs({x}))")
    return f"tl.where({x} >= 0, 1.0 / (1.0 + {ex}), {ex} / (1.0 + {ex}))"


def _tl_integer_pow(c):
    return c.ipow(c.t[0], c.params["y"], c.dt)


# --- the special functions' derivatives and spellings --------------------------------------------
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2


def _sp(fn, first="", last=""):
    """The C++ spelling of a special function: ``fx_sp::<fn>`` of the operands in double."""
    return lambda c: (
        f"(({c.ct})fx_sp::{fn}({first}" + ", ".join(f"(double)({a})" for a in c.a) + f"{last}))"
    )


def _tl_sp(fn, last=""):
    """The Triton spelling of a special function: ``_fx_<fn>`` of the prelude (Triton's
    ``prelude.py``) on the operands in float64, the result in the compute type."""
    return lambda c: (
        f"_fx_{fn}(" + ", ".join(f"{t}.to(tl.float64)" for t in c.t) + f"{last}).to({c.ct})"
    )


def _bessel_i1e_deriv(ops, x, ans):
    # i0e(x) - i1e(x) (sign(x) + 1/x), and 1/2 near 0 (JAX's rule)
    eps = float(np.finfo(ops.dtype_of(x)).eps)
    not_tiny = ops.gt(ops.abs(x), eps)
    safe = ops.select(not_tiny, x, ops.full_like(x, eps))
    d = ops.sub(ops.bessel_i0e(safe), ops.mul(ans, ops.add(ops.sign(safe), ops.div(1, safe))))
    return ops.select(not_tiny, d, ops.full_like(x, 0.5))


def _gamma_density(ops, a, x):
    """d igamma(a, x) / dx = exp(-x + (a - 1) log x - lgamma(a))."""
    return ops.exp(ops.sub(ops.add(ops.neg(x), ops.mul(ops.sub(a, 1), ops.log(x))), ops.lgamma(a)))


def _reduce_precision_eval(
    x, *, exponent_bits=8, mantissa_bits=23
):  # (defaults: for the coverage tests)
    if x.dtype not in dtypes.FLOATS:
        err(f"reduce_precision needs a floating-point operand, got {x.str_short()}")
    if exponent_bits < 1:
        raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(
            f"reduce_precision: mantissa_bits must be non-negative; got {mantissa_bits}"
        )
    return x


def _cpp_reduce_precision(c):
    if c.in_dt in LOW_FLOATS:
        c.unsupported("reduce_precision of float16/bfloat16 is not supported by the C++ backend")
    e, m = c.params.get("exponent_bits", 8), c.params.get("mantissa_bits", 23)
    return f"fx_sp::reduce_precision({c.a[0]}, {min(e, 11)}, {min(m, 52)})"


def _polygamma_dm(ops, m, x, ans):
    raise ValueError("polygamma gradient with respect to m is not supported")


# --- the table -----------------------------------------------------------------------------------
# The rows that accept complex operands as well (JAX's ``_num`` and ``_float | _complex`` ops);
# comparisons other than eq/ne, rem, atan2, rounding and the special functions do not.
_COMPLEX_OK = frozenset(
    "neg abs sign exp exp2 log log1p expm1 sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh "
    "asinh acosh atanh logistic integer_pow add sub mul div pow eq ne real imag conj "
    "complex".split()
)


def _u(name, kinds, numpy, jvp, cpp, triton, **kw):
    kw.setdefault("complex", name in _COMPLEX_OK)
    return Elementwise(name, "unary", kinds, numpy, jvp, cpp, triton, **kw)


def _b(name, kinds, numpy, jvp, cpp, triton, **kw):
    kw.setdefault("complex", name in _COMPLEX_OK)
    return Elementwise(name, "binary", kinds, numpy, jvp, cpp, triton, **kw)


def _is_finite_eval(x):
    if x.dtype not in dtypes.FLOATS:
        err(f"is_finite needs a floating-point operand, got {x.str_short()}")
    return ShapedArray(x.shape, dtypes.bool_)


def _integer_pow_eval(x, *, y):
    if x.dtype == dtypes.bool_:
        err(f"integer_pow does not accept a bool operand, got {x.str_short()}")
    if y < 0 and not dtypes.is_inexact(x.dtype):
        err(f"integer_pow with a negative exponent {y} needs a float operand, got {x.str_short()}")
    return x


def _complex_part_eval(name):
    def abstract_eval(x):
        if x.dtype not in dtypes.COMPLEX:
            err(f"{name} needs a complex operand, got {x.str_short()}")
        return ShapedArray(x.shape, dtypes.REAL_OF[x.dtype], x.weak_type)

    return abstract_eval


def _abs_eval(x):
    if x.dtype == dtypes.bool_:
        err(f"abs does not accept a bool operand, got {x.str_short()}")
    if x.dtype in dtypes.NARROW_INTS:  # (as in JAX: XLA's CPU has no narrow integer abs)
        err(f"abs does not accept dtype {x.dtype} (the narrow integers), got {x.str_short()}")
    return ShapedArray(x.shape, dtypes.REAL_OF.get(x.dtype, x.dtype), x.weak_type)


def _conj_eval(x):
    if x.dtype not in dtypes.COMPLEX_OF and x.dtype not in dtypes.COMPLEX:
        err(f"conj needs a floating-point or complex operand, got {x.str_short()}")
    return ShapedArray(x.shape, dtypes.COMPLEX_OF.get(x.dtype, x.dtype), x.weak_type)


def _complex_eval(x, y):
    if x.dtype != y.dtype or x.dtype not in (dtypes.float32, dtypes.float64):
        err(f"complex needs two float32 or two float64 operands of one dtype, got {fmt((x, y))}")
    shape = x.shape if x.shape == y.shape else broadcast_shapes("complex", (x, y))
    return ShapedArray(shape, dtypes.COMPLEX_OF[x.dtype], x.weak_type and y.weak_type)


_TWO_OVER_SQRT_PI = float(2 / np.sqrt(np.pi))
_LOG_2 = float(np.log(2))

ROWS: tuple[Elementwise, ...] = (
    # --- unary ---
    _u(
        "neg", "number", np.negative, Linear((-1,)), "(({ct})(-{0}))", "(-{t0})", exact_in_half=True
    ),
    _u(
        "abs",
        "number",
        np.abs,
        _abs_deriv,  # complex operands: functx.transforms.jvp's rule of its own
        _cpp_abs,
        "tl.abs({t0})",
        exact_in_half=True,
        abstract_eval=_abs_eval,
    ),
    _u("sign", "number", _sign, NONDIFF, "fx_sign<{ct}>({0})", _tl_sign, exact_in_half=True),
    _u("floor", "float", np.floor, NONDIFF, "fx::floor", "tl.floor({t0})", exact_in_half=True),
    _u("ceil", "float", np.ceil, NONDIFF, "fx::ceil", "tl.ceil({t0})", exact_in_half=True),
    _u(
        "round",
        "float",
        _round,
        NONDIFF,
        _cpp_round,
        _tl_round,
        exact_in_half=True,
        builder="custom",
    ),
    _u(
        "exp",
        "float",
        _libm("exp", np.exp, f64_only=True),
        lambda ops, x, ans: ans,
        "fx_exp<{ct}>({0})",
        "libdevice.exp",
        costly=True,
    ),
    _u(
        "exp2",
        "float",
        _libm("exp2", np.exp2),
        lambda ops, x, ans: ops.mul(ans, _LOG_2),
        "fx::exp2",
        "libdevice.exp2",
        costly=True,
    ),
    _u(
        "log",
        "float",
        _libm("log", np.log, f64_only=True),
        lambda ops, x, ans: ops.integer_pow(x, -1),
        "fx_log<{ct}>({0})",
        "libdevice.log",
        costly=True,
    ),
    _u(
        "log1p",
        "float",
        _libm("log1p", np.log1p),
        lambda ops, x, ans: ops.integer_pow(ops.add(x, 1), -1),
        "fx::log1p",
        "libdevice.log1p",
        costly=True,
    ),
    _u(
        "expm1",
        "float",
        _libm("expm1", np.expm1),
        lambda ops, x, ans: ops.add(ans, 1),
        "fx::expm1",
        "libdevice.expm1",
        costly=True,
    ),
    _u("sqrt", "float", np.sqrt, lambda ops, x, ans: ops.div(0.5, ans), "fx::sqrt", _tl_sqrt),
    _u(
        "rsqrt",
        "float",
        _rsqrt,
        lambda ops, x, ans: ops.mul(ops.div(ans, x), -0.5),
        "fx::rsqrt",  # (the prelude's: XLA's sequence, functx.lowering.cpp.hostmath)
        _tl_rsqrt,
    ),
    _u(
        "cbrt",
        "float",
        _libm("cbrt", np.cbrt),
        lambda ops, x, ans: ops.mul(ops.integer_pow(ans, -2), 1 / 3),
        "fx::cbrt",
        "libdevice.cbrt",
    ),
    _u(
        "sin",
        "float",
        _libm("sin", np.sin, f64_only=True),
        lambda ops, x, ans: ops.cos(x),
        "fx::sin",
        "libdevice.sin",
        costly=True,
    ),
    _u(
        "cos",
        "float",
        _libm("cos", np.cos, f64_only=True),
        lambda ops, x, ans: ops.neg(ops.sin(x)),
        "fx::cos",
        "libdevice.cos",
        costly=True,
    ),
    _u(
        "tan",
        "float",
        _libm("tan", np.tan),
        lambda ops, x, ans: ops.add(1, ops.mul(ans, ans)),
        "fx::tan",
        "libdevice.tan",
        costly=True,
    ),
    _u(
        "asin",
        "float",
        _libm("asin", np.arcsin),
        lambda ops, x, ans: ops.rsqrt(ops.sub(1, ops.mul(x, x))),
        "fx::asin",
        "libdevice.asin",
        costly=True,
    ),
    _u(
        "acos",
        "float",
        _libm("acos", np.arccos),
        lambda ops, x, ans: ops.neg(ops.rsqrt(ops.sub(1, ops.mul(x, x)))),
        "fx::acos",
        "libdevice.acos",
        costly=True,
    ),
    _u(
        "atan",
        "float",
        _libm("atan", np.arctan),
        lambda ops, x, ans: ops.integer_pow(ops.add(1, ops.mul(x, x)), -1),
        "fx::atan",
        "libdevice.atan",
        costly=True,
    ),
    _u(
        "sinh",
        "float",
        _libm("sinh", np.sinh),
        lambda ops, x, ans: ops.cosh(x),
        "fx::sinh",
        "libdevice.sinh",
        costly=True,
    ),
    _u(
        "cosh",
        "float",
        _libm("cosh", np.cosh),
        lambda ops, x, ans: ops.sinh(x),
        "fx::cosh",
        "libdevice.cosh",
        costly=True,
    ),
    _u(
        "tanh",
        "float",
        np.tanh,
        lambda ops, x, ans: ops.sub(1, ops.mul(ans, ans)),
        "fx_tanh<{ct}>({0})",
        "libdevice.tanh",
        costly=True,
    ),
    _u(
        "asinh",
        "float",
        _libm("asinh", np.arcsinh),
        lambda ops, x, ans: ops.rsqrt(ops.add(ops.mul(x, x), 1)),
        "fx::asinh",
        "libdevice.asinh",
        costly=True,
    ),
    _u(
        "acosh",
        "float",
        _libm("acosh", np.arccosh),
        lambda ops, x, ans: ops.rsqrt(ops.mul(ops.sub(x, 1), ops.add(x, 1))),
        "fx::acosh",
        "libdevice.acosh",
        costly=True,
    ),
    _u(
        "atanh",
        "float",
        _libm("atanh", np.arctanh),
        lambda ops, x, ans: ops.integer_pow(ops.sub(1, ops.mul(x, x)), -1),
        "fx::atanh",
        "libdevice.atanh",
        costly=True,
    ),
    _u(
        "logistic",
        "float",
        _logistic,
        lambda ops, x, ans: ops.mul(ans, ops.sub(1, ans)),
        "fx_logistic<{ct}>({0})",
        _tl_logistic,
        costly=True,
    ),
    _u(
        "erf",
        "float",
        _vectorize_scalar(math.erf),
        lambda ops, x, ans: ops.mul(_TWO_OVER_SQRT_PI, ops.exp(ops.neg(ops.mul(x, x)))),
        "fx::erf",
        "libdevice.erf",
        costly=True,
    ),
    _u(
        "erfc",
        "float",
        _vectorize_scalar(math.erfc),
        lambda ops, x, ans: ops.mul(-_TWO_OVER_SQRT_PI, ops.exp(ops.neg(ops.mul(x, x)))),
        "fx::erfc",
        "libdevice.erfc",
        costly=True,
    ),
    _u(
        "lgamma",
        "float",
        _vectorize_scalar(math.lgamma),
        lambda ops, x, ans: ops.digamma(x),
        "fx::lgamma",
        "libdevice.lgamma",
        costly=True,
    ),
    # --- special functions (functx.primitives.special; C++: the prelude's fx_sp namespace) ---
    _u(
        "erf_inv",
        "float",
        S.vectorize(S.erf_inv),
        lambda ops, x, ans: ops.mul(_SQRT_PI_OVER_2, ops.exp(ops.mul(ans, ans))),
        _sp("erf_inv"),
        "libdevice.erfinv",
        costly=True,
    ),
    _u(
        "digamma",
        "float",
        S.vectorize(S.digamma),
        lambda ops, x, ans: ops.polygamma(ops.full_like(x, 1), x),
        _sp("digamma"),
        _tl_sp("digamma"),
        costly=True,
    ),
    _u(
        "bessel_i0e",
        "float",
        S.vectorize(S.bessel_i0e),
        lambda ops, x, ans: ops.sub(ops.bessel_i1e(x), ops.mul(ops.sign(x), ans)),
        _sp("bessel_ie", "0, "),
        _tl_sp("bessel_ie", last=", 0"),
        costly=True,
    ),
    _u(
        "bessel_i1e",
        "float",
        S.vectorize(S.bessel_i1e),
        _bessel_i1e_deriv,
        _sp("bessel_ie", "1, "),
        _tl_sp("bessel_ie", last=", 1"),
        costly=True,
    ),
    _b(
        "igamma",
        "float",
        S.vectorize(S.igamma),
        (
            lambda ops, a, x, ans: ops.igamma_grad_a(a, x),
            lambda ops, a, x, ans: _gamma_density(ops, a, x),
        ),
        _sp("igamma", last=", 0"),
        _tl_sp("igamma", last=", 0"),
        costly=True,
    ),
    _b(
        "igammac",
        "float",
        S.vectorize(S.igammac),
        (
            lambda ops, a, x, ans: ops.neg(ops.igamma_grad_a(a, x)),
            lambda ops, a, x, ans: ops.neg(_gamma_density(ops, a, x)),
        ),
        _sp("igamma", last=", 1"),
        _tl_sp("igamma", last=", 1"),
        costly=True,
    ),
    _b(
        "igamma_grad_a",
        "float",
        S.vectorize(S.igamma_grad_a),
        Unsupported("JAX has no derivative of igamma_grad_a either"),
        _sp("igamma", last=", 2"),
        _tl_sp("igamma", last=", 2"),
        costly=True,
    ),
    _b(
        "random_gamma_grad",
        "float",
        S.vectorize(S.random_gamma_grad),
        Unsupported("the derivative of random_gamma_grad is not implemented"),
        _sp("igamma", last=", 3"),
        _tl_sp("igamma", last=", 3"),
        costly=True,
    ),
    _b(
        "polygamma",
        "float",
        S.vectorize(S.polygamma),
        (_polygamma_dm, lambda ops, m, x, ans: ops.polygamma(ops.add(m, 1), x)),
        _sp("polygamma"),
        _tl_sp("polygamma"),
        costly=True,
    ),
    _b(
        "zeta",
        "float",
        S.vectorize(S.zeta),
        Unsupported("JAX has no derivative of zeta either"),
        _sp("zeta"),
        _tl_sp("zeta"),
        costly=True,
    ),
    _u(
        "reduce_precision",
        "float",
        S.reduce_precision,
        APPLY,
        _cpp_reduce_precision,
        Unsupported("reduce_precision has no Triton implementation yet (use the C++ backend)"),
        builder="custom",
        abstract_eval=_reduce_precision_eval,
    ),
    _u("not", "intbool", _not, NONDIFF, _cpp_not, _tl_not, lax_name="bitwise_not"),
    # --- complex parts ---
    _u(
        "real",
        "any",
        _real,
        APPLY,
        "fx::real({0})",
        Unsupported(
            "never rendered: complex_lanes.py rewrites complex values into real lanes first"
        ),
        exact_in_half=True,
        builder="custom",
        abstract_eval=_complex_part_eval("real"),
    ),
    _u(
        "imag",
        "any",
        _imag,
        APPLY,
        "fx::imag({0})",
        Unsupported(
            "never rendered: complex_lanes.py rewrites complex values into real lanes first"
        ),
        exact_in_half=True,
        builder="custom",
        abstract_eval=_complex_part_eval("imag"),
    ),
    _u(
        "conj",
        "any",
        _conj,
        APPLY,
        "fx::conj({0})",
        Unsupported(
            "never rendered: complex_lanes.py rewrites complex values into real lanes first"
        ),
        exact_in_half=True,
        builder="custom",
        abstract_eval=_conj_eval,
    ),
    _u(
        "is_finite",
        "float",
        np.isfinite,
        NONDIFF,
        "(({0} - {0}) == 0)",
        "(({t0} == {t0}) & (tl.abs({t0}) != float('inf')))",
        abstract_eval=_is_finite_eval,
    ),
    _u(
        "integer_pow",
        "number",
        _integer_pow,
        _integer_pow_deriv,
        _cpp_integer_pow,
        _tl_integer_pow,
        builder="custom",
        abstract_eval=_integer_pow_eval,
    ),
    # --- binary ---
    _b("add", "number", np.add, Linear((1, 1)), "({0} + {1})", _tl_bool_arith("+", "|")),
    _b("sub", "number", np.subtract, Linear((1, -1)), "({0} - {1})", _tl_bool_arith("-", "^")),
    _b(
        "mul",
        "number",
        np.multiply,
        (lambda ops, x, y, ans: y, lambda ops, x, y, ans: x),
        _cpp_mul,
        _tl_bool_arith("*", "&"),
    ),
    _b(
        "div",
        "number",
        _div,
        (
            lambda ops, x, y, ans: ops.integer_pow(y, -1),
            lambda ops, x, y, ans: ops.neg(ops.div(ans, y)),
        ),
        _cpp_div,
        _tl_div,
    ),
    _b(
        "rem",
        "number",
        _rem,
        (lambda ops, x, y, ans: ops.full_like(ans, 1), _rem_dy),
        _cpp_rem,
        _tl_rem,
    ),
    _b("pow", "number", _pow, (_pow_dx, _pow_dy), _cpp_pow, _tl_pow, costly=True),
    _b(
        "max",
        "any",
        _signed_zero_fix(np.maximum, False),
        (_minmax_dx, _minmax_dy),
        "fx_max<{ct}>({0}, {1})",
        _tl_minmax("max"),
        exact_in_half=True,
        complex=True,  # lexicographic, as JAX (``_complex_pick``)
    ),
    _b(
        "min",
        "any",
        _signed_zero_fix(np.minimum, True),
        (_minmax_dx, _minmax_dy),
        "fx_min<{ct}>({0}, {1})",
        _tl_minmax("min"),
        exact_in_half=True,
        complex=True,
    ),
    _b(
        "atan2",
        "float",
        _libm("atan2", np.arctan2),
        (
            lambda ops, x, y, ans: ops.div(y, _atan2_denominator(ops, x, y)),
            lambda ops, x, y, ans: ops.neg(ops.div(x, _atan2_denominator(ops, x, y))),
        ),
        "fx::atan2",
        "libdevice.atan2",
        costly=True,
    ),
    _b("nextafter", "float", np.nextafter, NONDIFF, _cpp_nextafter, _tl_nextafter),
    _b(
        "complex",
        "float",
        _complex,
        APPLY,
        "fx::complex({0}, {1})",
        Unsupported(
            "never rendered: complex_lanes.py rewrites complex values into real lanes first"
        ),
        exact_in_half=True,
        builder="custom",
        abstract_eval=_complex_eval,
    ),
    # --- compare (bool results) ---
    *(
        Elementwise(
            name,
            "compare",
            "any",
            fn,
            NONDIFF,
            f"({{0}} {op} {{1}})",
            f"({{0}} {op} {{1}})",
            complex=name in _COMPLEX_OK,
        )
        for name, fn, op in (
            ("eq", np.equal, "=="),
            ("ne", np.not_equal, "!="),
            ("lt", np.less, "<"),
            ("le", np.less_equal, "<="),
            ("gt", np.greater, ">"),
            ("ge", np.greater_equal, ">="),
        )
    ),
    # --- bitwise (integer and bool operands) ---
    *(
        Elementwise(
            name,
            "bitwise",
            "intbool",
            fn,
            NONDIFF,
            f"(({{ct}})({{0}} {op} {{1}}))",
            f"({{0}} {op} {{1}})",
            lax_name=f"bitwise_{name}",
        )
        for name, fn, op in (
            ("and", np.bitwise_and, "&"),
            ("or", np.bitwise_or, "|"),
            ("xor", np.bitwise_xor, "^"),
        )
    ),
)

#: Each row by primitive name.
ROW: dict[str, Elementwise] = {r.name: r for r in ROWS}


# --- abstract evaluation -------------------------------------------------------------------------
def _unary_eval(name, kinds):
    def abstract_eval(x, **params):
        if x.dtype in dtypes.COMPLEX:
            if not ROW[name].complex:
                err(f"{name} does not accept a complex operand, got {x.str_short()}")
            return x
        if kinds == "float" and x.dtype not in dtypes.FLOATS:
            err(
                f"{name} needs a floating-point operand, got {x.str_short()}; "
                "convert it with .astype(jnp.float32) first"
            )
        if kinds == "number" and x.dtype == dtypes.bool_:
            err(f"{name} does not accept a bool operand, got {x.str_short()}")
        if kinds == "intbool" and dtypes.is_inexact(x.dtype):
            err(f"{name} needs an integer or bool operand, got {x.str_short()}")
        return x

    return abstract_eval


def broadcast_shapes(name, avals):
    """Operands of elementwise ops share one shape; a rank-0 operand broadcasts (``mul b 2.0``)."""
    shape = None
    for a in avals:
        if a.shape == ():
            continue
        if shape is None:
            shape = a.shape
        elif a.shape != shape:
            err(
                f"{name} got incompatible shapes {fmt(avals)}; functx.lax ops need equal shapes "
                "(functx.numpy functions broadcast for you)"
            )
    return () if shape is None else shape


def _binary_eval(name, kinds, out_dtype=None):
    def abstract_eval(x, y):
        if x.dtype != y.dtype:
            if name == "pow" and y.dtype in dtypes.INTEGERS and dtypes.is_inexact(x.dtype):
                pass  # float ** int, as lax.pow allows
            else:
                same_dtypes(name, (x, y))
        if x.dtype in dtypes.COMPLEX and not ROW[name].complex:
            err(f"{name} does not accept complex operands, got {fmt((x, y))}")
        if x is y:
            shape = x.shape
        elif x.shape == y.shape:
            shape = x.shape
        else:
            shape = broadcast_shapes(name, (x, y))
        if kinds == "float" and not dtypes.is_inexact(x.dtype):
            err(f"{name} needs floating-point operands, got {fmt((x, y))}")
        if kinds == "number" and x.dtype == dtypes.bool_:
            err(f"{name} does not accept bool operands, got {fmt((x, y))}")
        if kinds == "intbool" and dtypes.is_inexact(x.dtype):
            err(f"{name} needs integer or bool operands, got {fmt((x, y))}")
        if out_dtype is not None:
            return ShapedArray(shape, out_dtype)
        return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)

    return abstract_eval


def _register(row: Elementwise):
    p = prim(row.name, row.group)
    if row.abstract_eval is not None:  # a rule of its own; the implementation runs as it is
        p.abstract_eval, p.impl = row.abstract_eval, row.numpy
    elif row.group == "unary":
        p.abstract_eval = _unary_eval(row.name, row.kinds)
        p.impl = upcast(row.numpy) if row.kinds == "float" else row.numpy
    elif row.group == "bitwise":
        p.abstract_eval, p.impl = _binary_eval(row.name, row.kinds), row.numpy
    else:
        out = dtypes.bool_ if row.group == "compare" else None
        p.abstract_eval = _binary_eval(row.name, row.kinds, out)
        p.impl = quiet(row.numpy)
    return p


#: Each row's primitive by name.
PRIMS = {row.name: _register(row) for row in ROWS}
globals().update({f"{name}_p": p for name, p in PRIMS.items()})

# --- elementwise primitives outside the table: select_n and convert_element_type ------------
select_n_p = prim("select_n", "select")


def _select_n_eval(which, *cases):
    if not cases:
        err("select_n needs at least one case")
    if which.dtype != dtypes.bool_ and which.dtype not in dtypes.INTEGERS:
        err(f"select_n needs a bool or integer predicate, got {which.str_short()}")
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        err(f"select_n with a bool predicate takes at most 2 cases, got {len(cases)}")
    for c in cases[1:]:
        if c.shape != cases[0].shape or c.dtype != cases[0].dtype:
            err(f"select_n cases must have the same shape and dtype, got {fmt(cases)}")
    if which.shape not in ((), cases[0].shape):
        err(
            f"select_n predicate shape {which.str_short()} must be scalar or match the cases "
            f"{cases[0].str_short()}"
        )
    return ShapedArray(cases[0].shape, cases[0].dtype, all(c.weak_type for c in cases))


def _select_n_impl(which, *cases):
    if len(cases) == 1:
        return cases[0]
    if which.dtype == np.bool_:
        return np.where(which, cases[1], cases[0])
    return np.choose(np.clip(which, 0, len(cases) - 1), cases)


select_n_p.abstract_eval = _select_n_eval
select_n_p.impl = _select_n_impl

convert_element_type_p = prim("convert_element_type", "convert")


def _convert_eval(x, *, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_impl(x, *, new_dtype, weak_type=False):
    if new_dtype == np.bool_:
        return x != 0
    if x.dtype.kind == "c" and new_dtype.kind != "c":
        x = np.real(x)  # the real part, as XLA converts
    if x.dtype.kind == "f" or x.dtype == dtypes.bfloat16:
        if new_dtype.kind in "iu" or new_dtype in dtypes.NARROW_INTS:
            # Saturate out-of-range values and send NaN to 0, as XLA does.
            info = dtypes.iinfo(new_dtype)
            xf = x.astype(np.float64)
            xf = np.where(np.isnan(xf), 0, np.clip(xf, info.min, info.max))
            out = np.empty(x.shape, new_dtype)
            big = xf >= float(info.max)
            out[...] = np.where(big, 0, np.trunc(xf)).astype(new_dtype)
            out[big] = info.max
            return out
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(new_dtype)


convert_element_type_p.abstract_eval = _convert_eval
convert_element_type_p.impl = _convert_impl


__all__ = [f"{name}_p" for name in PRIMS] + ["select_n_p", "convert_element_type_p"]
