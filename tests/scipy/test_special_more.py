"""``functx.scipy.special``'s integrals, Spence's function and Bernoulli numbers
(``functx/scipy/_special_more.py``) against SciPy's values (float64 reference, in float64 and
float32, over each function's domain and at its special points), JAX's shapes and dtypes in both
x64 modes (``jax.eval_shape``: tracing only), derivatives by ``check_grads``, jit and vmap; JAX's
values in a slow test (its loops compile for seconds)."""

from __future__ import annotations

import jax
import jax.scipy.special as jss
import numpy as np
import pytest
import scipy.special as ss
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from x64util import x64_off

import functx
import functx.scipy.special as fss
from functx.test_util import check_grads

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
# the largest relative errors measured against SciPy (docstrings) are below these
TOL = {F64: 1e-13, F32: 5e-6}


def _expn_ref(n, x):
    with np.errstate(all="ignore"):
        return np.where(x == 0, np.where(n < 2, np.inf, 1 / np.maximum(n - 1, 1)), ss.expn(n, x))


# name: (draws of the arguments in float64 (data, shape) -> tuple, SciPy's float64 reference)
def _x(lo, hi, log=False):
    def draw(data, shape):
        el = st.floats(lo, hi, allow_subnormal=False)
        a = data.draw(hnp.arrays(F64, shape, elements=el), label="x")
        return (np.sign(a) * np.expm1(np.abs(a)) if log else a,)

    return draw


def _n_x(data, shape):
    n = data.draw(hnp.arrays(F64, shape, elements=st.integers(0, 60).map(float)), label="n")
    x = data.draw(hnp.arrays(F64, shape, elements=st.floats(0, 6.5)), label="log1p x")
    return n, np.expm1(x)


def _a_b_x(data, shape):
    ab = st.floats(0.01, 15)
    a = data.draw(hnp.arrays(F64, shape, elements=ab), label="a")
    b = data.draw(hnp.arrays(F64, shape, elements=ab), label="b")
    x = data.draw(hnp.arrays(F64, shape, elements=st.floats(-60, 60)), label="x")
    far = data.draw(hnp.arrays(bool, shape), label="far")  # (the asymptotic expansions)
    a, b = np.where(far, a / 3, a), np.where(far, b / 3, b)
    # a <= b where x < 0 (x < 0 < a - b: test_hyp1f1_where_the_series_alternates)
    a, b = np.where(x < 0, np.minimum(a, b), a), np.where(x < 0, np.maximum(a, b), b)
    return a, b, np.where(far, np.sign(x) * 100 + 3.3 * x, x)


CASES = {
    "exp1": (_x(0, 6.5, log=True), ss.exp1),
    "expi": (_x(-6.5, 6.5, log=True), ss.expi),
    "expn": (_n_x, _expn_ref),
    "dawsn": (_x(-3, 3, log=True), ss.dawsn),
    "sici": (_x(-4, 4, log=True), ss.sici),
    "spence": (_x(0, 7, log=True), ss.spence),
    # (|x| <= 100: SciPy forms pi x^2 / 2 in floating point, its error grows like x eps / 2)
    "fresnel": (_x(-4.6, 4.6, log=True), ss.fresnel),
    "hyp1f1": (_a_b_x, ss.hyp1f1),
}
CASE_TOL = {"hyp1f1": {F64: 1e-12, F32: 2e-5}}
# the special points: SciPy's values, JAX's conventions where they differ (the docstrings)
POINTS = {
    "exp1": (np.array([0.0, -1.0, 1e-300, 2.0, 709.0, 800.0, np.inf, -np.inf, np.nan]),),
    "expi": (np.array([0.0, -0.0, 1e-300, 0.3725, -745.0, 709.0, 720.0, np.inf, -np.inf, np.nan]),),
    "expn": (
        np.array([0, 1, 2, 5, 3, -1, 1, 2, 3, 4, np.nan]),
        np.array([0, 0, 0, 0, np.inf, 1, -1, 2, 1e-300, np.nan, 1]),
    ),
    "dawsn": (np.array([0.0, -0.0, 1e-300, 0.25, 4.5, 7.75, 8.0, 8.25, 1e300, np.inf, -np.inf]),),
    "sici": (np.array([0.0, -0.0, 1e-300, 0.6165, 4.0, -4.1, 1e9, 2e9, 1e300, np.inf, -np.inf]),),
    "spence": (np.array([0.0, -0.0, -1.0, 1e-300, 0.5, 1.0, 2.0, 1e300, np.inf, np.nan]),),
    "fresnel": (np.array([0.0, -0.0, 1e-300, 1.5, -1.6, 36973, 36975, np.inf, -np.inf, np.nan]),),
    "hyp1f1": (  # (a = 0: 1; a = b: e^x; the boundaries of the series)
        np.array([0.0, 2.5, 0.5, 3.0, 1.5, 1.5, 2.0, 0.5]),
        np.array([1.0, 2.5, 2.0, 1.0, 4.0, 4.0, 0.5, 1.5]),
        np.array([3.0, -4.0, 0.0, 100.0, -100.0, 100.5, -100.5, 250.0]),
    ),
}
NO_INTS = {"spence"}  # (JAX: TypeError for integer input, tested below)


