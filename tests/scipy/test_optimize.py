"""``functx.scipy.optimize.minimize`` (BFGS) against JAX and SciPy: where JAX's BFGS converges,
functx's takes the same iterates (solution, value, iteration and evaluation counts); where JAX's
line search reports a failed zoom for a bracket held high end first (status 3, jax-ml/jax#40228,
functx's documented difference) functx converges to SciPy's minimizer. Dtypes in both x64 modes,
jit and vmap, and JAX's errors for bad arguments."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import jax.scipy.optimize as jopt
import numpy as np
import pytest
import scipy.optimize as sopt
from errutil import raises_as_jax
from x64util import x64_off

import functx
import functx.numpy as fjnp
import functx.scipy.optimize as fopt

RNG = np.random.RandomState(0)
X = RNG.randn(60, 4)
Y = (X @ RNG.randn(4) + 0.5 * RNG.randn(60) > 0).astype(np.float64)
M = RNG.randn(5, 5)
A = M @ M.T + np.eye(5)
B = RNG.randn(5)


def rosen(np_):
    return lambda x: np_.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic(np_):
    def nll(w, x, y):
        z = x @ w
        return np_.mean(np_.logaddexp(0.0, z) - y * z) + 0.01 * w @ w

    return nll


def quadratic(np_):
    return lambda x, a, b: 0.5 * x @ a @ x - b @ x


# (objective builder, x0, args): JAX converges on "rosen2 linspace", "logistic" and "quadratic"
# and stops with status 3 on the other two (Rosenbrock from (0, 0), and from -1.2 in 5-D).
PROBLEMS = {
    "rosen2 linspace": (rosen, np.linspace(-2.0, 2.0, 2), ()),
    "logistic": (logistic, np.zeros(4), (X, Y)),
    "quadratic": (quadratic, np.zeros(5), (A, B)),
    "rosen2 zeros": (rosen, np.zeros(2), ()),
    "rosen5 -1.2": (rosen, np.full(5, -1.2), ()),
}


LBFGS = "l-bfgs-experimental-do-not-rely-on-this"
# the status JAX reports when its zoom fails on a reversed bracket (jax-ml/jax#40228)
ZOOM_FAILED = {"BFGS": 3, LBFGS: 5}


def _check_against(got, want, build, x0, args, method="BFGS"):
    """functx's result ``got`` against JAX's ``want``: the same iterates where JAX's line
    searches succeeded, SciPy's minimizer where JAX's zoom failed on a reversed bracket."""
    if int(want.status) != ZOOM_FAILED[method]:
        assert int(got.status) == int(want.status)
        np.testing.assert_allclose(got.x, want.x, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got.fun, want.fun, rtol=1e-9, atol=1e-20)
        if method == "BFGS":
            np.testing.assert_allclose(got.hess_inv, want.hess_inv, rtol=1e-6, atol=1e-9)
        assert (int(got.nit), int(got.nfev), int(got.njev)) == (
            int(want.nit),
            int(want.nfev),
            int(want.njev),
        )
    ref = sopt.minimize(build(np), x0, args, method="BFGS")
    np.testing.assert_allclose(got.x, ref.x, atol=1e-4)
    if method == "BFGS":  # (L-BFGS stops on a small decrease, status 4)
        assert int(got.status) == 0 and bool(got.success)
        gnorm = np.abs(np.asarray(functx.grad(build(fjnp))(got.x, *args))).max()
        assert gnorm < 1e-5
    else:
        assert int(got.status) in (0, 4)


@pytest.mark.parametrize("method", ["BFGS", LBFGS])
def test_rosenbrock_starts_against_jax(method):
    # JAX's minimize costs seconds a call here (its loops compile), so one vmapped call serves
    # four starts; under vmap each start keeps its own iterates and counts
    x0s = np.array([[-2.0, 2.0], [0.0, 0.0], [-1.2, 1.0], [2.0, -1.0]])
    want = jax.vmap(lambda x0: jopt.minimize(rosen(jjnp), x0, method=method))(jjnp.asarray(x0s))
    statuses = set(np.asarray(want.status).tolist())
    assert ZOOM_FAILED[method] in statuses and len(statuses) > 1  # both kinds of case
    for i, x0 in enumerate(x0s):
        got = fopt.minimize(rosen(fjnp), x0, method=method)
        assert got.x.dtype == np.float64
        _check_against(got, jax.tree.map(lambda v, i=i: v[i], want), rosen, x0, (), method)


@pytest.mark.parametrize("name", ["logistic", "quadratic", "rosen5 -1.2"])
def test_bfgs_against_scipy(name):
    build, x0, args = PROBLEMS[name]
    got = fopt.minimize(build(fjnp), x0, args, method="BFGS")
    ref = sopt.minimize(build(np), x0, args, method="BFGS", jac=functx.grad(build(fjnp)))
    assert int(got.status) == 0 and ref.success
    np.testing.assert_allclose(got.x, ref.x, atol=1e-5)
    np.testing.assert_allclose(got.fun, ref.fun, rtol=1e-6, atol=1e-10)


def test_dtypes_x64_off_and_maxiter_status():
    with x64_off():
        got = fopt.minimize(rosen(fjnp), fjnp.zeros(3), method="bfgs", options={"maxiter": 4})
        want = jax.eval_shape(
            lambda x: jopt.minimize(rosen(jjnp), x, method="bfgs", options={"maxiter": 4}),
            jjnp.zeros(3),
        )
        for field in fopt.OptimizeResults._fields:
            g, w = getattr(got, field), getattr(want, field)
            assert (g.dtype, g.shape) == (w.dtype, w.shape), field
        assert int(got.status) == 1 and int(got.nit) == 4 and not bool(got.success)
        assert float(got.fun) < float(rosen(np)(np.zeros(3)))


def test_jit_and_vmap():
    def solve(c):
        return fopt.minimize(quadratic(fjnp), fjnp.zeros(5), (A, c), method="BFGS")

    cs = RNG.randn(2, 5)
    batched = functx.vmap(solve)(cs)
    jitted = functx.jit(solve)(cs[0])
    np.testing.assert_allclose(jitted.x, batched.x[0], rtol=1e-9, atol=1e-12)
    for i, c in enumerate(cs):
        one = solve(c)
        np.testing.assert_allclose(batched.x[i], np.linalg.solve(A, c), rtol=1e-6)
        np.testing.assert_allclose(batched.x[i], one.x, rtol=1e-9, atol=1e-12)
        assert int(batched.nit[i]) == int(one.nit)


BAD = {
    "args not a tuple": (dict(args=[1.0]), TypeError),
    "unknown method": (dict(method="Nelder-Mead"), ValueError),
    "unknown option": (dict(options={"xtol": 1.0}), TypeError),
    "2-D x0": (dict(x0=np.zeros((2, 2))), TypeError),
    "scalar x0": (dict(x0=np.float64(1.0)), IndexError),
}


@pytest.mark.parametrize("case", BAD)
def test_errors_as_jax(case):
    change, cls = BAD[case]

    def call(modules):
        m, np_ = modules
        kw = dict(x0=np.zeros(2), args=(), method="BFGS") | change
        return m.minimize(lambda x, *a: np_.sum(x**2), kw.pop("x0"), **kw)

    raises_as_jax(call, (jopt, jjnp), (fopt, fjnp), cls)


def test_lbfgs_options_and_fields():
    got = fopt.minimize(
        quadratic(fjnp), np.zeros(5), (A, B), method=LBFGS, options={"maxcor": 3, "maxiter": 2}
    )
    assert int(got.status) == 1 and int(got.nit) == 3 and got.hess_inv is None
    assert jax.scipy.optimize.OptimizeResults._fields == fopt.OptimizeResults._fields


def test_lbfgs_complex_x():
    # sum |z - c|^2 + 0.1 |z|^4 is minimal where z (1 + 0.2 |z|^2) = c: z = c / (1 + 0.2 r^2)
    # with r (1 + 0.2 r^2) = |c| (JAX's L-BFGS stops with status 5 here, its zoom's bracket)
    c = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j])
    r = np.array([np.roots([0.2, 0.0, 1.0, -abs(ci)]) for ci in c])
    r = r[np.abs(r.imag) < 1e-12].real
    got = fopt.minimize(
        lambda z: fjnp.sum(fjnp.abs(z - c) ** 2 + 0.1 * fjnp.abs(z) ** 4),
        np.zeros(3, np.complex128),
        method=LBFGS,
    )
    assert int(got.status) == 0 and got.x.dtype == np.complex128
    np.testing.assert_allclose(got.x, c / (1 + 0.2 * r**2), rtol=1e-6)
