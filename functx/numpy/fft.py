"""``functx.numpy.fft``: discrete Fourier transforms with the names, signatures and semantics of
``jax.numpy.fft`` (NumPy's, with JAX's dtypes: float32 and complex64 stay single precision, and
64-bit results need ``jax_enable_x64``).

Every transform is the ``fft`` primitive (``functx.lax.fft``, ``functx/control/fft.py``) over the
trailing axes, with the requested axes moved there first and the input cropped or zero-padded to
``n``/``s``. Transforms of more than three axes are composed of transforms of at most three, as
JAX does. ``norm`` is "backward" (the default: the inverse transforms are scaled by ``1/n``),
"ortho" (both by ``1/sqrt(n)``) or "forward" (the forward ones by ``1/n``).
"""

from __future__ import annotations

import operator

import numpy as np

from functx import dtypes
from functx.control.fft import FftType, fft as _lax_fft
from functx.errors import (
    FunctxTypeError,
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)
from functx.numpy import _complex, _core as jnp
from functx.source_info import where
from functx.tracing import get_aval

_FFT, _IFFT, _RFFT, _IRFFT = FftType.FFT, FftType.IFFT, FftType.RFFT, FftType.IRFFT


def _array(name, a):
    """``a`` as an array (JAX's ``ensure_arraylike``: arrays and scalars, no lists)."""
    if isinstance(a, (list, tuple)):
        raise FunctxTypeError(
            f"jax.numpy.fft.{name} requires ndarray or scalar arguments, got {type(a)} at "
            f"position 0.{where()}"
        )
    try:
        get_aval(a)
    except TypeError:
        raise FunctxTypeError(
            f"jax.numpy.fft.{name} requires ndarray or scalar arguments, got {type(a)} at "
            f"position 0.{where()}"
        ) from None
    return jnp.asarray(a)


def _norm_factor(s, name, norm, dtype):
    """The factor ``norm`` applies to a transform of lengths ``s`` (None: none)."""
    if norm is None or norm == "backward":
        return None
    if norm not in ("ortho", "forward"):
        raise FunctxValueError(
            f'Invalid norm value {norm}; should be "backward","ortho" or "forward".'
        )
    real = np.dtype(dtypes.REAL_OF.get(np.dtype(dtype), dtype))
    n = np.prod(np.asarray(s, real), dtype=real)
    if norm == "ortho":
        n = np.sqrt(n)
    f = n if name.startswith("i") or n == 0 else real.type(1) / n  # (n = 0: an empty result)
    return np.asarray(f, dtype)


def _core_nd(arr, fft_type, s):
    """The transform of the trailing ``len(s)`` axes, as transforms of at most three axes."""
    if len(s) <= 3:
        return _lax_fft(arr, fft_type, tuple(s))
    n = 2 if len(s) == 4 else 3
    nd = get_aval(arr).ndim
    src = tuple(range(nd - len(s), nd - n))
    dst = tuple(range(nd - len(s) + n, nd))
    if fft_type in (_RFFT, _FFT):
        arr = _lax_fft(arr, fft_type, tuple(s)[-n:])
        arr = jnp.moveaxis(arr, src, dst)
        arr = _core_nd(arr, _FFT, s[:-n])
        return jnp.moveaxis(arr, dst, src)
    arr = jnp.moveaxis(arr, src, dst)
    arr = _core_nd(arr, _IFFT, s[:-n])
    arr = jnp.moveaxis(arr, dst, src)
    return _lax_fft(arr, fft_type, tuple(s)[-n:])


