"""``functx.scipy.signal``: JAX's ``jax.scipy.signal``.

The convolutions ``convolve``, ``correlate``, ``convolve2d``, ``correlate2d`` (direct, on
``functx.lax.conv_general_dilated``) and ``fftconvolve`` (``method='fft'``, on
``functx.numpy.fft``). As in JAX, ``method='auto'`` is the direct method, and the 2-D functions
support only ``boundary='fill'`` with ``fillvalue=0``.

The spectral functions ``detrend``, ``stft``, ``istft``, ``csd`` and ``welch``: composites of
``functx.numpy`` (frames by one gather, overlap-add by one scatter-add, transforms by
``functx.numpy.fft``), so ``jit``, ``grad`` and ``vmap`` apply. Segment lengths, overlaps,
breakpoints and window names are static, as in JAX.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np

from functx import _conv, dtypes, numpy as fnp, ops
from functx.errors import (
    FunctxValueError,
    UnsupportedError,
    missing_name_hook as _missing_name_hook,
)
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


# ---------------------------------------------------------------------------------------------
# Spectral analysis: detrend, stft, istft, csd, welch
# ---------------------------------------------------------------------------------------------


def _inexact(x):
    (x,) = _arrays(x)
    return jnp._promote_only(x, kind="inexact")[0]


def _along(x, axis, lo, hi):
    """``x[lo:hi]`` along ``axis`` (static bounds)."""
    index = [slice(None)] * x.ndim
    index[axis] = slice(lo, hi)
    return x[tuple(index)]


def _remove_line(seg, axis):
    """``seg`` less its least-squares line along ``axis`` (centred abscissae: no normal equations
    to solve, and a single point is its own line)."""
    m = seg.shape[axis]
    mean = fnp.mean(seg, axis=axis, keepdims=True)
    if m < 2:
        return seg - mean
    t = np.arange(m) - (m - 1) / 2
    shape = [1] * seg.ndim
    shape[axis] = m
    t = fnp.asarray((t / np.sqrt(np.sum(t * t))).reshape(shape), dtype=seg.dtype.type(0).real.dtype)
    slope = fnp.sum(t * seg, axis=axis, keepdims=True)
    return seg - mean - slope * t


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):  # noqa: A002
    """Removes a linear (or piecewise linear) or constant trend along an axis, like
    ``jax.scipy.signal.detrend``.

    Arguments:
      data: the array (integers compute in the default float dtype).
      axis: the axis along which to detrend.
      type: ``'linear'`` (subtract the least-squares line) or ``'constant'`` (subtract the mean).
      bp: static breakpoints: with ``'linear'``, a separate line is fitted between consecutive
        breakpoints.
      overwrite_data: not supported (must be None), as in JAX.

    Returns:
      The detrended array, of ``data``'s shape and inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import detrend
      >>> print(detrend(jnp.array([1.0, 4.0, 8.0, 8.0, 9.0])).round(4) + 0)
      [-1.  0.  2.  0. -1.]
    """
    if overwrite_data is not None:
        raise UnsupportedError("overwrite_data argument not implemented.")
    if type not in ("constant", "linear"):
        raise FunctxValueError("Trend type must be 'linear' or 'constant'.")
    data = _inexact(data)
    if type == "constant":
        return data - fnp.mean(data, axis=axis, keepdims=True)
    axis = operator.index(axis) % max(data.ndim, 1)
    n = data.shape[axis]
    bps = np.unique(np.r_[0, np.asarray(bp, dtype=np.int64).ravel(), n])
    if bps[0] < 0 or bps[-1] > n:
        raise FunctxValueError(
            "Breakpoints must be non-negative and less than length of data along given axis."
        )
    pieces = [_remove_line(_along(data, axis, lo, hi), axis) for lo, hi in zip(bps, bps[1:])]
    if not pieces:
        return data
    return pieces[0] if len(pieces) == 1 else fnp.concatenate(pieces, axis=axis)


def _get_window(window, n):
    """A named window (``scipy.signal.get_window``: a name or a (name, parameters) tuple) of ``n``
    points, periodic as for spectral analysis, in float64."""
    from scipy.signal import get_window

    if n == 0:  # (an empty signal: SciPy refuses a window of no points)
        return np.zeros(0)
    try:
        return np.asarray(get_window(window, n), np.float64)
    except ValueError as err:
        raise FunctxValueError(f"window={window!r}: {err}") from None


def _triage_window(window, nperseg, length, dtype):
    """The window as an array of ``dtype`` and the segment length: a named window takes
    ``nperseg`` points (default: the whole signal, at most the signal); an array window fixes it."""
    if isinstance(window, (str, tuple)):
        n = length if nperseg is None else nperseg
        if n > length:
            warnings.warn(
                f"nperseg={n} is greater than input_length={length}, using nperseg={length}",
                stacklevel=4,
            )
            n = length
        return fnp.asarray(_get_window(window, n), dtype=dtype), n
    win = fnp.asarray(window, dtype=dtype)
    n = win.size if nperseg is None else nperseg
    if win.ndim != 1:
        raise FunctxValueError("window must be 1-D")
    if length < win.size:
        raise FunctxValueError("window is longer than input signal")
    if n != win.size:
        raise FunctxValueError("value specified for nperseg is different from length of window")
    return win, n


def _pad_ends(mode, **kw):
    def pad(x, n):
        return fnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode, **kw)

    return pad


def _odd_ext(x, n):
    """``x`` extended by ``n`` points at each end by point reflection about its end values."""
    if n < 1:
        return x
    if n > x.shape[-1] - 1:
        raise FunctxValueError(
            f"The extension length n ({n}) is too big. It must not exceed x.shape[axis]-1, "
            f"which is {x.shape[-1] - 1}."
        )
    first, last = x[..., :1], x[..., -1:]
    left = 2 * first - fnp.flip(x[..., 1 : n + 1], axis=-1)
    right = 2 * last - fnp.flip(x[..., -(n + 1) : -1], axis=-1)
    return fnp.concatenate([left, x, right], axis=-1)


# boundary= of stft: how the signal is extended by half a segment at each end
_BOUNDARIES = {
    "even": _pad_ends("reflect"),
    "odd": _odd_ext,
    "constant": _pad_ends("edge"),
    "zeros": _pad_ends("constant"),
    None: lambda x, n: x,
}


def _frames(x, nperseg, nstep):
    """The segments of the last axis, ``(..., nseg, nperseg)``, by one gather."""
    starts = np.arange(0, x.shape[-1] - nperseg + 1, nstep)
    return x[..., starts[:, None] + np.arange(nperseg)]


def _overlap_add(frames, nstep):
    """The inverse of ``_frames``: ``(..., nseg, nperseg)`` summed into their places, by one
    scatter-add."""
    *batch, nseg, nperseg = frames.shape
    where = np.arange(nseg)[:, None] * nstep + np.arange(nperseg)
    out = fnp.zeros((*batch, nstep * (nseg - 1) + nperseg), frames.dtype)
    return out.at[..., where].add(frames)


def _detrend_fn(detrend_type, axis):
    """The per-segment detrending (segments ``(..., nseg, nperseg)``): a ``detrend`` type, False,
    or a callable, which (as in JAX) gets the segments' array with its axis ``axis`` moved last."""
    if isinstance(detrend_type, str):
        return lambda d: detrend(d, type=detrend_type, axis=-1)
    if callable(detrend_type):
        return lambda d: fnp.moveaxis(detrend_type(fnp.moveaxis(d, axis, -1)), -1, axis)
    if not detrend_type:
        return lambda d: d
    raise FunctxValueError(f"Unsupported detrend type: {detrend_type}")


