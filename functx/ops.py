"""The op builders: one function per primitive (and thin composites), with JAX's lax names.

Transform rules, control flow and the public namespaces call these; ``functx.lax`` re-exports
them.

lax functions do not promote dtypes or broadcast ranks (functx.numpy does; operands of one rank
broadcast their size-1 dimensions, as in JAX); Python scalars take the dtype of the array operand,
as in JAX.
"""

from __future__ import annotations

import builtins
import enum
import math
import operator
import textwrap
from typing import NamedTuple

import numpy as np

from functx import dtypes, primitives as P
from functx.array import Array, is_python_scalar
from functx.config import check_precision as _check_precision
from functx.core import ShapedArray
from functx.errors import (
    ConcretizationError,
    FunctxError,
    FunctxIndexError,
    FunctxOverflowError,
    FunctxTypeError,
    FunctxValueError,
    UnsupportedError,
)
from functx.source_info import where as _loc
from functx.tracing import Tracer, get_aval, tree_flatten, tree_unflatten


def _aval(x) -> ShapedArray:
    return get_aval(x)


# --- argument checks (JAX rejects these; reading them as something else gives wrong answers) ----
def _int(op, what, v):
    """``v`` as a Python int: ints, NumPy integers and integer scalar arrays; a float (even 2.0),
    a bool-free non-integer or a sequence is a FunctxTypeError naming ``op`` and ``what``."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return int(v)
    if (
        isinstance(v, (float, np.floating, builtins.complex, str, bytes, bool, np.bool_))
        or v is None
    ):
        raise FunctxTypeError(
            f"{op}: {what} must be an integer, got {v!r} of type {type(v).__name__}{_loc()}"
        )
    try:
        return operator.index(v)
    except TypeError as e:
        if isinstance(e, FunctxError):  # a ConcretizationError for a traced value
            raise
        raise FunctxTypeError(
            f"{op}: {what} must be an integer, got {v!r} of type {type(v).__name__}{_loc()}"
        ) from None


def _ints(op, what, vs):
    """A tuple of Python ints from a sequence (see ``_int``)."""
    if (
        isinstance(vs, (int, np.integer, float, np.floating, str, bytes))
        or vs is None
        or not hasattr(vs, "__iter__")
    ):
        raise FunctxTypeError(f"{op}: {what} must be a sequence of integers, got {vs!r}{_loc()}")
    try:
        items = list(vs)
    except TypeError:
        raise FunctxTypeError(
            f"{op}: {what} must be a sequence of integers, got {vs!r:.60}{_loc()}"
        ) from None
    return tuple(_int(op, what, v) for v in items)


def _sizes(op, what, vs):
    """A shape: non-negative ints."""
    out = _ints(op, what, vs)
    if any(d < 0 for d in out):
        raise FunctxTypeError(f"{op}: {what} must be non-negative, got {out}{_loc()}")
    if math.prod(d for d in out if d) >= 2**58:  # (NumPy refuses these even with a 0 size)
        raise FunctxOverflowError(f"{op}: {what} {out} has too many elements{_loc()}")
    return out


def _axis(op, axis, ndim, err=FunctxValueError, what="axis"):
    """``axis`` in ``[-ndim, ndim)`` made non-negative; out of range raises ``err``."""
    a = _int(op, what, axis)
    if not -ndim <= a < ndim:
        raise err(f"{op}: {what} {a} is out of bounds for an array of rank {ndim}{_loc()}")
    return a % ndim


def _bool(op, what, v):
    if not isinstance(v, (bool, np.bool_)):
        raise FunctxTypeError(
            f"{op}: {what} must be a bool, got {v!r} of type {type(v).__name__}{_loc()}"
        )
    return bool(v)


def _is_array(x):
    return isinstance(x, (Array, Tracer))


def _scalar_like(x, like):
    """A Python scalar operand of a lax op takes the other operand's dtype (weakly)."""
    aval = _aval(like)
    if aval.weak_type and aval.dtype in (dtypes.default_float(), dtypes.default_int()):
        return float(x) if aval.dtype == dtypes.default_float() else int(x)
    return Array.from_value(_py_scalar_as(x, aval.dtype))


def _py_scalar_as(x, dtype):
    """``np.asarray(x, dtype)`` for a Python scalar; an int out of the dtype's range is a
    FunctxOverflowError (JAX: OverflowError), not a wrapped-around value."""
    try:
        with np.errstate(over="ignore"):  # a float beyond the dtype's range is inf, as in JAX
            return np.asarray(x, dtype)
    except OverflowError:
        raise FunctxOverflowError(
            f"Python int {x} is too large to convert to {np.dtype(dtype)}{_loc()}"
        ) from None
    except (TypeError, ValueError) as e:  # NaN or inf to an integer dtype, ...
        raise FunctxTypeError(
            f"cannot convert the Python scalar {x!r} to {np.dtype(dtype)}: {e}{_loc()}"
        ) from None


def _binary_operands(x, y):
    if is_python_scalar(x) and not is_python_scalar(y):
        x = _scalar_like(x, y)
    elif is_python_scalar(y) and not is_python_scalar(x):
        y = _scalar_like(y, x)
    return x, y


# --- elementwise ---------------------------------------------------------------------------------
# The unary ops that take JAX's ``accuracy=`` (a ``Tolerance`` or an ``AccuracyMode``).
_ACCURACY_OPS = frozenset(
    "exp exp2 log log1p expm1 tanh logistic sin cos tan sqrt rsqrt cbrt".split()
)


def _unary(prim):
    if prim.name in _ACCURACY_OPS:

        def fn(x, *, accuracy=None):
            if accuracy is not None:
                _check_accuracy(prim.name, accuracy)
            return prim.bind(x)

    else:

        def fn(x):
            return prim.bind(x)

    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise ``{prim.name}`` (the primitive)."
    return fn


def _size_one_broadcast(x, y):
    """As JAX 0.10's lax binary ops: operands of one rank whose shapes differ only where one of
    them has size 1 are broadcast to the common shape (``add(f32[1,3], f32[2,3])``); any other
    mismatch is left to the primitive's shape check (a TypeError, as in JAX)."""
    sx, sy = getattr(x, "shape", ()), getattr(y, "shape", ())
    if sx == sy or not sx or not sy or len(sx) != len(sy):
        return x, y
    if not all(a == b or a == 1 or b == 1 for a, b in zip(sx, sy)):
        return x, y
    shape = tuple(builtins.max(a, b) for a, b in zip(sx, sy))
    dims = tuple(range(len(shape)))
    if sx != shape:
        x = broadcast_in_dim(x, shape, dims)
    if sy != shape:
        y = broadcast_in_dim(y, shape, dims)
    return x, y


def _binary(prim):
    def fn(x, y):
        x, y = _size_one_broadcast(*_binary_operands(x, y))
        return prim.bind(x, y)

    fn.__name__ = prim.name
    fn.__doc__ = (
        f"Elementwise ``{prim.name}`` (the primitive): equal shapes, a scalar operand, or, as in "
        "JAX, shapes of one rank that differ only in size-1 dimensions."
    )
    return fn


# The plain elementwise builders: one per row of the elementwise table
# (functx.primitives.elementwise.ROWS) whose ``builder`` is "plain", named by the row's public (lax)
# name: ``neg(x)``, ``sin(x)``, ``add(x, y)``, ``max(x, y)``, ``bitwise_not(x)``, ... Adding such a
# row adds its builder here; rows with their own builder ("custom": round, integer_pow) are below.
# Example operands for the docstrings, by (group, operand kinds); ops with a narrower domain
# have their own.
_EXAMPLE_ARGS = {
    ("unary", "float"): ([0.5, 0.75],),
    ("unary", "number"): ([-1.5, 2.0],),
    ("unary", "intbool"): (np.int32([0, 5]),),
    ("binary", "float"): ([0.5, 0.75], [2.0, 4.0]),
    ("binary", "number"): ([0.5, 3.0], [2.0, 1.0]),
    ("binary", "any"): ([0.5, 3.0], [2.0, 1.0]),
    ("compare", "any"): ([0.5, 3.0], [2.0, 1.0]),
    ("bitwise", "intbool"): (np.int32([12, 10]), np.int32([10, 6])),
}
_EXAMPLE_ARGS_OF = {
    "acosh": ([1.5, 2.0],),
    "polygamma": ([1.0, 2.0], [0.5, 3.0]),
    "zeta": ([2.0, 3.0], [1.0, 2.0]),
}


def _wrap(text: str) -> str:
    return textwrap.fill(text, 96, initial_indent=" " * 4, subsequent_indent=" " * 6)


