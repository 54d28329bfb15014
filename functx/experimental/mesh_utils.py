"""``functx.experimental.mesh_utils``: arrays of devices shaped for a ``Mesh``
(``jax.experimental.mesh_utils``).

JAX orders devices by their physical links (TPU torus coordinates, GPU slices); functx's devices
are the host CPU devices, the GPU, or one device per process, with no topology to follow, so the
devices are taken in ``functx.devices()`` order.
"""

from __future__ import annotations

import math

import numpy as np

from functx.errors import FunctxValueError
from functx.sharding import mesh_devices

__all__ = ["create_device_mesh", "create_hybrid_device_mesh", "device_kind_handler_dict"]

# JAX's table of per-device-kind mesh builders (TPU generations); functx has none.
device_kind_handler_dict: dict = {}


def _as_array(api, shape, devices) -> np.ndarray:
    shape = tuple(int(s) for s in shape)
    devices = list(mesh_devices() if devices is None else devices)
    if math.prod(shape) != len(devices):
        raise FunctxValueError(
            f"{api}: number of devices {len(devices)} must equal the product of mesh_shape {shape}"
        )
    out = np.empty(len(devices), dtype=object)
    out[:] = devices
    return out.reshape(shape)


def create_device_mesh(
    mesh_shape,
    devices=None,
    *,
    contiguous_submeshes: bool = False,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """An array of devices of shape ``mesh_shape``, for ``functx.sharding.Mesh``
    (``jax.experimental.mesh_utils.create_device_mesh``).

    Arguments:
      mesh_shape: the shape; its product must be the number of devices.
      devices: the devices (default: those ``functx.make_mesh`` uses), in order.
      contiguous_submeshes, allow_split_physical_axes: JAX's options for TPU topologies (no
        effect: functx's devices have no topology).
    Returns:
      A NumPy object array of devices.
    Raises:
      ValueError: the product of ``mesh_shape`` is not the number of devices.
    Example:
      >>> import functx
      >>> from functx.experimental import mesh_utils
      >>> m = mesh_utils.create_device_mesh((1, 1))
      >>> m.shape, m[0, 0] is functx.devices()[0]
      ((1, 1), True)
    """
    del contiguous_submeshes, allow_split_physical_axes
    return _as_array("create_device_mesh", mesh_shape, devices)


def create_hybrid_device_mesh(
    mesh_shape,
    dcn_mesh_shape,
    devices=None,
    *,
    process_is_granule: bool = False,
    should_sort_granules_by_key: bool = True,
    allow_split_physical_axes: bool = False,
) -> np.ndarray:
    """A mesh over several hosts (``jax.experimental.mesh_utils.create_hybrid_device_mesh``):
    the devices of each process (a "granule") form a ``mesh_shape`` block, and the blocks are
    laid out as ``dcn_mesh_shape``; the result's shape is their product, axis by axis.

    functx groups devices by process (JAX's ``process_is_granule=True``; its TPU slices do not
    exist here), in process order.

    Arguments:
      mesh_shape: each process's block shape.
      dcn_mesh_shape: the layout of the processes' blocks (its product: the processes).
      devices: the devices (default: those ``functx.make_mesh`` uses).
      process_is_granule, should_sort_granules_by_key, allow_split_physical_axes: JAX's
        options (no effect).
    Returns:
      A NumPy object array of devices.
    Raises:
      ValueError: shapes of different lengths, or counts that do not match.
    Example:
      >>> from functx.experimental import mesh_utils
      >>> mesh_utils.create_hybrid_device_mesh((1,), (1,)).shape
      (1,)
    """
    del process_is_granule, should_sort_granules_by_key, allow_split_physical_axes
    api = "create_hybrid_device_mesh"
    mesh_shape, dcn = tuple(mesh_shape), tuple(dcn_mesh_shape)
    if len(mesh_shape) != len(dcn):
        raise FunctxValueError(
            f"{api}: mesh_shape {mesh_shape} and dcn_mesh_shape {dcn} differ in length"
        )
    devices = list(mesh_devices() if devices is None else devices)
    granules: dict = {}
    for d in devices:
        granules.setdefault(getattr(d, "process_index", 0), []).append(d)
    if len(granules) != math.prod(dcn):
        raise FunctxValueError(
            f"{api}: {len(granules)} processes, but dcn_mesh_shape {dcn} asks for {math.prod(dcn)}"
        )
    blocks = [_as_array(api, mesh_shape, granules[k]) for k in sorted(granules)]
    grid = np.empty(len(blocks), dtype=object)
    grid[:] = blocks
    grid = grid.reshape(dcn)
    out = np.empty(tuple(m * n for m, n in zip(mesh_shape, dcn)), dtype=object)
    for pos in np.ndindex(*dcn):
        index = tuple(slice(p * m, (p + 1) * m) for p, m in zip(pos, mesh_shape))
        out[index] = grid[pos]
    return out
