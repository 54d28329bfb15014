"""NumPy indexing (``x[idx]``) and JAX's functional updates (``x.at[idx].set(v)``).

Basic indexing (ints, slices, None, Ellipsis) becomes views (slice, rev, squeeze, expand_dims);
integer-array indexing becomes one ``gather`` with NumPy's placement of the advanced dimensions.
Out-of-range array indices clamp on retrieval and are dropped on update, as in JAX.
"""

from __future__ import annotations

import numpy as np

from functx import _gather, dtypes, ops, primitives as P
from functx.array import Array, UncommittedArray
from functx.errors import (
    FunctxIndexError,
    FunctxTypeError,
    FunctxValueError,
    NonConcreteBooleanIndexError,
    UnsupportedError,
)
from functx.numpy import _core as jnp
from functx.source_info import where
from functx.tracing import Tracer, get_aval


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_index_array(x):
    return isinstance(x, (Array, Tracer, np.ndarray, list)) or (isinstance(x, tuple) and False)


def _index_constant(v: np.ndarray) -> Array:
    """An index array written in the index expression (a list or NumPy array): a constant of the
    expression, uncommitted (it goes with the indexed array's device; see the devices package)."""
    v = np.array(v)
    av = get_aval(v)
    if v.dtype != av.dtype:  # int64 while x64 is off: the buffer must hold the aval's dtype
        v = v.astype(av.dtype)
    return UncommittedArray._new(v, av)


def _to_index_array(x, dim_name):
    if isinstance(x, list):
        x = np.asarray(x)
    if isinstance(x, np.ndarray):
        x = _index_constant(x if x.size else x.astype(np.int32))
    av = get_aval(x)
    if av.dtype == dtypes.bool_:
        if isinstance(x, Tracer):
            raise NonConcreteBooleanIndexError(
                f"Boolean mask indexing with a traced mask {av.str_short()} has a data-dependent "
                f"shape{where()}. Use functx.numpy.where(mask, x, 0) or a concrete mask."
            )
        return None  # handled by the caller (expanded through nonzero)
    if av.dtype not in dtypes.INTEGERS:
        raise FunctxTypeError(f"Indexing with {av.str_short()}: indices must be integers{where()}")
    return x


