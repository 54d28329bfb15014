"""``functx.scipy.fft``: JAX's ``jax.scipy.fft`` names (the discrete cosine transform), as
composites of ``functx.numpy.fft``, so they trace, differentiate, batch and lower like any FFT.

As in JAX, only the type-2 transform is implemented (its inverse is the type-3 transform, scaled),
with ``norm`` None (or 'backward') and 'ortho'. The type-2 transform of ``N`` real points is one
real FFT of ``N`` points (Makhoul 1980): the even-indexed points in order followed by the
odd-indexed ones reversed, transformed, then each bin ``k`` turned by ``exp(-i pi k / 2N)`` and
its real part taken. The inverse undoes each step. A complex input is transformed as its real and
imaginary parts (the transform has real coefficients).
"""

from __future__ import annotations

import numpy as np

from functx import dtypes, lax
from functx.errors import (
    FunctxArgumentError,
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)
from functx.numpy import _core as jnp, fft as _fft
from functx.source_info import where


def _check(name, type, norm):  # noqa: A002
    if type != 2:
        raise NotImplementedError("Only DCT type 2 is implemented.")
    if norm not in (None, "backward", "ortho"):
        raise FunctxValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented{where()}")


def _length(name, n):
    """``n`` as a positive int (JAX accepts an integral float too)."""
    size = int(n)
    if size != n or size < 1:
        raise FunctxArgumentError(
            f"jax.scipy.fft.{name}: the transform length must be a positive integer, got "
            f"{n!r}{where()}"
        )
    return size


def _resize(name, x, n, axis):
    """``x`` cropped or zero-padded to ``n`` points along ``axis`` (None: as it is, which must
    be at least one point)."""
    have = x.shape[axis]
    n = have if n is None else _length(name, n)
    if n < 1:
        raise FunctxArgumentError(
            f"jax.scipy.fft.{name}: axis {axis} of an array of shape {x.shape} has no points to "
            f"transform{where()}"
        )
    if n < have:
        return lax.slice_in_dim(x, 0, n, axis=axis)
    if n > have:
        pads = [(0, 0)] * x.ndim
        pads[axis] = (0, n - have)
        return jnp.pad(x, pads)
    return x


def _turns(n, norm, dtype):
    """The factor of bin ``k`` of the FFT of the reordered points: ``2 exp(-i pi k / 2n)``, times
    the orthonormal scale (``1/sqrt(4n)`` for bin 0, ``1/sqrt(2n)`` for the others)."""
    k = np.arange(n)
    c = 2 * np.exp(-1j * np.pi * k / (2 * n))
    if norm == "ortho":
        c = c / np.sqrt(2 * n)
        c[0] = c[0] / np.sqrt(2)
    return c.astype(dtype)


