"""More of ``jax.lax``'s names, as composites of functx's primitives: ``clz``, ``mulhi``,
``split``, ``tile``, ``collapse``, ``batch_matmul``, ``broadcast_to_rank``,
``dynamic_update_index_in_dim``, ``reduce_xor``, ``optimization_barrier``, ``empty``, ``stack``
and ``unstack`` (re-exported by ``functx.lax``).

Deviations from JAX: ``optimization_barrier`` is the identity (functx's compiler does not move
work across it either way; JAX's primitive only stops XLA's reordering); ``clz`` and ``mulhi``
are composites of shifts, masks and ``population_count`` rather than primitives of their own
(same values, in every backend)."""

from __future__ import annotations

import math
import operator

import numpy as np

from functx import config, dtypes, ops, tree_util
from functx.array import Array
from functx.control.generic_reduce import reduce as _reduce
from functx.errors import FunctxTypeError, FunctxValueError
from functx.source_info import where as _loc
from functx.tracing import Tracer, get_aval

_UNSIGNED = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}


def _as_array(x):
    return x if isinstance(x, (Array, Tracer)) else Array.from_value(x)


def _int_operand(name, x):
    x = _as_array(x)
    dt = get_aval(x).dtype
    if dt not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"{name} does not accept dtype {dt}. Accepted dtypes are subtypes of integer.{_loc()}"
        )
    return x, dt


def _const(v, dt, shape):
    return ops.full(shape, v, dt)


def clz(x):
    """The number of leading zero bits of each element (``32`` for an int32 zero).

    Arguments:
      x: an integer array.
    Returns:
      An array of ``x``'s dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.clz(jnp.array([0, 1, -1, 255], jnp.int32)))
      [32 31  0 24]
    """
    x, dt = _int_operand("clz", x)
    shape = get_aval(x).shape
    width = dtypes.iinfo(dt).bits
    y = x
    s = 1
    while s < width:  # smear the highest set bit into every lower one
        y = ops.bitwise_or(y, ops.shift_right_logical(y, _const(s, dt, shape)))
        s *= 2
    out = ops.sub(_const(width, dt, shape), ops.population_count(y))
    if dt in dtypes.NARROW_INTS and dt in dtypes.SIGNED:
        # (population_count counts a narrow negative's sign-extended bits, as XLA does)
        out = ops.select_n(ops.lt(x, _const(0, dt, shape)), out, _const(0, dt, shape))
    return out


def _mulhi_unsigned(a, b, ut, shape):
    half = ut.itemsize * 4
    mask = _const((1 << half) - 1, ut, shape)
    h = _const(half, ut, shape)
    a0, a1 = ops.bitwise_and(a, mask), ops.shift_right_logical(a, h)
    b0, b1 = ops.bitwise_and(b, mask), ops.shift_right_logical(b, h)
    p00, p01 = ops.mul(a0, b0), ops.mul(a0, b1)
    p10, p11 = ops.mul(a1, b0), ops.mul(a1, b1)
    mid = ops.add(
        ops.add(ops.shift_right_logical(p00, h), ops.bitwise_and(p01, mask)),
        ops.bitwise_and(p10, mask),
    )
    hi = ops.add(p11, ops.add(ops.shift_right_logical(p01, h), ops.shift_right_logical(p10, h)))
    return ops.add(hi, ops.shift_right_logical(mid, h))


