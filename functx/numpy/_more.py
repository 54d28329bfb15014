"""More of NumPy's API with JAX's semantics, as composites of ``functx.numpy``'s functions:
comparisons of whole arrays (``isclose``, ``allclose``, ``array_equal``), differences and
integrals (``diff``, ``ediff1d``, ``trapezoid``), ``cross``, ``select``, the bit shifts, the
inspection functions ``isscalar``/``iscomplexobj``, the NaN-ignoring reductions,
``frexp``/``ldexp``, ``gcd``/``lcm``, ``delete``/``insert``/``append``, ``piecewise``,
``interp``, histograms and
``bincount``, ``cov``/``corrcoef`` and index helpers.

Deviations from JAX: ``histogram``, ``bincount``,
``digitize`` and ``interp`` compare every value with every edge (quadratic, fine for the sizes
they are used at)."""

from __future__ import annotations

import builtins
import inspect
import math
import operator

import numpy as np

from functx import array as _array, dtypes, lax
from functx.errors import (
    ConcretizationError,
    FunctxTypeError,
    FunctxValueError,
)
from functx.numpy import _core as jnp
from functx.source_info import where as _loc
from functx.tracing import Tracer


def _arr(x):
    return x if jnp._is_array(x) else jnp.asarray(x)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise ``|a - b| <= atol + rtol * |b|`` (JAX's formula: equal values, infinities of
    one sign included, are close; a non-finite ``b`` is close only to itself).

    Arguments:
      a, b: arrays (broadcast together; integers are converted to float, as in JAX).
      rtol, atol: the relative and absolute tolerances (converted to the promoted dtype).
      equal_nan: whether NaN is close to NaN.
    Returns:
      A bool array of the broadcast shape.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.isclose(jnp.array([1.0, 1.1, jnp.inf]), jnp.array([1.0 + 1e-9, 1.0, jnp.inf])))
      [ True False  True]
    """
    a, b = jnp._promote_float("isclose", _arr(a), _arr(b))
    dt = jnp._aval(a).dtype
    rtol = jnp.asarray(np.asarray(rtol, dt)) if not jnp._is_array(rtol) else jnp.astype(rtol, dt)
    atol = jnp.asarray(np.asarray(atol, dt)) if not jnp._is_array(atol) else jnp.astype(atol, dt)
    in_range = jnp.abs(a - b) <= atol + rtol * jnp.abs(b)
    out = jnp.logical_or(a == b, jnp.logical_and(jnp.isfinite(b), in_range))
    if equal_nan:
        out = jnp.logical_or(out, jnp.logical_and(jnp.isnan(a), jnp.isnan(b)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of ``a`` is close to ``b`` (``all(isclose(...))``).

    Arguments:
      a, b: arrays (broadcast together).
      rtol, atol, equal_nan: as for ``isclose``.
    Returns:
      A bool scalar array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.allclose(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.0 + 1e-7])))
      True
    """
    return jnp.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
    """Whether two arrays have the same shape and elements (``False`` for different shapes).

    Arguments:
      a1, a2: arrays.
      equal_nan: whether NaN equals NaN.
    Returns:
      A bool scalar array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.array_equal(jnp.array([1, 2]), jnp.array([1.0, 2.0])))
      True
    """
    a1, a2 = _arr(a1), _arr(a2)
    if jnp._aval(a1).shape != jnp._aval(a2).shape:
        return jnp.asarray(False)
    eq = a1 == a2
    if equal_nan:
        eq = jnp.logical_or(eq, jnp.logical_and(jnp.isnan(a1), jnp.isnan(a2)))
    return jnp.all(eq)


def _static_int(v, what):
    if isinstance(v, Tracer):
        raise FunctxTypeError(f"{what} must be a concrete int, got a traced value{_loc()}")
    try:
        return operator.index(v)
    except TypeError:
        raise FunctxTypeError(f"{what} must be an int, got {v!r:.60}{_loc()}") from None


def _edge(arr, v, axis):
    v = _arr(v)
    if jnp._aval(v).ndim == 0:
        shape = list(jnp._aval(arr).shape)
        shape[axis] = 1
        v = jnp.broadcast_to(v, tuple(shape))
    return v


def diff(a, n=1, axis=-1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis`` (``a[1:] - a[:-1]``, repeated; ``!=`` for
    bools), after concatenating ``prepend`` and ``append`` (scalars broadcast to one slice).

    Arguments:
      a: an array of rank at least 1.
      n: the number of times to difference (a non-negative int; 0 returns ``a``).
      axis: the axis to difference along.
      prepend, append: values joined to ``a`` along ``axis`` first.
    Returns:
      An array whose ``axis`` is ``n`` shorter (plus the joined lengths).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.diff(jnp.array([1, 4, 9, 16]), n=2))
      [2 2]
    """
    arr = _arr(a)
    n = _static_int(n, "'n' argument of jnp.diff")
    axis = _static_int(axis, "'axis' argument of jnp.diff")
    if n == 0:
        return arr
    if n < 0:
        raise FunctxValueError(f"order must be non-negative but got {n}{_loc()}")
    nd = jnp._aval(arr).ndim
    if nd == 0:
        raise FunctxValueError(f"diff requires input that is at least one dimensional{_loc()}")
    axis = jnp._canon_axis(axis, nd)
    parts = []
    if prepend is not None:
        parts.append(_edge(arr, prepend, axis))
    parts.append(arr)
    if append is not None:
        parts.append(_edge(arr, append, axis))
    if len(parts) > 1:
        arr = jnp.concatenate(parts, axis)
    hi = tuple(slice(1, None) if i == axis else slice(None) for i in range(nd))
    lo = tuple(slice(None, -1) if i == axis else slice(None) for i in range(nd))
    for _ in range(n):
        if jnp._aval(arr).dtype == dtypes.bool_:
            arr = jnp.not_equal(arr[hi], arr[lo])
        else:
            arr = jnp.subtract(arr[hi], arr[lo])
    return arr


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of the flattened array, with ``to_begin``/``to_end`` (cast to its dtype)
    joined at the ends.

    Arguments:
      ary: an array (flattened).
      to_end, to_begin: values to append/prepend (flattened).
    Returns:
      A 1-D array of ``ary``'s dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.ediff1d(jnp.array([[1, 2], [4, 7]]), to_begin=0))
      [0 1 2 3]
    """
    arr = jnp.ravel(_arr(ary))
    dt = jnp._aval(arr).dtype
    result = lax.sub(arr[1:], arr[:-1])
    if to_begin is not None:
        result = jnp.concatenate((jnp.ravel(jnp.astype(_arr(to_begin), dt)), result))
    if to_end is not None:
        result = jnp.concatenate((result, jnp.ravel(jnp.astype(_arr(to_end), dt))))
    return result


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of vectors of length 2 or 3 along the given axes (length-2 vectors are
    taken with a zero third component; two length-2 inputs give the scalar z component).

    Arguments:
      a, b: arrays (promoted and broadcast over their other axes).
      axisa, axisb: the vector axes of ``a`` and ``b``.
      axisc: where the result's vector axis goes.
      axis: if given, overrides all three.
    Returns:
      An array of the promoted dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.cross(jnp.array([1, 0, 0]), jnp.array([0, 1, 0])))
      [0 0 1]
    """
    a, b = jnp._promote_only(_arr(a), _arr(b))
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = jnp.moveaxis(a, axisa, -1), jnp.moveaxis(b, axisb, -1)
    na, nb = jnp._aval(a).shape[-1], jnp._aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise FunctxValueError(f"Dimension must be either 2 or 3 for cross product{_loc()}")
    if na == 2 and nb == 2:
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    a0, a1 = a[..., 0], a[..., 1]
    a2 = a[..., 2] if na == 3 else jnp.zeros_like(a0)
    b0, b1 = b[..., 0], b[..., 1]
    b2 = b[..., 2] if nb == 3 else jnp.zeros_like(b0)
    c = jnp.stack(jnp.broadcast_arrays(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0))
    return jnp.moveaxis(c, 0, axisc)


def isscalar(element):
    """Whether ``element`` is a scalar in JAX's sense: a Python or NumPy scalar, or a rank-0
    array (functx's arrays and tracers included).

    Arguments:
      element: any object.
    Returns:
      A Python bool.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.isscalar(1.0), jnp.isscalar(jnp.array(1.0)), jnp.isscalar([1.0]))
      True True False
    """
    if np.isscalar(element):
        return True
    if isinstance(element, np.ndarray) or jnp._is_array(element):
        return jnp._aval(element).ndim == 0 if jnp._is_array(element) else element.ndim == 0
    return False


def iscomplexobj(x):
    """Whether ``x`` has a complex type or dtype (JAX's check: Python and NumPy complex values and
    arrays are, and so are functx's complex64/complex128 arrays and tracers).

    Arguments:
      x: any object.
    Returns:
      A Python bool.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.iscomplexobj(1j), jnp.iscomplexobj(jnp.array([1.0])))
      True False
    """
    if isinstance(x, (complex, np.complexfloating)):
        return True
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    dt = getattr(x, "dtype", None)
    if dt is None:  # (a list may hold tracers: under jit, say)
        dt = jnp._aval(jnp.asarray(x)).dtype
    return np.issubdtype(dt, np.complexfloating)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """The integral of ``y`` along ``axis`` by the trapezoid rule, at sample points ``x`` or with
    spacing ``dx``.

    Arguments:
      y: the values (integers are converted to float).
      x: the sample points (1-D, or the shape of ``y``), or None.
      dx: the spacing when ``x`` is None (a scalar or an array).
      axis: the axis to integrate along.
    Returns:
      An array of the promoted float dtype, ``y``'s shape without ``axis``.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.trapezoid(jnp.array([1.0, 2.0, 3.0]), dx=0.5))
      2.0
    """
    if x is None:
        (y_arr,) = jnp._promote_float("trapezoid", _arr(y))
        dx_arr = _arr(dx)
        dnd, ynd = jnp._aval(dx_arr).ndim, jnp._aval(y_arr).ndim
        if dnd > 0:
            dx_arr = jnp.reshape(dx_arr, (1,) * (ynd - dnd) + jnp._aval(dx_arr).shape)
            dx_arr = jnp.moveaxis(dx_arr, axis, -1)
    else:
        y_arr, x_arr = jnp._promote_only(_arr(y), _arr(x), kind="inexact")
        if jnp._aval(x_arr).ndim == 1:
            dx_arr = diff(x_arr)
        else:
            dx_arr = jnp.moveaxis(diff(x_arr, axis=axis), axis, -1)
    y_arr = jnp.moveaxis(y_arr, axis, -1)
    dshape = jnp._aval(dx_arr).shape
    if len(dshape) == 0 or dshape[-1] == 1:
        d = dx_arr if len(dshape) == 0 else dx_arr[..., 0]
        return d * (jnp.sum(y_arr, -1) - 0.5 * (y_arr[..., 0] + y_arr[..., -1]))
    return jnp.sum(0.5 * (dx_arr * (y_arr[..., 1:] + y_arr[..., :-1])), -1)


def select(condlist, choicelist, default=0):
    """Elements of the first ``choicelist[i]`` whose ``condlist[i]`` holds, else ``default``.

    Arguments:
      condlist: a non-empty sequence of bool arrays.
      choicelist: a sequence of arrays of the same length.
      default: the value where no condition holds.
    Returns:
      An array of the promoted dtype and the broadcast shape.

    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.arange(5)
      >>> print(jnp.select([x < 2, x > 3], [x, x * 10], default=-1))
      [ 0  1 -1 -1 40]
    """
    if len(condlist) != len(choicelist):
        raise FunctxValueError(
            "condlist must have length equal to choicelist "
            f"({len(condlist)} vs {len(choicelist)}){_loc()}"
        )
    if len(condlist) == 0:
        raise FunctxValueError(f"condlist must be non-empty{_loc()}")
    conds = [jnp.astype(_arr(c), dtypes.bool_) for c in condlist]
    out = jnp._promote("select", _arr(default), *[_arr(c) for c in choicelist])
    result = out[0]
    for c, choice in reversed(list(zip(conds, out[1:]))):
        result = jnp.where(c, choice, result)
    return result


def _shift_args(name, x1, x2):
    x1, x2 = jnp._promote_numeric(name, x1, x2)
    if np.dtype(jnp._aval(x1).dtype) not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"{name} does not accept dtype {jnp._aval(x1).dtype}. Accepted dtypes are subtypes of "
            f"integer.{_loc()}"
        )
    x1, x2 = jnp.broadcast_arrays(x1, x2)
    return x1, x2


def left_shift(x1, x2, /):
    """``x1 << x2`` elementwise with NumPy's promotion (``lax.shift_left``: a shift amount outside
    ``[0, bits)`` gives 0).

    Arguments:
      x1, x2: integer arrays (broadcast and promoted together; bools become int32).
    Returns:
      An array of the promoted integer dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.left_shift(jnp.array([1, 2, 3]), 2))
      [ 4  8 12]
    """
    return lax.shift_left(*_shift_args("left_shift", x1, x2))


def right_shift(x1, x2, /):
    """``x1 >> x2`` elementwise: arithmetic for signed dtypes, logical for unsigned (a shift
    amount outside ``[0, bits)`` gives the sign fill or 0).

    Arguments:
      x1, x2: integer arrays (broadcast and promoted together; bools become int32).
    Returns:
      An array of the promoted integer dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.right_shift(jnp.array([-8, 8, 13]), 2))
      [-2  2  3]
    """
    x1, x2 = _shift_args("right_shift", x1, x2)
    if np.dtype(jnp._aval(x1).dtype) in dtypes.UNSIGNED:
        return lax.shift_right_logical(x1, x2)
    return lax.shift_right_arithmetic(x1, x2)


# --- NaN-ignoring reductions ----------------------------------------------------------------------
# What the NaN-ignoring reductions' common arguments mean, for the docstrings
# ``_nan_reduction`` completes.
_NAN_ARGUMENTS = {
    "a": "the input array.",
    "axis": "an int, a tuple of ints, or None (all axes).",
    "out": "unsupported (None), as in JAX.",
    "keepdims": "keep the reduced axes as size-1 dimensions.",
    "where": "elements to include.",
    "ddof": "the delta degrees of freedom.",
}


def _nan_reduction(call, prints, returns, **meanings):
    """Completes a NaN-ignoring reduction's docstring (its summary) with its Arguments in the
    signature's order (``_NAN_ARGUMENTS``, or ``meanings`` for the others), ``returns`` and an
    example that prints ``prints`` for ``jnp.<name>(<call>)``."""

    def complete(fn):
        given = {**_NAN_ARGUMENTS, **meanings}
        args = "".join(f"\n      {n}: {given[n]}" for n in inspect.signature(fn).parameters)
        fn.__doc__ = (
            (fn.__doc__ or "")
            + f"""

    Arguments:{args}
    Returns:
      {returns}

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.{fn.__name__}({call}))
      {prints}
    """
        )
        return fn

    return complete


def _nan_mask(a, where):
    a = _arr(a)
    if np.dtype(jnp._aval(a).dtype) not in dtypes.FLOATS + dtypes.COMPLEX:
        return a, where
    keep = jnp.logical_not(jnp.isnan(a))  # (complex: NaN in either part, as JAX's)
    return a, keep if where is None else jnp.logical_and(keep, where)


@_nan_reduction(
    "jnp.array([1.0, jnp.nan, 2.0])",
    "3.0",
    "An array of ``sum``'s dtype.",
    dtype="the accumulation and result dtype (default: as ``jnp.sum``).",
    initial="a starting value added to the sum.",
)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``sum`` treating NaNs as zero."""
    jnp._no_out(out, "nansum")
    a, mask = _nan_mask(a, where)
    return jnp.sum(a, axis, dtype, keepdims=keepdims, initial=initial, where=mask)


