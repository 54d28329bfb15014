"""``functx.scipy.signal``: JAX's ``jax.scipy.signal`` convolutions: ``convolve``,
``correlate``, ``convolve2d``, ``correlate2d`` (direct, on ``functx.lax.conv_general_dilated``)
and ``fftconvolve`` (``method='fft'``, on ``functx.numpy.fft``). As in JAX, ``method='auto'``
is the direct method, and the 2-D functions support only ``boundary='fill'`` with
``fillvalue=0``.
"""

from __future__ import annotations

import operator

from functx import _conv, ops
from functx.errors import FunctxValueError, missing_name_hook as _missing_name_hook
from functx.numpy import _core as jnp, fft as _fft
from functx.transforms.vmap import vmap as _vmap

_MODES = ("full", "same", "valid")


def _arrays(*xs):
    return [jnp.asarray(x) if not jnp._is_array(x) else x for x in xs]


def _flip(x):
    return ops.rev(x, tuple(range(x.ndim)))


def _conj(x):
    return ops.conj(x) if x.dtype.kind == "c" else x


def _convolve_nd(in1, in2, mode, precision):
    if mode not in _MODES:
        raise FunctxValueError("mode must be one of ['full', 'same', 'valid']")
    if in1.ndim != in2.ndim:
        raise FunctxValueError("in1 and in2 must have the same number of dimensions")
    if in1.size == 0 or in2.size == 0:
        raise FunctxValueError(
            f"zero-size arrays not supported in convolutions, got shapes {in1.shape} and "
            f"{in2.shape}."
        )
    in1, in2 = jnp._promote_only(in1, in2, kind="inexact")
    no_swap = all(a >= b for a, b in zip(in1.shape, in2.shape))
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
        raise FunctxValueError("One input must be smaller than the other in every dimension.")
    shape_o = in2.shape
    if swap:
        in1, in2 = in2, in1
    shape = in2.shape
    in2 = _flip(in2)
    if mode == "valid":
        padding = [(0, 0)] * len(shape)
    elif mode == "same":
        padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2) for s, so in zip(shape, shape_o)]
    else:
        padding = [(s - 1, s - 1) for s in shape]
    out = _conv.conv_general_dilated(
        ops.reshape(in1, (1, 1, *in1.shape)),
        ops.reshape(in2, (1, 1, *in2.shape)),
        (1,) * in1.ndim,
        padding,
        precision=precision,
    )
    return ops.reshape(out, out.shape[2:])


