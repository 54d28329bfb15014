"""``functx.shard_map``: run a function on every device of a mesh, each on its block of the inputs,
with the mesh axes as named axes for the collectives (``jax.shard_map``); and ``functx.pmap``.

The body sees blocks: an input whose spec splits dimension d over mesh axes (a, b) arrives with
that dimension divided by ``size(a) * size(b)``, and the device at mesh position (i_a, i_b) gets
block ``i_a * size(b) + i_b``. Outputs are put back together the same way: a dimension that
``out_specs`` splits over axes is the concatenation of the devices' blocks in that order, and a
mesh axis that an output's spec does not name means the output is the same on every device of
that axis (with ``check_vma=True`` functx checks it, as JAX does, by asking whether the value
varies along the axis: it does after ``axis_index`` or on a split input, and stops varying after
``psum``/``all_gather``).

Two ways to run, chosen by the mesh:

* **One process** (every device of the mesh is this process's: the host devices of
  ``XLA_FLAGS=--xla_force_host_platform_device_count=N``, or a single device): the body runs under
  nested ``vmap(..., axis_name=a)``, one per mesh axis, over the blocks stacked along new leading
  axes. This is the reference the distributed mode is tested against; ``jit`` and ``grad`` of it
  are those of ``vmap``.
* **One process per device** (after ``functx.distributed.initialize()``, with a mesh of
  ``functx.devices()``): each process cuts its own block out of the (identical, global) inputs,
  runs the body jitted with the mesh axes bound as "spmd" axis frames whose handlers are
  ``functx.distributed.TorchCollectives`` over the processes of each axis, and all-gathers the
  split dimensions of the outputs, so every process returns the global value. ``grad``, ``vjp``
  and ``jvp`` of such a function are those of the global function, by JAX's transpose of
  shard_map with ``check_vma=False`` (``shard_map_boundary`` below); ``jit`` of it compiles the
  body inline, its collectives as host steps of the program.

``pmap`` in one process is ``vmap(axis_name=)``; over processes (one device each) it is JAX's
multi-process pmap: each process passes its own inputs (mapped axes of size 1) and gets its own
outputs, a shard_map over a one-axis mesh of the processes' devices.
"""

from __future__ import annotations

import math

import numpy as np

from functx import distributed, numpy as jnp, ops, sharding, tree_util
from functx.control.callbacks import pure_callback
from functx.control.collectives import (
    AxisFrame,
    Baked,
    all_gather,
    all_gather_p,
    axis_frame,
    psum_p,
)
from functx.core import Primitive, ShapedArray
from functx.devices import device as _device
from functx.devices.transfer import device_put
from functx.jit import jit
from functx.lowering.rules import lowerings
from functx.primitives import slice_p
from functx.sharding import Mesh, PartitionSpec
from functx.tracing import ShapeDtypeStruct, Tracer, eval_shape, get_aval
from functx.transforms import jvp as J, transpose as T, vmap as V
from functx.transforms.vmap import vmap

__all__ = ["pmap", "shard_map", "smap"]

_INFER = object()

# Over processes, a shard_map-ped function called under an outer trace (jit, grad, jvp) is traced
# inline: its collectives record the "spmd" frames bound while tracing, so the compiled program
# and the backward pass run outside the frames' blocks. True: under jit, run it as one host step
# instead (not differentiable).
HOST_STEP_UNDER_TRACE = False


