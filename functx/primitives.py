"""The closed primitive set: shape/dtype inference and the NumPy implementation of each.

Primitives are grouped by class (``Primitive.group``): unary, binary, compare, bitwise, select,
convert, reduce, cumulative, shape, index, contract, special. Transforms and backends give rules per
group where the mathematics allows, and a coverage test checks that every primitive has each rule.
Everything in ``functx.numpy``, ``functx.nn`` and ``functx.lax`` is a composite of these.
"""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes
from functx.core import Primitive, ShapedArray
from functx.errors import FunctxTypeError

registry: dict[str, Primitive] = {}


def _prim(name, group, *, multiple_results=False) -> Primitive:
    p = Primitive(name, multiple_results=multiple_results, group=group)
    registry[name] = p
    return p


def _err(msg):
    raise FunctxTypeError(msg)


def _fmt(avals):
    return ", ".join(a.str_short() for a in avals)


def _check_axes(name, axes, ndim):
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not 0 <= a < ndim:
            _err(f"{name}: axis {a} is out of range for an array of rank {ndim}")
    if len(set(axes)) != len(axes):
        _err(f"{name}: repeated axes {axes}")


_LOW_FLOATS = (dtypes.float16, dtypes.bfloat16)

# Eager kernels return IEEE results (nan, inf) without NumPy's RuntimeWarnings, as XLA does.
# ``np.errstate`` costs about 3 us per call, as much as the whole kernel on small arrays, so the hot
# paths set NumPy's error-state context variable directly (what np.errstate does inside), falling
# back to np.errstate where that private API is missing.
try:
    from numpy._core.umath import _extobj_contextvar, _make_extobj

    _IGNORE_FP = _make_extobj(all="ignore")

    def _quiet(fn):
        set_state, reset_state = _extobj_contextvar.set, _extobj_contextvar.reset

        def impl(*args, **params):
            token = set_state(_IGNORE_FP)
            try:
                return fn(*args, **params)
            finally:
                reset_state(token)

        return impl
except (ImportError, TypeError):  # pragma: no cover - other NumPy versions

    def _quiet(fn):
        def impl(*args, **params):
            with np.errstate(all="ignore"):
                return fn(*args, **params)

        return impl


def _upcast(fn):
    """Compute float16/bfloat16 in float32 and round back, as JAX does on the CPU."""

    def impl(x, **params):
        if x.dtype in _LOW_FLOATS:
            return fn(x.astype(np.float32), **params).astype(x.dtype)
        return fn(x, **params)

    return _quiet(impl)


# --- Elementwise unary ---------------------------------------------------------------------------
def _unary_eval(name, kinds):
    def abstract_eval(x, **params):
        if kinds == "float" and x.dtype not in dtypes.FLOATS:
            _err(
                f"{name} needs a floating-point operand, got {x.str_short()}; "
                "convert it with .astype(jnp.float32) first"
            )
        if kinds == "number" and x.dtype == dtypes.bool_:
            _err(f"{name} does not accept a bool operand, got {x.str_short()}")
        if kinds == "intbool" and x.dtype in dtypes.FLOATS:
            _err(f"{name} needs an integer or bool operand, got {x.str_short()}")
        return x

    return abstract_eval


def _vectorize_scalar(fn):
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


def _logistic(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype)


def _rsqrt(x):
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
    return np.where(x == 0, x, np.sign(x))  # sign(-0.0) is -0.0, as in XLA


