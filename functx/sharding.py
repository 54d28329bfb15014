"""``functx.sharding``: meshes of devices and how arrays are laid out over them (``jax.sharding``).

A ``Mesh`` is an n-dimensional array of devices with a name per axis; a ``PartitionSpec`` (``P``)
says, per array dimension, which mesh axes split it (None: not split); a ``NamedSharding`` pairs
the two. ``functx.shard_map`` reads them: the body runs once per device of the mesh, on that
device's block of each input, with the mesh axes as named axes for the collectives.

Where the devices come from:

* In one process, ``functx.devices()`` has one CPU. As with JAX, a mesh of several CPU "devices"
  needs ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` in the environment: then
  ``make_mesh`` (and ``host_devices()``) give N CPU devices, ``CpuDevice(id=0)`` ... ``id=N-1``, all
  of them this process's host, and ``shard_map`` runs the body over them with ``vmap``.
* After ``functx.distributed.initialize()``, ``functx.devices()`` lists one device per process and
  ``shard_map`` runs each process's block in that process, with ``torch.distributed`` between them.

Arrays are not split in memory: ``device_put(x, NamedSharding(...))`` gives the whole (global)
array on this process's device, and ``shard_map`` cuts out the block each device works on.
"""

from __future__ import annotations

import collections
import enum
import functools
import math
import os
import re
import threading

import numpy as np

from functx import core as _core, distributed, dtypes, tree_util
from functx.devices import device as _device, transfer as _transfer
from functx.errors import (
    FunctxTypeError,
    FunctxValueError,
    JaxRuntimeError,
    missing_name_hook as _missing_name_hook,
)
from functx.lax import _staging

__all__ = [
    "AbstractDevice",
    "AbstractMesh",
    "AxisType",
    "ManualAxisType",
    "Mesh",
    "NamedSharding",
    "PartitionSpec",
    "Sharding",
    "SingleDeviceSharding",
    "auto_axes",
    "explicit_axes",
    "get_abstract_mesh",
    "get_mesh",
    "make_single_device_sharding",
    "reshard",
    "set_mesh",
    "use_abstract_mesh",
]


# --- devices --------------------------------------------------------------------------------------
_HOST_FLAG = re.compile(r"--xla_force_host_platform_device_count=(\d+)")
_host_cache: dict[int, list] = {}


def host_devices() -> list:
    """The CPU devices of this process: ``CpuDevice(id=0)`` alone, or N of them when ``XLA_FLAGS``
    has ``--xla_force_host_platform_device_count=N`` (as JAX reads it). They are all this
    process's host; only meshes tell them apart."""
    m = _HOST_FLAG.search(os.environ.get("XLA_FLAGS", ""))
    n = int(m.group(1)) if m else 1
    if n not in _host_cache:
        _host_cache[n] = [_device.CPU] + [_device.CpuDevice(i) for i in range(1, n)]
    return list(_host_cache[n])


def mesh_devices() -> list:
    """The devices ``make_mesh`` draws from: every process's device in a distributed run, else
    the host devices when ``XLA_FLAGS`` asks for several, else ``functx.devices()``."""
    if distributed.is_initialized():
        return _device.devices()
    if _HOST_FLAG.search(os.environ.get("XLA_FLAGS", "")):
        return host_devices()
    return _device.devices()


# --- axis types -----------------------------------------------------------------------------------
class AxisType(enum.Enum):
    """How a mesh axis is partitioned (``jax.sharding.AxisType``): functx records it for JAX's
    reprs; ``shard_map`` treats every axis as manual inside its body.

    Example:
      >>> from functx.sharding import AxisType
      >>> list(AxisType)
      [Auto, Explicit, Manual]
    """

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self):
        return self.name


# --- PartitionSpec --------------------------------------------------------------------------------
class _Unconstrained:
    def __repr__(self):
        return "UNCONSTRAINED"


_UNCONSTRAINED = _Unconstrained()


class PartitionSpec:
    """How each dimension of an array is split over mesh axes (``jax.sharding.PartitionSpec``,
    also ``functx.P``): one entry per leading dimension, each None (not split), a mesh axis name,
    or a tuple of names (split over their product, the first name major). Missing trailing
    entries mean None.

    Arguments:
      *partitions: the entries.
    Returns:
      A ``PartitionSpec``.
    Example:
      >>> from functx.sharding import PartitionSpec as P
      >>> spec = P("x", None, ("x", "y"))
      >>> spec, len(spec), spec[0]
      (P('x', None, ('x', 'y')), 3, 'x')
    """

    UNCONSTRAINED = _UNCONSTRAINED
    __match_args__ = ("_partitions",)

    def __init__(self, *partitions, unreduced=frozenset(), reduced=frozenset()):
        self._partitions = tuple(
            p[0]
            if isinstance(p, (tuple, list)) and len(p) == 1
            else tuple(p)
            if isinstance(p, list)
            else p
            for p in partitions
        )
        self.unreduced = frozenset(unreduced)
        self.reduced = frozenset(reduced)

    def __repr__(self):
        inner = ", ".join(repr(p) for p in self._partitions)
        return f"P({inner},)" if len(self._partitions) == 1 else f"P({inner})"

    __str__ = __repr__

    def __len__(self):
        return len(self._partitions)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return PartitionSpec(*self._partitions[i])
        return self._partitions[i]

    def __iter__(self):
        return iter(self._partitions)

    def __eq__(self, other):
        if isinstance(other, PartitionSpec):
            return self._partitions == other._partitions and self.unreduced == other.unreduced
        return NotImplemented

    def __hash__(self):
        return hash((self._partitions, self.unreduced))

    def __add__(self, other):
        if isinstance(other, (PartitionSpec, tuple)):
            return PartitionSpec(*self._partitions, *other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, tuple):
            return PartitionSpec(*other, *self._partitions)
        return NotImplemented

    def index(self, value):
        return self._partitions.index(value)

    def count(self, value):
        return self._partitions.count(value)

    @property
    def partitions(self):
        return self._partitions

    def axes(self, ndim: int | None = None) -> list[tuple]:
        """The mesh axes splitting each dimension, as tuples (padded with () to ``ndim``)."""
        out = [
            () if p is None or p is _UNCONSTRAINED else (p,) if isinstance(p, str) else tuple(p)
            for p in self._partitions
        ]
        if ndim is not None:
            out += [()] * (ndim - len(out))
        return out


