"""Indexing primitives: dynamic slices, gather and scatter (with their clamping and fill rules)."""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes
from functx.core import ShapedArray
from functx.primitives.base import check_axes, err, fmt, prim


# --- Indexing: dynamic slices, gather, scatter ---------------------------------------------------
def _check_index_scalars(name, idx, n):
    if len(idx) != n:
        err(f"{name}: needs {n} start indices, got {len(idx)}")
    for i in idx:
        if i.shape != () or i.dtype not in dtypes.INTEGERS:
            err(f"{name}: start indices must be integer scalars, got {fmt(idx)}")


dynamic_slice_p = prim("dynamic_slice", "index")


def _dynamic_slice_eval(x, *idx, slice_sizes):
    _check_index_scalars("dynamic_slice", idx, x.ndim)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        err(f"dynamic_slice: slice_sizes {slice_sizes} do not fit in {x.str_short()}")
    return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _clamped_starts(idx, shape, sizes):
    return [int(np.clip(int(i), 0, d - s)) for i, d, s in zip(idx, shape, sizes)]


def _dynamic_slice_impl(x, *idx, slice_sizes):
    st = _clamped_starts(idx, x.shape, slice_sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(st, slice_sizes))]


dynamic_slice_p.abstract_eval = _dynamic_slice_eval
dynamic_slice_p.impl = _dynamic_slice_impl

dynamic_update_slice_p = prim("dynamic_update_slice", "index")


def _dynamic_update_slice_eval(x, update, *idx):
    _check_index_scalars("dynamic_update_slice", idx, x.ndim)
    if (
        update.ndim != x.ndim
        or any(u > d for u, d in zip(update.shape, x.shape))
        or update.dtype != x.dtype
    ):
        err(f"dynamic_update_slice: update {update.str_short()} does not fit in {x.str_short()}")
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _dynamic_update_slice_impl(x, update, *idx):
    st = _clamped_starts(idx, x.shape, update.shape)
    out = np.array(x)
    out[tuple(slice(s, s + n) for s, n in zip(st, update.shape))] = update
    return out


dynamic_update_slice_p.abstract_eval = _dynamic_update_slice_eval
dynamic_update_slice_p.impl = _dynamic_update_slice_impl

# gather(operand, indices; axes, mode, fill_value): indices has shape (*batch, len(axes)); the
# result has shape batch + (operand dims not in axes), with
#   result[b..., r...] = operand[axes <- indices[b..., :], other axes <- r...].
# mode "clip" clamps each index into range; mode "fill" returns fill_value for out-of-range ones.
gather_p = prim("gather", "index")


def _gather_eval(x, idx, *, axes, mode, fill_value=None):
    check_axes("gather", axes, x.ndim)
    if idx.dtype not in dtypes.INTEGERS or idx.ndim < 1 or idx.shape[-1] != len(axes):
        err(
            f"gather: indices must be an integer array of shape (..., {len(axes)}), got "
            f"{idx.str_short()} for operand {x.str_short()}"
        )
    if mode not in ("clip", "fill"):
        err(f"gather: mode must be 'clip' or 'fill', got {mode!r}")
    if mode == "clip" and any(x.shape[a] == 0 for a in axes) and math.prod(idx.shape[:-1]):
        err(f"gather: cannot index an empty axis of {x.str_short()}")
    rest = [d for i, d in enumerate(x.shape) if i not in axes]
    return ShapedArray(idx.shape[:-1] + tuple(rest), x.dtype, x.weak_type)


def _gather_indices(x, idx, axes):
    k = len(axes)
    moved = np.moveaxis(x, axes, range(k))
    dims = np.asarray([x.shape[a] for a in axes], dtype=np.int64)
    if idx.dtype == np.uint64:  # keep huge unsigned indices out of range instead of negative
        idx = np.minimum(idx, np.uint64(np.iinfo(np.int64).max))
    idx = idx.astype(np.int64)
    return moved, idx, dims


