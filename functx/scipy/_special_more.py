"""``jax.scipy.special``'s exponential, sine/cosine, Fresnel and Dawson integrals, Spence's
function, the Bernoulli numbers, ``bessel_jn`` and ``hyp1f1``, re-exported by
``functx.scipy.special``.

Each function evaluates every region's formula on the whole (clamped) input and selects: no
data-dependent Python branching, so all of them jit and vmap; series and continued fractions run
a fixed number of terms with ``lax.fori_loop`` (enough for float64 on the region they serve). The
derivatives are JAX's closed forms (``custom_jvp``), not derivatives of the loops.
"""

from __future__ import annotations

import functools
import math
import operator
from fractions import Fraction

import numpy as np

from functx import lax, numpy as jnp
from functx.control.custom_derivatives import custom_jvp
from functx.errors import ConcretizationError, FunctxTypeError, FunctxValueError, UnsupportedError
from functx.scipy.special import _c, _digamma, _float, _gammaln, _horner, gammasgn as _gammasgn
from functx.source_info import where as _loc
from functx.tracing import Tracer

_EULER = 0.5772156649015329


def _real(name, *args):
    """``args`` promoted to one float dtype (JAX's promotion); complex input is JAX's error."""
    out = _float(name, *args)
    if any(jnp.iscomplexobj(a) for a in out):
        raise FunctxValueError(f"{name} does not support complex-valued inputs.{_loc()}")
    return out


def _fori(n, body, init):
    return lax.fori_loop(0, n, body, init)


# --- the exponential integrals E_n, E_1 and Ei ----------------------------------------------------
def _en_series(n, x):
    """E_n(x) for integer n >= 1 and 0 < x <= 2: the power series
    ``(-x)^(n-1) / (n-1)! (psi(n) - log x) - sum_{k != n-1} (-x)^k / ((k - n + 1) k!)``
    (32 terms: the last is below 2^32 / 32! < 1e-25)."""
    one = _c(1, x)

    def body(k, carry):
        s, t, h = carry
        kf = k.astype(x.dtype)
        d = kf - n + one
        s = s + jnp.where(d == 0, _c(0, x), t / jnp.where(d == 0, one, d))
        h = h + jnp.where(kf + one < n, one / (kf + one), _c(0, x))  # 1 + 1/2 + ... + 1/(n-1)
        return s, t * (-x) / (kf + one), h

    zeros = jnp.zeros_like(x)
    s, _, h = _fori(32, body, (zeros, jnp.ones_like(x), zeros))
    # psi(n) = H_(n-1) - euler_gamma exactly while n <= 33; beyond, the lead term is < 2^32 / 32!
    psi = jnp.where(n <= _c(33, x), h - _c(_EULER, x), _digamma(n))
    m = n - one  # (-x)^m / m! with its sign; m log x is 0 for m == 0 (also at x == 0)
    mlogx = jnp.where(m == 0, _c(0, x), m * jnp.log(x))
    sign = jnp.where(jnp.fmod(m, _c(2, x)) == 0, one, -one)
    lead = sign * jnp.exp(mlogx - _gammaln(n)) * (psi - jnp.log(x))
    return lead - s


def _en_cf(n, x):
    """E_n(x) for x > 2 (any n >= 0): the continued fraction
    ``e^-x / (x + n - 1 n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...)))`` by Lentz's method,
    50 levels (below 1e-15 relative at x = 2, fewer digits needed as x grows)."""
    tiny = _c(np.finfo(x.dtype).tiny * 1e4, x)
    b = x + n
    d = _c(1, x) / b

    def body(i, carry):
        b, c, d, h = carry
        i = (i + 1).astype(x.dtype)
        a = -i * (n + i - _c(1, x))
        b = b + _c(2, x)
        d = a * d + b
        d = _c(1, x) / jnp.where(jnp.abs(d) < tiny, tiny, d)
        c = b + a / c
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        return b, c, d, h * c * d

    _, _, _, h = _fori(49, body, (b, jnp.full_like(x, np.inf), d, d))
    return h * jnp.exp(-x)


def _en(n, x):
    """E_n(x) with JAX's values off the domain: NaN for n < 0 or x < 0; inf at x == 0 for n < 2,
    1 / (n - 1) there for n >= 2; e^-x / x for n == 0. A non-integer n: the fraction (the real
    order's E_n) for x > 1, NaN up to 1, as JAX."""
    zero, one = _c(0, x), _c(1, x)
    integer = n == jnp.floor(n)
    # the series loses ~e^x / E_n(x) ulps to cancellation: float32 switches at 1 (49 levels of
    # the fraction give 3e-10 there), float64 at 2
    small = (x <= _c(1 if x.dtype.itemsize <= 4 else 2, x)) & integer
    ns = jnp.where(n >= one, n, one)  # (each region on inputs where its formula is finite)
    xs = jnp.where(small & (x > zero), x, one)
    xl = jnp.where(small, _c(3, x), x)
    val = jnp.where(small, _en_series(ns, xs), _en_cf(jnp.maximum(n, zero), xl))
    val = jnp.where(n == zero, jnp.exp(-x) / x, val)
    at0 = jnp.where(n < _c(2, x), _c(np.inf, x), one / jnp.maximum(n - one, one))
    val = jnp.where(x == zero, at0, jnp.where(x == np.inf, zero, val))
    bad = (n < zero) | (x < zero) | (~integer & (x <= one)) | jnp.isnan(n) | jnp.isnan(x)
    return jnp.where(bad, _c(np.nan, x), val)


@custom_jvp
def _expn(n, x):
    return _en(n, x)


@_expn.defjvp
def _expn_jvp(primals, tangents):
    (n, x), (_, t) = primals, tangents
    # JAX's rule -E_(n-1); at n == 0 the derivative of e^-x / x itself (JAX's E_-1 is NaN)
    e0 = jnp.exp(-x) / x
    d = jnp.where(n == _c(0, n), -e0 * (_c(1, x) + _c(1, x) / x), -_expn(n - _c(1, n), x))
    return _expn(n, x), t * d


def expn(n, x):
    """The generalized exponential integral ``E_n(x) = integral_1^inf e^(-x t) / t^n dt``.

    ``E_n`` is the power series (with the ``psi(n) - log x`` term) for ``x <= 2`` and Lentz's
    continued fraction above, each run for a fixed number of terms. Against SciPy in float64 on
    ``n`` in 0..60, ``x`` in ``(0, 700]`` the largest relative error measured is about 1e-14
    (tests: 1e-13; float32 5e-6). The derivative in ``x`` is ``-E_{n-1}(x)`` (JAX's rule; ``n``
    takes no derivative); at ``n == 0`` it is ``-e^-x (1 / x + 1 / x^2)``, so second
    derivatives of ``exp1`` are finite (JAX's are NaN: its rule reaches ``E_-1``, NaN).

    Arguments:
      n: the order, integer-valued (any dtype; JAX promotes it with ``x`` to one float dtype).
      x: the argument, real; broadcast against ``n``.
    Returns:
      An array of the promoted float dtype: NaN for ``n < 0`` or ``x < 0``, ``inf`` at
      ``x == 0`` for ``n < 2`` and ``1 / (n - 1)`` there for ``n >= 2``, as JAX gives. For a
      non-integer ``n`` (SciPy truncates it to an integer), JAX's values: the real order's
      ``E_n`` for ``x > 1`` (1e-10 relative between 1 and 2, where the fraction converges
      slowly), NaN for ``x <= 1``.

    Example:
      >>> import functx.scipy.special as fs
      >>> print(round(float(fs.expn(2, 1.5)), 6))
      0.073101
    """
    n, x = _real("expn", n, x)
    n, x = jnp.broadcast_arrays(n, x)
    return _expn(n, x)


def exp1(x):
    """The exponential integral ``E_1(x) = integral_x^inf e^-t / t dt`` (``expn(1, x)``).

    Arguments:
      x: the argument, real (integers are converted to float).
    Returns:
      An array of the float dtype: ``inf`` at 0, NaN for ``x < 0`` (as JAX; SciPy gives a
      complex-free NaN too). Its derivative is ``-e^-x / x``. Largest relative error against
      SciPy (float64) measured: about 1e-14.

    Example:
      >>> import functx.scipy.special as fs
      >>> print(round(float(fs.exp1(1.0)), 6))
      0.219384
    """
    (x,) = _real("exp1", x)
    return _expn(jnp.ones_like(x), x)


def _ei_pos(x):
    """Ei(x) for x > 0: ``euler_gamma + log x + sum_k x^k / (k k!)`` (100 terms: enough at 40)
    up to 40, the asymptotic series ``e^x / x sum_k k! / x^k`` (40 terms: its smallest term at
    x = 40 is e^-40) above."""
    one = _c(1, x)
    big = x > _c(40, x)
    xs = jnp.where(big, one, x)
    xb = jnp.where(big, x, _c(40, x))

    def series(k, carry):
        s, t = carry
        kf = (k + 1).astype(x.dtype)
        t = t * xs / kf
        return s + t / kf, t

    def asymptotic(k, carry):
        s, t = carry
        t = t * (k + 1).astype(x.dtype) / xb
        return s + t, t

    s, _ = _fori(100, series, (jnp.zeros_like(x), jnp.ones_like(x)))
    a, _ = _fori(39, asymptotic, (jnp.ones_like(x), jnp.ones_like(x)))
    near = _c(_EULER, x) + jnp.log(xs) + s
    # e^x / x; past e^x's overflow as exp(x - log x) (finite until Ei itself overflows)
    fits = xb < _c(np.log(np.finfo(x.dtype).max), x)
    far = jnp.where(fits, jnp.exp(jnp.where(fits, xb, 0)) / xb, jnp.exp(xb - jnp.log(xb))) * a
    return jnp.where(big, jnp.where(x == np.inf, x, far), near)