def shard_map(
    f=None,
    /,
    *,
    out_specs,
    in_specs=_INFER,
    mesh=None,
    axis_names=frozenset(),
    check_vma: bool = True,
    check_rep: bool | None = None,
):
    """Map a function over the blocks of its inputs on the devices of a mesh (``jax.shard_map``).

    Arguments:
      f: the per-device function (leave it out to get a decorator).
      out_specs: a ``PartitionSpec`` per output (a pytree prefix of the outputs): how the
        devices' outputs are put together. A mesh axis the spec does not name means the output is
        replicated over it.
      in_specs: a ``PartitionSpec`` per positional argument (a pytree prefix of the arguments):
        which mesh axes split each dimension. Required (functx arrays carry no sharding).
      mesh: the ``Mesh``; None: the mesh of the enclosing ``with mesh:`` block.
      axis_names: accepted for JAX's signature; every mesh axis is manual in the body.
      check_vma: check that outputs are replicated over the mesh axes their spec leaves out.
      check_rep: the older name of ``check_vma`` (``jax.experimental.shard_map``).
    Returns:
      A function of the global arrays that returns the global outputs.
    Raises:
      ValueError: a spec names an axis the mesh lacks, is longer than its array's rank, a
      dimension does not divide, or (``check_vma``) an output varies over an axis its spec
      leaves out.

    Differences from JAX: ``in_specs`` is required (functx arrays carry no sharding to infer it
    from) and arrays are never split in memory: in one process the body runs under nested
    ``vmap(axis_name=)``, over processes each process cuts its block out of the global inputs.
    ``check_vma`` checks the outputs' replication on concrete values (not by JAX's static
    varying-axes types), and derivatives are JAX's with ``check_vma=False`` whatever it says:
    a gradient taken inside the body through a ``psum``/``pmean``, or of a replicated input, can
    differ from JAX's default (docs/differences.md); the gradient of the shard_map-ped function
    itself is the global function's, as in JAX.

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> from functx.sharding import PartitionSpec as P
      >>> mesh = functx.make_mesh((1,), ("i",))
      >>> f = functx.shard_map(
      ...     lambda x: functx.lax.psum(x.sum(), "i"), mesh=mesh, in_specs=P("i"), out_specs=P()
      ... )
      >>> f(jnp.arange(4.0))
      Array(6., dtype=float32)
    """
    if check_rep is not None:
        check_vma = check_rep
    if f is None:
        return lambda g: shard_map(
            g,
            out_specs=out_specs,
            in_specs=in_specs,
            mesh=mesh,
            axis_names=axis_names,
            check_vma=check_vma,
        )
    if not callable(f):
        raise TypeError(
            "shard_map requires a callable for its first argument, but got "
            f"{f!r} of type {type(f)}."
        )
    return _ShardMapped(f, mesh, in_specs, out_specs, check_vma)


def _axis_spec(axis_name, axis):
    return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)


def smap(f=None, /, *, in_axes=_INFER, out_axes, axis_name):
    """``shard_map`` over one mesh axis, with array axes for specs (``jax.smap``): the mesh in
    context (``functx.set_mesh`` or ``with mesh:``) splits input axis ``in_axes`` (per
    positional argument when a tuple; None: not split) over mesh axis ``axis_name``, and the
    outputs' pieces are joined along ``out_axes``. A decorator when ``f`` is omitted.

    Arguments:
      f: the per-device function.
      in_axes: an int (non-negative), None, or a tuple of them, one per positional argument.
      out_axes: an int, None, or a pytree of them matching the outputs.
      axis_name: a mesh axis name.
    Returns:
      The mapped function.
    Raises:
      TypeError: an ``axis_name`` that is a list or tuple, or axes that are not ints/None.

    Differences from JAX: ``in_axes`` is required (functx arrays carry no sharding to infer it
    from, as ``shard_map``'s ``in_specs``); the other mesh axes are manual too (replicated).

    Example:
      >>> import functx, functx.numpy as jnp
      >>> with functx.set_mesh(functx.make_mesh((1,), ("x",))):
      ...     functx.smap(lambda a: a * 2, in_axes=0, out_axes=0, axis_name="x")(jnp.arange(3.0))
      Array([0., 2., 4.], dtype=float32)
    """
    if f is None:
        return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
    if isinstance(axis_name, (list, tuple)):
        raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    for what, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
        if axes is _INFER:
            continue
        leaves = tree_util.tree_leaves(axes)
        if not all(isinstance(a, int) and not isinstance(a, bool) for a in leaves):
            raise TypeError(
                f"smap {what} must be an int, None, or (nested) container with those types as "
                f"leaves, but got {axes}."
            )
    spec = lambda axes: tree_util.tree_map(  # noqa: E731
        lambda a: _axis_spec(axis_name, a), axes, is_leaf=lambda a: a is None
    )
    in_specs = _INFER if in_axes is _INFER else spec(in_axes)
    return shard_map(f, out_specs=spec(out_axes), in_specs=in_specs, mesh=None)