@_nan_reduction(
    "jnp.array([2.0, jnp.nan, 3.0])",
    "6.0",
    "An array of ``prod``'s dtype.",
    dtype="the accumulation and result dtype (default: as ``jnp.prod``).",
    initial="a starting value multiplied in.",
)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``prod`` treating NaNs as one."""
    jnp._no_out(out, "nanprod")
    a, mask = _nan_mask(a, where)
    return jnp.prod(a, axis, dtype, keepdims=keepdims, initial=initial, where=mask)


@_nan_reduction(
    "jnp.array([1.0, jnp.nan, 2.0])",
    "1.5",
    "An array of a float dtype.",
    dtype="the result dtype (default: ``a``'s float dtype).",
)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """``mean`` of the non-NaN elements (NaN where there are none)."""
    jnp._no_out(out, "nanmean")
    a, mask = _nan_mask(a, where)
    return jnp.mean(a, axis, dtype, keepdims=keepdims, where=mask)


def _nan_extremum(fn, fill, a, axis, keepdims, initial, where):
    a = _arr(a)
    dt = jnp._aval(a).dtype
    if np.dtype(dt) not in dtypes.FLOATS:
        return fn(a, axis, keepdims=keepdims, initial=initial, where=where)
    nan = jnp.isnan(a)
    if where is not None:
        nan = jnp.logical_or(nan, jnp.logical_not(where))
    out = fn(jnp.where(nan, jnp.full((), fill, dt), a), axis, keepdims=keepdims, initial=initial)
    if initial is not None:
        return out
    # Like JAX: a slice without a number gives NaN.
    return jnp.where(jnp.all(nan, axis, keepdims=keepdims), jnp.full((), np.nan, dt), out)


@_nan_reduction(
    "jnp.array([[1.0, jnp.nan], [jnp.nan, jnp.nan]]), axis=1",
    "[ 1. nan]",
    "An array of ``a``'s dtype.",
    initial="a lower bound for the result.",
)
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``max`` ignoring NaNs (NaN where a slice has only NaNs and no ``initial``)."""
    jnp._no_out(out, "nanmax")
    return _nan_extremum(jnp.max, -np.inf, a, axis, keepdims, initial, where)


@_nan_reduction(
    "jnp.array([3.0, jnp.nan, 2.0])",
    "2.0",
    "An array of ``a``'s dtype.",
    initial="an upper bound for the result.",
)
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """``min`` ignoring NaNs (NaN where a slice has only NaNs and no ``initial``)."""
    jnp._no_out(out, "nanmin")
    return _nan_extremum(jnp.min, np.inf, a, axis, keepdims, initial, where)


@_nan_reduction(
    "jnp.array([1.0, jnp.nan, 3.0])",
    "1.0",
    "An array of a float dtype.",
    dtype="the result dtype (default: ``a``'s float dtype).",
    mean="a precomputed mean (with ``keepdims=True`` shape), or None.",
)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """``var`` of the non-NaN elements (NaN where fewer than ``ddof + 1`` remain)."""
    jnp._no_out(out, "nanvar")
    (a,) = jnp._promote_float("nanvar", _arr(a))
    acc = jnp._aval(a).dtype
    keep = jnp.logical_not(jnp.isnan(a))
    if where is not None:
        keep = jnp.logical_and(keep, where)
    keep = jnp.broadcast_to(keep, jnp._aval(a).shape)
    if mean is None:
        mean = nanmean(a, axis, keepdims=True, where=keep)
    # zero the excluded entries before squaring, so that their NaNs never reach the gradient
    c = jnp.where(keep, a - jnp.astype(_arr(mean), acc), jnp.zeros((), acc))
    if acc in dtypes.COMPLEX:  # |c|^2, in the real dtype (as JAX's; c * c was wrong)
        c, acc = (lax.real(c), lax.imag(c)), dtypes.REAL_OF[acc]
        s = jnp.sum(c[0] * c[0] + c[1] * c[1], axis, keepdims=keepdims)
    else:
        s = jnp.sum(c * c, axis, keepdims=keepdims)
    dof = jnp.sum(jnp.astype(keep, acc), axis, keepdims=keepdims) - np.asarray(ddof, acc)
    ok = dof > np.asarray(0, acc)
    out = jnp.where(ok, s / jnp.where(ok, dof, jnp.ones((), acc)), jnp.full((), np.nan, acc))
    return out if dtype is None else jnp.astype(out, dtype)


@_nan_reduction(
    "jnp.array([1.0, jnp.nan, 3.0])",
    "1.0",
    "An array of a float dtype.",
    dtype="the result dtype (default: ``a``'s float dtype).",
    mean="a precomputed mean, or None.",
)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
    """``std`` of the non-NaN elements, ``sqrt(nanvar(...))``."""
    jnp._no_out(out, "nanstd")
    return jnp.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims, where, mean))