def _windowed_fft(x, win, detrend_fn, nperseg, nstep, nfft, twosided):
    segs = detrend_fn(_frames(x, nperseg, nstep))
    if win.dtype.kind == "c" and segs.dtype.kind != "c":
        segs = segs.astype(dtypes.to_complex(segs.dtype))
    segs = win * segs
    return _fft.fft(segs, n=nfft) if twosided else _fft.rfft(fnp.real(segs), n=nfft)


def _spectral(
    x,
    y,
    fs,
    window,
    nperseg,
    noverlap,
    nfft,
    detrend_type,
    return_onesided,
    scaling,
    axis,
    mode,
    boundary=None,
    padded=False,
):
    """The windowed FFTs of ``stft`` (``mode='stft'``) and the (cross) periodograms of ``csd``
    and ``welch`` (``mode='psd'``): (frequencies, segment times, result with frequencies on
    ``axis`` and segments last)."""
    if boundary not in _BOUNDARIES:
        raise FunctxValueError(
            f"Unknown boundary option '{boundary}', must be one of: {list(_BOUNDARIES)}"
        )
    x = _inexact(x)
    axis = operator.index(axis)
    if not -x.ndim <= axis < x.ndim:
        raise FunctxValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
    axis %= x.ndim
    if y is None:
        outer = x.shape[:axis] + x.shape[axis + 1 :]
    else:
        (y,) = _arrays(y)
        x, y = jnp._promote_only(x, y, kind="inexact")
        if x.ndim != y.ndim:
            raise FunctxValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
        try:
            outer = np.broadcast_shapes(
                x.shape[:axis] + x.shape[axis + 1 :], y.shape[:axis] + y.shape[axis + 1 :]
            )
        except ValueError:
            raise FunctxValueError("x and y cannot be broadcast together.") from None
    result_dtype = dtypes.to_complex(x.dtype)
    freq_dtype = np.finfo(result_dtype).dtype
    if nperseg is not None:
        nperseg = int(nperseg)
        if nperseg < 1:
            raise FunctxValueError("nperseg must be a positive integer")
    win, nperseg = _triage_window(window, nperseg, x.shape[axis], x.dtype)
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    nfft = nperseg if nfft is None else int(nfft)
    if y is None and x.size == 0:
        z = fnp.zeros(x.shape, freq_dtype)
        return z, z, fnp.zeros(x.shape, result_dtype)
    if y is not None and (x.size == 0 or y.size == 0):
        shape = (*outer[:axis], min(x.shape[axis], y.shape[axis]), *outer[axis:])
        z = fnp.zeros(shape, freq_dtype)
        return z, z, fnp.zeros(shape, result_dtype)
    x = fnp.moveaxis(x, axis, -1)
    if y is not None:
        y = fnp.moveaxis(y, axis, -1)
        n = max(x.shape[-1], y.shape[-1])
        x, y = (fnp.pad(v, [(0, 0)] * (v.ndim - 1) + [(0, n - v.shape[-1])]) for v in (x, y))
    if nfft < nperseg:
        raise FunctxValueError("nfft must be greater than or equal to nperseg.")
    if noverlap >= nperseg:
        raise FunctxValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    if boundary is not None:
        x = _BOUNDARIES[boundary](x, nperseg // 2)
        y = None if y is None else _BOUNDARIES[boundary](y, nperseg // 2)
    if padded:
        nadd = (-(x.shape[-1] - nperseg) % nstep) % nperseg
        x = fnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, nadd)])
        y = None if y is None else fnp.pad(y, [(0, 0)] * (y.ndim - 1) + [(0, nadd)])
    detrend_fn = _detrend_fn(detrend_type, axis)
    if scaling == "density":
        scale = 1.0 / (fs * fnp.sum(win * win))
    elif scaling == "spectrum":
        scale = 1.0 / fnp.sum(win) ** 2
    else:
        raise FunctxValueError(f"Unknown scaling: {scaling}")
    if mode == "stft":
        scale = fnp.sqrt(scale)
    twosided = not return_onesided
    if not twosided and (x.dtype.kind == "c" or (y is not None and y.dtype.kind == "c")):
        twosided = True
        warnings.warn("Input data is complex, switching to return_onesided=False", stacklevel=3)
    unit = np.fft.fftfreq(nfft) if twosided else np.fft.rfftfreq(nfft)
    freqs = fnp.asarray(unit, freq_dtype) * fs
    result = _windowed_fft(x, win, detrend_fn, nperseg, nstep, nfft, twosided)
    if y is not None:
        result_y = _windowed_fft(y, win, detrend_fn, nperseg, nstep, nfft, twosided)
        result = fnp.conj(result) * result_y
    elif mode == "psd":
        result = fnp.conj(result) * result
    result = result * scale
    if not twosided and mode == "psd":
        double = np.full(result.shape[-1], 2.0)
        double[0] = 1.0
        if nfft % 2 == 0:
            double[-1] = 1.0
        result = result * fnp.asarray(double, freq_dtype)
    times = np.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nstep)
    if boundary is not None:
        times = times - nperseg / 2
    time = fnp.asarray(times, freq_dtype) / fs
    result = result.astype(result_dtype)
    if y is None and mode != "stft":
        result = fnp.real(result)
    return freqs, time, fnp.moveaxis(result, -1, axis)


