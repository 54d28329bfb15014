"""``functx.scipy.integrate.trapezoid`` against JAX (values, dtypes, both x64 modes) and NumPy,
its derivatives (check_grads in float64), jit and vmap."""

from __future__ import annotations

import jax.scipy.integrate as jint
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.scipy.integrate as fint
from functx.test_util import check_grads

RNG = np.random.default_rng(0)
Y = RNG.standard_normal((3, 5))
X = np.sort(RNG.uniform(0, 4, 5))
CASES = {
    "dx": (dict(y=Y, dx=0.3), -1),
    "x 1-D": (dict(y=Y, x=X), -1),
    "x full, axis 0": (dict(y=Y, x=RNG.uniform(size=(3, 5)), axis=0), 0),
    "int y": (dict(y=np.arange(6, dtype=np.int32)), -1),
    "f32 y": (dict(y=Y.astype(np.float32), dx=2), -1),
}


@pytest.mark.parametrize("x64", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_trapezoid_against_jax(case, x64):
    kw, axis = CASES[case]
    with x64_off() if not x64 else np.errstate():
        got, want = fint.trapezoid(**kw), jint.trapezoid(**kw)
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        tol = 1e-12 if got.dtype == np.float64 else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, np.trapezoid(**kw), rtol=1e-5, atol=1e-5)


def test_trapezoid_grads_jit_vmap():
    check_grads(lambda y, x: fint.trapezoid(y, x), (Y, X), order=2)
    jitted = functx.jit(fint.trapezoid, static_argnames="axis")(Y, X, axis=1)
    batched = functx.vmap(lambda y: fint.trapezoid(y, X))(Y)
    np.testing.assert_allclose(jitted, np.trapezoid(Y, X), rtol=1e-12)
    np.testing.assert_allclose(batched, np.trapezoid(Y, X), rtol=1e-12)
