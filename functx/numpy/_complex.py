"""Complex numbers in ``functx.numpy``: the parts of a complex array (``real``, ``imag``), its
conjugate and argument (``conj``/``conjugate``, ``angle``) and the element tests ``iscomplex`` and
``isreal``, with JAX's semantics for real operands (``real`` is the array itself, ``imag`` zeros,
``conj`` the array itself)."""

from __future__ import annotations

from functx import dtypes, ops
from functx.numpy import _core as jnp


def _arr(x):
    return x if jnp._is_array(x) else jnp.asarray(x)


def _is_complex(x) -> bool:
    return jnp._aval(x).dtype in dtypes.COMPLEX


def real(val, /):
    """The real part of each element (JAX's ``jax.numpy.real``); a real array is returned as is.

    Arguments:
      val: an array or scalar (a Python complex is a weakly typed complex64).

    Returns:
      an array of ``val``'s shape: float32 for complex64, float64 for complex128, ``val``'s own
      dtype for real operands.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.real(jnp.array([1 + 2j, 3 - 4j])))
      [1. 3.]
    """
    val = _arr(val)
    return ops.real(val) if _is_complex(val) else val


def imag(val, /):
    """The imaginary part of each element (JAX's ``jax.numpy.imag``); zeros for a real array.

    Arguments:
      val: an array or scalar.

    Returns:
      an array of ``val``'s shape: float32 for complex64, float64 for complex128, ``val``'s own
      dtype (all zeros) for real operands.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.imag(jnp.array([1 + 2j, 3 - 4j])))
      [ 2. -4.]
    """
    val = _arr(val)
    return ops.imag(val) if _is_complex(val) else jnp.zeros_like(val)


def conjugate(x, /):
    """The complex conjugate of each element (JAX's ``jax.numpy.conjugate``); a real array is
    returned as is.

    Arguments:
      x: an array or scalar.

    Returns:
      an array of ``x``'s shape and dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.conjugate(jnp.array([1 + 2j, 3 - 4j])))
      [1.-2.j 3.+4.j]
    """
    x = _arr(x)
    return ops.conj(x) if _is_complex(x) else x


conj = conjugate


def angle(z, deg=False):
    """The argument (phase) of each element, ``atan2(imag, real)`` (JAX's ``jax.numpy.angle``).

    Arguments:
      z: an array or scalar; integers and bools are converted to float first, as in JAX.
      deg: give degrees instead of radians.

    Returns:
      a real floating-point array of ``z``'s shape (float32 for complex64 and float32).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.angle(jnp.array([1j, -1.0, 1 + 1j]), deg=True))
      [ 90. 180.  45.]
    """
    z = _arr(z)
    if _is_complex(z):
        re, im = ops.real(z), ops.imag(z)
    else:
        (re,) = jnp._promote_float("angle", z)
        im = jnp.zeros_like(re)
    out = jnp.arctan2(im, re)
    return jnp.rad2deg(out) if deg else out


def iscomplex(x, /):
    """Whether each element has a non-zero imaginary part (JAX's ``jax.numpy.iscomplex``).

    Arguments:
      x: an array or scalar.

    Returns:
      a bool array of ``x``'s shape (all False for real operands).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.iscomplex(jnp.array([1 + 2j, 3 + 0j])))
      [ True False]
    """
    x = _arr(x)
    return jnp.not_equal(imag(x), 0)


def isreal(x, /):
    """Whether each element has a zero imaginary part (JAX's ``jax.numpy.isreal``).

    Arguments:
      x: an array or scalar.

    Returns:
      a bool array of ``x``'s shape (all True for real operands).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.isreal(jnp.array([1 + 2j, 3 + 0j])))
      [False  True]
    """
    x = _arr(x)
    return jnp.equal(imag(x), 0)
