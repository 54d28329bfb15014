"""``bitcast_convert_type``: the same bits read as another dtype (XLA's BitcastConvert).

Shapes follow the two widths (in bits): equal widths keep the shape; a narrower ``new_dtype``
appends an axis of ``old_bits // new_bits`` parts, the least significant part first (the element
as stored on a little-endian machine); a wider one consumes a last axis of exactly
``new_bits // old_bits`` parts. bool and complex take part only when both dtypes are the same
(``jnp.ndarray.view`` composes the other cases). The result is never weakly typed.

The rules live with their tables: the jvp (a zero tangent: the primitive is
``nondifferentiable``) in ``functx.transforms.jvp``, batching in ``functx.transforms.vmap``
(the batch axis moves off the last position when the widths differ) and the lowering in
``functx.lowering.lower``, where a width change is integer arithmetic on same-width ``bitcast``
element operations, which each backend's emitter prints (``std::memcpy`` in C++,
``.to(dtype, bitcast=True)`` in Triton).
"""

from __future__ import annotations

import numpy as np

from functx import dtypes
from functx.core import ShapedArray
from functx.errors import FunctxTypeError, FunctxValueError
from functx.primitives.base import prim

bitcast_convert_type_p = prim("bitcast_convert_type", "bitcast")


#: The dtypes narrower than a byte (ml_dtypes stores each in the low bits of its own byte).
SUB_BYTE = {"int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4}


def nbits(dtype) -> int:
    """The width of ``dtype`` in bits."""
    dt = np.dtype(dtype)
    return SUB_BYTE.get(dt.name, dt.itemsize * 8)


def check_dtypes(old, new):
    """JAX's TypeError for bool or complex on one side only."""
    old, new = np.dtype(old), np.dtype(new)
    odd = (dtypes.bool_,) + dtypes.COMPLEX
    if (old in odd or new in odd) and old != new:
        raise FunctxTypeError(
            "lax.bitcast_convert_type does not support bool or complex values unless the "
            f"operand and destination types match. Got operand dtype={old}, "
            f"new_dtype={new!r}. Consider using the arr.view() method instead."
        )


def out_shape(shape, old, new) -> tuple:
    """The result shape of bitcasting an array of ``shape`` and dtype ``old`` to ``new``."""
    ob, nb = nbits(old), nbits(new)
    if ob == nb:
        return tuple(shape)
    if ob > nb:
        return (*shape, ob // nb)
    last = shape[-1] if shape else 1
    if last * ob != nb:
        raise FunctxValueError(
            f"Attempting to convert array of shape {tuple(shape)} from {np.dtype(old)} of size "
            f"{ob} bits to {np.dtype(new)} of size {nb}, bits but {last} * {ob} != {nb}"
        )
    return tuple(shape[:-1])


def _eval(x, *, new_dtype):
    shape = out_shape(x.shape, x.dtype, new_dtype)  # (JAX checks the shape first)
    check_dtypes(x.dtype, new_dtype)
    return ShapedArray(shape, np.dtype(new_dtype), False)


def _to_bits(x, bits):
    """The bit patterns of ``x`` as uint64 (a sub-byte element sits in its byte's low bits)."""
    if bits < 8:
        return (x.view(np.uint8) & ((1 << bits) - 1)).astype(np.uint64)
    return x.view(np.dtype(f"<u{bits // 8}")).astype(np.uint64)


def _from_bits(u, dtype, bits):
    if bits < 8:
        return u.astype(np.uint8).view(dtype)
    return u.astype(np.dtype(f"<u{bits // 8}")).view(dtype.newbyteorder("<")).astype(dtype)


def _impl_sub_byte(x, new_dtype, shape):
    """Either side narrower than a byte: integer arithmetic on the bit patterns."""
    ob, nb = nbits(x.dtype), nbits(new_dtype)
    u = _to_bits(np.ascontiguousarray(x), ob)
    if ob > nb:
        shifts = np.arange(ob // nb, dtype=np.uint64) * np.uint64(nb)
        u = (u[..., None] >> shifts) & np.uint64((1 << nb) - 1)
    elif ob < nb:
        shifts = np.arange(nb // ob, dtype=np.uint64) * np.uint64(ob)
        u = np.bitwise_or.reduce(u.reshape(shape + (nb // ob,)) << shifts, axis=-1)
    return _from_bits(np.asarray(u, np.uint64), new_dtype, nb).reshape(shape)


def _impl(x, *, new_dtype):
    new_dtype = np.dtype(new_dtype)
    shape = out_shape(x.shape, x.dtype, new_dtype)
    if min(nbits(x.dtype), nbits(new_dtype)) < 8:
        return _impl_sub_byte(x, new_dtype, shape)
    # the element bytes in little-endian order, one row per element (or per group of parts)
    flat = np.ascontiguousarray(x).reshape(-1)
    if flat.dtype.byteorder == ">":
        flat = flat.astype(flat.dtype.newbyteorder("<"))
    out = flat.view(np.uint8).view(new_dtype.newbyteorder("<")).astype(new_dtype, copy=False)
    return out.reshape(shape)


bitcast_convert_type_p.abstract_eval = _eval
bitcast_convert_type_p.impl = _impl

__all__ = ["bitcast_convert_type_p"]
