"""Devices and the default device: the device objects (``CpuDevice``, ``CudaDevice``,
``InterpretedGpuDevice``), ``functx.devices()`` and its relatives, the placement errors, and the
default device (its setting lives in ``functx.config``; this module turns names such as "gpu:1"
into devices and registers that check in ``config.checkers``).

GPUs are looked up on first use (importing torch only then): ``gpu_devices()``.
"""

from __future__ import annotations

import importlib.util
import threading

from functx import config
from functx.array import device_rules
from functx.errors import FunctxError


class DeviceError(FunctxError, ValueError):
    """Operands on different devices, or a device argument that cannot be used (a ``ValueError``;
    JAX raises ``ValueError`` there too).

    Example:
      >>> import functx
      >>> issubclass(functx.DeviceError, ValueError)
      True
    """


class NoDeviceError(FunctxError, RuntimeError):
    """A platform was asked for that this process has no device of (no GPU, say)."""


# --- Devices --------------------------------------------------------------------------------------
class Device:
    """One device (``jax.Device``): ``platform`` is "cpu" or "gpu", ``id`` its index on that
    platform.

    Example:
      >>> import functx
      >>> d = functx.devices("cpu")[0]
      >>> d.platform, d.id, str(d)
      ('cpu', 0, 'cpu:0')
    """

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

    def __str__(self):  # JAX's: "cpu:0", "cuda:0"
        return f"{'cuda' if self.platform == 'gpu' else self.platform}:{self.id}"


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

# The processes of a distributed run: ``functx.distributed.initialize()`` fills this table (and
# ``shutdown()`` empties it) with "devices" (backend -> every process's devices), "process_index"
# and "process_count". Empty: functx runs in one process.
processes: dict = {}
_gpu_list: list | None = None
_gpu_lock = threading.Lock()
GPU_IN_USE = False  # set once a GPU device object exists; jit's dispatch fast path reads it


def gpu_devices() -> list:
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
                    elif (
                        config.triton_interpret() and importlib.util.find_spec("triton") is not None
                    ):
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
      >>> import functx
      >>> functx.devices("cpu")
      [CpuDevice(id=0)]
    """
    if "devices" in processes:
        return processes["devices"](backend)
    return _local(backend)


def _local(backend: str | None) -> list[Device]:
    if backend is None:
        return list(gpu_devices()) or [CPU]
    name = backend.lower() if isinstance(backend, str) else backend
    if name == "cpu":
        return [CPU]
    if name in ("gpu", "cuda"):
        gpus = gpu_devices()
        if not gpus:
            raise NoDeviceError(_no_gpu_message(f"functx.devices({backend!r})"))
        return list(gpus)
    raise ValueError(f"functx.devices: unknown platform {backend!r}; use 'cpu' or 'gpu'")


def local_devices(process_index=None, backend: str | None = None, host_id=None) -> list[Device]:
    """The devices of a process (``jax.local_devices``): this process's, the same as
    ``devices`` unless ``functx.distributed.initialize()`` started a run of several processes.

    Arguments:
      process_index: None or this process's index (each process sees only its own devices:
        another index raises ValueError); host_id: its old name.
      backend: None (the default backend) or "cpu" / "gpu".
    Returns:
      A list of ``Device``.
    Example:
      >>> import functx
      >>> functx.local_devices(backend="cpu")
      [CpuDevice(id=0)]
    """
    index = process_index if process_index is not None else host_id
    me = processes.get("process_index", 0)
    if index is not None and index != me:
        raise DeviceError(
            f"local_devices: process_index={index}: functx lists only this process's devices "
            f"(process {me})"
        )
    if "local_devices" in processes:
        return processes["local_devices"](backend)
    return _local(backend)


def device_count(backend: str | None = None) -> int:
    """How many devices ``devices(backend)`` lists (``jax.device_count``).

    Arguments:
      backend: None (the default backend) or "cpu" / "gpu".
    Returns:
      An int.
    Example:
      >>> import functx
      >>> functx.device_count("cpu")
      1
    """
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """How many devices this process has: ``len(local_devices(backend))``.

    Arguments:
      backend: "cpu", "gpu" or None (the default platform).
    Returns:
      an int.
    Example:
      >>> import functx
      >>> functx.local_device_count("cpu")
      1
    """
    return len(local_devices(backend=backend))


def process_count(backend: str | None = None) -> int:
    """The number of processes of the computation: 1 unless ``functx.distributed.initialize()``
    started a run of several processes (``jax.process_count``).

    Arguments:
      backend: accepted for JAX's signature.
    Returns:
      1.
    Example:
      >>> import functx
      >>> functx.process_count()
      1
    """
    return processes.get("process_count", 1)


def process_index(backend: str | None = None) -> int:
    """This process's index among ``process_count()`` processes (``jax.process_index``): 0 in a
    single process, the rank after ``functx.distributed.initialize()``.

    Arguments:
      backend: accepted for JAX's signature.
    Returns:
      0.
    Example:
      >>> import functx
      >>> functx.process_index()
      0
    """
    return processes.get("process_index", 0)


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of all processes: ``[0]``.

    Arguments:
      backend: accepted for JAX's signature.
    Returns:
      a list of ints.
    Example:
      >>> import functx
      >>> functx.process_indices()
      [0]
    """
    return list(range(processes.get("process_count", 1)))


