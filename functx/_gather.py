"""``lax.gather`` and the ``lax.scatter*`` family with XLA's dimension numbers, as composites.

functx's own ``gather``/``scatter*`` primitives (``functx/primitives/index.py``) take *point*
indices into a few axes and whole slices of the others. The general operators here turn XLA's
description (a window of ``slice_sizes`` at each start index, start indices mapped to operand axes
by ``start_index_map``, optional batching axes shared by the operand and the indices) into such
point indices:

1. each start index is clamped (or checked, for the fill/drop modes) against
   ``operand_dim - window_size`` in its own integer dtype, as XLA clamps it;
2. the point index of every element of every window is the clamped start plus an iota over the
   window; a batching axis takes the position of its indices' batch axis (another iota); axes
   whose window is the whole axis stay whole slices of the point primitive;
3. one point ``gather`` (or ``scatter*``) runs, and a transpose puts the window axes where
   ``offset_dims`` (``update_window_dims``) say.

The derivatives, batching rules and both compiled backends come from the point primitives; the
fill and drop modes of whole windows are a ``select`` (gather) and an out-of-range index (scatter).
"""

from __future__ import annotations

import enum
from typing import NamedTuple, Sequence

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.array import Array, UncommittedArray, is_python_scalar
from functx.control.custom_derivatives import custom_jvp
from functx.control.while_loop import fori_loop
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.source_info import where as _loc
from functx.tracing import Tracer, get_aval
from functx.transforms.vmap import vmap


