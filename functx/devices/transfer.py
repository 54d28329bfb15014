"""Moving data and deciding where an operation runs: ``device_put``, ``device_get``,
``place_new`` (creation functions), ``from_foreign`` (DLPack), the classification of operands
(committed, uncommitted, scalar) and ``op_device``, which applies the placement rules of
``functx.devices`` to eager operations and to ``jit``."""

from __future__ import annotations

import numpy as np

from functx import dtypes, tracing, tree_util
from functx.array import Array, UncommittedArray, device_rules, is_python_scalar
from functx.core import ShapedArray
from functx.devices.device import (
    CPU,
    Device,
    DeviceError,
    check_device,
    cuda_device,
    get_default_device,
)
from functx.devices.gpu_array import GpuArray, host_to_torch, numpy_dtype, torch_dtype
from functx.errors import FunctxError
from functx.source_info import where


# --- Transfers ------------------------------------------------------------------------------------
def leaf_to(x, device: Device, commit: bool = True):
    """One leaf on ``device`` (a copy unless it is already there)."""
    if isinstance(x, tracing.Tracer):
        return x  # inside a trace the program's placement decides
    if isinstance(x, GpuArray):
        if x._device is device:
            return x if (x._committed or not commit) else GpuArray._new(x._value, x.aval, device)
        if device is CPU:
            v = x._host()
            return Array._new(v, x.aval) if commit else UncommittedArray._new(v, x.aval)
        t = x._value.to(device.torch_device, copy=True)
        return GpuArray._new(t, x.aval, device, commit)
    if isinstance(x, Array):
        if device is CPU:
            if commit and type(x) is not Array:
                return Array._new(x._value, x.aval)
            return x
        return GpuArray._new(host_to_torch(x._value, device), x.aval, device, commit)
    arr = Array.from_value(x)
    return leaf_to(arr, device, commit) if arr is not x else arr


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
    """Copy a pytree of arrays to ``device`` (JAX's ``device_put``).

    Arguments:
      x: arrays, NumPy arrays, scalars or lists, in any pytree.
      device: a ``Device`` (or "cpu" / "gpu" / "gpu:N"). None: functx arrays stay where they are
        and everything else goes to the default device.
      src, donate, may_alias: accepted for JAX compatibility (arrays are immutable: functx
        copies unless the array is already on ``device``).
    Returns:
      The same pytree of ``functx.Array``; with a device given they are committed to it.
    Example:
      >>> x = functx.device_put(np.ones(3, np.float32), functx.devices("gpu")[0])
      >>> x.device
      CudaDevice(id=0)
    """
    if device is None:
        dev = get_default_device()
        return tree_util.tree_map(lambda v: v if isinstance(v, Array) else leaf_to(v, dev), x)
    dev = check_device(device, "functx.device_put")
    return tree_util.tree_map(lambda v: leaf_to(v, dev), x)


def device_get(x):
    """Copy a pytree of arrays to the host as NumPy arrays (``jax.device_get``).

    Arguments:
      x: a pytree; its functx Array leaves become NumPy arrays, other leaves pass through.
    Returns:
      A pytree of ``x``'s structure.
    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> functx.device_get({"a": jnp.ones(2), "b": 3})
      {'a': array([1., 1.], dtype=float32), 'b': 3}
    """

    def get(v):
        if isinstance(v, GpuArray):
            return v._host()
        if isinstance(v, Array) and not isinstance(v, tracing.Tracer):
            return np.asarray(v)
        return v

    return tree_util.tree_map(get, x)


def place_new(arr, device=None):
    """Where a creation function puts a new array: ``device`` if given (committed there), else
    the default device. Host arrays are made first, so this is the copy a request for a device
    implies."""
    if device is not None:
        return leaf_to(arr, check_device(device, "device"))
    dev = get_default_device()
    if dev is CPU or isinstance(arr, GpuArray) or not isinstance(arr, Array):
        return arr
    if arr.ndim == 0 and type(arr) is Array:
        return arr  # a host scalar goes with any device
    return leaf_to(arr, dev, commit=type(arr) is Array)


def from_foreign(x, dtype=None):
    """A committed GPU array from another library's GPU buffer (a DLPack producer: a torch
    tensor, a CuPy or JAX array). The data is copied: functx arrays are immutable."""
    import torch

    kind, index = x.__dlpack_device__()
    if int(kind) != 2:  # kDLCUDA; the host kinds are handled by Array.from_value
        raise FunctxError(
            f"functx cannot import an array from DLPack device type {int(kind)} "
            "(functx knows the CPU and CUDA GPUs)"
        )
    device = cuda_device(int(index))
    t = x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)
    t = t.detach().clone(memory_format=torch.contiguous_format)
    if dtype is not None:
        t = t.to(torch_dtype(dtypes.canonicalize(dtype)))
    dt = numpy_dtype(t.dtype)
    return GpuArray._new(t, ShapedArray(tuple(t.shape), dt), device)


device_rules["from_foreign"] = from_foreign
device_rules["place_new"] = place_new


# --- Placement ------------------------------------------------------------------------------------
_COMMITTED, _UNCOMMITTED, _SCALAR = range(3)


def is_torch_tensor(x) -> bool:
    """Whether ``x`` is a torch tensor (without importing torch)."""
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _classify(x):
    """(kind, device) of one operand; scalars (Python ones and 0-d host arrays) have no device."""
    t = type(x)
    if t is Array:
        return (_COMMITTED if x.aval.shape else _SCALAR), CPU
    if t is GpuArray:
        return (_COMMITTED if x._committed else _UNCOMMITTED), x._device
    if t is UncommittedArray:
        return _UNCOMMITTED, CPU
    if is_python_scalar(x) or isinstance(x, np.generic):
        return _SCALAR, None
    if isinstance(x, np.ndarray):
        return (_COMMITTED if x.ndim else _SCALAR), CPU
    if is_torch_tensor(x):
        if x.device.type == "cuda":
            return _COMMITTED, cuda_device(x.device.index)
        return (_COMMITTED if x.dim() else _SCALAR), CPU
    if isinstance(x, tracing.Tracer):
        raise FunctxError(f"internal: a tracer {x!r} reached device placement")
    if isinstance(x, Array):  # another Array subclass
        return _COMMITTED, x.device
    return _classify(Array.from_value(x))


def _describe(x) -> str:
    try:
        return tracing.get_aval(x).str_short()
    except Exception:  # noqa: BLE001 - only for an error message
        return type(x).__name__


def op_device(args, what: str, label: str = "operand"):
    """(device, committed) for an operation on ``args``: the device of the committed operands,
    which must agree, else the default device. ``committed`` says whether the results are
    committed (whether any operand was)."""
    device = first = None
    for i, a in enumerate(args):
        kind, dev = _classify(a)
        if kind == _COMMITTED:
            if device is None:
                device, first = dev, i
            elif dev is not device:
                raise DeviceError(
                    f"{what}: {label}s on different devices: {label} {first} "
                    f"{_describe(args[first])} is on {device!r}, {label} {i} {_describe(a)} is on "
                    f"{dev!r}{where()}. functx does not copy between devices implicitly: move one "
                    f"of them first with functx.device_put(x, device), e.g. "
                    f"functx.device_put(x, functx.devices({device.platform!r})[{device.id}])."
                )
    if device is not None:
        return device, True
    return get_default_device(), False
