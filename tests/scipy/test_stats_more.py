"""``functx.scipy.stats``' later names: the distributions ``truncnorm``, ``vonmises``,
``wrapcauchy``, ``gennorm``, ``nbinom``, ``betabinom``, ``multinomial``; the summaries ``sem``,
``rankdata``, ``mode``; and ``gaussian_kde``. Values against SciPy in float64 and float32
(hypothesis-drawn points and parameters), values, shapes and dtypes against JAX in one compile,
gradients by ``check_grads``, ``jit``, ``vmap`` and errors."""

from __future__ import annotations

import warnings

import jax
import jax.scipy.stats as jst
import numpy as np
import pytest
import scipy.stats as sst
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import functx
import functx.scipy.stats as fst
from functx.errors import FunctxError
from functx.test_util import check_grads

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

# (distribution, functions, point range, parameter ranges, loc/scale?)
CONT = {
    "truncnorm": (["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"], (-4, 4), [(-3, 0), (0.2, 3)]),
    "vonmises": (["logpdf", "pdf"], (-4, 4), [(0.1, 20)]),
    "wrapcauchy": (["logpdf", "pdf"], (-1, 7), [(0.05, 0.95)]),
    "gennorm": (["logpdf", "pdf", "cdf"], (-3, 3), [(0.5, 4)]),
}


def close(out, ref, dt, tol=None):
    tol = tol or (2e-4 if dt == F32 else 1e-9)
    out = np.asarray(out)
    assert out.dtype == dt
    np.testing.assert_allclose(out, np.asarray(ref, dt), rtol=tol, atol=tol)


@pytest.mark.parametrize("dist", list(CONT))
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_continuous_match_scipy(dist, data):
    fns, (lo, hi), params = CONT[dist]
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4))
    el = lambda a, b: st.floats(a, b, allow_subnormal=False)  # noqa: E731
    x = data.draw(hnp.arrays(F64, shape, elements=el(lo, hi)), label="x").astype(dt)
    ps = [dt.type(data.draw(el(a, b), label="p")) for a, b in params]
    extra = []
    if dist == "truncnorm":
        extra = [dt.type(data.draw(el(-1, 1), "loc")), dt.type(data.draw(el(0.5, 2), "scale"))]
    for fn in fns:
        out = getattr(getattr(fst, dist), fn)(x, *ps, *extra)
        with np.errstate(all="ignore"):
            ref = getattr(getattr(sst, dist), fn)(x.astype(F64), *ps, *extra)
        if dist == "wrapcauchy":  # (SciPy wraps angles outside [0, 2 pi]; JAX gives 0 there)
            inside = (x >= 0) & (x <= 2 * np.pi)
            ref = np.where(inside, ref, -np.inf if fn == "logpdf" else 0.0)
        close(out, ref, dt)


def test_truncnorm_far_tails_keep_precision():
    x = np.array([-39.5, -38.2, 38.5, 39.9])
    a, b = np.array([-40.0, -40.0, 38.0, 38.0]), np.array([-38.0, -38.0, 40.0, 40.0])
    for fn in ("logpdf", "logcdf", "logsf", "cdf", "sf"):
        close(getattr(fst.truncnorm, fn)(x, a, b), getattr(sst.truncnorm, fn)(x, a, b), F64, 1e-7)