# name: (numpy implementation, operand kinds)
_UNARY = {
    "neg": (np.negative, "number"),
    "abs": (np.abs, "number"),
    "sign": (_sign, "number"),
    "floor": (np.floor, "float"),
    "ceil": (np.ceil, "float"),
    "round": (_round, "float"),
    "exp": (np.exp, "float"),
    "exp2": (np.exp2, "float"),
    "log": (np.log, "float"),
    "log1p": (np.log1p, "float"),
    "expm1": (np.expm1, "float"),
    "sqrt": (np.sqrt, "float"),
    "rsqrt": (_rsqrt, "float"),
    "cbrt": (np.cbrt, "float"),
    "sin": (np.sin, "float"),
    "cos": (np.cos, "float"),
    "tan": (np.tan, "float"),
    "asin": (np.arcsin, "float"),
    "acos": (np.arccos, "float"),
    "atan": (np.arctan, "float"),
    "sinh": (np.sinh, "float"),
    "cosh": (np.cosh, "float"),
    "tanh": (np.tanh, "float"),
    "asinh": (np.arcsinh, "float"),
    "acosh": (np.arccosh, "float"),
    "atanh": (np.arctanh, "float"),
    "logistic": (_logistic, "float"),
    # NumPy has no vectorized erf or lgamma and scipy is not a dependency: the eager path maps the
    # standard library's correctly rounded scalar functions (compiled backends use their own).
    "erf": (_vectorize_scalar(math.erf), "float"),
    "lgamma": (_vectorize_scalar(math.lgamma), "float"),
    "not": (lambda x: np.logical_not(x) if x.dtype == np.bool_ else np.invert(x), "intbool"),
}

for _name, (_fn, _kinds) in _UNARY.items():
    _p = _prim(_name, "unary")
    _p.abstract_eval = _unary_eval(_name, _kinds)
    _p.impl = _upcast(_fn) if _kinds == "float" else _fn
    globals()[f"{_name}_p"] = _p

is_finite_p = _prim("is_finite", "unary")


def _is_finite_eval(x):
    if x.dtype not in dtypes.FLOATS:
        _err(f"is_finite needs a floating-point operand, got {x.str_short()}")
    return ShapedArray(x.shape, dtypes.bool_)


is_finite_p.abstract_eval = _is_finite_eval
is_finite_p.impl = np.isfinite

integer_pow_p = _prim("integer_pow", "unary")


def _integer_pow_eval(x, *, y):
    if x.dtype == dtypes.bool_:
        _err(f"integer_pow does not accept a bool operand, got {x.str_short()}")
    if y < 0 and x.dtype not in dtypes.FLOATS:
        _err(f"integer_pow with a negative exponent {y} needs a float operand, got {x.str_short()}")
    return x


def _integer_pow_impl(x, *, y):
    # Binary exponentiation with one rounding per multiply, as JAX lowers integer_pow (so that
    # large exponents stay exact: no exponent is ever converted to the operand's dtype).
    xc = x.astype(np.float32) if x.dtype in _LOW_FLOATS else x
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


integer_pow_p.abstract_eval = _integer_pow_eval
integer_pow_p.impl = _integer_pow_impl


# --- Elementwise binary --------------------------------------------------------------------------
def _broadcast_shapes(name, avals):
    """Operands of elementwise ops share one shape; a rank-0 operand broadcasts (``mul b 2.0``)."""
    shape = None
    for a in avals:
        if a.shape == ():
            continue
        if shape is None:
            shape = a.shape
        elif a.shape != shape:
            _err(
                f"{name} got incompatible shapes {_fmt(avals)}; functx.lax ops need equal shapes "
                "(functx.numpy functions broadcast for you)"
            )
    return () if shape is None else shape


def _same_dtypes(name, avals):
    d = avals[0].dtype
    for a in avals[1:]:
        if a.dtype != d:
            _err(
                f"{name} got different dtypes {_fmt(avals)}; functx.lax ops need equal dtypes "
                "(functx.numpy functions promote for you)"
            )
    return d


def _binary_eval(name, kinds, out_dtype=None):
    def abstract_eval(x, y):
        if x.dtype != y.dtype:
            if name == "pow" and y.dtype in dtypes.INTEGERS and x.dtype in dtypes.FLOATS:
                pass  # float ** int, as lax.pow allows
            else:
                _same_dtypes(name, (x, y))
        if x is y:
            shape = x.shape
        elif x.shape == y.shape:
            shape = x.shape
        else:
            shape = _broadcast_shapes(name, (x, y))
        if kinds == "float" and x.dtype not in dtypes.FLOATS:
            _err(f"{name} needs floating-point operands, got {_fmt((x, y))}")
        if kinds == "number" and x.dtype == dtypes.bool_:
            _err(f"{name} does not accept bool operands, got {_fmt((x, y))}")
        if kinds == "intbool" and x.dtype in dtypes.FLOATS:
            _err(f"{name} needs integer or bool operands, got {_fmt((x, y))}")
        if out_dtype is not None:
            return ShapedArray(shape, out_dtype)
        return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)

    return abstract_eval


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
    if x.dtype in _LOW_FLOATS:
        return np.power(x.astype(np.float32), y.astype(np.float32)).astype(x.dtype)
    return np.power(x, y)


