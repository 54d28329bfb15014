"""functx: JAX-style function transformations with staged compilation, in Python.

Write a pure numerical function with ``functx.numpy``; functx traces it into a printable IR
(``make_jaxpr``), transforms it, and runs it.
"""

from functx import dtypes, errors, lax, nn, tree_util
from functx import numpy as numpy  # noqa: PLC0414
from functx.array import Array
from functx.custom_derivatives import custom_jvp, custom_vjp
from functx.core import ClosedJaxpr, Jaxpr, ShapedArray, typecheck_jaxpr
from functx.errors import ConcretizationError, FunctxError, FunctxTypeError, UnsupportedError
from functx.jit import jit
from functx.tracing import ShapeDtypeStruct, make_jaxpr
from functx.transforms.jvp import jvp
from functx.transforms.linearize import linearize
from functx.transforms.vjp import grad, hessian, jacfwd, jacobian, jacrev, value_and_grad, vjp
from functx.transforms.vmap import vmap
from functx import custom_batching as _custom_batching  # noqa: F401  (registers vmap rules)

__version__ = "0.1.0"


def device_put(x, device=None):
    """Place a pytree of arrays on a device (only the CPU exists yet): converts leaves to Arrays."""
    return tree_util.tree_map(lambda v: numpy.asarray(v), x)


def block_until_ready(x):
    """Wait for a pytree of arrays to be computed (eager CPU arrays already are)."""
    return x


__all__ = [
    "Array", "ClosedJaxpr", "ConcretizationError", "FunctxError", "FunctxTypeError", "Jaxpr",
    "ShapeDtypeStruct", "ShapedArray", "UnsupportedError", "block_until_ready", "custom_jvp",
    "custom_vjp", "device_put",
    "dtypes", "errors", "grad", "jit", "hessian", "jacfwd", "jacobian", "jacrev", "jvp", "lax",
    "linearize", "make_jaxpr", "nn", "numpy", "tree_util", "typecheck_jaxpr", "value_and_grad",
    "vjp", "vmap",
]