@custom_jvp
def _expi(x):
    one = _c(1, x)
    neg = x < _c(0, x)
    pos = jnp.where(x > _c(0, x), x, one)
    val = jnp.where(neg, -_en(one, jnp.where(neg, -x, one)), _ei_pos(pos))
    return jnp.where(x == _c(0, x), _c(-np.inf, x), jnp.where(jnp.isnan(x), x, val))


@_expi.defjvp
def _expi_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _expi(x), t * jnp.exp(x) / x


def expi(x):
    """The exponential integral ``Ei(x) = integral_-inf^x e^t / t dt`` (principal value).

    ``-E_1(-x)`` for ``x < 0``; for ``x > 0`` the power series up to 40 and the asymptotic series
    above. Largest relative error against SciPy measured (float64): about 1e-15 away from the
    root ``x0 = 0.3725...``, where (as in every implementation that forms the value as a sum)
    relative accuracy falls to ~eps / |x - x0|; tests use 1e-13 relative plus 1e-15 absolute.
    The derivative is ``e^x / x`` (JAX's rule).

    Arguments:
      x: the argument, real (integers are converted to float).
    Returns:
      An array of the float dtype: ``-inf`` at 0, ``inf`` at ``inf``, 0 at ``-inf``.

    Example:
      >>> import functx.scipy.special as fs
      >>> print(fs.expi(1.0))
      1.8951179
    """
    (x,) = _real("expi", x)
    return _expi(x)


# --- Dawson's integral ----------------------------------------------------------------------------
@functools.cache
def _dawsn_table():
    """D(k / 2) for k = 0..16, to float64 precision (mpmath, a runtime dependency: once)."""
    import mpmath

    def d(x):
        return mpmath.sqrt(mpmath.pi) / 2 * mpmath.exp(-(x**2)) * mpmath.erfi(x)

    return np.array([float(d(mpmath.mpf(k) / 2)) for k in range(17)])


def _dawsn_value(x):
    """D(x): up to 8, the Taylor series about the nearest multiple of 1/2 (|h| <= 1/4), its
    coefficients from D' = 1 - 2 x D: ``c1 = 1 - 2 x0 c0``, ``(n + 1) c_(n+1) = -2 (x0 c_n +
    c_(n-1))`` (20 terms); above 8, the asymptotic series ``1 / (2x) sum_k (2k - 1)!! / (2x^2)^k``
    (18 terms: the last is below 1e-17 at x = 8; float32 takes it from 4.5)."""
    ax = jnp.abs(x)
    # (float32 switches at 4.5: the recurrence loses digits as x0 grows, the series is exact
    # enough there)
    top = _c(4.5 if x.dtype.itemsize <= 4 else 8, x)
    near = ax <= top
    xn = jnp.where(near, ax, _c(0, x))
    k = jnp.round(xn * _c(2, x))
    x0 = k / _c(2, x)
    h = xn - x0
    c0 = jnp.take(_c(_dawsn_table(), x), k.astype(np.int32))
    c1 = _c(1, x) - _c(2, x) * x0 * c0

    def taylor(n, carry):
        s, cm, c, hp = carry
        cn = _c(-2, x) * (x0 * c + cm) / (n + 2).astype(x.dtype)
        hp = hp * h
        return s + cn * hp, c, cn, hp

    s, *_ = _fori(19, taylor, (c0 + c1 * h, c0, c1, h))
    xf = jnp.where(near, top, ax)
    w = _c(1, x) / (_c(2, x) * xf * xf)

    def asymptotic(k, carry):
        a, t = carry
        t = t * (_c(2, x) * (k + 1).astype(x.dtype) - _c(1, x)) * w
        return a + t, t

    a, _ = _fori(17, asymptotic, (jnp.ones_like(x), jnp.ones_like(x)))
    far = jnp.where(ax == np.inf, _c(0, x), a / (_c(2, x) * xf))
    return jnp.sign(x) * jnp.where(near, s, far)


@custom_jvp
def _dawsn(x):
    return _dawsn_value(x)


@_dawsn.defjvp
def _dawsn_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    d = _dawsn(x)
    return d, t * (_c(1, x) - _c(2, x) * x * d)


def dawsn(x):
    """Dawson's integral ``D(x) = e^(-x^2) integral_0^x e^(t^2) dt``.

    Up to ``|x| = 8`` the Taylor series about the nearest multiple of 1/2 (from a table of 17
    values), its coefficients from the differential equation ``D' = 1 - 2 x D``; above, the
    asymptotic series. Largest relative error against SciPy measured (float64): 7e-15 (tests:
    1e-13). The derivative is ``1 - 2 x D(x)`` (JAX's rule).

    Arguments:
      x: the argument, real (integers are converted to float).
    Returns:
      An array of the float dtype (odd in ``x``; 0 at ``±inf``).

    Example:
      >>> import functx.scipy.special as fs
      >>> print(fs.dawsn(1.0))
      0.5380795
    """
    (x,) = _real("dawsn", x)
    return _dawsn(x)


# --- the sine and cosine integrals ----------------------------------------------------------------
def _sici_series(x):
    """Si and Ci for 0 < x <= 4: ``Si = sum_k (-1)^k x^(2k+1) / ((2k+1) (2k+1)!)``,
    ``Ci = euler_gamma + log x + sum_(k>=1) (-1)^k x^(2k) / (2k (2k)!)`` (20 terms each: the last
    below 4^40 / 40! < 1e-23)."""

    def body(k, carry):
        si, ci, t = carry  # t = (-1)^k x^(2k) / (2k)!
        k2 = _c(2, x) * k.astype(x.dtype)
        t1 = t * x / (k2 + _c(1, x))  # x^(2k+1) / (2k+1)!
        si = si + t1 / (k2 + _c(1, x))
        t2 = -t1 * x / (k2 + _c(2, x))  # (-1)^(k+1) x^(2k+2) / (2k+2)!
        return si, ci + t2 / (k2 + _c(2, x)), t2

    zeros = jnp.zeros_like(x)
    si, ci, _ = _fori(20, body, (zeros, zeros, jnp.ones_like(x)))
    return si, _c(_EULER, x) + jnp.log(x) + ci


def _sici_fraction(x):
    """Si and Ci for x >= 4 from ``E_1(ix) = -Ci(x) + i (Si(x) - pi/2)``, ``E_1(z)`` by Lentz's
    method on ``e^-z / (z + 1 - 1 / (z + 3 - 4 / (z + 5 - ...)))`` in real pairs (40 levels:
    below 2e-15 at x = 4)."""
    one = _c(1, x)

    def cdiv(ar, ai, br, bi):
        den = br * br + bi * bi
        return (ar * br + ai * bi) / den, (ai * br - ar * bi) / den

    dr, di = cdiv(one, _c(0, x), one, x)  # d = 1 / (1 + ix)

    def body(i, carry):
        cr, ci, dr, di, hr, hi = carry
        i = (i + 1).astype(x.dtype)
        a, br = -i * i, _c(2, x) * i + one
        dr, di = cdiv(one, _c(0, x), a * dr + br, a * di + x)  # d = 1 / (a d + b)
        qr, qi = cdiv(a, _c(0, x), cr, ci)
        cr, ci = br + qr, x + qi  # c = b + a / c
        pr, pi = cr * dr - ci * di, cr * di + ci * dr
        return cr, ci, dr, di, hr * pr - hi * pi, hr * pi + hi * pr

    init = (jnp.full_like(x, 1e30), jnp.zeros_like(x), dr, di, dr, di)
    *_, hr, hi = _fori(39, body, init)
    cos, sin = jnp.cos(x), jnp.sin(x)
    er, ei = hr * cos + hi * sin, hi * cos - hr * sin  # h e^(-ix)
    return _c(np.pi / 2, x) + ei, -er