def _nan_arg(name, fn, fill, which, example):
    """``nanargmax``/``nanargmin`` (``name``): ``fn`` with NaNs replaced by ``fill``, and -1
    where a slice is all NaN; its docstring names the ``which`` (largest, smallest) element and
    finds it at index 2 of ``example``."""

    def nan_arg(a, axis=None, out=None, keepdims=None):
        jnp._no_out(out, name)
        a = _arr(a)
        dt = jnp._aval(a).dtype
        if np.dtype(dt) not in dtypes.FLOATS:
            return fn(a, axis, keepdims=keepdims)
        nan = jnp.isnan(a)
        out = fn(jnp.where(nan, jnp.full((), fill, dt), a), axis, keepdims=keepdims)
        # Like JAX: an all-NaN slice gives -1.
        return jnp.where(jnp.all(nan, axis, keepdims=bool(keepdims)), -1, out)

    nan_arg.__name__ = nan_arg.__qualname__ = name
    nan_arg.__doc__ = f"""The index of the {which} non-NaN element (-1 for a slice of only NaNs).

    Arguments:
      a: the input array.
      axis: an int, or None (the flattened array).
      out: unsupported (None), as in JAX.
      keepdims: keep the reduced axis as a size-1 dimension.
    Returns:
      An int32 array (int64 with x64).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.{name}(jnp.array({example})))
      2
    """
    return nan_arg


nanargmax = _nan_arg("nanargmax", jnp.argmax, -np.inf, "largest", "[1.0, jnp.nan, 3.0]")
nanargmin = _nan_arg("nanargmin", jnp.argmin, np.inf, "smallest", "[1.0, jnp.nan, -3.0]")


def _nan_cumulative(name, cumulative, neutral, example, result):
    """``nancumsum``/``nancumprod`` (``name``): ``cumulative`` with NaNs replaced by its
    ``neutral`` element (0 or 1, named in the docstring), whose example prints ``result``."""
    fill = {"zero": 0, "one": 1}[neutral]

    def nan_cumulative(a, axis=None, dtype=None, out=None):
        jnp._no_out(out, name)
        a = _arr(a)
        dt = jnp._aval(a).dtype
        if np.dtype(dt) in dtypes.FLOATS + dtypes.COMPLEX:  # (complex: as JAX's)
            a = jnp.where(jnp.isnan(a), jnp.full((), fill, dt), a)
        return cumulative(a, axis, dtype)

    nan_cumulative.__name__ = nan_cumulative.__qualname__ = name
    nan_cumulative.__doc__ = f"""``{cumulative.__name__}`` treating NaNs as {neutral}.

    Arguments:
      a: the input array.
      axis: an int, or None (the flattened array).
      dtype: the accumulation and result dtype.
      out: unsupported (None), as in JAX.
    Returns:
      An array of ``{cumulative.__name__}``'s dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.{name}(jnp.array({example})))
      {result}
    """
    return nan_cumulative


nancumsum = _nan_cumulative("nancumsum", jnp.cumsum, "zero", "[1.0, jnp.nan, 2.0]", "[1. 1. 3.]")
nancumprod = _nan_cumulative("nancumprod", jnp.cumprod, "one", "[2.0, jnp.nan, 3.0]", "[2. 2. 6.]")


# --- floating-point decomposition, integer arithmetic ---------------------------------------------
def _scale2(x, e):
    """``x * 2.0 ** e`` for an integer array ``e``, exact, by two factors applied one after the
    other, so that exponents beyond the normal range (subnormal results, ``2**-e`` of a
    subnormal) stay representable."""
    dt = jnp._aval(x).dtype
    half = jnp.floor_divide(e, 2)
    return (x * jnp.exp2(jnp.astype(half, dt))) * jnp.exp2(jnp.astype(e - half, dt))


def frexp(x, /):
    """Splits ``x`` into a mantissa in ``[0.5, 1)`` (in magnitude) and a power-of-two exponent:
    ``x == m * 2**e``; zero, infinities and NaN give themselves and exponent 0.

    Arguments:
      x: a real array (integers are converted to float).
    Returns:
      A pair ``(m, e)``: ``m`` of ``x``'s float dtype, ``e`` int32.

    Differences from JAX: subnormal inputs follow NumPy and C; JAX's CPU backend flushes them to
    zero.

    Example:
      >>> import functx.numpy as jnp
      >>> m, e = jnp.frexp(jnp.array([8.0, -3.0, 0.0]))
      >>> print(m, e)
      [ 0.5  -0.75  0.  ] [4 2 0]
    """
    (x,) = jnp._promote_float("frexp", _arr(x))
    dt = jnp._aval(x).dtype
    special = jnp.logical_or(jnp.logical_or(jnp.isinf(x), jnp.isnan(x)), x == 0)
    ax = jnp.abs(jnp.where(special, jnp.ones((), dt), x))
    # log2 in float32 is exact enough to be off by at most one; the two corrections fix that.
    e = (
        jnp.astype(
            jnp.floor(jnp.log2(jnp.astype(ax, np.float64 if dt == dtypes.float64 else np.float32))),
            np.int32,
        )
        + 1
    )
    m = _scale2(ax, -e)
    big = m >= 1
    m, e = jnp.where(big, m * 0.5, m), jnp.where(big, e + 1, e)
    small = m < 0.5
    m, e = jnp.where(small, m * 2, m), jnp.where(small, e - 1, e)
    m = jnp.where(x < 0, -m, m)
    return jnp.where(special, x, m), jnp.where(special, 0, e)


def ldexp(x1, x2, /):
    """``x1 * 2**x2`` elementwise, exact where the result is representable.

    Arguments:
      x1: a real array (integers are converted to float).
      x2: an integer array (broadcast with ``x1``).
    Returns:
      An array of ``x1``'s float dtype.

    Differences from JAX: subnormal inputs follow NumPy and C; JAX's CPU backend flushes them to
    zero.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.ldexp(jnp.array([1.0, 0.75]), jnp.array([3, -2])))
      [8.     0.1875]
    """
    x1, x2 = _arr(x1), _arr(x2)
    d1, d2 = np.dtype(jnp._aval(x1).dtype), np.dtype(jnp._aval(x2).dtype)
    if d1.kind == "c" or d2.kind in "fc" or d2 == dtypes.bfloat16:
        raise FunctxValueError(f"ldexp not supported for input types {(d1, d2)}{_loc()}")
    (x1,) = jnp._promote_float("ldexp", x1)
    m, e = frexp(x1)
    e = jnp.astype(e, np.int32) + jnp.astype(x2, np.int32)
    out = _scale2(m, e)
    return jnp.where(jnp.logical_or(jnp.isinf(x1), x1 == 0), x1, out)


def _int_args(name, x1, x2):
    x1, x2 = jnp._promote_numeric(name, _arr(x1), _arr(x2))
    dt = np.dtype(jnp._aval(x1).dtype)
    if dt not in dtypes.INTEGERS:
        raise FunctxValueError(f"Arguments to jax.numpy.{name} must be integers.{_loc()}")
    return jnp.broadcast_arrays(x1, x2)


def gcd(x1, x2):
    """The greatest common divisor of ``|x1|`` and ``|x2|`` elementwise (``gcd(0, 0) == 0``).

    Arguments:
      x1, x2: integer arrays (broadcast and promoted together).
    Returns:
      An array of the promoted integer dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.gcd(jnp.array([12, 7, 0]), jnp.array([18, 5, 4])))
      [6 1 4]
    """
    x1, x2 = _int_args("gcd", x1, x2)

    def body(c):
        a, b = c
        nz = b != 0
        r = lax.rem(a, jnp.where(nz, b, jnp.ones_like(b)))
        return jnp.where(nz, b, a), jnp.where(nz, r, jnp.zeros_like(b))

    g, _ = lax.while_loop(lambda c: jnp.any(c[1] != 0), body, (jnp.abs(x1), jnp.abs(x2)))
    return g


def lcm(x1, x2):
    """The least common multiple of ``|x1|`` and ``|x2|`` elementwise (0 if either is 0).

    Arguments:
      x1, x2: integer arrays (broadcast and promoted together).
    Returns:
      An array of the promoted integer dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.lcm(jnp.array([4, 6, 0]), jnp.array([6, 4, 3])))
      [12 12  0]
    """
    x1, x2 = _int_args("lcm", x1, x2)
    d = gcd(x1, x2)
    safe = jnp.where(d == 0, jnp.ones_like(d), d)
    return jnp.where(d == 0, jnp.zeros_like(d), jnp.abs(x1 * jnp.floor_divide(x2, safe)))


def fabs(x, /):
    """The absolute value, as a float (integers are converted first).

    Arguments:
      x: a real array.
    Returns:
      An array of ``x``'s float dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.fabs(jnp.array([-2, 3])))
      [2. 3.]
    """
    (x,) = jnp._promote_float("fabs", _arr(x))
    return jnp.abs(x)


bitwise_left_shift = left_shift
bitwise_right_shift = right_shift


# --- inserting and deleting -----------------------------------------------------------------------
def _concrete(x, what):
    if isinstance(x, Tracer):
        raise ConcretizationError(
            f"the {what} must be concrete (a NumPy array or Python value), "
            f"got a traced value{_loc()}"
        )
    return np.asarray(x)


def _int_kind(obj) -> bool:
    """Whether ``obj`` (an array, a tracer, a list) holds integers."""
    if jnp._is_array(obj) or isinstance(obj, Tracer):
        return jnp._aval(obj).dtype.kind in "iu"
    return np.asarray(obj).dtype.kind in "iu"


def _delete_unique(a, obj, axis, n):
    """``delete`` of the distinct (possibly traced) integer indices ``obj``: kept entry ``j``
    of the result is ``j`` plus the number of deleted indices at or before it."""
    idx = jnp.ravel(_arr(obj))
    k = jnp._aval(idx).shape[0]
    idx = jnp.clip(jnp.where(idx < 0, idx + n, idx), 0, n)
    # the sorted indices minus their rank: kept entry j moves past those <= j
    idx = lax.sort(idx) - jnp.arange(k, dtype=jnp._aval(idx).dtype)
    j = jnp.arange(n - k, dtype=jnp._aval(idx).dtype)
    j = j + jnp.sum(j[None, :] >= idx[:, None], axis=0, dtype=jnp._aval(idx).dtype)
    return jnp.take(a, j, axis=axis)


