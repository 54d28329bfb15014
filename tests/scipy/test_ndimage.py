"""``functx.scipy.ndimage.map_coordinates`` against JAX: every mode JAX has, orders 0 and 1,
``cval``, float and integer inputs, 1-D to 3-D, both x64 modes (values and dtypes); derivatives
in the input and the coordinates (check_grads in float64), jit and vmap, and JAX's errors."""

from __future__ import annotations

import itertools

import jax.scipy.ndimage as jnd
import numpy as np
import pytest
from errutil import raises_as_jax
from x64util import x64_off

import functx
import functx.scipy.ndimage as fnd
from functx.test_util import check_grads

MODES = ["constant", "nearest", "mirror", "wrap", "reflect"]
RNG = np.random.default_rng(0)


def _case(shape, dtype):
    x = (RNG.standard_normal(shape) * 10).astype(dtype)
    # points inside, on the edges, halves (rounding) and outside on both sides
    coords = [RNG.uniform(-3.0, n + 2.0, 8) for n in shape]
    coords[0][:3] = [0.5, -0.5, shape[0] - 1]
    return x, coords


@pytest.mark.parametrize(
    "shape, dtype, x64",
    [
        ((6,), np.float64, True),
        ((4, 5), np.float32, False),
        ((4, 5), np.float32, True),
        ((1, 3), np.int32, False),
        ((2, 3, 4), np.float64, True),
    ],
)
def test_map_coordinates_against_jax(shape, dtype, x64):
    x, coords = _case(shape, dtype)
    with x64_off() if not x64 else np.errstate():
        for order, mode in itertools.product([0, 1], MODES):
            got = fnd.map_coordinates(x, coords, order, mode, cval=1.5)
            want = jnd.map_coordinates(x, coords, order, mode, cval=1.5)
            assert (got.dtype, got.shape) == (want.dtype, want.shape), (order, mode)
            tol = 1e-12 if got.dtype == np.float64 else 1e-5
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{order} {mode}")


def test_map_coordinates_grads_jit_vmap():
    x, coords = _case((4, 5), np.float64)
    coords = [c + 0.01 for c in coords]  # off the kinks at integers
    for mode in MODES:
        check_grads(
            lambda x, c, mode=mode: fnd.map_coordinates(x, c, 1, mode), (x, coords), order=1
        )
    want = fnd.map_coordinates(x, coords, 1, "reflect")
    jitted = functx.jit(fnd.map_coordinates, static_argnums=(2, 3))(x, coords, 1, "reflect")
    batched = functx.vmap(lambda c: fnd.map_coordinates(x, c, 1, "reflect"), in_axes=1)(
        np.stack(coords)
    )
    np.testing.assert_allclose(jitted, want, rtol=1e-12)
    np.testing.assert_allclose(batched, want, rtol=1e-12)


BAD = {
    "coordinates length": (dict(coordinates=[np.zeros(2)]), ValueError),
    "mode": (dict(mode="grid-wrap"), NotImplementedError),
    "order": (dict(order=3), NotImplementedError),
}


@pytest.mark.parametrize("case", BAD)
def test_map_coordinates_errors_as_jax(case):
    change, cls = BAD[case]
    kw = dict(input=np.ones((2, 2)), coordinates=[np.zeros(2)] * 2, order=1) | change
    raises_as_jax(lambda m: m.map_coordinates(**kw), jnd, fnd, cls)