# absolute tolerances (times the dtype's eps) where a function has a root at a non-representable
# point: Ei at 0.3725 (relative accuracy there is eps / |x - x0| in every implementation)
ATOL = {"expi": 10, "sici": 10}


def _relerr_ok(out, ref, dt, tol, atol=0):
    if isinstance(ref, tuple):  # (sici, fresnel: a pair of arrays)
        for o, r in zip(out, ref, strict=True):
            _relerr_ok(o, r, dt, tol, atol)
        return
    """``out`` (dtype ``dt``) within ``tol`` of the float64 ``ref`` relative to it, where ``ref``
    is a normal number of ``dt``; equal (NaN, infinities) elsewhere, or both below ``dt``'s
    smallest normal number."""
    out, ref = np.asarray(out, F64), np.asarray(ref, F64)
    fi = np.finfo(dt)
    normal = np.isfinite(ref) & (np.abs(ref) >= fi.tiny) & (np.abs(ref) <= fi.max)
    np.testing.assert_allclose(out[normal], ref[normal], rtol=tol, atol=atol * fi.eps)
    with np.errstate(over="ignore"):
        ref_dt = np.where(np.abs(ref) < fi.tiny, 0.0, ref).astype(dt)  # (underflow: 0 in dt)
    np.testing.assert_allclose(out[~normal], ref_dt[~normal], rtol=0, atol=fi.tiny)


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_values_match_scipy(name, data):
    draw, ref = CASES[name]
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    args = [a.astype(dt) for a in draw(data, data.draw(hnp.array_shapes(max_dims=2, max_side=5)))]
    out = getattr(fss, name)(*args)
    assert all(np.asarray(o).dtype == dt for o in jax.tree_util.tree_leaves(out))
    tol = CASE_TOL.get(name, TOL)[dt]
    _relerr_ok(out, ref(*[a.astype(F64) for a in args]), dt, tol, ATOL.get(name, 0))


@pytest.mark.parametrize("name", list(POINTS))
def test_special_points_and_dtypes_as_jax(name):
    args = POINTS[name]
    _relerr_ok(getattr(fss, name)(*args), CASES[name][1](*args), F64, TOL[F64], ATOL.get(name, 0))
    for x64 in (True, False):  # JAX's dtypes in both modes, integers too (tracing only)
        ints = [np.arange(1, 4, dtype=np.int32) for _ in args]
        with jax.enable_x64(x64), functx.experimental.enable_x64(x64), np.errstate(over="ignore"):
            for a in (args,) if name in NO_INTS else (args, ints):
                want = jax.tree_util.tree_leaves(jax.eval_shape(getattr(jss, name), *a))
                got = jax.tree_util.tree_leaves(getattr(fss, name)(*a))
                assert [(g.shape, g.dtype) for g in got] == [(w.shape, w.dtype) for w in want]


