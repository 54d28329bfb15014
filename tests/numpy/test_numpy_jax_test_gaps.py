"""jnp gaps that JAX's own test files found (docs/jax_tests.md), against JAX in both x64 modes:
reshape/ravel with order='F' (and JAX's errors for 'A'/'K'), cumsum/cumprod with dtype=bool,
jnp.array of a Python scalar weakly typed as in JAX 0.10, and integer division by such a scalar."""

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from x64util import x64_off, x64_on

import functx
import functx.numpy as fnp

MODES = [x64_off, x64_on]


@settings(max_examples=4, deadline=None)
@given(
    shape=st.sampled_from([(6,), (2, 3), (3, 2, 2), (1, 4)]),
    dtype=st.sampled_from([np.float32, np.int32, np.bool_]),
)
def test_reshape_and_ravel_order_f(shape, dtype):
    x = (np.arange(int(np.prod(shape))) % 3).astype(dtype).reshape(shape)
    n = x.size
    for new in [(-1, 1), (2, -1) if n % 2 == 0 else (1, n)]:
        want = jnp.reshape(x, new, order="F")
        got = fnp.reshape(x, new, order="F")
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(fnp.asarray(x).reshape(new, order="F"), want)
    np.testing.assert_array_equal(fnp.ravel(x, order="F"), jnp.ravel(x, order="F"))
    np.testing.assert_array_equal(functx.jit(lambda a: fnp.ravel(a, order="F"))(x), x.ravel("F"))


def test_reshape_order_errors_as_jax():
    x, jx = fnp.ones((2, 3)), jnp.ones((2, 3))
    for name, order in [("reshape", "A"), ("ravel", "K"), ("reshape", "Z")]:
        args = ((3, 2),) if name == "reshape" else ()
        with pytest.raises(Exception) as want:
            getattr(jnp, name)(jx, *args, order=order)
        with pytest.raises(want.type):
            getattr(fnp, name)(x, *args, order=order)


@pytest.mark.parametrize("mode", [x64_on])
def test_cumsum_cumprod_dtype_bool(mode):
    cases = [
        np.array([True, False, True]),
        np.array([1, -1, 0, 2]),
        np.array([[0.0, 2.5], [-1, 0]]),
    ]
    with mode():
        for x in cases:
            for name in ("cumsum", "cumprod"):
                for axis in (None,) if x.ndim == 1 else (None, 0):
                    want = getattr(jnp, name)(x, axis=axis, dtype=bool)
                    got = getattr(fnp, name)(x, axis=axis, dtype=bool)
                    assert got.dtype == want.dtype == np.bool_
                    np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(
                fnp.asarray(x).cumsum(dtype=bool), jnp.cumsum(x, dtype=bool)
            )


@pytest.mark.parametrize("mode", MODES)
def test_array_of_python_scalar_is_weak(mode):
    with mode():
        for v in (1.5, 1, True, 1j, np.float32(1.5), [1.5], (1.0,)):
            for kw in ({}, {"ndmin": 1}) + (() if v == 1j else ({"dtype": "float32"},)):
                want = jnp.array(v, **kw)
                got = fnp.array(v, **kw)
                assert (got.dtype, got.weak_type, got.shape) == (
                    want.dtype,
                    want.weak_type,
                    want.shape,
                ), (v, kw)
        # a weak scalar from jnp.array does not widen an array it meets, as in JAX
        assert (fnp.ones(2, np.float16) * fnp.array(1.5)).dtype == np.float16


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["mod", "remainder", "fmod", "floor_divide"])
def test_integer_division_by_a_weak_int_scalar_array(mode, name):
    # a 0-d Array made from a Python int is weakly typed: it takes the other operand's int dtype
    # (functx used to build the zero-divisor guard as a float and promote it)
    with mode():
        x = np.array([1, 2, -7], np.int32)
        want = getattr(jnp, name)(jnp.array(x), jnp.asarray(3))
        got = getattr(fnp, name)(fnp.array(x), fnp.asarray(3))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