def _signed_zero_fix(fn, neg):
    """np.maximum/np.minimum return either zero for (0.0, -0.0); XLA orders -0.0 below +0.0."""

    def impl(x, y):
        out = fn(x, y)
        if out.dtype.kind == "f" or out.dtype == dtypes.bfloat16:
            both = (x == 0) & (y == 0)
            if np.any(both):
                z = -((-x) + (-y)) if neg else x + y
                out = np.where(both, z, out)
        return out

    return impl


_BINARY = {
    "add": (np.add, "number"),
    "sub": (np.subtract, "number"),
    "mul": (np.multiply, "number"),
    "div": (_div, "number"),
    "rem": (_rem, "number"),
    "pow": (_pow, "number"),
    "max": (_signed_zero_fix(np.maximum, False), "any"),
    "min": (_signed_zero_fix(np.minimum, True), "any"),
    "atan2": (np.arctan2, "float"),
    "nextafter": (np.nextafter, "float"),
}
for _name, (_fn, _kinds) in _BINARY.items():
    _p = _prim(_name, "binary")
    _p.abstract_eval = _binary_eval(_name, _kinds)
    _p.impl = _quiet(_fn)
    globals()[f"{_name}_p"] = _p

_COMPARE = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}
for _name, _fn in _COMPARE.items():
    _p = _prim(_name, "compare")
    _p.abstract_eval = _binary_eval(_name, "any", out_dtype=dtypes.bool_)
    _p.impl = _quiet(_fn)
    globals()[f"{_name}_p"] = _p

_BITWISE = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}
for _name, _fn in _BITWISE.items():
    _p = _prim(_name, "bitwise")
    _p.abstract_eval = _binary_eval(_name, "intbool")
    _p.impl = _fn
    globals()[f"{_name}_p"] = _p


# --- select, convert, iota -----------------------------------------------------------------------
select_n_p = _prim("select_n", "select")


