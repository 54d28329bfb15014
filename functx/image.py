"""``functx.image``: JAX's ``jax.image``: ``resize``, ``scale_and_translate`` and ``ResizeMethod``.

Resampling is separable: along each resized axis an output pixel is a weighted sum of the input
pixels, so the resize is one ``(input size, output size)`` weight matrix per axis, contracted with
the image axis by axis (``tensordot``). Pixels have half-pixel centres (pixel ``i`` covers
``[i, i + 1)``, centre ``i + 0.5``); output pixel ``j``'s centre maps back to the input
coordinate ``(j + 0.5 - translation) / scale``. The weights are a kernel (``_KERNELS``: triangle,
Keys cubic, Lanczos, ...) evaluated at the distance between that point and each input centre;
when downsampling with ``antialias`` the kernel is stretched by ``1 / scale`` (a low-pass
filter), and each output's weights are normalised to sum to one. Nearest-neighbour resizing is a
gather with indices computed on the host. Everything is ``functx.numpy``, so ``jit``, ``vmap``
and ``grad`` (in the image, and in ``scale_and_translate``'s scale and translation) apply.
"""

from __future__ import annotations

import enum
import operator

import numpy as np

from functx import lax, numpy as jnp
from functx.errors import (
    FunctxTypeError,
    FunctxValueError,
    FunctxZeroDivisionError,
    missing_name_hook as _missing_name_hook,
)
from functx.numpy import _core as _jnp_core


class ResizeMethod(enum.Enum):
    """The resampling methods of ``resize`` and ``scale_and_translate`` (JAX's
    ``jax.image.ResizeMethod``), with the values JAX gives them.

    ``NEAREST``: the input pixel whose area holds the output pixel's centre (``resize`` only).
    ``LINEAR``: the triangle kernel (radius 1). ``CUBIC``: Keys' cubic kernel with ``a = -0.5``
    (radius 2). ``CUBIC_PYTORCH``: as ``CUBIC`` with ``antialias``; without it, PyTorch's cubic
    (``a = -0.75``) with the image's edge pixels repeated outside it. ``LANCZOS3``,
    ``LANCZOS5``: the Lanczos kernel of radius 3 or 5. ``AREA``: each output pixel is the mean of
    the input it covers (a box filter when upsampling).

    Example:
      >>> from functx.image import ResizeMethod
      >>> ResizeMethod.from_string("bilinear")
      <ResizeMethod.LINEAR: 1>
    """

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str):
        """The method a string names: ``"nearest"``; ``"linear"``, ``"bilinear"``,
        ``"trilinear"``, ``"triangle"``; ``"cubic"``, ``"bicubic"``, ``"tricubic"``;
        ``"cubic-pytorch"``, ``"bicubic-pytorch"``; ``"lanczos3"``, ``"lanczos5"``; ``"area"``.

        Arguments:
          s: the name.
        Returns:
          the ``ResizeMethod``; an unknown name raises a ValueError.
        Example:
          >>> from functx.image import ResizeMethod
          >>> ResizeMethod.from_string("tricubic")
          <ResizeMethod.CUBIC: 4>
        """
        method = _NAMES.get(s)
        if method is None:
            raise FunctxValueError(
                f'Unknown resize method "{s}": the methods are {", ".join(sorted(_NAMES))}'
            )
        return method


_NAMES = {
    "nearest": ResizeMethod.NEAREST,
    "linear": ResizeMethod.LINEAR,
    "bilinear": ResizeMethod.LINEAR,
    "trilinear": ResizeMethod.LINEAR,
    "triangle": ResizeMethod.LINEAR,
    "cubic": ResizeMethod.CUBIC,
    "bicubic": ResizeMethod.CUBIC,
    "tricubic": ResizeMethod.CUBIC,
    "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
    "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
    "lanczos3": ResizeMethod.LANCZOS3,
    "lanczos5": ResizeMethod.LANCZOS5,
    "area": ResizeMethod.AREA,
}


# --- kernels: a weight for each distance d >= 0 (in input pixels) --------------------------------
def _triangle(d):
    return jnp.maximum(0, 1 - jnp.abs(d))


def _cubic(a):
    """The cubic convolution kernel with parameter ``a`` (Keys: -0.5; OpenCV/PyTorch: -0.75)."""

    def kernel(d):
        near = ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0  # d < 1
        far = ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a  # 1 <= d < 2
        return jnp.where(d >= 2.0, 0.0, jnp.where(d >= 1.0, far, near))

    return kernel


def _lanczos(radius):
    def kernel(d):
        num = radius * jnp.sin(np.pi * d) * jnp.sin(np.pi * d / radius)
        den = jnp.where(d != 0, np.pi**2 * d**2, 1)
        return jnp.where(d > radius, 0.0, jnp.where(d > 1e-3, num / den, 1))

    return kernel


_AREA = "area"  # (no kernel: the weights are overlaps of pixel intervals)

# method -> (the kernel's radius in input pixels, the kernel)
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.CUBIC: (2, _cubic(-0.5)),
    ResizeMethod.CUBIC_PYTORCH: (2, _cubic(-0.75)),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.AREA: (1, _AREA),
}