_SPECTRAL_ARGS = """fs: the sampling frequency (default 1).
      window: a window name or (name, parameters) tuple for ``scipy.signal.get_window``
        (periodic), or a 1-D array of ``nperseg`` points.
      nperseg: the segment length (default: a named window covers the whole signal).
      noverlap: the points shared by consecutive segments (default ``nperseg // 2``).
      nfft: the FFT length, at least ``nperseg`` (default ``nperseg``: no zero padding)."""


def stft(
    x,
    fs=1.0,
    window="hann",
    nperseg=256,
    noverlap=None,
    nfft=None,
    detrend=False,
    return_onesided=True,
    boundary="zeros",
    padded=True,
    axis=-1,
):
    """The short-time Fourier transform, like ``jax.scipy.signal.stft``.

    Arguments:
      x: the signal, time along ``axis``.
      fs: the sampling frequency (default 1).
      window: a window name or (name, parameters) tuple for ``scipy.signal.get_window``
        (periodic), or a 1-D array of ``nperseg`` points.
      nperseg: the segment length (at most the signal's length; default 256).
      noverlap: the points shared by consecutive segments (default ``nperseg // 2``).
      nfft: the FFT length, at least ``nperseg`` (default ``nperseg``: no zero padding).
      detrend: False, ``'constant'``, ``'linear'`` or a callable applied to the segments.
      return_onesided: the non-negative frequencies only (a complex ``x`` is always two-sided).
      boundary: how to extend the signal by half a segment at each end: ``'zeros'``, ``'even'``,
        ``'odd'``, ``'constant'`` or None (no extension).
      padded: pad the end with zeros to a whole number of segments.
      axis: the time axis.

    Returns:
      ``(f, t, Zxx)``: the frequencies, the segment times, and the transforms, scaled as a
      spectrum, of complex dtype, with frequencies on ``axis`` and segments last.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import stft
      >>> f, t, Z = stft(jnp.arange(8.0), nperseg=4)
      >>> print(f, t, Z.shape)
      [0.   0.25 0.5 ] [0. 2. 4. 6. 8.] (3, 5)
    """
    return _spectral(
        x,
        None,
        fs,
        window,
        nperseg,
        noverlap,
        nfft,
        detrend,
        return_onesided,
        "spectrum",
        axis,
        "stft",
        boundary,
        padded,
    )


