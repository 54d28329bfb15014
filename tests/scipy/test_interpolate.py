"""``functx.scipy.interpolate.RegularGridInterpolator`` against JAX: linear and nearest, 1-D to
3-D grids, trailing value axes, fill values (NaN, None, a number), points as an array or a tuple,
both x64 modes (values and dtypes); derivatives in the values and the points (check_grads in
float64), the interpolator as a pytree through jit and vmap, and JAX's errors."""

from __future__ import annotations

import itertools

import jax.scipy.interpolate as jip
import numpy as np
import pytest
import scipy.interpolate as sip
from errutil import raises_as_jax
from x64util import x64_off

import functx
import functx.scipy.interpolate as fip
from functx.test_util import check_grads

RNG = np.random.default_rng(0)
G01 = np.array([0.0, 1.0])


def _case(shape, extra=(), dtype=np.float64):
    grid = tuple(np.sort(RNG.uniform(0.0, 5.0, n)) for n in shape)
    values = (RNG.standard_normal(shape + extra) * 10).astype(dtype)
    xi = RNG.uniform(-1.0, 6.0, (2, 3, len(shape)))
    return grid, values, xi


@pytest.mark.parametrize(
    "shape, extra, dtype, x64",
    [
        ((5,), (), np.float64, True),
        ((4, 6), (), np.float32, False),
        ((4, 6), (), np.float32, True),
        ((3, 4), (2,), np.int32, False),
        ((2, 3, 4), (), np.float64, True),
    ],
)
def test_interpolator_against_jax(shape, extra, dtype, x64):
    grid, values, xi = _case(shape, extra, dtype)
    with x64_off() if not x64 else np.errstate():
        for method, fill in itertools.product(["linear", "nearest"], [np.nan, None, 2.0]):
            got = fip.RegularGridInterpolator(grid, values, method, fill_value=fill)(xi)
            want = jip.RegularGridInterpolator(grid, values, method, fill_value=fill)(xi)
            assert (got.dtype, got.shape) == (want.dtype, want.shape), (method, fill)
            tol = 1e-12 if got.dtype == np.float64 else 1e-5
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{method} {fill}")
        if len(shape) == 1:  # a 1-tuple is unpacked: its array's last axis holds the points
            return
        pts = tuple(np.moveaxis(xi, -1, 0))
        got = fip.RegularGridInterpolator(grid, values)(pts)
        want = jip.RegularGridInterpolator(grid, values)(pts)
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_interpolator_against_scipy():
    grid, values, xi = _case((4, 6), (2,))
    for method in ["linear", "nearest"]:
        got = fip.RegularGridInterpolator(grid, values, method, fill_value=-1.0)(xi)
        want = sip.RegularGridInterpolator(
            grid, values, method, bounds_error=False, fill_value=-1.0
        )(xi)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_interpolator_grads_jit_vmap():
    grid, values, xi = _case((4, 6))
    lo, hi = [g[0] + 0.01 for g in grid], [g[-1] - 0.01 for g in grid]
    xi = np.clip(xi, lo, hi)  # inside the grid
    check_grads(lambda v, p: fip.RegularGridInterpolator(grid, v)(p), (values, xi), order=1)
    interp = fip.RegularGridInterpolator(grid, values, "nearest", fill_value=0.0)
    want = interp(xi)
    np.testing.assert_allclose(functx.jit(lambda f, p: f(p))(interp, xi), want)
    batched = functx.vmap(lambda v: fip.RegularGridInterpolator(grid, v, fill_value=None)(xi))(
        np.stack([values, 2 * values])
    )
    np.testing.assert_allclose(
        batched[1], 2 * fip.RegularGridInterpolator(grid, values, fill_value=None)(xi), rtol=1e-12
    )


BAD = {
    "method": (lambda m: m.RegularGridInterpolator((G01,), np.ones(2), "cubic"), ValueError),
    "call method": (
        lambda m: m.RegularGridInterpolator((G01,), np.ones(2))(np.array([0.5]), "cubic"),
        ValueError,
    ),
    "bounds_error": (
        lambda m: m.RegularGridInterpolator((G01,), np.ones(2), bounds_error=True),
        NotImplementedError,
    ),
    "too many grids": (lambda m: m.RegularGridInterpolator((G01,) * 2, np.ones(2)), ValueError),
    "fill dtype": (
        lambda m: m.RegularGridInterpolator((G01,), np.ones(2), fill_value=1j),
        ValueError,
    ),
    "point dimension": (
        lambda m: m.RegularGridInterpolator((G01,), np.ones(2))(np.ones((3, 2))),
        ValueError,
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_interpolator_errors_as_jax(case):
    call, cls = BAD[case]
    raises_as_jax(call, jip, fip, cls)
