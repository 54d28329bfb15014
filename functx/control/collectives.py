"""Named-axis collectives: ``psum``, ``pmean``, ``pmax``, ``pmin``, ``all_gather``,
``psum_scatter``, ``all_to_all``, ``ppermute``, ``pshuffle``, ``pswapaxes``, ``pbroadcast``,
``axis_index`` and ``axis_size`` (``functx.lax``), with all their rules.

A collective names one or more *axes* (``axis_name``: one name or a tuple of names), bound by
``vmap(f, axis_name=...)`` or by a per-device program (``shard_map``). Under ``vmap`` the named axis
is the batch axis and each collective is an array operation on it (``psum`` sums over the batch,
``axis_index`` is an iota, ...); under ``shard_map`` it runs on every device of the axis and the
devices communicate. A name that nothing binds raises ``NameError`` ("unbound axis name: i").

Primitives (JAX's names and parameters, ``axis_index_groups`` left out):

* ``psum`` (any number of operands, ``axes``), ``pmax`` and ``pmin`` (``axes``): all-reduce;
* ``all_gather`` (``axis_name``, ``all_gather_dimension``, ``axis_size``, ``tiled``);
* ``reduce_scatter`` (``psum_scatter_p``: ``axis_name``, ``scatter_dimension``, ``axis_size``,
  ``tiled``);
* ``all_to_all`` (``axis_name``, ``split_axis``, ``concat_axis``, ``tiled``): the operand's
  ``split_axis`` is cut into one chunk per position; chunk ``k`` goes to position ``k``, and the
  chunks received are concatenated along ``concat_axis`` in position order (the public function
  inserts/removes the size-1 axes of the untiled form, as JAX's does);
* ``ppermute`` (``axis_name``, ``perm``: ``(source, destination)`` pairs; a destination that no
  pair names receives zeros);
* ``axis_index`` (``axis_name``): the position along the axis, an int32 scalar.

Rules: shape inference; jvp (all but pmax/pmin/axis_index are linear; pmax and pmin raise JAX's
NotImplementedError); transpose as in JAX 0.10.2 with its varying-axes checks off, which is what
``vmap`` and a ``shard_map`` without ``check_vma`` compute: psum -> psum (a psum is a psum followed
by a broadcast, so its transpose sums the cotangents again), all_gather <-> psum_scatter,
all_to_all -> all_to_all with split and concat swapped, ppermute -> the inverse permutation.
vmap: ``functx.transforms.vmap.axis_batching_rules`` (a collective over the batched axis becomes
array operations on the batch axis; over another name it is re-bound on the batched value).

THE INTERFACE (for ``shard_map`` and the distributed runtime)
-------------------------------------------------------------
* ``AxisFrame(name, size, kind, handler)`` and the context manager ``axis_frame(name, size,
  kind, handler)`` (or ``axis_frame(frame)``) bind a named axis while a block runs (per thread,
  innermost last). ``vmap`` pushes ``kind="vmap"`` frames while it traces its function;
  ``shard_map`` pushes ``kind="spmd"`` frames (one per mesh axis) around tracing AND running its
  body. ``lookup(name)`` gives the innermost frame binding ``name`` (NameError if none);
  ``frames()`` all of them; ``env_key()`` what a trace depends on (for caches).
* The ``handler`` of an ``"spmd"`` frame performs the collectives over that one axis for the
  calling device. Its methods take and return NumPy arrays (the operand of this device; the
  result of this device, of the shape and dtype noted):

  - ``psum(x)``, ``pmax(x)``, ``pmin(x)``: the reduction over the axis (shape of ``x``);
  - ``all_gather(x, axis, tiled)``: the operands of all positions stacked in position order
    along a new axis ``axis`` (``tiled=False``), or concatenated along ``axis`` (``tiled=True``);
  - ``psum_scatter(x, scatter_dimension, tiled)``: the sum over the axis, of which this
    position keeps block ``axis_index`` along ``scatter_dimension`` (``tiled=True``: a block of
    ``x.shape[d] // size``; ``tiled=False``: index ``axis_index``, the dimension removed);
  - ``all_to_all(x, split_axis, concat_axis, tiled)``: always called with ``tiled=True``: cut
    ``split_axis`` into ``size`` chunks, send chunk ``k`` to position ``k``, concatenate the
    chunks received along ``concat_axis`` in position order;
  - ``ppermute(x, perm)``: ``perm`` a tuple of ``(source, destination)`` pairs; the result is the
    operand of the position whose pair names this one as destination, zeros if none;
  - ``axis_index()``: this device's position (an int).

  Every device calls the same methods in the same order (the program is the same on each).
  Collectives over several names call each axis's handler in turn where the operation allows
  it: psum/pmax/pmin in the order of the names; all_gather the last name first, so the result
  is laid out first-name-major; psum_scatter as a psum then this position's block (its index in
  the names' product, first name major); axis_index likewise. all_to_all and ppermute take one
  spmd name.
* Which frame a collective uses: each equation records, in its ``frames`` parameter (a
  ``Baked`` tuple, one entry per axis name), the ``"spmd"`` frame that bound each name when it
  was traced. When the equation runs (eagerly, or as the host step below) a name bound at that
  moment uses the frame bound then; a name no longer bound uses the recorded frame. So the
  backward pass of ``grad`` or a program compiled by ``jit`` runs after ``shard_map``'s
  ``with axis_frame(...)`` blocks have closed; jvp/transpose/vmap rules carry the parameter.
  A name bound neither way raises NameError.
* Under ``jit`` every collective lowers to a *host step* of the compiled program
  (``CollectiveStep``, as the callbacks lower): the program calls back into Python, which does
  the same frame choice at run time. Such programs are never stored in the disk program cache.
  On the Triton backend a handler may offer an attribute ``torch``: an object with the same
  methods taking and returning torch tensors on the program's device (NCCL without host
  copies); otherwise NumPy copies are used.
* Overlapped ``psum`` (a data-parallel step's gradients, as DDP's buckets): a handler may offer
  ``psum_start(xs) -> handle`` (start the sums of a list of operands without waiting) and
  ``psum_done(handle) -> sums`` (``functx.distributed.TorchCollectives``: an asynchronous
  ``all_reduce`` per dtype; NCCL queues it on its own stream, gloo on its thread). Then a
  ``psum`` over one such axis lowers to a ``PsumStart`` per bucket of operands (about
  ``FUNCTX_PSUM_BUCKET_BYTES``, 8 MiB, in the order the program computes them), placed right
  after the kernel that completes its bucket, and a ``PsumDone`` per bucket where the psum
  stands: the kernels between them run while the reduction is in flight. On the Triton
  backend a bucket's operands that nothing else reads are computed straight into views of one
  flat buffer per dtype (a *pack*: ``functx.lowering.triton.program.packed_buffers``), the start
  reduces that buffer in place and the sums are read from the same views: no concatenation and
  no copy out (a weight gradient ``(d.T @ x).T`` is folded into the product first,
  ``_foldable``, so it too is an in-order view).
  ``FUNCTX_PSUM_OVERLAP=0`` (read when a program is lowered) keeps one step after the whole
  backward pass. ``lower(...).as_text()``'s loop IR shows the steps (``<psum start ...>``).
* Note: a value that is a NumPy array or Python scalar (not a functx Array) is taken to be the
  same on every device: ``psum(1, "x")`` is ``axis_size("x")`` without communicating, as in JAX.
"""

from __future__ import annotations

import math
import os

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.array import Array
from functx.control.common import HostStep, lower_to_loop
from functx.core import Primitive, ShapedArray
from functx.errors import FunctxError
from functx.lowering.rules import lowerings
from functx.primitives import registry
from functx.source_info import where
from functx.tracing import get_aval, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, transpose as T, vmap as V
from functx.transforms.axis_env import (
    AxisFrame as AxisFrame,
    axis_frame as axis_frame,
    env_key as env_key,
    frames as frames,
    is_bound as is_bound,
    lookup as lookup,
    names_tuple,
)


