"""Reductions: the reduction-semantics table and the reduce/argreduce primitives.

``SEMANTICS`` holds, once, what every implementation of a reduction must agree on (the eager
NumPy path here and both compiled backends read it):

- ``identity``: the value of an empty reduction ("zero", "one", "lowest", "highest", "all_ones";
  ``identity(name, dtype)`` gives the number: -inf/+inf for floats, the dtype's extremes for
  integers, False/True for bool);
- ``combine``: the elementwise row (``functx.primitives.elementwise``) that combines two partial
  results; its NaN and signed-zero behaviour is the reduction's:
- ``nan``: "propagate" where a NaN operand makes the result NaN (max/min as XLA, sum/prod by IEEE);
- ``zero_sign``: for max (min) of floats, +0.0 (-0.0) wins over the other zero whatever the
  order, as in XLA (``fix_zero_sign`` applies it to NumPy's results);
- complex operands of max/min order lexicographically (real parts, then imaginary parts, as
  JAX); the reduction folds left to right from the identity, a NaN part letting the next
  element replace the running value (``_complex_fold``); argmax/argmin reject complex, as JAX;
- for argmax/argmin (``ARG``): ``tie`` "first" (the smallest index among equal values) and NaN
  counts as the extreme (the first NaN's index wins), as in XLA.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from functx import dtypes
from functx.core import ShapedArray
from functx.errors import FunctxArgumentError, FunctxOverflowError
from functx.primitives.base import LOW_FLOATS, check_axes, err, prim
from functx.source_info import where


@dataclass(frozen=True)
class Reduction:
    """The semantics of one reduction (see the module docstring)."""

    name: str
    kinds: str  # operand dtypes: "number" (no bool), "any", "intbool"
    identity: str  # zero | one | lowest | highest | all_ones
    combine: str  # the elementwise row combining two partial results
    nan: str = "propagate"
    zero_sign: float | None = None  # the zero that wins among +0.0 and -0.0 (max: +0.0)


SEMANTICS: dict[str, Reduction] = {
    r.name: r
    for r in (
        Reduction("reduce_sum", "number", "zero", "add"),
        Reduction("reduce_prod", "number", "one", "mul"),
        Reduction("reduce_max", "any", "lowest", "max", zero_sign=0.0),
        Reduction("reduce_min", "any", "highest", "min", zero_sign=-0.0),
        Reduction("reduce_and", "intbool", "all_ones", "and", nan="none"),
        Reduction("reduce_or", "intbool", "zero", "or", nan="none"),
    )
}


@dataclass(frozen=True)
class ArgReduction:
    """argmax/argmin: the value order of ``like`` (max or min), ties to the first index, NaN the
    extreme (its first index wins)."""

    name: str
    like: str
    tie: str = "first"
    nan: str = "wins"


ARG: dict[str, ArgReduction] = {
    "argmax": ArgReduction("argmax", "reduce_max"),
    "argmin": ArgReduction("argmin", "reduce_min"),
}


def _is_float(dtype) -> bool:
    return dtype.kind in "fc" or dtype == dtypes.bfloat16 or dtype in dtypes.NARROW_FLOATS


def lowest(dtype):
    """The smallest value of ``dtype``: -inf for floats, False for bool, the integer minimum."""
    dtype = np.dtype(dtype)
    if _is_float(dtype):
        return -np.inf
    return False if dtype == np.bool_ else int(dtypes.iinfo(dtype).min)


def highest(dtype):
    """The largest value of ``dtype``: +inf for floats, True for bool, the integer maximum."""
    dtype = np.dtype(dtype)
    if _is_float(dtype):
        return np.inf
    return True if dtype == np.bool_ else int(dtypes.iinfo(dtype).max)


def identity(name: str, dtype):
    """The value of an empty reduction ``name`` (a key of ``SEMANTICS`` or ``ARG``) of ``dtype``."""
    kind = SEMANTICS[ARG[name].like if name in ARG else name].identity
    dtype = np.dtype(dtype)
    if kind == "lowest":
        return lowest(dtype)
    if kind == "highest":
        return highest(dtype)
    if kind == "all_ones":
        return True if dtype == np.bool_ else (-1 if dtype.kind == "i" else highest(dtype))
    one = kind == "one"
    if dtype == np.bool_:
        return one
    return (1.0 if one else 0.0) if _is_float(dtype) else int(one)


def fix_zero_sign(name, out, x, axes):
    """``out`` (NumPy's max/min of ``x`` over ``axes``) with the winning zero of ``name``'s
    ``zero_sign`` rule: max of zeros is +0.0 if any is +0.0, min is -0.0 if any is -0.0."""
    z = SEMANTICS[name].zero_sign
    if z is None or x.dtype.kind != "f" or not np.any(np.asarray(out) == 0):
        return out
    positive = not np.signbit(z)
    want = (x == 0) & (np.signbit(x) != positive)
    hit = np.any(want, axis=axes) & (np.asarray(out) == 0)
    return np.where(hit, np.asarray(z, x.dtype), out)


def _complex_fold(x, axes, greater):
    """max/min of complex ``x`` over ``axes``: lexicographic (real parts, then imaginary, as
    JAX orders them), folded left to right from the identity (-inf or +inf): the running value
    stays where it orders after (before) the next element, else the element replaces it. This
    is the order in which XLA's CPU reduction meets NaN parts on the cases we checked."""
    keep = [i for i in range(x.ndim) if i not in axes]
    rows = np.transpose(x, keep + list(axes)).reshape([x.shape[i] for i in keep] + [-1])
    acc = np.full(rows.shape[:-1], -np.inf if greater else np.inf, x.dtype)
    cmp = np.greater if greater else np.less
    for j in range(rows.shape[-1]):
        v = rows[..., j]
        pick = np.where(acc.real == v.real, cmp(acc.imag, v.imag), cmp(acc.real, v.real))
        acc = np.where(pick, acc, v)
    return acc


# --- the primitives ------------------------------------------------------------------------------
def _reduce_eval(name, kinds):
    def abstract_eval(x, *, axes):
        check_axes(name, axes, x.ndim)
        if kinds == "number" and x.dtype == dtypes.bool_:
            err(f"{name} does not accept bool operands, got {x.str_short()}")
        if kinds == "intbool" and dtypes.is_inexact(x.dtype):
            err(f"{name} needs integer or bool operands, got {x.str_short()}")
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, x.dtype, x.weak_type)

    return abstract_eval


