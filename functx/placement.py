"""Devices and placement: where an array lives, where an operation runs, and moving data.

A ``functx.Array`` lives on one device. On the CPU its buffer is a read-only NumPy array; on a GPU
(``GpuArray``, a subclass) it is a torch tensor, torch being the buffer library Triton's host side
already uses. Other libraries exchange GPU data with functx through DLPack.

Devices, as in JAX: ``CpuDevice(id=0)``, one ``CudaDevice(id=i)`` per CUDA GPU torch sees, and, only
when ``TRITON_INTERPRET=1`` is set and there is no CUDA, ``InterpretedGpuDevice(id=0)``: a stand-in
GPU whose buffers are CPU torch tensors and whose kernels run in Triton's CPU interpreter. It
exists so that the whole GPU path (placement, ``jit`` to Triton, eager GPU operations, the mixing
errors) runs in tests on machines without a GPU; it is slow and not for real work.

Placement rules (one function, ``op_device``, applies them to eager operations and to ``jit``):

* Arrays holding data are *committed* to their device: arrays converted from NumPy, lists or other
  libraries, arrays placed with ``device_put``, and results of operations on committed arrays.
  Operands committed to different devices are an error (``DeviceError``); functx never copies
  data between the host and a device behind your back. Move data with ``functx.device_put``.
* Scalars go with any device: Python scalars, NumPy scalars and 0-d arrays on the host
  (``jnp.float32(2)``, ``x.sum()`` of a host array) reach a GPU kernel as argument values, like
  torch's CPU scalar tensors.
* Arrays built from scalars alone (``zeros``, ``ones``, ``full``, ``eye``, ``iota``, and anything
  computed only from such arrays and scalars) are *uncommitted*, as in JAX: they are made on the
  default device and move to the device of the committed array they meet.
* An operation with no committed operand runs on the default device: the CPU unless
  ``FUNCTX_DEFAULT_DEVICE`` (``cpu``, ``gpu``, ``gpu:1``), ``functx.config.update(
  "functx_default_device", device)`` or ``with functx.default_device(device):`` says otherwise.
  Unlike JAX, the default stays the CPU when a GPU is present: functx's eager path is NumPy, and
  every eager GPU operation is a small compiled Triton program.

Eager operations on GPU arrays run on the GPU like JAX's: each primitive is traced alone, compiled
with the Triton backend and cached by (primitive, parameters, operand types, device).
"""

from __future__ import annotations

import importlib.util
import os
import threading

import numpy as np

from functx import core, dtypes, tracing
from functx.array import Array, UncommittedArray, device_rules, is_python_scalar, scalar_aval
from functx.core import ShapedArray
from functx.errors import FunctxError
from functx.source_info import where


class DeviceError(FunctxError, ValueError):
    """Operands on different devices, or a device argument that cannot be used."""


class NoDeviceError(FunctxError, RuntimeError):
    """A platform was asked for that this process has no device of (no GPU, say)."""


# --- Devices --------------------------------------------------------------------------------------
class Device:
    """One device. ``platform`` is "cpu" or "gpu"; ``id`` its index on that platform."""

    platform = "?"
    device_kind = "?"
    process_index = 0

    def __init__(self, id: int):  # noqa: A002 (JAX's name)
        self.id = id

    @property
    def torch_device(self):
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}(id={self.id})"


class CpuDevice(Device):
    """The host: arrays are NumPy buffers and jit compiles C++."""

    platform = "cpu"
    device_kind = "cpu"


class CudaDevice(Device):
    """A CUDA GPU: arrays are torch CUDA tensors and jit compiles Triton kernels."""

    platform = "gpu"

    def __init__(self, id: int):  # noqa: A002
        super().__init__(id)
        import torch

        self._torch = torch.device("cuda", id)
        self.device_kind = torch.cuda.get_device_name(id)

    @property
    def torch_device(self):
        return self._torch


class InterpretedGpuDevice(Device):
    """A stand-in GPU for machines without one (``TRITON_INTERPRET=1``, no CUDA): its buffers are
    CPU torch tensors and its Triton kernels run in Triton's interpreter, slowly. For tests."""

    platform = "gpu"
    device_kind = "Triton interpreter on the CPU (no real GPU)"

    @property
    def torch_device(self):
        import torch

        return torch.device("cpu")


CPU = CpuDevice(0)
_gpu_list: list | None = None
_gpu_lock = threading.Lock()
GPU_IN_USE = False  # set once a GPU device object exists; jit's dispatch fast path reads it