class _ShardMapped:
    def __init__(self, f, mesh, in_specs, out_specs, check_vma, local=False):
        self.f = f
        self.local = local  # (pmap over processes: each process's inputs and outputs are its own)
        self.mesh = mesh
        self.in_specs = in_specs
        self.out_specs = out_specs
        self.check_vma = check_vma
        self._jitted = None
        self.__name__ = getattr(f, "__name__", "shard_map")
        self.__doc__ = getattr(f, "__doc__", None)
        self.__wrapped__ = f

    def __call__(self, *args):
        mesh = self.mesh if self.mesh is not None else sharding.current_mesh()
        if mesh is None:
            raise ValueError(
                "shard_map: no mesh given: pass mesh=... or call it inside `with mesh:`"
            )
        if not isinstance(mesh, Mesh):
            raise TypeError(
                f"shard_map requires a Mesh as its mesh argument, got {type(mesh).__name__}"
            )
        if self.in_specs is _INFER:
            raise ValueError(
                "shard_map: in_specs is required in functx (functx arrays carry no sharding to "
                "infer it from)"
            )
        name = self.__name__
        leaves, tree = tree_util.tree_flatten(args)
        specs = _broadcast(self.in_specs, args, "in_specs")
        for i, (x, spec) in enumerate(zip(leaves, specs)):
            if not self.local:  # (pmap's inputs are this process's blocks)
                _check_input(name, mesh, i, x, spec)
        if _is_distributed(mesh):
            return self._run_processes(mesh, leaves, specs, tree)
        return self._run_vmap(mesh, leaves, specs, tree)

    # --- one process: nested vmaps ----------------------------------------------------------------
    def _run_vmap(self, mesh, leaves, specs, tree):
        names = mesh.axis_names
        stacked = [_stack_blocks(mesh, x, spec) for x, spec in zip(leaves, specs)]
        out_tree_box = []

        def body(*flat):
            outs = self.f(*tree_util.tree_unflatten(tree, list(flat)))
            out_leaves, out_tree = tree_util.tree_flatten(outs)
            out_tree_box.append((outs, out_tree))
            return tuple(out_leaves)

        # each mesh axis, outermost first: arguments split over it are mapped, others broadcast
        fun = body
        for k in reversed(range(len(names))):
            a = names[k]
            in_axes = tuple(0 if a in _named(spec) else None for spec in specs)
            fun = _vmapped(fun, in_axes, a, mesh.shape[a])
        outs = fun(*stacked)
        raw, out_tree = out_tree_box[-1]
        out_specs = _broadcast(self.out_specs, raw, "out_specs")
        results = []
        for j, (y, spec) in enumerate(zip(outs, out_specs)):
            results.append(_unstack_blocks(mesh, y, spec, self.check_vma, self.__name__, j))
        return tree_util.tree_unflatten(out_tree, results)

    # --- one process per device -------------------------------------------------------------------
    def _run_processes(self, mesh, leaves, specs, tree, inline=False):
        traced = any(isinstance(x, Tracer) for x in leaves)
        if traced and not inline and HOST_STEP_UNDER_TRACE:
            return self._call_back(mesh, leaves, specs, tree)
        run = distributed.current()
        pos = _my_position(mesh)
        local = run.local
        frames = _spmd_frames(mesh, pos)
        baked = Baked(frames)
        blocks = []
        for x, spec in zip(leaves, specs):
            if isinstance(x, Tracer):  # (under a trace: the cotangents' sums over devices)
                x = _boundary(x, _unmentioned(mesh, spec), baked, 1.0)
                b = x if self.local else _traced_block(mesh, pos, x, spec, baked)
            else:
                b = x if self.local else _my_block(mesh, pos, x, spec)
            if not isinstance(b, Tracer) and local.platform != "cpu":
                b = device_put(b, local)
            blocks.append(b)
        if self._jitted is None:
            self._jitted = jit(lambda *flat: _call_flat(self.f, tree, flat))
        with _Frames(frames):
            raw = self._jitted(*blocks)
            out_leaves, out_tree = tree_util.tree_flatten(raw)
            if callable(self.out_specs):  # (pmap: the specs follow the output's structure)
                out_specs = self.out_specs(raw)
            else:
                out_specs = _broadcast(self.out_specs, raw, "out_specs")
            results = []
            for _j, (y, spec) in enumerate(zip(out_leaves, out_specs)):
                _check_output_rank(self.__name__, y, spec)
                if not self.local:
                    for d, axes in enumerate(spec.axes(np.ndim(y))):
                        for a in reversed(axes):  # innermost first, so the first axis is major
                            y = all_gather(y, a, axis=d, tiled=True)
                if isinstance(y, Tracer):  # (the cotangent's share of each device)
                    y = _boundary(y, (), baked, _ct_share(mesh, spec, self.local))
                results.append(y)
        return tree_util.tree_unflatten(out_tree, results)

    def _call_back(self, mesh, leaves, specs, tree):
        """Under an outer trace (``jit`` of a shard_map-ped function): a host step that runs the
        whole shard_map (its body jitted inside, the axis frames bound) when the program runs,
        since the collectives of the body need the frames then."""
        pos = _my_position(mesh)
        frames = _spmd_frames(mesh, pos)
        local = [
            ShapeDtypeStruct(np.shape(_my_block(mesh, pos, _spec_of(x), s)), x.dtype)
            for x, s in zip(leaves, specs)
        ]
        with _Frames(frames):
            shapes = eval_shape(lambda *flat: _call_flat(self.f, tree, flat), *local)
        out_leaves, out_tree = tree_util.tree_flatten(shapes)
        out_specs = _broadcast(self.out_specs, shapes, "out_specs")
        result = []
        for y, spec in zip(out_leaves, out_specs):
            _check_output_rank(self.__name__, y, spec)
            shape = [
                n * math.prod(mesh.shape[a] for a in axes)
                for n, axes in zip(y.shape, spec.axes(len(y.shape)))
            ]
            result.append(ShapeDtypeStruct(tuple(shape), y.dtype))

        def host(*flat):
            out = self._run_processes(mesh, list(flat), specs, tree)
            return [np.asarray(v) for v in tree_util.tree_leaves(out)]

        outs = pure_callback(host, result, *leaves)
        return tree_util.tree_unflatten(out_tree, outs)