def csd(
    x,
    y,
    fs=1.0,
    window="hann",
    nperseg=None,
    noverlap=None,
    nfft=None,
    detrend="constant",
    return_onesided=True,
    scaling="density",
    axis=-1,
    average="mean",
):
    """The cross power spectral density by Welch's method, like ``jax.scipy.signal.csd``.

    Arguments:
      x: the first signal, time along ``axis``.
      y: the second signal (of ``x``'s rank, other axes broadcast), or None for ``x``'s own
        spectrum (then real).
      {args}
      detrend: ``'constant'``, ``'linear'``, False or a callable applied to the segments.
      return_onesided: the non-negative frequencies only (complex input is always two-sided).
      scaling: ``'density'`` (V**2/Hz) or ``'spectrum'`` (V**2).
      axis: the time axis.
      average: how the segments' periodograms combine: ``'mean'`` or ``'median'`` (bias
        corrected).

    Returns:
      ``(f, Pxy)``: the frequencies and the cross spectral density (complex; frequencies on
      ``axis``).

    Differences from JAX: ``x`` or ``y`` with no elements gives zeros with the shorter time
    axis in place (JAX's shape there holds the axis number instead).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import csd
      >>> x, y = jnp.array([1.0, 2.0, 0.0, -1.0]), jnp.array([0.0, 1.0, 1.0, 0.0])
      >>> f, P = csd(x, y, nperseg=2)
      >>> print(f, P.dtype)
      [0.  0.5] complex64
    """
    freqs, _, pxy = _spectral(
        x, y, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling, axis, "psd"
    )
    if y is not None and pxy.dtype.kind != "c":
        pxy = pxy.astype(dtypes.to_complex(pxy.dtype))
    if pxy.ndim >= 2 and pxy.size > 0:
        if pxy.shape[-1] > 1:
            if average == "median":
                n = pxy.shape[-1]
                ii = np.arange(2.0, n, 2)
                bias = 1 + np.sum(1.0 / (ii + 1) - 1.0 / ii)
                if pxy.dtype.kind == "c":
                    re = fnp.median(fnp.real(pxy), axis=-1)
                    im = fnp.median(fnp.imag(pxy), axis=-1)
                    pxy = ops.complex(re, im)
                else:
                    pxy = fnp.median(pxy, axis=-1)
                pxy = pxy / fnp.asarray(bias, pxy.dtype)
            elif average == "mean":
                pxy = fnp.mean(pxy, axis=-1)
            else:
                raise FunctxValueError(f'average must be "median" or "mean", got {average}')
        else:
            pxy = fnp.reshape(pxy, pxy.shape[:-1])
    return freqs, pxy


