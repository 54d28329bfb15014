"""functx/dlpack.py against jax.dlpack."""

import jax
import ml_dtypes
import numpy as np
import pytest
import torch

import functx
from functx import dlpack


@pytest.mark.parametrize(
    "dtype",
    [np.bool_, np.int8, np.uint32, np.int64, np.float16, ml_dtypes.bfloat16, np.float64,
     np.complex64, np.dtype("V2"), ml_dtypes.float8_e4m3fn, ml_dtypes.int4, np.dtype("U3")],
)  # fmt: skip
def test_is_supported_dtype_is_jaxs(dtype):
    assert dlpack.is_supported_dtype(dtype) == jax.dlpack.is_supported_dtype(dtype)


def test_from_dlpack_takes_torch_and_numpy_arrays():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    got = functx.dlpack.from_dlpack(t)
    np.testing.assert_array_equal(np.asarray(got), t.numpy())
    assert got.dtype == np.float32 and functx.dlpack.from_dlpack is functx.numpy.from_dlpack