P = PartitionSpec


class DuplicateSpecError(Exception):
    """A ``PartitionSpec`` that names one mesh axis for two dimensions (JAX's class of the same
    name, an ``Exception``)."""


# --- Mesh -----------------------------------------------------------------------------------------
_mesh_stack = threading.local()


class Mesh:
    """An n-dimensional array of devices with a name per axis (``jax.sharding.Mesh``).

    Arguments:
      devices: an array (or nested sequence) of devices whose rank is the number of axis names.
      axis_names: a name per axis (a single string for one axis).
      axis_types: an ``AxisType`` per axis (default: all ``Auto``).
    Returns:
      A ``Mesh``; ``with mesh:`` makes it the mesh ``shard_map(mesh=None)`` uses.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> from functx.sharding import Mesh
      >>> mesh = Mesh(np.array(functx.devices("cpu")).reshape(1, 1), ("x", "y"))
      >>> mesh
      Mesh(axis_sizes=(1, 1), axis_names=('x', 'y'), axis_types=(Auto, Auto))
      >>> dict(mesh.shape)
      {'x': 1, 'y': 1}
    """

    def __init__(self, devices, axis_names, axis_types=None):
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        arr = np.empty(np.shape(np.array(devices, dtype=object)), dtype=object)
        arr[...] = (
            np.array(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
        )
        if arr.ndim != len(axis_names):
            raise ValueError(
                "Mesh requires the ndim of its first argument (`devices`) to equal the length of "
                f"its second argument (`axis_names`), but got devices.ndim == {arr.ndim} and "
                f"len(axis_names) == {len(axis_names)}."
            )
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(axis_names)
        axis_types = tuple(axis_types)
        if len(axis_types) != len(axis_names):
            raise ValueError(
                f"Number of axis names should match the number of axis_types. Got axis_names="
                f"{axis_names} and axis_types={axis_types}"
            )
        arr.flags.writeable = False
        self.devices = arr
        self.axis_names = axis_names
        self.axis_types = axis_types

    # shape --------------------------------------------------------------------------------------
    @property
    def shape(self):
        return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self):
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def empty(self) -> bool:
        return self.devices.ndim == 0 or self.devices.size == 0

    @property
    def device_ids(self):
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self):
        me = _device.process_index()
        return [d for d in self.devices.flat if d.process_index == me]

    @property
    def is_multi_process(self) -> bool:
        return len({d.process_index for d in self.devices.flat}) > 1

    @property
    def abstract_mesh(self) -> AbstractMesh:
        """This mesh without its devices: its axis sizes, names and types, and the kind of its
        devices."""
        if self.empty:
            return _EMPTY_ABSTRACT
        first = next(iter(self.devices.flat), None)
        device = None
        if first is not None:
            kind = getattr(first, "device_kind", first.platform)
            device = AbstractDevice(kind, getattr(first, "num_cores", None), first.platform)
        return AbstractMesh(
            self.axis_sizes, self.axis_names, self.axis_types, abstract_device=device
        )

    # identity -----------------------------------------------------------------------------------
    def _key(self):
        return (
            self.axis_names,
            self.devices.shape,
            tuple(map(id, self.devices.flat)),
            self.axis_types,
        )

    def __eq__(self, other):
        if not isinstance(other, Mesh):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (
            f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
            f"axis_types={_types_str(self.axis_types)})"
        )

    def __str__(self):
        sizes = ", ".join(f"{n!r}: {s}" for n, s in self.shape_tuple)
        return f"Mesh({sizes}, axis_types={_types_str(self.axis_types)})"

    # context ------------------------------------------------------------------------------------
    def __enter__(self):
        stack = getattr(_mesh_stack, "meshes", None)
        if stack is None:
            stack = _mesh_stack.meshes = []
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _mesh_stack.meshes.pop()
        return False


def _types_str(types) -> str:
    inner = ", ".join(t.name for t in types)
    return f"({inner},)" if len(types) == 1 else f"({inner})"


def current_mesh():
    """The innermost mesh of a ``with mesh:`` block in this thread, else the one ``set_mesh``
    set, or None."""
    stack = getattr(_mesh_stack, "meshes", None)
    if stack:
        return stack[-1]
    mesh = getattr(_context, "mesh", None)
    return mesh if mesh is not None and not mesh.empty else None


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
    """A mesh of the given shape over the available devices (``jax.make_mesh``).

    Arguments:
      axis_shapes: the size of each axis.
      axis_names: a name per axis.
      axis_types: an ``AxisType`` per axis (default: all ``Explicit``, as JAX).
      devices: the devices to use (default: ``functx.devices()``; on the CPU the N host devices
        of ``XLA_FLAGS=--xla_force_host_platform_device_count=N``; in a distributed run one
        device per process). The first ``prod(axis_shapes)`` are taken, in order.
    Returns:
      A ``Mesh``.
    Raises:
      ValueError: fewer devices than the mesh needs, or shapes and names of different lengths.
    Example:
      >>> import functx
      >>> functx.make_mesh((1,), ("batch",))
      Mesh(axis_sizes=(1,), axis_names=('batch',), axis_types=(Explicit,))
    """
    axis_shapes = tuple(int(s) for s in axis_shapes)
    if isinstance(axis_names, str):
        axis_names = (axis_names,)
    axis_names = tuple(axis_names)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(
            "Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
            f"second argument (`axis_names`), but got devices.ndim == {len(axis_shapes)} and "
            f"len(axis_names) == {len(axis_names)}."
        )
    devs = list(mesh_devices() if devices is None else devices)
    need = math.prod(axis_shapes)
    if len(devs) < need:
        raise ValueError(
            f"Number of devices {len(devs)} must be >= the product of mesh_shape {axis_shapes}"
        )
    arr = np.empty(need, dtype=object)
    arr[:] = devs[:need]
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(axis_names)
    return Mesh(arr.reshape(axis_shapes), axis_names, axis_types)


