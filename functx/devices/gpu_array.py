"""GPU arrays: ``GpuArray`` (a ``functx.Array`` whose buffer is a torch tensor on a device), the
dtype map between NumPy and torch, and copies between host buffers and torch tensors."""

from __future__ import annotations

import numpy as np

from functx import dtypes
from functx.array import Array
from functx.core import ShapedArray
from functx.devices.device import Device, devices
from functx.errors import FunctxError

# --- dtypes between NumPy and torch ---------------------------------------------------------------


def torch_dtype(dt):
    """The torch dtype of NumPy dtype ``dt``."""
    import torch

    return getattr(torch, dtypes.TORCH_NAMES[np.dtype(dt)])


def numpy_dtype(tdt) -> np.dtype:
    """The NumPy dtype of torch dtype ``tdt`` (a FunctxError if functx has none)."""
    name = str(tdt).rpartition(".")[2]
    for k, v in dtypes.TORCH_NAMES.items():
        if v == name:
            return k
    raise FunctxError(f"functx has no dtype for torch's {tdt}")


def host_to_torch(value: np.ndarray, device: Device):
    """A new torch tensor on ``device`` holding a copy of ``value``."""
    import torch

    v = np.array(value, order="C")  # a writable copy that the tensor owns
    if v.dtype == dtypes.bfloat16:
        t = torch.from_numpy(v.view(np.uint16)).view(torch.bfloat16)
    else:
        t = torch.from_numpy(v)
    tdev = device.torch_device
    return t if tdev.type == "cpu" else t.to(tdev)


def _torch_to_host(t) -> np.ndarray:
    """A NumPy copy of a torch tensor (the interpreter's CPU tensors are copied too)."""
    import torch

    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == torch.bfloat16:
        return np.array(t.view(torch.uint16).numpy()).view(dtypes.bfloat16)
    return np.array(t.numpy())


# --- GPU arrays -----------------------------------------------------------------------------------
class GpuArray(Array):
    """A ``functx.Array`` on a GPU: ``_value`` holds a torch tensor on the device (where a host
    array holds its NumPy buffer), which functx never changes.

    Conversions to host values (``np.asarray``, ``float``, ``bool``, ``repr``, ``.item()``) are
    explicit transfers, as in JAX. ``x.device`` says where it lives.
    """

    __slots__ = ("_device", "_committed")

    def __init__(self, *args, **kwargs):
        raise TypeError(
            "GPU arrays are made with functx.device_put(x, device) or "
            "functx.numpy.asarray(x, device=device)"
        )

    @classmethod
    def _new(cls, tensor, aval: ShapedArray, device: Device, committed: bool = True) -> GpuArray:
        self = object.__new__(cls)
        self._value = tensor
        self.aval = aval
        self._device = device
        self._committed = committed
        return self

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    device = property(lambda self: self._device)
    committed = property(lambda self: self._committed)

    def devices(self):
        return {self._device}

    def _host(self) -> np.ndarray:
        out = _torch_to_host(self._value).reshape(self.aval.shape)
        return out if out.dtype == self.aval.dtype else out.astype(self.aval.dtype)

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError(
                f"a GPU array ({self._device}) has no host buffer to view: "
                "np.asarray(x) copies it to the host (copy=False cannot)"
            )
        v = self._host()
        return v if dtype is None else v.astype(dtype)

    def __dlpack__(self, *args, **kwargs):
        return self._value.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._value.__dlpack_device__()

    def __bool__(self):
        return bool(self._host())

    def __int__(self):
        return int(self._host())

    def __float__(self):
        return float(self._host())

    def __complex__(self):
        return complex(self._host())

    def __index__(self):
        if not dtypes.is_int(self.dtype) and self.dtype != dtypes.bool_:
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return int(self._host())

    def item(self, *args):
        return self._host().item(*args)

    def tolist(self):
        return self._host().tolist()

    def __format__(self, spec):
        return format(self._host().item(), spec) if self.ndim == 0 else format(str(self), spec)

    def __repr__(self):
        return repr(Array._new(self._host(), self.aval))

    def __str__(self):
        return str(self._host())

    def block_until_ready(self):
        if self._value.device.type == "cuda":
            import torch

            torch.cuda.synchronize(self._value.device)
        return self

    def __reduce__(self):
        return (_unpickle_gpu, (self._host(), self._device.platform, self._device.id))


def _unpickle_gpu(value, platform, index):
    """A pickled GPU array back on the same device (or the last one of its platform): what
    ``device_put(value, device)`` gives for the host copy ``value``."""
    gpus = devices(platform)
    device = gpus[min(index, len(gpus) - 1)]
    arr = Array.from_value(value)
    return GpuArray._new(host_to_torch(arr._value, device), arr.aval, device)