# --- helpers -------------------------------------------------------------------------------------
class Baked:
    """The ``frames`` parameter of a collective equation: for each of its axis names, the
    ``"spmd"`` frame that bound it when the equation was traced (None for a name bound by
    ``vmap``). The eager implementation and the host step use it when the name is no longer
    bound where they run (a backward pass or a compiled program run after ``shard_map``'s
    frames closed); a name bound where they run uses that frame. Prints the names only."""

    __slots__ = ("frames",)

    def __init__(self, frames):
        self.frames = tuple(frames)

    def __iter__(self):
        return iter(self.frames)

    def __len__(self):
        return len(self.frames)

    def __getitem__(self, i):
        return self.frames[i]

    def __eq__(self, other):
        return isinstance(other, Baked) and self.frames == other.frames

    def __hash__(self):
        return hash(self.frames)

    def __repr__(self):
        # (an spmd frame prints with its handler's address, so the program cache, which indexes
        # programs by their printout, never takes one traced under another handler)
        return (
            "("
            + ", ".join(
                "-" if f is None else f"{f.kind}:{f.name} at 0x{id(f.handler):x}" for f in self
            )
            + ")"
        )


def _bake(names) -> Baked:
    """The frames parameter for ``names`` traced now (their spmd frames, None for the rest)."""
    out = []
    for n in names:
        f = lookup(n) if is_bound(n) else None
        out.append(f if f is not None and f.kind == "spmd" else None)
    return Baked(out)


def _keep(frames, names, keep) -> Baked:
    """``frames`` restricted to the names in ``keep``."""
    if frames is None:
        return None
    return Baked(f for f, n in zip(frames, names) if n in keep)


def _check_names(names, api: str, baked=None):
    """The frame of every name: the one bound now, else the one baked into the equation
    (NameError if neither, as JAX's)."""
    out = []
    for i, n in enumerate(names):
        if is_bound(n):
            out.append(lookup(n))
            continue
        f = baked[i] if baked is not None and i < len(baked) else None
        if f is None:
            raise NameError(
                f"unbound axis name: {n}. {api} needs it bound by vmap(..., axis_name=...) or "
                f"shard_map{where()}"
            )
        out.append(f)
    return out


def _group_size(names) -> int:
    return math.prod(lookup(n).size for n in names)


def _np(x, dtype) -> np.ndarray:
    return np.asarray(x).astype(dtype, copy=False)


def _handler(f: AxisFrame, op: str):
    h = f.handler
    if h is None or not hasattr(h, op):
        raise FunctxError(
            f"{op}: the axis {f.name!r} ({f.kind} frame) has no handler with a method {op!r}"
        )
    return getattr(h, op)


def _split_axis(x, axis: int, n: int):
    """Split axis ``axis`` of ``x`` into ``(n, size // n)``."""
    shape = _shape(x)
    return ops.reshape(x, shape[:axis] + (n, shape[axis] // n) + shape[axis + 1 :])


def _fold_axis(x, axis: int):
    """Merge axes ``axis`` and ``axis + 1`` of ``x``."""
    shape = _shape(x)
    return ops.reshape(x, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2 :])


def _shape(x):
    return get_aval(x).shape


def _times(x, n: int):
    """``x`` times the int ``n`` in ``x``'s dtype (psum of a value that is the same everywhere)."""
    dt = get_aval(x).dtype
    if dt == np.bool_:
        return ops.convert_element_type(x, dtypes.int32)
    return ops.mul(x, ops.full((), n, dt))


# --- psum, pmax, pmin ----------------------------------------------------------------------------
psum_p = Primitive("psum", multiple_results=True, group="collective")
pmax_p = Primitive("pmax", group="collective")
pmin_p = Primitive("pmin", group="collective")
registry["psum"] = psum_p
registry["pmax"] = pmax_p
registry["pmin"] = pmin_p


def _psum_abstract(*avals, axes, frames=None):
    _check_names(axes, "psum", frames)
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals]


def _reduce_abstract(name):
    def rule(aval, *, axes, frames=None):
        _check_names(axes, name, frames)
        return ShapedArray(aval.shape, aval.dtype, aval.weak_type)

    return rule


psum_p.abstract_eval = _psum_abstract
pmax_p.abstract_eval = _reduce_abstract("pmax")
pmin_p.abstract_eval = _reduce_abstract("pmin")


def _reduce_eager(op: str, x, axes, frames=None):
    dt = np.asarray(x).dtype
    for f in _check_names(axes, op, frames):
        if f.kind == "vmap":  # (a value that is the same for every example)
            x = np.asarray(x) * dt.type(f.size) if op == "psum" else x
        else:
            x = _handler(f, op)(np.asarray(x))
    return _np(x, dt)


psum_p.impl = lambda *xs, axes, frames=None: [_reduce_eager("psum", x, axes, frames) for x in xs]
pmax_p.impl = lambda x, *, axes, frames=None: _reduce_eager("pmax", x, axes, frames)
pmin_p.impl = lambda x, *, axes, frames=None: _reduce_eager("pmin", x, axes, frames)


def _psum_jvp(primals, tangents, *, axes, frames=None):
    outs = psum_p.bind(*primals, axes=axes, frames=frames)
    live = [i for i, t in enumerate(tangents) if not isinstance(t, J.Zero)]
    touts = [J.Zero(J.tangent_aval(get_aval(o))) for o in outs]
    if live:
        for i, t in zip(live, psum_p.bind(*[tangents[i] for i in live], axes=axes, frames=frames)):
            touts[i] = t
    return outs, touts


def _psum_transpose(cts, *args, axes, frames=None):
    live = [i for i, c in enumerate(cts) if not isinstance(c, J.Zero)]
    out = [J.Zero(a.aval) if T.is_undefined(a) else None for a in args]
    if live:
        for i, c in zip(live, psum_p.bind(*[cts[i] for i in live], axes=axes, frames=frames)):
            if T.is_undefined(args[i]):
                out[i] = c
    return out


def _no_jvp(prim):
    def rule(primals, tangents, **params):
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")

    return rule


J.jvp_rules[psum_p] = _psum_jvp
J.jvp_rules[pmax_p] = _no_jvp(pmax_p)
J.jvp_rules[pmin_p] = _no_jvp(pmin_p)
T.transpose_rules[psum_p] = _psum_transpose


def _reduce_batch(prim, axis: V.AxisData, args, dims, *, axes, frames=None):
    """psum/pmax/pmin under vmap: over the batched axis, a reduction over the batch dimension
    (an unbatched operand: times the size for psum, itself for pmax/pmin) whose result is the
    same for every example; over other names, the collective re-bound on the batched value."""
    mine = axis.name is not None and axis.name in axes
    rest = tuple(n for n in axes if n != axis.name)
    kw = {"axes": rest, "frames": _keep(frames, axes, rest)}
    outs, out_ds = [], []
    for x, d in zip(args, dims):
        if mine:
            if d is None:
                y = _times(x, axis.size) if prim is psum_p else x
            elif prim is psum_p:
                y = ops.reduce_sum(x, (d,))
            elif prim is pmax_p:
                y = ops.reduce_max(x, (d,))
            else:
                y = ops.reduce_min(x, (d,))
            d = None
        else:
            y = x
        if rest:
            y = psum_p.bind(y, **kw)[0] if prim is psum_p else prim.bind(y, **kw)
        outs.append(y)
        out_ds.append(d)
    if prim.multiple_results:
        return outs, out_ds
    return outs[0], out_ds[0]


for _p in (psum_p, pmax_p, pmin_p):
    V.axis_batching_rules[_p] = lambda axis, args, dims, _p=_p, **kw: _reduce_batch(
        _p, axis, args, dims, **kw
    )
    V.batching_rules[_p] = lambda args, dims, _p=_p, **kw: _reduce_batch(
        _p, V.AxisData(None, V.axis_size_of(args, dims)), args, dims, **kw
    )