@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_discrete_match_scipy(data):
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    k = data.draw(hnp.arrays(dt, 5, elements=st.sampled_from([-1.0, 0.0, 1.0, 2.0, 3.0, 7.0])))
    p = dt.type(data.draw(st.floats(0.05, 0.95), label="p"))
    n = dt.type(data.draw(st.integers(1, 6), label="n"))
    nr = dt.type(data.draw(st.floats(0.5, 6), label="n real"))
    a, b = (dt.type(data.draw(st.floats(0.3, 4), label=lab)) for lab in "ab")
    loc = dt.type(data.draw(st.integers(-1, 1), label="loc"))
    with np.errstate(all="ignore"):
        close(fst.nbinom.logpmf(k, nr, p, loc), sst.nbinom.logpmf(k, nr, p, loc), dt)
        close(fst.nbinom.pmf(k, nr, p), sst.nbinom.pmf(k, nr, p), dt)
        close(fst.betabinom.logpmf(k, n, a, b, loc), sst.betabinom.logpmf(k, n, a, b, loc), dt)
        close(fst.betabinom.pmf(k, n, a, b), sst.betabinom.pmf(k, n, a, b), dt)
    counts = np.array([[1, 2, 0], [0, 0, 3], [3, 1, 0]])
    probs = np.array([p, (1 - p) / 2, (1 - p) / 2], dt)
    for c in counts:
        n_c = int(c.sum())
        close(fst.multinomial.logpmf(c, n_c, probs), sst.multinomial.logpmf(c, n_c, probs), dt)
        close(fst.multinomial.pmf(c, n_c, probs), sst.multinomial.pmf(c, n_c, probs), dt)
    assert fst.multinomial.logpmf(counts[0], 4, probs) == -np.inf


def _every_call(m):
    """Every function on one module (functx's or JAX's), invalid parameters included."""
    x = np.array([-0.5, 0.2, 1.5, 7.0], np.float32)
    k = np.array([0, 1, 2, 5], np.int32)
    out = [getattr(m.truncnorm, f)(x, -1.0, 2.0, 0.5, 1.5) for f in CONT["truncnorm"][0]]
    out += [getattr(m.truncnorm, f)(x, 1.0, 1.0) for f in ("logpdf", "cdf")]  # (a >= b: NaN)
    out += [m.vonmises.logpdf(x, 2.0), m.vonmises.pdf(x, np.float32(-1)), m.vonmises.pdf(k, 3)]
    out += [m.wrapcauchy.logpdf(x, 0.4), m.wrapcauchy.pdf(x, 1.5), m.wrapcauchy.pdf(k, 0.2)]
    out += [m.gennorm.logpdf(x, 1.5), m.gennorm.pdf(k, 2), m.gennorm.cdf(x, 0.7)]
    out += [m.nbinom.logpmf(k, 3, 0.4), m.nbinom.pmf(x, 2.5, 0.3, 1), m.nbinom.logpmf(k, 2, 1.0)]
    out += [m.betabinom.logpmf(k, 4, 1.5, 2.0), m.betabinom.pmf(x, 5, 2.0, 0.5)]
    out += [m.betabinom.logpmf(k, -1, 1.0, 1.0), m.betabinom.logpmf(k * 0, 0, 1.0, 1.0)]
    c, p = np.array([[1, 0, 2], [2, 1, 0]], np.int32), np.array([0.2, 0.3, 0.5], np.float32)
    out += [m.multinomial.logpmf(c[0], 3, p), m.multinomial.pmf(c, 3, p)]
    y = np.array([[3.0, 1.0, np.nan, 1.0], [2.0, 2.0, 0.5, 2.0], [2.0, 5.0, 0.5, 1.0]], np.float32)
    out += [m.sem(y), m.sem(y, axis=None, ddof=0), m.sem(y, axis=1, keepdims=True)]
    out += [m.sem(y, nan_policy="omit"), m.sem(k)]
    for method in ("average", "min", "max", "dense", "ordinal"):
        out += [m.rankdata(y[1:], method), m.rankdata(y, method, axis=1), m.rankdata(k, method)]
    out += [m.rankdata(y[1:], axis=0), m.rankdata(np.zeros(0, np.float32))]
    out += list(m.mode(y)) + list(m.mode(y, axis=None)) + list(m.mode(y, 1, keepdims=True))
    out += list(m.mode(k)) + list(m.mode(np.float32(2))) + list(m.mode(np.zeros((0, 2))))
    kde = m.gaussian_kde(y[1:], weights=np.array([1.0, 2.0, 1.0, 3.0], np.float32))
    out += [kde.neff, kde.covariance, kde.inv_cov, kde.evaluate(y[1:, :2]), kde.logpdf(y[1:])]
    out += [kde.integrate_gaussian(np.zeros(2), np.eye(2)), kde.integrate_kde(kde)]
    kde1 = m.gaussian_kde(x, bw_method="silverman")
    out += [kde1.pdf(x), kde1(k), kde1.integrate_box_1d(-1.0, 2.0), m.gaussian_kde(k, 0.5).pdf(x)]
    return out