# --- the process boundary under autodiff ----------------------------------------------------------
# Over processes every process holds the global inputs and returns the global outputs (or, for
# pmap, its own block of each), and runs the body on its block. Forward, the boundary is the
# block slicing and the output gathers; their tangents are the same maps. Backward, functx follows
# JAX's transpose of shard_map with check_vma=False: an output's cotangent is divided among the
# devices that hold the same block (the mesh axes its spec leaves out), the body is transposed on
# every device, and an input's cotangent is summed over those devices, then (a global input) its
# blocks are gathered. In a process that holds the global value, the gathers' transposes
# (psum_scatter) already sum over the devices of the axes an output's spec names, so the output's
# share is 1/mesh.size. ``shard_map_boundary`` carries the sums and shares: the identity forward
# (and in tangents), its transpose a psum over ``axes`` times ``scale``; ``shard_map_block``
# (below) the slicing of a global input and the gathers of its transpose.
boundary_p = Primitive("shard_map_boundary")


def _boundary(x, axes, frames, scale):
    if not axes and scale == 1.0:
        return x
    return boundary_p.bind(x, axes=tuple(axes), frames=frames, scale=float(scale))


def _boundary_transpose(ct, x, *, axes, frames, scale):
    if isinstance(ct, J.Zero):
        return [J.Zero(x.aval)]
    if axes:
        keep = [f for f in frames if f.name in axes]
        ct = psum_p.bind(ct, axes=tuple(f.name for f in keep), frames=Baked(keep))[0]
    if scale != 1.0:
        ct = ops.mul(ct, ops.full((), scale, get_aval(ct).dtype))
    return [ct]


boundary_p.abstract_eval = lambda aval, **_: ShapedArray(aval.shape, aval.dtype, aval.weak_type)
boundary_p.impl = lambda x, **_: x


def _boundary_jvp(primals, tangents, **params):
    ((x,), (t,)) = primals, tangents
    out = boundary_p.bind(x, **params)
    return out, t if isinstance(t, J.Zero) else boundary_p.bind(t, **params)


J.jvp_rules[boundary_p] = _boundary_jvp
T.transpose_rules[boundary_p] = _boundary_transpose
V.batching_rules[boundary_p] = lambda args, dims, **kw: (boundary_p.bind(args[0], **kw), dims[0])
lowerings[boundary_p] = lambda g, ins, avals, **params: ins[0]


def _unmentioned(mesh, spec):
    """The mesh axes an input's spec leaves out: the devices along them share its block, so its
    cotangent is summed over them."""
    return tuple(a for a in mesh.axis_names if a not in _named(spec))


# This process's block of a global input, under a trace: a static slice whose transpose gathers
# the blocks' cotangents (tiled, over the mesh axes that split each dimension, the first axis
# major) into the global cotangent every process holds.
block_p = Primitive("shard_map_block")


def _traced_block(mesh, pos, x, spec, frames):
    shape = get_aval(x).shape
    start, limit = [], []
    for d, axes in enumerate(spec.axes(len(shape))):
        n = math.prod(mesh.shape[a] for a in axes)
        k = 0
        for a in axes:
            k = k * mesh.shape[a] + pos[a]
        b = shape[d] // n
        start.append(k * b)
        limit.append((k + 1) * b)
    if not any(start) and tuple(limit) == shape:
        return x
    split = tuple(tuple(axes) for axes in spec.axes(len(shape)))
    return block_p.bind(x, start=tuple(start), limit=tuple(limit), split=split, frames=frames)


def _block_abstract(aval, *, start, limit, **_):
    return ShapedArray(tuple(h - s for s, h in zip(start, limit)), aval.dtype, aval.weak_type)


