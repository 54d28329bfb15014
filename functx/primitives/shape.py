"""Shape primitives (views: lowering turns them into index expressions), iota, stop_gradient."""

from __future__ import annotations

import math

import numpy as np

from functx.core import ShapedArray
from functx.errors import FunctxArgumentError
from functx.primitives.base import check_axes, err, fmt, prim, same_dtypes

iota_p = prim("iota", "special")


def _iota_eval(*, dtype, shape, dimension):
    if not 0 <= dimension < len(shape):
        err(f"iota: dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype)


def _iota_impl(*, dtype, shape, dimension):
    r = np.arange(shape[dimension], dtype=dtype)
    r = r.reshape([shape[dimension] if i == dimension else 1 for i in range(len(shape))])
    return np.broadcast_to(r, shape)


iota_p.abstract_eval = _iota_eval
iota_p.impl = _iota_impl

stop_gradient_p = prim("stop_gradient", "special")
stop_gradient_p.abstract_eval = lambda x: x
stop_gradient_p.impl = lambda x: x


# --- Shape ops (views: lowering turns them into index expressions) -------------------------------
broadcast_in_dim_p = prim("broadcast_in_dim", "shape")


def _broadcast_in_dim_eval(x, *, shape, broadcast_dimensions):
    if len(broadcast_dimensions) != x.ndim:
        err(
            f"broadcast_in_dim: operand {x.str_short()} needs {x.ndim} broadcast_dimensions, "
            f"got {broadcast_dimensions}"
        )
    if any(not 0 <= d < len(shape) for d in broadcast_dimensions) or list(
        broadcast_dimensions
    ) != sorted(set(broadcast_dimensions)):
        err(
            f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must be strictly "
            f"increasing axes of the result shape {shape}"
        )
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] not in (1, shape[d]):
            err(
                f"broadcast_in_dim: operand {x.str_short()} cannot broadcast to {shape} "
                f"(axis {i} has size {x.shape[i]}, target axis {d} has size {shape[d]})"
            )
    if any(s < 0 for s in shape):
        err(f"broadcast_in_dim: negative size in {shape}")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    expanded = [1] * len(shape)
    for i, d in enumerate(broadcast_dimensions):
        expanded[d] = x.shape[i]
    return np.broadcast_to(x.reshape(expanded), shape)


broadcast_in_dim_p.abstract_eval = _broadcast_in_dim_eval
broadcast_in_dim_p.impl = _broadcast_in_dim_impl

reshape_p = prim("reshape", "shape")


def _reshape_eval(x, *, new_sizes):
    if any(s < 0 for s in new_sizes) or math.prod(new_sizes) != math.prod(x.shape):
        raise FunctxArgumentError(
            f"reshape: cannot reshape {x.str_short()} ({math.prod(x.shape)} elements) "
            f"to shape {tuple(new_sizes)}"
        )
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


reshape_p.abstract_eval = _reshape_eval
reshape_p.impl = lambda x, *, new_sizes: np.reshape(x, new_sizes)

transpose_p = prim("transpose", "shape")


