"""``functx.scipy.special``'s beta, comb, poch, rel_entr, kl_div, softmax, log_softmax,
loggamma, boxcox, boxcox1p and erfcx against SciPy's values (float64) and JAX's shapes and dtypes
(``jax.eval_shape``: tracing only) in both x64 modes; derivatives against finite differences."""

from __future__ import annotations

import jax
import jax.scipy.special as jss
import jax.scipy.stats as jst
import numpy as np
import pytest
import scipy.special as ss
import scipy.stats as sst
from x64util import x64_off

import functx
import functx.scipy.special as fss
import functx.scipy.stats as fst
from functx.test_util import check_grads

X = np.array([0.5, 2.0, 3.5, -1.5, 7.0, 0.0, 1.0])
Y = np.array([1.5, 3.0, 0.5, 2.0, 0.0, 1.0, 0.0])


def _calls(m, x, y):
    return [
        m.beta(x, y),
        m.beta(3, 4),
        m.comb(x * 2, y),
        m.comb(x * 2, y, repetition=True),
        m.comb(5, np.array([0, 2, 6])),
        m.poch(x, y),
        m.rel_entr(x, y),
        m.kl_div(x, y),
        m.softmax(x.reshape(7, 1) * y, axis=0),
        m.softmax(x),
        m.log_softmax(x.reshape(7, 1) * y, axis=(0, 1)),
        m.loggamma(x),
        m.boxcox(abs(x) + 0.5, y),
        m.boxcox1p(x, y),
        m.erfcx(x * 4),
    ]


def _scipy(x, y):
    with np.errstate(all="ignore"):
        out = _calls(ss, x, y)
    # SciPy's comb is exact for integers and 0 outside its domain like JAX's; its loggamma of
    # a negative real is complex-free NaN in JAX (NumPy input): JAX's rule
    out[11] = np.where(x > 0, ss.gammaln(x), np.nan)
    out[3] = np.where(x * 2 < 0, 0.0, out[3])  # (JAX: 0 for a negative N with repetition)
    return out


def compare(x, y, rtol):
    outs = _calls(fss, x, y)
    with jax.enable_x64(functx.config.jax_enable_x64):
        types = jax.eval_shape(lambda a, b: _calls(jss, a, b), x, y)
    for k, (o, r, t) in enumerate(zip(outs, _scipy(x, y), types)):
        o = np.asarray(o)
        assert (o.shape, o.dtype) == (t.shape, t.dtype), (k, o.dtype, t)
        np.testing.assert_allclose(o, r, rtol=rtol, atol=rtol, err_msg=str(k))


def test_values_and_dtypes_both_modes():
    compare(X, Y, 1e-10)
    with x64_off():
        compare(X.astype(np.float32), Y.astype(np.float32), 2e-5)
    with pytest.raises(ValueError, match="complex"):
        fss.beta(np.ones(2, np.complex64), 1.0)


def test_gradients_and_jit():
    a, b = np.array([0.7, 2.5, 4.0]), np.array([1.3, 0.6, 2.0])

    def g(a, b):
        fs = (fss.beta, fss.poch, fss.kl_div, fss.boxcox, fss.boxcox1p, fss.comb)
        return [f(a, b) for f in fs] + [fss.softmax(a) * fss.loggamma(b), fss.erfcx(a * 9 - 10)]

    check_grads(g, (a, b), 1, modes=("rev",))

    def f(a, b):
        return fss.rel_entr(a, b), fss.boxcox(a, b)

    for o, e in zip(functx.jit(f)(a, b), f(a, b)):
        np.testing.assert_allclose(np.asarray(o), np.asarray(e), rtol=1e-12)


def test_stats_pareto_and_gumbel():
    x = np.array([-1.5, 0.0, 0.7, 1.0, 2.5, 6.0])
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0, np.nan])
    for name, args in (("gumbel_r", (0.3, 1.7)), ("gumbel_l", (-0.2, 0.8)), ("pareto", (2.5,))):
        ours, theirs, ref = getattr(fst, name), getattr(jst, name), getattr(sst, name)
        fns = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf")
        with jax.enable_x64(True):  # (one trace for the seven functions)
            types = jax.eval_shape(
                lambda x, p: [getattr(theirs, f)(p if f == "ppf" else x, *args) for f in fns], x, p
            )
        for fn, t in zip(fns, types):
            pts = p if fn == "ppf" else x
            out = np.asarray(getattr(ours, fn)(pts, *args))
            with np.errstate(all="ignore"):
                want = getattr(ref, fn)(pts, *args)
            if name == "pareto" and fn == "logcdf":
                want = np.where(pts < 1, -np.inf, want)  # (JAX: -inf below the support)
            if name.startswith("gumbel") and fn == "ppf":
                want = np.where((pts == 0) | (pts == 1), np.nan, want)  # (JAX: NaN there)
            assert (out.shape, out.dtype) == (t.shape, t.dtype), (name, fn)
            np.testing.assert_allclose(out, want, rtol=1e-9, atol=1e-12, err_msg=f"{name}.{fn}")
        with x64_off():
            assert ours.logpdf(x, *args).dtype == np.float32
    # NaN where scale <= 0, as JAX
    assert np.isnan(np.asarray(fst.gumbel_r.logpdf(x, 0.0, -1.0))).all()
    check_grads(
        lambda v: (
            fst.gumbel_r.logpdf(v, 0.3, 1.7) + fst.gumbel_l.logcdf(v) + fst.pareto.logsf(v + 3, 2.0)
        ),
        (x[2:5],),
        1,
        modes=("rev",),
    )