def _interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _gpus() -> list:
    """The GPU devices, found on first use (importing torch only then)."""
    global _gpu_list, GPU_IN_USE
    if _gpu_list is None:
        with _gpu_lock:
            if _gpu_list is None:
                found = []
                if importlib.util.find_spec("torch") is not None:
                    import torch

                    if torch.cuda.is_available():
                        found = [CudaDevice(i) for i in range(torch.cuda.device_count())]
                    elif _interpreting() and importlib.util.find_spec("triton") is not None:
                        found = [InterpretedGpuDevice(0)]
                if found:
                    GPU_IN_USE = True
                _gpu_list = found
    return _gpu_list


def _no_gpu_message(what: str) -> str:
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None:
        why = 'torch and triton are not installed (pip install "functx[gpu]")'
    else:
        why = "torch sees no CUDA device (torch.cuda.is_available() is False)"
    return (
        f"{what}: no GPU is available: {why}. To run the GPU code path on the CPU for tests, "
        "set TRITON_INTERPRET=1 before functx first looks for devices."
    )


def devices(backend: str | None = None) -> list[Device]:
    """The devices of a platform, like ``jax.devices``.

    Arguments:
      backend: "cpu", "gpu" (or "cuda"), or None for the default platform: the GPUs when there are
        any, else the CPU (as JAX's default backend).
    Returns:
      A list of ``Device`` objects: ``[CpuDevice(id=0)]``, ``[CudaDevice(id=0), ...]``.
    Example:
      >>> functx.devices("cpu")
      [CpuDevice(id=0)]
    """
    if backend is None:
        return list(_gpus()) or [CPU]
    name = backend.lower() if isinstance(backend, str) else backend
    if name == "cpu":
        return [CPU]
    if name in ("gpu", "cuda"):
        gpus = _gpus()
        if not gpus:
            raise NoDeviceError(_no_gpu_message(f"functx.devices({backend!r})"))
        return list(gpus)
    raise ValueError(f"functx.devices: unknown platform {backend!r}; use 'cpu' or 'gpu'")


def local_devices(backend: str | None = None) -> list[Device]:
    """The same as ``devices`` (functx runs in one process)."""
    return devices(backend)


def device_count(backend: str | None = None) -> int:
    return len(devices(backend))


def default_backend() -> str:
    """The platform ``devices()`` lists: "gpu" when there is one, else "cpu"."""
    return "gpu" if _gpus() else "cpu"


# --- The default device ---------------------------------------------------------------------------
class _DefaultState(threading.local):
    def __init__(self):
        self.stack: list = []


_default_local = _DefaultState()
_global_default: Device | None = None  # set by config.update; None: the environment's, else CPU
_env_default: Device | None = None


def _parse_device(spec: str, what: str) -> Device:
    s = spec.strip().lower()
    name, _, idx = s.partition(":")
    if name == "cpu" and idx in ("", "0"):
        return CPU
    if name in ("gpu", "cuda") and (idx == "" or idx.isdigit()):
        gpus = _gpus()
        i = int(idx or 0)
        if not gpus:
            raise NoDeviceError(_no_gpu_message(f"{what}={spec!r}"))
        if i >= len(gpus):
            raise NoDeviceError(f"{what}={spec!r}: there are {len(gpus)} GPUs ({gpus})")
        return gpus[i]
    raise ValueError(f"{what}={spec!r}: expected 'cpu', 'gpu' or 'gpu:N'")


def _check_device(device, what: str) -> Device:
    if isinstance(device, Device):
        return device
    if isinstance(device, str):
        return _parse_device(device, what)
    raise DeviceError(
        f"{what}: expected a functx device (from functx.devices()), got "
        f"{type(device).__name__} {device!r:.60}"
    )


def get_default_device() -> Device:
    """The device new arrays and operations without committed operands go to."""
    stack = _default_local.stack
    if stack and stack[-1] is not None:
        return stack[-1]
    if _global_default is not None:
        return _global_default
    if _env_default is not None:
        return _env_default
    return _resolve_env_default()


def _resolve_env_default() -> Device:
    """``FUNCTX_DEFAULT_DEVICE``, read once (a GPU there is looked up on first use)."""
    global _env_default
    spec = os.environ.get("FUNCTX_DEFAULT_DEVICE", "").strip()
    if not spec or spec.lower() in ("cpu", "cpu:0"):
        _env_default = CPU
    else:
        _env_default = _parse_device(spec, "FUNCTX_DEFAULT_DEVICE")
    return _env_default