def _insert_traced(a, idx, v, axis, n):
    """``insert`` at the traced integer indices ``idx`` (shape ``(k,)``) of the slices ``v``
    (``k`` along ``axis``): value ``j`` lands at ``idx[j]`` plus its rank among the insertions
    (a stable sort's), and the array's entries fill the other places in order."""
    k = jnp._aval(idx).shape[0]
    idx = jnp.clip(jnp.where(idx < 0, idx + n, idx), 0, n)
    i, j = jnp.arange(k)[:, None], jnp.arange(k)[None, :]
    before = (idx[:, None] < idx[None, :]) | ((idx[:, None] == idx[None, :]) & (i < j))
    vpos = idx + jnp.sum(before, axis=0, dtype=jnp._aval(idx).dtype)  # (k,)
    p = jnp.arange(n + k, dtype=jnp._aval(idx).dtype)
    hit = p[:, None] == vpos[None, :]  # (n + k, k)
    is_v = jnp.any(hit, axis=1)
    which = jnp.sum(jnp.where(hit, jnp.arange(k, dtype=jnp._aval(idx).dtype), 0), axis=1)
    src = p - jnp.sum(vpos[None, :] < p[:, None], axis=1, dtype=jnp._aval(idx).dtype)
    from_a = jnp.take(a, jnp.clip(src, 0, max(n - 1, 0)), axis=axis, mode="clip")
    from_v = jnp.take(v, which, axis=axis, mode="clip")
    nd = jnp._aval(a).ndim
    mask = jnp.reshape(is_v, (n + k,) + (1,) * (nd - 1 - axis))
    return jnp.where(mask, from_v, from_a)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
    """``arr`` without the entries ``obj`` along ``axis`` (the flattened array if None).

    Arguments:
      arr: an array.
      obj: an int, a slice, or an array of ints or a bool mask (concrete: the result's shape
        depends on it, unless ``assume_unique_indices``).
      axis: the axis to delete along, or None.
      assume_unique_indices: promise that the integer indices ``obj`` are distinct (negative
        ones counted from the end; out-of-range ones clipped): ``obj`` may then be traced (under
        ``jit``), since the result has ``len(obj)`` fewer entries.
    Returns:
      An array of ``arr``'s dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.delete(jnp.arange(6), jnp.array([0, 2])))
      [1 3 4 5]
    """
    a = _arr(arr)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    nd = jnp._aval(a).ndim
    axis = jnp._canon_axis(_static_int(axis, "'axis' argument of jnp.delete"), nd)
    n = jnp._aval(a).shape[axis]
    lead = (slice(None),) * axis
    if not isinstance(obj, (slice, np.ndarray, list, tuple)) and not jnp._is_array(obj):
        try:
            i = operator.index(obj)
        except TypeError:
            pass
        else:
            if not -n <= i < n:
                raise FunctxValueError(
                    f"axis {i} is out of bounds for array of dimension {n}{_loc()}"
                )
            i %= n
            return jnp.concatenate(
                [a[lead + (slice(0, i),)], a[lead + (slice(i + 1, None),)]], axis
            )
    if isinstance(obj, slice):
        keep = np.ones(n, bool)
        keep[np.arange(n)[obj]] = False
    elif assume_unique_indices and _int_kind(obj):
        return _delete_unique(a, obj, axis, n)
    else:
        o = _concrete(obj, "'obj' array argument of jnp.delete()")
        if o.dtype == bool:
            if o.shape != (n,):
                raise FunctxValueError(
                    "np.delete(arr, obj): for boolean indices, obj must be one-dimensional with "
                    f"length matching specified axis.{_loc()}"
                )
            keep = ~o
        elif o.dtype.kind in "iu":
            keep = np.ones(n, bool)
            keep[o] = False
        else:
            raise FunctxValueError(
                f"np.delete(arr, obj): got obj.dtype={o.dtype}; must be integer or bool.{_loc()}"
            )
    kept = _array.UncommittedArray.from_value(np.nonzero(keep)[0].astype(np.int32))
    return jnp.take(a, kept, axis=axis)


def insert(arr, obj, values, axis=None):
    """``arr`` with ``values`` inserted before the indices ``obj`` along ``axis``.

    Arguments:
      arr: an array.
      obj: an int, a slice, or a 1-D array of ints (concrete or traced: the result's shape
        depends only on its size).
      values: the values (cast to ``arr``'s dtype, broadcast to the inserted slices).
      axis: the axis, or None (the flattened array).
    Returns:
      An array of ``arr``'s dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.insert(jnp.arange(4), 1, 9))
      [0 9 1 2 3]
    """
    a = _arr(arr)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    av = jnp._aval(a)
    axis = jnp._canon_axis(_static_int(axis, "'axis' argument of jnp.insert"), av.ndim)
    n = av.shape[axis]
    if isinstance(obj, slice):
        idx = np.arange(*obj.indices(n))
    elif isinstance(obj, Tracer):
        idx = obj
    else:
        idx = _concrete(obj, "'obj' argument of jnp.insert()")
    if isinstance(idx, Tracer):
        return _insert_traced_checked(a, idx, values, axis, n, av, obj)
    if idx.ndim > 1:
        raise FunctxValueError(
            "jnp.insert(): obj must be a slice, a one-dimensional array, or a scalar; "
            f"got {obj}{_loc()}"
        )
    if idx.dtype.kind not in "iu":
        if idx.size == 0:
            idx = idx.astype(int)
        else:
            raise FunctxValueError(
                f"jnp.insert(): index array must be integer typed; got {obj}{_loc()}"
            )
    v = jnp.astype(_arr(values), av.dtype)
    vnd = jnp._aval(v).ndim
    if vnd < av.ndim:
        v = jnp.reshape(v, (1,) * (av.ndim - vnd) + jnp._aval(v).shape)
    if idx.size == 1:
        if idx.ndim == 0:
            v = jnp.moveaxis(v, 0, axis)
        idx = np.full(jnp._aval(v).shape[axis], idx.ravel()[0])
    k = np.broadcast_shapes(idx.shape, (jnp._aval(v).shape[axis],))[0]
    if k == 0:  # (nothing to insert: JAX ignores the values' shape then)
        return jnp.array(a)
    idx = np.clip(np.where(idx < 0, idx + n, idx), 0, n)
    idx = np.broadcast_to(idx, (k,))
    vshape = list(av.shape)
    vshape[axis] = k
    v = jnp.broadcast_to(v, tuple(vshape))
    # positions in the result: value j goes to idx[j] + (its rank among the sorted insertions)
    order = np.argsort(idx, kind="stable")
    vpos = np.empty(k, np.int64)
    vpos[order] = idx[order] + np.arange(k)
    is_v = np.zeros(n + k, bool)
    is_v[vpos] = True
    src = np.empty(n + k, np.int64)
    src[~is_v] = np.arange(n)
    src[vpos] = n + np.arange(k)
    both = jnp.concatenate([a, v], axis)
    return jnp.take(both, jnp.asarray(src.astype(np.int32)), axis=axis)


def _insert_traced_checked(a, idx, values, axis, n, av, obj):
    """``insert`` with traced indices: JAX's checks, then ``_insert_traced``."""
    iv = jnp._aval(idx)
    if iv.ndim > 1:
        raise FunctxValueError(
            "jnp.insert(): obj must be a slice, a one-dimensional array, or a scalar; "
            f"got {obj}{_loc()}"
        )
    if iv.dtype.kind not in "iu":
        raise FunctxValueError(
            f"jnp.insert(): index array must be integer typed; got {obj}{_loc()}"
        )
    v = jnp.astype(_arr(values), av.dtype)
    vnd = jnp._aval(v).ndim
    if vnd < av.ndim:
        v = jnp.reshape(v, (1,) * (av.ndim - vnd) + jnp._aval(v).shape)
    if iv.size == 1:
        if iv.ndim == 0:
            v = jnp.moveaxis(v, 0, axis)
        idx = jnp.full((jnp._aval(v).shape[axis],), jnp.ravel(idx)[0])
    k = np.broadcast_shapes(jnp._aval(idx).shape, (jnp._aval(v).shape[axis],))[0]
    if k == 0:  # (nothing to insert: JAX ignores the values' shape then)
        return jnp.array(a)
    idx = jnp.broadcast_to(idx, (k,))
    vshape = list(av.shape)
    vshape[axis] = k
    v = jnp.broadcast_to(v, tuple(vshape))
    return _insert_traced(a, idx, v, axis, n)


def append(arr, values, axis=None):
    """``arr`` with ``values`` appended along ``axis`` (both flattened if None).

    Arguments:
      arr, values: arrays (promoted together).
      axis: the axis, or None.
    Returns:
      An array of the promoted dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.append(jnp.array([1, 2]), jnp.array([[3, 4]])))
      [1 2 3 4]
    """
    if axis is None:
        return jnp.concatenate([jnp.ravel(_arr(arr)), jnp.ravel(_arr(values))], 0)
    return jnp.concatenate([_arr(arr), _arr(values)], axis)


# --- piecewise functions, interpolation, histograms -----------------------------------------------
def piecewise(x, condlist, funclist, *args, **kw):
    """Evaluates ``funclist[i]`` where ``condlist[i]`` holds (the last condition wins), the extra
    function (if ``len(funclist) == len(condlist) + 1``) where none holds; a non-callable entry
    is a constant. Every function runs on the whole array.

    Arguments:
      x: the input array.
      condlist: a bool array or a sequence of bool arrays of ``x``'s shape.
      funclist: functions of ``x`` (and ``*args``, ``**kw``) or constants.
      args, kw: passed to each function.
    Returns:
      An array of ``x``'s dtype and shape.

    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([-2.0, 0.5, 3.0])
      >>> print(jnp.piecewise(x, [x < 0, x > 1], [lambda v: -v, lambda v: v * 10, 0.0]))
      [ 2.  0. 30.]
    """
    x = _arr(x)
    av = jnp._aval(x)
    if isinstance(condlist, (list, tuple)):
        conds = [jnp.astype(_arr(c), dtypes.bool_) for c in condlist]
    else:  # an array: one condition per entry of its first axis, as in JAX
        c = jnp.astype(_arr(condlist), dtypes.bool_)
        conds = [c[i] for i in range(len(c))]
    nc, nf = len(conds), len(funclist)
    if nf not in (nc, nc + 1):
        raise FunctxValueError(
            f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; "
            f"got {nf}{_loc()}"
        )
    conds = [jnp.broadcast_to(c, av.shape) for c in conds]
    if nf == nc + 1:
        none = jnp.logical_not(jnp.any(jnp.stack(conds), 0)) if conds else jnp.ones(av.shape, bool)
        conds = [none, *conds]
        funcs = [funclist[-1], *funclist[:-1]]
    else:
        funcs = list(funclist)
    out = jnp.zeros(av.shape, av.dtype)
    for c, f in zip(conds, funcs):
        val = f(x, *args, **kw) if callable(f) else f
        out = jnp.where(c, jnp.astype(_arr(val), av.dtype), out)
    return out


