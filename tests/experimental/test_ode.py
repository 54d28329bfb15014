"""``functx.experimental.ode.odeint`` against JAX and SciPy: the same accepted steps as JAX (values
to rounding), pytree states, closed-over values, float32 in x64-off mode, the adjoint gradients
in ``y0``, ``t`` and ``*args`` against finite differences, jit, vmap, and JAX's errors."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
import scipy.integrate as sint
from cpputil import calls, in_jaxpr
from errutil import raises_as_jax
from jax.experimental import ode as jode
from x64util import x64_off

import functx
import functx.numpy as fjnp
from functx.experimental import ode as fode
from functx.test_util import check_grads

TS = np.linspace(0.0, 3.0, 4)
Y0 = np.array([1.0, 0.0])


def pendulum(np_):
    return lambda y, t, k: np_.stack([y[1], -k * np_.sin(y[0]) + 0.1 * t])


def test_values_against_jax_and_scipy():
    got = fode.odeint(pendulum(fjnp), Y0, TS, 2.0)
    want = jode.odeint(pendulum(jjnp), jjnp.asarray(Y0), jjnp.asarray(TS), 2.0)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)  # the same steps
    ref = sint.solve_ivp(
        lambda t, y: pendulum(np)(y, t, 2.0), (0, 3), Y0, t_eval=TS, rtol=1e-11, atol=1e-11
    )
    np.testing.assert_allclose(got, ref.y.T, atol=1e-6)


def test_mxstep_and_hmax_against_jax():
    # 5 steps with h <= 0.3 do not reach t = 2.5: both extrapolate the last step's quartic
    args = (Y0, np.array([0.0, 2.5, 5.0]), 2.0)
    got = fode.odeint(pendulum(fjnp), *args, mxstep=5, hmax=0.3)
    want = jode.odeint(pendulum(jjnp), *map(jjnp.asarray, args), mxstep=5, hmax=0.3)
    # (extrapolating far past the step magnifies rounding: values up to ~50 agree to 1e-8)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-7)


def test_pytree_state_closure_and_x64_off():
    def f(np_, c):
        return lambda y, t: {"a": -c * y["a"] * t, "b": (y["a"].sum() + y["b"][0][::-1],)}

    y0 = {"a": np.ones(2), "b": (np.arange(3.0),)}
    ts = np.array([0.0, 0.5, 1.0])
    got = fode.odeint(f(fjnp, 1.5), y0, ts)
    want = jode.odeint(f(jjnp, 1.5), y0, jjnp.asarray(ts))
    for g, w in zip(functx.tree_util.tree_leaves(got), jax.tree.leaves(want)):
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        np.testing.assert_allclose(g, w, rtol=1e-10)
    with x64_off():
        got = fode.odeint(pendulum(fjnp), Y0.astype(np.float32), TS.astype(np.float32), 2.0)
        want = jax.eval_shape(
            lambda y, t: jode.odeint(pendulum(jjnp), y, t, 2.0),
            Y0.astype(np.float32),
            TS.astype(np.float32),
        )
        assert (got.dtype, got.shape) == (want.dtype, want.shape) == (np.float32, (4, 2))
    np.testing.assert_allclose(got, fode.odeint(pendulum(fjnp), Y0, TS, 2.0), rtol=1e-4, atol=1e-5)


def _loss(np_, odeint):
    return lambda y0, ts, k: np_.sum(odeint(pendulum(np_), y0, ts, k) ** 2)


def test_adjoint_gradients_against_finite_differences():
    # (JAX's gradient agrees to 1e-8 too, but compiling it costs ~10 s here)
    ts = TS[:3]
    check_grads(_loss(fjnp, fode.odeint), (Y0, ts, 2.0), order=1, modes=("rev",), rtol=1e-4)

    def closed(k):  # a closed-over traced value is differentiated too
        return fjnp.sum(fode.odeint(lambda y, t: -k * y, fjnp.ones(2), fjnp.array([0.0, 1.0])))

    np.testing.assert_allclose(functx.grad(closed)(1.5), 2 * -np.exp(-1.5), rtol=1e-6)


def test_jit_and_vmap():
    want = [fode.odeint(pendulum(fjnp), Y0, TS, k)[-1] for k in (1.0, 2.0)]
    batched = functx.vmap(lambda k: fode.odeint(pendulum(fjnp), Y0, TS, k)[-1])(
        np.array([1.0, 2.0])
    )

    def f(y0):
        return fode.odeint(pendulum(fjnp), y0, TS, 2.0)

    lowered = functx.jit(f).lower(Y0)
    # each Runge-Kutta stage computed once, though the later ones read it through slices (a
    # Jaxpr's f(y0) computed twice is computed once: 7 calls for 8; 24 where stages were inlined)
    assert calls(lowered.as_text(), "sin") <= in_jaxpr(f, (Y0,), "sin")
    jitted = lowered.compile()(Y0)
    np.testing.assert_allclose(batched, np.stack(want), rtol=1e-10)
    np.testing.assert_allclose(jitted[-1], want[1], rtol=1e-10)


BAD = {
    "int t": (dict(t=np.arange(3)), TypeError),
    "str arg": (dict(args=("abc",)), TypeError),
}


@pytest.mark.parametrize("case", BAD)
def test_errors_as_jax(case):
    change, cls = BAD[case]

    def call(modules):
        m, np_ = modules
        kw = dict(t=np.array([0.0, 1.0]), args=(1.0,)) | change
        return m.odeint(lambda y, t, *a: -y, np_.ones(2), kw["t"], *kw["args"])

    raises_as_jax(call, (jode, jjnp), (fode, fjnp), cls)
