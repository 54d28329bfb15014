"""Contraction: ``dot_general`` (shape rule and the NumPy implementation)."""

from __future__ import annotations

import math

import numpy as np

from functx.core import ShapedArray
from functx.primitives.base import LOW_FLOATS, check_axes, err, fmt, prim

# --- Contraction ---------------------------------------------------------------------------------
dot_general_p = prim("dot_general", "contract")


def _dot_general_eval(lhs, rhs, *, dimension_numbers, preferred_element_type=None, precision=None):
    (lc, rc), (lb, rb) = dimension_numbers
    name = "dot_general"
    check_axes(name, tuple(lc) + tuple(lb), lhs.ndim)
    check_axes(name, tuple(rc) + tuple(rb), rhs.ndim)
    if len(lc) != len(rc) or len(lb) != len(rb):
        err(f"{name}: contracting/batch dimensions {dimension_numbers} do not pair up")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if lhs.shape[a] != rhs.shape[b]:
            err(
                f"{name}: cannot contract {lhs.str_short()} with {rhs.str_short()}: axis {a} "
                f"has size {lhs.shape[a]} but axis {b} has size {rhs.shape[b]}"
            )
    if lhs.dtype != rhs.dtype:
        err(f"{name}: operands need equal dtypes, got {fmt((lhs, rhs))}")
    out = preferred_element_type or lhs.dtype
    shape = (
        [lhs.shape[i] for i in lb]
        + [d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb]
        + [d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb]
    )
    return ShapedArray(shape, out, lhs.weak_type and rhs.weak_type)


def _dot_general_impl(lhs, rhs, *, dimension_numbers, preferred_element_type=None, precision=None):
    # (NumPy computes float32 products in float32 whatever the precision)
    (lc, rc), (lb, rb) = dimension_numbers
    out_dtype = preferred_element_type or lhs.dtype
    comp = np.float32 if lhs.dtype in LOW_FLOATS or out_dtype in LOW_FLOATS else out_dtype
    if lhs.dtype == np.bool_:
        comp = np.int32 if out_dtype == np.bool_ else comp
    lf = [i for i in range(lhs.ndim) if i not in lc and i not in lb]
    rf = [i for i in range(rhs.ndim) if i not in rc and i not in rb]
    lt = np.transpose(lhs, list(lb) + lf + list(lc)).astype(comp, copy=False)
    rt = np.transpose(rhs, list(rb) + list(rc) + rf).astype(comp, copy=False)
    bshape = [lhs.shape[i] for i in lb]
    m = math.prod(lhs.shape[i] for i in lf)
    n = math.prod(rhs.shape[i] for i in rf)
    k = math.prod(lhs.shape[i] for i in lc)
    b = math.prod(bshape)
    out = np.matmul(lt.reshape(b, m, k), rt.reshape(b, k, n))
    out = out.reshape(bshape + [lhs.shape[i] for i in lf] + [rhs.shape[i] for i in rf])
    if out_dtype == np.bool_:
        return out != 0
    return out.astype(out_dtype, copy=False)


dot_general_p.abstract_eval = _dot_general_eval
dot_general_p.impl = _dot_general_impl

__all__ = ["dot_general_p"]
