"""``functx.nn``'s block-scaled products (``scaled_matmul``, ``scaled_dot_general`` and its
``get_scaled_dot_general_config``): microscaling formats, where each block of ``block_size``
consecutive entries along the contraction shares one scale.

JAX runs these only on GPUs with cuDNN; functx computes them everywhere as compositions of its
ops, following JAX's definitions: ``scaled_matmul`` is the product of the operands multiplied by
their repeated scales, in float32; ``scaled_dot_general`` quantizes its operands per block
(``mxfp8``: float8_e4m3fn values, power-of-two float8_e8m0fnu scales rounded up; ``nvfp4``:
float4_e2m1fn values, float8_e4m3fn scales, a global scale) and multiplies them so; its gradient
quantizes the cotangent and the other operand likewise (``nvfp4``: unquantized products, and
zero where an input was clipped), as JAX's.
"""

from __future__ import annotations

import numpy as np

from functx import dtypes, numpy as jnp, ops
from functx.control.custom_derivatives import custom_vjp
from functx.errors import FunctxTypeError, FunctxValueError
from functx.source_info import where as _loc


class BlockScaleConfig:
    """How ``scaled_dot_general`` quantizes one operand (JAX's ``BlockScaleConfig``, which
    ``get_scaled_dot_general_config`` returns): the mode, the block size, the values' and the
    scales' dtypes, the global scale (``nvfp4``) and JAX's ``infer_only`` flag."""

    __slots__ = ("mode", "block_size", "data_type", "scale_type", "global_scale", "infer_only")

    def __init__(self, mode, block_size, data_type, scale_type, global_scale, infer_only):
        self.mode, self.block_size = mode, block_size
        self.data_type, self.scale_type = data_type, scale_type
        self.global_scale, self.infer_only = global_scale, infer_only

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"BlockScaleConfig({fields})"


def get_scaled_dot_general_config(mode, global_scale=None) -> BlockScaleConfig:
    """The quantization of an operand of ``scaled_dot_general`` for a named format
    (``jax.nn.get_scaled_dot_general_config``).

    Arguments:
      mode: "mxfp8" (blocks of 32 float8_e4m3fn values, float8_e8m0fnu scales) or "nvfp4"
        (blocks of 16 float4_e2m1fn values, float8_e4m3fn scales, a float32 global scale).
      global_scale: ``nvfp4``'s global scale, a float32 array of shape (1,) (default 1).
    Returns:
      A ``BlockScaleConfig``.
    Raises:
      ValueError: another mode.
    Example:
      >>> from functx import nn
      >>> nn.get_scaled_dot_general_config("mxfp8").block_size
      32
    """
    if mode == "mxfp8":
        return BlockScaleConfig(
            "mxfp8", 32, dtypes.float8_e4m3fn, dtypes.float8_e8m0fnu, None, False
        )
    if mode == "nvfp4":
        scale = jnp.ones((1,), np.float32) if global_scale is None else global_scale
        return BlockScaleConfig(
            "nvfp4", 16, dtypes.float4_e2m1fn, dtypes.float8_e4m3fn, scale, False
        )
    raise FunctxValueError(f"Unsupported mode: {mode}{_loc()}")


def _check_3d(a, b, sa, sb):
    if not all(jnp.ndim(x) == 3 for x in (a, b, sa, sb)):
        raise FunctxValueError(
            f"scaled_matmul requires all inputs to be 3-dimensional arrays{_loc()}"
        )
    (ba, m, ka), (bb, n, kb) = jnp.shape(a), jnp.shape(b)
    (bsa, msa, ksa), (bsb, nsb, ksb) = jnp.shape(sa), jnp.shape(sb)
    if ka != kb or ba != bb:
        raise FunctxValueError(
            f"scaled_matmul: lhs {jnp.shape(a)} and rhs {jnp.shape(b)} must have matching batch "
            f"and contracting dimensions{_loc()}"
        )
    if ksa != ksb or bsa != bsb:
        raise FunctxValueError(
            f"scaled_matmul: the scales {jnp.shape(sa)} and {jnp.shape(sb)} must have matching "
            f"batch and contracting dimensions{_loc()}"
        )
    if msa != m or nsb != n or ka % ksa:
        raise FunctxValueError(
            f"scaled_matmul: the scales {jnp.shape(sa)}, {jnp.shape(sb)} must match the operands' "
            f"non-contracting dimensions and divide their contracting one{_loc()}"
        )


