"""``functx.lax.reduce_window``: reductions over (strided, padded, dilated) windows.

A composite over existing primitives, as JAX's ``reduce_window_sum_p`` & co. compute it:

- the operand is padded (``pad``, interior padding for ``base_dilation``) with the reduction's
  identity (for a general computation, with the init value, and those taps are masked out);
- one strided ``slice`` per window tap (the tap's offset times ``window_dilation``) gives, for every
  output position, that tap's element; the taps are combined with the operation (a balanced tree
  for add/max/min, so a large window stays shallow; for a general computation, in row-major order
  from the init value over the operand's elements only, skipping padding and base-dilation holes,
  as XLA's CPU backend folds a window);
- non-overlapping windows (strides equal to the window, no window dilation: the usual pooling) are
  a ``reshape`` of the padded operand and one ``reduce_sum``/``reduce_max``/``reduce_min``.

Derivatives: the sum is linear (its transpose is the pads and slices transposed). Max and min carry
a ``custom_jvp`` whose tangent is the tangent of ONE element per window, chosen as XLA's
select-and-scatter (JAX's gradient of ``reduce_window_max``) chooses it: the first element of the
window in row-major order, replaced by a later one only when ``select(current, later)`` (``>=`` for
max, ``<=`` for min) is false. Padding and base-dilation holes are elements holding the identity
(-inf for max), as in JAX's CPU and GPU lowering, so a window of -inf can choose a pad (whose
cotangent is dropped). A general computation differentiates
through its combines (JAX's jvp does the same; JAX has no transpose for it, so its ``grad`` fails
where functx's works).
"""

from __future__ import annotations

import itertools
import operator
from typing import NamedTuple

import numpy as np

from functx import dtypes, ops
from functx.control.common import trace_pytree
from functx.control.custom_derivatives import custom_jvp
from functx.core import ShapedArray, same_type
from functx.errors import FunctxError, FunctxTypeError, FunctxValueError
from functx.interpreter import eval_jaxpr
from functx.source_info import where
from functx.tracing import get_aval, tree_flatten, tree_unflatten
from functx.transforms import vmap as V


class PaddingTypeError(FunctxError, RuntimeError):
    """An unknown padding name (JAX raises RuntimeError)."""


class _Geometry(NamedTuple):
    """A window's static description (hashable: the custom_jvp's non-differentiable argument)."""

    window_dimensions: tuple
    window_strides: tuple
    padding: tuple
    base_dilation: tuple
    window_dilation: tuple


def _dilate(shape, dilation):
    return tuple(0 if d == 0 else (d - 1) * k + 1 for d, k in zip(shape, dilation))