# --- axis_index ----------------------------------------------------------------------------------
axis_index_p = Primitive("axis_index", group="collective")
registry["axis_index"] = axis_index_p


def _axis_index_abstract(*, axis_name, frames=None):
    _check_names((axis_name,), "axis_index", frames)
    return ShapedArray((), dtypes.int32)


def _axis_index_impl(*, axis_name, frames=None):
    (f,) = _check_names((axis_name,), "axis_index", frames)
    if f.kind == "vmap":
        raise FunctxError(
            f"axis_index: the vmap axis {axis_name!r} reached the eager path (a bug in vmap)"
        )
    return np.asarray(_handler(f, "axis_index")(), np.int32)


axis_index_p.abstract_eval = _axis_index_abstract
axis_index_p.impl = _axis_index_impl
J.nondifferentiable.add(axis_index_p)


def _axis_index_batch(axis: V.AxisData, args, dims, *, axis_name, frames=None):
    if axis_name == axis.name:
        return ops.iota(dtypes.int32, axis.size), 0
    return axis_index_p.bind(axis_name=axis_name, frames=frames), None


V.axis_batching_rules[axis_index_p] = _axis_index_batch
V.batching_rules[axis_index_p] = lambda args, dims, **kw: (axis_index_p.bind(**kw), None)


# --- all_gather ----------------------------------------------------------------------------------
all_gather_p = Primitive("all_gather", group="collective")
registry["all_gather"] = all_gather_p


def _all_gather_abstract(aval, *, axis_name, all_gather_dimension, axis_size, tiled, frames=None):
    _check_names(axis_name, "all_gather", frames)
    shape = list(aval.shape)
    if tiled:
        shape[all_gather_dimension] *= axis_size
    else:
        shape.insert(all_gather_dimension, axis_size)
    return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def _all_gather_impl(x, *, axis_name, all_gather_dimension, axis_size, tiled, frames=None):
    x = np.asarray(x)
    dt, ax = x.dtype, all_gather_dimension
    fs = _check_names(axis_name, "all_gather", frames)
    if len(fs) == 1 and fs[0].kind == "spmd":
        return _np(_handler(fs[0], "all_gather")(x, ax, tiled), dt)
    y = x
    for f in reversed(fs):  # the last name is the minor one: gather it first
        if f.kind == "vmap":
            y = np.stack([y] * f.size, ax)
        else:
            y = np.asarray(_handler(f, "all_gather")(y, ax, False))
    # axes ax .. ax+len(fs)-1 are the gathered ones, major first: merge them (and, tiled, the
    # operand's own axis after them)
    k = len(fs) + (1 if tiled else 0)
    y = y.reshape(y.shape[:ax] + (-1,) + y.shape[ax + k :])
    return _np(y, dt)


all_gather_p.abstract_eval = _all_gather_abstract
all_gather_p.impl = _all_gather_impl


def _all_gather_batch(axis: V.AxisData, args, dims, *, axis_name, all_gather_dimension, **kw):
    (x,), (d,) = args, dims
    ax = all_gather_dimension
    if axis.name is None or axis.name not in axis_name:
        if d is None:
            return all_gather_p.bind(x, axis_name=axis_name, all_gather_dimension=ax, **kw), None
        x = V.moveaxis(x, d, 0)
        return all_gather_p.bind(x, axis_name=axis_name, all_gather_dimension=ax + 1, **kw), 0
    if len(axis_name) > 1:
        raise NotImplementedError(
            f"all_gather over several axis names {axis_name} under vmap{where()}"
        )
    if d is None:
        x = V.broadcast_batched(x, axis.size, ax)
    else:
        x = V.moveaxis(x, d, ax)
    if kw["tiled"]:
        x = _fold_axis(x, ax)
    return x, None


V.axis_batching_rules[all_gather_p] = _all_gather_batch


# --- psum_scatter (reduce_scatter) ---------------------------------------------------------------
psum_scatter_p = Primitive("reduce_scatter", group="collective")
registry["reduce_scatter"] = psum_scatter_p


def _psum_scatter_abstract(aval, *, axis_name, scatter_dimension, axis_size, tiled, frames=None):
    _check_names(axis_name, "psum_scatter", frames)
    shape = list(aval.shape)
    n = shape[scatter_dimension]
    if tiled:
        if n % axis_size:
            raise ValueError(
                f"tiled reduce_scatter operand scatter dimension size {n} must be divisible "
                f"by shard_count {axis_size}{where()}"
            )
        shape[scatter_dimension] = n // axis_size
    else:
        if n != axis_size:
            raise ValueError(
                f"reduce_scatter operand scatter dimension size {n} must match shard count "
                f"{axis_size}{where()}"
            )
        del shape[scatter_dimension]
    return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def _combined_index(fs) -> int:
    idx = 0
    for f in fs:
        if f.kind == "vmap":
            raise FunctxError(f"the vmap axis {f.name!r} reached the eager path (a bug in vmap)")
        idx = idx * f.size + int(_handler(f, "axis_index")())
    return idx


def _psum_scatter_impl(x, *, axis_name, scatter_dimension, axis_size, tiled, frames=None):
    x = np.asarray(x)
    dt, sd = x.dtype, scatter_dimension
    fs = _check_names(axis_name, "psum_scatter", frames)
    if len(fs) == 1 and fs[0].kind == "spmd":
        return _np(_handler(fs[0], "psum_scatter")(x, sd, tiled), dt)
    total = _reduce_eager("psum", x, axis_name, frames)
    i = _combined_index(fs)
    if tiled:
        m = total.shape[sd] // axis_size
        return _np(np.take(total, np.arange(i * m, (i + 1) * m), axis=sd), dt)
    return _np(np.take(total, i, axis=sd), dt)


psum_scatter_p.abstract_eval = _psum_scatter_abstract
psum_scatter_p.impl = _psum_scatter_impl


def _psum_scatter_batch(axis: V.AxisData, args, dims, *, axis_name, scatter_dimension, **kw):
    (x,), (d,) = args, dims
    sd = scatter_dimension
    if axis.name is None or axis.name not in axis_name:
        if d is None:
            return psum_scatter_p.bind(x, axis_name=axis_name, scatter_dimension=sd, **kw), None
        x = V.moveaxis(x, d, 0)
        return psum_scatter_p.bind(x, axis_name=axis_name, scatter_dimension=sd + 1, **kw), 0
    if len(axis_name) > 1:
        raise NotImplementedError(
            f"psum_scatter over several axis names {axis_name} under vmap{where()}"
        )
    total = _times(x, axis.size) if d is None else ops.reduce_sum(x, (d,))
    if kw["tiled"]:  # example i keeps block i of the scatter dimension
        return _split_axis(total, sd, axis.size), sd
    return total, sd  # example i keeps index i


V.axis_batching_rules[psum_scatter_p] = _psum_scatter_batch


# --- all_to_all ----------------------------------------------------------------------------------
all_to_all_p = Primitive("all_to_all", group="collective")
registry["all_to_all"] = all_to_all_p


def _all_to_all_abstract(aval, *, axis_name, split_axis, concat_axis, tiled, frames=None):
    fs = _check_names(axis_name, "all_to_all", frames)
    n = math.prod(f.size for f in fs)
    shape = list(aval.shape)
    if shape[split_axis] % n:
        raise ValueError(
            f"The size of all_to_all split_axis ({shape[split_axis]}) has to be divisible by "
            f"the size of the named axis {axis_name} ({n}){where()}"
        )
    shape[split_axis] //= n
    shape[concat_axis] *= n
    return ShapedArray(tuple(shape), aval.dtype, aval.weak_type)


