"""Sorting, selection and order statistics of ``functx.numpy``, on the ``sort`` and ``top_k``
primitives (``functx/control/sort.py``): ``sort``/``argsort``/``lexsort``/``sort_complex``,
``partition``/``argpartition``, ``searchsorted``, ``unique`` and the Array API ``unique_*``,
``nonzero``/``argwhere``/``flatnonzero`` and one-argument ``where``, and
``median``/``quantile``/``percentile`` with their ``nan`` forms. JAX's semantics: the order of
``lax.sort`` (NaNs last, -0.0 equal to 0.0, complex by real then imaginary part), data-dependent
shapes only on concrete input unless ``size=`` is given.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from functx import dtypes, ops
from functx.control import associative_scan as _ascan
from functx.control.sort import sort_p, top_k as _top_k
from functx.errors import (
    ConcretizationTypeError,
    FunctxTypeError,
    FunctxValueError,
    UnsupportedError,
)
from functx.numpy import _core as jnp
from functx.source_info import where as _loc
from functx.tracing import Tracer, get_aval


def _arr(a):
    return jnp.asarray(a)


def _axis(axis, ndim, what="axis"):
    try:
        axis = operator.index(axis)
    except TypeError:
        raise FunctxTypeError(f"{what} must be an int, got {axis!r}{_loc()}") from None
    if not -ndim <= axis < ndim:
        raise FunctxValueError(
            f"{what} {axis} is out of bounds for array of dimension {ndim}{_loc()}"
        )
    return axis % ndim


def _no_kind(kind, order, name):
    if kind is not None:
        raise FunctxTypeError(
            f"'kind' argument to {name} is not supported. Use stable=True or stable=False to "
            f"specify sort stability.{_loc()}"
        )
    if order is not None:
        raise FunctxTypeError(f"'order' argument to {name} is not supported.{_loc()}")


def _index_dtype(n):
    return dtypes.default_int() if n < 2**31 else dtypes.int64


# --- sort ----------------------------------------------------------------------------------------
def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
    """A sorted copy of ``a`` (JAX's ``jnp.sort``).

    Arguments:
      a: the array.
      axis: the axis to sort along (default the last); None sorts the flattened array.
      kind, order: unsupported, as in JAX (a TypeError when given).
      stable: accepted; the sort is always stable.
      descending: sort from largest to smallest.

    Returns:
      The sorted array (NaNs last, or first when descending).

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.sort(jnp.array([2, 3, 1]))
      Array([1, 2, 3], dtype=int32)
    """
    _no_kind(kind, order, "sort")
    a = _arr(a)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    d = _axis(axis, get_aval(a).ndim)
    out = sort_p.bind(a, dimension=d, is_stable=bool(stable), num_keys=1)[0]
    return ops.rev(out, (d,)) if descending else out


def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
    """The indices that sort ``a`` (JAX's ``jnp.argsort``).

    Arguments:
      a: the array.
      axis: the axis to sort along (default the last); None for the flattened array.
      kind, order: unsupported, as in JAX (a TypeError when given).
      stable: accepted; ties always keep their order (also when descending).
      descending: sort from largest to smallest.
      dtype: the index dtype (default the default integer dtype).

    Returns:
      Integer indices of ``a``'s shape (or ``(a.size,)``).

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.argsort(jnp.array([3.0, 1.0, 2.0]))
      Array([1, 2, 0], dtype=int32)
    """
    _no_kind(kind, order, "argsort")
    a = _arr(a)
    if axis is None:
        a, axis = jnp.ravel(a), 0
    av = get_aval(a)
    d = _axis(axis, av.ndim)
    idt = (
        dtypes.check_user_dtype(dtype, "argsort")
        if dtype is not None
        else _index_dtype(av.shape[d])
    )
    iota = ops.broadcasted_iota(idt, av.shape, d)
    if descending:
        a, iota = ops.rev(a, (d,)), ops.rev(iota, (d,))
    _, idx = sort_p.bind(a, iota, dimension=d, is_stable=bool(stable), num_keys=1)
    return ops.rev(idx, (d,)) if descending else idx


def lexsort(keys, axis=-1):
    """Indices sorting by several keys, the last primary (JAX's ``jnp.lexsort``).

    Arguments:
      keys: a sequence of arrays of one shape (or a 2-D array, one key per row).
      axis: the axis to sort along (default the last).

    Returns:
      The integer permutation.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.lexsort((jnp.array([1, 0, 1]), jnp.array([0, 0, 0])))
      Array([1, 0, 2], dtype=int32)
    """
    keys = [_arr(k) for k in (list(keys) if not hasattr(keys, "shape") else list(keys))]
    if not keys:
        raise FunctxTypeError(f"need sequence of keys with len > 0 in lexsort{_loc()}")
    shape = get_aval(keys[0]).shape
    if any(get_aval(k).shape != shape for k in keys[1:]):
        raise FunctxValueError(f"all keys need to be the same shape{_loc()}")
    if len(shape) == 0:
        return jnp.zeros((), dtypes.default_int())
    d = _axis(axis, len(shape))
    iota = ops.broadcasted_iota(_index_dtype(shape[d]), shape, d)
    return sort_p.bind(*keys[::-1], iota, dimension=d, is_stable=True, num_keys=len(keys))[-1]


def sort_complex(a):
    """``a`` sorted along its last axis as complex numbers (JAX's ``jnp.sort_complex``).

    Arguments:
      a: the array (real arrays are converted to complex).

    Returns:
      A complex array, sorted by real part, then imaginary part.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.sort_complex(jnp.array([2.0, 1.0]))
      Array([1.+0.j, 2.+0.j], dtype=complex64)
    """
    a = sort(a)
    dt = get_aval(a).dtype
    if dt not in dtypes.COMPLEX:
        a = ops.convert_element_type(a, dtypes.to_complex(dt))
    return a


# --- partition -----------------------------------------------------------------------------------
def _partition_prep(a, kth, axis, name):
    a = _arr(a)
    av = get_aval(a)
    if av.dtype in dtypes.COMPLEX:
        raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
    axis = _axis(axis, av.ndim)
    kth = _axis(kth, av.shape[axis], "kth")
    a = jnp.swapaxes(a, axis, -1)
    if av.dtype in dtypes.UNSIGNED:
        neg = ops.neg(ops.add(a, ops.full_like(a, 1)))
    else:
        neg = ops.neg(a)
    return a, axis, kth, neg


def partition(a, kth, axis=-1):
    """``a`` with its ``kth`` element (along ``axis``) in sorted position, smaller ones before it
    and larger ones after (JAX's ``jnp.partition``, through two ``top_k``).

    Arguments:
      a: the array (not complex).
      kth: the static index of the pivot.
      axis: the axis (default the last).

    Returns:
      The partitioned array.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.partition(jnp.array([5, 1, 4, 2, 3]), 2)[2]
      Array(3, dtype=int32)
    """
    a, axis, kth, neg = _partition_prep(a, kth, axis, "partition")
    n = get_aval(a).shape[-1]
    low = ops.neg(_top_k(neg, kth + 1)[0])
    if get_aval(a).dtype in dtypes.UNSIGNED:
        low = ops.sub(low, ops.full_like(low, 1))
    high = _top_k(a, n - kth - 1)[0]
    return jnp.swapaxes(ops.concatenate([low, high], get_aval(a).ndim - 1), -1, axis)


def argpartition(a, kth, axis=-1):
    """Indices that partition ``a`` at ``kth`` (JAX's ``jnp.argpartition``).

    Arguments:
      a: the array (not complex).
      kth: the static index of the pivot.
      axis: the axis (default the last).

    Returns:
      ``int32`` indices: the first ``kth`` of smaller values, then the pivot's, then the rest.

    Example:
      >>> import functx.numpy as jnp
      >>> int(jnp.argpartition(jnp.array([5, 1, 4, 2, 3]), 2)[2])
      4
    """
    a, axis, kth, neg = _partition_prep(a, kth, axis, "argpartition")
    shape = get_aval(a).shape
    n = shape[-1]
    bottom = _top_k(neg, kth + 1)[1]
    # the rest: every index not in ``bottom``, found through a proxy that zeroes those
    hit = jnp.any(
        ops.eq(
            ops.expand_dims(bottom, (len(shape),)),
            ops.broadcasted_iota(dtypes.int32, shape[:-1] + (kth + 1, n), len(shape)),
        ),
        axis=-2,
    )
    proxy = jnp.where(hit, 0.0, 1.0).astype(dtypes.float32)
    top = _top_k(proxy, n - kth - 1)[1]
    return jnp.swapaxes(ops.concatenate([bottom, top], len(shape) - 1), -1, axis)


# --- searchsorted --------------------------------------------------------------------------------
def _sort_keys(x):
    """Keys in the sort order (floats: -0.0 -> 0.0, NaN largest via a flag), as a list of
    (value, is_nan) pairs; complex -> real then imaginary."""
    dt = get_aval(x).dtype
    parts = [ops.real(x), ops.imag(x)] if dt in dtypes.COMPLEX else [x]
    return parts


def _less(xs, ys, equal_counts):
    """``xs < ys`` (or ``<=`` when ``equal_counts``) in lax.sort's order, elementwise."""
    res = None
    for x, y in reversed(list(zip(xs, ys))):
        if get_aval(x).dtype in dtypes.FLOATS:
            xn, yn = ops.ne(x, x), ops.ne(y, y)
            lt = ops.bitwise_or(ops.lt(x, y), ops.bitwise_and(ops.bitwise_not(xn), yn))
            eq = ops.bitwise_or(ops.eq(x, y), ops.bitwise_and(xn, yn))
        else:
            lt, eq = ops.lt(x, y), ops.eq(x, y)
        if res is None:
            res = ops.bitwise_or(lt, eq) if equal_counts else lt
        else:
            res = ops.bitwise_or(lt, ops.bitwise_and(eq, res))
    return res


def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
    """Where the elements of ``v`` would go in the sorted 1-D ``a`` (JAX's ``jnp.searchsorted``).

    Arguments:
      a: a sorted 1-D array (in lax.sort's order).
      v: the values to place.
      side: 'left' (the first suitable index) or 'right' (the last).
      sorter: optional indices that sort ``a``.
      method: 'scan', 'scan_unrolled' or 'sort' (a binary search, unrolled over the static
        length), or 'compare_all' (every value compared with every element); one result.

    Returns:
      ``int32`` indices of ``v``'s shape.

    Differences from JAX: the ``'scan'``, ``'scan_unrolled'`` and ``'sort'`` methods are one binary
    search unrolled over the static length.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.searchsorted(jnp.array([1, 2, 3]), jnp.array([0, 2, 5]))
      Array([0, 1, 3], dtype=int32)
    """
    if side not in ("left", "right"):
        raise FunctxValueError(
            f"{side!r} is an invalid value for keyword 'side'. Expected one of ['left', 'right']."
        )
    if method not in ("scan", "scan_unrolled", "sort", "compare_all"):
        raise FunctxValueError(
            f"{method!r} is an invalid value for keyword 'method'. Expected one of "
            "['sort', 'scan', 'scan_unrolled', 'compare_all']."
        )
    a, v = _arr(a), _arr(v)
    if get_aval(a).ndim != 1:
        raise FunctxValueError(f"a should be 1-dimensional{_loc()}")
    if sorter is not None:
        a = jnp.take(a, _arr(sorter))
    dt = jnp.result_type(a, v)
    a, v = jnp.astype(a, dt), jnp.astype(v, dt)
    n = get_aval(a).shape[0]
    vs = get_aval(v).shape
    if n == 0:
        return jnp.zeros(vs, dtypes.int32)
    if method == "compare_all":
        ax = [ops.broadcast_in_dim(p, vs + (n,), (len(vs),)) for p in _sort_keys(a)]
        vx = [ops.broadcast_in_dim(p, vs + (n,), tuple(range(len(vs)))) for p in _sort_keys(v)]
        before = _less(ax, vx, side == "right")
        return jnp.sum(before, axis=-1, dtype=dtypes.int32)
    # a binary search, unrolled over the static length: ceil(log2(n + 1)) gathers of ``a``
    i32 = dtypes.int32
    lo, hi = ops.full(vs, 0, i32), ops.full(vs, n, i32)
    vk = _sort_keys(v)
    for _ in range(int(n).bit_length()):
        mid = ops.div(ops.add(lo, hi), ops.full(vs, 2, i32))
        am = jnp.take(a, ops.min(mid, ops.full(vs, n - 1, i32)), mode="clip")
        right = ops.bitwise_and(ops.lt(lo, hi), _less(_sort_keys(am), vk, side == "right"))
        left = ops.bitwise_and(ops.lt(lo, hi), ops.bitwise_not(right))
        lo = jnp.where(right, ops.add(mid, ops.full(vs, 1, i32)), lo)
        hi = jnp.where(left, mid, hi)
    return lo


# --- nonzero & co --------------------------------------------------------------------------------
def _concrete_count(mask, name):
    if isinstance(mask, Tracer):
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: the size "
            f"argument of jnp.{name} must be statically specified to use jnp.{name} within "
            f"JAX transformations.{_loc()}"
        )
    return int(np.count_nonzero(np.asarray(mask)))


def _size(size, name):
    try:
        return operator.index(size)
    except TypeError:
        raise FunctxTypeError(
            f"jnp.{name}: size must be a static int, got {size!r}{_loc()}"
        ) from None


def _flat_positions(mask, size, name):
    """The flat indices of the True elements of ``mask`` (a bool array), the first ``size`` of
    them, and which of the ``size`` slots hold one."""
    flat = jnp.ravel(mask)
    n = get_aval(flat).shape[0]
    if size is None:
        size = _concrete_count(mask, name)
    size = _size(size, name)
    idt = dtypes.default_int()
    if n == 0 or size == 0:
        return jnp.zeros((size,), idt), jnp.zeros((size,), dtypes.bool_), size
    pos = ops.sub(_ascan.cumsum(ops.convert_element_type(flat, idt), 0), ops.full((n,), 1, idt))
    slot = jnp.where(flat, pos, size)
    out = jnp.zeros((size,), idt).at[slot].set(ops.iota(idt, n))
    valid = ops.lt(ops.iota(idt, size), ops.full((size,), jnp.sum(flat, dtype=idt), idt))
    return out, valid, size


def nonzero(a, *, size=None, fill_value=None):
    """The indices of ``a``'s nonzero elements, one array per axis (JAX's ``jnp.nonzero``).

    Arguments:
      a: the array (rank >= 1).
      size: the static number of indices to return (needed under ``jit``); missing ones are
        ``fill_value``, extra ones dropped.
      fill_value: a scalar, or one per axis (default 0).

    Returns:
      A tuple of index arrays (the default integer dtype).

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.nonzero(jnp.array([0, 3, 0, 4]))
      (Array([1, 3], dtype=int32),)
    """
    a = _arr(a)
    av = get_aval(a)
    if av.ndim == 0:
        raise FunctxValueError(
            "Calling nonzero on 0d arrays is not allowed. Use jnp.atleast_1d(scalar).nonzero() "
            "instead. If this is being called from within a tracing context, a size parameter "
            f"must also be specified.{_loc()}"
        )
    mask = a if av.dtype == dtypes.bool_ else ops.ne(a, ops.full_like(a, 0))
    if size is None and isinstance(a, Tracer):
        _concrete_count(a, "nonzero")
    flat, valid, size = _flat_positions(mask, size, "nonzero")
    fills = fill_value if isinstance(fill_value, (tuple, list)) else [fill_value] * av.ndim
    if len(fills) != av.ndim:
        raise FunctxValueError(
            f"fill_value must be a scalar or a tuple of length {av.ndim}; got {fill_value}{_loc()}"
        )
    out, rem = [], flat
    strides = [int(np.prod(av.shape[d + 1 :], dtype=np.int64)) for d in range(av.ndim)]
    idt = dtypes.default_int()
    for d in range(av.ndim):
        c = jnp.floor_divide(rem, strides[d]) if strides[d] > 1 else rem
        c = jnp.remainder(c, av.shape[d]) if av.shape[d] else c
        f = 0 if fills[d] is None else fills[d]
        out.append(jnp.where(valid, c, ops.convert_element_type(f, idt)).astype(idt))
    return tuple(out)


def flatnonzero(a, *, size=None, fill_value=None):
    """The indices of the nonzero elements of the flattened ``a`` (JAX's ``jnp.flatnonzero``).

    Arguments:
      a: the array.
      size: the static number of indices (needed under ``jit``).
      fill_value: the index filling missing slots (default 0).

    Returns:
      A 1-D index array.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.flatnonzero(jnp.array([[0, 1], [2, 0]]))
      Array([1, 2], dtype=int32)
    """
    return nonzero(jnp.ravel(_arr(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
    """The indices of ``a``'s nonzero elements as rows (JAX's ``jnp.argwhere``).

    Arguments:
      a: the array.
      size: the static number of rows (needed under ``jit``).
      fill_value: filling missing rows (default 0).

    Returns:
      An ``(n, a.ndim)`` index array.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.argwhere(jnp.array([[0, 1], [2, 0]]))
      Array([[0, 1],
             [1, 0]], dtype=int32)
    """
    a = _arr(a)
    nd = get_aval(a).ndim
    if nd == 0:
        a = jnp.reshape(a, (1,))
    res = nonzero(a, size=size, fill_value=fill_value)
    if nd == 0:
        return jnp.zeros((res[0].shape[0], 0), dtypes.default_int())
    return jnp.stack(res, -1)


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
    """Elements of ``x`` where ``condition``, else of ``y``; with only ``condition``, its
    ``nonzero`` (JAX's ``jnp.where``).

    Arguments:
      condition: the boolean (or truthy) array.
      x, y: the choices (both or neither).
      size, fill_value: for the one-argument form, as ``nonzero``'s.

    Returns:
      The selected array, or ``nonzero(condition, size=size, fill_value=fill_value)``.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.where(jnp.array([True, False]), jnp.array([1, 2]), 0)
      Array([1, 0], dtype=int32)
      >>> jnp.where(jnp.array([0, 5, 7]))
      (Array([1, 2], dtype=int32),)
    """
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        pos = 2 if x is not None else 1
        raise FunctxTypeError(
            f"where requires ndarray or scalar arguments, got {type(None)} at position {pos}."
        )
    if size is not None or fill_value is not None:
        raise FunctxValueError(
            f"size and fill_value arguments cannot be used in three-term where function.{_loc()}"
        )
    return jnp.where(condition, x, y)


# --- unique --------------------------------------------------------------------------------------
class _UniqueAll(NamedTuple):
    values: object
    indices: object
    inverse_indices: object
    counts: object


class _UniqueCounts(NamedTuple):
    values: object
    counts: object


class _UniqueInverse(NamedTuple):
    values: object
    inverse_indices: object


def _unique_1d(x, size, fill_value, equal_nan, name):
    """values, first indices, inverse, counts of the 1-D ``x`` (``size`` slots)."""
    n = get_aval(x).shape[0]
    idt = dtypes.default_int()
    iota = ops.iota(idt, n)
    s, perm = sort_p.bind(x, iota, dimension=0, is_stable=True, num_keys=1)
    if n:
        a, b = s[1:], s[:-1]
        diff = ops.ne(a, b)
        if equal_nan and dtypes.is_inexact(get_aval(x).dtype):
            diff = ops.bitwise_and(
                diff, ops.bitwise_not(ops.bitwise_and(jnp.isnan(a), jnp.isnan(b)))
            )
        first = ops.concatenate([ops.full((1,), True, dtypes.bool_), diff], 0)
    else:
        first = jnp.zeros((0,), dtypes.bool_)
    if size is None:
        if isinstance(x, Tracer):
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: the size "
                f"argument of jnp.{name} must be statically specified to use jnp.{name} within "
                f"JAX transformations.{_loc()}"
            )
        size = int(np.count_nonzero(np.asarray(first)))
    size = _size(size, name)
    gid = (
        ops.sub(_ascan.cumsum(ops.convert_element_type(first, idt), 0), ops.full((n,), 1, idt))
        if n
        else iota
    )
    slot = jnp.where(first, gid, size)
    if fill_value is None:
        fill = s[0] if n else jnp.zeros((), get_aval(x).dtype)
    else:
        fill = ops.convert_element_type(fill_value, get_aval(x).dtype)
    values = ops.broadcast_in_dim(fill, (size,), ()).at[slot].set(s)
    # (JAX fills the missing slots' indices with the first value's index)
    first_index = perm[0] if n else jnp.zeros((), idt)
    index = ops.broadcast_in_dim(first_index, (size,), ()).at[slot].set(perm)
    inverse = jnp.zeros((n,), idt).at[perm].set(gid)
    counts = jnp.zeros((size,), idt).at[gid].add(ops.full((n,), 1, idt))
    return values, index, inverse, counts


def unique(
    ar,
    return_index=False,
    return_inverse=False,
    return_counts=False,
    axis=None,
    *,
    equal_nan=True,
    size=None,
    fill_value=None,
    sorted=True,  # noqa: A002
):
    """The sorted unique elements of ``ar`` (JAX's ``jnp.unique``).

    Arguments:
      ar: the array (flattened).
      return_index: also return the index of each value's first occurrence.
      return_inverse: also return, for each element, the index of its value (``ar``'s shape).
      return_counts: also return how often each value occurs.
      axis: None (the flattened array) or the axis whose slices are compared.
      equal_nan: treat all NaNs as one value.
      size: the static number of values (needed under ``jit``); missing ones are ``fill_value``
        (default the smallest value), with index 0 and count 0.
      fill_value: see ``size``.
      sorted: accepted (the values are always sorted).

    Returns:
      The values, or a tuple with the requested extras in the order above.

    Differences from JAX: ``axis=`` of an empty array raises UnsupportedError.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.unique(jnp.array([3, 1, 3, 2]))
      Array([1, 2, 3], dtype=int32)
    """
    ar = _arr(ar)
    if axis is not None:
        return _unique_axis(
            ar, axis, return_index, return_inverse, return_counts, equal_nan, size, fill_value
        )
    shape = get_aval(ar).shape
    values, index, inverse, counts = _unique_1d(
        jnp.ravel(ar), size, fill_value, equal_nan, "unique"
    )
    out = [values]
    if return_index:
        out.append(index)
    if return_inverse:
        out.append(jnp.reshape(inverse, shape))
    if return_counts:
        out.append(counts)
    return out[0] if len(out) == 1 else tuple(out)


def _unique_axis(ar, axis, return_index, return_inverse, return_counts, equal_nan, size, fill):
    """``unique`` of the slices along ``axis``: a lexicographic sort of the rows (one key per
    column), then the 1-D algorithm on the run starts."""
    av = get_aval(ar)
    axis = _axis(axis, av.ndim)
    x = jnp.moveaxis(ar, axis, 0)
    rest = get_aval(x).shape[1:]
    n, m = av.shape[axis], int(np.prod(rest, dtype=np.int64))
    if n == 0 or m == 0:
        raise UnsupportedError(f"jnp.unique(axis=...) of an empty array is not supported{_loc()}")
    rows = jnp.reshape(x, (n, m))
    idt = dtypes.default_int()
    cols = [rows[:, c] for c in range(m)]
    out = sort_p.bind(*cols, ops.iota(idt, n), dimension=0, is_stable=True, num_keys=m)
    srt, perm = jnp.stack(out[:-1], 1), out[-1]
    if n > 1:
        a, b = srt[1:], srt[:-1]
        ne = ops.ne(a, b)
        if equal_nan and dtypes.is_inexact(av.dtype):
            ne = ops.bitwise_and(ne, ops.bitwise_not(ops.bitwise_and(jnp.isnan(a), jnp.isnan(b))))
        diff = jnp.any(ne, axis=1)
        first = ops.concatenate([ops.full((1,), True, dtypes.bool_), diff], 0)
    else:
        first = ops.full((1,), True, dtypes.bool_)
    if size is None:
        if isinstance(ar, Tracer):
            raise ConcretizationTypeError(
                "Abstract tracer value encountered where concrete value is expected: the size "
                "argument of jnp.unique must be statically specified to use jnp.unique within "
                f"JAX transformations.{_loc()}"
            )
        size = int(np.count_nonzero(np.asarray(first)))
    size = _size(size, "unique")
    ones = ops.convert_element_type(first, idt)
    gid = ops.sub(_ascan.cumsum(ones, 0), ops.full((n,), 1, idt))
    slot = jnp.where(first, gid, size)
    base = srt[0] if fill is None else ops.full((m,), fill, av.dtype)
    values = ops.broadcast_in_dim(base, (size, m), (1,)).at[slot].set(srt)
    values = jnp.moveaxis(jnp.reshape(values, (size,) + rest), 0, axis)
    res = [values]
    if return_index:
        res.append(ops.broadcast_in_dim(perm[0], (size,), ()).at[slot].set(perm))
    if return_inverse:
        res.append(jnp.zeros((n,), idt).at[perm].set(gid))
    if return_counts:
        res.append(jnp.zeros((size,), idt).at[gid].add(ops.full((n,), 1, idt)))
    return res[0] if len(res) == 1 else tuple(res)


def unique_all(x, /, *, size=None, fill_value=None):
    """The Array API ``unique_all``: values, first indices, inverse indices and counts.

    Arguments:
      x: the array.
      size, fill_value: as ``unique``'s.

    Returns:
      A named tuple ``(values, indices, inverse_indices, counts)``.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.unique_all(jnp.array([2, 1, 2])).counts
      Array([1, 2], dtype=int32)
    """
    x = _arr(x)
    v, i, inv, c = _unique_1d(jnp.ravel(x), size, fill_value, False, "unique_all")
    return _UniqueAll(v, i, jnp.reshape(inv, get_aval(x).shape), c)


def unique_counts(x, /, *, size=None, fill_value=None):
    """The Array API ``unique_counts``: values and counts.

    Arguments:
      x: the array.
      size, fill_value: as ``unique``'s.

    Returns:
      A named tuple ``(values, counts)``.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.unique_counts(jnp.array([2, 1, 2])).values
      Array([1, 2], dtype=int32)
    """
    x = _arr(x)
    v, _, _, c = _unique_1d(jnp.ravel(x), size, fill_value, False, "unique_counts")
    return _UniqueCounts(v, c)


def unique_inverse(x, /, *, size=None, fill_value=None):
    """The Array API ``unique_inverse``: values and inverse indices.

    Arguments:
      x: the array.
      size, fill_value: as ``unique``'s.

    Returns:
      A named tuple ``(values, inverse_indices)``, the latter of ``x``'s shape.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.unique_inverse(jnp.array([2, 1, 2])).inverse_indices
      Array([1, 0, 1], dtype=int32)
    """
    x = _arr(x)
    v, _, inv, _ = _unique_1d(jnp.ravel(x), size, fill_value, False, "unique_inverse")
    return _UniqueInverse(v, jnp.reshape(inv, get_aval(x).shape))


def unique_values(x, /, *, size=None, fill_value=None):
    """The Array API ``unique_values``: the sorted distinct values.

    Arguments:
      x: the array.
      size, fill_value: as ``unique``'s.

    Returns:
      A 1-D array.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.unique_values(jnp.array([2, 1, 2]))
      Array([1, 2], dtype=int32)
    """
    return _unique_1d(jnp.ravel(_arr(x)), size, fill_value, False, "unique_values")[0]


# --- quantiles -----------------------------------------------------------------------------------
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(a, q, axis, method, keepdims, nan_aware, name, weights=None):
    if method not in _METHODS + ("inverted_cdf",):
        raise FunctxValueError(
            "method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' or "
            "'inverted_cdf'"
        )
    a, q = _arr(a), _arr(q)
    if weights is not None:
        weights = _arr(weights)
        if get_aval(weights).dtype in dtypes.COMPLEX:
            raise FunctxValueError("Weights cannot be complex types.")
        if method != "inverted_cdf":
            raise NotImplementedError(
                f"{method} doesn't support weights. Only method 'inverted_cdf' supports weights."
            )
        a, weights = jnp._promote_only(a, weights, kind="inexact")
    if get_aval(a).dtype in dtypes.COMPLEX:
        raise FunctxValueError(
            "quantile does not support complex input, as the operation is poorly defined."
        )
    if not dtypes.is_inexact(get_aval(a).dtype):
        a = ops.convert_element_type(a, dtypes.to_inexact(get_aval(a).dtype))
    av = get_aval(a)
    q = ops.convert_element_type(q, av.dtype)  # positions and weights in a's dtype
    qv = get_aval(q)
    if qv.ndim > 1:
        raise FunctxValueError(f"q must be have rank <= 1, got shape {qv.shape}")
    nd = av.ndim
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(_axis(x, nd) for x in (axis if isinstance(axis, (tuple, list)) else (axis,)))
        if len(set(axes)) != len(axes):
            raise FunctxValueError("repeated axis")
    keep = [d for d in range(nd) if d not in axes]
    rest = tuple(av.shape[d] for d in keep)
    n = int(np.prod([av.shape[d] for d in axes], dtype=np.int64))
    x = jnp.reshape(jnp.transpose(a, keep + list(axes)), rest + (n,))
    if nan_aware:
        x = jnp.where(jnp.isnan(x), np.nan, x)
    else:
        x = jnp.where(jnp.any(jnp.isnan(x), axis=-1, keepdims=True), np.nan, x)
    if method == "inverted_cdf":
        w = _weights_like(a, weights, axis, axes)
        w = jnp.reshape(jnp.transpose(w, keep + list(axes)), rest + (n,))
        s, w = sort_p.bind(x, w, dimension=len(rest), is_stable=True, num_keys=1)
        out = _inverted_cdf(s, w, q, n, nan_aware)
        if keepdims:
            shape = list(av.shape)
            for d in axes:
                shape[d] = 1
            out = jnp.reshape(out, get_aval(q).shape + tuple(shape))
        return out
    s = sort_p.bind(x, dimension=len(rest), is_stable=True, num_keys=1)[0]
    dt = get_aval(q).dtype
    if nan_aware:
        cnt = jnp.sum(ops.bitwise_not(jnp.isnan(s)), axis=-1, dtype=dt)  # rest
    else:
        cnt = ops.full(rest, n, dt)
    qs = qv.shape
    qb = ops.broadcast_in_dim(q, qs + rest, tuple(range(len(qs))))
    cb = ops.broadcast_in_dim(cnt, qs + rest, tuple(range(len(qs), len(qs) + len(rest))))
    pos = ops.mul(qb, ops.sub(cb, ops.full_like(cb, 1)))
    low, high = ops.floor(pos), ops.ceil(pos)
    hw = ops.sub(pos, low)
    lw = ops.sub(ops.full_like(hw, 1), hw)
    top = ops.max(ops.sub(cb, ops.full_like(cb, 1)), ops.full_like(cb, 0))
    low = ops.min(ops.max(low, ops.full_like(low, 0)), top)
    high = ops.min(ops.max(high, ops.full_like(high, 0)), top)
    sb = ops.broadcast_in_dim(s, qs + rest + (n,), tuple(range(len(qs), len(qs) + len(rest) + 1)))
    idt = dtypes.int32

    def take(i):
        i = ops.expand_dims(ops.convert_element_type(i, idt), (len(qs) + len(rest),))
        return ops.squeeze(jnp.take_along_axis(sb, i, -1, mode="clip"), (len(qs) + len(rest),))

    lo_v, hi_v = take(low), take(high)
    if method == "linear":
        out = ops.add(
            ops.mul(ops.convert_element_type(lo_v, dt), lw),
            ops.mul(ops.convert_element_type(hi_v, dt), hw),
        )
    elif method == "lower":
        out = lo_v
    elif method == "higher":
        out = hi_v
    elif method == "nearest":
        out = jnp.where(ops.le(hw, ops.full_like(hw, 0.5)), lo_v, hi_v)
    else:
        out = ops.mul(ops.add(lo_v, hi_v), ops.full_like(lo_v, 0.5))
    if keepdims:
        shape = list(av.shape)
        for d in axes:
            shape[d] = 1
        out = jnp.reshape(out, qs + tuple(shape))
    return out


def _weights_like(a, weights, axis, axes):
    """The weights of ``inverted_cdf`` as an array of ``a``'s shape (ones when None; weights of
    the reduced axes' shape, in ``axis``'s order, are broadcast along the others)."""
    av = get_aval(a)
    if weights is None:
        return ops.full(av.shape, 1, av.dtype)
    wv = get_aval(weights)
    if wv.shape == av.shape:
        return weights
    if axis is None:
        raise FunctxValueError("Weights shape must match 'a' shape when axis is None.")
    want = tuple(av.shape[d] for d in axes)
    if wv.shape != want:
        raise FunctxValueError(f"Weights shape {wv.shape} must match reduction axes {want}")
    order = sorted(range(len(axes)), key=lambda i: axes[i])  # (axis=(2, 0): transposed)
    return ops.broadcast_in_dim(ops.transpose(weights, order), av.shape, tuple(sorted(axes)))


def _inverted_cdf(s, w, q, n, nan_aware):
    """The inverted-CDF quantiles of the sorted rows ``s`` (shape ``rest + (n,)``) with their
    weights ``w``: the first element whose cumulative weight reaches ``q`` times the row's total.
    A negative or NaN weight, or a NaN datum (a row of NaNs for ``nanquantile``), gives NaN."""
    dt = get_aval(s).dtype
    rest = get_aval(s).shape[:-1]
    qs = get_aval(q).shape
    zero = ops.full((), 0, dt)
    nan = jnp.isnan(s)
    bad = ops.bitwise_or(ops.lt(w, ops.full_like(w, 0)), jnp.isnan(w))
    cw = jnp.cumsum(jnp.where(ops.bitwise_or(bad, nan), zero, w), axis=-1)
    total = cw[..., -1]  # rest
    k = len(qs)
    target = ops.mul(
        ops.broadcast_in_dim(q, qs + rest, tuple(range(k))),
        ops.broadcast_in_dim(total, qs + rest, tuple(range(k, k + len(rest)))),
    )
    cwb = ops.broadcast_in_dim(cw, qs + rest + (n,), tuple(range(k, k + len(rest) + 1)))
    below = ops.lt(cwb, ops.expand_dims(target, (k + len(rest),)))
    idx = jnp.sum(below, axis=-1, dtype=np.int32)
    if nan_aware:
        valid = jnp.sum(ops.bitwise_not(nan), axis=-1, dtype=np.int32)
    else:
        valid = ops.full(rest, n, dtypes.int32)
    limit = ops.broadcast_in_dim(
        ops.sub(valid, ops.full_like(valid, 1)), qs + rest, tuple(range(k, k + len(rest)))
    )
    idx = ops.max(ops.min(idx, limit), ops.full_like(idx, 0))
    sb = ops.broadcast_in_dim(s, qs + rest + (n,), tuple(range(k, k + len(rest) + 1)))
    out = ops.squeeze(
        jnp.take_along_axis(sb, ops.expand_dims(idx, (k + len(rest),)), -1, mode="clip"),
        (k + len(rest),),
    )
    force = jnp.any(bad, axis=-1)
    if nan_aware:
        force = ops.bitwise_or(force, ops.eq(valid, ops.full_like(valid, 0)))
    else:
        force = ops.bitwise_or(force, jnp.any(nan, axis=-1))
    force = ops.broadcast_in_dim(force, qs + rest, tuple(range(k, k + len(rest))))
    return jnp.where(force, ops.full((), np.nan, dt), out)


def _no_out(out, overwrite_input, name):
    """Arrays are immutable: ``out=`` and ``overwrite_input=True`` are a ValueError, as JAX's."""
    if out is not None or overwrite_input:
        arg = "out" if out is not None else "overwrite_input=True"
        raise FunctxValueError(
            f"jnp.{name} does not support {arg}: arrays are immutable, so use the returned "
            f"array instead.{_loc()}"
        )


def _pct(q):
    q = _arr(q)
    if not dtypes.is_inexact(get_aval(q).dtype):
        q = ops.convert_element_type(q, dtypes.default_float())
    return ops.div(q, ops.full_like(q, 100))


def _quantile_api(name, nan, percent, doc):
    """``quantile``, ``percentile`` (``percent``: ``q`` in percent) or their ``nan`` forms
    (``nan``: NaNs left out), with JAX's signature and the docstring ``doc``; errors name the
    quantile function, as JAX's do."""
    quantile_name = "nanquantile" if nan else "quantile"

    def fn(
        a,
        q,
        axis=None,
        out=None,
        overwrite_input=False,
        method="linear",
        keepdims=False,
        *,
        weights=None,
    ):
        _no_out(out, overwrite_input, name)
        q = _pct(q) if percent else q
        return _quantile(a, q, axis, method, keepdims, nan, quantile_name, weights)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


quantile = _quantile_api(
    "quantile",
    False,
    False,
    """The ``q``-th quantiles of ``a`` along ``axis`` (JAX's ``jnp.quantile``; a NaN in a slice
    gives NaN).

    Arguments:
      a: the array (not complex).
      q: a quantile in [0, 1], or a 1-D array of them.
      axis: an int, a tuple of ints, or None (all axes).
      out, overwrite_input: unsupported, as in JAX.
      method: 'linear', 'lower', 'higher', 'midpoint', 'nearest' or 'inverted_cdf' (the first
        sorted element whose cumulative weight reaches ``q`` of the total).
      keepdims: keep the reduced axes with size 1.
      weights: with 'inverted_cdf' only (NotImplementedError otherwise, as in JAX): weights of
        ``a``'s shape, or of the reduced axes' shape; a negative or NaN weight gives NaN.

    Returns:
      The quantiles, of shape ``q.shape`` + the remaining axes, in an inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.quantile(jnp.array([1.0, 2.0, 3.0, 4.0]), 0.5)
      Array(2.5, dtype=float32)
      >>> w = jnp.array([1.0, 1.0, 1.0, 5.0])
      >>> jnp.quantile(jnp.array([1.0, 2.0, 3.0, 4.0]), 0.5, method="inverted_cdf", weights=w)
      Array(4., dtype=float32)
    """,
)
nanquantile = _quantile_api(
    "nanquantile",
    True,
    False,
    """``quantile`` ignoring NaNs (JAX's ``jnp.nanquantile``).

    Arguments:
      a, q, axis, out, overwrite_input, method, keepdims, weights: as ``quantile``'s.

    Returns:
      The quantiles of the non-NaN elements (NaN where a slice has none).

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.nanquantile(jnp.array([1.0, jnp.nan, 3.0]), 0.5)
      Array(2., dtype=float32)
    """,
)
percentile = _quantile_api(
    "percentile",
    False,
    True,
    """The ``q``-th percentiles of ``a`` (JAX's ``jnp.percentile``: ``quantile(a, q / 100)``).

    Arguments:
      a: the array.
      q: a percentile in [0, 100], or a 1-D array of them.
      axis, out, overwrite_input, method, keepdims, weights: as ``quantile``'s.

    Returns:
      The percentiles.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.percentile(jnp.array([0, 1, 2, 3, 4]), 50)
      Array(2., dtype=float32)
    """,
)
nanpercentile = _quantile_api(
    "nanpercentile",
    True,
    True,
    """``percentile`` ignoring NaNs (JAX's ``jnp.nanpercentile``).

    Arguments:
      a, q, axis, out, overwrite_input, method, keepdims, weights: as ``percentile``'s.

    Returns:
      The percentiles of the non-NaN elements.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.nanpercentile(jnp.array([0.0, jnp.nan, 4.0]), 50)
      Array(2., dtype=float32)
    """,
)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median along ``axis`` (JAX's ``jnp.median``: ``quantile(a, 0.5)``).

    Arguments:
      a: the array.
      axis: an int, a tuple of ints, or None.
      out, overwrite_input: unsupported, as in JAX.
      keepdims: keep the reduced axes with size 1.

    Returns:
      The medians (NaN for a slice with a NaN).

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.median(jnp.array([3, 1, 2, 4]))
      Array(2.5, dtype=float32)
    """
    _no_out(out, overwrite_input, "median")
    return _quantile(a, 0.5, axis, "midpoint", keepdims, False, "median")


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """The median ignoring NaNs (JAX's ``jnp.nanmedian``).

    Arguments:
      a, axis, out, overwrite_input, keepdims: as ``median``'s.

    Returns:
      The medians of the non-NaN elements.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.nanmedian(jnp.array([3.0, jnp.nan, 1.0]))
      Array(2., dtype=float32)
    """
    _no_out(out, overwrite_input, "nanmedian")
    return _quantile(a, 0.5, axis, "midpoint", keepdims, True, "nanmedian")


__all__ = [
    "argpartition",
    "argsort",
    "argwhere",
    "flatnonzero",
    "lexsort",
    "median",
    "nanmedian",
    "nanpercentile",
    "nanquantile",
    "nonzero",
    "partition",
    "percentile",
    "quantile",
    "searchsorted",
    "sort",
    "sort_complex",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "where",
]