def test_expn_noninteger_order_and_complex_input():
    import mpmath  # (sympy's dependency)

    # JAX's values: NaN up to x = 1, the real order's E_n above
    n, x = np.array([1.5, 0.5, 1.5, 2.5, 0.5]), np.array([1.0, 0.5, 3.0, 1.5, 40.0])
    out = np.asarray(fss.expn(n, x))
    assert np.isnan(out[:2]).all()
    want = [float(mpmath.expint(a, b)) for a, b in zip(n[2:], x[2:])]
    np.testing.assert_allclose(out[2:], want, rtol=1e-10)
    for f in (fss.exp1, fss.expi):
        with pytest.raises(ValueError, match="complex"):
            f(np.ones(2, np.complex64))


def test_hyp1f1_where_the_series_alternates():
    rng = np.random.default_rng(1)
    b, a = np.sort(rng.uniform(0.01, 15, (2, 40)), axis=0)  # (x < 0 < a - b: 5e-10 measured)
    x = -rng.uniform(0, 60, 40)
    np.testing.assert_allclose(np.asarray(fss.hyp1f1(a, b, x)), ss.hyp1f1(a, b, x), rtol=1e-8)
    b_zero = np.asarray(fss.hyp1f1(np.array([1.0, 0.0]), 0.0, 2.0))  # (JAX's: inf, then 1)
    assert b_zero[0] == np.inf and b_zero[1] == 1.0


def test_fresnel_far_out_against_mpmath():
    import mpmath

    x = np.array([np.expm1(9.0), 36974.5, 1e5 + 0.123, -1.5e8 - 0.04, 3e15 + 0.5])
    s, c = fss.fresnel(x)
    with mpmath.workdps(30):
        want_s = [float(mpmath.fresnels(mpmath.mpf(v))) for v in x]
        want_c = [float(mpmath.fresnelc(mpmath.mpf(v))) for v in x]
    np.testing.assert_allclose(np.asarray(s), want_s, rtol=1e-15)
    np.testing.assert_allclose(np.asarray(c), want_c, rtol=1e-15)
    assert [float(v) for v in fss.fresnel(-1e300)] == [-0.5, -0.5]  # (SciPy: NaN)


@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_bessel_jn_matches_scipy(data):
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    v = data.draw(st.integers(0, 12), label="v")
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=4), label="shape")
    z = data.draw(hnp.arrays(F64, shape, elements=st.floats(-20, 20)), label="z").astype(dt)
    out = fss.bessel_jn(z, v=v)
    assert out.shape == (v + 1, *z.shape) and out.dtype == dt
    want = ss.jv(np.arange(v + 1).reshape((-1,) + (1,) * z.ndim), z.astype(F64))
    rtol, atol = (1e-13, 2e-15) if dt == F64 else (5e-6, 5e-7)
    np.testing.assert_allclose(np.asarray(out, F64), want, rtol=rtol, atol=atol)


def test_bessel_jn_points_shapes_and_errors_as_jax():
    z = np.array([0.0, -0.0, 1e-300, -1e-300, 1e-3, -7.5, np.inf, -np.inf, np.nan])
    want = ss.jv(np.arange(4)[:, None], z)
    np.testing.assert_allclose(np.asarray(fss.bessel_jn(z, v=3)), want, rtol=1e-13, atol=0)
    for x64 in (True, False):
        with jax.enable_x64(x64), functx.experimental.enable_x64(x64):
            for a, kw in [(1.5, {"v": 60, "n_iter": 10}), (np.ones((2, 3), np.int32), {"v": 2})]:
                want = jax.eval_shape(lambda a: jss.bessel_jn(a, **kw), a)
                got = fss.bessel_jn(a, **kw)
                assert (got.shape, got.dtype) == (want.shape, want.dtype)
    for m in (fss, jss):
        with pytest.raises(TypeError):
            m.bessel_jn(1.0, v=1.5)
    # complex: JAX's documented ValueError (its check misses complex64: a TypeError from lax.rem)
    with pytest.raises(ValueError, match="complex"):
        fss.bessel_jn(np.ones(2, np.complex64), v=2)


