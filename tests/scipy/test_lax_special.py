"""``functx.lax``'s special-function primitives (erf_inv, digamma, igamma, igammac,
igamma_grad_a, random_gamma_grad, polygamma, zeta, bessel_i0e, bessel_i1e; lgamma's derivative)
against SciPy (JAX's own test reference) and mpmath on hypothesis-drawn shapes in float32 and
float64, against JAX where JAX compiles them quickly (XLA takes 5-8 s to compile each of the
igamma family, so those are checked against SciPy, and their edge cases against values JAX
gives), derivatives, errors and dtypes in both x64 modes. Compiled C++ against eager is in
tests/lowering/test_backend_suite.py (``special_*``)."""

from __future__ import annotations

import jax
import mpmath
import numpy as np
import pytest
import scipy.special as sc
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from x64util import x64_off

import functx
from functx import lax
from functx.test_util import check_grads

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
RTOL = {F32: 2e-6, F64: 1e-12}
SHAPES = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=4)

# name: (SciPy's function, the range of each operand)
UNARY = {
    "erf_inv": (sc.erfinv, (-0.999, 0.999)),
    "digamma": (sc.digamma, (-8.5, 30)),
    "bessel_i0e": (sc.i0e, (-60, 60)),
    "bessel_i1e": (sc.i1e, (-60, 60)),
}
BINARY = {
    "igamma": (sc.gammainc, (0.05, 40), (0.0, 60)),
    "igammac": (sc.gammaincc, (0.05, 40), (0.0, 60)),
    "zeta": (sc.zeta, (1.05, 12), (0.1, 20)),
}


def _draw(data, dt, shape, lo, hi, label):
    a = data.draw(
        hnp.arrays(F64, shape, elements=st.floats(lo, hi, allow_subnormal=False)), label=label
    )
    return a.astype(dt)


def _close(out, ref, dt, rtol=None, atol=0.0):
    out = np.asarray(out)
    assert out.dtype == dt
    np.testing.assert_allclose(out, ref, rtol=rtol or RTOL[dt], atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", sorted(UNARY))
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_unary_against_scipy(name, data):
    ref, (lo, hi) = UNARY[name]
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    x = _draw(data, dt, data.draw(SHAPES, label="shape"), lo, hi, "x")
    if name == "digamma":  # off the poles (JAX gives NaN there, SciPy -inf at 0)
        x = np.where((x <= 0) & (x == np.round(x)), x - 0.5, x).astype(dt)
    want = ref(x.astype(F64))
    # digamma near its zeros and poles (reflection) is ill-conditioned: compare absolutely there
    atol = {F32: 2e-5, F64: 1e-11}[dt] if name == "digamma" else 0.0
    _close(getattr(lax, name)(x), want, dt, rtol=RTOL[dt] * (4 if dt == F32 else 1), atol=atol)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_binary_against_scipy(name, data):
    ref, (alo, ahi), (xlo, xhi) = BINARY[name]
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    shape = data.draw(SHAPES, label="shape")
    a = _draw(data, dt, shape, alo, ahi, "a")
    x = _draw(data, dt, shape, xlo, xhi, "x")
    want = ref(a.astype(F64), x.astype(F64))
    _close(getattr(lax, name)(a, x), want, dt, rtol=RTOL[dt] * 8, atol=RTOL[dt] * 1e-3)


def test_polygamma_and_the_igamma_derivatives_against_mpmath_and_scipy():
    m = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 1.0, 2.0])
    x = np.array([0.3, 1.7, 4.0, 11.0, 0.9, -1.5, -2.25])
    want = [float(mpmath.polygamma(int(a), b)) for a, b in zip(m, x)]
    _close(lax.polygamma(m, x), want, F64, rtol=1e-12)
    _close(lax.polygamma(m.astype(F32), x.astype(F32)), want, F32, rtol=1e-5)
    a = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 30.0, 3.0])
    xs = np.array([0.2, 3.0, 1.0, 0.5, 9.0, 28.0, 3.0])
    # d/da P(a, x) by mpmath; the derivative of a Gamma(a) sample: -(dP/da) / (dP/dx)
    dpa = [
        float(mpmath.diff(lambda s: mpmath.gammainc(s, 0, v, regularized=True), u))
        for u, v in zip(a, xs)
    ]
    _close(lax.igamma_grad_a(a, xs), dpa, F64, rtol=1e-10)
    pdf = np.exp(-xs + (a - 1) * np.log(xs) - sc.gammaln(a))
    _close(lax.random_gamma_grad(a, xs), -np.array(dpa) / pdf, F64, rtol=1e-10)
    _close(lax.igamma_grad_a(a.astype(F32), xs.astype(F32)), dpa, F32, rtol=2e-5)


