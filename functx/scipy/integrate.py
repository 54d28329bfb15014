"""``functx.scipy.integrate``: JAX's ``jax.scipy.integrate``: ``trapezoid``."""

from __future__ import annotations

from functx import numpy as jnp
from functx.errors import missing_name_hook as _missing_name_hook


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """The integral of ``y`` along ``axis`` by the trapezoidal rule, as
    ``jax.scipy.integrate.trapezoid`` (the same function as ``functx.numpy.trapezoid``).

    Arguments:
      y: the sampled values.
      x: the sample points along ``axis`` (1-D, or of ``y``'s shape); None for points ``dx``
        apart.
      dx: the spacing of the points when ``x`` is None (default 1.0).
      axis: the axis integrated over (default -1).

    Returns:
      the integral: ``y``'s shape without ``axis``, an inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.integrate import trapezoid
      >>> y = jnp.array([1, 2, 3, 2])
      >>> print(trapezoid(y, dx=0.5), trapezoid(jnp.array([1.0, 3.0]), jnp.array([0.0, 4.0])))
      3.25 8.0
    """
    return jnp.trapezoid(y, x, dx, axis)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["trapezoid"]