def _transpose_eval(x, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        err(
            f"transpose: permutation {permutation} is not a permutation of the axes of "
            f"{x.str_short()}"
        )
    return ShapedArray([x.shape[p] for p in permutation], x.dtype, x.weak_type)


transpose_p.abstract_eval = _transpose_eval
transpose_p.impl = lambda x, *, permutation: np.transpose(x, permutation)

squeeze_p = prim("squeeze", "shape")


def _squeeze_eval(x, *, dimensions):
    check_axes("squeeze", dimensions, x.ndim)
    for d in dimensions:
        if x.shape[d] != 1:
            err(f"squeeze: axis {d} of {x.str_short()} has size {x.shape[d]}, not 1")
    return ShapedArray(
        [s for i, s in enumerate(x.shape) if i not in dimensions], x.dtype, x.weak_type
    )


squeeze_p.abstract_eval = _squeeze_eval
squeeze_p.impl = lambda x, *, dimensions: np.squeeze(x, tuple(dimensions))

expand_dims_p = prim("expand_dims", "shape")


def _expand_dims_eval(x, *, dimensions):
    n = x.ndim + len(dimensions)
    check_axes("expand_dims", dimensions, n)
    shape, it = [], iter(x.shape)
    for i in range(n):
        shape.append(1 if i in dimensions else next(it))
    return ShapedArray(shape, x.dtype, x.weak_type)


expand_dims_p.abstract_eval = _expand_dims_eval
expand_dims_p.impl = lambda x, *, dimensions: np.expand_dims(x, tuple(dimensions))

rev_p = prim("rev", "shape")


def _rev_eval(x, *, dimensions):
    check_axes("rev", dimensions, x.ndim)
    return x


rev_p.abstract_eval = _rev_eval
rev_p.impl = lambda x, *, dimensions: np.flip(x, tuple(dimensions)) if dimensions else x

slice_p = prim("slice", "shape")


def _slice_eval(x, *, start_indices, limit_indices, strides=None):
    n = x.ndim
    if len(start_indices) != n or len(limit_indices) != n or (strides and len(strides) != n):
        err(
            f"slice: operand {x.str_short()} needs {n} start/limit indices, got "
            f"{start_indices}, {limit_indices}"
        )
    strides = strides or (1,) * n
    shape = []
    for s, l, st, d in zip(start_indices, limit_indices, strides, x.shape):
        if not (0 <= s <= l <= d) or st < 1:
            err(
                f"slice: start {start_indices}, limit {limit_indices}, strides {strides} are out "
                f"of range for {x.str_short()}"
            )
        shape.append(0 if l == s else (l - s - 1) // st + 1)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _slice_impl(x, *, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * x.ndim
    return x[tuple(slice(s, l, st) for s, l, st in zip(start_indices, limit_indices, strides))]


slice_p.abstract_eval = _slice_eval
slice_p.impl = _slice_impl

concatenate_p = prim("concatenate", "shape")


def _concatenate_eval(*xs, dimension):
    if not xs:
        err("concatenate needs at least one operand")
    check_axes("concatenate", (dimension,), xs[0].ndim)
    same_dtypes("concatenate", xs)
    for x in xs[1:]:
        if x.ndim != xs[0].ndim or any(
            a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != dimension
        ):
            err(f"concatenate along axis {dimension} needs equal shapes elsewhere, got {fmt(xs)}")
    shape = list(xs[0].shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(shape, xs[0].dtype, all(x.weak_type for x in xs))


concatenate_p.abstract_eval = _concatenate_eval
concatenate_p.impl = lambda *xs, dimension: np.concatenate(xs, axis=dimension)

pad_p = prim("pad", "shape")


def _pad_eval(x, padval, *, padding_config):
    if padval.shape != () or padval.dtype != x.dtype:
        err(
            f"pad: padding value must be a scalar of the operand's dtype, got "
            f"{padval.str_short()} for {x.str_short()}"
        )
    if len(padding_config) != x.ndim:
        err(
            f"pad: operand {x.str_short()} needs {x.ndim} (low, high, interior) triples, got "
            f"{padding_config}"
        )
    shape = []
    for d, (lo, hi, interior) in zip(x.shape, padding_config):
        if interior < 0:
            err(f"pad: interior padding must be >= 0, got {padding_config}")
        n = lo + hi + d + max(d - 1, 0) * interior
        if n < 0:
            err(f"pad: padding {padding_config} gives a negative size for {x.str_short()}")
        shape.append(n)
    return ShapedArray(shape, x.dtype, x.weak_type)


def _pad_impl(x, padval, *, padding_config):
    big = [
        max(lo, 0) + max(hi, 0) + d + max(d - 1, 0) * it
        for d, (lo, hi, it) in zip(x.shape, padding_config)
    ]
    out = np.full(big, padval, dtype=x.dtype)
    idx = tuple(
        slice(max(lo, 0), max(lo, 0) + d + max(d - 1, 0) * it, it + 1)
        for d, (lo, hi, it) in zip(x.shape, padding_config)
    )
    out[idx] = x
    crop = tuple(slice(-min(lo, 0), n + min(hi, 0)) for n, (lo, hi, _) in zip(big, padding_config))
    return out[crop]


pad_p.abstract_eval = _pad_eval
pad_p.impl = _pad_impl

__all__ = [
    "iota_p",
    "stop_gradient_p",
    "broadcast_in_dim_p",
    "reshape_p",
    "transpose_p",
    "squeeze_p",
    "expand_dims_p",
    "rev_p",
    "slice_p",
    "concatenate_p",
    "pad_p",
]