def test_edge_cases_follow_jax():
    # JAX's conventions at the domain's edges (values jax.lax gives, checked once offline for
    # every combination of 0, -1, 1, inf, -inf, nan and 1e-300; its igamma family compiles slowly)
    nan, inf = np.nan, np.inf
    a = np.array([0.0, 0.0, -1.0, 1.0, 1.0, 2.0, nan, 1e-300])
    x = np.array([0.0, 1.0, 1.0, 0.0, inf, -1.0, 1.0, 1.0])
    np.testing.assert_array_equal(lax.igamma(a, x)[:7], [nan, 1, nan, 0, 1, nan, nan])
    np.testing.assert_array_equal(lax.igammac(a, x)[:7], [nan, 0, nan, 1, 0, nan, nan])
    np.testing.assert_allclose(lax.igammac(a, x)[7], 2.193839343955265e-301, rtol=1e-10)
    np.testing.assert_array_equal(lax.igamma_grad_a(a, x)[:7], [nan, nan, nan, 0, nan, nan, nan])
    np.testing.assert_allclose(lax.igamma_grad_a(a, x)[7], -0.2193839343955245, rtol=1e-10)
    q = np.array([-2.0, 0.0, -1.5, 2.0, inf, nan])
    np.testing.assert_array_equal(lax.zeta(np.full(6, 2.0), q)[[0, 1, 4, 5]], [inf, inf, nan, nan])
    np.testing.assert_array_equal(lax.zeta(np.full(6, 5.0), q)[[0, 1]], [nan, nan])
    np.testing.assert_array_equal(lax.zeta(np.array([1.0, 0.5]), np.array([nan, 2.0])), [inf, nan])
    np.testing.assert_array_equal(
        lax.digamma(np.array([0.0, -1.0, -inf, inf])), [nan, nan, nan, inf]
    )
    np.testing.assert_array_equal(
        lax.erf_inv(np.array([1.0, -1.0, 1.5, -0.0])), [inf, -inf, nan, -0.0]
    )
    np.testing.assert_array_equal(lax.bessel_i1e(np.array([-inf, inf, 0.0])), [0.0, 0.0, 0.0])


def test_against_jax():
    """The special functions XLA compiles quickly, in one jit, against functx's eager values
    (float64; float32 against SciPy above, polygamma against mpmath, erf_inv against JAX in the
    backend suite)."""
    dt = F64
    x = np.array([0.3, 1.7, 4.0, 11.0, 0.9, -1.5, -2.25, 25.0, 0.01], dt)
    m = np.array([0, 1, 2, 3, 1, 1, 2, 0, 1], dt)

    def fns(lx, x, m):
        return {
            "digamma": lx.digamma(x),
            "zeta": lx.zeta(m + 2, lx.abs(x)),
            "bessel_i0e": lx.bessel_i0e(x),
            "bessel_i1e": lx.bessel_i1e(x),
        }

    ours = fns(lax, x, m)
    ref = jax.jit(lambda x, m: fns(jax.lax, x, m))(x, m)
    for k in ours:
        _close(ours[k], np.asarray(ref[k]), dt, rtol=1e-12, atol=0)


def test_derivatives():
    x = np.array([0.4, 1.3, 2.5, -0.7])
    ours = functx.vmap(functx.grad(lambda v: lax.lgamma(v) + lax.bessel_i1e(v)))(x)
    want = jax.jit(jax.vmap(jax.grad(lambda v: jax.lax.lgamma(v) + jax.lax.bessel_i1e(v))))(x)
    np.testing.assert_allclose(ours, want, rtol=1e-12)
    # d/da igamma through igamma_grad_a, d/dx through the density; igammac's are their negatives
    a, xs = np.array([0.7, 2.0, 5.0]), np.array([0.5, 3.0, 4.0])
    check_grads(lambda a, x: lax.igamma(a, x), (a, xs), order=1)
    check_grads(lambda a, x: lax.igammac(a, x), (a, xs), order=1)
    check_grads(lambda x: lax.digamma(x) + lax.erf_inv(x / 8) + lax.bessel_i0e(x), (xs,), order=2)
    check_grads(lambda x: lax.polygamma(np.ones(3), x), (xs,), order=1)
    # where JAX has no derivative it raises, and so does functx (same classes)
    with pytest.raises(ValueError, match="polygamma gradient with respect to m"):
        functx.grad(lambda m: lax.polygamma(m, 2.0))(1.0)
    with pytest.raises(NotImplementedError, match="'zeta' not implemented"):
        functx.grad(lambda x: lax.zeta(x, 2.0))(3.0)
    with pytest.raises(NotImplementedError, match="'igamma_grad_a' not implemented"):
        functx.grad(lambda a: lax.igamma_grad_a(a, 2.0))(3.0)


