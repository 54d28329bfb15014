"""``functx.experimental``: JAX's ``jax.experimental`` names that functx has.

``enable_x64()`` and ``disable_x64()`` are the context managers older JAX releases kept here
(JAX 0.10 spells them ``jax.enable_x64(True)`` / ``jax.enable_x64(False)``, which functx has
too): inside the block, in this thread, ``jax_enable_x64`` is on (off).
"""

from __future__ import annotations

from functx import config
from functx.control.callbacks import io_callback as io_callback
from functx.errors import missing_name_hook as _missing_name_hook
from functx.experimental import checkify as checkify, jet as jet, ode as ode, sparse as sparse


def enable_x64(new_val: bool = True):
    """A block in which 64-bit dtypes are enabled (``jax_enable_x64`` on) in this thread: Python
    floats and ints are weak float64/int64, ``jnp.zeros`` gives float64, NumPy float64 inputs stay
    float64. ``jit`` compiles separately for each mode.

    Arguments:
      new_val: the value of ``jax_enable_x64`` in the block (default True).

    Returns:
      a context manager (also usable as a decorator).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental import enable_x64
      >>> with enable_x64():
      ...     print(jnp.zeros(2).dtype, (jnp.ones(2, jnp.float32) + 1.0).dtype)
      float64 float32
    """
    return config.enable_x64(new_val)


def disable_x64():
    """A block in which 64-bit dtypes are disabled (``jax_enable_x64`` off) in this thread, as
    ``jax.enable_x64(False)`` (JAX 0.10.2 has no ``jax.experimental.disable_x64``): 64-bit inputs
    and dtype requests canonicalize to 32 bits, as in JAX's default mode.

    Arguments:
      (none)
    Returns:
      a context manager (also usable as a decorator).
    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> from functx.experimental import disable_x64
      >>> with disable_x64():
      ...     print(jnp.asarray(np.ones(2)).dtype, jnp.arange(3).dtype)
      float32 int32
    """
    return config.enable_x64(False)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["checkify", "disable_x64", "enable_x64", "io_callback", "jet", "ode", "sparse"]