def _note_default(device: Device | None) -> None:
    """Tell the eager path to look up the default device for uncommitted operations (it skips
    that lookup while the default can only be the CPU)."""
    if device is not None and device is not CPU:
        tracing._default_off_cpu = True


class default_device:
    """``with functx.default_device(device):`` makes ``device`` the default in the block (this
    thread only), like ``jax.default_device``; None means the configured default."""

    def __init__(self, device):
        self.device = None if device is None else _check_device(device, "functx.default_device")

    def __enter__(self):
        _note_default(self.device)
        _default_local.stack.append(self.device)
        return self.device

    def __exit__(self, *exc):
        _default_local.stack.pop()


# --- The default precision of matrix products ----------------------------------------------------
# JAX's names. On a GPU, float32 products take TF32 (10-bit mantissa) inputs unless the precision
# is "highest"/"float32", as JAX does there; the CPU always computes in float32.
_PRECISIONS = {
    "default": "tensorfloat32",
    "fastest": "tensorfloat32",
    "bfloat16": "tensorfloat32",
    "high": "tensorfloat32",
    "tensorfloat32": "tensorfloat32",
    "highest": "float32",
    "float32": "float32",
}


class _PrecisionState(threading.local):
    def __init__(self):
        self.stack: list = []


_precision_local = _PrecisionState()
_global_precision = "tensorfloat32"  # config.update's setting, resolved


def _check_precision(value, what: str) -> str:
    """The float32 product mode ("tensorfloat32" or "float32") a precision name stands for."""
    if value is None:
        return "tensorfloat32"
    name = value.lower() if isinstance(value, str) else value
    if name not in _PRECISIONS:
        raise ValueError(
            f"{what}: unknown matmul precision {value!r}; use one of "
            f"{', '.join(repr(k) for k in _PRECISIONS)} (or None)"
        )
    return _PRECISIONS[name]


if os.environ.get("FUNCTX_DEFAULT_MATMUL_PRECISION", "").strip():
    _global_precision = _check_precision(
        os.environ["FUNCTX_DEFAULT_MATMUL_PRECISION"].strip(), "FUNCTX_DEFAULT_MATMUL_PRECISION"
    )


def matmul_precision() -> str:
    """How float32 matrix products run on a GPU here: "tensorfloat32" or "float32" (the innermost
    ``default_matmul_precision`` block, else ``config``'s setting)."""
    stack = _precision_local.stack
    return stack[-1] if stack else _global_precision


class default_matmul_precision:
    """``with functx.default_matmul_precision("highest"):`` sets the precision of the float32
    matrix products (``@``, ``dot``, ``matmul``, ``einsum``, ``dot_general``) that run in the
    block, eagerly or under ``jit``, in this thread, like ``jax.default_matmul_precision``.

    On a GPU, JAX's default takes TF32 inputs (about 3 significant digits, with float32
    accumulation); "highest" or "float32" gives full float32. "default", "high", "bfloat16" and
    "tensorfloat32" all mean TF32 here (functx's GPU backend has those two modes). The CPU
    computes in float32 whatever the setting. ``jit`` compiles again when the setting changes.
    A product's own ``precision=`` argument (``functx.lax.Precision``) wins over the setting.
    Outside any block: ``functx.config.update("jax_default_matmul_precision", ...)``, else the
    environment's ``FUNCTX_DEFAULT_MATMUL_PRECISION``, else TF32.
    """

    def __init__(self, precision):
        self.mode = _check_precision(precision, "functx.default_matmul_precision")

    def __enter__(self):
        _precision_local.stack.append(self.mode)

    def __exit__(self, *exc):
        _precision_local.stack.pop()


class _Config:
    """``functx.config.update(name, value)``: the settings JAX keeps in ``jax.config`` that functx
    has: the default device ("functx_default_device"; "jax_default_device" is accepted for
    ported code) and the default precision of float32 matrix products
    ("jax_default_matmul_precision": see ``functx.default_matmul_precision``)."""

    _DEVICE = ("functx_default_device", "jax_default_device")
    _PRECISION = ("jax_default_matmul_precision",)

    def update(self, name: str, value) -> None:
        global _global_default, _global_precision
        if name in self._PRECISION:
            _global_precision = _check_precision(value, name)
            return
        if name not in self._DEVICE:
            raise ValueError(
                f"functx.config has no option {name!r}; it has "
                f"{', '.join(self._DEVICE + self._PRECISION)}"
            )
        _global_default = None if value is None else _check_device(value, name)
        _note_default(_global_default)

    @property
    def functx_default_device(self):
        return _global_default

    jax_default_device = functx_default_device

    @property
    def jax_default_matmul_precision(self):
        return _global_precision

    def __repr__(self):
        return (
            f"functx.config(functx_default_device={_global_default!r}, "
            f"jax_default_matmul_precision={_global_precision!r})"
        )