def test_spence_and_bernoulli_errors_as_jax():
    for m in (fss, jss):
        with pytest.raises(TypeError):
            m.spence(np.arange(3))
        with pytest.raises(TypeError):
            m.spence(np.ones(2, np.float16))
        with pytest.raises(TypeError):
            m.bernoulli(2.5)
        with pytest.raises(ValueError):
            m.bernoulli(-1)
    with pytest.raises(TypeError):
        functx.jit(fss.bernoulli)(3)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 60, 61, 64, 150, 300])
def test_bernoulli_matches_scipy(n):
    want = ss.bernoulli(n)
    got = fss.bernoulli(n)
    assert got.shape == (n + 1,) and got.dtype == F64
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-11, atol=0)
    with x64_off(), np.errstate(over="ignore"):
        got = np.asarray(fss.bernoulli(n))
        assert got.dtype == jax.eval_shape(lambda: jss.bernoulli(n)).dtype == F32
        np.testing.assert_allclose(got, want.astype(F32), rtol=2e-6, atol=0)


def test_gradients():
    x = np.array([0.3, 1.7, 2.5, 9.0])
    check_grads(fss.exp1, (x,), 2)
    check_grads(fss.expi, (np.concatenate([-x, x]),), 2)
    check_grads(lambda v: fss.expn(3, v), (x,), 2)
    check_grads(fss.dawsn, (np.concatenate([-x, x]),), 2)
    check_grads(fss.sici, (np.concatenate([-x, x, [5.0]]),), 2)
    check_grads(fss.spence, (np.array([0.1, 0.7, 1.5, 3.0]),), 2)
    check_grads(fss.fresnel, (np.array([-2.0, 0.3, 1.2, 1.7, 4.0]),), 2)
    check_grads(lambda z: fss.bessel_jn(z, v=3), (np.array([-2.0, 0.3, 4.0]),), 1)
    abx = (np.array([0.7, 2.0, 1.5]), np.array([1.3, 0.9, 3.0]), np.array([-3.0, 0.5, 4.0]))
    check_grads(fss.hyp1f1, abx, 1)
    # the derivative's limit at 1 (JAX: 0.0)
    assert float(functx.grad(fss.spence)(1.0)) == -1.0


def test_jit_and_vmap():
    x = np.array([[0.5, 1.5, 2.5], [4.0, 30.0, 60.0]])
    n = np.array([1.0, 2.0, 7.0])

    def f(n, x):
        si, ci = fss.sici(x)
        out = fss.exp1(x) + fss.expi(-x) + fss.expn(n, x) + fss.dawsn(x) + si * ci
        s, c = fss.fresnel(x)
        out = out + fss.spence(x) + s * c + fss.bessel_jn(x / 3, v=4).sum(0)
        out = out + fss.owens_t(x - 3, n / 2) + fss.wofz(x / 10 + 1j * n).real
        out = out + fss.hyp2f1(n / 3, 1.5, n + 1.0, x / (x + 1) - 0.5)
        theta = np.array([0.7, 0.3, 2.0])
        out = out + fss.sph_harm_y(np.array([3, 2, 5]), np.array([2, -1, 0]), theta, x).imag
        return out + fss.hyp1f1(n, n + 1.5, x)

    want = f(n, x)
    np.testing.assert_allclose(np.asarray(functx.jit(f)(n, x)), np.asarray(want), rtol=1e-14)
    got = functx.vmap(f, in_axes=(None, 0))(n, x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-14)