def _all_to_all_impl(x, *, axis_name, split_axis, concat_axis, tiled, frames=None):
    x = np.asarray(x)
    fs = _check_names(axis_name, "all_to_all", frames)
    if len(fs) != 1 or fs[0].kind != "spmd":
        raise NotImplementedError(
            f"all_to_all over the axes {axis_name} ({[f.kind for f in fs]} frames): one "
            "shard_map axis is supported"
        )
    return _np(_handler(fs[0], "all_to_all")(x, split_axis, concat_axis, True), x.dtype)


all_to_all_p.abstract_eval = _all_to_all_abstract
all_to_all_p.impl = _all_to_all_impl


def _all_to_all_batch(
    axis: V.AxisData, args, dims, *, axis_name, split_axis, concat_axis, tiled, frames=None
):
    (x,), (d,) = args, dims
    params = dict(axis_name=axis_name, tiled=tiled, frames=frames)
    if axis.name is None or axis.name not in axis_name:
        if d is None:
            return all_to_all_p.bind(
                x, split_axis=split_axis, concat_axis=concat_axis, **params
            ), None
        x = V.moveaxis(x, d, 0)
        return all_to_all_p.bind(
            x, split_axis=split_axis + 1, concat_axis=concat_axis + 1, **params
        ), 0
    n = axis.size
    if len(axis_name) > 1:
        return _all_to_all_batch_names(axis, x, d, axis_name, split_axis, concat_axis, frames)
    x = V.bdim_at_front(x, d, n)  # (k, *per-example): example k's operand
    s, c = split_axis + 1, concat_axis + 1
    x = _split_axis(x, s, n)  # (k, ..., j, m, ...): chunk j of example k goes to example j
    # example j's result: the chunks j of every k, concatenated along the concat axis in k order
    rank = len(_shape(x))
    c2 = c + (c >= s)  # the concat axis after the split (its second half if c == s)
    rest = [a for a in range(1, rank) if a != s]  # every axis but k and j, in order
    pos = rest.index(c2)
    perm = [s] + rest[:pos] + [0] + rest[pos:]
    x = ops.transpose(x, perm)  # (j, ..., k, concat, ...)
    return _fold_axis(x, pos + 1), 0


def _all_to_all_batch_names(axis, x, d, names, split_axis, concat_axis, frames):
    """all_to_all over several names, one of them batched here. A position's index in the
    names' product is (M, i, m): M over the names before this one, i this one, m the names
    after it; chunk (M', i', m') of each operand goes to position (M', i', m'). The exchange
    factorises: over M (an all_to_all over the major names), over m (over the minor names),
    and over i, which is a transpose of the batch axis with the chunk index."""
    pos = names.index(axis.name)
    major, minor = tuple(names[:pos]), tuple(names[pos + 1 :])
    nM = math.prod(f.size for f in _check_names(major, "all_to_all", _keep(frames, names, major)))
    nm = math.prod(f.size for f in _check_names(minor, "all_to_all", _keep(frames, names, minor)))
    n = axis.size
    x = V.bdim_at_front(x, d, n)  # (i_src, *per-example)
    per = _shape(x)[1:]
    s = split_axis
    q = per[s] // (nM * n * nm)
    rest = per[:s] + (q,) + per[s + 1 :]  # the per-example axes, the split one cut to a chunk
    x = ops.reshape(x, (n,) + per[:s] + (nM, n, nm, q) + per[s + 1 :])
    # (i_src, M_dst, i_dst, m_dst, *rest), then size-1 axes to receive M_src and m_src
    chunk = [1 + s, 2 + s, 3 + s]
    others = [a for a in range(1, len(per) + 4) if a not in chunk]
    x = ops.transpose(x, [0] + chunk + others)
    x = ops.expand_dims(x, (1, 4))  # (i_src, 1, M_dst, i_dst, 1, m_dst, *rest)
    if major:
        x = all_to_all_p.bind(
            x,
            axis_name=major,
            split_axis=2,
            concat_axis=1,
            tiled=True,
            frames=_keep(frames, names, major),
        )
    if minor:
        x = all_to_all_p.bind(
            x,
            axis_name=minor,
            split_axis=5,
            concat_axis=4,
            tiled=True,
            frames=_keep(frames, names, minor),
        )
    # (i_src, M_src, 1, i_dst, m_src, 1, *rest) -> (i_dst, M_src, i_src, m_src, *rest)
    x = ops.squeeze(x, (2, 5))
    x = ops.transpose(x, [2, 1, 0, 3] + list(range(4, len(rest) + 4)))
    x = ops.reshape(x, (n, nM * n * nm) + rest)  # (i_dst, source in the names' order, *rest)
    # the sources go before the concat axis, merged with it (the source index major)
    c = concat_axis
    x = V.moveaxis(x, 1, 1 + c)
    return _fold_axis(x, 1 + c), 0


V.axis_batching_rules[all_to_all_p] = _all_to_all_batch


# --- ppermute ------------------------------------------------------------------------------------
ppermute_p = Primitive("ppermute", group="collective")
registry["ppermute"] = ppermute_p


def _ppermute_abstract(aval, *, axis_name, perm, frames=None):
    _check_names(axis_name, "ppermute", frames)
    return ShapedArray(aval.shape, aval.dtype, aval.weak_type)


def _ppermute_impl(x, *, axis_name, perm, frames=None):
    x = np.asarray(x)
    fs = _check_names(axis_name, "ppermute", frames)
    if all(f.kind == "vmap" for f in fs) and len({d for _, d in perm}) == math.prod(
        f.size for f in fs
    ):  # (a value the same for every example, as JAX's batcher leaves it: itself)
        return x
    if len(fs) != 1 or fs[0].kind != "spmd":
        raise NotImplementedError(
            f"ppermute over the axes {axis_name} ({[f.kind for f in fs]} frames): one "
            "shard_map axis is supported"
        )
    return _np(_handler(fs[0], "ppermute")(x, perm), x.dtype)


ppermute_p.abstract_eval = _ppermute_abstract
ppermute_p.impl = _ppermute_impl


def _ppermute_batch(axis: V.AxisData, args, dims, *, axis_name, perm, frames=None):
    (x,), (d,) = args, dims
    if axis.name is None or axis.name not in axis_name:
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm, frames=frames), d
    rest = tuple(n for n in axis_name if n != axis.name)
    if rest:  # (JAX's batcher does the same: the permutation applies to the other names)
        return ppermute_p.bind(
            x, axis_name=rest, perm=perm, frames=_keep(frames, axis_name, rest)
        ), d
    n = axis.size
    src_of = {dst % n: src % n for src, dst in perm}
    if d is None:
        if len(src_of) == n:
            return x, None
        d, x = 0, V.broadcast_batched(x, n, 0)
    # one gather along the batch axis: example i takes example src_of[i] (an index out of range,
    # so zeros, where no pair sends to i)
    idx = np.asarray([[src_of.get(i, n)] for i in range(n)], np.int32)
    full = len(src_of) == n
    out = P.gather_p.bind(
        x,
        Array.from_value(idx),
        axes=(d,),
        mode="clip" if full else "fill",
        fill_value=None if full else 0,
    )
    return out, 0


V.axis_batching_rules[ppermute_p] = _ppermute_batch


# --- the linear collectives: jvp, transpose, vmap without an axis name ---------------------------
def _linear_jvp(prim):
    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        if isinstance(t, J.Zero):
            return out, J.Zero(J.tangent_aval(get_aval(out)))
        return out, prim.bind(t, **params)

    return rule


# The transpose of each linear collective: the collective that carries the cotangent back, and
# its parameters from the forward ones (``frames`` and the others as they are).
_TRANSPOSES = {
    all_gather_p: (
        psum_scatter_p,
        lambda all_gather_dimension, **p: dict(p, scatter_dimension=all_gather_dimension),
    ),
    psum_scatter_p: (
        all_gather_p,
        lambda scatter_dimension, **p: dict(p, all_gather_dimension=scatter_dimension),
    ),
    all_to_all_p: (
        all_to_all_p,
        lambda split_axis, concat_axis, **p: dict(
            p, split_axis=concat_axis, concat_axis=split_axis
        ),
    ),
    ppermute_p: (ppermute_p, lambda perm, **p: dict(p, perm=tuple((d, s) for s, d in perm))),
}