def _count_le(xp, x, right):
    """How many of the sorted 1-D ``xp`` are ``<= x`` (``right``) or ``< x``, for each ``x``."""
    cmp = jnp.less_equal if right else jnp.less
    return jnp.sum(jnp.astype(cmp(xp, x[..., None]), np.int32), -1)


def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise-linear interpolation of the points ``(xp, fp)`` at ``x`` (``xp`` increasing).

    Arguments:
      x: where to evaluate.
      xp: the 1-D increasing sample points (any order with ``period``).
      fp: the 1-D values at ``xp``.
      left, right: the values below ``xp[0]`` / above ``xp[-1]`` (default ``fp[0]``/``fp[-1]``),
        or ``"extrapolate"`` to extend the first / last segment's line.
      period: a scalar period of the points: ``x`` and ``xp`` are taken modulo ``|period|``
        (``xp`` is sorted) and ``left``/``right`` are not used, as in JAX.
    Returns:
      An array of ``x``'s shape and the promoted float dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> xp, fp = jnp.array([0.0, 1.0, 2.0]), jnp.array([0.0, 10.0, 0.0])
      >>> print(jnp.interp(jnp.array([0.5, 1.5, 5.0]), xp, fp))
      [5. 5. 0.]
      >>> print(jnp.interp(jnp.array([-1.0, 3.0]), xp, fp, left="extrapolate", right="extrapolate"))
      [-10. -10.]
      >>> print(jnp.interp(jnp.array([-1.0, 3.5]), xp, fp, period=3.0))
      [0. 5.]
    """
    for name, side in (("left", left), ("right", right)):
        if isinstance(side, str) and side != "extrapolate":
            raise FunctxValueError(
                f"the only valid string value of `{name}` is 'extrapolate', but got: {side!r}"
                f"{_loc()}"
            )
    x, xp, fp = jnp._promote_only(_arr(x), _arr(xp), _arr(fp), kind="inexact")
    if jnp._aval(xp).ndim != 1 or jnp._aval(fp).ndim != 1:
        raise FunctxValueError(f"xp and fp must be one-dimensional arrays{_loc()}")
    n = jnp._aval(xp).shape[0]
    if jnp._aval(fp).shape[0] != n or n < 1:
        raise FunctxValueError(f"xp and fp must be of the same size, at least 1{_loc()}")
    dt = jnp._aval(x).dtype
    if np.issubdtype(dt, np.complexfloating):
        raise FunctxValueError(f"jnp.interp: complex x values not supported.{_loc()}")
    if period is not None:
        if np.ndim(period) != 0:
            raise FunctxValueError(f"period must be a scalar; got {period}{_loc()}")
        p = jnp.abs(jnp.astype(_arr(period), dt))
        x, xp = jnp.remainder(x, p), jnp.remainder(xp, p)
        xp, fp = lax.sort_key_val(xp, fp)
        # one point beyond each end, a period away, closes the cycle
        xp = jnp.concatenate([xp[-1:] - p, xp, xp[:1] + p])
        fp = jnp.concatenate([fp[-1:], fp, fp[:1]])
        n += 2
    if n == 1:
        i = jnp.ones(jnp._aval(x).shape, np.int32)
        xp, fp = jnp.concatenate([xp, xp]), jnp.concatenate([fp, fp])
    else:
        i = jnp.clip(_count_le(xp, x, True), 1, n - 1)
    x0, x1, f0, f1 = xp[i - 1], xp[i], fp[i - 1], fp[i]
    dx = x1 - x0
    tiny = jnp.abs(dx) <= np.asarray(np.spacing(np.finfo(dt).eps), dt)
    f = jnp.where(tiny, f0, f0 + (x - x0) / jnp.where(tiny, jnp.ones((), dt), dx) * (f1 - f0))
    if period is not None:
        return f
    if not isinstance(left, str):
        lo = fp[0] if left is None else jnp.astype(_arr(left), dt)
        f = jnp.where(x < xp[0], lo, f)
    if not isinstance(right, str):
        hi = fp[-1] if right is None else jnp.astype(_arr(right), dt)
        f = jnp.where(x > xp[-1], hi, f)
    return f


def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    """The edges of ``bins`` equal bins over ``range`` (default: ``a``'s min and max; a zero
    width range is widened by 0.5 on each side), or ``bins`` itself if it is an array.

    Arguments:
      a: the data (flattened).
      bins: a static number of bins, or an array of edges.
      range: ``(lo, hi)`` or None.
      weights: unused, as in JAX.
    Returns:
      A 1-D array of ``bins + 1`` edges, of ``a``'s float dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.histogram_bin_edges(jnp.array([0.0, 1.0, 4.0]), bins=4))
      [0. 1. 2. 3. 4.]
    """
    arr = jnp.ravel(_arr(a))
    dt = jnp._inexact(jnp._aval(arr).dtype)  # (float64 for int64 input, with x64 on)
    if np.ndim(bins) == 1 or (jnp._is_array(bins) and jnp._aval(bins).ndim == 1):
        return jnp.astype(_arr(bins), dt)  # (in a's float dtype, as JAX's)
    nb = _static_int(bins, "'bins' argument of jnp.histogram_bin_edges")
    if range is None:
        lo, hi = jnp.min(arr), jnp.max(arr)
    else:
        lo, hi = _arr(range[0]), _arr(range[1])
    lo, hi = jnp.astype(lo, dt), jnp.astype(hi, dt)
    same = lo == hi
    lo = jnp.where(same, lo - np.asarray(0.5, dt), lo)
    hi = jnp.where(same, hi + np.asarray(0.5, dt), hi)
    return jnp.linspace(lo, hi, nb + 1, dtype=dt)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The counts (or weight sums) of ``a`` in each bin; the last bin includes its right edge;
    values outside the edges are not counted.

    Arguments:
      a: the data (flattened).
      bins: a static number of bins, or an array of increasing edges.
      range: ``(lo, hi)`` or None (``a``'s min and max).
      weights: an array of ``a``'s shape, or None (ones).
      density: normalize to a probability density.
    Returns:
      A pair ``(hist, bin_edges)`` of float arrays.

    Example:
      >>> import functx.numpy as jnp
      >>> hist, edges = jnp.histogram(jnp.array([0.0, 0.5, 1.0, 3.0, 4.0]), bins=4)
      >>> print(hist)
      [2. 1. 0. 2.]
    """
    if weights is not None and jnp._aval(_arr(weights)).shape != jnp._aval(_arr(a)).shape:
        raise FunctxValueError(f"weights should have the same shape as a.{_loc()}")
    w = jnp.ones_like(_arr(a)) if weights is None else _arr(weights)
    arr, w = jnp._promote_float("histogram", jnp.ravel(_arr(a)), jnp.ravel(w))
    edges = histogram_bin_edges(arr, bins, range)
    ne = jnp._aval(edges).shape[0]
    idx = _count_le(jnp.astype(edges, jnp._aval(arr).dtype), arr, True)
    idx = jnp.where(arr == edges[-1], ne - 1, idx)
    hit = idx[:, None] == jnp.arange(1, ne, dtype=np.int32)
    counts = jnp.sum(jnp.where(hit, w[:, None], jnp.zeros((), jnp._aval(w).dtype)), 0)
    if density:
        counts = counts / jnp.astype(diff(edges), jnp._aval(counts).dtype) / jnp.sum(counts)
    return counts, edges


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The ``D``-dimensional histogram of ``N`` points (``jax.numpy.histogramdd``): the count
    (or weight sum) of the points in each cell of the grid of per-dimension bins. In each
    dimension the last bin includes its right edge; points outside the edges are not counted.

    Arguments:
      sample: an ``(N, D)`` array of points.
      bins: a static number of bins, or a sequence of ``D`` (numbers or arrays of edges).
      range: None, or a sequence of ``D`` pairs ``(lo, hi)`` or Nones (default: the data's
        min and max in that dimension).
      weights: an ``(N,)`` array, or None (each point counts 1).
      density: normalize to a probability density (divided by the total and the cell volumes).
    Returns:
      ``(hist, edges)``: the ``D``-dimensional counts (int32, or the weights' float dtype, or
      float with ``density``) and the list of ``D`` edge arrays.
    Example:
      >>> import functx.numpy as jnp
      >>> pts = jnp.array([[0.0, 0.0], [1.0, 0.5], [1.0, 1.0], [0.2, 0.9]])
      >>> hist, edges = jnp.histogramdd(pts, bins=2)
      >>> print(hist)
      [[1 1]
       [0 2]]
      >>> print(edges[1])
      [0.  0.5 1. ]
    """
    if weights is None:
        sample = jnp._promote_only(_arr(sample), kind="inexact")[0]
    else:
        sample, weights = _arr(sample), _arr(weights)
        if jnp._aval(weights).shape != jnp._aval(sample).shape[:1]:
            raise FunctxValueError(f"should have one weight for each sample.{_loc()}")
        sample, weights = jnp._promote_only(sample, weights, kind="inexact")
    sv = jnp._aval(sample)
    if sv.ndim != 2:
        raise FunctxValueError(
            f"histogramdd: sample must be a 2-D array of N points in D dimensions; got shape "
            f"{sv.shape}{_loc()}"
        )
    n, d = sv.shape
    if range is not None and (
        len(range) != d or any(r is not None and np.shape(r)[0] != 2 for r in range)
    ):
        raise FunctxValueError(
            f"For sample.shape={(n, d)}, range must be a sequence of {d} pairs or Nones; got "
            f"range={range}{_loc()}"
        )
    try:
        per_dim = list(bins)
    except TypeError:  # one number of bins for every dimension
        per_dim = [bins] * d
    else:
        if len(per_dim) != d:
            raise FunctxValueError(f"should be a bin for each dimension.{_loc()}")
    idx, edges = [], []
    for i in builtins.range(d):
        col = sample[:, i]
        e = histogram_bin_edges(col, per_dim[i], None if range is None else range[i])
        k = _count_le(e, col, True)  # (searchsorted(e, col, side="right"))
        idx.append(jnp.where(col == e[-1], k - 1, k))  # (the last bin holds its right edge)
        edges.append(e)
    # one bin more on each side for the points outside: counted, then cut off
    shape = tuple(jnp._aval(e).shape[0] + 1 for e in edges)
    flat = ravel_multi_index(tuple(idx), shape, mode="clip")
    hist = jnp.reshape(bincount(flat, weights, length=math.prod(shape)), shape)
    hist = hist[(slice(1, -1),) * d]
    if density:
        hist = jnp.astype(hist, sv.dtype)
        hist = hist / jnp.sum(hist)
        for i, e in enumerate(edges):  # (each cell's widths, as an open mesh)
            hist = hist / jnp.reshape(
                diff(e), tuple(-1 if j == i else 1 for j in builtins.range(d))
            )
    return hist, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
    """The 2-D histogram of the points ``(x[k], y[k])`` (``jax.numpy.histogram2d``): see
    ``histogramdd``.

    Arguments:
      x, y: 1-D arrays of the points' coordinates.
      bins: a number of bins, an array of edges (both dimensions), or a pair of those.
      range: None or ``[(xlo, xhi), (ylo, yhi)]`` (either may be None).
      weights: an array of ``x``'s shape, or None.
      density: normalize to a probability density.
    Returns:
      ``(hist, x_edges, y_edges)``.
    Example:
      >>> import functx.numpy as jnp
      >>> x, y = jnp.array([0.0, 1.0, 1.0, 0.2]), jnp.array([0.0, 0.5, 1.0, 0.9])
      >>> hist, xe, ye = jnp.histogram2d(x, y, bins=2)
      >>> print(hist)
      [[1 1]
       [0 2]]
    """
    x, y = _arr(x), _arr(y)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb not in (1, 2):  # (one array of edges for both dimensions)
        bins = [_arr(bins), _arr(bins)]
    x, y = jnp._promote_only(x, y)
    hist, edges = histogramdd(jnp.stack([x, y], axis=1), bins, range, weights, density)
    return hist, edges[0], edges[1]


def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
    """The number of occurrences (or the sum of ``weights``) of each value ``0 .. length-1`` in
    the non-negative integer array ``x`` (negative values count as 0; values ``>= length`` are
    dropped).

    Arguments:
      x: a 1-D integer array.
      weights: an array of ``x``'s shape, or None (counts).
      minlength: the least length when ``length`` is None.
      length: the static result length (required under ``jit``: the default ``max(x) + 1``
        needs ``x``'s value).
      out_sharding: accepted for JAX's signature; must be None.
    Returns:
      A 1-D array of ``weights``' dtype (int32 counts without weights).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.bincount(jnp.array([0, 1, 1, 3]), length=5))
      [1 2 0 1 0]
    """
    x = _arr(x)
    if np.dtype(jnp._aval(x).dtype) not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"x argument to bincount must have an integer type; got {jnp._aval(x).dtype}{_loc()}"
        )
    if jnp._aval(x).ndim != 1:
        raise FunctxValueError(f"only 1-dimensional input supported.{_loc()}")
    minlength = _static_int(minlength, "minlength argument of jnp.bincount")
    if minlength < 0:
        raise FunctxValueError(f"minlength must be non-negative; got minlength={minlength}{_loc()}")
    if length is None:
        xv = _concrete(x, "'x' argument of jnp.bincount (or pass length=)")
        length = max(minlength, int(xv.max()) + 1 if xv.size else 0)
    else:
        length = _static_int(length, "length argument of jnp.bincount")
    if weights is None:
        w = jnp.ones(jnp._aval(x).shape, dtypes.default_int())
    else:
        w = _arr(weights)
    wdt = jnp._aval(w).dtype
    hit = jnp.maximum(x, 0)[:, None] == jnp.arange(length, dtype=jnp._aval(x).dtype)
    return jnp.sum(jnp.where(hit, w[:, None], jnp.zeros((), wdt)), 0, dtype=wdt)


def digitize(x, bins, right=False, *, method=None):
    """The index of the bin of ``bins`` (monotonic, 1-D) each ``x`` falls in.

    Arguments:
      x: the values.
      bins: 1-D increasing or decreasing edges.
      right: whether bins include their right edge instead of their left.
      method: accepted for JAX's signature (the comparison method is always used).
    Returns:
      An int32 array of ``x``'s shape.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.digitize(jnp.array([0.5, 1.0, 2.5]), jnp.array([0.0, 1.0, 2.0])))
      [1 2 3]
    """
    x, b = _arr(x), _arr(bins)
    if jnp._aval(b).ndim != 1:
        raise FunctxValueError(
            f"digitize: bins must be a 1-dimensional array; got bins={bins}{_loc()}"
        )
    n = jnp._aval(b).shape[0]
    if n == 0:
        return jnp.zeros(jnp._aval(x).shape, np.int32)
    x, b = jnp._promote_only(x, b)
    up = _count_le(b, x, not right)
    down = n - _count_le(b[::-1], x, not right)
    return jnp.where(b[-1] >= b[0], up, down)


# --- statistics -----------------------------------------------------------------------------------
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    """The covariance matrix of the variables in the rows (``rowvar``) or columns of ``m``
    (and ``y``).

    Arguments:
      m: a 1-D or 2-D array of observations.
      y: more variables, in ``m``'s layout, or None.
      rowvar: whether rows are variables (else columns).
      bias: normalize by N instead of N - 1.
      ddof: overrides ``bias`` when given.
      fweights: integer frequency weights per observation.
      aweights: observation weights.
      dtype: the computation dtype.
    Returns:
      A 2-D array (a scalar for a single variable) of a float dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.cov(jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])))
      [[ 1. -1.]
       [-1.  1.]]
    """
    _inexact_dtype("cov", dtype)
    if y is not None:
        m, y = jnp._promote_only(_arr(m), _arr(y), kind="inexact")
    else:
        (m,) = jnp._promote_float("cov", _arr(m))
    if dtype is not None:
        m = jnp.astype(m, dtype)
    if jnp._aval(m).ndim > 2:
        raise FunctxValueError(f"m has more than 2 dimensions{_loc()}")
    X = jnp.atleast_2d(m)
    if not rowvar and jnp._aval(X).shape[0] != 1:
        X = X.T
    if jnp._aval(X).shape[0] == 0:
        return jnp.full((0, 0), np.nan, jnp._aval(X).dtype)
    if y is not None:
        if jnp._aval(y).ndim > 2:
            raise FunctxValueError(f"y has more than 2 dimensions{_loc()}")
        yy = jnp.atleast_2d(jnp.astype(y, jnp._aval(X).dtype))
        if not rowvar and jnp._aval(yy).shape[0] != 1:
            yy = yy.T
        X = jnp.concatenate([X, yy], 0)
    dt = jnp._aval(X).dtype
    if ddof is None:
        ddof = 0 if bias else 1
    n = jnp._aval(X).shape[1]
    w = None
    if fweights is not None:
        fw = _arr(fweights)
        if jnp._aval(fw).ndim > 1 or jnp._aval(fw).shape[0] != n:
            raise FunctxValueError(f"fweights must be 1-D with one weight per observation{_loc()}")
        if np.dtype(jnp._aval(fw).dtype) not in dtypes.INTEGERS:
            raise FunctxTypeError(f"fweights must be integer.{_loc()}")
        w = jnp.astype(fw, dt)
    if aweights is not None:
        aw = _arr(aweights)
        if jnp._aval(aw).ndim > 1 or jnp._aval(aw).shape[0] != n:
            raise FunctxValueError(f"aweights must be 1-D with one weight per observation{_loc()}")
        aw = jnp.astype(aw, dt)
        w = aw if w is None else w * aw
    if w is None:
        avg = jnp.mean(X, 1)
        fact = jnp.asarray(np.asarray(n - ddof, dt))
        Xc = X - avg[:, None]
        c = jnp.matmul(Xc, _conj(Xc).T)
    else:
        wsum = jnp.sum(w)
        avg = jnp.sum(X * w, 1) / wsum
        if ddof == 0:
            fact = wsum
        elif aweights is None:
            fact = wsum - ddof
        else:
            fact = wsum - ddof * jnp.sum(w * aw) / wsum
        Xc = X - avg[:, None]
        c = jnp.matmul(Xc, _conj(Xc * w).T)
    return jnp.squeeze(c / fact)


def _conj(x):
    return lax.conj(x) if jnp._aval(x).dtype in dtypes.COMPLEX else x


def corrcoef(x, y=None, rowvar=True, dtype=None):
    """The Pearson correlation coefficients, ``cov / outer(std, std)``, clipped to [-1, 1].

    Arguments:
      x: a 1-D or 2-D array of observations.
      y: more variables, or None.
      rowvar: whether rows are variables (else columns).
      dtype: the computation dtype.
    Returns:
      A 2-D array (1.0 for a single variable) of a float dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.corrcoef(jnp.array([[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]])))
      [[1. 1.]
       [1. 1.]]
    """
    _inexact_dtype("corrcoef", dtype)
    c = cov(x, y, rowvar, dtype=dtype)
    if jnp._aval(c).ndim == 0:
        return c / c
    d = jnp.diagonal(c)
    s = jnp.sqrt(d)
    c = c / s[:, None] / s[None, :]
    if jnp._aval(c).dtype in dtypes.COMPLEX:  # (real and imaginary parts clipped apart, as JAX)
        return lax.complex(jnp.clip(lax.real(c), -1, 1), jnp.clip(lax.imag(c), -1, 1))
    return jnp.clip(c, -1, 1)


def _inexact_dtype(name, dtype):
    """JAX's ValueError for an integer or bool computation dtype of cov/corrcoef."""
    if dtype is not None and not jnp.issubdtype(dtype, np.inexact):
        raise FunctxValueError(
            f"{name}: dtype must be a subclass of float or complex; got dtype={dtype!r}{_loc()}"
        )


