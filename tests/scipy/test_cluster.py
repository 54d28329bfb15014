"""``functx.scipy.cluster.vq.vq`` against JAX (codes, distances, dtypes, both x64 modes) and
SciPy, ties, the distances' derivatives, jit and vmap, and JAX's errors."""

from __future__ import annotations

import jax.scipy.cluster.vq as jvq
import numpy as np
import pytest
import scipy.cluster.vq as svq
from errutil import raises_as_jax
from x64util import x64_off

import functx
import functx.scipy.cluster.vq as fvq
from functx.test_util import check_grads

RNG = np.random.default_rng(0)
CASES = {
    "2-D": (RNG.standard_normal((9, 3)), RNG.standard_normal((4, 3))),
    "1-D f32": (
        RNG.standard_normal(6).astype(np.float32),
        RNG.standard_normal(3).astype(np.float32),
    ),
    "int, ties": (np.array([[0, 0], [1, 1], [2, 0]]), np.array([[0, 1], [1, 0]])),
}


@pytest.mark.parametrize("x64", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_vq_against_jax_and_scipy(case, x64):
    obs, book = CASES[case]
    with x64_off() if not x64 else np.errstate():
        (gc, gd), (wc, wd) = fvq.vq(obs, book), jvq.vq(obs, book)
        assert (gc.dtype, gd.dtype, gd.shape) == (wc.dtype, wd.dtype, wd.shape)
        np.testing.assert_array_equal(gc, wc)
        np.testing.assert_allclose(gd, wd, rtol=1e-6)
    sc, sd = svq.vq(obs.astype(float), book.astype(float))
    np.testing.assert_array_equal(gc, sc)
    np.testing.assert_allclose(gd, sd, rtol=1e-6)


def test_vq_grads_jit_vmap():
    obs, book = CASES["2-D"]
    check_grads(lambda o, b: fvq.vq(o, b)[1], (obs, book), order=1)
    code, dist = functx.jit(fvq.vq)(obs, book)
    bc, bd = functx.vmap(fvq.vq, in_axes=(0, None))(obs[None], book)
    want = svq.vq(obs, book)
    for c, d in [(code, dist), (bc[0], bd[0])]:
        np.testing.assert_array_equal(c, want[0])
        np.testing.assert_allclose(d, want[1], rtol=1e-12)


@pytest.mark.parametrize(
    "obs, book", [(np.ones((2, 3)), np.ones(3)), (np.ones((2, 2, 2)), np.ones((2, 2, 2)))]
)
def test_vq_errors_as_jax(obs, book):
    raises_as_jax(lambda m: m.vq(obs, book), jvq, fvq, ValueError)