class GatherDimensionNumbers(NamedTuple):
    """How the operand, the start indices and the output of :func:`gather` relate (XLA's gather
    dimension numbers; the index vector is always the last axis of the start indices).

    Arguments:
        offset_dims: the output axes that run over a window (sorted), one per operand axis that
            is neither collapsed nor a batching axis, in operand order.
        collapsed_slice_dims: operand axes with window size 1 that the output drops (sorted).
        start_index_map: for each entry of an index vector, the operand axis it starts.
        operand_batching_dims: operand axes (window size 1, sorted) paired with batch axes of the
            start indices: element ``b`` of such an axis is gathered for indices batch ``b``.
        start_indices_batching_dims: the axes of the start indices paired with
            ``operand_batching_dims``, in the same order.

    Returns:
        A named tuple (it compares and hashes by value).

    Example:
        >>> from functx import lax
        >>> lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
        ...                            start_index_map=(0,))
        GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), operand_batching_dims=(), start_indices_batching_dims=())
    """  # noqa: E501

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How the operand, the indices and the updates of the ``scatter*`` operators relate (XLA's
    scatter dimension numbers, the mirror image of :class:`GatherDimensionNumbers`).

    Arguments:
        update_window_dims: the axes of ``updates`` that run over a window (sorted), one per
            operand axis that is neither inserted nor a batching axis, in operand order.
        inserted_window_dims: operand axes with window size 1 that ``updates`` has no axis for.
        scatter_dims_to_operand_dims: for each entry of an index vector, the operand axis it
            starts.
        operand_batching_dims: operand axes paired with batch axes of the indices (sorted).
        scatter_indices_batching_dims: the axes of the indices paired with
            ``operand_batching_dims``, in the same order.

    Returns:
        A named tuple (it compares and hashes by value).

    Example:
        >>> from functx import lax
        >>> lax.ScatterDimensionNumbers((), (0,), (0,))
        ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), operand_batching_dims=(), scatter_indices_batching_dims=())
    """  # noqa: E501

    update_window_dims: Sequence[int]
    inserted_window_dims: Sequence[int]
    scatter_dims_to_operand_dims: Sequence[int]
    operand_batching_dims: Sequence[int] = ()
    scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
    """What a gather or scatter does with a window that is not inside the operand.

    ``CLIP``: the start index is clamped so that the whole window is inside. ``FILL_OR_DROP``:
    a gather returns the fill value for the whole window, a scatter drops the whole window.
    ``PROMISE_IN_BOUNDS``: the caller promises in-bounds windows; as in JAX on the CPU, a gather
    then clamps and a scatter drops. ``ONE_HOT``: JAX's name for a TPU-oriented mode; a scatter
    drops out-of-bounds windows, a gather refuses it.

    Arguments:
        (an enum: use a member, or :meth:`from_any` with ``"clip"``, ``"fill"``, ``"drop"``,
        ``"promise_in_bounds"``, ``"one_hot"`` or ``None``)

    Returns:
        The members ``CLIP``, ``FILL_OR_DROP``, ``PROMISE_IN_BOUNDS``, ``ONE_HOT``.

    Example:
        >>> from functx import lax
        >>> lax.GatherScatterMode.from_any("drop")
        <GatherScatterMode.FILL_OR_DROP: 2>
        >>> lax.GatherScatterMode.from_any(None) is lax.GatherScatterMode.FILL_OR_DROP
        True
    """

    CLIP = enum.auto()
    FILL_OR_DROP = enum.auto()
    PROMISE_IN_BOUNDS = enum.auto()
    ONE_HOT = enum.auto()

    @staticmethod
    def from_any(s) -> GatherScatterMode:
        """The mode named by ``s``: a member, ``"clip"``, ``"fill"``/``"drop"``/``None``
        (FILL_OR_DROP), ``"promise_in_bounds"`` or ``"one_hot"``; anything else is a
        ValueError."""
        if isinstance(s, GatherScatterMode):
            return s
        names = {
            "clip": GatherScatterMode.CLIP,
            None: GatherScatterMode.FILL_OR_DROP,
            "fill": GatherScatterMode.FILL_OR_DROP,
            "drop": GatherScatterMode.FILL_OR_DROP,
            "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS,
            "one_hot": GatherScatterMode.ONE_HOT,
        }
        try:
            return names[s]
        except (KeyError, TypeError):
            raise FunctxValueError(f'Unknown gather mode "{s}"') from None


# --- argument checks (JAX's shape rules, in XLA's order) -----------------------------------------
def _as_array(x, like_dtype=None):
    if isinstance(x, (Array, Tracer)):
        return x
    if is_python_scalar(x) and like_dtype is not None:
        return Array.from_value(np.asarray(x, like_dtype))
    return Array.from_value(np.asarray(x))


def _tuple(op, what, v):
    try:
        return tuple(int(i) for i in v)
    except TypeError:
        raise FunctxTypeError(f"{op}: {what} must be a sequence of integers, got {v!r}") from None


def _sorted(dims, op, name):
    if any(b < a for a, b in zip(dims, dims[1:])):
        raise FunctxTypeError(f"{name} in {op} op must be sorted; got {dims}{_loc()}")


def _in_range(dims, rank, op, name):
    for d in dims:
        if not 0 <= d < rank:
            raise FunctxTypeError(
                f"Invalid {name} set in {op} op; valid range is [0, {rank}); got: {d}.{_loc()}"
            )


def _unique(dims, op, name):
    if len(set(dims)) != len(dims):
        raise FunctxTypeError(f"{name} in {op} op must not repeat; got: {dims}.{_loc()}")


def _disjoint(a, b, op, na, nb):
    if set(a) & set(b):
        raise FunctxTypeError(
            f"{na} and {nb} in {op} op must be disjoint; got: {a} and {b}.{_loc()}"
        )


def _check_batching(op, obatch, ibatch, ishape, xshape, idx_name):
    _unique(ibatch, op, f"{idx_name}_batching_dims")
    _in_range(ibatch, len(ishape), op, f"{idx_name}_batching_dims")
    if len(ishape) - 1 in ibatch:
        raise FunctxTypeError(
            f"{op.capitalize()} op cannot have the index vector dimension as a batching "
            f"dimension; got {ibatch}.{_loc()}"
        )
    if len(obatch) != len(ibatch):
        raise FunctxTypeError(
            f"{op.capitalize()} op requires equal numbers of operand_batching_dims and "
            f"{idx_name}_batching_dims, got {obatch} and {ibatch}.{_loc()}"
        )
    ob = tuple(xshape[d] for d in obatch)
    ib = tuple(ishape[d] for d in ibatch)
    if ob != ib:
        raise FunctxTypeError(
            f"{op.capitalize()} op requires operand batching dimensions and indices batching "
            f"dimensions to have the same shape, got {ob} and {ib}.{_loc()}"
        )


def _index_dtype_check(idx):
    if get_aval(idx).dtype not in dtypes.INTEGERS:
        raise FunctxValueError(f"indices must have an integer type{_loc()}")


def _check_gather(x, idx, dn, sizes):
    xs, ishape = get_aval(x).shape, get_aval(idx).shape
    offset, collapsed, smap = dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map
    obatch, ibatch = dn.operand_batching_dims, dn.start_indices_batching_dims
    if len(ishape) < 1:
        raise FunctxTypeError(
            f"gather: start_indices must have rank >= 1 (the last axis is the index vector), "
            f"got shape {ishape}{_loc()}"
        )
    _sorted(offset, "gather", "offset_dims")
    _unique(offset, "gather", "offset_dims")
    out_rank = len(offset) + len(ishape) - 1
    for i, d in enumerate(offset):
        if not 0 <= d < out_rank:
            raise FunctxTypeError(
                f"Offset dimension {i} in gather op is out of bounds; got {d}, but should have "
                f"been in [0, {out_rank}){_loc()}"
            )
    if len(smap) != ishape[-1]:
        raise FunctxTypeError(
            f"Gather op has {len(smap)} elements in start_index_map and the bound of dimension "
            f"index_vector_dim={len(ishape) - 1} of indices is {ishape[-1]}. These two numbers "
            f"must be equal.{_loc()}"
        )
    for i, d in enumerate(smap):
        if not 0 <= d < len(xs):
            raise FunctxTypeError(
                f"Invalid start_index_map; domain is [0, {len(xs)}), got: {i}->{d}.{_loc()}"
            )
    _unique(smap, "gather", "start_index_map")
    _sorted(collapsed, "gather", "collapsed_slice_dims")
    _in_range(collapsed, len(xs), "gather", "collapsed_slice_dims")
    _unique(collapsed, "gather", "collapsed_slice_dims")
    _unique(obatch, "gather", "operand_batching_dims")
    _sorted(obatch, "gather", "operand_batching_dims")
    _in_range(obatch, len(xs), "gather", "operand_batching_dims")
    _disjoint(collapsed, obatch, "gather", "collapsed_slice_dims", "operand_batching_dims")
    _disjoint(smap, obatch, "gather", "start_index_map", "operand_batching_dims")
    _check_batching("gather", obatch, ibatch, ishape, xs, "start_indices")
    if len(sizes) != len(xs):
        raise FunctxTypeError(
            f"Gather op must have one slice size for every input dimension; got: "
            f"len(slice_sizes)={len(sizes)}, input_shape.rank={len(xs)}{_loc()}"
        )
    if len(sizes) != len(offset) + len(collapsed) + len(obatch):
        raise FunctxTypeError(
            f"All components of the offset index in a gather op must either be a offset "
            f"dimension or explicitly collapsed/batching; got len(slice_sizes)={len(sizes)}, "
            f"output_slice_sizes={offset}, collapsed_slice_dims={collapsed}, "
            f"operand_batching_dims={obatch}.{_loc()}"
        )
    if int(np.prod(ishape)):
        for i, (s, d) in enumerate(zip(sizes, xs)):
            if not 0 <= s <= d:
                raise FunctxTypeError(
                    f"Slice size at index {i} in gather op is out of range, must be within "
                    f"[0, {d} + 1), got {s}.{_loc()}"
                )
    for i, d in enumerate(collapsed):
        if sizes[d] != 1:
            raise FunctxTypeError(
                f"Gather op can only collapse slice dims with bound 1, but bound is {sizes[d]} "
                f"for index {d} at position {i}.{_loc()}"
            )
    for i, d in enumerate(obatch):
        if sizes[d] > 1:
            raise FunctxTypeError(
                f"Gather op can only have operand batching dims with bound 0/1, but bound is "
                f"{sizes[d]} for index {d} at position {i}.{_loc()}"
            )


def _check_scatter(x, idx, upd, dn):
    xs, ishape, us = get_aval(x).shape, get_aval(idx).shape, get_aval(upd).shape
    uwin, inserted, smap = (
        dn.update_window_dims,
        dn.inserted_window_dims,
        dn.scatter_dims_to_operand_dims,
    )
    obatch, ibatch = dn.operand_batching_dims, dn.scatter_indices_batching_dims
    if len(ishape) < 1:
        raise FunctxTypeError(
            f"scatter: scatter_indices must have rank >= 1 (the last axis is the index "
            f"vector), got shape {ishape}{_loc()}"
        )
    if len(us) != len(ishape) - 1 + len(uwin):
        raise FunctxTypeError(
            f"Updates tensor must be of rank {len(ishape) - 1 + len(uwin)}; got {len(us)}.{_loc()}"
        )
    _sorted(uwin, "scatter", "update_window_dims")
    _unique(uwin, "scatter", "update_window_dims")
    _in_range(uwin, len(us), "scatter", "update_window_dims")
    _sorted(inserted, "scatter", "inserted_window_dims")
    _unique(inserted, "scatter", "inserted_window_dims")
    _in_range(inserted, len(xs), "scatter", "inserted_window_dims")
    _sorted(obatch, "scatter", "operand_batching_dims")
    _unique(obatch, "scatter", "operand_batching_dims")
    _in_range(obatch, len(xs), "scatter", "operand_batching_dims")
    _disjoint(inserted, obatch, "scatter", "inserted_window_dims", "operand_batching_dims")
    _disjoint(smap, obatch, "scatter", "scatter_dims_to_operand_dims", "operand_batching_dims")
    _check_batching("scatter", obatch, ibatch, ishape, xs, "scatter_indices")
    scatter_dims = [d for d in range(len(us)) if d not in uwin]
    ub = tuple(us[scatter_dims[d]] for d in ibatch)
    ob = tuple(xs[d] for d in obatch)
    if ob != ub:
        raise FunctxTypeError(
            f"Scatter op requires operand batching dimensions and updates batching dimensions "
            f"to have the same shape, got {ob} and {ub}.{_loc()}"
        )
    if len(xs) != len(uwin) + len(inserted) + len(obatch):
        raise FunctxTypeError(
            f"Scatter op has window of size {len(uwin) + len(inserted) + len(obatch)}; doesn't "
            f"match operand of rank {len(xs)}.{_loc()}"
        )
    if len(smap) != ishape[-1]:
        raise FunctxTypeError(
            f"Scatter op has {len(smap)} elements in scatter_dims_to_operand_dims and the bound "
            f"of dimension index_vector_dim={len(ishape) - 1} of indices is {ishape[-1]}. These "
            f"two numbers must be equal{_loc()}"
        )
    for i, d in enumerate(smap):
        if not 0 <= d < len(xs):
            raise FunctxTypeError(
                f"Invalid scatter_dims_to_operand_dims mapping; domain is [0, {len(xs)}), got: "
                f"{i}->{d}.{_loc()}"
            )
    _unique(smap, "scatter", "scatter_dims_to_operand_dims")
    window = [d for d in range(len(xs)) if d not in inserted and d not in obatch]
    for d, u in zip(window, uwin):
        if us[u] > xs[d]:
            raise FunctxTypeError(
                f"Bounds of the window dimensions of updates must not exceed the bounds of the "
                f"corresponding dimensions of operand. For dimension {u}, updates bound is "
                f"{us[u]}, operand bound is {xs[d]}.{_loc()}"
            )
    for k, u in enumerate(scatter_dims):
        if us[u] != ishape[k]:
            raise FunctxTypeError(
                f"Bounds of the scatter dimensions of updates must be the same as the bounds of "
                f"the corresponding dimensions of scatter indices. For scatter dimension {u}, "
                f"updates bound is {us[u]}, indices bound is {ishape[k]}.{_loc()}"
            )


# --- the index arithmetic shared by gather and scatter -------------------------------------------
class _Plan(NamedTuple):
    axes: tuple[int, ...]  # operand axes the point primitive indexes
    win_axes: tuple[int, ...]  # those of them that run over a window
    rest: tuple[int, ...]  # window axes kept whole (the point primitive's slices)
    window: tuple[int, ...]  # every window axis, in operand order


def _plan(shape, sizes, smap, dropped, obatch) -> _Plan:
    window = tuple(d for d in range(len(shape)) if d not in dropped and d not in obatch)
    axes = set(smap) | set(dropped) | set(obatch)
    axes |= {d for d in window if sizes[d] < shape[d]}
    if not axes:  # (an operand of rank >= 1: the point primitive needs one indexed axis)
        axes = {0}
    axes = tuple(sorted(axes))
    return _Plan(
        axes,
        tuple(d for d in axes if d in window),
        tuple(d for d in window if d not in axes),
        window,
    )


def _point_indices(idx, shape, sizes, smap, obatch, ibatch, plan, check):
    """The int32 point indices (batch..., window over plan.win_axes..., len(plan.axes)) and, with
    ``check``, the in-bounds mask of each window (batch...)."""
    ia = get_aval(idx)
    batch = ia.shape[:-1]
    nb = len(batch)
    target = batch + tuple(sizes[d] for d in plan.win_axes)
    mask = None
    starts = {}
    for k, d in enumerate(smap):
        s = ops.reshape(ops.slice_in_dim(idx, k, k + 1, axis=nb), batch)
        hi = max(shape[d] - sizes[d], 0)
        hi_t = np.asarray(min(hi, int(dtypes.iinfo(ia.dtype).max)), ia.dtype)[()]
        if check:
            ok = ops.le(s, hi_t)
            if ia.dtype in dtypes.SIGNED:
                ok = ops.bitwise_and(ok, ops.ge(s, np.asarray(0, ia.dtype)[()]))
            mask = ok if mask is None else ops.bitwise_and(mask, ok)
        s = ops.clamp(np.asarray(0, ia.dtype)[()], s, hi_t)
        starts[d] = ops.convert_element_type(s, dtypes.int32)
    cols = []
    for d in plan.axes:
        if d in starts:
            col = ops.broadcast_in_dim(starts[d], target, tuple(range(nb)))
        elif d in obatch:
            col = ops.broadcasted_iota(dtypes.int32, target, ibatch[obatch.index(d)])
        else:
            col = ops.full(target, 0, dtypes.int32)
        if d in plan.win_axes:
            w = ops.broadcasted_iota(dtypes.int32, target, nb + plan.win_axes.index(d))
            col = w if d not in starts else ops.add(col, w)
        cols.append(ops.expand_dims(col, (len(target),)))
    return ops.concatenate(cols, len(target)), mask


def _mode(mode, default):
    return GatherScatterMode.from_any(default if mode is None else mode)


# --- gather ---------------------------------------------------------------------------------------
def gather(
    operand,
    start_indices,
    dimension_numbers: GatherDimensionNumbers,
    slice_sizes,
    *,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    mode=None,
    fill_value=None,
):
    """XLA's gather: a window of ``slice_sizes`` from ``operand`` at each start index.

    For each batch position ``b`` of ``start_indices`` (every axis but the last), the index
    vector ``start_indices[b]`` gives the window's start along the operand axes
    ``start_index_map``; the window is copied into the output axes ``offset_dims``, with the
    ``collapsed_slice_dims`` (size-1 window axes) dropped. ``operand_batching_dims`` pair operand
    axes with batch axes of the indices (a batched gather).

    Arguments:
        operand: the array to gather from.
        start_indices: an integer array whose last axis is the index vector.
        dimension_numbers: a :class:`GatherDimensionNumbers`.
        slice_sizes: the window size along every operand axis.
        unique_indices, indices_are_sorted: promises that may speed up a backend (accepted and
            not needed here).
        mode: out-of-bounds windows: ``"clip"``/``None``/``"promise_in_bounds"`` clamp the start
            so that the window fits; ``"fill"`` (``"drop"``) returns ``fill_value`` for the whole
            window. A :class:`GatherScatterMode` works too.
        fill_value: the value of a filled window (default NaN for inexact dtypes, the smallest
            signed / largest unsigned integer, True for bool).

    Returns:
        An array of ``operand``'s dtype whose shape is the batch shape of ``start_indices`` with
        the window sizes of the uncollapsed, non-batching axes inserted at ``offset_dims``.

    Differences from JAX: the gradient in the default mode (``promise_in_bounds``) with
    out-of-bounds windows is the clamped gather's; ``mode="one_hot"`` raises UnsupportedError.

    Example:
        >>> import functx.numpy as jnp
        >>> from functx import lax
        >>> x = jnp.arange(12.0).reshape(3, 4)
        >>> dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
        ...                                 start_index_map=(0, 1))
        >>> print(lax.gather(x, jnp.array([[0, 1], [2, 3]]), dn, slice_sizes=(1, 2)))
        [[ 1.  2.]
         [10. 11.]]
        >>> print(lax.gather(x, jnp.array([[5, 0]]), dn, (1, 2), mode="fill", fill_value=-1))
        [[-1. -1.]]
    """
    parsed = _mode(mode, GatherScatterMode.PROMISE_IN_BOUNDS)
    if parsed is GatherScatterMode.ONE_HOT:
        raise UnsupportedError(f"gather: mode ONE_HOT is not supported (JAX: neither){_loc()}")
    operand, start_indices = _as_array(operand), _as_array(start_indices)
    _index_dtype_check(start_indices)
    if not isinstance(dimension_numbers, GatherDimensionNumbers):
        raise FunctxTypeError(
            f"gather: dimension_numbers must be a lax.GatherDimensionNumbers, got "
            f"{dimension_numbers!r}{_loc()}"
        )
    dn = GatherDimensionNumbers(
        *(_tuple("gather", "dimension_numbers", v) for v in dimension_numbers)
    )
    sizes = _tuple("gather", "slice_sizes", slice_sizes)
    _check_gather(operand, start_indices, dn, sizes)
    xa, ia = get_aval(operand), get_aval(start_indices)
    batch = ia.shape[:-1]
    window = [d for d in range(xa.ndim) if d not in dn.collapsed_slice_dims]
    window = [d for d in window if d not in dn.operand_batching_dims]
    out_shape, it_b, it_w = [], iter(batch), iter(sizes[d] for d in window)
    for p in range(len(batch) + len(window)):
        out_shape.append(next(it_w) if p in dn.offset_dims else next(it_b))
    out_shape = tuple(out_shape)
    if 0 in out_shape:  # nothing to gather (and no index to check)
        zero = ops.convert_element_type(0, xa.dtype, weak_type=xa.weak_type)
        return ops.broadcast_in_dim(zero, out_shape, ())
    collapsed, smap = dn.collapsed_slice_dims, dn.start_index_map
    if xa.ndim == 0:  # a scalar operand: gather from its one-element vector
        operand, sizes, collapsed = ops.reshape(operand, (1,)), (1,), (0,)
    shape = get_aval(operand).shape
    plan = _plan(shape, sizes, smap, collapsed, dn.operand_batching_dims)
    fill = parsed is GatherScatterMode.FILL_OR_DROP
    ind, mask = _point_indices(
        start_indices,
        shape,
        sizes,
        smap,
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
        plan,
        fill,
    )
    out = P.gather_p.bind(operand, ind, axes=plan.axes, mode="clip", fill_value=None)
    # out: (batch..., windows over plan.win_axes..., plan.rest...) -> the output's order
    nb = len(batch)
    pos = {d: nb + i for i, d in enumerate(plan.win_axes)}
    pos |= {d: nb + len(plan.win_axes) + i for i, d in enumerate(plan.rest)}
    perm, b = [], iter(range(nb))
    for p in range(len(out_shape)):
        perm.append(pos[plan.window[dn.offset_dims.index(p)]] if p in dn.offset_dims else next(b))
    if perm != list(range(len(perm))):
        out = ops.transpose(out, perm)
    if fill:
        if fill_value is None:
            fill_value = P.default_fill(np.dtype(xa.dtype))
        if not isinstance(fill_value, (Array, Tracer)):
            with np.errstate(invalid="ignore", over="ignore"):
                fill_value = Array.from_value(np.asarray(fill_value).astype(xa.dtype))
        # (as JAX's full_like of the gathered values: their dtype and weak type)
        fv = ops.convert_element_type(fill_value, xa.dtype, weak_type=xa.weak_type)
        batch_pos = tuple(p for p in range(len(out_shape)) if p not in dn.offset_dims)
        keep = ops.broadcast_in_dim(mask, out_shape, batch_pos) if mask is not None else None
        if keep is not None:
            out = ops.select(keep, out, ops.broadcast_in_dim(fv, out_shape, ()))
    return out


def index_take(src, idxs, axes):
    """``src`` at the points ``(idxs[0][i], idxs[1][i], ...)`` along ``axes`` (indices taken
    modulo the axis sizes), with whole slices of the other axes: a simple form of
    :func:`gather`.

    Arguments:
        src: the array to take from.
        idxs: a sequence of integer vectors of one length, one per axis in ``axes``.
        axes: the axes of ``src`` the vectors index.

    Returns:
        An array of shape ``(len(idxs[0]),) + (the sizes of the other axes of src)``.

    Example:
        >>> import functx.numpy as jnp
        >>> from functx import lax
        >>> x = jnp.arange(12).reshape(3, 4)
        >>> print(lax.index_take(x, (jnp.array([2, -1]),), (0,)))
        [[ 8  9 10 11]
         [ 8  9 10 11]]
    """
    src = _as_array(src)
    axes = _tuple("index_take", "axes", axes)
    shape = get_aval(src).shape
    cols = [ops.expand_dims(_as_array(i), (1,)) for i in idxs]
    ind = ops.concatenate(cols, 1)
    ia = get_aval(ind)
    n = ops.broadcast_in_dim(
        UncommittedArray.from_value(np.asarray([shape[a] for a in axes], ia.dtype)), ia.shape, (1,)
    )
    ind = P.rem_p.bind(ind, n)  # (the remainder's sign follows the index: wrap negatives)
    ind = ops.select(ops.lt(ind, ops.full_like(ind, 0)), ops.add(ind, n), ind)
    slice_sizes = [1 if d in axes else n for d, n in enumerate(shape)]
    dn = GatherDimensionNumbers(
        offset_dims=tuple(range(1, len(shape) - len(axes) + 1)),
        collapsed_slice_dims=tuple(axes),
        start_index_map=tuple(axes),
    )
    return gather(src, ind, dn, tuple(slice_sizes))


# --- scatter --------------------------------------------------------------------------------------
def _scatter(name, prim, operand, indices, updates, dn, mode):
    operand = _as_array(operand)
    xa = get_aval(operand)
    indices, updates = _as_array(indices), _as_array(updates, xa.dtype)
    _index_dtype_check(indices)
    ua = get_aval(updates)
    if ua.dtype != xa.dtype:
        raise FunctxTypeError(
            f"lax.{name} requires arguments to have the same dtypes, got {xa.dtype}, "
            f"{ua.dtype}.{_loc()}"
        )
    if not isinstance(dn, ScatterDimensionNumbers):
        raise FunctxTypeError(
            f"{name}: dimension_numbers must be a lax.ScatterDimensionNumbers, got {dn!r}{_loc()}"
        )
    dn = ScatterDimensionNumbers(*(_tuple(name, "dimension_numbers", v) for v in dn))
    _check_scatter(operand, indices, updates, dn)
    parsed = _mode(mode, GatherScatterMode.FILL_OR_DROP)
    if 0 in ua.shape or 0 in xa.shape:
        return operand
    inserted, smap = dn.inserted_window_dims, dn.scatter_dims_to_operand_dims
    ia = get_aval(indices)
    batch = ia.shape[:-1]
    window = [d for d in range(xa.ndim) if d not in inserted and d not in dn.operand_batching_dims]
    sizes = [1] * xa.ndim
    for d, u in zip(window, dn.update_window_dims):
        sizes[d] = ua.shape[u]
    x = operand
    if xa.ndim == 0:  # a scalar operand: scatter into its one-element vector
        x, sizes, inserted = ops.reshape(operand, (1,)), [1], (0,)
    shape = get_aval(x).shape
    plan = _plan(shape, sizes, smap, inserted, dn.operand_batching_dims)
    drop = parsed is not GatherScatterMode.CLIP
    ind, mask = _point_indices(
        indices,
        shape,
        sizes,
        smap,
        dn.operand_batching_dims,
        dn.scatter_indices_batching_dims,
        plan,
        drop,
    )
    if mask is not None:  # a window partly out of bounds is dropped whole: send it out of range
        nb = len(batch)
        keep = ops.broadcast_in_dim(mask, get_aval(ind).shape, tuple(range(nb)))
        ind = ops.select(keep, ind, ops.full_like(ind, -1))
    # updates: (scatter axes..., window axes...) -> (batch..., plan.win_axes..., plan.rest...)
    scatter_axes = [u for u in range(ua.ndim) if u not in dn.update_window_dims]
    of = {d: u for d, u in zip(window, dn.update_window_dims)}
    perm = scatter_axes + [of[d] for d in plan.win_axes] + [of[d] for d in plan.rest]
    if perm != list(range(len(perm))):
        updates = ops.transpose(updates, perm)
    pmode = "clip" if not drop else "drop"
    out = prim.bind(x, ind, updates, axes=plan.axes, mode=pmode)
    return ops.reshape(out, ()) if xa.ndim == 0 else out


def _scatter_doc(name, verb, example, differences=""):
    return f"""XLA's scatter where {verb}.

    For each batch position ``b`` of ``scatter_indices`` (every axis but the last) the window of
    ``updates`` at ``b`` (its axes ``update_window_dims``) lands in ``operand`` at the start given
    by the index vector ``scatter_indices[b]`` along the axes ``scatter_dims_to_operand_dims``;
    ``inserted_window_dims`` are size-1 window axes ``updates`` lacks, and
    ``operand_batching_dims`` pair operand axes with batch axes of the indices.

    Arguments:
        operand: the array to update.
        scatter_indices: an integer array whose last axis is the index vector.
        updates: the values, of ``operand``'s dtype.
        dimension_numbers: a :class:`ScatterDimensionNumbers`.
        indices_are_sorted, unique_indices: promises that may speed up a backend (accepted and
            not needed here).
        mode: out-of-bounds windows: ``"clip"`` clamps the start so that the window fits;
            ``None``, ``"fill"``/``"drop"`` and ``"promise_in_bounds"`` drop the whole window.

    Returns:
        An array like ``operand`` with the updates applied.

