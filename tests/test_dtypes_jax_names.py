"""functx.dtypes' canonicalize_dtype / itemsize_bits / scalar_type_of and functx.errors' JAX
classes against jax.dtypes and jax.errors."""

import jax
import ml_dtypes
import numpy as np
import pytest
from x64util import x64_off

import functx
from functx import dtypes

DTYPES = [
    np.bool_, np.int8, np.uint16, np.int64, np.uint64, np.float16, np.float64, np.complex64,
    np.complex128, ml_dtypes.bfloat16, ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
    ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, float, int, complex,
    bool, "float64", "int64",
]  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_helpers_are_jaxs(dtype):
    assert dtypes.canonicalize_dtype(dtype) == jax.dtypes.canonicalize_dtype(dtype)
    with x64_off():
        assert dtypes.canonicalize_dtype(dtype) == jax.dtypes.canonicalize_dtype(dtype)
    if not isinstance(dtype, type) or dtype not in (float, int, complex, bool):
        assert dtypes.itemsize_bits(dtype) == jax.dtypes.itemsize_bits(dtype)
        x = np.ones(2, dtype)
        assert dtypes.scalar_type_of(x) is jax.dtypes.scalar_type_of(x)


@pytest.mark.parametrize("x", [1, 2.5, True, 1j, np.float32(1), np.uint8(3)])
def test_scalar_type_of_python_and_numpy_scalars(x):
    assert dtypes.scalar_type_of(x) is jax.dtypes.scalar_type_of(x)


def test_error_classes_have_jaxs_bases():
    for name in (
        "InconclusiveDimensionOperation", "JAXIndexError", "JAXTypeError", "JaxRuntimeError",
        "JaxprTypeError", "KeyReuseError",
    ):  # fmt: skip
        ours, theirs = getattr(functx.errors, name), getattr(jax.errors, name)
        for builtin in (TypeError, IndexError, RuntimeError, Exception):
            assert issubclass(ours, builtin) == issubclass(theirs, builtin), (name, builtin)
    assert issubclass(functx.errors.KeyReuseError, functx.errors.JAXTypeError)