def _core(name, fft_type, a, s, axes, norm):
    full = f"jax.numpy.fft.{name}"
    arr = _array(name, a)
    nd = get_aval(arr).ndim
    if s is not None:
        s = tuple(map(operator.index, s))
        if any(x <= 0 for x in s):
            raise FunctxValueError("Shape should be positive.")
    if s is not None and axes is not None and len(s) != len(axes):
        raise FunctxValueError("Shape and axes have different lengths.")
    orig_axes = axes
    if axes is None:
        axes = range(nd) if s is None else range(nd - len(s), nd)
    axes = tuple(axes)
    if len(axes) != len(set(axes)):
        raise FunctxValueError(f"{full} does not support repeated axes. Got axes {axes}.")
    if orig_axes is not None:
        orig_axes = tuple(jnp._canon_axis(ax, nd) for ax in orig_axes)
    if len(axes) > nd:
        raise FunctxValueError(
            f"FFT input shape {get_aval(arr).shape} must have at least as many input "
            f"dimensions as fft_lengths {tuple(s) if s is not None else axes}."
        )
    axes = tuple(range(nd - len(axes), nd))
    if orig_axes is not None:
        arr = jnp.moveaxis(arr, orig_axes, axes)
    shape = get_aval(arr).shape
    if s is not None:
        want = list(shape)
        for ax, x in zip(axes, s):
            want[ax] = x
        if fft_type == _IRFFT:
            want[-1] = want[-1] // 2 + 1
        arr = arr[tuple(slice(w) for w in want)]
        have = get_aval(arr).shape
        if tuple(have) != tuple(want):
            arr = jnp.pad(arr, [(0, w - h) for w, h in zip(want, have)])
    elif fft_type == _IRFFT:
        s = [shape[ax] for ax in axes[:-1]]
        if axes:
            s += [max(0, 2 * (shape[axes[-1]] - 1))]
    else:
        s = [shape[ax] for ax in axes]
    out = _core_nd(arr, fft_type, s)
    factor = _norm_factor(s, name, norm, get_aval(out).dtype)
    if factor is not None:
        out = jnp.multiply(out, factor)
    if orig_axes is not None:
        out = jnp.moveaxis(out, axes, orig_axes)
    return out


def _one_axis(name, axis):
    if isinstance(axis, (list, tuple)):
        full = f"jax.numpy.fft.{name}"
        raise FunctxValueError(
            f"{full} does not support multiple axes. Please use {full}n. Got axis = {axis!r}."
        )


def _core_1d(name, fft_type, a, n, axis, norm):
    _one_axis(name, axis)
    return _core(
        name, fft_type, a, None if n is None else [n], None if axis is None else [axis], norm
    )


def _core_2d(name, fft_type, a, s, axes, norm):
    if len(axes) != 2:
        raise FunctxValueError(f"jax.numpy.fft.{name} only supports 2 axes. Got axes = {axes!r}.")
    return _core(name, fft_type, a, s, axes, norm)


def _pocketfft(transform):
    """Adds to a transform's docstring, before its example, the paragraph all of them share: how
    functx computes it (none under ``python -OO``, which drops docstrings)."""
    if transform.__doc__ is None:
        return transform
    transform.__doc__ = transform.__doc__.replace(
        "\n    Example:",
        """
    Differences from JAX: computed with pocketfft (SciPy's, else NumPy's); JAX's CPU FFT is ducc, so
    values agree to rounding, not bit for bit. Under ``jit`` it is a library step of the program
    (cuFFT through torch on the Triton backend).

    Example:""",
        1,
    )
    return transform


# --- one axis ------------------------------------------------------------------------------------
@_pocketfft
def fft(a, n=None, axis=-1, norm=None):
    """The one-dimensional discrete Fourier transform (``jax.numpy.fft.fft``).

    Arguments:
      a: the input array (real inputs are transformed as complex).
      n: the length of the transformed axis: the input is cropped or zero-padded to it
        (default: its length).
      axis: the axis to transform (default -1).
      norm: "backward" (default, no scaling), "ortho" (``1/sqrt(n)``) or "forward" (``1/n``).
    Returns:
      The complex transform (complex64, or complex128 for 64-bit inputs with x64 on).

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.fft(np.array([1.0, 2.0, 3.0, 4.0])))
      [10.+0.j -2.+2.j -2.+0.j -2.-2.j]
    """
    return _core_1d("fft", _FFT, a, n, axis, norm)


@_pocketfft
def ifft(a, n=None, axis=-1, norm=None):
    """The one-dimensional inverse discrete Fourier transform (``jax.numpy.fft.ifft``).

    Arguments:
      a: the input array.
      n: the length of the transformed axis (the input is cropped or zero-padded to it).
      axis: the axis to transform (default -1).
      norm: "backward" (default: scaled by ``1/n``), "ortho" or "forward" (no scaling).
    Returns:
      The complex inverse transform.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.ifft(np.array([10, -2 + 2j, -2, -2 - 2j])))
      [1.+0.j 2.+0.j 3.+0.j 4.+0.j]
    """
    return _core_1d("ifft", _IFFT, a, n, axis, norm)