def welch(
    x,
    fs=1.0,
    window="hann",
    nperseg=None,
    noverlap=None,
    nfft=None,
    detrend="constant",
    return_onesided=True,
    scaling="density",
    axis=-1,
    average="mean",
):
    """The power spectral density by Welch's method (the average of windowed periodograms),
    like ``jax.scipy.signal.welch``.

    Arguments:
      x: the signal, time along ``axis``.
      {args}
      detrend: ``'constant'``, ``'linear'``, False or a callable applied to the segments.
      return_onesided: the non-negative frequencies only (complex input is always two-sided).
      scaling: ``'density'`` (V**2/Hz) or ``'spectrum'`` (V**2).
      axis: the time axis.
      average: ``'mean'`` or ``'median'`` (bias corrected).

    Returns:
      ``(f, Pxx)``: the frequencies and the (real) power spectral density, frequencies on
      ``axis``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import welch
      >>> f, P = welch(jnp.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0]), nperseg=4)
      >>> print(f, P.round(3))
      [0.   0.25 0.5 ] [0.    1.333 2.667]
    """
    freqs, pxx = csd(
        x,
        None,
        fs=fs,
        window=window,
        nperseg=nperseg,
        noverlap=noverlap,
        nfft=nfft,
        detrend=detrend,
        return_onesided=return_onesided,
        scaling=scaling,
        axis=axis,
        average=average,
    )
    return freqs, fnp.real(pxx)