def mulhi(x, y, /):
    """The high half of the bits of the double-width product ``x * y`` (signed for signed
    integers).

    Arguments:
      x, y: integer arrays of one dtype and shape.
    Returns:
      An array of that dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.mulhi(jnp.array([-5, 2**30], jnp.int32), jnp.array([7, 8], jnp.int32)))
      [-1  2]
    """
    x, dt = _int_operand("mulhi", x)
    y, dty = _int_operand("mulhi", y)
    if dt != dty:
        raise FunctxTypeError(
            f"lax.mulhi requires arguments to have the same dtypes, got {dt}, {dty}.{_loc()}"
        )
    sx, sy = get_aval(x).shape, get_aval(y).shape
    if sx != sy:
        raise FunctxTypeError(
            f"mulhi got incompatible shapes for broadcasting: {sx}, {sy}.{_loc()}"
        )
    ut = _UNSIGNED[dt.itemsize * 8]
    if dt == ut:
        return _mulhi_unsigned(x, y, ut, sx)
    xu, yu = ops.convert_element_type(x, ut), ops.convert_element_type(y, ut)
    hi = _mulhi_unsigned(xu, yu, ut, sx)
    zero_s, zero_u = _const(0, dt, sx), _const(0, ut, sx)
    hi = ops.sub(hi, ops.select(ops.lt(x, zero_s), yu, zero_u))
    hi = ops.sub(hi, ops.select(ops.lt(y, zero_s), xu, zero_u))
    return ops.convert_element_type(hi, dt)