{differences}    Example:
        >>> import functx.numpy as jnp
        >>> from functx import lax
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
{example}
    """


def _scatter_op(prim, *doc):
    """The lax function of the scatter primitive ``prim``, named as it is, with the docstring
    ``_scatter_doc(prim.name, *doc)``."""

    def scatter_op(
        operand,
        scatter_indices,
        updates,
        dimension_numbers: ScatterDimensionNumbers,
        *,
        indices_are_sorted: bool = False,
        unique_indices: bool = False,
        mode=None,
    ):
        return _scatter(prim.name, prim, operand, scatter_indices, updates, dimension_numbers, mode)

    scatter_op.__name__ = scatter_op.__qualname__ = prim.name
    scatter_op.__doc__ = _scatter_doc(prim.name, *doc)
    return scatter_op


def scatter_sub(
    operand,
    scatter_indices,
    updates,
    dimension_numbers: ScatterDimensionNumbers,
    *,
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode=None,
):
    operand = _as_array(operand)
    updates = _as_array(updates, get_aval(operand).dtype)
    if get_aval(updates).dtype == get_aval(operand).dtype:
        updates = ops.neg(updates)
    return _scatter(
        "scatter_sub", P.scatter_add_p, operand, scatter_indices, updates, dimension_numbers, mode
    )


_X = "        >>> x = jnp.array([1.0, 5.0, 3.0])\n"
scatter = _scatter_op(
    P.scatter_p,
    "the updates replace the operand's values (with repeated indices, the last update wins)",
    _X + "        >>> print(lax.scatter(x, jnp.array([[0], [2]]), jnp.array([7.0, 8.0]), dn))\n"
    "        [7. 5. 8.]",
)
scatter_add = _scatter_op(
    P.scatter_add_p,
    "the updates are added to the operand (repeated indices add up)",
    _X + "        >>> print(lax.scatter_add(x, jnp.array([[0], [0]]), jnp.array([7.0, 8.0]), dn))\n"
    "        [16.  5.  3.]",
    "    Differences from JAX: a scatter whose index vectors are empty adds every update (XLA's\n"
    "    CPU scatter adds only one).\n\n",
)
scatter_sub.__doc__ = _scatter_doc(
    "scatter_sub",
    "the updates are subtracted from the operand",
    _X + "        >>> print(lax.scatter_sub(x, jnp.array([[1]]), jnp.array([2.0]), dn))\n"
    "        [1. 3. 3.]",
)
scatter_mul = _scatter_op(
    P.scatter_mul_p,
    "the operand is multiplied by the updates",
    _X + "        >>> print(lax.scatter_mul(x, jnp.array([[1], [1]]), jnp.array([2.0, 3.0]), dn))\n"
    "        [ 1. 30.  3.]",
    "    Differences from JAX: it differentiates with respect to the updates without\n"
    "    ``unique_indices=True`` (JAX raises NotImplementedError).\n\n",
)
scatter_min = _scatter_op(
    P.scatter_min_p,
    "each element becomes the minimum of itself and its updates",
    _X + "        >>> print(lax.scatter_min(x, jnp.array([[1], [2]]), jnp.array([2.0, 9.0]), dn))\n"
    "        [1. 2. 3.]",
    "    Differences from JAX: in ``clip`` mode with out-of-bounds windows its gradients stay\n"
    "    finite (JAX's can be ``inf``).\n\n",
)
scatter_max = _scatter_op(
    P.scatter_max_p,
    "each element becomes the maximum of itself and its updates",
    _X + "        >>> print(lax.scatter_max(x, jnp.array([[1], [2]]), jnp.array([2.0, 9.0]), dn))\n"
    "        [1. 5. 9.]",
    "    Differences from JAX: in ``clip`` mode with out-of-bounds windows its gradients stay\n"
    "    finite (JAX's can be ``inf``).\n\n",
)


@custom_jvp
def _not_differentiable(x):
    """The identity, whose derivative raises (scatter_apply's operand, as in JAX)."""
    return x


@_not_differentiable.defjvp
def _not_differentiable_jvp(primals, tangents):
    raise UnsupportedError(f"scatter_apply is not differentiable (JAX: neither){_loc()}")


def scatter_apply(
    operand,
    scatter_indices,
    func,
    dimension_numbers: ScatterDimensionNumbers,
    *,
    update_shape=(),
    indices_are_sorted: bool = False,
    unique_indices: bool = False,
    mode=None,
):
    """``func`` applied to the elements of ``operand`` that a scatter with these indices would
    update; an element hit by ``n`` windows gets ``func`` applied ``n`` times (as in JAX).

    Arguments:
        operand: the array to update.
        scatter_indices: an integer array whose last axis is the index vector.
        func: a function of one scalar (applied elementwise, through ``vmap``).
        dimension_numbers: a :class:`ScatterDimensionNumbers`.
        update_shape: the shape the updates of such a scatter would have.
        indices_are_sorted, unique_indices: accepted promises.
        mode: out-of-bounds windows, as in :func:`scatter`.

    Returns:
        An array like ``operand``. (Not differentiable, as in JAX: a derivative raises
        ``NotImplementedError``.)

    Example:
        >>> import functx.numpy as jnp
        >>> from functx import lax
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> x = jnp.array([1.0, 2.0, 3.0])
        >>> print(lax.scatter_apply(x, jnp.array([[0], [2], [2]]), jnp.exp2, dn,
        ...                         update_shape=(3,)))
        [  2.   2. 256.]
    """
    operand = _as_array(operand)
    xa = get_aval(operand)
    shape = tuple(update_shape)
    hits = _scatter(
        "scatter_apply",
        P.scatter_add_p,
        ops.full(xa.shape, 0, dtypes.int32),
        scatter_indices,
        ops.full(shape, 1, dtypes.int32),
        dimension_numbers,
        mode,
    )
    flat_hits = ops.reshape(hits, (int(np.prod(xa.shape)),))
    f = vmap(func)

    def body(i, x):
        flat = ops.reshape(x, (int(np.prod(xa.shape)),))
        new = ops.convert_element_type(f(flat), xa.dtype)
        below = ops.lt(ops.broadcast_in_dim(i, get_aval(flat_hits).shape, ()), flat_hits)
        return ops.reshape(ops.select(below, new, flat), xa.shape)

    most = ops.reduce_max(flat_hits, (0,)) if xa.shape else hits
    return fori_loop(0, most, body, _not_differentiable(operand))
