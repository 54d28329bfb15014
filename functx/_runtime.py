"""What a running functx process holds and runs on: ``functx.live_arrays``,
``functx.print_environment_info`` and JAX's old names of the process functions
(``functx.host_count``, ``host_id``, ``host_ids``)."""

from __future__ import annotations

import gc
import os
import sys
import warnings

import numpy as np

from functx.array import Array
from functx.devices import device as _device
from functx.devices.device import process_count, process_index, process_indices
from functx.errors import FunctxRuntimeError
from functx.version import __version__

_PLATFORMS = {"cpu": "cpu", "gpu": "gpu", "cuda": "gpu"}


def live_arrays(platform=None) -> list:
    """The functx Arrays alive in this process (``jax.live_arrays``), found through the garbage
    collector's list of objects (nothing is recorded when an array is made): arrays with a
    buffer, not deleted ones or tracers. Arrays functx itself holds (constants of compiled
    programs, caches) are listed too.

    Arguments:
      platform: None (all), "cpu", or "gpu" ("cuda"); another name is a RuntimeError
        (FunctxRuntimeError), as JAX's unknown backend.
    Returns:
      a list of Arrays.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> x = jnp.arange(7.0)
      >>> any(a is x for a in functx.live_arrays("cpu"))
      True
    """
    if platform is not None and platform not in _PLATFORMS:
        raise FunctxRuntimeError(
            f"Unknown backend {platform}. Available backends are None (all), 'cpu' and 'gpu'"
        )
    want = _PLATFORMS.get(platform)
    out = []
    for obj in gc.get_objects():
        # (by type: isinstance would ask every object of the process, proxies included)
        if issubclass(type(obj), Array) and not obj.is_deleted():
            if want is None or obj.device.platform == want:
                out.append(obj)
    return out


def _version(dist: str) -> str:
    import importlib.metadata  # (this module's heavier imports wait for their first use)

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def print_environment_info(return_string: bool = False) -> str | None:
    """The versions and settings that matter for a bug report (``jax.print_environment_info``):
    functx's, NumPy's and the other libraries functx runs with, Python's, the process count, the
    machine, and the ``FUNCTX_*`` / ``JAX_*`` environment variables set.

    Arguments:
      return_string: return the text instead of printing it.
    Returns:
      the text when ``return_string``, else None.

    Differences from JAX: functx's libraries (no jaxlib); the devices are listed without looking
    for a GPU when no operation has used one yet (looking imports PyTorch).

    Example:
      >>> import functx
      >>> functx.print_environment_info(return_string=True).splitlines()[0].split(":")[0]
      'functx'
    """
    import platform

    gpus = _device.gpu_devices() if _device.GPU_IN_USE else []
    versions = [("functx", __version__), ("numpy", np.__version__)]
    versions += [(d, _version(d)) for d in ("optree", "sympy", "scipy", "ml_dtypes", "torch")]
    versions += [("triton", _version("triton")), ("python", sys.version)]
    lines = [f"{name + ':':<10}{v}" for name, v in versions] + [
        "devices:  cpu" + (f", {len(gpus)} gpu: {[str(g) for g in gpus]}" if gpus else ""),
        f"process_count: {process_count()}",
        f"platform: {platform.uname()}",
        *sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(("FUNCTX_", "JAX_"))),
    ]
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None


def _renamed(old: str, new: str) -> None:
    warnings.warn(
        f"functx.{old} is JAX's old name of functx.{new}; use functx.{new}",
        UserWarning,
        stacklevel=3,
    )


def host_count(backend: str | None = None) -> int:
    """JAX's old name of ``process_count`` (``jax.host_count``, which warns that it was renamed):
    the number of processes, with a warning.

    Arguments:
      backend: accepted for JAX's signature.
    Returns:
      an int.

    Example:
      >>> import warnings, functx
      >>> with warnings.catch_warnings():
      ...     warnings.simplefilter("ignore")
      ...     functx.host_count()
      1
    """
    _renamed("host_count", "process_count")
    return process_count(backend)


def host_id(backend: str | None = None) -> int:
    """JAX's old name of ``process_index`` (``jax.host_id``), with a warning.

    Arguments:
      backend: accepted for JAX's signature.
    Returns:
      an int.

    Example:
      >>> import warnings, functx
      >>> with warnings.catch_warnings():
      ...     warnings.simplefilter("ignore")
      ...     functx.host_id()
      0
    """
    _renamed("host_id", "process_index")
    return process_index(backend)


def host_ids(backend: str | None = None) -> list[int]:
    """JAX's old name of ``process_indices`` (``jax.host_ids``), with a warning.

    Arguments:
      backend: accepted for JAX's signature.
    Returns:
      a list of ints.

    Example:
      >>> import warnings, functx
      >>> with warnings.catch_warnings():
      ...     warnings.simplefilter("ignore")
      ...     functx.host_ids()
      [0]
    """
    _renamed("host_ids", "process_indices")
    return process_indices(backend)