# --- shardings ------------------------------------------------------------------------------------
class Sharding:
    """The base class of shardings (``jax.sharding.Sharding``).

    Example:
      >>> import functx
      >>> from functx.sharding import Sharding, SingleDeviceSharding
      >>> issubclass(SingleDeviceSharding, Sharding)
      True
    """

    memory_kind = "device"

    @property
    def device_set(self) -> set:
        raise NotImplementedError

    @property
    def num_devices(self) -> int:
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set:
        me = _device.process_index()
        return {d for d in self.device_set if d.process_index == me}

    @property
    def is_fully_addressable(self) -> bool:
        return self.addressable_devices == self.device_set

    def devices_indices_map(self, global_shape) -> dict:
        raise NotImplementedError

    def addressable_devices_indices_map(self, global_shape) -> dict:
        me = _device.process_index()
        return {
            d: i for d, i in self.devices_indices_map(global_shape).items() if d.process_index == me
        }

    def _place(self, x):
        raise NotImplementedError


class SingleDeviceSharding(Sharding):
    """An array wholly on one device (``jax.sharding.SingleDeviceSharding``).

    Arguments:
      device: a ``Device``.
      memory_kind: None or "device".
    Returns:
      A ``SingleDeviceSharding``.
    Example:
      >>> import functx
      >>> from functx.sharding import SingleDeviceSharding
      >>> SingleDeviceSharding(functx.devices("cpu")[0])
      SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """

    def __init__(self, device, *, memory_kind=None):
        _check_memory_kind(memory_kind)
        self._device = device

    def __repr__(self):
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"

    def __eq__(self, other):
        if not isinstance(other, SingleDeviceSharding):
            return NotImplemented
        return self._device is other._device

    def __hash__(self):
        return hash(("single", id(self._device)))

    @property
    def device_set(self) -> set:
        return {self._device}

    @property
    def is_fully_replicated(self) -> bool:
        return True

    def shard_shape(self, global_shape) -> tuple:
        return tuple(global_shape)

    def devices_indices_map(self, global_shape) -> dict:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def _place(self, x):
        return _transfer.device_put(x, _local_of(self._device))


class NamedSharding(Sharding):
    """An array laid out over a mesh by a ``PartitionSpec`` (``jax.sharding.NamedSharding``).

    Arguments:
      mesh: a ``Mesh``.
      spec: a ``PartitionSpec`` naming axes of ``mesh``.
      memory_kind: None or "device".
    Returns:
      A ``NamedSharding``.
    Raises:
      ValueError: ``spec`` names an axis ``mesh`` lacks; ``DuplicateSpecError`` when it names
      one axis twice.
    Example:
      >>> import functx
      >>> from functx.sharding import NamedSharding, PartitionSpec as P
      >>> mesh = functx.make_mesh((1,), ("x",))
      >>> s = NamedSharding(mesh, P("x"))
      >>> s
      NamedSharding(mesh=Mesh('x': 1, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)
      >>> s.shard_shape((4, 3))
      (4, 3)
    """

    def __init__(self, mesh, spec, *, memory_kind=None):
        _check_memory_kind(memory_kind)
        if not isinstance(spec, PartitionSpec):
            raise TypeError(
                f"NamedSharding: spec must be a PartitionSpec, got {type(spec).__name__} {spec!r}"
            )
        self.mesh = mesh
        self.spec = spec
        check_spec(spec, mesh)

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh}, spec={self.spec}, memory_kind={self.memory_kind})"

    def __eq__(self, other):
        if not isinstance(other, NamedSharding):
            return NotImplemented
        return self.mesh == other.mesh and self.spec == other.spec

    def __hash__(self):
        return hash((self.mesh, self.spec))

    @property
    def device_set(self) -> set:
        return set(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.shape[a] == 1 for axes in self.spec.axes() for a in axes)

    def shard_shape(self, global_shape) -> tuple:
        global_shape = tuple(global_shape)
        out = []
        for d, (size, axes) in enumerate(zip(global_shape, self.spec.axes(len(global_shape)))):
            n = math.prod(self.mesh.shape[a] for a in axes)
            if size % n:
                raise ValueError(
                    f"Sharding {self!r} implies that array axis {d} is partitioned {n} times, but "
                    f"the dimension size is {size} (full shape: {global_shape})"
                )
            out.append(size // n)
        return tuple(out)

    def devices_indices_map(self, global_shape) -> dict:
        global_shape = tuple(global_shape)
        block = self.shard_shape(global_shape)
        names = self.mesh.axis_names
        out = {}
        for pos in np.ndindex(*self.mesh.axis_sizes):
            coord = dict(zip(names, pos))
            idx = []
            for b, axes in zip(block, self.spec.axes(len(global_shape))):
                k = 0
                for a in axes:
                    k = k * self.mesh.shape[a] + coord[a]
                idx.append(slice(None) if not axes else slice(k * b, (k + 1) * b))
            out[self.mesh.devices[pos]] = tuple(idx)
        return out

    def _place(self, x):
        me = _device.process_index()
        local = [d for d in self.mesh.devices.flat if d.process_index == me]
        if not local:
            raise ValueError(f"device_put: the mesh of {self!r} has no device of process {me}")
        if hasattr(x, "shape"):
            self.shard_shape(np.shape(x))
        return _transfer.device_put(x, _local_of(local[0]))


def _local_of(device):
    """The device object arrays use for ``device`` (a process device's local device; one of
    the host devices: the CPU)."""
    local = getattr(device, "local", None)
    if isinstance(device, distributed.ProcessDevice):
        if local is None:
            raise ValueError(f"{device!r} belongs to process {device.process_index}, not this one")
        return local
    if device.platform == "cpu":
        return _device.CPU
    return device


def _check_memory_kind(kind):
    if kind not in (None, "device"):
        raise ValueError(f"functx has only device memory; got memory_kind={kind!r}")


def check_spec(spec: PartitionSpec, mesh: Mesh) -> None:
    """Raise JAX's errors for a spec that names an axis ``mesh`` lacks, or one axis twice."""
    seen = set()
    for axes in spec.axes():
        for a in axes:
            if a not in mesh.shape:
                raise ValueError(
                    f"Resource axis: {a} of {spec} is not found in mesh: {mesh.axis_names}."
                )
            if a in seen:
                raise DuplicateSpecError(
                    "A single NamedSharding spec specification can map every mesh axis to at most "
                    f"one positional dimension, but {spec} has duplicate entries for `{a}`"
                )
            seen.add(a)


# --- the mesh in context (JAX's sharding in types) ------------------------------------------------
# functx arrays are whole on one device and carry no sharding in their types: these names keep
# JAX's mesh context and check their arguments as JAX does, and otherwise compute the identity.
class _ByKey:
    """Equality and hashing by ``_key()``: the abstract devices, meshes and axis types."""

    def __eq__(self, other):
        return isinstance(other, type(self)) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())