def _expand(idx, ndim, shape=None):
    """Expand Ellipsis and concrete boolean masks; returns a list of index items. ``shape``: the
    indexed array's shape (to check the masks' shapes)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    items, masks = [], []  # masks: (position in items, the mask's shape)
    for it in idx:
        if isinstance(it, (bool, np.bool_)):
            items.append(("mask0", bool(it)))
            continue
        known = it.value if isinstance(it, Tracer) else it  # (eager grad's tracers have one)
        if (
            isinstance(known, (Array, np.ndarray))
            and not isinstance(known, Tracer)
            and known.dtype == np.bool_
        ):  # (no copy to read it)
            mask = np.asarray(known)
            if mask.ndim == 0:
                items.append(("mask0", bool(mask)))
            else:
                masks.append((len(items), mask.shape))
                items.extend(_index_constant(i.astype(np.int32)) for i in np.nonzero(mask))
            continue
        if isinstance(it, (list,)) and np.asarray(it).dtype == np.bool_:
            masks.append((len(items), np.shape(it)))
            items.extend(_index_constant(i.astype(np.int32)) for i in np.nonzero(np.asarray(it)))
            continue
        items.append(it)
    n_ell = sum(1 for it in items if it is Ellipsis)
    if n_ell > 1:
        raise FunctxIndexError(f"an index can only have a single ellipsis ('...'){where()}")
    consumed = sum(
        1
        for it in items
        if it is not None
        and it is not Ellipsis
        and not (isinstance(it, tuple) and it and it[0] == "mask0")
    )
    if consumed > ndim:
        raise FunctxIndexError(
            f"too many indices for array: array is {ndim}-dimensional, but "
            f"{consumed} were indexed{where()}"
        )
    if masks and shape is not None:
        _check_masks(items, masks, shape, consumed)
    out = []
    for it in items:
        if it is Ellipsis:
            out.extend([slice(None)] * (ndim - consumed))
        else:
            out.append(it)
    if n_ell == 0:
        out.extend([slice(None)] * (ndim - consumed))
    return out


def _check_masks(items, masks, shape, consumed):
    """A boolean mask must have the shape of the dimensions it indexes (NumPy and JAX raise
    IndexError; without this check a short mask would silently select a prefix)."""
    ndim = len(shape)
    ax = 0  # the array axis that items[k] indexes
    pending = dict(masks)
    for k, it in enumerate(items):
        if k in pending:
            mshape = pending[k]
            got = tuple(shape[ax : ax + len(mshape)])
            if got != tuple(mshape):
                raise FunctxIndexError(
                    f"boolean index did not match the indexed array: a mask of shape "
                    f"{tuple(mshape)} at axis {ax}, but the array's dimensions there are {got}"
                    f"{where()}"
                )
        if it is Ellipsis:
            ax += ndim - consumed
        elif it is not None and not (isinstance(it, tuple) and it and it[0] == "mask0"):
            ax += 1


def _parse(x, idx):
    """Normalise ``idx`` for ``x``: returns (x with None axes inserted, items one per axis)."""
    ndim = get_aval(x).ndim
    items = _expand(idx, ndim, get_aval(x).shape)
    # A 0-d boolean index adds an axis of size 1 (True) or 0 (False), like NumPy.
    new_axes, per_axis = [], []
    for it in items:
        if it is None or (isinstance(it, tuple) and it and it[0] == "mask0"):
            new_axes.append(len(per_axis))
            per_axis.append(slice(None) if it is None else slice(0, 1 if it[1] else 0))
        else:
            per_axis.append(it)
    if new_axes:
        x = ops.expand_dims(x, tuple(new_axes))
    return x, per_axis


def _mode_name(mode):
    """A mode given as a string or as ``lax.GatherScatterMode``, as its string."""
    name = getattr(mode, "name", None)
    if name is not None and not isinstance(mode, str):
        return {
            "FILL_OR_DROP": "fill",
            "CLIP": "clip",
            "PROMISE_IN_BOUNDS": "promise_in_bounds",
        }.get(name, name)
    return mode


def _check_wrap(wrap_negative_indices):
    if not wrap_negative_indices:
        raise UnsupportedError(
            f"wrap_negative_indices=False is not supported (negative indices wrap){where()}"
        )


def getitem(x, idx, mode=None, fill_value=None, wrap_negative_indices=True):
    _check_wrap(wrap_negative_indices)
    mode = _mode_name(mode)
    x = x if isinstance(x, (Array, Tracer)) else Array.from_value(x)
    x, items = _parse(x, idx)
    shape = get_aval(x).shape
    filling = mode in ("fill", "drop")
    has_array = any(not _is_int(it) and not isinstance(it, slice) for it in items) or (
        filling  # a static int out of range: gather it, to fill
        and any(_is_int(it) and not -n <= int(it) < n for it, n in zip(items, shape))
    )

    # 1. Static slices (and ints, when no arrays are involved) as one slice + rev.
    starts, limits, strides, rev_dims, squeeze_dims = [], [], [], [], []
    for ax, (it, n) in enumerate(zip(items, shape)):
        if isinstance(it, slice):
            for part in (it.start, it.stop, it.step):
                if isinstance(part, Tracer):
                    raise FunctxTypeError(
                        f"Slice bounds must be static Python ints, got a traced value{where()}. "
                        "Use functx.lax.dynamic_slice for traced offsets."
                    )
            if it.step == 0:
                raise FunctxValueError(f"slice step cannot be zero{where()}")
            sl = slice(*(None if p is None else int(p) for p in (it.start, it.stop, it.step)))
            start, stop, step = sl.indices(n)
            count = len(range(start, stop, step))
            if step > 0:
                lo, hi, st = start, start + (count - 1) * step + 1 if count else start, step
            else:
                lo = start + (count - 1) * step if count else 0
                hi, st = (start + 1 if count else 0), -step
                rev_dims.append(ax)
            starts.append(lo)
            limits.append(hi)
            strides.append(st)
        elif _is_int(it) and not has_array:
            i = _clamp_static(int(it), n, ax)
            starts.append(i)
            limits.append(i + 1)
            strides.append(1)
            squeeze_dims.append(ax)
        else:
            starts.append(0)
            limits.append(n)
            strides.append(1)
    x = ops.slice(x, starts, limits, strides)
    x = ops.rev(x, rev_dims)
    if not has_array:
        return ops.squeeze(x, squeeze_dims)

    # 2. Integer arrays (and ints) gather: advanced items broadcast together.
    adv_axes, adv = [], []
    for ax, it in enumerate(items):
        if isinstance(it, slice):
            continue
        if _is_int(it):
            n, i = shape[ax], int(it)
            i = i if filling else _clamp_static(i, n, ax)  # (negatives wrap below)
            arr = Array.from_value(np.asarray(i, np.int64 if abs(i) >= 2**31 else np.int32))
        else:
            arr = _to_index_array(it, ax)
        adv_axes.append(ax)
        adv.append(arr)
    dims = get_aval(x).shape
    norm = []
    for ax, a in zip(adv_axes, adv):
        av = get_aval(a)
        if dtypes.is_signed(av.dtype):
            a = jnp.where(
                ops.lt(a, 0),
                ops.add(a, np.asarray(dims[ax], av.dtype)[()] if not av.weak_type else dims[ax]),
                a,
            )
        norm.append(jnp.astype(a, dtypes.int32) if get_aval(a).dtype != dtypes.int64 else a)
    wide = any(get_aval(a).dtype == dtypes.int64 for a in norm)
    idx_dtype = dtypes.int64 if wide else dtypes.int32
    norm = [jnp.astype(a, idx_dtype) for a in norm]
    norm = jnp.broadcast_arrays(*norm)
    bshape = get_aval(norm[0]).shape
    indices = jnp.stack(norm, axis=-1) if norm else None
    mode = mode or "clip"
    if mode in ("promise_in_bounds", "clip"):
        gmode = "clip"
    elif mode in ("fill", "drop"):
        gmode = "fill"
    else:
        raise FunctxValueError(
            f"indexing mode must be 'clip', 'fill', 'drop' or "
            f"'promise_in_bounds', got {mode!r}{where()}"
        )
    out = P.gather_p.bind(
        x,
        indices,
        axes=tuple(adv_axes),
        mode=gmode,
        fill_value=None if fill_value is None else fill_value,
    )
    # NumPy puts the broadcast index dimensions where the first advanced index stood when the
    # advanced indices are adjacent, and first otherwise.
    contiguous = adv_axes == list(range(adv_axes[0], adv_axes[0] + len(adv_axes)))
    if contiguous and adv_axes[0] > 0:
        nb = len(bshape)
        first = adv_axes[0]
        perm = (
            list(range(nb, nb + first))
            + list(range(nb))
            + list(range(nb + first, get_aval(out).ndim))
        )
        out = ops.transpose(out, perm)
    return out


def _static_basic(items):
    return all(
        _is_int(it)
        or (
            isinstance(it, slice)
            and it.step in (None, 1)
            and not isinstance(it.start, Tracer)
            and not isinstance(it.stop, Tracer)
        )
        for it in items
    )


def _clamp_static(i: int, n: int, ax: int) -> int:
    """A static integer index into an axis of size ``n``, clamped into range as JAX 0.10 does
    (``jnp.arange(10)[11]`` is 9, ``[-11]`` is 0); an axis of size 0 has no element to give."""
    if n == 0:
        raise FunctxIndexError(f"index {i} is out of bounds for axis {ax} with size 0{where()}")
    if i < 0:
        i += n
    return min(max(i, 0), n - 1)


def _update_mode(mode):
    mode = _mode_name(mode)
    if mode in (None, "fill", "drop", "promise_in_bounds"):
        return "drop"
    if mode == "clip":
        return "clip"
    raise FunctxValueError(f'Unknown gather mode "{mode}"{where()}')


_SCATTER_PRIMS = {
    None: P.scatter_p,
    "add": P.scatter_add_p,
    "mul": P.scatter_mul_p,
    "min": P.scatter_min_p,
    "max": P.scatter_max_p,
}


def _positions(xv, idx, smode):
    """The flat positions of ``x``'s elements that ``x[idx]`` selects, in its shape (-1 for an
    index out of bounds when ``smode`` is ``"drop"``; clamped into range for ``"clip"``)."""
    pos = ops.reshape(
        ops.iota(dtypes.int32 if xv.size < 2**31 else dtypes.int64, xv.size), xv.shape
    )
    if smode == "clip":
        return getitem(pos, idx, mode="clip")
    return getitem(pos, idx, mode="fill", fill_value=-1)


def scatter_update(x, idx, values, op, *, mode=None, wrap_negative_indices=True):
    """``x.at[idx].set/add/subtract/mul/divide/power/min/max(values)`` and ``apply(values)``
    (``op`` None, "add", "sub", "mul", "div", "pow", "min", "max" or "apply"); ``mode`` for
    indices out of bounds: dropped (the default) or clamped ("clip")."""
    _check_wrap(wrap_negative_indices)
    smode = _update_mode(mode)
    x = x if isinstance(x, (Array, Tracer)) else Array.from_value(x)
    if op == "sub":
        return scatter_update(x, idx, jnp.negative(jnp.asarray(values)), "add", mode=mode)
    if op in ("div", "pow"):
        factor = scatter_update(jnp.ones_like(x), idx, values, "mul", mode=mode)
        return jnp.true_divide(x, factor) if op == "div" else jnp.power(x, factor)
    xv = get_aval(x)
    if op == "apply":
        sel = _positions(xv, idx, smode)
        n = get_aval(sel).size
        dn = _gather.ScatterDimensionNumbers(
            update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
        )
        out = _gather.scatter_apply(
            ops.reshape(x, (xv.size,)),
            ops.reshape(sel, (n, 1)),
            values,
            dn,
            update_shape=(n,),
            mode="clip" if smode == "clip" else "fill",
        )
        return ops.reshape(out, xv.shape)
    values = jnp.asarray(values) if not isinstance(values, (Array, Tracer)) else values
    dt = jnp.result_type(x, values)
    if dt != xv.dtype:
        # Like JAX: update in the promoted dtype, then convert back (so an int32 array's
        # .at[i].add(2.5) adds 2.5 and truncates the sum, rather than adding 2).
        out = scatter_update(
            ops.convert_element_type(x, dt),
            idx,
            ops.convert_element_type(values, dt),
            op,
            mode=mode,
        )
        return ops.convert_element_type(out, xv.dtype, xv.weak_type)
    values = (
        ops.convert_element_type(values, xv.dtype, xv.weak_type)
        if get_aval(values).dtype != xv.dtype
        else values
    )
    raw = idx if isinstance(idx, tuple) else (idx,)
    if not any(i is None or isinstance(i, (Array, Tracer, np.ndarray, list)) for i in raw):
        items = _expand(idx, xv.ndim, xv.shape)
        if _static_basic(items) and smode == "drop":
            return _update_static(x, items, values, op)
    # General case: gather the flat positions the index selects, then scatter into the flat array.
    sel = _positions(xv, idx, smode)
    sv = get_aval(sel)
    upd = jnp.broadcast_to(values, sv.shape)
    flat = ops.reshape(x, (xv.size,))
    out = _SCATTER_PRIMS[op].bind(
        flat, ops.reshape(sel, (sv.size, 1)), ops.reshape(upd, (sv.size,)), axes=(0,), mode=smode
    )
    return ops.reshape(out, xv.shape)


def _update_static(x, items, values, mode):
    xv = get_aval(x)
    starts, sizes, view_shape = [], [], []
    for ax, (it, n) in enumerate(zip(items, xv.shape)):
        if _is_int(it):
            i = int(it)
            if not -n <= i < n:
                if n == 0:
                    raise FunctxIndexError(
                        f"index {i} is out of bounds for axis {ax} with size 0{where()}"
                    )
                return x  # as JAX: an update out of bounds is dropped
            starts.append(i % n)
            sizes.append(1)
        else:
            start, stop, _ = slice(it.start, it.stop).indices(n)
            starts.append(start)
            sizes.append(max(stop - start, 0))
            view_shape.append(sizes[-1])
    upd = jnp.broadcast_to(values, tuple(view_shape))
    upd = ops.reshape(upd, tuple(sizes))
    if mode is not None:
        cur = ops.slice(x, starts, [s + n for s, n in zip(starts, sizes)])
        fn = {"add": ops.add, "mul": ops.mul, "min": ops.min, "max": ops.max}[mode]
        upd = fn(cur, upd)
    if 0 in sizes:
        return x
    return ops.dynamic_update_slice(x, upd, starts)