@custom_jvp
def _sici(x):
    ax = jnp.abs(x)
    small = ax <= _c(4, x)
    # past 1e9 the auxiliary functions' leading terms f = 1 / x, g = 1 / x^2:
    # Si = pi/2 - f cos x - g sin x, Ci = f sin x - g cos x (next terms below 1e-18)
    huge = ax > _c(1e9, x)
    si_s, ci_s = _sici_series(jnp.where(small, ax, _c(1, x)))
    si_f, ci_f = _sici_fraction(jnp.where(small | huge, _c(5, x), ax))
    xh = jnp.where(huge, ax, _c(1, x))
    f, g, cos, sin = _c(1, x) / xh, _c(1, x) / (xh * xh), jnp.cos(xh), jnp.sin(xh)
    si_h, ci_h = _c(np.pi / 2, x) - f * cos - g * sin, f * sin - g * cos
    si_h = jnp.where(ax == np.inf, _c(np.pi / 2, x), si_h)
    ci_h = jnp.where(ax == np.inf, _c(0, x), ci_h)
    si = jnp.where(small, si_s, jnp.where(huge, si_h, si_f))
    ci = jnp.where(small, ci_s, jnp.where(huge, ci_h, ci_f))
    ci = jnp.where(x == _c(-np.inf, x), _c(np.nan, x), ci)
    return jnp.sign(x) * si, jnp.where(jnp.isnan(x), x, ci)


@_sici.defjvp
def _sici_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    # sin x / x (1 at 0) and cos x / x (JAX's rule)
    xs = jnp.where(x == _c(0, x), _c(1, x), x)
    sinc = jnp.where(x == _c(0, x), _c(1, x), jnp.sin(xs) / xs)
    return _sici(x), (t * sinc, t * jnp.cos(x) / x)


def sici(x):
    """The sine and cosine integrals ``Si(x) = integral_0^x sin t / t dt`` and
    ``Ci(x) = euler_gamma + log|x| + integral_0^x (cos t - 1) / t dt``.

    Power series up to ``|x| = 4``; above, the continued fraction of ``E_1(i|x|)`` (run in real
    and imaginary parts); past ``1e9`` the leading terms of the auxiliary functions. Largest
    relative error against SciPy measured (float64): 3e-15 away from Ci's roots (0.6165...,
    3.3842..., 6.4271..., ...), where, as in any implementation that forms Ci as a sum, accuracy
    is absolute (tests: 1e-13 relative plus 10 eps). The derivatives are ``sin x / x`` and
    ``cos x / x`` (JAX's rule).

    Arguments:
      x: the argument, real (integers are converted to float).
    Returns:
      A pair ``(Si(x), Ci(x))`` of arrays of the float dtype: Si is odd, Ci even (as JAX and
      SciPy: ``Ci(-x) = Ci(x)``), ``Ci(0) = -inf``, ``Ci(-inf)`` NaN.

    Example:
      >>> import functx.scipy.special as fs
      >>> si, ci = fs.sici(1.0)
      >>> print(round(float(si), 6), round(float(ci), 6))
      0.946083 0.337404
    """
    (x,) = _real("sici", x)
    return _sici(x)


# --- the Bernoulli numbers and Spence's function --------------------------------------------------
@functools.cache
def _bernoulli_exact(n):
    """B_0..B_n as Fractions (B_1 = -1/2), from ``sum_(k <= m) C(m + 1, k) B_k = 0``."""
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return tuple(b)


def _bernoulli_f64(n):
    """B_0..B_n in float64: exact up to 60, then ``B_2k = (-1)^(k+1) 2 (2k)! zeta(2k) /
    (2 pi)^(2k)`` as a running product from B_60 (zeta(2k) to 1e-24 by five terms; the product
    reaches inf where B_2k leaves float64, as JAX's)."""
    out = np.array([float(v) for v in _bernoulli_exact(min(n, 60))])
    if n <= 60:
        return out
    even = np.arange(62, n + 1, 2, dtype=np.float64)
    j = np.arange(1, 6, dtype=np.float64)[:, None]
    zeta = np.sum(j**-even, axis=0)
    ratio = -(even - 1) * even / (2 * np.pi) ** 2 * zeta / np.concatenate([[1.0], zeta[:-1]])
    with np.errstate(over="ignore"):
        b_even = out[60] / np.sum(j**-60.0) * np.cumprod(ratio)
    full = np.zeros(n + 1)
    full[: out.size] = out
    full[62::2] = b_even
    return full


def bernoulli(n):
    """The Bernoulli numbers ``B_0, ..., B_n`` (``B_1 = -1/2``).

    Exact rationals rounded once up to ``B_60``; beyond, ``2 (2k)! zeta(2k) / (2 pi)^(2k)`` with
    its sign, as a running product (relative error grows like ``k`` eps: 2e-12 against SciPy's
    exact values at ``n = 300``; JAX's own differ from SciPy's by up to 2.5e-6). Values past
    the dtype's range are ``±inf``, as in JAX (whose float32 product overflows a few orders
    early: ``B_64`` is ``-inf`` there, -2.0938e38 here).

    Arguments:
      n: a non-negative Python int (static).
    Returns:
      An array of ``n + 1`` numbers of the default float dtype (float32, float64 with x64).
    Raises:
      TypeError: a non-integer or traced ``n``; ValueError: ``n < 0`` (JAX's errors).

    Example:
      >>> import functx.scipy.special as fs
      >>> print(fs.bernoulli(4))
      [ 1.         -0.5         0.16666667  0.         -0.03333334]
    """
    try:
        n = operator.index(n)
    except TypeError:
        raise FunctxTypeError(
            f"Argument n of bernoulli must be a concrete integer, got {n!r:.60}{_loc()}"
        ) from None
    if n < 0:
        raise FunctxValueError(f"n must be a non-negative integer.{_loc()}")
    dt = jnp.zeros(()).dtype
    with np.errstate(over="ignore"):
        return jnp.asarray(_bernoulli_f64(n).astype(dt))


# u^(n+1) B_n / (n+1)! for n = 0..24: Li2(1 - e^-u) = sum_n B_n u^(n+1) / (n+1)!, |u| < 2 pi
_LI2_COEFFS = tuple(float(b / math.factorial(k + 1)) for k, b in enumerate(_bernoulli_exact(24)))


def _spence_near_one(y):
    """spence(y) = Li2(1 - y) for y in [1/2, 2]: the series above in ``u = -log y`` (|u| <=
    log 2: the terms fall by (u / 2 pi)^2 = 0.012 per even order; B_24's is below 1e-20)."""
    u = -jnp.log(y)
    return u * _horner(_LI2_COEFFS[::-1], u)


def _spence_series(x):
    """Li2(1 - x) by the series in ``u`` about y = 1, with ``Li2(z) + Li2(1 - z) = pi^2/6 -
    log z log(1 - z)`` below 1/2 and ``Li2(z) + Li2(1/z) = -pi^2/6 - log(-z)^2 / 2`` above 2."""
    one, half, two = _c(1, x), _c(0.5, x), _c(2, x)
    low, high = x < half, x > two
    mid = jnp.where(low | high, one, x)
    xl = jnp.where(low & (x > _c(0, x)), x, half)
    xh = jnp.where(high & (x < np.inf), x, _c(4, x))
    pi2_6 = _c(np.pi**2 / 6, x)
    below = pi2_6 - jnp.log(xl) * jnp.log1p(-xl) - _spence_near_one(one - xl)
    above = -pi2_6 - half * jnp.log(xh - one) ** 2 - _spence_near_one(xh / (xh - one))
    val = jnp.where(low, below, jnp.where(high, above, _spence_near_one(mid)))
    val = jnp.where(x == _c(0, x), pi2_6, jnp.where(x == one, _c(0, x), val))  # (not -0.0)
    return jnp.where((x < _c(0, x)) | (x == np.inf) | jnp.isnan(x), _c(np.nan, x), val)


@custom_jvp
def _spence(x):
    return _spence_series(x)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    at1 = x == _c(1, x)
    d = jnp.log(x) / jnp.where(at1, _c(1, x), _c(1, x) - x)
    return _spence(x), t * jnp.where(at1, _c(-1, x), d)


def spence(x):
    """Spence's function ``integral_1^x log t / (1 - t) dt``, the dilogarithm ``Li2(1 - x)``, for
    real ``x >= 0`` (NaN below 0 and at ``inf``, as JAX and SciPy).

    The Bernoulli series of ``Li2(1 - e^-u)`` in ``u = -log x`` on ``[1/2, 2]``; the reflection
    ``Li2(z) + Li2(1 - z)`` below and the inversion ``Li2(z) + Li2(1/z)`` above bring the
    argument there. Largest relative error against SciPy measured (float64): 2e-15 (tests:
    1e-13). The derivative is ``log(x) / (1 - x)``, -1 at ``x = 1`` (JAX differentiates its
    piecewise formula: 0 at 1, which is not the limit, and NaN on ``(1, 2]``).

    Arguments:
      x: a float32 or float64 array.
    Returns:
      An array of ``x``'s dtype.
    Raises:
      TypeError: another dtype, integers included (JAX's error).

    Example:
      >>> import functx.scipy.special as fs
      >>> import functx.numpy as jnp
      >>> print(fs.spence(jnp.array([0.5, 1.0, 2.0])))
      [ 0.5822405  0.        -0.822467 ]
    """
    x = jnp.asarray(x)
    if np.dtype(x.dtype) not in (np.float32, np.float64):
        raise FunctxTypeError(
            f"x.dtype={np.dtype(x.dtype)} is not supported, see docstring for supported types."
            f"{_loc()}"
        )
    return _spence(x)