# weights whose sum is below this leave their output pixel zero (as JAX: 1000 float32 epsilons)
_TINY = 1000.0 * float(np.finfo(np.float32).eps)


def _weights(m, n, scale, translation, method, antialias):
    """The ``(m, n)`` matrix: column ``j`` holds the weights of the ``m`` input pixels in output
    pixel ``j``. ``scale``/``translation`` are Python floats or 0-d arrays."""
    edge = method is ResizeMethod.CUBIC_PYTORCH and not antialias  # repeat the edge pixels
    if method is ResizeMethod.CUBIC_PYTORCH and antialias:
        method = ResizeMethod.CUBIC  # (PyTorch's antialiased cubic is Keys')
    radius, kernel = _KERNELS[method]
    dt = jnp.result_type(scale, translation)
    inv = 1.0 / scale
    out = jnp.arange(n, dtype=dt)
    centre = (out + 0.5) * inv - translation * inv - 0.5  # output centres, in input indices
    if kernel is _AREA:
        lo = out * inv - translation * inv  # output pixel j covers [lo, lo + inv) of the input
        left = jnp.arange(m, dtype=dt)[:, None]
        w = jnp.maximum(0.0, jnp.minimum(lo + inv, left + 1.0) - jnp.maximum(lo, left))
    else:
        pad = radius if edge else 0
        stretch = jnp.maximum(inv, 1.0) if antialias else 1.0
        w = kernel(jnp.abs(centre - jnp.arange(-pad, m + pad, dtype=dt)[:, None]) / stretch)
        if pad:  # the weights of pixels outside the image go to the nearest edge pixel
            rows = np.clip(np.arange(-pad, m + pad), 0, m - 1)
            w = jnp.zeros((m, n), w.dtype).at[rows].add(w)
    total = jnp.sum(w, axis=0)
    w = jnp.where(jnp.abs(total) > _TINY, w / jnp.where(total != 0, total, 1), 0)
    if edge:
        return w
    # an output pixel whose centre falls outside the image is zero
    return jnp.where((centre >= -0.5) & (centre <= m - 0.5), w, 0)


def _method(method) -> ResizeMethod:
    if isinstance(method, str):
        return ResizeMethod.from_string(method)
    if not isinstance(method, ResizeMethod):
        raise FunctxTypeError(
            f"method must be a ResizeMethod or one of its names, got {method!r:.60}"
        )
    return method


def _out_shape(shape, x) -> tuple[int, ...]:
    """``shape`` as a tuple of non-negative ints of ``x.ndim`` entries (a functx error if not)."""
    shape = (shape,) if np.ndim(shape) == 0 else tuple(np.asarray(shape).tolist())
    try:
        shape = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise FunctxTypeError(
            f"Shapes must be 1D sequences of concrete values of integer type, got {shape}"
        ) from None
    if len(shape) != x.ndim:
        raise FunctxValueError(
            f"shape must have length equal to the number of dimensions of x; {shape} vs {x.shape}"
        )
    if any(s < 0 for s in shape):
        raise FunctxValueError(f"the output shape {shape} has a negative size")
    return shape


def _inexact(*xs):
    return _jnp_core._promote_only(*[jnp.asarray(x) for x in xs], kind="inexact")


def _resample(x, dims, scales, translations, method, antialias, precision, shape):
    """``x`` resampled along each axis of ``dims`` to ``shape``, one weight matrix per axis."""
    for d, scale, translation in zip(dims, scales, translations):
        m, n = x.shape[d], shape[d]
        if m == 0 and n != 0:
            raise FunctxZeroDivisionError(
                f"cannot resample axis {d} of size 0 to size {n}: it has no pixels"
            )
        w = _weights(m, n, scale, translation, method, antialias).astype(x.dtype)
        x = jnp.moveaxis(jnp.tensordot(x, w, axes=((d,), (0,)), precision=precision), -1, d)
    return x


def _nearest(x, shape):
    """Output pixel ``j`` of an axis resized from ``m`` to ``n`` takes input pixel
    ``floor((j + 0.5) * m / n)``, computed in float32 as JAX computes it (in both x64 modes)."""
    for d, (m, n) in enumerate(zip(x.shape, shape)):
        if m == n:
            continue
        if m == 0:
            raise FunctxZeroDivisionError(
                f"cannot resample axis {d} of size 0 to size {n}: it has no pixels"
            )
        f32 = np.float32
        idx = np.floor((np.arange(n, dtype=f32) + f32(0.5)) * f32(m) / f32(n)).astype(np.int32)
        x = jnp.take(x, idx, axis=d)
    return x


