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

The package, bottom up: ``device`` (device objects, ``devices()``, the default device),
``gpu_array`` (``GpuArray``, the torch dtype map, host <-> torch copies), ``transfer``
(``device_put``, ``device_get``, ``op_device``: the placement rules), ``eager`` (eager GPU
operations and what ``jit`` runs on a GPU). Importing it registers ``eager.bind_eager`` as the
eager path's GPU rule.

``functx.devices`` the attribute is the function ``devices()`` (re-exported by ``functx``), not
this package: inside functx import from the modules (``from functx.devices.transfer import
device_put``), never ``import functx.devices as ...``.
"""

from functx.devices import eager as eager
from functx.devices.device import (
    CPU as CPU,
    CpuDevice as CpuDevice,
    CudaDevice as CudaDevice,
    Device as Device,
    DeviceError as DeviceError,
    InterpretedGpuDevice as InterpretedGpuDevice,
    NoDeviceError as NoDeviceError,
    default_backend as default_backend,
    default_device as default_device,
    device_count as device_count,
    devices as devices,
    get_default_device as get_default_device,
    local_devices as local_devices,
)
from functx.devices.eager import (
    DeviceExecutable as DeviceExecutable,
    bind_eager as bind_eager,
    check_consts as check_consts,
    gpu_signature as gpu_signature,
    gpu_tree_signature as gpu_tree_signature,
)
from functx.devices.gpu_array import GpuArray as GpuArray
from functx.devices.transfer import (
    device_get as device_get,
    device_put as device_put,
    from_foreign as from_foreign,
    op_device as op_device,
    place_new as place_new,
)