# --- the Fresnel integrals ---------------------------------------------------------------------
def _sincos_half_pi_sq(x):
    """``sin(pi x^2 / 2)`` and ``cos(pi x^2 / 2)`` with the angle reduced exactly enough for any
    x: with ``n = round(x)``, ``f = x - n``, ``x^2 / 2 = n^2 / 2 + n f + f^2 / 2`` and ``n^2 / 2``
    is 0 or 1/2 modulo 2 (the error of ``n f``, eps n / 2, times Fresnel's 1 / (pi x) is below
    eps)."""
    n = jnp.round(x)
    f = x - n
    two = _c(2, x)
    t = _c(0.5, x) * jnp.abs(jnp.fmod(n, two)) + jnp.fmod(n * f, two) + f * f / two
    return jnp.sin(_c(np.pi, x) * t), jnp.cos(_c(np.pi, x) * t)


def _fresnel_series(x):
    """S and C for |x| <= 1.5: ``sum_k (-1)^k t^m / m! x / (2m + 1)`` over odd m (S) and even
    m (C), ``t = pi x^2 / 2`` (16 pairs of terms: t^32 / 32! < 1e-17 at t = 3.6)."""
    t = _c(np.pi / 2, x) * x * x

    def body(k, carry):
        s, c, p = carry  # p = (-1)^k t^(2k) / (2k)!
        m = _c(2, x) * k.astype(x.dtype)
        c = c + p * x / (_c(2, x) * m + _c(1, x))
        q = p * t / (m + _c(1, x))
        s = s + q * x / (_c(2, x) * m + _c(3, x))
        return s, c, -q * t / (m + _c(2, x))

    zeros = jnp.zeros_like(x)
    s, c, _ = _fori(16, body, (zeros, zeros, jnp.ones_like(x)))
    return s, c


def _fresnel_fraction(x, sin, cos):
    """S and C for 1.5 <= x <= 36974 from ``C + iS = (1 + i) / 2 erf(z)``,
    ``z = sqrt(pi) / 2 (1 - i) x``: with ``erfc(z) = 2 z e^(-z^2) / sqrt(pi) h`` and Lentz's method
    on ``h = 1 / (2z^2 + 1 - 1 2 / (2z^2 + 5 - 3 4 / (2z^2 + 9 - ...)))``, ``2 z^2 = -i pi x^2``,
    ``C = 1/2 - x Re(e^(i pi x^2 / 2) h)``, ``S = 1/2 - x Im(...)`` (50 levels: 1e-15 at 1.5)."""
    one = _c(1, x)
    bi = _c(-np.pi, x) * x * x

    def inv(zr, zi):
        den = zr * zr + zi * zi
        return zr / den, -zi / den

    dr, di = inv(one, bi)

    def body(k, carry):
        br, cr, ci, dr, di, hr, hi = carry
        k = (k + 1).astype(x.dtype)
        a = -(_c(2, x) * k - one) * (_c(2, x) * k)
        br = br + _c(4, x)
        dr, di = inv(a * dr + br, a * di + bi)
        qr, qi = inv(cr, ci)
        cr, ci = br + a * qr, bi + a * qi
        pr, pi = cr * dr - ci * di, cr * di + ci * dr
        return br, cr, ci, dr, di, hr * pr - hi * pi, hr * pi + hi * pr

    init = (jnp.ones_like(x), jnp.full_like(x, 1e30), jnp.zeros_like(x), dr, di, dr, di)
    *_, hr, hi = _fori(49, body, init)
    half = _c(0.5, x)
    # e^(i theta) h = (cos hr - sin hi) + i (cos hi + sin hr); returns (S, C)
    return half - x * (cos * hi + sin * hr), half - x * (cos * hr - sin * hi)


@custom_jvp
def _fresnel(x):
    ax = jnp.abs(x)
    small = ax <= _c(1.5, x)
    large = ax > _c(36974, x)
    sin, cos = _sincos_half_pi_sq(jnp.where(ax == np.inf, _c(0, x), ax))
    s_s, c_s = _fresnel_series(jnp.where(small, ax, _c(0, x)))
    mid = jnp.where(small | large, _c(2, x), ax)
    s_f, c_f = _fresnel_fraction(mid, *_sincos_half_pi_sq(mid))
    # above 36974 the auxiliary functions' leading terms f = 1 / (pi x), g = 1 / (pi^2 x^3):
    # C = 1/2 + f sin - g cos, S = 1/2 - f cos - g sin (the next terms are below 1e-18)
    xl = jnp.where(large & (ax < np.inf), ax, _c(36975, x))
    f, g = _c(1 / np.pi, x) / xl, _c(1 / np.pi**2, x) / (xl * xl * xl)
    half = _c(0.5, x)
    s_l, c_l = half - f * cos - g * sin, half + f * sin - g * cos
    s_l, c_l = (jnp.where(ax == np.inf, half, v) for v in (s_l, c_l))
    s = jnp.where(small, s_s, jnp.where(large, s_l, s_f))
    c = jnp.where(small, c_s, jnp.where(large, c_l, c_f))
    neg = x < _c(0, x)
    return jnp.where(neg, -s, s), jnp.where(neg, -c, c)


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    sin, cos = _sincos_half_pi_sq(x)
    return _fresnel(x), (t * sin, t * cos)


def fresnel(x):
    """The Fresnel integrals ``S(x) = integral_0^x sin(pi t^2 / 2) dt`` and
    ``C(x) = integral_0^x cos(pi t^2 / 2) dt``.

    Power series up to ``|x| = 1.5``; the continued fraction of ``erfc`` (in real and imaginary
    parts) up to 36974; the auxiliary functions' leading terms above, with ``pi x^2 / 2``
    reduced exactly. Largest relative error measured (float64): 1e-15 against SciPy up to 100
    (tests: 1e-13), 1e-16 against mpmath above (SciPy's own error grows: 6e-12 at 1e5,
    8e-9 at 1.5e8, NaN at 1e300). The derivatives are ``sin(pi x^2 / 2)`` and
    ``cos(pi x^2 / 2)`` (JAX's rule).
    Above 36974 in float32 JAX gives exactly 1/2; here, as SciPy, ``1/2 + O(1 / (pi x))``.

    Arguments:
      x: the argument, real (integers are converted to float).
    Returns:
      A pair ``(S(x), C(x))`` of arrays of the float dtype (odd; ``±1/2`` at ``±inf``).

    Example:
      >>> import functx.scipy.special as fs
      >>> s, c = fs.fresnel(1.0)
      >>> print(s, c)
      0.43825915 0.7798934
    """
    (x,) = _real("fresnel", x)
    return _fresnel(x)


# --- Bessel functions of the first kind -----------------------------------------------------------
def _bessel_jn_rows(z, rows, start):
    """J_0..J_(rows-1) by Miller's method: the recurrence ``f_(k-1) = 2k f_k / z - f_(k+1)`` run
    down from ``f_start = 1``, ``f_(start+1) = 0``, then divided by ``f_0 + 2 sum_m f_2m`` (=
    1 for the true J). The values are divided by ``|f_(k-1)|`` whenever it passes 1, so nothing
    overflows down to ``|z|`` near the smallest normal number (JAX's, started at 1e-16 and never
    rescaled, gives NaN at small ``z``)."""
    idx = jnp.arange(rows).reshape((rows,) + (1,) * z.ndim)
    # below the square root of the smallest normal number the series' first term, (z/2)^n / n!,
    # is exact, and the recurrence's first step 2k/z would overflow (z = 0 included)
    small = jnp.abs(z) < _c(float(np.sqrt(np.finfo(z.dtype).tiny)), z)
    zs = jnp.where(small, _c(1, z), z)

    def body(i, carry):
        f_next, f, s, out = carry
        k = start - i  # this step makes f_(k-1)
        kf = k.astype(z.dtype)
        f_prev = _c(2, z) * kf * f / zs - f_next
        s = s + jnp.where((k - 1) % 2 == 0, _c(2, z) * f_prev, _c(0, z))
        out = jnp.where(idx == k - 1, f_prev, out)
        a = jnp.abs(f_prev)
        scale = jnp.where(a > _c(1, z), _c(1, z) / jnp.where(a > _c(1, z), a, _c(1, z)), _c(1, z))
        return f * scale, f_prev * scale, s * scale, out * scale

    f_start = jnp.ones_like(z)
    s0 = jnp.full_like(z, 2.0 if start % 2 == 0 else 0.0)
    out0 = jnp.where(idx == start, f_start, jnp.zeros((rows,) + z.shape, z.dtype))
    _, f0, s, out = _fori(start, body, (jnp.zeros_like(z), f_start, s0, out0))
    out = out / (s - f0)  # (s counted f_0 twice)
    zt = jnp.where(small, z, _c(0, z))
    steps = jnp.where(idx == 0, _c(1, z), zt / (_c(2, z) * jnp.maximum(idx, 1).astype(z.dtype)))
    out = jnp.where(small, jnp.cumprod(steps, axis=0), out)  # J_n(0): 1, 0, 0, ...
    return jnp.where(jnp.isfinite(z), out, _c(np.nan, z))  # (SciPy's NaN at ±inf)