def _doc(row) -> str:
    """The docstring of a builder made from an elementwise row: what it computes, its arguments,
    its result and an example whose output the row's own implementation printed."""
    args = _EXAMPLE_ARGS_OF.get(row.name) or _EXAMPLE_ARGS[(row.group, row.kinds)]
    args = [np.asarray(a, np.float32) if isinstance(a, list) else a for a in args]
    out = P.registry[row.name].impl(*args)
    shown = ", ".join(f"np.{a.dtype.name}({a.tolist()})" for a in args)
    kinds = {
        "float": "a floating-point dtype",
        "number": "a numeric (not bool) dtype",
        "intbool": "an integer or bool dtype",
        "any": "of any kind",
    }[row.kinds]
    if row.arity == 1:
        params = f"x: an array or scalar of {kinds}."
        if row.name in _ACCURACY_OPS:
            params += (
                " accuracy: None, a ``Tolerance`` or an ``AccuracyMode`` (checked; functx's "
                "kernels compute at one accuracy whatever it asks for)."
            )
        what = f"``{row.name}`` of each element of ``x``"
    else:
        params = (
            f"x, y: arrays of one dtype, {kinds} (either may be a Python scalar, which takes "
            "the other's dtype), of one shape or of one rank with shapes differing only in "
            "size-1 dimensions, which broadcast (as in JAX); lax does not promote dtypes."
        )
        what = f"``{row.name}`` of ``x`` and ``y``, element by element"
    kind = "a bool array" if row.group == "compare" or row.name == "is_finite" else "an array"
    differences = ""
    if row.arity == 2:
        differences = textwrap.fill(
            "Differences from JAX: where size-1 dimensions broadcast, functx records explicit "
            "``broadcast_in_dim`` equations before the operation (JAX's primitive broadcasts "
            "implicitly), so ``make_jaxpr`` prints them.",
            100,
        )
        differences += "\n\n"
    return (
        f"{what} (JAX's ``jax.lax.{row.public_name}``; the ``{row.name}`` primitive).\n\n"
        f"Arguments:\n{_wrap(params)}\n\n"
        f"Returns:\n    {kind} of the operands' {'broadcast ' if row.arity == 2 else ''}shape.\n\n"
        f"{differences}"
        f"Example:\n    >>> import numpy as np\n    >>> from functx import lax\n"
        f"    >>> print(lax.{row.public_name}({shown}))\n    {out}\n"
    )


for _row in P.elementwise.ROWS:
    if _row.builder == "plain":
        _build = _unary if _row.arity == 1 else _binary
        _fn = _build(P.registry[_row.name])
        _fn.__name__ = _fn.__qualname__ = _row.public_name
        _fn.__doc__ = _doc(_row)
        globals()[_row.public_name] = _fn
del _row, _build, _fn


class AccuracyMode(enum.Enum):
    """How accurately a unary op is asked to compute (``jax.lax.AccuracyMode``), for the
    ``accuracy=`` argument of ``exp``, ``log``, ``sin``, ``tanh``, ``sqrt``, ...

    functx's kernels compute every op at one accuracy (the C math library's or libdevice's):
    ``accuracy=`` is checked and does not change the result.

    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.exp(np.float32([0.0, 1.0]), accuracy=lax.AccuracyMode.HIGHEST)
      Array([1.      , 2.718282], dtype=float32)
    """

    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """The error a unary op may make (``jax.lax.Tolerance``), for ``accuracy=`` (see
    ``AccuracyMode``): an absolute, a relative and an ulp bound, at least one of them set.

    Arguments:
      atol: the absolute error allowed (>= 0).
      rtol: the relative error allowed (>= 0).
      ulps: the error allowed in units in the last place (>= 0).
    Returns:
      A ``Tolerance``.
    Raises:
      ValueError: a negative bound, or none set (as JAX).
    Example:
      >>> from functx import lax
      >>> t = lax.Tolerance(rtol=1e-3)
      >>> t.atol, t.rtol, t.ulps
      (0.0, 0.001, 0)
    """

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise FunctxValueError(
                f"Tolerance: the bounds must be >= 0, got {atol=}, {rtol=}, {ulps=}"
            )
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise FunctxValueError("Tolerance: set at least one of atol, rtol or ulps")
        self.atol, self.rtol, self.ulps = atol, rtol, ulps

    def __repr__(self):
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


def _check_accuracy(op: str, accuracy) -> None:
    if not isinstance(accuracy, (Tolerance, AccuracyMode)):
        raise UnsupportedError(  # (JAX raises NotImplementedError)
            f"{op}: accuracy must be None, a lax.Tolerance or a lax.AccuracyMode, got "
            f"{accuracy!r}{_loc()}"
        )


class RoundingMethod:
    """How ``round`` breaks ties (``jax.lax.RoundingMethod``).

    ``AWAY_FROM_ZERO`` (0) rounds halves away from zero; ``TO_NEAREST_EVEN`` (1) rounds them to the
    even neighbour. functx's is a plain class of int constants, not an ``enum.IntEnum`` as in JAX;
    ``round`` accepts either the constant or the int.

    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.round(np.float32([0.5, 1.5, 2.5]), lax.RoundingMethod.TO_NEAREST_EVEN)
      Array([0., 2., 2.], dtype=float32)
    """

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001
    """Round each element to an integral value (``jax.lax.round``).

    Arguments:
      x: a floating-point array or scalar.
      rounding_method: ``RoundingMethod.AWAY_FROM_ZERO`` (0, the default) or
        ``RoundingMethod.TO_NEAREST_EVEN`` (1); anything else is a FunctxValueError.
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.round(np.float32([0.5, 1.5, -2.5]))
      Array([ 1.,  2., -3.], dtype=float32)
    """
    if (
        not isinstance(rounding_method, (int, np.integer))
        or isinstance(rounding_method, (bool, np.bool_))
        or rounding_method not in (0, 1)
    ):
        raise FunctxValueError(
            f"round: {rounding_method!r} is not a valid RoundingMethod; use "
            f"RoundingMethod.AWAY_FROM_ZERO (0) or TO_NEAREST_EVEN (1)"
            f"{_loc()}"
        )
    return P.round_p.bind(x, rounding_method=int(rounding_method))


def integer_pow(x, y: int):
    """``x ** y`` for a static integer exponent ``y`` (``jax.lax.integer_pow``), by repeated
    multiplication.

    Arguments:
      x: a numeric array or scalar.
      y: a Python int (a float that is a whole number is accepted, as in JAX); negative
        exponents give reciprocals.
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.integer_pow(np.float32([1.0, 2.0, 3.0]), 3)
      Array([ 1.,  8., 27.], dtype=float32)
    """
    if isinstance(y, (float, np.floating)) and float(y).is_integer():
        y = int(y)
    return P.integer_pow_p.bind(x, y=_int("integer_pow", "the exponent y", y))


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
    """Round ``operand`` to a float format with ``exponent_bits`` exponent bits and
    ``mantissa_bits`` mantissa bits (JAX's ``jax.lax.reduce_precision``), bit for bit as XLA:
    the mantissa rounds to nearest even, values beyond the exponent range become signed
    infinities or signed zeros, NaN stays NaN. The result keeps the operand's dtype.

    Arguments:
      operand: a float array or scalar.
      exponent_bits: the exponent bits of the format (positive).
      mantissa_bits: the explicit mantissa bits of the format (non-negative).
    Returns:
      An array of the operand's shape and dtype.

    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> print(lax.reduce_precision(np.float32([1.0 / 3.0, 70000.0]), 5, 10))
      [0.33325195        inf]
    """
    e = _int("reduce_precision", "exponent_bits", exponent_bits)
    m = _int("reduce_precision", "mantissa_bits", mantissa_bits)
    return P.reduce_precision_p.bind(operand, exponent_bits=e, mantissa_bits=m)


def square(x):
    """``x * x`` elementwise (``jax.lax.square``).

    Arguments:
      x: a numeric array or scalar.
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.square(np.int32([-2, 3]))
      Array([4, 9], dtype=int32)
    """
    return integer_pow(x, 2)


def reciprocal(x):
    """``1 / x`` elementwise (``jax.lax.reciprocal``).

    Arguments:
      x: a floating-point or complex array or scalar.
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.reciprocal(np.float32([2.0, 4.0]))
      Array([0.5 , 0.25], dtype=float32)
    """
    return integer_pow(x, -1)


def real(x):
    """The real part of each element of a complex array (JAX's ``jax.lax.real``).

    Arguments:
        x: a complex64 or complex128 array (or a Python complex).

    Returns:
        a float32 (complex64) or float64 (complex128) array of ``x``'s shape.

    Example:
        >>> import numpy as np
        >>> from functx import lax
        >>> print(lax.real(np.complex64([1 + 2j, -3j])))
        [ 1. -0.]
    """
    return P.real_p.bind(x)


def imag(x):
    """The imaginary part of each element of a complex array (JAX's ``jax.lax.imag``).

    Arguments:
        x: a complex64 or complex128 array (or a Python complex).

    Returns:
        a float32 (complex64) or float64 (complex128) array of ``x``'s shape.

    Example:
        >>> import numpy as np
        >>> from functx import lax
        >>> print(lax.imag(np.complex64([1 + 2j, -3j])))
        [ 2. -3.]
    """
    return P.imag_p.bind(x)


def conj(x):
    """The complex conjugate of each element (JAX's ``jax.lax.conj``); a real operand gives its
    complex value (float32 -> complex64).

    Arguments:
        x: a floating-point or complex array.

    Returns:
        a complex array of ``x``'s shape.

    Example:
        >>> import numpy as np
        >>> from functx import lax
        >>> print(lax.conj(np.complex64([1 + 2j, 3 - 1j])))
        [1.-2.j 3.+1.j]
    """
    return P.conj_p.bind(x)


def complex(x, y):  # noqa: A001
    """``x + 1j * y`` from real and imaginary parts (JAX's ``jax.lax.complex``).

    Arguments:
        x, y: float32 or float64 arrays of one shape and dtype (either may be a Python scalar,
            which takes the other's dtype).

    Returns:
        a complex64 (float32 parts) or complex128 (float64 parts) array.

    Example:
        >>> import numpy as np
        >>> from functx import lax
        >>> print(lax.complex(np.float32([1, 2]), np.float32([3, -4])))
        [1.+3.j 2.-4.j]
    """
    return P.complex_p.bind(*_binary_operands(x, y))