def _linear_transpose(prim):
    back, back_params = _TRANSPOSES[prim]

    def rule(ct, x, **params):
        if isinstance(ct, J.Zero):
            return [J.Zero(x.aval)]
        return [back.bind(ct, **back_params(**{"frames": None, **params}))]

    return rule


for _p in _TRANSPOSES:
    J.jvp_rules[_p] = _linear_jvp(_p)
    T.transpose_rules[_p] = _linear_transpose(_p)
    V.batching_rules[_p] = lambda args, dims, _p=_p, **kw: V.axis_batching_rules[_p](
        V.AxisData(None, V.axis_size_of(args, dims)), args, dims, **kw
    )


# --- jit: a host step that looks the axes up when the program runs -------------------------------
class CollectiveStep(HostStep):
    """The host step of a collective equation under ``jit``: ``__call__`` runs the primitive's
    eager implementation (which looks the axis names up in the frames bound when the program
    runs and calls their handlers) on NumPy copies of the operands; ``torch`` (the Triton
    runtime) hands the device tensors to the handler's ``torch`` object when it has one. Prints
    with its address, so the disk program cache never indexes a program with one."""

    __slots__ = ()
    label = "collective"

    def _device_handler(self):
        """The ``torch`` object of the one spmd frame's handler of the equation, or None (no
        such object, several names, complex operands)."""
        names = names_tuple(self.params.get("axes", self.params.get("axis_name")))
        fs = _check_names(names, self.prim.name, self.params.get("frames"))
        dev = getattr(fs[0].handler, "torch", None) if len(fs) == 1 else None
        complex_ = any(np.dtype(a.dtype).kind == "c" for a in self.in_avals + self.out_avals)
        if dev is None or fs[0].kind != "spmd" or complex_:
            return None
        return dev

    @property
    def torch(self):
        """The Triton runtime's hook: the step on the program's device tensors, when the one
        spmd frame of the equation has a handler with a ``torch`` object (None otherwise: the
        runtime then calls ``__call__`` on NumPy copies). Resolved when the step runs."""
        dev = self._device_handler()
        if dev is None:
            return None
        return lambda ins, outs: self._on_device(dev, ins, outs)

    @property
    def graph_safe(self):
        """Whether the Triton runtime may record this step in the program's CUDA graph: where
        the handler's ``torch`` object says its collectives only queue work on the device
        (``graph_safe``: NCCL, whose collectives a capture records and every replay repeats,
        in the same order on every process, as the program's launches are)."""
        try:
            dev = self._device_handler()
        except NameError:  # (a name bound by nothing yet: decided when the step runs)
            return False
        return bool(getattr(dev, "graph_safe", False))

    def _on_device(self, dev, ins, outs):
        shaped = [t.reshape(a.shape) for t, a in zip(ins, self.in_avals)]
        name, p = self.prim.name, self.params
        if name in ("psum", "pmax", "pmin") and getattr(dev, "size", None) == 1:
            for o, t in zip(outs, ins):  # (over one process the reduction is the operand)
                o.copy_(t.to(dtype=o.dtype))
            return
        if name == "psum" and len(ins) > 1 and hasattr(dev, "psum_flat"):
            # several operands (a pytree's leaves: the gradients of a data-parallel step) go as
            # one reduction per dtype over their concatenation, not one call per operand
            by_dtype: dict = {}
            for i, t in enumerate(ins):
                by_dtype.setdefault(t.dtype, []).append(i)
            for idx in by_dtype.values():
                flat = dev.psum_flat([ins[i] for i in idx])
                for i, piece in zip(idx, flat.split([ins[i].numel() for i in idx])):
                    outs[i].copy_(piece.to(dtype=outs[i].dtype))
            return
        if name == "psum":
            results = [dev.psum(t) for t in shaped]
        elif name in ("pmax", "pmin"):
            results = [getattr(dev, name)(shaped[0])]
        elif name == "all_gather":
            results = [dev.all_gather(shaped[0], p["all_gather_dimension"], p["tiled"])]
        elif name == "reduce_scatter":
            results = [dev.psum_scatter(shaped[0], p["scatter_dimension"], p["tiled"])]
        elif name == "all_to_all":
            results = [dev.all_to_all(shaped[0], p["split_axis"], p["concat_axis"], True)]
        elif name == "ppermute":
            results = [dev.ppermute(shaped[0], p["perm"])]
        else:
            results = [dev.axis_index()]
        for o, r in zip(outs, results):
            if not hasattr(r, "reshape") or not hasattr(r, "to"):  # (an int index, a NumPy array)
                o.copy_(o.new_tensor(np.asarray(r)).reshape(-1))
            else:
                o.copy_(r.reshape(-1).to(device=o.device, dtype=o.dtype))


class _Pending:
    """What a ``psum_start`` step hands its ``psum_done`` step within one run of the program:
    the handle of the reductions in flight (one program runs on one thread at a time)."""

    __slots__ = ("handle",)

    def __init__(self):
        self.handle = None


class PsumStart(CollectiveStep):
    """The first half of an overlapped ``psum`` (``_psum_lowering``): starts the reduction of
    its operands (a bucket of gradients) with the handler's ``psum_start`` (NCCL: queued on
    NCCL's stream, ordered after the kernels already queued on the program's stream, which goes
    on with the next kernels meanwhile; gloo: on gloo's thread) and returns a token for its
    ``PsumDone``. Without an asynchronous handler when the program runs, it reduces here."""

    __slots__ = ("pending",)
    label = "psum start"

    def __init__(self, params, in_avals, pending):
        super().__init__(psum_p, params, in_avals, [ShapedArray((), dtypes.int32)])
        self.pending = pending

    def _async_handler(self):
        names = names_tuple(self.params["axes"])
        fs = _check_names(names, "psum", self.params.get("frames"))
        h = fs[0].handler if len(fs) == 1 and fs[0].kind == "spmd" else None
        return h if h is not None and hasattr(h, "psum_start") else None

    def _on_device(self, dev, ins, outs):
        if hasattr(dev, "psum_start"):  # (flat views: the reduction is over the flat values)
            self.pending.handle = ("started", dev, dev.psum_start(list(ins)))
        else:
            shaped = [t.reshape(a.shape) for t, a in zip(ins, self.in_avals)]
            self.pending.handle = ("done", [dev.psum(t) for t in shaped])

    def __call__(self, *vals):
        h = self._async_handler()
        if h is not None:
            self.pending.handle = ("started", h, h.psum_start(list(vals)))
        else:
            self.pending.handle = ("done", self.prim.impl(*vals, **self.params))
        return [np.zeros((), np.int32)]