def bessel_jn(z, *, v, n_iter=50):
    """The Bessel functions of the first kind ``J_0(z), ..., J_v(z)`` of real ``z``.

    Miller's backward recurrence started at order ``n_iter + 1`` (as JAX) and normalized by
    ``J_0 + 2 (J_2 + J_4 + ...) = 1``, rescaled as it runs so that it never overflows. Accurate
    where ``n_iter`` is large enough for ``|z|`` (JAX's rule of thumb: ``n_iter`` well above
    ``|z|``; with the default 50, up to ``|z|`` about 25). The error is absolute in nature
    (near the zeros of ``J_n``); largest measured against SciPy for ``|z| <= 20``, orders 0..10:
    6e-16 in float64 and 3e-7 in float32 (tests: 1e-13 relative plus 2e-15 absolute; 5e-6 plus
    5e-7); 2.4e-13 at ``|z| = 25``, where 50 starting orders are barely enough. At ``z = 0`` this
    gives 1, 0, 0, ... (JAX: NaN); NaN at ``±inf`` (SciPy's value). Derivatives go through the
    recurrence, as in JAX.

    Arguments:
      z: the argument, real (integers are converted to float).
      v: the largest order, a static non-negative int.
      n_iter: the recurrence's starting order minus one, a static int.
    Returns:
      An array of shape ``(min(v, n_iter) + 1, *z.shape)``: ``J_n(z)`` in row ``n``, of
      ``z``'s float dtype.
    Raises:
      TypeError: a non-integer ``v``; ValueError: complex ``z`` (JAX's errors).

    Example:
      >>> import functx.scipy.special as fs
      >>> print(fs.bessel_jn(1.0, v=2).round(5))
      [0.7652  0.44005 0.1149 ]
    """
    try:
        v = operator.index(v)
    except TypeError:
        raise FunctxTypeError(
            f"Argument v of bessel_jn must be an integer, got {v!r:.60}{_loc()}"
        ) from None
    n_iter = int(n_iter)
    (z,) = _float("bessel_jn", z)
    if jnp.iscomplexobj(z):
        raise FunctxValueError(f"complex input not supported.{_loc()}")
    return _bessel_jn_rows(z, min(v, n_iter) + 1, n_iter + 1)


# --- the confluent hypergeometric function 1F1 ----------------------------------------------------
def _hyp1f1_series(al, be, y):
    """``F = 1F1(al; be; y)`` for y >= 0 and its derivatives in ``al`` and ``be``: the Taylor
    series ``sum_k t_k``, ``t_k = (al)_k / (be)_k y^k / k!``, with ``dF/dal = sum_k t_k
    sum_(j<k) 1 / (al + j)`` and ``dF/dbe = -sum_k t_k sum_(j<k) 1 / (be + j)`` (300 terms:
    enough for y <= 100 with parameters up to about 30)."""
    one = _c(1, y)

    def body(k, carry):
        f, fa, fb, t, ha, hb = carry
        kf = k.astype(y.dtype)
        ak, bk = al + kf, be + kf
        t = t * ak / bk * y / (kf + one)
        ha = ha + jnp.where(ak == 0, _c(0, y), one / jnp.where(ak == 0, one, ak))
        hb = hb + one / bk
        return f + t, fa + t * ha, fb - t * hb, t, ha, hb

    zeros, ones = jnp.zeros_like(y), jnp.ones_like(y)
    f, fa, fb, *_ = _fori(300, body, (ones, zeros, zeros, ones, zeros, zeros))
    return f, fa, fb


def _asymptotic_sum(p, q, y):
    """``sum_k (p)_k (q)_k / (k! y^k)``, stopped at its smallest term (at most 40 terms)."""

    def body(k, carry):
        s, t, done = carry
        kf = k.astype(y.dtype)
        nxt = t * (p + kf) * (q + kf) / ((kf + _c(1, y)) * y)
        done = done | (jnp.abs(nxt) >= jnp.abs(t))
        return jnp.where(done, s, s + nxt), nxt, done

    s, *_ = _fori(40, body, (jnp.ones_like(y), jnp.ones_like(y), jnp.zeros(y.shape, bool)))
    return s


def _rgamma(v):
    """1 / gamma(v), 0 at the poles."""
    pole = (v <= _c(0, v)) & (v == jnp.floor(v))
    vs = jnp.where(pole, _c(0.5, v), v)
    sign = jnp.where((vs < _c(0, v)) & (jnp.fmod(jnp.floor(vs), _c(2, v)) != 0), -1.0, 1.0)
    return jnp.where(pole, _c(0, v), sign.astype(v.dtype) * jnp.exp(-_gammaln(vs)))


def _hyp1f1_parts(a, b, x):
    """1F1(a; b; x) and its derivatives in a and b: the series for |x| <= 100 (after Kummer's
    ``1F1(a; b; x) = e^x 1F1(b - a; b; -x)`` for x < 0), the asymptotic expansions above."""
    neg = x < _c(0, x)
    # (float32: 80, where the transformed series, ~e^|x|, still fits)
    near = jnp.abs(x) <= _c(80 if x.dtype.itemsize <= 4 else 100, x)
    y = jnp.where(near, jnp.abs(x), _c(0, x))
    al = jnp.where(neg, b - a, a)
    f, fa, fb = _hyp1f1_series(al, b, y)
    ex = jnp.where(neg & near, jnp.exp(jnp.where(near, x, 0)), _c(1, x))
    d_a = jnp.where(neg, -fa, fa) * ex
    d_b = jnp.where(neg, fa + fb, fb) * ex
    # |x| > 100: 1F1 ~ gamma(b) / gamma(a) e^x x^(a-b) S(b - a, 1 - a; x) for x > 0 and
    # gamma(b) / gamma(b - a) (-x)^(-a) S(a, a - b + 1; -x) for x < 0 (e^x smaller terms dropped)
    xf = jnp.where(near, _c(200, x), jnp.abs(x))
    lg_b = _gammaln(b)
    pos = jnp.exp(lg_b - _gammaln(a) + xf + (a - b) * jnp.log(xf)) * _asymptotic_sum(
        b - a, _c(1, x) - a, xf
    )
    negv = (
        jnp.exp(lg_b - a * jnp.log(xf)) * _rgamma(b - a) * _asymptotic_sum(a, a - b + _c(1, x), xf)
    )
    val = jnp.where(near, f * ex, jnp.where(neg, negv, pos))
    return val, d_a, d_b


def _hyp1f1_value(a, b, x):
    val = _hyp1f1_parts(a, b, x)[0]
    # JAX's conventions: 1 for a == 0, e^x for a == b, inf for b == 0
    val = jnp.where(a == b, jnp.exp(x), val)
    val = jnp.where((b == _c(0, b)) & (a != _c(0, a)), _c(np.inf, x), val)
    return jnp.where(a == _c(0, a), _c(1, x), val)


@custom_jvp
def _hyp1f1(a, b, x):
    return _hyp1f1_value(a, b, x)


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
    (a, b, x), (ta, tb, tx) = primals, tangents
    _, d_a, d_b = _hyp1f1_parts(a, b, x)
    one = _c(1, x)
    d_x = a / b * _hyp1f1(a + one, b + one, x)
    return _hyp1f1(a, b, x), ta * d_a + tb * d_b + tx * d_x


def hyp1f1(a, b, x):
    """The confluent hypergeometric function ``1F1(a; b; x) = sum_k (a)_k / (b)_k x^k / k!``.

    The Taylor series (300 terms) for ``|x| <= 100``, after Kummer's transformation
    ``e^x 1F1(b - a; b; -x)`` for negative ``x`` (so no cancellation); the asymptotic expansions,
    stopped at their smallest term, above. Like JAX, for positive ``a`` and ``b`` (parameters
    up to about 30; large ones need more terms than the series runs). Largest relative errors
    against SciPy measured (float64, ``a, b`` in (0, 15]): 4e-14 for ``0 <= x <= 60``; 1e-13
    for ``-60 <= x < 0`` with ``a <= b``, 5e-10 with ``a > b`` (the transformed series then
    alternates; JAX's direct series loses every digit there: errors of 1e22 and more
    measured); 6e-14 for ``|x|`` in [100, 300] with ``a, b <= 5`` (tests: 1e-12, 1e-8 for
    ``x < 0 < a - b``; float32 2e-5, where ``x < 0 < a - b`` loses up to 5e-4). JAX's
    conventions: 1 at ``a = 0`` (SciPy too), ``e^x`` at ``a = b``, ``inf`` at ``b = 0``.
    Derivatives: in ``x``, ``a / b 1F1(a + 1; b + 1; x)``; in ``a`` and ``b``, the
    differentiated series (accurate for ``|x| <= 100``, as JAX's series are).

    Arguments:
      a, b, x: real arrays, broadcast together (integers are converted to float).
    Returns:
      An array of the promoted float dtype.

    Example:
      >>> import functx.scipy.special as fs
      >>> print(round(float(fs.hyp1f1(1.0, 2.0, 1.0)), 6))
      1.718282
    """
    a, b, x = _real("hyp1f1", a, b, x)
    a, b, x = jnp.broadcast_arrays(a, b, x)
    return _hyp1f1(a, b, x)