def _select_n_eval(which, *cases):
    if not cases:
        _err("select_n needs at least one case")
    if which.dtype != dtypes.bool_ and which.dtype not in dtypes.INTEGERS:
        _err(f"select_n needs a bool or integer predicate, got {which.str_short()}")
    if which.dtype == dtypes.bool_ and len(cases) > 2:
        _err(f"select_n with a bool predicate takes at most 2 cases, got {len(cases)}")
    for c in cases[1:]:
        if c.shape != cases[0].shape or c.dtype != cases[0].dtype:
            _err(f"select_n cases must have the same shape and dtype, got {_fmt(cases)}")
    if which.shape not in ((), cases[0].shape):
        _err(
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

convert_element_type_p = _prim("convert_element_type", "convert")


def _convert_eval(x, *, new_dtype, weak_type=False):
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_impl(x, *, new_dtype, weak_type=False):
    if new_dtype == np.bool_:
        return x != 0
    if x.dtype.kind == "f" or x.dtype == dtypes.bfloat16:
        if new_dtype.kind in "iu":
            # Saturate out-of-range values and send NaN to 0, as XLA does.
            info = np.iinfo(new_dtype)
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

iota_p = _prim("iota", "special")


def _iota_eval(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        _err(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype)


def _iota_impl(*, dtype, shape, dimension):
    r = np.arange(shape[dimension], dtype=dtype)
    r = r.reshape([shape[dimension] if i == dimension else 1 for i in range(len(shape))])
    return np.broadcast_to(r, shape)


iota_p.abstract_eval = _iota_eval
iota_p.impl = _iota_impl

stop_gradient_p = _prim("stop_gradient", "special")
stop_gradient_p.abstract_eval = lambda x: x
stop_gradient_p.impl = lambda x: x


# --- Reductions ----------------------------------------------------------------------------------
def _reduce_eval(name, kinds):
    def abstract_eval(x, *, axes):
        _check_axes(name, axes, x.ndim)
        if kinds == "number" and x.dtype == dtypes.bool_:
            _err(f"{name} does not accept bool operands, got {x.str_short()}")
        if kinds == "intbool" and x.dtype in dtypes.FLOATS:
            _err(f"{name} needs integer or bool operands, got {x.str_short()}")
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)

    return abstract_eval


def _identity(name, dtype):
    if name == "reduce_max":
        return (
            -np.inf
            if dtype.kind == "f" or dtype == dtypes.bfloat16
            else (False if dtype == np.bool_ else np.iinfo(dtype).min)
        )
    if name == "reduce_min":
        return (
            np.inf
            if dtype.kind == "f" or dtype == dtypes.bfloat16
            else (True if dtype == np.bool_ else np.iinfo(dtype).max)
        )
    raise KeyError(name)


def _zero_sign(out, x, axes, is_max):
    """max of zeros is +0.0 if any is +0.0, min is -0.0 if any is -0.0 (XLA's order)."""
    if x.dtype.kind != "f" or not np.any(np.asarray(out) == 0):
        return out
    want = (x == 0) & (np.signbit(x) != is_max)
    hit = np.any(want, axis=axes) & (np.asarray(out) == 0)
    return np.where(hit, np.asarray(0.0 if is_max else -0.0, x.dtype), out)


def _reduce_impl(name):
    def impl(x, *, axes):
        axes = tuple(axes)
        low = x.dtype in _LOW_FLOATS
        xc = x.astype(np.float32) if low else x
        with np.errstate(all="ignore"):
            if name == "reduce_sum":
                out = np.sum(xc, axis=axes, dtype=xc.dtype)
            elif name == "reduce_prod":
                out = np.prod(xc, axis=axes, dtype=xc.dtype)
            elif name == "reduce_max":
                out = _zero_sign(
                    np.max(xc, axis=axes, initial=_identity(name, x.dtype)), xc, axes, True
                )
            elif name == "reduce_min":
                out = _zero_sign(
                    np.min(xc, axis=axes, initial=_identity(name, x.dtype)), xc, axes, False
                )
            elif name == "reduce_and":
                out = (
                    np.all(xc, axis=axes)
                    if x.dtype == np.bool_
                    else np.bitwise_and.reduce(xc, axis=axes)
                )
            else:
                out = (
                    np.any(xc, axis=axes)
                    if x.dtype == np.bool_
                    else np.bitwise_or.reduce(xc, axis=axes)
                )
        return np.asarray(out).astype(x.dtype)

    return impl


for _name, _kinds in [
    ("reduce_sum", "number"),
    ("reduce_prod", "number"),
    ("reduce_max", "any"),
    ("reduce_min", "any"),
    ("reduce_and", "intbool"),
    ("reduce_or", "intbool"),
]:
    _p = _prim(_name, "reduce")
    _p.abstract_eval = _reduce_eval(_name, _kinds)
    _p.impl = _reduce_impl(_name)
    globals()[f"{_name}_p"] = _p


def _argreduce_eval(name):
    def abstract_eval(x, *, axes, index_dtype):
        _check_axes(name, axes, x.ndim)
        if len(axes) != 1:
            _err(f"{name} reduces exactly one axis, got axes={axes}")
        if x.shape[axes[0]] == 0:
            _err(
                f"{name}: cannot take the {name[3:]} of an empty axis {axes[0]} of {x.str_short()}"
            )
        if index_dtype not in dtypes.INTEGERS:
            _err(f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        n = x.shape[axes[0]]
        if n - 1 > np.iinfo(index_dtype).max:
            from functx.errors import FunctxOverflowError
            from functx.source_info import where

            raise FunctxOverflowError(
                f"{name}: axis {axes[0]} of {x.str_short()} has {n} elements, more than "
                f"index_dtype {np.dtype(index_dtype).name} can index{where()}; pass "
                f"index_dtype=int64 to functx.lax.{name}, or split the axis"
            )
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, index_dtype)

    return abstract_eval


def _argreduce_impl(fn):
    def impl(x, *, axes, index_dtype):
        if x.dtype in _LOW_FLOATS:
            x = x.astype(np.float32)
        return fn(x, axis=axes[0]).astype(index_dtype)

    return impl


argmax_p = _prim("argmax", "reduce")
argmax_p.abstract_eval = _argreduce_eval("argmax")
argmax_p.impl = _argreduce_impl(np.argmax)
argmin_p = _prim("argmin", "reduce")
argmin_p.abstract_eval = _argreduce_eval("argmin")
argmin_p.impl = _argreduce_impl(np.argmin)


# --- Shape ops (views: lowering turns them into index expressions) -------------------------------
broadcast_in_dim_p = _prim("broadcast_in_dim", "shape")


def _broadcast_in_dim_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        _err(
            f"broadcast_in_dim: operand {x.str_short()} needs {x.ndim} broadcast_dimensions, "
            f"got {broadcast_dimensions}"
        )
    if any(not 0 <= d < len(shape) for d in broadcast_dimensions) or list(
        broadcast_dimensions
    ) != sorted(set(broadcast_dimensions)):
        _err(
            f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must be strictly "
            f"increasing axes of the result shape {shape}"
        )
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] not in (1, shape[d]):
            _err(
                f"broadcast_in_dim: operand {x.str_short()} cannot broadcast to {shape} "
                f"(axis {i} has size {x.shape[i]}, target axis {d} has size {shape[d]})"
            )
    if any(s < 0 for s in shape):
        _err(f"broadcast_in_dim: negative size in {shape}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p.abstract_eval = _broadcast_in_dim_eval
broadcast_in_dim_p.impl = _broadcast_in_dim_impl

reshape_p = _prim("reshape", "shape")


def _reshape_eval(x, *, new_sizes):
    if any(s < 0 for s in new_sizes) or math.prod(new_sizes) != math.prod(x.shape):
        _err(
            f"reshape: cannot reshape {x.str_short()} ({math.prod(x.shape)} elements) "
            f"to shape {tuple(new_sizes)}"
        )
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p.abstract_eval = _reshape_eval
reshape_p.impl = lambda x, *, new_sizes: np.reshape(x, new_sizes)

transpose_p = _prim("transpose", "shape")


def _transpose_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        _err(
            f"transpose: permutation {permutation} is not a permutation of the axes of "
            f"{x.str_short()}"
        )
    return ShapedArray([x.shape[p] for p in permutation], x.dtype, x.weak_type)


transpose_p.abstract_eval = _transpose_eval
transpose_p.impl = lambda x, *, permutation: np.transpose(x, permutation)

squeeze_p = _prim("squeeze", "shape")


def _squeeze_eval(x, *, dimensions):
    _check_axes("squeeze", dimensions, x.ndim)
    for d in dimensions:
        if x.shape[d] != 1:
            _err(f"squeeze: axis {d} of {x.str_short()} has size {x.shape[d]}, not 1")
    return ShapedArray(
        [s for i, s in enumerate(x.shape) if i not in dimensions], x.dtype, x.weak_type
    )


squeeze_p.abstract_eval = _squeeze_eval
squeeze_p.impl = lambda x, *, dimensions: np.squeeze(x, tuple(dimensions))

expand_dims_p = _prim("expand_dims", "shape")


def _expand_dims_eval(x, *, dimensions):
    n = x.ndim + len(dimensions)
    _check_axes("expand_dims", dimensions, n)
    shape, it = [], iter(x.shape)
    for i in range(n):
        shape.append(1 if i in dimensions else next(it))
    return ShapedArray(shape, x.dtype, x.weak_type)


expand_dims_p.abstract_eval = _expand_dims_eval
expand_dims_p.impl = lambda x, *, dimensions: np.expand_dims(x, tuple(dimensions))

rev_p = _prim("rev", "shape")


def _rev_eval(x, *, dimensions):
    _check_axes("rev", dimensions, x.ndim)
    return x


rev_p.abstract_eval = _rev_eval
rev_p.impl = lambda x, *, dimensions: np.flip(x, tuple(dimensions)) if dimensions else x

slice_p = _prim("slice", "shape")


def _slice_eval(x, *, start_indices, limit_indices, strides=None):
    n = x.ndim
    if len(start_indices) != n or len(limit_indices) != n or (strides and len(strides) != n):
        _err(
            f"slice: operand {x.str_short()} needs {n} start/limit indices, got "
            f"{start_indices}, {limit_indices}"
        )
    strides = strides or (1,) * n
    shape = []
    for s, l, st, d in zip(start_indices, limit_indices, strides, x.shape):
        if not (0 <= s <= l <= d) or st < 1:
            _err(
                f"slice: start {start_indices}, limit {limit_indices}, strides {strides} are out "
                f"of range for {x.str_short()}"
            )
        shape.append(0 if l == s else (l - s - 1) // st + 1)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_impl(x, *, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    return x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


slice_p.abstract_eval = _slice_eval
slice_p.impl = _slice_impl

concatenate_p = _prim("concatenate", "shape")


def _concatenate_eval(*xs, dimension):
    if not xs:
        _err("concatenate needs at least one operand")
    _check_axes("concatenate", (dimension,), xs[0].ndim)
    _same_dtypes("concatenate", xs)
    for x in xs[1:]:
        if x.ndim != xs[0].ndim or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != dimension
        ):
            _err(f"concatenate along axis {dimension} needs equal shapes elsewhere, got {_fmt(xs)}")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


concatenate_p.abstract_eval = _concatenate_eval
concatenate_p.impl = lambda *xs, dimension: np.concatenate(xs, axis=dimension)

pad_p = _prim("pad", "shape")


def _pad_eval(x, padval, *, padding_config):
    if padval.shape != () or padval.dtype != x.dtype:
        _err(
            f"pad: padding value must be a scalar of the operand's dtype, got "
            f"{padval.str_short()} for {x.str_short()}"
        )
    if len(padding_config) != x.ndim:
        _err(
            f"pad: operand {x.str_short()} needs {x.ndim} (low, high, interior) triples, got "
            f"{padding_config}"
        )
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            _err(f"pad: interior padding must be >= 0, got {padding_config}")
        n = lo + hi + d + max(d - 1, 0) * interior
        if n < 0:
            _err(f"pad: padding {padding_config} gives a negative size for {x.str_short()}")
        shape.append(n)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad_impl(x, padval, *, padding_config):
    big = [
        max(lo, 0) + max(hi, 0) + d + max(d - 1, 0) * it
        for d, (lo, hi, it) in zip(x.shape, padding_config)
    ]
    out = np.full(big, padval, dtype=x.dtype)
    idx = tuple(
        slice(max(lo, 0), max(lo, 0) + d + max(d - 1, 0) * it, it + 1)
        for d, (lo, hi, it) in zip(x.shape, padding_config)
    )
    out[idx] = x
    crop = tuple(slice(-min(lo, 0), n + min(hi, 0)) for n, (lo, hi, _) in zip(big, padding_config))
    return out[crop]


pad_p.abstract_eval = _pad_eval
pad_p.impl = _pad_impl


# --- Indexing: dynamic slices, gather, scatter ---------------------------------------------------
def _check_index_scalars(name, idx, n):
    if len(idx) != n:
        _err(f"{name}: needs {n} start indices, got {len(idx)}")
    for i in idx:
        if i.shape != () or i.dtype not in dtypes.INTEGERS:
            _err(f"{name}: start indices must be integer scalars, got {_fmt(idx)}")


dynamic_slice_p = _prim("dynamic_slice", "index")


def _dynamic_slice_eval(x, *idx, slice_sizes):
    _check_index_scalars("dynamic_slice", idx, x.ndim)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        _err(f"dynamic_slice: slice_sizes {slice_sizes} do not fit in {x.str_short()}")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _clamped_starts(idx, shape, sizes):
    return [int(np.clip(int(i), 0, d - s)) for i, d, s in zip(idx, shape, sizes)]


def _dynamic_slice_impl(x, *idx, slice_sizes):
    st = _clamped_starts(idx, x.shape, slice_sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(st, slice_sizes))]


