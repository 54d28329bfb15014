"""``functx.scipy.stats`` against SciPy's values (hypothesis-drawn points, shapes and dtypes: no
XLA compile per case) and ``jax.scipy.stats``' shapes and dtypes (``jax.eval_shape`` with x64
off, tracing only), gradients by ``check_grads``, errors, and the docstrings' examples."""

from __future__ import annotations

import types
import warnings

import docutil
import jax
import jax.numpy as jjnp
import jax.scipy.stats as jst
import numpy as np
import pytest
import scipy.stats as sst
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import functx
import functx.scipy.stats as fst
from functx.test_util import check_grads

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

# (distribution, function, point range, parameter ranges): loc and scale are drawn for every
# continuous distribution with a loc/scale signature
CONT = {
    "norm": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (-6, 6), []),
    "expon": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (-1, 8), []),
    "uniform": (["logpdf", "pdf", "cdf"], (-1, 3), []),
    "laplace": (["logpdf", "pdf", "cdf"], (-6, 6), []),
    "logistic": (["logpdf", "pdf", "cdf", "sf"], (-10, 10), []),
    "cauchy": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (-20, 20), []),
    "t": (["logpdf", "pdf"], (-6, 6), [(0.5, 30)]),
    "gamma": (["logpdf", "pdf"], (-1, 10), [(0.3, 8)]),
    "chi2": (["logpdf", "pdf"], (-1, 10), [(0.5, 8)]),
    "beta": (["logpdf", "pdf"], (-0.2, 1.2), [(0.3, 5), (0.3, 5)]),
}
QUANTILES = {
    "norm": ["ppf", "isf"],
    "expon": ["ppf"],
    "uniform": ["ppf"],
    "logistic": ["ppf", "isf"],
    "cauchy": ["ppf", "isf"],
}


def _scipy(dist, fn):
    return getattr(getattr(sst, dist), fn)


def check_types(fn_jax, out, *args):
    with jax.enable_x64(False):
        ref = jax.eval_shape(fn_jax, *args)
    assert (np.shape(out), np.asarray(out).dtype) == (ref.shape, ref.dtype)


def close(out, ref, dt):
    tol = 2e-4 if dt == F32 else 1e-9
    out, ref = np.asarray(out), np.asarray(ref, dt)
    np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("dist", list(CONT))
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_continuous_match_scipy(dist, data):
    fns, (lo, hi), params = CONT[dist]
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4))
    el = lambda a, b: st.floats(a, b, allow_subnormal=False)  # noqa: E731
    arr = lambda shp, a, b, lab: data.draw(hnp.arrays(F64, shp, elements=el(a, b)), lab).astype(dt)  # noqa: E731
    x = arr(shape, lo, hi, "x")
    ps = [arr(shape[-1:], a, b, "p") for a, b in params]
    loc = dt.type(data.draw(el(-1, 1), label="loc"))
    scale = dt.type(data.draw(el(0.5, 2), label="scale"))
    for fn in fns:
        out = getattr(getattr(fst, dist), fn)(x, *ps, loc, scale)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            ref = _scipy(dist, fn)(x.astype(F64), *[p.astype(F64) for p in ps], loc, scale)
        close(out, ref, dt)
        assert np.asarray(out).dtype == dt
    for fn in QUANTILES.get(dist, []):
        q = arr(shape, 0.001, 0.999, "q")
        close(getattr(getattr(fst, dist), fn)(q, loc, scale), _scipy(dist, fn)(q, loc, scale), dt)


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_discrete_match_scipy(data):
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    k = data.draw(hnp.arrays(dt, 5, elements=st.sampled_from([-1.0, 0.0, 1.0, 2.0, 3.0, 1.5, 7.0])))
    p = dt.type(data.draw(st.sampled_from([0.2, 0.5, 0.9]), label="p"))
    mu = dt.type(data.draw(st.floats(0.1, 10), label="mu"))
    n = dt.type(data.draw(st.integers(1, 6), label="n"))
    kp, k = k, np.where(k == 1.5, dt.type(2), k)  # only poisson checks integrality, as in JAX
    with np.errstate(all="ignore"):
        cases = [
            (fst.poisson.logpmf(kp, mu), sst.poisson.logpmf(kp, mu)),
            (fst.poisson.pmf(kp, mu, 1), sst.poisson.pmf(kp, mu, 1)),
            (fst.bernoulli.logpmf(k, p), sst.bernoulli.logpmf(k, p)),
            (fst.bernoulli.pmf(k, p, -1), sst.bernoulli.pmf(k, p, -1)),
            (fst.bernoulli.cdf(k, p), sst.bernoulli.cdf(k, p)),
            (fst.binom.logpmf(k, n, p), sst.binom.logpmf(k, n, p)),
            (fst.binom.pmf(k, n, p), sst.binom.pmf(k, n, p)),
            (fst.geom.logpmf(k, p), sst.geom.logpmf(k, p)),
            (fst.geom.pmf(k, p, 1), sst.geom.pmf(k, p, 1)),
        ]
    for out, ref in cases:
        assert np.asarray(out).dtype == dt
        close(out, ref, dt)
    q = np.array([0.3, 0.45, 0.7, 0.85, 1.0], dt)  # (at 0 SciPy gives -1, JAX 0)
    close(fst.bernoulli.ppf(q, p), sst.bernoulli.ppf(q, p), dt)