# --- the Faddeeva function w(z) = exp(-z^2) erfc(-iz) -----------------------------------------
@functools.cache
def _wofz_coefficients(n=32):
    """Weideman's (1994) rational approximation of ``w`` in the upper half plane:
    ``w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz))`` with ``Z = (L + iz) / (L - iz)``,
    ``L = sqrt(n / sqrt(2))`` and ``p`` the degree ``n - 1`` polynomial whose coefficients
    (highest first) are the Fourier coefficients of ``exp(-t^2) (L^2 + t^2)`` at
    ``t = L tan(theta / 2)``, computed here by one FFT."""
    m = 2 * n
    length = math.sqrt(n / math.sqrt(2))
    theta = np.arange(-m + 1, m) * np.pi / m
    t = length * np.tan(theta / 2)
    f = np.concatenate([[0.0], np.exp(-(t**2)) * (length**2 + t**2)])
    a = np.real(np.fft.fft(np.fft.fftshift(f))) / (2 * m)
    return length, a[1 : n + 1][::-1].copy()


def _wofz_value(z):
    length, coeffs = _wofz_coefficients()
    upper = jnp.imag(z) >= 0
    zu = jnp.where(upper, z, -z)  # w(-z) = 2 exp(-z^2) - w(z) for the lower half plane
    iz = lax.complex(-jnp.imag(zu), jnp.real(zu))
    den = _c(length, zu) - iz
    p = jnp.polyval(jnp.asarray(coeffs.astype(z.dtype)), (_c(length, zu) + iz) / den)
    w = _c(2, zu) * p / (den * den) + _c(1 / math.sqrt(math.pi), zu) / den
    return jnp.where(upper, w, _c(2, zu) * jnp.exp(-z * z) - w)


@custom_jvp
def _wofz(z):
    return _wofz_value(z)


@_wofz.defjvp
def _wofz_jvp(primals, tangents):
    ((z,), (t,)) = primals, tangents
    w = _wofz(z)  # w' = 2i / sqrt(pi) - 2 z w (holomorphic)
    return w, t * (_c(2j / math.sqrt(math.pi), z) - _c(2, z) * z * w)


def wofz(z):
    """The Faddeeva function ``w(z) = exp(-z^2) erfc(-iz)`` (JAX's
    ``jax.scipy.special.wofz``).

    Weideman's 32-term rational approximation in the upper half plane (its coefficients
    computed at first use by one FFT), ``w(z) = 2 exp(-z^2) - w(-z)`` below the real axis (which
    overflows to inf/NaN where ``exp(-z^2)`` does, as in JAX). Relative error against SciPy
    about 1e-13 in float64 for ``|z| <= 10`` (tested: 1e-11). The derivative is the holomorphic
    ``2i / sqrt(pi) - 2 z w(z)``.

    Arguments:
      z: a real or complex array (real and integer inputs become complex: complex64 from
        float32, complex128 from float64).
    Returns:
      A complex array.

    Example:
      >>> import functx.scipy.special as fs
      >>> print(fs.wofz(1.0 + 1.0j).round(6))
      (0.304744+0.208219j)
    """
    (z,) = _float("wofz", z)
    if not jnp.iscomplexobj(z):
        z = lax.complex(z, jnp.zeros_like(z))
    return _wofz(z)


# --- Owen's T function ------------------------------------------------------------------------
@functools.cache
def _owens_t_rule():
    """``T(h, a) = a / (2 pi) int_0^1 f(a s) ds``, ``f(u) = exp(-h^2 (1 + u^2) / 2) / (1 + u^2)``
    even in ``s``: the 13 positive nodes of the 26-point Gauss-Legendre rule, as squares (the
    integrand needs only ``s^2``), and their weights over ``2 pi`` (Patefield and Tandy's
    method T5)."""
    nodes, weights = np.polynomial.legendre.leggauss(26)
    keep = nodes > 0
    return nodes[keep] ** 2, weights[keep] / (2 * np.pi)


def _owens_t_value(h, a):
    s2, w = _owens_t_rule()
    h = jnp.abs(h)
    aa = jnp.abs(a)
    small = aa <= _c(1, a)
    # |a| > 1: T(h, a) = (Phi(h) + Phi(a h)) / 2 - Phi(h) Phi(a h) - T(a h, 1 / a) (h >= 0)
    ra = jnp.where(small, aa, _c(1, a) / aa)
    rh = jnp.where(small, h, aa * h)
    r = (ra * ra)[..., None] * jnp.asarray(s2.astype(h.dtype))
    f = jnp.exp(_c(-0.5, h) * (rh * rh)[..., None] * (_c(1, h) + r)) / (_c(1, h) + r)
    t = ra * jnp.sum(f * jnp.asarray(w.astype(h.dtype)), axis=-1)
    sqrt2 = _c(math.sqrt(2), h)
    t = jnp.where(rh == 0, jnp.arctan(ra) / _c(2 * np.pi, h), t)
    t = jnp.where(ra == 1, _c(0.125, h) * lax.erfc(-rh / sqrt2) * lax.erfc(rh / sqrt2), t)
    eh, eah = lax.erfc(h / sqrt2), lax.erfc(aa * h / sqrt2)
    near = _c(0.25, h) - _c(0.25, h) * lax.erf(h / sqrt2) * lax.erf(aa * h / sqrt2)
    far = _c(0.25, h) * (eh + eah - eh * eah)
    t = jnp.where(small, t, jnp.where(aa * h <= _c(0.67, h), near, far) - t)
    t = jnp.sign(a) * t
    return jnp.where(jnp.isnan(a) | jnp.isnan(h), _c(np.nan, h), t)


@custom_jvp
def _owens_t(h, a):
    return _owens_t_value(h, a)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
    (h, a), (th, ta) = primals, tangents
    d_h = -jnp.exp(_c(-0.5, h) * h * h) * lax.erf(a * h / _c(math.sqrt(2), h))
    d_h = d_h / _c(2 * math.sqrt(2 * np.pi), h)
    q = a * a + _c(1, a)
    d_a = jnp.exp(_c(-0.5, h) * q * h * h) / (_c(2 * np.pi, h) * q)
    return _owens_t(h, a), th * d_h + ta * d_a


def owens_t(h, a):
    """Owen's T function ``T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx``
    (JAX's ``jax.scipy.special.owens_t``).

    JAX's method: for ``|a| <= 1`` a 13-node Gauss rule on that integral (Patefield and Tandy's
    T5; nodes from the 26-point Gauss-Legendre rule), for ``|a| > 1`` the reciprocal relation
    through ``T(a h, 1 / a)``; exact at ``h = 0`` (``arctan(a) / (2 pi)``) and ``|a| = 1``. Odd
    in ``a``, even in ``h``; NaN where either input is. Like JAX's, the rule loses relative
    accuracy where ``T`` is tiny (large ``h`` with small ``a``): absolute errors below 1e-13
    (float64). Derivatives: the closed forms in ``h`` and ``a``.

    Differences from JAX: with x64 enabled, float32 (and int32) inputs give float32, the
    promoted dtype; JAX's float64 quadrature weights promote them to float64, against its
    docstring ("dtype matching the promoted inputs").

    Arguments:
      h, a: real arrays, broadcast together (integers are converted to float).
    Returns:
      An array of the promoted float dtype.

    Example:
      >>> import functx.scipy.special as fs
      >>> print(round(float(fs.owens_t(0.5, 2.0)), 6))
      0.141581
    """
    h, a = _real("owens_t", h, a)
    h, a = jnp.broadcast_arrays(h, a)
    return _owens_t(h, a)


# --- the Gauss hypergeometric function 2F1 ----------------------------------------------------
_HYP2F1_TERMS = 250  # (the most terms a series sums, as JAX's)


def _near_int(v, eps):
    return jnp.abs(v - jnp.round(v)) < eps


def _hyp2f1_taylor(a, b, c, x):
    """``sum_k (a)_k (b)_k / (c)_k x^k / k!`` element by element: each element's sum stops at
    its first term below ``eps`` times the sum, or after 250 terms; a polynomial (``a`` or ``b``
    a non-positive integer) runs to its last term instead."""
    eps = _c(np.finfo(x.dtype).eps, x)
    one = _c(1, x)
    poly = jnp.minimum(
        jnp.where((a <= 0) & _near_int(a, 50 * eps), -jnp.round(a), _c(np.inf, x)),
        jnp.where((b <= 0) & _near_int(b, 50 * eps), -jnp.round(b), _c(np.inf, x)),
    )  # the degree of a polynomial, inf for a series

    def cond(state):
        return jnp.any(state[3])

    def step(state):
        s, t, k, active = state
        s = jnp.where(active, s + t, s)
        t = jnp.where(active, t * (a + k - one) * (b + k - one) / (c + k - one) / k * x, t)
        k = k + one
        more = jnp.where(poly < np.inf, k <= poly + one, jnp.abs(t) > eps * jnp.abs(s))
        return s, t, k, active & more & ((k < _HYP2F1_TERMS) | (poly < np.inf))

    init = (jnp.zeros_like(x), jnp.ones_like(x), jnp.ones_like(x), jnp.ones(x.shape, bool))
    return lax.while_loop(cond, step, init)[0]