def _block_impl(x, *, start, limit, **_):
    return np.asarray(x)[tuple(slice(s, h) for s, h in zip(start, limit))]


def _block_jvp(primals, tangents, **params):
    ((x,), (t,)) = primals, tangents
    out = block_p.bind(x, **params)
    if isinstance(t, J.Zero):
        return out, J.Zero(J.tangent_aval(get_aval(out)))
    return out, block_p.bind(t, **params)


def _block_transpose(ct, x, *, start, limit, split, frames):
    if isinstance(ct, J.Zero):
        return [J.Zero(x.aval)]
    frame = {f.name: f for f in frames}
    for d, axes in enumerate(split):
        for a in reversed(axes):  # innermost first, so the first axis is major
            ct = all_gather_p.bind(
                ct,
                axis_name=(a,),
                all_gather_dimension=d,
                axis_size=frame[a].size,
                tiled=True,
                frames=Baked([frame[a]]),
            )
    return [ct]


def _block_batch(args, dims, *, start, limit, split, frames):
    ((x,), (d,)) = args, dims
    if d is None:
        return block_p.bind(x, start=start, limit=limit, split=split, frames=frames), None
    n = get_aval(x).shape[d]
    start, limit = start[:d] + (0,) + start[d:], limit[:d] + (n,) + limit[d:]
    split = split[:d] + ((),) + split[d:]
    return block_p.bind(x, start=start, limit=limit, split=split, frames=frames), d


block_p.abstract_eval = _block_abstract
block_p.impl = _block_impl
J.jvp_rules[block_p] = _block_jvp
T.transpose_rules[block_p] = _block_transpose
V.batching_rules[block_p] = _block_batch
lowerings[block_p] = lambda g, ins, avals, *, start, limit, **_: lowerings[slice_p](
    g, ins, avals, start_indices=start, limit_indices=limit, strides=None
)


def _ct_share(mesh, spec, local):
    """The factor of an output's cotangent on each device: 1 / the number of devices holding the
    same block (those along the mesh axes its spec leaves out); of a global output, 1 / the mesh's
    size (the transposes of its gathers, psum_scatters, sum over the rest)."""
    if not local:
        return 1.0 / mesh.size
    return 1.0 / math.prod(mesh.shape[a] for a in _unmentioned(mesh, spec))


def _spec_of(x):
    """A stand-in with ``x``'s shape for slicing shapes (nothing is computed)."""
    return np.broadcast_to(np.zeros((), np.bool_), np.shape(x))


def _call_flat(f, tree, flat):
    return f(*tree_util.tree_unflatten(tree, list(flat)))


class _Frames:
    """Push several axis frames (outermost first) for a ``with`` block."""

    def __init__(self, frames):
        self.frames = frames
        self.cms = []

    def __enter__(self):
        for fr in self.frames:
            cm = axis_frame(fr)
            cm.__enter__()
            self.cms.append(cm)

    def __exit__(self, *exc):
        while self.cms:
            self.cms.pop().__exit__(*exc)
        return False


def _vmapped(fun, in_axes, name, size):
    return vmap(fun, in_axes=in_axes, out_axes=0, axis_name=name, axis_size=size)


# --- specs ----------------------------------------------------------------------------------------
def _is_spec(x):
    return x is None or isinstance(x, PartitionSpec)


def _broadcast(prefix, full, what):
    """``prefix`` (specs, a pytree prefix of ``full``) as one spec per leaf of ``full``."""
    if isinstance(prefix, list):
        prefix = tuple(prefix)
    if isinstance(full, list) and isinstance(prefix, tuple):
        full_for = tuple(full)
    else:
        full_for = full
    try:
        spread = tree_util.tree_broadcast(prefix, full_for, is_leaf=_is_spec)
    except ValueError as e:
        raise ValueError(f"shard_map {what}: pytree structure error: {e}") from None
    out = tree_util.tree_leaves(spread, is_leaf=_is_spec)
    for s in out:
        if not isinstance(s, PartitionSpec):
            raise TypeError(f"shard_map {what} must be PartitionSpecs, got {s!r}")
    return out


def _named(spec) -> set:
    return {a for axes in spec.axes() for a in axes}