@_pocketfft
def rfft(a, n=None, axis=-1, norm=None):
    """The one-dimensional discrete Fourier transform of a real input: the ``n // 2 + 1``
    non-negative frequencies (``jax.numpy.fft.rfft``).

    Arguments:
      a: a real input array (a complex one is a ValueError).
      n: the length of the transformed axis (the input is cropped or zero-padded to it).
      axis: the axis to transform (default -1).
      norm: "backward" (default), "ortho" or "forward".
    Returns:
      The complex half spectrum, ``n // 2 + 1`` long along ``axis``.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.rfft(np.array([1.0, 2.0, 3.0, 4.0])))
      [10.+0.j -2.+2.j -2.+0.j]
    """
    return _core_1d("rfft", _RFFT, a, n, axis, norm)


@_pocketfft
def irfft(a, n=None, axis=-1, norm=None):
    """The inverse of ``rfft``: a real signal from its half spectrum (``jax.numpy.fft.irfft``).

    Arguments:
      a: the half spectrum.
      n: the length of the real output (default ``2 * (m - 1)`` for ``m`` input entries); the
        input is cropped or zero-padded to ``n // 2 + 1`` entries.
      axis: the axis to transform (default -1).
      norm: "backward" (default: scaled by ``1/n``), "ortho" or "forward".
    Returns:
      The real signal, ``n`` long along ``axis``.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.irfft(np.array([10, -2 + 2j, -2])))
      [1. 2. 3. 4.]
    """
    return _core_1d("irfft", _IRFFT, a, n, axis, norm)


@_pocketfft
def hfft(a, n=None, axis=-1, norm=None):
    """The transform of a signal with a Hermitian-symmetric spectrum, given by its first half: a
    real result (``jax.numpy.fft.hfft``, computed as JAX does: ``irfft(conj(a)) * n``).

    Arguments:
      a: the first half of the Hermitian-symmetric input.
      n: the length of the real output (default ``2 * (m - 1)``).
      axis: the axis to transform (default -1).
      norm: "backward" (default), "ortho" or "forward".
    Returns:
      The real transform, ``n`` long along ``axis``.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.hfft(np.array([1.0, 2.0, 3.0])))
      [ 8. -2.  0. -2.]
    """
    _one_axis("hfft", axis)
    conj_a = _complex.conj(_array("hfft", a))
    nn = (get_aval(conj_a).shape[axis] - 1) * 2 if n is None else n
    out = _core_1d("hfft", _IRFFT, conj_a, n, axis, norm)
    return jnp.multiply(out, nn)


@_pocketfft
def ihfft(a, n=None, axis=-1, norm=None):
    """The inverse of ``hfft``: the first half of a Hermitian-symmetric spectrum from a real
    signal (``jax.numpy.fft.ihfft``: ``conj(rfft(a)) / n``).

    Arguments:
      a: a real input array.
      n: the length of the transformed axis (the input is cropped or zero-padded to it).
      axis: the axis to transform (default -1).
      norm: "backward" (default), "ortho" or "forward".
    Returns:
      The complex half spectrum, ``n // 2 + 1`` long along ``axis``.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> x = np.array([1.0, 2.0, 3.0, 4.0])
      >>> print(jnp.fft.ihfft(x).shape, jnp.fft.hfft(jnp.fft.ihfft(x), 4))
      (3,) [1. 2. 3. 4.]
    """
    _one_axis("ihfft", axis)
    arr = _array("ihfft", a)
    nn = get_aval(arr).shape[axis] if n is None else n
    out = _core_1d("ihfft", _RFFT, arr, n, axis, norm)
    return jnp.multiply(_complex.conj(out), 1 / nn)


# --- two axes ------------------------------------------------------------------------------------
@_pocketfft
def fft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional discrete Fourier transform (``jax.numpy.fft.fft2``).

    Arguments:
      a: the input array (at least two axes).
      s: the lengths of the two transformed axes (the input is cropped or zero-padded to them).
      axes: the two axes to transform (default the last two).
      norm: "backward" (default), "ortho" or "forward".
    Returns:
      The complex transform.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.fft2(np.array([[1.0, 2.0], [3.0, 4.0]])))
      [[10.+0.j -2.+0.j]
       [-4.+0.j  0.+0.j]]
    """
    return _core_2d("fft2", _FFT, a, s, axes, norm)


@_pocketfft
def ifft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional inverse discrete Fourier transform (``jax.numpy.fft.ifft2``).

    Arguments:
      a: the input array (at least two axes).
      s: the lengths of the two transformed axes.
      axes: the two axes to transform (default the last two).
      norm: "backward" (default: scaled by ``1/prod(s)``), "ortho" or "forward".
    Returns:
      The complex inverse transform.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.ifft2(np.array([[10.0, -2.0], [-4.0, 0.0]])))
      [[1.+0.j 2.+0.j]
       [3.+0.j 4.+0.j]]
    """
    return _core_2d("ifft2", _IFFT, a, s, axes, norm)


