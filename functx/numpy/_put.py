"""``jnp.put_along_axis``: the scatter counterpart of ``take_along_axis``."""

from __future__ import annotations

from functx import dtypes, ops, primitives as P
from functx.errors import FunctxTypeError, FunctxValueError
from functx.numpy import _core as jnp
from functx.source_info import where as _loc
from functx.tracing import get_aval


def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
    """``arr`` with ``values`` written at ``indices`` along ``axis``: the update counterpart of
    :func:`take_along_axis` (``out[..., indices[..., j, ...], ...] = values[..., j, ...]``).

    Arguments:
        arr: the array to update.
        indices: integer indices of ``arr``'s rank (negative ones count from the end); the other
            axes broadcast against ``arr``'s.
        values: the values, broadcastable to ``indices``' shape.
        axis: the axis the indices run along; ``None`` works on the flattened array.
        inplace: must be False: arrays are immutable (True, the default as in NumPy, raises a
            ValueError, as in JAX).
        mode: out-of-bounds indices: dropped (``None``, ``"drop"``, ``"fill"``,
            ``"promise_in_bounds"``) or clamped (``"clip"``).

    Returns:
        An array of ``arr``'s shape and dtype.

    Example:
        >>> import functx.numpy as jnp
        >>> a = jnp.array([[10, 30, 20], [60, 40, 50]])
        >>> i = jnp.argmax(a, axis=1, keepdims=True)
        >>> print(jnp.put_along_axis(a, i, 99, axis=1, inplace=False))
        [[10 99 20]
         [99 40 50]]
    """
    if inplace:
        raise FunctxValueError(
            "put_along_axis cannot update an array in place: arrays are immutable. Pass "
            f"inplace=False to get the updated array.{_loc()}"
        )
    arr, indices, values = (jnp.asarray(v) for v in (arr, indices, values))
    shape = get_aval(arr).shape
    if axis is None:
        arr, axis = jnp.ravel(arr), 0
    a, i = get_aval(arr), get_aval(indices)
    if i.dtype not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"put_along_axis: indices must be integers, got {i.str_short()}{_loc()}"
        )
    if a.ndim != i.ndim:
        raise FunctxValueError(
            f"put_along_axis: arr and indices must have the same rank, got arr.ndim={a.ndim} "
            f"and indices.ndim={i.ndim}{_loc()}"
        )
    axis = jnp._canon_axis(axis, a.ndim, "put_along_axis axis")
    try:
        values = jnp.broadcast_to(values, i.shape)
    except ValueError:
        raise FunctxValueError(
            f"put_along_axis: values {get_aval(values).str_short()} must broadcast to the "
            f"indices' shape {list(i.shape)}{_loc()}"
        ) from None
    if mode not in (None, "drop", "fill", "promise_in_bounds", "clip"):
        raise FunctxValueError(f'Unknown gather mode "{mode}"{_loc()}')
    # One point index per element of the broadcast index shape: iotas off the axis, the
    # (wrapped) indices along it; then one scatter that drops (or clamps) the out-of-range ones.
    bshape = tuple(
        i.shape[d] if d == axis else jnp.broadcast_shapes((a.shape[d],), (i.shape[d],))[0]
        for d in range(a.ndim)
    )
    if i.dtype in dtypes.SIGNED:
        n = jnp.asarray(a.shape[axis], i.dtype)
        indices = jnp.where(indices < 0, indices + n, indices)
    cols = []
    for d in range(a.ndim):
        if d == axis:
            col = jnp.broadcast_to(indices, bshape)
            if i.dtype != dtypes.int32:  # (clamped first: a wide index stays out of range)
                hi = min(a.shape[axis], int(dtypes.iinfo(i.dtype).max))
                col = jnp.clip(col, -1 if i.dtype in dtypes.SIGNED else 0, hi)
            col = ops.convert_element_type(col, dtypes.int32)
        else:
            shp = [1] * a.ndim
            shp[d] = a.shape[d]
            col = jnp.broadcast_to(ops.broadcasted_iota(dtypes.int32, tuple(shp), d), bshape)
        cols.append(ops.expand_dims(col, (a.ndim,)))
    values = ops.convert_element_type(jnp.broadcast_to(values, bshape), a.dtype, a.weak_type)
    out = P.scatter_p.bind(
        arr,
        ops.concatenate(cols, a.ndim),
        values,
        axes=tuple(range(a.ndim)),
        mode="clip" if mode == "clip" else "drop",
    )
    return jnp.reshape(out, shape) if a.shape != shape else out
