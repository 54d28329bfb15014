"""More of NumPy's API with JAX's semantics, as composites of ``functx.numpy``'s functions:
comparisons of whole arrays (``isclose``, ``allclose``, ``array_equal``), differences and
integrals (``diff``, ``ediff1d``, ``trapezoid``), ``cross``, ``select``, the bit shifts, and the
inspection functions ``isscalar``/``iscomplexobj``."""

from __future__ import annotations

import operator

import numpy as np

from functx import dtypes, lax
from functx.errors import FunctxTypeError, FunctxValueError
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
    if dt is None:
        dt = np.asarray(x).dtype
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


__all__ = [
    "allclose",
    "array_equal",
    "cross",
    "diff",
    "ediff1d",
    "isclose",
    "iscomplexobj",
    "isscalar",
    "left_shift",
    "right_shift",
    "select",
    "trapezoid",
]