# --- index helpers --------------------------------------------------------------------------------
def _shape_tuple(shape, what):
    shape = (shape,) if not isinstance(shape, (tuple, list)) else shape
    return tuple(_static_int(s, what) for s in shape)


def unravel_index(indices, shape):
    """The coordinates in an array of ``shape`` of the flat (C-order) ``indices``; out-of-range
    indices are clipped, negative ones count from the end (as in JAX).

    Arguments:
      indices: an integer array.
      shape: the array shape (static).
    Returns:
      A tuple of arrays of ``indices``' dtype, one per dimension.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.unravel_index(jnp.array([5, 7]), (2, 4)))
      (Array([1, 1], dtype=int32), Array([1, 3], dtype=int32))
    """
    idx = _arr(indices)
    if np.dtype(jnp._aval(idx).dtype) not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"unravel_index: indices should be integers, got {jnp._aval(idx).dtype}{_loc()}"
        )
    shape = _shape_tuple(shape, "'shape' argument of jnp.unravel_index")
    if any(s < 0 for s in shape):
        raise FunctxValueError(f"unravel_index: shape should be non-negative.{_loc()}")
    total = int(np.prod(shape, dtype=np.int64))
    dt = jnp._aval(idx).dtype
    if total == 0:
        raise FunctxValueError(
            f"unravel_index: index out of bounds for an empty shape {shape}{_loc()}"
        )
    i = jnp.clip(idx, -total, total - 1)
    i = jnp.where(i < 0, i + jnp.asarray(np.asarray(total, dt)), i)
    out, stride = [], total
    for s in shape:
        stride //= s
        out.append(jnp.floor_divide(i, np.asarray(stride, dt)) % np.asarray(s, dt))
    return tuple(out)