config = _Config()

if os.environ.get("FUNCTX_DEFAULT_DEVICE", "").strip().lower() not in ("", "cpu", "cpu:0"):
    tracing._default_off_cpu = True  # resolved (importing torch) on first use


# --- dtypes between NumPy and torch ---------------------------------------------------------------
_TORCH_NAME = {
    dtypes.bool_: "bool",
    dtypes.int8: "int8",
    dtypes.int16: "int16",
    dtypes.int32: "int32",
    dtypes.int64: "int64",
    dtypes.uint8: "uint8",
    dtypes.uint16: "uint16",
    dtypes.uint32: "uint32",
    dtypes.uint64: "uint64",
    dtypes.float16: "float16",
    dtypes.bfloat16: "bfloat16",
    dtypes.float32: "float32",
    dtypes.float64: "float64",
}


def torch_dtype(dt):
    import torch

    return getattr(torch, _TORCH_NAME[np.dtype(dt)])


def numpy_dtype(tdt) -> np.dtype:
    name = str(tdt).rpartition(".")[2]
    for k, v in _TORCH_NAME.items():
        if v == name:
            return k
    raise FunctxError(f"functx has no dtype for torch's {tdt}")


def _host_to_torch(value: np.ndarray, device: Device):
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
    gpus = devices(platform)
    return device_put(value, gpus[min(index, len(gpus) - 1)])


# --- Transfers ------------------------------------------------------------------------------------
def _leaf_to(x, device: Device, commit: bool = True):
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
        return GpuArray._new(_host_to_torch(x._value, device), x.aval, device, commit)
    arr = Array.from_value(x)
    return _leaf_to(arr, device, commit) if arr is not x else arr


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
    from functx import tree_util

    if device is None:
        dev = get_default_device()
        return tree_util.tree_map(lambda v: v if isinstance(v, Array) else _leaf_to(v, dev), x)
    dev = _check_device(device, "functx.device_put")
    return tree_util.tree_map(lambda v: _leaf_to(v, dev), x)


def device_get(x):
    """Copy a pytree of arrays to the host as NumPy arrays (JAX's ``device_get``)."""
    from functx import tree_util

    def get(v):
        if isinstance(v, GpuArray):
            return v._host()
        if isinstance(v, Array):
            return np.asarray(v)
        return v

    return tree_util.tree_map(get, x)


def place_new(arr, device=None):
    """Where a creation function puts a new array: ``device`` if given (committed there), else
    the default device. Host arrays are made first, so this is the copy a request for a device
    implies."""
    if device is not None:
        return _leaf_to(arr, _check_device(device, "device"))
    dev = get_default_device()
    if dev is CPU or isinstance(arr, GpuArray) or not isinstance(arr, Array):
        return arr
    if arr.ndim == 0 and type(arr) is Array:
        return arr  # a host scalar goes with any device
    return _leaf_to(arr, dev, commit=type(arr) is Array)


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
    device = _cuda_device(int(index))
    t = x if isinstance(x, torch.Tensor) else torch.from_dlpack(x)
    t = t.detach().clone(memory_format=torch.contiguous_format)
    if dtype is not None:
        t = t.to(torch_dtype(dtypes.canonicalize(dtype)))
    dt = numpy_dtype(t.dtype)
    return GpuArray._new(t, ShapedArray(tuple(t.shape), dt), device)


# --- Placement ------------------------------------------------------------------------------------
_COMMITTED, _UNCOMMITTED, _SCALAR = range(3)


def _is_torch_tensor(x) -> bool:
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
    if _is_torch_tensor(x):
        if x.device.type == "cuda":
            return _COMMITTED, _cuda_device(x.device.index)
        return (_COMMITTED if x.dim() else _SCALAR), CPU
    if isinstance(x, tracing.Tracer):
        raise FunctxError(f"internal: a tracer {x!r} reached device placement")
    if isinstance(x, Array):  # another Array subclass
        return _COMMITTED, x.device
    return _classify(Array.from_value(x))


