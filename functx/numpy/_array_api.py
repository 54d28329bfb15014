"""Array API standard functions of ``functx.numpy`` that NumPy's older API lacks: dtype queries
(``can_cast``, ``isdtype``), ``unstack`` and ``from_dlpack``, each with JAX's signature and
semantics."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from functx import dtypes, ops
from functx.array import Array, is_concrete_array
from functx.core import ShapedArray
from functx.errors import FunctxTypeError, FunctxValueError
from functx.numpy import _core
from functx.source_info import where as _loc
from functx.tracing import Tracer

# The categories of ``isdtype``'s string kinds (the Array API's names, and JAX's sets).
_KINDS = ("bool", "signed integer", "unsigned integer", "real floating", "complex floating")
_SHORTHANDS = {
    "integral": ("signed integer", "unsigned integer"),
    "numeric": ("signed integer", "unsigned integer", "real floating", "complex floating"),
}


def _category(dt: np.dtype):
    """The Array API category of a dtype, or None (strings, objects, datetimes, longdouble)."""
    if dt == dtypes.bool_:
        return "bool"
    if dt in dtypes.SIGNED:
        return "signed integer"
    if dt in dtypes.UNSIGNED:
        return "unsigned integer"
    if dt in dtypes.FLOATS:
        return "real floating"
    if dt in dtypes.COMPLEX:
        return "complex floating"
    if dt.type.__module__.startswith("ml_dtypes"):
        # the narrow types JAX knows as well (float8_*, int4, uint4, ...)
        try:
            ml_dtypes.finfo(dt)
            return "real floating"
        except ValueError:
            pass
        try:
            return "signed integer" if ml_dtypes.iinfo(dt).min < 0 else "unsigned integer"
        except ValueError:
            return None
    return None


def _as_dtype(x):
    """The dtype of an array or tracer, or ``np.dtype(x)`` of a dtype-like."""
    if isinstance(x, (Array, Tracer, np.ndarray, np.generic)):
        return np.dtype(x.dtype)
    return np.dtype(x)


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of the kind ``kind``, like ``jax.numpy.isdtype`` (the Array API's).

    Arguments:
      dtype: a dtype (or anything ``numpy.dtype`` accepts: a type, a name).
      kind: a dtype (then the answer is ``dtype == kind``), one of the strings ``'bool'``,
        ``'signed integer'``, ``'unsigned integer'``, ``'integral'``, ``'real floating'``
        (bfloat16 included), ``'complex floating'``, ``'numeric'``, or a tuple of these (any
        of them).
    Returns:
      ``True`` or ``False``. An unknown string kind is a ValueError, and a kind that is neither a
      string, a dtype nor a tuple a TypeError, as in JAX.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.isdtype(jnp.bfloat16, 'real floating'), jnp.isdtype(jnp.uint8, 'signed integer')
      (True, False)
      >>> jnp.isdtype(jnp.int32, ('bool', 'integral'))
      True
    """
    the_dtype = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names, exact = set(), set()
    for k in kinds:
        if isinstance(k, str) and (k in _KINDS or k in _SHORTHANDS):
            names.update(_SHORTHANDS.get(k, (k,)))
            continue
        try:
            exact.add(np.dtype(k))
        except TypeError:
            if isinstance(k, str):
                raise FunctxValueError(
                    f"isdtype: unrecognized kind={k!r}; expected one of "
                    f"{list(_KINDS[:3]) + ['integral'] + list(_KINDS[3:]) + ['numeric']}, or "
                    f"a dtype{_loc()}"
                ) from None
            raise FunctxTypeError(
                f"isdtype: expected kind to be a dtype, a string or a tuple; got kind={k!r}{_loc()}"
            ) from None
    return the_dtype in exact or _category(the_dtype) in names