class AbstractDevice(_ByKey):
    """The kind of the devices of a mesh, without the devices (``jax.sharding.AbstractDevice``).

    Arguments:
      device_kind: the devices' kind ("cpu", a GPU's name).
      num_cores: their number of cores, or None.
      platform: "cpu" or "gpu".
    Returns:
      An ``AbstractDevice``.
    Example:
      >>> from functx.sharding import AbstractDevice
      >>> AbstractDevice("cpu", None, "cpu")
      AbstractDevice(device_kind=cpu, num_cores=None, platform=cpu)
    """

    def __init__(self, device_kind: str, num_cores: int | None, platform: str) -> None:
        self.device_kind, self.num_cores, self.platform = device_kind, num_cores, platform

    def _key(self):
        return (self.device_kind, self.num_cores, self.platform)

    def __repr__(self):
        return (
            f"AbstractDevice(device_kind={self.device_kind}, num_cores={self.num_cores}, "
            f"platform={self.platform})"
        )


class AbstractMesh(_ByKey):
    """A mesh's shape without its devices (``jax.sharding.AbstractMesh``): axis sizes, names and
    types. ``Mesh.abstract_mesh`` gives a mesh's; ``use_abstract_mesh`` puts one in context.

    Arguments:
      axis_sizes: the size of each axis.
      axis_names: a name per axis.
      axis_types: an ``AxisType`` per axis, or one for all (default: all ``Auto``).
      abstract_device: the devices' ``AbstractDevice``, or None.
    Returns:
      An ``AbstractMesh``.
    Raises:
      ValueError: sizes, names and types of different lengths.
    Example:
      >>> from functx.sharding import AbstractMesh, AxisType
      >>> m = AbstractMesh((2, 3), ("x", "y"))
      >>> m, m.size
      (AbstractMesh('x': 2, 'y': 3, axis_types=(Auto, Auto)), 6)
      >>> m.update_axis_types({"x": AxisType.Explicit})
      AbstractMesh('x': 2, 'y': 3, axis_types=(Explicit, Auto))
    """

    def __init__(self, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
        self.axis_sizes = tuple(int(n) for n in axis_sizes)
        self.axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(self.axis_names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(self.axis_names)
        self.axis_types = tuple(axis_types)
        if not len(self.axis_sizes) == len(self.axis_names) == len(self.axis_types):
            raise FunctxValueError(
                f"AbstractMesh: axis_sizes {self.axis_sizes}, axis_names {self.axis_names} and "
                f"axis_types {self.axis_types} must have one entry per axis"
            )
        self.abstract_device = abstract_device

    @property
    def shape(self):
        return collections.OrderedDict(self.shape_tuple)

    @property
    def shape_tuple(self):
        return tuple(zip(self.axis_names, self.axis_sizes))

    @property
    def size(self) -> int:
        return math.prod(self.axis_sizes)

    @property
    def empty(self) -> bool:
        return not self.axis_names

    @property
    def abstract_mesh(self) -> AbstractMesh:
        return self

    def _axes_of(self, kind):
        return tuple(n for n, t in zip(self.axis_names, self.axis_types) if t == kind)

    auto_axes = property(lambda self: self._axes_of(AxisType.Auto))
    explicit_axes = property(lambda self: self._axes_of(AxisType.Explicit))
    manual_axes = property(lambda self: self._axes_of(AxisType.Manual))
    are_all_axes_auto = property(lambda self: self.auto_axes == self.axis_names)
    are_all_axes_explicit = property(lambda self: self.explicit_axes == self.axis_names)
    are_all_axes_manual = property(lambda self: self.manual_axes == self.axis_names)

    def update(self, axis_sizes=None, axis_names=None, axis_types=None, **kw) -> AbstractMesh:
        """A copy with the given fields replaced."""
        return AbstractMesh(
            self.axis_sizes if axis_sizes is None else axis_sizes,
            self.axis_names if axis_names is None else axis_names,
            self.axis_types if axis_types is None else axis_types,
            abstract_device=kw.get("abstract_device", self.abstract_device),
        )

    def update_axis_types(self, name_to_type: dict) -> AbstractMesh:
        """A copy with the axes named in ``name_to_type`` of the types it gives."""
        for n in name_to_type:
            if n not in self.axis_names:
                raise FunctxValueError(f"axis {n!r} is not an axis of {self}")
        types = tuple(name_to_type.get(n, t) for n, t in zip(self.axis_names, self.axis_types))
        return self.update(axis_types=types)

    def _key(self):
        return (self.axis_sizes, self.axis_names, self.axis_types, self.abstract_device)

    def __repr__(self):
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        sizes = ", ".join(f"{n!r}: {s}" for n, s in self.shape_tuple)
        dev = self.abstract_device
        tail = "" if dev is None else repr(dev)[len("AbstractDevice(") : -1]
        return f"AbstractMesh({sizes}, axis_types={_types_str(self.axis_types)}" + (
            f", {tail})" if tail else ")"
        )


class ManualAxisType(_ByKey):
    """The SPMD value type of an array in a ``shard_map`` body over manual axes
    (``jax.sharding.ManualAxisType``): the axes it varies over, and those it is unreduced or
    reduced over. functx records it (its ``shard_map`` runs with the type checks off).

    Arguments:
      varying, unreduced, reduced: sets of mesh axis names.
    Returns:
      A ``ManualAxisType``.
    Example:
      >>> from functx.sharding import ManualAxisType
      >>> ManualAxisType(varying={"x"})
      ManualAxisType(varying=frozenset({'x'}), unreduced=frozenset(), reduced=frozenset())
    """

    __slots__ = ("varying", "unreduced", "reduced")

    def __init__(self, *, varying=frozenset(), unreduced=frozenset(), reduced=frozenset()):
        self.varying = frozenset(varying)
        self.unreduced = frozenset(unreduced)
        self.reduced = frozenset(reduced)

    def _key(self):
        return (self.varying, self.unreduced, self.reduced)

    def __repr__(self):
        return (
            f"ManualAxisType(varying={self.varying}, unreduced={self.unreduced}, "
            f"reduced={self.reduced})"
        )


_EMPTY_ABSTRACT = AbstractMesh((), ())
_EMPTY_MESH = Mesh(np.empty((), dtype=object), ())  # (JAX's empty mesh: no axes)
_context = threading.local()  # .mesh (set_mesh's) and .abstract (the abstract mesh in context)


def get_abstract_mesh() -> AbstractMesh:
    """The abstract mesh in context in this thread (``jax.sharding.get_abstract_mesh``): the one
    of ``use_abstract_mesh`` or ``set_mesh``, else an empty one.

    Arguments:
      none.
    Returns:
      An ``AbstractMesh``.
    Example:
      >>> import functx
      >>> functx.sharding.get_abstract_mesh()
      AbstractMesh((), axis_types=())
      >>> with functx.sharding.use_abstract_mesh(functx.sharding.AbstractMesh((2,), ("x",))):
      ...     functx.sharding.get_abstract_mesh()
      AbstractMesh('x': 2, axis_types=(Auto,))
    """
    return getattr(_context, "abstract", None) or _EMPTY_ABSTRACT


def get_mesh() -> Mesh:
    """The mesh ``set_mesh`` set in this thread, or an empty mesh (``jax.sharding.get_mesh``).

    Arguments:
      none.
    Returns:
      A ``Mesh``.
    Example:
      >>> import functx
      >>> mesh = functx.make_mesh((1,), ("x",))
      >>> with functx.sharding.set_mesh(mesh):
      ...     functx.sharding.get_mesh() == mesh
      True
    """
    return getattr(_context, "mesh", None) or _EMPTY_MESH


class _Swap:
    """Sets the thread's mesh context now; restores the previous one on leaving a ``with``."""

    def __init__(self, **values):
        self._prev = {k: getattr(_context, k, None) for k in values}
        for k, v in values.items():
            setattr(_context, k, v)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        for k, v in self._prev.items():
            setattr(_context, k, v)
        return False


class set_mesh(_Swap):
    """Make ``mesh`` this thread's mesh (``jax.set_mesh``, also ``functx.sharding.set_mesh``):
    called plainly, it stays set; as ``with set_mesh(mesh):`` the previous one comes back at the
    block's end. With a mesh set, ``PartitionSpec`` objects stand for ``NamedSharding`` objects
    over it (``reshard``, ``with_sharding_constraint``, ``shard_map``'s mesh).

    Arguments:
      mesh: a ``Mesh``, or None (no mesh).
    Returns:
      A context manager.
    Raises:
      ValueError: ``mesh`` is not a ``Mesh``, has ``Manual`` axes, or a ``jit`` is tracing.
    Example:
      >>> import functx
      >>> with functx.set_mesh(functx.make_mesh((1,), ("x",))):
      ...     functx.sharding.get_abstract_mesh().axis_names
      ('x',)
    """

    def __init__(self, mesh):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise FunctxValueError(
                f"Expected mesh of type `functx.sharding.Mesh`. Got {type(mesh)}"
            )
        if _core.is_tracing():
            raise FunctxValueError("`set_mesh` can only be used outside of `functx.jit`.")
        if mesh is not None and AxisType.Manual in mesh.axis_types:
            raise FunctxValueError(
                f"mesh {mesh} has Manual axes, which set_mesh does not take: use "
                "functx.shard_map to enter Manual mode"
            )
        abstract = None if mesh is None else mesh.abstract_mesh
        super().__init__(mesh=mesh, abstract=abstract)


class use_abstract_mesh(_Swap):
    """``with use_abstract_mesh(mesh):`` makes ``mesh`` the abstract mesh in context in this
    thread (``jax.sharding.use_abstract_mesh``).

    Arguments:
      mesh: an ``AbstractMesh``.
    Returns:
      A context manager.
    Raises:
      ValueError: ``mesh`` is not an ``AbstractMesh``.
    Example:
      >>> import functx
      >>> from functx.sharding import AbstractMesh, get_abstract_mesh, use_abstract_mesh
      >>> with use_abstract_mesh(AbstractMesh((4,), ("data",))):
      ...     get_abstract_mesh().shape_tuple
      (('data', 4),)
    """

    def __init__(self, mesh):
        if not isinstance(mesh, AbstractMesh):
            raise FunctxValueError(
                f"Expected mesh of type `functx.sharding.AbstractMesh`. Got type: {type(mesh)}"
            )
        super().__init__(abstract=mesh)


def make_single_device_sharding(device, *, memory_kind=None) -> SingleDeviceSharding:
    """A sharding that puts arrays wholly on ``device``
    (``jax.sharding.make_single_device_sharding``).

    Arguments:
      device: a ``Device``.
      memory_kind: None or "device".
    Returns:
      A ``SingleDeviceSharding``.
    Example:
      >>> import functx
      >>> functx.sharding.make_single_device_sharding(functx.devices("cpu")[0])
      SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """
    return SingleDeviceSharding(device, memory_kind=memory_kind)


def _context_mesh():
    """The mesh a bare ``PartitionSpec`` refers to: ``with mesh:``'s or ``set_mesh``'s, else the
    abstract mesh in context (None when neither)."""
    mesh = current_mesh()
    if mesh is not None:
        return mesh
    abstract = get_abstract_mesh()
    return None if abstract.empty else abstract


def _spec_sharding(api, spec, mesh, error=FunctxValueError):
    """A ``PartitionSpec`` leaf checked against ``mesh``'s axes (JAX's errors; ``error`` when
    there is no mesh)."""
    if mesh is None:
        raise error(
            f"{api}: a PartitionSpec ({spec}) needs a mesh in context: pass a NamedSharding, or "
            "set one with functx.set_mesh(mesh)"
        )
    check_spec(spec, mesh)
    return spec


def _prefix_pairs(api, x, shardings):
    """(sharding, leaf) pairs, ``shardings`` a tree prefix of ``x`` (ValueError otherwise)."""
    leaf = lambda v: v is None or isinstance(v, (Sharding, PartitionSpec))  # noqa: E731
    try:
        pairs = tree_util.tree_map(
            lambda s, sub: [(s, v) for v in tree_util.tree_leaves(sub)], shardings, x, is_leaf=leaf
        )
    except (ValueError, TypeError) as e:
        raise FunctxValueError(
            f"{api}: shardings must be a tree prefix of the value's pytree: {e}"
        ) from None
    return [
        p for ps in tree_util.tree_leaves(pairs, is_leaf=lambda v: isinstance(v, list)) for p in ps
    ]


def _fits(api, sharding, v):
    """JAX's check that ``v`` (an array) can be laid out by ``sharding``."""
    shape = np.shape(v)
    if isinstance(sharding, NamedSharding):
        if len(sharding.spec) > len(shape):
            raise FunctxValueError(
                f"{api}: {sharding} has {len(sharding.spec)} entries, more than the rank of "
                f"its array (shape {shape})"
            )
        sharding.shard_shape(shape)


def _check_constraint(x, shardings):
    api = "with_sharding_constraint"
    mesh = _context_mesh()
    for s, v in _prefix_pairs(api, x, shardings):
        if s is None:
            raise FunctxValueError(
                f"{api}: got sharding None, which is not allowed: pass Sharding objects (or "
                "PartitionSpec objects with a mesh in context)"
            )
        if isinstance(s, PartitionSpec):  # (JAX's check of the array's typed sharding under
            _spec_sharding(api, s, mesh, JaxRuntimeError)  # Explicit axes is not made)
            if isinstance(mesh, Mesh):
                _fits(api, NamedSharding(mesh, s), v)
            continue
        if not isinstance(s, Sharding):
            raise FunctxTypeError(
                f"{api}: shardings leaves must be Sharding or PartitionSpec objects, got {s!r}"
            )
        if isinstance(s, NamedSharding):
            types = dict(zip(s.mesh.axis_names, s.mesh.axis_types))
            explicit = [a for axes in s.spec.axes() for a in axes if types[a] == AxisType.Explicit]
            if explicit:
                raise FunctxValueError(
                    f"{api}: the spec of a NamedSharding can only refer to Auto axes of its mesh; "
                    f"{s.spec} names the Explicit axes {explicit} (use functx.sharding.reshard)"
                )
        _fits(api, s, v)


_staging.SHARDING_CHECKS["with_sharding_constraint"] = _check_constraint


def reshard(xs, out_shardings):
    """``xs`` laid out by ``out_shardings`` (``jax.reshard``, also ``functx.sharding.reshard``).

    functx arrays are whole on one device and carry no sharding: the values are ``xs`` (their
    leaves as Arrays), after JAX's checks: ``out_shardings`` a tree prefix of ``xs`` whose
    leaves are ``Sharding`` objects, or ``PartitionSpec`` objects with a mesh in context.

    Arguments:
      xs: an array or a pytree of arrays.
      out_shardings: a ``Sharding`` or ``PartitionSpec``, or a pytree of them, a prefix of
        ``xs``'s.
    Returns:
      ``xs``.
    Raises:
      ValueError: a None sharding, a ``PartitionSpec`` with no mesh in context or naming an axis
      it lacks, or shardings that are not a prefix of ``xs``.

    Differences from JAX: the result has no ``.sharding`` (functx arrays carry none).

    Example:
      >>> import functx, functx.numpy as jnp
      >>> from functx.sharding import PartitionSpec as P
      >>> with functx.set_mesh(functx.make_mesh((1,), ("x",))):
      ...     functx.reshard(jnp.arange(4.0), P("x"))
      Array([0., 1., 2., 3.], dtype=float32)
    """
    check_layout("reshard", xs, out_shardings)
    return _staging._as_arrays(xs)


def check_layout(api: str, xs, shardings, *, none_ok: bool = False) -> None:
    """JAX's checks of shardings for arrays (``reshard``'s, ``pjit``'s): ``shardings`` a tree
    prefix of ``xs`` whose leaves are ``Sharding`` objects, ``PartitionSpec`` objects naming axes
    of the mesh in context, or (``none_ok``) None."""
    mesh = _context_mesh()
    for s, _ in _prefix_pairs(api, xs, shardings):
        if s is None:
            if none_ok:
                continue
            raise FunctxValueError(
                f"{api}: shardings must be non-None and have a non-empty mesh. Got None."
            )
        if isinstance(s, PartitionSpec):
            _spec_sharding(api, s, mesh)
        elif not isinstance(s, Sharding):
            raise FunctxTypeError(f"{api}: shardings leaves must be Sharding objects, got {s!r}")


def _with_axis_types(api, f, axes, kind, shardings, where_):
    """``f`` run with the mesh axes ``axes`` (all when None) of type ``kind`` in context, its
    inputs (``where_="in"``) or outputs (``"out"``) checked against ``shardings`` as ``reshard``
    does. With no mesh in context, ``f`` itself."""

    @functools.wraps(f)
    def run(*args, **kwargs):
        abstract = get_abstract_mesh()
        if abstract.empty:
            return f(*args, **kwargs)
        if shardings is None:
            raise FunctxTypeError(f"{api}: missing required keyword argument: '{where_}_sharding'")
        names = abstract.axis_names if axes is None else (axes,) if isinstance(axes, str) else axes
        if where_ == "in":
            args = reshard(args, shardings) if not kwargs else args
        with use_abstract_mesh(abstract.update_axis_types(dict.fromkeys(names, kind))):
            out = f(*args, **kwargs)
        return reshard(out, shardings) if where_ == "out" else out

    return run


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """``f`` run with mesh axes of type ``Auto`` (``jax.sharding.auto_axes``): inside, the
    compiler chooses how arrays are split over ``axes``; the outputs are then laid out by
    ``out_sharding``. A decorator when ``f`` is omitted.

    functx arrays are not split: the values are ``f``'s, computed with ``axes`` of type Auto in
    the abstract mesh in context (``get_abstract_mesh``), the outputs checked as ``reshard``
    checks them. With no mesh in context, this is ``f``.

    Arguments:
      f: the function.
      axes: a mesh axis name or a tuple of them (default: all axes).
      out_sharding: the outputs' shardings (required with a mesh in context).
    Returns:
      The wrapped function.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> from functx.sharding import PartitionSpec as P, auto_axes, get_abstract_mesh
      >>> with functx.set_mesh(functx.make_mesh((1,), ("x",))):
      ...     auto_axes(lambda v: v * 2, out_sharding=P("x"))(jnp.arange(2.0))
      Array([0., 2.], dtype=float32)
    """
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)
    return _with_axis_types("auto_axes", f, axes, AxisType.Auto, out_sharding, "out")


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """``f`` run with mesh axes of type ``Explicit`` (``jax.sharding.explicit_axes``): its
    positional inputs are first laid out by ``in_sharding``. A decorator when ``f`` is omitted.

    functx arrays are not split: the values are ``f``'s, computed with ``axes`` of type
    Explicit in the abstract mesh in context, the inputs checked as ``reshard`` checks them.
    With no mesh in context, this is ``f``.

    Arguments:
      f: the function.
      axes: a mesh axis name or a tuple of them (default: all axes).
      in_sharding: the positional inputs' shardings (required with a mesh in context).
    Returns:
      The wrapped function.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> from functx.sharding import PartitionSpec as P, explicit_axes
      >>> with functx.set_mesh(functx.make_mesh((1,), ("x",))):
      ...     explicit_axes(lambda v: v + 1, in_sharding=(P("x"),))(jnp.arange(2.0))
      Array([1., 2.], dtype=float32)
    """
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)
    return _with_axis_types("explicit_axes", f, axes, AxisType.Explicit, in_sharding, "in")