@_pocketfft
def rfft2(a, s=None, axes=(-2, -1), norm=None):
    """The two-dimensional transform of a real input, halved along the last axis
    (``jax.numpy.fft.rfft2``).

    Arguments:
      a: a real input array (at least two axes).
      s: the lengths of the two transformed axes.
      axes: the two axes to transform (default the last two).
      norm: "backward" (default), "ortho" or "forward".
    Returns:
      The complex transform, ``s[-1] // 2 + 1`` long along the last of ``axes``.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.rfft2(np.array([[1.0, 2.0], [3.0, 4.0]])))
      [[10.+0.j -2.+0.j]
       [-4.+0.j  0.+0.j]]
    """
    return _core_2d("rfft2", _RFFT, a, s, axes, norm)


@_pocketfft
def irfft2(a, s=None, axes=(-2, -1), norm=None):
    """The inverse of ``rfft2`` (``jax.numpy.fft.irfft2``).

    Arguments:
      a: the half spectrum (at least two axes).
      s: the shape of the real output along ``axes`` (default: the input's, with the last one
        ``2 * (m - 1)``).
      axes: the two axes to transform (default the last two).
      norm: "backward" (default), "ortho" or "forward".
    Returns:
      The real inverse transform.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.irfft2(np.array([[10.0, -2.0], [-4.0, 0.0]])))
      [[1. 2.]
       [3. 4.]]
    """
    return _core_2d("irfft2", _IRFFT, a, s, axes, norm)


# --- any number of axes --------------------------------------------------------------------------
@_pocketfft
def fftn(a, s=None, axes=None, norm=None):
    """The N-dimensional discrete Fourier transform (``jax.numpy.fft.fftn``).

    Arguments:
      a: the input array.
      s: the lengths of the transformed axes (the input is cropped or zero-padded to them).
      axes: the axes to transform (default: the last ``len(s)``, or all).
      norm: "backward" (default), "ortho" or "forward".
    Returns:
      The complex transform.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.fftn(np.ones((2, 2))))
      [[4.+0.j 0.+0.j]
       [0.+0.j 0.+0.j]]
    """
    return _core("fftn", _FFT, a, s, axes, norm)


@_pocketfft
def ifftn(a, s=None, axes=None, norm=None):
    """The N-dimensional inverse discrete Fourier transform (``jax.numpy.fft.ifftn``).

    Arguments:
      a: the input array.
      s: the lengths of the transformed axes.
      axes: the axes to transform (default: the last ``len(s)``, or all).
      norm: "backward" (default: scaled by ``1/prod(s)``), "ortho" or "forward".
    Returns:
      The complex inverse transform.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.ifftn(np.array([[4.0, 0.0], [0.0, 0.0]])))
      [[1.+0.j 1.+0.j]
       [1.+0.j 1.+0.j]]
    """
    return _core("ifftn", _IFFT, a, s, axes, norm)


@_pocketfft
def rfftn(a, s=None, axes=None, norm=None):
    """The N-dimensional transform of a real input, halved along the last transformed axis
    (``jax.numpy.fft.rfftn``).

    Arguments:
      a: a real input array.
      s: the lengths of the transformed axes.
      axes: the axes to transform (default: the last ``len(s)``, or all).
      norm: "backward" (default), "ortho" or "forward".
    Returns:
      The complex transform, ``s[-1] // 2 + 1`` long along the last of ``axes``.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.rfftn(np.ones((2, 2))))
      [[4.+0.j 0.+0.j]
       [0.+0.j 0.+0.j]]
    """
    return _core("rfftn", _RFFT, a, s, axes, norm)


@_pocketfft
def irfftn(a, s=None, axes=None, norm=None):
    """The inverse of ``rfftn`` (``jax.numpy.fft.irfftn``).

    Arguments:
      a: the half spectrum.
      s: the shape of the real output along ``axes`` (default: the input's, with the last one
        ``2 * (m - 1)``).
      axes: the axes to transform (default: the last ``len(s)``, or all).
      norm: "backward" (default), "ortho" or "forward".
    Returns:
      The real inverse transform.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.irfftn(np.array([[4.0, 0.0], [0.0, 0.0]])))
      [[1. 1.]
       [1. 1.]]
    """
    return _core("irfftn", _IRFFT, a, s, axes, norm)