def _jax_conventions(m):
    """The values where JAX, not SciPy, is the reference: invalid parameters (NaN), points off
    the support, NaN data in the summaries, empty samples."""
    x = np.array([-0.5, 0.2, 1.5, 7.0], np.float32)
    k = np.array([0, 1, 2, 5], np.int32)
    y = np.array([[3.0, 1.0, np.nan, 1.0], [2.0, 2.0, 0.5, 2.0]], np.float32)
    return [
        m.truncnorm.logpdf(x, 1.0, 1.0),
        m.truncnorm.logcdf(x, 2.0, 1.0),
        m.vonmises.pdf(x, np.float32(-1)),
        m.wrapcauchy.pdf(x, 1.5),
        m.wrapcauchy.logpdf(x - 1, 0.5),
        m.nbinom.logpmf(k, 2, 1.0),
        m.betabinom.logpmf(k, -1, 1.0, 1.0),
        m.betabinom.logpmf(k * 0, 0, 1.0, 1.0),
        m.multinomial.logpmf(np.array([1, 0, 1], np.int32), 3, np.full(3, 1 / 3, np.float32)),
        m.sem(y, axis=1),
        m.rankdata(y),
        m.rankdata(y, "dense", axis=1),
        *m.mode(y),
        *m.mode(np.zeros((0, 2), np.float32)),
    ]


@pytest.mark.usefixtures("no_x64")
def test_shapes_and_dtypes_match_jax_and_values_where_only_jax_defines_them():
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        outs = _every_call(fst)
        refs = jax.eval_shape(lambda: _every_call(jst))  # (tracing only)
        assert len(outs) == len(refs)
        for i, (o, r) in enumerate(zip(outs, refs)):
            assert (np.shape(o), np.asarray(o).dtype) == (r.shape, r.dtype), i
        refs = jax.jit(lambda: _jax_conventions(jst))()  # (one compile)
        for i, (o, r) in enumerate(zip(_jax_conventions(fst), refs)):
            np.testing.assert_allclose(
                np.asarray(o), np.asarray(r), rtol=2e-5, atol=2e-6, err_msg=i
            )


def test_poisson_entropy_matches_scipy_and_jax():
    small = np.array([0.01, 0.5, 3.0, 9.9, 10.1, 50.0, 99.0])
    close(fst.poisson.entropy(small), sst.poisson.entropy(small), F64, 1e-12)
    close(fst.poisson.entropy(small.astype(F32)), sst.poisson.entropy(small), F32, 5e-5)
    # above 100: JAX's asymptotic series (SciPy's sum stops converging)
    big = np.array([100.0, 150.0, 1e4])
    close(fst.poisson.entropy(big), 0.5 * np.log(2 * np.pi * np.e * big) - 1 / (12 * big), F64)
    out = fst.poisson.entropy(np.array([0.0, -1.0, np.nan]))
    np.testing.assert_array_equal(out, [0.0, np.nan, np.nan])
    mu, loc = np.array([1.0, 2.0], F32), np.zeros((3, 1), np.int32)
    ref = jax.eval_shape(lambda: jst.poisson.entropy(mu, loc))
    assert (fst.poisson.entropy(mu, loc).shape, fst.poisson.entropy(mu).dtype) == (ref.shape, F32)
    check_grads(fst.poisson.entropy, (np.array([0.7, 3.0, 42.0, 160.0]),), order=1)


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata_and_mode_match_scipy(method):
    rng = np.random.default_rng(1)
    y = rng.integers(0, 4, (4, 7)).astype(F64)
    close(fst.rankdata(y, method), sst.rankdata(y, method), F64)
    close(fst.rankdata(y, method, axis=0), sst.rankdata(y, method, axis=0), F64)
    for axis in (0, 1, None):
        got, ref = fst.mode(y, axis=axis), sst.mode(y, axis=axis)
        close(got.mode, ref.mode, F64)
        np.testing.assert_array_equal(got.count, ref.count)
    close(fst.sem(y, axis=1, ddof=2), sst.sem(y, axis=1, ddof=2), F64)