def test_values_and_gradients_match_jax():
    """JAX's values and derivatives in float64, one jit (a few seconds: JAX's loops compile
    slowly). One region per call: JAX's exp1/expi loop until every element converges, and a
    mix of small and large arguments does not finish in minutes."""
    dt = F64
    x = np.linspace(2.5, 40, 7).astype(dt)
    n = np.arange(1, 8).astype(dt)

    def calls(m):
        g = jax.grad if m is jss else functx.grad
        vm = jax.vmap if m is jss else functx.vmap
        A = jax.numpy.asarray if m is jss else np.asarray  # (JAX's vmap: JAX arrays)
        y, nn, xx = A(x - 20), A(n), A(x)
        return [m.exp1(x), m.expi(x), m.expi(-x), m.expn(n, x), vm(g(m.exp1))(x)] + [
            m.dawsn(y),
            m.sici(y),
            vm(g(m.dawsn))(y),
            vm(g(lambda v: m.sici(v)[1]))(y),
            m.spence(x / 8),
            m.fresnel(y / 4),
            vm(g(lambda v: m.fresnel(v)[0]))(y / 4),
            m.bessel_jn(y, v=5),
            vm(g(lambda v: m.bessel_jn(v, v=3)[3]))(y),
            m.hyp1f1(nn, nn / 2 + 1, xx),
            vm(g(m.hyp1f1, argnums=(0, 1, 2)))(nn, nn / 2 + 1, xx / 10),
            vm(g(m.spence))(x / 41),  # (JAX's is NaN on (1, 2], 0 at 1)
        ]

    want = jax.jit(lambda: calls(jss))()
    got = calls(fss)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=10 * TOL[dt])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_bessel_jn_at_tiny_arguments(dt):
    # the recurrence's first step 2k/z overflowed below ~1e-36 in float32 (NaN at the smallest
    # normal number); there the series' first term is exact
    z = np.array([np.finfo(dt).tiny, -np.finfo(dt).tiny, 1e-30, np.finfo(dt).tiny / 4, 0.0], dt)
    got = np.asarray(fss.bessel_jn(z, v=3), np.float64)
    want = np.array([[ss.jv(n, float(x)) for x in z] for n in range(4)])
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=np.finfo(dt).tiny)  # (underflow: 0)


# --- wofz, owens_t, hyp2f1, sph_harm_y (session 35) ---------------------------------------------
def _dtypes_as_jax(name, *args, modes=(True, False), **kw):
    """functx's output shapes and dtypes are JAX's for ``args`` and for int32 stand-ins, with
    x64 on and off (JAX only traces)."""
    ints = [np.arange(1, 4, dtype=np.int32) for _ in args]
    for x64 in modes:
        with jax.enable_x64(x64), functx.experimental.enable_x64(x64):
            for a in (args, ints):
                want = jax.eval_shape(lambda *v: getattr(jss, name)(*v, **kw), *a)
                got = getattr(fss, name)(*a, **kw)
                assert (got.shape, got.dtype) == (want.shape, want.dtype), (a, x64)


def _wofz_grid():
    re, im = np.meshgrid(np.linspace(-9, 9, 23), np.linspace(-4.5, 9, 19))
    return (re + 1j * im).ravel()


def test_wofz_matches_scipy_and_jax():
    z = np.concatenate([_wofz_grid(), [0, 1e-300, 3.7, -25.0, 1e4j, -1e4 + 1e-3j]])
    got = np.asarray(fss.wofz(z))
    assert got.dtype == np.complex128
    want = ss.wofz(z)
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=0)
    np.testing.assert_allclose(got, np.asarray(jax.jit(jss.wofz)(z)), rtol=1e-13, atol=0)
    with x64_off():
        z32 = fss.wofz(z.astype(np.complex64))
        assert z32.dtype == np.complex64
        np.testing.assert_allclose(np.asarray(z32), want, rtol=2e-5, atol=1e-30)
    # below the real axis 2 exp(-z^2) overflows, as in JAX
    far = np.array([-3 - 30j])
    assert not np.isfinite(np.asarray(fss.wofz(far))).all()
    assert not np.isfinite(np.asarray(jax.jit(jss.wofz)(far))).all()
    _dtypes_as_jax("wofz", np.array([0.5, 1.5]))
    # erfcx of a complex argument is wofz(i z), as in JAX
    np.testing.assert_allclose(fss.erfcx(z[:50]), ss.erfcx(z[:50]), rtol=1e-11)