def test_errors_and_dtypes_in_both_modes():
    with pytest.raises(TypeError):
        lax.igamma(np.int32(1), np.int32(2))
    with pytest.raises(TypeError):
        lax.igamma(np.float32(1), np.float64(2))
    with pytest.raises(TypeError):
        lax.digamma(np.int32(1))
    assert lax.zeta(np.float32(2), np.float32(1)).dtype == F32
    assert lax.digamma(2.0).dtype == F64
    with x64_off():
        assert lax.digamma(2.0).dtype == F32 == jax.numpy.asarray(2.0, jax.numpy.float32).dtype
        assert lax.igamma(1.0, np.float32(2.0)).dtype == F32


# --- lax.betainc, functx.scipy.special's new names and the stats CDFs -----------------------------
def test_betainc_values_derivatives_and_jit():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.2, 40, 40), rng.uniform(0.2, 40, 40)
    x = np.concatenate([rng.uniform(0, 1, 36), [0.0, 1.0, -0.5, 1.5]])
    want = sc.betainc(a, b, np.clip(x, 0, 1))
    want[-2:] = np.nan
    _close(lax.betainc(a, b, x), want, F64, rtol=1e-11, atol=1e-14)
    # (compiled: the backend suite's special_* cases)
    f32 = [v.astype(F32) for v in (a, b, x)]
    _close(lax.betainc(*f32), want, F32, rtol=5e-5, atol=1e-6)
    # d/dx is the beta density; d/da and d/db raise JAX's ValueError
    g = functx.vmap(functx.grad(lax.betainc, argnums=2))(a[:4], b[:4], x[:4])
    dens = np.exp(
        (a[:4] - 1) * np.log(x[:4]) + (b[:4] - 1) * np.log1p(-x[:4]) - sc.betaln(a[:4], b[:4])
    )
    np.testing.assert_allclose(g, dens, rtol=1e-10)
    with pytest.raises(ValueError, match="Betainc gradient with respect to a and b"):
        functx.grad(lax.betainc)(2.0, 3.0, 0.5)
    with pytest.raises(TypeError):
        lax.betainc(np.float32(1), np.float64(2), np.float64(0.5))


def test_scipy_special_names_against_scipy():
    import functx.scipy.special as fss

    x = np.array([0.5, 1.7, 4.0, 12.0, -2.5, 30.0])
    for name, ref in [("i0", sc.i0), ("i1", sc.i1), ("i0e", sc.i0e), ("i1e", sc.i1e)]:
        _close(getattr(fss, name)(x), ref(x), F64)
    _close(fss.gamma(x), sc.gamma(x), F64, rtol=1e-13)
    _close(fss.gammasgn(np.array([-0.0, -1.5, -2.5, -3.0, 2.0])), [-1, 1, -1, np.nan, 1], F64)
    _close(
        fss.factorial(np.array([0.0, 3.0, 5.5, -1.0])),
        sc.factorial([0.0, 3.0, 5.5, -1.0]),
        F64,
        1e-13,
    )
    _close(fss.gammainc(2.0, np.array([0.5, 3.0])), sc.gammainc(2.0, [0.5, 3.0]), F64)
    _close(
        fss.gammaincc(np.array([[1.0], [3.0]]), np.array([0.5, 3.0])),
        sc.gammaincc([[1.0], [3.0]], [0.5, 3.0]),
        F64,
    )
    _close(
        fss.betainc(2.0, 3.0, np.array([0.1, 0.9])), sc.betainc(2.0, 3.0, [0.1, 0.9]), F64, 1e-12
    )
    _close(fss.zeta(np.array([2.0, 3.5]), 1.5), sc.zeta([2.0, 3.5], 1.5), F64)
    _close(fss.polygamma(np.int32(2), x[:4]), sc.polygamma(2, x[:4]), F64)
    with pytest.raises(ValueError, match="must be of integer type"):
        fss.polygamma(1.0, 2.0)
    with pytest.raises(NotImplementedError, match="Riemann zeta"):
        fss.zeta(2.0)
    with pytest.raises(NotImplementedError):
        fss.factorial(3, exact=True)
    with x64_off():
        assert fss.gammainc(1, 2).dtype == F32 and fss.i0(np.int32(2)).dtype == F32


