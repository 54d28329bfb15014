"""``functx.dlpack``: JAX's ``jax.dlpack`` names: arrays from other libraries' DLPack capsules."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from functx.numpy._array_api import from_dlpack as from_dlpack

# the dtypes DLPack describes (its int/uint/float/bfloat/complex/bool codes), as JAX's list
_DLPACK_DTYPES = frozenset(
    np.dtype(t)
    for t in (
        np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
        np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64, np.complex64,
        np.complex128,
    )
)  # fmt: skip


def is_supported_dtype(dtype) -> bool:
    """Whether arrays of ``dtype`` pass through DLPack (``jax.dlpack.is_supported_dtype``).

    Arguments:
      dtype: a dtype (anything ``numpy.dtype`` takes).
    Returns:
      True for booleans, integers, float16/bfloat16/float32/float64 and complex64/complex128.
    Example:
      >>> import numpy as np
      >>> from functx import dlpack
      >>> dlpack.is_supported_dtype(np.float32), dlpack.is_supported_dtype(np.dtype("V2"))
      (True, False)
    """
    return np.dtype(dtype) in _DLPACK_DTYPES


__all__ = ["from_dlpack", "is_supported_dtype"]
