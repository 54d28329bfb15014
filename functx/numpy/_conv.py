"""``functx.numpy.convolve`` and ``correlate``: one-dimensional convolutions on
``functx.lax.conv_general_dilated`` (``functx/_conv.py``), with JAX's dtypes (inexact unless
``preferred_element_type`` is given), modes and errors."""

from __future__ import annotations

from functx import _conv, ops
from functx.errors import FunctxValueError
from functx.numpy import _core as jnp


def _conv1d(name, a, v, mode, precision, preferred_element_type):
    a = jnp.asarray(a) if not jnp._is_array(a) else a
    v = jnp.asarray(v) if not jnp._is_array(v) else v
    if a.ndim != 1 or v.ndim != 1:
        raise FunctxValueError(f"{name}() only support 1-dimensional inputs.")
    kind = "inexact" if preferred_element_type is None else None
    a, v = jnp._promote_only(a, v, kind=kind)
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise FunctxValueError(
            f"{name}: inputs cannot be empty, got shapes {a.shape} and {v.shape}."
        )
    reverse = False
    if name == "correlate":
        if v.dtype.kind == "c":
            v = ops.conj(v)
        if a.shape[0] < v.shape[0]:
            a, v, reverse = v, a, True
    else:
        if a.shape[0] < v.shape[0]:
            a, v = v, a
        v = ops.rev(v, (0,))
    k = v.shape[0]
    if mode == "valid":
        padding = [(0, 0)]
    elif mode == "same":
        padding = [(k // 2, k - k // 2 - 1)]
    elif mode == "full":
        padding = [(k - 1, k - 1)]
    else:
        raise FunctxValueError("mode must be one of ['full', 'same', 'valid']")
    out = _conv.conv_general_dilated(
        ops.reshape(a, (1, 1, a.shape[0])),
        ops.reshape(v, (1, 1, k)),
        (1,),
        padding,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )
    out = ops.reshape(out, (out.shape[-1],))
    return ops.rev(out, (0,)) if reverse else out


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """The discrete convolution of two one-dimensional arrays, like ``jax.numpy.convolve``
    (NumPy's ``convolve``; integer inputs give a float result unless ``preferred_element_type``
    says otherwise).

    Arguments:
      a: the first one-dimensional array.
      v: the second one-dimensional array.
      mode: 'full' (every overlap, length ``len(a) + len(v) - 1``), 'same' (the length of the
        longer input, centred) or 'valid' (full overlaps only).
      precision: as ``functx.lax.conv_general_dilated``.
      preferred_element_type: the accumulation and result dtype, or None.

    Returns:
      The convolution, a one-dimensional array.

    Differences from JAX: a composite: ``make_jaxpr`` shows a ``pad``, strided ``slice``s and one
    ``dot_general`` per kernel tap (a ``gather`` beyond 64 taps) where JAX shows one
    ``conv_general_dilated``; values agree to rounding.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5]))
      Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
    """
    return _conv1d("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """The cross-correlation of two one-dimensional arrays, like ``jax.numpy.correlate``:
    ``c[k] = sum_n a[n + k] * conj(v[n])``.

    Arguments:
      a: the first one-dimensional array.
      v: the second one-dimensional array (conjugated).
      mode: 'valid' (full overlaps only), 'same' or 'full', as in ``convolve``.
      precision: as ``functx.lax.conv_general_dilated``.
      preferred_element_type: the accumulation and result dtype, or None.

    Returns:
      The correlation, a one-dimensional array.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.correlate(jnp.array([1.0, 2.0, 3.0]), jnp.array([0.0, 1.0, 0.5]))
      Array([3.5], dtype=float32)
    """
    return _conv1d("correlate", a, v, mode, precision, preferred_element_type)


__all__ = ["convolve", "correlate"]