def _gather_impl(x, idx, *, axes, mode, fill_value=None):
    moved, idx, dims = _gather_indices(x, idx, axes)
    if mode == "clip":
        clipped = np.clip(idx, 0, np.maximum(dims - 1, 0))
        return moved[tuple(clipped[..., i] for i in range(len(axes)))]
    ok = np.all((idx >= 0) & (idx < dims), axis=-1)
    safe = np.where(ok[..., None], idx, 0)
    if moved.size == 0:
        out = np.zeros(idx.shape[:-1] + moved.shape[len(axes) :], x.dtype)
    else:
        out = moved[tuple(safe[..., i] for i in range(len(axes)))]
    fill = default_fill(x.dtype) if fill_value is None else fill_value
    ok = ok.reshape(ok.shape + (1,) * (out.ndim - ok.ndim))
    return np.where(ok, out, np.asarray(fill).astype(x.dtype))


def default_fill(dtype):
    """The value gather mode "fill" returns for an out-of-range index: NaN (NaN+0j for complex),
    True or the extreme integer (as JAX)."""
    if dtype.kind in "fc" or dtype == dtypes.bfloat16:
        return np.nan
    if dtype == np.bool_:
        return True
    return np.iinfo(dtype).min if dtype.kind == "i" else np.iinfo(dtype).max


gather_p.abstract_eval = _gather_eval
gather_p.impl = _gather_impl

# scatter*(operand, indices, updates; axes, mode): updates has the shape gather would return.
# Out-of-range indices are dropped (mode "drop") or clamped (mode "clip").


def _scatter_eval(name):
    def abstract_eval(x, idx, upd, *, axes, mode):
        check_axes(name, axes, x.ndim)
        if idx.dtype not in dtypes.INTEGERS or idx.ndim < 1 or idx.shape[-1] != len(axes):
            err(
                f"{name}: indices must be an integer array of shape (..., {len(axes)}), got "
                f"{idx.str_short()} for operand {x.str_short()}"
            )
        rest = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        if upd.shape != idx.shape[:-1] + rest or upd.dtype != x.dtype:
            err(
                f"{name}: updates must be {x.dtype}{list(idx.shape[:-1] + rest)} for operand "
                f"{x.str_short()} and indices {idx.str_short()}, got {upd.str_short()}"
            )
        if mode not in ("drop", "clip"):
            err(f"{name}: mode must be 'drop' or 'clip', got {mode!r}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    return abstract_eval


def _scatter_impl(combine):
    def impl(x, idx, upd, *, axes, mode):
        out = np.array(x)
        if out.size == 0:  # nothing to update (and clamping into an empty axis has no target)
            return out
        moved, idx, dims = _gather_indices(out, idx, axes)
        k = len(axes)
        n = math.prod(idx.shape[:-1])  # explicit: reshape(-1, ...) is ambiguous for empty arrays
        flat_idx = idx.reshape(n, k)
        flat_upd = upd.reshape((n,) + upd.shape[idx.ndim - 1 :])
        if mode == "clip":
            flat_idx = np.clip(flat_idx, 0, np.maximum(dims - 1, 0))
        else:
            ok = np.all((flat_idx >= 0) & (flat_idx < dims), axis=-1)
            flat_idx, flat_upd = flat_idx[ok], flat_upd[ok]
        where = tuple(flat_idx[:, i] for i in range(k))
        if combine is None:
            moved[where] = flat_upd
        else:
            combine.at(moved, where, flat_upd)
        return out

    return impl


def _scatter_prim(name, combine):
    p = prim(name, "index")
    p.abstract_eval = _scatter_eval(name)
    p.impl = _scatter_impl(combine)
    return p


scatter_p = _scatter_prim("scatter", None)
scatter_add_p = _scatter_prim("scatter_add", np.add)
scatter_mul_p = _scatter_prim("scatter_mul", np.multiply)
scatter_min_p = _scatter_prim("scatter_min", np.minimum)
scatter_max_p = _scatter_prim("scatter_max", np.maximum)

__all__ = [
    "dynamic_slice_p",
    "dynamic_update_slice_p",
    "gather_p",
    "scatter_p",
    "scatter_add_p",
    "scatter_mul_p",
    "scatter_min_p",
    "scatter_max_p",
    "default_fill",
]
