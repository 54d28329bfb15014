"""``jax.scipy.special``'s exponential, sine/cosine, Fresnel and Dawson integrals, Spence's
function and the Bernoulli numbers, re-exported by ``functx.scipy.special``.

Each function evaluates every region's formula on the whole (clamped) input and selects: no
data-dependent Python branching, so all of them jit and vmap; series and continued fractions run
a fixed number of terms with ``lax.fori_loop`` (enough for float64 on the region they serve). The
derivatives are JAX's closed forms (``custom_jvp``), not derivatives of the loops.
"""

from __future__ import annotations

import numpy as np

from functx import lax, numpy as jnp
from functx.control.custom_derivatives import custom_jvp
from functx.errors import FunctxValueError
from functx.scipy.special import _c, _digamma, _float, _gammaln
from functx.source_info import where as _loc

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
      >>> print(fs.expn(2, 1.5))
      0.073100786
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
      >>> print(fs.exp1(1.0))
      0.21938394
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