def select_n(which, *cases):
    """Pick each element from one of ``cases`` by ``which`` (``jax.lax.select_n``).

    Arguments:
      which: a bool array (two cases: False picks ``cases[0]``) or an int32 array (index of
        the case); a scalar or the cases' shape.
      *cases: arrays of one shape and dtype.
    Returns:
      An array of the cases' shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.select_n(np.int32([0, 2, 1]), np.float32([1, 1, 1]), np.float32([2, 2, 2]),
      ...               np.float32([3, 3, 3]))
      Array([1., 3., 2.], dtype=float32)
    """
    return P.select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` is True, else ``on_false`` (``jax.lax.select``).

    Arguments:
      pred: a bool array of the operands' shape, or a bool scalar.
      on_true, on_false: arrays of one shape and dtype.
    Returns:
      An array of the operands' shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.select(np.array([True, False]), np.float32([1, 2]), np.float32([10, 20]))
      Array([ 1., 20.], dtype=float32)
    """
    return P.select_n_p.bind(pred, on_false, on_true)


def clamp(min, x, max):  # noqa: A002
    """``x`` limited to ``[min, max]`` elementwise (``jax.lax.clamp``).

    Arguments:
      min: the lower bound, a scalar or an array of ``x``'s shape.
      x: the array to clamp.
      max: the upper bound, a scalar or an array of ``x``'s shape.
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.clamp(0.0, np.float32([-1.0, 0.5, 2.0]), 1.0)
      Array([0. , 0.5, 1. ], dtype=float32)
    """
    return P.min_p.bind(P.max_p.bind(*_binary_operands(x, min)), _binary_operands(x, max)[1])


def convert_element_type(x, new_dtype, weak_type: bool = False):
    """Cast ``x`` to ``new_dtype`` (``jax.lax.convert_element_type``).

    Arguments:
      x: an array or scalar.
      new_dtype: the target dtype (None is a FunctxTypeError).
      weak_type: whether the result is weakly typed (as a Python scalar's).
    Returns:
      An array of ``x``'s shape and dtype ``new_dtype``; float to int truncates toward zero.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.convert_element_type(np.float32([1.7, -1.7]), np.int32)
      Array([ 1, -1], dtype=int32)
    """
    if new_dtype is None:
        raise FunctxTypeError(f"convert_element_type: new_dtype must be a dtype, got None{_loc()}")
    new_dtype = dtypes.check_user_dtype(new_dtype, "convert_element_type")
    aval = _aval(x)
    if aval.dtype == new_dtype and aval.weak_type == weak_type and _is_array(x):
        return x
    if is_python_scalar(x) and not weak_type:
        return Array.from_value(_py_scalar_as(x, new_dtype))
    return P.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)


def bitcast_convert_type(operand, new_dtype):
    """The bits of ``operand`` read as ``new_dtype`` (``jax.lax.bitcast_convert_type``).

    Arguments:
      operand: an array or scalar (bool and complex only with ``new_dtype`` its own dtype).
      new_dtype: the dtype to read the bits as.
    Returns:
      With equal widths, an array of ``operand``'s shape; with a narrower ``new_dtype``, one
      more last axis of ``old_bits // new_bits`` parts, least significant first; with a wider
      one, the shape without its last axis, which must hold ``new_bits // old_bits`` elements
      (ValueError otherwise). Never weakly typed.

    Differences from JAX: under ``jit`` a float16/bfloat16 signaling NaN comes out quiet; ``vmap``
    of a widening bitcast with the batch axis last works (JAX 0.10.2 raises IndexError).

    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.bitcast_convert_type(np.float32([1.0, -0.0]), np.int32)
      Array([ 1065353216, -2147483648], dtype=int32)
      >>> lax.bitcast_convert_type(np.uint16([0x1234]), np.uint8)
      Array([[52, 18]], dtype=uint8)
    """
    if new_dtype is None:
        raise FunctxValueError(f"dtype must be specified.{_loc()}")
    new_dtype = dtypes.check_user_dtype(new_dtype, "bitcast_convert_type")
    if is_python_scalar(operand):
        operand = np.asarray(operand, dtypes.dtype_of_python_scalar(operand))
    return P.bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


def _iota_dtype(dtype):
    if dtype is None:
        raise FunctxTypeError(f"iota: dtype must be an integer or float dtype, got None{_loc()}")
    dt = dtypes.check_user_dtype(dtype, "broadcasted_iota")
    if dt not in dtypes.INTEGERS and dt not in dtypes.FLOATS:
        raise FunctxTypeError(
            f"iota does not accept dtype {dt}; use an integer or float dtype{_loc()}"
        )
    return dt


def iota(dtype, size: int):
    """``[0, 1, ..., size - 1]`` (``jax.lax.iota``).

    Arguments:
      dtype: an integer or float dtype.
      size: the length, a non-negative int.
    Returns:
      A 1-D array of ``dtype``.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.iota(np.int32, 4)
      Array([0, 1, 2, 3], dtype=int32)
    """
    return P.iota_p.bind(
        dtype=_iota_dtype(dtype), shape=_sizes("iota", "size", (size,)), dimension=0
    )


def broadcasted_iota(dtype, shape, dimension: int):
    """An array of ``shape`` counting along ``dimension`` (``jax.lax.broadcasted_iota``).

    Arguments:
      dtype: an integer or float dtype.
      shape: the result's shape.
      dimension: the axis whose index each element holds.
    Returns:
      An array of ``shape`` and ``dtype``.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.broadcasted_iota(np.int32, (2, 3), 1)
      Array([[0, 1, 2],
             [0, 1, 2]], dtype=int32)
    """
    shape = _sizes("broadcasted_iota", "shape", shape)
    dimension = _int("broadcasted_iota", "dimension", dimension)
    if not 0 <= dimension < len(shape):
        raise FunctxValueError(
            f"broadcasted_iota: dimension {dimension} is out of range for shape {shape}{_loc()}"
        )
    return P.iota_p.bind(dtype=_iota_dtype(dtype), shape=shape, dimension=dimension)


def stop_gradient(x):
    """The identity, whose derivative is zero (``jax.lax.stop_gradient``).

    Arguments:
      x: an array or a pytree of arrays; integer and bool leaves pass through.
    Returns:
      ``x`` unchanged, cut from differentiation.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> import functx
      >>> functx.grad(lambda v: v * lax.stop_gradient(v))(3.0)
      Array(3., dtype=float32, weak_type=True)
    """
    leaves, tree = tree_flatten(x)
    out = [P.stop_gradient_p.bind(v) if _aval(v).dtype in dtypes.FLOATS else v for v in leaves]
    return tree_unflatten(tree, out)


# --- reductions ----------------------------------------------------------------------------------
def _axes(axes, op="reduce"):
    return tuple(sorted(_ints(op, "axes", axes)))


def _reduction(prim, by: str, example: str, result: str):
    """The lax function ``<prim>(operand, axes)``, which reduces ``operand`` over ``axes``
    ``by`` an operation; its docstring's example reduces as ``example`` says, giving
    ``result``."""

    def reduce(operand, axes):
        return prim.bind(operand, axes=_axes(axes))

    reduce.__name__ = reduce.__qualname__ = prim.name
    reduce.__doc__ = f"""Reduce ``operand`` over ``axes`` by {by} (``jax.lax.{prim.name}``).

    Arguments:
      operand: an array.
      axes: the axes to reduce (a sequence of ints).
    Returns:
      An array of ``operand``'s dtype without the reduced axes.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.{prim.name}({example})
      {result}
    """
    return reduce


_FLOATS_2X2 = "np.float32([[1, 2], [3, 4]])"
reduce_sum = _reduction(
    P.reduce_sum_p, "the sum", f"{_FLOATS_2X2}, (0,)", "Array([4., 6.], dtype=float32)"
)
reduce_prod = _reduction(
    P.reduce_prod_p, "the product", f"{_FLOATS_2X2}, (1,)", "Array([ 2., 12.], dtype=float32)"
)
reduce_max = _reduction(
    P.reduce_max_p,
    "the maximum",
    "np.float32([[1, 5], [3, 4]]), (0,)",
    "Array([3., 5.], dtype=float32)",
)
reduce_min = _reduction(
    P.reduce_min_p,
    "the minimum",
    "np.float32([[1, 5], [3, 4]]), (0, 1)",
    "Array(1., dtype=float32)",
)
reduce_and = _reduction(
    P.reduce_and_p,
    "the logical AND (bitwise for integers)",
    "np.array([[True, False], [True, True]]), (1,)",
    "Array([False,  True], dtype=bool)",
)
reduce_or = _reduction(
    P.reduce_or_p,
    "the logical OR (bitwise for integers)",
    "np.array([[True, False], [False, False]]), (1,)",
    "Array([ True, False], dtype=bool)",
)


def _arg_reduction(prim, which: str, result: str):
    """The lax function ``<prim>(operand, axis, index_dtype)``: the index of the ``which`` (largest,
    smallest) element along ``axis``; its docstring's example prints ``result``."""

    def arg_reduce(operand, axis: int, index_dtype=dtypes.int32):
        axes = (_int(prim.name, "axis", axis),)
        return prim.bind(operand, axes=axes, index_dtype=dtypes.canonicalize(index_dtype))

    arg_reduce.__name__ = arg_reduce.__qualname__ = prim.name
    arg_reduce.__doc__ = f"""The index of the {which} element along ``axis``
    (``jax.lax.{prim.name}``); ties give the first, NaN counts as the {which}.

    Arguments:
      operand: an array.
      axis: the axis to search.
      index_dtype: an integer dtype for the result (default int32).
    Returns:
      An array of ``index_dtype`` without ``axis``.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.{prim.name}(np.float32([[1, 7, 3], [9, 2, 9]]), 1, np.int32)
      {result}
    """
    return arg_reduce


argmax = _arg_reduction(P.argmax_p, "largest", "Array([1, 0], dtype=int32)")
argmin = _arg_reduction(P.argmin_p, "smallest", "Array([0, 1], dtype=int32)")


# --- shapes --------------------------------------------------------------------------------------
def broadcast_in_dim(x, shape, broadcast_dimensions):
    """Broadcast ``x`` into ``shape`` (``jax.lax.broadcast_in_dim``).

    Arguments:
      x: an array.
      shape: the result's shape.
      broadcast_dimensions: for each axis of ``x``, the result axis it becomes (its size there
        is 1 or equal).
    Returns:
      An array of ``shape`` and ``x``'s dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.broadcast_in_dim(np.float32([1, 2]), (2, 3), (0,))
      Array([[1., 1., 1.],
             [2., 2., 2.]], dtype=float32)
    """
    shape = _sizes("broadcast_in_dim", "shape", shape)
    broadcast_dimensions = _ints("broadcast_in_dim", "broadcast_dimensions", broadcast_dimensions)
    aval = _aval(x)
    if aval.shape == shape and broadcast_dimensions == tuple(range(len(shape))) and _is_array(x):
        return x
    return P.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=broadcast_dimensions)


def broadcast(x, sizes):
    """Add leading axes of ``sizes`` to ``x`` (``jax.lax.broadcast``).

    Arguments:
      x: an array.
      sizes: the sizes of the new leading axes.
    Returns:
      An array of shape ``sizes + x.shape``.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.broadcast(np.int32([1, 2]), (2,))
      Array([[1, 2],
             [1, 2]], dtype=int32)
    """
    aval = _aval(x)
    sizes = _sizes("broadcast", "sizes", sizes)
    n = len(sizes)
    return broadcast_in_dim(x, tuple(sizes) + aval.shape, tuple(range(n, n + aval.ndim)))


def reshape(x, new_sizes, dimensions=None):
    """``x`` with a new shape of the same size (``jax.lax.reshape``).

    Arguments:
      x: an array.
      new_sizes: the new shape.
      dimensions: None, or a permutation applied to ``x`` first (row-major order).
    Returns:
      An array of ``new_sizes`` and ``x``'s dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.reshape(np.arange(6, dtype=np.int32), (2, 3))
      Array([[0, 1, 2],
             [3, 4, 5]], dtype=int32)
    """
    if dimensions is not None:
        x = transpose(x, dimensions)
    new_sizes = _sizes("reshape", "new_sizes", new_sizes)
    if _aval(x).shape == new_sizes and _is_array(x):
        return x
    return P.reshape_p.bind(x, new_sizes=new_sizes)


def transpose(x, permutation):
    """Permute the axes of ``x`` (``jax.lax.transpose``).

    Arguments:
      x: an array.
      permutation: axis ``i`` of the result is axis ``permutation[i]`` of ``x``.
    Returns:
      An array of ``x``'s dtype with permuted shape.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.transpose(np.int32([[1, 2, 3]]), (1, 0)).shape
      (3, 1)
    """
    permutation = _ints("transpose", "permutation", permutation)
    if permutation == tuple(range(len(permutation))) and _is_array(x):
        return x
    return P.transpose_p.bind(x, permutation=permutation)


def squeeze(x, dimensions):
    """Remove axes of size 1 (``jax.lax.squeeze``).

    Arguments:
      x: an array.
      dimensions: the axes to remove (each of size 1; negative counts from the end).
    Returns:
      An array of ``x``'s dtype without those axes.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.squeeze(np.float32([[1.0], [2.0]]), (1,))
      Array([1., 2.], dtype=float32)
    """
    nd = _aval(x).ndim
    dimensions = tuple(
        sorted(
            _axis("squeeze", d, nd, what="dimension")
            for d in _ints("squeeze", "dimensions", dimensions)
        )
    )
    if not dimensions and _is_array(x):
        return x
    return P.squeeze_p.bind(x, dimensions=dimensions)


def expand_dims(x, dimensions):
    """Insert axes of size 1 (``jax.lax.expand_dims``).

    Arguments:
      x: an array.
      dimensions: the positions of the new axes in the result.
    Returns:
      An array of ``x``'s dtype with the new axes.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.expand_dims(np.float32([1.0, 2.0]), (0,)).shape
      (1, 2)
    """
    dimensions = _ints("expand_dims", "dimensions", dimensions)
    n = _aval(x).ndim + len(dimensions)
    dimensions = tuple(sorted(_axis("expand_dims", d, n, what="dimension") for d in dimensions))
    if not dimensions and _is_array(x):
        return x
    return P.expand_dims_p.bind(x, dimensions=dimensions)


def rev(x, dimensions):
    """Reverse ``x`` along ``dimensions`` (``jax.lax.rev``).

    Arguments:
      x: an array.
      dimensions: the axes to reverse.
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.rev(np.int32([[1, 2], [3, 4]]), (1,))
      Array([[2, 1],
             [4, 3]], dtype=int32)
    """
    dimensions = tuple(sorted(_ints("rev", "dimensions", dimensions)))
    if not dimensions and _is_array(x):
        return x
    return P.rev_p.bind(x, dimensions=dimensions)


def slice(x, start_indices, limit_indices, strides=None):  # noqa: A001
    """The static strided window ``x[start:limit:stride]`` per axis (``jax.lax.slice``).

    Arguments:
      x: an array.
      start_indices: one start per axis.
      limit_indices: one (excluded) end per axis.
      strides: None (all 1) or one stride per axis.
    Returns:
      An array of ``x``'s dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.slice(np.arange(10, dtype=np.int32), (1,), (9,), (3,))
      Array([1, 4, 7], dtype=int32)
    """
    start_indices = _ints("slice", "start_indices", start_indices)
    limit_indices = _ints("slice", "limit_indices", limit_indices)
    if strides is not None:
        strides = _ints("slice", "strides", strides)
        strides = None if all(s == 1 for s in strides) else strides
    aval = _aval(x)
    if (
        strides is None
        and start_indices == (0,) * aval.ndim
        and limit_indices == aval.shape
        and _is_array(x)
    ):
        return x
    return P.slice_p.bind(
        x, start_indices=start_indices, limit_indices=limit_indices, strides=strides
    )


def slice_in_dim(x, start_index, limit_index, stride=1, axis=0):
    """``x[..., start:limit:stride, ...]`` along one ``axis`` (``jax.lax.slice_in_dim``).

    Arguments:
      x: an array.
      start_index, limit_index: the bounds (None: the start / end; a negative one
        counts from the end once; then ``0 <= start <= limit <= size`` must hold, no clamping).
      stride: the step (>= 1).
      axis: the axis to slice.
    Returns:
      An array of ``x``'s dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.slice_in_dim(np.int32([[1, 2, 3], [4, 5, 6]]), 1, None, axis=1)
      Array([[2, 3],
             [5, 6]], dtype=int32)
    """
    aval = _aval(x)
    axis = _axis("slice_in_dim", axis, aval.ndim, FunctxIndexError)
    n = aval.shape[axis]
    start = 0 if start_index is None else _int("slice_in_dim", "start_index", start_index)
    limit = n if limit_index is None else _int("slice_in_dim", "limit_index", limit_index)
    start, limit = start + n if start < 0 else start, limit + n if limit < 0 else limit
    stride = _int("slice_in_dim", "stride", stride)
    if not 0 <= start <= limit <= n or stride < 1:
        raise FunctxTypeError(
            f"slice_in_dim: start {start_index}, limit {limit_index}, stride "
            f"{stride} do not fit axis {axis} of {aval.str_short()} (need "
            f"0 <= start <= limit <= {n} and stride >= 1){_loc()}"
        )
    starts = [0] * aval.ndim
    limits = list(aval.shape)
    strides = [1] * aval.ndim
    starts[axis], limits[axis], strides[axis] = start, limit, stride
    return slice(x, starts, limits, strides)


def index_in_dim(x, index, axis=0, keepdims=True):
    """The slice at ``index`` along ``axis`` (``jax.lax.index_in_dim``).

    Arguments:
      x: an array.
      index: a Python int (negative counts from the end); out of range is a
        FunctxIndexError.
      axis: the axis to index.
      keepdims: keep ``axis`` with size 1 (default True).
    Returns:
      An array of ``x``'s dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.index_in_dim(np.int32([[1, 2], [3, 4]]), -1, keepdims=False)
      Array([3, 4], dtype=int32)
    """
    aval = _aval(x)
    axis = _axis("index_in_dim", axis, aval.ndim, FunctxIndexError)
    n = aval.shape[axis]
    i = _int("index_in_dim", "index", index)
    if not -n <= i < n:
        raise FunctxIndexError(
            f"index_in_dim: index {i} is out of bounds for axis {axis} with size {n}{_loc()}"
        )
    index = i % n
    out = slice_in_dim(x, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def _index_scalar(i):
    if is_python_scalar(i) or isinstance(i, (np.integer, np.ndarray)):
        return Array.from_value(np.asarray(i, np.int32))
    return i


def _index_list(op, starts):
    """The start indices as a list: a sequence of ints or integer scalars (arrays, tracers)."""
    if (
        isinstance(starts, (str, bytes))
        or not hasattr(starts, "__iter__")
        or (hasattr(starts, "ndim") and starts.ndim == 0)
    ):
        raise FunctxTypeError(
            f"{op}: start_indices must be a sequence of integer scalars, got {starts!r:.60}{_loc()}"
        )
    out = list(starts)
    for i in out:
        if isinstance(i, (bool, np.bool_)) or not (
            isinstance(i, (int, np.integer))
            or (hasattr(i, "dtype") and np.ndim(i) == 0 and _aval(i).dtype in dtypes.INTEGERS)
        ):
            raise FunctxTypeError(
                f"{op}: start indices must be integer scalars, got {i!r:.60}{_loc()}"
            )
    return out


def _wrap_negative(starts, shape):
    """JAX wraps negative start indices once (i + size) before clamping them into range."""
    out = []
    for i, d in zip(starts, shape):
        if isinstance(i, (int, np.integer)):
            # clamped into the array anyway (JAX's semantics): clamp first so that a huge Python
            # int cannot overflow the index dtype
            i = builtins.min(builtins.max(int(i) + d if i < 0 else int(i), 0), d)
            out.append(_index_scalar(i))
            continue
        i = _index_scalar(i)
        a = _aval(i)
        if a.dtype in dtypes.SIGNED:
            below = P.lt_p.bind(*_binary_operands(i, 0))
            i = select(below, P.add_p.bind(i, np.asarray(d, a.dtype)[()]), i)
        out.append(i)
    return out


def dynamic_slice(x, start_indices, slice_sizes):
    """The window of ``slice_sizes`` at (traced) ``start_indices`` (``jax.lax.dynamic_slice``).

    Arguments:
      x: an array.
      start_indices: one integer scalar (int or array) per axis; a negative start
        wraps once, then the window is clamped into the array, as in JAX.
      slice_sizes: the window's static shape.
    Returns:
      An array of ``slice_sizes`` and ``x``'s dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.dynamic_slice(np.arange(6, dtype=np.int32), (np.int32(4),), (3,))
      Array([3, 4, 5], dtype=int32)
    """
    start_indices = _wrap_negative(_index_list("dynamic_slice", start_indices), _aval(x).shape)
    return P.dynamic_slice_p.bind(
        x, *start_indices, slice_sizes=_sizes("dynamic_slice", "slice_sizes", slice_sizes)
    )


def dynamic_update_slice(x, update, start_indices):
    """``x`` with ``update`` written at (traced) ``start_indices``
    (``jax.lax.dynamic_update_slice``).

    Arguments:
      x: an array.
      update: an array of ``x``'s dtype and rank that fits in ``x``.
      start_indices: one integer scalar per axis (clamped so ``update`` fits, as in JAX).
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.dynamic_update_slice(np.zeros(5, np.float32), np.float32([1, 2]), (4,))
      Array([0., 0., 0., 1., 2.], dtype=float32)
    """
    start_indices = _wrap_negative(
        _index_list("dynamic_update_slice", start_indices), _aval(x).shape
    )
    return P.dynamic_update_slice_p.bind(x, update, *start_indices)


def dynamic_slice_in_dim(x, start_index, slice_size, axis=0):
    """``dynamic_slice`` along one axis (``jax.lax.dynamic_slice_in_dim``).

    Arguments:
      x: an array.
      start_index: an integer scalar (int or array).
      slice_size: the static size of the window.
      axis: the axis to slice.
    Returns:
      An array of ``x``'s dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.dynamic_slice_in_dim(np.int32([[1, 2, 3], [4, 5, 6]]), 1, 2, axis=1)
      Array([[2, 3],
             [5, 6]], dtype=int32)
    """
    aval = _aval(x)
    axis = _axis("dynamic_slice_in_dim", axis, aval.ndim, FunctxIndexError)
    starts = [0] * aval.ndim
    starts[axis] = start_index
    sizes = list(aval.shape)
    sizes[axis] = slice_size
    return dynamic_slice(x, starts, sizes)


def dynamic_index_in_dim(x, index, axis=0, keepdims=True):
    """The slice at a (traced) ``index`` along ``axis`` (``jax.lax.dynamic_index_in_dim``).

    Arguments:
      x: an array.
      index: an integer scalar (clamped into range, as in JAX).
      axis: the axis to index.
      keepdims: keep ``axis`` with size 1 (default True).
    Returns:
      An array of ``x``'s dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.dynamic_index_in_dim(np.int32([[1, 2], [3, 4]]), np.int32(1), keepdims=False)
      Array([3, 4], dtype=int32)
    """
    axis = _axis("dynamic_index_in_dim", axis, _aval(x).ndim, FunctxIndexError)
    out = dynamic_slice_in_dim(x, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(x, update, start_index, axis):
    """``dynamic_update_slice`` along one axis (``jax.lax.dynamic_update_slice_in_dim``).

    Arguments:
      x: an array.
      update: an array of ``x``'s dtype and rank.
      start_index: an integer scalar.
      axis: the axis where ``start_index`` applies (the others start at 0).
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.dynamic_update_slice_in_dim(np.zeros((2, 3), np.int32), np.int32([[7], [8]]), 2, 1)
      Array([[0, 0, 7],
             [0, 0, 8]], dtype=int32)
    """
    aval = _aval(x)
    axis = _axis("dynamic_update_slice_in_dim", axis, aval.ndim, FunctxIndexError)
    starts = [0] * aval.ndim
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts)


def concatenate(operands, dimension: int):
    """Join ``operands`` along ``dimension`` (``jax.lax.concatenate``).

    Arguments:
      operands: a non-empty sequence of arrays of one dtype and equal shapes off ``dimension``.
      dimension: the axis to join along.
    Returns:
      An array of the operands' dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.concatenate([np.int32([1, 2]), np.int32([3])], 0)
      Array([1, 2, 3], dtype=int32)
    """
    operands = list(operands)
    dimension = _int("concatenate", "dimension", dimension)
    if not operands:
        raise FunctxValueError(f"concatenate needs a non-empty sequence of arrays{_loc()}")
    if len(operands) == 1 and _is_array(operands[0]):
        nd = _aval(operands[0]).ndim
        if not 0 <= dimension < nd:
            raise FunctxTypeError(
                f"concatenate: dimension {dimension} is out of bounds for an "
                f"array of rank {nd}{_loc()}"
            )
        return operands[0]
    return P.concatenate_p.bind(*operands, dimension=dimension)


def pad(x, padding_value, padding_config):
    """Pad ``x`` with ``padding_value`` at the edges and between elements (``jax.lax.pad``).

    Arguments:
      x: an array.
      padding_value: a scalar of ``x``'s dtype (a Python scalar takes it).
      padding_config: one ``(low, high, interior)`` triple per axis; negative low/high crop.
    Returns:
      An array of ``x``'s dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.pad(np.int32([1, 2, 3]), 0, [(1, 2, 1)])
      Array([0, 1, 0, 2, 0, 3, 0, 0], dtype=int32)
    """
    try:
        triples = [tuple(t) for t in padding_config]
    except TypeError:
        triples = None
    if triples is None or any(len(t) != 3 for t in triples):
        raise FunctxTypeError(
            f"pad: padding_config must be a sequence of (low, high, interior) "
            f"triples, one per axis, got {padding_config!r}{_loc()}"
        )
    padding_config = tuple(_ints("pad", "padding_config", t) for t in triples)
    if is_python_scalar(padding_value):
        padding_value = _scalar_like(padding_value, x)
    return P.pad_p.bind(x, padding_value, padding_config=padding_config)


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value`` (``jax.lax.full``).

    Arguments:
      shape: the result's shape (an int or a sequence).
      fill_value: a scalar.
      dtype: the result's dtype (default: the fill value's).
    Returns:
      An array of ``shape``.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.full((2, 2), 7, np.float32)
      Array([[7., 7.],
             [7., 7.]], dtype=float32)
    """
    shape = _sizes("full", "shape", shape if isinstance(shape, (tuple, list)) else (shape,))
    if dtype is not None:
        v = convert_element_type(fill_value, dtype)
    elif is_python_scalar(fill_value):
        v = fill_value
    else:
        v = fill_value
    return broadcast_in_dim(v, shape, ())


def full_like(x, fill_value, dtype=None, shape=None):
    """An array like ``x`` filled with ``fill_value`` (``jax.lax.full_like``).

    Arguments:
      x: an array giving the default shape and dtype.
      fill_value: a scalar.
      dtype: the result's dtype (default ``x``'s).
      shape: the result's shape (default ``x``'s).
    Returns:
      An array.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.full_like(np.int32([1, 2, 3]), 5)
      Array([5, 5, 5], dtype=int32)
    """
    aval = _aval(x)
    return full(
        aval.shape if shape is None else shape, fill_value, aval.dtype if dtype is None else dtype
    )


def zeros_like_array(x):
    """Zeros of ``x``'s shape and dtype, ``jnp.zeros_like(x)`` (JAX 0.10.2's ``jax.lax`` no longer
    exports ``zeros_like_array``; functx keeps the name).

    Arguments:
      x: an array.
    Returns:
      An array of zeros.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.zeros_like_array(np.float32([1.5, 2.5]))
      Array([0., 0.], dtype=float32)
    """
    return full_like(x, 0)


# --- contraction ---------------------------------------------------------------------------------
class Precision(enum.Enum):
    """The precision of a matrix product (``jax.lax.Precision``), for ``precision=`` of
    ``dot_general``, ``dot``, ``functx.numpy.matmul``, ...

    On a GPU, float32 products take TF32 inputs unless it is HIGHEST; the CPU always computes in
    float32. Strings work too: "default", "high", "highest", "bfloat16", "tensorfloat32", "float32".

    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.dot(np.float32([1, 2]), np.float32([3, 4]), precision=lax.Precision.HIGHEST)
      Array(11., dtype=float32)
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2


class DotAlgorithm(NamedTuple):
    """How a matrix product computes (``jax.lax.DotAlgorithm``), for ``precision=``: the dtypes
    the operands are rounded to, the dtype the products are summed in, and JAX's fields for
    algorithms that split operands into several parts.

    functx rounds the operands to ``lhs_precision_type``/``rhs_precision_type``, multiplies them
    summing in ``accumulation_type``, and returns the product's usual dtype (the operands', or
    ``preferred_element_type``). More than one component or operation (an emulation of higher
    precision) computes at the accumulation type's full precision; ``allow_imprecise_accumulation``
    changes nothing.

    Arguments:
      lhs_precision_type, rhs_precision_type: the dtypes the operands are rounded to.
      accumulation_type: the dtype of the sums.
      lhs_component_count, rhs_component_count, num_primitive_operations: JAX's counts (>= 1).
      allow_imprecise_accumulation: JAX's flag.
    Returns:
      A ``DotAlgorithm`` (a named tuple).
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> alg = lax.DotAlgorithm(np.float16, np.float16, np.float32)
      >>> lax.dot(np.float32([1, 2, 3]), np.float32([4, 5, 6]), precision=alg)
      Array(32., dtype=float32)
    """

    lhs_precision_type: object
    rhs_precision_type: object
    accumulation_type: object
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


_F8 = tuple(
    np.dtype(getattr(dtypes, n))
    for n in "float8_e4m3b11fnuz float8_e4m3fn float8_e4m3fnuz float8_e5m2 float8_e5m2fnuz "
    "float8_e3m4 float8_e4m3 float8_e8m0fnu".split()
    if hasattr(dtypes, n)
)
_F8_OUT = "float8_e4m3fn float8_e5m2 float8_e5m2fnuz float8_e4m3fnuz float8_e4m3b11fnuz".split()
_F16, _BF16, _F32, _F64 = (np.dtype(np.float16), np.dtype(dtypes.bfloat16), np.dtype(np.float32),
                           np.dtype(np.float64))  # fmt: skip

# What each DotAlgorithmPreset names: (JAX's supported operand storage types, or None for any;
# JAX's accumulation type, or None for the output's; the type functx rounds the operands to, or
# None for their own (the TF32 rows round to TF32: 8 exponent, 10 mantissa bits); whether the
# operands must be float8). The _X3/_X6/_X9 rows emulate float32 and compute in float32.
_PRESETS = {
    "DEFAULT": (None, None, None, False),
    "ANY_F8_ANY_F8_F32": (None, _F32, None, True),
    "ANY_F8_ANY_F8_F32_FAST_ACCUM": (None, _F32, None, True),
    "ANY_F8_ANY_F8_ANY": (None, None, None, True),
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM": (None, None, None, True),
    "F16_F16_F16": ((_F16,), _F16, _F16, False),
    "F16_F16_F32": ((_F16,), _F32, _F16, False),
    "BF16_BF16_BF16": ((_BF16, _F32), _BF16, _BF16, False),
    "BF16_BF16_F32": ((_BF16, _F32), _F32, _BF16, False),
    "BF16_BF16_F32_X3": ((_F32,), _F32, _F32, False),
    "BF16_BF16_F32_X6": ((_F32,), _F32, _F32, False),
    "BF16_BF16_F32_X9": ((_F32,), _F32, _F32, False),
    "TF32_TF32_F32": ((_F32,), _F32, "tf32", False),
    "TF32_TF32_F32_X3": ((_F32,), _F32, _F32, False),
    "F32_F32_F32": ((_F32,), _F32, _F32, False),
    "F64_F64_F64": ((_F64,), _F64, _F64, False),
}


class DotAlgorithmPreset(enum.Enum):
    """The named product algorithms (``jax.lax.DotAlgorithmPreset``), for ``precision=`` of
    ``dot_general``, ``dot``, ``functx.numpy.matmul``, ``einsum``, ... (the member or its name).
    A name reads ``LHS_RHS_ACCUMULATION``.

    What functx computes, on the CPU and the GPU alike: the operands rounded to the preset's
    input type (bfloat16, float16, TF32 by ``reduce_precision``, float32 or float64), products
    summed in its accumulation type, the result in the product's usual dtype (the operands', or
    ``preferred_element_type``). ``DEFAULT`` is a plain product; ``_X3``/``_X6``/``_X9`` (JAX's
    emulations of float32 from several bfloat16 or TF32 products) compute in float32; ``ANY_F8``
    presets need float8 operands (ValueError otherwise, as JAX) and sum in float32 (``_ANY``:
    in the output's dtype); ``FAST_ACCUM`` changes nothing.

    Differences from JAX: JAX's CPU backend refuses the F8, ``F16_F16_F32``, ``BF16_BF16_BF16``,
    ``BF16_BF16_F32_X9`` and TF32 presets (ValueError) and computes ``BF16_BF16_F32`` of float32
    operands in float32; functx computes every preset as above (the rounding JAX's GPU backend
    does).

    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> x = np.float32([1.0 + 2.0**-12, 1.0])
      >>> print(lax.dot(x, x, precision="F32_F32_F32"), lax.dot(x, x, precision="BF16_BF16_F32"))
      2.0004883 2.0
    """

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def supported_lhs_types(self):
        """The operand dtypes used as they are (None: any); others are converted to the first."""
        return _PRESETS[self.name][0]

    @property
    def supported_rhs_types(self):
        return self.supported_lhs_types

    @property
    def accumulation_type(self):
        """The dtype the products are summed in (None: the output's)."""
        return _PRESETS[self.name][1]

    def supported_output_types(self, lhs_dtype, rhs_dtype):
        """The output dtypes the preset gives without a conversion (None: any)."""
        acc = self.accumulation_type
        if self.name.startswith("ANY_F8_ANY_F8_F32"):
            return (_F32, _F16, _BF16, *(np.dtype(getattr(dtypes, n)) for n in _F8_OUT))
        both = np.promote_types(np.dtype(lhs_dtype), np.dtype(rhs_dtype))
        if self.name in ("F16_F16_F32", "BF16_BF16_F32") and both == _PRESETS[self.name][2]:
            return (_F32, both)
        return None if acc is None else (acc,)


def _algorithm_dot(lhs, rhs, dn, algorithm, out_dtype):
    """``dot_general`` by a ``DotAlgorithm`` or a ``DotAlgorithmPreset`` (see their docstrings):
    the operands rounded, the product summed in the accumulation type, the result in
    ``out_dtype``; a composite of conversions and one ``dot_general``, so every transform works."""
    ld, rd = _aval(lhs).dtype, _aval(rhs).dtype
    if isinstance(algorithm, DotAlgorithm):
        lt, rt, acc = (
            dtypes.canonicalize(algorithm.lhs_precision_type),
            dtypes.canonicalize(algorithm.rhs_precision_type),
            dtypes.canonicalize(algorithm.accumulation_type),
        )
    else:
        _, acc, rounding, f8 = _PRESETS[algorithm.name]
        if f8 and (ld not in _F8 or rd not in _F8):
            raise FunctxValueError(
                f"dot_general: the dot algorithm '{algorithm}' needs float8 operands, got {ld} "
                f"and {rd}{_loc()}"
            )
        lt = rt = dtypes.canonicalize(rounding) if rounding not in (None, "tf32") else None
        acc = dtypes.canonicalize(acc) if acc is not None else out_dtype
        if rounding == "tf32":
            lhs, rhs = (reduce_precision(_as_dtype(v, _F32), 8, 10) for v in (lhs, rhs))
    if lt is not None:
        lhs, rhs = _as_dtype(lhs, lt), _as_dtype(rhs, rt)
    pet = None if acc == _aval(lhs).dtype else acc
    out = P.dot_general_p.bind(
        lhs, rhs, dimension_numbers=dn, preferred_element_type=pet, precision="float32"
    )
    return _as_dtype(out, out_dtype)


def _as_dtype(x, dtype):
    return x if _aval(x).dtype == dtype else convert_element_type(x, dtype)


def canonicalize_precision(precision):
    """The float32 product mode a ``precision=`` argument asks for (functx's counterpart of JAX's
    internal ``canonicalize_precision``, which ``jax.lax`` does not export in JAX 0.10.2).

    functx returns the mode string, where JAX's returns a ``Precision`` pair.

    Arguments:
      precision: None, a ``Precision``, one of its strings, or a pair of them (one per operand;
        the higher one counts).
    Returns:
      None (``functx.default_matmul_precision`` decides), ``"tensorfloat32"`` or ``"float32"``;
      a ``DotAlgorithm`` or ``DotAlgorithmPreset`` (also given by its name) as it is.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.canonicalize_precision(lax.Precision.HIGHEST)
      'float32'
    """
    if precision is None:
        return None
    if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision]
    if isinstance(precision, (tuple, list)):
        if len(precision) != 2:
            raise ValueError(
                f"dot_general: precision must be one value or a pair, got {precision!r}"
            )
        modes = [canonicalize_precision(p) for p in precision]
        if "float32" in modes:
            return "float32"
        return None if modes == [None, None] else "tensorfloat32"
    if isinstance(precision, Precision):
        precision = precision.name
    return _check_precision(precision, "dot_general: precision")


def _dot_rank(dt):
    """XLA's order of element types for a product of mixed operands (JAX's dot_general dtype
    rule): complex, then exponent range, mantissa, bit width, signedness."""
    cplx = dtypes.is_complex(dt)
    if dtypes.is_float(dt) or cplx:
        fi = dtypes.finfo(dt)
        return (cplx, int(fi.maxexp), int(fi.nmant), int(fi.bits), True)
    bits = 1 if dt == dtypes.bool_ else dtypes.iinfo(dt).bits
    return (False, -1, -1, bits, np.dtype(dt).kind != "u")


def _dot_operands(lhs, rhs):
    """Operands of different dtypes meet in the more precise one, as JAX's ``dot_general``
    computes them (``f32 @ i32`` is f32); two of equal rank but different types are a
    TypeError, as in JAX."""
    ld, rd = _aval(lhs).dtype, _aval(rhs).dtype
    if ld == rd:
        return lhs, rhs
    lr, rr = _dot_rank(ld), _dot_rank(rd)
    if lr == rr:
        raise FunctxTypeError(f"dot_general argument type error: {ld}, {rd}{_loc()}")
    if lr > rr:
        return lhs, convert_element_type(rhs, ld)
    return convert_element_type(lhs, rd), rhs


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None):
    """The general tensor contraction (``jax.lax.dot_general``).

    Arguments:
      lhs, rhs: arrays; mixed dtypes meet in the more precise one, as in JAX.
      dimension_numbers: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``,
        tuples of axes.
      precision: None, a ``Precision`` or its string, a pair (see ``Precision``), a
        ``DotAlgorithmPreset`` (or its name) or a ``DotAlgorithm``.
      preferred_element_type: the result's dtype (default: the operands').
    Returns:
      An array of shape ``batch + lhs free + rhs free``.

    Differences from JAX: a product at full float32 precision prints as JAX's ``precision=(HIGHEST,
    HIGHEST)``; functx keeps one mode per product, so ``DEFAULT``, ``HIGH`` and ``bfloat16`` print
    as ``tensorfloat32``.

    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> a = np.float32([[[1, 2], [3, 4]]])
      >>> lax.dot_general(a, a, (((2,), (1,)), ((0,), (0,))))
      Array([[[ 7., 10.],
              [15., 22.]]], dtype=float32)
    """
    lhs, rhs = _dot_operands(lhs, rhs)
    try:
        (lc, rc), (lb, rb) = dimension_numbers
    except (TypeError, ValueError):
        raise FunctxTypeError(
            f"dot_general: dimension_numbers must be ((lhs_contracting, "
            f"rhs_contracting), (lhs_batch, rhs_batch)), got "
            f"{dimension_numbers!r:.80}{_loc()}"
        ) from None
    what = "dimension_numbers"
    dn = (
        (_ints("dot_general", what, lc), _ints("dot_general", what, rc)),
        (_ints("dot_general", what, lb), _ints("dot_general", what, rb)),
    )
    pet = None if preferred_element_type is None else dtypes.canonicalize(preferred_element_type)
    if pet is not None and pet == _aval(lhs).dtype:
        pet = None
    precision = canonicalize_precision(precision)
    if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        if precision is not DotAlgorithmPreset.DEFAULT:
            out_dtype = _aval(lhs).dtype if pet is None else pet
            return _algorithm_dot(lhs, rhs, dn, precision, out_dtype)
        precision = None
    if precision is None:  # (kept out of the Jaxpr, like JAX's precision=None)
        return P.dot_general_p.bind(lhs, rhs, dimension_numbers=dn, preferred_element_type=pet)
    return P.dot_general_p.bind(
        lhs, rhs, dimension_numbers=dn, preferred_element_type=pet, precision=precision
    )


def dot(lhs, rhs, precision=None, preferred_element_type=None):
    """Vector/matrix product of ``lhs`` and ``rhs`` of rank 1 or 2 (``jax.lax.dot``).

    Arguments:
      lhs, rhs: arrays of rank 1 or 2; the last axis of ``lhs`` contracts with the first of ``rhs``.
      precision: None, a ``Precision`` or its string, or a pair.
      preferred_element_type: the result's dtype (default: the operands').
    Returns:
      An array.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.dot(np.float32([[1, 2], [3, 4]]), np.float32([1, 1]))
      Array([3., 7.], dtype=float32)
    """
    la, ra = _aval(lhs), _aval(rhs)
    if la.ndim not in (1, 2) or ra.ndim not in (1, 2):
        raise TypeError(
            f"lax.dot takes rank 1 or 2 operands, got {la.str_short()} and {ra.str_short()}"
        )
    return dot_general(
        lhs,
        rhs,
        (((la.ndim - 1,), (0,)), ((), ())),
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


# --- bit shifts (composites: integer multiply/divide by powers of two; no shift primitive) -------


class _Elementwise:
    """The plain elementwise builders by name (they are made from the table above, so linters
    do not see them as this module's names)."""

    def __getattr__(self, name):
        return globals()[name]


_ew = _Elementwise()


def _shift_operands(op, x, y):
    """The two operands of a shift as arrays of one integer dtype (a Python int takes the other
    operand's dtype, as in JAX's lax)."""
    if is_python_scalar(x) and is_python_scalar(y):
        x, y = np.asarray(x, dtypes.default_int()), np.asarray(y, dtypes.default_int())
    elif is_python_scalar(x):
        x = np.asarray(x, _aval(y).dtype)
    elif is_python_scalar(y):
        y = np.asarray(y, _aval(x).dtype)
    dx, dy = _aval(x).dtype, _aval(y).dtype
    if dx != dy:
        raise FunctxTypeError(
            f"{op} requires arguments to have the same dtypes, got {dx}, {dy}.{_loc()}"
        )
    if np.dtype(dx) not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"{op} does not accept dtype {dx}. Accepted dtypes are subtypes of integer.{_loc()}"
        )
    return x, y, np.dtype(dx), dtypes.iinfo(dx).bits


def _shift_pow2(n, dtype, bits):
    """``2 ** n`` for ``0 <= n < bits`` by binary powering (the top power of a signed dtype wraps
    to its minimum, which is the bit pattern a shift gives)."""
    out = full_like(n, 1)
    for k in range(bits.bit_length() - 1):
        bit = _ew.ne(_ew.bitwise_and(n, np.asarray(1 << k, dtype)), np.asarray(0, dtype))
        out = select_n(bit, out, _ew.mul(out, np.asarray(1 << (1 << k), dtype)))
    return out


def _shift_valid(y, dtype, bits):
    if bits > dtypes.iinfo(dtype).max:  # int2: every non-negative amount is below 2
        valid = _ew.eq(y, y)
    else:
        valid = _ew.lt(y, np.asarray(bits, dtype))
    if np.dtype(dtype) in dtypes.SIGNED:
        valid = _ew.bitwise_and(valid, _ew.ge(y, np.asarray(0, dtype)))
    return valid


def shift_left(x, y):
    """``x << y`` elementwise (XLA's semantics: a shift amount outside ``[0, bits)`` gives 0).

    Built from integer multiplication by ``2 ** y`` (no shift primitive).

    Arguments:
      x, y: integer arrays of the same dtype and shape (a Python int takes the other's dtype).
    Returns:
      An array of ``x``'s dtype.

    Example:
      >>> import functx, numpy as np
      >>> x, y = np.array([1, 3, -1], np.int8), np.array([2, 7, 9], np.int8)
      >>> print(functx.lax.shift_left(x, y))
      [   4 -128    0]
    """
    x, y, dt, bits = _shift_operands("shift_left", x, y)
    valid = _shift_valid(y, dt, bits)
    p = _shift_pow2(select_n(valid, full_like(y, 0), y), dt, bits)
    return select_n(valid, full_like(x, 0), _ew.mul(x, p))


def _floor_div_pow2(x, p):
    q, r = _ew.div(x, p), _ew.rem(x, p)
    return select_n(_ew.lt(r, full_like(r, 0)), q, _ew.sub(q, full_like(q, 1)))


def _logical_right(x, y, dt, bits):
    valid = _shift_valid(y, dt, bits)
    if dt in dtypes.UNSIGNED:
        p = _shift_pow2(select_n(valid, full_like(y, 0), y), dt, bits)
        return select_n(valid, full_like(x, 0), _ew.div(x, p))
    # signed: one arithmetic step, the sign bit cleared, then the rest on a non-negative value
    pos = _ew.bitwise_and(valid, _ew.gt(y, full_like(y, 0)))
    n1 = select_n(pos, full_like(y, 0), _ew.sub(y, full_like(y, 1)))
    half = _ew.bitwise_and(
        _floor_div_pow2(x, full_like(x, 2)), np.asarray(dtypes.iinfo(dt).max, dt)
    )
    shifted = _ew.div(half, _shift_pow2(n1, dt, bits))
    return select_n(valid, full_like(x, 0), select_n(pos, x, shifted))


def population_count(x):
    """The number of set bits of each element (``lax.population_count``), of ``x``'s dtype.

    A composite: the bits are counted in pairs, nibbles and bytes with masks and logical shifts on
    the unsigned type of the same width (so no step overflows a signed type).

    Arguments:
      x: an integer array (not bool).
    Returns:
      An array of ``x``'s dtype and shape.

    Example:
      >>> import functx, numpy as np
      >>> print(functx.lax.population_count(np.array([0, 7, -1, 256], np.int32)))
      [ 0  3 32  1]
    """
    if is_python_scalar(x):
        x = np.asarray(x, dtypes.default_int())
    dt = np.dtype(_aval(x).dtype)
    if dt not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"population_count does not accept dtype {dt}. Accepted dtypes are subtypes of "
            f"integer.{_loc()}"
        )
    bits = dt.itemsize * 8
    udt = np.dtype(f"uint{bits}")
    u = convert_element_type(x, udt) if dt != udt else x

    def mask(byte):
        return full_like(u, int.from_bytes(bytes([byte]) * (bits // 8), "little"))

    def srl(v, n):
        return shift_right_logical(v, full_like(v, n))

    u = _ew.add(_ew.bitwise_and(u, mask(0x55)), _ew.bitwise_and(srl(u, 1), mask(0x55)))
    u = _ew.add(_ew.bitwise_and(u, mask(0x33)), _ew.bitwise_and(srl(u, 2), mask(0x33)))
    u = _ew.bitwise_and(_ew.add(u, srl(u, 4)), mask(0x0F))
    shift = 8
    while shift < bits:
        u = _ew.add(u, srl(u, shift))
        shift *= 2
    u = _ew.bitwise_and(u, full_like(u, 0xFF if bits > 8 else 0x0F))
    if dt == dtypes.int2:  # (XLA counts int2's own two bits, int4's sign-extended eight)
        u = _ew.sub(
            u, _ew.mul(full_like(u, 6), convert_element_type(_ew.lt(x, full_like(x, 0)), udt))
        )
    return convert_element_type(u, dt) if dt != udt else u


def shift_right_logical(x, y):
    """``x >> y`` elementwise filling with zero bits (XLA's semantics: a shift amount outside
    ``[0, bits)`` gives 0). Built from integer division by powers of two (no shift primitive).

    Arguments:
      x, y: integer arrays of the same dtype and shape (a Python int takes the other's dtype).
    Returns:
      An array of ``x``'s dtype.

    Example:
      >>> import functx, numpy as np
      >>> x, y = np.array([-1, 64], np.int8), np.array([1, 3], np.int8)
      >>> print(functx.lax.shift_right_logical(x, y))
      [127   8]
    """
    x, y, dt, bits = _shift_operands("shift_right_logical", x, y)
    return _logical_right(x, y, dt, bits)


def shift_right_arithmetic(x, y):
    """``x >> y`` elementwise filling with copies of the sign bit (XLA's semantics: a shift
    amount outside ``[0, bits)`` fills every bit with the sign bit). Built from integer division
    by powers of two (no shift primitive); for unsigned dtypes the top bit is the "sign".

    Arguments:
      x, y: integer arrays of the same dtype and shape (a Python int takes the other's dtype).
    Returns:
      An array of ``x``'s dtype.

    Example:
      >>> import functx, numpy as np
      >>> x, y = np.array([-7, 7], np.int8), np.array([1, 9], np.int8)
      >>> print(functx.lax.shift_right_arithmetic(x, y))
      [-4  0]
    """
    x, y, dt, bits = _shift_operands("shift_right_arithmetic", x, y)
    if dt in dtypes.UNSIGNED:
        logical = _logical_right(x, y, dt, bits)
        ones = full_like(x, dtypes.iinfo(dt).max)
        fill = _ew.bitwise_not(_logical_right(ones, y, dt, bits))
        top = _ew.ge(x, np.asarray(1 << (bits - 1), dt))
        return select_n(top, logical, _ew.bitwise_or(logical, fill))
    big = _ew.bitwise_not(_shift_valid(y, dt, bits - 1))
    p = _shift_pow2(select_n(big, y, full_like(y, 0)), dt, bits)
    sign = select_n(_ew.lt(x, full_like(x, 0)), full_like(x, 0), full_like(x, -1))
    return select_n(big, _floor_div_pow2(x, p), sign)


# --- jax.ops: segment reductions (composites over the point scatter primitives) ------------------
_SEGMENT_PRIMS = {
    "segment_sum": ("scatter_add", "reduce_sum"),
    "segment_prod": ("scatter_mul", "reduce_prod"),
    "segment_max": ("scatter_max", "reduce_max"),
    "segment_min": ("scatter_min", "reduce_min"),
}


def _segment_mode(mode):
    """The point primitive's mode for a GatherScatterMode (or its name): only CLIP clamps."""
    name = getattr(mode, "name", mode)
    if name in ("clip", "CLIP"):
        return "clip"
    if name in (None, "fill", "drop", "promise_in_bounds", "one_hot") or name in (
        "FILL_OR_DROP",
        "PROMISE_IN_BOUNDS",
        "ONE_HOT",
    ):
        return "drop"
    raise FunctxValueError(f'Unknown gather mode "{mode}"{_loc()}')


def _segment_identity(name, dtype):
    if name == "segment_sum":
        return 0
    if name == "segment_prod":
        return 1
    big = name == "segment_min"
    if dtype == dtypes.bool_:
        return big
    if dtype in dtypes.INTEGERS:
        info = dtypes.iinfo(dtype)
        return int(info.max if big else info.min)
    return np.inf if big else -np.inf


def _segment(name, data, segment_ids, num_segments, bucket_size, mode):
    for pos, v in enumerate((data, segment_ids)):
        if isinstance(v, (list, tuple)):
            raise FunctxTypeError(
                f"{name} requires ndarray or scalar arguments, got {type(v)} at position {pos}."
                f"{_loc()}"
            )
    data = data if _is_array(data) else Array.from_value(np.asarray(data))
    ids = segment_ids if _is_array(segment_ids) else Array.from_value(np.asarray(segment_ids))
    da, ia = _aval(data), _aval(ids)
    scatter_name, reduce_name = _SEGMENT_PRIMS[name]
    if ia.dtype not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"{name}: segment_ids must be an integer array, got {ia.str_short()}{_loc()}"
        )
    if da.dtype == dtypes.bool_ and name in ("segment_sum", "segment_prod"):
        raise FunctxTypeError(f"{name} does not accept dtype bool{_loc()}")
    pmode = _segment_mode(mode)
    if num_segments is None:
        if isinstance(ids, Tracer):
            raise ConcretizationError(
                f"{name}: num_segments=None needs the values of the segment ids (their max + 1); "
                f"pass a static num_segments under jit and other transformations{_loc()}"
            )
        num_segments = int(np.max(np.asarray(ids))) + 1
    num_segments = _int(name, "num_segments", num_segments)
    if num_segments < 0:
        raise FunctxValueError(f"num_segments must be non-negative.{_loc()}")
    dtype = da.dtype
    if da.weak_type:
        data = convert_element_type(data, dtype)
    rest = da.shape[1:]
    want = ia.shape + rest
    if da.shape != want:  # data broadcasts (NumPy's rules) to the shape the ids select
        n = len(want) - da.ndim
        if n < 0 or any(d not in (1, w) for d, w in zip(da.shape, want[n:])):
            raise FunctxValueError(
                f"{name}: data {da.str_short()} does not broadcast to {list(want)}{_loc()}"
            )
        data = broadcast_in_dim(data, want, tuple(range(n, len(want))))
    prim = P.registry[scatter_name]
    ident = _segment_identity(name, dtype)
    if bucket_size is None:
        out = full((num_segments,) + rest, ident, dtype)
        return prim.bind(out, reshape(ids, ia.shape + (1,)), data, axes=(0,), mode=pmode)
    # Buckets of bucket_size consecutive ids reduce separately, then the buckets are reduced.
    bucket_size = _int(name, "bucket_size", bucket_size)
    size = builtins.max(int(np.prod(ia.shape)), 0)
    n_buckets = -(-size // bucket_size)
    low = np.asarray(-1 if ia.dtype in dtypes.SIGNED else 0, ia.dtype)[()]
    high = np.asarray(builtins.min(num_segments, int(dtypes.iinfo(ia.dtype).max)), ia.dtype)[()]
    seg = convert_element_type(clamp(low, ids, high), dtypes.int32)  # (keeps in/out of range)
    bucket = P.div_p.bind(
        broadcasted_iota(dtypes.int32, ia.shape, 0) if ia.ndim else full((), 0, dtypes.int32),
        full(ia.shape, bucket_size, dtypes.int32),
    )
    idx = concatenate(
        [reshape(bucket, ia.shape + (1,)), reshape(seg, ia.shape + (1,))], len(ia.shape)
    )
    out = full((n_buckets, num_segments) + rest, ident, dtype)
    out = prim.bind(out, idx, data, axes=(0, 1), mode=pmode)
    return P.registry[reduce_name].bind(out, axes=(0,))


def _segment_op(name, what, example, differences=""):
    """``jax.ops.<name>``: the segment reduction ``name`` (``_SEGMENT_PRIMS``) with JAX's
    signature, and its docstring (``what`` it computes, its ``example`` lines and any
    ``differences``)."""

    def op(
        data,
        segment_ids,
        num_segments=None,
        indices_are_sorted=False,
        unique_indices=False,
        bucket_size=None,
        mode=None,
    ):
        return _segment(name, data, segment_ids, num_segments, bucket_size, mode)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"""The {what} of ``data``'s rows within each segment (``jax.ops.{name}``).

    Row ``i`` of ``data`` (its leading axis) belongs to segment ``segment_ids[i]``; the result has
    one row per segment, and a segment without rows holds the {what}'s identity.

    Arguments:
        data: the values (for ``segment_ids`` of shape ``s``, shape ``s + rest`` or broadcastable
            to it).
        segment_ids: an integer array: the segment of each row, repeated and unsorted ids allowed.
        num_segments: the number of segments (the output's leading size). ``None``: the largest
            id plus one, which needs concrete ids (pass it under ``jit``).
        indices_are_sorted, unique_indices: promises about the ids (accepted; not needed here).
        bucket_size: reduce groups of this many consecutive rows separately, then the groups.
        mode: ids outside ``[0, num_segments)`` are dropped (``None``, ``"drop"``,
            ``"promise_in_bounds"``) or clamped into range (``"clip"``); a
            ``lax.GatherScatterMode`` works too.

    Returns:
        An array of ``data``'s dtype and shape ``(num_segments,) + rest``.
{differences}
    Example:
        >>> import functx.numpy as jnp
        >>> from functx import ops
        >>> data = jnp.array([1.0, 2.0, 3.0, 4.0, 5.0])
        >>> ids = jnp.array([0, 0, 2, 2, 2])
{example}
    """
    return op


segment_sum = _segment_op(
    "segment_sum",
    "sum",
    "        >>> print(ops.segment_sum(data, ids, num_segments=4))\n        [ 3.  0. 12.  0.]",
)
segment_prod = _segment_op(
    "segment_prod",
    "product",
    "        >>> print(ops.segment_prod(data, ids, num_segments=4))\n        [ 2.  1. 60.  1.]",
    differences=(
        "\n    Differences from JAX: differentiates with respect to ``data`` without"
        "\n    ``unique_indices=True`` (JAX raises NotImplementedError).\n"
    ),
)
segment_max = _segment_op(
    "segment_max",
    "maximum",
    "        >>> print(ops.segment_max(data, ids))\n        [  2. -inf   5.]",
)
segment_min = _segment_op(
    "segment_min",
    "minimum",
    "        >>> print(ops.segment_min(data, ids))\n        [ 1. inf  3.]",
)