class PsumDone(CollectiveStep):
    """The second half of an overlapped ``psum``: waits for the reductions its ``PsumStart``
    began (NCCL: the program's stream waits on NCCL's, no host wait) and writes the sums."""

    __slots__ = ("pending", "layouts")
    label = "psum done"

    def __init__(self, params, out_avals, pending, layouts):
        super().__init__(psum_p, params, [ShapedArray((), dtypes.int32)], out_avals)
        self.pending = pending
        # per output: (the shape its start reduced, the permutation of that array the output
        # is, or None: the same elements in the same order)
        self.layouts = list(layouts)

    def _results(self):
        state, self.pending.handle = self.pending.handle, None
        if state is None:
            raise FunctxError("psum done: its psum start did not run first (a bug in functx)")
        if state[0] == "done":
            return list(state[1])
        return state[1].psum_done(state[2])

    def _on_device(self, dev, ins, outs):
        res = [r.reshape(-1) for r in self._results()]
        plain = [k for k, (_, perm) in enumerate(self.layouts) if perm is None]
        # (an output that is its operand's view in the program's pack holds its sum already)
        plain = [k for k in plain if not _same_memory(res[k], outs[k])]
        if all(res[k].dtype == outs[k].dtype and res[k].device == outs[k].device for k in plain):
            import torch  # (here the results are torch tensors: the runtime is torch's)

            if plain:  # (a few launches, not one per operand)
                torch._foreach_copy_([outs[k] for k in plain], [res[k] for k in plain])
        else:
            for k in plain:
                outs[k].copy_(res[k].to(device=outs[k].device, dtype=outs[k].dtype))
        for k, ((shape, perm), a) in enumerate(zip(self.layouts, self.out_avals)):
            if perm is not None:
                r = res[k].reshape(shape).permute(*perm)
                outs[k].view(a.shape).copy_(r.to(device=outs[k].device, dtype=outs[k].dtype))

    def __call__(self, *vals):
        out = []
        for r, a, (shape, perm) in zip(self._results(), self.out_avals, self.layouts):
            r = _np(_host_array(r, a.dtype), a.dtype).reshape(shape)
            out.append(np.ascontiguousarray(np.transpose(r, perm) if perm is not None else r))
        return out


def _same_memory(a, b) -> bool:
    """Whether the flat torch tensors ``a`` and ``b`` are the same elements."""
    return (
        a.data_ptr() == b.data_ptr()
        and a.numel() == b.numel()
        and a.dtype == b.dtype
        and a.device == b.device
    )


def _host_array(r, dtype) -> np.ndarray:
    """A NumPy copy of a result that may be a torch tensor (on any device)."""
    if isinstance(r, np.ndarray) or not hasattr(r, "detach"):
        return np.asarray(r)
    t = r.detach().cpu()
    if np.dtype(dtype) == dtypes.bfloat16:  # (NumPy has no bfloat16 of torch's)
        import torch

        return t.view(torch.int16).numpy().view(dtypes.bfloat16)
    return t.numpy()


# A data-parallel step's psum of its gradients, overlapped with the backward pass (as DDP's
# buckets): the operands, in the order the program produces them, go in buckets of about
# PSUM_BUCKET_BYTES; each bucket's reduction starts right after the last of its operands is
# computed and the program waits for it where the psum stood. FUNCTX_PSUM_OVERLAP=0 turns it
# off; FUNCTX_PSUM_BUCKET_BYTES sets the bucket size. Both are read when a program is lowered.
PSUM_BUCKET_BYTES = 8 << 20


def _overlap_settings():
    on = os.environ.get("FUNCTX_PSUM_OVERLAP", "1") not in ("", "0")
    return on, int(os.environ.get("FUNCTX_PSUM_BUCKET_BYTES", PSUM_BUCKET_BYTES))


def _can_overlap(axes, frames, avals) -> bool:
    """Whether a psum over ``axes`` can be split into start/done steps: one spmd axis of more
    than one position whose handler reduces asynchronously (``psum_start``), real operands."""
    names = names_tuple(axes)
    if len(names) != 1:
        return False
    try:
        (f,) = _check_names(names, "psum", frames)
    except NameError:
        return False
    h = f.handler
    if f.kind != "spmd" or h is None or not hasattr(h, "psum_start") or f.size < 2:
        return False
    return all(np.dtype(a.dtype).kind in "fiu" for a in avals)


# the operand computed last reduces alone when it and the rest of its bucket hold at least this
# many bytes each (see psum_buckets)
PSUM_SPLIT_BYTES = 1 << 20


def psum_buckets(positions, nbytes, cap):
    """The buckets of an overlapped psum: operand indices grouped in the order of
    ``positions`` (where the program computes each), a bucket closed once it holds ``cap``
    bytes. The reduction of the last bucket cannot hide behind any kernel: when the operand
    computed last (a GPT's embedding gradient, a scatter at the very end of the backward pass)
    and the rest of its bucket both hold ``PSUM_SPLIT_BYTES`` or more, the rest starts before
    that operand is computed and the operand reduces alone. Returns lists of indices, in the
    order their reductions start."""
    buckets, cur, size = [], [], 0
    for i in sorted(range(len(positions)), key=lambda i: (positions[i], i)):
        cur.append(i)
        size += nbytes[i]
        if size >= cap:
            buckets.append(cur)
            cur, size = [], 0
    if cur:
        buckets.append(cur)
    last = buckets[-1] if buckets else []
    if len(last) > 1 and positions[last[-1]] > positions[last[-2]]:
        rest = sum(nbytes[i] for i in last[:-1])
        if min(rest, nbytes[last[-1]]) >= PSUM_SPLIT_BYTES:
            buckets[-1:] = [last[:-1], last[-1:]]
    return buckets