def scale_and_translate(
    image,
    shape,
    spatial_dims,
    scale,
    translation,
    method,
    antialias=True,
    precision=lax.Precision.HIGHEST,
):
    """Resamples ``image`` to ``shape`` under a scale and a translation of its spatial axes
    (``jax.image.scale_and_translate``).

    Along spatial axis ``spatial_dims[k]``, the input point ``p`` moves to
    ``p * scale[k] + translation[k]``; each output pixel samples the input at the inverse image of
    its centre (pixel ``i`` spans ``[i, i + 1)``). Output pixels whose centre maps outside the
    input are zero. With ``scale = (n - 1) / (m - 1)`` and ``translation = 0.5 * (1 - scale)`` it
    resizes as ``align_corners=True`` does in PyTorch.

    Arguments:
      image: an array.
      shape: the output shape (``image.ndim`` sizes; the axes outside ``spatial_dims`` keep their
        size).
      spatial_dims: the K axes resampled.
      scale: K scales (an array or sequence).
      translation: K translations, in output pixels.
      method: a ``ResizeMethod`` other than ``NEAREST``, or its name (``"linear"``,
        ``"cubic"``, ``"lanczos3"``, ...).
      antialias: whether to widen the kernel by ``1 / scale`` when downsampling (default True).
      precision: the contractions' precision (default ``lax.Precision.HIGHEST``).

    Returns:
      the resampled image, of ``image``'s dtype made inexact (integers and bools give float32).

    Differences from JAX: where ``shape`` differs from ``image.shape`` along an axis outside
    ``spatial_dims``, functx raises a ValueError (JAX returns the input's size there); a
    negative size raises a ValueError; ``scale`` and ``translation`` may be Python sequences.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.image import scale_and_translate
      >>> x = jnp.array([0.0, 1.0, 2.0, 3.0])
      >>> scale_and_translate(x, (4,), (0,), jnp.array([1.0]), jnp.array([0.5]), "linear")
      Array([0. , 0.5, 1.5, 2.5], dtype=float32)
    """
    (x,) = _inexact(image)
    shape = _out_shape(shape, x)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        raise FunctxValueError(
            "Nearest neighbor resampling is not currently supported for scale_and_translate "
            "(use resize, or method='linear')"
        )
    scale, translation = _inexact(scale, translation)
    dims = [_jnp_core._canon_axis(d, x.ndim, "spatial_dims") for d in spatial_dims]
    if not scale.shape == translation.shape == (len(dims),):
        raise FunctxValueError(
            f"scale and translation must have one entry per spatial dim ({len(dims)}), got "
            f"shapes {scale.shape} and {translation.shape}"
        )
    for d in range(x.ndim):
        if d not in dims and shape[d] != x.shape[d]:
            raise FunctxValueError(
                f"shape[{d}] = {shape[d]} differs from image.shape[{d}] = {x.shape[d]}, but "
                f"axis {d} is not in spatial_dims {tuple(spatial_dims)}"
            )
    return _resample(x, dims, scale, translation, method, antialias, precision, shape)


def resize(image, shape, method, antialias=True, precision=lax.Precision.HIGHEST):
    """Resizes ``image`` to ``shape`` (``jax.image.resize``).

    Every axis whose size changes is resampled (batch and channel axes keep their size), with
    half-pixel centres: output pixel ``j`` of an axis resized from ``m`` to ``n`` is centred at
    input coordinate ``(j + 0.5) * m / n``. ``"nearest"`` takes the input pixel there;
    the other methods weigh the input pixels around it by their kernel (``ResizeMethod``),
    widened by ``m / n`` when downsampling with ``antialias``.

    Arguments:
      image: an array.
      shape: the output shape, one size per axis of ``image``.
      method: a ``ResizeMethod`` or its name: ``"nearest"``, ``"linear"`` (``"bilinear"``,
        ``"trilinear"``, ``"triangle"``), ``"cubic"`` (``"bicubic"``, ``"tricubic"``),
        ``"cubic-pytorch"``, ``"lanczos3"``, ``"lanczos5"`` or ``"area"``.
      antialias: whether to widen the kernel when downsampling (default True; no effect when
        upsampling or with ``"nearest"``).
      precision: the contractions' precision (default ``lax.Precision.HIGHEST``).

    Returns:
      the resized image: ``image``'s dtype for ``"nearest"``; otherwise made inexact
      (integers and bools give float32).

    Differences from JAX: a negative size in ``shape`` raises a ValueError (JAX gives size 0);
    an axis of size 0 resized to a positive size raises a ZeroDivisionError with every method.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.image import resize
      >>> resize(jnp.array([[0.0, 1.0], [2.0, 3.0]]), (2, 4), "linear")
      Array([[0.  , 0.25, 0.75, 1.  ],
             [2.  , 2.25, 2.75, 3.  ]], dtype=float32)
      >>> resize(jnp.array([1, 2, 3]), (6,), "nearest")
      Array([1, 1, 2, 2, 3, 3], dtype=int32)
    """
    x = jnp.asarray(image)
    shape = _out_shape(shape, x)
    method = _method(method)
    if method is ResizeMethod.NEAREST:
        return _nearest(x, shape)
    (x,) = _inexact(x)
    dims = [d for d in range(x.ndim) if x.shape[d] != shape[d]]
    # (a size-0 output keeps scale 1, as JAX: its weight matrix has no columns)
    scales = [shape[d] / x.shape[d] if shape[d] and x.shape[d] else 1.0 for d in dims]
    return _resample(x, dims, scales, [0.0] * len(dims), method, antialias, precision, shape)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]
