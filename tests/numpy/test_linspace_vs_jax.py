"""jnp.linspace against JAX: JAX's formula (start * (1 - step) + stop * step, the division by
the constant count as a multiplication by its reciprocal), its computation dtype (float32 for
int32 ends in both x64 modes), complex ends, retstep's delta, integer outputs rounded down.
XLA reassociates and fuses the products (its HLO computes iota * (stop / div)), so random
float32 ends can differ from JAX's in the last bits where the two terms cancel: those cases are
held to a tolerance relative to |start| + |stop| (a few float32 eps)."""

import jax.numpy as jj
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.numpy as fj


def _both(*args, **kw):
    return np.asarray(fj.linspace(*args, **kw)), np.asarray(jj.linspace(*args, **kw))


def _close(got, want, a, b):
    assert got.shape == want.shape and got.dtype == want.dtype
    scale = abs(np.asarray(a)).max(initial=0) + abs(np.asarray(b)).max(initial=0)
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * np.finfo(np.float32).eps * scale)


def test_reciprocal_as_jax():  # XLA divides by the constant count as a reciprocal multiply
    with x64_off():
        got, want = _both(-1.0, 2.0, 4, dtype="float32")
        np.testing.assert_array_equal(got, want)  # [-1, 5.96e-08, 1, 2]
        jitted = functx.jit(lambda a, b: fj.linspace(a, b, 4))(np.float32(-1), np.float32(2))
        np.testing.assert_array_equal(np.asarray(jitted), want)


@pytest.mark.parametrize(
    "args",
    [(-1.0, 2.0, 4), (0, 10, 5), (3, -7, 11), (1 + 2j, 3 - 1j, 3), (0.0, 1.0, 1), (2.0, 5.0, 0)],
)
@pytest.mark.parametrize("endpoint", [True, False])
def test_ends_and_retstep(args, endpoint, no_x64):
    got, want = _both(*args, endpoint=endpoint)
    _close(got, want, args[0], args[1])
    jitted = functx.jit(lambda: fj.linspace(*args, endpoint=endpoint))()
    _close(np.asarray(jitted), want, args[0], args[1])
    (_, gs), (_, ws) = fj.linspace(*args, retstep=True), jj.linspace(*args, retstep=True)
    _close(np.asarray(gs), np.asarray(ws), args[0], args[1])


@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "bfloat16", "float64"])
def test_dtypes_and_integer_rounding(dtype):  # (the suite runs with x64 on)
    got, want = _both(0, 10, 4, dtype=dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@settings(max_examples=10, deadline=None)
@given(
    a=st.floats(-100, 100, width=32),
    b=st.floats(-100, 100, width=32),
    num=st.sampled_from([0, 1, 2, 7]),
    endpoint=st.booleans(),
)
def test_random_float32_ends_within_rounding(a, b, num, endpoint):
    with x64_off():
        got, want = _both(a, b, num, endpoint=endpoint, dtype="float32")
    _close(got, want, a, b)


def test_array_ends_and_axis(no_x64):
    rng = np.random.default_rng(0)
    a, b = (
        rng.integers(-5, 5, (3,)).astype(np.float32),
        rng.integers(-5, 5, (2, 1)).astype(np.float32),
    )
    for axis in (0, 1, -1, 2):
        got, want = _both(a, b, 5, axis=axis)
        _close(got, want, a, b)