def istft(
    Zxx,
    fs=1.0,
    window="hann",
    nperseg=None,
    noverlap=None,
    nfft=None,
    input_onesided=True,
    boundary=True,
    time_axis=-1,
    freq_axis=-2,
):
    """The inverse short-time Fourier transform (windowed overlap-add), like
    ``jax.scipy.signal.istft``.

    Arguments:
      Zxx: the STFT, at least 2-D, frequencies on ``freq_axis`` and segments on ``time_axis``.
      fs: the sampling frequency (default 1).
      window: a window name or (name, parameters) tuple for ``scipy.signal.get_window``
        (periodic), or a 1-D array of ``nperseg`` points.
      nperseg: the segment length (default: from the number of frequencies).
      noverlap: the points shared by consecutive segments (default ``nperseg // 2``).
      nfft: the FFT length of the forward transform (default: from the number of frequencies).
      input_onesided: ``Zxx`` holds the non-negative frequencies of a real signal.
      boundary: the forward transform extended the signal (``stft``'s boundary was not None):
        drop half a segment at each end.
      time_axis: the segment axis.
      freq_axis: the frequency axis.

    Returns:
      ``(t, x)``: the sample times and the signal (real when ``input_onesided``, else complex),
      time last.

    Differences from JAX: as in SciPy, ``noverlap=0`` means segments that do not overlap (JAX
    takes 0 for the default, half a segment), and an odd ``nperseg`` with the default ``nfft``
    inverts (JAX raises a broadcasting TypeError).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.signal import istft, stft
      >>> _, _, Z = stft(jnp.arange(8.0), nperseg=4)
      >>> t, x = istft(Z, nperseg=4)
      >>> print(x.round(4) + 0)
      [0. 1. 2. 3. 4. 5. 6. 7.]
    """
    (zxx,) = _arrays(Zxx)
    if zxx.ndim < 2:
        raise FunctxValueError("Input stft must be at least 2d!")
    nd = zxx.ndim
    for a in (time_axis, freq_axis):
        if not -nd <= operator.index(a) < nd:
            raise FunctxValueError(f"axis {a} is out of bounds for array of dimension {nd}")
    freq_axis, time_axis = operator.index(freq_axis) % nd, operator.index(time_axis) % nd
    if freq_axis == time_axis:
        raise FunctxValueError("Must specify differing time and frequency axes!")
    zxx = zxx.astype(dtypes.to_complex(jnp._inexact(zxx.dtype)))
    n_default = 2 * (zxx.shape[freq_axis] - 1) if input_onesided else zxx.shape[freq_axis]
    nperseg = n_default if nperseg is None else int(nperseg)
    if nperseg < 1:
        raise FunctxValueError("nperseg must be a positive integer")
    if nfft is None:
        nfft = n_default + (1 if input_onesided and nperseg == n_default + 1 else 0)
    else:
        nfft = int(nfft)
    if nfft < nperseg:
        raise FunctxValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
    noverlap = nperseg // 2 if noverlap is None else int(noverlap)
    if noverlap >= nperseg:
        raise FunctxValueError("noverlap must be less than nperseg.")
    nstep = nperseg - noverlap
    outer = [i for i in range(nd) if i not in (time_axis, freq_axis)]
    zxx = fnp.transpose(zxx, (*outer, time_axis, freq_axis))  # (..., segments, frequencies)
    inverse = _fft.irfft if input_onesided else _fft.ifft
    frames = inverse(zxx, n=nfft, axis=-1)[..., :nperseg]
    if isinstance(window, (str, tuple)):
        win = fnp.asarray(_get_window(window, nperseg), frames.dtype)
    else:
        win = fnp.asarray(window, dtype=frames.dtype)
        if win.ndim != 1:
            raise FunctxValueError("window must be 1-D")
        if win.shape[0] != nperseg:
            raise FunctxValueError(f"window must have length of {nperseg}")
    x = _overlap_add(frames * (fnp.sum(win) * win), nstep)
    norm = _overlap_add(fnp.broadcast_to(win * win, frames.shape[-2:]), nstep)
    if boundary:
        x = x[..., nperseg // 2 : -(nperseg // 2)]
        norm = norm[..., nperseg // 2 : -(nperseg // 2)]
    x = x / fnp.where(norm > 1e-10, norm, fnp.ones_like(norm))
    if x.ndim > 1 and time_axis != nd - 1:
        x = fnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    time = fnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
    return time, x


if csd.__doc__ is not None:  # (None under python -OO)
    csd.__doc__ = csd.__doc__.format(args=_SPECTRAL_ARGS)
    welch.__doc__ = welch.__doc__.format(args=_SPECTRAL_ARGS)

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "convolve",
    "convolve2d",
    "correlate",
    "correlate2d",
    "csd",
    "detrend",
    "fftconvolve",
    "istft",
    "stft",
    "welch",
]