def _cuda_device(index) -> Device:
    for d in _gpus():
        if isinstance(d, CudaDevice) and d.id == (index or 0):
            return d
    raise NoDeviceError(
        f"an array on CUDA device {index} was given, but functx sees {_gpus() or 'no GPU'}"
    )


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
                    f"{_describe(args[first])} is on {device}, {label} {i} {_describe(a)} is on "
                    f"{dev}{where()}. functx does not copy between devices implicitly: move one "
                    f"of them first with functx.device_put(x, device), e.g. "
                    f"functx.device_put(x, functx.devices({device.platform!r})[{device.id}])."
                )
    if device is not None:
        return device, True
    return get_default_device(), False


# --- Eager operations -----------------------------------------------------------------------------
_OP_CACHE: dict = {}
_OP_CACHE_MAX = 4096


def bind_eager(prim, args, params):
    """Run one primitive outside any trace where its operands live (see ``placement``)."""
    device, committed = op_device(args, prim.name)
    if device is CPU:
        host = [_leaf_to(a, CPU, commit=False) if isinstance(a, GpuArray) else a for a in args]
        return tracing.bind_host(prim, host, params, committed)
    return _run_on_gpu(prim, args, params, device, committed)


def _gpu_leaf(a, device):
    """The value an executable on ``device`` receives for operand ``a`` (and its aval)."""
    if type(a) is GpuArray:
        t = a._value if a._device is device else a._value.to(device.torch_device, copy=True)
        return t, a.aval
    if is_python_scalar(a):
        aval = scalar_aval(a)
        return _scalar_tensor(np.asarray(a, aval.dtype), device), aval
    if type(a) is Array:  # a host scalar (op_device refused host arrays with data)
        return _scalar_tensor(a._value, device), a.aval
    if type(a) is UncommittedArray:
        return _host_to_torch(a._value, device), a.aval
    if _is_torch_tensor(a):
        if a.device.type == "cuda":
            return a, tracing.get_aval(a)
        a = np.asarray(a.detach())
    v, aval, _ = tracing._as_value(a)  # a NumPy scalar or 0-d array
    return _scalar_tensor(v, device), aval


_SCALARS: dict = {}  # (dtype, bytes, device) -> a 0-d tensor on the device (never changed)


def _scalar_tensor(value: np.ndarray, device):
    """A host scalar (a 0-d NumPy value) as a 0-d tensor on ``device``, made there by a fill (no
    synchronous copy from the host) and kept for the next operation with the same value."""
    key = (value.dtype, value.tobytes(), device)  # the bits: -0.0 is not 0.0
    t = _SCALARS.get(key)
    if t is None:
        import torch

        t = torch.full((), value.item(), dtype=torch_dtype(value.dtype), device=device.torch_device)
        if len(_SCALARS) >= 1024:
            _SCALARS.pop(next(iter(_SCALARS)))
        _SCALARS[key] = t
    return t


def _run_on_gpu(prim, args, params, device, committed):
    leaves, avals = [], []
    for a in args:
        v, av = _gpu_leaf(a, device)
        leaves.append(v)
        avals.append(av)
    out_avals = tracing._abstract_eval(prim, avals, params)
    key = (
        prim,
        tuple(params.items()),
        tuple(avals),
        device,
        matmul_precision() if prim.name == "dot_general" else None,
    )
    try:
        exe = _OP_CACHE.get(key)
    except TypeError:  # unhashable parameters: compile without caching
        key, exe = None, None
    if exe is None:
        exe = _compile_op(prim, params, avals)
        if key is not None:
            if len(_OP_CACHE) >= _OP_CACHE_MAX:
                _OP_CACHE.pop(next(iter(_OP_CACHE)))
            _OP_CACHE[key] = exe
    outs = call_on(device, exe, leaves)
    if not prim.multiple_results:
        return _wrap_gpu(outs[0], out_avals, device, committed)
    return [_wrap_gpu(o, a, device, committed) for o, a in zip(outs, out_avals)]


def _compile_op(prim, params, avals):
    """A Triton executable for one equation ``prim`` on operands of ``avals``."""
    from functx.lowering.compile import compile_jaxpr, log
    from functx.transforms import passes

    def one(*xs):
        out = prim.bind(*xs, **params)
        return (list(out) if prim.multiple_results else [out]), None

    closed, _ = tracing.trace_flat(one, avals)
    log(
        f"compiling eager {prim.name} for the GPU: "
        f"{', '.join(a.str_short() for a in avals) or 'no operands'}"
    )
    return compile_jaxpr(passes.simplify(closed), "triton")