def _hyp2f1_log_case(a, b, c, x):
    """2F1 near ``x = 1`` when ``m = c - a - b`` is a non-negative integer (Abramowitz and
    Stegun 15.3.10-11): with ``s = 1 - x``,
    ``G(m) G(c) / (G(a + m) G(b + m)) sum_{n<m} (a)_n (b)_n / (n! (1 - m)_n) s^n
    + (-1)^(m+1) G(c) / (G(a) G(b)) s^m sum_n (a + m)_n (b + m)_n / (n! (n + m)!) s^n
    (log s - psi(n + 1) - psi(n + m + 1) + psi(a + m + n) + psi(b + m + n))``."""
    eps = _c(np.finfo(x.dtype).eps, x)
    one = _c(1, x)
    m = jnp.maximum(jnp.round(c - a - b), _c(0, x))
    s = one - x
    log_s = jnp.log(s)
    am, bm = a + m, b + m

    def cond(state):
        return jnp.any(state[-1])

    def series_step(state):
        total, t, psis, n, active = state
        p1, p2, p3, p4 = psis
        q = t * (log_s - p1 - p2 + p3 + p4)
        total = jnp.where(active, total + q, total)
        t = t * (am + n) * (bm + n) / ((n + one) * (n + m + one)) * s
        psis = (
            p1 + one / (n + one),
            p2 + one / (n + m + one),
            p3 + one / (am + n),
            p4 + one / (bm + n),
        )
        return (
            total,
            t,
            psis,
            n + one,
            active & (n + one < _HYP2F1_TERMS) & (jnp.abs(q) >= eps * jnp.abs(total)),
        )

    psis = (_digamma(jnp.ones_like(x)), _digamma(m + one), _digamma(am), _digamma(bm))
    t0 = jnp.exp(-_gammaln(m + one))  # 1 / m!
    init = (jnp.zeros_like(x), t0, psis, jnp.zeros_like(x), jnp.ones(x.shape, bool))
    series = lax.while_loop(cond, series_step, init)[0]

    def finite_step(state):
        total, t, n, active = state
        total = jnp.where(active, total + t, total)
        t = t * (a + n) * (b + n) / ((n + one) * (one - m + n)) * s
        return total, t, n + one, active & (n + one < m)

    init = (jnp.zeros_like(x), jnp.ones_like(x), jnp.zeros_like(x), m > 0)
    finite = lax.while_loop(cond, finite_step, init)[0]
    gam = lambda v: _gammasgn(v) * jnp.exp(_gammaln(v))  # noqa: E731
    sign = jnp.where(jnp.fmod(m, _c(2, x)) == 0, -one, one)
    head = jnp.where(m > 0, gam(jnp.maximum(m, one)) * gam(c) / (gam(am) * gam(bm)) * finite, 0)
    return head + sign * gam(c) / (gam(a) * gam(b)) * s**m * series


def _gamma_ratio(num, den):
    """``prod G(num) / prod G(den)`` through log-gamma and signs (0 where a denominator's
    gamma is infinite)."""
    lg = sum(_gammaln(v) for v in num) - sum(_gammaln(v) for v in den)
    sign = functools.reduce(operator.mul, [_gammasgn(v) for v in num])
    pole = functools.reduce(operator.or_, [jnp.isinf(_gammaln(v)) for v in den])
    return jnp.where(
        pole,
        _c(0, lg),
        sign * jnp.exp(lg) / functools.reduce(operator.mul, [_gammasgn(v) for v in den]),
    )


def _hyp2f1_direct(a, b, c, x):
    """2F1 for ``x < 1`` away from JAX's special cases: the polynomial when ``a`` or ``b`` is
    a non-positive integer; else for ``x > 0.9``, the logarithmic case when ``d = c - a - b``
    is an integer, the transformation to ``1 - x`` (Abramowitz and Stegun 15.3.6) when ``d``
    is at least ``sqrt(eps)`` from one (closer, the plain series, as JAX); for ``x < 0``,
    Pfaff's ``(1 - x)^-a 2F1(a, c - b; c; x / (x - 1))`` (the argument in [0, 1)); else the
    Taylor series. (One series loop serves all the series, each element with its own
    parameters: the three parameter sets are stacked on a new leading axis.)"""
    one = _c(1, x)
    eps = np.finfo(x.dtype).eps
    d = c - a - b
    poly = ((a <= 0) & _near_int(a, _c(50 * eps, x))) | ((b <= 0) & _near_int(b, _c(50 * eps, x)))
    log_case = (x > _c(0.9, x)) & _near_int(d, _c(50 * eps, x)) & ~poly
    near1 = (x > _c(0.9, x)) & (x < one) & ~_near_int(d, _c(math.sqrt(eps), x)) & ~poly
    pfaff = (x < 0) & ~poly
    xp = jnp.where(pfaff, x, _c(-0.5, x))  # (each formula on inputs it serves)
    xs = jnp.where(pfaff, xp / (xp - one), jnp.where(log_case | near1, _c(0.5, x), x))
    s = jnp.where(near1, one - x, _c(0.05, x))
    dn = jnp.where(near1, d, _c(0.5, x))
    params = [
        (a, jnp.where(pfaff, c - b, b), c, xs),
        (a, b, one - dn, s),  # 15.3.6's two series in 1 - x
        (c - a, c - b, dn + one, s),
    ]
    stacked = [jnp.stack(v) for v in zip(*params)]
    series, first, second = _hyp2f1_taylor(*stacked)
    series = jnp.where(pfaff, (one - xp) ** -a, one) * series
    to_one_minus_x = (
        _gamma_ratio((c, dn), (c - a, c - b)) * first
        + s**dn * _gamma_ratio((c, -dn), (a, b)) * second
    )
    log_value = _hyp2f1_log_case(a, b, c, jnp.where(log_case, x, _c(0.95, x)))
    return jnp.where(log_case, log_value, jnp.where(near1, to_one_minus_x, series))


def _hyp2f1_value(a, b, c, x):
    """JAX's cases in JAX's order, then ``_hyp2f1_direct`` (on Euler's transformed parameters
    where ``c - a - b <= -1``)."""
    one, inf = _c(1, x), _c(np.inf, x)
    d, s = c - a - b, one - x
    eps = _c(50 * np.finfo(x.dtype).eps, x)
    c_pole = (c == 0) | ((c < 0) & (jnp.fmod(c, one) == 0))
    euler = (d <= -one) & ~(~_near_int(d, eps) & (s < 0))  # 2F1 = s^d 2F1(c - a, c - b; c; x)
    gauss = jnp.exp(_gammaln(c) + _gammaln(d) - _gammaln(c - a) - _gammaln(c - b))
    gauss = gauss * _gammasgn(c) * _gammasgn(d) * _gammasgn(c - a) * _gammasgn(c - b)
    xd = jnp.where(euler | (x < one), x, _c(0, x))  # (x >= 1 reaches the sums only by Euler)
    direct = _hyp2f1_direct(jnp.where(euler, c - a, a), jnp.where(euler, c - b, b), c, xd)
    direct = jnp.where(euler, jnp.where(euler, s, one) ** d, one) * direct
    cases = [
        ((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), one),
        (c_pole, inf),
        (euler, direct),
        ((d <= 0) & (x == one), inf),
        ((x < one) & (b == c), s**-a),
        ((x < one) & (a == c), s**-b),
        (x > one, inf),
        (x == one, gauss),
    ]
    out = direct
    for cond, value in reversed(cases):
        out = jnp.where(cond, value, out)
    return out


def _hyp2f1_param_derivatives(a, b, c, x):
    """The Taylor series differentiated in ``a``, ``b`` and ``c`` (JAX's derivatives):
    ``sum_k t_k (psi(a + k) - psi(a))``, and likewise for ``b`` and (negated) ``c``, with
    ``psi(v + k) - psi(v) = sum_{j<k} 1 / (v + j)``."""
    eps = _c(np.finfo(x.dtype).eps, x)
    one = _c(1, x)

    def cond(state):
        return jnp.any(state[-1])

    def step(state):
        sums, hs, t, k, active = state
        hs = tuple(h + one / (v + k - one) for h, v in zip(hs, (a, b, c)))
        t = t * (a + k - one) * (b + k - one) / (c + k - one) / k * x
        terms = (t * hs[0], t * hs[1], -t * hs[2])
        sums = tuple(jnp.where(active, s + q, s) for s, q in zip(sums, terms))
        small = [jnp.abs(q) <= eps * jnp.abs(s) for s, q in zip(sums, terms)]
        done = small[0] & small[1] & small[2]
        return sums, hs, t, k + one, active & ~done & (k + one < _HYP2F1_TERMS)

    zeros = jnp.zeros_like(x)
    init = ((zeros,) * 3, (zeros,) * 3, jnp.ones_like(x), jnp.ones_like(x), x != 0)
    return lax.while_loop(cond, step, init)[0]


@custom_jvp
def _hyp2f1(a, b, c, x):
    return _hyp2f1_value(a, b, c, x)