def _check_input(name, mesh, i, x, spec):
    for a in _named(spec):
        if a not in mesh.shape:
            raise ValueError(
                f"shard_map in_specs argument must refer to an axis marked as manual "
                f"({frozenset(mesh.axis_names)}), but:\n\n  in_specs refers to {a!r}\n\n"
                "Check the in_specs values passed to shard_map."
            )
    sharding.check_spec(spec, mesh)
    shape = np.shape(x)
    if len(spec) > len(shape):
        raise ValueError(
            f"shard_map applied to the function {name!r} was given an in_specs entry which is too "
            f"long to be compatible with the corresponding input value from the function:\n\n"
            f"in_specs is {spec} which has length {len(spec)}, but the passed args[{i}] has shape "
            f"{shape}, which has rank {len(shape)} (and {len(shape)} < {len(spec)})"
        )
    for d, axes in enumerate(spec.axes(len(shape))):
        n = math.prod(mesh.shape[a] for a in axes)
        if shape[d] % n:
            raise ValueError(
                f"shard_map applied to the function {name!r} was given argument arrays with axis "
                f"sizes that are not evenly divisible by the corresponding mesh axis sizes:\n\n"
                f"the passed args[{i}] of shape {shape} corresponds to in_specs of value {spec}, "
                f"which maps array axis {d} (of size {shape[d]}) to mesh axes {axes} (of size "
                f"{n}), but {n} does not evenly divide {shape[d]}"
            )


def _check_output_rank(name, y, spec):
    if len(spec) > np.ndim(y):
        raise ValueError(
            f"shard_map applied to the function {name!r} was given an out_specs entry which is "
            f"too long to be compatible with the corresponding output value from the function:\n\n"
            f"out_specs is {spec} which has length {len(spec)}, but the output has shape "
            f"{np.shape(y)}, which has rank {np.ndim(y)} (and {np.ndim(y)} < {len(spec)})"
        )