def _psum_lowering(g, ins, avals, *, axes, frames=None):
    """``psum`` under ``jit``: one host step (``CollectiveStep``), or, for a reduction the
    handler can run asynchronously (``_can_overlap``), a ``PsumStart`` per bucket placed in the
    program right after the node that completes the bucket and a ``PsumDone`` per bucket where
    the psum stands (before the first reader of the sums). The program's kernels run in the
    order of the graph's nodes (``schedule.py``), so the start goes into the node list there."""
    params = {"axes": axes, "frames": frames}
    on, cap = _overlap_settings()
    if not on or not ins or not _can_overlap(axes, frames, avals):
        return _collective_lowering(psum_p)(g, ins, avals, **params)
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx` must not
    from functx.lowering.lower import _same_order_source

    # an operand that holds another node's elements in the same order (the reshape or identity
    # view of a matrix product's result) is reduced from that node, and a transpose of a stored
    # node (the weight gradient ``(d.T @ x).T`` of a matrix product) is reduced in that node's
    # layout and transposed by the done step's copy into its output (psum commutes with both):
    # otherwise the view would be stored first, a copy kernel per gradient
    ins, perms = list(ins), [None] * len(ins)
    for i, n in enumerate(ins):
        while (src := _same_order_source(n)) is not None:
            n = src
        perm = n.params.get("permutation") if n.kind == "pointwise" else None
        if perm is not None and len(n.inputs) == 1 and n.inputs[0].kind != "pointwise":
            if not _foldable(n):
                perms[i], n = perm, n.inputs[0]
        ins[i] = n
    pos = {id(n): k for k, n in enumerate(g.nodes)}
    positions = [pos.get(id(n), -1) for n in ins]
    nbytes = [n.size * np.dtype(n.dtype).itemsize for n in ins]
    outs = [None] * len(ins)
    for bucket in psum_buckets(positions, nbytes, cap):
        pending = _Pending()
        b_ins = [ins[i] for i in bucket]
        b_in_avals = [ShapedArray(n.shape, n.dtype) for n in b_ins]
        start = PsumStart(params, b_in_avals, pending)
        (token,) = lower_to_loop(
            g,
            b_ins,
            [start.out_avals[0]],
            "host",
            callback=start,
            in_avals=b_in_avals,
            n_out=1,
            pack=True,  # (Triton: the operands in one flat buffer, reduced in place)
        )
        # move the start (its token node, the last one added) to right after the bucket's last
        # operand; node ids are positions in the list
        last = max(positions[i] for i in bucket)
        assert g.nodes[-1] is token
        g.nodes.pop()
        g.nodes.insert(last + 1, token)
        for k, n in enumerate(g.nodes):
            n.id = k
        positions = [p + (p > last) for p in positions]
        b_out = [ShapedArray(avals[i].shape, avals[i].dtype) for i in bucket]
        done = PsumDone(params, b_out, pending, [(ins[i].shape, perms[i]) for i in bucket])
        got = lower_to_loop(
            g,
            [token],
            b_out,
            "host",
            callback=done,
            in_avals=[start.out_avals[0]],
            n_out=len(b_out),
            # (Triton: an output may read its operand's packed view, the sum in place)
            inplace=[ins[i] if perms[i] is None else None for i in bucket],
            wait=True,  # (Triton: may move down to its outputs' first reader, sink_waits)
        )
        for i, n in zip(bucket, got):
            outs[i] = n
    return outs


def _foldable(t) -> bool:
    """Whether the transpose ``t`` of a matrix product is one that lowering's last pass
    (``functx.lowering.lower._fold_transposed_products``) may fold into the product (computing
    ``C.T = B.T @ A.T``, ``t`` an in-order view of it), when nothing else reads the product: the
    psum then reduces ``t`` itself, which the Triton program can place in its pack (no permuted
    copy of the sum)."""
    d = t.inputs[0]
    p = d.params
    return (
        t.params.get("permutation") == (1, 0)
        and d.kind == "dot"
        and p.get("batch") == 1
        and d.shape == (p.get("m"), p.get("n"))
    )


def _collective_lowering(prim):
    def rule(g, ins, avals, **params):
        in_avals = [ShapedArray(n.shape, n.dtype) for n in ins]
        out_avals = [ShapedArray(a.shape, a.dtype) for a in avals]
        return lower_to_loop(
            g,
            ins,
            list(avals),
            "host",
            callback=CollectiveStep(prim, params, in_avals, out_avals),
            in_avals=in_avals,
            n_out=len(avals),
        )

    return rule


for _p in (pmax_p, pmin_p, axis_index_p, all_gather_p, psum_scatter_p, all_to_all_p):
    lowerings[_p] = _collective_lowering(_p)
lowerings[psum_p] = _psum_lowering
lowerings[ppermute_p] = _collective_lowering(ppermute_p)


# --- the public functions ------------------------------------------------------------------------
def _no_groups(axis_index_groups, api):
    if axis_index_groups is not None:
        raise NotImplementedError(f"{api}: axis_index_groups is not supported by functx")


def _is_constant(x) -> bool:
    """A value that is the same on every position (a Python scalar or a NumPy array): JAX
    computes its psum without communicating."""
    return isinstance(x, (int, float, complex, np.ndarray, np.generic)) and not isinstance(x, Array)


def _named_axes(collective):
    """Adds to a collective's docstring, before its example, the paragraph all of them share: how
    functx treats named axes."""
    collective.__doc__ = (collective.__doc__ or "").replace(
        "\n    Example:",
        """
    Differences from JAX: follows JAX with varying-axes checks off (``check_vma=False``, what
    ``vmap`` computes); ``axis_index_groups`` raises NotImplementedError, and integer entries of
    ``axis_name`` are names, not array axes.

    Example:""",
        1,
    )
    return collective


@_named_axes
def psum(x, axis_name, *, axis_index_groups=None):
    """All-reduce sum of ``x`` over the named axis (or axes) ``axis_name``.

    Arguments:
      x: an array or a pytree of arrays (a bool operand is summed as int32).
      axis_name: the name of an axis bound by ``vmap(..., axis_name=)`` or ``shard_map``, or a
        tuple of names (the sum runs over all of them).
      axis_index_groups: not supported (NotImplementedError unless None).
    Returns:
      the sum over the axis, the same at every position, of ``x``'s shape and dtype (a pytree
      like ``x``). A Python scalar or NumPy array (the same everywhere) gives ``size * x``.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.psum(x, "i"), axis_name="i")
      >>> print(f(jnp.arange(4.0)))
      [6. 6. 6. 6.]
    """
    _no_groups(axis_index_groups, "psum")
    names = names_tuple(axis_name)
    if not names:
        return x
    leaves, tree = tree_flatten(x)
    if leaves and all(_is_constant(v) for v in leaves):
        size = _group_size(names)
        return tree_unflatten(tree, [v * size if _py(v) else np.asarray(v) * size for v in leaves])
    leaves = [
        ops.convert_element_type(v, dtypes.int32) if get_aval(v).dtype == np.bool_ else v
        for v in leaves
    ]
    if not leaves:
        return x
    return tree_unflatten(tree, psum_p.bind(*leaves, axes=names, frames=_bake(names)))


def _py(v) -> bool:
    return isinstance(v, (int, float, complex)) and not isinstance(v, bool)


@_named_axes
def pmean(x, axis_name, *, axis_index_groups=None):
    """All-reduce mean of ``x`` over the named axis (or axes) ``axis_name``.

    Arguments:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name or a tuple of names.
      axis_index_groups: not supported (NotImplementedError unless None).
    Returns:
      ``psum(x, axis_name) / axis_size(axis_name)`` (true division: integers give floats).

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.pmean(x, "i"), axis_name="i")
      >>> print(f(jnp.arange(4.0)))
      [1.5 1.5 1.5 1.5]
    """
    _no_groups(axis_index_groups, "pmean")
    s = psum(x, axis_name)
    n = axis_size(axis_name)
    return _map(lambda v: v / n, s)


def _map(f, x):
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [f(v) for v in leaves])


def _reduce_public(prim, api, what, result):
    """``pmax``/``pmin`` (``api``): ``prim`` over the named axes, leaf by leaf; its docstring names
    ``what`` it computes (maximum, minimum), and its example prints ``result``."""

    def fn(x, axis_name, *, axis_index_groups=None):
        _no_groups(axis_index_groups, api)
        names = names_tuple(axis_name)
        return _map(lambda v: prim.bind(v, axes=names, frames=_bake(names)), x)

    fn.__name__ = fn.__qualname__ = api
    fn.__doc__ = f"""All-reduce {what} of ``x`` over the named axis (or axes) ``axis_name``.

    Arguments:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name or a tuple of names.
      axis_index_groups: not supported (NotImplementedError unless None).
    Returns:
      the elementwise {what} over the axis, the same at every position (a pytree like ``x``).

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.{api}(x, "i"), axis_name="i")
      >>> print(f(jnp.array([1.0, 5.0, 2.0])))
      {result}
    """
    return _named_axes(fn)


pmax = _reduce_public(pmax_p, "pmax", "maximum", "[5. 5. 5.]")
pmin = _reduce_public(pmin_p, "pmin", "minimum", "[1. 1. 1.]")


@_named_axes
def axis_size(axis_name) -> int:
    """The size of the named axis ``axis_name`` (a tuple of names: the product of their sizes).

    Arguments:
      axis_name: a bound axis name or a tuple of names.
    Returns:
      a Python int. NameError if a name is not bound.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: x * functx.lax.axis_size("i"), axis_name="i")
      >>> print(f(jnp.ones(3)))
      [3. 3. 3.]
    """
    return _group_size(names_tuple(axis_name))


@_named_axes
def axis_index(axis_name):
    """The position of this example (under ``vmap``) or device (under ``shard_map``) along the
    named axis ``axis_name``.

    Arguments:
      axis_name: a bound axis name, or a tuple of names (the position in their product, the
        first name major).
    Returns:
      an int32 scalar.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.axis_index("i"), axis_name="i")
      >>> print(f(jnp.zeros(4)))
      [0 1 2 3]
    """
    if not isinstance(axis_name, (tuple, list)):
        return axis_index_p.bind(axis_name=axis_name, frames=_bake((axis_name,)))
    index, inner = None, 1
    for name in reversed(axis_name):
        term = ops.mul(axis_index(name), ops.full((), inner, dtypes.int32))
        index = term if index is None else ops.add(index, term)
        inner *= axis_size(name)
    return ops.full((), 0, dtypes.int32) if index is None else index


def _canon(axis: int, ndim: int, what: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of bounds for an array of rank {ndim}{where()}")
    return axis % ndim


@_named_axes
def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False, to="varying"):
    """Gather ``x`` from every position of the named axis.

    Arguments:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name or a tuple of names.
      axis_index_groups: not supported (NotImplementedError unless None).
      axis: where the gathered axis goes in the result (``tiled=False``), or the axis of ``x``
        along which the values are concatenated (``tiled=True``).
      tiled: concatenate instead of stacking.
      to: JAX's varying-axes annotation; only "varying" (the default) is supported.
    Returns:
      the values of all positions, stacked along a new axis ``axis`` of size
      ``axis_size(axis_name)`` (or concatenated along ``axis``), the same at every position.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.all_gather(x, "i"), axis_name="i")
      >>> print(f(jnp.arange(3.0))[0])
      [0. 1. 2.]
    """
    _no_groups(axis_index_groups, "all_gather")
    if to != "varying":
        raise NotImplementedError(f"all_gather: to={to!r} is not supported by functx")
    names = names_tuple(axis_name)
    if not names:
        return x
    n = axis_size(names)

    def bind(v):
        nd = len(get_aval(v).shape)
        ax = _canon(axis, nd if tiled else nd + 1, "all_gather axis")
        return all_gather_p.bind(
            v,
            axis_name=names,
            all_gather_dimension=ax,
            axis_size=n,
            tiled=bool(tiled),
            frames=_bake(names),
        )

    return _map(bind, x)


@_named_axes
def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
    """Sum ``x`` over the named axis and keep this position's block of the result.

    Arguments:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name or a tuple of names.
      scatter_dimension: the axis of ``x`` that is split among the positions.
      axis_index_groups: not supported (NotImplementedError unless None).
      tiled: keep a block of ``x.shape[scatter_dimension] // size`` (True) or the single index
        of this position, removing the axis (False: the axis must have the axis's size).
    Returns:
      block ``axis_index(axis_name)`` of ``psum(x, axis_name)`` along ``scatter_dimension``.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.psum_scatter(x, "i"), axis_name="i")
      >>> print(f(jnp.ones((2, 2))))
      [2. 2.]
    """
    _no_groups(axis_index_groups, "psum_scatter")
    names = names_tuple(axis_name)
    if not names:
        return x
    n = axis_size(names)

    def bind(v):
        sd = _canon(scatter_dimension, len(get_aval(v).shape), "psum_scatter scatter_dimension")
        return psum_scatter_p.bind(
            v,
            axis_name=names,
            scatter_dimension=sd,
            axis_size=n,
            tiled=bool(tiled),
            frames=_bake(names),
        )

    return _map(bind, x)


@_named_axes
def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
    """Exchange blocks among the positions of the named axis: ``split_axis`` of ``x`` is cut
    into one block per position, block ``k`` goes to position ``k``, and each position
    concatenates (``tiled=True``) or stacks (``tiled=False``) the blocks it receives along
    ``concat_axis``.

    Arguments:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name.
      split_axis: the axis of ``x`` to split (its size must equal the axis size if untiled, be
        a multiple of it if tiled).
      concat_axis: where the received blocks go in the result.
      axis_index_groups: not supported (NotImplementedError unless None).
      tiled: keep the rank (split and concatenate) instead of removing ``split_axis`` and
        inserting a new ``concat_axis``.
    Returns:
      the exchanged array (untiled: ``x``'s shape with ``split_axis`` removed and an axis of the
      axis size inserted at ``concat_axis``).

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.all_to_all(x, "i", 0, 0), axis_name="i")
      >>> print(f(jnp.arange(4.0).reshape(2, 2)))
      [[0. 2.]
       [1. 3.]]
    """
    _no_groups(axis_index_groups, "all_to_all")
    names = names_tuple(axis_name)
    n = axis_size(names)

    def bind(v, split_axis=split_axis, concat_axis=concat_axis):
        shape = get_aval(v).shape
        split_axis = _canon(split_axis, len(shape), "all_to_all split_axis")
        if tiled:
            if shape[split_axis] % n:
                raise ValueError(
                    f"The size of all_to_all split_axis ({shape[split_axis]}) has to be "
                    f"divisible by the size of the named axis {axis_name} ({n}){where()}"
                )
        else:
            if shape[split_axis] != n:
                raise ValueError(
                    "all_to_all requires the size of the mapped axis axis_name to equal "
                    f"x.shape[split_axis], but they are {n} and {shape[split_axis]} "
                    f"respectively.{where()}"
                )
            if split_axis < concat_axis:
                concat_axis += 1  # (a position counted after split_axis is removed)
                v = ops.expand_dims(v, (concat_axis,))
            elif split_axis != concat_axis:
                v = ops.expand_dims(v, (concat_axis,))
                split_axis += 1
        out = all_to_all_p.bind(
            v,
            axis_name=names,
            split_axis=split_axis,
            concat_axis=concat_axis,
            tiled=bool(tiled),
            frames=_bake(names),
        )
        if not tiled and split_axis != concat_axis:
            out = ops.squeeze(out, (split_axis,))
        return out

    return _map(bind, x)


@_named_axes
def ppermute(x, axis_name, perm):
    """Send ``x`` from position to position along the named axis.

    Arguments:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name.
      perm: ``(source, destination)`` pairs; no two with the same source or destination.
    Returns:
      at each position, the operand of the position that sends to it; zeros where none does.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)]),
      ...                 axis_name="i")
      >>> print(f(jnp.arange(3.0)))
      [2. 0. 1.]
    """
    names = names_tuple(axis_name)
    perm = tuple((int(s), int(d)) for s, d in perm)
    srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
    return _map(lambda v: ppermute_p.bind(v, axis_name=names, perm=perm, frames=_bake(names)), x)


@_named_axes
def pshuffle(x, axis_name, perm):
    """``ppermute`` with the permutation given by sources: position ``i`` receives the operand
    of position ``perm[i]``.

    Arguments:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name.
      perm: a permutation of ``range(axis_size)``.
    Returns:
      the shuffled values.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.pshuffle(x, "i", [2, 0, 1]), axis_name="i")
      >>> print(f(jnp.arange(3.0)))
      [2. 0. 1.]
    """
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


@_named_axes
def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
    """Swap the named axis with the positional axis ``axis`` of ``x`` (``all_to_all(x,
    axis_name, axis, axis)``).

    Arguments:
      x: an array or a pytree of arrays; ``x.shape[axis]`` must equal the axis size.
      axis_name: a bound axis name.
      axis: the positional axis to swap with the named one.
      axis_index_groups: not supported (NotImplementedError unless None).
    Returns:
      an array of ``x``'s shape.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.pswapaxes(x, "i", 0), axis_name="i")
      >>> print(f(jnp.arange(4.0).reshape(2, 2)))
      [[0. 2.]
       [1. 3.]]
    """
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


@_named_axes
def pbroadcast(x, axis_name, source):
    """Copy ``x`` from position ``source`` of the named axis to every position.

    Arguments:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name.
      source: the position whose value is copied.
    Returns:
      the value at ``source``, at every position.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx
      >>> f = functx.vmap(lambda x: functx.lax.pbroadcast(x, "i", 2), axis_name="i")
      >>> print(f(jnp.arange(3.0)))
      [2. 2. 2.]
    """

    def one(v):
        aval = get_aval(v)
        me = ops.eq(axis_index(axis_name), ops.full((), int(source), dtypes.int32))
        keep = ops.select_n(me, ops.full(aval.shape, 0, aval.dtype), v)
        out = psum(keep, axis_name)
        return ops.convert_element_type(out, aval.dtype) if aval.dtype == np.bool_ else out

    return _map(one, x)


__all__ = [
    "AxisFrame",
    "CollectiveStep",
    "all_gather",
    "all_gather_p",
    "all_to_all",
    "all_to_all_p",
    "axis_frame",
    "axis_index",
    "axis_index_p",
    "axis_size",
    "env_key",
    "frames",
    "is_bound",
    "lookup",
    "pbroadcast",
    "pmax",
    "pmax_p",
    "pmean",
    "pmin",
    "pmin_p",
    "ppermute",
    "ppermute_p",
    "pshuffle",
    "psum",
    "psum_p",
    "psum_scatter",
    "psum_scatter_p",
    "pswapaxes",
]