def _reduce_impl(name):
    def impl(x, *, axes):
        axes = tuple(axes)
        if all(x.shape[a] == 1 for a in axes):
            # one element per output: that element (XLA's simplification, so -0.0 stays -0.0)
            return np.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes))
        low = x.dtype in LOW_FLOATS
        xc = x.astype(np.float32) if low else x
        with np.errstate(all="ignore"):
            if name == "reduce_sum":
                out = np.sum(xc, axis=axes, dtype=xc.dtype)
            elif name == "reduce_prod":
                out = np.prod(xc, axis=axes, dtype=xc.dtype)
            elif name in ("reduce_max", "reduce_min") and x.dtype.kind == "c":
                out = _complex_fold(xc, axes, name == "reduce_max")
            elif name == "reduce_max":
                out = np.max(xc, axis=axes, initial=identity(name, x.dtype))
                out = fix_zero_sign(name, out, xc, axes)
            elif name == "reduce_min":
                out = np.min(xc, axis=axes, initial=identity(name, x.dtype))
                out = fix_zero_sign(name, out, xc, axes)
            elif name == "reduce_and":
                out = (
                    np.all(xc, axis=axes)
                    if x.dtype == np.bool_
                    else np.bitwise_and.reduce(xc, axis=axes)
                )
            else:
                out = (
                    np.any(xc, axis=axes)
                    if x.dtype == np.bool_
                    else np.bitwise_or.reduce(xc, axis=axes)
                )
        return np.asarray(out).astype(x.dtype)

    return impl


for _r in SEMANTICS.values():
    _p = prim(_r.name, "reduce")
    _p.abstract_eval = _reduce_eval(_r.name, _r.kinds)
    _p.impl = _reduce_impl(_r.name)
    globals()[f"{_r.name}_p"] = _p


def _argreduce_eval(name):
    def abstract_eval(x, *, axes, index_dtype):
        check_axes(name, axes, x.ndim)
        if len(axes) != 1:
            err(f"{name} reduces exactly one axis, got axes={axes}")
        if x.shape[axes[0]] == 0:
            raise FunctxArgumentError(  # (a ValueError, as JAX's; its words, which tests match)
                f"{name}: attempt to get {name} of an empty sequence (axis {axes[0]} of "
                f"{x.str_short()}){where()}"
            )
        if x.dtype in dtypes.COMPLEX:
            err(f"{name} does not accept complex operands (no ordering), got {x.str_short()}")
        if index_dtype not in dtypes.INTEGERS:
            err(f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        n = x.shape[axes[0]]
        if n - 1 > np.iinfo(index_dtype).max:
            raise FunctxOverflowError(
                f"{name}: axis {axes[0]} of {x.str_short()} has {n} elements, more than "
                f"index_dtype {np.dtype(index_dtype).name} can index{where()}; pass "
                f"index_dtype=int64 to functx.lax.{name}, or split the axis"
            )
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return ShapedArray(shape, index_dtype)

    return abstract_eval


def _argreduce_impl(fn):
    # np.argmax/np.argmin return the first of equal values and the first NaN: ARG's rules
    def impl(x, *, axes, index_dtype):
        if x.dtype in LOW_FLOATS:
            x = x.astype(np.float32)
        return fn(x, axis=axes[0]).astype(index_dtype)

    return impl


argmax_p = prim("argmax", "reduce")
argmax_p.abstract_eval = _argreduce_eval("argmax")
argmax_p.impl = _argreduce_impl(np.argmax)
argmin_p = prim("argmin", "reduce")
argmin_p.abstract_eval = _argreduce_eval("argmin")
argmin_p.impl = _argreduce_impl(np.argmin)

__all__ = [f"{name}_p" for name in SEMANTICS] + ["argmax_p", "argmin_p", "identity"]
