"""vmap: automatic batching as a Jaxpr -> Jaxpr rewrite.

``vmap(f)(xs)`` traces ``f`` on one example (the avals of the arguments without the mapped axis),
rewrites that per-example Jaxpr into a batched one with ``batch_jaxpr``, and evaluates the batched
Jaxpr on the actual arguments (eagerly on arrays, inlined into the active trace on tracers). So
``make_jaxpr(vmap(f))`` prints the batched Jaxpr and vmap composes with every other transform.

The rewrite walks the equations once. Each value carries a *batch dimension*: the axis of the
batched value that indexes the examples, or ``None`` (``not_mapped``) when the value is the same for
every example. An equation whose inputs are all unbatched is re-emitted unchanged; otherwise the
rule of its primitive (``batching_rules[prim]``) emits equivalent batched equations with ordinary
``functx.lax`` calls::

    rule(args, dims, **params) -> (out, out_dim)        # lists for multiple-result primitives

Rules keep the batch axis where it is cheapest: they move it only when the primitive needs it
elsewhere (``reshape`` wants it in front) and never broadcast an unbatched operand to the batch
size unless the primitive cannot take it otherwise (``W`` in ``x @ W`` stays a ``W``). Rules are
grouped by primitive class (``Primitive.group``): one serves every elementwise op, one every
reduction, ...

Named axes: ``vmap(f, axis_name="i")`` binds "i" (an ``axis_env`` frame of kind "vmap") while it
traces ``f``, so the collectives of ``functx.control.collectives`` over "i" check the name and read
its size; the rewrite then hands every collective equation to its rule in
``axis_batching_rules`` with the axis being batched (``AxisData(name, size)``), batched operands or
not: over this vmap's name a collective becomes array operations on the batch axis, over another
name it is re-bound on the batched value for an outer vmap or ``shard_map``. Rules that batch a
sub-Jaxpr (cond, scan, ...) call ``batch_jaxpr``, which batches the same named axis.

Sections: 1. helpers to move batch axes  2. batch_jaxpr (the rewrite)  3. the rules, by group
4. the ``vmap`` API (in_axes/out_axes, sizes, errors, cache).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any, Callable, NamedTuple

import numpy as np
import optree

from functx import config, dtypes, ops, primitives as P, tracing
from functx.array import Array
from functx.core import ClosedJaxpr, Literal, Primitive, ShapedArray
from functx.errors import FunctxError, UnsupportedError
from functx.interpreter import eval_jaxpr
from functx.primitives.bitcast import nbits as bitcast_nbits
from functx.source_info import source_info, where
from functx.transforms import axis_env
from functx.transforms.jvp import arg_avals, check_callable

not_mapped = None

BatchDim = int | None
Rule = Callable[..., tuple[Any, Any]]

#: The batching rule of each primitive. Modules that define primitives (control flow, custom
#: derivatives) register theirs here: ``batching_rules[my_p] = my_rule``.
batching_rules: dict[Primitive, Rule] = {}


class AxisData(NamedTuple):
    """The axis being batched: its name (None for a vmap without ``axis_name``) and size."""

    name: Any
    size: int


#: Named-axis primitives (the collectives of ``functx.control.collectives``): their rules also
#: receive the axis being batched, and run for every equation of theirs, batched operands or
#: not (a collective over this vmap's axis name must be rewritten even on unbatched values):
#: ``rule(axis: AxisData, args, dims, **params) -> (out, out_dim)``.
axis_batching_rules: dict[Primitive, Callable[..., tuple[Any, Any]]] = {}


class _Batching(threading.local):
    """The axes being batched by the rewrites now running in this thread (innermost last): a
    rule that batches a sub-Jaxpr (cond, scan, ...) with ``batch_jaxpr`` batches the same axis."""

    def __init__(self):
        self.axes: list[AxisData] = []


_batching = _Batching()
_INHERIT = object()


class BatchingError(FunctxError, ValueError):
    """vmap was called with arguments or axes that do not fit together."""


class BatchingTypeError(BatchingError, TypeError):
    """A vmap argument of the wrong type (in_axes, out_axes, axis_size): a TypeError, as in JAX,
    and still a BatchingError."""


# --- 1. Moving batch axes ------------------------------------------------------------------------
def _shape(x) -> tuple[int, ...]:
    return tracing.get_aval(x).shape


def _ndim(x) -> int:
    return len(_shape(x))


def moveaxis(x, src: int, dst: int):
    """Move axis ``src`` of ``x`` to position ``dst`` (a transpose, or nothing)."""
    if src == dst:
        return x
    perm = [i for i in range(_ndim(x)) if i != src]
    perm.insert(dst, src)
    return ops.transpose(x, perm)


def broadcast_batched(x, size: int, axis: int):
    """Give the unbatched ``x`` a batch axis of ``size`` at position ``axis``."""
    shape = list(_shape(x))
    shape.insert(axis, size)
    return ops.broadcast_in_dim(x, shape, [i for i in range(len(shape)) if i != axis])


def matchaxis(x, src: BatchDim, dst: int, size: int):
    """Put the batch axis of ``x`` (at ``src``, or absent) at ``dst``."""
    if src is None:
        return broadcast_batched(x, size, dst)
    return moveaxis(x, src, dst)


def bdim_at_front(x, d: BatchDim, size: int):
    return matchaxis(x, d, 0, size)


def shift_axes(axes, d: int) -> tuple[int, ...]:
    """Per-example axes -> axes of the batched value whose batch axis is ``d``."""
    return tuple(a + (a >= d) for a in axes)


def batched_aval(aval: ShapedArray, d: BatchDim, size: int) -> ShapedArray:
    if d is None:
        return aval
    shape = list(aval.shape)
    shape.insert(d, size)
    return aval.update(shape=tuple(shape))


def axis_size_of(args, dims) -> int:
    """The batch size, read off the first batched operand of a rule."""
    for x, d in zip(args, dims):
        if d is not None:
            return _shape(x)[d]
    raise AssertionError("a batching rule was called with no batched operand")


# --- 2. batch_jaxpr: the rewrite -----------------------------------------------------------------
def _literal(a: Literal):
    """A literal as a 0-d Array with its exact aval (weak type included), so re-binding keeps it."""
    return Array._new(np.asarray(a.val, a.aval.dtype), a.aval)


def _rule_for(eqn):
    rule = batching_rules.get(eqn.prim)
    if rule is None:
        raise UnsupportedError(
            f"vmap: primitive '{eqn.prim.name}' has no batching rule{where(eqn.source_info)}. "
            "Register one in functx.transforms.vmap.batching_rules."
        )
    return rule


def _check_rule_output(eqn, outs, out_ds, size):
    """A rule must return the per-example result with a batch axis inserted at its out_dim."""
    if not eqn.prim.multiple_results:
        outs, out_ds = [outs], [out_ds]
    for v, o, d in zip(eqn.outvars, outs, out_ds):
        want, got = batched_aval(v.aval, d, size), tracing.get_aval(o)
        if want.shape != got.shape or want.dtype != got.dtype:
            raise FunctxError(
                f"vmap: the batching rule of '{eqn.prim.name}' returned {got.str_short()} with "
                f"batch axis {d}, but the per-example result is {v.aval.str_short()} (expected "
                f"{want.str_short()}){where(eqn.source_info)}. This is a bug in the rule."
            )


def _axis_data(axis_name, axis_size: int) -> AxisData:
    if axis_name is _INHERIT:  # (a sub-Jaxpr of the rewrite now running: the same named axis)
        outer = _batching.axes[-1] if _batching.axes else None
        axis_name = outer.name if outer is not None and outer.size == axis_size else None
    return AxisData(axis_name, axis_size)


def batch_eval(jaxpr, consts, args, dims, axis_size: int, *, axis_name=_INHERIT):
    """Evaluate ``jaxpr`` on batched values (``args`` with batch axes ``dims``) inside the active
    trace; returns ``(outs, out_dims)``. ``axis_name`` names the batched axis for the collectives
    (by default the one of the rewrite this call is part of, else none)."""
    axis = _axis_data(axis_name, axis_size)
    _batching.axes.append(axis)
    try:
        return _batch_eval(jaxpr, consts, args, dims, axis)
    finally:
        _batching.axes.pop()


def _batch_eval(jaxpr, consts, args, dims, axis: AxisData):
    axis_size = axis.size
    env: dict[int, tuple[Any, BatchDim]] = {}
    for v, c in zip(jaxpr.constvars, consts):
        env[v.id] = (c, None)
    for v, x, d in zip(jaxpr.invars, args, dims):
        env[v.id] = (x, d)

    def read(a):
        return (_literal(a), None) if type(a) is Literal else env[a.id]

    for eqn in jaxpr.eqns:
        vals, ds = [], []
        for a in eqn.invars:
            x, d = read(a)
            vals.append(x)
            ds.append(d)
        ctx = (
            source_info(eqn.source_info)
            if eqn.source_info is not None
            else contextlib.nullcontext()
        )
        with ctx:
            named = axis_batching_rules.get(eqn.prim)
            if named is not None:
                outs, out_ds = named(axis, vals, ds, **eqn.params)
                _check_rule_output(eqn, outs, out_ds, axis_size)
            elif all(d is None for d in ds):
                outs = eqn.prim.bind(*vals, **eqn.params)
                out_ds = [None] * len(eqn.outvars) if eqn.prim.multiple_results else None
            else:
                outs, out_ds = _rule_for(eqn)(vals, ds, **eqn.params)
                _check_rule_output(eqn, outs, out_ds, axis_size)
        if eqn.prim.multiple_results:
            for v, o, d in zip(eqn.outvars, outs, out_ds):
                env[v.id] = (o, d)
        else:
            env[eqn.outvars[0].id] = (outs, out_ds)
    outs = [read(a) for a in jaxpr.outvars]
    return [o for o, _ in outs], [d for _, d in outs]


def batch_jaxpr(
    closed: ClosedJaxpr, in_dims, axis_size: int, *, force_out_dims=None, axis_name=_INHERIT
):
    """Rewrite the per-example ``closed`` into a Jaxpr over batched inputs.

    Arguments:
      closed: the per-example Jaxpr.
      in_dims: for each input, the axis of the batched input that indexes the examples, or None
        (the input is shared by every example). Negative axes count from the end of the batched
        value.
      axis_size: the number of examples.
      force_out_dims: optional, for each output the axis to put its batch dimension at (an
        unbatched output is broadcast), or None to keep whatever the rules produced.
      axis_name: the name of the batched axis, which collectives over it reduce (None: no
        name); by default the name of the rewrite this call is part of (a rule batching a
        sub-Jaxpr), else None.
    Returns:
      ``(batched, out_dims)``: a ClosedJaxpr taking the batched inputs, and the batch axis of each
      of its outputs (None for outputs that do not depend on the example).
    """
    in_avals = closed.in_avals
    if len(in_dims) != len(in_avals):
        raise ValueError(f"batch_jaxpr: {len(in_dims)} in_dims for {len(in_avals)} inputs")
    in_dims = [None if d is None else d % (a.ndim + 1) for d, a in zip(in_dims, in_avals)]
    avals = [batched_aval(a, d, axis_size) for a, d in zip(in_avals, in_dims)]

    axis = _axis_data(axis_name, axis_size)

    def flat(*args):
        outs, out_dims = batch_eval(
            closed.jaxpr, closed.consts, args, in_dims, axis_size, axis_name=axis.name
        )
        if force_out_dims is not None:
            for i, want in enumerate(force_out_dims):
                if want is None:
                    continue
                want = want % (closed.out_avals[i].ndim + 1)
                outs[i] = matchaxis(outs[i], out_dims[i], want, axis_size)
                out_dims[i] = want
        return outs, out_dims

    return tracing.trace_flat(flat, avals)


# --- 3. Rules, by primitive class ----------------------------------------------------------------
# Elementwise (unary, binary, compare, bitwise, select, convert, stop_gradient). The primitives need
# equal shapes or a rank-0 operand, so: batched operands get their batch axis where the first
# full-rank batched operand has it; a batched per-example scalar and an unbatched operand of full
# rank are broadcast to the batched shape; an unbatched scalar stays a scalar where allowed.
def _elementwise_rule(prim: Primitive, scalar_ok: Callable[[int], bool] = lambda i: True):
    def rule(args, dims, **params):
        size = axis_size_of(args, dims)
        ranks = [_ndim(x) - (d is not None) for x, d in zip(args, dims)]
        r = max(ranks)
        out_d = next((d for d, k in zip(dims, ranks) if d is not None and k == r), 0)
        full_x, full_d = next((x, d) for x, d, k in zip(args, dims, ranks) if k == r)
        per_example = list(_shape(full_x))
        if full_d is not None:
            del per_example[full_d]
        full = per_example[:out_d] + [size] + per_example[out_d:]
        others = [i for i in range(r + 1) if i != out_d]
        new = []
        for i, (x, d, k) in enumerate(zip(args, dims, ranks)):
            if d is None:
                if k == 0 and scalar_ok(i):
                    new.append(x)
                else:
                    new.append(ops.broadcast_in_dim(x, full, others if k else ()))
            elif k == r:
                new.append(moveaxis(x, d, out_d))
            else:  # a batched per-example scalar among full-rank operands
                new.append(ops.broadcast_in_dim(x, full, (out_d,)))
        return prim.bind(*new, **params), out_d

    return rule


def _reduce_rule(prim: Primitive):
    """reduce_* and argmax/argmin: reduce the same axes of the batched operand."""

    def rule(args, dims, *, axes, **params):
        (x,), (d,) = args, dims
        out_d = d - sum(a < d for a in axes)
        return prim.bind(x, axes=shift_axes(axes, d), **params), out_d

    return rule


def _iota_rule(args, dims, **params):  # no operands, so never batched; here for coverage
    return P.iota_p.bind(**params), None


# Shape ops.
def _broadcast_in_dim_rule(args, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    bd = broadcast_dimensions
    p = bd[d] if d < len(bd) else len(shape)  # the batch axis goes where operand axis d lands
    new_bd = tuple(b + (b >= p) for b in bd[:d]) + (p,) + tuple(b + 1 for b in bd[d:])
    new_shape = tuple(shape[:p]) + (_shape(x)[d],) + tuple(shape[p:])
    return P.broadcast_in_dim_p.bind(x, shape=new_shape, broadcast_dimensions=new_bd), p


def _reshape_rule(args, dims, *, new_sizes):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    return P.reshape_p.bind(x, new_sizes=(_shape(x)[0],) + tuple(new_sizes)), 0


def _transpose_rule(args, dims, *, permutation):
    (x,), (d,) = args, dims
    perm = [p + (p >= d) for p in permutation]
    perm.insert(d, d)
    return P.transpose_p.bind(x, permutation=tuple(perm)), d


def _squeeze_rule(args, dims, *, dimensions):
    (x,), (d,) = args, dims
    out_d = d - sum(a < d for a in dimensions)
    return P.squeeze_p.bind(x, dimensions=shift_axes(dimensions, d)), out_d


def _expand_dims_rule(args, dims, *, dimensions):
    (x,), (d,) = args, dims
    n = _ndim(x) - 1
    kept = [i for i in range(n + len(dimensions)) if i not in dimensions]
    p = kept[d] if d < n else n + len(dimensions)
    return P.expand_dims_p.bind(x, dimensions=tuple(a + (a >= p) for a in dimensions)), p


def _rev_rule(args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return P.rev_p.bind(x, dimensions=shift_axes(dimensions, d)), d


def _bitcast_rule(args, dims, *, new_dtype):
    # a width change adds or consumes the last axis, which must not be the batch axis
    (x,), (d,) = args, dims
    if d == _ndim(x) - 1 and bitcast_nbits(tracing.get_aval(x).dtype) != bitcast_nbits(new_dtype):
        x, d = moveaxis(x, d, 0), 0
    return P.bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


def _slice_rule(args, dims, *, start_indices, limit_indices, strides=None):
    (x,), (d,) = args, dims
    size = _shape(x)[d]
    start = tuple(start_indices[:d]) + (0,) + tuple(start_indices[d:])
    limit = tuple(limit_indices[:d]) + (size,) + tuple(limit_indices[d:])
    if strides is not None:
        strides = tuple(strides[:d]) + (1,) + tuple(strides[d:])
    return P.slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides), d


def _concatenate_rule(args, dims, *, dimension):
    size = axis_size_of(args, dims)
    out_d = next(d for d in dims if d is not None)
    xs = [matchaxis(x, d, out_d, size) for x, d in zip(args, dims)]
    return P.concatenate_p.bind(*xs, dimension=dimension + (dimension >= out_d)), out_d


def _pad_rule(args, dims, *, padding_config):
    (x, padval), (dx, dp) = args, dims
    if dp is None:
        cfg = tuple(padding_config[:dx]) + ((0, 0, 0),) + tuple(padding_config[dx:])
        return P.pad_p.bind(x, padval, padding_config=cfg), dx
    # A batched padding value: pad with anything, then select the padding value where a padded
    # all-False mask is True.
    size = _shape(padval)[0]
    aval = tracing.get_aval(x)
    x = bdim_at_front(x, dx, size)
    per_example = _shape(x)[1:]
    zero = Array._new(np.zeros((), aval.dtype), aval.update(shape=()))
    y = P.pad_p.bind(x, zero, padding_config=((0, 0, 0),) + tuple(padding_config))
    mask = ops.pad(ops.full(per_example, False), True, padding_config)
    out_shape = _shape(y)
    mask = ops.broadcast_in_dim(mask, out_shape, tuple(range(1, len(out_shape))))
    pv = ops.broadcast_in_dim(padval, out_shape, (0,))
    return ops.select_n(mask, y, pv), 0


# Indexing. Batched start indices turn dynamic_slice into a gather and dynamic_update_slice into a
# scatter; a batched operand together with batched indices gets an iota index column for the batch
# axis, so each example indexes its own slice of the operand.
def _index_dtype(idx_vals, size):
    dts = [tracing.get_aval(i).dtype for i in idx_vals]
    wide = any(np.dtype(dt).itemsize >= 8 for dt in dts) or size > np.iinfo(np.int32).max
    return dtypes.int64 if wide else dtypes.int32


def _with_batch_column(idx, size):
    """``idx`` (batch axis in front) with an iota column prepended: the index of the example."""
    col = ops.broadcasted_iota(tracing.get_aval(idx).dtype, _shape(idx)[:-1] + (1,), 0)
    return ops.concatenate([col, idx], _ndim(idx) - 1)


def _widen_for(idx, size):
    dt = tracing.get_aval(idx).dtype
    if size - 1 > np.iinfo(dt).max:
        return ops.convert_element_type(idx, dtypes.int64)
    return idx


def _window_indices(G, starts, sdims, window, full, size, dtype):
    """Index array (B, *window[g] for g in G, len(G)) for the dims G where the window is smaller
    than the operand: start (clamped like dynamic_slice) + position in the window."""
    gshape = (size,) + tuple(window[j] for j in G)
    cols = []
    for k, j in enumerate(G):
        s = ops.convert_element_type(starts[j], dtype)
        s = ops.clamp(0, s, full[j] - window[j])
        s = ops.broadcast_in_dim(s, gshape, (0,) if sdims[j] is not None else ())
        pos = ops.broadcasted_iota(dtype, gshape, k + 1)
        cols.append(ops.expand_dims(ops.add(s, pos), (len(gshape),)))
    return ops.concatenate(cols, len(gshape))


def _dynamic_slice_rule(args, dims, *, slice_sizes):
    x, *idx = args
    dx, *di = dims
    if all(d is None for d in di):
        zero = Array.from_value(np.zeros((), np.int32))
        idx = idx[:dx] + [zero] + idx[dx:]
        sizes = tuple(slice_sizes[:dx]) + (_shape(x)[dx],) + tuple(slice_sizes[dx:])
        return P.dynamic_slice_p.bind(x, *idx, slice_sizes=sizes), dx
    size = axis_size_of(idx, di)
    full = list(_shape(x))
    if dx is not None:
        del full[dx]
    idx = [i if d is None else moveaxis(i, d, 0) for i, d in zip(idx, di)]
    G = [j for j in range(len(full)) if slice_sizes[j] < full[j]]
    if not G:  # every window covers its whole axis: the starts do not matter
        return x, dx
    ind = _window_indices(G, idx, di, slice_sizes, full, size, _index_dtype(idx, size))
    rest = [j for j in range(len(full)) if j not in G]
    if dx is None:
        out = P.gather_p.bind(x, ind, axes=tuple(G), mode="clip", fill_value=None)
    else:
        out = P.gather_p.bind(
            moveaxis(x, dx, 0),
            _with_batch_column(ind, size),
            axes=(0,) + tuple(j + 1 for j in G),
            mode="clip",
            fill_value=None,
        )
    # out is (B, *window over G, *rest); put the axes back in the operand's order.
    pos = {j: 1 + k for k, j in enumerate(G)} | {j: 1 + len(G) + k for k, j in enumerate(rest)}
    return ops.transpose(out, [0] + [pos[j] for j in range(len(full))]), 0


def _dynamic_update_slice_rule(args, dims, **params):
    x, upd, *idx = args
    dx, du, *di = dims
    if all(d is None for d in di):
        size = axis_size_of(args, dims)
        out_d = dx if dx is not None else du
        x, upd = matchaxis(x, dx, out_d, size), matchaxis(upd, du, out_d, size)
        zero = Array.from_value(np.zeros((), np.int32))
        return P.dynamic_update_slice_p.bind(x, upd, *idx[:out_d], zero, *idx[out_d:]), out_d
    size = axis_size_of(idx, di)
    idx = [i if d is None else moveaxis(i, d, 0) for i, d in zip(idx, di)]
    full = list(_shape(x))
    if dx is not None:
        del full[dx]
    window = list(_shape(upd))
    if du is not None:
        del window[du]
    G = [j for j in range(len(full)) if window[j] < full[j]]
    if not G:  # the update covers the whole operand: the starts do not matter
        return upd, du
    ind = _window_indices(G, idx, di, window, full, size, _index_dtype(idx, size))
    x, upd = bdim_at_front(x, dx, size), bdim_at_front(upd, du, size)
    rest = [j for j in range(len(full)) if j not in G]
    upd = ops.transpose(upd, [0] + [j + 1 for j in G] + [j + 1 for j in rest])
    out = P.scatter_p.bind(
        x, _with_batch_column(ind, size), upd, axes=(0,) + tuple(j + 1 for j in G), mode="clip"
    )
    return out, 0


def _gather_rule(args, dims, *, axes, mode, fill_value=None):
    (x, idx), (dx, di) = args, dims
    if di is None:
        # The operand's batch axis is one of the kept axes: the result keeps it in that order.
        out_d = (_ndim(idx) - 1) + dx - sum(a < dx for a in axes)
        return P.gather_p.bind(
            x, idx, axes=shift_axes(axes, dx), mode=mode, fill_value=fill_value
        ), out_d
    if dx is None:
        if di == _ndim(idx) - 1:  # the batch axis follows the index-vector axis: move it in front
            idx, di = moveaxis(idx, di, 0), 0
        return P.gather_p.bind(x, idx, axes=axes, mode=mode, fill_value=fill_value), di
    size = _shape(x)[dx]
    idx = _with_batch_column(_widen_for(moveaxis(idx, di, 0), size), size)
    return P.gather_p.bind(
        moveaxis(x, dx, 0),
        idx,
        axes=(0,) + tuple(a + 1 for a in axes),
        mode=mode,
        fill_value=fill_value,
    ), 0


def _scatter_rule(prim: Primitive):
    def rule(args, dims, *, axes, mode):
        (x, idx, upd), (dx, di, du) = args, dims
        size = axis_size_of(args, dims)
        if di is None:
            d = 0 if dx is None else dx
            x = matchaxis(x, dx, d, size)
            k = _ndim(idx) - 1
            upd = matchaxis(upd, du, k + d - sum(a < d for a in axes), size)
            return prim.bind(x, idx, upd, axes=shift_axes(axes, d), mode=mode), d
        x, upd = bdim_at_front(x, dx, size), bdim_at_front(upd, du, size)
        idx = _with_batch_column(_widen_for(moveaxis(idx, di, 0), size), size)
        return prim.bind(x, idx, upd, axes=(0,) + tuple(a + 1 for a in axes), mode=mode), 0

    return rule


# Contraction: both operands batched -> one more dot_general batch dimension; one operand batched
# -> its batch axis is just another free dimension (the other operand is untouched).
def _dot_general_rule(
    args, dims, *, dimension_numbers, preferred_element_type=None, precision=None
):
    (lhs, rhs), (dl, dr) = args, dims
    (lc, rc), (lb, rb) = dimension_numbers
    if dl is not None and dr is not None:
        dn = (
            (shift_axes(lc, dl), shift_axes(rc, dr)),
            ((dl,) + shift_axes(lb, dl), (dr,) + shift_axes(rb, dr)),
        )
        out_d = 0
    elif dl is not None:
        lc, lb = shift_axes(lc, dl), shift_axes(lb, dl)
        free = [i for i in range(_ndim(lhs)) if i not in lc and i not in lb]
        dn, out_d = ((lc, rc), (lb, rb)), len(lb) + free.index(dl)
    else:
        rc, rb = shift_axes(rc, dr), shift_axes(rb, dr)
        free = [i for i in range(_ndim(rhs)) if i not in rc and i not in rb]
        n_lfree = _ndim(lhs) - len(lc) - len(lb)
        dn, out_d = ((lc, rc), (lb, rb)), len(lb) + n_lfree + free.index(dr)
    prec = {} if precision is None else {"precision": precision}
    return P.dot_general_p.bind(
        lhs, rhs, dimension_numbers=dn, preferred_element_type=preferred_element_type, **prec
    ), out_d


def _register_rules():
    by_group: dict[str, Callable[[Primitive], Rule]] = {
        "unary": _elementwise_rule,
        "binary": _elementwise_rule,
        "compare": _elementwise_rule,
        "bitwise": _elementwise_rule,
        "convert": _elementwise_rule,
        "select": lambda p: _elementwise_rule(p, scalar_ok=lambda i: i == 0),
        "reduce": _reduce_rule,
    }
    for p in P.registry.values():
        if p.group in by_group:
            batching_rules[p] = by_group[p.group](p)
    batching_rules.update(
        {
            P.stop_gradient_p: _elementwise_rule(P.stop_gradient_p),
            P.iota_p: _iota_rule,
            P.broadcast_in_dim_p: _broadcast_in_dim_rule,
            P.reshape_p: _reshape_rule,
            P.transpose_p: _transpose_rule,
            P.squeeze_p: _squeeze_rule,
            P.expand_dims_p: _expand_dims_rule,
            P.rev_p: _rev_rule,
            P.bitcast_convert_type_p: _bitcast_rule,
            P.slice_p: _slice_rule,
            P.concatenate_p: _concatenate_rule,
            P.pad_p: _pad_rule,
            P.dynamic_slice_p: _dynamic_slice_rule,
            P.dynamic_update_slice_p: _dynamic_update_slice_rule,
            P.gather_p: _gather_rule,
            P.dot_general_p: _dot_general_rule,
        }
    )
    for p in (P.scatter_p, P.scatter_add_p, P.scatter_mul_p, P.scatter_min_p, P.scatter_max_p):
        batching_rules[p] = _scatter_rule(p)


_register_rules()


# --- 4. The API ----------------------------------------------------------------------------------
class _NotMapped:
    """Stands for ``None`` in an axes specification while it is matched against a pytree (where
    ``None`` would be an empty subtree)."""

    def __repr__(self):
        return "None"


_NM = _NotMapped()


def _spec_leaves(spec, tree, what: str, tree_name: str) -> list:
    """Broadcast the axes prefix ``spec`` against ``tree``: one axis (int or _NM) per leaf."""
    try:
        marked = optree.tree_map(
            lambda a: _NM if a is None else a,
            spec,
            none_is_leaf=True,
            namespace=tracing.PYTREE_NAMESPACE,
        )
        bad = [
            a
            for a in optree.tree_leaves(marked, namespace=tracing.PYTREE_NAMESPACE)
            if a is not _NM and (isinstance(a, bool) or not isinstance(a, (int, np.integer)))
        ]
        if bad:
            raise BatchingTypeError(
                f"vmap {what} must be ints or None (or containers of them), "
                f"got {bad[0]!r} in {spec!r}{where()}"
            )
        return optree.broadcast_prefix(
            marked, tree, none_is_leaf=False, namespace=tracing.PYTREE_NAMESPACE
        )
    except ValueError as e:
        if isinstance(e, BatchingError):
            raise
        struct = optree.tree_structure(tree, none_is_leaf=False, namespace=tracing.PYTREE_NAMESPACE)
        raise BatchingError(
            f"vmap {what} {spec!r} is not a tree prefix of the {tree_name} "
            f"(structure {struct}): {e}{where()}"
        ) from None


def _path_str(path, roots) -> str:
    """``args[1]['w']`` for the path (0, 1, 'w') with roots ("args", "kwargs"); ``out[0]``."""
    name = roots[path[0]] if roots else "out"
    for k in path[1 if roots else 0 :]:
        name += f"[{k!r}]" if isinstance(k, str) else f"[{k}]"
    return name


def _arg_paths(args, kwargs) -> list[str]:
    paths, _, _ = optree.tree_flatten_with_path(
        (args, kwargs), none_is_leaf=False, namespace=tracing.PYTREE_NAMESPACE
    )
    return [_path_str(p, ("args", "kwargs")) for p in paths]


def _mapped_dims(leaves, axes, args, kwargs, axis_size):
    """Normalise the in_axes of each leaf, check them and the sizes; returns (dims, size)."""
    avals = arg_avals("vmap", leaves, args, kwargs)
    paths = None
    dims, sizes = [], []
    for i, (a, ax) in enumerate(zip(avals, axes)):
        if ax is _NM:
            dims.append(None)
            continue
        ax = int(ax)
        if not -a.ndim <= ax < a.ndim:
            paths = paths or _arg_paths(args, kwargs)
            hint = (
                f"the axis must be in [{-a.ndim}, {a.ndim - 1}]"
                if a.ndim
                else "a scalar has no axis to map: give it in_axes None"
            )
            raise BatchingError(
                f"vmap was asked to map {paths[i]} of type {a.str_short()} along axis {ax}, but it "
                f"has rank {a.ndim} ({hint}){where()}"
            )
        dims.append(ax % a.ndim)
        sizes.append((i, a.shape[ax % a.ndim]))
    found = {s for _, s in sizes}
    if len(found) > 1 or (found and axis_size is not None and found != {axis_size}):
        paths = paths or _arg_paths(args, kwargs)
        lines = "; ".join(
            f"{paths[i]} ({avals[i].str_short()}) has size {s} along axis {dims[i]}"
            for i, s in sizes
        )
        given = f" and axis_size={axis_size} was given" if axis_size is not None else ""
        raise BatchingError(
            f"vmap got inconsistent sizes for the mapped axes: {lines}{given}{where()}"
        )
    if not found:
        if axis_size is None:
            raise BatchingError(
                "vmap needs axis_size when no argument is mapped (every in_axes "
                f"entry is None){where()}"
            )
        return dims, int(axis_size)
    return dims, found.pop()


def vmap(
    fun: Callable,
    in_axes: Any = 0,
    out_axes: Any = 0,
    axis_name: Any = None,
    axis_size: int | None = None,
    spmd_axis_name: Any = None,
    sum_match: bool = False,
) -> Callable:
    """Vectorise ``fun`` over an axis of its arguments.

    Arguments:
      fun: a function of pytrees of arrays.
      in_axes: for each positional argument, the axis to map over, or None to pass it unchanged to
        every example: an int or None for all arguments, or a tuple with one entry per positional
        argument, each entry an int, None, or a pytree prefix of the argument. Negative axes count
        from the end. Keyword arguments are mapped over axis 0.
      out_axes: where the mapped axis goes in each output (an int, None for outputs that do not
        depend on the example, or a pytree prefix of the output).
      axis_name: a name (any hashable) for the mapped axis, so that the collectives of
        ``functx.lax`` (``psum``, ``axis_index``, ``all_gather``, ``ppermute``, ...) called in
        ``fun`` with this name act across the examples; None binds no name.
      axis_size: the number of examples; needed only when no argument is mapped.
      spmd_axis_name: accepted for JAX's signature (a mesh axis to shard the batch over: with
        one device per program there is nothing to shard, so it is ignored).
      sum_match: accepted for JAX's signature; only False is supported.
    Returns:
      A function with the signature of ``fun`` that computes ``fun`` on every example at once.
    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> W = jnp.ones((3, 2))
      >>> functx.vmap(lambda x: x @ W)(jnp.ones((5, 3))).shape
      (5, 2)
      >>> print(functx.vmap(lambda x: x / functx.lax.psum(x, "i"), axis_name="i")(
      ...     jnp.arange(4.0)))
      [0.         0.16666667 0.33333334 0.5       ]
    """
    check_callable("vmap", fun)
    if axis_name is not None:
        try:
            hash(axis_name)
        except TypeError:
            raise BatchingTypeError(
                f"vmap axis_name must be hashable, got {axis_name!r}{where()}"
            ) from None
    if sum_match:
        raise NotImplementedError("vmap: sum_match=True is not supported by functx")
    del spmd_axis_name
    if axis_size is not None and (
        isinstance(axis_size, (bool, np.bool_))
        or not isinstance(axis_size, (int, np.integer))
        or axis_size < 0
    ):
        raise BatchingTypeError(
            f"vmap axis_size must be None or a non-negative int, got {axis_size!r}{where()}"
        )
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, np.integer):
        in_axes = int(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, tuple))) or isinstance(in_axes, bool):
        raise BatchingTypeError(
            "vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
            f"positional arguments, got {in_axes!r}{where()}"
        )
    if isinstance(out_axes, list):
        out_axes = tuple(out_axes)
    cache = tracing.TraceCache()

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise BatchingError(
                f"vmap in_axes {in_axes!r} has {len(in_axes)} entries but {_name(fun)} was called "
                f"with {len(args)} positional argument(s); give one entry per positional argument"
                f"{where()}"
            )
        leaves, in_tree = tracing.tree_flatten((args, kwargs))
        spec = (in_axes, {k: 0 for k in kwargs})
        axes = _spec_leaves(spec, (args, kwargs), "in_axes", "arguments")
        dims, size = _mapped_dims(leaves, axes, args, kwargs, axis_size)
        avals = tuple(tracing.get_aval(x) for x in leaves)
        key = (in_tree, avals, tuple(dims), size, axis_env.env_key(), config.x64_on())
        hit = cache.get(key)
        if hit is None:
            per_example = [
                a if d is None else a.update(shape=a.shape[:d] + a.shape[d + 1 :])
                for a, d in zip(avals, dims)
            ]
            frame = (
                axis_env.axis_frame(axis_name, size, "vmap")
                if axis_name is not None
                else contextlib.nullcontext()
            )
            with frame:  # (collectives over axis_name check it and read its size as they trace)
                closed, out_tree = tracing.trace_flat(
                    tracing.flatten_fun(fun, in_tree), per_example
                )
            force = _out_dims(out_axes, out_tree, closed.out_avals)
            new, out_dims = batch_jaxpr(
                closed,
                dims,
                size,
                force_out_dims=[None if a is _NM else a for a in force],
                axis_name=axis_name,
            )
            for i, (a, d) in enumerate(zip(force, out_dims)):
                if a is _NM and d is not None:
                    paths, _, _ = optree.tree_flatten_with_path(
                        optree.tree_unflatten(out_tree, [0] * out_tree.num_leaves),
                        none_is_leaf=False,
                        namespace=tracing.PYTREE_NAMESPACE,
                    )
                    raise BatchingError(
                        f"vmap has a mapped output {_path_str(paths[i], None)} of "
                        f"{_name(fun)} but its out_axes is None: an output that depends on "
                        f"the mapped arguments needs an axis{where()}"
                    )
            hit = (new, out_tree)
            cache.put(key, hit, new)
        new, out_tree = hit
        outs = eval_jaxpr(new.jaxpr, new.consts, *leaves)
        return tracing.tree_unflatten(out_tree, outs)

    return batched


def _name(fun) -> str:
    return getattr(fun, "__name__", type(fun).__name__)


def _out_dims(out_axes, out_tree, out_avals) -> list:
    dummy = optree.tree_unflatten(out_tree, [0] * out_tree.num_leaves)
    axes = _spec_leaves(out_axes, dummy, "out_axes", "outputs")
    out = []
    for a, aval in zip(axes, out_avals):
        if a is not _NM:
            n = aval.ndim + 1
            if not -n <= a < n:
                raise BatchingError(
                    f"vmap out_axes {a} is out of range for an output of per-example type "
                    f"{aval.str_short()} (must be in [{-n}, {n - 1}]){where()}"
                )
            a = int(a) % n
        out.append(a)
    return out


__all__ = [
    "vmap",
    "AxisData",
    "axis_batching_rules",
    "batch_jaxpr",
    "batch_eval",
    "batching_rules",
    "not_mapped",
    "moveaxis",
    "matchaxis",
    "bdim_at_front",
    "axis_size_of",
    "batched_aval",
    "broadcast_batched",
    "shift_axes",
    "BatchingError",
    "BatchingTypeError",
]