def test_gaussian_kde_matches_scipy_and_jax_samples():
    rng = np.random.default_rng(2)
    data, pts = rng.standard_normal((2, 30)), rng.standard_normal((2, 6))
    w = rng.random(30)
    for kw in ({}, dict(bw_method="silverman", weights=w), dict(bw_method=0.4)):
        got, ref = fst.gaussian_kde(data, **kw), sst.gaussian_kde(data, **kw)
        for name in ("neff", "covariance", "inv_cov", "weights"):
            close(getattr(got, name), getattr(ref, name), F64)
        close(got.evaluate(pts), ref.evaluate(pts), F64)
        close(got.logpdf(pts), ref.logpdf(pts), F64)
        close(
            got.integrate_gaussian(pts[:, 0], np.eye(2)),
            ref.integrate_gaussian(pts[:, 0], np.eye(2)),
            F64,
        )
        other = rng.standard_normal((2, 4))
        close(
            got.integrate_kde(fst.gaussian_kde(other)),
            ref.integrate_kde(sst.gaussian_kde(other)),
            F64,
        )
    one = fst.gaussian_kde(data[0], bw_method=lambda k: k.neff**-0.25)
    ref = sst.gaussian_kde(data[0], bw_method=lambda k: k.neff**-0.25)
    close(one.integrate_box_1d(-0.5, 1.0), ref.integrate_box_1d(-0.5, 1.0), F64)
    # the same keys give JAX's samples
    got = one.resample(functx.random.PRNGKey(3), (5,))
    want = jst.gaussian_kde(data[0], bw_method=0.5).resample(jax.random.PRNGKey(3), (5,))
    got = fst.gaussian_kde(data[0], bw_method=0.5).resample(functx.random.PRNGKey(3), (5,))
    close(got, want, F64, 1e-12)
    # a pytree: through jit and vmap
    kde = fst.gaussian_kde(data)
    close(functx.jit(lambda k, p: k.logpdf(p))(kde, pts), kde.logpdf(pts), F64, 1e-12)
    per_point = functx.vmap(lambda p: kde.evaluate(p[:, None])[0], in_axes=1)(pts)
    close(per_point, kde.evaluate(pts), F64, 1e-12)


def test_gaussian_kde_integrals_of_float32_data_stay_float32_with_x64():
    # review34: the normalising constant was a NumPy float64 scalar (a strong type)
    x = np.array([-0.5, 0.2, 1.5, 7.0], np.float32)
    mean, cov = np.zeros(1, np.float32), np.eye(1, dtype=np.float32)
    for calls in (
        lambda m: m.gaussian_kde(x).integrate_kde(m.gaussian_kde(x + 1)),
        lambda m: m.gaussian_kde(x).integrate_gaussian(mean, cov),
    ):
        got, want = calls(fst), jax.eval_shape(lambda c=calls: c(jst))
        assert got.dtype == want.dtype == F32
        np.testing.assert_allclose(got, calls(sst), rtol=2e-5)