def reduce_window_shape_tuple(
    operand_shape,
    window_dimensions,
    window_strides,
    padding,
    base_dilation=None,
    window_dilation=None,
):
    """The output shape of a window reduction (JAX's ``lax.reduce_window_shape_tuple``).

    Arguments:
      operand_shape: the operand's shape.
      window_dimensions: the window's size along each axis.
      window_strides: the step between windows along each axis.
      padding: ``(low, high)`` padding per axis.
      base_dilation: optional dilation of the operand per axis.
      window_dilation: optional dilation of the window per axis.

    Returns:
      A tuple of ints: the number of windows along each axis.

    Example:
      >>> import functx as jax
      >>> jax.lax.reduce_window_shape_tuple((5, 6), (2, 3), (2, 2), ((0, 0), (1, 1)))
      (2, 3)
    """
    if base_dilation is not None:
        operand_shape = _dilate(operand_shape, base_dilation)
    if window_dilation is not None:
        window_dimensions = _dilate(window_dimensions, window_dilation)
    padded = tuple(d + lo + hi for d, (lo, hi) in zip(operand_shape, padding))
    return tuple(
        0 if p < w else (p - w) // s + 1
        for p, w, s in zip(padded, window_dimensions, window_strides)
    )


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
    """The ``(low, high)`` padding per axis of a padding name (JAX's ``lax.padtype_to_pads``).

    Arguments:
      in_shape: the input's (spatial) shape.
      window_shape: the (dilated) window's shape.
      window_strides: the strides.
      padding: ``'VALID'``, ``'SAME'`` (odd padding goes to the high side) or ``'SAME_LOWER'``
        (to the low side), in any case.

    Returns:
      A list of ``(low, high)`` pairs of ints, one per axis.

    Example:
      >>> import functx as jax
      >>> jax.lax.padtype_to_pads((5, 6), (2, 3), (2, 2), "SAME")
      [(0, 1), (0, 1)]
    """
    if not isinstance(padding, str):
        raise FunctxTypeError(f"Unknown padding type: {padding}.")
    kind = padding.upper()
    if kind not in ("VALID", "SAME", "SAME_LOWER"):
        raise PaddingTypeError(
            f"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got {padding}."
        ) from None
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    out = []
    for n, w, s in zip(in_shape, window_shape, window_strides):
        total = max((-(-n // s) - 1) * s + w - n, 0)
        small, big = total // 2, total - total // 2
        out.append((small, big) if kind == "SAME" else (big, small))
    return out


# --- the composites ------------------------------------------------------------------------------


def _scalar(value, dtype):
    return ops.full((), value, dtype)


def _padded(x, fill, g: _Geometry):
    """``x`` with the geometry's padding and base dilation, filled with scalar ``fill``."""
    cfg = [(lo, hi, b - 1) for (lo, hi), b in zip(g.padding, g.base_dilation)]
    if all(c == (0, 0, 0) for c in cfg):
        return x
    return ops.pad(x, fill, cfg)


def _out_shape(shape, g: _Geometry):
    return reduce_window_shape_tuple(shape, *g)


def _taps(x, fill, out_shape, g: _Geometry):
    """Per window tap, in row-major order of the taps, the operand's element that tap reads for
    every output position (``fill`` where it reads padding or a hole of the base dilation): one
    strided slice of the padded operand per tap."""
    xp = _padded(x, fill, g)
    for w in itertools.product(*[range(k) for k in g.window_dimensions]):
        start = [i * d for i, d in zip(w, g.window_dilation)]
        limit = [s + (o - 1) * st + 1 for s, o, st in zip(start, out_shape, g.window_strides)]
        yield ops.slice(xp, start, limit, g.window_strides)


def _tap_masks(shape, out_shape, g: _Geometry):
    """Per tap, a bool array of the output's shape: where that tap reads an operand element
    (not padding, not a hole of the base dilation)."""
    per_axis = []
    for n, o, w, s, (lo, _), b, d in zip(
        shape,
        out_shape,
        g.window_dimensions,
        g.window_strides,
        g.padding,
        g.base_dilation,
        g.window_dilation,
    ):
        pos = np.arange(o)[None, :] * s + np.arange(w)[:, None] * d - lo  # (taps, outputs)
        per_axis.append((pos >= 0) & (pos <= (n - 1) * b) & (pos % b == 0))
    for w in itertools.product(*[range(k) for k in g.window_dimensions]):
        m = per_axis[0][w[0]]
        for axis in range(1, len(w)):
            m = np.logical_and.outer(m, per_axis[axis][w[axis]])
        yield np.asarray(m).reshape(out_shape)


_REDUCERS = {"add": ops.reduce_sum, "max": ops.reduce_max, "min": ops.reduce_min}
_COMBINE = {"add": ops.add, "max": ops.max, "min": ops.min}


def _identity(kind, dtype):
    dtype = np.dtype(dtype)
    if kind == "add":
        return np.zeros((), dtype)[()]
    if dtype == np.bool_:
        return np.bool_(kind == "min")
    if dtypes.issubdtype(dtype, np.inexact):
        return np.asarray(-np.inf if kind == "max" else np.inf, dtype)[()]
    info = np.iinfo(dtype)
    return np.asarray(info.min if kind == "max" else info.max, dtype)[()]


def _tree(combine, xs):
    xs = list(xs)
    while len(xs) > 1:
        nxt = [combine(a, b) for a, b in zip(xs[::2], xs[1::2])]
        if len(xs) % 2:
            nxt.append(xs[-1])
        xs = nxt
    return xs[0]


def _monoid_window(kind, g: _Geometry, x):
    """sum / max / min over the windows (the primal)."""
    aval = get_aval(x)
    out_shape = _out_shape(aval.shape, g)
    ident = _identity(kind, aval.dtype)
    if 0 in out_shape:
        return ops.full(out_shape, ident, aval.dtype)
    xp = _padded(x, _scalar(ident, aval.dtype), g)
    if g.window_dimensions == g.window_strides and all(d == 1 for d in g.window_dilation):
        # non-overlapping windows: a reshape and one reduction
        pshape = get_aval(xp).shape
        keep = [o * w for o, w in zip(out_shape, g.window_dimensions)]
        if tuple(keep) != tuple(pshape):
            xp = ops.slice(xp, [0] * len(keep), keep)
        # (axes whose window is 1 stay whole: a pooling window (1, 2, 2, 1) reduces axes 2 and
        # 4 of (N, H/2, 2, W/2, 2, C), and the kernel's rows run over the channels contiguously;
        # a size-1 axis after the channels made every row a scalar loop, 10x slower)
        split, axes = [], []
        for o, w in zip(out_shape, g.window_dimensions):
            split.append(o)
            if w != 1:
                axes.append(len(split))
                split.append(w)
        if not axes:
            return xp
        return _REDUCERS[kind](ops.reshape(xp, split), tuple(axes))
    return _tree(_COMBINE[kind], _taps(x, _scalar(ident, aval.dtype), out_shape, g))


def _chooser(kind, g, x):
    return _monoid_window(kind, g, x)


_chooser = custom_jvp(_chooser, nondiff_argnums=(0, 1))


def _chooser_jvp(kind, g, primals, tangents):
    (x,), (t,) = primals, tangents
    out = _chooser(kind, g, x)
    aval = get_aval(x)
    out_shape = _out_shape(aval.shape, g)
    if 0 in out_shape:
        return out, ops.full(out_shape, 0, aval.dtype)
    ident = _scalar(_identity(kind, aval.dtype), aval.dtype)
    keep_current = ops.ge if kind == "max" else ops.le
    xs = _taps(x, ident, out_shape, g)
    ts = _taps(t, _scalar(0, aval.dtype), out_shape, g)
    best = best_t = None
    for xk, tk in zip(xs, ts):
        if best is None:
            best, best_t = xk, tk
        else:  # the later element wins where the current one is not >= (<=) it
            take = ops.bitwise_not(keep_current(best, xk))
            best, best_t = ops.select(take, xk, best), ops.select(take, tk, best_t)
    return out, best_t


_chooser.defjvp(_chooser_jvp)


def _apply(closed, a, b):
    """The scalar computation applied elementwise to lists of equally shaped arrays (a vmap per
    axis: no reshapes, whose index arithmetic compiled code would carry)."""
    fn = lambda *xs: eval_jaxpr(closed.jaxpr, closed.consts, *xs)  # noqa: E731
    for _ in range(get_aval(a[0]).ndim):
        fn = V.vmap(fn)
    return list(fn(*a, *b))


def _generic_window(closed, operands, inits, g: _Geometry):
    shape = get_aval(operands[0]).shape
    out_shape = _out_shape(shape, g)
    acc = [ops.broadcast_in_dim(i, out_shape, ()) for i in inits]
    if 0 in out_shape:
        return acc
    masks = _tap_masks(shape, out_shape, g)
    per_operand = [_taps(x, i, out_shape, g) for x, i in zip(operands, inits)]
    for valid, taps in zip(masks, zip(*per_operand)):
        if not valid.any():
            continue
        new = _apply(closed, acc, taps)
        # XLA folds the operand's elements only: padding and base-dilation holes are skipped
        acc = new if valid.all() else [ops.select(valid, n, a) for n, a in zip(new, acc)]
    return acc


# --- the public function -------------------------------------------------------------------------


def _shapelike(what, values, n):
    try:
        vals = tuple(operator.index(v) for v in values)
    except TypeError:
        raise FunctxTypeError(
            f"reduce_window {what} must be a sequence of ints, got {values!r}{where()}"
        ) from None
    return vals


def _geometry(shape, window_dimensions, window_strides, padding, base_dilation, window_dilation):
    nd = len(shape)
    wd = _shapelike("window_dimensions", window_dimensions, nd)
    ws = (
        (1,) * len(wd)
        if window_strides is None
        else _shapelike("window_strides", window_strides, nd)
    )
    bd = (1,) * len(wd) if base_dilation is None else _shapelike("base_dilation", base_dilation, nd)
    wdil = (
        (1,) * len(wd)
        if window_dilation is None
        else _shapelike("window_dilation", window_dilation, nd)
    )
    if isinstance(padding, str):
        pads = tuple(padtype_to_pads(shape, _dilate(wd, wdil), ws, padding))
    else:
        try:
            pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise FunctxTypeError(
                f"reduce_window padding must be a string or a sequence of (low, high) pairs of "
                f"ints, got {padding!r}{where()}"
            ) from None
    for what, vals in (("window_dimensions", wd), ("window_strides", ws)):
        if any(v <= 0 for v in vals):
            raise FunctxTypeError(
                f"reduce_window {what} must have every element be strictly positive, got {vals}."
            )
    for what, vals in (("base_dilation", bd), ("window_dilation", wdil)):
        if any(v < 0 for v in vals):
            raise FunctxTypeError(
                f"reduce_window {what} must have every element be nonnegative, got {vals}."
            )
    if nd != len(wd):
        raise FunctxTypeError(
            "reduce_window got the wrong number of window_dimensions for operand: got operand "
            f"shape {tuple(shape)} with window_dimensions {wd}."
        )
    for what, vals in (("window_strides", ws), ("base_dilation", bd), ("window_dilation", wdil)):
        if len(vals) != len(wd):
            raise FunctxTypeError(
                f"reduce_window got inconsistent {what} and window_dimensions: got {what} "
                f"{vals} and window_dimensions {wd}."
            )
    if len(pads) != nd:
        raise FunctxValueError(
            f"reduce_window padding has {len(pads)} pairs for an operand of {nd} "
            f"dimensions{where()}"
        )
    if any(v <= 0 for v in bd + wdil):
        raise FunctxTypeError(
            f"reduce_window dilations must be strictly positive, got base_dilation {bd} and "
            f"window_dilation {wdil}."
        )
    return _Geometry(wd, ws, pads, bd, wdil)


_MONOID_OPS = {id(ops.add): "add", id(ops.max): "max", id(ops.min): "min"}


def _monoid_kind(computation, flat_inits):
    """'add' / 'max' / 'min' when JAX takes its specialised path: ``lax.add``/``max``/``min``
    itself, one concrete scalar init equal to the identity of the init's own dtype."""
    kind = _MONOID_OPS.get(id(computation))
    if kind is None or len(flat_inits) != 1:
        return None
    init = flat_inits[0]
    aval = get_aval(init)
    try:
        val = np.asarray(init)
    except Exception:  # noqa: BLE001 - a traced init value
        return None
    if aval.shape != ():
        return None
    if kind == "add":
        return kind if val == 0 else None
    return kind if val == _identity(kind, aval.dtype) else None


def reduce_window(
    operand,
    init_value,
    computation,
    window_dimensions,
    window_strides=None,
    padding="VALID",
    base_dilation=None,
    window_dilation=None,
):
    """Reduce every (strided, padded, dilated) window of ``operand`` (JAX's ``lax.reduce_window``).

    ``lax.add`` with init 0, ``lax.max`` / ``lax.min`` with their identities (-inf / +inf, or the
    integer extremes) are the specialised sum / max / min (max and min differentiate as JAX's
    MaxPool: the whole cotangent goes to one element per window); any other binary function of
    scalars is folded over each window from ``init_value``, also on several operands at once.

    Arguments:
      operand: an array, or a pytree of equally shaped arrays.
      init_value: a scalar, or a pytree of scalars of ``operand``'s structure (the fold's start
        value, and the value of padding and base-dilation holes).
      computation: a function of two such pytrees of scalars returning one.
      window_dimensions: the window's size along each axis.
      window_strides: the step between windows (default: 1 per axis).
      padding: ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or ``(low, high)`` pairs per axis.
      base_dilation: optional dilation of the operand (holes hold ``init_value``).
      window_dilation: optional dilation of the window.

    Returns:
      An array (or a pytree like ``operand``) of shape ``reduce_window_shape_tuple(...)``.

    Differences from JAX: a composite of pads, strided slices and reductions (the Jaxpr shows
    those); it differentiates where JAX refuses (max/min windows with ``window_dilation``, general
    computations), and a non-commutative computation with padding can differ (folding order).

    Example:
      >>> import functx as jax
      >>> x = jax.numpy.arange(10, dtype="float32")
      >>> jax.lax.reduce_window(x, jax.numpy.float32(1), jax.lax.mul, (2,))
      Array([ 0.,  2.,  6., 12., 20., 30., 42., 56., 72.], dtype=float32)
      >>> x2 = x.reshape(2, 5)
      >>> jax.lax.reduce_window(x2, -jax.numpy.inf, jax.lax.max, (1, 2), (1, 2), "SAME")
      Array([[1., 3., 4.],
             [6., 8., 9.]], dtype=float32)
    """
    flat_ops, tree = tree_flatten(operand)
    flat_inits, init_tree = tree_flatten(init_value)
    if tree != init_tree:
        raise FunctxValueError(
            f"Operands must have the same tree structure as init_values: {tree} vs. "
            f"{init_tree}{where()}"
        )
    if not flat_ops:
        raise FunctxValueError(f"reduce_window must have at least one operand.{where()}")
    shape = get_aval(flat_ops[0]).shape
    g = _geometry(shape, window_dimensions, window_strides, padding, base_dilation, window_dilation)
    kind = _monoid_kind(computation, flat_inits)
    if kind is not None:
        (x,) = flat_ops
        dt = get_aval(x).dtype
        if kind == "add" and not (dtypes.issubdtype(dt, np.number)):
            raise FunctxTypeError(
                f"operand to reduce_window_sum must have a number dtype, got {np.dtype(dt).name}"
            )
        out = _monoid_window(kind, g, x) if kind == "add" else _chooser(kind, g, x)
        return tree_unflatten(tree, [out])
    in_avals = [get_aval(o) for o in flat_ops]
    init_avals = [get_aval(i) for i in flat_inits]
    for a in in_avals[1:]:
        if a.shape != in_avals[0].shape:
            raise FunctxTypeError(
                "reduce_window operands must have equal shapes, got "
                + ", ".join(o.str_short() for o in in_avals)
            )
    if any(o.dtype != i.dtype for o, i in zip(in_avals, init_avals)):
        raise FunctxTypeError(
            "reduce_window got inconsistent dtypes for operands and init_values: got operand "
            f"dtypes {[o.dtype for o in in_avals]} and init_value dtypes "
            f"{[i.dtype for i in init_avals]}."
        )
    if any(i.shape != () for i in init_avals):
        raise FunctxTypeError(
            "reduce_window expected init_values to be scalars but init_values have shapes "
            f"{[i.shape for i in init_avals]}."
        )
    scalars = [ShapedArray((), a.dtype) for a in in_avals]
    args_tree = tree_flatten((tree_unflatten(tree, scalars), tree_unflatten(tree, scalars)))[1]
    closed, out_tree = trace_pytree(computation, scalars + scalars, args_tree)
    if out_tree != tree:
        raise FunctxValueError(
            "reduce_window output must have the same tree structure as the operands "
            f"{tree} vs. {out_tree}"
        )
    if not all(same_type(a, b) for a, b in zip(closed.out_avals, scalars)):
        raise FunctxTypeError(
            "reduce_window: the computation must return the scalar types of its inputs, "
            f"{[a.str_short() for a in scalars]}; got {[a.str_short() for a in closed.out_avals]}"
            f"{where()}"
        )
    inits = [ops.convert_element_type(i, a.dtype) for i, a in zip(flat_inits, in_avals)]
    return tree_unflatten(tree, _generic_window(closed, flat_ops, inits, g))


__all__ = ["padtype_to_pads", "reduce_window", "reduce_window_shape_tuple"]