def test_dirichlet_matches_scipy_and_jax():
    alpha = np.array([0.5, 2.0, 3.0], np.float32)
    x = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], np.float32).T
    close(fst.dirichlet.logpdf(x, alpha), [sst.dirichlet.logpdf(c, alpha) for c in x.T], F32)
    close(fst.dirichlet.pdf(x[:2], alpha), [sst.dirichlet.pdf(c, alpha) for c in x.T], F32)
    off = np.array([0.5, 0.6, 0.1], np.float32)  # sums to 1.2
    assert fst.dirichlet.logpdf(off, alpha) == -np.inf
    for mod in (fst, jst):
        with pytest.raises(ValueError):
            mod.dirichlet.logpdf(x, alpha[:, None])
        with pytest.raises(ValueError):
            mod.dirichlet.logpdf(x[:1], alpha)


def _every_call(m):
    x = np.array([-0.5, 0.2, 1.5], np.float32)
    i = np.array([0, 1, 2], np.int32)
    out = []
    for dist, (fns, _, params) in CONT.items():
        for fn in fns:
            out.append(getattr(getattr(m, dist), fn)(x, *[1.5] * len(params), 0, 2.0))
    for dist, fns in QUANTILES.items():
        out += [getattr(getattr(m, dist), fn)(x * 0 + 0.3) for fn in fns]
    out += [m.poisson.logpmf(i, 2.0), m.poisson.pmf(i, 2), m.bernoulli.logpmf(i, 0.3)]
    out += [m.bernoulli.pmf(i, 0.3), m.bernoulli.cdf(i, 0.3), m.bernoulli.ppf(x, 0.3)]
    out += [m.binom.logpmf(i, 3, 0.3), m.binom.pmf(i, 3, 0.3), m.geom.logpmf(i, 0.3)]
    # SciPy calls these parameters invalid (NaN); JAX gives numbers
    out += [m.binom.logpmf(i, 2, 1.0), m.binom.logpmf(i * 0, 0, 0.5), m.bernoulli.logpmf(i, 0.0)]
    out += [m.geom.pmf(i, 0.3), m.dirichlet.logpdf(x[:2] * 0 + 0.5, np.ones(2, np.float32))]
    out += [m.norm.logpdf(i), m.expon.pdf(2), m.dirichlet.pdf(x[:, None] * 0 + 1 / 3, x * 0 + 2)]
    return out


@pytest.mark.usefixtures("no_x64")
def test_shapes_and_dtypes_match_jax():
    outs = _every_call(fst)
    with jax.enable_x64(functx.config.jax_enable_x64):  # (functx's mode: x64 in the suite)
        refs = jax.eval_shape(lambda: _every_call(jst))
    assert len(outs) == len(refs)
    for k, (o, r) in enumerate(zip(outs, refs)):
        assert (np.shape(o), np.asarray(o).dtype) == (r.shape, r.dtype), k
    # the JAX reference's values, once, in one compile
    ref = jax.jit(lambda: _every_call(jst))()
    with np.errstate(all="ignore"):
        for o, r in zip(outs, ref):
            np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=2e-5, atol=2e-6)


def test_gradients_jit_and_docstrings():
    x = np.array([0.3, 1.2, 2.5])
    check_grads(lambda v: fst.norm.logpdf(v, 0.5, 1.3) + fst.t.logpdf(v, 3.0), (x,), order=2)
    check_grads(lambda a: fst.gamma.logpdf(x, a) + fst.beta.logpdf(x / 3, a, 2.0), (1.7,), order=1)
    check_grads(lambda q: fst.norm.ppf(q) + fst.norm.logcdf(q), (x / 3,), order=1)
    f = lambda v: fst.norm.cdf(v) + fst.poisson.logpmf(v, 2.0)  # noqa: E731
    np.testing.assert_allclose(functx.jit(f)(x), f(x), rtol=1e-12)
    assert jjnp is not None
    for name in fst.__all__:
        mod = getattr(fst, name)
        if not isinstance(mod, types.ModuleType):  # (sem, rankdata, mode, gaussian_kde)
            continue
        # (the public names' examples run in tests/test_docstrings.py; the module's others here)
        assert docutil.run(mod, optionflags=0).failed == 0, name
        for fn in mod.__all__:
            doc = getattr(mod, fn).__doc__
            assert "Arguments:" in doc and "Returns:" in doc and "Example:" in doc, (name, fn)