def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
    """The flat index of coordinates ``multi_index`` in an array of shape ``dims``.

    Arguments:
      multi_index: a sequence of integer arrays, one per dimension.
      dims: the array shape (static).
      mode: ``'raise'`` (indices must be concrete and in range), ``'wrap'``, ``'clip'`` or
        ``'ignore'`` (out-of-range indices give an unspecified result).
      order: ``'C'`` or ``'F'``.
      dtype: the result dtype (default: the indices' promoted dtype).
    Returns:
      An integer array of the broadcast shape.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.ravel_multi_index((jnp.array([1, 0]), jnp.array([2, 3])), (2, 4)))
      [6 3]
    """
    dims = _shape_tuple(dims, "'dims' argument of jnp.ravel_multi_index")
    if len(multi_index) != len(dims):
        raise FunctxValueError(
            f"parameter multi_index must be a sequence of length {len(dims)}{_loc()}"
        )
    if order not in ("C", "F"):
        raise FunctxValueError(f"only 'C' or 'F' order is permitted{_loc()}")
    idx = [_arr(i) for i in multi_index]
    for i in idx:
        if np.dtype(jnp._aval(i).dtype) not in dtypes.INTEGERS:
            raise FunctxTypeError(f"only int indices permitted, got {jnp._aval(i).dtype}{_loc()}")
    idx = list(jnp._promote_only(*idx)) if idx else idx
    if dtype is not None:
        idx = [jnp.astype(i, dtype) for i in idx]
    if idx:
        out_dt = np.dtype(jnp._aval(idx[0]).dtype)
        if math.prod(dims) - 1 > np.iinfo(out_dt).max:
            raise FunctxValueError(
                f"jnp.ravel_multi_index: dtype={out_dt} not large enough to hold flattened "
                f"index for dims={dims}; pass a wider dtype={_loc()}"
            )
    if mode == "raise":
        for i, d in zip(idx, dims):
            v = _concrete(i, "index of jnp.ravel_multi_index with mode='raise'")
            if np.any(v < 0) or np.any(v >= d):
                raise FunctxValueError(f"invalid entry in coordinates array{_loc()}")
    elif mode == "clip":
        idx = [jnp.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    elif mode == "wrap":
        idx = [i % d for i, d in zip(idx, dims)]
    elif mode != "ignore":
        raise FunctxValueError(
            f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'{_loc()}"
        )
    order_dims = list(range(len(dims)))[:: -1 if order == "C" else 1]
    out, stride = None, 1
    for k in order_dims:
        term = idx[k] * stride if stride != 1 else idx[k]
        out = term if out is None else out + term
        stride *= dims[k]
    return out


def _index_pair(rows, cols):
    it = dtypes.default_int()
    return jnp.asarray(rows.astype(it)), jnp.asarray(cols.astype(it))


def _shape_of(arr, name):
    shape = jnp._aval(arr).shape if jnp._is_array(arr) else np.shape(arr)
    if len(shape) != 2:
        raise FunctxValueError(
            f"jax.numpy.{name}: input array must be 2-D, got {len(shape)}-D{_loc()}"
        )
    return shape


def _triangle_indices(part, side, np_indices, example, from_call, from_example):
    """``tril_indices`` and ``tril_indices_from`` (``part`` "lower", ``side`` "below"), or the
    ``triu`` pair ("upper", "above"): the indices that ``np_indices`` gives; their examples print
    ``example`` for an ``n`` of 2 and ``from_example`` for ``from_call``."""
    name = f"tri{part[0]}_indices"

    def indices(n, k=0, m=None):
        n = _static_int(n, f"n argument of jnp.{name}")
        k = _static_int(k, f"k argument of jnp.{name}")
        m = n if m is None else _static_int(m, f"m argument of jnp.{name}")
        return _index_pair(*np_indices(n, k, m))

    def indices_from(arr, k=0):
        n, m = _shape_of(arr, f"{name}_from")
        return indices(n, k, m)

    indices.__name__ = indices.__qualname__ = name
    indices.__doc__ = f"""The row and column indices of the {part} triangle (on and {side} diagonal
    ``k``) of an ``(n, m)`` array.

    Arguments:
      n, m: the array's rows and columns (``m`` defaults to ``n``; static).
      k: the diagonal offset.
    Returns:
      A pair of int32 arrays (int64 with x64).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.{name}(2))
      {example}
    """
    indices_from.__name__ = indices_from.__qualname__ = f"{name}_from"
    indices_from.__doc__ = f"""``{name}`` for the shape of the 2-D ``arr``.

    Arguments:
      arr: a 2-D array (only its shape is used).
      k: the diagonal offset.
    Returns:
      A pair of int32 arrays.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.{name}_from({from_call}))
      {from_example}
    """
    return indices, indices_from


tril_indices, tril_indices_from = _triangle_indices(
    "lower",
    "below",
    np.tril_indices,
    "(Array([0, 1, 1], dtype=int32), Array([0, 0, 1], dtype=int32))",
    "jnp.ones((2, 3)), k=1",
    "(Array([0, 0, 1, 1, 1], dtype=int32), Array([0, 1, 0, 1, 2], dtype=int32))",
)
triu_indices, triu_indices_from = _triangle_indices(
    "upper",
    "above",
    np.triu_indices,
    "(Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))",
    "jnp.ones((3, 2))",
    "(Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))",
)


def diag_indices(n, ndim=2):
    """The indices of the main diagonal of an ``n``-sided ``ndim``-dimensional array.

    Arguments:
      n: the side length (static).
      ndim: the number of dimensions.
    Returns:
      A tuple of ``ndim`` equal int32 arrays ``arange(n)``.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.diag_indices(2))
      (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
    """
    n = _static_int(n, "n argument of jnp.diag_indices")
    ndim = _static_int(ndim, "ndim argument of jnp.diag_indices")
    if n < 0:
        raise FunctxValueError(f"n argument to diag_indices must be nonnegative, got {n}{_loc()}")
    if ndim < 0:
        raise FunctxValueError(
            f"ndim argument to diag_indices must be nonnegative, got {ndim}{_loc()}"
        )
    return (jnp.arange(n, dtype=dtypes.default_int()),) * ndim


def diag_indices_from(arr):
    """``diag_indices`` for ``arr``, whose sides must all be equal.

    Arguments:
      arr: an array of at least 2 dimensions, all of one length.
    Returns:
      A tuple of int32 arrays.

    Example:
      >>> import functx.numpy as jnp
      >>> print(len(jnp.diag_indices_from(jnp.ones((2, 2, 2)))))
      3
    """
    shape = jnp._aval(_arr(arr)).shape
    if len(shape) < 2:
        raise FunctxValueError(f"input array must be at least 2-d{_loc()}")
    if len(set(shape)) != 1:
        raise FunctxValueError(f"All dimensions of input must be of equal length{_loc()}")
    return diag_indices(shape[0], len(shape))


def indices(dimensions, dtype=None, sparse=False):
    """An array of the index grid of an array of shape ``dimensions``.

    Arguments:
      dimensions: the shape (static).
      dtype: the integer dtype (default int32).
      sparse: return a tuple of broadcastable arrays instead of one stacked array.
    Returns:
      An array of shape ``(len(dimensions), *dimensions)``, or a tuple.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.indices((2, 3))[1])
      [[0 1 2]
       [0 1 2]]
    """
    dims = _shape_tuple(dimensions, "dimensions argument of jnp.indices")
    dt = dtypes.default_int() if dtype is None else dtype
    out = []
    for i, d in enumerate(dims):
        shape = [1] * len(dims)
        shape[i] = d
        r = jnp.reshape(jnp.arange(d, dtype=dt), tuple(shape))
        out.append(r if sparse else jnp.broadcast_to(r, dims))
    if sparse:
        return tuple(out)
    return jnp.stack(out, 0) if out else jnp.zeros((0,), dt)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix: columns are powers of ``x`` (decreasing unless ``increasing``).

    Arguments:
      x: a 1-D array.
      N: the number of columns (default ``len(x)``).
      increasing: powers from 0 up instead of down.
    Returns:
      A 2-D array ``(len(x), N)``.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.vander(jnp.array([1, 2, 3]), 3))
      [[1 1 1]
       [4 2 1]
       [9 3 1]]
    """
    x = _arr(x)
    if jnp._aval(x).ndim != 1:
        raise FunctxValueError(f"x must be a one-dimensional array{_loc()}")
    n = jnp._aval(x).shape[0] if N is None else _static_int(N, "N argument of jnp.vander")
    if n < 0:
        raise FunctxValueError(f"N must be nonnegative{_loc()}")
    p = jnp.arange(n, dtype=jnp._aval(x).dtype)  # powers of x's dtype, as in JAX
    if not increasing:
        p = p[::-1]
    return jnp.power(x[:, None], p[None, :])


def rot90(m, k=1, axes=(0, 1)):
    """``m`` rotated by 90 degrees ``k`` times in the plane of ``axes`` (from the first axis
    toward the second).

    Arguments:
      m: an array of at least 2 dimensions.
      k: the number of rotations (static).
      axes: two distinct axes.
    Returns:
      An array of ``m``'s dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.rot90(jnp.array([[1, 2], [3, 4]])))
      [[2 4]
       [1 3]]
    """
    m = _arr(m)
    nd = jnp._aval(m).ndim
    if nd < 2:
        raise FunctxValueError(
            f"rot90 requires its first argument to have ndim at least two, but got first "
            f"argument of shape {jnp._aval(m).shape}{_loc()}"
        )
    if len(axes) != 2:
        raise FunctxValueError(f"len(axes) must be 2.{_loc()}")
    k = _static_int(k, "k argument of jnp.rot90") % 4
    a0, a1 = (jnp._canon_axis(a, nd) for a in axes)
    if a0 == a1:
        raise FunctxValueError(f"Axes must be different{_loc()}")
    if k == 0:
        return m
    if k == 2:
        return jnp.flip(jnp.flip(m, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return jnp.transpose(jnp.flip(m, a1), perm)
    return jnp.flip(jnp.transpose(m, perm), a1)


def rollaxis(a, axis, start=0):
    """``a`` with ``axis`` moved to before position ``start`` (NumPy's legacy ``moveaxis``).

    Arguments:
      a: an array.
      axis: the axis to move.
      start: the position it ends up before.
    Returns:
      A view of ``a`` with permuted axes.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.rollaxis(jnp.ones((2, 3, 4)), 2).shape)
      (4, 2, 3)
    """
    a = _arr(a)
    nd = jnp._aval(a).ndim
    axis = jnp._canon_axis(axis, nd)
    start = _static_int(start, "start argument of jnp.rollaxis")
    if not -nd <= start <= nd:
        raise FunctxValueError(f"start={start} must satisfy {-nd}<=start<={nd}{_loc()}")
    if start < 0:
        start += nd
    if start > axis:
        start -= 1
    return jnp.moveaxis(a, axis, start)


def diagflat(v, k=0):
    """A 2-D array with the flattened ``v`` on diagonal ``k``.

    Arguments:
      v: an array (flattened).
      k: the diagonal offset.
    Returns:
      A square 2-D array of ``v``'s dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.diagflat(jnp.array([[1, 2]])))
      [[1 0]
       [0 2]]
    """
    return jnp.diag(jnp.ravel(_arr(v)), k)


def array_equiv(a1, a2):
    """Whether ``a1`` and ``a2`` broadcast together and are equal everywhere.

    Arguments:
      a1, a2: arrays.
    Returns:
      A bool scalar array (False if the shapes do not broadcast).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.array_equiv(jnp.array([1, 2]), jnp.array([[1, 2], [1, 2]])))
      True
    """
    a1, a2 = _arr(a1), _arr(a2)
    try:
        np.broadcast_shapes(jnp._aval(a1).shape, jnp._aval(a2).shape)
    except ValueError:
        return jnp.asarray(False)
    return jnp.all(a1 == a2)


def isrealobj(x):
    """Whether ``x`` has no complex type or dtype (``not iscomplexobj(x)``).

    Arguments:
      x: any object.
    Returns:
      A Python bool.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.isrealobj(jnp.array([1.0])), jnp.isrealobj(1j))
      True False
    """
    return not iscomplexobj(x)


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop, num)``.

    Arguments:
      start, stop: the first and last exponents.
      num: the number of points (static).
      endpoint: include ``stop``.
      base: the base.
      dtype: the result dtype (default: float).
      axis: where the new axis goes for array endpoints.
    Returns:
      A float array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.logspace(0, 2, 3))
      [  1.  10. 100.]
    """
    lin = jnp.linspace(start, stop, num, endpoint=endpoint, axis=axis)
    dt = jnp._aval(lin).dtype
    out = jnp.power(jnp.astype(_arr(base), dt), lin)
    return out if dtype is None else jnp.astype(out, dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (of one sign).

    Arguments:
      start, stop: the first and last values (nonzero).
      num: the number of points (static).
      endpoint: include ``stop``.
      dtype: the result dtype (default: float).
      axis: where the new axis goes for array endpoints.
    Returns:
      A float array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.geomspace(1, 1000, 4))
      [   1.   10.  100. 1000.]
    """
    s, e = jnp._promote_only(_arr(start), _arr(stop), kind="inexact")
    sign = jnp.sign(s)
    lin = jnp.linspace(jnp.log10(s * sign), jnp.log10(e * sign), num, endpoint=endpoint, axis=axis)
    out = jnp.power(jnp.asarray(np.asarray(10.0, jnp._aval(lin).dtype)), lin)
    nd = jnp._aval(out).ndim
    shape = [1] * nd
    if jnp._aval(sign).ndim:
        shape = list(jnp._aval(sign).shape)
        shape.insert(jnp._canon_axis(axis, nd), 1)
    out = out * jnp.reshape(sign, tuple(shape))
    return out if dtype is None else jnp.astype(out, dtype)


# --- scalar types ---------------------------------------------------------------------------------
class _ScalarMeta(type):
    """The metaclass of ``functx.numpy.float32`` and its kin (JAX's scalar types): the class is
    a dtype everywhere NumPy accepts one (``np.dtype(jnp.float32)``, ``x.astype(jnp.float32)``,
    comparisons with dtypes and NumPy scalar types), and calling it makes a functx array."""

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __eq__(cls, other):
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        return not cls == other

    def __call__(cls, x=0):
        return jnp.asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)

    def __repr__(cls):
        return f"<class 'functx.numpy.{cls.__name__}'>"


def _scalar_type(dt, doc_value):
    dt = np.dtype(dt)
    name = "bool_" if dt == np.dtype(bool) else dt.name
    # (a 64-bit type's example runs with x64 on: in the default mode its values are 32-bit)
    call = f"print(jnp.{name}({doc_value!r}), jnp.zeros(2, jnp.{name}).dtype == jnp.{name})"
    if dt.name in ("int64", "uint64", "float64", "complex128"):
        x64 = "with functx.enable_x64(True):"
        call = f"import functx\n      >>> {x64}\n      ...     {call}"
    return _ScalarMeta(
        name,
        (),
        {
            "dtype": dt,
            "__module__": "functx.numpy",
            "__doc__": f"""The {dt.name} scalar type: usable as a dtype, and callable.

    Arguments:
      x: a value or array (default 0), converted as ``jnp.asarray(x, dtype={name})``.
    Returns:
      A functx array of dtype {dt.name} (a scalar for a scalar ``x``).

    Example:
      >>> import functx.numpy as jnp
      >>> {call}
      {np.asarray(doc_value, dtype=dt)} True
    """,
        },
    )


bool_ = _scalar_type(dtypes.bool_, True)
int8 = _scalar_type(dtypes.int8, 3)
int16 = _scalar_type(dtypes.int16, 3)
int32 = _scalar_type(dtypes.int32, 3)
int64 = _scalar_type(dtypes.int64, 3)
uint8 = _scalar_type(dtypes.uint8, 3)
uint16 = _scalar_type(dtypes.uint16, 3)
uint32 = _scalar_type(dtypes.uint32, 3)
uint64 = _scalar_type(dtypes.uint64, 3)
float16 = _scalar_type(dtypes.float16, 0.5)
bfloat16 = _scalar_type(dtypes.bfloat16, 0.5)
float32 = _scalar_type(dtypes.float32, 0.5)
float64 = _scalar_type(dtypes.float64, 0.5)
float_ = float64
int_ = int64
single, double = float32, float64


# --- Array API inspection ----------------------------------------------------------------------
class _ArrayNamespaceInfo:
    """What ``functx.numpy.__array_namespace_info__()`` returns (the Array API's inspection
    namespace): capabilities, default device, default dtypes, supported dtypes, devices."""

    def capabilities(self):
        """The optional Array API features: none of the data-dependent ones (as in JAX)."""
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self):
        """None: arrays go to the default device (``functx.config``), as in JAX."""
        return None

    def devices(self):
        """The devices arrays can be placed on (None meaning the default one first, as in JAX)."""
        return [None, _array.device_rule("cpu_device")]

    def default_dtypes(self, *, device=None):
        """The default dtypes: floats, complex numbers, integers and indices."""
        return {
            "real floating": dtypes.default_float(),
            "complex floating": dtypes.default_complex(),
            "integral": dtypes.default_int(),
            "indexing": dtypes.default_int(),
        }

    def dtypes(self, *, device=None, kind=None):
        """The supported dtypes of a kind (``"bool"``, ``"signed integer"``, ``"unsigned
        integer"``, ``"integral"``, ``"real floating"``, ``"complex floating"``, ``"numeric"``, or
        a tuple of kinds), by name; 64-bit ones only with x64."""
        x64 = dtypes.default_int().itemsize == 8
        groups = {
            "bool": ["bool"],
            "signed integer": ["int8", "int16", "int32"] + (["int64"] if x64 else []),
            "unsigned integer": ["uint8", "uint16", "uint32"] + (["uint64"] if x64 else []),
            "real floating": ["float32"] + (["float64"] if x64 else []),
            "complex floating": ["complex64"] + (["complex128"] if x64 else []),
        }
        groups["integral"] = groups["signed integer"] + groups["unsigned integer"]
        groups["numeric"] = groups["integral"] + groups["real floating"]
        groups["numeric"] += groups["complex floating"]
        if kind is None:
            names = groups["bool"] + groups["numeric"]
        else:
            names = []
            for k in (kind,) if isinstance(kind, str) else kind:
                if k not in groups:
                    raise FunctxValueError(f"unsupported kind: {k!r}{_loc()}")
                names += groups[k]
        return {n: np.dtype(n) for n in names}


def __array_namespace_info__():
    """The Array API inspection namespace of ``functx.numpy``.

    Arguments:
      (none)
    Returns:
      An object with ``capabilities()``, ``default_device()``, ``default_dtypes()``,
      ``dtypes(kind=)`` and ``devices()``.

    Example:
      >>> import functx.numpy as jnp
      >>> info = jnp.__array_namespace_info__()
      >>> print(info.default_dtypes()["real floating"], sorted(info.dtypes(kind="bool")))
      float32 ['bool']
    """
    return _ArrayNamespaceInfo()


__all__ = [
    "allclose",
    "append",
    "array_equal",
    "array_equiv",
    "bfloat16",
    "bincount",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "bool_",
    "corrcoef",
    "cov",
    "cross",
    "delete",
    "diag_indices",
    "diag_indices_from",
    "diagflat",
    "diff",
    "digitize",
    "double",
    "ediff1d",
    "fabs",
    "float16",
    "float32",
    "float64",
    "float_",
    "frexp",
    "gcd",
    "geomspace",
    "histogram",
    "histogram_bin_edges",
    "indices",
    "insert",
    "int16",
    "int32",
    "int64",
    "int8",
    "int_",
    "interp",
    "isclose",
    "iscomplexobj",
    "isrealobj",
    "isscalar",
    "lcm",
    "ldexp",
    "left_shift",
    "logspace",
    "nanargmax",
    "nanargmin",
    "nancumprod",
    "nancumsum",
    "nanmax",
    "nanmean",
    "nanmin",
    "nanprod",
    "nanstd",
    "nansum",
    "nanvar",
    "piecewise",
    "ravel_multi_index",
    "right_shift",
    "rollaxis",
    "rot90",
    "select",
    "single",
    "trapezoid",
    "tril_indices",
    "tril_indices_from",
    "triu_indices",
    "triu_indices_from",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "unravel_index",
    "vander",
]