# --- frequencies and shifts ----------------------------------------------------------------------
def _check_freq_args(name, n, d):
    if isinstance(n, (list, tuple)):
        raise FunctxValueError(
            f"The n argument of jax.numpy.fft.{name} only takes an int. Got n = {list(n)}."
        )
    if isinstance(d, (list, tuple)):
        raise FunctxValueError(
            f"The d argument of jax.numpy.fft.{name} only takes a single value. Got d = {list(d)}."
        )


def fftfreq(n, d=1.0, *, dtype=None, device=None):
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``: ``[0, 1,
    ..., n//2 - 1 (or n//2), -(n//2), ..., -1] / (d * n)`` (``jax.numpy.fft.fftfreq``).

    Arguments:
      n: the transform length (an int).
      d: the sample spacing (a scalar).
      dtype: the result's dtype (default: the default float dtype).
      device: accepted for JAX's signature (the default device is used).
    Returns:
      An array of ``n`` frequencies.
    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.fftfreq(4))
      [ 0.    0.25 -0.5  -0.25]
    """
    del device
    dtype = dtypes.default_float() if dtype is None else dtype
    _check_freq_args("fftfreq", n, d)
    out_dtype = dtype
    fdt = dtypes.finfo(dtypes.REAL_OF.get(np.dtype(dtype), _inexact(dtype))).dtype
    i = jnp.arange(n, dtype=fdt)
    k = jnp.subtract(jnp.remainder(jnp.add(i, n // 2), n), n // 2)
    out = jnp.divide(jnp.astype(k, fdt), jnp.asarray(d * n, dtype=fdt))
    return jnp.astype(out, out_dtype)


def _inexact(dt):
    dt = np.dtype(dt)
    if dtypes.is_inexact(dt):
        return dt
    return dtypes.canonicalize(np.float64 if dt in (np.int64, np.uint64) else np.float32)


def rfftfreq(n, d=1.0, *, dtype=None, device=None):
    """The non-negative sample frequencies of an ``n``-point ``rfft`` with sample spacing ``d``:
    ``[0, 1, ..., n//2] / (d * n)`` (``jax.numpy.fft.rfftfreq``).

    Arguments:
      n: the transform length (an int).
      d: the sample spacing (a scalar).
      dtype: the dtype of the frequency indices (default: the default float dtype).
      device: accepted for JAX's signature (the default device is used).
    Returns:
      An array of ``n // 2 + 1`` frequencies.
    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.rfftfreq(4))
      [0.   0.25 0.5 ]
    """
    del device
    dtype = dtypes.default_float() if dtype is None else dtype
    _check_freq_args("rfftfreq", n, d)
    k = jnp.arange(0, n // 2 + 1, dtype=dtype)
    return jnp.divide(k, jnp.asarray(d * n, dtype=dtype))


def _shift(name, x, axes, sign):
    x = _array(name, x)
    shape = get_aval(x).shape
    if axes is None:
        axes = tuple(range(len(shape)))
        shift = [sign * (n // 2) for n in shape]
    elif isinstance(axes, int):
        shift = sign * (shape[axes] // 2)
    else:
        shift = [sign * (shape[ax] // 2) for ax in axes]
    return jnp.roll(x, shift, axes)


def fftshift(x, axes=None):
    """Move the zero frequency to the middle: roll each of ``axes`` by half its length
    (``jax.numpy.fft.fftshift``).

    Arguments:
      x: the array (a spectrum, or frequencies from ``fftfreq``).
      axes: an int or a sequence of ints (default: every axis).
    Returns:
      The rolled array.
    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.fftshift(jnp.fft.fftfreq(4)))
      [-0.5  -0.25  0.    0.25]
    """
    return _shift("fftshift", x, axes, 1)


def ifftshift(x, axes=None):
    """The inverse of ``fftshift`` (``jax.numpy.fft.ifftshift``).

    Arguments:
      x: the array.
      axes: an int or a sequence of ints (default: every axis).
    Returns:
      The rolled array.
    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> print(jnp.fft.ifftshift(np.array([-2, -1, 0, 1, 2])))
      [ 0  1  2 -2 -1]
    """
    return _shift("ifftshift", x, axes, -1)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "fft",
    "fft2",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifft2",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfft2",
    "irfftn",
    "rfft",
    "rfft2",
    "rfftfreq",
    "rfftn",
]