def _dequantized(x, scales):
    """``x`` times its block scales (repeated along the last axis), in float32."""
    x = jnp.asarray(x).astype(np.float32)
    scales = jnp.asarray(scales).astype(np.float32)
    return x * jnp.repeat(scales, x.shape[-1] // scales.shape[-1], axis=-1)


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """The block-scaled batched product ``lhs @ rhs^T`` (``jax.nn.scaled_matmul``): each
    operand multiplied by its scales, each scale repeated over its block of the last
    (contracting) axis, then ``einsum("bmk,bnk->bmn")`` computed in float32.

    Arguments:
      lhs: (B, M, K) values (e.g. float8_e4m3fn).
      rhs: (B, N, K) values.
      lhs_scales: (B, M, K / block) scales (e.g. float8_e8m0fnu).
      rhs_scales: (B, N, K / block) scales.
      preferred_element_type: the result's dtype (default float32).
    Returns:
      The (B, M, N) product.
    Raises:
      ValueError: operands or scales of other ranks or shapes (as JAX).

    Differences from JAX: runs on every backend (JAX's needs cuDNN on a GPU), as its definition.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import nn
      >>> a, b = jnp.arange(1.0, 4.0).reshape(1, 1, 3), jnp.arange(4.0, 7.0).reshape(1, 1, 3)
      >>> half = jnp.full((1, 1, 1), 0.5)
      >>> nn.scaled_matmul(a, b, half, half)
      Array([[[8.]]], dtype=float32)
    """
    _check_3d(lhs, rhs, lhs_scales, rhs_scales)
    out = dtypes.check_user_dtype(preferred_element_type, "scaled_matmul")
    a, b = _dequantized(lhs, lhs_scales), _dequantized(rhs, rhs_scales)
    return ops.dot_general(a, b, (((2,), (2,)), ((0,), (0,))), "highest").astype(out)


# --- quantization ------------------------------------------------------------------------------
def _e8m0_up(s):
    """Power-of-two scales (float8_e8m0fnu) at least ``s`` (float32, >= 0): the exponent of
    ``s``, one up unless ``s`` is a power of two (a normal's mantissa 0; a subnormal's up to
    half), as JAX's rounding."""
    bits = jnp.asarray(s).astype(np.float32).view(np.uint32)
    exp, mant = bits >> 23, bits & 0x7FFFFF
    up = (mant > 0) & (exp != 0xFE) & ~((exp == 0) & (mant <= 0x400000))
    return jnp.where(up, exp + 1, exp).astype(np.uint8)


def _e8m0_value(e, dtype):
    """The float value of e8m0 exponents ``e`` (2**(e - 127)); a zero becomes a tiny power of
    two so that dividing by it stays finite, as JAX's."""
    v = (e.astype(np.uint32) << 23).view(np.float32)
    tiny = 2.0**-15 if dtype == np.float16 else 2.0**-127
    return jnp.where(v == 0, np.float32(tiny), v).astype(dtype)


def _quantize(x, config):
    """``x`` (B, M, K) as (values of ``config.data_type``, scales of ``config.scale_type`` of
    shape (B, M, K / block))."""
    b, m, k = x.shape
    size = config.block_size
    if k < size or k % size:
        raise FunctxValueError(
            f"scaled_dot_general: the contracting size {k} must be a multiple of the block size "
            f"{size}{_loc()}"
        )
    blocks = x.reshape(b, m, k // size, size)
    top = np.asarray(dtypes.finfo(config.data_type).max).astype(x.dtype)
    if config.mode == "nvfp4":
        blocks = blocks / config.global_scale
    amax = jnp.max(jnp.abs(blocks), axis=-1, keepdims=True) / top
    if config.mode == "mxfp8":
        e = _e8m0_up(amax)
        scaled = blocks / _e8m0_value(e, x.dtype)
        scales = e.view(config.scale_type)
    elif config.mode == "nvfp4":
        smax = np.asarray(dtypes.finfo(config.scale_type).max).astype(x.dtype)
        scales = jnp.clip(amax, 0, smax).astype(config.scale_type)
        scaled = blocks / scales.astype(np.float32)
    else:
        raise FunctxValueError(f"scaled_dot_general: unknown mode {config.mode!r}{_loc()}")
    values = jnp.clip(scaled, -top, top).astype(config.data_type).reshape(b, m, k)
    return values, scales.reshape(b, m, k // size)


def _as_bmk(x, contract, batch):
    """``x`` transposed and reshaped to (batch, free, contracting)."""
    free = [d for d in range(x.ndim) if d not in contract and d not in batch]
    order = [*batch, *free, *contract]
    size = lambda dims: int(np.prod([x.shape[d] for d in dims], dtype=np.int64))  # noqa: E731
    return jnp.transpose(x, order).reshape(size(batch), size(free), size(contract))


def _quantized_dot(x, y, dn, out_dtype, cx, cy, quantize=True):
    """The product of ``x`` and ``y`` by ``dn`` (``dot_general``'s numbers, with batch
    dimensions) with both operands block-quantized (``cx``, ``cy``), in ``dot_general``'s
    output layout."""
    (xc, yc), (xb, yb) = dn
    x3, y3 = _as_bmk(x, xc, xb), _as_bmk(y, yc, yb)
    if quantize:
        nv = cx.mode == "nvfp4"
        (qx, sx), (qy, sy) = _quantize(x3, cx), _quantize(y3, cy)
        out = scaled_matmul(qx, qy, sx, sy, np.float32 if nv else out_dtype)
        if nv:
            out = (out * (cx.global_scale * cy.global_scale)).astype(out_dtype)
    else:
        out = jnp.matmul(x3, jnp.swapaxes(y3, 1, 2), preferred_element_type=out_dtype)
    shape = [x.shape[d] for d in xb]
    shape += [x.shape[d] for d in range(x.ndim) if d not in xc and d not in xb]
    shape += [y.shape[d] for d in range(y.ndim) if d not in yc and d not in yb]
    return out.reshape(shape)


def _cotangent(g, x, y, dn, out_dtype, cg, cy, x_is_lhs):
    """The cotangent of operand ``x`` of the product by ``dn`` (``x`` first in ``dn``), from
    the output cotangent ``g``: ``g`` contracted with ``y`` over ``y``'s free dimensions
    (quantized by ``cg`` and ``cy`` unless ``nvfp4``), in ``x``'s layout."""
    (xc, yc), (xb, yb) = dn
    nb = len(xb)
    xf = [d for d in range(x.ndim) if d not in xc and d not in xb]
    yf = [d for d in range(y.ndim) if d not in yc and d not in yb]
    g_y = list(range(nb + len(xf), g.ndim)) if x_is_lhs else list(range(nb, nb + len(yf)))
    gdn = ((tuple(g_y), tuple(yf)), (tuple(range(nb)), tuple(yb)))
    out = _quantized_dot(g, y, gdn, out_dtype, cg, cy, quantize=cg.mode != "nvfp4")
    # out: (batch, x's free dims, y's contracting dims); x's contracting dims in y's order
    order = [*xb, *xf, *[xc[i] for i in np.argsort(yc)]]
    return jnp.transpose(out, tuple(np.argsort(order)))


def _fwd(lhs, rhs, dn, out_dtype, configs):
    return _quantized_dot(lhs, rhs, dn, out_dtype, configs[0], configs[1]), (lhs, rhs)


def _bwd(dn, out_dtype, configs, res, g):
    lhs, rhs = res
    (lc, rc), (lb, rb) = dn
    dl = _cotangent(g, lhs, rhs, dn, out_dtype, configs[2], configs[1], True)
    dr = _cotangent(g, rhs, lhs, ((rc, lc), (rb, lb)), out_dtype, configs[2], configs[0], False)
    if configs[2].mode == "nvfp4":  # (straight-through, zero where fprop clipped)
        for i, (x, c) in enumerate(((lhs, configs[0]), (rhs, configs[1]))):
            top = float(dtypes.finfo(c.data_type).max) * float(dtypes.finfo(c.scale_type).max)
            keep = jnp.abs(x) <= c.global_scale * top
            if i == 0:
                dl = jnp.where(keep, dl, 0)
            else:
                dr = jnp.where(keep, dr, 0)
    return dl, dr


_scaled_general = custom_vjp(
    lambda lhs, rhs, dn, out_dtype, configs: _fwd(lhs, rhs, dn, out_dtype, configs)[0],
    nondiff_argnums=(2, 3, 4),
)
_scaled_general.defvjp(_fwd, _bwd)


def scaled_dot_general(
    lhs,
    rhs,
    dimension_numbers,
    preferred_element_type=np.float32,
    configs=None,
    implementation=None,
):
    """``dot_general`` of block-quantized operands (``jax.nn.scaled_dot_general``): with
    ``configs`` (three ``BlockScaleConfig``: lhs, rhs, and the gradient's), each operand is
    quantized per block of its contracting dimensions and multiplied as ``scaled_matmul``
    does; the gradient quantizes the cotangent with ``configs[2]``. Without ``configs``, a
    plain ``dot_general``.

    Arguments:
      lhs, rhs: float arrays.
      dimension_numbers: as ``dot_general``'s.
      preferred_element_type: the result's dtype (default float32).
      configs: None, or three configs from ``get_scaled_dot_general_config``.
      implementation: JAX's deprecated backend selector (ignored).
    Returns:
      The product, in ``dot_general``'s layout.
    Raises:
      ValueError: a contracting size that is not a multiple of the block size.

    Differences from JAX: runs on every backend (JAX's quantized path needs cuDNN on a GPU).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import nn
      >>> cfg = [nn.get_scaled_dot_general_config("mxfp8")] * 3
      >>> x = jnp.ones((2, 32))
      >>> nn.scaled_dot_general(x, x, (((1,), (1,)), ((), ())), configs=cfg)
      Array([[32., 32.],
             [32., 32.]], dtype=float32)
    """
    del implementation
    out = dtypes.check_user_dtype(preferred_element_type, "scaled_dot_general")
    if configs is None:
        return ops.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=out)
    if len(configs) != 3 or not all(isinstance(c, BlockScaleConfig) for c in configs):
        raise FunctxTypeError(
            f"scaled_dot_general: configs must be three BlockScaleConfig objects{_loc()}"
        )
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    return _scaled_general(lhs, rhs, dn, out, tuple(configs))