def test_gradients_jit_and_vmap():
    x = np.array([-0.3, 0.4, 1.1])
    check_grads(lambda v: fst.truncnorm.logpdf(v, -1.0, 2.0, 0.2, 1.3), (x,), order=2)
    check_grads(
        lambda v: fst.truncnorm.logcdf(v, -1.0, 2.0) + fst.truncnorm.logsf(v, -1.0, 2.0),
        (x,),
        order=1,
    )
    check_grads(lambda a: fst.truncnorm.logpdf(x, a, 2.5), (-1.5,), order=1)
    check_grads(
        lambda kap: fst.vonmises.logpdf(x, kap) + fst.wrapcauchy.logpdf(x + 1, kap / 4),
        (2.0,),
        order=2,
    )
    check_grads(lambda b: fst.gennorm.logpdf(x, b) + fst.gennorm.cdf(x, b), (1.7,), order=1)
    k = np.array([0.0, 1.0, 3.0])
    check_grads(
        lambda p: fst.nbinom.logpmf(k, 2.5, p) + fst.betabinom.logpmf(k, 4, p * 3, 2.0),
        (0.4,),
        order=1,
    )
    check_grads(
        lambda p: fst.multinomial.logpmf(np.array([1, 2, 0]), 3, p),
        (np.array([0.2, 0.3, 0.5]),),
        order=1,
    )
    check_grads(lambda a: fst.sem(a, axis=None), (x,), order=2)
    data = np.array([[0.0, 1.0, 1.5, 3.0, 2.2]])
    check_grads(lambda d: fst.gaussian_kde(d).logpdf(x), (data,), order=1, modes=["rev"])
    f = lambda v: fst.truncnorm.cdf(v, -1.0, 1.0) + fst.vonmises.pdf(v, 2.0) + fst.rankdata(v)  # noqa: E731
    close(functx.jit(f)(x), f(x), F64, 1e-12)
    xs = np.stack([x, x[::-1] * 2])
    close(functx.vmap(f)(xs), np.stack([f(xs[0]), f(xs[1])]), F64, 1e-12)
    close(
        functx.vmap(lambda v: fst.mode(v).mode)(xs.round()),
        fst.mode(xs.round(), axis=1).mode,
        F64,
    )


BAD = [
    (lambda m: m.multinomial.logpmf(np.array([1.0, 2.0]), 3, np.array([0.5, 0.5])), ValueError),
    (lambda m: m.rankdata(np.ones(3), "foo"), ValueError),
    (lambda m: m.rankdata(np.ones(3), nan_policy="foo"), ValueError),
    (lambda m: m.rankdata(np.ones(3), nan_policy="omit"), NotImplementedError),
    (lambda m: m.mode(np.ones(3), nan_policy="raise"), NotImplementedError),
    (lambda m: m.sem(np.ones(3), nan_policy="raise"), ValueError),
    (lambda m: m.gaussian_kde(np.ones(1)), ValueError),
    (lambda m: m.gaussian_kde(np.ones(3) + 1j), NotImplementedError),
    (lambda m: m.gaussian_kde(np.arange(3.0), bw_method="foo"), ValueError),
    (lambda m: m.gaussian_kde(np.arange(3.0), weights=np.ones(2)), ValueError),
    (lambda m: m.gaussian_kde(np.arange(3.0)).evaluate(np.ones((2, 2))), ValueError),
    (
        lambda m: m.gaussian_kde(np.arange(3.0)).integrate_gaussian(np.ones(2), np.eye(2)),
        ValueError,
    ),
    (lambda m: m.gaussian_kde(np.eye(2) + [[0, 1], [2, 0]]).integrate_box_1d(0.0, 1.0), ValueError),
    (lambda m: m.gaussian_kde(np.arange(3.0)).integrate_box([0.0], [1.0]), NotImplementedError),
    (lambda m: m.gaussian_kde(np.arange(3.0)).set_bandwidth(), NotImplementedError),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_bad_input_raises_functx_errors_like_jax(k):
    call, cls = BAD[k]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(cls):
            jax.eval_shape(lambda: call(jst))  # (tracing only)
        with pytest.raises(cls) as got:
            call(fst)
    assert isinstance(got.value, FunctxError), got.value