def default_backend() -> str:
    """The platform ``devices()`` lists (``jax.default_backend``): "gpu" when there is one, else
    "cpu".

    Arguments:
      (none)
    Returns:
      A str, "cpu" or "gpu".
    Example:
      >>> import functx
      >>> functx.default_backend() in ("cpu", "gpu")
      True
    """
    return "gpu" if gpu_devices() else "cpu"


# --- The default device ---------------------------------------------------------------------------
# The setting lives in functx.config (which cannot import this module): it asks check_device.
_env_default: Device | None = None


def _parse_device(spec: str, what: str) -> Device:
    s = spec.strip().lower()
    name, _, idx = s.partition(":")
    if name == "cpu" and idx in ("", "0"):
        return CPU
    if name in ("gpu", "cuda") and (idx == "" or idx.isdigit()):
        gpus = gpu_devices()
        i = int(idx or 0)
        if not gpus:
            raise NoDeviceError(_no_gpu_message(f"{what}={spec!r}"))
        if i >= len(gpus):
            raise NoDeviceError(f"{what}={spec!r}: there are {len(gpus)} GPUs ({gpus})")
        return gpus[i]
    raise ValueError(f"{what}={spec!r}: expected 'cpu', 'gpu' or 'gpu:N'")


def check_device(device, what: str) -> Device:
    """``device`` as a ``Device``: a device object as is, a name ("cpu", "gpu", "gpu:N") looked
    up; anything else is a ``DeviceError`` naming ``what``."""
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
    dev = config.default_device_setting()
    if dev is not None:
        return dev
    if _env_default is not None:
        return _env_default
    return _resolve_env_default()


def _resolve_env_default() -> Device:
    """``FUNCTX_DEFAULT_DEVICE``, read once (a GPU there is looked up on first use)."""
    global _env_default
    spec = config.default_device_spec()
    if not spec or spec.lower() in ("cpu", "cpu:0"):
        _env_default = CPU
    else:
        _env_default = _parse_device(spec, "FUNCTX_DEFAULT_DEVICE")
    return _env_default


class default_device:
    """Make a device the default in a ``with`` block, in this thread only (``jax.default_device``).

    Arguments:
      device: a ``Device``, or None for the configured default.
    Returns:
      A context manager.
    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> with functx.default_device(functx.devices("cpu")[0]):
      ...     x = jnp.ones(2)
      >>> [d.platform for d in x.devices()]
      ['cpu']
    """

    def __init__(self, device):
        self.device = None if device is None else check_device(device, "functx.default_device")

    def __enter__(self):
        config.push_default_device(self.device)
        return self.device

    def __exit__(self, *exc):
        config.pop_default_device()


def cuda_device(index) -> Device:
    """The ``CudaDevice`` of torch's CUDA device ``index`` (None: 0)."""
    for d in gpu_devices():
        if isinstance(d, CudaDevice) and d.id == (index or 0):
            return d
    raise NoDeviceError(
        f"an array on CUDA device {index} was given, but functx sees {gpu_devices() or 'no GPU'}"
    )


# --- the tables of lower modules that this module fills ---------------------------------------
config.checkers["device"] = check_device
device_rules["cpu_device"] = CPU
device_rules["default_device"] = default_device