dynamic_slice_p.abstract_eval = _dynamic_slice_eval
dynamic_slice_p.impl = _dynamic_slice_impl

dynamic_update_slice_p = _prim("dynamic_update_slice", "index")


def _dynamic_update_slice_eval(x, update, *idx):
    _check_index_scalars("dynamic_update_slice", idx, x.ndim)
    if (
        update.ndim != x.ndim
        or any(u > d for u, d in zip(update.shape, x.shape))
        or update.dtype != x.dtype
    ):
        _err(f"dynamic_update_slice: update {update.str_short()} does not fit in {x.str_short()}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _dynamic_update_slice_impl(x, update, *idx):
    st = _clamped_starts(idx, x.shape, update.shape)
    out = np.array(x)
    out[tuple(slice(s, s + n) for s, n in zip(st, update.shape))] = update
    return out


dynamic_update_slice_p.abstract_eval = _dynamic_update_slice_eval
dynamic_update_slice_p.impl = _dynamic_update_slice_impl

# gather(operand, indices; axes, mode, fill_value): indices has shape (*batch, len(axes)); the
# result has shape batch + (operand dims not in axes), with
#   result[b..., r...] = operand[axes <- indices[b..., :], other axes <- r...].
# mode "clip" clamps each index into range; mode "fill" returns fill_value for out-of-range ones.
gather_p = _prim("gather", "index")


def _gather_eval(x, idx, *, axes, mode, fill_value=None):
    _check_axes("gather", axes, x.ndim)
    if idx.dtype not in dtypes.INTEGERS or idx.ndim < 1 or idx.shape[-1] != len(axes):
        _err(
            f"gather: indices must be an integer array of shape (..., {len(axes)}), got "
            f"{idx.str_short()} for operand {x.str_short()}"
        )
    if mode not in ("clip", "fill"):
        _err(f"gather: mode must be 'clip' or 'fill', got {mode!r}")
    if mode == "clip" and any(x.shape[a] == 0 for a in axes) and math.prod(idx.shape[:-1]):
        _err(f"gather: cannot index an empty axis of {x.str_short()}")
    rest = [d for i, d in enumerate(x.shape) if i not in axes]
    return ShapedArray(idx.shape[:-1] + tuple(rest), x.dtype, x.weak_type)


def _gather_indices(x, idx, axes):
    k = len(axes)
    moved = np.moveaxis(x, axes, range(k))
    dims = np.asarray([x.shape[a] for a in axes], dtype=np.int64)
    if idx.dtype == np.uint64:  # keep huge unsigned indices out of range instead of negative
        idx = np.minimum(idx, np.uint64(np.iinfo(np.int64).max))
    idx = idx.astype(np.int64)
    return moved, idx, dims


def _gather_impl(x, idx, *, axes, mode, fill_value=None):
    moved, idx, dims = _gather_indices(x, idx, axes)
    if mode == "clip":
        clipped = np.clip(idx, 0, np.maximum(dims - 1, 0))
        return moved[tuple(clipped[..., i] for i in range(len(axes)))]
    ok = np.all((idx >= 0) & (idx < dims), axis=-1)
    safe = np.where(ok[..., None], idx, 0)
    if moved.size == 0:
        out = np.zeros(idx.shape[:-1] + moved.shape[len(axes) :], x.dtype)
    else:
        out = moved[tuple(safe[..., i] for i in range(len(axes)))]
    fill = _default_fill(x.dtype) if fill_value is None else fill_value
    ok = ok.reshape(ok.shape + (1,) * (out.ndim - ok.ndim))
    return np.where(ok, out, np.asarray(fill).astype(x.dtype))


def _default_fill(dtype):
    if dtype.kind == "f" or dtype == dtypes.bfloat16:
        return np.nan
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).min if dtype.kind == "i" else np.iinfo(dtype).max


