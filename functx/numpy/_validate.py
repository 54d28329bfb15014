"""Argument checks shared by ``functx.numpy``: axes, shapes, integer counts, option strings and
dtypes. Each raises a functx error naming the operation, the argument and the user's line, so
that nothing from NumPy or Python internals (``'float' object is not iterable``) escapes."""

from __future__ import annotations

import math
import operator

import numpy as np

from functx import dtypes
from functx.errors import (
    FunctxArgumentError,
    FunctxIndexError,
    FunctxOverflowError,
    FunctxTypeError,
    FunctxValueError,
)
from functx.source_info import where as _loc
from functx.tracing import Tracer

# The largest array functx can describe: its byte size must fit a signed 64-bit integer.
MAX_BYTES = 2**63 - 1


class AxisError(FunctxValueError, FunctxIndexError, FunctxTypeError):
    """An axis out of range or repeated. A ValueError as in JAX, an IndexError as NumPy's
    ``AxisError``, and a TypeError as functx raised it before (so existing handlers still work)."""


def _describe(x):
    if isinstance(x, Tracer):
        return f"a traced array {x.aval.str_short()}"
    return f"{x!r} of type {type(x).__name__}"


def integer(x, op, arg, *, minimum=None):
    """``x`` as a Python int: a Python or NumPy integer, or a concrete 0-d integer array (not a
    bool, float or string). ``minimum``: the smallest value allowed (a FunctxValueError below)."""
    if isinstance(x, Tracer):
        raise FunctxTypeError(
            f"{op}: {arg} must be a concrete integer, got {_describe(x)}"
            f"{_loc()}; mark it static (static_argnums)"
        )
    if isinstance(x, (bool, np.bool_)) or (
        hasattr(x, "dtype")
        and getattr(x, "ndim", None) == 0
        and np.dtype(x.dtype) not in dtypes.INTEGERS
    ):
        raise FunctxTypeError(f"{op}: {arg} must be an integer, got {_describe(x)}{_loc()}")
    try:
        v = operator.index(x)
    except TypeError:
        raise FunctxTypeError(
            f"{op}: {arg} must be an integer, got {_describe(x)}{_loc()}"
        ) from None
    if minimum is not None and v < minimum:
        raise FunctxValueError(f"{op}: {arg} must be >= {minimum}, got {v}{_loc()}")
    return v


def is_int_like(x):
    """A scalar meant as an integer count (an int, or a float/bool/0-d value that integer() will
    reject with a clear message), as opposed to a sequence."""
    return (
        not isinstance(x, (list, tuple)) and np.ndim(x) == 0
        if not isinstance(x, (str, bytes))
        else True
    )


def axis(ax, ndim, op, arg="axis"):
    """One axis in ``[-ndim, ndim)``, made non-negative."""
    a = integer(ax, op, arg)
    if not -ndim <= a < ndim:
        raise AxisError(f"{op}: {arg} {a} is out of bounds for an array of rank {ndim}{_loc()}")
    return a % ndim


def axis_seq(ax, op, arg="axis"):
    """``ax`` as a tuple of Python ints (an int, a tuple/list of ints or a 1-d NumPy integer
    array, as JAX takes for shapes, reps and axes), not yet range-checked."""
    if isinstance(ax, (tuple, list)) or (isinstance(ax, np.ndarray) and ax.ndim == 1):
        return tuple(integer(a, op, arg) for a in ax)
    return (integer(ax, op, arg),)


def axes(ax, ndim, op, arg="axis", *, sort=True):
    """None (every axis), an int, or a tuple/list of distinct ints in ``[-ndim, ndim)``: a tuple
    of non-negative axes (sorted unless ``sort=False``)."""
    if ax is None:
        return tuple(range(ndim))
    seq = axis_seq(ax, op, arg)
    out = [axis(a, ndim, op, arg) for a in seq]
    if len(set(out)) != len(out):
        raise AxisError(f"{op}: repeated {arg} in {ax}{_loc()}")
    return tuple(sorted(out)) if sort else tuple(out)


def shape(s, op, arg="shape", *, dtype=None):
    """An int or a sequence of ints, each >= 0, whose size (in bytes, with ``dtype``) fits:
    a tuple of Python ints."""
    try:
        if isinstance(s, (list, tuple)):
            dims = tuple(integer(d, op, f"{arg} entry") for d in s)
        elif isinstance(s, np.ndarray) and s.ndim == 1:
            dims = tuple(integer(d, op, f"{arg} entry") for d in s)
        else:
            dims = (integer(s, op, arg),)
    except FunctxTypeError as e:  # (JAX's first words, which its tests match)
        raise FunctxTypeError(
            f"Shapes must be 1D sequences of concrete values of integer type: {e}\nIf using "
            f"`jit`, try using `static_argnums` or applying `jit` to smaller subfunctions."
        ) from None
    if any(d < 0 for d in dims):
        raise FunctxArgumentError(f"{op}: {arg} {dims} has a negative dimension{_loc()}")
    check_size(dims, op, arg, dtype)
    return dims


def check_size(dims, op, arg="shape", dtype=None):
    """A FunctxOverflowError if an array of this shape (and dtype) cannot be described."""
    n = math.prod(dims)
    item = np.dtype(dtype).itemsize if dtype is not None else 8
    if n * item > MAX_BYTES or any(d > MAX_BYTES for d in dims):
        raise FunctxOverflowError(f"{op}: {arg} {tuple(dims)} is too large ({n} elements){_loc()}")


def choice(x, allowed, op, arg):
    """``x`` is one of the strings in ``allowed``."""
    if not isinstance(x, str) or x not in allowed:
        raise FunctxValueError(
            f"{op}: {arg} must be one of {', '.join(repr(a) for a in allowed)}, got {x!r}{_loc()}"
        )
    return x


def dtype(dt, op, arg="dtype", default=None):
    """A supported dtype the user asked for (``default`` when None), canonical for the
    ``jax_enable_x64`` mode (an explicit 64-bit one warns as JAX's does while it is off)."""
    if dt is None:
        return default
    try:
        return dtypes.check_user_dtype(dt, op)
    except (TypeError, ValueError) as e:
        raise FunctxTypeError(
            f"{op}: {arg} {dt!r} is not a supported dtype ({e}){_loc()}"
        ) from None


def number(x, op, arg):
    """A concrete real Python number (int, float or NumPy scalar, or a concrete 0-d array)."""
    if isinstance(x, Tracer):
        raise FunctxTypeError(
            f"{op}: {arg} must be a concrete number, got {_describe(x)}"
            f"{_loc()}; mark it static (static_argnums)"
        )
    if hasattr(x, "ndim") and hasattr(x, "item"):
        if x.ndim != 0:
            raise FunctxTypeError(f"{op}: {arg} must be a scalar, got {_describe(x)}{_loc()}")
        x = x.item()
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise FunctxTypeError(f"{op}: {arg} must be a real number, got {_describe(x)}{_loc()}")
    return x