# --- device_put -----------------------------------------------------------------------------------
def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Copy a pytree of arrays to a device or a sharding (``jax.device_put``).

    Arguments:
      x: arrays, NumPy arrays, scalars or lists, in any pytree.
      device: a ``Device`` (or "cpu" / "gpu" / "gpu:N"), a ``Sharding`` (a ``NamedSharding``
        puts the whole array on this process's device of the mesh, after checking that its
        dimensions divide), a pytree of those matching ``x``, or None (functx arrays stay where
        they are; everything else goes to the default device).
      src, donate, may_alias: accepted for JAX compatibility (functx copies unless the array is
        already on the device).
    Returns:
      The same pytree of ``functx.Array``.

    Differences from JAX: a ``NamedSharding`` checks that the dimensions divide and puts the
    whole array on this process's device of the mesh (functx never splits an array in memory;
    the result has no ``.sharding``).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> from functx.sharding import NamedSharding, PartitionSpec as P
      >>> s = NamedSharding(functx.make_mesh((1,), ("x",)), P("x"))
      >>> functx.device_put(np.arange(3.0, dtype=np.float32), s)
      Array([0., 1., 2.], dtype=float32)
    """
    if isinstance(device, Sharding):
        return tree_util.tree_map(device._place, x)
    if device is None or isinstance(device, (_device.Device, str)):
        if isinstance(device, distributed.ProcessDevice):
            device = _local_of(device)
        return _transfer.device_put(x, device, src=src, donate=donate, may_alias=may_alias)
    if tree_util.treedef_is_leaf(tree_util.tree_structure(device, is_leaf=_is_target)):
        return _transfer.device_put(x, device, src=src, donate=donate, may_alias=may_alias)
    # a pytree of devices / shardings matching x
    return tree_util.tree_map(lambda d, v: device_put(v, d), device, x, is_leaf=_is_target)


def _assemble(name, shape, sharding, pieces, dtype):
    """One host array of ``shape`` from ``(index, data)`` pieces (``index``: the tuple of
    slices ``sharding.devices_indices_map`` gives a device), every entry covered; a ``dtype``
    given must be the pieces' (JAX's ValueError otherwise)."""
    out, seen = None, np.zeros(shape, bool)
    for index, data in pieces:
        data = np.asarray(data)
        if dtype is not None and dtypes.canonicalize(data.dtype) != dtypes.canonicalize(dtype):
            raise FunctxValueError(
                f"{name}: dtype {np.dtype(dtype)} given, but the data for index {index} is "
                f"{data.dtype} (as in JAX, they must match)"
            )
        data = data.astype(dtype) if dtype is not None else data
        block = seen[index].shape
        if data.shape != block:
            raise FunctxValueError(
                f"{name}: the data for index {index} has shape {data.shape}, expected {block} "
                f"(global shape {tuple(shape)})"
            )
        if out is None:
            out = np.empty(shape, data.dtype)
        out[index], seen[index] = data, True
    if out is None or not seen.all():
        raise FunctxValueError(f"{name}: the pieces do not cover the global shape {tuple(shape)}")
    return device_put(out, sharding)


def _check_sharding(name, sharding):
    if not isinstance(sharding, Sharding):
        raise FunctxTypeError(f"{name}: sharding must be a Sharding, got {sharding!r}")
    if not sharding.is_fully_addressable:
        raise NotImplementedError(
            f"{name}: a sharding over devices of other processes (functx arrays are whole on "
            f"each process's device: give each process the whole array)"
        )


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
    """An array of ``shape`` laid out by ``sharding`` whose data ``data_callback`` gives, block
    by block (``jax.make_array_from_callback``): it is called with each device's index (a tuple
    of slices) and returns that block.

    Differences from JAX: functx keeps arrays whole on each process's device, so the blocks are
    assembled into one array (placed as ``device_put(x, sharding)`` places it); a sharding over
    other processes' devices raises NotImplementedError.

    Arguments:
      shape: the global shape.
      sharding: a ``Sharding`` (``NamedSharding``, ``SingleDeviceSharding``).
      data_callback: ``index -> array`` of the block at ``index``.
      dtype: the dtype (default the blocks').
    Returns:
      an Array of ``shape``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> from functx.sharding import NamedSharding, PartitionSpec as P
      >>> data = np.arange(8.0, dtype=np.float32).reshape(4, 2)
      >>> s = NamedSharding(functx.make_mesh((1,), ("x",)), P("x"))
      >>> functx.make_array_from_callback((4, 2), s, lambda index: data[index])
      Array([[0., 1.],
             [2., 3.],
             [4., 5.],
             [6., 7.]], dtype=float32)
    """
    _check_sharding("make_array_from_callback", sharding)
    shape = tuple(int(d) for d in shape)
    indices = sharding.addressable_devices_indices_map(shape)
    unique = {_index_key(i): i for i in indices.values()}
    pieces = [(i, data_callback(i)) for i in unique.values()]
    return _assemble("make_array_from_callback", shape, sharding, pieces, dtype)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
    """An array of ``shape`` laid out by ``sharding`` from one block per device
    (``jax.make_array_from_single_device_arrays``): ``arrays[k]`` is the block of the k-th
    device of ``sharding.addressable_devices_indices_map(shape)``.

    Differences from JAX: the blocks are assembled into one whole array (see
    ``make_array_from_callback``).

    Arguments:
      shape: the global shape.
      sharding: a ``Sharding``.
      arrays: the blocks, one per addressable device, in that map's order.
      dtype: the dtype (default the blocks').
    Returns:
      an Array of ``shape``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> from functx.sharding import NamedSharding, PartitionSpec as P
      >>> s = NamedSharding(functx.make_mesh((1,), ("x",)), P())
      >>> functx.make_array_from_single_device_arrays((3,), s, [np.ones(3, np.float32)])
      Array([1., 1., 1.], dtype=float32)
    """
    _check_sharding("make_array_from_single_device_arrays", sharding)
    shape = tuple(int(d) for d in shape)
    indices = list(sharding.addressable_devices_indices_map(shape).values())
    if len(arrays) != len(indices):
        raise FunctxValueError(
            f"make_array_from_single_device_arrays: {len(arrays)} arrays for "
            f"{len(indices)} addressable devices of the sharding"
        )
    pieces = list(zip(indices, arrays))
    return _assemble("make_array_from_single_device_arrays", shape, sharding, pieces, dtype)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
    """The global array of a process's data (``jax.make_array_from_process_local_data``). In one
    process the local data is the whole array.

    Arguments:
      sharding: a ``Sharding``.
      local_data: this process's data.
      global_shape: the global shape: None or ``local_data``'s (in one process; anything else
        is a ValueError, as in JAX).
    Returns:
      an Array placed as ``device_put(local_data, sharding)``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> from functx.sharding import NamedSharding, PartitionSpec as P
      >>> s = NamedSharding(functx.make_mesh((1,), ("x",)), P("x"))
      >>> functx.make_array_from_process_local_data(s, np.zeros(2, np.float32))
      Array([0., 0.], dtype=float32)
    """
    _check_sharding("make_array_from_process_local_data", sharding)
    local = np.asarray(local_data)
    if global_shape is not None and tuple(global_shape) != local.shape:
        raise FunctxValueError(  # (JAX's class and rule for a single process)
            f"make_array_from_process_local_data: global shape {tuple(global_shape)} differs "
            f"from the local data's {local.shape} (in one process it must be None or equal)"
        )
    return _assemble(
        "make_array_from_process_local_data", local.shape, sharding,
        [(tuple(slice(None) for _ in local.shape), local)], None,
    )  # fmt: skip


def _index_key(index):
    return tuple((s.start, s.stop, s.step) if isinstance(s, slice) else s for s in index)


def _is_target(v):
    return v is None or isinstance(v, (Sharding, _device.Device, str))


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)