def call_on(device, exe, leaves):
    """Call a Triton executable for ``device`` (kernels launch on the current CUDA device)."""
    if isinstance(device, CudaDevice):
        import torch

        if torch.cuda.current_device() != device.id:
            with torch.cuda.device(device.id):
                return exe(leaves)
    return exe(leaves)


def _wrap_gpu(t, aval, device, committed):
    tdev = device.torch_device
    if t.device != tdev and not (
        tdev.type == "cuda" and t.device.type == "cuda" and t.device.index in (None, tdev.index)
    ):
        # a program without tensor inputs allocates on torch's default device
        t = t.to(tdev)
    return GpuArray._new(t, aval, device, committed)


# --- jit ------------------------------------------------------------------------------------------
class DeviceExecutable:
    """What ``jit`` keeps for a program compiled for a GPU: unwraps GPU arrays into torch tensors,
    calls the Triton executable and wraps its outputs as GPU arrays."""

    def __init__(self, exe, out_avals, device):
        self.exe = exe
        self.out_avals = list(out_avals)
        self.device = device
        self._run_on = exe.run_on
        self._tdev = device.torch_device
        self._cuda_index = None  # the CUDA device the kernels must launch on (None: interpreter)
        if isinstance(device, CudaDevice):
            import torch

            self._cuda_index = device.id
            self._current = torch._C._cuda_getDevice

    def __call__(self, leaves):
        dev = self.device
        ins, foreign = [], None
        for a in leaves:
            if type(a) is GpuArray and a._device is dev:
                ins.append(a._value)
            elif _is_torch_tensor(a):
                ins.append(a)
                foreign = foreign or []
                foreign.append(a)
            else:
                ins.append(_gpu_leaf(a, dev)[0])
        outs = call_on(dev, self.exe, ins)
        if foreign:  # never alias a buffer the caller may change
            outs = [o.clone() if any(o is f for f in foreign) else o for o in outs]
        return [_wrap_gpu(o, a, dev, True) for o, a in zip(outs, self.out_avals)]

    def call_arrays(self, args):
        """``self(args)`` for GPU arrays that ``gpu_signature`` accepted for this device (their
        buffers are contiguous tensors of the compiled types there): ``jit``'s fast path."""
        index = self._cuda_index
        if index is not None and self._current() != index:
            return self(list(args))
        outs = self._run_on(self._tdev, [a._value for a in args])
        dev = self.device
        return [GpuArray._new(o, a, dev) for o, a in zip(outs, self.out_avals)]


def gpu_signature(args):
    """``(aval, ..., device, matmul precision)`` when every argument is a GPU array committed to
    one device, else None: the key of ``jit``'s dispatch fast path (what the full key holds for
    such arguments, without flattening them or looking at their placement again)."""
    dev = None
    sig = []
    for a in args:
        if type(a) is not GpuArray or not a._committed:
            return None
        if dev is None:
            dev = a._device
        elif a._device is not dev:
            return None
        sig.append(a.aval)
    if dev is None:
        return None
    sig.append(dev)
    sig.append(matmul_precision())
    return tuple(sig)


def check_consts(consts, device, what: str) -> None:
    """A jitted program's captured arrays: host ones become constants of the program (copied to
    the device once, with the program); ones committed to another device are an error."""
    for c in consts:
        if isinstance(c, GpuArray) and c._committed and c._device is not device:
            raise DeviceError(
                f"{what} runs on {device} (where its arguments are) but uses an array "
                f"{c.aval.str_short()} committed to {c._device} that it closes over{where()}. "
                "Pass it as an argument, or move it with functx.device_put(x, device)."
            )


core.eager_rules["gpu"] = bind_eager
device_rules.update(
    cpu_device=CPU, from_foreign=from_foreign, place_new=place_new, default_device=default_device
)

__all__ = [
    "CPU",
    "CpuDevice",
    "CudaDevice",
    "Device",
    "DeviceError",
    "DeviceExecutable",
    "GpuArray",
    "InterpretedGpuDevice",
    "NoDeviceError",
    "bind_eager",
    "config",
    "default_backend",
    "default_device",
    "default_matmul_precision",
    "device_count",
    "device_get",
    "device_put",
    "devices",
    "get_default_device",
    "gpu_signature",
    "local_devices",
    "matmul_precision",
    "op_device",
    "place_new",
]