# --- blocks in one process ------------------------------------------------------------------------
def _stack_blocks(mesh, x, spec):
    """``x`` with its blocks stacked on new leading axes, one per mesh axis ``spec`` names, in
    mesh order: shape (size(a) for named a in mesh order) + block shape."""
    x = jnp.asarray(x)
    shape = x.shape
    axes_per_dim = spec.axes(len(shape))
    split_shape, where_axis = [], {}
    for d, axes in enumerate(axes_per_dim):
        n = math.prod(mesh.shape[a] for a in axes)
        for a in axes:
            where_axis[a] = len(split_shape)
            split_shape.append(mesh.shape[a])
        where_axis[("dim", d)] = len(split_shape)
        split_shape.append(shape[d] // n)
    if len(split_shape) == len(shape):
        return x
    y = jnp.reshape(x, split_shape)
    lead = [where_axis[a] for a in mesh.axis_names if a in where_axis]
    rest = [where_axis[("dim", d)] for d in range(len(shape))]
    return jnp.transpose(y, lead + rest)


def _unstack_blocks(mesh, y, spec, check, name, j):
    """The inverse of ``_stack_blocks`` for an output: ``y`` has a leading axis per mesh axis (in
    mesh order) then the block shape."""
    k = len(mesh.axis_names)
    block = y.shape[k:]
    _check_output_rank(name, np.empty(block, dtype=np.bool_), spec)
    axes_per_dim = spec.axes(len(block))
    named = _named(spec)
    # mesh axes the spec leaves out: the value must not vary along them; keep position 0
    for m in reversed(range(k)):
        a = mesh.axis_names[m]
        if a not in named:
            if check and mesh.shape[a] > 1 and _varies(y, m):
                raise ValueError(
                    f"shard_map applied to the function {name!r} was given out_specs which "
                    f"require replication which can't be statically inferred given the mesh:\n\n"
                    f"The mesh given has shape {mesh.axis_sizes} with corresponding axis names "
                    f"{mesh.axis_names}.\n\nout_specs is {spec} which implies that the "
                    f"corresponding output value is only varying across mesh axes "
                    f"{set(named) or '{}'} and not {{{a}}}, but it was inferred to be possibly "
                    f"varying over {{{a}}}\n\nCheck if these output values are meant to be "
                    "replicated over those mesh axes. If not, consider revising the corresponding "
                    "out_specs entries. If so, consider disabling the check by passing "
                    "check_vma=False"
                )
            y = jnp.take(y, 0, axis=m)
    present = [a for a in mesh.axis_names if a in named]
    lead = {a: i for i, a in enumerate(present)}
    kk = len(present)
    perm, out_shape = [], []
    for d, axes in enumerate(axes_per_dim):
        perm += [lead[a] for a in axes]
        perm.append(kk + d)
        out_shape.append(block[d] * math.prod(mesh.shape[a] for a in axes))
    if kk == 0:
        return y
    return jnp.reshape(jnp.transpose(y, perm), out_shape)


def _varies(y, m) -> bool:
    """Whether ``y`` (stacked over the mesh axes) differs along mesh axis ``m``: checked on the
    values when they are concrete; under a trace the value is taken as it is (functx has no
    static varying-axes analysis)."""
    if isinstance(y, Tracer):
        return False
    v = np.asarray(y)
    first = np.take(v, [0], axis=m)
    return not np.array_equal(v, np.broadcast_to(first, v.shape), equal_nan=v.dtype.kind in "fc")


# --- blocks across processes ----------------------------------------------------------------------
def _is_distributed(mesh) -> bool:
    return distributed.is_initialized() and any(
        isinstance(d, distributed.ProcessDevice) for d in mesh.devices.flat
    )


def _my_position(mesh):
    me = _device.process_index()
    for pos in np.ndindex(*mesh.axis_sizes):
        if mesh.devices[pos].process_index == me:
            return dict(zip(mesh.axis_names, pos))
    raise ValueError(f"shard_map: the mesh {mesh} has no device of process {me}")


def _my_block(mesh, pos, x, spec):
    shape = np.shape(x)
    idx = []
    for d, axes in enumerate(spec.axes(len(shape))):
        if not axes:
            idx.append(slice(None))
            continue
        n = math.prod(mesh.shape[a] for a in axes)
        k = 0
        for a in axes:
            k = k * mesh.shape[a] + pos[a]
        b = shape[d] // n
        idx.append(slice(k * b, (k + 1) * b))
    if all(s == slice(None) for s in idx):
        return x
    if not isinstance(x, Tracer) and not hasattr(x, "aval"):
        x = jnp.asarray(x)
    return x[tuple(idx)]


_frames_cache: dict = {}


def _spmd_frames(mesh, pos):
    """One "spmd" frame per mesh axis, whose handler talks to the processes along that axis."""
    key = (mesh, tuple(sorted(pos.items())))
    if key in _frames_cache:
        return _frames_cache[key]
    names = mesh.axis_names
    ranks = np.vectorize(lambda d: d.process_index, otypes=[int])(mesh.devices)
    # every process creates every group, in the same order (torch's new_group is collective)
    for k in range(len(names)):
        moved = np.moveaxis(ranks, k, -1).reshape(-1, ranks.shape[k])
        distributed.make_groups([tuple(r) for r in moved])
    frames = []
    for k, a in enumerate(names):
        sel = tuple(pos[b] if j != k else slice(None) for j, b in enumerate(names))
        handler = distributed.TorchCollectives(tuple(ranks[sel]))
        frames.append(_frame(a, mesh.shape[a], handler))
    _frames_cache[key] = frames
    return frames


def _frame(name, size, handler):
    return AxisFrame(name, size, "spmd", handler)


# --- pmap -----------------------------------------------------------------------------------------
def pmap(
    fun,
    axis_name=None,
    *,
    in_axes=0,
    out_axes=0,
    static_broadcasted_argnums=(),
    devices=None,
    backend=None,
    axis_size=None,
    donate_argnums=(),
):
    """Map a function over the leading axis of its arguments, one device per example (``jax.pmap``).

    In one process it is ``vmap(fun, in_axes, out_axes, axis_name=axis_name)`` after checking
    that there are enough devices (the host devices of
    ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` on the CPU). In a distributed run
    (``functx.distributed.initialize()``, one device per process) it maps over the processes, as
    JAX's multi-process pmap: each process passes its own inputs, whose mapped axes have size 1
    (its one local device), gets its own outputs, and the collectives over ``axis_name`` run
    over all the processes (or those of ``devices``); ``grad`` through it transposes the body on
    every process (``psum`` to ``psum``) and sums the cotangent of an ``in_axes=None`` argument
    over the processes.

    Arguments:
      fun: the function of one example.
      axis_name: the name of the mapped axis for collectives.
      in_axes, out_axes: as ``vmap``'s.
      static_broadcasted_argnums, donate_argnums: not supported but for their defaults.
      devices, backend: the devices to count (default: ``functx.sharding.mesh_devices()``;
        in a distributed run, every process's device).
      axis_size: the mapped size when no argument is mapped (in a distributed run: the number
        of processes, checked).
    Returns:
      A function of the stacked examples.

    Differences from JAX: in one process it is ``vmap(axis_name=)`` (one program, not one per
    device); ``static_broadcasted_argnums`` and ``donate_argnums`` raise
    ``NotImplementedError``.

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> functx.pmap(lambda x: x - functx.lax.pmean(x, "i"), "i")(jnp.ones((1, 3)))
      Array([[0., 0., 0.]], dtype=float32)
    """
    if static_broadcasted_argnums or donate_argnums:
        raise NotImplementedError(
            "functx.pmap: static_broadcasted_argnums and donate_argnums are not supported"
        )
    if distributed.is_initialized() and (
        devices is None or all(isinstance(d, distributed.ProcessDevice) for d in devices)
    ):
        return _pmap_processes(fun, axis_name, in_axes, out_axes, axis_size, devices)
    mapped = vmap(fun, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, axis_size=axis_size)
    devs = list(devices) if devices is not None else sharding.mesh_devices()

    def run(*args):
        leaves = tree_util.tree_leaves(args)
        sizes = {np.shape(x)[0] for x in leaves if np.ndim(x)} if in_axes == 0 else set()
        n = axis_size if axis_size is not None else (sizes.pop() if len(sizes) == 1 else None)
        if n is not None and n > len(devs):
            raise ValueError(
                f"compiling computation that requires {n} logical devices, but only {len(devs)} "
                "XLA devices are available (num_replicas=" + f"{n})"
            )
        return mapped(*args)

    run.__name__ = getattr(fun, "__name__", "pmap")
    run.__wrapped__ = fun
    return run


def _is_axis(x):
    return x is None or isinstance(x, (int, np.integer))


def _axes_per_leaf(axes, tree, what):
    if isinstance(axes, list):
        axes = tuple(axes)
    try:
        spread = tree_util.tree_broadcast(axes, tree, is_leaf=_is_axis)
    except ValueError as e:
        raise ValueError(f"pmap {what} specification must be a tree prefix: {e}") from None
    return tree_util.tree_leaves(spread, is_leaf=_is_axis)


def _pmap_processes(fun, axis_name, in_axes, out_axes, axis_size, devices):
    """pmap over the processes of a distributed run (one device each), as JAX's multi-process
    pmap: each process passes its own inputs, whose mapped axes have the size of its local
    devices (1), and gets its own outputs; the collectives over ``axis_name`` run over every
    process. A shard_map over a one-axis mesh of the processes' devices, each process's inputs
    taken as its block. ``devices``: the processes' devices to map over (default: all of them;
    only their processes call the function)."""
    name = axis_name if axis_name is not None else object()
    devs = list(devices) if devices is not None else distributed.current().devices
    mesh = Mesh(np.array(devs), (name,))
    cache: dict = {}

    def run(*args):
        leaves, tree = tree_util.tree_flatten(args)
        axes = _axes_per_leaf(in_axes, args, "in_axes")
        axes = [None if a is None else int(a) % max(np.ndim(x), 1) for x, a in zip(leaves, axes)]
        for x, a in zip(leaves, axes):
            if a is not None and np.shape(x)[a] != 1:
                raise ValueError(
                    f"compiling computation that requires {np.shape(x)[a] * mesh.size} logical "
                    f"devices, but only {mesh.size} XLA devices are available (num_replicas="
                    f"{np.shape(x)[a] * mesh.size})"
                )
        if axis_size is not None and axis_size != mesh.size:
            raise ValueError(
                f"Specified axis_size {axis_size} doesn't match received axis_size {mesh.size}."
            )
        key = (tree, tuple(axes))
        if key not in cache:
            cache[key] = _pmap_shard_map(fun, name, mesh, tree, axes, out_axes)
        return cache[key](*leaves)

    run.__name__ = getattr(fun, "__name__", "pmap")
    run.__wrapped__ = fun
    return run


def _pmap_shard_map(fun, name, mesh, tree, axes, out_axes):
    def spec(a):
        return PartitionSpec() if a is None else PartitionSpec(*([None] * a), name)

    def body(*flat):
        vals = [v if a is None else jnp.squeeze(v, a) for v, a in zip(flat, axes)]
        out = fun(*tree_util.tree_unflatten(tree, vals))
        o_leaves, o_tree = tree_util.tree_flatten(out)
        o_axes = _axes_per_leaf(out_axes, out, "out_axes")
        o_leaves = [
            y if a is None else jnp.expand_dims(y, int(a) % (np.ndim(y) + 1))
            for y, a in zip(o_leaves, o_axes)
        ]
        return tree_util.tree_unflatten(o_tree, o_leaves)

    def out_specs(raw):
        o_axes = _axes_per_leaf(out_axes, raw, "out_axes")
        ys = tree_util.tree_leaves(raw)
        return [spec(None if a is None else int(a) % np.ndim(y)) for y, a in zip(ys, o_axes)]

    in_specs = tuple(spec(a) for a in axes)
    body.__name__ = getattr(fun, "__name__", "pmap")
    return _ShardMapped(body, mesh, in_specs, out_specs, check_vma=False, local=True)