def split(operand, sizes, axis=0):
    """Split ``operand`` along ``axis`` into pieces of the given sizes.

    Arguments:
      operand: an array.
      sizes: the sizes of the pieces (summing to the axis' length).
      axis: the axis.
    Returns:
      A list of arrays.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print([p.tolist() for p in lax.split(jnp.arange(5), [2, 3])])
      [[0, 1], [2, 3, 4]]
    """
    x = _as_array(operand)
    shape = get_aval(x).shape
    axis = operator.index(axis)
    if not -len(shape) <= axis < len(shape):
        raise FunctxValueError(f"axis {axis} is out of bounds for rank {len(shape)}{_loc()}")
    axis %= len(shape)
    sizes = [operator.index(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != shape[axis]:
        raise FunctxValueError(
            f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the operand shape "
            f"{list(shape)}{_loc()}"
        )
    out, start = [], 0
    for s in sizes:
        out.append(ops.slice_in_dim(x, start, start + s, 1, axis))
        start += s
    return out


def tile(operand, reps):
    """``operand`` repeated ``reps[i]`` times along each axis ``i``.

    Arguments:
      operand: an array.
      reps: one non-negative int per axis.
    Returns:
      An array of shape ``operand.shape[i] * reps[i]``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.tile(jnp.array([[1, 2]]), (2, 2)))
      [[1 2 1 2]
       [1 2 1 2]]
    """
    x = _as_array(operand)
    shape = get_aval(x).shape
    reps = tuple(operator.index(r) for r in reps)
    if len(reps) != len(shape):
        raise FunctxTypeError(
            f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} and "
            f"x.ndim={len(shape)}.{_loc()}"
        )
    if any(r < 0 for r in reps):
        raise FunctxValueError(f"reps must be non-negative, got {reps}{_loc()}")
    # broadcast to (r0, s0, r1, s1, ...) then merge each pair
    big = tuple(v for r, s in zip(reps, shape) for v in (r, s))
    dims = tuple(2 * i + 1 for i in range(len(shape)))
    out = ops.broadcast_in_dim(x, big, dims)
    return ops.reshape(out, tuple(r * s for r, s in zip(reps, shape)))


def collapse(operand, start_dimension, stop_dimension=None):
    """Merge the dimensions ``start_dimension`` up to (not including) ``stop_dimension`` into
    one.

    Arguments:
      operand: an array.
      start_dimension: the first dimension merged.
      stop_dimension: the end of the merged range (default: the last dimension included).
    Returns:
      The reshaped array.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.collapse(jnp.zeros((2, 3, 4)), 1).shape)
      (2, 12)
    """
    x = _as_array(operand)
    shape = get_aval(x).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    hi = max(hi, lo)
    return ops.reshape(x, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix products: ``lhs[..., i, j] * rhs[..., j, k]`` summed over ``j``, the
    leading dimensions matched (not broadcast).

    Arguments:
      lhs, rhs: arrays of one rank, at least 2, with equal batch dimensions.
      precision: as for ``dot_general``.
    Returns:
      An array of shape ``batch + (n, k)``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.batch_matmul(jnp.ones((2, 3, 4)), jnp.ones((2, 4, 5))).shape)
      (2, 3, 5)
    """
    lhs, rhs = _as_array(lhs), _as_array(rhs)
    nl, nr = get_aval(lhs).ndim, get_aval(rhs).ndim
    if min(nl, nr) < 2:
        raise FunctxValueError(
            f"Arguments to batch_matmul must be at least 2D, got {nl}, {nr}{_loc()}"
        )
    if nl != nr:
        raise FunctxValueError(
            f"Arguments to batch_matmul must have same ndim, got {nl}, {nr}{_loc()}"
        )
    batch = tuple(range(nl - 2))
    dims = (((nl - 1,), (nl - 2,)), (batch, batch))
    return ops.dot_general(lhs, rhs, dims, precision=precision)


def broadcast_to_rank(x, rank):
    """``x`` with size-1 dimensions prepended up to ``rank`` (unchanged when its rank is at
    least ``rank``).

    Arguments:
      x: an array or scalar.
      rank: the rank.
    Returns:
      An array.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.broadcast_to_rank(jnp.ones(3), 3).shape)
      (1, 1, 3)
    """
    x = _as_array(x)
    shape = get_aval(x).shape
    if len(shape) >= rank:
        return x
    new = (1,) * (rank - len(shape)) + shape
    return ops.broadcast_in_dim(x, new, tuple(range(rank - len(shape), rank)))


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
    """``operand`` with the slice at ``index`` along ``axis`` replaced by ``update`` (which may
    omit that axis).

    Arguments:
      operand: an array.
      update: the new slice (``operand``'s rank, size 1 along ``axis``, or one less).
      index: the (possibly traced) index; negative ones count from the end.
      axis: the axis.
      allow_negative_indices: whether negative indices count from the end.
    Returns:
      The updated array.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.dynamic_update_index_in_dim(jnp.zeros((3, 2)), jnp.ones(2), -1, 0))
      [[0. 0.]
       [0. 0.]
       [1. 1.]]
    """
    x, u = _as_array(operand), _as_array(update)
    nd = get_aval(x).ndim
    axis = operator.index(axis) % nd if nd else 0
    if get_aval(u).ndim == nd - 1:
        shape = list(get_aval(u).shape)
        shape.insert(axis, 1)
        u = ops.reshape(u, tuple(shape))
    idx = index
    if allow_negative_indices:
        n = get_aval(x).shape[axis]
        if isinstance(idx, (int, np.integer)):
            idx = idx + n if idx < 0 else idx
        else:
            idx = _as_array(idx)
            zero = ops.full((), 0, get_aval(idx).dtype)
            wrapped = ops.add(idx, ops.full((), n, get_aval(idx).dtype))
            idx = ops.select(ops.lt(idx, zero), wrapped, idx)
    return ops.dynamic_update_slice_in_dim(x, u, idx, axis)


def reduce_xor(operand, axes):
    """The bitwise exclusive or of the elements over ``axes``.

    Arguments:
      operand: a bool or integer array.
      axes: the axes to reduce.
    Returns:
      An array without those axes.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.reduce_xor(jnp.array([[1, 2, 4], [3, 3, 3]]), (1,)))
      [7 3]
    """
    x = _as_array(operand)
    dt = get_aval(x).dtype
    if dt not in dtypes.INTEGERS and dt != dtypes.bool_:
        raise FunctxTypeError(
            f"logical reduction requires operand dtype bool or int, got {dt}.{_loc()}"
        )
    zero = np.zeros((), dt)
    return _reduce(x, zero, ops.bitwise_xor, tuple(axes))


def optimization_barrier(operand, /):
    """The arguments, unchanged (JAX's barrier against reordering; functx's compiler needs no
    hint).

    Arguments:
      operand: a pytree of arrays.
    Returns:
      The same pytree, its leaves as arrays.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.optimization_barrier((jnp.ones(2), 3))[1])
      3
    """
    return tree_util.tree_map(_as_array, operand)


def empty(shape, dtype, *, out_sharding=None):
    """An array of ``shape`` and ``dtype`` whose values do not matter (zeros here, as JAX's
    are).

    Arguments:
      shape: the shape.
      dtype: the dtype.
      out_sharding: accepted for JAX's signature.
    Returns:
      An array.

    Example:
      >>> from functx import lax
      >>> import functx.numpy as jnp
      >>> print(lax.empty((2,), jnp.float32))
      [0. 0.]
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return ops.full(shape, 0, dtypes.canonicalize(np.dtype(dtype)))