def _owens_grid():
    h, a = np.meshgrid(np.linspace(-7, 7, 29), np.concatenate([np.linspace(-12, 12, 25), [0.3]]))
    h, a = h.ravel(), a.ravel()
    return np.concatenate([h, [0, 0, 1.5, 2.0, np.nan, 1.0]]), np.concatenate(
        [a, [1.0, -3.0, 1.0, -1.0, 1.0, np.nan]]
    )


def test_owens_t_matches_scipy_and_jax():
    h, a = _owens_grid()
    got = np.asarray(fss.owens_t(h, a))
    np.testing.assert_allclose(got, ss.owens_t(h, a), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(got, jax.jit(jss.owens_t)(h, a), rtol=1e-13, atol=1e-16)
    assert np.isnan(got[-2:]).all()
    with x64_off():
        g32 = fss.owens_t(h.astype(np.float32), a.astype(np.float32))
        assert g32.dtype == np.float32
        np.testing.assert_allclose(np.asarray(g32), ss.owens_t(h, a), rtol=1e-5, atol=1e-7)
    _dtypes_as_jax("owens_t", np.array([0.5, 1.5]), np.array(2.0), modes=(False,))
    # with x64 on JAX's float64 weights promote float32 (and int32) inputs to float64, against
    # its docstring ("dtype matching the promoted inputs"); functx keeps the promoted dtype
    with x64_off():
        f32 = np.float32(0.5)
    assert fss.owens_t(f32, f32).dtype == np.float32
    assert fss.owens_t(0.5, 2.0).dtype == np.float64


def test_wofz_and_owens_t_gradients():
    z = np.array([0.5 + 0.3j, -1.2 + 2.0j, 2.0 - 0.7j])
    check_grads(fss.wofz, (z,), 1)
    # the holomorphic derivative: JAX's jvp along a complex tangent
    t = np.array([1.0, 1j, 0.3 - 0.5j])
    got = functx.jvp(fss.wofz, (z,), (t,))[1]
    want = jax.jit(lambda z, t: jax.jvp(jss.wofz, (z,), (t,))[1])(z, t)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    h, a = np.array([-1.5, 0.2, 0.9, 3.0]), np.array([0.4, -2.5, 1.7, 0.8])
    check_grads(fss.owens_t, (h, a), 2)
    want = jax.jit(jax.vmap(jax.grad(jss.owens_t, argnums=(0, 1))))(h, a)
    got = functx.vmap(functx.grad(fss.owens_t, argnums=(0, 1)))(h, a)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    # (jit and vmap: test_jit_and_vmap)


def _hyp2f1_draws(rng, n, region):
    """``(a, b, c, x)``: ``n`` float64 points of one of the regions the docstring names."""
    a, b = rng.uniform(0.1, 5, n), rng.uniform(0.1, 5, n)
    c, x = rng.uniform(0.1, 8, n), rng.uniform(-0.5, 0.9, n)
    if region == "euler":  # c - a - b <= -1
        a, b, c = a + 2, b + 2, 0.3 * c + 0.1
    elif region == "polynomial":  # a a non-positive integer, x also below -1
        a, x = -rng.randint(0, 8, n).astype(float), rng.uniform(-3, 0.99, n)
    elif region == "pfaff":  # x < 0 (JAX's series diverges below -1)
        x = -np.expm1(rng.uniform(0, np.log(5), n))
    elif region == "near 1":  # 0.9 < x < 1 with c - a - b not an integer (JAX: 0.6 off)
        c, x = a + b + rng.uniform(-0.45, 0.45, n) + rng.randint(-1, 3, n), rng.uniform(0.9, 1, n)
    elif region == "log":  # 0.9 < x < 1 with c - a - b a non-negative integer
        c, x = a + b + rng.randint(0, 4, n), rng.uniform(0.9, 0.999, n)
    return a, b, c, x


@pytest.mark.parametrize(
    "region, rtol",
    [
        ("series", 1e-12),
        ("euler", 1e-12),
        ("polynomial", 1e-11),
        ("pfaff", 1e-11),
        ("near 1", 1e-11),
    ],
)
def test_hyp2f1_matches_scipy(region, rtol):
    args = _hyp2f1_draws(np.random.RandomState(7), 60, region)
    got = np.asarray(fss.hyp2f1(*args))
    assert got.dtype == F64
    np.testing.assert_allclose(got, ss.hyp2f1(*args), rtol=rtol, atol=0)


def test_hyp2f1_log_case_against_mpmath():
    """(SciPy returns NaN at some of these points.)"""
    mpmath = pytest.importorskip("mpmath")
    args = _hyp2f1_draws(np.random.RandomState(8), 16, "log")
    want = [float(mpmath.hyp2f1(*p)) for p in zip(*args)]
    np.testing.assert_allclose(np.asarray(fss.hyp2f1(*args)), want, rtol=1e-9, atol=0)


def test_hyp2f1_cases_dtypes_and_float32_as_jax():
    a, b, c, x = _hyp2f1_draws(np.random.RandomState(9), 40, "series")
    # JAX's special cases: x = 0, a = 0, c a pole, x = 1 (Gauss, or inf), b = c, a = c, x > 1,
    # a polynomial at x > 1 (inf, as JAX), Euler's transformation at x > 1
    pts = np.array(
        [[1, 2, 3, 0.0], [0, 2, 3, 0.5], [1, 2, -2, 0.5], [1, 2, 3, 1], [1, 2, 4.5, 1],
         [1, 2, 2, 0.5], [2, 1.5, 2, 0.3], [1, 2, 3, 1.5], [-2, 1, 3, 1.5], [1, 1, 1, 1.5],
         [1.5, 2.5, 0.5, 0.5], [np.nan, 1, 2, 0.5]]
    ).T  # fmt: skip
    a, b, c, x = (np.concatenate([v, p]) for v, p in zip((a, b, c, x), pts))
    got = np.asarray(fss.hyp2f1(a, b, c, x))
    np.testing.assert_allclose(got, jax.jit(jss.hyp2f1)(a, b, c, x), rtol=1e-12, atol=0)
    with x64_off():
        f32 = [v.astype(np.float32) for v in (a, b, c, x)]
        g32 = fss.hyp2f1(*f32)
        assert g32.dtype == F32
        np.testing.assert_allclose(np.asarray(g32)[:40], got[:40], rtol=2e-4)
    _dtypes_as_jax(
        "hyp2f1", np.array([0.5, 1.5]), np.array(2.0), np.array(3.0), np.array(0.2), modes=(False,)
    )


def test_hyp2f1_gradients():
    """Finite differences, and mpmath's derivatives in each argument (JAX's gradient compiles
    for a quarter of a minute: its own rules are the ones functx follows, the docstring)."""
    mpmath = pytest.importorskip("mpmath")
    args = (np.array([0.7, 2.0, 1.5]), np.array([1.3, 0.9, 3.0]), np.array([2.5, 3.1, 1.2]))
    args += (np.array([-0.4, 0.5, 0.8]),)
    check_grads(fss.hyp2f1, args, 1, atol=1e-6, rtol=1e-6)
    got = functx.vmap(functx.grad(fss.hyp2f1, argnums=(0, 1, 2, 3)))(*args)
    for i, point in enumerate(zip(*args)):
        for k in range(4):

            def f(v, k=k, point=point):
                return mpmath.hyp2f1(*[v if j == k else p for j, p in enumerate(point)])

            np.testing.assert_allclose(got[k][i], float(mpmath.diff(f, point[k])), rtol=1e-10)


def _sph_draws(k, seed=0):
    rng = np.random.RandomState(seed)
    n = rng.randint(0, 12, k)
    m = np.clip(rng.randint(-12, 13, k), -n, n)
    theta, phi = rng.uniform(0, np.pi, k), rng.uniform(0, 2 * np.pi, k)
    theta[:3] = [0, np.pi, np.pi / 2]
    return n, m, theta, phi


def test_sph_harm_y_matches_scipy_and_jax():
    n, m, theta, phi = _sph_draws(80)
    got = np.asarray(fss.sph_harm_y(n, m, theta, phi))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, ss.sph_harm_y(n, m, theta, phi), rtol=0, atol=1e-14)
    np.testing.assert_allclose(got, jss.sph_harm_y(n, m, theta, phi), rtol=0, atol=1e-14)
    # JAX's indexing (shapes: JAX traced only; values: SciPy's at the paired points): a scalar
    # or short theta, phi broadcast, 2-D degrees, degrees above n_max taken as n_max
    calls = [
        (n[:3], m[:3], 0.5, phi[:1], None, np.full(3, 0.5)),
        (n[:2], m[:2], theta[:3], phi[:1], None, theta[:2]),
        (np.array([[1, 2], [2, 3]]), np.array([1]), theta[:2], phi[:1], None, theta[:2]),
        (np.array([5, 2]), np.array([1, -2]), theta[:2], phi[:2], 3, theta[:2]),
    ]
    for nn, mm, tt, pp, n_max, paired in calls:
        want = jax.eval_shape(
            lambda t, p, nn=nn, mm=mm, k=n_max: jss.sph_harm_y(nn, mm, t, p, n_max=k), tt, pp
        )
        out = fss.sph_harm_y(nn, mm, tt, pp, n_max=n_max)
        assert out.shape == want.shape and out.dtype == want.dtype
        ref = ss.sph_harm_y(np.minimum(nn, n_max or 99), mm, paired, pp)
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-14)
    with x64_off():
        args = [v.astype(np.float32) if v.dtype == F64 else v for v in (n, m, theta, phi)]
        g32 = fss.sph_harm_y(*args)
        assert g32.dtype == np.complex64  # (and complex128 from float32 with x64 on, as JAX)
        np.testing.assert_allclose(np.asarray(g32), got, rtol=0, atol=2e-6)
    assert fss.sph_harm_y(n[:2], m[:2], theta[:2].astype(F32), phi[:2]).dtype == np.complex128
    # |m| > n: 0 as in SciPy (JAX: undefined)
    assert np.asarray(
        fss.sph_harm_y(np.array([1, 3]), np.array([2, -4]), theta[:2], phi[:2])
    ).tolist() == [0, 0]


def test_sph_harm_y_gradients_and_errors():
    n, m, theta, phi = (
        np.array([3, 2, 5]),
        np.array([2, -1, 0]),
        np.array([0.7, 0.3, 2.0]),
        np.array([0.4, 1.0, 2.0]),
    )

    def f(t, p):
        y = fss.sph_harm_y(n, m, t, p)
        return y.real + 2 * y.imag

    check_grads(f, (theta, phi), 1)
    # (jit: test_jit_and_vmap; JAX's gradient compiles for seconds: finite differences only)
    with pytest.raises(functx.errors.ConcretizationError):
        functx.jit(lambda nn: fss.sph_harm_y(nn, m, theta, phi))(n)
    with pytest.raises(NotImplementedError):
        fss.sph_harm_y(n, m, theta, phi, diff_n=1)
    with pytest.raises(NotImplementedError):
        jss.sph_harm_y(n, m, theta, phi, diff_n=1)