gather_p.abstract_eval = _gather_eval
gather_p.impl = _gather_impl

# scatter*(operand, indices, updates; axes, mode): updates has the shape gather would return.
# Out-of-range indices are dropped (mode "drop") or clamped (mode "clip").


def _scatter_eval(name):
    def abstract_eval(x, idx, upd, *, axes, mode):
        _check_axes(name, axes, x.ndim)
        if idx.dtype not in dtypes.INTEGERS or idx.ndim < 1 or idx.shape[-1] != len(axes):
            _err(
                f"{name}: indices must be an integer array of shape (..., {len(axes)}), got "
                f"{idx.str_short()} for operand {x.str_short()}"
            )
        rest = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        if upd.shape != idx.shape[:-1] + rest or upd.dtype != x.dtype:
            _err(
                f"{name}: updates must be {x.dtype}{list(idx.shape[:-1] + rest)} for operand "
                f"{x.str_short()} and indices {idx.str_short()}, got {upd.str_short()}"
            )
        if mode not in ("drop", "clip"):
            _err(f"{name}: mode must be 'drop' or 'clip', got {mode!r}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    return abstract_eval


def _scatter_impl(combine):
    def impl(x, idx, upd, *, axes, mode):
        out = np.array(x)
        if out.size == 0:  # nothing to update (and clamping into an empty axis has no target)
            return out
        moved, idx, dims = _gather_indices(out, idx, axes)
        k = len(axes)
        n = math.prod(idx.shape[:-1])  # explicit: reshape(-1, ...) is ambiguous for empty arrays
        flat_idx = idx.reshape(n, k)
        flat_upd = upd.reshape((n,) + upd.shape[idx.ndim - 1 :])
        if mode == "clip":
            flat_idx = np.clip(flat_idx, 0, np.maximum(dims - 1, 0))
        else:
            ok = np.all((flat_idx >= 0) & (flat_idx < dims), axis=-1)
            flat_idx, flat_upd = flat_idx[ok], flat_upd[ok]
        where = tuple(flat_idx[:, i] for i in range(k))
        if combine is None:
            moved[where] = flat_upd
        else:
            combine.at(moved, where, flat_upd)
        return out

    return impl


for _name, _comb in [
    ("scatter", None),
    ("scatter_add", np.add),
    ("scatter_mul", np.multiply),
    ("scatter_min", np.minimum),
    ("scatter_max", np.maximum),
]:
    _p = _prim(_name, "index")
    _p.abstract_eval = _scatter_eval(_name)
    _p.impl = _scatter_impl(_comb)
    globals()[f"{_name}_p"] = _p


# --- Contraction ---------------------------------------------------------------------------------
dot_general_p = _prim("dot_general", "contract")


def _dot_general_eval(lhs, rhs, *, dimension_numbers, preferred_element_type=None, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    name = "dot_general"
    _check_axes(name, tuple(lc) + tuple(lb), lhs.ndim)
    _check_axes(name, tuple(rc) + tuple(rb), rhs.ndim)
    if len(lc) != len(rc) or len(lb) != len(rb):
        _err(f"{name}: contracting/batch dimensions {dimension_numbers} do not pair up")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if lhs.shape[a] != rhs.shape[b]:
            _err(
                f"{name}: cannot contract {lhs.str_short()} with {rhs.str_short()}: axis {a} "
                f"has size {lhs.shape[a]} but axis {b} has size {rhs.shape[b]}"
            )
    if lhs.dtype != rhs.dtype:
        _err(f"{name}: operands need equal dtypes, got {_fmt((lhs, rhs))}")
    out = preferred_element_type or lhs.dtype
    shape = (
        [lhs.shape[i] for i in lb]
        + [d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb]
        + [d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb]
    )
    return ShapedArray(shape, out, lhs.weak_type and rhs.weak_type)


def _dot_general_impl(lhs, rhs, *, dimension_numbers, preferred_element_type=None, precision=None):
    # (NumPy computes float32 products in float32 whatever the precision)
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = preferred_element_type or lhs.dtype
    comp = np.float32 if lhs.dtype in _LOW_FLOATS or out_dtype in _LOW_FLOATS else out_dtype
    if lhs.dtype == np.bool_:
        comp = np.int32 if out_dtype == np.bool_ else comp
    lf = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rf = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    lt = np.transpose(lhs, list(lb) + lf + list(lc)).astype(comp, copy=False)
    rt = np.transpose(rhs, list(rb) + list(rc) + rf).astype(comp, copy=False)
    bshape = [lhs.shape[i] for i in lb]
    m = math.prod(lhs.shape[i] for i in lf)
    n = math.prod(rhs.shape[i] for i in rf)
    k = math.prod(lhs.shape[i] for i in lc)
    b = math.prod(bshape)
    out = np.matmul(lt.reshape(b, m, k), rt.reshape(b, k, n))
    out = out.reshape(bshape + [lhs.shape[i] for i in lf] + [rhs.shape[i] for i in rf])
    if out_dtype == np.bool_:
        return out != 0
    return out.astype(out_dtype, copy=False)


dot_general_p.abstract_eval = _dot_general_eval
dot_general_p.impl = _dot_general_impl


def by_group(group: str) -> list[Primitive]:
    return [p for p in registry.values() if p.group == group]