def test_stats_distribution_functions_against_scipy():
    import scipy.stats as ss

    import functx.scipy.stats as fst

    x = np.array([-1.0, 0.0, 0.3, 1.0, 2.5, 7.0])
    u = np.array([-0.1, 0.0, 0.2, 0.5, 0.9, 1.0])
    k = np.array([-1.0, 0.0, 1.0, 2.0, 3.5, 10.0])
    cases = [
        ("gamma", (x, 2.5), (x, 2.5)),
        ("gamma", (x, 1.5, 0.5, 2.0), (x, 1.5, 0.5, 2.0)),
        ("chi2", (x, 3.0), (x, 3.0)),
        ("beta", (u, 2.0, 3.5), (u, 2.0, 3.5)),
    ]
    for dist, args, sargs in cases:
        for m in ("cdf", "sf", "logcdf", "logsf"):
            want = getattr(getattr(ss, dist), m)(*sargs)
            _close(getattr(getattr(fst, dist), m)(*args), want, F64, rtol=1e-11, atol=1e-13)
    _close(fst.poisson.cdf(k, 2.5), ss.poisson.cdf(k, 2.5), F64, rtol=1e-12)
    _close(fst.poisson.cdf(k, 2.5, 1.0), ss.poisson.cdf(k, 2.5, 1.0), F64, rtol=1e-12)
    with x64_off():
        assert fst.gamma.cdf(np.float32(1.0), 2.0).dtype == F32
        assert fst.beta.sf(0.5, 2, 3).dtype == F32


def test_multivariate_normal_against_scipy_and_jax():
    import scipy.stats as ss

    import functx.scipy.stats as fst

    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + np.eye(3)
    x, mu = rng.standard_normal((4, 3)), rng.standard_normal(3)
    mvn = fst.multivariate_normal
    _close(mvn.logpdf(x, mu, cov), ss.multivariate_normal.logpdf(x, mu, cov), F64)
    _close(mvn.pdf(x, mu, cov), ss.multivariate_normal.pdf(x, mu, cov), F64)
    covs = np.stack([cov, 2 * cov])  # a batch of covariances against a batch of points
    want = [ss.multivariate_normal.logpdf(x[i], mu, covs[i]) for i in range(2)]
    _close(mvn.logpdf(x[:2], mu, covs), want, F64)
    _close(mvn.logpdf(x, mu, 2.0), ss.multivariate_normal.logpdf(x, mu, 2.0 * np.eye(3)), F64)
    _close(mvn.logpdf(0.3, 0.1, 2.0), ss.norm.logpdf(0.3, 0.1, np.sqrt(2.0)), F64)
    # gradients through cholesky and the triangular solve (compiled cholesky: the linalg tests)
    check_grads(lambda m, c: mvn.logpdf(x, m, c + c.T), (mu, cov / 2), order=1)
    with pytest.raises(NotImplementedError, match="allow_singular"):
        mvn.logpdf(x, mu, cov, allow_singular=True)
    with pytest.raises(ValueError, match="incompatible shapes"):
        mvn.logpdf(x, mu, np.eye(2))
    with x64_off():
        assert mvn.logpdf(x, mu, cov).dtype == F32


def test_reduce_precision_bit_exact_against_jax():
    """Every float dtype, formats narrower and wider than the operand's, on random bit patterns
    (NaNs, infinities and subnormals among them): the same bits as JAX."""
    import ml_dtypes

    from functx.primitives.special import float_layout

    rng = np.random.default_rng(0)
    combos = [(1, 0), (2, 1), (5, 10), (8, 7), (11, 52)]
    dts = (F32, F64, np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
    xs = []
    for dt in dts:
        nbits, _, _, ut = float_layout(dt)
        bits = rng.integers(0, 2 ** min(nbits, 63), 300, dtype=np.uint64).astype(ut)
        xs.append(
            np.concatenate([bits.view(dt), np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0], dt)])
        )
    # one XLA compile for every dtype and format
    refs = jax.jit(lambda vs: [[jax.lax.reduce_precision(v, e, m) for e, m in combos] for v in vs])(
        xs
    )
    for dt, x, ref in zip(dts, xs, refs):
        ut = float_layout(dt)[3]
        for (e, m), r in zip(combos, ref):
            out = np.asarray(lax.reduce_precision(x, exponent_bits=e, mantissa_bits=m))
            assert out.dtype == dt
            np.testing.assert_array_equal(
                out.view(ut), np.asarray(r).view(ut), err_msg=f"{dt} {e} {m}"
            )
    # (compiled C++ against eager: the backend suite's special_* cases)
    with pytest.raises(ValueError, match="exponent_bits must be positive"):
        lax.reduce_precision(np.float32(1), 0, 3)
    with pytest.raises(TypeError):
        lax.reduce_precision(np.int32(1), 5, 3)
    # linear: its derivative is the operation applied to the tangent, as in JAX
    g = functx.grad(lambda v: lax.reduce_precision(v * 3.1, 5, 2))(1.1)
    assert float(g) == 3.1  # the cotangent 1 reduced (exact), times 3.1: what jax.grad gives
