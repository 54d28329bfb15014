"""functx: JAX-style function transformations with staged compilation, in Python.

Write a pure numerical function with ``functx.numpy``; functx traces it into a printable IR
(``make_jaxpr``), transforms it, and runs it.
"""

from functx import (
    config as config,  # noqa: PLC0414
    dtypes,
    errors,
    lax,
    nn,
    numpy as numpy,  # noqa: PLC0414
    tree_util,
)
from functx.array import Array
from functx.config import default_matmul_precision
from functx.control.custom_derivatives import custom_jvp, custom_vjp
from functx.core import ClosedJaxpr, Jaxpr, ShapedArray, typecheck_jaxpr
from functx.devices.device import (
    Device,
    DeviceError,
    default_backend,
    default_device,
    device_count,
    devices,
    local_devices,
)
from functx.devices.transfer import device_get, device_put
from functx.errors import (
    CacheWarning,
    ConcretizationError,
    FunctxError,
    FunctxIndexError,
    FunctxOverflowError,
    FunctxTypeError,
    FunctxValueError,
    UnsupportedError,
)
from functx.jit import jit
from functx.tracing import ShapeDtypeStruct, make_jaxpr
from functx.transforms.jvp import jvp
from functx.transforms.linearize import linearize
from functx.transforms.vjp import grad, hessian, jacfwd, jacobian, jacrev, value_and_grad, vjp
from functx.transforms.vmap import vmap

__version__ = "0.1.0"


def block_until_ready(x):
    """Wait until a pytree of arrays is computed (GPU work runs asynchronously); returns ``x``."""
    if type(x) is Array:  # host arrays are computed by the time they exist
        return x
    for leaf in tree_util.tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


__all__ = [
    "Array",
    "CacheWarning",
    "ClosedJaxpr",
    "ConcretizationError",
    "Device",
    "DeviceError",
    "FunctxError",
    "FunctxIndexError",
    "FunctxOverflowError",
    "FunctxTypeError",
    "FunctxValueError",
    "Jaxpr",
    "ShapeDtypeStruct",
    "ShapedArray",
    "UnsupportedError",
    "block_until_ready",
    "config",
    "custom_jvp",
    "custom_vjp",
    "default_backend",
    "default_device",
    "default_matmul_precision",
    "device_count",
    "device_get",
    "device_put",
    "devices",
    "local_devices",
    "dtypes",
    "errors",
    "grad",
    "jit",
    "hessian",
    "jacfwd",
    "jacobian",
    "jacrev",
    "jvp",
    "lax",
    "linearize",
    "make_jaxpr",
    "nn",
    "numpy",
    "tree_util",
    "typecheck_jaxpr",
    "value_and_grad",
    "vjp",
    "vmap",
]