def can_cast(from_, to, casting="safe"):
    """Whether a cast from ``from_`` to ``to`` keeps values under the rule ``casting``, like
    ``jax.numpy.can_cast`` (which is NumPy's ``can_cast``, bfloat16 included).

    Arguments:
      from_: a dtype, or an array whose dtype is asked about (its values play no part). Python
        scalars are a TypeError, as in NumPy 2 and JAX.
      to: a dtype.
      casting: ``'no'``, ``'equiv'``, ``'safe'`` (the default), ``'same_kind'`` or
        ``'unsafe'``.
    Returns:
      ``True`` or ``False``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.can_cast(jnp.int8, jnp.int16), jnp.can_cast(jnp.float32, jnp.int32)
      (True, False)
      >>> jnp.can_cast(jnp.ones(3), jnp.float64, casting='same_kind')
      True
    """
    if isinstance(from_, (Array, Tracer)):
        from_ = np.dtype(from_.dtype)
    return bool(np.can_cast(from_, to, casting))


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, like ``jax.numpy.unstack`` (the inverse of ``stack``).

    Arguments:
      x: an array with at least one dimension (lists are a TypeError, as in JAX).
      axis: the axis to take apart, in ``[-x.ndim, x.ndim)``.
    Returns:
      A tuple of ``x.shape[axis]`` arrays, each of ``x``'s shape without ``axis``.
    Example:
      >>> import functx.numpy as jnp
      >>> a, b = jnp.unstack(jnp.array([[1, 2, 3], [4, 5, 6]]))
      >>> print(a, b)
      [1 2 3] [4 5 6]
    """
    if isinstance(x, (list, tuple)):
        raise FunctxTypeError(
            f"unstack requires ndarray or scalar arguments, got {type(x).__name__}{_loc()}"
        )
    x = _core.asarray(x)
    av = x.aval
    if av.ndim == 0:
        raise FunctxValueError(
            f"unstack: axis {axis} is out of bounds for array of dimension 0{_loc()}"
        )
    ax = _core._canon_axis(axis, av.ndim, "unstack axis")
    if ax != 0:
        x = _core.moveaxis(x, ax, 0)
    n = av.shape[ax]
    rest = x.aval.shape[1:]
    return tuple(ops.reshape(ops.slice_in_dim(x, i, i + 1, 1, 0), rest) for i in range(n))


def from_dlpack(x, /, *, device=None, copy=None):
    """An array with the data of a DLPack producer (a NumPy array, a torch tensor, another
    library's array), like ``jax.numpy.from_dlpack``.

    Arguments:
      x: an object with ``__dlpack__`` and ``__dlpack_device__`` methods (else a TypeError, as
        in JAX).
      device: where to put the result (default: where ``x`` is; a CUDA producer gives a GPU
        array).
      copy: ``None`` (the default) or ``True``: the data is copied. ``False``: a host producer's
        buffer is shared (as in JAX; changing it afterwards changes the functx array); where
        that is impossible, a non-contiguous buffer or a dtype
        functx must convert (float64 with ``jax_enable_x64`` off) give a ValueError, as the
        copies JAX cannot avoid do.
    Returns:
      An Array of ``x``'s shape and dtype.

    Differences from JAX: ``copy=False`` raises ValueError where functx would need a copy (a
    non-contiguous buffer, float64 with x64 off); JAX's conditions differ. An older consumer gets a
    copy.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> jnp.from_dlpack(np.arange(3, dtype=np.int32))
      Array([0, 1, 2], dtype=int32)
    """
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        raise FunctxTypeError(
            "The array passed to from_dlpack must have __dlpack__ and __dlpack_device__ "
            f"methods{_loc()}"
        )
    if is_concrete_array(x) and copy is not True:
        out = x
    elif copy is False and int(x.__dlpack_device__()[0]) in (1, 3):
        value = np.from_dlpack(x, copy=False)
        need = dtypes.canonicalize(value.dtype)
        if not value.flags.c_contiguous or need != value.dtype:
            why = (
                f"strides {value.strides} are not C-contiguous"
                if need == value.dtype
                else f"{value.dtype} becomes {need} with jax_enable_x64 off"
            )
            raise FunctxValueError(
                f"from_dlpack: the input needs a copy ({why}), but copy=False; pass copy=None "
                f"or copy=True{_loc()}"
            )
        value = value.view()  # (our own read-only view: the producer's flags stay)
        out = Array._new(value, ShapedArray(value.shape, value.dtype))
    else:
        out = Array.from_value(x)
        if out is x:
            out = Array.from_value(np.array(x))
    return out if device is None else _core._placed(out, device)