def _dct_last(x, norm):
    """The type-2 DCT of real ``x`` along its last axis: the real FFT of the reordered points
    gives bins ``0 .. n/2``; the others are their conjugates (``V_{n-k} = conj(V_k)``)."""
    n = x.shape[-1]
    v = jnp.concatenate([x[..., ::2], jnp.flip(x[..., 1::2], -1)], axis=-1)
    half = _fft.rfft(v, axis=-1)
    spec = jnp.concatenate([half, lax.conj(jnp.flip(half[..., 1 : (n + 1) // 2], -1))], axis=-1)
    return lax.real(spec * _turns(n, norm, spec.dtype))


def _idct_last(y, norm):
    """The inverse of ``_dct_last`` (the type-3 DCT, scaled) of real ``y`` along its last axis:
    bins ``0 .. n/2`` of the spectrum of the reordered points, ``(y_k - i y_{n-k}) / c_k``
    (``y_n = 0``), through the inverse real FFT."""
    n = y.shape[-1]
    rev = jnp.pad(jnp.flip(y[..., (n + 1) // 2 :], -1), [(0, 0)] * (y.ndim - 1) + [(1, 0)])
    spec = lax.complex(y[..., : n // 2 + 1], -rev)
    inv = (1 / _turns(n, norm, np.complex128)[: n // 2 + 1]).astype(spec.dtype)
    v = _fft.irfft(spec * inv, n=n, axis=-1)
    half = (n + 1) // 2  # the even-indexed points, then the odd ones reversed
    even, odd = v[..., :half], jnp.flip(v[..., half:], -1)
    odd = jnp.pad(odd, [(0, 0)] * (y.ndim - 1) + [(0, half - (n - half))])
    both = jnp.stack([even, odd], axis=-1).reshape((*y.shape[:-1], 2 * half))
    return both[..., :n]


def _one(name, x, n, axis, norm, last):
    """``last`` (``_dct_last`` or ``_idct_last``) of ``x`` along ``axis``, after cropping or
    padding it to ``n`` points; computed in the real dtype of ``x``'s FFT (a complex ``x`` as its
    two parts)."""
    axis = jnp._canon_axis(axis, x.ndim)
    x = jnp.moveaxis(_resize(name, x, n, axis), axis, -1)
    cdt = dtypes.to_complex(x.dtype)
    if np.dtype(x.dtype).kind == "c":
        out = lax.complex(last(lax.real(x), norm), last(lax.imag(x), norm))
    else:
        out = last(x.astype(dtypes.REAL_OF[cdt]), norm)
    return jnp.moveaxis(out, -1, axis)


def _many(name, x, s, axes, norm, last):
    """``last`` along each of ``axes`` in turn (JAX's defaults: every axis, or the last
    ``len(s)``; ``s`` and ``axes`` are paired up to the shorter)."""
    x = _fft._array(name, x)
    if axes is None:
        axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
    axes = [jnp._canon_axis(a, x.ndim, "axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise FunctxValueError(f"jax.scipy.fft.{name}: repeated axis: {tuple(axes)}{where()}")
    sizes = [None] * len(axes) if s is None else list(s)
    for axis, n in zip(axes, sizes):
        x = _one(name, x, n, axis, norm, last)
    return x


def dct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
    """The discrete cosine transform of type 2 along one axis (JAX's ``jax.scipy.fft.dct``):
    ``y_k = 2 sum_j x_j cos(pi k (2j + 1) / 2N)``.

    Arguments:
      x: the array to transform.
      type: the DCT type; only 2 (NotImplementedError otherwise, as in JAX).
      n: the number of points: ``x`` is cropped or zero-padded to it along ``axis`` first
        (default: its length there).
      axis: the axis to transform.
      norm: None or 'backward' (unscaled), or 'ortho' (an orthonormal transform: bin 0 scaled by
        ``1/sqrt(4N)``, the others by ``1/sqrt(2N)``).

    Returns:
      The transform, of ``x``'s shape but ``n`` points along ``axis``; real (float32, or
      float64 for float64 input under x64) or, for complex ``x``, complex.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.fft.dct(np.array([1.0, 2.0, 3.0, 4.0], np.float32), norm="ortho").round(4)
      Array([ 5.    , -2.2304,  0.    , -0.1585], dtype=float32)
    """
    _check("dct", type, norm)
    return _one("dct", _fft._array("dct", x), n, axis, norm, _dct_last)


def idct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
    """The inverse of ``dct`` along one axis (JAX's ``jax.scipy.fft.idct``): the type-3 DCT,
    divided by ``2N`` for ``norm=None``.

    Arguments:
      x: the array to transform.
      type: the type of the DCT inverted; only 2 (NotImplementedError otherwise, as in JAX).
      n: the number of points: ``x`` is cropped or zero-padded to it along ``axis`` first.
      axis: the axis to transform.
      norm: None or 'backward' (the exact inverse of ``dct(norm=None)``), or 'ortho' (the inverse,
        and transpose, of the orthonormal ``dct``).

    Returns:
      The inverse transform, of ``x``'s shape but ``n`` points along ``axis``, in ``dct``'s
      dtype.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> y = functx.scipy.fft.dct(np.array([1.0, 2.0, 3.0], np.float32))
      >>> functx.scipy.fft.idct(y).round(4)
      Array([1., 2., 3.], dtype=float32)
    """
    _check("idct", type, norm)
    return _one("idct", _fft._array("idct", x), n, axis, norm, _idct_last)


def dctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
    """The type-2 discrete cosine transform over several axes (JAX's ``jax.scipy.fft.dctn``):
    ``dct`` along each axis in turn.

    Arguments:
      x: the array to transform.
      type: the DCT type; only 2 (NotImplementedError otherwise, as in JAX).
      s: the number of points along each axis of ``axes`` (``x`` cropped or zero-padded first).
      axes: the axes (default: all, or the last ``len(s)`` when ``s`` is given); paired with ``s``
        up to the shorter of the two, as in JAX.
      norm: None or 'backward' (unscaled), or 'ortho' (orthonormal).

    Returns:
      The transform, of ``dct``'s dtype.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.fft.dctn(np.ones((2, 3), np.float32))
      Array([[24.,  0.,  0.],
             [ 0.,  0.,  0.]], dtype=float32)
    """
    _check("dctn", type, norm)
    return _many("dctn", x, s, axes, norm, _dct_last)


def idctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
    """The inverse of ``dctn`` (JAX's ``jax.scipy.fft.idctn``): ``idct`` along each axis in turn.

    Arguments:
      x: the array to transform.
      type: the type of the DCT inverted; only 2 (NotImplementedError otherwise, as in JAX).
      s: the number of points along each axis of ``axes`` (``x`` cropped or zero-padded first).
      axes: the axes (default: all, or the last ``len(s)`` when ``s`` is given); paired with ``s``
        up to the shorter of the two, as in JAX.
      norm: None or 'backward' (the inverse of ``dctn(norm=None)``), or 'ortho'.

    Returns:
      The inverse transform, of ``dct``'s dtype.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> y = functx.scipy.fft.dctn(np.arange(6.0, dtype=np.float32).reshape(2, 3))
      >>> functx.scipy.fft.idctn(y).round(4)
      Array([[0., 1., 2.],
             [3., 4., 5.]], dtype=float32)
    """
    _check("idctn", type, norm)
    return _many("idctn", x, s, axes, norm, _idct_last)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["dct", "dctn", "idct", "idctn"]
