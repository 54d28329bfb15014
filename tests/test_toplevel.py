"""functx.fwd_and_bwd and functx.effects_barrier against JAX's."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import functx

X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
W = np.linspace(0.1, 0.5, 12, dtype=np.float32).reshape(3, 4)
CT = np.linspace(1, 2, 8, dtype=np.float32).reshape(2, 4)


def _loss(m):
    return lambda x, w: m.numpy.tanh(x @ w)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,)])
@pytest.mark.parametrize("jitted", [True, False])
def test_fwd_and_bwd_as_jax(argnums, jitted):
    outs = {}
    for m in (functx, jax):
        fwd, bwd = m.fwd_and_bwd(_loss(m), argnums=argnums, jitted=jitted)
        y, res = fwd(X, W)
        g = bwd(res, CT)
        y2, res2 = fwd(X * 2, W)  # (a second step: bwd's program is reused)
        outs[m] = (y, g, bwd(res2, CT))
    (y, g, g2), (jy, jg, jg2) = outs[functx], outs[jax]
    np.testing.assert_allclose(np.asarray(y), np.asarray(jy), rtol=1e-6)
    for a, b in zip(jax.tree.leaves((g, g2)), jax.tree.leaves((jg, jg2))):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-6, atol=1e-6)
    assert isinstance(g, tuple) == isinstance(jg, tuple)


def test_fwd_and_bwd_has_aux_and_errors():
    def f(m):
        return lambda x: (m.numpy.sum(x**2), {"n": x.shape[0]})

    got = {}
    for m in (functx, jax):
        fwd, bwd = m.fwd_and_bwd(f(m), argnums=0, has_aux=True, jitted=False)
        y, res, aux = fwd(np.arange(3.0, dtype=np.float32))
        got[m] = (float(y), aux["n"], np.asarray(bwd(res, np.float32(1))))
    assert got[functx][:2] == got[jax][:2]
    np.testing.assert_array_equal(got[functx][2], got[jax][2])
    with pytest.raises(TypeError):
        functx.fwd_and_bwd(3, argnums=0)
    with pytest.raises(TypeError):
        functx.fwd_and_bwd(lambda x: x, argnums="a")
    with pytest.raises(ValueError):
        functx.fwd_and_bwd(lambda x: x, argnums=2, jitted=False)[0](np.float32(1))


def test_effects_barrier_after_callbacks(capsys):
    seen = []
    f = functx.jit(lambda x: functx.debug.callback(seen.append, x) or x + 1)
    f(np.float32(2))
    assert functx.effects_barrier() is None and jax.effects_barrier() is None
    assert [float(v) for v in seen] == [2.0]