def _fftconvolve_one(in1, in2, mode):
    full = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape))
    if mode == "valid":
        no_swap = all(a >= b for a, b in zip(in1.shape, in2.shape))
        swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
        if not (no_swap or swap):
            raise FunctxValueError(
                "For 'valid' mode, One input must be at least as large as the other in every "
                "dimension."
            )
        if swap:
            in1, in2 = in2, in1
    if all(a == 1 or b == 1 for a, b in zip(in1.shape, in2.shape)):
        conv = jnp.multiply(in1, in2)
    elif in1.dtype.kind == "c":
        conv = _fft.ifftn(_fft.fftn(in1, full) * _fft.fftn(in2, full), full)
    else:
        conv = _fft.irfftn(_fft.rfftn(in1, full) * _fft.rfftn(in2, full), full)
    if mode == "full":
        out = full
    elif mode == "same":
        out = in1.shape
    else:
        out = tuple(a - b + 1 for a, b in zip(in1.shape, in2.shape))
    start = [(f - o) // 2 for f, o in zip(full, out)]
    return ops.slice(conv, start, [s + o for s, o in zip(start, out)])


def fftconvolve(in1, in2, mode="full", axes=None):
    """The convolution of two N-dimensional arrays by the FFT, like
    ``jax.scipy.signal.fftconvolve``.

    Arguments:
      in1: the first array.
      in2: the second array, of the same rank.
      mode: 'full', 'same' (the shape of ``in1``, centred) or 'valid'.
      axes: the axes to convolve over (None: all); the others must have equal sizes in both
        inputs and are mapped over.

    Returns:
      The convolution, of an inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import fftconvolve
      >>> fftconvolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 1.0])).round(4)
      Array([1., 3., 5., 3.], dtype=float32)
    """
    in1, in2 = _arrays(in1, in2)
    in1, in2 = jnp._promote_only(in1, in2, kind="inexact")
    if in1.ndim != in2.ndim:
        raise FunctxValueError("in1 and in2 should have the same dimensionality")
    if mode not in _MODES:
        raise FunctxValueError("mode must be one of ['same', 'full', 'valid']")

    def one(a, b):
        return _fftconvolve_one(a, b, mode)

    if axes is None:
        return one(in1, in2)
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    axes = tuple(operator.index(a) % in1.ndim for a in axes)
    mapped = sorted(set(range(in1.ndim)) - set(axes))
    if any(in1.shape[i] != in2.shape[i] for i in mapped):
        raise FunctxValueError(
            f"mapped axes must have same shape; got in1.shape={in1.shape} "
            f"in2.shape={in2.shape} axes={axes}"
        )
    fn = one
    for ax in mapped:
        fn = _vmap(fn, in_axes=ax, out_axes=ax)
    return fn(in1, in2)


def convolve(in1, in2, mode="full", method="auto", precision=None):
    """The convolution of two N-dimensional arrays, like ``jax.scipy.signal.convolve``.

    Arguments:
      in1: the first array.
      in2: the second array, of the same rank, smaller or larger than ``in1`` in every
        dimension.
      mode: 'full', 'same' (the shape of ``in1``, centred) or 'valid'.
      method: 'auto' or 'direct' (``lax.conv_general_dilated``), or 'fft' (``fftconvolve``).
      precision: as ``functx.lax.conv_general_dilated``.

    Returns:
      The convolution, of an inexact dtype.

    Differences from JAX: a composite: ``make_jaxpr`` shows a ``pad``, strided ``slice``s and one
    ``dot_general`` per kernel tap (a ``gather`` beyond 64 taps) where JAX shows one
    ``conv_general_dilated``; values agree to rounding.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import convolve
      >>> convolve(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 1.0]))
      Array([1., 3., 5., 3.], dtype=float32)
    """
    if method == "fft":
        return fftconvolve(in1, in2, mode=mode)
    if method not in ("direct", "auto"):
        raise FunctxValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")
    in1, in2 = _arrays(in1, in2)
    return _convolve_nd(in1, in2, mode, precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
    """The cross-correlation of two N-dimensional arrays, like
    ``jax.scipy.signal.correlate``: the convolution with ``in2`` flipped and conjugated.

    Arguments:
      in1: the first array.
      in2: the second array, of the same rank.
      mode: 'full', 'same' or 'valid'.
      method: 'auto', 'direct' or 'fft'.
      precision: as ``functx.lax.conv_general_dilated``.

    Returns:
      The correlation, of an inexact dtype.

    Differences from JAX: a composite: ``make_jaxpr`` shows a ``pad``, strided ``slice``s and one
    ``dot_general`` per kernel tap (a ``gather`` beyond 64 taps) where JAX shows one
    ``conv_general_dilated``; values agree to rounding.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import correlate
      >>> correlate(jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 0.5]))
      Array([0.5, 2. , 3.5, 3. ], dtype=float32)
    """
    in1, in2 = _arrays(in1, in2)
    return convolve(in1, _flip(_conj(in2)), mode, precision=precision, method=method)


def _check_2d(name, in1, in2, boundary, fillvalue):
    if boundary != "fill" or fillvalue != 0:
        raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
    if in1.ndim != 2 or in2.ndim != 2:
        raise FunctxValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The convolution of two 2-D arrays, like ``jax.scipy.signal.convolve2d``.

    Arguments:
      in1: the first 2-D array.
      in2: the second 2-D array.
      mode: 'full', 'same' or 'valid'.
      boundary: only 'fill' (zeros beyond the edges).
      fillvalue: only 0.
      precision: as ``functx.lax.conv_general_dilated``.

    Returns:
      The 2-D convolution, of an inexact dtype.

    Differences from JAX: a composite: ``make_jaxpr`` shows a ``pad``, strided ``slice``s and one
    ``dot_general`` per kernel tap (a ``gather`` beyond 64 taps) where JAX shows one
    ``conv_general_dilated``; values agree to rounding.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import convolve2d
      >>> convolve2d(jnp.array([[1, 2], [3, 4]]), jnp.array([[1, 1]]))
      Array([[1., 3., 2.],
             [3., 7., 4.]], dtype=float32)
    """
    in1, in2 = _arrays(in1, in2)
    _check_2d("convolve2d", in1, in2, boundary, fillvalue)
    return _convolve_nd(in1, in2, mode, precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
    """The cross-correlation of two 2-D arrays, like ``jax.scipy.signal.correlate2d``.

    Arguments:
      in1: the first 2-D array.
      in2: the second 2-D array (conjugated).
      mode: 'full', 'same' or 'valid'.
      boundary: only 'fill' (zeros beyond the edges).
      fillvalue: only 0.
      precision: as ``functx.lax.conv_general_dilated``.

    Returns:
      The 2-D correlation, of an inexact dtype.

    Differences from JAX: a composite: ``make_jaxpr`` shows a ``pad``, strided ``slice``s and one
    ``dot_general`` per kernel tap (a ``gather`` beyond 64 taps) where JAX shows one
    ``conv_general_dilated``; values agree to rounding.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import correlate2d
      >>> correlate2d(jnp.array([[1, 2], [3, 4]]), jnp.array([[1, 1]]))
      Array([[1., 3., 2.],
             [3., 7., 4.]], dtype=float32)
    """
    in1, in2 = _arrays(in1, in2)
    _check_2d("correlate2d", in1, in2, boundary, fillvalue)
    swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
    same_shape = in1.shape == in2.shape
    if mode == "same":
        return _flip(_convolve_nd(_flip(in1), _conj(in2), mode, precision))
    if mode == "valid":
        if swap and not same_shape:
            return _convolve_nd(_flip(in2), _conj(in1), mode, precision)
        return _flip(_convolve_nd(_flip(in1), _conj(in2), mode, precision))
    if swap:
        return _conj(_convolve_nd(_flip(in2), _conj(in1), mode, precision))
    return _flip(_convolve_nd(_flip(in1), _conj(in2), mode, precision))


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]