def stack(operands, axis=0):
    """Join arrays of one shape and dtype along a new axis.

    Arguments:
      operands: a sequence of arrays.
      axis: the position of the new axis.
    Returns:
      An array with one more dimension.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print(lax.stack([jnp.ones(2), jnp.zeros(2)]))
      [[1. 1.]
       [0. 0.]]
    """
    xs = [_as_array(o) for o in operands]
    if not xs:
        raise FunctxValueError(f"Need at least one array to stack.{_loc()}")
    shapes = [get_aval(x).shape for x in xs]
    if any(s != shapes[0] for s in shapes):
        raise FunctxValueError(
            f"All input arrays must have the same shape. Got "
            f"{', '.join(str(s) for s in shapes)}.{_loc()}"
        )
    nd = len(shapes[0]) + 1
    axis = operator.index(axis)
    if not -nd <= axis < nd:
        raise FunctxValueError(f"axis {axis} is out of bounds for rank {nd}{_loc()}")
    axis %= nd
    new = shapes[0][:axis] + (1,) + shapes[0][axis:]
    return ops.concatenate([ops.reshape(x, new) for x in xs], axis)


def unstack(x, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple.

    Arguments:
      x: an array of rank at least 1.
      axis: the axis.
    Returns:
      A tuple of arrays of one dimension less.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> print([p.tolist() for p in lax.unstack(jnp.arange(6).reshape(2, 3), 1)])
      [[0, 3], [1, 4], [2, 5]]
    """
    x = _as_array(x)
    shape = get_aval(x).shape
    if not shape:
        raise FunctxValueError(f"lax.unstack: unstack requires at least one dimension.{_loc()}")
    axis = operator.index(axis) % len(shape)
    rest = shape[:axis] + shape[axis + 1 :]
    return tuple(
        ops.reshape(ops.slice_in_dim(x, i, i + 1, 1, axis), rest) for i in range(shape[axis])
    )


def reduce_sum(operand, axes):
    """Reduce ``operand`` over ``axes`` by the sum (``jax.lax.reduce_sum``).

    Arguments:
      operand: an array.
      axes: the axes to reduce (a sequence of ints).
    Returns:
      An array of ``operand``'s dtype without the reduced axes. Under
      ``functx.allow_f16_reductions(False)`` a ``float16``/``bfloat16`` operand reduced over an
      axis longer than 1 raises ``ValueError``, as JAX's does (``functx.numpy.sum`` adds such
      values in float32 and is not affected, as in JAX).
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.reduce_sum(np.float32([[1, 2], [3, 4]]), (0,))
      Array([4., 6.], dtype=float32)
    """
    aval = get_aval(operand)
    if (
        aval.dtype in (dtypes.float16, dtypes.bfloat16)
        and not config.allow_f16_reductions.value
        and any(aval.shape[a] != 1 for a in axes)
    ):
        raise FunctxValueError(
            f"reduce_sum on operand {aval.str_short()} is not allowed when "
            f"jax_allow_f16_reductions=False.{_loc()}"
        )
    return ops.reduce_sum(operand, axes)