@_hyp2f1.defjvp
def _hyp2f1_jvp(primals, tangents):
    (a, b, c, x), (ta, tb, tc, tx) = primals, tangents
    one = _c(1, x)
    d_a, d_b, d_c = _hyp2f1_param_derivatives(a, b, c, x)
    d_x = a * b / c * _hyp2f1(a + one, b + one, c + one, x)
    return _hyp2f1(a, b, c, x), ta * d_a + tb * d_b + tc * d_c + tx * d_x


def hyp2f1(a, b, c, x):
    """The Gauss hypergeometric function ``2F1(a, b; c; x) = sum_k (a)_k (b)_k / (c)_k x^k / k!``
    (JAX's ``jax.scipy.special.hyp2f1``, for real arguments).

    JAX's cases, in its order: 1 at ``x = 0`` (or ``a`` or ``b`` zero with ``c`` not); inf for
    ``c`` a non-positive integer, for ``x > 1`` and for ``x = 1`` with ``c - a - b <= 0``; Gauss's
    ``G(c) G(c - a - b) / (G(c - a) G(c - b))`` at ``x = 1``; ``(1 - x)^-a`` for ``b = c`` (and
    ``a``/``b`` swapped); Euler's transformation where ``c - a - b <= -1``. Then the polynomial
    for a non-positive integer ``a`` or ``b`` (any ``x``, also beyond 1 through Euler's
    transformation), the logarithmic formulas (Abramowitz and Stegun 15.3.10-11) for ``x > 0.9``
    with ``c - a - b`` an integer, and the Taylor series (at most 250 terms, as JAX's) otherwise.
    Largest relative errors measured against SciPy and mpmath (float64, ``a, b`` in (0.1, 5),
    ``c`` up to 8): 4e-14 for ``-0.5 <= x <= 0.9``; 5e-12 on (0.9, 1); 1e-10 in the
    logarithmic case; 7e-13 for ``-4 <= x < 0``, 1e-9 down to -9.

    Differences from JAX: for ``x < 0`` functx sums the series of Pfaff's transformation
    ``(1 - x)^-a 2F1(a, c - b; c; x / (x - 1))``, which converges for every negative ``x``;
    JAX sums the series at ``x`` itself, which diverges below -1 (JAX returns a meaningless
    partial sum there, also for polynomials reached through Euler's transformation) and
    converges slowly near -1. For ``0.9 < x < 1`` with ``c - a - b`` not within ``sqrt(eps)``
    of an integer functx uses the transformation to ``1 - x`` (A&S 15.3.6); JAX's 250-term
    series there loses accuracy as ``x`` nears 1 (relative errors of 2e-4 at 0.96, 0.08 at
    0.99, 0.6 at 0.999 measured; functx's are below 5e-12). Closer to an integer (but beyond
    ``50 eps``) both use the series. Both agree to rounding on ``-0.5 <= x <= 0.9``.

    Derivatives: in ``x``, ``a b / c 2F1(a + 1, b + 1; c + 1; x)``; in ``a``, ``b`` and ``c``,
    the differentiated Taylor series (JAX's: right where it converges fast, ``|x| <= 0.9``).

    Arguments:
      a, b, c, x: real arrays, broadcast together (integers are converted to float).
    Returns:
      An array of the promoted float dtype.

    Example:
      >>> import functx.scipy.special as fs
      >>> print(round(float(fs.hyp2f1(1.0, 1.0, 2.0, 0.5)), 6))  # -log(1 - x) / x
      1.386294
    """
    a, b, c, x = _real("hyp2f1", a, b, c, x)
    a, b, c, x = jnp.broadcast_arrays(a, b, c, x)
    return _hyp2f1(a, b, c, x)


# --- spherical harmonics ------------------------------------------------------------------------
def _legendre_normalized(n, m, x, sin, n_max):
    """The orthonormalised associated Legendre function ``N_n^m P_n^m(x)`` (Condon-Shortley
    phase), ``0 <= m``, for each element's own ``n`` and ``m`` (``0`` where ``m > n``): the
    diagonal ``(-1)^m sqrt((2m + 1)!! / (4 pi (2m)!!)) sin^m`` by a product, then the
    three-term recurrence in the degree up to ``n_max``."""
    one = _c(1, x)

    def diagonal(k, p):
        kf = k.astype(x.dtype)
        return jnp.where(kf <= m, -p * jnp.sqrt(one + _c(0.5, x) / kf) * sin, p)

    pmm = lax.fori_loop(1, n_max + 1, diagonal, jnp.full_like(x, 0.5 / math.sqrt(math.pi)))

    def degree(k, state):
        prev, cur, out = state
        l = k.astype(x.dtype)  # noqa: E741
        q = l * l - m * m
        q = jnp.where(q > 0, q, one)  # (l <= m: not used)
        a = jnp.sqrt((_c(4, x) * l * l - one) / q)
        b = jnp.sqrt(jnp.maximum((l - one) ** 2 - m * m, _c(0, x)) * (_c(2, x) * l + one))
        b = b / jnp.sqrt(jnp.abs(_c(2, x) * l - _c(3, x)) * q)
        nxt = a * x * cur - b * prev
        live = l > m
        prev, cur = jnp.where(live, cur, prev), jnp.where(live, nxt, cur)
        return prev, cur, jnp.where(live & (l == n), nxt, out)

    init = (jnp.zeros_like(x), pmm, jnp.where(n == m, pmm, _c(0, x)))
    return lax.fori_loop(1, n_max + 1, degree, init)[2]


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
    """The spherical harmonic ``Y_n^m(theta, phi) = N_n^m P_n^m(cos theta) exp(i m phi)``,
    orthonormal on the sphere, with the Condon-Shortley phase (JAX's
    ``jax.scipy.special.sph_harm_y``, SciPy's ``sph_harm_y``: degree ``n``, order ``m``,
    colatitude ``theta``, longitude ``phi``).

    The associated Legendre function comes from the product formula on its diagonal and the
    three-term recurrence in the degree (``n_max`` steps, every element with its own ``n`` and
    ``m``); ``Y_n^-m = (-1)^m conj(Y_n^m)``. Differentiable in ``theta`` and ``phi`` (through
    the recurrence, as in JAX). JAX's indexing: element ``i`` of ``n`` pairs with ``theta[i]``
    (the last one when ``theta`` is shorter; a scalar ``theta`` serves all), ``phi``
    broadcasts; degrees above ``n_max`` are taken as ``n_max``.

    Differences from JAX: for ``|m| > n`` functx returns 0, as SciPy does (JAX leaves those
    values undefined and returns nonzero numbers).

    Arguments:
      n: the degrees (a non-empty integer array, ``n >= 0``).
      m: the orders (integers, ``|m| <= n``), broadcast with ``n``.
      theta: the colatitudes, in [0, pi].
      phi: the longitudes, in [0, 2 pi].
      diff_n: not supported (as in JAX): must be None.
      n_max: the largest degree, a concrete int (``max(n)`` when None, which needs a concrete
        ``n``).
    Returns:
      A complex array (complex64, complex128 with x64 enabled, whatever the input dtypes, as
      in JAX) of the broadcast shape of ``n``, ``m`` and ``phi``.

    Example:
      >>> import functx.numpy as jnp
      >>> import functx.scipy.special as fs
      >>> y = fs.sph_harm_y(jnp.array([1]), jnp.array([0]), jnp.array([0.0]), jnp.array([0.0]))
      >>> print(jnp.round(y, 6))  # sqrt(3 / (4 pi))
      [0.488603+0.j]
    """
    if diff_n is not None:
        raise UnsupportedError(
            f"The 'diff_n' argument to sph_harm_y is not supported (as in JAX).{_loc()}"
        )
    if np.ndim(n) == 0:
        raise FunctxTypeError(f"sph_harm_y: n must be an array of degrees, got a scalar{_loc()}")
    if n_max is None:
        if isinstance(n, Tracer):
            raise ConcretizationError(
                "The `n_max` argument of `sph_harm_y` must be statically specified to use "
                f"`sph_harm_y` within transformations.{_loc()}"
            )
        n_max = int(np.max(np.asarray(n)))
    n_max = operator.index(n_max)
    ftype = jnp.real(jnp.zeros((), complex)).dtype  # (the default complex dtype's float)
    theta = jnp.atleast_1d(jnp.asarray(theta)).astype(ftype)
    rows = np.minimum(np.arange(len(n)), theta.shape[0] - 1)
    theta = theta[rows]  # element i of n meets theta[i] (clipped)
    n = jnp.minimum(jnp.asarray(n), n_max).astype(ftype)
    m = jnp.asarray(m).astype(ftype)
    am = jnp.abs(m)
    n, am, theta = jnp.broadcast_arrays(n, am, theta)
    p = _legendre_normalized(n, am, jnp.cos(theta), jnp.sin(theta), n_max)
    angle = am * jnp.asarray(phi).astype(ftype)
    y = lax.complex(p * jnp.cos(angle), p * jnp.sin(angle))
    odd = jnp.fmod(am, _c(2, am)) == 1
    flipped = jnp.where(odd, -jnp.conj(y), jnp.conj(y))
    return jnp.where(jnp.broadcast_to(m, y.shape) < 0, flipped, y)
